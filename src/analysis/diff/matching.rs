//! Which device of node B is which device of node A: a minimum-cost assignment (Kuhn–Munkres,
//! `pathfinding::kuhn_munkres`) per kind, over structural features, never over names the
//! kernel hands out (`mlx5_N` follows probe order and changes when a card moves) and never
//! over bus numbers alone (identical nodes number their buses differently).
//!
//! Order: GPUs first (serial when both sides kept one, else NUMA node, the ports and slot
//! above, position in bus order); then every other endpoint, which also weighs the GPUs
//! nearest to it (matched GPUs on both sides: a NIC that shares a switch with GPU4 in A is
//! the NIC that shares a switch with GPU4 in B, whatever its name); then bridges and ports by
//! the matched endpoints below them and below their parent. Leaving a device unmatched costs
//! [`UNMATCHED`] on each side, so a moved card (a few features differ) stays one device
//! instead of a removal and an addition, while a device with no counterpart stays unmatched.

use super::layout::{DevRec, NodeLayout};
use crate::model::DeviceKind;

/// Cost of leaving one device unmatched.
pub const UNMATCHED: i64 = 200;

/// Largest class (devices on both sides) solved exactly; larger classes (synthetic scaling
/// trees) are matched greedily by ascending cost.
const EXACT_LIMIT: usize = 400;

/// The correspondence between the devices of A and B (indices into `devices`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matching {
    /// For each device of A, its device in B.
    pub a_to_b: Vec<Option<usize>>,
    /// For each device of B, its device in A.
    pub b_to_a: Vec<Option<usize>>,
}

impl Matching {
    /// A's index for a device of B, or `a_len + j` for a device only in B: one id space for
    /// "the same device" on both sides.
    pub fn anchor_b(&self, j: usize) -> usize {
        self.b_to_a[j].unwrap_or(self.a_to_b.len() + j)
    }
}

/// Stage and class of a device: endpoints after GPUs, bridges last; VFs apart from PFs.
fn class(d: &DevRec) -> (u8, u8) {
    let k = match d.kind {
        DeviceKind::Gpu => 0,
        DeviceKind::Accelerator => 1,
        DeviceKind::Nic => 2,
        DeviceKind::Nvme => 3,
        DeviceKind::Other => 4,
        DeviceKind::RootPort => 5,
        DeviceKind::SwitchUpstream => 6,
        DeviceKind::SwitchDownstream => 7,
        DeviceKind::Bridge => 8,
    };
    let stage = if d.kind == DeviceKind::Gpu {
        0
    } else if d.kind.is_bridge() {
        2
    } else {
        1
    };
    (stage, k + if d.vf { 10 } else { 0 })
}

/// Jaccard distance of two small sorted sets, scaled to 0..=100 (0 when both are empty).
fn distance(x: &[usize], y: &[usize]) -> i64 {
    if x.is_empty() && y.is_empty() {
        return 0;
    }
    let common = x.iter().filter(|v| y.contains(v)).count();
    let union = x.len() + y.len() - common;
    (100 * (union - common) / union) as i64
}

/// Per-side features that depend on the matching so far, in the anchor id space.
struct Anchored {
    /// Near GPUs of each device, as anchors.
    near: Vec<Vec<usize>>,
    /// Anchors of the non-bridge devices below each device.
    below: Vec<Vec<usize>>,
}

fn anchored(l: &NodeLayout, anchor: &dyn Fn(usize) -> Option<usize>) -> Anchored {
    let n = l.devices.len();
    let mut near: Vec<Vec<usize>> = l
        .devices
        .iter()
        .map(|d| d.near_gpus.iter().filter_map(|&g| anchor(g)).collect())
        .collect();
    let mut below: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, d) in l.devices.iter().enumerate() {
        if d.kind.is_bridge() {
            continue;
        }
        let Some(a) = anchor(i) else { continue };
        let mut p = d.parent;
        let mut hops = 0;
        while let Some(q) = p {
            below[q].push(a);
            p = l.devices[q].parent;
            hops += 1;
            if hops > 64 {
                break;
            }
        }
    }
    for v in near.iter_mut().chain(below.iter_mut()) {
        v.sort_unstable();
        v.dedup();
    }
    Anchored { near, below }
}

