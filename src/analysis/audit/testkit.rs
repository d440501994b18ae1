//! Topologies built in code for the audit's unit tests: an HGX-like node (two sockets, a PCIe
//! switch per root port with one GPU, one NIC and one free downstream port) that every fault
//! test edits one fact of.

use crate::model::aer::AerCounters;
use crate::model::bar::Bar;
use crate::model::device::{Device, LinkInfo, OsDevice, OsDeviceKind, RdmaPort};
use crate::model::pci_config::{AcsCap, ConfigSpace, PcieCap, PortType};
use crate::model::{Bdf, Fact, MachineInfo, NumaNode, SourceInfo, Topology};

/// Parses a PCI address (test input, known to be valid).
pub fn b(s: &str) -> Bdf {
    s.parse().unwrap()
}

fn config(port_type: PortType, class: u32, header_type: u8, acs: Option<u16>) -> ConfigSpace {
    ConfigSpace {
        len: 4096,
        vendor_id: 0,
        device_id: 0,
        class,
        header_type,
        multifunction: false,
        bridge_buses: None,
        pcie: Some(PcieCap {
            offset: 0x40,
            port_type,
            mps_supported: 512,
            mps: 256,
            mrrs: 512,
            relaxed_ordering: true,
            no_snoop: true,
            link_cap_gts: Some(32.0),
            link_cap_width: Some(16),
            link_sta_gts: Some(32.0),
            link_sta_width: Some(16),
            slot_implemented: false,
            physical_slot: None,
        }),
        ext_caps: vec![],
        acs: acs.map(|c| AcsCap {
            offset: 0x148,
            capability: 0x5f,
            control: c,
        }),
        aer_offset: Some(0x100),
        ats: None,
        sriov: None,
    }
}

fn full_link() -> Option<LinkInfo> {
    Some(LinkInfo {
        current_gts: Some(32.0),
        current_width: Some(16),
        max_gts: Some(32.0),
        max_width: Some(16),
    })
}

fn zero_aer() -> Option<AerCounters> {
    Some(AerCounters {
        counters: vec![],
        zero_counters: 2,
        total: Some(0),
    })
}

/// A device of a kind with clean facts.
pub fn device(
    bdf: &str,
    parent: Option<&str>,
    hb: &str,
    pt: PortType,
    class: u32,
    vendor: u16,
    numa: u32,
) -> Device {
    let bdf = b(bdf);
    let mut d = Device::new(bdf, hb.to_string(), format!("sys/devices/{hb}/{bdf}"));
    d.parent = parent.map(b);
    d.class = class;
    d.vendor_id = Some(vendor);
    d.device_id = Some(0x1234);
    d.kind = crate::model::device::kind_from_class(class, Some(vendor), d.device_id);
    let bridge = class >> 8 == 0x0604;
    let acs = matches!(pt, PortType::RootPort | PortType::SwitchDownstream).then_some(0x0001u16);
    d.config = Some(config(pt, class, if bridge { 1 } else { 0 }, acs));
    d.numa_node = Some(numa);
    d.link = full_link();
    d.aer_correctable = zero_aer();
    d.aer_nonfatal = zero_aer();
    d.aer_fatal = zero_aer();
    d.iommu_group = Some(u32::from(bdf.bus));
    d.iommu_group_type = Some("identity".into());
    d
}

