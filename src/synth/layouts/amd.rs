//! AMD Instinct nodes: an 8× MI300X UBB server, a 4× MI300A APU node and an 8× MI50 Rome node.
//!
//! The MI300X node follows the published shape (shared/reference/amd/README.md §2.5; RCCL's
//! `topo_8p_940.xml`; ROCm's system-acceptance adjacency table): 8 GPUs on one baseboard, 4 per
//! socket, all 8 joined by xGMI in a full mesh; each GPU behind its package's own bridges
//! (`1022:1500` upstream, `1002:1501` downstream) under a Broadcom PEX89000 Gen5 switch that also
//! holds the GPU's 400G NIC (Broadcom Thor2 `14e4:1760`, `bnxt_re<i>`). The MI300A node follows
//! RCCL's `topo_4p_942.xml`: one APU per socket/NUMA node, the NIC on a root port of the same
//! host bridge, no switch. Both carry the KFD topology the amdgpu driver writes.

use super::*;
use crate::synth::AmdGpuSpec;

/// Host bridge buses of the eight GPU–NIC pairs of [`mi300x_8gpu`] (one root complex each,
/// as on AMD Genoa: four per socket).
pub const MI300X_PAIR_BUSES: [u8; 8] = [0x00, 0x20, 0x40, 0x60, 0x80, 0xa0, 0xc0, 0xe0];

/// The MI300X of pair `i` in [`mi300x_8gpu`].
pub fn mi300x_gpu(i: usize) -> Bdf {
    b(0, MI300X_PAIR_BUSES[i] + 5, 0, 0)
}

/// The Thor2 NIC (`bnxt_re<i>`) of pair `i` in [`mi300x_8gpu`].
pub fn mi300x_nic(i: usize) -> Bdf {
    b(0, MI300X_PAIR_BUSES[i] + 6, 0, 0)
}

/// The package's own bridges above GPU `i` (`1022:1500` upstream, `1002:1501` downstream).
pub fn mi300x_gpu_bridges(i: usize) -> (Bdf, Bdf) {
    let bus = MI300X_PAIR_BUSES[i];
    (b(0, bus + 3, 0, 0), b(0, bus + 4, 0, 0))
}

/// The Broadcom switch ports of pair `i`: upstream, GPU downstream, NIC downstream.
pub fn mi300x_switch(i: usize) -> (Bdf, Bdf, Bdf) {
    let bus = MI300X_PAIR_BUSES[i];
    (
        b(0, bus + 1, 0, 0),
        b(0, bus + 2, 0, 0),
        b(0, bus + 2, 1, 0),
    )
}

/// The xGMI hive of [`mi300x_8gpu`].
pub const MI300X_HIVE: u64 = 0x5a1e_2f0c_9b3d_4e71;

/// An AMD EPYC (Genoa) root port (`1022:14ab`) on a host bridge's root bus.
fn epyc_root_port(bdf: Bdf, link: Link) -> Function {
    port(bdf, None, Role::RootPort, 0x1022, 0x14ab, link)
}

/// What amdgpu shows of an MI300X in SPX/NPS1: gfx942, 304 CUs (1216 SIMDs), 8 XCDs, 192 GiB
/// HBM3 behind a 256 GiB BAR, PCIe atomics, xGMI weight 15 at 50 GB/s to each peer (amd-smi's
/// `NUMA BW 50000-50000`).
fn mi300x_amd(render_minor: u32) -> AmdGpuSpec {
    AmdGpuSpec {
        hive_id: MI300X_HIVE,
        gfx_target_version: 90402,
        simd_count: 1216,
        num_xcc: 8,
        render_minor,
        vram_bytes: 192 << 30,
        large_bar: true,
        atomics: true,
        apu: false,
        compute_partition: Some("SPX".into()),
        memory_partition: Some("NPS1".into()),
        xgmi: (15, 50000, 50000),
        xgmi_down: Vec::new(),
    }
}

/// An AMD GPU function (`amdgpu`), processing-accelerator class as the MI300 series report.
fn amd_gpu(bdf: Bdf, parent: Bdf, device: u16, link: Link, bar0: u64, amd: AmdGpuSpec) -> Function {
    let mmio = 0x1_0000_0000_0000u64 + (u64::from(bdf.bus) << 40);
    Function {
        bdf,
        parent: Some(parent),
        vendor: 0x1002,
        device,
        subsystem_vendor: 0x1002,
        subsystem_device: device,
        class: 0x120000,
        link: Some(link),
        aer: Some(Aer::default()),
        bars: vec![
            Bar {
                index: 0,
                start: mmio,
                size: bar0,
                mem64: true,
                prefetchable: true,
            },
            Bar {
                index: 2,
                start: mmio + bar0,
                size: 2 << 20,
                mem64: true,
                prefetchable: true,
            },
            Bar {
                index: 5,
                start: 0xb000_0000 + (u64::from(bdf.bus) << 20),
                size: 512 << 10,
                mem64: false,
                prefetchable: false,
            },
        ],
        driver: Some("amdgpu".into()),
        amd: Some(amd),
        ..Default::default()
    }
}

