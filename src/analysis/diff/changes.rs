//! The physical changes between two matched layouts, and what follows from each (see the
//! module doc of [`super`]). Data: two [`NodeLayout`]s and their [`Matching`]; nothing is read
//! here and nothing is worded (the text is `render::diff`).

use super::layout::{DevRec, FindingRec, NodeLayout, SubjectRec};
use super::matching::{Matching, match_nodes};
use super::{
    AerTotals, BestNic, Both, Change, DIFF_SCHEMA, DevRef, Diff, FindingRef, LabelChange,
    LinkState, Move, Place, Rename, What,
};
use crate::analysis::audit::CheckId;
use crate::analysis::classify::Label;
use crate::model::{DeviceKind, LinkInfo};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Matched device pairs (A index, B index) grouped by a key.
type Groups<K> = BTreeMap<K, Vec<(usize, usize)>>;

/// A link as text: `32GT/s x16`, `down` for a trained width of 0, `?` parts when unknown.
pub fn link_state(l: Option<LinkInfo>) -> LinkState {
    let txt = |g: Option<f64>, w: Option<u32>| match (g, w) {
        (_, Some(0)) => "down".to_string(),
        (None, None) => "?".to_string(),
        (g, w) => format!(
            "{}GT/s x{}",
            g.map_or("?".into(), |g| g.to_string()),
            w.map_or("?".into(), |w| w.to_string())
        ),
    };
    match l {
        Some(l) => LinkState {
            current: txt(l.current_gts, l.current_width),
            max: txt(l.max_gts, l.max_width),
        },
        None => LinkState {
            current: "-".into(),
            max: "-".into(),
        },
    }
}

fn devref(l: &NodeLayout, i: usize) -> DevRef {
    let d = &l.devices[i];
    DevRef {
        kind: d.kind.as_str().to_string(),
        bdf: d.bdf,
        ids: d.ids_text(),
        name: d.endpoint.clone(),
        rdma: d.rdma.first().cloned(),
        serial: d.serial.clone(),
        switch: d.switch.clone(),
    }
}

fn place(l: &NodeLayout, i: usize, port_only_here: bool) -> Place {
    let d = &l.devices[i];
    Place {
        port: d.parent.map(|p| devref(l, p)),
        slot: d.slot.clone(),
        numa: d.numa,
        host_bridge: d.host_bridge.clone(),
        with: d
            .near_gpus
            .iter()
            .filter_map(|&g| l.devices[g].endpoint.clone())
            .collect(),
        port_only_here,
    }
}

fn aer(d: &DevRec) -> AerTotals {
    AerTotals {
        correctable: d.aer[0],
        nonfatal: d.aer[1],
        fatal: d.aer[2],
    }
}

/// Every device below `i` (its subtree without itself), by index.
fn subtree(l: &NodeLayout, i: usize) -> Vec<usize> {
    (0..l.devices.len())
        .filter(|&k| {
            let mut p = l.devices[k].parent;
            let mut hops = 0;
            while let Some(q) = p {
                if q == i {
                    return true;
                }
                hops += 1;
                if hops > 64 {
                    break;
                }
                p = l.devices[q].parent;
            }
            false
        })
        .collect()
}

struct Ctx<'a> {
    a: &'a NodeLayout,
    b: &'a NodeLayout,
    m: Matching,
    changes: Vec<Change>,
    /// Per change: the devices (anchors) whose labels and findings fold under it.
    members: Vec<Vec<usize>>,
}

