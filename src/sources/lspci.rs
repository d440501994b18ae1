//! The `lspci` text source: what operators paste into tickets — `lspci -vvv` (any verbosity,
//! `-nn`, `-D`, `-k`, as root or not), `lspci -tv` trees, `lspci -x`/`-xxx`/`-xxxx` hex dumps —
//! alone or together in one file among other text, read by [`crate::parse::lspci`] and turned
//! into the same [`Topology`] the sysfs scanner builds.
//!
//! Where each fact comes from:
//! - structure: the `-t` tree when the text has one; otherwise each bridge's `Bus: primary=
//!   secondary= subordinate=` line (a device's parent is the bridge whose secondary bus is its
//!   bus); otherwise none (every device directly on its bus's host bridge, said as such);
//! - IDs and class: `-nn`'s `[VVVV:DDDD]` and `[CCCC]`, a hex dump's header, or the printed
//!   names looked up backwards in the PCI ID database (`Device 2330` is read as the ID);
//! - config space: a hex dump through [`crate::parse::config`] (the sysfs decoder), else the
//!   registers printed: the Express capability (port type, LnkCap/LnkSta, DevCap/DevCtl), ACS
//!   (ACSCap/ACSCtl), AER (UESta/CESta with their mask and severity), ATS, SR-IOV;
//! - per device: `NUMA node`, `IOMMU group`, `Kernel driver in use`, `Physical Slot`, `Region`s.
//!
//! What the text could not show is said per device ([`Device::config_note`]) and for the
//! input ([`SourceInfo::limitations`]).

use super::assemble::{RawTopology, assemble};
use crate::model::aer::AerCounters;
use crate::model::bar::Bar;
use crate::model::bdf::{Bdf, host_bridge_name};
use crate::model::device::{
    Device, DeviceKind, LinkInfo, OsDevice, OsDeviceKind, RdmaPort, kind_from_class,
};
use crate::model::fact::Fact;
use crate::model::pci_config::{
    AcsCap, ConfigSpace, ECAP_ACS, ECAP_AER, ECAP_ATS, ECAP_SRIOV, PcieCap, PortType, SriovCap, acs,
};
use crate::model::topology::{MachineInfo, NumaNode, SourceInfo, Topology, Warning};
use crate::parse::ib_text::IbDevice;
use crate::parse::lspci::{self, Block, Doc, TreeNode};
use crate::parse::pci_ids::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// What no `lspci` text holds; copied into [`SourceInfo::limitations`].
pub const LIMITATIONS: &[&str] = &[
    "lspci text has no RDMA or network device names (mlx5_N, ib0) or port states, no CPU lists of NUMA nodes, no IOMMU group types, no loaded modules beyond what -k prints, no NVLinks and no NVML facts: NICs are numbered by PCI address and the IOMMU mode is unknown unless the text holds the kernel command line",
    "AER comes from the status registers lspci printed (UESta/CESta): a set bit is an error not yet cleared; the kernel clears the bits of errors it handles, so clear bits prove nothing and the cumulative counters are unknown",
];

/// Added when some devices' capabilities were `<access denied>`.
pub const NOT_ROOT: &str = "lspci ran without root (`Capabilities: <access denied>`): those devices' links, ACS, AER, MPS/MRRS and port types are unknown";
/// Added when some devices were printed without register details.
pub const NO_DETAIL: &str = "some devices were printed without capability registers (plain `lspci`, `-v`, or only named in the tree): their links, ACS and AER are unknown; `sudo lspci -vvv` prints them";
/// Added when the structure could not be rebuilt.
pub const NO_TREE: &str = "the text has no `lspci -t` tree and no bridge bus ranges (`Bus: primary= secondary= subordinate=`): devices are placed directly on their bus's host bridge, so switches and shared bridges cannot be seen (a VM's flat listing looks the same)";
/// Added when some classes were guessed from names.
pub const CLASS_FROM_NAME: &str = "some devices appear only in `lspci -tv`, which prints no class code: GPUs, NICs and NVMe drives among them are recognised by their vendor and name";

/// Whether text looks like `lspci` output peerpath reads (one device block or tree line).
pub fn looks_like(text: &str) -> bool {
    !lspci::parse(text).is_empty()
}

/// Vendors named in the text whose IDs decide a device's kind, for when no PCI ID database is
/// found (the names pciutils prints for them).
const VENDORS: &[(&str, u16)] = &[
    ("NVIDIA Corporation", 0x10de),
    ("Mellanox Technologies", 0x15b3),
    ("Advanced Micro Devices, Inc. [AMD/ATI]", 0x1002),
    ("Advanced Micro Devices, Inc. [AMD]", 0x1022),
    ("Intel Corporation", 0x8086),
    ("PLX Technology, Inc.", 0x10b5),
    ("Broadcom / LSI", 0x1000),
    ("Broadcom Inc. and subsidiaries", 0x14e4),
    ("Microsemi / PMC / IDT", 0x11f8),
    ("PMC-Sierra Inc.", 0x11f8),
    ("Habana Labs Ltd.", 0x1da3),
    ("Samsung Electronics Co Ltd", 0x144d),
];

/// Class names pciutils prints (pci.ids `C` section) whose code decides a kind, for when no
/// database is found.
const CLASSES: &[(&str, u16)] = &[
    ("VGA compatible controller", 0x0300),
    ("3D controller", 0x0302),
    ("Display controller", 0x0380),
    ("Processing accelerators", 0x1200),
    ("Ethernet controller", 0x0200),
    ("Infiniband controller", 0x0207),
    ("Network controller", 0x0280),
    ("Non-Volatile memory controller", 0x0108),
    ("PCI bridge", 0x0604),
    ("Host bridge", 0x0600),
    ("Bridge", 0x0680),
    ("System peripheral", 0x0880),
];

