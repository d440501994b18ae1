//! HGX B300 (8 GPUs, each behind the ConnectX-8's internal PCIe switch next to its NIC).
//!
//! Modelled on OCI's published NCCL topology of an 8× B300 node
//! (`shared/reference/realworld/oci-b300-cx8-8gpu.nccl-topo.xml`): Emerald Rapids (model 207),
//! two Broadcom PEX Gen5 levels (`1000:c030`, subsystems `0x0072` and `0x1003`, the second
//! reporting 5.0 GT/s), then the ConnectX-8 switch (`15b3:197c`) with the CX-8 function
//! (`15b3:1023`) on one downstream port and a second CX-8 switch level above the B300
//! (`10de:3182`) on the other; bus numbers as in that file. Root ports and downstream ports,
//! which NCCL's XML leaves out, are filled in the way rdma_topo's "inline" complex expects
//! them (RP → … → CX switch USP → DSP → CX NIC, and → DSP → CX switch → DSP → GPU). ACS is
//! off on every port rdma_topo configures for bare metal (`xx000x0`), so each CX complex is one
//! IOMMU group; the NIC has no ATS (rdma_topo's bare-metal signal).

use super::*;

/// Host-bridge bus of GPU–NIC pair `i` (OCI's first-level switch bus minus one).
pub const B300_BUSES: [u8; 8] = [0x07, 0x25, 0x3c, 0x53, 0x81, 0xa0, 0xb8, 0xd0];

const B300: GpuModel = GpuModel {
    device: 0x3182,
    subsystem: 0x20e6,
    name: "NVIDIA B300 SXM6 AC",
    bar1: 512 << 30,
};

/// GPU `i` of [`hgx_b300`].
pub fn b300_gpu(i: usize) -> Bdf {
    b(0, B300_BUSES[i] + 13, 0, 0)
}
/// ConnectX-8 function (`mlx5_i`) of pair `i`.
pub fn b300_nic(i: usize) -> Bdf {
    b(0, B300_BUSES[i] + 10, 0, 0)
}
/// The ConnectX switch downstream port towards the NIC of pair `i`.
pub fn b300_nic_dsp(i: usize) -> Bdf {
    b(0, B300_BUSES[i] + 9, 0, 0)
}
/// The ConnectX switch downstream port towards the GPU's switch of pair `i`.
pub fn b300_gpu_dsp(i: usize) -> Bdf {
    b(0, B300_BUSES[i] + 9, 1, 0)
}
/// The root port of pair `i`.
pub fn b300_root_port(i: usize) -> Bdf {
    b(0, B300_BUSES[i], 1, 0)
}

/// A ConnectX-8 switch port (`15b3:197c`, subsystem 0): ACS with control `acs`.
fn cx_port(bdf: Bdf, parent: Bdf, role: Role, link: Link, acs: Option<u16>) -> Function {
    let mut f = port(bdf, Some(parent), role, 0x15b3, 0x197c, link);
    f.acs_control = acs;
    f
}

/// A ConnectX-8 function (`15b3:1023`) with its RDMA device, 800G, and its board's VPD.
fn cx8(bdf: Bdf, parent: Bdf, i: usize, link: Link, board: &str) -> Function {
    let mut f = mlx_nic(
        bdf,
        Some(parent),
        0x1023,
        (&format!("mlx5_{i}"), &format!("ibp{}s0", bdf.bus)),
        ("800 Gb/sec (4X XDR)", "InfiniBand"),
        link,
    );
    f.subsystem_device = 0x0101;
    if let Some(r) = f.rdma.first_mut() {
        r.hca_type = "MT4131".into();
        r.fw_ver = "40.44.1036".into();
    }
    f.vpd = Some(cx8_vpd(board, i));
    f
}

/// The VPD of a ConnectX-8 board: every function of it carries the same `V3` UUID (what
/// rdma_topo pairs a Data Direct DMA function with its NIC functions by).
pub(super) fn cx8_vpd(board: &str, i: usize) -> VpdSpec {
    VpdSpec {
        name: "NVIDIA ConnectX-8 SuperNIC".into(),
        keywords: vec![
            ("PN".into(), "900-9X81E-00EX-ST0".into()),
            ("SN".into(), format!("MT2450X{:05}", 10 + i)),
            ("V3".into(), board.into()),
        ],
    }
}

/// A board UUID for synthesized ConnectX-8 `i` of a node tagged `tag`.
pub(super) fn board_uuid(tag: u8, i: usize) -> String {
    format!("{tag:02x}{i:02x}c8d1a0b14f2e9c7d5e3f10a2b4c6d8e0")
}

