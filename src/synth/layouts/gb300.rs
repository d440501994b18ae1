//! One GB300 compute tray: two Grace CPUs, four GB300 GPUs, each reached by its ConnectX-8's
//! Data Direct DMA function, and the four ConnectX-8 RDMA functions on Grace root ports.
//!
//! Modelled on OCI's published NCCL topology of two GB300 trays
//! (`shared/reference/realworld/oci-gb300-2tray-fused.nccl-topo.xml`, first tray): Grace
//! (arm64, 72 cores per NUMA node), segments `0008`, `0009` (NUMA 0) and `0018`, `0019`
//! (NUMA 1), in each the ConnectX-8 switch (`15b3:197c`, x1 at 16 GT/s towards the CPU) with the
//! Data Direct DMA function (`15b3:2100`, class `0x080100`, subsystem `0x0208`) on one port and,
//! one CX switch level deeper, the GB300 (`10de:31c2`, Gen6 x16), each GPU with a C2C link
//! (5 links). What the NCCL file leaves out is filled in as rdma_topo's DMA complex requires it
//! (Grace root port → CX USP → DSP → DMA function, and → DSP → CX USP → DSP → GPU, nothing
//! else below that root port): the root and downstream ports, Grace root-port IDs
//! (`10de:22b8`), and the RDMA functions (`15b3:1023`, `mlx5_0..3`), which NCCL's file does not
//! hold at all, are placed on Grace root ports of their own in segments `0000`, `0002`, `0010`,
//! `0012` (an assumption: no published file shows where they are). ACS is what rdma_topo sets
//! (DMA port `xx110x1`, GPU port `xx101x1`, Grace root port `xx111x0`, other CX and Grace ports
//! the kernel's `xx111x1`); the whole DMA segment is one IOMMU group; each GPU's memory is a
//! NUMA node of its own (2–5); DMA functions and RDMA functions share their board's VPD `V3`.

use super::b300::{board_uuid, cx8_vpd};
use super::*;

/// PCI domain of GPU `i`'s Data Direct segment (OCI's file).
pub const GB300_DMA_DOMAINS: [u32; 4] = [0x0008, 0x0009, 0x0018, 0x0019];
/// PCI domain of the RDMA function of ConnectX-8 `i` (assumed; see the module doc).
pub const GB300_NIC_DOMAINS: [u32; 4] = [0x0000, 0x0002, 0x0010, 0x0012];

const GB300: GpuModel = GpuModel {
    device: 0x31c2,
    subsystem: 0x21f1,
    name: "NVIDIA GB300",
    bar1: 512 << 30,
};

/// GPU `i` of [`gb300_tray`].
pub fn gb300_gpu(i: usize) -> Bdf {
    b(GB300_DMA_DOMAINS[i], 6, 0, 0)
}
/// Data Direct DMA function of ConnectX-8 `i`.
pub fn gb300_dma(i: usize) -> Bdf {
    b(GB300_DMA_DOMAINS[i], 3, 0, 0)
}
/// The CX switch downstream port towards DMA function `i` (ACS `xx110x1` required).
pub fn gb300_dma_dsp(i: usize) -> Bdf {
    b(GB300_DMA_DOMAINS[i], 2, 0, 0)
}
/// The CX switch downstream port towards GPU `i`'s switch (ACS `xx101x1` required).
pub fn gb300_gpu_dsp(i: usize) -> Bdf {
    b(GB300_DMA_DOMAINS[i], 2, 1, 0)
}
/// The Grace root port above DMA segment `i` (ACS `xx111x0` required).
pub fn gb300_dma_root_port(i: usize) -> Bdf {
    b(GB300_DMA_DOMAINS[i], 0, 0, 0)
}
/// RDMA function (`mlx5_i`) of ConnectX-8 `i`.
pub fn gb300_nic(i: usize) -> Bdf {
    b(GB300_NIC_DOMAINS[i], 1, 0, 0)
}

use crate::model::pci_config::acs::{CR, RR, SV, UF};

