//! Pair classification: for every pair of endpoints (GPUs, accelerators, NICs, and GPU–NVMe),
//! the `nvidia-smi topo -m` label, NCCL's path type with its P2P and GPUDirect RDMA decisions,
//! the hops of the PCIe path and its bottleneck link.
//!
//! Rules: shared/reference/classification.md §1.5 (labels, inferred from public nvidia-smi
//! outputs) and §2/§5 (NCCL, read from its source). Everything here is a pure function of the
//! [`Paths`] model built once over a [`Topology`]; nothing is read from the machine.
//!
//! The module is split along its seams: [`label`] (the label type and its one order),
//! [`endpoints`] (which devices are endpoints and their names), `nvsmi` (nvidia-smi's label
//! rules), `nccl_rules` (NCCL's path type, P2P, GDR and PXN decisions), `wording` (reasons,
//! rules and hops in words, only for the pairs a command prints).

mod cells;
pub mod endpoints;
pub mod label;
mod nccl_rules;
mod nvsmi;
mod platform_words;
pub mod plugin_topo;
mod rccl;
pub mod topo_file;
mod wording;

pub use super::nccl::{NcclPath, NcclVersion};
pub use cells::PairCells;
pub use endpoints::{
    Endpoint, NicOrder, endpoints as endpoints_of, natural_cmp, nic_order, pair_wanted,
};
pub use label::Label;

use super::nccl::CpuClass;
use super::paths::hops::{self, Rates};
use super::paths::{DevIx, Paths};
use crate::model::{Bdf, DeviceKind, LinkInfo, Topology, bandwidth};
use serde::Serialize;
use std::collections::HashMap;

/// The endpoints of a topology in matrix order (see [`endpoints::endpoints`]).
pub fn endpoints(t: &Topology) -> Vec<Endpoint> {
    endpoints::endpoints(&Paths::new(t))
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
    /// The library whose rules these are: `NCCL`, or `RCCL` on AMD GPUs (written only then).
    #[serde(skip_serializing_if = "is_nccl")]
    pub library: &'static str,
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

fn is_nccl(l: &&'static str) -> bool {
    *l == "NCCL"
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
    /// and each GPU–NVMe pair (not between two endpoints of one PCI function: they share a
    /// path and their cell is PIX).
    pub pairs: Vec<PairClass>,
    /// Facts that limit the whole matrix (NVLink not visible, NUMA unknown, NIC numbering).
    pub notes: Vec<String>,
    /// Where each pair is in `pairs`, built on the first [`Matrix::pair`] lookup.
    #[serde(skip)]
    index: PairIndex,
}

/// [`Matrix::pairs`] by endpoint addresses: position of `(a, b)`. Built once, on first use
/// (should `pairs` be changed afterwards, lookups notice and search it instead). Not part of the matrix's value: equal matrices
/// are equal whether or not they were indexed, and a clone starts without one.
#[derive(Default)]
struct PairIndex(std::sync::OnceLock<PairPositions>);

/// The pair count when indexed, and each `(a, b)`'s position.
type PairPositions = (usize, HashMap<(Bdf, Bdf), usize>);

impl PairIndex {
    fn build(pairs: &[PairClass]) -> PairPositions {
        let map = pairs
            .iter()
            .enumerate()
            .map(|(k, p)| ((p.a, p.b), k))
            .collect();
        (pairs.len(), map)
    }
}

impl Clone for PairIndex {
    fn clone(&self) -> Self {
        PairIndex::default()
    }
}

impl PartialEq for PairIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for PairIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PairIndex")
    }
}

impl Matrix {
    /// The pair of two endpoints (in either order). A lookup in an index of the pairs (built
    /// on the first call), so asking for every cell of a large matrix stays linear.
    pub fn pair(&self, a: &Bdf, b: &Bdf) -> Option<&PairClass> {
        let is = |p: &&PairClass| (p.a == *a && p.b == *b) || (p.a == *b && p.b == *a);
        let (len, map) = self.index.0.get_or_init(|| PairIndex::build(&self.pairs));
        let hits = [map.get(&(*a, *b)), map.get(&(*b, *a))];
        let found = hits
            .iter()
            .flatten()
            .filter_map(|&&k| self.pairs.get(k))
            .find(is);
        if found.is_some() || (*len == self.pairs.len() && hits == [None, None]) {
            return found;
        }
        // `pairs` was changed after the index was built: search it.
        self.pairs.iter().find(is)
    }
    /// The endpoint named `GPU0`, `NIC1`, ….
    pub fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.name == name)
    }
}

