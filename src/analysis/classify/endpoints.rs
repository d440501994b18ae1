//! The endpoints a pair can be made of and the names the matrix, `explain` and every export
//! give them: `GPU0` (PCI bus order, as nvidia-smi and CUDA's `PCI_BUS_ID` order), `ACC0`,
//! `NIC0` (one per RDMA device, in the order the kernel registered them, as `nvidia-smi topo
//! -m` numbers them), `NVME0`. Read from the topology's devices and the paths model's NUMA
//! table.
//!
//! NIC numbering (docs/matrix.md gives the evidence): nvidia-smi lists every RDMA device,
//! virtual functions and each device of a multi-port adapter included, in the order the kernel
//! registered them. That order is the kernel's RDMA device index ([`OsDevice::index`], read
//! live over netlink and stored in snapshots; NCCL XML's `dev`). Where the input does not carry
//! it for every RDMA device, the order is rebuilt from what registration follows at boot:
//! devices on physical functions in PCI address order (drivers probe the bus in that order),
//! then bonded (LAG) devices, which replace their ports' devices after boot, then devices on
//! SR-IOV virtual functions, created once the physical functions are up.

use crate::analysis::paths::Paths;
use crate::model::cpulist;
use crate::model::{Bdf, Device, DeviceKind, OsDevice, OsDeviceKind, Topology};
use serde::Serialize;
use std::cmp::Ordering;

/// A device a pair can be made of, with the names the matrix and `explain` use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Endpoint {
    /// `GPU0` (PCI bus order, as nvidia-smi), `ACC0`, `NIC0` (one per RDMA device, in the
    /// kernel's registration order, as nvidia-smi), `NVME0`.
    pub name: String,
    /// Its PCI address (two RDMA devices of one function share it).
    pub bdf: Bdf,
    /// Its kind.
    pub kind: DeviceKind,
    /// RDMA device: for a NIC endpoint the one RDMA device it stands for (`mlx5_0`); empty for
    /// a NIC function without one (listed only when no NIC has an RDMA device).
    pub rdma: Vec<String>,
    /// Netdev names of the function (`ib0`).
    pub net: Vec<String>,
    /// NUMA node (the device's, else its nearest bridge's, else its host bridge's).
    pub numa_node: Option<u32>,
    /// `local_cpulist` as a cpulist string.
    pub cpus: Option<String>,
    /// GPUs: the NUMA node of the GPU's memory when the driver onlines it as one (nvidia-smi's
    /// `GPU NUMA ID`; `Node:` of `/proc/driver/nvidia/gpus/<bdf>/numa_status`); `None` (`N/A`)
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_numa_id: Option<u32>,
    /// SR-IOV virtual functions: the physical function (`physfn`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physfn: Option<Bdf>,
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

/// How the NICs of a topology are numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicOrder {
    /// By the kernel's RDMA device index (registration order), every RDMA device having one.
    KernelIndex,
    /// Rebuilt from PCI addresses (physical functions, then bonds, then virtual functions):
    /// the input does not carry the registration order of every RDMA device.
    Rebuilt,
    /// No RDMA device: one NIC per network function, by PCI address (nvidia-smi lists none).
    NoRdma,
}

/// The RDMA devices of NIC functions, virtual functions included.
fn rdma_devices(t: &Topology) -> impl Iterator<Item = (&Device, &OsDevice)> {
    t.devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Nic)
        .flat_map(|d| {
            d.os_devices
                .iter()
                .filter(|o| o.kind == OsDeviceKind::Rdma)
                .map(move |o| (d, o))
        })
}

/// How [`endpoints`] numbers this topology's NICs.
pub fn nic_order(t: &Topology) -> NicOrder {
    let mut any = false;
    for (_, o) in rdma_devices(t) {
        any = true;
        if o.index.is_none() {
            return NicOrder::Rebuilt;
        }
    }
    if any {
        NicOrder::KernelIndex
    } else {
        NicOrder::NoRdma
    }
}

/// Rank of an RDMA device in the rebuilt registration order: physical functions first, then
/// bonded devices (created when LAG activates, after their ports' devices), then virtual
/// functions (created after their physical functions are up).
fn rebuilt_rank(d: &Device, o: &OsDevice) -> u8 {
    if d.is_vf() {
        2
    } else if o.name.contains("bond") {
        1
    } else {
        0
    }
}

