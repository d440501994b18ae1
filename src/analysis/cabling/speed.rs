//! Link speed and width, from what the map says.
//!
//! * **degraded** (error): the link trained below the fastest rate both its ends support, as
//!   the map shows it (`LinkRate::supported_gbps`: ibdiagnet's `LinkSpeedSup`/`LinkWidthSup` of
//!   both ports, `iblinkinfo`'s `( Could be …)` note).
//! * **slow link** (warning): where the map cannot say what the ends support (ibnetdiscover,
//!   lldpctl), a link slower than the most common rate of its kind (host links,
//!   switch-to-switch links), naming the peers' rate: it may be the hardware's own maximum.
//! * A link at what its ends support is neither; a loopback cable is no baseline.

use super::ctx::Ctx;
use super::{CablingFinding, FindingKind, Severity};
use crate::model::fabric::{FabricLink, NodeKind};
use std::collections::BTreeMap;

/// Rates closer than this (Gb/s) are the same rate.
const SAME: f64 = 1e-6;

/// Degraded and slow links.
pub fn link_speed(cx: &Ctx<'_>) -> Vec<CablingFinding> {
    let map = cx.map;
    let mut kinds: [Vec<(usize, f64)>; 2] = [Vec::new(), Vec::new()];
    for (ki, l) in map.links.iter().enumerate() {
        let Some(g) = l.rate.as_ref().and_then(|r| r.gbps) else {
            continue;
        };
        if l.loopback || l.a.node == l.b.node {
            continue;
        }
        let hostlink = map.nodes[l.a.node].kind != NodeKind::Switch
            || map.nodes[l.b.node].kind != NodeKind::Switch;
        kinds[usize::from(!hostlink)].push((ki, g));
    }
    let mut port_of: Vec<Option<usize>> = vec![None; map.links.len()];
    for (pi, p) in cx.ports.iter().enumerate() {
        port_of[p.link] = Some(pi);
    }
    let mut out = Vec::new();
    for group in &kinds {
        let mode = mode(group);
        for &(ki, g) in group {
            let l = &map.links[ki];
            let sup = l.rate.as_ref().and_then(|r| r.supported_gbps);
            let f = match (sup, mode) {
                (Some(s), _) if s > g + SAME => {
                    let mut f = finding(cx, l, port_of[ki], FindingKind::Degraded);
                    f.supported_gbps = Some(s);
                    if let Some(raw) = l.rate.as_ref().and_then(|r| r.supported_raw.clone()) {
                        f.evidence.push(raw);
                    }
                    f
                }
                (None, Some(m)) if g + SAME < m => {
                    let mut f = finding(cx, l, port_of[ki], FindingKind::SlowLink);
                    f.peers_gbps = Some(m);
                    f
                }
                _ => continue,
            };
            out.push(CablingFinding { gbps: Some(g), ..f });
        }
    }
    out
}

/// The most common rate (the faster on a tie).
fn mode(group: &[(usize, f64)]) -> Option<f64> {
    let mut count: BTreeMap<u64, usize> = BTreeMap::new();
    for &(_, g) in group {
        *count.entry(g.to_bits()).or_default() += 1;
    }
    count
        .iter()
        .max_by(|a, b| {
            (a.1, f64::from_bits(*a.0))
                .partial_cmp(&(b.1, f64::from_bits(*b.0)))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map(|(&b, _)| f64::from_bits(b))
}

fn finding(cx: &Ctx<'_>, l: &FabricLink, port: Option<usize>, kind: FindingKind) -> CablingFinding {
    let severity = match kind {
        FindingKind::Degraded => Severity::Error,
        _ => Severity::Warning,
    };
    let mut f = CablingFinding::new(kind, severity);
    let map = cx.map;
    let (sw, other) = if map.nodes[l.a.node].kind == NodeKind::Switch {
        (l.a, l.b)
    } else {
        (l.b, l.a)
    };
    match port.map(|pi| &cx.ports[pi]) {
        Some(p) => {
            f.host = Some(cx.host(p).name.clone());
            f.adapters = vec![cx.adapter_name(p)];
            f.gpus = cx.gpus(p);
            f.rail = Some(cx.port_rail(p));
            f.leaf_ports = vec![cx.leaf_port(p)];
        }
        None => {
            f.adapters = vec![format!("{} port {}", cx.name(other.node), other.port)];
            f.leaf_ports = vec![sw.port.to_string()];
        }
    }
    f.leaf = Some(cx.name(sw.node).to_string());
    f.rate = l.rate.as_ref().map(|r| r.raw.clone());
    f.evidence = vec![l.evidence.clone()];
    f
}