/// Every endpoint and the label of every endpoint pair, without words or hops: what the
/// nvidia-smi-style table prints ([`Classifier::label_matrix`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelMatrix {
    /// Endpoints in matrix order.
    pub endpoints: Vec<Endpoint>,
    /// Row-major `n × n` labels.
    labels: Vec<Label>,
    /// Facts that limit the whole matrix.
    pub notes: Vec<String>,
}

impl LabelMatrix {
    /// The label of endpoints `i` and `j`.
    pub fn label(&self, i: usize, j: usize) -> Label {
        self.labels[i * self.endpoints.len() + j]
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
    /// Two AMD GPUs of one xGMI hive (rocm-smi link type XGMI).
    Xgmi {
        /// Direct links reported (0: none reported, or reached over other GPUs of the hive).
        count: u32,
        /// A direct link between the two was reported.
        direct: bool,
    },
    /// Two functions of one adapter.
    SameAdapter,
    /// Two NIC functions whose traffic goes through one Data Direct DMA function (device
    /// index): ports of one ConnectX-8 (NVIDIA/nccl#2097 shows `mlx5_0_dma` and `mlx5_1_dma`
    /// on one DMA function).
    SharedDma {
        /// Device index of the DMA function.
        dma: u32,
    },
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

/// A classification context over one topology: the [`Paths`] model, the endpoints and NCCL's
/// per-NIC local GPUs, computed once, so labelling a pair allocates nothing and words are
/// produced only for the pairs a command asks for.
pub struct Classifier<'t> {
    paths: Paths<'t>,
    opts: ClassifyOptions,
    cpu: Option<CpuClass>,
    gpu_count: usize,
    /// The GPUs are AMD (and none NVIDIA): RCCL's decisions apply, not NCCL's.
    rccl: bool,
    /// RCCL buckets the CPU as "Rome" ([`super::nccl::rccl_rome_class`]).
    rome: bool,
    /// The topology file a cloud platform's NCCL plugin hands NCCL on this node, and why it
    /// applies ([`plugin_topo::applying`]): NCCL's PCI tree for the devices it lists.
    plugin: Option<(&'static plugin_topo::PluginTopo, String)>,
    /// The job's own `NCCL_TOPO_FILE` over this node ([`Classifier::with_topo_file`]): NCCL's
    /// tree for the GPU–NIC pairs it decides.
    topo_file: Option<topo_file::TopoFile>,
    /// NCCL's inter-CPU bandwidth and bucket for this machine.
    inter_cpu: Option<(f64, &'static str)>,
    endpoints: Vec<Endpoint>,
    /// Device index of each endpoint.
    ep_dev: Vec<DevIx>,
    /// Endpoint index of a device.
    ep_of: HashMap<DevIx, usize>,
    /// Per endpoint index: for NICs, the GPUs NCCL would pick as local to it (best path type),
    /// computed on first use ([`Classifier::locals`]): one pair (explain) reads one NIC's, not
    /// every NIC against every GPU.
    local_gpus: Vec<std::sync::OnceLock<Vec<usize>>>,
    /// Per endpoint index: for GPUs, the best base path rank to any NIC (its local NICs),
    /// computed on first use: only a GPU that reaches its CPU over C2C asks (NCCL's P2C
    /// upgrade), and computing it for every GPU read every GPU–NIC pair once more.
    best_nic: Vec<std::sync::OnceLock<Option<u32>>>,
    /// The job's NCCL settings as this release reads them (`MachineInfo::nccl`): the GDR and
    /// P2P levels, C2C, the transport. Every GDR and P2P decision reads them.
    settings: super::settings::Effective,
}

impl<'t> Classifier<'t> {
    /// Builds the paths model and prepares classification over it.
    pub fn new(t: &'t Topology, opts: &ClassifyOptions) -> Self {
        Self::with_paths(Paths::new(t), opts)
    }

    /// Prepares classification over an existing paths model.
    pub fn with_paths(paths: Paths<'t>, opts: &ClassifyOptions) -> Self {
        let t = paths.topo();
        let endpoints = endpoints::endpoints(&paths);
        let ep_dev: Vec<DevIx> = endpoints
            .iter()
            .filter_map(|e| paths.index(&e.bdf))
            .collect();
        // Every endpoint's device exists (endpoints() reads them from the topology).
        debug_assert_eq!(ep_dev.len(), endpoints.len());
        // The first endpoint of a device (two RDMA devices of one function are two endpoints).
        let ep_of = ep_dev
            .iter()
            .enumerate()
            .rev()
            .map(|(k, &d)| (d, k))
            .collect();
        let mut c = Classifier {
            opts: *opts,
            cpu: t.machine.cpu_vendor.as_deref().map(CpuClass::from_vendor),
            gpu_count: endpoints
                .iter()
                .filter(|e| e.kind == DeviceKind::Gpu)
                .count(),
            rccl: rccl::rccl_topology(t),
            plugin: plugin_topo::applying(t),
            topo_file: None,
            rome: super::nccl::rccl_rome_class(
                t.machine.cpu_vendor.as_deref(),
                t.machine.cpu_family,
                t.machine.cpu_model_number,
            ),
            inter_cpu: bandwidth::inter_socket_gbytes(
                t.machine.cpu_vendor.as_deref(),
                t.machine.cpu_family,
                t.machine.cpu_model_number,
                opts.nccl_version.minor,
            ),
            endpoints,
            ep_dev,
            ep_of,
            local_gpus: Vec::new(),
            best_nic: Vec::new(),
            settings: super::settings::Effective::of(&t.machine.nccl, opts.nccl_version),
            paths,
        };
        c.best_nic = (0..c.ep_dev.len())
            .map(|_| std::sync::OnceLock::new())
            .collect();
        c.local_gpus = (0..c.ep_dev.len())
            .map(|_| std::sync::OnceLock::new())
            .collect();
        c
    }

    /// The GPUs NCCL would pick as local to endpoint `k` when it is a NIC (empty otherwise),
    /// computed on its first use.
    pub(super) fn locals(&self, k: usize) -> &[usize] {
        self.local_gpus[k].get_or_init(|| {
            let d = self.ep_dev[k];
            if self.kind(d) == DeviceKind::Nic {
                self.local_gpus_of(d)
            } else {
                Vec::new()
            }
        })
    }

    /// The paths model the classification reads.
    pub fn paths(&self) -> &Paths<'t> {
        &self.paths
    }

    /// The topology.
    pub fn topo(&self) -> &'t Topology {
        self.paths.topo()
    }

    /// The options.
    pub fn options(&self) -> &ClassifyOptions {
        &self.opts
    }

    /// The job's NCCL settings as the modelled release reads them (from the topology's
    /// [`crate::model::MachineInfo::nccl`]).
    pub fn settings(&self) -> &super::settings::Effective {
        &self.settings
    }

    /// The GPUDirect RDMA level NCCL (or RCCL) applies to a GPU–NIC pair, before the setting:
    /// the release's default, or RCCL's PHB on Rome-class CPUs; and what decided it, in words.
    pub fn default_gdr_level(&self, gpu: &Bdf, nic: &Bdf) -> (NcclPath, String) {
        let (Some(g), Some(n)) = (self.paths.index(gpu), self.paths.index(nic)) else {
            return (self.settings.default_gdr_level(), "default".into());
        };
        self.library_gdr_level(g, n)
    }

    /// [`Classifier::default_gdr_level`] by device index, with its words.
    pub(super) fn library_gdr_level(&self, g: DevIx, n: DevIx) -> (NcclPath, String) {
        let v = self.opts.nccl_version;
        let level = self.library_gdr_path(g, n);
        let words = if self.rccl && level == NcclPath::Phb {
            format!("RCCL {v}: PHB on an AMD Rome-class CPU (ncclTopoCheckGdr's relaxation)")
        } else if self.rccl {
            format!("RCCL's default level, as NCCL {v}'s")
        } else {
            format!("NCCL {v}'s default level")
        };
        (level, words)
    }

    /// The level of [`Classifier::library_gdr_level`] without words (read for every GPU–NIC
    /// pair the classifier decides, so it allocates nothing).
    pub(super) fn library_gdr_path(&self, g: DevIx, n: DevIx) -> NcclPath {
        if self.rccl && self.rccl_rome_pair(g, n) {
            NcclPath::Phb
        } else {
            self.settings.default_gdr_level()
        }
    }

    /// When a cloud platform's NCCL plugin hands NCCL a topology file that puts `gpu` and
    /// `nic` behind one switch ([`plugin_topo`]): the file, where it comes from and why it
    /// applies to this node, in words. NCCL's path for the pair is then PIX, whatever the VM's
    /// own tree shows.
    pub fn plugin_file_words(&self, gpu: &Bdf, nic: &Bdf) -> Option<String> {
        let (f, why) = self.plugin.as_ref()?;
        let k = plugin_topo::group_of(f, gpu)?;
        (plugin_topo::group_of(f, nic)? == k).then(|| {
            format!(
                "the topology file aws-ofi-nccl sets as NCCL_TOPO_FILE on {} ({}, {}; {why}), which puts both behind its switch {}",
                f.instance, f.file, f.source, f.groups[k].0
            )
        })
    }

    /// The endpoints, in matrix order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// Index (into [`Classifier::endpoints`]) of the (first) endpoint at an address.
    pub fn endpoint_index(&self, bdf: &Bdf) -> Option<usize> {
        self.ep_of.get(&self.paths.index(bdf)?).copied()
    }

    fn kind(&self, d: DevIx) -> DeviceKind {
        self.paths.kind(d)
    }

    /// The rates a walk over the path of `a`–`b` uses: NCCL's per-link NVLink figure for the
    /// pair's NVLink version and the inter-CPU figure.
    fn rates(&self, a: DevIx, b: DevIx) -> Rates {
        let p = &self.paths;
        Rates {
            nvlink_per_link: bandwidth::nccl_nvlink_link_gbytes(
                None,
                p.nvlink_version(a).or(p.nvlink_version(b)),
                self.opts.nccl_version.minor,
            ),
            inter_cpu: self.inter_cpu.map(|x| x.0),
            xgmi_per_link: crate::model::amd::rccl_xgmi_link_gbytes(p.device(a).device_id).0,
        }
    }

    /// The label of endpoints `i` and `j` (indices into [`Classifier::endpoints`]), with the
    /// rule that chose it. Allocates nothing.
    pub fn label(&self, i: usize, j: usize) -> Option<(Label, Why)> {
        let (a, b) = (*self.ep_dev.get(i)?, *self.ep_dev.get(j)?);
        Some(self.label_ep(i, j, a, b))
    }

    /// Two endpoints' label: [`Classifier::label_ix`] of their devices, except that two RDMA
    /// devices of one PCI function (NCCL's merged ports, a device's scalable functions) are two
    /// endpoints of one device: PIX, as nvidia-smi labels two ports of one adapter.
    fn label_ep(&self, i: usize, j: usize, a: DevIx, b: DevIx) -> (Label, Why) {
        if i != j && a == b {
            (Label::Pix, Why::SameAdapter)
        } else {
            self.label_ix(a, b)
        }
    }

    /// The label of two devices by address (endpoints or not).
    pub fn label_of(&self, a: &Bdf, b: &Bdf) -> Option<(Label, Why)> {
        Some(self.label_ix(self.paths.index(a)?, self.paths.index(b)?))
    }

    /// Labels of every endpoint pair as a row-major `n × n` table (the matrix without hops or
    /// NCCL view); the fast path for large topologies.
    pub fn label_table(&self) -> Vec<Label> {
        let n = self.ep_dev.len();
        let mut out = Vec::with_capacity(n * n);
        for (i, &a) in self.ep_dev.iter().enumerate() {
            for (j, &b) in self.ep_dev.iter().enumerate() {
                out.push(self.label_ep(i, j, a, b).0);
            }
        }
        out
    }

    /// The endpoints, every label between them and the notes: the matrix without words.
    pub fn label_matrix(&self) -> LabelMatrix {
        LabelMatrix {
            endpoints: self.endpoints.clone(),
            labels: self.label_table(),
            notes: self.matrix_notes(),
        }
    }

    /// The alloc-free classification of endpoints `i` and `j`: label, NCCL path/GDR/P2P/PXN,
    /// bottleneck (everything but the words and the hop list).
    pub fn summary(&self, i: usize, j: usize) -> Option<PairSummary> {
        let (a, b) = (*self.ep_dev.get(i)?, *self.ep_dev.get(j)?);
        Some(self.summary_ix(a, b, Some(j)))
    }

    /// [`Classifier::summary`] of two devices by address (endpoints or not).
    pub fn summary_of(&self, a: &Bdf, b: &Bdf) -> Option<PairSummary> {
        let (ia, ib) = (self.paths.index(a)?, self.paths.index(b)?);
        Some(self.summary_ix(ia, ib, self.ep_of.get(&ib).copied()))
    }

    fn summary_ix(&self, a: DevIx, b: DevIx, ep_b: Option<usize>) -> PairSummary {
        let (label, why) = self.label_ix(a, b);
        let d = self.nccl_decide(a, b, ep_b);
        let rates = self.rates(a, b);
        PairSummary {
            label,
            why,
            nccl_path: d.path,
            gdr: d.gdr,
            p2p: d.p2p,
            pxn_via: d.pxn.map(|(k, _)| self.endpoints[k].bdf),
            bottleneck_gbytes_per_s: hops::bottleneck_gbytes(
                &self.paths,
                a,
                b,
                why.shape(),
                &rates,
            ),
        }
    }

    /// The endpoint index pairs `(i, j)`, `i < j`, that a matrix classifies, in matrix order:
    /// every pair whose kinds [`pair_wanted`] names, except two endpoints of one device (RDMA
    /// devices of one PCI function: no path between them, their cell is PIX). The one list
    /// [`Classifier::pairs`], [`Classifier::summaries`] and [`Matrix::pairs`] follow.
    pub fn pair_indices(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let n = self.ep_dev.len();
        (0..n)
            .flat_map(move |i| (i + 1..n).map(move |j| (i, j)))
            .filter(|&(i, j)| {
                pair_wanted(self.endpoints[i].kind, self.endpoints[j].kind)
                    && self.ep_dev[i] != self.ep_dev[j]
            })
    }

    /// [`Classifier::summary`] of every pair of [`Classifier::pair_indices`], computed one at a
    /// time as the iterator is read (what `matrix --format json` streams: nothing per pair is
    /// allocated or held).
    pub fn summaries(&self) -> impl Iterator<Item = (usize, usize, PairSummary)> + '_ {
        self.pair_indices()
            .filter_map(|(i, j)| Some((i, j, self.summary(i, j)?)))
    }

