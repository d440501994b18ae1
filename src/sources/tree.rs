//! Structure inference over the device list: bridge roles (root port, switch ports, bridge),
//! switches as single nodes, host bridges and their NUMA node. Called by
//! [`super::assemble::assemble`] for every source: [`infer_structure`] for a full PCI tree
//! (sysfs, hwloc XML), [`upstream_only_structure`] for a tree without downstream ports (NCCL XML).

use crate::model::bdf::{Bdf, parse_host_bridge};
use crate::model::cpulist;
use crate::model::device::{Device, DeviceKind};
use crate::model::pci_config::PortType;
use crate::model::topology::{HostBridge, MAX_CHAIN, NumaNode, Switch, Warning};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Sets bridge kinds, groups switch ports into switches, sets each device's `switch`, and
/// derives the host bridges. Bridges are classified top-down:
/// - with config space (root): the PCIe port type decides (4 root port, 5 upstream,
///   6 downstream);
/// - with 64 bytes of config: a bridge directly under a host bridge is a root port; a bridge
///   under a switch upstream port is a downstream port; any other bridge with bridges below it
///   is a switch upstream port; the rest are plain bridges.
pub fn infer_structure(
    mut devices: Vec<Device>,
    numa_nodes: &[NumaNode],
    warnings: &mut Vec<Warning>,
) -> (Vec<Device>, Vec<HostBridge>, Vec<Switch>) {
    make_forest(&mut devices, warnings);
    let links = Links::of(&devices);
    let from_config = bridge_roles(&mut devices, &links);
    let (mut switches, port_switch) = group_switches(&devices, &links, &from_config, warnings);
    hang_under_switches(&mut devices, &links, &port_switch, &mut switches);
    let host_bridges = host_bridges(&devices, numa_nodes, warnings);
    (devices, host_bridges, switches)
}

/// The links of a forest of devices: each address's index, and each device's children.
struct Links {
    index: HashMap<Bdf, usize>,
    children: HashMap<Bdf, Vec<usize>>,
}

impl Links {
    fn of(devices: &[Device]) -> Links {
        let index: HashMap<Bdf, usize> = devices
            .iter()
            .enumerate()
            .map(|(i, d)| (d.bdf, i))
            .collect();
        let mut children: HashMap<Bdf, Vec<usize>> = HashMap::new();
        for (i, d) in devices.iter().enumerate() {
            if let Some(p) = d.parent {
                children.entry(p).or_default().push(i);
            }
        }
        Links { index, children }
    }

    /// How many parents are above device `i` (at most 65: a loop guard).
    fn depth(&self, i: usize, devices: &[Device]) -> usize {
        let mut n = 0;
        let mut cur = devices[i].parent;
        while let Some(p) = cur {
            n += 1;
            if n > 64 {
                break;
            }
            cur = self.index.get(&p).and_then(|&j| devices[j].parent);
        }
        n
    }
}

/// Sets each bridge's kind, top-down (parents before children): from its port type where
/// config has one, else from where it sits. Returns, per bridge, whether config decided.
fn bridge_roles(devices: &mut [Device], links: &Links) -> HashMap<Bdf, bool> {
    let (index, children) = (&links.index, &links.children);
    let mut order: Vec<usize> = (0..devices.len()).collect();
    order.sort_by_key(|&i| (links.depth(i, devices), devices[i].bdf));
    let mut from_config: HashMap<Bdf, bool> = HashMap::new();
    for &i in &order {
        let d = &devices[i];
        let is_bridge_class = d.kind == DeviceKind::Bridge
            || d.config.as_ref().is_some_and(|c| c.header_type == 1)
            || children.contains_key(&d.bdf);
        if !is_bridge_class {
            continue;
        }
        let parent_kind = d
            .parent
            .and_then(|p| index.get(&p))
            .map(|&j| devices[j].kind);
        let has_bridge_children = children
            .get(&d.bdf)
            .is_some_and(|c| c.iter().any(|&j| is_bridge(&devices[j], children)));
        let (kind, cfg) = match d.port_type() {
            Some(PortType::RootPort) => (DeviceKind::RootPort, true),
            Some(PortType::SwitchUpstream) => (DeviceKind::SwitchUpstream, true),
            Some(PortType::SwitchDownstream) => (DeviceKind::SwitchDownstream, true),
            Some(_) => (DeviceKind::Bridge, true),
            None => {
                let k = if d.parent.is_none() {
                    DeviceKind::RootPort
                } else if parent_kind == Some(DeviceKind::SwitchUpstream) {
                    DeviceKind::SwitchDownstream
                } else if has_bridge_children {
                    DeviceKind::SwitchUpstream
                } else {
                    DeviceKind::Bridge
                };
                (k, false)
            }
        };
        from_config.insert(d.bdf, cfg);
        devices[i].kind = kind;
    }
    from_config
}

