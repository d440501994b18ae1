//! Named layouts (specs modelled on published systems) and fault variants that modify a spec.
//!
//! The GPU/NIC placements follow `shared/reference/ecosystem.md` §4 (rail layouts) and the
//! published `nvidia-smi topo -m` matrices in `shared/reference/topo-ground-truth/`. Device and
//! vendor IDs are the real ones (pci.ids); bus numbers are chosen to look like the real
//! machines, not copied from one.

use super::{
    Aer, Bar, Function, HostBridgeSpec, Link, Machine, Module, Netdev, NodeFacts, NumaSpec,
    NvidiaDriver, Nvme, Rdma, RdmaPort, Role, Slot, Spec, SpecError,
};
use crate::model::bdf::Bdf;
use crate::parse::config::acs;

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
];

/// The spec of a named layout (`hgx-h100`, …, `scaling-N`, `many-vfs-N`), or `None`.
pub fn by_name(name: &str) -> Option<Spec> {
    match name {
        "hgx-h100" => Some(hgx_h100()),
        "dgx-a100" => Some(dgx_a100()),
        "vm-flat" => Some(vm_flat()),
        "virtio-vm" => Some(virtio_vm()),
        "misplaced-nic" => Some(misplaced_nic()),
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
    }
}

/// Bus of the host bridge of GPU–NIC pair `i` in [`hgx_h100`] (4 per socket).
pub const HGX_PAIR_BUSES: [u8; 8] = [0x15, 0x26, 0x37, 0x48, 0x97, 0xa8, 0xb9, 0xca];

/// Addresses of the eight GPUs in [`hgx_h100`] (GPU i on pair i).
pub fn hgx_gpu(i: usize) -> Bdf {
    b(0, HGX_PAIR_BUSES[i] + 3, 0, 0)
}

/// Addresses of the eight compute NICs (`mlx5_i`) in [`hgx_h100`].
pub fn hgx_nic(i: usize) -> Bdf {
    b(0, HGX_PAIR_BUSES[i] + 4, 0, 0)
}

/// Switch downstream port above GPU i in [`hgx_h100`].
pub fn hgx_gpu_port(i: usize) -> Bdf {
    b(0, HGX_PAIR_BUSES[i] + 2, 0, 0)
}

/// Switch downstream port above NIC i in [`hgx_h100`].
pub fn hgx_nic_port(i: usize) -> Bdf {
    b(0, HGX_PAIR_BUSES[i] + 2, 1, 0)
}