/// A Broadcom BCM57608 (Thor2) 400G Ethernet NIC with its RoCE device `bnxt_re<i>`.
fn thor2(bdf: Bdf, parent: Bdf, i: usize, link: Link) -> Function {
    Function {
        bdf,
        parent: Some(parent),
        vendor: 0x14e4,
        device: 0x1760,
        subsystem_vendor: 0x14e4,
        subsystem_device: 0x9120,
        class: 0x020000,
        revision: 0x11,
        link: Some(link),
        aer: Some(Aer::default()),
        bars: vec![Bar {
            index: 0,
            start: 0x3000_0000_0000 + (u64::from(bdf.bus) << 32),
            size: 2 << 20,
            mem64: true,
            prefetchable: true,
        }],
        driver: Some("bnxt_en".into()),
        rdma: vec![Rdma {
            name: format!("bnxt_re{i}"),
            fw_ver: "230.2.49.0".into(),
            hca_type: "".into(),
            board_id: "BCM957608".into(),
            ports: vec![RdmaPort {
                port: 1,
                state: 4,
                phys_state: 5,
                rate: "400 Gb/sec (4X NDR)".into(),
                link_layer: "Ethernet".into(),
            }],
        }],
        netdevs: vec![Netdev {
            name: format!("ens{}np0", 10 + i),
            operstate: "up".into(),
            speed_mbps: Some(400_000),
            mtu: 9000,
        }],
        ..Default::default()
    }
}

/// The ROCm peer-memory stack: amdgpu (and its amdkfd peer-memory client, registered through
/// the RDMA stack's peer-memory API), ib_core and the NIC's RDMA driver.
fn rocm_stack(nic_module: &str) -> NodeFacts {
    NodeFacts {
        iommu_default_type: Some("identity".into()),
        modules: vec![
            Module {
                name: "amdgpu".into(),
                version: Some("6.10.5".into()),
            },
            Module {
                name: "ib_core".into(),
                version: None,
            },
            Module {
                name: nic_module.into(),
                version: None,
            },
        ],
        memory_peers: vec![Module {
            name: "amdkfd".into(),
            version: Some("1.0".into()),
        }],
        ..NodeFacts::default()
    }
}

