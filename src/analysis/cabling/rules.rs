//! The cabling rules over one [`Ctx`]: each returns its findings with their evidence.
//!
//! * **crossed / wrong rail**: an adapter on a leaf of another rail (two of one host each on
//!   the other's rail: crossed). A leaf's rail is the layout rail most of its paired adapters
//!   are on, else the map name (`mlx5_N`, `HCA-N`) most of its GPU nodes' adapters carry
//!   (more than half); a port is compared by the same measure as its leaf.
//! * **shared leaf**: two adapters of one host on one leaf.
//! * **mixed leaf**: a leaf where no rail holds a majority.
//! * **other unit**: a host reaching a leaf whose hosts are, for the most part, another
//!   scalable unit's.
//! * **loopback**: a switch port cabled to a port of the same switch (said once per cable,
//!   never a host link or a rate baseline).
//! * **no switch**: an adapter the map shows with no cable at all.
//!
//! The rail rules run only where the fabric is rail-optimised as far as the map shows (GPU
//! nodes with two adapters or more, most leaves carrying one rail): [`Ctx::rails_judged`].

use super::ctx::{Ctx, Port, split_desc};
use super::{CablingFinding, FindingKind, Rail, Severity};
use crate::model::fabric::NodeKind;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Words for a rail judged by map names: the name may be the host's own numbering.
pub const RENUMBERED: &str = "crossed cables, or this host numbers its adapters differently: compare node GUIDs with `peerpath capture --keep-serials`";

/// A port on a leaf of another rail.
struct Wrong {
    port: usize,
    own: Rail,
    leaf_rail: Rail,
}

/// The port's rail and its leaf's, by the same measure (layout rails where the leaf is
/// measured in layout rails, else map names); `None` where the leaf has no rail or the port
/// no layout rail on a leaf measured in them.
enum Measure<'a> {
    Index(usize, usize),
    Name(&'a str, &'a str),
}

impl Measure<'_> {
    fn same(&self) -> bool {
        match self {
            Measure::Index(a, b) => a == b,
            Measure::Name(a, b) => a == b,
        }
    }

    fn rails(&self) -> (Rail, Rail) {
        match self {
            Measure::Index(a, b) => (Rail::Index(*a), Rail::Index(*b)),
            Measure::Name(a, b) => (Rail::Name(a.to_string()), Rail::Name(b.to_string())),
        }
    }
}

fn measure<'a>(cx: &'a Ctx<'_>, p: &'a Port<'_>) -> Option<Measure<'a>> {
    let leaf = cx.leaf(p);
    if leaf.by_layout {
        // A port with no layout rail on a leaf measured in layout rails was paired by that
        // leaf's rail: nothing to compare.
        return Some(Measure::Index(p.key?, leaf.layout_rail?));
    }
    Some(Measure::Name(p.name, leaf.name_rail?))
}

fn wrong_ports(cx: &Ctx<'_>) -> BTreeMap<usize, Vec<Wrong>> {
    let mut by_host: BTreeMap<usize, Vec<Wrong>> = BTreeMap::new();
    for (pi, p) in cx.ports.iter().enumerate() {
        if cx.host(p).not_gpu.is_some() {
            continue;
        }
        if let Some(m) = measure(cx, p)
            && !m.same()
        {
            let (own, leaf_rail) = m.rails();
            by_host.entry(p.host).or_default().push(Wrong {
                port: pi,
                own,
                leaf_rail,
            });
        }
    }
    by_host
}