/// Names → IDs: the database's reverse maps when one was found, the tables above otherwise.
struct Ids {
    db: Option<Reverse>,
}

impl Ids {
    fn load(pci_ids: Option<&Path>) -> Ids {
        let max = super::fsroot::input::MAX_SIDE_FILE_BYTES;
        let db = pci_ids
            .and_then(|p| super::fsroot::input::read_input(p, max).ok())
            .map(|b| crate::parse::pci_ids::reverse(&b));
        Ids { db }
    }

    fn vendor(&self, name: &str) -> Option<u16> {
        self.db
            .as_ref()
            .and_then(|r| r.vendors.get(name).copied())
            .or_else(|| VENDORS.iter().find(|(n, _)| *n == name).map(|&(_, v)| v))
    }

    fn class(&self, name: &str) -> Option<u16> {
        if let Some(h) = name.strip_prefix("Class ") {
            return u16::from_str_radix(h, 16).ok();
        }
        self.db
            .as_ref()
            .and_then(|r| r.classes.get(name).copied())
            .or_else(|| CLASSES.iter().find(|(n, _)| *n == name).map(|&(_, c)| c))
    }

    /// Vendor and device IDs from a printed description (`NVIDIA Corporation Device 2330`,
    /// `Mellanox Technologies MT2910 Family [ConnectX-7]`, `Device 1e52:b140`).
    fn from_description(&self, desc: &str) -> (Option<u16>, Option<u16>, String) {
        let hex4 = |s: &str| {
            (s.len() == 4)
                .then(|| u16::from_str_radix(s, 16).ok())
                .flatten()
        };
        if let Some(rest) = desc.strip_prefix("Device ")
            && let Some((v, d)) = rest.split_once(':')
        {
            return (hex4(v), hex4(d), String::new());
        }
        // The longest vendor name the description starts with.
        let cuts: Vec<usize> = desc
            .char_indices()
            .filter(|&(_, c)| c == ' ')
            .map(|(i, _)| i)
            .chain(std::iter::once(desc.len()))
            .collect();
        for &cut in cuts.iter().rev() {
            let Some(v) = self.vendor(&desc[..cut]) else {
                continue;
            };
            let rest = desc[cut..].trim();
            let dev = match rest.strip_prefix("Device ") {
                Some(h) if h.len() == 4 => hex4(h),
                _ => self
                    .db
                    .as_ref()
                    .and_then(|r| r.devices.get(&(v, rest.to_string())).copied()),
            };
            return (Some(v), dev, rest.to_string());
        }
        (None, None, desc.to_string())
    }
}

/// A class for a device named only in a `-tv` tree, from its vendor and name (the tree prints
/// no class): `None` where nothing in the name says.
fn class_from_tree_name(vendor: Option<u16>, name: &str) -> Option<u32> {
    let n = name.to_ascii_lowercase();
    let not = |w: &[&str]| !w.iter().any(|x| n.contains(x));
    let plain = not(&[
        "audio", "usb", "serial", "bridge", "switch", "nvswitch", "dma", "smbus",
    ]);
    match vendor? {
        0x10de | 0x1002 if plain && not(&["sata", "ethernet", "nvme"]) => Some(0x030200),
        0x15b3 if plain && not(&["nvme"]) => Some(0x020000),
        _ if [
            "ethernet",
            "connectx",
            "network connection",
            "network adapter",
        ]
        .iter()
        .any(|w| n.contains(w)) =>
        {
            Some(0x020000)
        }
        _ if n.contains("nvme") || n.contains("non-volatile") => Some(0x010802),
        _ => None,
    }
}

/// What one address holds: its best block (most detail), its tree node, and `-nn` IDs seen in
/// any block of it.
#[derive(Default)]
struct Entry<'a> {
    block: Option<&'a Block>,
    ids: Option<(u16, u16)>,
    class_code: Option<u16>,
    tree: Option<&'a TreeNode>,
}

fn richness(b: &Block) -> (usize, bool, usize, usize) {
    (b.hex.len(), b.detailed, b.caps.len(), b.header.len())
}

/// A size `[size=64G]` in bytes.
fn size_bytes(s: &str) -> Option<u64> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n.parse().ok()?;
    let mult = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `Region 1: Memory at 13000000000 (64-bit, prefetchable) [size=64G]`.
fn bars(b: &Block) -> Vec<Bar> {
    b.header
        .iter()
        .filter_map(|r| {
            let idx = r.key.strip_prefix("Region ")?.parse::<u8>().ok()?;
            let size = r.value.split("[size=").nth(1)?.split(']').next()?;
            Some(Bar {
                index: idx,
                size: size_bytes(size)?,
                memory: r.value.starts_with("Memory"),
                prefetchable: r.value.contains(", prefetchable"),
                is_64bit: r.value.contains("64-bit"),
            })
        })
        .collect()
}

fn port_type(name: &str) -> Option<PortType> {
    let rest = name.strip_prefix("Express")?.trim_start();
    let rest = match rest.strip_prefix("(v") {
        Some(r) => r.split_once(')').map(|(_, r)| r.trim_start())?,
        None => rest,
    };
    let table: [(&str, u8); 9] = [
        ("Root Port", 4),
        ("Upstream Port", 5),
        ("Downstream Port", 6),
        ("Legacy Endpoint", 1),
        ("Endpoint", 0),
        ("Root Complex Integrated Endpoint", 9),
        ("Root Complex Event Collector", 10),
        ("PCI-Express to PCI/PCI-X Bridge", 7),
        ("PCI/PCI-X to PCI-Express Bridge", 8),
    ];
    table
        .iter()
        .find(|(p, _)| rest.starts_with(p))
        .map(|&(_, v)| PortType::from_bits(v))
}