/// Switches: each upstream port with its downstream-port children, and a downstream port
/// without an upstream port above it as a switch of its own. Returns the switches and the
/// switch of each of their ports.
fn group_switches(
    devices: &[Device],
    links: &Links,
    from_config: &HashMap<Bdf, bool>,
    warnings: &mut Vec<Warning>,
) -> (Vec<Switch>, HashMap<Bdf, usize>) {
    let mut switches: Vec<Switch> = Vec::new();
    let mut port_switch: HashMap<Bdf, usize> = HashMap::new();
    for d in devices
        .iter()
        .filter(|d| d.kind == DeviceKind::SwitchUpstream)
    {
        let downstream: Vec<Bdf> = links
            .children
            .get(&d.bdf)
            .map(|c| {
                c.iter()
                    .filter(|&&j| devices[j].kind == DeviceKind::SwitchDownstream)
                    .map(|&j| devices[j].bdf)
                    .collect()
            })
            .unwrap_or_default();
        let n = switches.len();
        port_switch.insert(d.bdf, n);
        for b in &downstream {
            port_switch.insert(*b, n);
        }
        switches.push(Switch {
            id: format!("sw{n}"),
            upstream: d.bdf,
            downstream,
            parent_switch: None,
            evidence: if from_config.get(&d.bdf).copied().unwrap_or(false) {
                "config".into()
            } else {
                "tree".into()
            },
        });
    }
    // A downstream port whose parent is not an upstream port (config says 6 but the tree
    // disagrees) still forms a switch of its own so nothing is lost.
    for d in devices
        .iter()
        .filter(|d| d.kind == DeviceKind::SwitchDownstream)
    {
        if let std::collections::hash_map::Entry::Vacant(e) = port_switch.entry(d.bdf) {
            warnings.push(Warning {
                path: d.sysfs_path.clone(),
                message: format!(
                    "downstream port {} has no upstream port above it; treated as its own switch",
                    d.bdf
                ),
            });
            let n = switches.len();
            e.insert(n);
            switches.push(Switch {
                id: format!("sw{n}"),
                upstream: d.bdf,
                downstream: vec![],
                parent_switch: None,
                evidence: "config".into(),
            });
        }
    }
    (switches, port_switch)
}

/// Parent switch of each switch, and the switch each device hangs under.
fn hang_under_switches(
    devices: &mut [Device],
    links: &Links,
    port_switch: &HashMap<Bdf, usize>,
    switches: &mut [Switch],
) {
    let index = &links.index;
    let switch_above = |bdf: Bdf, devices: &[Device]| -> Option<usize> {
        let mut cur = index.get(&bdf).and_then(|&i| devices[i].parent);
        let mut n = 0;
        while let Some(p) = cur {
            n += 1;
            if n > 64 {
                break;
            }
            if let Some(&s) = port_switch.get(&p) {
                return Some(s);
            }
            cur = index.get(&p).and_then(|&i| devices[i].parent);
        }
        None
    };
    for sw in switches.iter_mut() {
        sw.parent_switch = switch_above(sw.upstream, devices).map(|p| format!("sw{p}"));
    }
    for i in 0..devices.len() {
        let d = &devices[i];
        let sw = match d.kind {
            DeviceKind::SwitchUpstream | DeviceKind::SwitchDownstream => None,
            _ => d
                .parent
                .and_then(|p| index.get(&p))
                .filter(|&&j| devices[j].kind == DeviceKind::SwitchDownstream)
                .and_then(|&j| port_switch.get(&devices[j].bdf)),
        };
        let sw = match (d.kind, sw) {
            (DeviceKind::SwitchUpstream, _) => d
                .parent
                .and_then(|p| port_switch.get(&p).copied())
                .map(|x| format!("sw{x}")),
            (_, Some(&x)) => Some(format!("sw{x}")),
            _ => None,
        };
        devices[i].switch = sw;
    }
}