/// An HGX H100 8-GPU node: 2 Sapphire Rapids sockets (2 NUMA nodes, 56 cores, SMT), GPU–NIC
/// pair `i` under its own Broadcom PEX switch (1000:c030) behind a root port on its own host
/// bridge, 4 pairs per socket, Gen5 x16 everywhere; 8 H100 SXM (10de:2330), 8 ConnectX-7
/// (15b3:1021, `mlx5_0..7`, IB NDR ACTIVE); 2 NVMe, an I210 management NIC and the ASPEED BMC
/// VGA behind its PCIe-to-PCI bridge on socket 0;
/// nvidia-peermem loaded, IOMMU in passthrough (`identity`).
pub fn hgx_h100() -> Spec {
    let gen5 = Link::full(32.0, 16);
    let mut fns = vec![host_fn(b(0, 0, 0, 0), 0x8086, 0x09a2, 0x088000, true)];
    fns.extend(aspeed_bmc(b(0, 0, 0x1d, 0), 2));
    // Management NIC on the PCH-side root port.
    let rp0 = b(0, 0, 0x1c, 0);
    let mut r = port(
        rp0,
        None,
        Role::RootPort,
        0x8086,
        0x1bb8,
        Link::full(2.5, 1),
    );
    r.acs_control = Some(0);
    fns.push(r);
    fns.push(Function {
        bdf: b(0, 1, 0, 0),
        parent: Some(rp0),
        vendor: 0x8086,
        device: 0x1533,
        subsystem_vendor: 0x15d9,
        subsystem_device: 0x1533,
        class: 0x020000,
        revision: 0x03,
        link: Some(Link::full(2.5, 1)),
        mps_supported: 512,
        mps: 256,
        aer: Some(Aer::default()),
        bars: vec![Bar {
            index: 0,
            start: 0x9c00_0000,
            size: 1 << 20,
            mem64: false,
            prefetchable: false,
        }],
        driver: Some("igb".into()),
        netdevs: vec![Netdev {
            name: "eno1".into(),
            operstate: "up".into(),
            speed_mbps: Some(1000),
            mtu: 1500,
        }],
        ..Default::default()
    });
    for (i, &bus) in HGX_PAIR_BUSES.iter().enumerate() {
        let rp = b(0, bus, 1, 0);
        let usp = b(0, bus + 1, 0, 0);
        let mut root = port(rp, None, Role::RootPort, 0x8086, 0x352a, gen5);
        root.mps_supported = 512;
        fns.push(root);
        fns.push(port(
            usp,
            Some(rp),
            Role::SwitchUpstream,
            0x1000,
            0xc030,
            gen5,
        ));
        fns.push(port(
            hgx_gpu_port(i),
            Some(usp),
            Role::SwitchDownstream,
            0x1000,
            0xc030,
            gen5,
        ));
        let mut nd = port(
            hgx_nic_port(i),
            Some(usp),
            Role::SwitchDownstream,
            0x1000,
            0xc030,
            gen5,
        );
        nd.slot = Some(Slot {
            name: format!("{}", 10 + i),
            number: 10 + i as u32,
        });
        fns.push(nd);
        let mmio = 0x2_0000_0000_0000u64 + ((i as u64) << 40);
        fns.push(gpu(
            hgx_gpu(i),
            Some(hgx_gpu_port(i)),
            &H100_SXM,
            gen5,
            mmio,
        ));
        fns.push(mlx_nic(
            hgx_nic(i),
            Some(hgx_nic_port(i)),
            0x1021,
            (&format!("mlx5_{i}"), &format!("ib{i}")),
            ("400 Gb/sec (4X NDR)", "InfiniBand"),
            gen5,
        ));
    }
    // Two NVMe drives on their own host bridge on socket 0.
    for (k, name) in ["nvme0", "nvme1"].iter().enumerate() {
        let rp = b(0, 0x59, 1 + k as u8, 0);
        fns.push(port(
            rp,
            None,
            Role::RootPort,
            0x8086,
            0x352a,
            Link::full(16.0, 4),
        ));
        fns.push(nvme(b(0, 0x5a + k as u8, 0, 0), Some(rp), name));
    }
    let mut host_bridges = vec![
        HostBridgeSpec {
            domain: 0,
            bus: 0,
            numa_node: Some(0),
        },
        HostBridgeSpec {
            domain: 0,
            bus: 0x59,
            numa_node: Some(0),
        },
    ];
    for (i, &bus) in HGX_PAIR_BUSES.iter().enumerate() {
        host_bridges.push(HostBridgeSpec {
            domain: 0,
            bus,
            numa_node: Some((i / 4) as u32),
        });
    }
    host_bridges.sort_by_key(|h| h.bus);
    let nv = "550.127.05";
    let mut node = peer_stack(nv, true, "24.10-1.1.4");
    node.cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=3c1f6a3e-0d0b-4d0c-9c55-5f7c1f7e2a10 ro intel_iommu=on iommu=pt".into();
    node.iommu_units = (0..host_bridges.len())
        .map(|i| format!("dmar{i}"))
        .collect();
    let mut spec = Spec {
        name: "hgx-h100".into(),
        machine: Machine {
            cpu_vendor: "GenuineIntel".into(),
            cpu_model: "Intel(R) Xeon(R) Platinum 8480C".into(),
            cpu_family: 6,
            cpu_model_number: 143,
            sockets: 2,
            cores_per_socket: 56,
            threads_per_core: 2,
            hypervisor: false,
            dmi_vendor: Some("Supermicro".into()),
            dmi_product: Some("SYS-821GE-TNHR".into()),
            memory_kib_per_node: 1056 * 1024 * 1024,
        },
        numa_nodes: vec![
            NumaSpec {
                id: 0,
                cpus: cpulist_of(&[(0, 55), (112, 167)]),
                distances: vec![10, 21],
            },
            NumaSpec {
                id: 1,
                cpus: cpulist_of(&[(56, 111), (168, 223)]),
                distances: vec![21, 10],
            },
        ],
        host_bridges,
        functions: fns,
        node,
    };
    number_iommu_groups(&mut spec);
    spec
}