/// ACS control rdma_topo sets on the DMA function's downstream port: UF, CR, SV on; RR off.
pub const ACS_DMA_PORT: u16 = UF | CR | SV;
/// ... on the GPU's downstream port in the shared switch: UF, RR, SV on; CR off.
pub const ACS_GPU_PORT: u16 = UF | RR | SV;
/// ... on the Grace root port above a DMA segment: UF, CR, RR on; SV off.
pub const ACS_DMA_ROOT_PORT: u16 = UF | CR | RR;
/// The kernel's isolating default (UF, CR, RR, SV) on every other CX and Grace port.
pub const ACS_KERNEL_DEFAULT: u16 = UF | CR | RR | SV;

fn grace_rp(bdf: Bdf, link: Link, acs: u16) -> Function {
    let mut f = port(bdf, None, Role::RootPort, 0x10de, 0x22b8, link);
    f.acs_control = Some(acs);
    f
}

fn cx_port(bdf: Bdf, parent: Bdf, role: Role, link: Link, acs: Option<u16>) -> Function {
    let mut f = port(bdf, Some(parent), role, 0x15b3, 0x197c, link);
    f.acs_control = acs;
    f
}

/// One GB300 compute tray (see the module doc): 2 Grace CPUs (NUMA 0, 1; 72 Neoverse V2 cores
/// each), 4 GB300 GPUs (NVLink 18 into the NVSwitch fabric, C2C to their Grace, memory as NUMA
/// nodes 2–5), 4 ConnectX-8 (IB XDR 800G ACTIVE) whose GPU traffic takes a Data Direct DMA
/// function next to their GPU; SMMUv3 in passthrough (`identity`), nvidia-peermem loaded.
pub fn gb300_tray() -> Spec {
    let mut fns = Vec::new();
    let mut group = 0u32;
    let mut host_bridges = Vec::new();
    for i in 0..4 {
        let numa = Some((i / 2) as u32);
        host_bridges.push(HostBridgeSpec {
            domain: GB300_DMA_DOMAINS[i],
            bus: 0,
            numa_node: numa,
        });
        fns.extend(dma_segment(i, &mut group));
        host_bridges.push(HostBridgeSpec {
            domain: GB300_NIC_DOMAINS[i],
            bus: 0,
            numa_node: numa,
        });
        fns.extend(nic_segment(i, &mut group));
    }
    host_bridges.sort_by_key(|h| (h.domain, h.bus));
    Spec {
        name: "gb300-tray".into(),
        machine: grace_pair(),
        numa_nodes: gb300_numa_nodes(),
        host_bridges,
        functions: fns,
        node: gb300_node(),
    }
}

/// GPU `i`'s Data Direct segment: the Grace root port (an IOMMU group of its own), then in one
/// group the CX switch with the DMA function on one port and, one CX level deeper, the GPU.
fn dma_segment(i: usize, group: &mut u32) -> Vec<Function> {
    let gen6 = Link::full(64.0, 16);
    let x1 = Link::full(16.0, 1);
    let d = GB300_DMA_DOMAINS[i];
    let rp = gb300_dma_root_port(i);
    let usp = b(d, 1, 0, 0);
    let usp2 = b(d, 4, 0, 0);
    let dsp2 = b(d, 5, 0, 0);
    let mut root = grace_rp(rp, x1, ACS_DMA_ROOT_PORT);
    root.iommu_group = Some(*group);
    *group += 1;
    let mut seg = vec![
        cx_port(usp, rp, Role::SwitchUpstream, x1, None),
        cx_port(
            gb300_dma_dsp(i),
            usp,
            Role::SwitchDownstream,
            gen6,
            Some(ACS_DMA_PORT),
        ),
        cx_port(
            gb300_gpu_dsp(i),
            usp,
            Role::SwitchDownstream,
            gen6,
            Some(ACS_GPU_PORT),
        ),
        cx_port(usp2, gb300_gpu_dsp(i), Role::SwitchUpstream, gen6, None),
        cx_port(
            dsp2,
            usp2,
            Role::SwitchDownstream,
            gen6,
            Some(ACS_KERNEL_DEFAULT),
        ),
        Function {
            bdf: gb300_dma(i),
            parent: Some(gb300_dma_dsp(i)),
            vendor: 0x15b3,
            device: 0x2100,
            subsystem_vendor: 0x15b3,
            subsystem_device: 0x0208,
            class: 0x080100,
            link: Some(gen6),
            aer: Some(Aer::default()),
            bars: vec![Bar {
                index: 0,
                start: 0x4000_0000_0000 + (u64::from(d) << 36),
                size: 32 << 20,
                mem64: true,
                prefetchable: true,
            }],
            driver: Some("mlx5_ib".into()),
            vpd: Some(cx8_vpd(&board_uuid(0x3b, i), i)),
            ..Default::default()
        },
    ];
    let mut g = gpu(
        gb300_gpu(i),
        Some(dsp2),
        &GB300,
        gen6,
        0x6000_0000_0000 + (u64::from(d) << 40),
    );
    g.gpu_memory_numa = Some(2 + i as u32);
    seg.push(g);
    // ACS SV is off on the root port: everything below it is one IOMMU group.
    for f in seg.iter_mut() {
        f.iommu_group = Some(*group);
    }
    *group += 1;
    let mut fns = vec![root];
    fns.extend(seg);
    fns
}

