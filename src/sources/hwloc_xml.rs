//! The hwloc XML source: reads what `lstopo --of xml` writes (format 2.0, hwloc 2.x; format
//! 3.0, hwloc master; the 1.x layout is read with the 2.0 rules) into the same [`Topology`] the
//! sysfs scanner builds.
//!
//! What is read, per hwloc object (see `shared/reference/hwloc.md` §c):
//! - `NUMANode`: `os_index`, `cpuset` (→ cpulist); `NUMALatency` distances (→ distance rows).
//! - `Package`/`PU`/`Machine` infos: CPU vendor/model/family, socket and PU counts, DMI names.
//! - `Bridge` with `bridge_type="0-…"`: a host bridge; `bridge_pci="DDDD:[BB-SS]"` names it
//!   `pciDDDD:BB`; its parent object's `cpuset`/`nodeset` is the locality of everything below.
//! - `Bridge` with a `pci_busid` and `PCIDev`: a PCI function (`pci_busid`, `pci_type`
//!   `"CCCC [VVVV:DDDD] [SSSS:ssss] RR"` plus ` PP` prog-if in 3.0, `pci_link_speed` GB/s,
//!   infos `PCIVendor`/`PCIDevice`/`PCISlot`); its parent is the nearest enclosing PCI object.
//! - `OSDev` under a PCI function: netdevs, RDMA devices (with `Port<N>State`), block devices,
//!   CUDA/NVML GPUs (`osdev_type`: an enum in 1.x/2.0, a bitmask in 3.0).
//! - The `NVLinkBandwidth` distance matrix (hwloc's NVML plugin): GPU↔GPU links become
//!   [`NvLink`] pairs, GPU↔NVSwitch links fold into one fabric link per GPU.

use super::assemble::{NvLinkTally, RawTopology, assemble};
use super::xmltree::{Doc, Element};
use crate::model::bdf::{Bdf, host_bridge_name};
use crate::model::device::{
    Device, DeviceKind, LinkInfo, OsDevice, OsDeviceKind, RdmaPort, kind_from_class,
};
use crate::model::fact::Fact;
use crate::model::topology::{MachineInfo, NumaNode, SourceInfo, Topology, Warning};
use crate::parse::hwloc::{
    OsType, parse_bitmap, parse_bus_range, parse_link_speed, parse_osdev_type, parse_pci_type,
};
use crate::parse::{attr, cpulist, ib};
use anyhow::{Result, bail};
use std::collections::{BTreeMap, HashMap};

/// What an hwloc XML file cannot hold; copied into [`SourceInfo::limitations`].
pub const LIMITATIONS: &[&str] = &[
    "hwloc XML has no PCIe config space: port types, ACS, AER, ATS, MPS/MRRS, SR-IOV links (physfn) and IOMMU groups are unknown",
    "pci_link_speed is one number (GB/s of the current link): speed and width are inferred as the widest common width (x16, x8, x4, x2, x1) at the lowest PCIe generation that gives exactly that bandwidth (Gen3 x16 and Gen4 x8 both give 15.75 GB/s and cannot be told apart; the bandwidth itself is preserved); the capable (max) link is unknown",
    "device NUMA node and local CPUs are the locality hwloc attached the host bridge to (from local_cpus), not each function's numa_node file",
    "no kernel drivers, BARs, IOMMU units, kernel command line, loaded modules (nvidia_peermem, ib_core) or hypervisor evidence",
    "NVLinks are known only when hwloc ran its NVML plugin on the live machine (nvml OS devices, and an NVLinkBandwidth matrix when it found active links); NVLink version is inferred from the per-link bandwidth (20 GB/s: v1; 25 GB/s: v2-v4, not told apart); GPU-to-CPU NVLinks (POWER) cannot be represented",
    "OS devices peerpath does not model (DRM card/renderD, OpenCL, DMA channels, DAX, co-processors other than CUDA/NVML) are dropped",
];

/// The limitation added when a file has NVML OS devices but no `NVLinkBandwidth` matrix.
pub const NVLINK_NOT_RECORDED: &str = "this file has NVML GPU devices but no NVLinkBandwidth matrix: hwloc did not record NVLinks here (an older hwloc, or an export without distances), so GPU-GPU NVLinks are unknown, not absent";

/// The limitation added when a file has AMD GPUs but no RSMI OS devices: nothing in it can
/// show xGMI.
pub const XGMI_NOT_RECORDED: &str = "this hwloc file has AMD GPUs but no RSMI devices (hwloc's ROCm SMI plugin did not run here, or hwloc was built without it): it cannot show xGMI (Infinity Fabric) links, so GPU pairs are labelled by PCIe alone and may be xGMI-connected";

/// The limitation added when a file has RSMI OS devices: what hwloc records of xGMI.
pub const XGMI_FROM_RSMI: &str = "xGMI comes from hwloc's RSMI plugin: XGMIHops is rocm-smi's hop count (1 for every pair of a hive, also where no direct link exists, as on MI250X) and XGMIBandwidth a fixed 100 GB/s per reachable pair, so link counts, weights and real bandwidths are unknown";

/// Format version of the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XmlVersion {
    /// hwloc 1.x (no `version` attribute): read with the 2.0 rules.
    V1,
    /// `version="2.0"` (hwloc 2.x): `osdev_type` enum, 6-field `pci_type`.
    V2,
    /// `version="3.0"` (hwloc master): `osdev_type` bitmask, `pci_type` with prog-if.
    V3,
}

