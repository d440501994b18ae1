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
use crate::model::bdf::{Bdf, host_bridge_name};
use crate::model::device::{Device, kind_from_class};
use crate::model::fact::Fact;
use crate::model::parts::Part;
use crate::model::pci_config::acs;
use crate::model::topology::{MachineInfo, NumaNode, SourceInfo, Topology, Warning};
use crate::parse::lspci::{self, Block, Doc, TreeNode};
use crate::parse::pci_ids::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

mod beside;
mod registers;
use beside::{
    Naming, RDMA_BY_ORDER, cmdline, dmesg_aer, modules, name_rdma, numactl_nodes, nvidia_smi_q,
    sysfs_numa,
};
use registers::{acs_bits, bars, bus_line, config_from_block, sriov_layout, vpd_uuids};

/// What no `lspci` text holds; copied into [`SourceInfo::limitations`].
pub const LIMITATIONS: &[&str] = &[
    "lspci text has no RDMA or network device names (mlx5_N, ib0) or port states, no CPU lists of NUMA nodes, no IOMMU group types, no loaded modules beyond what -k prints, no NVLinks, no NVML facts, no KFD topology (AMD GPU memory size, PCIe atomics flags, xGMI links, amdkfd peer memory) and no GPUDirect Storage facts (/etc/cufile.json, nvidia-fs, mounts): NICs are numbered by PCI address and the IOMMU mode is unknown unless the text holds the kernel command line or the kernel's own log (dmesg)",
    "AER comes from the status registers lspci printed (UESta/CESta) and any kernel log beside them: a set, unmasked bit is an error not yet cleared, a masked one was never reported; the kernel clears the bits of errors it handles, so clear bits prove nothing and the cumulative counters are unknown",
];

/// Added when some devices' capabilities were `<access denied>`.
pub const NOT_ROOT: &str = "lspci ran without root (`Capabilities: <access denied>`): those devices' links, ACS, AER, MPS/MRRS and port types are unknown";
/// Added when some devices were printed without register details.
pub const NO_DETAIL: &str = "some devices were printed without capability registers (plain `lspci`, `-v`, or only named in the tree): their links, ACS and AER are unknown; `sudo lspci -vvv` prints them";
/// Added when the structure could not be rebuilt.
pub const NO_TREE: &str = "the text has no `lspci -t` tree and no bridge bus ranges (`Bus: primary= secondary= subordinate=`): devices are placed directly on their bus's host bridge, so switches and shared bridges cannot be seen (a VM's flat listing looks the same)";
/// Added when some classes were guessed from names.
pub const CLASS_FROM_NAME: &str = "some devices appear only in `lspci -tv`, which prints no class code: GPUs, NICs and NVMe drives among them are recognised by their vendor and name";

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
    path: Option<std::path::PathBuf>,
    /// Read on first use: a text printed with `-nn` never needs it.
    db: std::cell::OnceCell<Option<Reverse>>,
}

impl Ids {
    fn load(pci_ids: Option<&Path>) -> Ids {
        Ids {
            path: pci_ids.map(Path::to_path_buf),
            db: std::cell::OnceCell::new(),
        }
    }

    fn db(&self) -> Option<&Reverse> {
        self.db
            .get_or_init(|| {
                let max = super::fsroot::input::MAX_SIDE_FILE_BYTES;
                self.path
                    .as_deref()
                    .and_then(|p| super::fsroot::input::read_input(p, max).ok())
                    .map(|b| crate::parse::pci_ids::reverse(&b))
            })
            .as_ref()
    }

    fn vendor(&self, name: &str) -> Option<u16> {
        self.db()
            .and_then(|r| r.vendors.get(name).copied())
            .or_else(|| VENDORS.iter().find(|(n, _)| *n == name).map(|&(_, v)| v))
    }

    fn class(&self, name: &str) -> Option<u16> {
        if let Some(h) = name.strip_prefix("Class ") {
            return u16::from_str_radix(h, 16).ok();
        }
        self.db()
            .and_then(|r| r.classes.get(name).copied())
            .or_else(|| CLASSES.iter().find(|(n, _)| *n == name).map(|&(_, c)| c))
    }

