//! Rail cabling: the rails as the fabric forms them (which leaf each host adapter's cable
//! lands on) against the rails as the nodes need them (GPU k ↔ its NIC, rail k).
//!
//! Data: the fabric's own map ([`crate::model::fabric::FabricMap`], read by
//! `parse::fabric` from `ibnetdiscover`, `iblinkinfo`, `ibdiagnet2.db_csv` or `lldpctl`) and one
//! [`NodeLayout`] per node, or one layout standing for every host of an identical pod, built by
//! [`NodeLayout::from_rails`] from the rails report ([`super::rails::build`]: rail k is GPU k's
//! NIC within PXB) and the topology's RDMA devices (`node_guid`, `node_desc`, port GIDs, port
//! `state`, netdev names from sysfs).
//!
//! A host adapter is found in the map by its node GUID or a port GUID (a capture that recorded
//! them), else by the node description the driver sets (`<host> mlx5_N`), else, for LLDP, by
//! the host interface name (`<host> <netdev>`). A switch an adapter is cabled to is a leaf; a
//! leaf belongs to the rail most of its host adapters are on (more than half). Rules:
//!
//! * **wrong rail**: an adapter on a leaf of another rail; it should reach a leaf of its own
//!   rail (the one its neighbours on other rails share, when the rail has several leaves);
//! * **shared leaf**: two adapters of one host on one leaf (a rail collapsed, or doubled);
//! * **mixed leaf**: a leaf where no rail holds a majority (a rail collapsed onto it);
//! * **slow link**: a link narrower or slower than the most common rate of its kind (host
//!   links, switch-to-switch links);
//! * **absent**: an adapter the layout cables (a rail port; up in the capture when the capture
//!   says so) that the map does not show.
//!
//! Every finding names its evidence: the map's file and line, the capture's value.

use super::rails::Rails;
use crate::model::fabric::{FabricMap, NodeKind, Producer};
use crate::model::{OsDeviceKind, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Version tag of the cabling JSON document.
pub const CABLING_SCHEMA: &str = "peerpath.cabling/1";

/// One host adapter port as the node layout sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Adapter {
    /// RDMA device name (`mlx5_3`), else the netdev.
    pub name: String,
    /// RDMA port number, when known.
    pub port: Option<u32>,
    /// Its rail (GPU k's NIC is rail k), `None` for a fabric port on no rail.
    pub rail: Option<usize>,
    /// GPUs it serves (`GPU3`).
    pub gpus: Vec<String>,
    /// `node_guid` from sysfs, when captured.
    pub node_guid: Option<u64>,
    /// The port GUID (low 64 bits of `ports/<p>/gids/0`), when captured.
    pub port_guid: Option<u64>,
    /// Netdev names (`ibp12s0`, `eth2`): LLDP names the host side by interface.
    pub netdevs: Vec<String>,
    /// `node_desc` from sysfs, when captured (what the fabric shows as the description).
    pub node_desc: Option<String>,
    /// Port `state` is ACTIVE (`Some(false)`: captured and not active; `None`: not captured).
    pub active: Option<bool>,
}

/// The adapters one node cables to the fabric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeLayout {
    /// The host's name; `None` for a layout that stands for every host of the map.
    pub host: Option<String>,
    /// Where the layout was read from.
    pub source: String,
    /// Fabric ports, by rail.
    pub adapters: Vec<Adapter>,
}

/// `a088:c203:0011:2233` (sysfs `node_guid`) or a GID's last four groups → the GUID.
fn sysfs_guid(s: &str) -> Option<u64> {
    let groups: Vec<&str> = s.trim().split(':').collect();
    if groups.len() < 4 {
        return None;
    }
    let tail = &groups[groups.len() - 4..];
    let mut v: u64 = 0;
    for g in tail {
        if g.is_empty() || g.len() > 4 {
            return None;
        }
        v = (v << 16) | u64::from_str_radix(g, 16).ok()?;
    }
    Some(v)
}