/// ACS bits from an `ACSCap`/`ACSCtl` value: `None` unless all seven were printed whole.
fn acs_bits(value: &str) -> Option<u16> {
    let f = lspci::flags(value);
    let mut bits = 0;
    for (bit, name) in acs::NAMES {
        if *f.get(name)? {
            bits |= bit;
        }
    }
    Some(bits)
}

/// The Express capability's registers as the model's [`PcieCap`], and the link as printed.
fn pcie_from_text(c: &lspci::Capability, port: PortType) -> (PcieCap, LinkInfo) {
    let devcap = c.register("DevCap").unwrap_or("");
    let devctl = c.register("DevCtl").unwrap_or("");
    let (cap_s, cap_w) = c
        .register("LnkCap")
        .map(lspci::link)
        .unwrap_or((None, None));
    let (sta_s, sta_w) = c
        .register("LnkSta")
        .map(lspci::link)
        .unwrap_or((None, None));
    let f = lspci::flags(devctl);
    let slot = c.name.contains("(Slot+)");
    let physical_slot = c
        .register("SltCap")
        .and_then(|v| v.split("PhysSlot #").nth(1))
        .and_then(|v| v.split(|ch: char| !ch.is_ascii_digit()).next())
        .and_then(|v| v.parse().ok());
    let cap = PcieCap {
        offset: c.offset,
        port_type: port,
        mps_supported: lspci::bytes_after(devcap, "MaxPayload").unwrap_or(0),
        mps: lspci::bytes_after(devctl, "MaxPayload").unwrap_or(0),
        mrrs: lspci::bytes_after(devctl, "MaxReadReq").unwrap_or(0),
        relaxed_ordering: f.get("RlxdOrd").copied().unwrap_or(false),
        no_snoop: f.get("NoSnoop").copied().unwrap_or(false),
        link_cap_gts: cap_s,
        link_cap_width: cap_w.filter(|w| *w > 0),
        link_sta_gts: sta_s,
        link_sta_width: sta_w.filter(|w| *w > 0),
        slot_implemented: slot,
        physical_slot: if slot { physical_slot } else { None },
    };
    let down = sta_w == Some(0) && cap_w.is_some_and(|w| w > 0);
    let link = LinkInfo {
        current_gts: if down { None } else { sta_s },
        current_width: sta_w,
        max_gts: cap_s,
        max_width: cap_w,
    };
    (cap, link)
}

/// AER status bits as counters: each set, unmasked UESta bit (fatal where UESvrt marks it so)
/// and each set, unmasked CESta bit counts 1, named with its register; `None` when no such bit
/// is set (the kernel clears the bits of errors it handled, so clear bits prove nothing).
fn aer_from_text(c: &lspci::Capability) -> Option<[AerCounters; 3]> {
    let uesta = lspci::flags(c.register("UESta")?);
    let cesta = lspci::flags(c.register("CESta")?);
    let uemsk = lspci::flags(c.register("UEMsk").unwrap_or(""));
    let uesvrt = lspci::flags(c.register("UESvrt").unwrap_or(""));
    let cemsk = lspci::flags(c.register("CEMsk").unwrap_or(""));
    let mut out: [AerCounters; 3] = Default::default();
    // A masked error sends no error message, so the kernel's counters would not count it: a
    // masked bit is left out, as a clear one.
    let mut add = |slot: usize, reg: &str, name: &str, on: bool, masked: bool| {
        let a = &mut out[slot];
        if on && !masked {
            a.counters.push((format!("{name} ({reg} bit set)"), 1));
        } else {
            a.zero_counters += 1;
        }
    };
    let mut names: Vec<(&str, bool)> = cesta.iter().map(|(k, v)| (*k, *v)).collect();
    names.sort();
    for (n, on) in names {
        add(0, "CESta", n, on, cemsk.get(n) == Some(&true));
    }
    let mut names: Vec<(&str, bool)> = uesta.iter().map(|(k, v)| (*k, *v)).collect();
    names.sort();
    for (n, on) in names {
        let fatal = uesvrt.get(n) == Some(&true);
        add(
            if fatal { 2 } else { 1 },
            "UESta",
            n,
            on,
            uemsk.get(n) == Some(&true),
        );
    }
    // The kernel's AER driver clears the status bits of errors it handled: clear bits do not
    // say no error happened, so only set bits are a fact.
    out.iter().any(|a| !a.counters.is_empty()).then_some(out)
}

/// Everything the text says about one device's config space: the decoded space, its link,
/// and why more is not known.
struct FromText {
    config: Option<ConfigSpace>,
    link: Option<LinkInfo>,
    note: Option<String>,
    aer: Option<[AerCounters; 3]>,
}

fn bus_line(b: &Block) -> Option<(u8, u8, u8)> {
    let v = b.header("Bus")?;
    let get = |k: &str| {
        v.split(", ")
            .find_map(|p| p.strip_prefix(k))
            .and_then(|h| u8::from_str_radix(h, 16).ok())
    };
    Some((get("primary=")?, get("secondary=")?, get("subordinate=")?))
}

