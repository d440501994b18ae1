//! Rails and ports: the scale-up boundary drawn explicitly.
//!
//! Data: NVLink domains from the GPU–GPU labels (NVML NVLinks via the classification); the
//! GPU→NIC assignment of [`place`](super::place) over all GPUs (rail i = the NIC GPU i gets, in
//! a rail-optimised node its PIX/PXB partner); port speeds from each NIC's RDMA port `rate`
//! (`/sys/class/infiniband/<dev>/ports/<n>/rate`). Convention (shared/reference/ecosystem.md §4):
//! rail N = NIC N of every server, cabled to leaf N.
//!
//! Plant per fabric port: one leaf-switch port, one transceiver at the node end and one at the
//! switch end, one fibre run. `nodes` multiplies it for a rack or pod, grouped by rail (one
//! rail = one destination leaf).

use super::pairing::{NodeView, nic_name, nvlink_domains};
use crate::model::{OsDeviceKind, Topology};
use serde::Serialize;

/// Version tag of the rails JSON document.
pub const RAILS_SCHEMA: &str = "peerpath.rails/1";

/// GPUs that share an NVLink domain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Domain {
    /// GPU names (`GPU0`) in the domain.
    pub gpus: Vec<String>,
    /// Whether the members are joined by NVLink (false: a lone GPU).
    pub nvlink: bool,
}

/// One fabric port leaving the scale-up domain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RailPort {
    /// Rail index (the index of the GPU it serves; an unused NIC takes its own position).
    pub rail: usize,
    /// GPUs whose traffic it carries (`GPU0`); empty for an unused (misplaced) NIC.
    pub gpus: Vec<String>,
    /// PCI address of the first GPU it serves.
    pub gpu_bdf: Option<String>,
    /// NIC (RDMA device) name.
    pub nic: String,
    /// NIC PCI address.
    pub nic_bdf: String,
    /// RDMA port number, when captured.
    pub port: Option<u32>,
    /// Path label from the first GPU it serves (`-` when it serves none).
    pub path: String,
    /// Port rate in Gb/s from the RDMA port's `rate`, when captured.
    pub rate_gbps: Option<f64>,
    /// `400G`, `800G`, … or `unknown`.
    pub speed: String,
    /// `InfiniBand` / `Ethernet`, when captured.
    pub link_layer: Option<String>,
}

/// The NIC one GPU's traffic leaves through.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuNic {
    /// GPU name (`GPU0`).
    pub gpu: String,
    /// NIC name (`mlx5_0`).
    pub nic: String,
    /// Path label between them.
    pub path: String,
}

/// Cabling plant for a number of ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Plant {
    /// Leaf-switch ports.
    pub switch_ports: usize,
    /// Transceivers at the node end.
    pub node_transceivers: usize,
    /// Transceivers at the switch end.
    pub switch_transceivers: usize,
    /// Fibre runs.
    pub fibres: usize,
}

impl Plant {
    /// Plant for `ports` fabric ports.
    pub fn for_ports(ports: usize) -> Plant {
        Plant {
            switch_ports: ports,
            node_transceivers: ports,
            switch_transceivers: ports,
            fibres: ports,
        }
    }
}

/// One rail (= one destination leaf) across `nodes` nodes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RailGroup {
    /// Rail index.
    pub rail: usize,
    /// Speeds of the ports on this rail (one per node).
    pub speed: String,
    /// Ports on this rail across all nodes.
    pub ports: usize,
    /// Plant for them.
    pub plant: Plant,
}

/// The rails report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rails {
    /// Always [`RAILS_SCHEMA`].
    pub schema: String,
    /// Nodes the plant is multiplied for.
    pub nodes: usize,
    /// Whether NVLink state was visible.
    pub nvlink_visible: bool,
    /// NVLink domains (scale-up boundaries).
    pub domains: Vec<Domain>,
    /// Fabric ports per node, by rail.
    pub ports: Vec<RailPort>,
    /// Each GPU's NIC (the placement of all GPUs).
    pub gpu_nic: Vec<GpuNic>,
    /// One NIC per GPU, each within PXB, none shared.
    pub rail_optimised: bool,
    /// Why the node is not rail-optimised (empty when it is).
    pub problems: Vec<String>,
    /// NICs on no rail (storage, in-band), by name.
    pub other_nics: Vec<String>,
    /// Plant for one node.
    pub plant_per_node: Plant,
    /// Ports grouped by rail across `nodes` nodes.
    pub by_rail: Vec<RailGroup>,
    /// Plant for all `nodes` nodes.
    pub plant_total: Plant,
}

