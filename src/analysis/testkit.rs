//! A small in-code topology builder for tests and benchmarks: root ports, switches, endpoints
//! with class codes, NUMA nodes and NVLinks, assembled by the same structure inference the
//! sysfs scanner uses ([`crate::sources::tree::infer_structure`]). Nothing here reads a machine.

use crate::model::bdf::host_bridge_name;
use crate::model::device::kind_from_class;
use crate::model::{
    Bdf, Device, LinkInfo, MachineInfo, NumaNode, NvLink, OsDevice, OsDeviceKind, SourceInfo,
    Topology,
};
use crate::sources::tree::infer_structure;

/// Builds a [`Topology`] device by device. Addresses are given as `DDDD:BB:DD.F` strings; a
/// device without a parent hangs under host bridge `pciDDDD:BB` of its own address.
#[derive(Debug, Clone)]
pub struct TopoBuilder {
    devices: Vec<Device>,
    numa: Vec<NumaNode>,
    machine: MachineInfo,
    nvlinks: Vec<NvLink>,
    nvlink_visible: bool,
}

/// Parses a BDF literal; builder input is code, so a bad literal is a programming error.
fn bdf(s: &str) -> Bdf {
    s.parse().unwrap_or_else(|e| panic!("TopoBuilder: {e}"))
}

impl TopoBuilder {
    /// A machine with NUMA nodes whose CPU lists are given (`["0-7", "8-15"]`).
    pub fn new(numa_cpus: &[&str]) -> Self {
        TopoBuilder {
            devices: Vec::new(),
            numa: numa_cpus
                .iter()
                .enumerate()
                .map(|(i, c)| NumaNode {
                    id: i as u32,
                    cpus: c.to_string(),
                    distances: vec![],
                })
                .collect(),
            machine: MachineInfo::default(),
            nvlinks: Vec::new(),
            nvlink_visible: false,
        }
    }

    /// Sets the CPU vendor, family and model (`GenuineIntel`, 6, 143).
    pub fn cpu(mut self, vendor: &str, family: u32, model: u32) -> Self {
        self.machine.cpu_vendor = Some(vendor.to_string());
        self.machine.cpu_family = Some(family);
        self.machine.cpu_model_number = Some(model);
        self
    }

    /// Adds a PCI function with a class code and vendor/device id under `parent`.
    pub fn dev(
        &mut self,
        addr: &str,
        parent: Option<&str>,
        class: u32,
        ids: (u16, u16),
        numa: Option<u32>,
    ) -> Bdf {
        let b = bdf(addr);
        let parent = parent.map(bdf);
        let hb = match parent.and_then(|p| self.devices.iter().find(|d| d.bdf == p)) {
            Some(p) => p.host_bridge.clone(),
            None => host_bridge_name(b.domain, b.bus),
        };
        let mut d = Device::new(b, hb.clone(), format!("sys/devices/{hb}/{b}"));
        d.parent = parent;
        d.class = class;
        d.vendor_id = Some(ids.0);
        d.device_id = Some(ids.1);
        d.kind = kind_from_class(class, Some(ids.0), Some(ids.1));
        d.numa_node = numa;
        d.link = Some(LinkInfo {
            current_gts: Some(16.0),
            current_width: Some(16),
            max_gts: Some(16.0),
            max_width: Some(16),
        });
        self.devices.push(d);
        b
    }

    /// A PCI bridge (root port when `parent` is `None`, switch port otherwise).
    pub fn bridge(&mut self, addr: &str, parent: Option<&str>, numa: Option<u32>) -> Bdf {
        self.dev(addr, parent, 0x060400, (0x10b5, 0x9797), numa)
    }

    /// A switch: upstream port `usp` under `parent`, and downstream ports `dsps`.
    pub fn switch(&mut self, parent: &str, usp: &str, dsps: &[&str], numa: Option<u32>) {
        self.bridge(usp, Some(parent), numa);
        for d in dsps {
            self.bridge(d, Some(usp), numa);
        }
    }

