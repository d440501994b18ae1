//! The NCCL topology XML source: reads `NCCL_TOPO_FILE` / `NCCL_TOPO_DUMP_FILE` documents
//! (`system` > `cpu` > `pci`… > `gpu`/`nic`; `shared/reference/classification.md` §3) into a
//! [`Topology`].
//!
//! NCCL records a device's sysfs *grandparent* as its parent, so root ports and switch
//! downstream ports never appear: a `pci` element with `pci` children is a switch, keyed by its
//! upstream port, and its children hang directly below it. This source keeps that shape: each
//! such element becomes a [`DeviceKind::SwitchUpstream`] device and a [`Switch`] with no
//! downstream ports (evidence `nccl-xml`), and the devices under it carry its switch id. NCCL
//! writes no host bridges either; one is synthesized per `cpu` element (named
//! `nccl-cpu<numaid>`).

use super::assemble::{NvLinkTally, RawTopology, Structure, assemble};
use super::xmltree::Doc;
use crate::model::bdf::Bdf;
use crate::model::device::{
    C2cLink, DataDirect, Device, DeviceKind, LinkInfo, OsDevice, OsDeviceKind, RdmaPort,
    kind_from_class,
};
use crate::model::fact::Fact;
use crate::model::topology::{
    HostBridge, HostInfo, HostScope, MachineInfo, NumaNode, SourceInfo, Topology, Warning,
};
use crate::parse::{Refusal, attr, cpulist};
use anyhow::{Result, bail};
use std::collections::{BTreeMap, HashMap};

/// What an NCCL topology XML cannot hold; copied into [`SourceInfo::limitations`].
pub const LIMITATIONS: &[&str] = &[
    "NCCL XML has no host bridges: PHB and NODE cannot be told apart (one host bridge is synthesized per cpu element, named nccl-cpu<numaid>, with domain and bus 0 meaning unknown)",
    "NCCL XML has no root ports and no switch downstream ports (NCCL records each device's sysfs grandparent): a pci element with pci children is kept as a switch upstream port with its children directly below it; Broadcom PEX switches in base mode appear as two nested levels here, which NCCL itself fuses only when building its graph",
    "link_speed/link_width are NCCL's view: for most devices the lower of the device's and its parent port's capability, for GPUs (NCCL >= 2.30) NVML's current link; they are kept as the capable (max) link and the trained (current) link is unknown",
    "only the devices NCCL kept are present (branches without a GPU or NIC of the communicator are trimmed); NICs come from the net plugin, not from PCI scanning",
    "no PCIe config space, drivers, IOMMU groups, ACS/ATS, kernel command line, loaded modules or hypervisor evidence",
    "NVLinks are known only for gpu elements (an NCCL dump); GPU-to-CPU NVLinks (POWER) cannot be represented",
];

/// Added to [`SourceInfo::limitations`] when the file holds a Data Direct NIC.
pub const DATA_DIRECT_LIMITATION: &str = "a Data Direct NIC is recorded as its DMA function (class 0x080100, nets named <dev>_dma): the RDMA function NCCL pairs it with, and that function's own path, are not in the file";

/// Added to [`SourceInfo::limitations`] when the file's PCI tree holds bridges of an invented
/// domain (`ffff:`, as the topology files Azure's HPC images ship): the tree NCCL is told, which
/// replaces the kernel's for the devices it lists, not the machine's PCIe tree.
pub const INVENTED_TREE_LIMITATION: &str = "the file's switches are invented (PCI domain ffff, as a cloud image's NCCL_TOPO_FILE writes them): this is the tree NCCL is told, which replaces the kernel's for the devices it lists, not the machine's PCIe tree; judge the machine itself from a live audit or a capture";

/// Added to [`SourceInfo::limitations`] when the file holds AMD GPUs (an RCCL topology).
pub const XGMI_LIMITATION: &str = "RCCL XML lists an xGMI pair only where rocm-smi reports it as one xGMI hop with weight 15, 41 or 13 (RCCL's own filter, rocm_smi_getLinkInfo), with count = max/min xGMI bandwidth: rocm-smi's weights, hops and bandwidths are not recorded, and GPU pairs reached over several xGMI hops (MI250X GCDs without a direct link) are absent";