impl NodeLayout {
    /// The layout of one node: its rails report's fabric ports, with the RDMA device facts
    /// the topology holds for each (`node_guid`, `node_desc`, `ports/<p>/gids/0`, `state`,
    /// netdev names).
    pub fn from_rails(t: &Topology, r: &Rails, host: Option<String>, source: String) -> Self {
        let mut adapters = Vec::new();
        for p in &r.ports {
            let dev = t.devices.iter().find(|d| d.bdf.to_string() == p.nic_bdf);
            let rdma = dev.and_then(|d| {
                d.os_devices
                    .iter()
                    .find(|o| o.kind == OsDeviceKind::Rdma && o.name == p.nic)
                    .or_else(|| d.os_devices.iter().find(|o| o.kind == OsDeviceKind::Rdma))
            });
            let attr = |k: &str| {
                rdma.and_then(|o| o.attrs.iter().find(|(a, _)| a == k))
                    .map(|(_, v)| v.clone())
            };
            let port_guid = p
                .port
                .and_then(|n| attr(&format!("ports/{n}/gids/0")))
                .and_then(|g| sysfs_guid(&g))
                .filter(|&g| g != 0);
            let active = p.port.and_then(|n| {
                rdma.and_then(|o| o.ports.iter().find(|q| q.port == n))
                    .and_then(|q| q.state.as_ref())
                    .map(|s| s.0 == 4)
            });
            adapters.push(Adapter {
                name: p.nic.clone(),
                port: p.port,
                rail: p.rail,
                gpus: p.gpus.clone(),
                node_guid: attr("node_guid").and_then(|g| sysfs_guid(&g)),
                port_guid,
                netdevs: dev
                    .map(|d| {
                        d.os_devices
                            .iter()
                            .filter(|o| o.kind == OsDeviceKind::Net)
                            .map(|o| o.name.clone())
                            .collect()
                    })
                    .unwrap_or_default(),
                node_desc: attr("node_desc"),
                active,
            });
        }
        NodeLayout {
            host,
            source,
            adapters,
        }
    }
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// An adapter cabled to a leaf of another rail.
    WrongRail,
    /// Two adapters of one host on one leaf.
    SharedLeaf,
    /// A leaf where no rail holds a majority.
    MixedLeaf,
    /// A link narrower or slower than its peers.
    SlowLink,
    /// An adapter the layout cables that the map does not show.
    Absent,
}

/// One cabling finding, every value typed; the renderer words it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CablingFinding {
    /// What it is.
    pub kind: FindingKind,
    /// The host, when the finding is about one.
    pub host: Option<String>,
    /// The adapters concerned (`mlx5_2`).
    pub adapters: Vec<String>,
    /// The GPUs they serve.
    pub gpus: Vec<String>,
    /// The adapter's rail (wrong rail, absent).
    pub rail: Option<usize>,
    /// The leaf concerned (its description).
    pub leaf: Option<String>,
    /// The leaf port(s) concerned.
    pub leaf_ports: Vec<String>,
    /// The rail the leaf carries (wrong rail).
    pub leaf_rail: Option<usize>,
    /// Leaves of the adapter's own rail it should reach (wrong rail).
    pub should_reach: Vec<String>,
    /// Rails on the leaf and how many adapters of each (mixed leaf).
    pub rails_on_leaf: Vec<(usize, usize)>,
    /// The link's rate as printed and in Gb/s, and the rate of its peers (slow link).
    pub rate: Option<String>,
    /// The link's rate in Gb/s (slow link).
    pub gbps: Option<f64>,
    /// The most common rate among its peers, in Gb/s (slow link).
    pub peers_gbps: Option<f64>,
    /// Evidence: map file and line, capture values.
    pub evidence: Vec<String>,
}

impl CablingFinding {
    fn new(kind: FindingKind) -> Self {
        CablingFinding {
            kind,
            host: None,
            adapters: Vec::new(),
            gpus: Vec::new(),
            rail: None,
            leaf: None,
            leaf_ports: Vec::new(),
            leaf_rail: None,
            should_reach: Vec::new(),
            rails_on_leaf: Vec::new(),
            rate: None,
            gbps: None,
            peers_gbps: None,
            evidence: Vec::new(),
        }
    }
}

/// A leaf as the fabric forms it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leaf {
    /// Its description in the map.
    pub name: String,
    /// The rail most of its host adapters are on (more than half); `None` when mixed.
    pub rail: Option<usize>,
    /// Host adapters cabled to it that a layout names.
    pub adapters: usize,
    /// Rails on it and how many adapters of each.
    pub rails: Vec<(usize, usize)>,
}