/// Host bridges: names from the devices, NUMA node agreed by them.
fn host_bridges(
    devices: &[Device],
    numa_nodes: &[NumaNode],
    warnings: &mut Vec<Warning>,
) -> Vec<HostBridge> {
    type HostBridgeSeen = (String, BTreeSet<Option<u32>>, BTreeSet<u32>);
    let mut hbs: BTreeMap<(u32, u8), HostBridgeSeen> = BTreeMap::new();
    for d in devices {
        let key = parse_host_bridge(&d.host_bridge).unwrap_or((d.bdf.domain, d.bdf.bus));
        let e = hbs
            .entry(key)
            .or_insert_with(|| (d.host_bridge.clone(), BTreeSet::new(), BTreeSet::new()));
        e.1.insert(d.numa_node);
        if let Some(c) = &d.local_cpus {
            e.2.extend(c.iter().copied());
        }
    }
    hbs.into_iter()
        .map(|((domain, bus), (name, numas, cpus))| {
            let numa_node = host_bridge_numa(&name, &numas, &cpus, numa_nodes, warnings);
            HostBridge {
                name,
                domain,
                bus,
                numa_node,
                cpus: if cpus.is_empty() {
                    None
                } else {
                    Some(cpulist::format_list(&cpus.into_iter().collect::<Vec<_>>()))
                },
            }
        })
        .collect()
}

/// The NUMA node of host bridge `name`: the one its devices agree on; else (none read) the
/// node whose CPUs equal their local CPUs; else the machine's only node with CPUs.
fn host_bridge_numa(
    name: &str,
    numas: &BTreeSet<Option<u32>>,
    cpus: &BTreeSet<u32>,
    numa_nodes: &[NumaNode],
    warnings: &mut Vec<Warning>,
) -> Option<u32> {
    let known: Vec<u32> = numas.iter().flatten().copied().collect();
    let numa_node = if known.len() == 1 {
        Some(known[0])
    } else {
        if known.len() > 1 {
            warnings.push(Warning {
                path: format!("sys/devices/{name}"),
                message: format!("devices under {name} report different NUMA nodes {known:?}; host bridge NUMA node unknown"),
            });
        }
        // No numa_node: fall back to the NUMA node whose cpus equal the devices' local cpus.
        if known.is_empty() && !cpus.is_empty() {
            let want = cpulist::format_list(&cpus.iter().copied().collect::<Vec<_>>());
            let m: Vec<&NumaNode> = numa_nodes.iter().filter(|n| n.cpus == want).collect();
            if m.len() == 1 && numa_nodes.len() > 1 {
                Some(m[0].id)
            } else {
                None
            }
        } else {
            None
        }
    };
    // One NUMA node with CPUs on the whole machine: every host bridge is local to it.
    let cpu_nodes: Vec<&NumaNode> = numa_nodes.iter().filter(|n| !n.cpus.is_empty()).collect();
    numa_node.or(if cpu_nodes.len() == 1 && known.len() <= 1 {
        Some(cpu_nodes[0].id)
    } else {
        None
    })
}

/// Switches of a tree that keeps only switch upstream ports (NCCL XML): one switch per
/// `SwitchUpstream` device (`sw0`, `sw1`, … in address order) with no downstream ports, its
/// parent switch the one whose upstream port it hangs under, and every device's `switch` the
/// switch of its parent. Devices come back in address order.
pub fn upstream_only_structure(
    mut devices: Vec<Device>,
    evidence: &str,
    warnings: &mut Vec<Warning>,
) -> (Vec<Device>, Vec<Switch>) {
    make_forest(&mut devices, warnings);
    let ups: Vec<Bdf> = devices
        .iter()
        .filter(|d| d.kind == DeviceKind::SwitchUpstream)
        .map(|d| d.bdf)
        .collect();
    let sw_id: HashMap<Bdf, String> = ups
        .iter()
        .enumerate()
        .map(|(n, b)| (*b, format!("sw{n}")))
        .collect();
    let parent_of: HashMap<Bdf, Option<Bdf>> = devices.iter().map(|d| (d.bdf, d.parent)).collect();
    let switches = ups
        .iter()
        .map(|u| Switch {
            id: sw_id[u].clone(),
            upstream: *u,
            downstream: Vec::new(),
            parent_switch: parent_of
                .get(u)
                .copied()
                .flatten()
                .and_then(|p| sw_id.get(&p).cloned()),
            evidence: evidence.into(),
        })
        .collect();
    for d in &mut devices {
        d.switch = d.parent.and_then(|p| sw_id.get(&p).cloned());
    }
    (devices, switches)
}

