//! Pair classification: for every pair of endpoints (GPUs, accelerators, NICs, and GPU–NVMe),
//! the `nvidia-smi topo -m` label, NCCL's path type with its P2P and GPUDirect RDMA decisions,
//! the hops of the PCIe path and its bottleneck link.
//!
//! Rules: shared/reference/classification.md §1.5 (labels, inferred from public nvidia-smi
//! outputs) and §2/§5 (NCCL, read from its source). Everything here is a pure function of the
//! [`Topology`]; nothing is read from the machine.
//!
//! Label rules, in order: same device → `X`; GPU pair with NVLinks → `NV#`; two functions of one
//! adapter → `PIX`; a common ancestor below the host bridge → count the distinct bridge units on
//! the path (a switch — upstream plus downstream ports — counts once, so do a plain bridge and a
//! root port): one → `PIX`, more → `PXB`; same host bridge → `PHB`; same NUMA node → `NODE`;
//! different NUMA nodes → `SYS`; NUMA node unknown on a machine with several → `Unknown`.

use super::nccl::{self, CpuClass};
pub use super::nccl::{NcclPath, NcclVersion};
use crate::model::linkfmt;
use crate::model::{Bdf, Device, DeviceKind, LinkInfo, Topology, bandwidth};
use crate::parse::cpulist;
use serde::{Serialize, Serializer};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;

/// An `nvidia-smi topo -m` cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Label {
    /// Same device (` X `).
    X,
    /// A bonded set of this many NVLinks (`NV12`).
    Nv(u32),
    /// At most a single PCIe bridge (one switch, or two functions of one adapter).
    Pix,
    /// Multiple PCIe bridges (switches) without the host bridge.
    Pxb,
    /// Through one PCIe host bridge.
    Phb,
    /// Between host bridges of one NUMA node.
    Node,
    /// Across the SMP interconnect between NUMA nodes.
    Sys,
    /// Could not be decided from what the source holds (the reason is in
    /// [`PairClass::reason`]); shown as `?`, never a guess.
    Unknown,
}

impl Label {
    /// Legend order index (X best … SYS worst; Unknown last).
    pub fn rank(self) -> u8 {
        match self {
            Label::X => 0,
            Label::Nv(_) => 1,
            Label::Pix => 2,
            Label::Pxb => 3,
            Label::Phb => 4,
            Label::Node => 5,
            Label::Sys => 6,
            Label::Unknown => 7,
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::X => f.write_str("X"),
            Label::Nv(n) => write!(f, "NV{n}"),
            Label::Pix => f.write_str("PIX"),
            Label::Pxb => f.write_str("PXB"),
            Label::Phb => f.write_str("PHB"),
            Label::Node => f.write_str("NODE"),
            Label::Sys => f.write_str("SYS"),
            Label::Unknown => f.write_str("?"),
        }
    }
}

impl std::str::FromStr for Label {
    type Err = String;
    /// Parses an nvidia-smi cell: `X`, `NV<n>`, `PIX`, `PXB`, `PHB`, `NODE`, `SYS`, the 2017
    /// spelling `SOC` (= SYS), and `?`; surrounding whitespace is ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Ok(match t {
            "X" => Label::X,
            "PIX" => Label::Pix,
            "PXB" => Label::Pxb,
            "PHB" => Label::Phb,
            "NODE" => Label::Node,
            "SYS" | "SOC" => Label::Sys,
            "?" => Label::Unknown,
            _ => match t.strip_prefix("NV").and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n > 0 => Label::Nv(n),
                _ => return Err(format!("not an nvidia-smi topology label: {s:?}")),
            },
        })
    }
}

impl Serialize for Label {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What NCCL would make of a pair, for one NCCL version (classification.md §2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NcclView {
    /// NCCL's path type between the two (for a GPU–NIC pair: the NIC→GPU direction, which is
    /// also the GPU→NIC one unless PXN applies, see `pxn_via`).
    pub path: NcclPath,
    /// GPUDirect RDMA: the NIC may write into this GPU's memory directly (`ncclTopoCheckGdr`,
    /// write direction, distance and default level only; the peermem/DMA-BUF support flags are
    /// the audit's business). Always false for pairs that are not GPU–NIC.
    pub gdr: bool,
    /// GPU–GPU peer-to-peer over the path allowed by the default cut-off (`ncclTopoCheckP2p`;
    /// NVML's P2P status is not checked here). Always false for pairs that are not GPU–GPU.
    pub p2p: bool,
    /// The rules that decided, in words, in the order they were applied.
    pub rules: Vec<String>,
    /// The NCCL version the rules are for (`2.30`).
    pub version: String,
    /// `path` as the number NCCL prints in that version (`PATH_*` value; log lines such as
    /// `distance 7 > 4`), `None` where the type did not exist yet.
    pub path_code: Option<u32>,
    /// Which NCCL decisions apply to this pair: `gpu-gpu` (P2P), `gpu-nic` (GDR, PXN),
    /// `nic-nic`, `gpu-nvme`, `other` (path type only).
    pub scope: String,
    /// GPU→NIC sends go through this NVLink peer GPU (PXN), when NCCL would reroute them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pxn_via: Option<Bdf>,
}

/// One node of a pair's path, in order from `a` to `b`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hop {
    /// A BDF, a host bridge name (`pci0000:17`), `numa0->numa1`, or `nvswitch`.
    pub node: String,
    /// Device kind (`gpu`, `switch-upstream`, `root-port`, …), `host-bridge`, `inter-numa`,
    /// `nvlink`.
    pub kind: String,
    /// The PCIe link entering this hop from the previous one (`None` for the first hop and for
    /// links inside a switch or a root complex).
    pub link: Option<LinkInfo>,
    /// Bandwidth of the link entering this hop in GB/s (NCCL's model figures:
    /// [`bandwidth::nccl_pcie_link_gbytes`] on the current link, NVLink per-link rates,
    /// inter-CPU rates); `None` when unknown or not a link.
    pub gbytes_per_s: Option<f64>,
    /// Remarks: the switch a port belongs to, a link running below capability, the bottleneck.
    pub note: Option<String>,
}

/// The classification of one endpoint pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairClass {
    /// First endpoint (the GPU for GPU–NIC pairs).
    pub a: Bdf,
    /// Second endpoint.
    pub b: Bdf,
    /// The nvidia-smi label.
    pub label: Label,
    /// Why that label, in words (which rule, with the evidence: the common switch, the host
    /// bridges, the NUMA nodes).
    pub reason: String,
    /// NCCL's view.
    pub nccl: NcclView,
    /// Minimum bandwidth over the path's links in GB/s; `None` when no link speed is known.
    pub bottleneck_gbytes_per_s: Option<f64>,
    /// Index into `hops` of the bottleneck link.
    pub bottleneck_hop: Option<usize>,
    /// The path from `a` to `b`.
    pub hops: Vec<Hop>,
}

/// A device a pair can be made of, with the names the matrix and `explain` use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Endpoint {
    /// `GPU0` (PCI bus order, as nvidia-smi), `ACC0`, `NIC0` (RDMA-name order), `NVME0`.
    pub name: String,
    /// Its PCI address.
    pub bdf: Bdf,
    /// Its kind.
    pub kind: DeviceKind,
    /// RDMA device names (`mlx5_0`).
    pub rdma: Vec<String>,
    /// Netdev names (`ib0`).
    pub net: Vec<String>,
    /// NUMA node (the device's, else its nearest bridge's, else its host bridge's).
    pub numa_node: Option<u32>,
    /// `local_cpulist` as a cpulist string.
    pub cpus: Option<String>,
}

/// Options of a classification run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassifyOptions {
    /// NCCL version whose rules the NCCL view follows (default: the newest modelled).
    pub nccl_version: NcclVersion,
}

