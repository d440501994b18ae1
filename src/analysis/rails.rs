//! Rails and ports: the scale-up boundary drawn explicitly.
//!
//! Data: NVLink domains from the GPU–GPU labels (NVML NVLinks via the classification); rails
//! from the paths model's GPU–NIC labels through the one rails matching
//! ([`assign_rails`](super::pairing::assign_rails); a GPU is on a rail only when its NIC is
//! within PXB, see [`build`]); each GPU's NIC from the one pairing; port speeds from each NIC's
//! RDMA port `rate` (`/sys/class/infiniband/<dev>/ports/<n>/rate`). Convention (shared/reference/ecosystem.md §4):
//! rail N = NIC N of every server, cabled to leaf N.
//!
//! Plant per fabric port: one leaf-switch port, one transceiver at the node end and one at the
//! switch end, one fibre run. `nodes` multiplies it for a rack or pod, grouped by rail (one
//! rail = one destination leaf).

use super::classify::Classifier;
use super::classify::Label;
use super::pairing::{Candidates, NodeView, assign_rails, nic_name, nvlink_domains};

/// The path label between GPU row `g` and NIC column `k` of a view, when classified: from
/// the dense table, or from a near view's pairs (others classified on demand).
type LabelOf<'a> = &'a dyn Fn(usize, usize) -> Option<Label>;

/// A node's two GPU→NIC matchings: the pairing ([`NodeView::pairing`]) and the rails one
/// ([`assign_rails`]), a NIC column (or none) per GPU row.
type Matchings = (Vec<Option<usize>>, Vec<Option<usize>>);
use crate::model::{OsDeviceKind, Topology};
use serde::Serialize;

/// Version tag of the rails JSON document.
pub const RAILS_SCHEMA: &str = "peerpath.rails/2";

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
    /// Rail number (see [`build`]); `None` for a cabled NIC within PXB of no GPU, whose leaf
    /// the topology cannot tell.
    pub rail: Option<usize>,
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

/// A GPU without a rail: no NIC within PXB of its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissingRail {
    /// The rail it would have (`Some(k)` for GPU k when every GPU can have its own NIC).
    pub rail: Option<usize>,
    /// GPU name (`GPU3`).
    pub gpu: String,
    /// GPU PCI address.
    pub gpu_bdf: String,
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
    /// Fabric ports per node, by rail (ports on no rail last).
    pub ports: Vec<RailPort>,
    /// GPUs without a rail.
    pub missing: Vec<MissingRail>,
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
    /// Ports grouped by rail across `nodes` nodes: every rail number, a rail with no port on
    /// this node included (0 ports).
    pub by_rail: Vec<RailGroup>,
    /// Fabric ports per node on no rail (leaf unknown).
    pub off_rail_ports: usize,
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
///
/// Rails come from the paths model through the one rails matching
/// ([`assign_rails`](super::pairing::assign_rails): one NIC per GPU by path label, then
/// bandwidth; shared NICs when there are fewer NICs than GPUs). A GPU is on a rail only when
/// its NIC is within PXB of it; otherwise it has no rail and the report says so. Rail numbers
/// are never invented: with at least as many NICs as GPUs, rail k is GPU k's (so a GPU without
/// a NIC within PXB leaves its rail without a port on this node); with fewer, rails are numbered
/// by the first GPU each NIC serves. A cabled NIC within PXB of no GPU is a fabric port on no
/// rail (its leaf cannot be told from the topology).
pub fn build(t: &Topology, view: &NodeView, nodes: usize) -> Rails {
    let m = dense_matchings(view);
    let c = &view.cand;
    build_with(t, view, nvlink_domains(c), m, &|g, k| label(c, g, k), nodes)
}

/// [`build`] from a classification: on a node of more than
/// [`NEAR_FROM_PAIRS`](super::pairing::near::NEAR_FROM_PAIRS) GPU–NIC pairs the GPU × GPU
/// table is not classified ([`NodeView::rails_from`]: the NVLink domains from the GPU pairs
/// that can be NVLink), and where both matchings can be solved host bridge by host bridge
/// with the dense answer ([`super::pairing::blocks`]) neither is the GPU × NIC table; the
/// report is [`build`]'s.
pub fn build_from(cl: &Classifier, nodes: usize) -> Rails {
    build_view_from(cl, nodes).1
}