/// ConnectX-8 `i`'s RDMA function on a Grace root port of its own (each its own IOMMU group).
fn nic_segment(i: usize, group: &mut u32) -> Vec<Function> {
    let gen5 = Link::full(32.0, 16);
    let pd = GB300_NIC_DOMAINS[i];
    let mut fns = Vec::new();
    let prp = b(pd, 0, 0, 0);
    let mut root = grace_rp(prp, gen5, ACS_KERNEL_DEFAULT);
    root.iommu_group = Some(*group);
    *group += 1;
    fns.push(root);
    let mut nic = mlx_nic(
        gb300_nic(i),
        Some(prp),
        0x1023,
        (&format!("mlx5_{i}"), &format!("ibP{pd}p1s0")),
        ("800 Gb/sec (4X XDR)", "InfiniBand"),
        gen5,
    );
    nic.subsystem_device = 0x0101;
    if let Some(r) = nic.rdma.first_mut() {
        r.hca_type = "MT4131".into();
        r.fw_ver = "40.44.1036".into();
    }
    nic.vpd = Some(cx8_vpd(&board_uuid(0x3b, i), i));
    nic.iommu_group = Some(*group);
    *group += 1;
    fns.push(nic);
    fns
}

/// The node-wide facts: NVIDIA 580 open driver with nvidia-peermem, the kernel command line
/// (SMMU passthrough) and four SMMUv3 units.
fn gb300_node() -> NodeFacts {
    let nv = "580.95.05";
    let mut node = peer_stack(nv, true, "25.04-0.6.1");
    node.cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.8.0-1030-nvidia-64k root=UUID=5e0c2a9f-3b1d-4f7e-8a6c-1d2e3f4a5b6c ro iommu.passthrough=1 init_on_alloc=0".into();
    node.iommu_units = (0..4)
        .map(|i| format!("smmu3.0x0000{:02x}0000000000", 0x10 + i))
        .collect();
    node
}

/// NUMA nodes 0–1 (the Graces) and 2–5 (each GPU's memory), with their distances.
fn gb300_numa_nodes() -> Vec<NumaSpec> {
    let grace = |n: u32, cpus: &str| NumaSpec {
        id: n,
        cpus: cpus.into(),
        distances: (0..6)
            .map(|m| match (n, m) {
                (a, b) if a == b => 10,
                (a, b) if a < 2 && b < 2 => 40,
                (a, b) if a < 2 && (b - 2) / 2 == a => 80,
                _ => 120,
            })
            .collect(),
    };
    let mut numa_nodes = vec![grace(0, "0-71"), grace(1, "72-143")];
    for g in 2..6u32 {
        numa_nodes.push(NumaSpec {
            id: g,
            cpus: String::new(),
            distances: (0..6)
                .map(|m| match m {
                    m if m == g => 10,
                    m if m < 2 && (g - 2) / 2 == m => 80,
                    _ => 120,
                })
                .collect(),
        });
    }
    numa_nodes
}

/// Two Grace CPUs (Neoverse V2, 72 cores each), 480 GiB per NUMA node.
fn grace_pair() -> Machine {
    Machine {
        cpu_vendor: String::new(),
        cpu_model: String::new(),
        cpu_family: 0,
        cpu_model_number: 0,
        sockets: 2,
        cores_per_socket: 72,
        threads_per_core: 1,
        hypervisor: false,
        dmi_vendor: None,
        dmi_product: None,
        memory_kib_per_node: 480 * 1024 * 1024,
        arm: Some(crate::synth::ArmCpu {
            implementer: 0x41,
            part: 0xd4f,
        }),
    }
}