struct Ctx<'a> {
    doc: &'a Doc,
    /// Element index → device index, for PCI objects.
    pci_of: HashMap<usize, usize>,
    devices: Vec<Device>,
    warnings: std::cell::RefCell<Vec<Warning>>,
}

impl Ctx<'_> {
    /// Records a warning about element `i`.
    fn warn(&self, i: usize, message: impl Into<String>) {
        self.warnings.borrow_mut().push(Warning {
            path: self.where_(i),
            message: message.into(),
        });
    }
    /// A bitmap attribute (`cpuset`, `nodeset`) of element `i`: `None` when absent or
    /// infinite, and when malformed (with a warning).
    fn bitmap(&self, i: usize, name: &str) -> Option<Vec<u32>> {
        match parse_bitmap(self.el(i).attr(name)?) {
            Ok(v) => v,
            Err(r) => {
                self.warn(i, format!("{name} {r}; treated as unknown"));
                None
            }
        }
    }
    fn el(&self, i: usize) -> &Element {
        &self.doc.elements[i]
    }
    fn is_object(&self, i: usize, ty: &str) -> bool {
        let e = self.el(i);
        e.name == "object" && e.attr("type") == Some(ty)
    }
    /// Nearest `object` ancestor.
    fn parent_object(&self, i: usize) -> Option<usize> {
        let mut cur = self.el(i).parent;
        while let Some(p) = cur {
            if self.el(p).name == "object" {
                return Some(p);
            }
            cur = self.el(p).parent;
        }
        None
    }
    fn infos(&self, i: usize) -> Vec<(String, String)> {
        self.doc
            .children_named(i, "info")
            .filter_map(|c| {
                let e = self.el(c);
                Some((
                    e.attr("name")?.to_string(),
                    e.attr("value").unwrap_or("").to_string(),
                ))
            })
            .collect()
    }
    fn where_(&self, i: usize) -> String {
        let e = self.el(i);
        match e.attr("gp_index") {
            Some(g) => format!("line {} (object gp_index {g})", e.line),
            None => format!("line {}", e.line),
        }
    }
}

fn is_pci_object(e: &Element) -> bool {
    e.name == "object"
        && match e.attr("type") {
            Some("PCIDev") => true,
            Some("Bridge") => e.attr("pci_busid").is_some(),
            _ => false,
        }
}

fn is_host_bridge(e: &Element) -> bool {
    e.name == "object"
        && e.attr("type") == Some("Bridge")
        && e.attr("bridge_type").is_some_and(|t| t.starts_with("0-"))
}

/// Locality of an attach point: its CPUs, and its NUMA node when it has exactly one (from
/// `nodeset`; in files without one, the only NUMA node whose CPUs lie inside the `cpuset`).
fn locality(
    ctx: &Ctx<'_>,
    obj: usize,
    numa_cpus: &BTreeMap<u32, Vec<u32>>,
) -> (Option<Vec<u32>>, Option<u32>) {
    let cpus = ctx.bitmap(obj, "cpuset");
    let numa = match ctx.bitmap(obj, "nodeset") {
        Some(nodes) => match nodes.as_slice() {
            [n] if numa_cpus.contains_key(n) => Some(*n),
            _ => None,
        },
        None => {
            let inside: Vec<u32> = match &cpus {
                Some(c) => numa_cpus
                    .iter()
                    .filter(|(_, nc)| {
                        !nc.is_empty() && nc.iter().all(|x| c.binary_search(x).is_ok())
                    })
                    .map(|(id, _)| *id)
                    .collect(),
                None => Vec::new(),
            };
            match inside.as_slice() {
                [n] => Some(*n),
                _ => None,
            }
        }
    };
    (cpus.filter(|c| !c.is_empty()), numa)
}

/// A host bridge object: its `pciDDDD:BB` name, and the CPUs and NUMA node of its parent.
type HostBridgeAt = (String, Option<Vec<u32>>, Option<u32>);

/// Reads an hwloc XML document (already parsed) into a topology: [`discover`], then
/// [`assemble`] with the PCI ID database at `pci_ids`.
pub fn read(doc: &Doc, source: SourceInfo, pci_ids: Option<&std::path::Path>) -> Result<Topology> {
    Ok(assemble(discover(doc, source)?, pci_ids))
}