/// xGMI links of the `xgmi` elements: a target that is a GPU of this file becomes an
/// [`XgmiLink`](crate::model::amd::XgmiLink) (both GPUs list the pair; assembly folds them);
/// any other target is not kept, with a warning.
fn xgmi_links(
    ctx: &mut Ctx<'_>,
    gpus: &HashMap<Bdf, Option<u32>>,
) -> Vec<crate::model::amd::XgmiLink> {
    let mut out = Vec::new();
    for (gpu, target, tclass, count, el) in std::mem::take(&mut ctx.xgmi) {
        match target.parse::<Bdf>().ok() {
            Some(t) if gpus.contains_key(&t) && t != gpu => {
                let mut x = crate::model::amd::XgmiLink::new(
                    gpu,
                    t,
                    format!(
                        "rccl-xml line {}: <xgmi target=\"{target}\" count=\"{count}\"{}> under GPU {gpu}",
                        ctx.doc.elements[el].line,
                        tclass
                            .map(|c| format!(" tclass=\"0x{c:06x}\""))
                            .unwrap_or_default()
                    ),
                );
                // RCCL writes the element only for a one-hop xGMI pair (weight 15, 41 or 13).
                x.count = Some(count);
                x.direct = Some(true);
                x.hops = Some(1);
                out.push(x);
            }
            _ => ctx.warn(
                el,
                format!(
                    "xgmi from GPU {gpu} to {target:?} ({}), which is not a GPU of this file; not kept",
                    match tclass {
                        Some(c) => format!("class 0x{c:06x}"),
                        None => "unknown class".to_string(),
                    }
                ),
            ),
        }
    }
    out
}

/// Name of the host bridge synthesized for a `cpu` element.
pub fn host_bridge_for(numaid: Option<u32>) -> String {
    match numaid {
        Some(n) => format!("nccl-cpu{n}"),
        None => "nccl-cpu-unknown".to_string(),
    }
}

/// An attribute NCCL writes: absent or empty (NCCL's way of saying unknown) is `Ok(None)`.
fn attr_value<T>(
    v: Option<&str>,
    parse: impl FnOnce(&[u8]) -> Result<T, Refusal>,
) -> Result<Option<T>, Refusal> {
    match v.map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) => parse(t.as_bytes()).map(Some),
    }
}

/// NVLink version from the GPU's compute capability × 10 (`sm`): 60 → 1 (P100), 70 → 2
/// (V100), 80/86 → 3 (A100, GA10x), 90 → 4 (H100/H200), ≥ 100 → 5 (Blackwell).
pub fn nvlink_version_of_sm(sm: u32) -> Option<u32> {
    match sm {
        60..=69 => Some(1),
        70..=79 => Some(2),
        80..=89 => Some(3),
        90..=99 => Some(4),
        100.. => Some(5),
        _ => None,
    }
}

/// Whether a net name is an RDMA device (IB/RoCE plugin) rather than a netdev (socket plugin).
fn is_rdma_name(n: &str) -> bool {
    const P: [&str; 13] = [
        "mlx", "bnxt_re", "irdma", "efa", "hfi1", "qib", "rdma", "erdma", "ionic", "cxi", "roce",
        "rxe", "siw",
    ];
    P.iter().any(|p| n.starts_with(p))
}

struct Ctx<'a> {
    doc: &'a Doc,
    devices: Vec<Device>,
    seen: HashMap<Bdf, usize>,
    warnings: Vec<Warning>,
    /// (GPU, target text, target class, count) for every `nvlink` element.
    nvlinks: Vec<(Bdf, String, Option<u32>, u32)>,
    /// NVLink version per GPU (from `sm`).
    gpu_version: HashMap<Bdf, Option<u32>>,
    any_gpu_element: bool,
    /// (GPU, target text, target class, count, element) for every `xgmi` element (RCCL).
    xgmi: Vec<(Bdf, String, Option<u32>, u32, usize)>,
    /// A `gpu` element of an AMD GPU (vendor 0x1002 or RCCL's `gcn` attribute) was read.
    amd_gpu_element: bool,
    /// A Data Direct NIC was read.
    data_direct: bool,
}