    /// Vendor and device IDs from a printed description (`NVIDIA Corporation Device 2330`,
    /// `Mellanox Technologies MT2910 Family [ConnectX-7]`, `Device 1e52:b140`).
    fn read_description(&self, desc: &str) -> (Option<u16>, Option<u16>, String) {
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
                    .db()
                    .and_then(|r| r.devices.get(&(v, rest.to_string())).copied()),
            };
            return (Some(v), dev, rest.to_string());
        }
        (None, None, desc.to_string())
    }
}

/// A class for a device named only in a `-tv` tree, from its vendor and name (the tree prints
/// no class): `None` where nothing in the name says.
fn class_from_tree_name(vendor: Option<u16>, device: Option<u16>, name: &str) -> Option<u32> {
    let n = name.to_ascii_lowercase();
    let not = |w: &[&str]| !w.iter().any(|x| n.contains(x));
    let plain = not(&[
        "audio", "usb", "serial", "bridge", "switch", "nvswitch", "dma", "smbus",
    ]);
    match vendor? {
        0x10de | 0x1002 if plain && not(&["sata", "ethernet", "nvme"]) => Some(0x030200),
        0x15b3 if plain && not(&["nvme"]) => Some(0x020000),
        // HPE Cassini (Slingshot) adapters, the only PCI functions of vendor 17db in a host.
        0x17db => Some(0x020000),
        // Broadcom NetXtreme-E (BCM573xx/574xx, Thor/Thor2 BCM575xx/576xx) Ethernet functions.
        0x14e4
            if device.is_some_and(|d| {
                (0x16c0..=0x16ff).contains(&d) || (0x1750..=0x17ff).contains(&d)
            }) =>
        {
            Some(0x020000)
        }
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

/// SR-IOV virtual functions found from their physical function's registers (`VF offset`,
/// `stride`, `Number of VFs`: VF k's routing ID is the PF's plus offset + k × stride, PCIe
/// SR-IOV 3.3.10–11): each gets its `physfn` and, as in sysfs, no link of its own (it uses
/// its PF's); the PF counts them. A VF whose PF is not in the text (a VM guest's) stays a
/// function of its own.
fn link_vfs(devices: &mut [Device]) {
    let index: HashMap<Bdf, usize> = devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.bdf, i))
        .collect();
    let pfs: Vec<(Bdf, (u16, u16, u16))> = devices
        .iter()
        .filter_map(|d| Some((d.bdf, d.config.as_ref().and_then(sriov_layout)?)))
        .collect();
    for (pf, (offset, stride, num)) in &pfs {
        let (offset, stride, num) = (*offset, *stride, *num);
        let rid = (u32::from(pf.bus) << 8) | (u32::from(pf.device) << 3) | u32::from(pf.function);
        let mut found = 0;
        for k in 0..u32::from(num) {
            let r = rid + u32::from(offset) + k * u32::from(stride);
            if r > 0xffff {
                break;
            }
            let vf = Bdf {
                domain: pf.domain,
                bus: (r >> 8) as u8,
                device: ((r >> 3) & 0x1f) as u8,
                function: (r & 7) as u8,
            };
            if let Some(&i) = index.get(&vf) {
                devices[i].physfn = Some(*pf);
                devices[i].link = None;
                found += 1;
            }
        }
        if let Some(&i) = index.get(pf) {
            devices[i].vf_count = found;
        }
    }
}

/// Devices only a hypervisor presents (QEMU's bridges and root ports, virtio, Hyper-V's and
/// VMware's virtual devices), as evidence that the text comes from a VM: `(FILE line N, the
/// device's description)`, the first three.
fn hypervisor_evidence(entries: &BTreeMap<Bdf, Entry>, shown: &str) -> Vec<(String, String)> {
    const MARKS: [&str; 5] = ["QEMU", "Virtio", "Hyper-V", "VMware", "Xen "];
    entries
        .values()
        .filter_map(|e| match (e.block, e.tree) {
            (Some(b), _) => Some((b.line, b.description.as_str())),
            (None, Some(t)) => Some((t.line, t.name.as_str())),
            _ => None,
        })
        .filter(|(_, d)| MARKS.iter().any(|m| d.contains(m)))
        .take(3)
        .map(|(line, d)| (format!("{shown} line {line}"), d.to_string()))
        .collect()
}

/// The most device blocks, or tree entries, read from one `lspci` text: a PCI segment's
/// 65,536 functions (a large real node prints a few thousand). Every device costs about 2 KB
/// through the scan and its outputs (measured: 10^5 devices, 199 MB), so 10^6 devices in a
/// 96 MB text took 1.9 GB and died under a 2 GB address-space cap (issue 53); more are
/// refused whole, never cut.
pub const MAX_TEXT_DEVICES: usize = 65_536;