/// Crossed pairs and wrong-rail adapters.
pub fn wrong_rail(cx: &Ctx<'_>) -> Vec<CablingFinding> {
    if !cx.rails_judged {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (_, ws) in wrong_ports(cx) {
        let mut used = vec![false; ws.len()];
        for i in 0..ws.len() {
            for j in i + 1..ws.len() {
                if !used[i]
                    && !used[j]
                    && ws[i].own == ws[j].leaf_rail
                    && ws[j].own == ws[i].leaf_rail
                {
                    used[i] = true;
                    used[j] = true;
                    let (a, b) = if ws[i].own <= ws[j].own {
                        (i, j)
                    } else {
                        (j, i)
                    };
                    out.push(crossed(cx, &ws[a], &ws[b]));
                }
            }
        }
        for (w, _) in ws.iter().zip(&used).filter(|(_, u)| !**u) {
            out.push(wrong(cx, w));
        }
    }
    out
}

fn port_finding(cx: &Ctx<'_>, kind: FindingKind, ports: &[usize]) -> CablingFinding {
    let mut f = CablingFinding::new(kind, Severity::Error);
    for &pi in ports {
        let p = &cx.ports[pi];
        f.host = Some(cx.host(p).name.clone());
        f.adapters.push(cx.adapter_name(p));
        f.gpus.extend(cx.gpus(p));
        f.leaves.push(cx.name(p.sw.node).to_string());
        f.leaf_ports.push(cx.leaf_port(p));
        f.evidence.push(cx.evidence(p));
    }
    f.leaf = f.leaves.first().cloned();
    f
}

fn crossed(cx: &Ctx<'_>, a: &Wrong, b: &Wrong) -> CablingFinding {
    let mut f = port_finding(cx, FindingKind::Crossed, &[a.port, b.port]);
    f.rail = Some(a.own.clone());
    f.leaf_rail = Some(a.leaf_rail.clone());
    // Each adapter belongs on the other's leaf.
    f.should_reach = vec![f.leaves[1].clone(), f.leaves[0].clone()];
    f
}

fn wrong(cx: &Ctx<'_>, w: &Wrong) -> CablingFinding {
    let mut f = port_finding(cx, FindingKind::WrongRail, &[w.port]);
    f.rail = Some(w.own.clone());
    f.leaf_rail = Some(w.leaf_rail.clone());
    f.should_reach = should_reach(cx, &cx.ports[w.port], &w.own);
    f
}

/// Leaves of `rail` this host's neighbours (hosts on its correctly railed leaves) reach; all
/// leaves of the rail where none does.
fn should_reach(cx: &Ctx<'_>, p: &Port<'_>, rail: &Rail) -> Vec<String> {
    let host = cx.host(p);
    let mut neighbours: HashSet<usize> = HashSet::new();
    for &q in &host.ports {
        let qp = &cx.ports[q];
        if measure(cx, qp).is_some_and(|m| m.same()) {
            neighbours.extend(cx.leaf(qp).ports.iter().map(|&x| cx.ports[x].host));
        }
    }
    let candidates: Vec<usize> = (0..cx.leaves.len())
        .filter(|&l| cx.leaves[l].rail().as_ref() == Some(rail))
        .collect();
    let score = |l: usize| {
        cx.leaves[l]
            .ports
            .iter()
            .filter(|&&x| neighbours.contains(&cx.ports[x].host))
            .count()
    };
    let best = candidates.iter().map(|&l| score(l)).max().unwrap_or(0);
    let mut v: Vec<String> = candidates
        .into_iter()
        .filter(|&l| best == 0 || score(l) == best)
        .map(|l| cx.name(cx.leaves[l].node).to_string())
        .collect();
    v.sort();
    v
}

/// Two adapters of one GPU node on one leaf.
pub fn shared_leaf(cx: &Ctx<'_>) -> Vec<CablingFinding> {
    if !cx.rails_judged {
        return Vec::new();
    }
    let mut out = Vec::new();
    for h in cx.gpu_hosts() {
        let mut on: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &pi in &h.ports {
            on.entry(cx.ports[pi].sw.node).or_default().push(pi);
        }
        for ps in on.values() {
            let first = cx.ports[ps[0]].name;
            if ps.iter().any(|&pi| cx.ports[pi].name != first) {
                out.push(port_finding(cx, FindingKind::SharedLeaf, ps));
            }
        }
    }
    out
}

/// A leaf where no rail holds a majority.
pub fn mixed_leaf(cx: &Ctx<'_>) -> Vec<CablingFinding> {
    if !cx.rails_judged {
        return Vec::new();
    }
    cx.leaves
        .iter()
        .filter(|l| l.rail().is_none() && l.rails().len() > 1)
        .map(|l| {
            let mut f = CablingFinding::new(FindingKind::MixedLeaf, Severity::Error);
            f.leaf = Some(cx.name(l.node).to_string());
            f.rails_on_leaf = l.rails();
            f
        })
        .collect()
}

/// A GPU node reaching a leaf whose hosts are, for the most part, another unit's.
pub fn other_unit(cx: &Ctx<'_>) -> Vec<CablingFinding> {
    if !cx.rails_judged || cx.units.len() < 2 {
        return Vec::new();
    }
    // Each leaf's home: the unit most of its GPU nodes' adapters belong to.
    let home: HashMap<usize, usize> = cx
        .leaves
        .iter()
        .filter_map(|l| {
            let mut n: BTreeMap<usize, usize> = BTreeMap::new();
            for &pi in &l.ports {
                if let Some(u) = cx.unit_of[cx.ports[pi].host] {
                    *n.entry(u).or_default() += cx.units[u].hosts.len();
                }
            }
            let best = n
                .into_iter()
                .max_by_key(|&(u, c)| (c, std::cmp::Reverse(u)))?;
            Some((l.node, best.0))
        })
        .collect();
    let mut out = Vec::new();
    for h in cx.gpu_hosts() {
        let mut votes: BTreeMap<usize, usize> = BTreeMap::new();
        for &pi in &h.ports {
            if let Some(&u) = home.get(&cx.ports[pi].sw.node) {
                *votes.entry(u).or_default() += 1;
            }
        }
        let Some((own, _)) = votes
            .iter()
            .max_by_key(|&(u, c)| (*c, std::cmp::Reverse(*u)))
        else {
            continue;
        };
        for &pi in &h.ports {
            let p = &cx.ports[pi];
            let Some(&u) = home.get(&p.sw.node) else {
                continue;
            };
            if u == *own {
                continue;
            }
            let mut f = port_finding(cx, FindingKind::OtherUnit, &[pi]);
            f.rail = Some(cx.port_rail(p));
            let other = &cx.units[u].hosts;
            f.evidence.push(format!(
                "{} is the leaf of hosts {} … {} ({} hosts); {}'s other leaves are those of hosts {} …",
                cx.name(p.sw.node),
                other.first().map_or("?", String::as_str),
                other.last().map_or("?", String::as_str),
                other.len(),
                h.name,
                cx.units[*own].hosts.first().map_or("?", String::as_str),
            ));
            f.should_reach = cx.units[*own]
                .leaves
                .iter()
                .zip(&cx.units[*own].leaf_nodes)
                .filter(|(_, n)| !h.ports.iter().any(|&q| cx.ports[q].sw.node == **n))
                .map(|(l, _)| l.clone())
                .collect();
            out.push(f);
        }
    }
    out
}

/// A switch port cabled to a port of the same switch: said once per cable.
pub fn loopback(cx: &Ctx<'_>) -> Vec<CablingFinding> {
    cx.map
        .links
        .iter()
        .filter(|l| l.loopback || l.a.node == l.b.node)
        .map(|l| {
            let mut f = CablingFinding::new(FindingKind::Loopback, Severity::Warning);
            f.leaf = Some(cx.name(l.a.node).to_string());
            f.leaf_ports = vec![l.a.port.to_string(), l.b.port.to_string()];
            f.rate = l.rate.as_ref().map(|r| r.raw.clone());
            f.evidence = vec![l.evidence.clone()];
            f
        })
        .collect()
}

/// An adapter the map lists with no cable: it sees no switch.
pub fn no_switch(cx: &Ctx<'_>) -> Vec<CablingFinding> {
    let mut cabled = vec![false; cx.map.nodes.len()];
    for l in &cx.map.links {
        cabled[l.a.node] = true;
        cabled[l.b.node] = true;
    }
    cx.map
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| n.kind == NodeKind::Ca && !cabled[*i])
        .map(|(_, n)| {
            let mut f = CablingFinding::new(FindingKind::NoSwitch, Severity::Error);
            match split_desc(&n.desc) {
                Some((h, a)) => {
                    f.host = Some(h.to_string());
                    f.adapters = vec![a.to_string()];
                }
                None => f.adapters = vec![n.desc.clone()],
            }
            f.evidence = vec![format!(
                "{}: adapter \"{}\"{} listed with no port cabled",
                cx.map.producer.tool(),
                n.desc,
                n.guid
                    .map_or(String::new(), |g| format!(" (node GUID {g:#018x})"))
            )];
            f
        })
        .collect()
}