/// Every endpoint and every classified pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matrix {
    /// Endpoints in matrix order: GPUs, accelerators, NICs, NVMe.
    pub endpoints: Vec<Endpoint>,
    /// Pairs `(i, j)`, `i < j` in endpoint order: every pair among GPUs, accelerators and NICs,
    /// and each GPU–NVMe pair.
    pub pairs: Vec<PairClass>,
    /// Facts that limit the whole matrix (NVLink not visible, NUMA unknown, VFs left out).
    pub notes: Vec<String>,
}

impl Matrix {
    /// The pair of two endpoints (in either order).
    pub fn pair(&self, a: &Bdf, b: &Bdf) -> Option<&PairClass> {
        self.pairs
            .iter()
            .find(|p| (p.a == *a && p.b == *b) || (p.a == *b && p.b == *a))
    }
    /// The endpoint named `GPU0`, `NIC1`, ….
    pub fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.name == name)
    }
}

/// Why a label was chosen: the rule and its evidence, without allocation (turned into words by
/// [`Classifier::reason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Same device.
    SameDevice,
    /// NVLinks: `count`, through the NVSwitch fabric or direct.
    NvLink {
        /// Link count shown.
        count: u32,
        /// Counted into the NVSwitch fabric rather than directly between the two.
        fabric: bool,
    },
    /// Two functions of one adapter.
    SameAdapter,
    /// Common ancestor below the host bridge (device index of the lowest common ancestor) and
    /// the number of distinct bridge units (switches, plain bridges, root ports) on the path.
    CommonBridge {
        /// Device index (in `Topology::devices`) of the lowest common ancestor.
        lca: u32,
        /// Distinct bridge units on the path.
        units: u32,
    },
    /// No common bridge, same host bridge.
    SameHostBridge,
    /// Different host bridges in this NUMA node.
    SameNuma(u32),
    /// Different host bridges, NUMA node not reported but the machine has one NUMA node.
    SingleNuma,
    /// Different NUMA nodes.
    DifferentNuma(u32, u32),
    /// Different host bridges and at least one NUMA node unknown on a machine with several.
    NumaUnknown(Option<u32>, Option<u32>),
}

const NONE: u32 = u32::MAX;

/// Per-endpoint facts computed once: the ancestor chain as device indices, the host bridge,
/// the NUMA node.
#[derive(Debug, Clone)]
struct Prepared {
    idx: u32,
    bdf: Bdf,
    kind: DeviceKind,
    /// Device indices: the endpoint first, then its parent, up to the device under the host bridge.
    chain: Vec<u32>,
    /// Interned host bridge name.
    hb: u32,
    numa: Option<u32>,
    /// The NUMA node NCCL would key this device's CPU node by (topmost device's numa_node).
    nccl_numa: Option<u32>,
    /// NVLinks into the NVSwitch fabric (0: none).
    nv_fabric: u32,
    /// Direct NVLinks: (device index of the peer GPU, link count).
    nv_direct: Vec<(u32, u32)>,
    /// NVLink version of this GPU's links, when known.
    nv_version: Option<u32>,
}

/// NCCL's decisions for one pair, before they are put into words.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Decision {
    path: NcclPath,
    base: NcclPath,
    why: BaseWhy,
    gdr: bool,
    p2p: bool,
    p2p_rerouted: bool,
    /// PXN relay: endpoint index and its path type to the NIC.
    pxn: Option<(usize, NcclPath)>,
}

/// The classification of a pair without words or hops, computed without allocation
/// ([`Classifier::summary`]); the fields mean what they mean in [`PairClass`] / [`NcclView`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairSummary {
    /// nvidia-smi label.
    pub label: Label,
    /// The rule that chose it.
    pub why: Why,
    /// NCCL path type.
    pub nccl_path: NcclPath,
    /// NCCL GPUDirect RDMA (GPU–NIC pairs).
    pub gdr: bool,
    /// NCCL P2P (GPU–GPU pairs).
    pub p2p: bool,
    /// PXN relay GPU for sends.
    pub pxn_via: Option<Bdf>,
    /// Minimum link bandwidth on the path, GB/s.
    pub bottleneck_gbytes_per_s: Option<f64>,
}

/// Why NCCL's base path type is what it is (no allocation; worded by `base_rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BaseWhy {
    Same,
    NvLink(u32, bool),
    /// Through the GPU at this device index.
    Nvb(u32),
    SameAdapter,
    Switches {
        nodes: u32,
        raw: u32,
    },
    Cpu(Option<u32>),
    Cpus(Option<u32>, Option<u32>),
}

/// A classification context over one topology: precomputes bridge units, NVLink tables and
/// every endpoint's ancestor chain once, so labelling a pair allocates nothing.
pub struct Classifier<'t> {
    t: &'t Topology,
    opts: ClassifyOptions,
    /// Bridge unit per device index (switch index for switch ports; `switches.len() + i` for a
    /// plain bridge or root port; `NONE` for endpoints).
    unit: Vec<u32>,
    /// NCCL's PCI switch node per device index, after Broadcom flattening (`NONE` when not a
    /// switch port).
    nccl_unit: Vec<u32>,
    /// NCCL's PCI node per device index before flattening (`NONE` when not a node).
    sw_raw: Vec<u32>,
    /// Switch index of a switch port.
    port_switch: Vec<Option<usize>>,
    /// Switch ids fused into their parent by NCCL's Broadcom flattening.
    bcm_fused: Vec<bool>,
    nv_direct: HashMap<(Bdf, Bdf), u32>,
    nv_fabric: HashMap<Bdf, u32>,
    hb_names: Vec<String>,
    cpu_nodes: usize,
    cpu: Option<CpuClass>,
    gpu_count: usize,
    /// Bandwidth of the link above each device (NaN: none or unknown), as in the hops.
    edge_gb: Vec<f64>,
    /// NCCL's inter-CPU bandwidth and bucket for this machine.
    inter_cpu: Option<(f64, &'static str)>,
    endpoints: Vec<Endpoint>,
    preps: Vec<Prepared>,
    /// Per endpoint index: for NICs, the GPUs NCCL would pick as local to it (best path type).
    local_gpus: Vec<Vec<usize>>,
}

fn norm(a: Bdf, b: Bdf) -> (Bdf, Bdf) {
    if a <= b { (a, b) } else { (b, a) }
}

/// Natural order of names (`mlx5_2` before `mlx5_10`).
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let split = |s: &str| {
        let t = s.trim_end_matches(|c: char| c.is_ascii_digit());
        let n = s[t.len()..].parse::<u64>().ok();
        (t.to_string(), n)
    };
    let (ta, na) = split(a);
    let (tb, nb) = split(b);
    ta.cmp(&tb).then(na.cmp(&nb)).then(a.cmp(b))
}