fn config_from_block(b: &Block, vendor: u16, device: u16, class: u32) -> FromText {
    if b.hex.len() >= 64
        && let Ok(c) = crate::parse::config::parse(&b.hex)
    {
        let link = c.pcie.as_ref().map(|p| {
            let down = p.link_sta_width.is_none() && p.link_cap_width.is_some();
            LinkInfo {
                current_gts: if down { None } else { p.link_sta_gts },
                current_width: if down { Some(0) } else { p.link_sta_width },
                max_gts: p.link_cap_gts,
                max_width: p.link_cap_width,
            }
        });
        let note = match c.len {
            _ if b.access_denied => Some("lspci ran without root: `Capabilities: <access denied>`, its hex dump stops at 64 bytes".into()),
            n if n < 256 => Some(format!("hex dump of {n} bytes (`lspci -x`): capabilities not dumped; `lspci -xxxx` as root dumps them")),
            n if n < 4096 => Some(format!("hex dump of {n} bytes (`lspci -xxx`): no extended config space (ACS, AER); `lspci -xxxx` as root dumps it")),
            _ => None,
        };
        return FromText {
            aer: None,
            link,
            note,
            config: Some(c),
        };
    }
    let header_type = if bus_line(b).is_some() || class >> 8 == 0x0604 {
        1
    } else {
        0
    };
    let mut cs = ConfigSpace {
        len: 64,
        vendor_id: vendor,
        device_id: device,
        class,
        header_type,
        multifunction: false,
        bridge_buses: bus_line(b),
        pcie: None,
        ext_caps: Vec::new(),
        acs: None,
        aer_offset: None,
        ats: None,
        sriov: None,
    };
    if b.access_denied {
        return FromText {
            config: Some(cs),
            link: None,
            note: Some("lspci ran without root: `Capabilities: <access denied>`".into()),
            aer: None,
        };
    }
    if !b.detailed {
        let how = if b.header.is_empty() && b.caps.is_empty() {
            "plain `lspci` listing"
        } else {
            "printed with `lspci -v` (capability names only)"
        };
        return FromText {
            config: (!b.header.is_empty()).then_some(cs),
            link: None,
            note: Some(format!(
                "{how}: no capability registers; `sudo lspci -vvv` prints them"
            )),
            aer: None,
        };
    }
    let mut link = None;
    let mut acs_cut = false;
    let mut notes: Vec<String> = Vec::new();
    let mut aer = None;
    let express = b.caps.iter().find(|c| c.name.starts_with("Express"));
    if let Some(e) = express {
        match port_type(&e.name) {
            Some(pt) => {
                let (p, l) = pcie_from_text(e, pt);
                if e.register("LnkSta").is_none() || e.register("LnkCap").is_none() {
                    notes.push("LnkCap/LnkSta not in the text (cut or elided)".to_string());
                }
                let integrated = matches!(
                    pt,
                    PortType::RcIntegratedEndpoint | PortType::RcEventCollector
                );
                if l.any() && !integrated {
                    link = Some(l);
                }
                cs.pcie = Some(p);
            }
            None => notes.push("its Express capability names no port type lspci prints".into()),
        }
    }
    for c in &b.caps {
        if c.offset < 0x100 {
            continue;
        }
        let id = if c.name.starts_with("Access Control Services") {
            ECAP_ACS
        } else if c.name.starts_with("Advanced Error Reporting") {
            ECAP_AER
        } else if c.name.starts_with("Address Translation Service") {
            ECAP_ATS
        } else if c.name.starts_with("Single Root I/O Virtualization") {
            ECAP_SRIOV
        } else {
            0
        };
        cs.ext_caps.push(id);
        match id {
            ECAP_ACS => match (
                c.register("ACSCap").and_then(acs_bits),
                c.register("ACSCtl").and_then(acs_bits),
            ) {
                (cap, Some(ctl)) => {
                    cs.acs = Some(AcsCap {
                        offset: c.offset,
                        capability: cap.unwrap_or(0),
                        control: ctl,
                    })
                }
                _ => {
                    acs_cut = true;
                    notes.push(
                        "its ACS capability has no whole ACSCtl line (the text is cut)".into(),
                    )
                }
            },
            ECAP_AER => {
                cs.aer_offset = Some(c.offset);
                aer = aer_from_text(c);
            }
            ECAP_ATS => {
                cs.ats = c
                    .register("ATSCtl")
                    .and_then(|v| lspci::flags(v).get("Enable").copied())
            }
            ECAP_SRIOV => {
                let v = c
                    .register("IOVSta")
                    .map(|_| ())
                    .and(c.register("Initial VFs"));
                let num = |k: &str| {
                    v.and_then(|v| v.split(", ").find_map(|p| p.strip_prefix(k)))
                        .and_then(|n| n.trim().parse().ok())
                };
                if let (Some(t), Some(n)) = (num("Total VFs: "), num("Number of VFs: ")) {
                    cs.sriov = Some(SriovCap {
                        offset: c.offset,
                        total_vfs: t,
                        num_vfs: n,
                    });
                }
            }
            _ => {}
        }
    }
    // lspci as root reads the whole config space of a PCI Express device; a block the poster
    // elided may have lost any capability, so its extended ones stay unknown.
    cs.len = if express.is_some() { 4096 } else { 256 };
    if b.elided && cs.acs.is_none() {
        notes.push(
            "the poster elided lines of this block (a dotted line): its extended capabilities (ACS) may be missing".into(),
        );
        cs.len = 256;
    }
    if acs_cut {
        cs.len = 256;
    }
    FromText {
        config: Some(cs),
        link,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
        aer,
    }
}