/// Where a warning about a device points: its sysfs path, else its address (JSON, XML).
fn where_of(d: &Device) -> String {
    if d.sysfs_path.is_empty() {
        d.bdf.to_string()
    } else {
        d.sysfs_path.clone()
    }
}

/// Makes the device list a forest that every walk up `parent` links finishes, for every
/// source (sysfs, XML and peerpath JSON alike), each repair a warning naming the devices:
/// - devices sorted by address; a second device at an address already seen is dropped (the
///   first is kept);
/// - a parent that is the device itself or is not in the list is cleared (the device hangs
///   under its host bridge);
/// - a loop of parents (A under B under A) is cut at its lowest address, which is attached to
///   its host bridge, so no device of the loop vanishes from the tree;
/// - a device more than [`MAX_CHAIN`] − 1 bridges below its host bridge is dropped, with its
///   subtree (no PCIe hierarchy is that deep; walks stay bounded).
///
/// Linear in the number of devices.
pub fn make_forest(devices: &mut Vec<Device>, warnings: &mut Vec<Warning>) {
    devices.sort_by_key(|d| d.bdf);
    let before = devices.len();
    let mut dup: Vec<(Bdf, usize)> = Vec::new();
    devices.dedup_by(|later, first| {
        let same = later.bdf == first.bdf;
        if same {
            match dup.last_mut() {
                Some((b, n)) if *b == first.bdf => *n += 1,
                _ => dup.push((first.bdf, 1)),
            }
        }
        same
    });
    if devices.len() != before {
        for (b, n) in &dup {
            warnings.push(Warning {
                path: b.to_string(),
                message: format!(
                    "{} more device(s) at address {b}; only the first is kept",
                    n
                ),
            });
        }
    }
    let index: HashMap<Bdf, usize> = devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.bdf, i))
        .collect();
    for d in devices.iter_mut() {
        if let Some(p) = d.parent {
            let msg = if p == d.bdf {
                Some(format!(
                    "device {p} names itself as its parent; attached to its host bridge"
                ))
            } else if !index.contains_key(&p) {
                Some(format!(
                    "parent {p} not found; device attached to its host bridge"
                ))
            } else {
                None
            };
            if let Some(message) = msg {
                warnings.push(Warning {
                    path: where_of(d),
                    message,
                });
                d.parent = None;
            }
        }
    }
    // Loops: each device has at most one parent, so every loop is found by one walk.
    let parent_ix =
        |devices: &[Device], i: usize| devices[i].parent.and_then(|p| index.get(&p).copied());
    let mut seen: Vec<u32> = vec![0; devices.len()]; // walk number that visited, 0 = none
    for start in 0..devices.len() {
        if seen[start] != 0 {
            continue;
        }
        let walk = start as u32 + 1;
        let mut path: Vec<usize> = Vec::new();
        let mut cur = Some(start);
        while let Some(i) = cur {
            if seen[i] == walk {
                // A loop: path from the first visit of `i` on.
                let at = path.iter().position(|&x| x == i).unwrap_or(0);
                let ring = &path[at..];
                let cut = ring
                    .iter()
                    .copied()
                    .min_by_key(|&x| devices[x].bdf)
                    .unwrap_or(i);
                let names: Vec<String> = ring.iter().map(|&x| devices[x].bdf.to_string()).collect();
                warnings.push(Warning {
                    path: where_of(&devices[cut]),
                    message: format!(
                        "parent links loop ({} → {}); {} attached to its host bridge",
                        names.join(" → "),
                        names[0],
                        devices[cut].bdf
                    ),
                });
                devices[cut].parent = None;
                break;
            }
            if seen[i] != 0 {
                break;
            }
            seen[i] = walk;
            path.push(i);
            cur = parent_ix(devices, i);
        }
    }
    // Depth: parents first (a memoised walk; no loops remain).
    let mut depth: Vec<Option<usize>> = vec![None; devices.len()];
    for start in 0..devices.len() {
        let mut path = Vec::new();
        let mut cur = Some(start);
        let mut base = 0;
        while let Some(i) = cur {
            if let Some(d) = depth[i] {
                base = d + 1;
                break;
            }
            path.push(i);
            cur = parent_ix(devices, i);
        }
        for (k, &i) in path.iter().rev().enumerate() {
            depth[i] = Some(base + k);
        }
    }
    let too_deep: Vec<usize> = (0..devices.len())
        .filter(|&i| depth[i].unwrap_or(0) >= MAX_CHAIN)
        .collect();
    if let Some(&first) = too_deep.first() {
        warnings.push(Warning {
            path: where_of(&devices[first]),
            message: format!(
                "{} device(s) lie more than {} bridges below their host bridge (first: {}); dropped: no PCIe hierarchy is that deep",
                too_deep.len(),
                MAX_CHAIN - 1,
                devices[first].bdf
            ),
        });
        let drop: std::collections::HashSet<usize> = too_deep.into_iter().collect();
        let mut i = 0;
        devices.retain(|_| {
            let keep = !drop.contains(&i);
            i += 1;
            keep
        });
    }
}