impl Ctx<'_> {
    fn warning(&self, i: usize, msg: impl Into<String>) -> Warning {
        Warning {
            path: format!(
                "line {} <{}>",
                self.doc.elements[i].line, self.doc.elements[i].name
            ),
            message: msg.into(),
        }
    }

    fn warn(&mut self, i: usize, msg: impl Into<String>) {
        let w = self.warning(i, msg);
        self.warnings.push(w);
    }

    /// Attribute `name` of element `i` through `parse`: `None` when absent or empty, and when
    /// refused (with a warning saying what was assumed).
    fn value<T>(
        &mut self,
        i: usize,
        name: &str,
        parse: impl FnOnce(&[u8]) -> Result<T, Refusal>,
        assumed: &str,
    ) -> Option<T> {
        match attr_value(self.doc.elements[i].attr(name), parse) {
            Ok(v) => v,
            Err(r) => {
                self.warn(i, format!("{name} {r}; {assumed}"));
                None
            }
        }
    }

    /// A `<c2c bw count>` element (NCCL's NVML C2C fields: per-link bandwidth in MB/s and the
    /// number of links up); `None`, with a warning, when a value is missing or not a number.
    fn c2c(&mut self, c: usize) -> Option<C2cLink> {
        let e = &self.doc.elements[c];
        let raw = format!(
            "nccl-xml <c2c bw=\"{}\" count=\"{}\">",
            e.attr("bw").unwrap_or(""),
            e.attr("count").unwrap_or("")
        );
        let bw = attr_value(e.attr("bw"), attr::uint);
        let count = attr_value(e.attr("count"), attr::uint);
        match (bw, count) {
            (Ok(Some(bw)), Ok(Some(count))) => Some(C2cLink {
                links_up: Some(count),
                links_total: None,
                link_mbytes_per_s: Some(bw),
                source: raw,
            }),
            (Err(r), _) | (_, Err(r)) => {
                self.warn(c, format!("c2c {r}; C2C link not kept"));
                None
            }
            _ => {
                self.warn(c, "c2c without bw or count; C2C link not kept");
                None
            }
        }
    }

    /// A NIC on a ConnectX-8 Data Direct DMA function (class `0x080100`, NCCL's "CX8 data
    /// direct"), or one whose nets are named `<dev>_dma` (NCCL_IB_DATA_DIRECT): the function is
    /// its own data path, and each net keeps the RDMA device it stands for (`rdma_device`).
    fn data_direct_nic(&mut self, d: &mut Device) {
        let mut dma_names = Vec::new();
        for od in d.os_devices.iter_mut() {
            if let Some(base) = od.name.strip_suffix("_dma").filter(|b| !b.is_empty()) {
                od.attrs.push(("rdma_device".into(), base.to_string()));
                dma_names.push(od.name.clone());
            }
        }
        let by_class = crate::model::parts::is_data_direct_dma(d);
        if !by_class && dma_names.is_empty() {
            return;
        }
        d.data_direct = Some(DataDirect {
            dma: d.bdf,
            evidence: match (by_class, dma_names.is_empty()) {
                (true, false) => format!(
                    "nccl-xml: pci class 0x{:06x} (CX8 data direct) carries net {}",
                    d.class,
                    dma_names.join(", ")
                ),
                (true, true) => format!(
                    "nccl-xml: pci class 0x{:06x} (CX8 data direct) carries the NIC",
                    d.class
                ),
                _ => format!(
                    "nccl-xml: net {} (NCCL's name for a Data Direct device)",
                    dma_names.join(", ")
                ),
            },
        });
        self.data_direct = true;
    }

    /// Reads one `pci` element and its subtree: the device it describes, its GPU or NIC,
    /// then its `pci` children. A second element of an address already read is merged into
    /// the first, as NCCL merges it.
    fn pci(
        &mut self,
        i: usize,
        parent: Option<Bdf>,
        hb: &str,
        numa: Option<u32>,
        cpus: &Option<Vec<u32>>,
    ) {
        let doc = self.doc;
        let e = &doc.elements[i];
        let bdf: Bdf = match attr::pci_address(e.attr("busid").unwrap_or("")) {
            Ok(b) => b,
            Err(r) => {
                self.warn(i, format!("busid {r}; element and its children skipped"));
                return;
            }
        };
        if self.seen.contains_key(&bdf) {
            // NCCL's `ncclTopoAddPci` finds the node of that bus id and adds the element's
            // children under it (topo.cc: `ncclTopoGetNode` before `ncclTopoCreateNode`): the
            // two elements are one switch, as RCCL's own model files rely on.
            let kids: Vec<usize> = doc.children_named(i, "pci").collect();
            self.warn(
                i,
                format!(
                    "duplicate busid {bdf}; merged into the first element as NCCL merges it ({} pci children read under it; its own attributes and gpu/nic not kept)",
                    kids.len()
                ),
            );
            for c in kids {
                self.pci(c, Some(bdf), hb, numa, cpus);
            }
            return;
        }
        let mut d = Device::new(bdf, hb.to_string(), format!("nccl-xml:line {}", e.line));
        d.parent = parent;
        d.numa_node = numa;
        d.local_cpus = cpus.clone();
        self.pci_attributes(i, &mut d);
        let gpu_el = doc.children_named(i, "gpu").next();
        let nic_el = doc.children_named(i, "nic").next();
        d.kind = pci_kind(
            &d,
            doc.children_named(i, "pci").next().is_some(),
            gpu_el,
            nic_el,
        );
        if let Some(g) = gpu_el {
            self.gpu(g, &mut d);
        }
        if let Some(n) = nic_el {
            for net in doc.children_named(n, "net") {
                self.net(net, &mut d);
            }
            self.data_direct_nic(&mut d);
        }
        self.seen.insert(bdf, self.devices.len());
        self.devices.push(d);
        for c in doc.children_named(i, "pci").collect::<Vec<_>>() {
            self.pci(c, Some(bdf), hb, numa, cpus);
        }
    }

    /// The class, IDs and link NCCL writes on the `pci` element `i`.
    fn pci_attributes(&mut self, i: usize, d: &mut Device) {
        d.class = self
            .value(i, "class", attr::hex_u32, "kind from children only")
            .unwrap_or(0);
        let unknown = "value treated as unknown";
        d.vendor_id = self.value(i, "vendor", attr::hex_u16, unknown);
        d.device_id = self.value(i, "device", attr::hex_u16, unknown);
        d.subsystem_vendor_id = self.value(i, "subsystem_vendor", attr::hex_u16, unknown);
        d.subsystem_device_id = self.value(i, "subsystem_device", attr::hex_u16, unknown);
        let link = LinkInfo {
            current_gts: None,
            current_width: None,
            max_gts: self.value(i, "link_speed", attr::link_speed_gts, unknown),
            max_width: self
                .value(i, "link_width", attr::link_width, unknown)
                .flatten(),
        };
        d.link = link.any().then_some(link);
    }

    /// The `gpu` element `g` of device `d`: its OS device (NVML or, for RCCL's AMD GPUs, HIP),
    /// C2C links, NVLink version (from `sm`), and its `nvlink` and `xgmi` elements.
    fn gpu(&mut self, g: usize, d: &mut Device) {
        let doc = self.doc;
        let bdf = d.bdf;
        self.any_gpu_element = true;
        let ge = &doc.elements[g];
        let dev = ge.attr("dev").unwrap_or("?");
        // RCCL writes the same element for an AMD GPU, with its `gcn` architecture.
        let amd =
            d.vendor_id == Some(crate::model::amd::AMD_GPU_VENDOR) || ge.attr("gcn").is_some();
        self.amd_gpu_element |= amd;
        let mut od = if amd {
            OsDevice::new(OsDeviceKind::AmdGpu, format!("hip{dev}"))
        } else {
            OsDevice::new(OsDeviceKind::NvidiaGpu, format!("nvml{dev}"))
        };
        for (k, v) in &ge.attrs {
            od.attrs.push((k.clone(), v.clone()));
        }
        for c in doc.children_named(g, "c2c") {
            d.c2c = self.c2c(c).or(d.c2c.take());
        }
        d.os_devices.push(od);
        let version = ge
            .attr("sm")
            .and_then(|s| s.trim().parse().ok())
            .and_then(nvlink_version_of_sm);
        self.gpu_version.insert(bdf, version);
        for l in doc.children_named(g, "nvlink") {
            self.nvlink(l, bdf);
        }
        for l in doc.children_named(g, "xgmi") {
            self.xgmi_element(l, bdf);
        }
    }

    /// One `nvlink` element `l` of GPU `bdf`, kept for the link phase when its count is
    /// above 0.
    fn nvlink(&mut self, l: usize, bdf: Bdf) {
        let doc = self.doc;
        let le = &doc.elements[l];
        let count = match attr_value(le.attr("count"), attr::uint) {
            Ok(Some(c)) if c > 0 => c,
            Ok(Some(_)) => {
                self.warn(l, "nvlink count 0; link not kept");
                return;
            }
            Ok(None) => {
                self.warn(l, "nvlink without a count; link not kept");
                return;
            }
            Err(r) => {
                self.warn(l, format!("nvlink count {r}; link not kept"));
                return;
            }
        };
        let tclass = self.value(l, "tclass", attr::hex_u32, "target class unknown");
        self.nvlinks.push((
            bdf,
            le.attr("target").unwrap_or("").to_string(),
            tclass,
            count,
        ));
    }

    /// One `xgmi` element `l` (RCCL) of GPU `bdf`, kept for the link phase when its count is
    /// above 0.
    fn xgmi_element(&mut self, l: usize, bdf: Bdf) {
        let doc = self.doc;
        let le = &doc.elements[l];
        let count = match attr_value(le.attr("count"), attr::uint) {
            Ok(Some(c)) if c > 0 => c,
            Ok(_) => {
                self.warn(l, "xgmi without a count above 0; link not kept");
                return;
            }
            Err(r) => {
                self.warn(l, format!("xgmi count {r}; link not kept"));
                return;
            }
        };
        let tclass = self.value(l, "tclass", attr::hex_u32, "target class unknown");
        self.xgmi.push((
            bdf,
            le.attr("target").unwrap_or("").to_string(),
            tclass,
            count,
            l,
        ));
    }

    /// One `net` element of the NIC on device `d`: an RDMA device (a port of one already read
    /// when the name repeats) or a network interface.
    fn net(&mut self, net: usize, d: &mut Device) {
        let doc = self.doc;
        let ne = &doc.elements[net];
        let name = ne.attr("name").unwrap_or("").to_string();
        let speed = ne
            .attr("speed")
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| *s > 0.0);
        let mut od = if is_rdma_name(&name) {
            let port = ne
                .attr("port")
                .and_then(|p| p.trim().parse().ok())
                .unwrap_or(1);
            let rp = RdmaPort {
                port,
                state: None,
                phys_state: None,
                rate_gbps: speed.map(|s| s / 1000.0),
                rate_text: None,
                link_layer: None,
            };
            // Two ports of one RDMA device (`mlx4_0` ports 1 and 2) are one device
            // with two ports; distinct names (`mlx5_0`, `mlx5_1`) stay two devices.
            if let Some(prev) = d
                .os_devices
                .iter_mut()
                .find(|o| o.kind == OsDeviceKind::Rdma && o.name == name)
            {
                if prev.ports.iter().any(|p| p.port == port) {
                    self.warn(
                        net,
                        format!("{name} port {port} listed twice; second entry not kept"),
                    );
                } else {
                    prev.ports.push(rp);
                }
                return;
            }
            let mut od = OsDevice::new(OsDeviceKind::Rdma, name);
            // NCCL's device number: its libibverbs list order, the registration order.
            od.index = ne.attr("dev").and_then(|v| v.trim().parse().ok());
            od.ports.push(rp);
            od
        } else {
            let mut od = OsDevice::new(OsDeviceKind::Net, name);
            od.speed_mbps = speed.map(|s| s as u64);
            od
        };
        for (k, v) in &ne.attrs {
            if k != "name" {
                od.attrs.push((k.clone(), v.clone()));
            }
        }
        d.os_devices.push(od);
    }
}