/// A clean HGX-like node: `n` switches (half per socket), each behind its own root port and
/// host bridge, each with a GPU (`0000:{b+3}:00.0`), an RDMA NIC `mlx5_i` (`0000:{b+4}:00.0`)
/// and a free downstream port, where `b = 0x10 + 0x20*i`.
pub fn hgx(n: usize) -> Vec<Device> {
    let mut v = Vec::new();
    for i in 0..n {
        let base = 0x10 + 0x20 * i as u32;
        let numa = (i * 2 / n.max(1)) as u32;
        let hb = format!("pci0000:{base:02x}");
        let rp = format!("0000:{base:02x}:01.0");
        let usp = format!("0000:{:02x}:00.0", base + 1);
        let dsp = |k: u32| format!("0000:{:02x}:{k:02x}.0", base + 2);
        let gpu = format!("0000:{:02x}:00.0", base + 3);
        let nic = format!("0000:{:02x}:00.0", base + 4);
        v.push(device(
            &rp,
            None,
            &hb,
            PortType::RootPort,
            0x060400,
            0x8086,
            numa,
        ));
        v.push(device(
            &usp,
            Some(&rp),
            &hb,
            PortType::SwitchUpstream,
            0x060400,
            0x10b5,
            numa,
        ));
        for k in 0..3 {
            v.push(device(
                &dsp(k),
                Some(&usp),
                &hb,
                PortType::SwitchDownstream,
                0x060400,
                0x10b5,
                numa,
            ));
        }
        let mut g = device(
            &gpu,
            Some(&dsp(0)),
            &hb,
            PortType::Endpoint,
            0x030200,
            0x10de,
            numa,
        );
        g.bars = vec![
            Bar {
                index: 0,
                size: 16 << 20,
                memory: true,
                prefetchable: false,
                is_64bit: false,
            },
            Bar {
                index: 1,
                size: 128 << 30,
                memory: true,
                prefetchable: true,
                is_64bit: true,
            },
        ];
        v.push(g);
        let mut n = device(
            &nic,
            Some(&dsp(1)),
            &hb,
            PortType::Endpoint,
            0x020700,
            0x15b3,
            numa,
        );
        n.device_id = Some(0x1021);
        let mut od = OsDevice::new(OsDeviceKind::Rdma, format!("mlx5_{i}"));
        od.ports.push(RdmaPort {
            port: 1,
            state: Some((4, "ACTIVE".into())),
            phys_state: Some((5, "LinkUp".into())),
            rate_gbps: Some(400.0),
            rate_text: Some("400 Gb/sec (4X NDR)".into()),
            link_layer: Some("InfiniBand".into()),
        });
        n.os_devices.push(od);
        v.push(n);
    }
    v
}

/// Clean machine facts: bare metal, IOMMU in passthrough, nvidia-peermem registered, one
/// driver version everywhere.
pub fn machine() -> MachineInfo {
    MachineInfo {
        sockets: Some(2),
        kernel_cmdline: Fact::Known("ro quiet iommu=pt".into()),
        iommu_units: Fact::Known(vec!["dmar0".into()]),
        nvidia_driver: Some(
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build"
                .into(),
        ),
        nvidia_module_version: Some("570.86.15".into()),
        nvidia_peermem_version: Some("570.86.15".into()),
        memory_peers: vec![("nv_mem".into(), Some("570.86.15".into()))],
        ib_core_loaded: true,
        modules_visible: true,
        mm_visible: true,
        ..MachineInfo::default()
    }
}

/// Assembles a topology from devices and machine facts (structure inferred as the scanner does).
pub fn topo(devices: Vec<Device>, machine: MachineInfo) -> Topology {
    let numa = vec![
        NumaNode {
            id: 0,
            cpus: "0-15".into(),
            distances: vec![10, 21],
        },
        NumaNode {
            id: 1,
            cpus: "16-31".into(),
            distances: vec![21, 10],
        },
    ];
    let mut warnings = Vec::new();
    let (devices, hbs, switches) =
        crate::sources::tree::infer_structure(devices, &numa, &mut warnings);
    Topology::new(
        SourceInfo {
            kind: "test".into(),
            path: "test".into(),
            limitations: vec![],
        },
        machine,
        numa,
        hbs,
        devices,
        switches,
        warnings,
    )
}

/// The clean twin: [`hgx`] with 4 switches and [`machine`].
pub fn clean() -> Topology {
    topo(hgx(4), machine())
}

/// Applies an edit to one device of a device list.
pub fn edit(devs: &mut [Device], bdf: &str, f: impl FnOnce(&mut Device)) {
    let b = b(bdf);
    f(devs
        .iter_mut()
        .find(|d| d.bdf == b)
        .expect("device in fixture"));
}

/// Makes every config space 64 bytes long (what a non-root reader gets).
pub fn unprivileged(devs: &mut [Device]) {
    for d in devs {
        if let Some(c) = d.config.as_mut() {
            c.len = 64;
            c.pcie = None;
            c.acs = None;
            c.aer_offset = None;
            c.ext_caps.clear();
        }
    }
}
