//! Named layouts (specs modelled on published systems) and fault variants that modify a spec.
//!
//! The GPU/NIC placements follow `shared/reference/ecosystem.md` §4 (rail layouts) and the
//! published `nvidia-smi topo -m` matrices in `shared/reference/topo-ground-truth/`. Device and
//! vendor IDs are the real ones (pci.ids); bus numbers are chosen to look like the real
//! machines, not copied from one.

use super::{
    Aer, Bar, Function, HostBridgeSpec, Link, Machine, Module, Netdev, NodeFacts, NumaSpec,
    NvidiaDriver, Nvme, Rdma, RdmaPort, Role, Slot, Spec, SpecError, VpdSpec,
};
use crate::model::bdf::Bdf;
use crate::model::pci_config::acs;

/// Names of the layouts [`by_name`] knows, with a one-line description each.
pub const LAYOUTS: &[(&str, &str)] = &[
    (
        "hgx-h100",
        "2x Sapphire Rapids, 8x H100 SXM + 8x ConnectX-7 (NDR), one Broadcom switch per GPU-NIC pair",
    ),
    (
        "dgx-a100",
        "2x AMD Rome NPS4 (8 NUMA), 8x A100 + 8x ConnectX-6 under two-level Broadcom switches, 2 storage NICs",
    ),
    (
        "vm-flat",
        "KVM q35 guest: 1x H100 PCIe + 1 ConnectX-7 VF on QEMU root ports, numa_node -1",
    ),
    (
        "virtio-vm",
        "a small VM with only virtio devices (no GPU, no RDMA)",
    ),
    (
        "misplaced-nic",
        "hgx-h100 with GPU3's NIC moved to a root port on the other socket",
    ),
    (
        "scaling-1024",
        "synthetic tree of about 1024 PCI functions (root ports, switches, GPUs, NICs)",
    ),
    ("many-vfs-64", "one ConnectX-7 PF with 64 SR-IOV VFs"),
    (
        "h200-bond",
        "8x H200 + 8 ConnectX-7 (mlx5_0, mlx5_3..9) and a bonded dual-port storage NIC (mlx5_bond_0)",
    ),
    (
        "hgx-h100-13nic",
        "hgx-h100 with mlx5_ib0..7 and a dual-port Ethernet NIC (mlx5_eth0..1) with 3 RDMA VFs (mlx5_eth2..4)",
    ),
    (
        "hgx-h100-field",
        "hgx-h100 as fielded: Gen4 NVMe in Gen5 slots, Gen2 BMC bridge on a Gen3 port, an empty slot, idle GPUs",
    ),
    (
        "hgx-b300",
        "2x Emerald Rapids, 8x B300 each behind a ConnectX-8 switch next to its CX-8 (XDR), two Broadcom levels (OCI's B300 file)",
    ),
    (
        "gb300-tray",
        "GB300 compute tray: 2x Grace (arm64), 4x GB300 with C2C, 4x ConnectX-8 with Data Direct DMA functions next to the GPUs (OCI's GB300 file, rdma_topo's DMA complex)",
    ),
    (
        "hgx-h100-gds",
        "hgx-h100 with a data NVMe under every GPU switch (md RAID0 at /raid), nvidia-fs and NVIDIA's default cufile.json",
    ),
    (
        "mi300x-8gpu",
        "2x EPYC Genoa, 8x AMD MI300X in one xGMI hive (KFD topology), each behind its 1022:1500/1002:1501 bridges under a Broadcom switch with its Thor2 400G NIC",
    ),
    (
        "cray-ex-a100",
        "HPE Cray EX Slingshot node (Perlmutter class): 1x EPYC 7763 NPS4, 4x A100, 4x Cassini on the GPUs' host bridges, no PCIe switch (PHB by design)",
    ),
    (
        "polaris-a100",
        "ALCF Polaris class: 1x EPYC 7543P NPS4, 4x A100 (one per NUMA node), 2x HDR on GPU1's and GPU3's host bridges, no PCIe switch",
    ),
    (
        "mi300a-4apu",
        "4x AMD MI300A APU, one per NUMA node, each with a ConnectX-7 on the same host bridge and no switch (RCCL's topo_4p_942 shape), xGMI hive",
    ),
    (
        "mi50-rome",
        "2x EPYC 7402 (Rome) NPS1, 8x MI50 each on its own root port behind its 1002:14a0/14a1 bridges, one ConnectX-6 on GPU 3's root complex (RCCL's Rome PHB rule)",
    ),
];