/// The endpoints of a topology in matrix order: GPUs in PCI bus order (nvidia-smi's order),
/// accelerators, NICs and NVMe controllers. NICs: one endpoint per NIC function with an RDMA
/// device when any NIC has one (ordered by RDMA name, then address), else one per NIC function.
/// SR-IOV virtual functions whose physical function is present are left out.
pub fn endpoints(t: &Topology) -> Vec<Endpoint> {
    let mk = |d: &Device, name: String| Endpoint {
        name,
        bdf: d.bdf,
        kind: d.kind,
        rdma: d.rdma_names().map(str::to_string).collect(),
        net: d.net_names().map(str::to_string).collect(),
        numa_node: endpoint_numa(t, d),
        cpus: d.local_cpus.as_ref().map(|c| cpulist::format_list(c)),
    };
    let mut out = Vec::new();
    for (i, d) in t.of_kind(DeviceKind::Gpu).enumerate() {
        out.push(mk(d, format!("GPU{i}")));
    }
    for (i, d) in t.of_kind(DeviceKind::Accelerator).enumerate() {
        out.push(mk(d, format!("ACC{i}")));
    }
    let nics: Vec<&Device> = t.of_kind(DeviceKind::Nic).collect();
    let any_rdma = nics.iter().any(|d| d.rdma_names().next().is_some());
    let mut nics: Vec<&Device> = nics
        .into_iter()
        .filter(|d| !any_rdma || d.rdma_names().next().is_some())
        .collect();
    nics.sort_by(|x, y| {
        let nx = x.rdma_names().next().unwrap_or("");
        let ny = y.rdma_names().next().unwrap_or("");
        natural_cmp(nx, ny).then(x.bdf.cmp(&y.bdf))
    });
    for (i, d) in nics.into_iter().enumerate() {
        out.push(mk(d, format!("NIC{i}")));
    }
    for (i, d) in t.of_kind(DeviceKind::Nvme).enumerate() {
        out.push(mk(d, format!("NVME{i}")));
    }
    out
}

/// NUMA node of a device: its own, else its nearest bridge's, else its host bridge's.
fn endpoint_numa(t: &Topology, d: &Device) -> Option<u32> {
    if let Some(n) = d.numa_node {
        return Some(n);
    }
    let mut cur = d.parent;
    let mut guard = 0;
    while let Some(p) = cur {
        guard += 1;
        if guard > 64 {
            break;
        }
        let Some(pd) = t.device(&p) else { break };
        if let Some(n) = pd.numa_node {
            return Some(n);
        }
        cur = pd.parent;
    }
    t.host_bridge(&d.host_bridge).and_then(|h| h.numa_node)
}

/// Whether a pair of kinds is classified by [`classify_all`].
fn pair_wanted(a: DeviceKind, b: DeviceKind) -> bool {
    use DeviceKind::*;
    let core = |k: DeviceKind| matches!(k, Gpu | Accelerator | Nic);
    (core(a) && core(b)) || (a == Gpu && b == Nvme) || (a == Nvme && b == Gpu)
}

/// Broadcom PEX switch signature NCCL flattens (`ncclTopoFlattenBcmSwitches`): Gen4 `1000:c010`
/// with subsystem `1000:axxx`, Gen5 `1000:c030` with subsystem `1000:1xxx` (base mode).
fn bcm_signature(d: &Device) -> Option<(u16, u16, u16, u16)> {
    let sig = (
        d.vendor_id?,
        d.device_id?,
        d.subsystem_vendor_id?,
        d.subsystem_device_id?,
    );
    let gen4 = sig.0 == 0x1000 && sig.1 == 0xc010 && sig.2 == 0x1000 && sig.3 & 0xf000 == 0xa000;
    let gen5 = sig.0 == 0x1000 && sig.1 == 0xc030 && sig.2 == 0x1000 && sig.3 & 0xf000 == 0x1000;
    (gen4 || gen5).then_some(sig)
}