/// [`build_from`], with the view it read (its GPU and NIC endpoints are the full view's; its
/// tables may be the near ones): what an export that also lists the endpoints reads.
pub fn build_view_from(cl: &Classifier, nodes: usize) -> (NodeView, Rails) {
    build_near_from(cl, nodes, super::pairing::near::NEAR_FROM_PAIRS)
}

/// [`build_view_from`] with another threshold (tests: 0 takes the near path on any node).
fn build_near_from(cl: &Classifier, nodes: usize, from_pairs: usize) -> (NodeView, Rails) {
    let (view, domains, m) = NodeView::rails_from(cl, from_pairs);
    let r = match (&view.near, m) {
        (Some(near), Some(m)) => {
            let of = |g, k| near.pair(cl, g, k).map(|p| p.label);
            build_with(cl.topo(), &view, domains, m, &of, nodes)
        }
        _ => {
            let m = dense_matchings(&view);
            let c = &view.cand;
            build_with(cl.topo(), &view, domains, m, &|g, k| label(c, g, k), nodes)
        }
    };
    (view, r)
}

/// Both matchings over a view's dense table.
fn dense_matchings(view: &NodeView) -> Matchings {
    let all: Vec<usize> = (0..view.cand.gpus.len()).collect();
    (view.pairing(), assign_rails(&view.cand, &all))
}

fn build_with(
    t: &Topology,
    view: &NodeView,
    domains: Vec<Vec<usize>>,
    (pairing, matched): Matchings,
    lab: LabelOf,
    nodes: usize,
) -> Rails {
    let c = &view.cand;
    let domains: Vec<Domain> = domains
        .into_iter()
        .map(|d| Domain {
            nvlink: d.len() > 1,
            gpus: d.iter().map(|&g| c.gpus[g].name.clone()).collect(),
        })
        .collect();
    let one_per_gpu = c.nics.len() >= c.gpus.len();
    let mut problems = count_problems(c, one_per_gpu);
    let gpu_nic = gpu_nics(c, &pairing, lab);
    // Each GPU's rail NIC: its matched NIC when within PXB.
    let rail_nic: Vec<Option<usize>> = matched
        .iter()
        .enumerate()
        .map(|(g, k)| k.filter(|&k| lab(g, k).is_some_and(|l| l.within_pxb())))
        .collect();
    // The GPUs each NIC carries as their rail, ascending.
    let mut served: Vec<Vec<usize>> = vec![Vec::new(); c.nics.len()];
    for (g, k) in rail_nic.iter().enumerate() {
        if let Some(k) = *k {
            served[k].push(g);
        }
    }
    let (rail_of_nic, rails_total) = rail_numbers(c, &served, one_per_gpu);
    let missing = missing_rails(view, lab, &rail_nic, one_per_gpu, &mut problems);
    let (other_nics, off_rail) = unserved_nics(view, lab, &served, &mut problems);
    shared_nics(c, &served, &mut problems);
    let ports = rail_ports(t, view, lab, &served, &rail_of_nic, &off_rail);
    let rail_optimised = problems.is_empty();
    let plant_per_node = Plant::for_ports(ports.len());
    let nodes = nodes.max(1);
    let by_rail = rail_groups(&ports, rails_total, nodes);
    let off_rail_ports = ports.iter().filter(|p| p.rail.is_none()).count();
    let plant_total = Plant::for_ports(ports.len() * nodes);
    Rails {
        schema: RAILS_SCHEMA.to_string(),
        nodes,
        nvlink_visible: t.nvlink_visible,
        domains,
        ports,
        missing,
        gpu_nic,
        rail_optimised,
        problems,
        other_nics,
        plant_per_node,
        by_rail,
        off_rail_ports,
        plant_total,
    }
}

/// The path label between GPU `g` and NIC `k`, when classified.
fn label(c: &Candidates, g: usize, k: usize) -> Option<Label> {
    c.gn[g][k].as_ref().map(|p| p.label)
}

