//! AMD Instinct facts: xGMI (Infinity Fabric) links between GPUs, what the amdgpu/KFD driver
//! says about each GPU (its KFD topology node, hive, partition modes, its link to the CPU), and
//! the PCI IDs of the parts an Instinct node is built from.
//!
//! Sources: the KFD topology in sysfs (`/sys/class/kfd/kfd/topology/nodes/<N>/properties` and
//! `io_links/<M>/properties`, written by `iolink_show()`/`node_show()` in Linux
//! `drivers/gpu/drm/amd/amdkfd/kfd_topology.c`; link types and flags from `kfd_crat.h`), RCCL's
//! topology XML (`<xgmi target count tclass>`, ROCm/rccl `src/graph/xml.cc`), hwloc's RSMI
//! plugin (`XGMIHiveID`, the `XGMIHops` matrix) and pci.ids; shared/reference/amd/README.md
//! names each fact's source.

use super::bdf::Bdf;
use super::device::Device;
use serde::{Deserialize, Serialize};

/// AMD/ATI PCI vendor ID (GPUs).
pub const AMD_GPU_VENDOR: u16 = 0x1002;
/// AMD PCI vendor ID (CPU and chipset functions, the MI300 internal bridge `1022:1500`).
pub const AMD_VENDOR: u16 = 0x1022;

/// KFD io_link type of an xGMI link (`CRAT_IOLINK_TYPE_XGMI`, `kfd_crat.h`).
pub const KFD_LINK_XGMI: u32 = 11;
/// KFD io_link type of a PCIe link (`CRAT_IOLINK_TYPE_PCIEXPRESS`).
pub const KFD_LINK_PCIE: u32 = 2;
/// io_link flag: the GPU cannot issue 32-bit PCIe atomics on this link
/// (`CRAT_IOLINK_FLAGS_NO_ATOMICS_32_BIT`; set by `kfd_set_iolink_no_atomics()` when
/// `pci_enable_atomic_ops_to_root()` failed for the GPU).
pub const KFD_FLAG_NO_ATOMICS_32: u32 = 1 << 2;
/// io_link flag: no 64-bit PCIe atomics on this link (`CRAT_IOLINK_FLAGS_NO_ATOMICS_64_BIT`).
pub const KFD_FLAG_NO_ATOMICS_64: u32 = 1 << 3;
/// io_link flag: no peer-to-peer DMA on this link (`CRAT_IOLINK_FLAGS_NO_PEER_TO_PEER_DMA`).
pub const KFD_FLAG_NO_P2P_DMA: u32 = 1 << 4;
/// io_link flag: the link is bidirectional; on a GPU→CPU PCIe link KFD sets it only when the
/// whole VRAM is visible through the BAR (`kfd_dev_is_large_bar()` in
/// `kfd_fill_gpu_direct_io_link_to_cpu()`), or when the GPU reaches its CPU over xGMI.
pub const KFD_FLAG_BI_DIRECTIONAL: u32 = 1 << 31;

/// The per-GPU bridges an MI300-class GPU (MI300X, MI325X, MI350X/MI355X) presents above
/// itself: the package's internal switch ports `1022:1500` and `1002:1501` (not in pci.ids; seen
/// in RCCL's `topo_8p_940.xml` and published trees: root port → board switch → 1022:1500 →
/// 1002:1501 → GPU). They belong to the GPU, not to the switch that pairs it with a NIC.
pub const MI300_PER_GPU_BRIDGES: [(u16, u16); 2] = [(0x1022, 0x1500), (0x1002, 0x1501)];

/// The internal switch ports above an MI50/MI60/MI100/MI200 (`1002:14a0` upstream, `1002:14a1`
/// downstream; hwloc's RSMI examples and LLNL's Corona file show them above each GPU).
pub const VEGA_PER_GPU_BRIDGES: [(u16, u16); 2] = [(0x1002, 0x14a0), (0x1002, 0x14a1)];

/// Device IDs of APUs: MI300A (`1002:74a0`), whose CPU and GPU share one package and memory.
pub const APU_DEVICE_IDS: [u16; 1] = [0x74a0];