/// An 8× MI300X node: 2 AMD EPYC 9654 (Genoa, 96 cores, SMT) in NPS1, one root complex per
/// GPU–NIC pair (four per socket); behind each root port a Broadcom PEX89000 Gen5 switch whose
/// downstream ports hold the MI300X (behind its own `1022:1500`/`1002:1501` bridges) and a
/// Broadcom Thor2 400G NIC (`bnxt_re<i>`); all eight GPUs in one xGMI hive (full mesh). A
/// ConnectX-6 Dx front-end NIC (100G, `mlx5_0`) and two NVMe drives sit on socket 0. IOMMU in
/// pass-through, amdkfd registered as a peer-memory client.
pub fn mi300x_8gpu() -> Spec {
    let gen5 = Link::full(32.0, 16);
    let mut fns = vec![host_fn(b(0, 0, 0, 0), 0x1022, 0x14a4, 0x060000, true)];
    for (i, &bus) in MI300X_PAIR_BUSES.iter().enumerate() {
        let rp = b(0, bus, 1, 1);
        let (usp, gds, nds) = mi300x_switch(i);
        let (up, down) = mi300x_gpu_bridges(i);
        if bus != 0 {
            fns.push(host_fn(b(0, bus, 0, 0), 0x1022, 0x14a4, 0x060000, true));
        }
        fns.push(epyc_root_port(rp, gen5));
        fns.push(pex_gen5_upstream(usp, rp, gen5));
        fns.push(port(
            gds,
            Some(usp),
            Role::SwitchDownstream,
            0x1000,
            0xc030,
            gen5,
        ));
        let mut nic_port = port(nds, Some(usp), Role::SwitchDownstream, 0x1000, 0xc030, gen5);
        nic_port.slot = Some(Slot {
            name: format!("{}", 20 + i),
            number: 20 + i as u32,
        });
        fns.push(nic_port);
        let mut u = port(up, Some(gds), Role::SwitchUpstream, 0x1022, 0x1500, gen5);
        u.subsystem_vendor = 0x1022;
        u.subsystem_device = 0x1500;
        fns.push(u);
        let mut d = port(down, Some(up), Role::SwitchDownstream, 0x1002, 0x1501, gen5);
        d.subsystem_vendor = 0x1002;
        d.subsystem_device = 0x1501;
        fns.push(d);
        fns.push(amd_gpu(
            mi300x_gpu(i),
            down,
            0x74a1,
            gen5,
            256 << 30,
            mi300x_amd(128 + i as u32),
        ));
        fns.push(thor2(mi300x_nic(i), nds, i, gen5));
    }
    // Front-end NIC and NVMe on socket 0's first root complex.
    let fe_rp = b(0, 0, 3, 1);
    fns.push(epyc_root_port(fe_rp, Link::full(16.0, 16)));
    fns.push(mlx_nic(
        b(0, 0x0a, 0, 0),
        Some(fe_rp),
        0x101d,
        ("mlx5_0", "enp10s0f0np0"),
        ("100 Gb/sec (4X EDR)", "Ethernet"),
        Link::full(16.0, 16),
    ));
    for k in 0..2u8 {
        let rp = b(0, 0x40, 3, 1 + k);
        fns.push(epyc_root_port(rp, Link::full(16.0, 4)));
        fns.push(nvme(b(0, 0x4a + k, 0, 0), Some(rp), &format!("nvme{k}")));
    }
    let host_bridges = epyc_host_bridges(&MI300X_PAIR_BUSES);
    let mut node = rocm_stack("bnxt_re");
    node.cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.8.0-60-generic root=UUID=7d0c2a51-3f4e-4b8a-9c61-2e5d8f0a1b37 ro amd_iommu=on iommu=pt pci=realloc=off".into();
    node.iommu_units = ivhd_units(host_bridges.len());
    let machine = zen4_supermicro(
        ("AMD EPYC 9654 96-Core Processor", 17),
        (2, 96),
        "AS -8125GS-TNMR2",
        768,
    );
    let numa_nodes = two_socket_smt_numa(96);
    numbered(Spec {
        name: "mi300x-8gpu".into(),
        machine,
        numa_nodes,
        host_bridges,
        functions: fns,
        node,
    })
}

/// Host bridge buses of the four sockets of [`mi300a_4apu`] (RCCL's `topo_4p_942.xml` puts
/// APU `b+2` and NIC `b+1` on NUMA node `b / 0x40`).
pub const MI300A_SOCKET_BUSES: [u8; 4] = [0x00, 0x40, 0x80, 0xc0];

/// The MI300A APU of socket `i` in [`mi300a_4apu`].
pub fn mi300a_apu(i: usize) -> Bdf {
    b(0, MI300A_SOCKET_BUSES[i] + 2, 0, 0)
}

/// The NIC of socket `i` in [`mi300a_4apu`].
pub fn mi300a_nic(i: usize) -> Bdf {
    b(0, MI300A_SOCKET_BUSES[i] + 1, 0, 0)
}

