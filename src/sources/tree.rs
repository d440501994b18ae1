//! Structure inference over the device list: bridge roles (root port, switch ports, bridge),
//! switches as single nodes, host bridges and their NUMA node. Called by
//! [`super::assemble::assemble`] for every source: [`infer_structure`] for a full PCI tree
//! (sysfs, hwloc XML), [`upstream_only_structure`] for a tree without downstream ports (NCCL XML).

use crate::model::bdf::{Bdf, parse_host_bridge};
use crate::model::device::{Device, DeviceKind};
use crate::model::topology::{HostBridge, NumaNode, Switch, Warning};
use crate::parse::config::PortType;
use crate::parse::cpulist;
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
    devices.sort_by_key(|d| d.bdf);
    let index: HashMap<Bdf, usize> = devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.bdf, i))
        .collect();
    // Drop parents that do not exist (defensive; sources should not produce them).
    for d in devices.iter_mut() {
        if let Some(p) = d.parent
            && (!index.contains_key(&p) || p == d.bdf)
        {
            warnings.push(Warning {
                path: d.sysfs_path.clone(),
                message: format!("parent {p} not found; device attached to its host bridge"),
            });
            d.parent = None;
        }
    }
    let mut children: HashMap<Bdf, Vec<usize>> = HashMap::new();
    for (i, d) in devices.iter().enumerate() {
        if let Some(p) = d.parent {
            children.entry(p).or_default().push(i);
        }
    }
    // Depth order (parents before children), with a loop guard.
    let depth = |i: usize, devices: &[Device]| -> usize {
        let mut n = 0;
        let mut cur = devices[i].parent;
        while let Some(p) = cur {
            n += 1;
            if n > 64 {
                break;
            }
            cur = index.get(&p).and_then(|&j| devices[j].parent);
        }
        n
    };
    let mut order: Vec<usize> = (0..devices.len()).collect();
    order.sort_by_key(|&i| (depth(i, &devices), devices[i].bdf));

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
            .is_some_and(|c| c.iter().any(|&j| is_bridge(&devices[j], &children)));
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

    // Switches: each upstream port with its downstream-port children.
    let mut switches: Vec<Switch> = Vec::new();
    let mut port_switch: HashMap<Bdf, usize> = HashMap::new();
    for d in devices
        .iter()
        .filter(|d| d.kind == DeviceKind::SwitchUpstream)
    {
        let downstream: Vec<Bdf> = children
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
    // Parent switch of each switch, and the switch each device hangs under.
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
        sw.parent_switch = switch_above(sw.upstream, &devices).map(|p| format!("sw{p}"));
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

    // Host bridges: names from the devices, NUMA node agreed by them.
    type HostBridgeSeen = (String, BTreeSet<Option<u32>>, BTreeSet<u32>);
    let mut hbs: BTreeMap<(u32, u8), HostBridgeSeen> = BTreeMap::new();
    for d in &devices {
        let key = parse_host_bridge(&d.host_bridge).unwrap_or((d.bdf.domain, d.bdf.bus));
        let e = hbs
            .entry(key)
            .or_insert_with(|| (d.host_bridge.clone(), BTreeSet::new(), BTreeSet::new()));
        e.1.insert(d.numa_node);
        if let Some(c) = &d.local_cpus {
            e.2.extend(c.iter().copied());
        }
    }
    let host_bridges = hbs
        .into_iter()
        .map(|((domain, bus), (name, numas, cpus))| {
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
                    if m.len() == 1 && numa_nodes.len() > 1 { Some(m[0].id) } else { None }
                } else {
                    None
                }
            };
            // One NUMA node with CPUs on the whole machine: every host bridge is local to it.
            let cpu_nodes: Vec<&NumaNode> = numa_nodes.iter().filter(|n| !n.cpus.is_empty()).collect();
            let numa_node = numa_node.or(if cpu_nodes.len() == 1 && known.len() <= 1 { Some(cpu_nodes[0].id) } else { None });
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
        .collect();
    (devices, host_bridges, switches)
}

/// Switches of a tree that keeps only switch upstream ports (NCCL XML): one switch per
/// `SwitchUpstream` device (`sw0`, `sw1`, … in address order) with no downstream ports, its
/// parent switch the one whose upstream port it hangs under, and every device's `switch` the
/// switch of its parent. Devices come back in address order.
pub fn upstream_only_structure(
    mut devices: Vec<Device>,
    evidence: &str,
) -> (Vec<Device>, Vec<Switch>) {
    devices.sort_by_key(|d| d.bdf);
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

fn is_bridge(d: &Device, children: &HashMap<Bdf, Vec<usize>>) -> bool {
    d.kind.is_bridge()
        || d.config.as_ref().is_some_and(|c| c.header_type == 1)
        || children.contains_key(&d.bdf)
}