/// Host-bridge bus and NUMA node of the four top-level switches of [`dgx_a100`], in GPU-pair
/// order (GPU0/1 on NUMA 3, GPU2/3 on 1, GPU4/5 on 7, GPU6/7 on 5, as the published matrix).
pub const DGX_GROUPS: [(u8, u32); 4] = [(0x00, 3), (0x40, 1), (0x80, 7), (0xb0, 5)];

/// GPU `i` of [`dgx_a100`].
pub fn dgx_gpu(i: usize) -> Bdf {
    let (bus, _) = DGX_GROUPS[i / 2];
    b(0, bus + 5 + 4 * (i % 2) as u8, 0, 0)
}

/// Compute NIC `mlx5_i` of [`dgx_a100`] (i < 8).
pub fn dgx_nic(i: usize) -> Bdf {
    let (bus, _) = DGX_GROUPS[i / 2];
    b(0, bus + 6 + 4 * (i % 2) as u8, 0, 0)
}

/// A DGX A100: 2 AMD EPYC 7742 (Rome) sockets in NPS4 (8 NUMA nodes, 64 cores, SMT); four
/// top-level Broadcom PEX switches, each with two second-level switches holding one A100
/// (10de:20b0) and one ConnectX-6 (15b3:101b, `mlx5_0..7`, IB HDR) each, Gen4 x16; a dual-port
/// ConnectX-6 storage NIC (`mlx5_8`, `mlx5_9`, RoCE) on its own root port. Reproduces the
/// published matrix: PXB from a GPU to both NICs of its top-level switch, SYS elsewhere.
pub fn dgx_a100() -> Spec {
    let gen4 = Link::full(16.0, 16);
    let mut fns = Vec::new();
    let mut host_bridges = Vec::new();
    for (g, &(bus, numa)) in DGX_GROUPS.iter().enumerate() {
        host_bridges.push(HostBridgeSpec {
            domain: 0,
            bus,
            numa_node: Some(numa),
        });
        fns.push(host_fn(b(0, bus, 0, 0), 0x1022, 0x1480, 0x060000, false));
        let rp = b(0, bus, 1, 1);
        fns.push(port(rp, None, Role::RootPort, 0x1022, 0x1483, gen4));
        let usp = b(0, bus + 1, 0, 0);
        fns.push(port(
            usp,
            Some(rp),
            Role::SwitchUpstream,
            0x1000,
            0xc010,
            gen4,
        ));
        for k in 0..2u8 {
            let dsp = b(0, bus + 2, k, 0);
            fns.push(port(
                dsp,
                Some(usp),
                Role::SwitchDownstream,
                0x1000,
                0xc010,
                gen4,
            ));
            let base = bus + 3 + 4 * k;
            let usp2 = b(0, base, 0, 0);
            fns.push(port(
                usp2,
                Some(dsp),
                Role::SwitchUpstream,
                0x1000,
                0xc010,
                gen4,
            ));
            let gp = b(0, base + 1, 0, 0);
            let np = b(0, base + 1, 1, 0);
            fns.push(port(
                gp,
                Some(usp2),
                Role::SwitchDownstream,
                0x1000,
                0xc010,
                gen4,
            ));
            fns.push(port(
                np,
                Some(usp2),
                Role::SwitchDownstream,
                0x1000,
                0xc010,
                gen4,
            ));
            let i = 2 * g + k as usize;
            let mmio = 0x1_0000_0000_0000u64 + ((i as u64) << 40);
            fns.push(gpu(dgx_gpu(i), Some(gp), &A100_SXM4, gen4, mmio));
            fns.push(mlx_nic(
                dgx_nic(i),
                Some(np),
                0x101b,
                (&format!("mlx5_{i}"), &format!("ib{i}")),
                ("200 Gb/sec (4X HDR)", "InfiniBand"),
                gen4,
            ));
        }
    }
    // Storage NIC: one dual-port adapter, two functions, on NUMA 4's host bridge.
    host_bridges.push(HostBridgeSpec {
        domain: 0,
        bus: 0xc0,
        numa_node: Some(4),
    });
    fns.push(host_fn(b(0, 0xc0, 0, 0), 0x1022, 0x1480, 0x060000, false));
    let rp = b(0, 0xc0, 3, 1);
    fns.push(port(rp, None, Role::RootPort, 0x1022, 0x1483, gen4));
    for f in 0..2u8 {
        fns.push(mlx_nic(
            b(0, 0xc1, 0, f),
            Some(rp),
            0x101b,
            (&format!("mlx5_{}", 8 + f), &format!("enp193s0f{f}")),
            ("200 Gb/sec (4X HDR)", "Ethernet"),
            gen4,
        ));
    }
    let numa_nodes = (0..8u32)
        .map(|n| NumaSpec {
            id: n,
            cpus: cpulist_of(&[(n * 16, n * 16 + 15), (128 + n * 16, 128 + n * 16 + 15)]),
            distances: (0..8u32)
                .map(|m| {
                    if m == n {
                        10
                    } else if m / 4 == n / 4 {
                        12
                    } else {
                        32
                    }
                })
                .collect(),
        })
        .collect();
    let nv = "535.216.03";
    let mut node = peer_stack(nv, false, "23.10-3.2.2");
    node.cmdline =
        "BOOT_IMAGE=/boot/vmlinuz-5.15.0-1063-nvidia root=/dev/md0 ro iommu=pt pci=realloc=off"
            .into();
    node.iommu_units = (0..host_bridges.len())
        .map(|i| format!("ivhd{i}"))
        .collect();
    let mut spec = Spec {
        name: "dgx-a100".into(),
        machine: Machine {
            cpu_vendor: "AuthenticAMD".into(),
            cpu_model: "AMD EPYC 7742 64-Core Processor".into(),
            cpu_family: 23,
            cpu_model_number: 49,
            sockets: 2,
            cores_per_socket: 64,
            threads_per_core: 2,
            hypervisor: false,
            dmi_vendor: Some("NVIDIA".into()),
            dmi_product: Some("DGXA100 920-23687-2530-000".into()),
            memory_kib_per_node: 128 * 1024 * 1024,
        },
        numa_nodes,
        host_bridges,
        functions: fns,
        node,
    };
    number_iommu_groups(&mut spec);
    spec
}