/// Reads an hwloc XML document (already parsed) into raw facts. Fails when the root is not
/// `<topology>` or the format version is unknown.
///
/// The phases of every discovery (docs/architecture.md, "Discover, phase by phase"):
/// enumerate the NUMA nodes, host bridges and PCI functions ([`numa_objects`],
/// [`host_bridges`], [`pci_functions`]), attach the OS devices below them ([`os_devices`]),
/// link the GPUs ([`nvlinks`], [`xgmi`]) and annotate what the file could not record.
pub fn discover(doc: &Doc, source: SourceInfo) -> Result<RawTopology> {
    let version = check_root(doc)?;
    let mut ctx = Ctx {
        doc,
        pci_of: HashMap::new(),
        devices: Vec::new(),
        warnings: Default::default(),
    };
    let mut source = source;
    source.kind = "hwloc-xml".into();
    source.limitations = LIMITATIONS.iter().map(|s| s.to_string()).collect();

    // 1. Enumerate: NUMA nodes, host bridges, PCI functions.
    let mut numa = numa_objects(&ctx);
    let numa_cpus: BTreeMap<u32, Vec<u32>> = numa
        .iter()
        .map(|(id, n)| {
            (
                *id,
                cpulist::parse_list(n.cpus.as_bytes()).unwrap_or_default(),
            )
        })
        .collect();
    numa_distances(&ctx, &mut numa);
    let numa_nodes: Vec<NumaNode> = numa.into_values().collect();
    let machine = machine_info(&ctx);
    let hb_of = host_bridges(&ctx, &numa_cpus);
    pci_functions(&mut ctx, &hb_of, &numa_cpus);
    // 2. Attach: OS devices under PCI functions.
    os_devices(&mut ctx, version, &source.path);
    rsmi_partitions(&mut ctx.devices, &source.path);
    // 3. Link: NVLinks and xGMI, and what the file could not record of them.
    let (nvlinks, nvlink_visible) = nvlinks(&ctx);
    let (xgmi, xgmi_visible) = xgmi(&ctx);
    annotate(&ctx, &mut source, nvlink_visible, xgmi_visible);

    let mut raw = RawTopology::new(source, machine);
    raw.numa_nodes = numa_nodes;
    raw.devices = ctx.devices;
    raw.nvlinks = nvlinks;
    raw.nvlink_visible = nvlink_visible;
    raw.xgmi = xgmi;
    raw.xgmi_visible = xgmi_visible;
    raw.warnings = ctx.warnings.into_inner();
    Ok(raw)
}

/// The document's format version; refuses a root that is not `<topology>` and a version
/// this reader does not know.
fn check_root(doc: &Doc) -> Result<XmlVersion> {
    let Some(root) = doc.root() else {
        bail!("empty document")
    };
    if root.name != "topology" {
        bail!(
            "not an hwloc XML document: root element is <{}>, expected <topology>",
            root.name
        );
    }
    Ok(match root.attr("version") {
        None => XmlVersion::V1,
        Some(v) if v.starts_with("2.") => XmlVersion::V2,
        Some(v) if v.starts_with("3.") => XmlVersion::V3,
        Some(v) if v.starts_with("1.") => XmlVersion::V1,
        Some(v) => bail!("hwloc XML version {v:?} is not supported (2.0 and 3.0 are)"),
    })
}

/// The NUMA node objects, by `os_index` (the first of each), with their CPUs.
fn numa_objects(ctx: &Ctx<'_>) -> BTreeMap<u32, NumaNode> {
    let mut numa: BTreeMap<u32, NumaNode> = BTreeMap::new();
    for (i, e) in ctx.doc.elements.iter().enumerate() {
        if !ctx.is_object(i, "NUMANode") {
            continue;
        }
        let Some(id) = e.attr("os_index").and_then(|v| v.parse::<u32>().ok()) else {
            ctx.warn(i, "NUMANode without a numeric os_index; skipped");
            continue;
        };
        let gpu_mem = e.attr("subtype") == Some("GPUMemory");
        let cpus = if gpu_mem {
            // GPU memory exposed as NUMA: hwloc gives it its attach point's cpuset, but the
            // node itself has no CPUs (sysfs cpulist is empty).
            String::new()
        } else {
            ctx.bitmap(i, "cpuset")
                .map(|c| crate::model::cpulist::format_list(&c))
                .unwrap_or_default()
        };
        numa.entry(id).or_insert(NumaNode {
            id,
            cpus,
            distances: Vec::new(),
        });
    }
    numa
}

/// Host bridges: element → (name, locality).
fn host_bridges(
    ctx: &Ctx<'_>,
    numa_cpus: &BTreeMap<u32, Vec<u32>>,
) -> HashMap<usize, HostBridgeAt> {
    let mut hb_of: HashMap<usize, HostBridgeAt> = HashMap::new();
    for (i, e) in ctx.doc.elements.iter().enumerate() {
        if !is_host_bridge(e) {
            continue;
        }
        let name = match e.attr("bridge_pci").map(parse_bus_range) {
            Some(Ok((d, sec, _))) => host_bridge_name(d, sec),
            other => {
                let why = match other {
                    Some(Err(r)) => format!("bridge_pci {r}"),
                    _ => "host bridge without a bridge_pci".to_string(),
                };
                ctx.warn(i, format!("{why}; named from its first device"));
                String::new()
            }
        };
        let (cpus, numa) = match ctx.parent_object(i) {
            Some(p) => locality(ctx, p, numa_cpus),
            None => (None, None),
        };
        hb_of.insert(i, (name, cpus, numa));
    }
    hb_of
}

/// PCI functions, in document order (parents before children): each becomes a device of
/// `ctx`; a malformed address or a duplicate is warned and skipped.
fn pci_functions(
    ctx: &mut Ctx<'_>,
    hb_of: &HashMap<usize, HostBridgeAt>,
    numa_cpus: &BTreeMap<u32, Vec<u32>>,
) {
    let doc = ctx.doc;
    let mut seen: HashMap<Bdf, usize> = HashMap::new();
    for (i, e) in doc.elements.iter().enumerate() {
        if !is_pci_object(e) {
            continue;
        }
        let bdf: Bdf = match attr::pci_address(e.attr("pci_busid").unwrap_or("")) {
            Ok(b) => b,
            Err(r) => {
                ctx.warn(i, format!("pci_busid {r}; object and its children skipped"));
                continue;
            }
        };
        if let Some(&first) = seen.get(&bdf) {
            ctx.warn(
                i,
                format!(
                    "duplicate PCI address {bdf} (first at {}); duplicate skipped",
                    ctx.where_(first)
                ),
            );
            continue;
        }
        let d = pci_function(ctx, i, bdf, hb_of, numa_cpus);
        seen.insert(bdf, i);
        ctx.pci_of.insert(i, ctx.devices.len());
        ctx.devices.push(d);
    }
}

