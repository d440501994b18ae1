//! The plan of each rank once the GPUs and their NICs are chosen ([`plan_chosen`]): the
//! node's notes, the cores of every rank, then per rank its environment, binding and why, then
//! the notes the ranks' plans call for and the platform's documented settings.

use super::{
    Candidates, CoreMap, NodeView, PLACEMENT_SCHEMA, PairCand, PlaceOptions, Placement, RankPlan,
    assign_cores, nic_name, platform_settings, plural, slingshot,
};
use crate::analysis::classify::Endpoint;
use crate::model::{Device, OsDeviceKind, Topology, cpulist};
use std::collections::BTreeMap;

/// What every rank's plan reads: the node, its candidates, the chosen GPUs, the NIC of each
/// rank, and each rank's NUMA node and cores.
struct Ranks<'a> {
    t: &'a Topology,
    view: &'a NodeView,
    c: &'a Candidates,
    cores: CoreMap,
    chosen: &'a [usize],
    nic_of: &'a [Option<usize>],
    /// A rank's NUMA node: its GPU's, else its NIC's.
    numa: Vec<Option<u32>>,
    /// Core indices (into `cores`) per rank.
    core_sets: Vec<Vec<usize>>,
}

/// The plan of the GPUs `chosen` (with the line saying why) and their NICs `nic_of`; `c` holds
/// at least the chosen GPUs' rows of the GPU × NIC table: node notes, then each rank's plan,
/// then the notes they call for.
pub(super) fn plan_chosen(
    t: &Topology,
    view: &NodeView,
    c: &Candidates,
    o: &PlaceOptions,
    chosen: Vec<usize>,
    gpu_why: String,
    nic_of: Vec<Option<usize>>,
) -> anyhow::Result<Placement> {
    let rk = Ranks::new(t, view, c, o, &chosen, &nic_of);
    let mut notes = node_notes(view, o, &rk.cores, gpu_why);
    let mut ranks = Vec::new();
    let mut port_unknown: Vec<String> = Vec::new();
    for (r, &g) in chosen.iter().enumerate() {
        ranks.push(rk.rank_plan(r, g, &mut port_unknown));
    }
    rank_notes(&ranks, port_unknown, &mut notes);
    let far: Vec<(usize, crate::analysis::nccl::NcclPath)> = ranks
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let g: usize = r.cuda_index;
            let k = nic_of[i]?;
            let p = c.gn[g][k].as_ref()?;
            (!p.gdr && !p.label.within_pxb()).then_some((i, p.nccl_path))
        })
        .collect();
    let platform_settings = platform_settings(t, &ranks, &far);
    for ps in &platform_settings {
        notes.push(format!(
            "{}={} is documented for this platform ({}) by {} ({}), not chosen by peerpath: it gives GPUDirect RDMA to rank(s) {} that the design's path otherwise stages through host memory",
            ps.name,
            ps.value,
            ps.platform,
            ps.documented_by,
            ps.source,
            ps.ranks.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(Placement {
        schema: PLACEMENT_SCHEMA.to_string(),
        ranks,
        notes,
        platform_settings,
    })
}

/// Notes on the node as a whole: the view's, why these GPUs, NICs missing or shared, SMT.
fn node_notes(view: &NodeView, o: &PlaceOptions, cores: &CoreMap, gpu_why: String) -> Vec<String> {
    let mut notes = view.notes.clone();
    notes.push(gpu_why);
    if view.nics.is_empty() {
        notes.push("no NIC found: ranks get no NIC variables".into());
    } else if view.nics.iter().all(|n| n.rdma.is_empty()) {
        notes.push("no NIC has an RDMA device: NCCL will use sockets; NCCL_IB_HCA/UCX_NET_DEVICES left out".into());
    }
    if !cores.smt_known() {
        notes.push(
            "SMT siblings unknown (/proc/cpuinfo not captured): each CPU treated as a core".into(),
        );
    }
    if view.nics.len() < o.ranks && !view.nics.is_empty() {
        notes.push(format!(
            "{} NIC{} for {} ranks: NICs are shared, spread evenly",
            view.nics.len(),
            plural(view.nics.len()),
            o.ranks
        ));
    }
    notes
}

/// Notes the ranks' plans call for: the socket interface, RDMA ports not captured.
fn rank_notes(ranks: &[RankPlan], mut port_unknown: Vec<String>, notes: &mut Vec<String>) {
    if ranks
        .iter()
        .any(|r: &RankPlan| r.env.contains_key("NCCL_SOCKET_IFNAME"))
    {
        notes.push(
            "NCCL_SOCKET_IFNAME names each rank's NIC netdev; NCCL's bootstrap needs an IP address on it (the scan does not read addresses): set your management interface instead if it has none"
                .into(),
        );
    }
    if !port_unknown.is_empty() {
        port_unknown.dedup();
        notes.push(format!(
            "RDMA port of {} not captured: NCCL_IB_HCA names the whole device, UCX_NET_DEVICES assumes port 1",
            port_unknown.join(", ")
        ));
    }
}

impl<'a> Ranks<'a> {
    /// Each rank's NUMA node (its GPU's, else its NIC's) and its cores.
    fn new(
        t: &'a Topology,
        view: &'a NodeView,
        c: &'a Candidates,
        o: &PlaceOptions,
        chosen: &'a [usize],
        nic_of: &'a [Option<usize>],
    ) -> Self {
        let cores = CoreMap::from_topology(t);
        let numa: Vec<Option<u32>> = chosen
            .iter()
            .zip(nic_of)
            .map(|(&g, n)| {
                c.gpus[g]
                    .numa_node
                    .or_else(|| n.and_then(|k| c.nics[k].numa_node))
            })
            .collect();
        let fallback: Vec<Vec<u32>> = chosen
            .iter()
            .map(|&g| {
                t.device(&view.gpus[g].bdf)
                    .and_then(|d| d.local_cpus.clone())
                    .unwrap_or_default()
            })
            .collect();
        let core_sets = assign_cores(&cores, &numa, &fallback, o.cores_per_rank);
        Ranks {
            t,
            view,
            c,
            cores,
            chosen,
            nic_of,
            numa,
            core_sets,
        }
    }

    /// Rank `r` on GPU `g`: its NIC, CPUs, environment, binding and why.
    fn rank_plan(&self, r: usize, g: usize, port_unknown: &mut Vec<String>) -> RankPlan {
        let (t, view, c, nic_of) = (self.t, self.view, self.c, self.nic_of);
        let gpu = &view.gpus[g];
        let dev = t.device(&gpu.bdf);
        let nic = nic_of[r].map(|k| &view.nics[k]);
        let pair = nic_of[r].and_then(|k| c.gn[g][k].clone());
        let shared: Vec<usize> = (0..self.chosen.len())
            .filter(|&q| q != r && nic_of[q].is_some() && nic_of[q] == nic_of[r])
            .collect();
        let my_cores = &self.core_sets[r];
        let mut cpus: Vec<u32> = my_cores
            .iter()
            .flat_map(|&i| self.cores.cores[i].threads.iter().copied())
            .collect();
        cpus.sort_unstable();
        let cpus_s = cpulist::format_list(&cpus);
        // A Slingshot NIC is selected through libfabric, not by the verbs/UCX variables.
        let cassini = nic.filter(|n| t.device(&n.bdf).is_some_and(|d| d.is_cassini()));
        let port = nic.and_then(|n| rdma_port(t, n));
        let rdma = nic
            .filter(|_| cassini.is_none())
            .and_then(|n| n.rdma.first().cloned());
        let netdev = nic.and_then(|n| n.net.first().cloned());
        let mut env = rank_env(
            dev,
            g,
            rdma.as_deref(),
            port,
            netdev.as_deref(),
            port_unknown,
        );
        let env_notes = cassini
            .map(|n| slingshot::cassini_env(&n.rdma, &mut env))
            .unwrap_or_default();
        let bind = if cpus.is_empty() {
            Vec::new()
        } else if let Some(n) = self.numa[r] {
            vec![
                "numactl".into(),
                format!("--physcpubind={cpus_s}"),
                format!("--membind={n}"),
            ]
        } else {
            vec!["taskset".into(), "-c".into(), cpus_s.clone()]
        };
        let why = self.why(r, g, nic, pair.as_ref(), &shared, &cpus_s);
        RankPlan {
            rank: r,
            gpu: gpu.bdf.to_string(),
            cuda_index: g,
            nic: nic.map(nic_name),
            nic_bdf: nic.map(|n| n.bdf.to_string()),
            nic_port: port,
            netdev,
            path: pair.as_ref().map(|p| p.label.to_string()),
            bottleneck_gbps: pair.as_ref().and_then(|p| p.bottleneck_gbps),
            nic_shared_with: shared,
            numa_node: self.numa[r],
            cpus: cpus_s,
            cores: my_cores.len(),
            env,
            env_notes,
            bind,
            why,
            drive: None,
        }
    }

    /// Why rank `r` got GPU `g`, its NIC and its CPUs: one line per choice.
    fn why(
        &self,
        r: usize,
        g: usize,
        nic: Option<&Endpoint>,
        pair: Option<&PairCand>,
        shared: &[usize],
        cpus_s: &str,
    ) -> Vec<String> {
        let (view, c, nic_of) = (self.view, self.c, self.nic_of);
        let gpu = &view.gpus[g];
        let dev = self.t.device(&gpu.bdf);
        let vendor = dev.and_then(|d| d.vendor_id);
        let mut why = Vec::new();
        why.push(format!(
            "GPU: {} ({}) on NUMA {}, {} index {g}: local rank {r} takes the {} chosen GPU in PCI order (set: see notes)",
            gpu.name,
            gpu.bdf,
            numa_s(gpu.numa_node),
            if vendor == Some(0x1002) { "HIP" } else { "CUDA" },
            ordinal(r + 1)
        ));
        why.push(match (nic, pair) {
            (Some(n), Some(p)) => nic_why(
                view,
                c,
                g,
                nic_of[r].unwrap_or(0),
                n,
                p,
                shared,
                nic_of,
                self.chosen,
            ),
            (Some(n), None) => format!(
                "NIC: {} ({}): path could not be classified",
                nic_name(n),
                n.bdf
            ),
            _ => "NIC: none (the node has no NIC)".to_string(),
        });
        why.push(cpu_why(
            &self.cores,
            &self.core_sets[r],
            cpus_s,
            self.numa[r],
            gpu.numa_node,
            nic.and_then(|n| n.numa_node),
        ));
        why
    }
}

/// A rank's environment: its GPU (CUDA's or ROCr's filter), its NIC's RDMA device and port
/// (NCCL and UCX) and netdev; an RDMA device whose port was not captured goes to
/// `port_unknown`.
fn rank_env(
    dev: Option<&Device>,
    g: usize,
    rdma: Option<&str>,
    port: Option<u32>,
    netdev: Option<&str>,
    port_unknown: &mut Vec<String>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let vendor = dev.and_then(|d| d.vendor_id);
    if vendor != Some(0x1002) {
        env.insert("CUDA_DEVICE_ORDER".to_string(), "PCI_BUS_ID".to_string());
    }
    if vendor == Some(0x1002) {
        // ROCr's own filter (what Slurm's AutoDetect=rsmi exports): by the GPU's UUID when
        // KFD gave it (immune to enumeration order), else its index in PCI order. Only one
        // of ROCR_/HIP_VISIBLE_DEVICES is set: HIP's indexes the list ROCr already filtered.
        let id = dev
            .and_then(|d| d.amd.as_ref())
            .and_then(|a| a.rocr_uuid())
            .unwrap_or_else(|| g.to_string());
        env.insert("ROCR_VISIBLE_DEVICES".to_string(), id);
    } else {
        env.insert("CUDA_VISIBLE_DEVICES".to_string(), g.to_string());
    }
    if let Some(rd) = rdma {
        match port {
            Some(p) => {
                env.insert("NCCL_IB_HCA".to_string(), format!("={rd}:{p}"));
                env.insert("UCX_NET_DEVICES".to_string(), format!("{rd}:{p}"));
            }
            None => {
                // Without a port NCCL uses every port of the device; UCX needs one.
                env.insert("NCCL_IB_HCA".to_string(), format!("={rd}"));
                env.insert("UCX_NET_DEVICES".to_string(), format!("{rd}:1"));
                port_unknown.push(rd.to_string());
            }
        }
    }
    if let Some(nd) = netdev {
        env.insert("NCCL_SOCKET_IFNAME".to_string(), format!("={nd}"));
    }
    env
}

/// First RDMA port number of a NIC's RDMA device (`ports/<n>`), when captured.
fn rdma_port(t: &Topology, n: &Endpoint) -> Option<u32> {
    let d = t.device(&n.bdf)?;
    let rdma = n.rdma.first()?;
    d.os_devices
        .iter()
        .find(|o| o.kind == OsDeviceKind::Rdma && &o.name == rdma)
        .and_then(|o| o.ports.iter().map(|p| p.port).min())
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, x) if x != 11 => "st",
        (2, x) if x != 12 => "nd",
        (3, x) if x != 13 => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn numa_s(n: Option<u32>) -> String {
    n.map(|n| n.to_string()).unwrap_or_else(|| "?".into())
}

fn gbps_s(g: Option<f64>) -> String {
    g.map(|g| format!("{g:.1} GB/s"))
        .unwrap_or_else(|| "unknown bandwidth".into())
}

#[allow(clippy::too_many_arguments)]
fn nic_why(
    view: &NodeView,
    c: &Candidates,
    g: usize,
    k: usize,
    n: &Endpoint,
    p: &PairCand,
    shared: &[usize],
    nic_of: &[Option<usize>],
    chosen: &[usize],
) -> String {
    let mut s = format!(
        "NIC: {} ({}) {} from {}, {}",
        nic_name(n),
        n.bdf,
        p.label,
        view.gpus[g].name,
        gbps_s(p.bottleneck_gbps)
    );
    if shared.is_empty() {
        s.push_str(", not shared");
    } else {
        let others: Vec<String> = shared.iter().map(|q| format!("rank {q}")).collect();
        s.push_str(&format!(", shared with {}", others.join(", ")));
        // Best NIC nobody uses, to say why sharing won.
        let free = (0..c.nics.len())
            .filter(|kk| !nic_of.contains(&Some(*kk)))
            .filter_map(|kk| c.gn[g][kk].as_ref().map(|pp| (pp.label, kk)))
            .min();
        match free {
            Some((lab, kk)) => s.push_str(&format!(
                " (the nearest unshared NIC, {}, is {lab} from this GPU)",
                c.nics[kk].name
            )),
            None if c.nics.len() < chosen.len() => s.push_str(" (fewer NICs than ranks)"),
            None => {}
        }
    }
    // Routing around: the NIC in this GPU's rail position was not taken because its path is worse.
    if let Some(rail) = c.nics.get(g)
        && g != k
        && let Some(rp) = c.gn[g][g].as_ref()
        && rp.label > p.label
    {
        s.push_str(&format!(
            "; routes around {} (rail {g} by position), which is {} from this GPU",
            rail.name, rp.label
        ));
    }
    match (p.label.within_pxb(), p.gdr) {
        // The input could not decide the path class (NUMA nodes or a Data Direct pairing it
        // does not hold): neither GDR on nor off is known.
        (false, false) if p.label == crate::analysis::classify::Label::Unknown => s.push_str(
            "; its path class is unknown from this input, so whether NCCL uses GPUDirect RDMA on it is unknown",
        ),
        (true, false) => s.push_str(
            "; a setting of this job turns GPUDirect RDMA off on this pair (see `peerpath audit`): staged through host memory",
        ),
        (false, false) => s.push_str(
            "; no NIC within NCCL's GDR level of this GPU: NCCL keeps GPUDirect RDMA off for it (staged through host memory)",
        ),
        (false, true) => s.push_str(
            "; beyond PXB, but the job's NCCL GDR level admits it: GPUDirect RDMA on",
        ),
        (true, true) => {}
    }
    s
}

fn cpu_why(
    cores: &CoreMap,
    mine: &[usize],
    cpus: &str,
    numa: Option<u32>,
    gpu_numa: Option<u32>,
    nic_numa: Option<u32>,
) -> String {
    if mine.is_empty() {
        return "CPUs: none left to give on this rank's NUMA node (or its CPUs are unknown): bind by hand".into();
    }
    let mut s = format!(
        "CPUs: {} core{} ({cpus}) on NUMA {}",
        mine.len(),
        plural(mine.len()),
        numa_s(numa)
    );
    if cores.smt_known() {
        s.push_str(", SMT siblings together");
    }
    match (gpu_numa, nic_numa) {
        (Some(a), Some(b)) if a == b => s.push_str(", the node of both the GPU and the NIC"),
        (Some(_), Some(b)) => s.push_str(&format!(", the GPU's node (the NIC is on NUMA {b})")),
        (Some(_), None) => s.push_str(", the GPU's node"),
        (None, Some(_)) => s.push_str(", the NIC's node (the GPU's is unknown)"),
        (None, None) => s.push_str(" (GPU local_cpulist; NUMA unknown)"),
    }
    s
}
