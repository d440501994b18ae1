//! HGX H100 (8 GPUs, one Broadcom switch per GPU–NIC pair) and its misplaced-NIC variant.

use super::*;

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
        let mut root = xeon_root_port(rp, gen5);
        root.mps_supported = 512;
        fns.push(root);
        fns.push(pex_gen5_upstream(usp, rp, gen5));
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
        fns.push(xeon_root_port(rp, Link::full(16.0, 4)));
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
            arm: None,
        },
        numa_nodes: two_sockets(
            cpulist_of(&[(0, 55), (112, 167)]),
            cpulist_of(&[(56, 111), (168, 223)]),
        ),
        host_bridges,
        functions: fns,
        node,
    };
    number_iommu_groups(&mut spec);
    spec
}

/// Where [`misplaced_nic`] puts GPU3's NIC: a root port on socket 1's host bridge `e0`.
pub const MISPLACED_NIC: Bdf = Bdf {
    domain: 0,
    bus: 0xe1,
    device: 0,
    function: 0,
};

/// [`hgx_h100`] with GPU3's NIC (`mlx5_3`) moved out of GPU3's switch to a root port on a host
/// bridge of the other socket (NUMA 1), so GPU3's best NIC is SYS. GPU3's switch keeps its GPU
/// port and the NIC's empty downstream port (link down), where the card belongs.
pub fn misplaced_nic() -> Spec {
    let mut s = hgx_h100();
    s.name = "misplaced-nic".into();
    let old_nic = hgx_nic(3);
    let old_port = hgx_nic_port(3);
    let mut nic = s.function(old_nic).cloned().unwrap_or_default();
    s.functions.retain(|f| f.bdf != old_nic);
    // The switch's downstream port stays, empty, its link down (as sysfs shows a slot whose
    // card was taken out): the place the NIC belongs.
    if let Some(port) = s.function_mut(old_port) {
        if let Some(l) = port.link.as_mut() {
            // Link down: width 0, speed `Unknown` (as the empty slot of hgx-h100-field).
            l.width = 0;
            l.speed = 0.0;
        }
        // The empty port keeps its bus range: the secondary bus the card was on.
        port.secondary_bus = Some(old_nic.bus);
    }
    add_host_bridge(&mut s, 0, 0xe0, 1);
    let rp = b(0, 0xe0, 1, 0);
    let mut root = xeon_root_port(rp, Link::full(32.0, 16));
    root.slot = Some(Slot {
        name: "13".into(),
        number: 13,
    });
    s.functions.push(root);
    nic.bdf = MISPLACED_NIC;
    nic.parent = Some(rp);
    s.functions.push(nic);
    number_iommu_groups(&mut s);
    s
}