/// The spec of a named layout (`hgx-h100`, …, `scaling-N`, `many-vfs-N`), or `None`.
pub fn by_name(name: &str) -> Option<Spec> {
    match name {
        "hgx-h100" => Some(hgx_h100()),
        "dgx-a100" => Some(dgx_a100()),
        "vm-flat" => Some(vm_flat()),
        "virtio-vm" => Some(virtio_vm()),
        "misplaced-nic" => Some(misplaced_nic()),
        "h200-bond" => Some(h200_bond()),
        "hgx-h100-13nic" => Some(hgx_h100_13nic()),
        "hgx-h100-field" => Some(hgx_h100_field()),
        "hgx-b300" => Some(hgx_b300()),
        "gb300-tray" => Some(gb300_tray()),
        "hgx-h100-gds" => Some(hgx_h100_gds()),
        "mi300x-8gpu" => Some(mi300x_8gpu()),
        "mi300a-4apu" => Some(mi300a_4apu()),
        "mi50-rome" => Some(mi50_rome()),
        "cray-ex-a100" => Some(cray_ex_a100()),
        "polaris-a100" => Some(polaris_a100()),
        _ => {
            if let Some(n) = name
                .strip_prefix("scaling-")
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(scaling(n))
            } else {
                name.strip_prefix("many-vfs-")
                    .and_then(|n| n.parse::<usize>().ok())
                    .map(many_vfs)
            }
        }
    }
}

fn b(domain: u32, bus: u8, device: u8, function: u8) -> Bdf {
    Bdf {
        domain,
        bus,
        device,
        function,
    }
}