impl<'t> Classifier<'t> {
    /// Prepares a topology for classification: bridge units, Broadcom flattening, NVLink
    /// tables, endpoints and their chains.
    pub fn new(t: &'t Topology, opts: &ClassifyOptions) -> Self {
        let n = t.devices.len();
        let nsw = t.switches.len();
        let mut port_switch: Vec<Option<usize>> = vec![None; n];
        let sw_index: HashMap<&str, usize> = t
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        for (si, s) in t.switches.iter().enumerate() {
            for b in std::iter::once(&s.upstream).chain(s.downstream.iter()) {
                if let Some(i) = t.device_index(b) {
                    port_switch[i] = Some(si);
                }
            }
        }
        let unit: Vec<u32> = t
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| match port_switch[i] {
                Some(s) => s as u32,
                None if d.kind.is_bridge() => (nsw + i) as u32,
                None => NONE,
            })
            .collect();
        // Broadcom flattening, top-down: a child switch with the parent's exact signature is
        // fused into the parent (one level only: the parent is marked afterwards).
        let mut sw_unit: Vec<u32> = (0..nsw as u32).collect();
        let mut bcm_fused = vec![false; nsw];
        let depth = |mut s: usize| {
            let mut d = 0;
            while let Some(p) = t.switches[s]
                .parent_switch
                .as_deref()
                .and_then(|p| sw_index.get(p))
            {
                d += 1;
                if d > 64 {
                    break;
                }
                s = *p;
            }
            d
        };
        let mut order: Vec<usize> = (0..nsw).collect();
        order.sort_by_key(|&s| (depth(s), s));
        let sig_of = |s: usize| t.device(&t.switches[s].upstream).and_then(bcm_signature);
        for &s in &order {
            if bcm_fused[s] {
                continue;
            }
            let Some(sig) = sig_of(s) else { continue };
            for c in 0..nsw {
                let is_child = t.switches[c]
                    .parent_switch
                    .as_deref()
                    .and_then(|p| sw_index.get(p))
                    == Some(&s);
                if is_child && !bcm_fused[c] && sig_of(c) == Some(sig) {
                    bcm_fused[c] = true;
                    sw_unit[c] = sw_unit[s];
                }
            }
        }
        // NCCL's PCI nodes: switches (after flattening) and plain bridges; root ports are
        // skipped by its two-level sysfs climb.
        let pci_node = |i: usize, s: Option<usize>, units: &[u32]| match s {
            Some(s) => units[s],
            None if t.devices[i].kind == DeviceKind::Bridge => (nsw + i) as u32,
            None => NONE,
        };
        let nccl_unit: Vec<u32> = port_switch
            .iter()
            .enumerate()
            .map(|(i, s)| pci_node(i, *s, &sw_unit))
            .collect();
        let ident: Vec<u32> = (0..nsw as u32).collect();
        let sw_raw: Vec<u32> = port_switch
            .iter()
            .enumerate()
            .map(|(i, s)| pci_node(i, *s, &ident))
            .collect();
        let mut nv_direct = HashMap::new();
        let mut nv_fabric = HashMap::new();
        for l in &t.nvlinks {
            match l.b {
                Some(b) => *nv_direct.entry(norm(l.a, b)).or_insert(0) += l.count,
                None => *nv_fabric.entry(l.a).or_insert(0) += l.count,
            }
        }
        let mut hb_names: Vec<String> = t.host_bridges.iter().map(|h| h.name.clone()).collect();
        for d in &t.devices {
            if !hb_names.contains(&d.host_bridge) {
                hb_names.push(d.host_bridge.clone());
            }
        }
        let cpu_nodes = t.numa_nodes.iter().filter(|n| !n.cpus.is_empty()).count();
        let cpu = t.machine.cpu_vendor.as_deref().map(CpuClass::from_vendor);
        let mut c = Classifier {
            t,
            opts: *opts,
            unit,
            nccl_unit,
            sw_raw,
            port_switch,
            bcm_fused,
            nv_direct,
            nv_fabric,
            hb_names,
            cpu_nodes,
            cpu,
            gpu_count: 0,
            edge_gb: Vec::new(),
            inter_cpu: bandwidth::inter_socket_gbytes(
                t.machine.cpu_vendor.as_deref(),
                t.machine.cpu_family,
                t.machine.cpu_model_number,
                opts.nccl_version.minor,
            ),
            endpoints: Vec::new(),
            preps: Vec::new(),
            local_gpus: Vec::new(),
        };
        c.endpoints = endpoints(t);
        c.preps = c
            .endpoints
            .iter()
            .filter_map(|e| c.prepare(&e.bdf))
            .collect();
        c.gpu_count = c.preps.iter().filter(|p| p.kind == DeviceKind::Gpu).count();
        c.edge_gb = (0..t.devices.len() as u32)
            .map(|i| c.edge_bw(i).0.unwrap_or(f64::NAN))
            .collect();
        // Every endpoint's device exists (endpoints() reads them from the topology).
        debug_assert_eq!(c.preps.len(), c.endpoints.len());
        c.local_gpus = (0..c.preps.len())
            .map(|i| {
                if c.preps[i].kind != DeviceKind::Nic {
                    return Vec::new();
                }
                c.local_gpus_of(&c.preps[i])
            })
            .collect();
        c
    }

    /// The endpoints, in matrix order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    fn prepare(&self, bdf: &Bdf) -> Option<Prepared> {
        let t = self.t;
        let idx = t.device_index(bdf)?;
        let d = &t.devices[idx];
        let mut chain = vec![idx as u32];
        let mut cur = d.parent;
        while let Some(p) = cur {
            let Some(pi) = t.device_index(&p) else { break };
            if chain.contains(&(pi as u32)) || chain.len() > 64 {
                break;
            }
            chain.push(pi as u32);
            cur = t.devices[pi].parent;
        }
        let top = &t.devices[*chain.last().unwrap_or(&(idx as u32)) as usize];
        let hb = self
            .hb_names
            .iter()
            .position(|h| *h == d.host_bridge)
            .unwrap_or(usize::MAX) as u32;
        let numa = endpoint_numa(t, d);
        let nccl_numa = top
            .numa_node
            .or(d.numa_node)
            .or_else(|| t.host_bridge(&d.host_bridge).and_then(|h| h.numa_node));
        let nv_fabric = self.nv_fabric.get(&d.bdf).copied().unwrap_or(0);
        let nv_direct = self
            .nv_direct
            .iter()
            .filter_map(|(&(x, y), &n)| {
                let other = if x == d.bdf {
                    y
                } else if y == d.bdf {
                    x
                } else {
                    return None;
                };
                Some((t.device_index(&other)? as u32, n))
            })
            .collect();
        let nv_version = t
            .nvlinks
            .iter()
            .find(|l| l.a == d.bdf || l.b == Some(d.bdf))
            .and_then(|l| l.version);
        Some(Prepared {
            idx: idx as u32,
            bdf: d.bdf,
            kind: d.kind,
            chain,
            hb,
            numa,
            nccl_numa,
            nv_fabric,
            nv_direct,
            nv_version,
        })
    }

    /// NVLink count between two GPUs: direct links, else both on the NVSwitch fabric (the
    /// smaller of their fabric link counts).
    fn nvlink(&self, a: &Prepared, b: &Prepared) -> Option<(u32, bool)> {
        if a.kind != DeviceKind::Gpu || b.kind != DeviceKind::Gpu {
            return None;
        }
        if let Some(&(_, n)) = a.nv_direct.iter().find(|(p, _)| *p == b.idx)
            && n > 0
        {
            return Some((n, false));
        }
        if a.nv_fabric > 0 && b.nv_fabric > 0 {
            Some((a.nv_fabric.min(b.nv_fabric), true))
        } else {
            None
        }
    }

    /// Lowest common ancestor positions `(ia, ib)` in the two chains.
    fn lca(a: &Prepared, b: &Prepared) -> Option<(usize, usize)> {
        let (ca, cb) = (&a.chain, &b.chain);
        let mut k = 0;
        while k < ca.len() && k < cb.len() && ca[ca.len() - 1 - k] == cb[cb.len() - 1 - k] {
            k += 1;
        }
        (k > 0).then(|| (ca.len() - k, cb.len() - k))
    }

    /// Distinct units on the path between two chains meeting at `(ia, ib)`.
    fn count_units(units: &[u32], a: &Prepared, b: &Prepared, ia: usize, ib: usize) -> u32 {
        let lu = units[a.chain[ia] as usize];
        let mut n = 0;
        let mut last = NONE;
        for &d in a.chain.iter().take(ia + 1).skip(1) {
            let u = units[d as usize];
            if u != NONE && u != last {
                n += 1;
                last = u;
            }
        }
        if ia == 0 && lu != NONE {
            n += 1;
        }
        let mut last = NONE;
        for &d in b.chain.iter().take(ib).skip(1) {
            let u = units[d as usize];
            if u != NONE && u != lu && u != last {
                n += 1;
                last = u;
            }
        }
        n
    }

    fn label_prepared(&self, a: &Prepared, b: &Prepared) -> (Label, Why) {
        if a.idx == b.idx {
            return (Label::X, Why::SameDevice);
        }
        if let Some((count, fabric)) = self.nvlink(a, b) {
            return (Label::Nv(count), Why::NvLink { count, fabric });
        }
        if a.bdf.domain == b.bdf.domain && a.bdf.bus == b.bdf.bus && a.bdf.device == b.bdf.device {
            return (Label::Pix, Why::SameAdapter);
        }
        if let Some((ia, ib)) = Self::lca(a, b) {
            let units = Self::count_units(&self.unit, a, b, ia, ib);
            let lca = a.chain[ia];
            let label = if units <= 1 { Label::Pix } else { Label::Pxb };
            return (label, Why::CommonBridge { lca, units });
        }
        if a.hb == b.hb && a.hb != u32::MAX {
            return (Label::Phb, Why::SameHostBridge);
        }
        match (a.numa, b.numa) {
            (Some(x), Some(y)) if x == y => (Label::Node, Why::SameNuma(x)),
            (Some(x), Some(y)) => (Label::Sys, Why::DifferentNuma(x, y)),
            _ if self.cpu_nodes == 1 && self.t.numa_nodes.len() == 1 => {
                (Label::Node, Why::SingleNuma)
            }
            (x, y) => (Label::Unknown, Why::NumaUnknown(x, y)),
        }
    }

    /// The label of endpoints `i` and `j` (indices into [`Classifier::endpoints`]), with the
    /// rule that chose it. Allocates nothing.
    pub fn label(&self, i: usize, j: usize) -> Option<(Label, Why)> {
        Some(self.label_prepared(self.preps.get(i)?, self.preps.get(j)?))
    }

    /// Labels of every endpoint pair as a row-major `n × n` table (the matrix without hops or
    /// NCCL view); the fast path for large topologies.
    pub fn label_table(&self) -> Vec<Label> {
        let n = self.preps.len();
        let mut out = Vec::with_capacity(n * n);
        for a in &self.preps {
            for b in &self.preps {
                out.push(self.label_prepared(a, b).0);
            }
        }
        out
    }

    fn name_of(&self, bdf: &Bdf) -> String {
        match self.endpoints.iter().find(|e| e.bdf == *bdf) {
            Some(e) => format!("{} ({})", e.name, bdf),
            None => bdf.to_string(),
        }
    }

    fn switch_name(&self, dev: u32) -> Option<&str> {
        self.port_switch[dev as usize].map(|s| self.t.switches[s].id.as_str())
    }

    /// The reason for a label, in words, with its evidence.
    pub fn reason(&self, why: Why, a: &Bdf, b: &Bdf) -> String {
        let t = self.t;
        let da = t.device(a);
        let db = t.device(b);
        let hb = |d: Option<&Device>| {
            d.map(|d| d.host_bridge.clone())
                .unwrap_or_else(|| "?".into())
        };
        match why {
            Why::SameDevice => "same device".into(),
            Why::NvLink {
                count,
                fabric: true,
            } => format!(
                "both GPUs are on the NVSwitch fabric; nvidia-smi shows each GPU's {count} NVLinks into it (NV#)"
            ),
            Why::NvLink {
                count,
                fabric: false,
            } => format!("{count} NVLinks directly between the two GPUs (NV#)"),
            Why::SameAdapter => format!("two functions of one adapter ({}): PIX", a.adapter()),
            Why::CommonBridge { lca, units } => {
                let l = &t.devices[lca as usize];
                let at = match self.switch_name(lca) {
                    Some(s) => format!("switch {s} (port {} {})", l.bdf, l.kind.as_str()),
                    None => format!("{} {}", l.kind.as_str(), l.bdf),
                };
                if units <= 1 {
                    format!("the path meets at {at} and crosses a single PCIe bridge/switch: PIX")
                } else {
                    format!(
                        "the path meets at {at} and crosses {units} PCIe bridges/switches (each switch counted once), without the host bridge: PXB"
                    )
                }
            }
            Why::SameHostBridge => {
                format!("no common switch; both under host bridge {}: PHB", hb(da))
            }
            Why::SameNuma(n) => format!(
                "different host bridges ({} and {}) in NUMA node {n}: NODE",
                hb(da),
                hb(db)
            ),
            Why::SingleNuma => format!(
                "different host bridges ({} and {}); NUMA node not reported, but the machine has a single NUMA node: NODE",
                hb(da),
                hb(db)
            ),
            Why::DifferentNuma(x, y) => format!(
                "different host bridges ({} and {}) in different NUMA nodes ({x} and {y}): SYS",
                hb(da),
                hb(db)
            ),
            Why::NumaUnknown(x, y) => {
                let s =
                    |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_else(|| "unknown".into());
                format!(
                    "different host bridges ({} and {}) and NUMA node {} vs {} on a machine with {} NUMA nodes: NODE or SYS cannot be decided (numa_node reads -1 or was not in the source)",
                    hb(da),
                    hb(db),
                    s(x),
                    s(y),
                    t.numa_nodes.len()
                )
            }
        }
    }

    /// The link entering `child` from its parent (or vice versa), when it is a physical PCIe
    /// link: not the internal hop from a downstream port to its switch's upstream port, nor
    /// from a root port into its root complex.
    fn edge(&self, child: u32) -> (Option<LinkInfo>, Option<f64>, Option<String>) {
        let (bw, link, cap_used) = self.edge_bw(child);
        let Some(l) = link else {
            let internal = matches!(
                self.t.devices[child as usize].kind,
                DeviceKind::SwitchDownstream | DeviceKind::RootPort
            );
            return (
                None,
                None,
                (!internal).then(|| "link speed/width unknown".into()),
            );
        };
        let mut note = cap_used.then(|| "current link state unknown; capability used".to_string());
        if l.width_degraded() || l.speed_degraded() {
            note = Some(format!("running below capability: {}", linkfmt::link(&l)));
        }
        (Some(l), bw, note)
    }

    /// Bandwidth (NCCL figures, current link, else capability) and link of the PCIe link above
    /// `child`, when it is a physical link (see [`Classifier::edge`]); the flag says the
    /// capability was used.
    fn edge_bw(&self, child: u32) -> (Option<f64>, Option<LinkInfo>, bool) {
        let t = self.t;
        let c = &t.devices[child as usize];
        if matches!(c.kind, DeviceKind::SwitchDownstream | DeviceKind::RootPort) {
            return (None, None, false);
        }
        let parent_link = c
            .parent
            .and_then(|p| t.device(&p))
            .filter(|p| matches!(p.kind, DeviceKind::SwitchDownstream | DeviceKind::RootPort))
            .and_then(|p| p.link);
        let link = c
            .link
            .filter(|l| l.any())
            .or(parent_link.filter(|l| l.any()));
        let Some(l) = link else {
            return (None, None, false);
        };
        let cur = bandwidth::nccl_pcie_link_gbytes(l.current_gts, l.current_width);
        let max = bandwidth::nccl_pcie_link_gbytes(l.max_gts, l.max_width);
        match (cur, max) {
            (Some(c), _) => (Some(c), Some(l), false),
            (None, Some(m)) => (Some(m), Some(l), true),
            _ => (None, Some(l), false),
        }
    }

    fn dev_hop(&self, dev: u32, entering_from_child: Option<u32>) -> Hop {
        let t = self.t;
        let d = &t.devices[dev as usize];
        let (link, gb, mut note) = match entering_from_child {
            Some(c) => self.edge(c),
            None => (None, None, None),
        };
        if let Some(s) = self.switch_name(dev) {
            let sw = format!("switch {s}");
            note = Some(match note {
                Some(n) => format!("{sw}; {n}"),
                None => sw,
            });
        }
        Hop {
            node: d.bdf.to_string(),
            kind: d.kind.as_str().to_string(),
            link,
            gbytes_per_s: gb,
            note,
        }
    }

    fn hops(&self, a: &Prepared, b: &Prepared, why: Why) -> Vec<Hop> {
        let mut hops = Vec::with_capacity(a.chain.len() + b.chain.len() + 3);
        hops.push(self.dev_hop(a.idx, None));
        if let Why::NvLink { count, fabric } = why {
            let minor = self.opts.nccl_version.minor;
            let ver = a.nv_version.or(b.nv_version);
            let per = bandwidth::nccl_nvlink_link_gbytes(None, ver, minor);
            if fabric {
                hops.push(Hop {
                    node: "nvswitch".into(),
                    kind: "nvlink".into(),
                    link: None,
                    gbytes_per_s: Some(per * count as f64),
                    note: Some(format!(
                        "{count} NVLinks × {per} GB/s into the NVSwitch fabric"
                    )),
                });
            }
            let mut last = self.dev_hop(b.idx, None);
            last.gbytes_per_s = Some(per * count as f64);
            last.note = Some(format!("{count} NVLinks × {per} GB/s"));
            last.kind = format!("{} (nvlink)", last.kind);
            hops.push(last);
            return hops;
        }
        if let Why::SameAdapter = why {
            hops.push(self.dev_hop(b.idx, None));
            hops[1].note = Some("another function of the same adapter".into());
            return hops;
        }
        match Self::lca(a, b) {
            Some((ia, ib)) => {
                for i in 1..=ia {
                    hops.push(self.dev_hop(a.chain[i], Some(a.chain[i - 1])));
                }
                for j in (0..ib).rev() {
                    hops.push(self.dev_hop(b.chain[j], Some(b.chain[j])));
                }
            }
            None => {
                for i in 1..a.chain.len() {
                    hops.push(self.dev_hop(a.chain[i], Some(a.chain[i - 1])));
                }
                let top_a = *a.chain.last().unwrap_or(&a.idx);
                let hb_name = |p: &Prepared| {
                    self.hb_names
                        .get(p.hb as usize)
                        .cloned()
                        .unwrap_or_else(|| "host-bridge?".into())
                };
                let (l, gb, note) = self.edge(top_a);
                hops.push(Hop {
                    node: hb_name(a),
                    kind: "host-bridge".into(),
                    link: l,
                    gbytes_per_s: gb,
                    note,
                });
                if a.hb != b.hb {
                    match why {
                        Why::DifferentNuma(x, y) => {
                            let bw = self.inter_cpu;
                            hops.push(Hop {
                                node: format!("numa{x}->numa{y}"),
                                kind: "inter-numa".into(),
                                link: None,
                                gbytes_per_s: bw.map(|b| b.0),
                                note: Some(match bw {
                                    Some((_, bucket)) => format!(
                                        "SMP interconnect (NCCL's inter-CPU figure for {bucket})"
                                    ),
                                    None => {
                                        "SMP interconnect; CPU vendor unknown, bandwidth unknown"
                                            .into()
                                    }
                                }),
                            });
                        }
                        Why::NumaUnknown(..) => hops.push(Hop {
                            node: "numa?".into(),
                            kind: "inter-host-bridge".into(),
                            link: None,
                            gbytes_per_s: None,
                            note: Some("NUMA node unknown: on-CPU link or SMP interconnect".into()),
                        }),
                        _ => {}
                    }
                    hops.push(Hop {
                        node: hb_name(b),
                        kind: "host-bridge".into(),
                        link: None,
                        gbytes_per_s: None,
                        note: Some("another host bridge".into()),
                    });
                }
                for j in (0..b.chain.len()).rev() {
                    hops.push(self.dev_hop(b.chain[j], Some(b.chain[j])));
                }
            }
        }
        hops
    }

    /// NCCL's base path type (before P2P rerouting and PXN) and why, without allocation.
    fn nccl_base(&self, a: &Prepared, b: &Prepared) -> (NcclPath, BaseWhy) {
        if a.idx == b.idx {
            return (NcclPath::Loc, BaseWhy::Same);
        }
        if let Some((n, fabric)) = self.nvlink(a, b) {
            return (NcclPath::Nvl, BaseWhy::NvLink(n, fabric));
        }
        if a.kind == DeviceKind::Gpu && b.kind == DeviceKind::Gpu {
            // NVB: NVLink through exactly one intermediate GPU (direct links only).
            for &(p, _) in &a.nv_direct {
                if p != b.idx && b.nv_direct.iter().any(|&(q, _)| q == p) {
                    return (NcclPath::Nvb, BaseWhy::Nvb(p));
                }
            }
        }
        if a.bdf.domain == b.bdf.domain && a.bdf.bus == b.bdf.bus && a.bdf.device == b.bdf.device {
            return (NcclPath::Pix, BaseWhy::SameAdapter);
        }
        if let Some((ia, ib)) = Self::lca(a, b) {
            let n = Self::count_units(&self.nccl_unit, a, b, ia, ib);
            let raw = Self::count_units(&self.sw_raw, a, b, ia, ib);
            let p = if n <= 1 { NcclPath::Pix } else { NcclPath::Pxb };
            return (p, BaseWhy::Switches { nodes: n, raw });
        }
        if a.nccl_numa == b.nccl_numa {
            (NcclPath::Phb, BaseWhy::Cpu(a.nccl_numa))
        } else {
            (NcclPath::Sys, BaseWhy::Cpus(a.nccl_numa, b.nccl_numa))
        }
    }

    /// The words for a [`BaseWhy`].
    fn base_rule(&self, a: &Prepared, b: &Prepared, why: BaseWhy) -> String {
        let v = self.opts.nccl_version;
        let s = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_else(|| "-1".into());
        match why {
            BaseWhy::Same => "same device: LOC".into(),
            BaseWhy::NvLink(n, true) => {
                format!(
                    "NVLinks to NVSwitches fold into one NVS node: GPU–NVS–GPU is NVL ({n} links)"
                )
            }
            BaseWhy::NvLink(n, false) => format!("{n} direct NVLinks: NVL"),
            BaseWhy::Nvb(p) => format!(
                "no direct NVLink, but NVLink through {} (NVB; disabled by NCCL_NVB_DISABLE=1)",
                self.display(&self.t.devices[p as usize].bdf)
            ),
            BaseWhy::SameAdapter => {
                if a.kind == DeviceKind::Nic && b.kind == DeviceKind::Nic {
                    if v.at_least(24) {
                        "ports of one adapter: NCCL fuses them into one virtual NIC (NCCL_NET_MERGE_LEVEL=PORT)".into()
                    } else {
                        "ports of one adapter share one NIC node (function bits masked)".into()
                    }
                } else {
                    "functions of one adapter: PIX".into()
                }
            }
            BaseWhy::Switches { nodes, raw } => {
                let mut r = if nodes <= 1 {
                    "at most one PCI switch node on the path: PIX".to_string()
                } else {
                    format!("{nodes} PCI switch nodes on the path (switch-to-switch hop): PXB")
                };
                if raw > nodes {
                    r.push_str(&format!(
                        " (ncclTopoFlattenBcmSwitches: {raw} switch nodes become {nodes} once Broadcom PEX levels with the same signature are fused)"
                    ));
                }
                r
            }
            BaseWhy::Cpu(n) => format!(
                "no common switch: the path goes through CPU node {} (NCCL has no NODE; PHB)",
                s(n)
            ),
            BaseWhy::Cpus(x, y) => {
                let extra = if x.is_none() || y.is_none() {
                    " (numa_node -1 forms its own CPU node)"
                } else {
                    ""
                };
                format!(
                    "different CPU (NUMA) nodes {} and {}: SYS{extra}",
                    s(x),
                    s(y)
                )
            }
        }
    }

    fn local_gpus_of(&self, nic: &Prepared) -> Vec<usize> {
        let v = self.opts.nccl_version;
        let mut best: Option<u32> = None;
        let mut out = Vec::new();
        for (k, g) in self.preps.iter().enumerate() {
            if g.kind != DeviceKind::Gpu {
                continue;
            }
            let r = self.nccl_base(g, nic).0.rank(v);
            match best {
                Some(b) if r > b => {}
                Some(b) if r == b => out.push(k),
                _ => {
                    best = Some(r);
                    out.clear();
                    out.push(k);
                }
            }
        }
        out
    }

    /// NCCL's decisions for a pair (path after P2P rerouting, GDR, P2P, PXN relay), without
    /// words and, when `local_gpus_b` is given, without allocation.
    fn nccl_decide(&self, a: &Prepared, b: &Prepared, local_gpus_b: Option<&[usize]>) -> Decision {
        let v = self.opts.nccl_version;
        let (base, why) = self.nccl_base(a, b);
        let mut d = Decision {
            path: base,
            base,
            why,
            gdr: false,
            p2p: false,
            p2p_rerouted: false,
            pxn: None,
        };
        use DeviceKind::*;
        match (a.kind, b.kind) {
            (Gpu, Gpu) => {
                let cut = nccl::p2p_cutoff_level(v, self.cpu, self.gpu_count);
                d.p2p = base.le(cut, v);
                if !d.p2p && base.le(NcclPath::Pxb, v) {
                    d.path = if a.nccl_numa == b.nccl_numa {
                        NcclPath::Phb
                    } else {
                        NcclPath::Sys
                    };
                    d.p2p_rerouted = true;
                }
            }
            (Gpu, Nic) | (Nic, Gpu) => {
                let level = nccl::gdr_level_path(v);
                d.gdr = base.le(level, v);
                let (g, n) = if a.kind == Gpu { (a, b) } else { (b, a) };
                if v.at_least(12) && !base.le(NcclPath::Pxb, v) {
                    let computed;
                    let locals = match local_gpus_b {
                        Some(l) if n.idx == b.idx => l,
                        _ => {
                            computed = self.local_gpus_of(n);
                            &computed
                        }
                    };
                    let relay_max = if v.at_least(28) {
                        NcclPath::P2c
                    } else {
                        NcclPath::Pxb
                    };
                    for &k in locals {
                        let p = &self.preps[k];
                        if p.idx == g.idx || self.nvlink(p, g).is_none() {
                            continue;
                        }
                        let (pn, _) = self.nccl_base(p, n);
                        if pn.le(relay_max, v) && pn.le(level, v) {
                            d.pxn = Some((k, pn));
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
        d
    }

    fn nccl_view(&self, a: &Prepared, b: &Prepared, local_gpus_b: Option<&[usize]>) -> NcclView {
        let v = self.opts.nccl_version;
        let d = self.nccl_decide(a, b, local_gpus_b);
        let path = d.base;
        let mut rules = vec![format!("NCCL {v}: {}", self.base_rule(a, b, d.why))];
        use DeviceKind::*;
        let scope = match (a.kind, b.kind) {
            (Gpu, Gpu) => "gpu-gpu",
            (Gpu, Nic) | (Nic, Gpu) => "gpu-nic",
            (Nic, Nic) => "nic-nic",
            (Gpu, Nvme) | (Nvme, Gpu) => "gpu-nvme",
            _ => "other",
        };
        match (a.kind, b.kind) {
            (Gpu, Gpu) => {
                let (cut, r) = nccl::p2p_cutoff(v, self.cpu, self.gpu_count);
                rules.push(format!(
                    "P2P {}: {path} {} cut-off {cut} ({r}; NCCL_P2P_LEVEL overrides)",
                    if d.p2p { "on" } else { "off" },
                    if d.p2p { "≤" } else { ">" }
                ));
                if d.p2p_rerouted {
                    rules.push(format!(
                        "P2P refused: the path is rebuilt through the CPU ({})",
                        d.path
                    ));
                }
                rules.push("NVML P2P read/write status not checked (needs the live driver: nvidia-smi topo -p2p r / w)".into());
            }
            (Gpu, Nic) | (Nic, Gpu) => {
                let (_, lr) = nccl::gdr_level(v);
                rules.push(format!(
                    "GDR {} (NIC writes into the GPU): distance {path} {} level ({lr}; NCCL_NET_GDR_LEVEL overrides)",
                    if d.gdr { "on" } else { "off" },
                    if d.gdr { "within" } else { "beyond" }
                ));
                if !d.gdr {
                    rules.push(
                        "without GDR NCCL stages receives through host memory on the GPU's CPU"
                            .into(),
                    );
                }
                rules.push(self.peermem_rule());
                rules.push("GDR reads (sends) are allowed by default on SM ≥ 80; pre-Ampere GPUs need an NVLink peer (NCCL_NET_GDR_READ)".into());
                if let Some((k, pn)) = d.pxn {
                    rules.push(format!(
                        "send direction GPU→NIC is PXN via {} (NVLink to this GPU, {pn} to the NIC; assumes the relay may use GDR reads, i.e. SM ≥ 80); GDR for sends judged on that distance; receives stay {path} (NCCL_PXN_DISABLE=1 turns this off)",
                        self.endpoints[k].name
                    ));
                }
            }
            (Nic, Nic) => {
                rules.push("NIC pair: no NCCL transport decision (path type shown)".into())
            }
            (Nvme, _) | (_, Nvme) => rules.push(
                "NVMe: GPUDirect Storage peer path; NCCL does not use it (path type shown)".into(),
            ),
            _ => rules
                .push("not an NCCL GPU/NIC pair: path type shown for the PCIe path only".into()),
        }
        NcclView {
            path: d.path,
            gdr: d.gdr,
            p2p: d.p2p,
            rules,
            version: v.to_string(),
            path_code: d.path.code(v),
            scope: scope.to_string(),
            pxn_via: d.pxn.map(|(k, _)| self.preps[k].bdf),
        }
    }

    /// What the machine facts say about the NIC-side GDR support NCCL checks (peermem module
    /// files), with the paths read.
    fn peermem_rule(&self) -> String {
        let m = &self.t.machine;
        let peers: Vec<String> = m
            .memory_peers
            .iter()
            .map(|(n, v)| match v {
                Some(v) => format!("/sys/kernel/mm/memory_peers/{n}/version = {v}"),
                None => format!("/sys/kernel/mm/memory_peers/{n}"),
            })
            .collect();
        if let Some(v) = &m.nvidia_peermem_version {
            format!(
                "NIC-side GDR support: /sys/module/nvidia_peermem/version = {v} (NCCL_PTR_CUDA)"
            )
        } else if !peers.is_empty() {
            format!("NIC-side GDR support: {} (NCCL_PTR_CUDA)", peers.join(", "))
        } else if m.nv_peer_mem_loaded {
            "NIC-side GDR support: legacy nv_peer_mem module loaded (/sys/module/nv_peer_mem)"
                .into()
        } else if m.modules_visible {
            "NIC-side GDR support: no nvidia_peermem / nv_peer_mem in /sys/module: NCCL can use GDR only through DMA-BUF (not checkable offline); this decision is about distance only".into()
        } else {
            "NIC-side GDR support (nvidia_peermem or DMA-BUF) not visible in this input: this decision is about distance only".into()
        }
    }

    /// Bandwidth of the path's links without building hops (same figures as the hops).
    fn bottleneck_fast(&self, a: &Prepared, b: &Prepared, why: Why) -> Option<f64> {
        let mut m = f64::INFINITY;
        let mut take = |x: f64| {
            if x < m {
                m = x;
            }
        };
        match why {
            Why::SameDevice | Why::SameAdapter => return None,
            Why::NvLink { count, .. } => {
                let per = bandwidth::nccl_nvlink_link_gbytes(
                    None,
                    a.nv_version.or(b.nv_version),
                    self.opts.nccl_version.minor,
                );
                return Some(per * count as f64);
            }
            _ => {}
        }
        let (na, nb) = match Self::lca(a, b) {
            Some((ia, ib)) => (ia, ib),
            None => (a.chain.len(), b.chain.len()),
        };
        for &d in a.chain.iter().take(na).chain(b.chain.iter().take(nb)) {
            let x = self.edge_gb[d as usize];
            if !x.is_nan() {
                take(x);
            }
        }
        if let Why::DifferentNuma(..) = why
            && let Some((x, _)) = self.inter_cpu
        {
            take(x);
        }
        m.is_finite().then_some(m)
    }

    /// The alloc-free classification of endpoints `i` and `j`: label, NCCL path/GDR/P2P/PXN,
    /// bottleneck (everything but the words and the hop list).
    pub fn summary(&self, i: usize, j: usize) -> Option<PairSummary> {
        let (a, b) = (self.preps.get(i)?, self.preps.get(j)?);
        let (label, why) = self.label_prepared(a, b);
        let d = self.nccl_decide(a, b, Some(&self.local_gpus[j]));
        Some(PairSummary {
            label,
            why,
            nccl_path: d.path,
            gdr: d.gdr,
            p2p: d.p2p,
            pxn_via: d.pxn.map(|(k, _)| self.preps[k].bdf),
            bottleneck_gbytes_per_s: self.bottleneck_fast(a, b, why),
        })
    }

    /// [`Classifier::summary`] of every wanted pair `(i, j)`, `i < j` (the pairs of
    /// [`Matrix::pairs`], in the same order).
    pub fn summary_all(&self) -> Vec<(usize, usize, PairSummary)> {
        let n = self.preps.len();
        let mut out = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                if pair_wanted(self.preps[i].kind, self.preps[j].kind)
                    && let Some(s) = self.summary(i, j)
                {
                    out.push((i, j, s));
                }
            }
        }
        out
    }

    fn classify_prepared(
        &self,
        a: &Prepared,
        b: &Prepared,
        local_gpus_b: Option<&[usize]>,
    ) -> PairClass {
        let (label, why) = self.label_prepared(a, b);
        let mut reason = self.reason(why, &a.bdf, &b.bdf);
        let mut nccl = self.nccl_view(a, b, local_gpus_b);
        let mut hops = self.hops(a, b, why);
        let acs = self.acs_redirects(a, b);
        if !acs.is_empty() {
            let ports: Vec<String> = acs.iter().map(|(b, c)| format!("{b} ({c})")).collect();
            reason.push_str(&format!(
                "; but ACS on {} redirects peer-to-peer requests up to the root complex, so traffic takes the PHB path (label {label}, effective PHB)",
                ports.join(", ")
            ));
            nccl.rules.push(
                "NCCL does not read ACS: it still predicts this path, but P2P/GDR traffic is redirected through the root complex (and can fail under an IOMMU)".into(),
            );
            for h in hops.iter_mut() {
                if let Some((_, c)) = acs.iter().find(|(b, _)| b.to_string() == h.node) {
                    let m = format!("ACS {c}: P2P redirected upstream");
                    h.note = Some(match h.note.take() {
                        Some(n) => format!("{n}; {m}"),
                        None => m,
                    });
                }
            }
        }
        let mut bottleneck: Option<(usize, f64)> = None;
        for (i, h) in hops.iter().enumerate() {
            if let Some(g) = h.gbytes_per_s
                && bottleneck.is_none_or(|(_, m)| g < m)
            {
                bottleneck = Some((i, g));
            }
        }
        if let Some((i, _)) = bottleneck {
            let h = &mut hops[i];
            let degraded = h
                .link
                .is_some_and(|l| l.width_degraded() || l.speed_degraded());
            let mark = if degraded {
                "bottleneck, because the link trained below its capability (reseat/retrain to raise it)"
            } else {
                "bottleneck"
            };
            h.note = Some(match h.note.take() {
                Some(n) => format!("{n}; {mark}"),
                None => mark.to_string(),
            });
        }
        PairClass {
            a: a.bdf,
            b: b.bdf,
            label,
            reason,
            nccl,
            bottleneck_gbytes_per_s: bottleneck.map(|b| b.1),
            bottleneck_hop: bottleneck.map(|b| b.0),
            hops,
        }
    }

    /// Ports between two peers below their common ancestor whose ACS control redirects
    /// peer-to-peer traffic upstream (ReqRedir, CmpltRedir, EgressCtrl), with the enabled
    /// controls as `lspci` names them. Empty when the pair has no common bridge or config space
    /// was not readable.
    fn acs_redirects(&self, a: &Prepared, b: &Prepared) -> Vec<(Bdf, String)> {
        let Some((ia, ib)) = Self::lca(a, b) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for &d in a
            .chain
            .iter()
            .take(ia + 1)
            .skip(1)
            .chain(b.chain.iter().take(ib).skip(1))
        {
            let dev = &self.t.devices[d as usize];
            if let Some(acs) = dev.config.as_ref().and_then(|c| c.acs)
                && acs.redirects_p2p()
            {
                out.push((dev.bdf, acs.enabled_names().join(" ")));
            }
        }
        out
    }

    /// Classifies two devices by address (endpoints or not). `None` if either is not in the
    /// topology.
    pub fn pair(&self, a: &Bdf, b: &Bdf) -> Option<PairClass> {
        let find = |x: &Bdf| -> Option<(Prepared, Option<usize>)> {
            match self.preps.iter().position(|p| p.bdf == *x) {
                Some(i) => Some((self.preps[i].clone(), Some(i))),
                None => Some((self.prepare(x)?, None)),
            }
        };
        let (pa, _) = find(a)?;
        let (pb, ib) = find(b)?;
        let locals = ib.map(|i| self.local_gpus[i].as_slice());
        Some(self.classify_prepared(&pa, &pb, locals))
    }

    /// Every wanted pair (see [`Matrix::pairs`]) and the matrix-wide notes.
    pub fn matrix(&self) -> Matrix {
        let n = self.preps.len();
        let mut pairs = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                let (a, b) = (&self.preps[i], &self.preps[j]);
                if pair_wanted(a.kind, b.kind) {
                    pairs.push(self.classify_prepared(a, b, Some(&self.local_gpus[j])));
                }
            }
        }
        Matrix {
            endpoints: self.endpoints.clone(),
            pairs,
            notes: self.notes(),
        }
    }

    /// Facts that limit every label of this topology.
    pub fn notes(&self) -> Vec<String> {
        let t = self.t;
        let mut notes = Vec::new();
        if !t.nvlink_visible && self.preps.iter().any(|p| p.kind == DeviceKind::Gpu) {
            notes.push("NVLink not visible (no NVML): labels are PCIe-only".to_string());
        }
        let unknown: Vec<&str> = self
            .endpoints
            .iter()
            .filter(|e| e.numa_node.is_none())
            .map(|e| e.name.as_str())
            .collect();
        let single_numa = self.cpu_nodes == 1 && t.numa_nodes.len() == 1;
        if !unknown.is_empty() && !single_numa {
            notes.push(format!(
                "NUMA node unknown for {}: NODE/SYS between their host bridges cannot be decided",
                unknown.join(", ")
            ));
        }
        let vfs = t
            .devices
            .iter()
            .filter(|d| d.is_vf() && matches!(d.kind, DeviceKind::Nic | DeviceKind::Gpu))
            .count();
        if vfs > 0 {
            notes.push(format!(
                "{vfs} SR-IOV virtual function(s) left out (their physical functions are listed)"
            ));
        }
        let fused: Vec<&str> = t
            .switches
            .iter()
            .zip(&self.bcm_fused)
            .filter(|(_, f)| **f)
            .map(|(s, _)| s.id.as_str())
            .collect();
        if !fused.is_empty() {
            notes.push(format!(
                "NCCL fuses Broadcom PEX switch levels {} into their parents (ncclTopoFlattenBcmSwitches): NCCL may say PIX where nvidia-smi says PXB",
                fused.join(", ")
            ));
        }
        if t.switches.iter().any(|s| s.evidence == "tree") {
            notes.push("some switches were recognised from the tree shape (config space not readable), as NCCL does".to_string());
        }
        if !t.machine.hypervisor.is_empty() {
            notes.push("running in a virtual machine: the guest PCIe tree may be flattened or emulated; labels describe the guest's view".to_string());
        }
        notes.push(format!("NCCL view for NCCL {}", self.opts.nccl_version));
        notes
    }

    /// A display name for a device: `GPU0 (0000:17:00.0)` for an endpoint, else its address.
    pub fn display(&self, bdf: &Bdf) -> String {
        self.name_of(bdf)
    }
}