impl<'a> Ctx<'a> {
    fn both(&self, i: usize, j: usize) -> Both {
        Both {
            a: devref(self.a, i),
            b: devref(self.b, j),
        }
    }
    fn push(&mut self, what: What, members: Vec<usize>) {
        self.changes.push(Change {
            what,
            best_nic: vec![],
            labels: vec![],
            findings_appeared: vec![],
            findings_vanished: vec![],
        });
        self.members.push(members);
    }
    /// Whether A's device `i` sits under another port in B (or on another known NUMA node).
    fn moved(&self, i: usize, j: usize) -> bool {
        let (x, y) = (&self.a.devices[i], &self.b.devices[j]);
        let same_parent = match (x.parent, y.parent) {
            (None, None) => true,
            (Some(p), Some(q)) => self.m.a_to_b[p] == Some(q),
            _ => false,
        };
        let numa_moved = matches!((x.numa, y.numa), (Some(p), Some(q)) if p != q);
        !same_parent || numa_moved
    }
}

fn endpoint_name(d: &DevRec) -> String {
    match (&d.endpoint, d.rdma.first()) {
        (_, Some(r)) if d.kind == DeviceKind::Nic => r.clone(),
        (Some(e), _) => e.clone(),
        _ => d.bdf.to_string(),
    }
}

/// Compares two layouts: the physical changes (moves, replacements, added and removed
/// subtrees, links, ACS, AER, IOMMU, NUMA, renames, node facts), then what no change explains
/// (labels, findings) folded under the change that explains it.
pub fn diff(a: &NodeLayout, b: &NodeLayout) -> Diff {
    let m = match_nodes(a, b);
    let pairs: Vec<(usize, usize)> = (0..a.devices.len())
        .filter_map(|i| m.a_to_b[i].map(|j| (i, j)))
        .collect();
    let mut cx = Ctx {
        a,
        b,
        m,
        changes: vec![],
        members: vec![],
    };
    let mut mv = moves(&mut cx, &pairs);
    replaced(&mut cx, &pairs, &mv);
    added_removed(&mut cx, &mv);
    links(&mut cx, &pairs, &mut mv.link_done);
    acs(&mut cx, &pairs);
    aers(&mut cx, &pairs);
    iommu(&mut cx, &pairs);
    numa(&mut cx, &pairs, &mv);
    renames(&mut cx, &pairs);
    let fact_change = facts(&mut cx);

    fold_labels(&mut cx);
    fold_findings(&mut cx, fact_change);

    let equal = cx.changes.is_empty();
    Diff {
        schema: DIFF_SCHEMA.into(),
        a: a.source.clone(),
        b: b.source.clone(),
        equal,
        changes: cx.changes,
    }
}

/// The moved cards, as the later steps read them.
struct Moves {
    /// A and B indices of moved functions.
    moved_a: HashSet<usize>,
    moved_b: HashSet<usize>,
    /// A index → its move's change.
    move_of: HashMap<usize, usize>,
    /// A devices whose link change a change already explains.
    link_done: HashSet<usize>,
}

/// Moves, one per card (functions on one bus/device number under the same ports).
fn moves(cx: &mut Ctx, pairs: &[(usize, usize)]) -> Moves {
    let (a, b) = (cx.a, cx.b);
    // (A parent, B parent, domain, bus, device) of a card.
    type CardKey = (Option<usize>, Option<usize>, u32, u8, u8);
    let mut cards: Groups<CardKey> = BTreeMap::new();
    for &(i, j) in pairs {
        if cx.moved(i, j) {
            let x = &a.devices[i];
            let key = if x.vf {
                (x.parent, b.devices[j].parent, 0, 0, 0)
            } else {
                (
                    x.parent,
                    b.devices[j].parent,
                    x.bdf.domain,
                    x.bdf.bus,
                    x.bdf.device,
                )
            };
            cards.entry(key).or_default().push((i, j));
        }
    }
    let mut mv = Moves {
        moved_a: HashSet::new(),
        moved_b: HashSet::new(),
        move_of: HashMap::new(),
        link_done: HashSet::new(),
    };
    for fns in cards.values() {
        let &(i, j) = fns
            .iter()
            .find(|(i, _)| !a.devices[*i].vf)
            .unwrap_or(&fns[0]);
        let (pa, pb) = (a.devices[i].parent, b.devices[j].parent);
        let from = place(a, i, pa.is_some_and(|p| cx.m.a_to_b[p].is_none()));
        let to = place(b, j, pb.is_some_and(|q| cx.m.b_to_a[q].is_none()));
        let (la, lb) = (link_state(a.devices[i].link), link_state(b.devices[j].link));
        let left = pa
            .and_then(|p| cx.m.a_to_b[p])
            .map(|q| link_state(b.devices[q].link));
        let mut members: Vec<usize> = Vec::new();
        for &(x, y) in fns {
            members.push(x);
            mv.moved_a.insert(x);
            mv.moved_b.insert(y);
            mv.link_done.insert(x);
        }
        // The port it left and the port it came to retrain with it.
        for p in pa.into_iter().chain(pb.and_then(|q| cx.m.b_to_a[q])) {
            members.push(p);
            mv.link_done.insert(p);
        }
        let what = What::Moved(Box::new(Move {
            device: cx.both(i, j),
            functions: fns.len() - 1,
            from,
            to,
            link: (la != lb).then_some((la, lb)),
            left,
        }));
        for &(x, _) in fns {
            mv.move_of.insert(x, cx.changes.len());
        }
        cx.push(what, members);
    }
    mv
}