/// The cost of saying A's device `i` is B's device `j` (same class). Lower is likelier.
fn cost(a: &NodeLayout, i: usize, b: &NodeLayout, j: usize, fa: &Anchored, fb: &Anchored) -> i64 {
    let (x, y) = (&a.devices[i], &b.devices[j]);
    let mut c = 0;
    if let (Some(s), Some(t)) = (&x.serial, &y.serial) {
        // Both sides kept the serial: it decides.
        return if s == t { 0 } else { 4 * UNMATCHED };
    }
    if x.ids != y.ids {
        c += 150;
    }
    if x.subsys != y.subsys {
        c += 20;
    }
    c += match (x.numa, y.numa) {
        (Some(p), Some(q)) if p != q => 40,
        (Some(_), None) | (None, Some(_)) => 5,
        _ => 0,
    };
    if x.place != y.place {
        c += 20;
    }
    if (x.bdf.device, x.bdf.function) != (y.bdf.device, y.bdf.function) {
        c += 4;
    }
    c += match (&x.slot, &y.slot) {
        (Some(p), Some(q)) if p != q => 10,
        (Some(_), None) | (None, Some(_)) => 5,
        _ => 0,
    };
    let step = if x.kind == DeviceKind::Gpu { 5 } else { 1 };
    c += (x.ordinal.abs_diff(y.ordinal) as i64 * step).min(40);
    if x.rdma.first() != y.rdma.first() {
        c += 2;
    }
    if x.kind.is_bridge() {
        c += distance(&fa.below[i], &fb.below[j]);
        let pb = |l: &NodeLayout, f: &Anchored, k: usize| -> Vec<usize> {
            l.devices[k]
                .parent
                .map(|p| f.below[p].clone())
                .unwrap_or_default()
        };
        c += distance(&pb(a, fa, i), &pb(b, fb, j)) * 2 / 5;
    } else if x.kind != DeviceKind::Gpu {
        c += distance(&fa.near[i], &fb.near[j]) * 3 / 5;
    }
    c
}

/// Solves one class: `rows` of A against `cols` of B; returns the matched pairs.
fn solve(rows: &[usize], cols: &[usize], w: &dyn Fn(usize, usize) -> i64) -> Vec<(usize, usize)> {
    let (na, nb) = (rows.len(), cols.len());
    if na == 0 || nb == 0 {
        return Vec::new();
    }
    if na + nb <= EXACT_LIMIT {
        // Square matrix: A rows plus one dummy row per B device, B columns plus one dummy
        // column per A device; a dummy pairing costs UNMATCHED, two dummies nothing.
        let n = na + nb;
        let m = pathfinding::matrix::Matrix::from_fn(n, n, |(r, c)| match (r < na, c < nb) {
            (true, true) => w(rows[r], cols[c]).min(2 * UNMATCHED + 1),
            (true, false) | (false, true) => UNMATCHED,
            (false, false) => 0,
        });
        let (_, assign) = pathfinding::kuhn_munkres::kuhn_munkres_min(&m);
        return (0..na)
            .filter(|&r| assign[r] < nb && w(rows[r], cols[assign[r]]) < 2 * UNMATCHED)
            .map(|r| (rows[r], cols[assign[r]]))
            .collect();
    }
    let mut all: Vec<(i64, usize, usize)> = Vec::with_capacity(na * nb);
    for &r in rows {
        for &c in cols {
            let x = w(r, c);
            if x < 2 * UNMATCHED {
                all.push((x, r, c));
            }
        }
    }
    all.sort_unstable();
    let (mut used_r, mut used_c) = (
        std::collections::HashSet::new(),
        std::collections::HashSet::new(),
    );
    let mut out = Vec::new();
    for (_, r, c) in all {
        if !used_r.contains(&r) && !used_c.contains(&c) {
            used_r.insert(r);
            used_c.insert(c);
            out.push((r, c));
        }
    }
    out
}

/// Matches the devices of two layouts (see the module doc).
pub fn match_nodes(a: &NodeLayout, b: &NodeLayout) -> Matching {
    let (na, nb) = (a.devices.len(), b.devices.len());
    let mut m = Matching {
        a_to_b: vec![None; na],
        b_to_a: vec![None; nb],
    };
    let classes_a: Vec<(u8, u8)> = a.devices.iter().map(class).collect();
    let classes_b: Vec<(u8, u8)> = b.devices.iter().map(class).collect();
    for stage in 0..3u8 {
        let fa = anchored(a, &|i| Some(i));
        let fb = anchored(b, &|j| m.b_to_a[j].or(Some(na + j)));
        let mut kinds: Vec<u8> = classes_a
            .iter()
            .chain(&classes_b)
            .filter(|c| c.0 == stage)
            .map(|c| c.1)
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        for k in kinds {
            let rows: Vec<usize> = (0..na).filter(|&i| classes_a[i] == (stage, k)).collect();
            let cols: Vec<usize> = (0..nb).filter(|&j| classes_b[j] == (stage, k)).collect();
            for (i, j) in solve(&rows, &cols, &|i, j| cost(a, i, b, j, &fa, &fb)) {
                m.a_to_b[i] = Some(j);
                m.b_to_a[j] = Some(i);
            }
        }
    }
    m
}