/// Reads `lspci` text into a topology. `shown` names the input in evidence; `pci_ids` is the
/// database used both for names and for reading names back into IDs. A text printing more
/// than [`MAX_TEXT_DEVICES`] device blocks or tree entries is refused in the cap's words.
pub fn read(
    text: &str,
    mut source: SourceInfo,
    pci_ids: Option<&Path>,
) -> anyhow::Result<Topology> {
    let doc = lspci::parse(text);
    let printed = doc.blocks.len().max(doc.tree.len());
    if printed > MAX_TEXT_DEVICES {
        // Kind `FileTooLarge`: a size cap's refusal, said as it is by every caller.
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "the text prints {printed} devices, more than the {MAX_TEXT_DEVICES} peerpath reads of one lspci text (a PCI segment's functions); refused (never judged from a cut)"
            ),
        )
        .into());
    }
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
    let structured = !doc.tree.is_empty() || doc.blocks.iter().any(|b| bus_line(b).is_some());
    let mut t = assemble(raw, pci_ids);
    unplace_bridges(&mut t, structured);
    Ok(t)
}

/// A bridge the structure rule made a root port only because nothing is above it in the text is
/// a bridge whose place is unknown, never a root port, when its name says it is a switch
/// function (`PEX 8747 … Switch`), or when the text has no structure at all (no tree, no `Bus:`
/// line: an `lspci | grep PLX` excerpt) and its name does not say `Root Port`.
fn unplace_bridges(t: &mut Topology, structured: bool) {
    use crate::model::device::DeviceKind;
    for d in t.devices.iter_mut() {
        let named_switch = d.device_name.as_deref().is_some_and(|n| {
            n.split(|c: char| !c.is_alphanumeric())
                .any(|w| w == "Switch")
        });
        let named_root = d
            .device_name
            .as_deref()
            .is_some_and(|n| n.contains("Root Port"));
        if d.kind == DeviceKind::RootPort
            && d.parent.is_none()
            && d.port_type().is_none()
            && (named_switch || (!structured && !named_root))
        {
            d.kind = DeviceKind::Bridge;
            let note = if named_switch {
                "named a switch function, but the text shows neither its port type nor what is above it: not a root port, its switch and host bridge unknown"
            } else {
                "a bridge the text shows without its port type or what is above it (no tree, no `Bus:` line): whether it is a root port is unknown"
            };
            d.config_note = Some(match d.config_note.take() {
                Some(n) => format!("{n}; {note}"),
                None => note.to_string(),
            });
        }
    }
}

/// What reading the devices counts and collects for the notes of the input.
#[derive(Default)]
struct Tally {
    /// Devices printed as `Capabilities: <access denied>` (lspci not run as root).
    non_root: usize,
    /// Devices printed without capability registers (or only in the tree).
    undetailed: usize,
    /// Devices whose class was taken from their name in the tree.
    guessed: Vec<Bdf>,
    /// NUMA nodes the blocks name.
    numa: BTreeSet<u32>,
    /// The VPD keywords that pair Data Direct functions with their NIC functions.
    uuids: crate::sources::datadirect::VpdUuids,
}