/// A KVM/QEMU q35 guest: the `hypervisor` CPU flag, DMI `QEMU`, one H100 PCIe (10de:2331) and
/// one ConnectX-7 VF (15b3:101e) passed through, each directly under a QEMU root port
/// (1b36:000c) on bus 0; `numa_node` -1 everywhere, no ACS, no IOMMU in the guest. Mirrors
/// `topo-ground-truth/h100-pcie-kvm-vm-1gpu` (GPU–NIC = PHB, one NUMA node, CPUs 0-251).
pub fn vm_flat() -> Spec {
    let gen5 = Link::full(32.0, 16);
    let mut fns = vec![host_fn(b(0, 0, 0, 0), 0x8086, 0x29c0, 0x060000, false)];
    let rp_gpu = b(0, 0, 2, 0);
    let rp_nic = b(0, 0, 2, 1);
    for rp in [rp_gpu, rp_nic] {
        let mut p = port(rp, None, Role::RootPort, 0x1b36, 0x000c, gen5);
        p.acs_control = None;
        p.subsystem_vendor = 0x1b36;
        fns.push(p);
    }
    let mut g = gpu(
        b(0, 1, 0, 0),
        Some(rp_gpu),
        &H100_PCIE,
        gen5,
        0x380_0000_0000,
    );
    g.aer = None;
    fns.push(g);
    let mut n = mlx_nic(
        b(0, 2, 0, 0),
        Some(rp_nic),
        0x101e,
        ("mlx5_0", "ib0"),
        ("400 Gb/sec (4X NDR)", "InfiniBand"),
        gen5,
    );
    n.aer = None;
    fns.push(n);
    let nv = "575.57.08";
    let mut node = peer_stack(nv, true, "24.10-1.1.4");
    node.cmdline = "BOOT_IMAGE=/vmlinuz-6.8.0-60-generic root=/dev/vda1 ro console=ttyS0".into();
    node.iommu_default_type = None;
    Spec {
        name: "vm-flat".into(),
        machine: Machine {
            cpu_vendor: "AuthenticAMD".into(),
            cpu_model: "AMD EPYC 9654 96-Core Processor".into(),
            cpu_family: 25,
            cpu_model_number: 17,
            sockets: 1,
            cores_per_socket: 252,
            threads_per_core: 1,
            hypervisor: true,
            dmi_vendor: Some("QEMU".into()),
            dmi_product: Some("Standard PC (Q35 + ICH9, 2009)".into()),
            memory_kib_per_node: 1536 * 1024 * 1024,
        },
        numa_nodes: vec![NumaSpec {
            id: 0,
            cpus: "0-251".into(),
            distances: vec![10],
        }],
        host_bridges: vec![HostBridgeSpec {
            domain: 0,
            bus: 0,
            numa_node: None,
        }],
        functions: fns,
        node,
    }
}