/// Where the PCI object `i` hangs: its parent device, host bridge name and locality — from
/// the nearest enclosing PCI object already read, else its host bridge, else the normal
/// object the I/O tree hangs from.
fn placement(
    ctx: &Ctx<'_>,
    i: usize,
    bdf: Bdf,
    hb_of: &HashMap<usize, HostBridgeAt>,
    numa_cpus: &BTreeMap<u32, Vec<u32>>,
) -> (Option<Bdf>, HostBridgeAt) {
    let mut parent_dev: Option<usize> = None;
    let mut hb: Option<usize> = None;
    let mut attach: Option<usize> = None;
    let mut cur = ctx.parent_object(i);
    while let Some(p) = cur {
        let pe = ctx.el(p);
        if is_pci_object(pe) {
            if let Some(&di) = ctx.pci_of.get(&p) {
                parent_dev = Some(di);
                break;
            }
            // A skipped (malformed) PCI parent: keep climbing.
        } else if is_host_bridge(pe) {
            hb = Some(p);
            break;
        } else {
            attach = Some(p);
            break;
        }
        cur = ctx.parent_object(p);
    }
    let parent = parent_dev.map(|di| ctx.devices[di].bdf);
    let at = if let Some(di) = parent_dev {
        let pd = &ctx.devices[di];
        (pd.host_bridge.clone(), pd.local_cpus.clone(), pd.numa_node)
    } else if let Some(h) = hb {
        let (n, c, m) = hb_of
            .get(&h)
            .cloned()
            .unwrap_or((String::new(), None, None));
        let n = if n.is_empty() {
            host_bridge_name(bdf.domain, bdf.bus)
        } else {
            n
        };
        (n, c, m)
    } else {
        ctx.warn(
            i,
            format!(
                "PCI object {bdf} is not below a host bridge; host bridge assumed from its address"
            ),
        );
        let (c, m) = attach
            .map(|a| locality(ctx, a, numa_cpus))
            .unwrap_or((None, None));
        (host_bridge_name(bdf.domain, bdf.bus), c, m)
    };
    (parent, at)
}

/// The device the PCI object `i` (address `bdf`) describes: its place, IDs and class
/// (`pci_type`), kind, current link (`pci_link_speed`) and the names hwloc's infos give.
fn pci_function(
    ctx: &Ctx<'_>,
    i: usize,
    bdf: Bdf,
    hb_of: &HashMap<usize, HostBridgeAt>,
    numa_cpus: &BTreeMap<u32, Vec<u32>>,
) -> Device {
    let e = ctx.el(i);
    let (parent, (hb_name, cpus, numa_node)) = placement(ctx, i, bdf, hb_of, numa_cpus);
    let mut d = Device::new(bdf, hb_name, format!("hwloc-xml:{}", ctx.where_(i)));
    d.parent = parent;
    d.local_cpus = cpus;
    d.numa_node = numa_node;
    match e.attr("pci_type").map(parse_pci_type) {
        Some(Ok(t)) => {
            d.class = t.class;
            d.vendor_id = Some(t.vendor);
            d.device_id = Some(t.device);
            d.subsystem_vendor_id = Some(t.subvendor);
            d.subsystem_device_id = Some(t.subdevice);
            d.revision = Some(t.revision);
        }
        Some(Err(r)) => ctx.warn(
            i,
            format!("pci_type {r}; class and IDs unknown (device kind other)"),
        ),
        None => ctx.warn(i, "no pci_type; class and IDs unknown (device kind other)"),
    }
    d.kind = if e.attr("type") == Some("Bridge") {
        DeviceKind::Bridge
    } else {
        kind_from_class(d.class, d.vendor_id, d.device_id)
    };
    match e.attr("pci_link_speed").map(parse_link_speed) {
        Some(Ok(Some((gts, w)))) => {
            d.link = Some(LinkInfo {
                current_gts: Some(gts),
                current_width: Some(w),
                max_gts: None,
                max_width: None,
            })
        }
        Some(Err(r)) => ctx.warn(i, format!("pci_link_speed={r}; link unknown")),
        Some(Ok(None)) | None => {}
    }
    for (k, v) in ctx.infos(i) {
        match k.as_str() {
            "PCIVendor" if !v.is_empty() => d.vendor_name = Some(v),
            "PCIDevice" if !v.is_empty() => d.device_name = Some(v),
            "PCISlot" if !v.is_empty() => d.slot = Some(v),
            _ => {}
        }
    }
    d
}