/// Reads `lspci` text into a topology. `shown` names the input in evidence; `pci_ids` is the
/// database used both for names and for reading names back into IDs.
pub fn read(
    text: &str,
    mut source: SourceInfo,
    pci_ids: Option<&Path>,
) -> anyhow::Result<Topology> {
    let doc = lspci::parse(text);
    if doc.blocks.is_empty() && doc.tree.is_empty() {
        if doc.tree_unresolved > 0 {
            anyhow::bail!(
                "the `lspci -t` text is a fragment that does not start at its root bus: none of its {} entries can be given a bus number",
                doc.tree_unresolved
            );
        }
        if let Some((first, _)) = doc.loose_acsctl.first() {
            let redirect = doc
                .loose_acsctl
                .iter()
                .filter(|(_, v)| {
                    acs_bits(v).is_some_and(|b| b & (acs::RR | acs::CR | acs::EC) != 0)
                })
                .count();
            let cut = doc
                .loose_acsctl
                .iter()
                .filter(|(_, v)| acs_bits(v).is_none())
                .count();
            anyhow::bail!(
                "only `ACSCtl:` lines (a grep of `lspci -vvv`, first at line {first}): {} line(s), {redirect} redirecting peer-to-peer traffic (ReqRedir+, CmpltRedir+ or EgressCtrl+), {cut} cut; without their devices there is no topology to build",
                doc.loose_acsctl.len()
            );
        }
        anyhow::bail!("no lspci device lines or tree found");
    }
    let raw = discover(&doc, text, &mut source, pci_ids);
    Ok(assemble(raw, pci_ids))
}

