//! Layouts modelled on nodes whose `nvidia-smi topo -m` was published or reported, to hold the
//! matrix's NIC numbering and the tree's link marks against them: an 8x H200 node with a bonded
//! storage NIC (`shared/reference/topo-ground-truth/h200-8gpu-9nic-bond…`), an HGX H100 with
//! udev-renamed InfiniBand and Ethernet RDMA devices and SR-IOV virtual functions (13 NICs), and
//! an HGX H100 as fielded: Gen4 NVMe drives in Gen5 slots, a Gen2 BMC bridge under a Gen3 root
//! port, an empty Gen5 slot, GPUs idle at Gen1.

use super::*;

/// Bus of the storage NIC's host bridge in [`h200_bond`]: between pair 0's NIC and pair 1's
/// (so the kernel names its ports `mlx5_1`/`mlx5_2` at boot, before pair 1's `mlx5_3`).
pub const H200_STORAGE_BUS: u8 = 0x20;

/// The dual-port storage NIC of [`h200_bond`] (function 0 carries `mlx5_bond_0`).
pub fn h200_storage_nic(function: u8) -> Bdf {
    b(0, H200_STORAGE_BUS + 1, 0, function)
}

/// 8x H200 SXM (10de:2335) with 8 ConnectX-7 compute HCAs, one per GPU under the GPU's switch,
/// and a dual-port ConnectX-7 Ethernet storage NIC on socket 0 whose two ports are bonded
/// (RoCE LAG): the kernel registered `mlx5_0`…`mlx5_9` at boot in PCI order, then replaced
/// `mlx5_1`/`mlx5_2` by `mlx5_bond_0` on the first port's function. Published legend: NIC0
/// `mlx5_0`, NIC1–NIC7 `mlx5_3`…`mlx5_9`, NIC8 `mlx5_bond_0`.
pub fn h200_bond() -> Spec {
    let mut s = hgx_h100();
    s.name = "h200-bond".into();
    for (i, &bus) in HGX_PAIR_BUSES.iter().enumerate() {
        if let Some(g) = s.function_mut(hgx_gpu(i)) {
            g.device = 0x2335;
            g.subsystem_device = 0x18be;
            g.nvidia_model = Some("NVIDIA H200".into());
        }
        let name = if i == 0 { 0 } else { i + 2 };
        if let Some(n) = s.function_mut(hgx_nic(i)) {
            n.rdma[0].name = format!("mlx5_{name}");
            n.netdevs[0].name = format!("ibp{}s0", bus + 4);
        }
    }
    let rp = b(0, H200_STORAGE_BUS, 1, 0);
    s.functions.push(xeon_root_port(rp, Link::full(32.0, 16)));
    for f in 0..2u8 {
        let mut nic = mlx_nic(
            h200_storage_nic(f),
            Some(rp),
            0x1021,
            ("mlx5_bond_0", &format!("ens1f{f}np{f}")),
            ("200 Gb/sec (4X HDR)", "Ethernet"),
            Link::full(32.0, 16),
        );
        if f == 1 {
            nic.rdma.clear(); // its port is a slave of the bond on function 0
        }
        s.functions.push(nic);
    }
    add_host_bridge(&mut s, 0, H200_STORAGE_BUS, 0);
    number_iommu_groups(&mut s);
    s
}

/// Bus of the Ethernet NIC's host bridge in [`hgx_h100_13nic`] (socket 1, after every pair).
pub const ETH_BUS: u8 = 0xd8;

/// The Ethernet NIC functions of [`hgx_h100_13nic`]: ports 0 and 1, and the three VFs of
/// port 0 (functions 2–4).
pub fn eth_fn(function: u8) -> Bdf {
    b(0, ETH_BUS + 1, 0, function)
}