    /// [`Classifier::summaries`], collected (the pairs of [`Matrix::pairs`], in the same
    /// order).
    pub fn summary_all(&self) -> Vec<(usize, usize, PairSummary)> {
        self.summaries().collect()
    }

    /// Classifies two devices by address (endpoints or not), with words and hops. `None` if
    /// either is not in the topology.
    pub fn pair(&self, a: &Bdf, b: &Bdf) -> Option<PairClass> {
        let (ia, ib) = (self.paths.index(a)?, self.paths.index(b)?);
        Some(self.classify_ix(ia, ib, self.ep_of.get(&ib).copied()))
    }

    /// Every pair of [`Classifier::pair_indices`] with words and hops, worded one at a time as
    /// the iterator is read (what `matrix --format json --detail` streams without holding them
    /// all).
    pub fn pairs(&self) -> impl Iterator<Item = PairClass> + '_ {
        self.pair_indices()
            .map(|(i, j)| self.classify_ix(self.ep_dev[i], self.ep_dev[j], Some(j)))
    }

    /// Every wanted pair (see [`Matrix::pairs`]) with words and hops, and the matrix-wide
    /// notes.
    pub fn matrix(&self) -> Matrix {
        Matrix {
            endpoints: self.endpoints.clone(),
            pairs: self.pairs().collect(),
            notes: self.matrix_notes(),
            index: PairIndex::default(),
        }
    }

    /// The matrix of the given endpoint index pairs (either order; those
    /// [`Classifier::pair_indices`] does not list are left out), with the endpoints and notes of
    /// the whole matrix: for a command that reads a few pairs (the report's rail pairs) of a
    /// node whose every pair would not fit in memory. Its [`Matrix::pairs`] hold only those
    /// pairs, in matrix order.
    pub fn matrix_of(&self, pairs: impl IntoIterator<Item = (usize, usize)>) -> Matrix {
        let n = self.ep_dev.len();
        let mut v: Vec<(usize, usize)> = pairs
            .into_iter()
            .map(|(i, j)| if i < j { (i, j) } else { (j, i) })
            .filter(|&(i, j)| {
                j < n
                    && pair_wanted(self.endpoints[i].kind, self.endpoints[j].kind)
                    && self.ep_dev[i] != self.ep_dev[j]
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        Matrix {
            endpoints: self.endpoints.clone(),
            pairs: v
                .into_iter()
                .map(|(i, j)| self.classify_ix(self.ep_dev[i], self.ep_dev[j], Some(j)))
                .collect(),
            notes: self.matrix_notes(),
            index: PairIndex::default(),
        }
    }

    /// A display name for a device: `GPU0 (0000:17:00.0)` for an endpoint, else its address.
    pub fn display(&self, bdf: &Bdf) -> String {
        match self.endpoint_index(bdf) {
            Some(k) => format!("{} ({})", self.endpoints[k].name, bdf),
            None => bdf.to_string(),
        }
    }
}

/// [`Classifier::pairs`] as a JSON array written pair by pair: serializing it words each pair
/// as it is written, so a document of 100,000 pairs never holds them all (the `detail` of
/// `matrix --format json --detail`).
pub struct PairStream<'c, 't>(pub &'c Classifier<'t>);

impl Serialize for PairStream<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.pairs())
    }
}