    /// Host bridge `d` (PCI domain `d`) per entry of `layout`: a root port `d:00:01.0` with one
    /// switch `d:01:00.0` of 8 downstream ports `d:02:0j.0`, and under port `j` the endpoint
    /// `d:(0x10+j):00.0` the `j`-th letter names (`G` a GPU, `N` a NIC `mlx5_<n>`, numbered
    /// across the layout). Each entry gives the host bridge's NUMA node; `numa_of(d, j)`
    /// overrides an endpoint's.
    pub fn switched_host_bridges(
        &mut self,
        layout: &[(u32, &str)],
        numa_of: impl Fn(usize, usize) -> Option<u32>,
    ) {
        let mut nic = 0;
        for (d, &(numa, eps)) in layout.iter().enumerate() {
            let rp = format!("{d:04x}:00:01.0");
            let usp = format!("{d:04x}:01:00.0");
            let dsps: Vec<String> = (0..8).map(|j| format!("{d:04x}:02:{j:02x}.0")).collect();
            self.bridge(&rp, None, Some(numa));
            let refs: Vec<&str> = dsps.iter().map(String::as_str).collect();
            self.switch(&rp, &usp, &refs, Some(numa));
            for (j, kind) in eps.chars().enumerate() {
                let ep = format!("{d:04x}:{:02x}:00.0", 0x10 + j);
                let numa = numa_of(d, j).unwrap_or(numa);
                if kind == 'G' {
                    self.gpu(&ep, Some(&dsps[j]), Some(numa));
                } else {
                    self.nic(&ep, Some(&dsps[j]), Some(numa), &[&format!("mlx5_{nic}")]);
                    nic += 1;
                }
            }
        }
    }

    /// An NVIDIA GPU (3D controller).
    pub fn gpu(&mut self, addr: &str, parent: Option<&str>, numa: Option<u32>) -> Bdf {
        self.dev(addr, parent, 0x030200, (0x10de, 0x20b0), numa)
    }

    /// A Mellanox NIC function with RDMA device names.
    pub fn nic(
        &mut self,
        addr: &str,
        parent: Option<&str>,
        numa: Option<u32>,
        rdma: &[&str],
    ) -> Bdf {
        let b = self.dev(addr, parent, 0x020700, (0x15b3, 0x101b), numa);
        if let Some(d) = self.devices.iter_mut().find(|d| d.bdf == b) {
            for r in rdma {
                d.os_devices.push(OsDevice::new(OsDeviceKind::Rdma, *r));
            }
        }
        b
    }

    /// An NVMe controller.
    pub fn nvme(&mut self, addr: &str, parent: Option<&str>, numa: Option<u32>) -> Bdf {
        self.dev(addr, parent, 0x010802, (0x144d, 0xa80a), numa)
    }

    /// Sets a device's subsystem ids (Broadcom switch signatures).
    pub fn subsystem(&mut self, addr: &str, ids: (u16, u16)) {
        let b = bdf(addr);
        if let Some(d) = self.devices.iter_mut().find(|d| d.bdf == b) {
            d.subsystem_vendor_id = Some(ids.0);
            d.subsystem_device_id = Some(ids.1);
        }
    }

    /// Sets a device's vendor and device id.
    pub fn ids(&mut self, addr: &str, ids: (u16, u16)) {
        let b = bdf(addr);
        if let Some(d) = self.devices.iter_mut().find(|d| d.bdf == b) {
            d.vendor_id = Some(ids.0);
            d.device_id = Some(ids.1);
        }
    }

    /// Sets a device's link (current and max speed in GT/s and width).
    pub fn link(&mut self, addr: &str, cur: (f64, u32), max: (f64, u32)) {
        let b = bdf(addr);
        if let Some(d) = self.devices.iter_mut().find(|d| d.bdf == b) {
            d.link = Some(LinkInfo {
                current_gts: Some(cur.0),
                current_width: Some(cur.1),
                max_gts: Some(max.0),
                max_width: Some(max.1),
            });
        }
    }

    /// NVLinks between two GPUs (`b = None`: into the NVSwitch fabric). Makes NVLink visible.
    pub fn nvlink(&mut self, a: &str, b: Option<&str>, count: u32, version: Option<u32>) {
        self.nvlinks.push(NvLink {
            a: bdf(a),
            b: b.map(bdf),
            count,
            version,
        });
        self.nvlink_visible = true;
    }

    /// Marks NVLink state as visible (NVML loaded) even without links.
    pub fn nvlink_visible(&mut self) {
        self.nvlink_visible = true;
    }

    /// Assembles the topology.
    pub fn build(self) -> Topology {
        let mut warnings = Vec::new();
        let (devices, hbs, switches) = infer_structure(self.devices, &self.numa, &mut warnings);
        let mut t = Topology::new(
            SourceInfo {
                kind: "test".into(),
                path: "builder".into(),
                limitations: vec![],
            },
            self.machine,
            self.numa,
            hbs,
            devices,
            switches,
            warnings,
        );
        t.nvlinks = self.nvlinks;
        t.nvlink_visible = self.nvlink_visible;
        t
    }
}