/// The kind of a `pci` element's device: a switch when it has `pci` children, a GPU or NIC
/// when it holds one, else by class as NCCL maps it.
fn pci_kind(
    d: &Device,
    has_pci_children: bool,
    gpu_el: Option<usize>,
    nic_el: Option<usize>,
) -> DeviceKind {
    if has_pci_children {
        DeviceKind::SwitchUpstream
    } else if gpu_el.is_some() {
        let k = kind_from_class(d.class, d.vendor_id, d.device_id);
        if k.is_compute() { k } else { DeviceKind::Gpu }
    } else if nic_el.is_some() {
        DeviceKind::Nic
    } else if d.class >> 16 == 0x03 {
        // NCCL's own mapping (kvDictPciClass): any display class is a GPU, whatever the
        // vendor (partial topology files often give no vendor at all).
        DeviceKind::Gpu
    } else if d.class >> 16 == 0x02 {
        DeviceKind::Nic
    } else {
        kind_from_class(d.class, d.vendor_id, d.device_id)
    }
}

/// Reads an NCCL topology XML document (already parsed) into a topology: [`discover`], then
/// [`assemble`] with the PCI ID database at `pci_ids`. A document fused across hosts yields
/// its first host; [`read_host`] chooses another.
pub fn read(doc: &Doc, source: SourceInfo, pci_ids: Option<&std::path::Path>) -> Result<Topology> {
    read_host(doc, source, pci_ids, None)
}

