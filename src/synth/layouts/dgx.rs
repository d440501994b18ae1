//! DGX A100: two-level Broadcom switches on an 8-NUMA-node AMD Rome machine.

use super::*;

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
            arm: None,
        },
        numa_nodes,
        host_bridges,
        functions: fns,
        node,
    };
    number_iommu_groups(&mut spec);
    spec
}