/// Port speed class from a rate in Gb/s (`400G`).
pub fn speed_class(rate: Option<f64>) -> String {
    match rate {
        Some(r) if r > 0.0 => format!("{}G", r.round() as u64),
        _ => "unknown".into(),
    }
}

/// Builds the rails report from a node view, for `nodes` nodes.
pub fn build(t: &Topology, view: &NodeView, nodes: usize) -> Rails {
    let c = &view.cand;
    let assign = view.pairing();
    let domains: Vec<Domain> = nvlink_domains(c)
        .into_iter()
        .map(|d| Domain {
            nvlink: d.len() > 1,
            gpus: d.iter().map(|&g| c.gpus[g].name.clone()).collect(),
        })
        .collect();
    let mut problems = Vec::new();
    let mut ports = Vec::new();
    if c.gpus.is_empty() {
        problems.push("no GPU: nothing to put on rails".to_string());
    }
    if c.nics.len() < c.gpus.len() && !c.gpus.is_empty() {
        problems.push(format!(
            "{} NIC{} for {} GPUs: not one NIC per GPU",
            c.nics.len(),
            if c.nics.len() == 1 { "" } else { "s" },
            c.gpus.len()
        ));
    }
    let mut gpu_nic = Vec::new();
    for (g, k) in assign.iter().enumerate() {
        let Some(k) = *k else { continue };
        let p = c.gn[g][k].as_ref();
        gpu_nic.push(GpuNic {
            gpu: c.gpus[g].name.clone(),
            nic: c.nics[k].name.clone(),
            path: p.map(|p| p.label.to_string()).unwrap_or_else(|| "?".into()),
        });
        if p.is_none_or(|p| !p.label.within_pxb()) {
            problems.push(format!(
                "{} has no NIC within PXB: the nearest it can have, {}, is {}",
                c.gpus[g].name,
                c.nics[k].name,
                p.map(|p| p.label.to_string()).unwrap_or_else(|| "?".into())
            ));
        }
    }
    // Rail NICs: every NIC some GPU uses; when there are no more NICs than GPUs, every NIC
    // (an unused one is still cabled: a misplaced compute NIC). Extra NICs nobody uses on a
    // node with more NICs than GPUs are storage / in-band.
    let served: Vec<Vec<usize>> = (0..c.nics.len())
        .map(|k| {
            (0..assign.len())
                .filter(|&g| assign[g] == Some(k))
                .collect()
        })
        .collect();
    let all_rails = c.nics.len() <= c.gpus.len();
    let mut taken: Vec<usize> = Vec::new();
    let mut rail_nics: Vec<(usize, usize)> = Vec::new(); // (rail, nic)
    for (k, sv) in served.iter().enumerate() {
        if let Some(&g) = sv.first() {
            rail_nics.push((g, k));
            taken.push(g);
        }
    }
    let mut other_nics = Vec::new();
    for (k, sv) in served.iter().enumerate() {
        if !sv.is_empty() {
            continue;
        }
        if !all_rails {
            other_nics.push(c.nics[k].name.clone());
            continue;
        }
        let mut r = k;
        while taken.contains(&r) {
            r += 1;
        }
        taken.push(r);
        rail_nics.push((r, k));
        let nearest = (0..c.gpus.len())
            .filter_map(|g| c.gn[g][k].as_ref().map(|p| (p.label, g)))
            .min();
        problems.push(match nearest {
            Some((lab, g)) => format!(
                "{} serves no GPU: every GPU has a nearer NIC (its nearest GPU, {}, is {lab} away) — misplaced?",
                c.nics[k].name, c.gpus[g].name
            ),
            None => format!("{} serves no GPU", c.nics[k].name),
        });
    }
    for (k, sv) in served.iter().enumerate() {
        if sv.len() > 1 {
            let names: Vec<&str> = sv.iter().map(|&i| c.gpus[i].name.as_str()).collect();
            problems.push(format!(
                "{} serves {} GPUs ({})",
                c.nics[k].name,
                sv.len(),
                names.join(", ")
            ));
        }
    }
    rail_nics.sort_unstable();
    for (rail, k) in rail_nics {
        let nic = &view.nics[k];
        let g = served[k].first().copied();
        let label = g
            .and_then(|g| c.gn[g][k].as_ref())
            .map(|p| p.label.to_string())
            .unwrap_or_else(|| "-".into());
        let dev = t.device(&nic.bdf);
        let rdma = dev.and_then(|d| {
            d.os_devices
                .iter()
                .find(|o| o.kind == OsDeviceKind::Rdma && Some(&o.name) == nic.rdma.first())
        });
        let port_list: Vec<_> = rdma.map(|o| o.ports.iter().collect()).unwrap_or_default();
        let mk = |port: Option<u32>, rate: Option<f64>, ll: Option<String>| RailPort {
            rail,
            gpus: served[k].iter().map(|&g| c.gpus[g].name.clone()).collect(),
            gpu_bdf: g.map(|g| view.gpus[g].bdf.to_string()),
            nic: nic_name(nic),
            nic_bdf: nic.bdf.to_string(),
            port,
            path: label.clone(),
            rate_gbps: rate,
            speed: speed_class(rate),
            link_layer: ll,
        };
        if port_list.is_empty() {
            ports.push(mk(None, None, None));
        } else {
            for p in port_list {
                ports.push(mk(Some(p.port), p.rate_gbps, p.link_layer.clone()));
            }
        }
    }
    let rail_optimised = problems.is_empty();
    let plant_per_node = Plant::for_ports(ports.len());
    let nodes = nodes.max(1);
    let by_rail: Vec<RailGroup> = ports
        .iter()
        .map(|p| RailGroup {
            rail: p.rail,
            speed: p.speed.clone(),
            ports: nodes,
            plant: Plant::for_ports(nodes),
        })
        .collect();
    let plant_total = Plant::for_ports(ports.len() * nodes);
    Rails {
        schema: RAILS_SCHEMA.to_string(),
        nodes,
        nvlink_visible: t.nvlink_visible,
        domains,
        ports,
        gpu_nic,
        rail_optimised,
        problems,
        other_nics,
        plant_per_node,
        by_rail,
        plant_total,
    }
}