/// RCCL's bandwidth of one xGMI link in GB/s by GPU generation (`ncclTopoXGMISpeed` in ROCm/rccl
/// `src/graph/topo.h`: `MI200_XGMI_WIDTH` 36 for gfx90a, `GFX94X_XGMI_WIDTH` 48 for gfx94x,
/// `VEGA_XGMI_WIDTH` 24 otherwise), with the generation's name. The generation is told from
/// the device ID (pci.ids): MI210/MI250/MI250X are gfx90a; MI300A/MI300X/MI308X/MI325X and
/// their VFs are gfx942; everything else (MI50, MI100, and MI350X/MI355X, gfx950, which the
/// October 2024 tree does not list) takes RCCL's default.
pub fn rccl_xgmi_link_gbytes(device_id: Option<u16>) -> (f64, &'static str) {
    match device_id {
        Some(0x7408 | 0x740c | 0x740f) => (36.0, "gfx90a (MI200_XGMI_WIDTH)"),
        Some(0x74a0 | 0x74a1 | 0x74a2 | 0x74a5 | 0x74a9 | 0x74bd | 0x74b5 | 0x74b9) => {
            (48.0, "gfx94x (GFX94X_XGMI_WIDTH)")
        }
        _ => (24.0, "RCCL's default (VEGA_XGMI_WIDTH)"),
    }
}

/// Whether a function is one of the bridges an AMD GPU package puts above its GPU
/// ([`MI300_PER_GPU_BRIDGES`], [`VEGA_PER_GPU_BRIDGES`]).
pub fn is_per_gpu_bridge(d: &Device) -> bool {
    let id = (d.vendor_id.unwrap_or(0), d.device_id.unwrap_or(0));
    MI300_PER_GPU_BRIDGES.contains(&id) || VEGA_PER_GPU_BRIDGES.contains(&id)
}

/// Whether a function is an AMD GPU: a GPU by its class with vendor `1002`, or one a ROCm
/// source names (an RCCL `gpu` element with its `gcn` architecture, an hwloc RSMI device) where
/// the file gives no vendor.
pub fn is_amd_gpu(d: &Device) -> bool {
    d.kind == super::DeviceKind::Gpu
        && (d.vendor_id == Some(AMD_GPU_VENDOR)
            || (d.vendor_id.is_none()
                && d.os_devices
                    .iter()
                    .any(|o| o.kind == super::OsDeviceKind::AmdGpu)))
}

/// Whether an AMD GPU is an APU (CPU and GPU in one package, MI300A): its device ID, or KFD
/// reporting its link to the CPU as xGMI (`gmc.xgmi.connected_to_cpu`).
pub fn is_apu(d: &Device) -> bool {
    is_amd_gpu(d)
        && (d.device_id.is_some_and(|id| APU_DEVICE_IDS.contains(&id))
            || d.amd
                .as_ref()
                .and_then(|a| a.cpu_link.as_ref())
                .is_some_and(|l| l.link_type == KFD_LINK_XGMI))
}

/// One KFD io_link as `io_links/<M>/properties` shows it (the fields peerpath reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KfdLink {
    /// The `properties` file it was read from.
    pub path: String,
    /// `type` (2 PCIe, 11 xGMI; `kfd_crat.h`).
    pub link_type: u32,
    /// `node_to`: the KFD node at the other end.
    pub node_to: u32,
    /// `weight` (KFD: 20 per PCIe hop, 15 per xGMI hop, 13 from an MI300A GPU to its CPU).
    pub weight: Option<u32>,
    /// `min_bandwidth`, MB/s.
    pub min_bandwidth: Option<u32>,
    /// `max_bandwidth`, MB/s (0 on an xGMI pair with no direct link).
    pub max_bandwidth: Option<u32>,
    /// `flags` (`CRAT_IOLINK_FLAGS_*`).
    pub flags: Option<u32>,
}

impl KfdLink {
    /// Whether the flags say the GPU has no PCIe atomics on this link (32- or 64-bit);
    /// `None` when the flags were not read.
    pub fn no_atomics(&self) -> Option<bool> {
        self.flags
            .map(|f| f & (KFD_FLAG_NO_ATOMICS_32 | KFD_FLAG_NO_ATOMICS_64) != 0)
    }
}