/// The endpoints of a topology in matrix order: GPUs in PCI bus order (nvidia-smi's order),
/// accelerators, NICs (one per RDMA device, virtual functions included, in the order of
/// [`nic_order`]; one per network function when no NIC has an RDMA device) and NVMe
/// controllers.
pub fn endpoints(p: &Paths) -> Vec<Endpoint> {
    let t = p.topo();
    let mk = |d: &Device, name: String, rdma: Vec<String>| Endpoint {
        name,
        bdf: d.bdf,
        kind: d.kind,
        rdma,
        net: d.net_names().map(str::to_string).collect(),
        numa_node: p.index(&d.bdf).and_then(|i| p.numa(i)),
        cpus: d.local_cpus.as_ref().map(|c| cpulist::format_list(c)),
        gpu_numa_id: (d.kind == DeviceKind::Gpu)
            .then(|| d.gpu_memory_numa_node())
            .flatten(),
        physfn: d.physfn,
    };
    let mut out = Vec::new();
    for (i, d) in t.of_kind(DeviceKind::Gpu).enumerate() {
        out.push(mk(d, format!("GPU{i}"), Vec::new()));
    }
    for (i, d) in t.of_kind(DeviceKind::Accelerator).enumerate() {
        out.push(mk(d, format!("ACC{i}"), Vec::new()));
    }
    let order = nic_order(t);
    if order == NicOrder::NoRdma {
        for (i, d) in t.of_kind(DeviceKind::Nic).enumerate() {
            out.push(mk(d, format!("NIC{i}"), Vec::new()));
        }
    } else {
        let mut rdma: Vec<(&Device, &OsDevice)> = rdma_devices(t).collect();
        rdma.sort_by(|(da, oa), (db, ob)| {
            let by_index = match order {
                NicOrder::KernelIndex => oa.index.cmp(&ob.index),
                _ => rebuilt_rank(da, oa)
                    .cmp(&rebuilt_rank(db, ob))
                    .then(da.bdf.cmp(&db.bdf)),
            };
            by_index.then_with(|| natural_cmp(&oa.name, &ob.name))
        });
        for (i, (d, o)) in rdma.into_iter().enumerate() {
            out.push(mk(d, format!("NIC{i}"), vec![o.name.clone()]));
        }
    }
    for (i, d) in t.of_kind(DeviceKind::Nvme).enumerate() {
        out.push(mk(d, format!("NVME{i}"), Vec::new()));
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
    use crate::analysis::testkit::TopoBuilder;

    #[test]
    fn natural_order_of_rdma_names() {
        let mut v = vec!["mlx5_10", "mlx5_2", "mlx5_bond_0", "mlx5_1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["mlx5_1", "mlx5_2", "mlx5_10", "mlx5_bond_0"]);
    }

    fn nic_names(t: &Topology) -> Vec<String> {
        endpoints(&Paths::new(t))
            .into_iter()
            .filter(|e| e.kind == DeviceKind::Nic)
            .map(|e| e.rdma.join(","))
            .collect()
    }

    /// Renamed devices (`mlx5_ib*`, `mlx5_eth*`) keep their registration order: PCI order
    /// without an index, the index when there is one.
    #[test]
    fn renamed_devices_follow_registration_not_names() {
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:00:01.0", None, Some(0));
        b.nic("0000:01:00.0", Some("0000:00:01.0"), Some(0), &["mlx5_ib0"]);
        b.nic("0000:02:00.0", Some("0000:00:01.0"), Some(0), &["mlx5_ib1"]);
        b.nic(
            "0000:03:00.0",
            Some("0000:00:01.0"),
            Some(0),
            &["mlx5_eth0"],
        );
        let t = b.build();
        assert_eq!(nic_order(&t), NicOrder::Rebuilt);
        assert_eq!(nic_names(&t), ["mlx5_ib0", "mlx5_ib1", "mlx5_eth0"]);
        let mut t = t;
        for (d, ix) in [
            ("0000:01:00.0", 5),
            ("0000:02:00.0", 3),
            ("0000:03:00.0", 4),
        ] {
            let b: Bdf = d.parse().unwrap();
            let dev = t.devices.iter_mut().find(|x| x.bdf == b).unwrap();
            dev.os_devices[0].index = Some(ix);
        }
        assert_eq!(nic_order(&t), NicOrder::KernelIndex);
        assert_eq!(nic_names(&t), ["mlx5_ib1", "mlx5_eth0", "mlx5_ib0"]);
    }

    /// A bond comes after the physical devices even on a lower PCI address; VFs come last, and
    /// every RDMA device of a function is its own NIC.
    #[test]
    fn bonds_then_vfs_and_every_rdma_device() {
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:00:01.0", None, Some(0));
        b.nic(
            "0000:01:00.0",
            Some("0000:00:01.0"),
            Some(0),
            &["mlx5_bond_0"],
        );
        b.nic("0000:02:00.0", Some("0000:00:01.0"), Some(0), &["mlx5_3"]);
        b.nic("0000:02:00.2", Some("0000:00:01.0"), Some(0), &["mlx5_5"]);
        b.nic("0000:04:00.0", Some("0000:00:01.0"), Some(0), &["mlx5_4"]);
        let mut t = b.build();
        let vf: Bdf = "0000:02:00.2".parse().unwrap();
        t.devices.iter_mut().find(|d| d.bdf == vf).unwrap().physfn =
            Some("0000:02:00.0".parse().unwrap());
        let two: Bdf = "0000:04:00.0".parse().unwrap();
        let d = t.devices.iter_mut().find(|d| d.bdf == two).unwrap();
        d.os_devices
            .push(OsDevice::new(OsDeviceKind::Rdma, "mlx5_6"));
        assert_eq!(
            nic_names(&t),
            ["mlx5_3", "mlx5_4", "mlx5_6", "mlx5_bond_0", "mlx5_5"]
        );
    }
}