fn discover(doc: &Doc, text: &str, source: &mut SourceInfo, pci_ids: Option<&Path>) -> RawTopology {
    source.kind = "lspci".into();
    let shown = source.path.clone();
    let ids = Ids::load(pci_ids);
    let mut warnings: Vec<Warning> = Vec::new();
    // Domains of the tree, by (bus, device, function), to place blocks printed without -D.
    let mut tree_domains: HashMap<(u8, u8, u8), BTreeSet<u32>> = HashMap::new();
    for n in &doc.tree {
        tree_domains
            .entry((n.bus, n.device, n.function))
            .or_default()
            .insert(n.domain);
    }
    let mut entries: BTreeMap<Bdf, Entry> = BTreeMap::new();
    for n in &doc.tree {
        let b = Bdf {
            domain: n.domain,
            bus: n.bus,
            device: n.device,
            function: n.function,
        };
        entries.entry(b).or_default().tree = Some(n);
    }
    for blk in &doc.blocks {
        let Some(a) = blk.addr else { continue };
        let domain =
            a.domain
                .unwrap_or_else(|| match tree_domains.get(&(a.bus, a.device, a.function)) {
                    Some(s) if s.len() == 1 => *s.iter().next().unwrap_or(&0),
                    _ => 0,
                });
        let b = Bdf {
            domain,
            bus: a.bus,
            device: a.device,
            function: a.function,
        };
        let e = entries.entry(b).or_default();
        if blk.ids.is_some() {
            e.ids = blk.ids;
        }
        if blk.class_code.is_some() {
            e.class_code = blk.class_code;
        }
        if e.block.is_none_or(|old| richness(blk) > richness(old)) {
            e.block = Some(blk);
        }
    }
    // Parents: the tree's, else the bridge whose secondary bus is the device's bus.
    let mut secondary: HashMap<(u32, u8), Bdf> = HashMap::new();
    for (b, e) in &entries {
        let buses = e
            .tree
            .and_then(|t| t.buses)
            .map(|(s, _)| s)
            .or_else(|| e.block.and_then(bus_line).map(|(_, s, _)| s));
        if let Some(s) = buses {
            secondary.entry((b.domain, s)).or_insert(*b);
        }
    }
    let have_structure = !doc.tree.is_empty() || !secondary.is_empty();
    if !have_structure && entries.len() > 1 {
        source.limitations.push(NO_TREE.to_string());
    }
    let parent_of = |b: &Bdf, e: &Entry| -> Option<Bdf> {
        if let Some(t) = e.tree {
            return t.parent.map(|(d, bus, dev, f)| Bdf {
                domain: d,
                bus,
                device: dev,
                function: f,
            });
        }
        secondary
            .get(&(b.domain, b.bus))
            .copied()
            .filter(|p| p != b)
    };
    let parents: BTreeMap<Bdf, Option<Bdf>> =
        entries.iter().map(|(b, e)| (*b, parent_of(b, e))).collect();
    let root_of = |b: &Bdf| -> Bdf {
        let mut cur = *b;
        for _ in 0..64 {
            match parents.get(&cur).copied().flatten() {
                Some(p) if parents.contains_key(&p) => cur = p,
                Some(p) => return p,
                None => break,
            }
        }
        cur
    };
    let mut non_root = 0;
    let mut undetailed = 0;
    let mut guessed = Vec::new();
    let mut numa: BTreeSet<u32> = BTreeSet::new();
    let mut devices = Vec::new();
    for (b, e) in &entries {
        let root = root_of(b);
        let line = e
            .block
            .map(|x| x.line)
            .or(e.tree.map(|t| t.line))
            .unwrap_or(0);
        let mut d = Device::new(
            *b,
            host_bridge_name(root.domain, root.bus),
            format!("lspci:line {line}"),
        );
        d.parent = parents.get(b).copied().flatten();
        let hex_ids = e
            .block
            .filter(|x| x.hex.len() >= 64)
            .and_then(|x| crate::parse::config::header_ids(&x.hex));
        let tree_name = e.tree.map(|t| t.name.as_str()).unwrap_or("");
        let tree_ids = tree_name
            .rsplit_once(" [")
            .and_then(|(_, r)| r.strip_suffix(']'))
            .and_then(|r| r.split_once(':'))
            .and_then(|(v, dv)| {
                Some((
                    u16::from_str_radix(v, 16).ok()?,
                    u16::from_str_radix(dv, 16).ok()?,
                ))
            });
        let desc = e.block.map(|x| x.description.as_str()).unwrap_or(tree_name);
        let (vendor, device, rest) = match e
            .ids
            .or(hex_ids.map(|h| (h.vendor_id, h.device_id)))
            .or(tree_ids)
        {
            Some((v, dv)) => (Some(v), Some(dv), String::new()),
            None => ids.from_description(desc),
        };
        d.vendor_id = vendor;
        d.device_id = device;
        if device.is_none() {
            // The name the text printed where no ID could be read (assembly keeps it).
            d.device_name = match (rest.is_empty(), e.tree.and_then(|t| t.buses)) {
                (false, _) => Some(rest),
                (true, Some((s, u))) => Some(format!(
                    "bridge to buses {s:02x}-{u:02x} (named only in `lspci -t`)"
                )),
                (true, None) => None,
            };
        }
        if let Some(h) = hex_ids {
            d.revision = Some(h.revision);
            if let Some((sv, sd)) = h.subsystem {
                d.subsystem_vendor_id = Some(sv);
                d.subsystem_device_id = Some(sd);
            }
        } else {
            d.revision = e.block.and_then(|x| x.revision);
        }
        let prog_if = e.block.and_then(|x| x.prog_if).unwrap_or(0) as u32;
        let class = e
            .class_code
            .map(|c| (c as u32) << 8 | prog_if)
            .or(hex_ids.map(|h| h.class))
            .or_else(|| {
                e.block
                    .and_then(|x| ids.class(&x.class_name))
                    .map(|c| (c as u32) << 8 | prog_if)
            });
        d.class = match class {
            Some(c) => c,
            None if e.tree.is_some_and(|t| t.buses.is_some()) => 0x060400,
            None => match class_from_tree_name(vendor, tree_name) {
                Some(c) => {
                    guessed.push(*b);
                    c
                }
                None => 0,
            },
        };
        d.kind = kind_from_class(d.class, vendor, device);
        match e.block {
            Some(blk) => {
                let ft = config_from_block(
                    blk,
                    vendor.unwrap_or(0xffff),
                    device.unwrap_or(0xffff),
                    d.class,
                );
                if blk.access_denied {
                    non_root += 1;
                } else if !blk.detailed && blk.hex.len() < 64 {
                    undetailed += 1;
                }
                d.config = ft.config;
                d.link = ft.link;
                d.config_note = ft.note;
                if let Some([c, n, f]) = ft.aer {
                    d.aer_correctable = Some(c);
                    d.aer_nonfatal = Some(n);
                    d.aer_fatal = Some(f);
                }
                d.numa_node = blk.header("NUMA node").and_then(|v| v.parse().ok());
                d.iommu_group = blk.header("IOMMU group").and_then(|v| v.parse().ok());
                d.driver = blk.driver.clone();
                d.slot = blk.header("Physical Slot").map(str::to_string);
                d.bars = bars(blk);
            }
            None => {
                undetailed += 1;
                d.config_note =
                    Some("named only in the `lspci -t` tree, not in any `lspci -vvv` block".into());
            }
        }
        if let Some(n) = d.numa_node {
            numa.insert(n);
        }
        devices.push(d);
    }
    dmesg_aer(text, &mut devices);
    let ib = crate::parse::ib_text::parse(text);
    match name_rdma(&mut devices, &ib, &mut warnings, &shown) {
        Naming::Read => {}
        Naming::ByOrder(from) => source.limitations.push(format!(
            "RDMA device names come from the `{from}` text beside the lspci output, matched to the ConnectX functions in PCI address order (the order the kernel names them in; `ibdev2netdev -v` gives each name with its address)"
        )),
        Naming::Default(n) => source
            .limitations
            .push(format!("{RDMA_BY_ORDER} ({n} device(s))")),
    }
    if non_root > 0 {
        source
            .limitations
            .push(format!("{NOT_ROOT} ({non_root} device(s))"));
    }
    if undetailed > 0 {
        source
            .limitations
            .push(format!("{NO_DETAIL} ({undetailed} device(s))"));
    }
    if !guessed.is_empty() {
        source.limitations.push(CLASS_FROM_NAME.to_string());
        warnings.push(Warning {
            path: shown.clone(),
            message: format!(
                "class of {} device(s) taken from their names in the tree: {}",
                guessed.len(),
                guessed
                    .iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    if doc.tree_unresolved > 0 {
        warnings.push(Warning {
            path: shown.clone(),
            message: format!(
                "{} `lspci -t` entries left out: the text is a fragment of a tree that does not start at its root bus, so their bus numbers cannot be read",
                doc.tree_unresolved
            ),
        });
    }
    if !doc.loose_acsctl.is_empty() {
        let redirect = doc
            .loose_acsctl
            .iter()
            .filter(|(_, v)| acs_bits(v).is_some_and(|b| b & (acs::RR | acs::CR | acs::EC) != 0))
            .count();
        warnings.push(Warning {
            path: shown.clone(),
            message: format!(
                "{} `ACSCtl:` line(s) without their device (a grep of `lspci -vvv`; first at line {}): {redirect} redirect peer-to-peer traffic, but which ports they belong to cannot be told",
                doc.loose_acsctl.len(),
                doc.loose_acsctl[0].0
            ),
        });
    }
    let kernel_cmdline = cmdline(text);
    // `intel_iommu=off`/`amd_iommu=off` on the running command line: the kernel registers no
    // IOMMU, so DMA is untranslated; anything else leaves the units unknown.
    let off = kernel_cmdline.known().is_some_and(|c| {
        c.split_whitespace()
            .any(|t| matches!(t, "intel_iommu=off" | "amd_iommu=off" | "iommu=off"))
    });
    let machine = MachineInfo {
        kernel_cmdline,
        iommu_units: if off {
            Fact::Known(Vec::new())
        } else {
            Fact::Unknown("lspci text does not list IOMMU units".into())
        },
        ..MachineInfo::default()
    };
    let mut lims: Vec<String> = LIMITATIONS.iter().map(|s| s.to_string()).collect();
    lims.append(&mut source.limitations);
    source.limitations = lims;
    let mut raw = RawTopology::new(source.clone(), machine);
    let numactl = numactl_nodes(text);
    raw.numa_nodes = if numactl.is_empty() {
        numa.into_iter()
            .map(|id| NumaNode {
                id,
                cpus: String::new(),
                distances: Vec::new(),
            })
            .collect()
    } else {
        numactl
    };
    raw.devices = devices;
    raw.warnings = warnings;
    raw
}

/// How the RDMA devices of a text were named.
enum Naming {
    /// Every name read with its PCI address (`ibdev2netdev -v`), or no ConnectX function.
    Read,
    /// Names read from a tool's text without addresses, matched to ConnectX physical
    /// functions in PCI address order.
    ByOrder(&'static str),
    /// No usable naming text: the kernel's default names.
    Default(usize),
}

/// Names the RDMA devices of ConnectX functions. Devices the text names with a PCI address
/// (`ibdev2netdev -v`) go to that function; names without one (`ibstat`, `ibv_devinfo`, the
/// `nvidia-smi topo -m` legend) go to the remaining ConnectX physical functions in PCI
/// address order (the order the kernel registers and names them), when their counts agree;
/// otherwise each remaining function gets the name the kernel gives it when nothing renames
/// it (`mlx5_N` in PCI address order; virtual functions come after every physical one, so
/// they do not shift these names). Ports and netdevs the text states are attached.
fn name_rdma(
    devices: &mut [Device],
    ib: &[IbDevice],
    warnings: &mut Vec<Warning>,
    shown: &str,
) -> Naming {
    let attach = |d: &mut Device, x: Option<&IbDevice>, name: String| {
        let mut o = OsDevice::new(OsDeviceKind::Rdma, name);
        if let Some(x) = x {
            o.attrs
                .push(("text".into(), format!("`{}` line {}", x.from, x.line)));
            o.ports = x
                .ports
                .iter()
                .map(|p| RdmaPort {
                    port: p.port,
                    state: p.state.clone(),
                    phys_state: p.phys_state.clone(),
                    rate_gbps: p.rate_gbps,
                    rate_text: None,
                    link_layer: p.link_layer.clone(),
                })
                .collect();
            if let Some(n) = &x.netdev {
                d.os_devices
                    .push(OsDevice::new(OsDeviceKind::Net, n.clone()));
            }
        }
        d.os_devices.push(o);
    };
    let mut used = vec![false; ib.len()];
    for (k, x) in ib.iter().enumerate() {
        let Some(b) = x.pci.as_deref().and_then(|p| p.parse::<Bdf>().ok()) else {
            continue;
        };
        if let Some(d) = devices.iter_mut().find(|d| d.bdf == b) {
            attach(d, Some(x), x.name.clone());
            used[k] = true;
        }
    }
    let mut order: Vec<usize> = (0..devices.len())
        .filter(|&i| {
            let d = &devices[i];
            d.vendor_id == Some(0x15b3)
                && d.kind == DeviceKind::Nic
                && d.driver.as_deref().is_none_or(|x| x == "mlx5_core")
                && !d
                    .device_name
                    .as_deref()
                    .is_some_and(|x| x.contains("Virtual Function"))
                && !VF_IDS.contains(&d.device_id.unwrap_or(0))
                && !d.os_devices.iter().any(|o| o.kind == OsDeviceKind::Rdma)
        })
        .collect();
    order.sort_by_key(|&i| devices[i].bdf);
    let mut rest: Vec<usize> = (0..ib.len()).filter(|&k| !used[k]).collect();
    rest.sort_by_key(|&k| crate::parse::ib_text::natural_key(&ib[k].name));
    if order.is_empty() {
        return Naming::Read;
    }
    if !rest.is_empty() && rest.len() == order.len() {
        let from = ib[rest[0]].from;
        for (&i, &k) in order.iter().zip(&rest) {
            attach(&mut devices[i], Some(&ib[k]), ib[k].name.clone());
        }
        return Naming::ByOrder(from);
    }
    if !rest.is_empty() {
        warnings.push(Warning {
            path: shown.to_string(),
            message: format!(
                "{} RDMA device(s) named in the text ({}, first at line {}) but {} ConnectX function(s) without a name: the names cannot be matched to functions (the text does not list every function), so the kernel's default names are used",
                rest.len(),
                ib[rest[0]].from,
                ib[rest[0]].line,
                order.len()
            ),
        });
    }
    for (n, &i) in order.iter().enumerate() {
        attach(&mut devices[i], None, format!("mlx5_{n}"));
    }
    Naming::Default(order.len())
}

/// ConnectX virtual function device IDs (ConnectX-4 to ConnectX-8 and BlueField VFs).
const VF_IDS: [u16; 8] = [
    0x1014, 0x1016, 0x1018, 0x101a, 0x101c, 0x101e, 0x1022, 0x1024,
];

/// Added when RDMA device names were given by the kernel's order rule.
pub const RDMA_BY_ORDER: &str = "RDMA device names are not in lspci text: each ConnectX physical function is given the name the kernel gives it when nothing renames it (mlx5_N in PCI address order); udev or bonding renames (mlx5_ib0, mlx5_bond_0) and port states are unknown";

/// AER errors the kernel logged (`dmesg` in an `nvidia-bug-report.log` or beside lspci):
/// `<driver> DDDD:BB:DD.F: [AER: ]PCIe Bus Error: severity=Corrected, type=Physical Layer, …`
/// counts one error of that severity on that device (Corrected → correctable, Uncorrected
/// (Non-Fatal) → nonfatal, Uncorrected (Fatal) → fatal), named with its type and first line.
fn dmesg_aer(text: &str, devices: &mut [Device]) {
    let mut seen: BTreeMap<(Bdf, usize, String), (u64, usize)> = BTreeMap::new();
    for (i, l) in text.lines().enumerate() {
        let Some(at) = l.find("PCIe Bus Error: severity=") else {
            continue;
        };
        let Some(bdf) = l[..at]
            .split_whitespace()
            .filter_map(|t| t.trim_end_matches(':').parse::<Bdf>().ok())
            .next_back()
        else {
            continue;
        };
        let rest = &l[at + "PCIe Bus Error: severity=".len()..];
        let (sev, rest) = rest.split_once(", ").unwrap_or((rest, ""));
        let slot = if sev.starts_with("Corrected") {
            0
        } else if sev.contains("Fatal") && !sev.contains("Non-Fatal") {
            2
        } else {
            1
        };
        let ty = rest
            .strip_prefix("type=")
            .map(|t| t.split(',').next().unwrap_or(t).trim().to_string())
            .unwrap_or_default();
        let e = seen.entry((bdf, slot, ty)).or_insert((0, i + 1));
        e.0 += 1;
    }
    for ((bdf, slot, ty), (n, line)) in seen {
        let Some(d) = devices.iter_mut().find(|d| d.bdf == bdf) else {
            continue;
        };
        let c = match slot {
            0 => &mut d.aer_correctable,
            1 => &mut d.aer_nonfatal,
            _ => &mut d.aer_fatal,
        };
        c.get_or_insert_with(AerCounters::default)
            .counters
            .push((format!("dmesg: {ty} (first at line {line})"), n));
    }
}

/// NUMA nodes from `numactl --hardware` text beside the lspci output (`node 0 cpus: 0 1 2`).
fn numactl_nodes(text: &str) -> Vec<NumaNode> {
    let mut out = Vec::new();
    for l in text.lines() {
        let Some(rest) = l.trim().strip_prefix("node ") else {
            continue;
        };
        let Some((id, cpus)) = rest.split_once(" cpus:") else {
            continue;
        };
        let Ok(id) = id.trim().parse::<u32>() else {
            continue;
        };
        let list: Option<Vec<u32>> = cpus.split_whitespace().map(|c| c.parse().ok()).collect();
        if let Some(list) = list
            && !out.iter().any(|n: &NumaNode| n.id == id)
        {
            out.push(NumaNode {
                id,
                cpus: crate::model::cpulist::format_list(&list),
                distances: Vec::new(),
            });
        }
    }
    out
}

/// The kernel command line where the text holds it (a `/proc/cmdline` section, or a line that
/// starts `BOOT_IMAGE=`); unknown otherwise.
fn cmdline(text: &str) -> Fact<String> {
    // The line after a `/proc/cmdline` heading (nvidia-bug-report: `*** /proc/cmdline`, then
    // its `*** ls:` line), else any `BOOT_IMAGE=` line.
    let mut lines = text.lines().map(str::trim);
    let after_heading = std::iter::from_fn(|| {
        lines
            .by_ref()
            .find(|l| l.trim_start_matches("*** ") == "/proc/cmdline")?;
        lines
            .by_ref()
            .find(|l| !l.is_empty() && !l.starts_with("***"))
    })
    .next();
    let found = after_heading.or_else(|| {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with("BOOT_IMAGE="))
    });
    match found {
        Some(l) => Fact::Known(l.to_string()),
        None => {
            Fact::Unknown("the text holds no kernel command line (no `/proc/cmdline` line)".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src() -> SourceInfo {
        SourceInfo {
            kind: "lspci".into(),
            path: "t.txt".into(),
            limitations: vec![],
        }
    }

    #[test]
    fn dmesg_aer_and_cmdline_sections() {
        let text = "\
00:01.0 PCI bridge [0604]: Intel Corporation Device 09a4 [8086:09a4]
\tBus: primary=00, secondary=01, subordinate=01, sec-latency=0

01:00.0 3D controller [0302]: NVIDIA Corporation Device 2330 [10de:2330] (rev a1)
\tNUMA node: 0

[  12.1] pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0
[  12.1] nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
[  13.5] nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
[  14.0] nvidia 0000:01:00.0: AER: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)
____________________________________________

*** /proc/cmdline
*** ls: -r--r--r-- 1 root root 0 2026-12-05 /proc/cmdline
root=/dev/sda1 ro intel_iommu=off
";
        let t = read(text, src(), None).unwrap();
        let g = t.device(&"0000:01:00.0".parse().unwrap()).unwrap();
        assert_eq!(g.parent, Some("0000:00:01.0".parse().unwrap()));
        let c = g.aer_correctable.as_ref().unwrap();
        assert_eq!(
            c.counters,
            vec![("dmesg: Physical Layer (first at line 8)".to_string(), 2)]
        );
        assert_eq!(g.aer_nonfatal.as_ref().unwrap().counters[0].1, 1);
        assert_eq!(
            t.machine.kernel_cmdline.known().map(String::as_str),
            Some("root=/dev/sda1 ro intel_iommu=off")
        );
        assert_eq!(t.machine.iommu_units.known(), Some(&Vec::new()));
        // Not lspci text at all.
        assert!(read("hello\nworld\n", src(), None).is_err());
    }
}
