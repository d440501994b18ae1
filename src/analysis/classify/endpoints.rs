//! The endpoints a pair can be made of and the names the matrix, `explain` and every export
//! give them: `GPU0` (PCI bus order, as nvidia-smi and CUDA's `PCI_BUS_ID` order), `ACC0`,
//! `NIC0`, `NVME0`. Read from the topology's devices and the paths model's NUMA table.

use crate::analysis::paths::Paths;
use crate::model::{Bdf, Device, DeviceKind};
use crate::parse::cpulist;
use serde::Serialize;
use std::cmp::Ordering;

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

/// Natural order of names (`mlx5_2` before `mlx5_10`).
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
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
pub fn endpoints(p: &Paths) -> Vec<Endpoint> {
    let t = p.topo();
    let mk = |d: &Device, name: String| Endpoint {
        name,
        bdf: d.bdf,
        kind: d.kind,
        rdma: d.rdma_names().map(str::to_string).collect(),
        net: d.net_names().map(str::to_string).collect(),
        numa_node: p.index(&d.bdf).and_then(|i| p.numa(i)),
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

/// Whether a pair of kinds is classified in a matrix: every pair among GPUs, accelerators and
/// NICs, and each GPU–NVMe pair.
pub fn pair_wanted(a: DeviceKind, b: DeviceKind) -> bool {
    use DeviceKind::*;
    let core = |k: DeviceKind| matches!(k, Gpu | Accelerator | Nic);
    (core(a) && core(b)) || (a == Gpu && b == Nvme) || (a == Nvme && b == Gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_of_rdma_names() {
        let mut v = vec!["mlx5_10", "mlx5_2", "mlx5_bond_0", "mlx5_1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["mlx5_1", "mlx5_2", "mlx5_10", "mlx5_bond_0"]);
    }
}