/// A small VM like the sandbox these tools are built on: a host-bridge function and five
/// virtio devices (1af4:*, conventional PCI, 256-byte config) on bus 0, `eth0` on virtio-net;
/// no GPU, no RDMA, no IOMMU, one NUMA node.
pub fn virtio_vm() -> Spec {
    let mut fns = vec![host_fn(b(0, 0, 0, 0), 0x8086, 0x0d57, 0x060000, true)];
    for (dev, id, class) in [
        (1u8, 0x1045u16, 0xffff00u32),
        (2, 0x1042, 0x018000),
        (3, 0x1041, 0x020000),
        (4, 0x1053, 0xffff00),
        (5, 0x1044, 0xffff00),
    ] {
        fns.push(Function {
            bdf: b(0, 0, dev, 0),
            vendor: 0x1af4,
            device: id,
            subsystem_vendor: 0x1af4,
            subsystem_device: 0x1100,
            class,
            revision: 0x01,
            pcie: false,
            relaxed_ordering: false,
            bars: vec![Bar {
                index: 0,
                start: 0x40_0000_0000 + (u64::from(dev) << 20),
                size: 512 << 10,
                mem64: true,
                prefetchable: false,
            }],
            driver: Some("virtio-pci".into()),
            netdevs: if id == 0x1041 {
                vec![Netdev {
                    name: "eth0".into(),
                    operstate: "up".into(),
                    speed_mbps: None,
                    mtu: 1500,
                }]
            } else {
                vec![]
            },
            ..Default::default()
        });
    }
    Spec {
        name: "virtio-vm".into(),
        machine: Machine {
            cpu_vendor: "AuthenticAMD".into(),
            cpu_model: "AMD EPYC".into(),
            cpu_family: 25,
            cpu_model_number: 17,
            sockets: 1,
            cores_per_socket: 2,
            threads_per_core: 1,
            hypervisor: true,
            dmi_vendor: None,
            dmi_product: None,
            memory_kib_per_node: 4 * 1024 * 1024,
        },
        numa_nodes: vec![NumaSpec {
            id: 0,
            cpus: "0-1".into(),
            distances: vec![10],
        }],
        host_bridges: vec![HostBridgeSpec {
            domain: 0,
            bus: 0,
            numa_node: None,
        }],
        functions: fns,
        node: NodeFacts {
            cmdline: "console=ttyS0 quiet reboot=k panic=1".into(),
            ..Default::default()
        },
    }
}

/// Where [`misplaced_nic`] puts GPU3's NIC: a root port on socket 1's host bridge `e0`.
pub const MISPLACED_NIC: Bdf = Bdf {
    domain: 0,
    bus: 0xe1,
    device: 0,
    function: 0,
};

/// [`hgx_h100`] with GPU3's NIC (`mlx5_3`) moved out of GPU3's switch to a root port on a host
/// bridge of the other socket (NUMA 1), so GPU3's best NIC is SYS. GPU3's switch keeps only its
/// GPU port.
pub fn misplaced_nic() -> Spec {
    let mut s = hgx_h100();
    s.name = "misplaced-nic".into();
    let old_nic = hgx_nic(3);
    let old_port = hgx_nic_port(3);
    let mut nic = s.function(old_nic).cloned().unwrap_or_default();
    s.functions
        .retain(|f| f.bdf != old_nic && f.bdf != old_port);
    s.host_bridges.push(HostBridgeSpec {
        domain: 0,
        bus: 0xe0,
        numa_node: Some(1),
    });
    let rp = b(0, 0xe0, 1, 0);
    let mut root = port(
        rp,
        None,
        Role::RootPort,
        0x8086,
        0x352a,
        Link::full(32.0, 16),
    );
    root.slot = Some(Slot {
        name: "13".into(),
        number: 13,
    });
    s.functions.push(root);
    nic.bdf = MISPLACED_NIC;
    nic.parent = Some(rp);
    s.functions.push(nic);
    s.node
        .iommu_units
        .push(format!("dmar{}", s.node.iommu_units.len()));
    number_iommu_groups(&mut s);
    s
}

