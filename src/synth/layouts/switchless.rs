//! Switchless GPU nodes built that way on purpose: no PCIe switch anywhere, every GPU and NIC
//! on a root port of the CPU, the NICs on some GPUs' host bridges. Modelled on the production
//! designs in shared/reference/platforms/platforms.md: the HPE Cray EX / Slingshot A100 node
//! (NERSC Perlmutter class: 1 EPYC, 4 A100, 4 Cassini NICs, each on its GPU's host bridge) and
//! the ALCF Polaris class (1 EPYC in NPS4, one A100 per NUMA node, two HDR NICs, each on one
//! GPU's host bridge: GPU1 and GPU3 PHB, GPU0 and GPU2 SYS, as ALCF's published matrix).

use super::*;

/// Host-bridge buses of the four NUMA nodes of both layouts, in GPU order.
const BUSES: [u8; 4] = [0xc0, 0x80, 0x40, 0x00];

/// GPU `i` of [`cray_ex_a100`] and [`polaris_a100`].
pub fn switchless_gpu(i: usize) -> Bdf {
    b(0, BUSES[i] + 2, 0, 0)
}

/// NIC slot of host bridge `i` (the NIC beside GPU `i`, when there is one).
pub fn switchless_nic(i: usize) -> Bdf {
    b(0, BUSES[i] + 1, 0, 0)
}

/// An EPYC 7003 (Milan) root port on a host bridge's root bus.
fn milan_root_port(bdf: Bdf, link: Link) -> Function {
    port(bdf, None, Role::RootPort, 0x1022, 0x1483, link)
}

/// An HPE Cassini (Slingshot 200 Gb/s) adapter, `17db:0501`: the `cxi_core` driver's CXI device
/// `cxi<i>` (the fabric device libfabric's cxi provider and NCCL's aws-ofi-nccl open) and its
/// Ethernet netdev `hsn<i>`.
fn cassini(bdf: Bdf, parent: Bdf, i: usize, link: Link) -> Function {
    Function {
        bdf,
        parent: Some(parent),
        vendor: 0x17db,
        device: 0x0501,
        subsystem_vendor: 0x17db,
        subsystem_device: 0x0000,
        class: 0x020000,
        revision: 0x02,
        link: Some(link),
        aer: Some(Aer::default()),
        bars: vec![Bar {
            index: 0,
            start: 0x2000_0000_0000 + (u64::from(bdf.bus) << 32),
            size: 64 << 20,
            mem64: true,
            prefetchable: true,
        }],
        driver: Some("cxi_core".into()),
        rdma: vec![Rdma {
            name: format!("cxi{i}"),
            fw_ver: String::new(),
            hca_type: String::new(),
            board_id: String::new(),
            ports: vec![],
        }],
        netdevs: vec![Netdev {
            name: format!("hsn{i}"),
            operstate: "up".into(),
            speed_mbps: Some(200_000),
            mtu: 9000,
        }],
        ..Default::default()
    }
}

/// The one-socket EPYC machine both layouts share: `(model name, model)`, DMI product.
fn milan(cpu: &str, cores: u32, vendor: &str, product: &str) -> Machine {
    Machine {
        cpu_vendor: "AuthenticAMD".into(),
        cpu_model: cpu.into(),
        cpu_family: 25,
        cpu_model_number: 1,
        sockets: 1,
        cores_per_socket: cores,
        threads_per_core: 2,
        hypervisor: false,
        dmi_vendor: Some(vendor.into()),
        dmi_product: Some(product.into()),
        memory_kib_per_node: 64 * 1024 * 1024,
        arm: None,
    }
}

/// Four NUMA nodes of `cores/4` cores each (NPS4), SMT siblings `cores` apart.
fn nps4(cores: u32) -> Vec<NumaSpec> {
    let q = cores / 4;
    (0..4u32)
        .map(|n| NumaSpec {
            id: n,
            cpus: cpulist_of(&[
                (n * q, n * q + q - 1),
                (cores + n * q, cores + n * q + q - 1),
            ]),
            distances: (0..4u32).map(|m| if m == n { 10 } else { 12 }).collect(),
        })
        .collect()
}