/// [`read`] for one host of a document fused across hosts (`--host`: an index in document
/// order or a `host_hash` value; `None`: the first host). The topology's
/// [`Topology::host_scope`] names every host and the one read.
pub fn read_host(
    doc: &Doc,
    source: SourceInfo,
    pci_ids: Option<&std::path::Path>,
    host: Option<&str>,
) -> Result<Topology> {
    Ok(assemble(discover_host(doc, source, host)?, pci_ids))
}

/// The hosts of a document: `cpu` element indices grouped by their `host_hash` attribute, in
/// document order (one group named `None` when no `cpu` carries one).
pub fn hosts(doc: &Doc) -> Vec<(Option<String>, Vec<usize>)> {
    let mut out: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for c in doc.children_named(0, "cpu") {
        let h = doc.elements[c]
            .attr("host_hash")
            .map(|v| v.trim().to_string());
        match out.iter_mut().find(|(n, _)| *n == h) {
            Some((_, v)) => v.push(c),
            None => out.push((h, vec![c])),
        }
    }
    out
}

/// Elements named `name` in the subtree of element `i` (itself included).
/// How many `name` elements (`gpu`, `net`) under element `i` the scan keeps: only those inside
/// a `<pci>` element. A `<nic>` directly under a `<cpu>` makes no device (NCCL dumps a socket
/// interface or a virtual NIC there, once per CPU: the scan warns and drops it), so a host
/// line never counts a NIC port the scan did not find.
fn count_kept(doc: &Doc, i: usize, name: &str, in_pci: bool) -> usize {
    let e = &doc.elements[i];
    let in_pci = in_pci || e.name == "pci";
    usize::from(in_pci && e.name == name)
        + e.children
            .iter()
            .map(|&c| count_kept(doc, c, name, in_pci))
            .sum::<usize>()
}