/// A synthetic tree of about `n_devices` PCI functions for benchmarks: groups of one root port,
/// one switch (upstream port + 16 downstream ports) and 16 endpoints alternating GPU and NIC
/// (34 functions per group), 14 groups per PCI domain, domains alternating between 2 NUMA
/// nodes. Up to 16,384 devices and beyond (domains are 32-bit).
pub fn scaling(n_devices: usize) -> Spec {
    let groups = n_devices.div_ceil(34).max(1);
    let gen5 = Link::full(32.0, 16);
    let mut fns = Vec::with_capacity(groups * 34);
    let mut host_bridges = Vec::new();
    let mut nic_no = 0usize;
    for g in 0..groups {
        let domain = (g / 14) as u32;
        let gi = (g % 14) as u8;
        if gi == 0 {
            host_bridges.push(HostBridgeSpec {
                domain,
                bus: 0,
                numa_node: Some(domain % 2),
            });
        }
        let base = 1 + gi * 18;
        let rp = b(domain, 0, gi + 1, 0);
        fns.push(port(rp, None, Role::RootPort, 0x8086, 0x352a, gen5));
        let usp = b(domain, base, 0, 0);
        fns.push(port(
            usp,
            Some(rp),
            Role::SwitchUpstream,
            0x1000,
            0xc030,
            gen5,
        ));
        for j in 0..16u8 {
            let dsp = b(domain, base + 1, j, 0);
            fns.push(port(
                dsp,
                Some(usp),
                Role::SwitchDownstream,
                0x1000,
                0xc030,
                gen5,
            ));
            let ep = b(domain, base + 2 + j, 0, 0);
            if j % 2 == 0 {
                let mut gpu = gpu(
                    ep,
                    Some(dsp),
                    &H100_SXM,
                    gen5,
                    0x2_0000_0000_0000 + ((g as u64 * 16 + u64::from(j)) << 38),
                );
                gpu.nvidia_model = None;
                fns.push(gpu);
            } else {
                fns.push(mlx_nic(
                    ep,
                    Some(dsp),
                    0x1021,
                    (&format!("mlx5_{nic_no}"), &format!("ib{nic_no}")),
                    ("400 Gb/sec (4X NDR)", "InfiniBand"),
                    gen5,
                ));
                nic_no += 1;
            }
        }
    }
    let mut node = peer_stack("550.127.05", true, "24.10-1.1.4");
    node.cmdline = "ro iommu=pt".into();
    node.iommu_units = vec!["dmar0".into(), "dmar1".into()];
    let mut spec = Spec {
        name: format!("scaling-{n_devices}"),
        machine: Machine {
            sockets: 2,
            cores_per_socket: 8,
            threads_per_core: 2,
            ..Default::default()
        },
        numa_nodes: vec![
            NumaSpec {
                id: 0,
                cpus: "0-7,16-23".into(),
                distances: vec![10, 21],
            },
            NumaSpec {
                id: 1,
                cpus: "8-15,24-31".into(),
                distances: vec![21, 10],
            },
        ],
        host_bridges,
        functions: fns,
        node,
    };
    number_iommu_groups(&mut spec);
    spec
}

/// The PF of [`many_vfs`].
pub const MANY_VFS_PF: Bdf = Bdf {
    domain: 0,
    bus: 0x18,
    device: 0,
    function: 0,
};

