//! rocm-smi's view of an AMD node's GPU pairs (`rocm-smi --showtopo`, `amd-smi topology`):
//! link type, hops, weight and xGMI min-max bandwidth of every GPU pair, and each GPU's NUMA
//! node, computed as rocm_smi_lib computes them (`rsmi_topo_get_link_type`,
//! `rsmi_topo_get_link_weight`, `rsmi_minmax_bandwidth_get` in ROCm/rocm_smi_lib
//! `src/rocm_smi.cc`), plus what rocm-smi never shows: each GPU's class to each NIC.
//!
//! - xGMI pair (a KFD io_link of type 11 between the two GPU nodes, an RCCL `<xgmi>`, hwloc's
//!   XGMIHops): link type XGMI, hops 1, weight and bandwidths of that io_link.
//! - Any other pair (rocm-smi's PCIe case): link type PCIE; hops 2 when both GPUs hang off the
//!   same NUMA node, 3 otherwise; weight = each GPU's io_link weight to its CPU (20 each) plus,
//!   across NUMA nodes, the CPU–CPU io_link weight (KFD sets it to the ACPI SLIT distance,
//!   `node_distance()` in `kfd_parse_subtype_iolink`; read here from the NUMA distance table).
//!
//! GPUs are in PCI address order, which is rocm-smi's (`rocm_smi_main.cc` stable-sorts devices
//! by BDF) and peerpath's `GPU<i>` numbering.

use super::classify::{Classifier, Label};
use crate::model::DeviceKind;

/// rocm-smi's link type of a GPU pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RocmLink {
    /// `XGMI`.
    Xgmi,
    /// `PCIE`.
    Pcie,
}

impl RocmLink {
    /// The cell rocm-smi prints.
    pub fn as_str(self) -> &'static str {
        match self {
            RocmLink::Xgmi => "XGMI",
            RocmLink::Pcie => "PCIE",
        }
    }
}

/// One GPU pair as rocm-smi shows it; a value the input does not hold is `None` (`N/A`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocmPair {
    /// Link type.
    pub link: RocmLink,
    /// rocm-smi's hops (1 for xGMI: reachable without a CPU, not one physical link).
    pub hops: Option<u32>,
    /// rocm-smi's weight.
    pub weight: Option<u64>,
    /// xGMI min and max bandwidth, MB/s (`--shownodesbw`; `0-0`: no direct link).
    pub bandwidth: Option<(u32, u32)>,
}

/// The GPU–GPU tables of `rocm-smi --showtopo` and the GPU–NIC table rocm-smi lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct RocmTopo {
    /// Endpoint indices (into [`Classifier::endpoints`]) of the GPUs, in order.
    pub gpus: Vec<usize>,
    /// Endpoint indices of the NICs, in order.
    pub nics: Vec<usize>,
    /// Row-major `gpus × gpus` pairs (the diagonal is `None`).
    pairs: Vec<Option<RocmPair>>,
    /// Row-major `gpus × nics` labels (nvidia-smi's classes, RCCL's decisions judged on them).
    gpu_nic: Vec<Label>,
    /// NUMA node of each GPU (rocm-smi's `Numa Node` and `Numa Affinity`, both read from the
    /// device's `numa_node`).
    pub numa: Vec<Option<u32>>,
}

impl RocmTopo {
    /// The pair of GPUs `i` and `j` (positions in [`RocmTopo::gpus`]); `None` on the diagonal.
    pub fn pair(&self, i: usize, j: usize) -> Option<RocmPair> {
        self.pairs[i * self.gpus.len() + j]
    }

    /// The label of GPU `i` to NIC `k` (positions in `gpus` and `nics`).
    pub fn gpu_nic(&self, i: usize, k: usize) -> Label {
        self.gpu_nic[i * self.nics.len() + k]
    }
}

/// The ACPI SLIT distance between NUMA nodes `x` and `y` (KFD's CPU–CPU io_link weight).
fn slit(t: &crate::model::Topology, x: u32, y: u32) -> Option<u64> {
    let mut ids: Vec<u32> = t.numa_nodes.iter().map(|n| n.id).collect();
    ids.sort_unstable();
    let col = ids.iter().position(|&n| n == y)?;
    let row = t.numa_nodes.iter().find(|n| n.id == x)?;
    row.distances.get(col).map(|&d| u64::from(d))
}

/// rocm-smi's tables for the topology a classifier holds.
pub fn rocm_topo(cl: &Classifier) -> RocmTopo {
    let t = cl.topo();
    let eps = cl.endpoints();
    let gpus: Vec<usize> = (0..eps.len())
        .filter(|&i| eps[i].kind == DeviceKind::Gpu && eps[i].physfn.is_none())
        .collect();
    let nics: Vec<usize> = (0..eps.len())
        .filter(|&i| eps[i].kind == DeviceKind::Nic)
        .collect();
    let numa: Vec<Option<u32>> = gpus.iter().map(|&k| eps[k].numa_node).collect();
    let cpu_weight = |k: usize| {
        let d = t.device(&eps[k].bdf)?;
        d.amd.as_ref()?.cpu_link.as_ref()?.weight.map(u64::from)
    };
    let mut pairs = Vec::with_capacity(gpus.len() * gpus.len());
    for (i, &a) in gpus.iter().enumerate() {
        for (j, &b) in gpus.iter().enumerate() {
            if i == j {
                pairs.push(None);
                continue;
            }
            // rocm-smi's XGMI: an io_link of type 11 between the two GPU nodes (KFD lists one
            // to every GPU of the hive; a pair without one is rocm-smi's PCIe case).
            let link = t.xgmi.iter().find(|l| {
                (l.a == eps[a].bdf && l.b == eps[b].bdf) || (l.a == eps[b].bdf && l.b == eps[a].bdf)
            });
            let pair = if link.is_some() {
                RocmPair {
                    link: RocmLink::Xgmi,
                    hops: Some(link.and_then(|l| l.hops).unwrap_or(1)),
                    weight: link.and_then(|l| l.weight).map(u64::from),
                    bandwidth: link.and_then(|l| l.min_bandwidth.zip(l.max_bandwidth)),
                }
            } else {
                let (na, nb) = (numa[i], numa[j]);
                let hops = match (na, nb) {
                    (Some(x), Some(y)) if x == y => Some(2),
                    (Some(_), Some(_)) => Some(3),
                    _ => None,
                };
                let weight = match (cpu_weight(a), cpu_weight(b), na, nb) {
                    (Some(wa), Some(wb), Some(x), Some(y)) if x == y => Some(wa + wb),
                    (Some(wa), Some(wb), Some(x), Some(y)) => slit(t, x, y).map(|s| wa + wb + s),
                    _ => None,
                };
                RocmPair {
                    link: RocmLink::Pcie,
                    hops,
                    weight,
                    bandwidth: None,
                }
            };
            pairs.push(Some(pair));
        }
    }
    let mut gpu_nic = Vec::with_capacity(gpus.len() * nics.len());
    for &g in &gpus {
        for &n in &nics {
            gpu_nic.push(cl.label(g, n).map(|x| x.0).unwrap_or(Label::Unknown));
        }
    }
    RocmTopo {
        gpus,
        nics,
        pairs,
        gpu_nic,
        numa,
    }
}