/// Which host `want` names among `names` (an index in input order, or a name, compared
/// case-insensitively with or without `0x`); an error listing the hosts otherwise.
pub fn select_host(names: &[String], want: &str) -> Result<usize> {
    let w = want.trim();
    if let Ok(i) = w.parse::<usize>()
        && i < names.len()
    {
        return Ok(i);
    }
    let norm = |s: &str| {
        s.trim()
            .trim_start_matches("0x")
            .trim_start_matches("0X")
            .to_ascii_lowercase()
    };
    if let Some(i) = names.iter().position(|n| norm(n) == norm(w)) {
        return Ok(i);
    }
    bail!(
        "--host {w}: no such host; this input holds {}",
        names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("host {i} ({n})"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Reads an NCCL topology XML document (already parsed) into raw facts: devices with their
/// NCCL parents, one host bridge per `cpu` element, NVLinks. Fails when the root is not
/// `<system>` or it has no `<cpu>`. A document fused across hosts yields its first host.
pub fn discover(doc: &Doc, source: SourceInfo) -> Result<RawTopology> {
    discover_host(doc, source, None)
}

/// [`discover`] for one host (see [`read_host`]).
///
/// The phases of every discovery (docs/architecture.md, "Discover, phase by phase"):
/// enumerate the host's `cpu` elements and the `pci` trees below them ([`select_cpus`],
/// [`cpu_element`]; GPUs and NICs are attached as each `pci` element is read), link the
/// NVLinks and xGMI links ([`nvlink_tally`], [`xgmi_links`]) and annotate what the file
/// could not record.
pub fn discover_host(doc: &Doc, source: SourceInfo, host: Option<&str>) -> Result<RawTopology> {
    let Some(root) = doc.root() else {
        bail!("empty document")
    };
    if root.name != "system" {
        bail!(
            "not an NCCL topology XML: root element is <{}>, expected <system>",
            root.name
        );
    }
    let mut source = source;
    source.kind = "nccl-xml".into();
    source.limitations = LIMITATIONS.iter().map(|s| s.to_string()).collect();
    let mut ctx = Ctx {
        doc,
        devices: Vec::new(),
        seen: HashMap::new(),
        warnings: Vec::new(),
        nvlinks: Vec::new(),
        gpu_version: HashMap::new(),
        any_gpu_element: false,
        xgmi: Vec::new(),
        amd_gpu_element: false,
        data_direct: false,
    };
    match root.attr("version") {
        // RCCL's dumps (ROCm/rccl#1185) write version 2 with the same elements.
        Some("1") | Some("2") => {}
        v => ctx.warnings.push(Warning {
            path: format!("line {} <system>", root.line),
            message: format!(
                "{}; NCCL writes version 1 and RCCL version 2; read with the version 1 rules",
                match v {
                    Some(v) => format!("system version {v:?}"),
                    None => "no system version".to_string(),
                }
            ),
        }),
    }
    // 1. Enumerate: the host's cpu elements, and the pci trees below them.
    let (cpu_els, host_scope) = select_cpus(doc, host)?;
    let mut node = Node {
        numa: BTreeMap::new(),
        host_bridges: Vec::new(),
        machine: MachineInfo {
            kernel_cmdline: Fact::Unknown(
                "NCCL XML does not record the kernel command line".into(),
            ),
            iommu_units: Fact::Unknown("NCCL XML does not record IOMMU units".into()),
            ..MachineInfo::default()
        },
    };
    for &c in &cpu_els {
        cpu_element(&mut ctx, c, &mut node);
    }
    // 2. Link: NVLinks, then (after the limitations NVLinks need none of) xGMI.
    let gpus: HashMap<Bdf, Option<u32>> = ctx.gpu_version.clone();
    let tally = nvlink_tally(&mut ctx, &gpus, &source.path);
    if ctx.data_direct {
        source.limitations.push(DATA_DIRECT_LIMITATION.to_string());
    }
    if ctx.devices.iter().any(|d| d.bdf.domain == 0xffff) {
        source
            .limitations
            .push(INVENTED_TREE_LIMITATION.to_string());
    }
    let xgmi = xgmi_links(&mut ctx, &gpus);
    if ctx.amd_gpu_element {
        source.limitations.push(XGMI_LIMITATION.to_string());
    }
    let mut raw = RawTopology::new(source, node.machine);
    raw.numa_nodes = node.numa.into_values().collect();
    raw.devices = ctx.devices;
    raw.structure = Structure::UpstreamOnly {
        host_bridges: node.host_bridges,
        evidence: "nccl-xml",
    };
    raw.nvlinks = tally;
    raw.nvlink_visible = ctx.any_gpu_element;
    raw.xgmi = xgmi;
    raw.xgmi_visible = ctx.amd_gpu_element;
    raw.warnings = ctx.warnings;
    raw.host_scope = host_scope;
    Ok(raw)
}

/// What the `cpu` elements give the node: its NUMA nodes, one host bridge per NUMA node,
/// and the CPU's identity.
struct Node {
    numa: BTreeMap<u32, NumaNode>,
    host_bridges: Vec<HostBridge>,
    machine: MachineInfo,
}

/// The `cpu` elements of the host `host` names (the first host when `None`), and, for a
/// document whose `cpu` elements carry `host_hash`, the scope naming every host.
fn select_cpus(doc: &Doc, host: Option<&str>) -> Result<(Vec<usize>, Option<HostScope>)> {
    let mut groups = hosts(doc);
    if groups.is_empty() {
        bail!("<system> has no <cpu> element");
    }
    let named = groups.iter().any(|(n, _)| n.is_some());
    let names: Vec<String> = groups
        .iter()
        .map(|(n, _)| n.clone().unwrap_or_else(|| "(no host_hash)".to_string()))
        .collect();
    let selected = match host {
        Some(w) => select_host(&names, w)?,
        None => 0,
    };
    let host_scope = named.then(|| HostScope {
        hosts: groups
            .iter()
            .zip(&names)
            .map(|((_, cpus), name)| HostInfo {
                name: name.clone(),
                gpus: cpus.iter().map(|&c| count_kept(doc, c, "gpu", false)).sum(),
                nics: cpus.iter().map(|&c| count_kept(doc, c, "net", false)).sum(),
            })
            .collect(),
        selected,
        chosen: host.is_some(),
    });
    Ok((groups.swap_remove(selected).1, host_scope))
}

/// One `cpu` element `c`: its NUMA node and host bridge, the CPU's identity (from the first
/// that has one), the `pci` trees below it, and (warned, not kept) NICs directly under it.
fn cpu_element(ctx: &mut Ctx<'_>, c: usize, node: &mut Node) {
    let doc = ctx.doc;
    let ce = &doc.elements[c];
    // NCCL writes -1 when the CPU has no NUMA node.
    let numaid = match ce.attr("numaid") {
        Some(_) => ctx
            .value(c, "numaid", attr::numa_node, "NUMA node unknown")
            .flatten(),
        None => {
            ctx.warn(c, "no numaid; NUMA node unknown");
            None
        }
    };
    let cpus = ctx
        .value(c, "affinity", cpulist::parse_mask, "local CPUs unknown")
        .filter(|c| !c.is_empty());
    if let Some(id) = numaid {
        match node.numa.entry(id) {
            std::collections::btree_map::Entry::Occupied(_) => {
                ctx.warn(
                    c,
                    format!("second cpu element for NUMA node {id}; its devices share the first one's host bridge"),
                );
            }
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(NumaNode {
                    id,
                    cpus: cpus
                        .as_deref()
                        .map(crate::model::cpulist::format_list)
                        .unwrap_or_default(),
                    distances: Vec::new(),
                });
            }
        }
    }
    let hb = host_bridge_for(numaid);
    if !node.host_bridges.iter().any(|h| h.name == hb) {
        node.host_bridges.push(HostBridge {
            name: hb.clone(),
            domain: 0,
            bus: 0,
            numa_node: numaid,
            cpus: cpus.as_deref().map(crate::model::cpulist::format_list),
        });
    }
    if node.machine.cpu_vendor.is_none() {
        cpu_identity(ce, &mut node.machine);
    }
    for p in doc.children_named(c, "pci").collect::<Vec<_>>() {
        ctx.pci(p, None, &hb, numaid, &cpus);
    }
    for n in doc.children_named(c, "nic").collect::<Vec<_>>() {
        let names: Vec<&str> = doc
            .children_named(n, "net")
            .filter_map(|x| doc.elements[x].attr("name"))
            .collect();
        ctx.warn(
            n,
            format!(
                "virtual NIC directly under a cpu (no PCI device): {} not kept",
                names.join(", ")
            ),
        );
    }
}

/// The CPU's vendor, family and model from a `cpu` element.
fn cpu_identity(ce: &super::xmltree::Element, machine: &mut MachineInfo) {
    // NCCL writes `vendor` for x86 only; an Arm or POWER node is told by `arch`.
    let arch = ce.attr("arch").map(str::trim);
    machine.cpu_vendor = ce
        .attr("vendor")
        .map(|v| v.to_string())
        .filter(|v| !v.trim().is_empty())
        .or_else(|| match arch {
            Some("arm64") => Some("no vendor (arm64, <cpu arch>)".to_string()),
            Some("ppc64") => Some("IBM POWER (ppc64, <cpu arch>)".to_string()),
            _ => None,
        });
    machine.cpu_family = ce.attr("familyid").and_then(|v| v.trim().parse().ok());
    machine.cpu_model_number = ce.attr("modelid").and_then(|v| v.trim().parse().ok());
}

/// The NVLinks the `nvlink` elements list: GPU pairs (both GPUs in the file), links to an
/// NVSwitch fabric; links to a CPU (POWER), to a GPU not in the file or to another target
/// are warned and not kept. `path` names the input in the CPU-links warning.
fn nvlink_tally(ctx: &mut Ctx<'_>, gpus: &HashMap<Bdf, Option<u32>>, path: &str) -> NvLinkTally {
    let mut tally = NvLinkTally::default();
    let mut cpu_links = 0usize;
    for (gpu, target, tclass, count) in &ctx.nvlinks {
        let version = gpus.get(gpu).copied().flatten();
        let tb = target.parse::<Bdf>().ok();
        match (tclass.map(|c| c >> 8), tb) {
            (Some(0x0680), _) if tclass == &Some(0x068001) => cpu_links += 1,
            // Both GPUs list the pair; the tally keeps the larger count if they disagree.
            (_, Some(t)) if gpus.contains_key(&t) && t != *gpu => {
                tally.pair(*gpu, t, *count, version)
            }
            // NVSwitch (or a hidden one: NCCL writes an unprintable target in VMs).
            (Some(0x0680), _) | (_, None) => tally.fabric(*gpu, *count, version),
            (Some(c), Some(t)) if c >> 8 == 0x03 => {
                ctx.warnings.push(Warning {
                    path: format!("nvlink target {t}"),
                    message: format!(
                        "GPU {gpu} lists an NVLink to GPU {t}, which is not in this file; not kept"
                    ),
                });
            }
            (_, Some(t)) => ctx.warnings.push(Warning {
                path: format!("nvlink target {t}"),
                message: format!(
                    "NVLink from {gpu} to a target of {} peerpath does not model; not kept",
                    match tclass {
                        Some(c) => format!("class 0x{c:06x}"),
                        None => "unknown class".to_string(),
                    }
                ),
            }),
        }
    }
    if cpu_links > 0 {
        ctx.warnings.push(Warning {
            path: path.to_string(),
            message: format!(
                "{cpu_links} GPU-to-CPU NVLink element(s) (POWER) cannot be represented; not kept"
            ),
        });
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::xmltree;

    fn load(xml: &str) -> Topology {
        let doc = xmltree::parse(xml).unwrap();
        read(
            &doc,
            SourceInfo {
                kind: String::new(),
                path: "t.xml".into(),
                limitations: vec![],
            },
            None,
        )
        .unwrap()
    }

    #[test]
    fn spec_example() {
        let t = load(
            r#"<system version="1">
  <cpu numaid="0" affinity="00000000,0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:17:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:19:00.0" class="0x030200" vendor="0x10de" device="0x20f1" link_speed="16.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="80" rank="0" gdr="1"><nvlink target="0000:9a:00.0" count="12" tclass="0x030200"/></gpu>
      </pci>
      <pci busid="0000:1a:00.0" class="0x020700" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe" link_width="16">
        <nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/></nic>
      </pci>
    </pci>
  </cpu>
  <cpu numaid="1" affinity="ffffffff,ffff0000" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:9a:00.0" class="0x030200" vendor="0x10de" device="0x20f1" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="80" rank="1" gdr="1"><nvlink target="0000:19:00.0" count="12" tclass="0x030200"/></gpu>
    </pci>
  </cpu>
</system>"#,
        );
        assert_eq!(t.source.kind, "nccl-xml");
        assert!(t.source.limitations[0].contains("PHB and NODE cannot be told apart"));
        assert_eq!(t.of_kind(DeviceKind::Gpu).count(), 2);
        assert_eq!(t.of_kind(DeviceKind::Nic).count(), 1);
        assert_eq!(t.switches.len(), 1);
        let nic = t.device(&"0000:1a:00.0".parse().unwrap()).unwrap();
        assert_eq!(nic.switch.as_deref(), Some("sw0"));
        assert_eq!(nic.rdma_names().collect::<Vec<_>>(), ["mlx5_0"]);
        assert_eq!(nic.numa_node, Some(0));
        assert_eq!(nic.link.unwrap().max_gts, Some(32.0));
        let g1 = t.device(&"0000:9a:00.0".parse().unwrap()).unwrap();
        assert_eq!(g1.host_bridge, "nccl-cpu1");
        assert_eq!(t.numa_of(g1), Some(1));
        assert_eq!(t.numa_nodes[1].cpus, "16-63");
        assert_eq!(t.nvlinks.len(), 1);
        assert_eq!(t.nvlinks[0].count, 12);
        assert_eq!(t.nvlinks[0].version, Some(3));
        assert!(t.nvlink_visible);
        assert_eq!(t.machine.cpu_model_number, Some(143));
    }

    #[test]
    fn bad_input_is_an_error_or_warning() {
        let doc = xmltree::parse("<system version=\"1\"/>").unwrap();
        let src = SourceInfo {
            kind: String::new(),
            path: "x".into(),
            limitations: vec![],
        };
        assert!(read(&doc, src.clone(), None).is_err());
        let doc = xmltree::parse("<topology/>").unwrap();
        assert!(read(&doc, src, None).is_err());
        let t = load(
            r#"<system version="1"><cpu numaid="x" affinity="zz"><pci busid="nope" class="0x0302"/></cpu></system>"#,
        );
        assert!(t.devices.is_empty());
        assert_eq!(t.warnings.len(), 3, "{:?}", t.warnings);
    }
}