/// One ConnectX-7 PF (15b3:1021) under a root port with `n` SR-IOV VFs (15b3:101e) beside it,
/// routing IDs PF+1, PF+2, … (VFs past function 7 spill into later devices and buses, as with
/// ARI).
pub fn many_vfs(n: usize) -> Spec {
    let gen5 = Link::full(32.0, 16);
    let rp = b(0, 0x17, 1, 0);
    let mut fns = vec![port(rp, None, Role::RootPort, 0x8086, 0x352a, gen5)];
    let mut pf = mlx_nic(
        MANY_VFS_PF,
        Some(rp),
        0x1021,
        ("mlx5_0", "ib0"),
        ("400 Gb/sec (4X NDR)", "InfiniBand"),
        gen5,
    );
    pf.total_vfs = n.min(usize::from(u16::MAX)) as u16;
    pf.vf_device = 0x101e;
    fns.push(pf);
    let pf_rid = 0x18u32 << 8;
    for i in 0..n.min(0xe7ff) {
        let r = pf_rid + 1 + i as u32;
        let bdf = b(0, (r >> 8) as u8, ((r >> 3) & 0x1f) as u8, (r & 7) as u8);
        fns.push(Function {
            bdf,
            parent: Some(rp),
            vendor: 0x15b3,
            device: 0x101e,
            subsystem_vendor: 0x15b3,
            subsystem_device: 0x0041,
            class: 0x020700,
            aer: None,
            link: None,
            driver: Some("mlx5_core".into()),
            physfn: Some(MANY_VFS_PF),
            ..Default::default()
        });
    }
    let mut node = peer_stack("550.127.05", true, "24.10-1.1.4");
    node.cmdline = "ro intel_iommu=on iommu=pt".into();
    node.iommu_units = vec!["dmar0".into()];
    let mut spec = Spec {
        name: format!("many-vfs-{n}"),
        machine: Machine::default(),
        numa_nodes: vec![NumaSpec {
            id: 0,
            cpus: "0-1".into(),
            distances: vec![10],
        }],
        host_bridges: vec![HostBridgeSpec {
            domain: 0,
            bus: 0x17,
            numa_node: Some(0),
        }],
        functions: fns,
        node,
    };
    number_iommu_groups(&mut spec);
    spec
}

// ---------------------------------------------------------------------------------------------
// Fault variants.

fn find(spec: &mut Spec, bdf: Bdf) -> Result<&mut Function, SpecError> {
    spec.function_mut(bdf).ok_or(SpecError::NoSuchFunction(bdf))
}

/// Enables ACS P2P redirection (control SV|RR|CR|UF = 0x1d, what the kernel sets when an IOMMU
/// asks for isolation) on a root port or switch downstream port.
pub fn with_acs_redirect(mut spec: Spec, bdf: Bdf) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    if !matches!(f.role, Role::RootPort | Role::SwitchDownstream) {
        return Err(SpecError::Invalid(
            bdf,
            "ACS control applies to root ports and switch downstream ports".into(),
        ));
    }
    f.acs_control = Some(acs::SV | acs::RR | acs::CR | acs::UF);
    Ok(spec)
}

/// Trains the link of `bdf` down to `width` lanes (its capability stays). Both ends of the link
/// change: the port above an endpoint/upstream port, or the device below a root/downstream port.
pub fn with_link_width(mut spec: Spec, bdf: Bdf, width: u32) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    let role = f.role;
    let parent = f.parent;
    let Some(l) = f.link.as_mut() else {
        return Err(SpecError::Invalid(bdf, "function has no PCIe link".into()));
    };
    if width == 0 || width > l.max_width {
        return Err(SpecError::Invalid(
            bdf,
            format!("width x{width} is not within x1..x{}", l.max_width),
        ));
    }
    l.width = width;
    let partners: Vec<Bdf> = if matches!(role, Role::RootPort | Role::SwitchDownstream) {
        spec.children(bdf)
            .filter(|c| c.physfn.is_none())
            .map(|c| c.bdf)
            .collect()
    } else {
        parent
            .into_iter()
            .filter(|p| {
                spec.function(*p)
                    .is_some_and(|pf| matches!(pf.role, Role::RootPort | Role::SwitchDownstream))
            })
            .collect()
    };
    for p in partners {
        if let Some(l) = spec.function_mut(p).and_then(|f| f.link.as_mut()) {
            l.width = width.min(l.max_width);
        }
    }
    Ok(spec)
}