impl std::fmt::Debug for PairStream<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PairStream({} endpoints)", self.0.endpoints.len())
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
        assert!(Label::Pix < Label::Sys);
        assert_eq!(serde_json::to_string(&NcclPath::Pxn).unwrap(), "\"PXN\"");
    }

    #[test]
    fn pair_lookup_by_index_matches_the_pairs_in_either_order() {
        let mut b = crate::analysis::testkit::TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.gpu("0000:11:00.0", Some("0000:10:01.0"), Some(0));
        b.bridge("0000:10:02.0", None, Some(0));
        b.gpu("0000:12:00.0", Some("0000:10:02.0"), Some(0));
        b.nic("0000:13:00.0", Some("0000:10:02.0"), Some(0), &["mlx5_0"]);
        let t = b.build();
        let mut m = classify_all(&t, &ClassifyOptions::default());
        assert_eq!(m.pairs.len(), 3);
        for p in &m.pairs {
            assert_eq!(m.pair(&p.a, &p.b), Some(p));
            assert_eq!(m.pair(&p.b, &p.a), Some(p));
        }
        let (g0, bridge): (Bdf, Bdf) = (
            "0000:11:00.0".parse().unwrap(),
            "0000:10:01.0".parse().unwrap(),
        );
        assert_eq!(m.pair(&g0, &bridge), None, "not an endpoint pair");
        // Pairs changed after the index was built: lookups still answer from the pairs.
        let first = m.pairs.remove(0);
        assert_eq!(m.pair(&first.a, &first.b), None);
        assert_eq!(m.pair(&m.pairs[1].b, &m.pairs[1].a), Some(&m.pairs[1]));
        m.pairs.push(first.clone());
        assert_eq!(m.pair(&first.a, &first.b), Some(&first));
        assert_eq!(m.clone(), m);
    }
}
