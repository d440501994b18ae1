//! Synthetic trees for benchmarks and limits: a scaling tree and a PF with many VFs.

use super::*;

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
        fns.push(xeon_root_port(rp, gen5));
        let usp = b(domain, base, 0, 0);
        fns.push(pex_gen5_upstream(usp, rp, gen5));
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
        numa_nodes: two_sockets("0-7,16-23".to_string(), "8-15,24-31".to_string()),
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
    let mut fns = vec![xeon_root_port(rp, gen5)];
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
        numa_nodes: one_numa("0-1"),
        host_bridges: host_bridge_on(0x17, Some(0)),
        functions: fns,
        node,
    };
    number_iommu_groups(&mut spec);
    spec
}