/// Sets the AER counters of `bdf`: `correctable` as `BadTLP`, `nonfatal` as `CmpltTO`, `fatal`
/// as `MalfTLP` (each file's TOTAL line is their sum).
pub fn with_aer(
    mut spec: Spec,
    bdf: Bdf,
    correctable: u64,
    nonfatal: u64,
    fatal: u64,
) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    let mut a = Aer::default();
    a.correctable.insert("BadTLP".into(), correctable);
    a.nonfatal.insert("CmpltTO".into(), nonfatal);
    a.fatal.insert("MalfTLP".into(), fatal);
    f.aer = Some(a);
    Ok(spec)
}

/// Sets the type of the IOMMU group of `bdf` (e.g. `DMA`, translated) for every function in it.
pub fn with_iommu_type(mut spec: Spec, bdf: Bdf, ty: &str) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    let Some(g) = f.iommu_group else {
        return Err(SpecError::Invalid(
            bdf,
            "function has no IOMMU group".into(),
        ));
    };
    for f in spec
        .functions
        .iter_mut()
        .filter(|f| f.iommu_group == Some(g))
    {
        f.iommu_type = Some(ty.to_string());
    }
    Ok(spec)
}

/// Removes the GPUDirect RDMA peer module: no `nvidia_peermem`/`nv_peer_mem` module and no
/// `memory_peers` client.
pub fn without_peer_module(mut spec: Spec) -> Spec {
    spec.node
        .modules
        .retain(|m| m.name != "nvidia_peermem" && m.name != "nv_peer_mem");
    spec.node.memory_peers.clear();
    spec
}

/// The same devices seen from inside a VM: `hypervisor` flag, DMI QEMU, `numa_node` -1, no
/// IOMMU inside the guest, no ACS capability.
pub fn as_vm(mut spec: Spec) -> Spec {
    spec.machine.hypervisor = true;
    spec.machine.dmi_vendor = Some("QEMU".into());
    spec.machine.dmi_product = Some("Standard PC (Q35 + ICH9, 2009)".into());
    for h in &mut spec.host_bridges {
        h.numa_node = None;
    }
    for f in &mut spec.functions {
        f.numa_node = None;
        f.acs_control = None;
        f.iommu_group = None;
        f.iommu_type = None;
    }
    spec.node.iommu_units.clear();
    spec.node.iommu_default_type = None;
    spec
}

/// Applies a fault given as text (the CLI's `--fault`):
/// `acs-redirect=BDF`, `link-width=BDF,W`, `aer=BDF,COR,NONFATAL,FATAL`, `iommu-type=BDF,TYPE`,
/// `no-peermem`, `vm`.
pub fn apply_fault(spec: Spec, fault: &str) -> Result<Spec, SpecError> {
    let (kind, arg) = fault.split_once('=').unwrap_or((fault, ""));
    let args: Vec<&str> = arg.split(',').map(str::trim).collect();
    let bdf = |i: usize| -> Result<Bdf, SpecError> {
        args.get(i)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| SpecError::Other(format!("fault {kind}: missing PCI address")))?
            .parse::<Bdf>()
            .map_err(|e| SpecError::Other(format!("fault {kind}: {e}")))
    };
    let num = |i: usize| -> Result<u64, SpecError> {
        args.get(i).and_then(|s| s.parse().ok()).ok_or_else(|| {
            SpecError::Other(format!("fault {kind}: argument {} must be a number", i + 1))
        })
    };
    match kind {
        "acs-redirect" => with_acs_redirect(spec, bdf(0)?),
        "link-width" => with_link_width(spec, bdf(0)?, num(1)? as u32),
        "aer" => with_aer(spec, bdf(0)?, num(1)?, num(2)?, num(3)?),
        "iommu-type" => {
            let ty = args
                .get(1)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| SpecError::Other("fault iommu-type: missing TYPE".into()))?;
            with_iommu_type(spec, bdf(0)?, ty)
        }
        "no-peermem" => Ok(without_peer_module(spec)),
        "vm" => Ok(as_vm(spec)),
        _ => Err(SpecError::Other(format!(
            "unknown fault '{kind}' (known: acs-redirect=BDF, link-width=BDF,W, aer=BDF,C,N,F, iommu-type=BDF,TYPE, no-peermem, vm)"
        ))),
    }
}