/// Cards replaced in place.
fn replaced(cx: &mut Ctx, pairs: &[(usize, usize)], mv: &Moves) {
    for &(i, j) in pairs {
        if cx.a.devices[i].ids != cx.b.devices[j].ids && !mv.moved_a.contains(&i) {
            let what = What::Replaced {
                device: cx.both(i, j),
            };
            cx.push(what, vec![i]);
        }
    }
}

/// Added and removed subtrees; those that hold a moved card are where it came from or went
/// to, and fold into its move.
fn added_removed(cx: &mut Ctx, mv: &Moves) {
    let (a, b) = (cx.a, cx.b);
    for side_b in [true, false] {
        let (l, unmatched): (&NodeLayout, Vec<usize>) = if side_b {
            (
                b,
                (0..b.devices.len())
                    .filter(|&j| cx.m.b_to_a[j].is_none())
                    .collect(),
            )
        } else {
            (
                a,
                (0..a.devices.len())
                    .filter(|&i| cx.m.a_to_b[i].is_none())
                    .collect(),
            )
        };
        let un: HashSet<usize> = unmatched.iter().copied().collect();
        for &top in &unmatched {
            if l.devices[top].parent.is_some_and(|p| un.contains(&p)) {
                continue;
            }
            let sub = subtree(l, top);
            let moved_here: Vec<usize> = sub
                .iter()
                .copied()
                .filter(|k| {
                    if side_b {
                        mv.moved_b.contains(k)
                    } else {
                        mv.moved_a.contains(k)
                    }
                })
                .collect();
            let anchors: Vec<usize> = std::iter::once(top)
                .chain(sub.iter().copied().filter(|k| un.contains(k)))
                .map(|k| if side_b { cx.m.anchor_b(k) } else { k })
                .collect();
            if let Some(&k) = moved_here.first() {
                let ai = if side_b { cx.m.b_to_a[k] } else { Some(k) };
                if let Some(c) = ai.and_then(|ai| mv.move_of.get(&ai)) {
                    cx.members[*c].extend(anchors);
                    continue;
                }
            }
            let device = devref(l, top);
            let place = place(l, top, false);
            let below: Vec<DevRef> = sub
                .iter()
                .filter(|k| un.contains(k))
                .map(|&k| devref(l, k))
                .collect();
            let what = if side_b {
                What::Added {
                    device,
                    place,
                    below,
                }
            } else {
                What::Removed {
                    device,
                    place,
                    below,
                }
            };
            cx.push(what, anchors);
        }
    }
}