/// The cabling report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cabling {
    /// Always [`CABLING_SCHEMA`].
    pub schema: String,
    /// The tool that wrote the map.
    pub producer: String,
    /// Hosts found in the map and judged.
    pub hosts: usize,
    /// Host adapters of the map matched to a layout.
    pub adapters_matched: usize,
    /// How adapters were matched: by GUID, by description, by interface name.
    pub matched_by: BTreeMap<String, usize>,
    /// Adapters (channel adapters) in the map no layout names, by description (first 20).
    pub unmatched: Vec<String>,
    /// How many such adapters in all.
    pub unmatched_total: usize,
    /// Leaves, by name.
    pub leaves: Vec<Leaf>,
    /// Findings: wrong rail first, then shared and mixed leaves, slow links, absent adapters.
    pub findings: Vec<CablingFinding>,
    /// What the inputs could not show.
    pub limitations: Vec<String>,
    /// No finding.
    pub ok: bool,
}

/// One host adapter port found in the map.
struct Placed {
    host: String,
    adapter: usize,
    layout: usize,
    leaf: usize,
    leaf_port: String,
    link: usize,
    /// Whether the host has a layout of its own (or the one every host shares); `false`: a
    /// host without a capture, placed by the first capture's layout only to vote on its
    /// leaves' rails, never judged.
    judged: bool,
}

/// Splits a node description `<host> <adapter>` at its last blank.
fn split_desc(desc: &str) -> Option<(&str, &str)> {
    let d = desc.trim();
    let (h, a) = d.rsplit_once(char::is_whitespace)?;
    let h = h.trim_end();
    (!h.is_empty() && !a.is_empty()).then_some((h, a))
}