/// [`hgx_h100`] with udev-renamed RDMA devices (`mlx5_ib0`…`mlx5_ib7` on the compute HCAs) and
/// a dual-port ConnectX-7 Ethernet NIC on socket 1 (`mlx5_eth0`, `mlx5_eth1`) whose first port
/// has three SR-IOV VFs with RDMA devices (`mlx5_eth2`…`mlx5_eth4`): 13 RDMA devices. Name
/// order puts `mlx5_eth0` first; nvidia-smi numbers NIC0–7 `mlx5_ib0..7`, NIC8–12
/// `mlx5_eth0..4` (registration order).
pub fn hgx_h100_13nic() -> Spec {
    let mut s = hgx_h100();
    s.name = "hgx-h100-13nic".into();
    for i in 0..8 {
        if let Some(n) = s.function_mut(hgx_nic(i)) {
            n.rdma[0].name = format!("mlx5_ib{i}");
        }
    }
    let rp = b(0, ETH_BUS, 1, 0);
    s.functions.push(xeon_root_port(rp, Link::full(32.0, 16)));
    for f in 0..5u8 {
        let mut nic = mlx_nic(
            eth_fn(f),
            Some(rp),
            if f < 2 { 0x1021 } else { 0x101e },
            (&format!("mlx5_eth{f}"), &format!("ens2f{f}np{f}")),
            ("400 Gb/sec (4X NDR)", "Ethernet"),
            Link::full(32.0, 16),
        );
        if f == 0 {
            nic.total_vfs = 8;
            nic.vf_device = 0x101e;
        }
        if f >= 2 {
            nic.physfn = Some(eth_fn(0));
            nic.link = None;
            nic.aer = None;
            nic.netdevs[0].name = format!("ens2f0v{}", f - 2);
        }
        s.functions.push(nic);
    }
    add_host_bridge(&mut s, 0, ETH_BUS, 1);
    number_iommu_groups(&mut s);
    s
}

/// The empty Gen5 x16 slot of [`hgx_h100_field`]: a root port whose link is down.
pub const FIELD_EMPTY_SLOT: Bdf = Bdf {
    domain: 0,
    bus: 0x59,
    device: 3,
    function: 0,
};

/// [`hgx_h100`] as a healthy node reads in the field: the NVMe root ports are Gen5 x4 with
/// Gen4 drives (the ports read `16.0 GT/s` of `32.0 GT/s`), the BMC's root port is Gen3 x1 with
/// the Gen2 ASPEED bridge below it, an empty Gen5 x16 slot reads width 0 and speed `Unknown`,
/// and the idle GPUs run their links at Gen1 (2.5 GT/s). Nothing here is a fault.
pub fn hgx_h100_field() -> Spec {
    let mut s = hgx_h100();
    s.name = "hgx-h100-field".into();
    for k in 0..2u8 {
        if let Some(rp) = s.function_mut(b(0, 0x59, 1 + k, 0)) {
            rp.link = Some(Link {
                speed: 16.0,
                width: 4,
                max_speed: 32.0,
                max_width: 4,
            });
        }
    }
    if let Some(rp) = s.function_mut(b(0, 0, 0x1d, 0)) {
        rp.link = Some(Link {
            speed: 5.0,
            width: 1,
            max_speed: 8.0,
            max_width: 1,
        });
    }
    for i in 0..8 {
        for bdf in [hgx_gpu(i), hgx_gpu_port(i)] {
            if let Some(l) = s.function_mut(bdf).and_then(|f| f.link.as_mut()) {
                l.speed = 2.5;
            }
        }
    }
    let mut slot = xeon_root_port(
        FIELD_EMPTY_SLOT,
        Link {
            speed: 0.0,
            width: 0,
            max_speed: 32.0,
            max_width: 16,
        },
    );
    slot.slot = Some(Slot {
        name: "20".into(),
        number: 20,
    });
    slot.secondary_bus = Some(0x5c);
    s.functions.push(slot);
    number_iommu_groups(&mut s);
    s
}