/// Links: a device and the port above it report the same link: one change (a link a move
/// already explains is left to it).
fn links(cx: &mut Ctx, pairs: &[(usize, usize)], link_done: &mut HashSet<usize>) {
    let (a, b) = (cx.a, cx.b);
    let link_changed: HashSet<usize> = pairs
        .iter()
        .filter(|&&(i, j)| link_state(a.devices[i].link) != link_state(b.devices[j].link))
        .map(|&(i, _)| i)
        .collect();
    let mut order: Vec<(usize, usize)> = pairs.to_vec();
    order.sort_by_key(|&(i, _)| {
        matches!(
            a.devices[i].kind,
            DeviceKind::RootPort | DeviceKind::SwitchDownstream
        )
    });
    for &(i, j) in &order {
        if !link_changed.contains(&i) || link_done.contains(&i) {
            continue;
        }
        let x = &a.devices[i];
        let port = x.parent.filter(|&p| {
            link_changed.contains(&p)
                && !link_done.contains(&p)
                && matches!(
                    a.devices[p].kind,
                    DeviceKind::RootPort | DeviceKind::SwitchDownstream
                )
                && cx.m.a_to_b[p] == b.devices[j].parent
        });
        let mut members = vec![i];
        link_done.insert(i);
        let port_both = port.and_then(|p| {
            members.push(p);
            link_done.insert(p);
            cx.m.a_to_b[p].map(|q| Box::new(cx.both(p, q)))
        });
        let what = What::Link {
            device: cx.both(i, j),
            port: port_both,
            a: link_state(x.link),
            b: link_state(b.devices[j].link),
        };
        cx.push(what, members);
    }
}

/// ACS control changed on a port, with the endpoints below it.
fn acs(cx: &mut Ctx, pairs: &[(usize, usize)]) {
    let (a, b) = (cx.a, cx.b);
    for &(i, j) in pairs {
        let (x, y) = (&a.devices[i], &b.devices[j]);
        if x.acs != y.acs {
            let below: Vec<String> = subtree(b, j)
                .into_iter()
                .filter(|&k| b.devices[k].endpoint.is_some())
                .map(|k| endpoint_name(&b.devices[k]))
                .collect();
            let mut members = vec![i];
            members.extend(subtree(a, i));
            let what = What::Acs {
                port: cx.both(i, j),
                a: x.acs.clone(),
                b: y.acs.clone(),
                below,
            };
            cx.push(what, members);
        }
    }
}

/// AER counters changed on a device.
fn aers(cx: &mut Ctx, pairs: &[(usize, usize)]) {
    for &(i, j) in pairs {
        let (x, y) = (&cx.a.devices[i], &cx.b.devices[j]);
        if x.aer != y.aer {
            let what = What::Aer {
                device: cx.both(i, j),
                a: aer(x),
                b: aer(y),
            };
            cx.push(what, vec![i]);
        }
    }
}

/// IOMMU group types changed, grouped by value.
fn iommu(cx: &mut Ctx, pairs: &[(usize, usize)]) {
    let mut iommu: Groups<(Option<String>, Option<String>)> = BTreeMap::new();
    for &(i, j) in pairs {
        let (x, y) = (&cx.a.devices[i], &cx.b.devices[j]);
        if x.iommu_type != y.iommu_type {
            iommu
                .entry((x.iommu_type.clone(), y.iommu_type.clone()))
                .or_default()
                .push((i, j));
        }
    }
    for ((p, q), devs) in iommu {
        let what = What::Iommu {
            devices: devs.iter().map(|&(i, j)| cx.both(i, j)).collect(),
            a: p,
            b: q,
        };
        cx.push(what, devs.iter().map(|&(i, _)| i).collect());
    }
}

/// NUMA nodes known on one side only (a VM), grouped by value.
fn numa(cx: &mut Ctx, pairs: &[(usize, usize)], mv: &Moves) {
    let mut numa: Groups<(Option<u32>, Option<u32>)> = BTreeMap::new();
    for &(i, j) in pairs {
        let (p, q) = (cx.a.devices[i].numa, cx.b.devices[j].numa);
        if p != q && !mv.moved_a.contains(&i) {
            numa.entry((p, q)).or_default().push((i, j));
        }
    }
    for ((p, q), devs) in numa {
        let what = What::Numa {
            devices: devs.iter().map(|&(i, j)| cx.both(i, j)).collect(),
            a: p,
            b: q,
        };
        cx.push(what, devs.iter().map(|&(i, _)| i).collect());
    }
}