/// The phases of every discovery (docs/architecture.md, "Discover, phase by phase"):
/// enumerate the addresses the text names and their parents ([`entries`], [`parents`]), read
/// each device from its block and tree node ([`read_device`]), link what the text beside the
/// lspci output adds ([`link_beside`]), and annotate the input ([`note_input`],
/// [`machine_of`]).
fn discover(doc: &Doc, text: &str, source: &mut SourceInfo, pci_ids: Option<&Path>) -> RawTopology {
    source.kind = "lspci".into();
    let shown = source.path.clone();
    let ids = Ids::load(pci_ids);
    let mut warnings: Vec<Warning> = Vec::new();
    // 1. Enumerate: every address, and its parent.
    let entries = entries(doc);
    let parents = parents(doc, &entries, source);
    // 2. Read each device.
    let mut tally = Tally::default();
    let mut devices = Vec::new();
    for (b, e) in &entries {
        let root = root_of(&parents, b);
        let d = read_device(*b, e, root, &parents, &ids, &mut tally);
        if let Some(n) = d.numa_node {
            tally.numa.insert(n);
        }
        devices.push(d);
    }
    // 3. Link: virtual functions, and what the text beside the lspci output adds.
    link_vfs(&mut devices);
    link_beside(
        text,
        &shown,
        &mut devices,
        &mut tally,
        &mut warnings,
        source,
    );
    // 4. Annotate: the input's limitations and warnings, the node's facts.
    note_input(doc, &shown, &tally, &mut warnings, source);
    let hypervisor = hypervisor_evidence(&entries, &shown);
    let mut machine = machine_of(text, hypervisor, &mut devices);
    let mut lims: Vec<String> = LIMITATIONS.iter().map(|s| s.to_string()).collect();
    lims.append(&mut source.limitations);
    source.limitations = lims;
    modules(text, &mut machine);
    let mut raw = RawTopology::new(source.clone(), machine);
    let numactl = numactl_nodes(text);
    raw.numa_nodes = if numactl.is_empty() {
        tally
            .numa
            .into_iter()
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

/// Every address the text names, with its tree node and its best block (blocks printed
/// without -D placed in the tree's domain where that is one).
fn entries(doc: &Doc) -> BTreeMap<Bdf, Entry<'_>> {
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
    entries
}

/// Parents: the tree's, else the bridge whose secondary bus is the device's bus. A text with
/// neither adds the [`NO_TREE`] limitation to `source`.
fn parents(
    doc: &Doc,
    entries: &BTreeMap<Bdf, Entry>,
    source: &mut SourceInfo,
) -> BTreeMap<Bdf, Option<Bdf>> {
    let mut secondary: HashMap<(u32, u8), Bdf> = HashMap::new();
    for (b, e) in entries {
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
    entries.iter().map(|(b, e)| (*b, parent_of(b, e))).collect()
}

/// The topmost device above `b` in the text (at most 64 steps up), or the parent named above
/// it that the text does not print: its bus names the host bridge.
fn root_of(parents: &BTreeMap<Bdf, Option<Bdf>>, b: &Bdf) -> Bdf {
    let mut cur = *b;
    for _ in 0..64 {
        match parents.get(&cur).copied().flatten() {
            Some(p) if parents.contains_key(&p) => cur = p,
            Some(p) => return p,
            None => break,
        }
    }
    cur
}

/// The device at `b`: its place, IDs and class, kind, and what its block prints.
fn read_device(
    b: Bdf,
    e: &Entry,
    root: Bdf,
    parents: &BTreeMap<Bdf, Option<Bdf>>,
    ids: &Ids,
    tally: &mut Tally,
) -> Device {
    let line = e
        .block
        .map(|x| x.line)
        .or(e.tree.map(|t| t.line))
        .unwrap_or(0);
    let mut d = Device::new(
        b,
        host_bridge_name(root.domain, root.bus),
        format!("lspci:line {line}"),
    );
    d.parent = parents.get(&b).copied().flatten();
    read_ids(e, ids, &mut d, tally);
    match e.block {
        Some(blk) => read_block(blk, &mut d, tally),
        None => {
            tally.undetailed += 1;
            d.config_note =
                Some("named only in the `lspci -t` tree, not in any `lspci -vvv` block".into());
        }
    }
    d
}

/// Vendor, device, revision, subsystem and class: `-nn`'s IDs, a hex dump's header, the
/// tree's `[VVVV:DDDD]`, else the printed names read back; and the kind they give.
fn read_ids(e: &Entry, ids: &Ids, d: &mut Device, tally: &mut Tally) {
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
        None => ids.read_description(desc),
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
        None => match class_from_tree_name(vendor, device, tree_name) {
            Some(c) => {
                tally.guessed.push(d.bdf);
                c
            }
            None => 0,
        },
    };
    d.kind = kind_from_class(d.class, vendor, device);
}

/// What the device's block prints: its registers (config space, link, AER), where it was cut,
/// its NUMA node, IOMMU group, driver, slot, BARs and (ConnectX functions) VPD board UUID.
fn read_block(blk: &Block, d: &mut Device, tally: &mut Tally) {
    let ft = config_from_block(
        blk,
        d.vendor_id.unwrap_or(0xffff),
        d.device_id.unwrap_or(0xffff),
        d.class,
    );
    if blk.access_denied {
        tally.non_root += 1;
    } else if !blk.detailed && blk.hex.len() < 64 {
        tally.undetailed += 1;
    }
    d.config = ft.config;
    d.link = ft.link;
    d.config_note = ft.note;
    d.aer_status_bits = ft.aer_bits;
    if let Some(n) = blk.cut_at {
        let cut = if n == blk.line {
            format!("its line {n} is cut mid-word where the text ends: its name is cut")
        } else {
            format!(
                "the text ends mid-line at line {n}, inside this block: that line is cut and not read"
            )
        };
        d.config_note = Some(match d.config_note.take() {
            Some(x) => format!("{x}; {cut}"),
            None => cut,
        });
    }
    if let Some([c, n, f]) = ft.aer {
        d.aer_correctable = Some(c);
        d.aer_nonfatal = Some(n);
        d.aer_fatal = Some(f);
    }
    d.numa_node = blk.number("NUMA node");
    d.iommu_group = blk.number("IOMMU group");
    d.driver = blk.driver.clone();
    d.slot = blk.header("Physical Slot").map(str::to_string);
    d.bars = bars(blk);
    // The board UUID that pairs Data Direct DMA functions, as the live scan reads
    // it from `vpd` (ConnectX functions only; `lspci -vv` as root prints it).
    let part = crate::model::parts::part_of(d);
    if matches!(part, Some(Part::CxNic | Part::DataDirectDma)) {
        let kws = vpd_uuids(blk);
        d.vpd = kws.iter().map(|(k, _)| k.clone()).collect();
        if !kws.is_empty() {
            tally.uuids.insert(d.bdf, kws);
        }
    }
}

/// What the text beside the lspci output adds to the devices: NUMA nodes from a bug report's
/// `numa_node` files, Data Direct pairs, AER from the kernel log, `nvidia-smi -q` facts and
/// RDMA device names.
fn link_beside(
    text: &str,
    shown: &str,
    devices: &mut [Device],
    tally: &mut Tally,
    warnings: &mut Vec<Warning>,
    source: &mut SourceInfo,
) {
    let from_files = sysfs_numa(text, devices);
    if !from_files.is_empty() {
        tally.numa.extend(from_files.iter().map(|(_, n, _)| *n));
        warnings.push(Warning {
            path: format!("{shown} line {}", from_files[0].2),
            message: format!(
                "NUMA node of {} device(s) read from the numa_node files the bug report appended (their lspci blocks print none): {}",
                from_files.len(),
                from_files
                    .iter()
                    .map(|(b, n, _)| format!("{b} → {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    // Data Direct DMA functions paired with their NIC functions by the VPD board UUID, as
    // rdma_topo and the live scan do (VFs are not in `uuids`: they inherit their PF's).
    for w in crate::sources::datadirect::pair_by_vpd(devices, &tally.uuids) {
        let line = w
            .path
            .strip_prefix("lspci:line ")
            .and_then(|r| r.strip_suffix("/vpd"))
            .unwrap_or("?");
        warnings.push(Warning {
            path: format!("{shown} line {line}"),
            message: w.message.replace(
                "VPD not read (the vpd file is readable by root only) or without a V3/VU board UUID",
                "no VPD board UUID (V3/VU) in the text (`sudo lspci -vvv` prints the Vital Product Data)",
            ),
        });
    }
    dmesg_aer(text, devices);
    nvidia_smi_q(text, devices);
    let ib = crate::parse::ib_text::parse(text);
    match name_rdma(devices, &ib, warnings, shown) {
        Naming::Read => {}
        Naming::ByOrder(from) => source.limitations.push(format!(
            "RDMA device names come from the `{from}` text beside the lspci output, matched to the ConnectX functions in PCI address order (the order the kernel names them in; `ibdev2netdev -v` gives each name with its address)"
        )),
        Naming::Default(n) => source
            .limitations
            .push(format!("{RDMA_BY_ORDER} ({n} device(s))")),
    }
}

/// What the text could not show, as limitations of `source` and warnings: devices read
/// without root or without detail, classes taken from names, a cut text, a tree fragment,
/// `ACSCtl:` lines without their device.
fn note_input(
    doc: &Doc,
    shown: &str,
    tally: &Tally,
    warnings: &mut Vec<Warning>,
    source: &mut SourceInfo,
) {
    if tally.non_root > 0 {
        source
            .limitations
            .push(format!("{NOT_ROOT} ({} device(s))", tally.non_root));
    }
    if tally.undetailed > 0 {
        source
            .limitations
            .push(format!("{NO_DETAIL} ({} device(s))", tally.undetailed));
    }
    if !tally.guessed.is_empty() {
        source.limitations.push(CLASS_FROM_NAME.to_string());
        warnings.push(Warning {
            path: shown.to_string(),
            message: format!(
                "class of {} device(s) taken from their names in the tree: {}",
                tally.guessed.len(),
                tally
                    .guessed
                    .iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    if let Some(n) = doc.cut_line {
        warnings.push(Warning {
            path: format!("{shown} line {n}"),
            message: "the text ends mid-line here (no final newline: an excerpt cut at this point): the line is not read as a value".into(),
        });
    }
    if doc.tree_unresolved > 0 {
        warnings.push(Warning {
            path: shown.to_string(),
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
            path: shown.to_string(),
            message: format!(
                "{} `ACSCtl:` line(s) without their device (a grep of `lspci -vvv`; first at line {}): {redirect} redirect peer-to-peer traffic, but which ports they belong to cannot be told",
                doc.loose_acsctl.len(),
                doc.loose_acsctl[0].0
            ),
        });
    }
}

/// The node's facts the text shows: the kernel's log and command line, the IOMMU state that
/// command line sets (and the group types it gives `devices`), and the hypervisor evidence.
fn machine_of(
    text: &str,
    hypervisor: Vec<(String, String)>,
    devices: &mut [Device],
) -> MachineInfo {
    let kernel_log = crate::parse::kmsg::parse(text);
    // The running command line: `/proc/cmdline` where the text has it, else the kernel's own
    // `Command line:` banner in its log.
    let kernel_cmdline = match (cmdline(text), &kernel_log.cmdline) {
        (crate::model::Fact::Unknown(_), Some(l)) => crate::model::Fact::Known(l.text.clone()),
        (c, _) => c,
    };
    // Groups the kernel log names (`Adding to iommu group N`) for devices whose block printed
    // none.
    for (b, g, _) in &kernel_log.groups {
        if let Some(d) = devices
            .iter_mut()
            .find(|d| d.bdf == *b && d.iommu_group.is_none())
        {
            d.iommu_group = Some(*g);
        }
    }
    // `intel_iommu=off`/`amd_iommu=off` on the running command line: the kernel registers no
    // IOMMU, so DMA is untranslated; anything else leaves the units unknown.
    let off = kernel_cmdline.known().is_some_and(|c| {
        c.split_whitespace()
            .any(|t| matches!(t, "intel_iommu=off" | "amd_iommu=off" | "iommu=off"))
    });
    // `iommu=pt` / `iommu.passthrough=1`: every group's default domain is identity at boot
    // (the type the live scan reads from /sys/kernel/iommu_groups/N/type); a group switched
    // at run time is not in the text (the audit says so).
    let pt = !off
        && kernel_cmdline.known().is_some_and(|c| {
            c.split_whitespace()
                .any(|t| t == "iommu=pt" || t == "iommu.passthrough=1")
        });
    if pt {
        for d in devices.iter_mut().filter(|d| d.iommu_group.is_some()) {
            d.iommu_group_type = Some("identity".into());
        }
    }
    MachineInfo {
        kernel_cmdline,
        iommu_units: if off {
            Fact::Known(Vec::new())
        } else {
            Fact::Unknown("lspci text does not list IOMMU units".into())
        },
        hypervisor,
        kernel_log,
        ..MachineInfo::default()
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

    #[test]
    fn vfs_found_from_their_pf_sriov_registers() {
        let text = "\
18:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 32GT/s, Width x16
\tCapabilities: [150 v1] Single Root I/O Virtualization (SR-IOV)
\t\tIOVSta:\tMigration-
\t\tInitial VFs: 4, Total VFs: 4, Number of VFs: 2, Function Dependency Link: 00
\t\tVF offset: 2, stride: 1, Device ID: 101e

18:00.2 Infiniband controller [0207]: Mellanox Technologies ConnectX Family mlx5Gen Virtual Function [15b3:101e]
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 2.5GT/s, Width x1, ASPM not supported
\t\tLnkSta:\tSpeed unknown, Width x0

18:00.3 Infiniband controller [0207]: Mellanox Technologies ConnectX Family mlx5Gen Virtual Function [15b3:101e]
";
        let t = read(text, src(), None).unwrap();
        let pf: Bdf = "0000:18:00.0".parse().unwrap();
        for vf in ["0000:18:00.2", "0000:18:00.3"] {
            let d = t.device(&vf.parse().unwrap()).unwrap();
            assert_eq!(d.physfn, Some(pf), "{vf}");
            assert!(d.link.is_none(), "a VF has no link of its own");
        }
        assert_eq!(t.device(&pf).unwrap().vf_count, 2);
        // The PF's RDMA device first, then the VFs' (the kernel's registration order).
        let names: Vec<&str> = t.devices.iter().flat_map(|d| d.rdma_names()).collect();
        assert_eq!(names, ["mlx5_0", "mlx5_1", "mlx5_2"]);
    }

    /// Three ConnectX functions: 01:00.0, and the two ports of one adapter at 02:00.0/.1.
    const THREE_CX: &str = "\
01:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
02:00.0 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
02:00.1 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
";

    fn rdma(t: &Topology, bdf: &str) -> Vec<String> {
        t.device(&bdf.parse().unwrap())
            .unwrap()
            .rdma_names()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn bonds_by_the_kernels_numbering_and_refused_when_they_do_not_fit() {
        // mlx5_0 first, mlx5_1/mlx5_2 became the bond: it sits on 02:00.0, 02:00.1 has none.
        let text = format!("{THREE_CX}\nCA 'mlx5_0'\nCA 'mlx5_bond_0'\n");
        let t = read(&text, src(), None).unwrap();
        assert_eq!(rdma(&t, "0000:01:00.0"), ["mlx5_0"]);
        assert_eq!(rdma(&t, "0000:02:00.0"), ["mlx5_bond_0"]);
        assert!(rdma(&t, "0000:02:00.1").is_empty());
        // mlx5_2 leaves a gap at 01:00.0 and 02:00.0, two adapters: no bond rule fits, so a
        // warning and the kernel's default names.
        let text = format!("{THREE_CX}\nCA 'mlx5_2'\nCA 'mlx5_bond_0'\n");
        let t = read(&text, src(), None).unwrap();
        assert_eq!(rdma(&t, "0000:02:00.1"), ["mlx5_2"]);
        assert!(
            t.warnings
                .iter()
                .any(|w| w.message.contains("cannot be matched"))
        );
        assert!(t.source.limitations.iter().any(|l| l.contains("LAG bond")));
    }

    #[test]
    fn bug_report_files_vpd_and_passthrough() {
        let text = "\
0000:18:00.0 3D controller [0302]: NVIDIA Corporation Device 2330 [10de:2330] (rev a1)
\tIOMMU group: 7
0000:19:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
\tCapabilities: [48] Vital Product Data
\t\tProduct Name: NVIDIA ConnectX-7
\t\tRead-only fields:
\t\t\t[PN] Part number: MCX75310AAS-NEAT
\t\t\t[V3] Vendor specific: 3b00aa
\t\t\t[VU] Vendor specific: MT2450X00010MLNXS0D0F0
\t\t\t[RV] Reserved: checksum good, 0 byte(s) reserved
\t\tEnd
____________________________________________

*** /sys/bus/pci/devices/0000:18:00.0/numa_node
*** ls: -rw-r--r-- 1 root root 4096 2026-01-05 10:00:00.000000000 +0000 /sys/bus/pci/devices/0000:18:00.0/numa_node
1

*** /sys/bus/pci/devices/0000:19:00.0/numa_node does not exist

____________________________________________

*** /proc/cmdline
*** ls: -r--r--r-- 1 root root 0 2026-01-05 10:00:00.000000000 +0000 /proc/cmdline
BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt
";
        let t = read(text, src(), None).unwrap();
        let g = t.device(&"0000:18:00.0".parse().unwrap()).unwrap();
        assert_eq!(g.numa_node, Some(1));
        assert_eq!(g.iommu_group_type.as_deref(), Some("identity"));
        let n = t.device(&"0000:19:00.0".parse().unwrap()).unwrap();
        assert_eq!(n.numa_node, None);
        assert_eq!(n.vpd, ["V3", "VU"]);
        let blk = crate::parse::lspci::parse(text);
        assert_eq!(
            registers::vpd_uuids(&blk.blocks[1]),
            [
                ("V3".to_string(), "3b00aa".to_string()),
                ("VU".to_string(), "MT2450X00010MLNXS0D0F0".to_string())
            ]
        );
    }
}