fn cpulist_of(ranges: &[(u32, u32)]) -> String {
    ranges
        .iter()
        .map(|&(a, z)| {
            if a == z {
                a.to_string()
            } else {
                format!("{a}-{z}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn port(
    bdf: Bdf,
    parent: Option<Bdf>,
    role: Role,
    vendor: u16,
    device: u16,
    link: Link,
) -> Function {
    Function {
        bdf,
        parent,
        role,
        vendor,
        device,
        class: 0x060400,
        link: Some(link),
        acs_control: if matches!(role, Role::RootPort | Role::SwitchDownstream) {
            Some(0)
        } else {
            None
        },
        aer: Some(Aer::default()),
        driver: Some("pcieport".into()),
        ..Default::default()
    }
}

/// An Intel Xeon (Sapphire/Emerald Rapids) PCIe root port (8086:352a) on a host bridge's root
/// bus, trained at `link`.
fn xeon_root_port(bdf: Bdf, link: Link) -> Function {
    port(bdf, None, Role::RootPort, 0x8086, 0x352a, link)
}

/// Adds a host bridge at `domain:bus` on NUMA node `numa` to `spec`, keeping host bridges in
/// address order, and a DMAR unit for it, as the layouts have one per host bridge.
fn add_host_bridge(spec: &mut Spec, domain: u32, bus: u8, numa: u32) {
    spec.host_bridges.push(HostBridgeSpec {
        domain,
        bus,
        numa_node: Some(numa),
    });
    spec.host_bridges.sort_by_key(|h| (h.domain, h.bus));
    let unit = format!("dmar{}", spec.node.iommu_units.len());
    spec.node.iommu_units.push(unit);
}

/// A Broadcom PEX89000 Gen5 switch upstream port (1000:c030) under `parent`.
fn pex_gen5_upstream(bdf: Bdf, parent: Bdf, link: Link) -> Function {
    port(
        bdf,
        Some(parent),
        Role::SwitchUpstream,
        0x1000,
        0xc030,
        link,
    )
}

fn host_fn(bdf: Bdf, vendor: u16, device: u16, class: u32, pcie: bool) -> Function {
    Function {
        bdf,
        vendor,
        device,
        class,
        role: Role::RcIntegrated,
        pcie,
        relaxed_ordering: false,
        ..Default::default()
    }
}

struct GpuModel {
    device: u16,
    subsystem: u16,
    name: &'static str,
    bar1: u64,
}

const H100_SXM: GpuModel = GpuModel {
    device: 0x2330,
    subsystem: 0x16c1,
    name: "NVIDIA H100 80GB HBM3",
    bar1: 128 << 30,
};
const H100_PCIE: GpuModel = GpuModel {
    device: 0x2331,
    subsystem: 0x1626,
    name: "NVIDIA H100 PCIe",
    bar1: 128 << 30,
};
const A100_SXM4: GpuModel = GpuModel {
    device: 0x20b0,
    subsystem: 0x134f,
    name: "NVIDIA A100-SXM4-40GB",
    bar1: 64 << 30,
};

fn gpu(bdf: Bdf, parent: Option<Bdf>, m: &GpuModel, link: Link, mmio: u64) -> Function {
    Function {
        bdf,
        parent,
        vendor: 0x10de,
        device: m.device,
        subsystem_vendor: 0x10de,
        subsystem_device: m.subsystem,
        class: 0x030200,
        revision: 0xa1,
        link: Some(link),
        aer: Some(Aer::default()),
        bars: vec![
            Bar {
                index: 0,
                start: 0x9000_0000 + (u64::from(bdf.bus) << 24),
                size: 16 << 20,
                mem64: false,
                prefetchable: false,
            },
            Bar {
                index: 1,
                start: mmio,
                size: m.bar1,
                mem64: true,
                prefetchable: true,
            },
            Bar {
                index: 3,
                start: mmio + m.bar1,
                size: 32 << 20,
                mem64: true,
                prefetchable: true,
            },
        ],
        driver: Some("nvidia".into()),
        nvidia_model: Some(m.name.into()),
        ..Default::default()
    }
}

fn mlx_nic(
    bdf: Bdf,
    parent: Option<Bdf>,
    device: u16,
    (rdma, net): (&str, &str),
    (rate, layer): (&str, &str),
    link: Link,
) -> Function {
    let gbps: u64 = rate
        .split_whitespace()
        .next()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let (hca, fw) = match device {
        0x1021 => ("MT4129", "28.39.1002"),
        0x101e => ("MT4126", "28.39.1002"),
        0x101b => ("MT4123", "20.39.1002"),
        _ => ("MT4119", "16.35.2000"),
    };
    Function {
        bdf,
        parent,
        vendor: 0x15b3,
        device,
        subsystem_vendor: 0x15b3,
        subsystem_device: 0x0041,
        class: if layer == "InfiniBand" {
            0x020700
        } else {
            0x020000
        },
        link: Some(link),
        aer: Some(Aer::default()),
        bars: vec![Bar {
            index: 0,
            start: 0x2000_0000_0000 + (u64::from(bdf.bus) << 32) + (u64::from(bdf.function) << 26),
            size: 32 << 20,
            mem64: true,
            prefetchable: true,
        }],
        driver: Some("mlx5_core".into()),
        rdma: vec![Rdma {
            name: rdma.into(),
            fw_ver: fw.into(),
            hca_type: hca.into(),
            board_id: "MT_0000000838".into(),
            ports: vec![RdmaPort {
                port: 1,
                state: 4,
                phys_state: 5,
                rate: rate.into(),
                link_layer: layer.into(),
            }],
        }],
        netdevs: vec![Netdev {
            name: net.into(),
            operstate: "up".into(),
            speed_mbps: Some(gbps * 1000),
            mtu: if layer == "InfiniBand" { 4092 } else { 9000 },
        }],
        ..Default::default()
    }
}

fn nvme(bdf: Bdf, parent: Option<Bdf>, name: &str) -> Function {
    Function {
        bdf,
        parent,
        vendor: 0x144d,
        device: 0xa824,
        subsystem_vendor: 0x144d,
        subsystem_device: 0xa809,
        class: 0x010802,
        link: Some(Link::full(16.0, 4)),
        aer: Some(Aer::default()),
        bars: vec![Bar {
            index: 0,
            start: 0xa000_0000 + (u64::from(bdf.bus) << 20),
            size: 32 << 10,
            mem64: true,
            prefetchable: false,
        }],
        driver: Some("nvme".into()),
        nvme: vec![Nvme {
            name: name.into(),
            model: "SAMSUNG MZWLJ3T8HBLS-00007".into(),
            namespaces: Vec::new(),
        }],
        ..Default::default()
    }
}

/// The BMC's display path found on most servers: a root port, the ASPEED PCIe-to-PCI bridge
/// (1a03:1150, port type 7) and the ASPEED VGA (1a03:2000, class 0x0300 from a non-GPU vendor,
/// conventional PCI) on bus `bus + 1`.
fn aspeed_bmc(rp: Bdf, bus: u8) -> Vec<Function> {
    let bridge = b(rp.domain, bus, 0, 0);
    let mut r = port(rp, None, Role::RootPort, 0x8086, 0x1bbc, Link::full(5.0, 1));
    r.acs_control = Some(0);
    let mut p2p = port(
        bridge,
        Some(rp),
        Role::PcieToPci,
        0x1a03,
        0x1150,
        Link::full(5.0, 1),
    );
    p2p.driver = None;
    p2p.revision = 0x06;
    let vga = Function {
        bdf: b(rp.domain, bus + 1, 0, 0),
        parent: Some(bridge),
        vendor: 0x1a03,
        device: 0x2000,
        subsystem_vendor: 0x15d9,
        subsystem_device: 0x1c48,
        class: 0x030000,
        revision: 0x52,
        pcie: false,
        relaxed_ordering: false,
        bars: vec![
            Bar {
                index: 0,
                start: 0x9e00_0000,
                size: 16 << 20,
                mem64: false,
                prefetchable: false,
            },
            Bar {
                index: 1,
                start: 0x9f00_0000,
                size: 256 << 10,
                mem64: false,
                prefetchable: false,
            },
        ],
        driver: Some("ast".into()),
        ..Default::default()
    };
    vec![r, p2p, vga]
}

/// Numbers IOMMU groups 0.. in address order (one group per function, as with ACS on every
/// port or with a platform that isolates each function).
fn number_iommu_groups(spec: &mut Spec) {
    spec.functions.sort_by_key(|f| f.bdf);
    for (i, f) in spec.functions.iter_mut().enumerate() {
        f.iommu_group = Some(i as u32);
    }
}

fn peer_stack(nv: &str, open: bool, ofed: &str) -> NodeFacts {
    NodeFacts {
        cmdline: String::new(),
        iommu_units: Vec::new(),
        iommu_default_type: Some("identity".into()),
        modules: vec![
            Module {
                name: "nvidia".into(),
                version: Some(nv.into()),
            },
            Module {
                name: "nvidia_peermem".into(),
                version: Some(nv.into()),
            },
            Module {
                name: "ib_core".into(),
                version: Some(ofed.into()),
            },
            Module {
                name: "mlx5_core".into(),
                version: Some(ofed.into()),
            },
        ],
        memory_peers: vec![Module {
            name: "nv_mem".into(),
            version: Some(nv.into()),
        }],
        nvidia: Some(NvidiaDriver {
            version: nv.into(),
            open,
        }),
        storage: None,
    }
}

/// NUMA nodes of a two-socket machine: node 0 and node 1 with these cpulists, SLIT 10/21.
fn two_sockets(cpus0: String, cpus1: String) -> Vec<NumaSpec> {
    vec![
        NumaSpec {
            id: 0,
            cpus: cpus0,
            distances: vec![10, 21],
        },
        NumaSpec {
            id: 1,
            cpus: cpus1,
            distances: vec![21, 10],
        },
    ]
}

/// One NUMA node holding these CPUs.
fn one_numa(cpus: &str) -> Vec<NumaSpec> {
    vec![NumaSpec {
        id: 0,
        cpus: cpus.into(),
        distances: vec![10],
    }]
}

/// One host bridge on this bus of domain 0.
fn host_bridge_on(bus: u8, numa_node: Option<u32>) -> Vec<HostBridgeSpec> {
    vec![HostBridgeSpec {
        domain: 0,
        bus,
        numa_node,
    }]
}

mod amd;
mod b300;
mod dgx;
mod faults;
mod gb300;
mod gds;
mod hgx;
mod nvsmi;
mod scaling;
mod switchless;
mod vm;

pub use amd::*;
pub use b300::*;
pub use dgx::*;
pub use faults::*;
pub use gb300::*;
pub use gds::*;
pub use hgx::*;
pub use nvsmi::*;
pub use scaling::*;
pub use switchless::*;
pub use vm::*;
