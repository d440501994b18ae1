//! PCI IDs of the parts today's GPU platforms are built from, and what each one is: the
//! ConnectX-8 internal PCIe switch, the ConnectX-8 Data Direct DMA function, ConnectX NIC
//! functions, Grace/Vera root ports.
//!
//! Source: the device-type table of NVIDIA's `rdma_topo` (linux-rdma/rdma-core,
//! `kernel-boot/rdma_topo`, `pci_device_types`), the Linux `mlx5_ib` Data Direct driver
//! (`drivers/infiniband/hw/mlx5/data_direct.c`, PCI ID table) and NCCL's PCI class table
//! (`src/graph/topo.cc`, `kvDictPciClass`: `0x080100` "CX8 data direct"). docs/nextgen.md
//! lists which fact comes from which file.

use super::device::Device;

/// Mellanox/NVIDIA networking PCI vendor ID.
pub const MELLANOX: u16 = 0x15b3;
/// NVIDIA PCI vendor ID.
pub const NVIDIA: u16 = 0x10de;

/// ConnectX-8 Data Direct DMA function (`15b3:2100`, class `0x080100`, bound by `mlx5_ib`'s
/// `mlx5_data_direct` PCI driver).
pub const CX8_DATA_DIRECT: u16 = 0x2100;
/// PCI class NCCL maps to a PCI node and names "CX8 data direct" (DMA controller, `0x080100`).
pub const DATA_DIRECT_CLASS: u32 = 0x080100;
/// Upstream/downstream ports of the switch inside a ConnectX NIC (rdma_topo `cx_switch`).
pub const CX_SWITCH: [u16; 2] = [0x197c, 0x1979];
/// Upstream/downstream ports of the switch inside a BlueField-3 (rdma_topo `bf3_switch`).
pub const BF3_SWITCH: u16 = 0x197b;
/// ConnectX NIC functions rdma_topo pairs with GPUs: ConnectX-7, ConnectX-8, ConnectX-9
/// (`cx_nic`).
pub const CX_NIC: [u16; 3] = [0x1021, 0x1023, 0x1025];
/// Grace root ports (`10de:22b1`, `22b2`, `22b8`; rdma_topo `grace_rp`).
pub const GRACE_ROOT_PORT: [u16; 3] = [0x22b1, 0x22b2, 0x22b8];
/// Vera root ports (`10de:2f95`, `2f96`; rdma_topo `vera_rp`).
pub const VERA_ROOT_PORT: [u16; 2] = [0x2f95, 0x2f96];

/// What a part is, for the platform rules (rdma_topo's device types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// A port of the PCIe switch inside a ConnectX (or BlueField-3) NIC.
    CxSwitch,
    /// The ConnectX-8 Data Direct DMA function.
    DataDirectDma,
    /// A ConnectX-7/8/9 NIC function.
    CxNic,
    /// A Grace root port.
    GraceRootPort,
    /// A Vera root port.
    VeraRootPort,
    /// An NVIDIA GPU (vendor `10de`, display class).
    NvidiaGpu,
}

impl Part {
    /// rdma_topo's name for the part (`cx_switch`, `cx_dma`, `cx_nic`, `grace_rp`, `vera_rp`,
    /// `nvgpu`), as its messages and JSON use it.
    pub fn rdma_topo_name(self) -> &'static str {
        match self {
            Part::CxSwitch => "cx_switch",
            Part::DataDirectDma => "cx_dma",
            Part::CxNic => "cx_nic",
            Part::GraceRootPort => "grace_rp",
            Part::VeraRootPort => "vera_rp",
            Part::NvidiaGpu => "nvgpu",
        }
    }

    /// Whether this is a CPU root port of a Grace or Vera (NVIDIA Arm CPU).
    pub fn is_nvidia_root_port(self) -> bool {
        matches!(self, Part::GraceRootPort | Part::VeraRootPort)
    }
}

/// The part a device is, from its vendor, device ID and class (`None`: none of these). A
/// function whose IDs were not read is recognised by class alone only as a Data Direct DMA
/// function when its vendor is Mellanox (NCCL XML always carries the vendor).
pub fn part_of(d: &Device) -> Option<Part> {
    let (v, dev) = (d.vendor_id?, d.device_id);
    match (v, dev) {
        (MELLANOX, Some(CX8_DATA_DIRECT)) => Some(Part::DataDirectDma),
        (MELLANOX, _) if d.class == DATA_DIRECT_CLASS => Some(Part::DataDirectDma),
        (MELLANOX, Some(x)) if CX_SWITCH.contains(&x) || x == BF3_SWITCH => Some(Part::CxSwitch),
        (MELLANOX, Some(x)) if CX_NIC.contains(&x) => Some(Part::CxNic),
        (NVIDIA, Some(x)) if GRACE_ROOT_PORT.contains(&x) => Some(Part::GraceRootPort),
        (NVIDIA, Some(x)) if VERA_ROOT_PORT.contains(&x) => Some(Part::VeraRootPort),
        (NVIDIA, _) if d.class >> 16 == 0x03 => Some(Part::NvidiaGpu),
        _ => None,
    }
}

/// Whether a device is a ConnectX-8 Data Direct DMA function.
pub fn is_data_direct_dma(d: &Device) -> bool {
    part_of(d) == Some(Part::DataDirectDma)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Bdf;

    fn dev(vendor: u16, device: u16, class: u32) -> Device {
        let mut d = Device::new(
            "0008:03:00.0".parse::<Bdf>().unwrap(),
            "pci0008:00".into(),
            String::new(),
        );
        d.vendor_id = Some(vendor);
        d.device_id = Some(device);
        d.class = class;
        d
    }

    #[test]
    fn parts_by_id() {
        assert_eq!(
            part_of(&dev(0x15b3, 0x2100, 0x080100)),
            Some(Part::DataDirectDma)
        );
        assert_eq!(
            part_of(&dev(0x15b3, 0x197c, 0x060400)),
            Some(Part::CxSwitch)
        );
        assert_eq!(part_of(&dev(0x15b3, 0x1023, 0x020000)), Some(Part::CxNic));
        assert_eq!(
            part_of(&dev(0x10de, 0x22b8, 0x060400)),
            Some(Part::GraceRootPort)
        );
        assert_eq!(
            part_of(&dev(0x10de, 0x31c2, 0x030200)),
            Some(Part::NvidiaGpu)
        );
        assert_eq!(part_of(&dev(0x1000, 0xc030, 0x060400)), None);
        assert!(is_data_direct_dma(&dev(0x15b3, 0x0000, 0x080100)));
        assert_eq!(Part::DataDirectDma.rdma_topo_name(), "cx_dma");
    }
}