/// An HGX B300 8-GPU node: 2 Emerald Rapids sockets (2 NUMA nodes, 64 cores each, SMT; OCI's CPU affinity masks); GPU–NIC
/// pair `i` behind its own root port and host bridge, two Broadcom PEX Gen5 levels, then the
/// ConnectX-8 switch: CX-8 NIC (`mlx5_i`, IB XDR 800G ACTIVE) on one port and, one CX switch
/// level deeper, the B300 (Gen6 x16); 4 pairs per socket; ACS off on the root and CX ports
/// (bare metal), one IOMMU group per pair, IOMMU in passthrough; nvidia-peermem loaded; the
/// ASPEED BMC on bus 0.
pub fn hgx_b300() -> Spec {
    let gen5 = Link::full(32.0, 16);
    let gen6 = Link::full(64.0, 16);
    let bcm_virtual = Link::full(5.0, 16);
    let mut fns = vec![host_fn(b(0, 0, 0, 0), 0x8086, 0x09a2, 0x088000, true)];
    fns.extend(aspeed_bmc(b(0, 0, 0x1d, 0), 2));
    let mut group = 0u32;
    for (i, &h) in B300_BUSES.iter().enumerate() {
        let rp = b300_root_port(i);
        let l1u = b(0, h + 1, 0, 0);
        let l1d = b(0, h + 2, 0, 0);
        let l2u = b(0, h + 6, 0, 0);
        let l2d = b(0, h + 7, 0, 0);
        let cxu = b(0, h + 8, 0, 0);
        let cxu2 = b(0, h + 11, 0, 0);
        let cxd2 = b(0, h + 12, 0, 0);
        let mut root = xeon_root_port(rp, gen5);
        root.mps_supported = 512;
        root.acs_control = Some(0);
        root.iommu_group = Some(group);
        group += 1;
        let mut chain = vec![root];
        let mut u1 = pex_gen5_upstream(l1u, rp, gen5);
        u1.subsystem_vendor = 0x1000;
        u1.subsystem_device = 0x0072;
        chain.push(u1);
        let mut d1 = port(
            l1d,
            Some(l1u),
            Role::SwitchDownstream,
            0x1000,
            0xc030,
            bcm_virtual,
        );
        d1.subsystem_vendor = 0x1000;
        d1.subsystem_device = 0x0072;
        chain.push(d1);
        let mut u2 = pex_gen5_upstream(l2u, l1d, bcm_virtual);
        u2.subsystem_vendor = 0x1000;
        u2.subsystem_device = 0x1003;
        chain.push(u2);
        let mut d2 = port(l2d, Some(l2u), Role::SwitchDownstream, 0x1000, 0xc030, gen5);
        d2.subsystem_vendor = 0x1000;
        d2.subsystem_device = 0x1003;
        chain.push(d2);
        chain.push(cx_port(cxu, l2d, Role::SwitchUpstream, gen5, None));
        let mut nd = cx_port(b300_nic_dsp(i), cxu, Role::SwitchDownstream, gen6, Some(0));
        nd.slot = Some(Slot {
            name: format!("{}", 20 + i),
            number: 20 + i as u32,
        });
        chain.push(nd);
        chain.push(cx_port(
            b300_gpu_dsp(i),
            cxu,
            Role::SwitchDownstream,
            gen6,
            Some(0),
        ));
        chain.push(cx_port(
            cxu2,
            b300_gpu_dsp(i),
            Role::SwitchUpstream,
            gen6,
            None,
        ));
        chain.push(cx_port(cxd2, cxu2, Role::SwitchDownstream, gen6, Some(0)));
        let mmio = 0x2_0000_0000_0000u64 + ((i as u64) << 41);
        chain.push(gpu(b300_gpu(i), Some(cxd2), &B300, gen6, mmio));
        chain.push(cx8(
            b300_nic(i),
            b300_nic_dsp(i),
            i,
            gen6,
            &board_uuid(0xb3, i),
        ));
        // No ACS isolation below the root port: the whole pair is one IOMMU group.
        for f in chain.iter_mut().skip(1) {
            f.iommu_group = Some(group);
        }
        group += 1;
        fns.extend(chain);
    }
    for f in fns.iter_mut().filter(|f| f.iommu_group.is_none()) {
        f.iommu_group = Some(group);
        group += 1;
    }
    let mut host_bridges = vec![HostBridgeSpec {
        domain: 0,
        bus: 0,
        numa_node: Some(0),
    }];
    for (i, &bus) in B300_BUSES.iter().enumerate() {
        host_bridges.push(HostBridgeSpec {
            domain: 0,
            bus,
            numa_node: Some((i / 4) as u32),
        });
    }
    let nv = "580.95.05";
    let mut node = peer_stack(nv, true, "25.04-0.6.1");
    node.cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.8.0-60-generic root=UUID=0b7e4c1a-8f2d-4e6a-9c3b-2d5f7a1e9b40 ro intel_iommu=on iommu=pt".into();
    node.iommu_units = (0..host_bridges.len())
        .map(|i| format!("dmar{i}"))
        .collect();
    Spec {
        name: "hgx-b300".into(),
        machine: Machine {
            cpu_vendor: "GenuineIntel".into(),
            cpu_model: "INTEL(R) XEON(R) PLATINUM 8592+".into(),
            cpu_family: 6,
            cpu_model_number: 207,
            sockets: 2,
            cores_per_socket: 64,
            threads_per_core: 2,
            hypervisor: false,
            dmi_vendor: None,
            dmi_product: None,
            memory_kib_per_node: 1024 * 1024 * 1024,
            arm: None,
        },
        numa_nodes: two_sockets(
            cpulist_of(&[(0, 63), (128, 191)]),
            cpulist_of(&[(64, 127), (192, 255)]),
        ),
        host_bridges,
        functions: fns,
        node,
    }
}