/// Problems of the counts: no GPU, fewer NICs than GPUs.
fn count_problems(c: &Candidates, one_per_gpu: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if c.gpus.is_empty() {
        problems.push("no GPU: nothing to put on rails".to_string());
    }
    if !one_per_gpu && !c.gpus.is_empty() {
        problems.push(format!(
            "{} NIC{} for {} GPUs: not one NIC per GPU",
            c.nics.len(),
            if c.nics.len() == 1 { "" } else { "s" },
            c.gpus.len()
        ));
    }
    problems
}

/// The node's one GPU–NIC pairing, with each pair's path.
fn gpu_nics(c: &Candidates, pairing: &[Option<usize>], lab: LabelOf) -> Vec<GpuNic> {
    let mut gpu_nic = Vec::new();
    for (g, k) in pairing.iter().enumerate() {
        let Some(k) = *k else { continue };
        gpu_nic.push(GpuNic {
            gpu: c.gpus[g].name.clone(),
            nic: c.nics[k].name.clone(),
            path: lab(g, k).map_or_else(|| "?".into(), |l| l.to_string()),
        });
    }
    gpu_nic
}

/// Rail numbers: GPU k's rail is k when every GPU can have its own NIC, else the rail NICs in
/// order of the first GPU they serve. Returns each NIC's rail and the number of rails.
fn rail_numbers(
    c: &Candidates,
    served: &[Vec<usize>],
    one_per_gpu: bool,
) -> (Vec<Option<usize>>, usize) {
    let mut rail_of_nic: Vec<Option<usize>> = vec![None; c.nics.len()];
    let mut rails_total = 0;
    if one_per_gpu {
        for (k, sv) in served.iter().enumerate() {
            rail_of_nic[k] = sv.first().copied();
        }
        rails_total = c.gpus.len();
    } else {
        let mut order: Vec<usize> = (0..c.nics.len())
            .filter(|&k| !served[k].is_empty())
            .collect();
        order.sort_by_key(|&k| served[k][0]);
        for (r, &k) in order.iter().enumerate() {
            rail_of_nic[k] = Some(r);
            rails_total = r + 1;
        }
    }
    (rail_of_nic, rails_total)
}

/// GPUs without a rail NIC within PXB, each with a problem naming its nearest NIC.
fn missing_rails(
    view: &NodeView,
    lab: LabelOf,
    rail_nic: &[Option<usize>],
    one_per_gpu: bool,
    problems: &mut Vec<String>,
) -> Vec<MissingRail> {
    let c = &view.cand;
    let nearest_nic = |g: usize| {
        (0..c.nics.len())
            .filter_map(|k| lab(g, k).map(|l| (l, k)))
            .min()
    };
    let mut missing = Vec::new();
    // With no NIC at all the count above says it; no GPU is listed one by one.
    let none_at_all = c.nics.is_empty();
    for (g, _) in rail_nic
        .iter()
        .enumerate()
        .filter(|(_, k)| k.is_none() && !none_at_all)
    {
        let rail = one_per_gpu.then_some(g);
        missing.push(MissingRail {
            rail,
            gpu: c.gpus[g].name.clone(),
            gpu_bdf: view.gpus[g].bdf.to_string(),
        });
        let on = rail.map_or(String::new(), |r| {
            format!("; rail {r} has no port on this node")
        });
        problems.push(match nearest_nic(g) {
            Some((l, k)) if l.within_pxb() => format!(
                "{} has no NIC within PXB of its own: its nearest, {}, is {l} but carries another GPU's rail{on}",
                c.gpus[g].name, c.nics[k].name
            ),
            Some((l, k)) => format!(
                "{} has no NIC within PXB: the nearest it can have, {}, is {l}{on}",
                c.gpus[g].name, c.nics[k].name
            ),
            None => format!("{} has no NIC within PXB: no NIC path is known{on}", c.gpus[g].name),
        });
    }
    missing
}