/// Names the kernel gave differently to the same devices: one change for them all.
fn renames(cx: &mut Ctx, pairs: &[(usize, usize)]) {
    let (a, b) = (cx.a, cx.b);
    let renames: Vec<Rename> = pairs
        .iter()
        .filter(|&&(i, j)| {
            let (x, y) = (&a.devices[i], &b.devices[j]);
            x.ids == y.ids && (x.rdma != y.rdma || x.net != y.net)
        })
        .map(|&(i, j)| {
            let names = |d: &DevRec| d.rdma.iter().chain(&d.net).cloned().collect::<Vec<_>>();
            Rename {
                device: cx.both(i, j),
                a: names(&a.devices[i]),
                b: names(&b.devices[j]),
            }
        })
        .collect();
    if !renames.is_empty() {
        cx.push(What::Renamed { renames }, vec![]);
    }
}

/// Node facts that differ; returns the first fact change, if any.
fn facts(cx: &mut Ctx) -> Option<usize> {
    let (a, b) = (cx.a, cx.b);
    let first_fact = cx.changes.len();
    let names: std::collections::BTreeSet<&String> = a.facts.keys().chain(b.facts.keys()).collect();
    for f in names {
        let (x, y) = (a.facts.get(f), b.facts.get(f));
        if x != y {
            let what = What::Fact {
                fact: f.clone(),
                a: x.cloned().unwrap_or_else(|| "-".into()),
                b: y.cloned().unwrap_or_else(|| "-".into()),
            };
            cx.push(what, vec![]);
        }
    }
    (cx.changes.len() > first_fact).then_some(first_fact)
}

/// The change whose devices include one of these anchors.
fn owner(members: &[Vec<usize>], anchors: &[usize]) -> Option<usize> {
    members
        .iter()
        .position(|m| anchors.iter().any(|x| m.contains(x)))
}

/// The change of the kind a check is about (`numa-unknown` under a NUMA change, …) whose
/// devices include one of these anchors.
fn preferred(
    changes: &[Change],
    members: &[Vec<usize>],
    check: CheckId,
    anchors: &[usize],
) -> Option<usize> {
    let fits = |w: &What| match check {
        CheckId::NumaUnknown => matches!(w, What::Numa { .. }),
        CheckId::IommuTranslation => matches!(w, What::Iommu { .. }),
        CheckId::AcsRedirect => matches!(w, What::Acs { .. }),
        CheckId::LinkDegraded | CheckId::NicPortDown => matches!(w, What::Link { .. }),
        CheckId::AerErrors => matches!(w, What::Aer { .. }),
        CheckId::GpuNicPath => matches!(
            w,
            What::Moved(_) | What::Added { .. } | What::Removed { .. } | What::Replaced { .. }
        ),
        _ => false,
    };
    (0..changes.len())
        .find(|&c| fits(&changes[c].what) && anchors.iter().any(|x| members[c].contains(x)))
}