/// A 4× MI300A node: four APU sockets (24 Zen 4 cores each, SMT; one NUMA node per socket),
/// each APU (`1002:74a0`) and its ConnectX-7 NIC (`mlx5_<i>`, NDR) on two root ports of the
/// socket's one host bridge, no PCIe switch (RCCL's `topo_4p_942.xml` shape; the published
/// file has HPE Cassini NICs, which expose no RDMA device peerpath reads, so ConnectX-7 stands
/// in); the APUs in one xGMI hive, each reaching its CPU over xGMI (KFD weight 13).
pub fn mi300a_4apu() -> Spec {
    let gen5 = Link::full(32.0, 16);
    let mut fns = Vec::new();
    for (i, &bus) in MI300A_SOCKET_BUSES.iter().enumerate() {
        fns.push(host_fn(b(0, bus, 0, 0), 0x1022, 0x14a4, 0x060000, true));
        let nic_rp = b(0, bus, 1, 1);
        let apu_rp = b(0, bus, 1, 2);
        fns.push(epyc_root_port(nic_rp, gen5));
        fns.push(epyc_root_port(apu_rp, gen5));
        let mut amd = mi300x_amd(128 + i as u32);
        amd.hive_id = 0x7c3a_0e41_55d2_9b08;
        amd.simd_count = 912;
        amd.num_xcc = 6;
        amd.vram_bytes = 0;
        amd.apu = true;
        amd.memory_partition = None;
        fns.push(amd_gpu(mi300a_apu(i), apu_rp, 0x74a0, gen5, 256 << 20, amd));
        fns.push(mlx_nic(
            mi300a_nic(i),
            Some(nic_rp),
            0x1021,
            (&format!("mlx5_{i}"), &format!("ib{i}")),
            ("400 Gb/sec (4X NDR)", "InfiniBand"),
            gen5,
        ));
    }
    let host_bridges: Vec<HostBridgeSpec> = MI300A_SOCKET_BUSES
        .iter()
        .enumerate()
        .map(|(i, &bus)| HostBridgeSpec {
            domain: 0,
            bus,
            numa_node: Some(i as u32),
        })
        .collect();
    let mut node = rocm_stack("mlx5_ib");
    node.cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.8.0-60-generic root=UUID=0b9e6c2d-8a41-4f57-b3e2-6d1c9a7f5e08 ro amd_iommu=on iommu=pt".into();
    node.iommu_units = (0..4).map(|i| format!("ivhd{i}")).collect();
    let numa_nodes = (0..4u32)
        .map(|i| NumaSpec {
            id: i,
            cpus: cpulist_of(&[(i * 24, i * 24 + 23), (96 + i * 24, 96 + i * 24 + 23)]),
            distances: (0..4u32).map(|j| if i == j { 10 } else { 32 }).collect(),
        })
        .collect();
    let machine = zen4_supermicro(
        ("AMD Instinct MI300A Accelerator", 144),
        (4, 24),
        "AS -2145GH-TNMR",
        128,
    );
    numbered(Spec {
        name: "mi300a-4apu".into(),
        machine,
        numa_nodes,
        host_bridges,
        functions: fns,
        node,
    })
}

/// Host bridge buses of [`mi50_rome`]: four root complexes per EPYC 7002 socket (NPS1), one
/// MI50 each.
pub const MI50_ROME_BUSES: [u8; 8] = [0x00, 0x20, 0x40, 0x60, 0x80, 0xa0, 0xc0, 0xe0];

/// The host bridge index of [`mi50_rome`] whose root complex also holds the ConnectX-6.
pub const MI50_ROME_NIC_HB: usize = 3;

/// The MI50 under host bridge `i` of [`mi50_rome`] (below its own `1002:14a0`/`1002:14a1`
/// bridges; under the NIC's host bridge the NIC takes the first bus).
pub fn mi50_gpu(i: usize) -> Bdf {
    let extra = u8::from(i == MI50_ROME_NIC_HB);
    b(0, MI50_ROME_BUSES[i] + 3 + extra, 0, 0)
}

/// The ConnectX-6 of [`mi50_rome`] (`mlx5_0`), on its own root port of host bridge
/// [`MI50_ROME_NIC_HB`].
pub fn mi50_nic() -> Bdf {
    b(0, MI50_ROME_BUSES[MI50_ROME_NIC_HB] + 1, 0, 0)
}

/// What amdgpu shows of an MI50 (Vega 20, gfx906): 60 CUs (240 SIMDs), 32 GiB HBM2, no xGMI
/// hive (PCIe only), no partition files.
fn mi50_amd(render_minor: u32) -> AmdGpuSpec {
    AmdGpuSpec {
        hive_id: 0,
        gfx_target_version: 90006,
        simd_count: 240,
        num_xcc: 1,
        render_minor,
        vram_bytes: 32 << 30,
        large_bar: true,
        atomics: true,
        apu: false,
        compute_partition: None,
        memory_partition: None,
        xgmi: (0, 0, 0),
        xgmi_down: Vec::new(),
    }
}