/// GPUDirect RDMA readiness as far as the topology tells: every rail path within PXB (NCCL's
/// default GDR cut-off) and a peer-memory client for NVIDIA GPUs (`nvidia_peermem` /
/// `nv_peer_mem` loaded or a `/sys/kernel/mm/memory_peers` entry). `None` when the kernel side
/// cannot be read (modules not captured, or no peer-memory client but DMA-BUF may still serve:
/// the audit decides that). Returns the verdict and a one-line reason.
pub fn gdr_ready(t: &Topology, r: &Rails) -> (Option<bool>, String) {
    if r.gpu_nic.is_empty() {
        return (Some(false), "no GPU–NIC rail pair".into());
    }
    let far: Vec<String> = r
        .gpu_nic
        .iter()
        .filter(|p| !matches!(p.path.as_str(), "PIX" | "PXB"))
        .map(|p| p.gpu.clone())
        .collect();
    if !far.is_empty() {
        return (
            Some(false),
            format!("rail path beyond PXB for {}", far.join(", ")),
        );
    }
    let m = &t.machine;
    if m.nvidia_peermem_version.is_some() || m.nv_peer_mem_loaded || !m.memory_peers.is_empty() {
        return (
            Some(true),
            "all rail paths within PXB and a peer-memory client is registered".into(),
        );
    }
    if !m.modules_visible {
        return (
            None,
            "all rail paths within PXB; kernel modules not captured".into(),
        );
    }
    (
        None,
        "all rail paths within PXB; no peer-memory client (DMA-BUF may still work: see peerpath audit)".into(),
    )
}