/// What the amdgpu/KFD driver says about one AMD GPU (the PCI function), from the KFD topology
/// node(s) whose `location_id`/`domain` name this function, and the amdgpu attributes in its
/// device directory.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AmdGpu {
    /// KFD topology node numbers of this function (several when the GPU is partitioned: one
    /// per compute partition, `location_id` bits 28–31 holding the partition number).
    pub kfd_nodes: Vec<u32>,
    /// `hive_id` of the KFD node (0: in no xGMI hive).
    pub hive_id: Option<u64>,
    /// `gfx_target_version` (90402 = gfx942).
    pub gfx_target_version: Option<u32>,
    /// `drm_render_minor`: the render node `/dev/dri/renderD<minor>` Slurm's gres names.
    pub drm_render_minor: Option<u32>,
    /// `unique_id`: the GPU's UUID as ROCr spells it, `GPU-<16 hex digits>` (`rocminfo`'s
    /// `Uuid`; accepted by `ROCR_VISIBLE_DEVICES`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique_id: Option<u64>,
    /// `num_xcc` of the (first) KFD node: the compute dies (XCDs) of that partition.
    pub num_xcc: Option<u32>,
    /// `current_compute_partition` of the PCI device (`SPX`, `DPX`, `QPX`, `CPX`).
    pub compute_partition: Option<String>,
    /// `current_memory_partition` of the PCI device (`NPS1`, `NPS4`).
    pub memory_partition: Option<String>,
    /// Where the compute partition was read when not from the device's own
    /// `current_compute_partition` file: `(source, raw value)`, e.g. the hwloc file and "6 RSMI
    /// OS devices (rsmi0 … rsmi5) on this PCI function" ([`compute_partition_mode`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_evidence: Option<(String, String)>,
    /// Compute partitions a source counted on this PCI function (hwloc: its RSMI OS devices),
    /// when it did not list KFD nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_count: Option<u32>,
    /// The GPU node's io_link to its CPU node (type 2 PCIe; type 11 xGMI on an APU).
    pub cpu_link: Option<KfdLink>,
    /// Local memory of the GPU node: the sum of its `mem_banks/*/properties` `size_in_bytes`
    /// with heap type 1 or 2 (frame buffer public/private).
    pub vram_bytes: Option<u64>,
    /// The KFD node directory the facts were read from (the first partition's).
    pub source: String,
}

impl AmdGpu {
    /// The ROCr UUID (`GPU-<16 hex digits>` of `unique_id`), when read.
    pub fn rocr_uuid(&self) -> Option<String> {
        self.unique_id
            .filter(|&u| u != 0)
            .map(|u| format!("GPU-{u:016x}"))
    }
}

/// The compute partition mode that `partitions` compute partitions on one PCI function mean
/// for an MI300-series device (AMD's Instinct partitioning docs: an MI300A has 6 XCDs and
/// modes SPX, TPX (3) and CPX (6); MI300X, MI325X and MI300X-HF have 8 XCDs and modes SPX, DPX
/// (2), QPX (4) and CPX (8)); `None` for another device or count (the mode is then unknown).
/// Sources that show partitions only as devices (hwloc's RSMI OS devices, one per partition)
/// name the mode with it.
pub fn compute_partition_mode(device_id: Option<u16>, partitions: u32) -> Option<&'static str> {
    match (device_id?, partitions) {
        (0x74a0, 1) => Some("SPX"),
        (0x74a0, 3) => Some("TPX"),
        (0x74a0, 6) => Some("CPX"),
        (0x74a1 | 0x74a5 | 0x74a9, 1) => Some("SPX"),
        (0x74a1 | 0x74a5 | 0x74a9, 2) => Some("DPX"),
        (0x74a1 | 0x74a5 | 0x74a9, 4) => Some("QPX"),
        (0x74a1 | 0x74a5 | 0x74a9, 8) => Some("CPX"),
        _ => None,
    }
}