/// OS devices under PCI functions, attached to their function; those of kinds peerpath does
/// not model are listed in one warning on `path`.
fn os_devices(ctx: &mut Ctx<'_>, version: XmlVersion, path: &str) {
    let doc = ctx.doc;
    let mut dropped: Vec<String> = Vec::new();
    for (i, e) in doc.elements.iter().enumerate() {
        if !ctx.is_object(i, "OSDev") {
            continue;
        }
        let name = e.attr("name").unwrap_or("").to_string();
        let Some(di) = ctx
            .pci_parent_el(i)
            .and_then(|p| ctx.pci_of.get(&p).copied())
        else {
            continue; // not attached to a PCI function (e.g. a pmem block device)
        };
        // An osdev_type that is not a number is a kind peerpath does not model: listed below.
        let ty = parse_osdev_type(
            e.attr("osdev_type").unwrap_or(""),
            version == XmlVersion::V3,
        )
        .unwrap_or(OsType::Other);
        let subtype = e.attr("subtype").unwrap_or("");
        let Some(kind) = os_kind(ty, subtype, &name, ctx.devices[di].vendor_id) else {
            dropped.push(name);
            continue;
        };
        let od = os_device(ctx.infos(i), kind, name, subtype);
        if kind == OsDeviceKind::AmdGpu {
            let hive = od
                .attrs
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("XGMIHiveID"))
                .and_then(|(_, v)| u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok());
            let d = &mut ctx.devices[di];
            let a = d.amd.get_or_insert_with(|| crate::model::amd::AmdGpu {
                source: format!("hwloc-xml line {} (OSDev {})", e.line, od.name),
                ..Default::default()
            });
            a.hive_id = a.hive_id.or(hive);
        }
        ctx.devices[di].os_devices.push(od);
    }
    if !dropped.is_empty() {
        let shown: Vec<&str> = dropped.iter().take(12).map(String::as_str).collect();
        ctx.warnings.borrow_mut().push(Warning {
            path: path.to_string(),
            message: format!(
                "{} OS device(s) of kinds peerpath does not model were not kept: {}{}",
                dropped.len(),
                shown.join(", "),
                if dropped.len() > shown.len() {
                    ", …"
                } else {
                    ""
                }
            ),
        });
    }
}

/// The kind of an OS device of type `ty`, `subtype` and `name` on a function of `vendor`;
/// `None` for a kind peerpath does not model.
fn os_kind(ty: OsType, subtype: &str, name: &str, vendor: Option<u16>) -> Option<OsDeviceKind> {
    match ty {
        OsType::OpenFabrics => Some(OsDeviceKind::Rdma),
        // An HPE Slingshot (Cassini) adapter: hwloc ≥ 2.9.1 marks its Ethernet netdev
        // (`hsn<N>`/`hsi<N>`, net class) with subtype `Slingshot`, and hwloc ≥ 2.14 adds its CXI
        // device `cxi<N>` (cxi class) with the same subtype (open-mpi/hwloc
        // hwloc/topology-linux.c, NEWS). Either is the adapter's fabric handle here, as
        // OpenFabrics devices are for verbs; only `cxi<N>` is what libfabric's cxi provider
        // names (place exports it, analysis/place/slingshot.rs). (hwloc 2.8 names the netdev
        // `hsi<N>` without the subtype: the Cassini function, vendor 0x17db, says it.)
        OsType::Net
            if subtype == "Slingshot" || (vendor == Some(0x17db) && name.starts_with("hsi")) =>
        {
            Some(OsDeviceKind::Rdma)
        }
        OsType::Net => Some(OsDeviceKind::Net),
        OsType::Block => Some(OsDeviceKind::Block),
        OsType::Gpu | OsType::CoProc
            if matches!(subtype, "CUDA" | "NVML")
                || name.starts_with("cuda")
                || name.starts_with("nvml") =>
        {
            Some(OsDeviceKind::NvidiaGpu)
        }
        // hwloc's ROCm SMI plugin: `rsmi<N>`, subtype RSMI (AMD GPUs).
        OsType::Gpu | OsType::CoProc if subtype == "RSMI" || name.starts_with("rsmi") => {
            Some(OsDeviceKind::AmdGpu)
        }
        _ => None,
    }
}

/// An OS device of `kind` with its subtype and infos as attributes; an RDMA device's
/// `Port<N>State` infos become its ports.
fn os_device(
    infos: Vec<(String, String)>,
    kind: OsDeviceKind,
    name: String,
    subtype: &str,
) -> OsDevice {
    let mut od = OsDevice::new(kind, name);
    if !subtype.is_empty() {
        od.attrs.push(("subtype".into(), subtype.to_string()));
    }
    let mut ports: BTreeMap<u32, RdmaPort> = BTreeMap::new();
    for (k, v) in infos {
        let port_state = k
            .strip_prefix("Port")
            .and_then(|r| r.strip_suffix("State"))
            .and_then(|n| n.parse::<u32>().ok())
            .zip(v.trim().parse::<u32>().ok());
        if let (OsDeviceKind::Rdma, Some((p, s))) = (kind, port_state) {
            ports
                .entry(p)
                .or_insert(RdmaPort {
                    port: p,
                    state: None,
                    phys_state: None,
                    rate_gbps: None,
                    rate_text: None,
                    link_layer: None,
                })
                .state = Some((s, ib::port_state_name(s).to_string()));
        }
        od.attrs.push((k, v));
    }
    od.ports = ports.into_values().collect();
    od
}

