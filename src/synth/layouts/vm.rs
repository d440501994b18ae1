//! Virtual machines: a KVM guest with a passed-through GPU and NIC VF, and a virtio-only VM.

use super::*;

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
            arm: None,
        },
        numa_nodes: one_numa("0-251"),
        host_bridges: host_bridge_on(0, None),
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
            arm: None,
        },
        numa_nodes: one_numa("0-1"),
        host_bridges: host_bridge_on(0, None),
        functions: fns,
        node: NodeFacts {
            cmdline: "console=ttyS0 quiet reboot=k panic=1".into(),
            ..Default::default()
        },
    }
}