/// Classifies one pair of devices (any two PCI functions of the topology); `None` if either
/// address is not in it.
pub fn classify_pair(t: &Topology, a: &Bdf, b: &Bdf, opts: &ClassifyOptions) -> Option<PairClass> {
    Classifier::new(t, opts).pair(a, b)
}

/// Classifies every GPU–GPU, GPU–NIC, NIC–NIC and accelerator pair and each GPU–NVMe pair.
pub fn classify_all(t: &Topology, opts: &ClassifyOptions) -> Matrix {
    Classifier::new(t, opts).matrix()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_print_and_parse_like_nvidia_smi() {
        for (l, s) in [
            (Label::X, "X"),
            (Label::Nv(18), "NV18"),
            (Label::Pix, "PIX"),
            (Label::Pxb, "PXB"),
            (Label::Phb, "PHB"),
            (Label::Node, "NODE"),
            (Label::Sys, "SYS"),
            (Label::Unknown, "?"),
        ] {
            assert_eq!(l.to_string(), s);
            assert_eq!(s.parse::<Label>(), Ok(l));
            assert_eq!(serde_json::to_string(&l).unwrap(), format!("\"{s}\""));
        }
        assert_eq!(" SOC ".parse::<Label>(), Ok(Label::Sys));
        assert!("NV0".parse::<Label>().is_err());
        assert!("NVB".parse::<Label>().is_err());
        assert!(Label::Pix.rank() < Label::Sys.rank());
        assert_eq!(serde_json::to_string(&NcclPath::Pxn).unwrap(), "\"PXN\"");
    }

    #[test]
    fn natural_order_of_rdma_names() {
        let mut v = vec!["mlx5_10", "mlx5_2", "mlx5_bond_0", "mlx5_1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["mlx5_1", "mlx5_2", "mlx5_10", "mlx5_bond_0"]);
    }
}