/// Judges the map against the layouts: one layout with no host stands for every host of
/// the map; layouts with hosts are matched by name or GUID.
pub fn judge(map: &FabricMap, layouts: &[NodeLayout]) -> Cabling {
    let template = layouts.iter().position(|l| l.host.is_none());
    let mut by_host: HashMap<&str, usize> = HashMap::new();
    let mut by_guid: HashMap<u64, (usize, usize)> = HashMap::new();
    for (li, l) in layouts.iter().enumerate() {
        if let Some(h) = &l.host {
            by_host.insert(h.as_str(), li);
        }
        for (ai, a) in l.adapters.iter().enumerate() {
            if l.host.is_some() {
                for g in [a.node_guid, a.port_guid].into_iter().flatten() {
                    by_guid.entry(g).or_insert((li, ai));
                }
            }
        }
    }
    let mut matched_by: BTreeMap<String, usize> = BTreeMap::new();
    let mut placed: Vec<Placed> = Vec::new();
    let mut unmatched: Vec<String> = Vec::new();
    let mut unmatched_total = 0;
    for (ki, link) in map.links.iter().enumerate() {
        // Host side and switch side of the cable.
        let (ca, sw) = match (map.nodes[link.a.node].kind, map.nodes[link.b.node].kind) {
            (NodeKind::Ca, NodeKind::Switch) => (link.a, link.b),
            (NodeKind::Switch, NodeKind::Ca) => (link.b, link.a),
            _ => continue,
        };
        let node = &map.nodes[ca.node];
        let ca_port_name = link
            .port_names
            .as_ref()
            .map(|(x, y)| if link.a.node == ca.node { x } else { y });
        let leaf_port = link
            .port_names
            .as_ref()
            .map(|(x, y)| {
                if link.a.node == sw.node {
                    x.clone()
                } else {
                    y.clone()
                }
            })
            .unwrap_or_else(|| sw.port.to_string());
        // 1. GUID.
        let mut found: Option<(String, usize, usize, &str, bool)> = None;
        for g in [node.guid, ca.port_guid].into_iter().flatten() {
            if let Some(&(li, ai)) = by_guid.get(&g) {
                let host = layouts[li].host.clone().unwrap_or_default();
                found = Some((host, li, ai, "guid", true));
                break;
            }
        }
        // 2. Description `<host> <adapter>` (LLDP: `<host> <interface>`).
        if found.is_none()
            && let Some((h, a)) = split_desc(&node.desc)
        {
            // A capture named by the short host name matches an FQDN description.
            let own = by_host
                .get(h)
                .or_else(|| h.split_once('.').and_then(|(short, _)| by_host.get(short)));
            let (li, judged) = match (own, template) {
                (Some(&li), _) | (None, Some(li)) => (Some(li), true),
                (None, None) => ((!layouts.is_empty()).then_some(0), false),
            };
            // The host as its layout names it (the short name), else as the map does.
            let hname = own
                .and_then(|&li| layouts[li].host.clone())
                .unwrap_or_else(|| h.to_string());
            if let Some(li) = li {
                let l = &layouts[li];
                let by_name = l.adapters.iter().enumerate().find(|(_, x)| {
                    x.name == a
                        && x.port
                            .is_none_or(|p| p == ca.port || map.producer == Producer::Lldpctl)
                });
                let by_name =
                    by_name.or_else(|| l.adapters.iter().enumerate().find(|(_, x)| x.name == a));
                let by_if = || {
                    l.adapters
                        .iter()
                        .enumerate()
                        .find(|(_, x)| x.netdevs.iter().any(|n| n == a || Some(n) == ca_port_name))
                };
                if let Some((ai, _)) = by_name {
                    found = Some((hname.clone(), li, ai, "description", judged));
                } else if let Some((ai, _)) = by_if() {
                    found = Some((hname.clone(), li, ai, "interface", judged));
                }
            }
        }
        if let Some((host, li, ai, how, judged)) = found {
            if judged {
                *matched_by.entry(how.to_string()).or_default() += 1;
            } else {
                unmatched_total += 1;
                if unmatched.len() < 20 {
                    unmatched.push(node.desc.clone());
                }
            }
            placed.push(Placed {
                host,
                adapter: ai,
                layout: li,
                leaf: sw.node,
                leaf_port,
                link: ki,
                judged,
            });
        } else {
            unmatched_total += 1;
            if unmatched.len() < 20 {
                unmatched.push(node.desc.clone());
            }
        }
    }
    let adapter = |p: &Placed| &layouts[p.layout].adapters[p.adapter];
    // Leaves: rails of the adapters on each.
    let mut rails_on: BTreeMap<usize, BTreeMap<usize, usize>> = BTreeMap::new();
    for p in &placed {
        let e = rails_on.entry(p.leaf).or_default();
        if let Some(r) = adapter(p).rail {
            *e.entry(r).or_default() += 1;
        }
    }
    let leaf_rail: HashMap<usize, Option<usize>> = rails_on
        .iter()
        .map(|(&leaf, rails)| {
            let total: usize = rails.values().sum();
            let major = rails.iter().find(|&(_, &n)| 2 * n > total).map(|(&r, _)| r);
            (leaf, major)
        })
        .collect();
    let name = |n: usize| map.nodes[n].desc.clone();
    let mut findings = Vec::new();
    // Hosts' leaves per rail, for the leaf a wrong-rail adapter should reach.
    let mut host_leaves: HashMap<&str, HashSet<usize>> = HashMap::new();
    for p in &placed {
        if leaf_rail.get(&p.leaf).copied().flatten() == adapter(p).rail {
            host_leaves
                .entry(p.host.as_str())
                .or_default()
                .insert(p.leaf);
        }
    }
    let mut leaves_of_rail: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (&leaf, &r) in &leaf_rail {
        if let Some(r) = r {
            leaves_of_rail.entry(r).or_default().push(leaf);
        }
    }
    // Hosts on each leaf (correctly railed).
    let mut hosts_on: HashMap<usize, HashSet<&str>> = HashMap::new();
    for (h, ls) in &host_leaves {
        for l in ls {
            hosts_on.entry(*l).or_default().insert(h);
        }
    }
    for p in placed.iter().filter(|p| p.judged) {
        let a = adapter(p);
        let (Some(r), Some(lr)) = (a.rail, leaf_rail.get(&p.leaf).copied().flatten()) else {
            continue;
        };
        if r == lr {
            continue;
        }
        // Neighbours: hosts sharing a correct leaf with this host.
        let mut neighbours: HashSet<&str> = HashSet::new();
        for l in host_leaves.get(p.host.as_str()).into_iter().flatten() {
            neighbours.extend(hosts_on.get(l).into_iter().flatten());
        }
        let candidates = leaves_of_rail.get(&r).cloned().unwrap_or_default();
        let score = |l: &usize| {
            hosts_on.get(l).map_or(0, |hs| {
                hs.iter().filter(|h| neighbours.contains(*h)).count()
            })
        };
        let best = candidates.iter().map(score).max().unwrap_or(0);
        let mut should: Vec<String> = candidates
            .iter()
            .filter(|l| best == 0 || score(l) == best)
            .map(|&l| name(l))
            .collect();
        should.sort();
        let mut f = CablingFinding::new(FindingKind::WrongRail);
        f.host = Some(p.host.clone());
        f.adapters = vec![a.name.clone()];
        f.gpus = a.gpus.clone();
        f.rail = Some(r);
        f.leaf = Some(name(p.leaf));
        f.leaf_ports = vec![p.leaf_port.clone()];
        f.leaf_rail = Some(lr);
        f.should_reach = should;
        f.evidence = vec![map.links[p.link].evidence.clone()];
        findings.push(f);
    }
    // Two adapters of one host on one leaf.
    let mut per_host_leaf: BTreeMap<(&str, usize), Vec<&Placed>> = BTreeMap::new();
    for p in placed.iter().filter(|p| p.judged) {
        per_host_leaf
            .entry((p.host.as_str(), p.leaf))
            .or_default()
            .push(p);
    }
    for ((host, leaf), ps) in &per_host_leaf {
        let names: HashSet<&str> = ps.iter().map(|p| adapter(p).name.as_str()).collect();
        if names.len() < 2 {
            continue;
        }
        let mut f = CablingFinding::new(FindingKind::SharedLeaf);
        f.host = Some(host.to_string());
        f.adapters = ps.iter().map(|p| adapter(p).name.clone()).collect();
        f.gpus = ps.iter().flat_map(|p| adapter(p).gpus.clone()).collect();
        f.leaf = Some(name(*leaf));
        f.leaf_ports = ps.iter().map(|p| p.leaf_port.clone()).collect();
        f.evidence = ps
            .iter()
            .map(|p| map.links[p.link].evidence.clone())
            .collect();
        findings.push(f);
    }
    // Mixed leaves.
    for (&leaf, rails) in &rails_on {
        if leaf_rail.get(&leaf).copied().flatten().is_none() && rails.len() > 1 {
            let mut f = CablingFinding::new(FindingKind::MixedLeaf);
            f.leaf = Some(name(leaf));
            f.rails_on_leaf = rails.iter().map(|(&r, &n)| (r, n)).collect();
            findings.push(f);
        }
    }
    // Slow links: each against the most common rate of its kind.
    let mut kinds: [Vec<(usize, f64)>; 2] = [Vec::new(), Vec::new()];
    for (ki, l) in map.links.iter().enumerate() {
        let Some(g) = l.rate.as_ref().and_then(|r| r.gbps) else {
            continue;
        };
        let hostlink = map.nodes[l.a.node].kind != NodeKind::Switch
            || map.nodes[l.b.node].kind != NodeKind::Switch;
        kinds[usize::from(!hostlink)].push((ki, g));
    }
    let placed_at: HashMap<usize, &Placed> = placed
        .iter()
        .filter(|p| p.judged)
        .map(|p| (p.link, p))
        .collect();
    for group in &kinds {
        let mut count: BTreeMap<u64, usize> = BTreeMap::new();
        for &(_, g) in group {
            *count.entry(g.to_bits()).or_default() += 1;
        }
        let Some((&mode_bits, _)) = count.iter().max_by_key(|&(b, n)| (*n, *b)) else {
            continue;
        };
        let mode = f64::from_bits(mode_bits);
        for &(ki, g) in group {
            if g >= mode {
                continue;
            }
            let l = &map.links[ki];
            let mut f = CablingFinding::new(FindingKind::SlowLink);
            let (sw, other) = if map.nodes[l.a.node].kind == NodeKind::Switch {
                (l.a, l.b)
            } else {
                (l.b, l.a)
            };
            if let Some(p) = placed_at.get(&ki) {
                let a = adapter(p);
                f.host = Some(p.host.clone());
                f.adapters = vec![a.name.clone()];
                f.gpus = a.gpus.clone();
                f.rail = a.rail;
                f.leaf_ports = vec![p.leaf_port.clone()];
            } else {
                f.adapters = vec![format!("{} port {}", name(other.node), other.port)];
                f.leaf_ports = vec![sw.port.to_string()];
            }
            f.leaf = Some(name(sw.node));
            f.rate = l.rate.as_ref().map(|r| r.raw.clone());
            f.gbps = Some(g);
            f.peers_gbps = Some(mode);
            f.evidence = vec![l.evidence.clone()];
            findings.push(f);
        }
    }
    // Absent adapters.
    let mut seen: HashSet<(&str, usize, usize)> = HashSet::new();
    let mut hosts: Vec<&str> = Vec::new();
    let mut host_set: HashSet<&str> = HashSet::new();
    for p in placed.iter().filter(|p| p.judged) {
        seen.insert((p.host.as_str(), p.layout, p.adapter));
        if host_set.insert(p.host.as_str()) {
            hosts.push(p.host.as_str());
        }
    }
    let check_absent = |host: &str, li: usize, findings: &mut Vec<CablingFinding>| {
        let l = &layouts[li];
        for (ai, a) in l.adapters.iter().enumerate() {
            if a.rail.is_none() || seen.contains(&(host, li, ai)) || a.active == Some(false) {
                continue;
            }
            let mut f = CablingFinding::new(FindingKind::Absent);
            f.host = Some(host.to_string());
            f.adapters = vec![a.name.clone()];
            f.gpus = a.gpus.clone();
            f.rail = a.rail;
            f.evidence = vec![match (l.host.is_some(), a.active) {
                (true, Some(true)) => format!(
                    "{}: {} port {} state ACTIVE",
                    l.source,
                    a.name,
                    a.port.map_or("?".into(), |p| p.to_string())
                ),
                (true, _) => format!("{}: {} cabled (port state not captured)", l.source, a.name),
                (false, _) => format!(
                    "{}: the layout every host shares cables {}",
                    l.source, a.name
                ),
            }];
            findings.push(f);
        }
    };
    for host in &hosts {
        if let Some(&li) = by_host.get(host) {
            check_absent(host, li, &mut findings);
        } else if let Some(li) = template {
            check_absent(host, li, &mut findings);
        } else if let Some(p) = placed.iter().find(|p| p.host == *host) {
            check_absent(host, p.layout, &mut findings);
        }
    }
    // A layout with a host that the map does not show at all.
    for (li, l) in layouts.iter().enumerate() {
        if let Some(h) = &l.host
            && !host_set.contains(h.as_str())
        {
            check_absent(h, li, &mut findings);
        }
    }
    findings.sort_by(|a, b| {
        (a.kind, &a.host, &a.adapters, &a.leaf).cmp(&(b.kind, &b.host, &b.adapters, &b.leaf))
    });
    let leaves: Vec<Leaf> = rails_on
        .iter()
        .map(|(&leaf, rails)| Leaf {
            name: name(leaf),
            rail: leaf_rail.get(&leaf).copied().flatten(),
            adapters: rails.values().sum(),
            rails: rails.iter().map(|(&r, &n)| (r, n)).collect(),
        })
        .collect();
    let mut limitations = map.limitations.clone();
    if template.is_some() {
        limitations.push(
            "one node layout stands for every host: an adapter up in the capture but absent from the map can only be judged against that layout".into(),
        );
    }
    if placed.iter().any(|p| !p.judged) {
        limitations.push(format!(
            "hosts without a capture vote on their leaves' rails as {} places their adapters by name; they are not judged",
            layouts.first().map_or("-", |l| l.source.as_str())
        ));
    }
    if !placed.iter().any(|p| p.judged) {
        limitations.push("no host adapter of the map matched a layout (by GUID, `<host> mlx5_N` description or interface name): nothing was judged".into());
    }
    Cabling {
        schema: CABLING_SCHEMA.to_string(),
        producer: map.producer.tool().to_string(),
        hosts: hosts.len(),
        adapters_matched: placed.iter().filter(|p| p.judged).count(),
        matched_by,
        unmatched,
        unmatched_total,
        leaves,
        ok: findings.is_empty() && placed.iter().any(|p| p.judged),
        findings,
        limitations,
    }
}