/// Pair labels and best-NIC labels keyed by anchors; each change takes those of its devices,
/// the rest are grouped by their label change.
fn fold_labels(cx: &mut Ctx) {
    let (a, b) = (cx.a, cx.b);
    let m = cx.m.clone();
    let b_of = |x: usize| {
        if x < a.devices.len() {
            m.a_to_b[x]
        } else {
            Some(x - a.devices.len())
        }
    };
    // Pairs keyed GPU first (then accelerator, NIC, NVMe), as the matrix orders them.
    let rank = |x: usize| -> (u8, usize) {
        let kind = if x < a.devices.len() {
            a.devices[x].kind
        } else {
            b.devices[x - a.devices.len()].kind
        };
        let r = match kind {
            DeviceKind::Gpu => 0,
            DeviceKind::Accelerator => 1,
            DeviceKind::Nic => 2,
            _ => 3,
        };
        (r, x)
    };
    let key = |x: usize, y: usize| if rank(x) <= rank(y) { (x, y) } else { (y, x) };
    let la: HashMap<(usize, usize), Label> =
        a.labels.iter().map(|&(i, j, l)| (key(i, j), l)).collect();
    let lb: HashMap<(usize, usize), Label> = b
        .labels
        .iter()
        .map(|&(i, j, l)| (key(m.anchor_b(i), m.anchor_b(j)), l))
        .collect();
    let mut keys: Vec<(usize, usize)> = la.keys().chain(lb.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let name_a = |x: usize| {
        (x < a.devices.len())
            .then(|| a.devices[x].endpoint.clone())
            .flatten()
            .unwrap_or_else(|| "-".into())
    };
    let name_b = |x: usize| {
        b_of(x)
            .and_then(|j| b.devices[j].endpoint.clone())
            .unwrap_or_else(|| "-".into())
    };
    let mut loose: Vec<(String, String, LabelChange)> = Vec::new();
    for k in keys {
        let (x, y) = (la.get(&k), lb.get(&k));
        if x == y {
            continue;
        }
        let show = |l: Option<&Label>| l.map_or("-".to_string(), |l| l.to_string());
        let lc = LabelChange {
            pair_a: if x.is_some() {
                format!("{} {}", name_a(k.0), name_a(k.1))
            } else {
                "-".into()
            },
            pair_b: if y.is_some() {
                format!("{} {}", name_b(k.0), name_b(k.1))
            } else {
                "-".into()
            },
            a: show(x),
            b: show(y),
        };
        match owner(&cx.members, &[k.0, k.1]) {
            Some(c) => cx.changes[c].labels.push(lc),
            None => loose.push((lc.a.clone(), lc.b.clone(), lc)),
        }
    }
    // Best NIC of each GPU on each side: the lowest-ranked GPU–NIC label.
    let best = |l: &NodeLayout, anchor: &dyn Fn(usize) -> usize| {
        let mut out: HashMap<usize, (Label, usize)> = HashMap::new();
        for &(i, j, lab) in &l.labels {
            let (g, n) = match (l.devices[i].kind, l.devices[j].kind) {
                (DeviceKind::Gpu, DeviceKind::Nic) => (i, j),
                (DeviceKind::Nic, DeviceKind::Gpu) => (j, i),
                _ => continue,
            };
            let e = out.entry(anchor(g)).or_insert((lab, n));
            if lab.rank() < e.0.rank() {
                *e = (lab, n);
            }
        }
        out
    };
    let ba = best(a, &|i| i);
    let bb = best(b, &|j| m.anchor_b(j));
    let mut gpus: Vec<usize> = ba.keys().filter(|g| bb.contains_key(g)).copied().collect();
    gpus.sort_unstable();
    for g in gpus {
        let ((xa, na_), (xb, nb_)) = (ba[&g], bb[&g]);
        if xa == xb {
            continue;
        }
        let bn = BestNic {
            gpu: name_b(g),
            a: (xa.to_string(), endpoint_name(&a.devices[na_])),
            b: (xb.to_string(), endpoint_name(&b.devices[nb_])),
        };
        let who = [g, na_, m.anchor_b(nb_)];
        match owner(&cx.members, &who) {
            Some(c) => {
                cx.changes[c].best_nic.push(bn);
                cx.members[c].push(g);
            }
            None => loose.push((
                bn.a.0.clone(),
                bn.b.0.clone(),
                LabelChange {
                    pair_a: format!("{} best NIC", name_a(g)),
                    pair_b: format!("{} best NIC", name_b(g)),
                    a: bn.a.0.clone(),
                    b: bn.b.0.clone(),
                },
            )),
        }
    }
    let mut groups: Vec<((String, String), Vec<LabelChange>)> = Vec::new();
    for (x, y, lc) in loose {
        match groups.iter_mut().find(|(k, _)| k.0 == x && k.1 == y) {
            Some((_, v)) => v.push(lc),
            None => groups.push(((x, y), vec![lc])),
        }
    }
    for ((x, y), v) in groups {
        cx.push(What::Labels { a: x, b: y }, vec![]);
        if let Some(c) = cx.changes.last_mut() {
            c.labels = v;
        }
    }
}

/// Findings compared by check, severity and subject (the same device on both sides); each
/// goes under the change of its subject or its pairs, node findings under the first fact
/// change, the rest on their own.
fn fold_findings(cx: &mut Ctx, fact_change: Option<usize>) {
    type Key = (CheckId, String, SubjectRec);
    let (a, b) = (cx.a, cx.b);
    let m = cx.m.clone();
    let anchor = |s: &SubjectRec, side_b: bool| -> SubjectRec {
        let f = |i: usize| if side_b { m.anchor_b(i) } else { i };
        match s {
            SubjectRec::Device(i) => SubjectRec::Device(f(*i)),
            SubjectRec::Port(i, p) => SubjectRec::Port(f(*i), *p),
            other => other.clone(),
        }
    };
    let key = |f: &FindingRec, side_b: bool| -> Key {
        (
            f.id,
            f.severity.as_str().to_string(),
            anchor(&f.subject, side_b),
        )
    };
    let mut rest_b: Vec<(Key, &FindingRec)> =
        b.findings.iter().map(|f| (key(f, true), f)).collect();
    let mut vanished: Vec<(Key, &FindingRec)> = Vec::new();
    for f in &a.findings {
        let k = key(f, false);
        match rest_b.iter().position(|(kb, _)| *kb == k) {
            Some(p) => {
                rest_b.remove(p);
            }
            None => vanished.push((k, f)),
        }
    }
    let subject_name = |f: &FindingRec, l: &NodeLayout| match &f.subject {
        SubjectRec::Device(i) | SubjectRec::Port(i, _) => {
            let d = &l.devices[*i];
            if d.endpoint.is_some() {
                format!("{} ({})", endpoint_name(d), d.bdf)
            } else {
                format!("{} {}", d.kind.as_str(), d.bdf)
            }
        }
        _ => f.subject_text.clone(),
    };
    let mut loose: Vec<(bool, FindingRef)> = Vec::new();
    for (appeared, (k, f)) in rest_b
        .into_iter()
        .map(|x| (true, x))
        .chain(vanished.into_iter().map(|x| (false, x)))
    {
        let l = if appeared { b } else { a };
        let fr = FindingRef {
            id: k.0.to_string(),
            severity: k.1.clone(),
            subject: subject_name(f, l),
            summary: f.summary.clone(),
        };
        let mut who: Vec<usize> = match &k.2 {
            SubjectRec::Device(x) | SubjectRec::Port(x, _) => vec![*x],
            _ => vec![],
        };
        who.extend(
            f.pairs
                .iter()
                .map(|&p| if appeared { m.anchor_b(p) } else { p }),
        );
        let owner = preferred(&cx.changes, &cx.members, k.0, &who)
            .or_else(|| owner(&cx.members, &who))
            .or(match k.2 {
                SubjectRec::Node => fact_change,
                _ => None,
            });
        match owner {
            Some(c) if appeared => cx.changes[c].findings_appeared.push(fr),
            Some(c) => cx.changes[c].findings_vanished.push(fr),
            None => loose.push((appeared, fr)),
        }
    }
    for (appeared, fr) in loose {
        cx.push(What::Finding { appeared }, vec![]);
        if let Some(c) = cx.changes.last_mut() {
            if appeared {
                c.findings_appeared.push(fr);
            } else {
                c.findings_vanished.push(fr);
            }
        }
    }
}