/// Makes the switch list safe to walk (peerpath JSON carries switches as written; the other
/// sources derive them from a forest): one switch per id (later ones dropped), a
/// `parent_switch` that names an existing other switch, no loop of parent switches (cut at
/// the first switch of the loop in list order) and no chain longer than [`MAX_CHAIN`]. Each
/// repair is a warning naming the switch.
pub fn check_switches(switches: &mut Vec<Switch>, warnings: &mut Vec<Warning>) {
    let mut ids = std::collections::HashSet::new();
    switches.retain(|s| {
        let fresh = ids.insert(s.id.clone());
        if !fresh {
            warnings.push(Warning {
                path: format!("switch {}", s.id),
                message: format!("a second switch with id {:?}; only the first is kept", s.id),
            });
        }
        fresh
    });
    let index: HashMap<String, usize> = switches
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.clone(), i))
        .collect();
    for s in switches.iter_mut() {
        if let Some(p) = &s.parent_switch
            && (p == &s.id || !index.contains_key(p))
        {
            warnings.push(Warning {
                path: format!("switch {}", s.id),
                message: if p == &s.id {
                    format!(
                        "switch {} names itself as its parent switch; parent cleared",
                        s.id
                    )
                } else {
                    format!("parent switch {p:?} not found; parent cleared")
                },
            });
            s.parent_switch = None;
        }
    }
    for start in 0..switches.len() {
        let mut path: Vec<usize> = Vec::new();
        let mut cur = Some(start);
        while let Some(i) = cur {
            if path.contains(&i) || path.len() >= MAX_CHAIN {
                let last = *path.last().unwrap_or(&start);
                let looped = path.contains(&i);
                warnings.push(Warning {
                    path: format!("switch {}", switches[last].id),
                    message: if looped {
                        format!(
                            "parent switches loop back to {}; the link above {} is cut",
                            switches[i].id, switches[last].id
                        )
                    } else {
                        format!(
                            "parent switches more than {MAX_CHAIN} deep; the link above {} is cut",
                            switches[last].id
                        )
                    },
                });
                switches[last].parent_switch = None;
                break;
            }
            path.push(i);
            cur = switches[i]
                .parent_switch
                .as_ref()
                .and_then(|p| index.get(p).copied());
        }
    }
}

fn is_bridge(d: &Device, children: &HashMap<Bdf, Vec<usize>>) -> bool {
    d.kind.is_bridge()
        || d.config.as_ref().is_some_and(|c| c.header_type == 1)
        || children.contains_key(&d.bdf)
}