/// NICs on no rail: with no more NICs than GPUs every NIC is a cabled compute NIC (a
/// misplaced one when it serves no GPU, a problem); extra NICs beyond the GPUs are storage /
/// in-band. Returns those other NICs' names and the off-rail compute NICs.
fn unserved_nics(
    view: &NodeView,
    lab: LabelOf,
    served: &[Vec<usize>],
    problems: &mut Vec<String>,
) -> (Vec<String>, Vec<usize>) {
    let c = &view.cand;
    let all_cabled = c.nics.len() <= c.gpus.len();
    let mut other_nics = Vec::new();
    let mut off_rail: Vec<usize> = Vec::new();
    for (k, sv) in served.iter().enumerate() {
        if !sv.is_empty() {
            continue;
        }
        if !all_cabled {
            other_nics.push(c.nics[k].name.clone());
            continue;
        }
        off_rail.push(k);
        let nearest = (0..c.gpus.len())
            .filter_map(|g| lab(g, k).map(|l| (l, g)))
            .min();
        problems.push(match nearest {
            Some((lab, g)) => format!(
                "{} serves no GPU within PXB ({}): on no rail, its leaf cannot be told (its nearest GPU, {}, is {lab} away) — misplaced?",
                c.nics[k].name, view.nics[k].bdf, c.gpus[g].name
            ),
            None => format!("{} serves no GPU ({}): on no rail", c.nics[k].name, view.nics[k].bdf),
        });
    }
    (other_nics, off_rail)
}

/// A problem per NIC serving more than one GPU.
fn shared_nics(c: &Candidates, served: &[Vec<usize>], problems: &mut Vec<String>) {
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
}

