//! The node layout the fabric is checked against: each node's fabric ports, their rails (GPU k's
//! NIC is rail k) and the RDMA facts a capture recorded for them.
//!
//! Data: the rails report ([`crate::analysis::rails::build`]) and the topology's RDMA devices
//! (`node_guid`, `node_desc`, port GIDs, port `state`, netdev names from sysfs).

use crate::analysis::rails::Rails;
use crate::model::{OsDeviceKind, Topology};
use serde::Serialize;

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
    /// A layout shared by every host (no host name): adapter `mlx5_k` on rail k serving `GPUk`,
    /// port 1 active, no GUIDs or netdevs. Written for synthesized pods and tests, whose fabric
    /// maps are cabled that way.
    pub fn one_adapter_per_rail(rails: usize, source: &str) -> Self {
        NodeLayout {
            host: None,
            source: source.to_string(),
            adapters: (0..rails)
                .map(|r| Adapter {
                    name: format!("mlx5_{r}"),
                    port: Some(1),
                    rail: Some(r),
                    gpus: vec![format!("GPU{r}")],
                    node_guid: None,
                    port_guid: None,
                    netdevs: Vec::new(),
                    node_desc: None,
                    active: Some(true),
                })
                .collect(),
        }
    }

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