/// xGMI (Infinity Fabric) between two AMD GPUs of one hive, as a source reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XgmiLink {
    /// One GPU (the lower address).
    pub a: Bdf,
    /// The other GPU.
    pub b: Bdf,
    /// Links between the two: RCCL's `<xgmi count>` (its max/min bandwidth ratio), or KFD's
    /// `max_bandwidth / min_bandwidth`; `None` when not reported.
    pub count: Option<u32>,
    /// Whether the two are joined directly (KFD `max_bandwidth` > 0, an RCCL `<xgmi>` element,
    /// which RCCL writes only for weight 15/41/13 pairs); `Some(false)`: same hive, reached
    /// through other GPUs (an MI250X GCD pair with bandwidth 0); `None`: not told (hwloc).
    pub direct: Option<bool>,
    /// rocm-smi's weight of the pair (KFD io_link `weight`).
    pub weight: Option<u32>,
    /// rocm-smi's hops of the pair (hwloc `XGMIHops`; rocm-smi prints 1 for every xGMI pair).
    pub hops: Option<u32>,
    /// KFD `min_bandwidth`, MB/s.
    pub min_bandwidth: Option<u32>,
    /// KFD `max_bandwidth`, MB/s.
    pub max_bandwidth: Option<u32>,
    /// Where the facts come from, with the raw values (`kfd nodes/2/io_links/1 type 11 weight
    /// 15`, `rccl-xml <xgmi target="0000:15:00.0" count="1">`).
    pub source: String,
}

impl XgmiLink {
    /// The pair with `a` < `b`.
    pub fn new(a: Bdf, b: Bdf, source: impl Into<String>) -> Self {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        XgmiLink {
            a,
            b,
            count: None,
            direct: None,
            weight: None,
            hops: None,
            min_bandwidth: None,
            max_bandwidth: None,
            source: source.into(),
        }
    }

    /// Folds another observation of the same pair in (both GPUs list the pair): facts one
    /// lacks are taken from the other; counts keep the larger.
    pub fn merge(&mut self, o: &XgmiLink) {
        self.count = match (self.count, o.count) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        self.direct = self.direct.or(o.direct);
        self.weight = self.weight.or(o.weight);
        self.hops = self.hops.or(o.hops);
        self.min_bandwidth = self.min_bandwidth.or(o.min_bandwidth);
        self.max_bandwidth = self.max_bandwidth.or(o.max_bandwidth);
    }
}

/// Folds observations of xGMI pairs into one link per pair, ordered by `(a, b)`.
pub fn fold_xgmi(links: Vec<XgmiLink>) -> Vec<XgmiLink> {
    let mut out: std::collections::BTreeMap<(Bdf, Bdf), XgmiLink> = Default::default();
    for l in links {
        if l.a == l.b {
            continue;
        }
        match out.entry((l.a, l.b)) {
            std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().merge(&l),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(l);
            }
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bdf {
        s.parse().unwrap()
    }

    #[test]
    fn pairs_fold_once_with_both_sides_facts() {
        let mut x = XgmiLink::new(b("0000:15:00.0"), b("0000:0c:00.0"), "a");
        x.count = Some(1);
        let mut y = XgmiLink::new(b("0000:0c:00.0"), b("0000:15:00.0"), "b");
        y.weight = Some(15);
        y.count = Some(2);
        let f = fold_xgmi(vec![x, y]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].a, b("0000:0c:00.0"));
        assert_eq!((f[0].count, f[0].weight), (Some(2), Some(15)));
        assert_eq!(f[0].source, "a");
    }

    #[test]
    fn partition_counts_name_the_mode_only_where_known() {
        assert_eq!(compute_partition_mode(Some(0x74a0), 6), Some("CPX"));
        assert_eq!(compute_partition_mode(Some(0x74a0), 1), Some("SPX"));
        assert_eq!(compute_partition_mode(Some(0x74a1), 8), Some("CPX"));
        assert_eq!(compute_partition_mode(Some(0x74a1), 6), None);
        assert_eq!(compute_partition_mode(Some(0x740c), 1), None);
        assert_eq!(compute_partition_mode(None, 6), None);
    }

    #[test]
    fn atomics_flags() {
        let l = KfdLink {
            path: String::new(),
            link_type: KFD_LINK_PCIE,
            node_to: 0,
            weight: Some(20),
            min_bandwidth: None,
            max_bandwidth: None,
            flags: Some(1 | KFD_FLAG_NO_ATOMICS_32 | KFD_FLAG_NO_ATOMICS_64),
        };
        assert_eq!(l.no_atomics(), Some(true));
        let l = KfdLink {
            flags: Some(1 | KFD_FLAG_BI_DIRECTIONAL),
            ..l
        };
        assert_eq!(l.no_atomics(), Some(false));
    }
}