/// The fabric ports of the rail NICs and the off-rail compute NICs, by rail, one per RDMA
/// port (one without a port when none was captured).
fn rail_ports(
    t: &Topology,
    view: &NodeView,
    lab: LabelOf,
    served: &[Vec<usize>],
    rail_of_nic: &[Option<usize>],
    off_rail: &[usize],
) -> Vec<RailPort> {
    let c = &view.cand;
    let mut off = vec![false; c.nics.len()];
    for &k in off_rail {
        off[k] = true;
    }
    let mut fabric: Vec<(Option<usize>, usize)> = (0..c.nics.len())
        .filter(|&k| rail_of_nic[k].is_some() || off[k])
        .map(|k| (rail_of_nic[k], k))
        .collect();
    fabric.sort_by_key(|&(r, k)| (r.is_none(), r, k));
    let mut ports = Vec::new();
    for (rail, k) in fabric {
        let nic = &view.nics[k];
        let g = served[k].first().copied();
        let path = g
            .and_then(|g| lab(g, k))
            .map_or_else(|| "-".into(), |l| l.to_string());
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
            path: path.clone(),
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
    ports
}

/// Per rail: its speeds, and its ports and plant across `nodes` nodes.
fn rail_groups(ports: &[RailPort], rails_total: usize, nodes: usize) -> Vec<RailGroup> {
    // Each rail's ports, in port order.
    let mut by_rail: Vec<Vec<&RailPort>> = vec![Vec::new(); rails_total];
    for p in ports {
        if let Some(on) = p.rail.and_then(|r| by_rail.get_mut(r)) {
            on.push(p);
        }
    }
    by_rail
        .into_iter()
        .enumerate()
        .map(|(r, on)| {
            let mut speeds: Vec<&str> = on.iter().map(|p| p.speed.as_str()).collect();
            speeds.dedup();
            RailGroup {
                rail: r,
                speed: if speeds.is_empty() {
                    "-".into()
                } else {
                    speeds.join("+")
                },
                ports: on.len() * nodes,
                plant: Plant::for_ports(on.len() * nodes),
            }
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::{build, build_near_from};
    use crate::analysis::classify::Classifier;
    use crate::analysis::pairing::NodeView;
    use crate::analysis::testkit::TopoBuilder;

    /// Three host bridges on two NUMA nodes, 12 GPUs and 12 NICs: host bridge 1 has 6 GPUs and
    /// 2 NICs (4 of its GPUs take a NIC of host bridge 2, which has 6 NICs for 2 GPUs, so they
    /// have no rail), and NVLinks join GPUs within and across host bridges.
    fn node() -> crate::model::Topology {
        let mut b = TopoBuilder::new(&["0-7", "8-15"]);
        b.switched_host_bridges(
            &[(0, "GNGNGNGN"), (0, "GGNGGNGG"), (1, "NGNNGNNN")],
            |_, _| None,
        );
        b.nvlink("0000:10:00.0", Some("0000:12:00.0"), 4, Some(4));
        b.nvlink("0000:14:00.0", Some("0001:10:00.0"), 4, Some(4));
        b.nvlink("0001:17:00.0", Some("0002:14:00.0"), 2, Some(4));
        b.build()
    }

    /// The near path (no GPU × GPU table; NVLink domains from the GPUs that can have NVLink)
    /// gives the report of the full view, text and JSON.
    #[test]
    fn the_near_rails_are_the_dense_rails() {
        let t = node();
        let cl = Classifier::new(&t, &Default::default());
        let dense = NodeView::from_classifier(&cl);
        let (near, domains, matchings) = NodeView::rails_from(&cl, 0);
        // Host bridge 1 has more GPUs than NICs: no block answer, the full table.
        assert!(matchings.is_none());
        assert!(near.cand.gg.is_empty() && near.near.is_none());
        assert_eq!(near.cand.gn.len(), 12);
        assert_eq!(dense.cand.nics.len(), 12);
        // Three NVLink pairs: the domains are not all lone GPUs.
        let want_domains = crate::analysis::pairing::nvlink_domains(&dense.cand);
        assert!(want_domains.iter().filter(|d| d.len() > 1).count() >= 2);
        assert_eq!(domains, want_domains);
        let want = build(&t, &dense, 4);
        let got = build_near_from(&cl, 4, 0).1;
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
        // Below the threshold: the full view, GPU pairs included.
        let (small, _, _) = NodeView::rails_from(&cl, usize::MAX);
        assert_eq!(small.cand.gg.len(), 12);
    }

    /// A synthesized layout's topology, scanned from its in-memory tree.
    fn synth(name: &str) -> crate::model::Topology {
        let spec = crate::synth::layouts::by_name(name).unwrap();
        let root = crate::synth::to_mem_root(&spec, &Default::default()).unwrap();
        let src = crate::model::SourceInfo {
            kind: "synth".into(),
            path: format!("synth:{name}"),
            limitations: vec![],
        };
        let o = crate::sources::sysfs::ScanOptions { pci_ids: None };
        crate::sources::sysfs::scan(&root, src, &o).unwrap()
    }

    /// On every built-in layout, two scaling trees and the three-host-bridge node above, the
    /// report from the near path (threshold 0) is the dense view's, text and JSON; the block
    /// matchings are really used where the layout allows (the scaling trees: eight GPUs and
    /// eight equal NICs under each switch, ties everywhere) and the dense table is built where
    /// they give no answer (the node above: a host bridge with more GPUs than NICs).
    #[test]
    fn the_block_rails_are_the_dense_rails_on_every_layout() {
        let mut names: Vec<String> = crate::synth::layouts::LAYOUTS
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        names.extend(["scaling-64".into(), "scaling-300".into()]);
        let mut blocks = Vec::new();
        let mut cases: Vec<(String, crate::model::Topology)> =
            names.iter().map(|n| (n.clone(), synth(n))).collect();
        cases.push(("node".into(), node()));
        for (name, t) in &cases {
            let cl = Classifier::new(t, &Default::default());
            let want = build(t, &NodeView::from_classifier(&cl), 2);
            let (view, got) = build_near_from(&cl, 2, 0);
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{name}");
            assert_eq!(
                crate::render::rails::render_text(&got),
                crate::render::rails::render_text(&want),
                "{name}"
            );
            if view.near.is_some() {
                assert!(view.cand.gn.is_empty(), "{name}: no dense table");
                blocks.push(name.as_str());
            }
        }
        for n in ["scaling-64", "scaling-300", "hgx-h100"] {
            assert!(blocks.contains(&n), "{n} not by blocks: {blocks:?}");
        }
        assert!(!blocks.contains(&"node"), "{blocks:?}");
    }
}