/// Annotate: what the file could not record, as limitations of `source` — NVLinks where it
/// has NVML devices but no NVLink matrix, xGMI wherever it has AMD GPUs.
fn annotate(ctx: &Ctx<'_>, source: &mut SourceInfo, nvlink_visible: bool, xgmi_visible: bool) {
    let nvml_devices = ctx.doc.elements.iter().enumerate().any(|(i, e)| {
        ctx.is_object(i, "OSDev")
            && (e.attr("subtype") == Some("NVML")
                || e.attr("name").is_some_and(|n| n.starts_with("nvml")))
    });
    if nvml_devices && !nvlink_visible {
        source.limitations.push(NVLINK_NOT_RECORDED.to_string());
    }
    let amd_gpus = ctx.devices.iter().any(crate::model::amd::is_amd_gpu);
    if amd_gpus {
        source.limitations.push(
            if xgmi_visible {
                XGMI_FROM_RSMI
            } else {
                XGMI_NOT_RECORDED
            }
            .to_string(),
        );
    }
}

impl Ctx<'_> {
    /// Nearest enclosing PCI object element that became a device.
    fn pci_parent_el(&self, i: usize) -> Option<usize> {
        let mut cur = self.parent_object(i);
        while let Some(p) = cur {
            if is_pci_object(self.el(p)) && self.pci_of.contains_key(&p) {
                return Some(p);
            }
            if is_host_bridge(self.el(p)) {
                return None;
            }
            cur = self.parent_object(p);
        }
        None
    }
}

/// Whitespace-separated tokens of every child element named `name`, concatenated.
/// The compute partitions hwloc shows of each AMD GPU: its RSMI plugin lists one OS device per
/// partition (`rsmi0` … `rsmi5` under one MI300A in CPX mode), all on the one PCI function.
/// The count, and the mode it means ([`crate::model::amd::compute_partition_mode`]), are kept
/// with the OS devices' names as evidence; hwloc records no memory partition (NPS).
fn rsmi_partitions(devices: &mut [Device], path: &str) {
    for d in devices.iter_mut() {
        let names: Vec<&str> = d
            .os_devices
            .iter()
            .filter(|o| o.kind == OsDeviceKind::AmdGpu)
            .map(|o| o.name.as_str())
            .collect();
        let n = names.len() as u32;
        let Some(a) = d.amd.as_mut().filter(|_| n > 0) else {
            continue;
        };
        let shown = match names.as_slice() {
            [one] => one.to_string(),
            [first, .., last] => format!("{first} … {last}"),
            [] => continue,
        };
        a.partition_count = Some(n);
        a.partition_evidence = Some((
            path.to_string(),
            format!("{n} RSMI OS device(s) ({shown}) on this PCI function"),
        ));
        if a.compute_partition.is_none() {
            a.compute_partition =
                crate::model::amd::compute_partition_mode(d.device_id, n).map(str::to_string);
        }
    }
}