/// A synthesized dual AMD EPYC 7402 (Rome, family 23 model 49) node in NPS1 with 8× MI50
/// (`1002:66a1`, display class as Vega 20 reports), each on its own root port of its own root
/// complex behind the package's internal bridges (`1002:14a0` upstream, `1002:14a1`
/// downstream, as LLNL Corona's hwloc file shows them), and one ConnectX-6 (HDR, `mlx5_0`) on a
/// second root port of GPU 3's root complex: RCCL's Rome rule (`ncclTopoCheckGdr`) admits
/// GPUDirect RDMA at PHB for that GPU (GPU→CPU and NET→CPU both two links, bus numbers `6x`).
pub fn mi50_rome() -> Spec {
    let gen4 = Link::full(16.0, 16);
    let mut fns = Vec::new();
    for (i, &bus) in MI50_ROME_BUSES.iter().enumerate() {
        fns.push(host_fn(b(0, bus, 0, 0), 0x1022, 0x1480, 0x060000, true));
        let rp = b(0, bus, 3, 1);
        fns.push(port(rp, None, Role::RootPort, 0x1022, 0x1483, gen4));
        if i == MI50_ROME_NIC_HB {
            let nic_rp = b(0, bus, 1, 1);
            fns.push(port(nic_rp, None, Role::RootPort, 0x1022, 0x1483, gen4));
            fns.push(mlx_nic(
                mi50_nic(),
                Some(nic_rp),
                0x101b,
                ("mlx5_0", "ib0"),
                ("200 Gb/sec (4X HDR)", "InfiniBand"),
                gen4,
            ));
        }
        let gpu = mi50_gpu(i);
        let up = b(0, gpu.bus - 2, 0, 0);
        let down = b(0, gpu.bus - 1, 0, 0);
        fns.push(port(
            up,
            Some(rp),
            Role::SwitchUpstream,
            0x1002,
            0x14a0,
            gen4,
        ));
        let mut d = port(down, Some(up), Role::SwitchDownstream, 0x1002, 0x14a1, gen4);
        d.subsystem_vendor = 0x1002;
        d.subsystem_device = 0x14a1;
        fns.push(d);
        let mut g = amd_gpu(gpu, down, 0x66a1, gen4, 32 << 30, mi50_amd(128 + i as u32));
        g.class = 0x038000;
        g.subsystem_device = 0x0834;
        fns.push(g);
    }
    let host_bridges = epyc_host_bridges(&MI50_ROME_BUSES);
    let mut node = rocm_stack("mlx5_ib");
    node.cmdline = "BOOT_IMAGE=/boot/vmlinuz-5.15.0-105-generic root=UUID=3e9a1c07-52d4-4b8e-a6f1-9c0d2b7e4a15 ro amd_iommu=on iommu=pt".into();
    node.iommu_units = ivhd_units(host_bridges.len());
    let machine = Machine {
        cpu_family: 23,
        ..zen4_supermicro(
            ("AMD EPYC 7402 24-Core Processor", 49),
            (2, 24),
            "AS -4124GS-TNR",
            256,
        )
    };
    let numa_nodes = two_socket_smt_numa(24);
    numbered(Spec {
        name: "mi50-rome".into(),
        machine,
        numa_nodes,
        host_bridges,
        functions: fns,
        node,
    })
}

/// The CPU and board facts of a Supermicro server with Zen 4 sockets (family 25, SMT on; a
/// caller sets another family):
/// `(model name, model)`, `(sockets, cores per socket)`, the product name and the memory of
/// each NUMA node in GiB.
fn zen4_supermicro(cpu: (&str, u32), shape: (u32, u32), product: &str, gib: u64) -> Machine {
    Machine {
        cpu_vendor: "AuthenticAMD".into(),
        cpu_model: cpu.0.into(),
        cpu_family: 25,
        cpu_model_number: cpu.1,
        sockets: shape.0,
        cores_per_socket: shape.1,
        threads_per_core: 2,
        hypervisor: false,
        dmi_vendor: Some("Supermicro".into()),
        dmi_product: Some(product.into()),
        memory_kib_per_node: gib * 1024 * 1024,
        arm: None,
    }
}

/// `spec` with its IOMMU groups numbered.
fn numbered(mut spec: Spec) -> Spec {
    number_iommu_groups(&mut spec);
    spec
}

/// The NUMA nodes of a two-socket EPYC with SMT, one node per socket (NPS1) as Linux numbers
/// its CPUs: socket 0 holds cores `0..c` and their siblings `2c..3c`, socket 1 `c..2c` and
/// `3c..4c`; the SLIT distances 10 local, 32 across (the Supermicro boards these layouts copy).
fn two_socket_smt_numa(cores_per_socket: u32) -> Vec<NumaSpec> {
    let c = cores_per_socket;
    (0..2)
        .map(|socket| NumaSpec {
            id: socket,
            cpus: cpulist_of(&[
                (socket * c, socket * c + c - 1),
                (2 * c + socket * c, 2 * c + socket * c + c - 1),
            ]),
            distances: if socket == 0 {
                vec![10, 32]
            } else {
                vec![32, 10]
            },
        })
        .collect()
}

/// A two-socket EPYC's eight host bridges (one per root complex, domain 0, the buses given),
/// the first four on NUMA node 0 and the rest on node 1.
fn epyc_host_bridges(buses: &[u8; 8]) -> Vec<HostBridgeSpec> {
    buses
        .iter()
        .enumerate()
        .map(|(i, &bus)| HostBridgeSpec {
            domain: 0,
            bus,
            numa_node: Some((i / 4) as u32),
        })
        .collect()
}

/// The AMD IOMMU units (`ivhdN`), one per host bridge.
fn ivhd_units(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("ivhd{i}")).collect()
}