/// GPU `i` on root port 1 of host bridge `i` (NUMA node `3 - i`, as ALCF's matrix numbers
/// them), the NIC slot of host bridge `i` on root port 2 when `nic(i)` gives one.
fn build(
    name: &str,
    machine: Machine,
    cores: u32,
    mut nic: impl FnMut(usize, Bdf, Bdf, Link) -> Option<Function>,
) -> Spec {
    let gen4 = Link::full(16.0, 16);
    let mut fns = Vec::new();
    let mut host_bridges = Vec::new();
    for (i, &bus) in BUSES.iter().enumerate() {
        host_bridges.push(HostBridgeSpec {
            domain: 0,
            bus,
            numa_node: Some(3 - i as u32),
        });
        fns.push(host_fn(b(0, bus, 0, 0), 0x1022, 0x1480, 0x060000, false));
        let gpu_rp = b(0, bus, 1, 1);
        fns.push(milan_root_port(gpu_rp, gen4));
        let mmio = 0x1_0000_0000_0000u64 + ((i as u64) << 40);
        fns.push(gpu(switchless_gpu(i), Some(gpu_rp), &A100_SXM4, gen4, mmio));
        let nic_rp = b(0, bus, 1, 2);
        if let Some(f) = nic(i, switchless_nic(i), nic_rp, gen4) {
            fns.push(milan_root_port(nic_rp, gen4));
            fns.push(f);
        }
    }
    let mut node = peer_stack("550.127.05", false, "24.10-1.1.4");
    node.cmdline =
        "BOOT_IMAGE=/boot/vmlinuz-5.14.21-150500.55.65_13.0.73-cray_shasta_c root=live:LABEL=img ro amd_iommu=on iommu=pt".into();
    node.iommu_units = (0..4).map(|i| format!("ivhd{i}")).collect();
    let mut spec = Spec {
        name: name.into(),
        machine,
        numa_nodes: nps4(cores),
        host_bridges,
        functions: fns,
        node,
    };
    number_iommu_groups(&mut spec);
    spec
}

/// An HPE Cray EX Slingshot A100 node (NERSC Perlmutter class): one EPYC 7763 (Milan, 64
/// cores, NPS4), four A100 SXM4, four Cassini NICs (`cxi0..3`, `hsn0..3`), NIC `i` on GPU
/// `i`'s host bridge on its own root port: every GPU PHB to its NIC, no PCIe switch anywhere.
pub fn cray_ex_a100() -> Spec {
    build(
        "cray-ex-a100",
        milan(
            "AMD EPYC 7763 64-Core Processor",
            64,
            "HPE",
            "HPE Cray EX235n",
        ),
        64,
        |i, bdf, rp, link| Some(cassini(bdf, rp, i, link)),
    )
}

/// An ALCF Polaris-class node: one EPYC 7543P (Milan, 32 cores, NPS4), four A100 SXM4 (one per
/// NUMA node), two ConnectX-6 HDR NICs: `mlx5_0` on GPU3's host bridge and `mlx5_1` on GPU1's
/// (GPU1 and GPU3 PHB, GPU0 and GPU2 SYS, as ALCF publishes).
pub fn polaris_a100() -> Spec {
    build(
        "polaris-a100",
        milan(
            "AMD EPYC 7543P 32-Core Processor",
            32,
            "HPE",
            "ProLiant XL675d Gen10 Plus",
        ),
        32,
        |i, bdf, rp, link| {
            let k = match i {
                3 => 0,
                1 => 1,
                _ => return None,
            };
            Some(mlx_nic(
                bdf,
                Some(rp),
                0x101b,
                (&format!("mlx5_{k}"), &format!("ib{k}")),
                ("200 Gb/sec (4X HDR)", "InfiniBand"),
                link,
            ))
        },
    )
}