fn tokens(doc: &Doc, i: usize, name: &str) -> Vec<String> {
    doc.children_named(i, name)
        .flat_map(|c| {
            doc.elements[c]
                .text
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A distance matrix: its entries as (type, index, indexing-is-os) and row-major values.
struct Matrix {
    name: String,
    entries: Vec<(String, u64, bool)>,
    values: Vec<u64>,
    line: usize,
}

fn matrices(doc: &Doc) -> Vec<Matrix> {
    let mut out = Vec::new();
    for (i, e) in doc.elements.iter().enumerate() {
        let hetero = match e.name.as_str() {
            "distances2" => false,
            "distances2hetero" => true,
            _ => continue,
        };
        let name = e.attr("name").unwrap_or("").to_string();
        let ty = e.attr("type").unwrap_or("").to_string();
        let by_os = e.attr("indexing") == Some("os");
        let mut entries = Vec::new();
        let mut ok = true;
        for t in tokens(doc, i, "indexes") {
            if hetero {
                match t
                    .split_once(':')
                    .and_then(|(a, b)| Some((a.to_string(), b.parse::<u64>().ok()?)))
                {
                    Some((a, b)) => entries.push((a, b, false)),
                    None => ok = false,
                }
            } else {
                match t.parse::<u64>() {
                    Ok(v) => entries.push((ty.clone(), v, by_os)),
                    Err(_) => ok = false,
                }
            }
        }
        let values: Vec<u64> = tokens(doc, i, "u64values")
            .iter()
            .filter_map(|t| t.parse().ok())
            .collect();
        let n = entries.len();
        if !ok || n == 0 || values.len() != n * n {
            continue;
        }
        out.push(Matrix {
            name,
            entries,
            values,
            line: e.line,
        });
    }
    out
}

fn numa_distances(ctx: &Ctx<'_>, numa: &mut BTreeMap<u32, NumaNode>) {
    for m in matrices(ctx.doc) {
        if m.name != "NUMALatency" || !m.entries.iter().all(|(t, _, os)| t == "NUMANode" && *os) {
            continue;
        }
        let ids: Vec<u32> = m.entries.iter().map(|(_, v, _)| *v as u32).collect();
        // Rows in node-id order, like sysfs `distance`.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&k| ids[k]);
        for (r, id) in ids.iter().enumerate() {
            if let Some(node) = numa.get_mut(id) {
                node.distances = order
                    .iter()
                    .map(|&c| u32::try_from(m.values[r * ids.len() + c]).unwrap_or(u32::MAX))
                    .collect();
            }
        }
    }
}

/// An NVLink matrix endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Gpu(Bdf),
    NvSwitch,
    Cpu,
    Unknown,
}

/// The `NVLinkBandwidth` matrices as an NVLink tally, and whether NVLink state was visible.
fn nvlinks(ctx: &Ctx<'_>) -> (NvLinkTally, bool) {
    let mats: Vec<Matrix> = matrices(ctx.doc)
        .into_iter()
        .filter(|m| m.name == "NVLinkBandwidth")
        .collect();
    if mats.is_empty() {
        // NVML OS devices without a matrix do not prove "no NVLink": hwloc versions and
        // exports that leave distances out (LLNL Lassen's V100 SXM2 file, hwloc 2.2) carry
        // NVML devices and no matrix. NVLink state is unknown.
        return (NvLinkTally::default(), false);
    }
    // gp_index / (type, os_index) → element.
    let mut by_gp: HashMap<u64, usize> = HashMap::new();
    let mut by_os: HashMap<(String, u64), usize> = HashMap::new();
    for (i, e) in ctx.doc.elements.iter().enumerate() {
        if e.name != "object" {
            continue;
        }
        if let Some(g) = e.attr("gp_index").and_then(|g| g.parse().ok()) {
            by_gp.insert(g, i);
        }
        if let (Some(t), Some(o)) = (
            e.attr("type"),
            e.attr("os_index").and_then(|o| o.parse().ok()),
        ) {
            by_os.insert((t.to_string(), o), i);
        }
    }
    let mut pairs: BTreeMap<(Bdf, Bdf), u64> = BTreeMap::new();
    let mut fabric: BTreeMap<Bdf, u64> = BTreeMap::new();
    let mut cpu_links = 0usize;
    for m in &mats {
        let ends: Vec<End> = m
            .entries
            .iter()
            .map(|(t, idx, os)| {
                let el = if *os {
                    by_os.get(&(t.clone(), *idx))
                } else {
                    by_gp.get(idx)
                };
                match el {
                    Some(&i) => classify_end(ctx, i),
                    None => End::Unknown,
                }
            })
            .collect();
        let n = ends.len();
        for a in 0..n {
            for b in (a + 1)..n {
                let v = m.values[a * n + b].max(m.values[b * n + a]);
                if v == 0 {
                    continue;
                }
                match (ends[a], ends[b]) {
                    (End::Gpu(x), End::Gpu(y)) if x != y => {
                        let k = if x < y { (x, y) } else { (y, x) };
                        *pairs.entry(k).or_default() += v;
                    }
                    (End::Gpu(x), End::NvSwitch) | (End::NvSwitch, End::Gpu(x)) => {
                        *fabric.entry(x).or_default() += v;
                    }
                    (End::Gpu(_), End::Cpu) | (End::Cpu, End::Gpu(_)) => cpu_links += 1,
                    _ => {}
                }
            }
        }
    }
    // Per-link bandwidth: hwloc writes 20000 MB/s per NVLink 1 link, 25000 per NVLink 2-4 link.
    let all: Vec<u64> = pairs.values().chain(fabric.values()).copied().collect();
    let (unit, version) = if !all.is_empty() && all.iter().all(|v| v.is_multiple_of(25000)) {
        (25000u64, None)
    } else if !all.is_empty() && all.iter().all(|v| v.is_multiple_of(20000)) {
        (20000, Some(1))
    } else {
        (25000, None)
    };
    let mut odd = false;
    let mut count = |v: u64| -> u32 {
        if !v.is_multiple_of(unit) {
            odd = true;
        }
        ((v as f64 / unit as f64).round() as u32).max(1)
    };
    let mut tally = NvLinkTally::default();
    for (&(a, b), &v) in &pairs {
        tally.pair(a, b, count(v), version);
    }
    for (&a, &v) in &fabric {
        tally.fabric(a, count(v), version);
    }
    let line = mats[0].line;
    if odd {
        ctx.warnings.borrow_mut().push(Warning {
            path: format!("line {line} (NVLinkBandwidth)"),
            message: format!(
                "bandwidths are not multiples of {unit} MB/s per link; link counts rounded"
            ),
        });
    }
    if cpu_links > 0 {
        ctx.warnings.borrow_mut().push(Warning {
            path: format!("line {line} (NVLinkBandwidth)"),
            message: format!("{cpu_links} GPU-to-CPU NVLink connection(s) (POWER) cannot be represented; not kept"),
        });
    }
    (tally, true)
}

/// xGMI pairs from hwloc's RSMI plugin: the `XGMIHops` matrix (else `XGMIBandwidth`, else
/// each device's `XGMIPeers` info), and whether any RSMI device was there to say so.
fn xgmi(ctx: &Ctx<'_>) -> (Vec<crate::model::amd::XgmiLink>, bool) {
    // RSMI OS device element → its GPU's address, by element, gp_index and name.
    let mut by_el: HashMap<usize, Bdf> = HashMap::new();
    let mut by_gp: HashMap<u64, usize> = HashMap::new();
    let mut by_name: HashMap<String, Bdf> = HashMap::new();
    for (i, e) in ctx.doc.elements.iter().enumerate() {
        if !ctx.is_object(i, "OSDev") {
            continue;
        }
        let name = e.attr("name").unwrap_or("");
        if !(e.attr("subtype") == Some("RSMI") || name.starts_with("rsmi")) {
            continue;
        }
        let Some(&di) = ctx.pci_parent_el(i).and_then(|p| ctx.pci_of.get(&p)) else {
            continue;
        };
        let bdf = ctx.devices[di].bdf;
        by_el.insert(i, bdf);
        by_name.insert(name.to_string(), bdf);
        if let Some(g) = e.attr("gp_index").and_then(|g| g.parse().ok()) {
            by_gp.insert(g, i);
        }
    }
    if by_el.is_empty() {
        return (Vec::new(), false);
    }
    let mut out = Vec::new();
    let mats = matrices(ctx.doc);
    let pick = |name: &str| mats.iter().find(|m| m.name == name);
    if let Some((m, hops)) = pick("XGMIHops")
        .map(|m| (m, true))
        .or_else(|| pick("XGMIBandwidth").map(|m| (m, false)))
    {
        let ends: Vec<Option<Bdf>> = m
            .entries
            .iter()
            .map(|(_, idx, os)| {
                if *os {
                    None
                } else {
                    by_gp.get(idx).and_then(|el| by_el.get(el)).copied()
                }
            })
            .collect();
        let n = ends.len();
        for a in 0..n {
            for b in (a + 1)..n {
                let v = m.values[a * n + b].max(m.values[b * n + a]);
                let (Some(x), Some(y)) = (ends[a], ends[b]) else {
                    continue;
                };
                if v == 0 || x == y {
                    continue;
                }
                let mut l = crate::model::amd::XgmiLink::new(
                    x,
                    y,
                    format!("hwloc-xml line {} ({} = {v})", m.line, m.name),
                );
                if hops {
                    l.hops = u32::try_from(v).ok();
                }
                out.push(l);
            }
        }
    } else {
        for (i, e) in ctx.doc.elements.iter().enumerate() {
            let Some(&x) = by_el.get(&i) else { continue };
            let peers = ctx
                .infos(i)
                .into_iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("XGMIPeers") || k == "XGMILinks");
            for p in peers.iter().flat_map(|(_, v)| v.split_whitespace()) {
                if let Some(&y) = by_name.get(p)
                    && y != x
                {
                    out.push(crate::model::amd::XgmiLink::new(
                        x,
                        y,
                        format!("hwloc-xml line {} (XGMIPeers {p})", e.line),
                    ));
                }
            }
        }
    }
    (out, true)
}

fn classify_end(ctx: &Ctx<'_>, i: usize) -> End {
    let e = ctx.el(i);
    match e.attr("type") {
        Some("OSDev") => match ctx.pci_parent_el(i).and_then(|p| ctx.pci_of.get(&p)) {
            Some(&di) if ctx.devices[di].kind.is_compute() => End::Gpu(ctx.devices[di].bdf),
            _ => End::Unknown,
        },
        Some("PCIDev") => match ctx.pci_of.get(&i) {
            Some(&di) => {
                let d = &ctx.devices[di];
                if e.attr("subtype") == Some("NVSwitch")
                    || (d.class >> 8 == 0x0680 && d.vendor_id == Some(0x10de))
                {
                    End::NvSwitch
                } else if d.kind.is_compute() {
                    End::Gpu(d.bdf)
                } else if d.vendor_id == Some(0x1014) {
                    End::Cpu
                } else {
                    End::Unknown
                }
            }
            None => End::Unknown,
        },
        // hwloc 1.x names the package object "Socket".
        Some("Package" | "Socket" | "NUMANode" | "Machine" | "Group") => End::Cpu,
        _ => End::Unknown,
    }
}

fn machine_info(ctx: &Ctx<'_>) -> MachineInfo {
    let doc = ctx.doc;
    let mut m = MachineInfo {
        kernel_cmdline: Fact::Unknown("hwloc XML does not record the kernel command line".into()),
        iommu_units: Fact::Unknown("hwloc XML does not record IOMMU units".into()),
        ..MachineInfo::default()
    };
    let mut infos: Vec<(String, String)> = Vec::new();
    // Infos on the topology root (3.0) and on the Machine object (2.0).
    infos.extend(ctx.infos(0));
    for (i, _) in doc.elements.iter().enumerate() {
        if ctx.is_object(i, "Machine") {
            infos.extend(ctx.infos(i));
        }
    }
    let mut packages = 0u32;
    let mut pus = 0u32;
    for (i, _) in doc.elements.iter().enumerate() {
        // hwloc 1.x writes a package as `type="Socket"` (renamed "Package" in 2.0).
        if ctx.is_object(i, "Package") || ctx.is_object(i, "Socket") {
            packages += 1;
            if packages == 1 {
                infos.extend(ctx.infos(i));
            }
        } else if ctx.is_object(i, "PU") {
            pus += 1;
        }
    }
    for (k, v) in infos {
        let v2 = v.trim().to_string();
        if v2.is_empty() {
            continue;
        }
        match k.as_str() {
            "CPUVendor" if m.cpu_vendor.is_none() => m.cpu_vendor = Some(v2),
            "CPUModel" if m.cpu_model.is_none() => m.cpu_model = Some(v2),
            "CPUFamilyNumber" if m.cpu_family.is_none() => m.cpu_family = v2.parse().ok(),
            "CPUModelNumber" if m.cpu_model_number.is_none() => {
                m.cpu_model_number = v2.parse().ok()
            }
            "DMISysVendor" if m.dmi_sys_vendor.is_none() => m.dmi_sys_vendor = Some(v2),
            "DMIProductName" if m.dmi_product_name.is_none() => m.dmi_product_name = Some(v2),
            _ => {}
        }
    }
    m.sockets = (packages > 0).then_some(packages);
    m.logical_cpus = (pus > 0).then_some(pus);
    m
}
