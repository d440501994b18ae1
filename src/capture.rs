//! `peerpath capture`: a snapshot tarball of exactly the sysfs/procfs files the scanner reads,
//! for offline analysis (`peerpath scan -i FILE.tar.gz`) on another machine.
//!
//! How the file set is chosen: the scan runs over a [`Recorder`], an [`FsRoot`] wrapper that
//! logs every path the scanner read, listed, followed or tested, and keeps the bytes it read.
//! The archive holds those paths and nothing else, each also checked against [`WHITELIST`] (the
//! one list, in code, of what peerpath may ever copy off a machine). So the archive cannot hold
//! a file the scanner did not need, and reading it back gives the scan the live machine gave:
//! the bytes archived are the bytes the scan saw (no second read that could race a changing
//! counter).
//!
//! Serial numbers are redacted unless `keep_serials` is set: the `GPU UUID` (and any `Serial`)
//! line of `proc/driver/nvidia/gpus/*/information`, and the serial of the PCIe Device Serial
//! Number extended capability in `config` (often derived from a MAC address or GUID). The
//! scanner never reads `node_guid`, MAC `address` files, DMI serials or `vpd`, so they are never
//! archived.

use crate::model::topology::{SourceInfo, Topology};
use crate::sources::fsroot::{Entry, EntryKind, FsRoot};
use crate::sources::sysfs;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// Schema tag of the manifest stored in every capture (`peerpath-capture.json`).
pub const CAPTURE_SCHEMA: &str = "peerpath.capture/1";

/// Name of the manifest file at the top of a capture tarball.
pub const MANIFEST_NAME: &str = "peerpath-capture.json";

/// Attribute files and links of a PCI device directory the scanner reads (the `virtfn*` links
/// are admitted by prefix). They are archived wherever the device directory lies: under
/// `sys/devices/**` (the kernel's layout) or directly under `sys/bus/pci/devices/*` (some
/// hand-made snapshots).
pub const DEVICE_ATTRS: &[&str] = &[
    "vendor",
    "device",
    "subsystem_vendor",
    "subsystem_device",
    "class",
    "revision",
    "numa_node",
    "local_cpulist",
    "local_cpus",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "config",
    "resource",
    "aer_dev_correctable",
    "aer_dev_nonfatal",
    "aer_dev_fatal",
    "driver",
    "iommu_group",
    "physfn",
];

/// Every other path (relative to the root) peerpath may copy into a capture, as component
/// globs: `*` inside a component matches any text, `**` matches any number of components.
/// With [`DEVICE_ATTRS`] this is the whole whitelist: a path is archived only when the scanner
/// touched it *and* it is whitelisted; a directory the scanner touched is archived as an empty
/// directory (its name only).
pub const WHITELIST: &[&str] = &[
    "sys/bus/pci/devices/*",
    "sys/kernel/iommu_groups/*/type",
    // Class devices and the attributes read under them.
    "sys/class/infiniband/*",
    "sys/class/net/*",
    "sys/class/nvme/*",
    "sys/**/infiniband/*/ports/*/rate",
    "sys/**/infiniband/*/ports/*/state",
    "sys/**/infiniband/*/ports/*/phys_state",
    "sys/**/infiniband/*/ports/*/link_layer",
    "sys/**/infiniband/*/fw_ver",
    "sys/**/infiniband/*/hca_type",
    "sys/**/infiniband/*/board_id",
    "sys/**/infiniband/*/node_type",
    "sys/**/net/*/operstate",
    "sys/**/net/*/speed",
    "sys/**/nvme/*/model",
    "sys/bus/pci/slots/*/address",
    "sys/devices/system/node/node*/cpulist",
    "sys/devices/system/node/node*/distance",
    "sys/class/iommu/*",
    // Node-wide facts.
    "proc/cpuinfo",
    "proc/cmdline",
    "sys/class/dmi/id/sys_vendor",
    "sys/class/dmi/id/product_name",
    "sys/hypervisor/type",
    "proc/driver/nvidia/version",
    "proc/driver/nvidia/gpus/*/information",
    "proc/driver/nvidia/gpus/*/numa_status",
    "sys/module/nvidia/version",
    "sys/module/nvidia_peermem/version",
    "sys/module/nv_peer_mem/version",
    "sys/module/ib_core/version",
    "sys/kernel/mm/memory_peers/*/version",
];

/// Whether one path component matches a component glob (`*` matches any text).
fn component_matches(glob: &str, name: &str) -> bool {
    match glob.split_once('*') {
        None => glob == name,
        Some((pre, rest)) => {
            if !name.starts_with(pre) {
                return false;
            }
            let tail = &name[pre.len()..];
            if rest.is_empty() {
                return true;
            }
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| component_matches(rest, &tail[i..]))
        }
    }
}

fn glob_matches(glob: &[&str], path: &[&str]) -> bool {
    match glob.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|i| glob_matches(rest, &path[i..])),
        Some((g, rest)) => match path.split_first() {
            Some((p, prest)) => component_matches(g, p) && glob_matches(rest, prest),
            None => false,
        },
    }
}

/// Whether a root-relative path is on the whitelist ([`DEVICE_ATTRS`] in a device directory,
/// or a [`WHITELIST`] glob).
pub fn whitelisted(path: &Path) -> bool {
    let comps: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let Some((name, dir)) = comps.split_last() else {
        return false;
    };
    let device_attr = DEVICE_ATTRS.contains(name) || name.starts_with("virtfn");
    let in_device_dir = (dir.len() >= 3 && dir[..2] == ["sys", "devices"])
        || (dir.len() == 5 && dir[..4] == ["sys", "bus", "pci", "devices"]);
    if device_attr && in_device_dir && dir[2] != "system" && dir[2] != "virtual" {
        return true;
    }
    WHITELIST
        .iter()
        .any(|g| glob_matches(&g.split('/').collect::<Vec<_>>(), &comps))
}

/// How the scanner touched a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Access {
    /// `kind()`: existence and type only (a final symlink is not followed).
    Kind,
    /// `read_link()`: the link itself.
    Link,
    /// `read_dir()`: the directory (a final symlink is followed).
    List,
    /// `read()`: the file (a final symlink is followed).
    Read,
}

#[derive(Default)]
struct Log {
    touched: BTreeMap<PathBuf, Access>,
    listed: BTreeMap<PathBuf, Vec<Entry>>,
    content: BTreeMap<PathBuf, Vec<u8>>,
}

/// An [`FsRoot`] wrapper that records every path the scanner touches (and the bytes it read),
/// so a capture can archive exactly those.
pub struct Recorder<'a> {
    inner: &'a dyn FsRoot,
    log: Mutex<Log>,
}

impl<'a> Recorder<'a> {
    /// Wraps a root.
    pub fn new(inner: &'a dyn FsRoot) -> Self {
        Recorder {
            inner,
            log: Mutex::new(Log::default()),
        }
    }

    fn note(&self, path: &Path, a: Access) {
        if let Ok(mut l) = self.log.lock() {
            let e = l.touched.entry(path.to_path_buf()).or_insert(a);
            *e = (*e).max(a);
        }
    }

    /// Every path touched, as read (for tests and `--explain`-style listings).
    pub fn touched(&self) -> Vec<PathBuf> {
        self.log
            .lock()
            .map(|l| l.touched.keys().cloned().collect())
            .unwrap_or_default()
    }
}

impl FsRoot for Recorder<'_> {
    fn read_limited(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>> {
        self.note(path, Access::Read);
        let r = self.inner.read_limited(path, limit);
        if let (Ok(b), Ok(mut l)) = (&r, self.log.lock()) {
            l.content.insert(path.to_path_buf(), b.clone());
        }
        r
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.note(path, Access::Link);
        self.inner.read_link(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<Entry>> {
        self.note(path, Access::List);
        let r = self.inner.read_dir(path);
        if let (Ok(v), Ok(mut l)) = (&r, self.log.lock()) {
            l.listed.insert(path.to_path_buf(), v.clone());
        }
        r
    }
    fn kind(&self, path: &Path) -> Option<EntryKind> {
        self.note(path, Access::Kind);
        self.inner.kind(path)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// Options of a capture.
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
    /// Keep serial numbers (GPU UUIDs, PCIe Device Serial Numbers) instead of redacting them.
    pub keep_serials: bool,
    /// NVML facts to store as `peerpath-nvml.json` (see [`crate::sources::nvml`]), if any.
    pub nvml_json: Option<String>,
}

/// The capture manifest (`peerpath-capture.json`, schema [`CAPTURE_SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`CAPTURE_SCHEMA`].
    pub schema: String,
    /// peerpath version that wrote it.
    pub peerpath_version: String,
    /// What was captured (`/` for the live machine).
    pub source: String,
    /// Whether serial numbers were kept.
    pub keep_serials: bool,
    /// What was redacted: `path: what`.
    pub redacted: Vec<String>,
    /// Paths the scanner touched that are not on the whitelist and were therefore left out
    /// (empty unless the scanner and the whitelist drifted apart).
    pub left_out: Vec<String>,
    /// Files archived (not counting directories and links).
    pub files: usize,
    /// Whether NVML facts are included, and why not when they are not.
    pub nvml: String,
}

/// A finished capture: the entries to archive and the scan they came from.
pub struct Capture {
    /// The topology the scan produced while recording.
    pub topology: Topology,
    /// Archive entries, by path (parents sort before children).
    pub entries: BTreeMap<PathBuf, Node>,
    /// The manifest.
    pub manifest: Manifest,
}

/// One archive entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A directory (its name only).
    Dir,
    /// A symbolic link and its target, as stored.
    Link(PathBuf),
    /// A file's bytes (after redaction).
    File(Vec<u8>),
}

/// Scans `fs` through a [`Recorder`] and collects exactly the touched, whitelisted paths.
pub fn capture(fs: &dyn FsRoot, source: SourceInfo, opts: &CaptureOptions) -> io::Result<Capture> {
    let rec = Recorder::new(fs);
    let topology = sysfs::scan(&rec, source.clone(), &sysfs::ScanOptions::default())?;
    let log = rec
        .log
        .into_inner()
        .map_err(|_| io::Error::other("capture log poisoned"))?;
    let mut b = Builder {
        fs,
        log: &log,
        out: BTreeMap::new(),
        redacted: Vec::new(),
        keep_serials: opts.keep_serials,
    };
    let mut left_out = BTreeSet::new();
    for (p, a) in &log.touched {
        let kind = fs.kind(p);
        if kind == Some(EntryKind::Dir) || whitelisted(p) {
            b.add(p, *a)?;
        } else if kind.is_some() {
            left_out.insert(p.display().to_string());
        }
    }
    // Listing-only facts (the `virtfn*` links the scanner counts): whitelisted names only.
    for (dir, entries) in &log.listed {
        for e in entries {
            let p = dir.join(&e.name);
            if !log.touched.contains_key(&p) && whitelisted(&p) {
                b.add(&p, Access::Link)?;
            }
        }
    }
    let files = b
        .out
        .values()
        .filter(|n| matches!(n, Node::File(_)))
        .count();
    let mut nvml =
        "not included: NVML facts come only from a live capture with the NVIDIA driver".to_string();
    if let Some(j) = &opts.nvml_json {
        b.out
            .insert(PathBuf::from(NVML_NAME), Node::File(j.clone().into_bytes()));
        nvml = format!("included as {NVML_NAME}");
    }
    let manifest = Manifest {
        schema: CAPTURE_SCHEMA.into(),
        peerpath_version: env!("CARGO_PKG_VERSION").into(),
        source: source.path,
        keep_serials: opts.keep_serials,
        redacted: b.redacted,
        left_out: left_out.into_iter().collect(),
        files,
        nvml,
    };
    let mut entries = b.out;
    let text = serde_json::to_string_pretty(&manifest).map_err(io::Error::other)?;
    entries.insert(PathBuf::from(MANIFEST_NAME), Node::File(text.into_bytes()));
    Ok(Capture {
        topology,
        entries,
        manifest,
    })
}

/// Name of the NVML facts file at the top of a capture tarball.
pub const NVML_NAME: &str = "peerpath-nvml.json";

struct Builder<'a> {
    fs: &'a dyn FsRoot,
    log: &'a Log,
    out: BTreeMap<PathBuf, Node>,
    redacted: Vec<String>,
    keep_serials: bool,
}

impl Builder<'_> {
    /// Adds `path` as the source holds it: every existing prefix directory, every symlink met on
    /// the way (followed inside the root), and the final entry per `access`.
    fn add(&mut self, path: &Path, access: Access) -> io::Result<()> {
        let comps: Vec<PathBuf> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(PathBuf::from(s)),
                Component::ParentDir => Some(PathBuf::from("..")),
                _ => None,
            })
            .collect();
        let last = comps.len();
        let mut todo: Vec<(PathBuf, bool)> = comps
            .into_iter()
            .enumerate()
            .map(|(i, c)| (c, i + 1 == last))
            .collect();
        todo.reverse();
        let mut cur = PathBuf::new();
        let mut links = 0;
        while let Some((c, is_final)) = todo.pop() {
            if c.as_os_str() == ".." {
                cur.pop();
                continue;
            }
            let cand = cur.join(&c);
            match self.fs.kind(&cand) {
                None => return Ok(()),
                Some(EntryKind::Dir) => {
                    self.out.entry(cand.clone()).or_insert(Node::Dir);
                    cur = cand;
                }
                Some(EntryKind::Symlink) => {
                    let target = self.fs.read_link(&cand)?;
                    self.out.insert(cand.clone(), Node::Link(target.clone()));
                    let follow = !is_final || matches!(access, Access::Read | Access::List);
                    if !follow {
                        return Ok(());
                    }
                    links += 1;
                    if links > 40 {
                        return Ok(());
                    }
                    if target.is_absolute() {
                        cur = PathBuf::new();
                    }
                    let mut tc: Vec<(PathBuf, bool)> = target
                        .components()
                        .filter_map(|c| match c {
                            Component::Normal(s) => Some(PathBuf::from(s)),
                            Component::ParentDir => Some(PathBuf::from("..")),
                            _ => None,
                        })
                        .map(|c| (c, false))
                        .collect();
                    if is_final && let Some(l) = tc.last_mut() {
                        l.1 = true;
                    }
                    for x in tc.into_iter().rev() {
                        todo.push(x);
                    }
                }
                Some(EntryKind::File) => {
                    if is_final {
                        let bytes = match self.log.content.get(path) {
                            Some(b) => b.clone(),
                            None => self.fs.read(&cand)?,
                        };
                        let bytes = self.redact(&cand, bytes);
                        self.out.insert(cand, Node::File(bytes));
                    }
                    return Ok(());
                }
                Some(EntryKind::Other) => return Ok(()),
            }
        }
        Ok(())
    }

    fn redact(&mut self, path: &Path, bytes: Vec<u8>) -> Vec<u8> {
        if self.keep_serials {
            return bytes;
        }
        let name = path.file_name().and_then(|s| s.to_str()).unwrap_or("");
        if name == "information" && path.starts_with("proc/driver/nvidia/gpus") {
            let (text, n) = redact_information(&String::from_utf8_lossy(&bytes));
            if n > 0 {
                self.redacted
                    .push(format!("{}: {n} serial line(s)", path.display()));
                return text.into_bytes();
            }
        } else if name == "config" {
            let mut b = bytes;
            if redact_dsn(&mut b) {
                self.redacted.push(format!(
                    "{}: PCIe Device Serial Number capability",
                    path.display()
                ));
            }
            return b;
        }
        bytes
    }
}

/// What a redacted value reads as.
pub const REDACTED: &str = "(redacted by peerpath capture)";

/// Replaces the value of every `GPU UUID` / `… Serial …` line of an NVIDIA `information` file
/// (unless the driver already masked it); returns the text and how many lines changed.
pub fn redact_information(text: &str) -> (String, usize) {
    let mut n = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        match body.split_once(':') {
            Some((k, v)) if serial_key(k) && !masked(v) => {
                n += 1;
                out.push_str(k);
                out.push_str(":\t ");
                out.push_str(REDACTED);
                out.push_str(nl);
            }
            _ => out.push_str(line),
        }
    }
    (out, n)
}

/// Zeroes the serial number of the PCIe Device Serial Number extended capability (ID 0x0003)
/// in a config-space image; returns whether one was found.
pub fn redact_dsn(b: &mut [u8]) -> bool {
    let mut ptr = 0x100usize;
    let mut visits = 0;
    let mut found = false;
    while ptr >= 0x100 && ptr + 4 <= b.len() && visits < 96 {
        visits += 1;
        let hdr = u32::from_le_bytes([b[ptr], b[ptr + 1], b[ptr + 2], b[ptr + 3]]);
        if hdr == 0 || hdr == 0xffff_ffff {
            break;
        }
        if hdr & 0xffff == 0x0003 && ptr + 12 <= b.len() {
            b[ptr + 4..ptr + 12].fill(0);
            found = true;
        }
        ptr = (hdr >> 20) as usize & 0xffc;
    }
    found
}

impl Capture {
    /// Writes the capture as a gzip-compressed tarball. Entries are in path order, owned by
    /// root with mtime 0, so the same node gives the same bytes.
    pub fn write_tar_gz(&self, w: impl Write) -> io::Result<()> {
        let gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
        let mut tb = tar::Builder::new(gz);
        tb.follow_symlinks(false);
        for (path, node) in &self.entries {
            let mut h = tar::Header::new_gnu();
            h.set_mtime(0);
            h.set_uid(0);
            h.set_gid(0);
            match node {
                Node::Dir => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_mode(0o755);
                    h.set_size(0);
                    tb.append_data(&mut h, path, io::empty())?;
                }
                Node::Link(t) => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_mode(0o777);
                    h.set_size(0);
                    tb.append_link(&mut h, path, t)?;
                }
                Node::File(bytes) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_mode(0o444);
                    h.set_size(bytes.len() as u64);
                    tb.append_data(&mut h, path, &bytes[..])?;
                }
            }
        }
        tb.into_inner()?.finish()?;
        Ok(())
    }

    /// Replaces the manifest's NVML note (the CLI knows why a live capture has no NVML facts).
    pub fn set_nvml_note(&mut self, note: &str) -> io::Result<()> {
        self.manifest.nvml = note.to_string();
        let text = serde_json::to_string_pretty(&self.manifest).map_err(io::Error::other)?;
        self.entries
            .insert(PathBuf::from(MANIFEST_NAME), Node::File(text.into_bytes()));
        Ok(())
    }

    /// The tarball as bytes.
    pub fn to_tar_gz(&self) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        self.write_tar_gz(&mut v)?;
        Ok(v)
    }
}

/// Schema tag of the NVML facts stored in a live capture (`peerpath-nvml.json`).
pub const NVML_SCHEMA: &str = "peerpath.nvml/1";

/// What NVML added to a live scan, stored so that reading the capture back gives the same
/// topology as the live machine did (NVLinks, NVML index/UUID/P2P attributes, NVML warnings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NvmlFacts {
    /// Always [`NVML_SCHEMA`].
    pub schema: String,
    /// Whether NVML loaded and answered.
    pub loaded: bool,
    /// What happened, in words.
    pub message: String,
    /// `Topology::nvlink_visible` after NVML.
    pub nvlink_visible: bool,
    /// `Topology::nvlinks` after NVML.
    pub nvlinks: Vec<crate::model::topology::NvLink>,
    /// Per NVIDIA GPU (by address), its `nvidia_gpu` OS devices after NVML.
    pub gpus: Vec<(crate::model::Bdf, Vec<crate::model::device::OsDevice>)>,
    /// Warnings NVML added (and the status warning when it failed).
    pub warnings: Vec<crate::model::topology::Warning>,
}

/// Whether a value is already masked (the NVIDIA driver shows `GPU-????????-…` to non-root
/// readers); such values carry no serial and are kept as they are.
fn masked(v: &str) -> bool {
    let v = v.trim();
    let v = v.strip_prefix("GPU-").unwrap_or(v);
    !v.is_empty() && v.chars().all(|c| c == '?' || c == '-')
}

/// Whether an attribute name holds a serial number (`uuid`, `GPU UUID`, `… Serial …`).
fn serial_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    k.contains("uuid") || k.contains("serial")
}

/// Runs NVML enrichment on a copy of a live scan and returns what it added as JSON, or `None`
/// when NVML was not even attempted (no NVIDIA PCI device). Serial-like attributes are
/// redacted unless `keep_serials`.
pub fn nvml_facts(topo: &Topology, keep_serials: bool) -> Option<String> {
    let mut t = topo.clone();
    let before = t.warnings.len();
    let status = crate::sources::nvml::enrich(&mut t);
    if !status.attempted {
        return None;
    }
    let mut warnings = t.warnings.split_off(before.min(t.warnings.len()));
    warnings.extend(status.warning());
    serde_json::to_string_pretty(&facts_of(
        &t,
        status.loaded,
        status.message,
        warnings,
        keep_serials,
    ))
    .ok()
}

/// The facts of an enriched topology (split out of [`nvml_facts`] so it is testable without
/// NVML, over [`crate::sources::nvml::apply`]).
pub fn facts_of(
    t: &Topology,
    loaded: bool,
    message: String,
    warnings: Vec<crate::model::topology::Warning>,
    keep_serials: bool,
) -> NvmlFacts {
    use crate::model::device::OsDeviceKind;
    let gpus = if loaded {
        t.devices
            .iter()
            .filter_map(|d| {
                let mut ods: Vec<_> = d
                    .os_devices
                    .iter()
                    .filter(|o| o.kind == OsDeviceKind::NvidiaGpu)
                    .cloned()
                    .collect();
                if !keep_serials {
                    for o in &mut ods {
                        for (k, v) in &mut o.attrs {
                            if serial_key(k) && !masked(v) {
                                *v = REDACTED.to_string();
                            }
                        }
                    }
                }
                (!ods.is_empty()).then_some((d.bdf, ods))
            })
            .collect()
    } else {
        Vec::new()
    };
    NvmlFacts {
        schema: NVML_SCHEMA.into(),
        loaded,
        message,
        nvlink_visible: t.nvlink_visible,
        nvlinks: if loaded {
            t.nvlinks.clone()
        } else {
            Vec::new()
        },
        gpus,
        warnings,
    }
}

/// Folds stored NVML facts into a topology read from a capture.
pub fn apply_nvml_facts(topo: &mut Topology, f: &NvmlFacts) {
    use crate::model::device::OsDeviceKind;
    if f.loaded {
        for (bdf, ods) in &f.gpus {
            if let Some(d) = topo.devices.iter_mut().find(|d| d.bdf == *bdf) {
                d.os_devices.retain(|o| o.kind != OsDeviceKind::NvidiaGpu);
                d.os_devices.extend(ods.iter().cloned());
            }
        }
        topo.nvlinks = f.nvlinks.clone();
        topo.nvlink_visible = f.nvlink_visible;
    }
    topo.warnings.extend(f.warnings.iter().cloned());
    topo.rebuild();
}

/// Reads `peerpath-nvml.json` from a capture root, if present, and folds it in. A present but
/// unreadable file is an error (the capture is damaged), never silently ignored.
pub fn apply_stored_nvml(fs: &dyn FsRoot, topo: &mut Topology) -> anyhow::Result<()> {
    let p = Path::new(NVML_NAME);
    if fs.kind(p).is_none() {
        return Ok(());
    }
    let b = fs
        .read(p)
        .map_err(|e| anyhow::anyhow!("{}: {NVML_NAME}: {e}", fs.describe()))?;
    let f: NvmlFacts = serde_json::from_slice(&b)
        .map_err(|e| anyhow::anyhow!("{}: {NVML_NAME} is not {NVML_SCHEMA}: {e}", fs.describe()))?;
    if f.schema != NVML_SCHEMA {
        anyhow::bail!(
            "{}: {NVML_NAME} has schema {:?}, expected {NVML_SCHEMA:?}",
            fs.describe(),
            f.schema
        );
    }
    apply_nvml_facts(topo, &f);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fsroot::{MemNode, MemRoot};

    #[test]
    fn globs() {
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/vendor"
        )));
        assert!(whitelisted(Path::new("sys/bus/pci/devices/0000:01:00.0")));
        assert!(whitelisted(Path::new(
            "sys/bus/pci/devices/0000:01:00.0/class"
        )));
        assert!(!whitelisted(Path::new(
            "sys/bus/pci/devices/0000:01:00.0/vpd"
        )));
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/virtfn12"
        )));
        assert!(!whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/net/eth0/address"
        )));
        assert!(!whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/node_guid"
        )));
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/ports/1/rate"
        )));
        assert!(!whitelisted(Path::new("sys/class/dmi/id/product_serial")));
        assert!(!whitelisted(Path::new("proc/self/environ")));
        assert!(whitelisted(Path::new(
            "sys/devices/system/node/node3/cpulist"
        )));
        assert!(!whitelisted(Path::new(
            "sys/devices/system/node/node3/meminfo"
        )));
    }

    #[test]
    fn information_uuid_redacted() {
        let t =
            "Model: \t\t NVIDIA H100\nGPU UUID: \t GPU-1234-5678\nBus Location: \t 0000:17:00.0\n";
        let (r, n) = redact_information(t);
        assert_eq!(n, 1);
        assert!(!r.contains("GPU-1234"));
        assert!(r.contains("Bus Location: \t 0000:17:00.0\n"));
        assert!(r.contains("GPU UUID:"));
    }

    #[test]
    fn dsn_zeroed() {
        let mut b = vec![0u8; 4096];
        // ACS at 0x100 -> DSN at 0x140 -> end.
        b[0x100..0x104].copy_from_slice(&(0x000du32 | (1 << 16) | (0x140 << 20)).to_le_bytes());
        b[0x140..0x144].copy_from_slice(&(0x0003u32 | (1 << 16)).to_le_bytes());
        b[0x144..0x14c].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(redact_dsn(&mut b));
        assert_eq!(&b[0x144..0x14c], &[0; 8]);
        assert_eq!(b[0x140], 3);
    }

    #[test]
    fn records_and_follows_links() {
        let mut m = MemRoot::new("t");
        m.insert(
            "sys/devices/pci0000:00/0000:00:01.0/vendor".into(),
            MemNode::File(b"0x8086\n".to_vec()),
        );
        m.insert(
            "sys/devices/pci0000:00/0000:00:01.0/class".into(),
            MemNode::File(b"0x020000\n".to_vec()),
        );
        m.insert(
            "sys/devices/pci0000:00/0000:00:01.0/vpd".into(),
            MemNode::File(b"SERIAL".to_vec()),
        );
        m.insert(
            "sys/bus/pci/devices/0000:00:01.0".into(),
            MemNode::Symlink("../../../devices/pci0000:00/0000:00:01.0".into()),
        );
        let src = SourceInfo {
            kind: "snapshot".into(),
            path: "t".into(),
            limitations: vec![],
        };
        let c = capture(&m, src, &CaptureOptions::default()).unwrap();
        let has = |p: &str| c.entries.contains_key(Path::new(p));
        assert!(has("sys/bus/pci/devices/0000:00:01.0"));
        assert!(has("sys/devices/pci0000:00/0000:00:01.0/vendor"));
        assert!(!has("sys/devices/pci0000:00/0000:00:01.0/vpd"));
        assert!(c.manifest.left_out.is_empty(), "{:?}", c.manifest.left_out);
    }

    /// NVML facts survive a capture: enrich a synthesized HGX scan with constructed NVML
    /// observations (NVLinks GPU0–GPU1), store them, fold them into a fresh scan, compare.
    #[test]
    fn nvml_facts_round_trip() {
        use crate::sources::nvml::{self, NvmlGpu, NvmlLink, Remote};
        use crate::synth::{Entry as SEntry, WriteOptions, build_entries, layouts};
        let mut m = MemRoot::new("hgx");
        for (p, e) in build_entries(&layouts::hgx_h100(), &WriteOptions::default()).unwrap() {
            m.insert(
                p,
                match e {
                    SEntry::Dir => MemNode::Dir,
                    SEntry::File(b) => MemNode::File(b),
                    SEntry::Link(t) => MemNode::Symlink(t.into()),
                },
            );
        }
        let src = SourceInfo {
            kind: "snapshot".into(),
            path: "hgx".into(),
            limitations: vec![],
        };
        let scan = || sysfs::scan(&m, src.clone(), &sysfs::ScanOptions::default()).unwrap();
        let (g0, g1) = (layouts::hgx_gpu(0), layouts::hgx_gpu(1));
        let link = |peer| NvmlLink {
            link: 0,
            active: true,
            version: Some(4),
            remote: Remote::Pci(peer),
        };
        let gpus = vec![
            NvmlGpu {
                index: 0,
                uuid: Some("GPU-aaaa-0001".into()),
                bdf: Some(g0),
                links: vec![link(g1); 2],
                p2p: vec![],
            },
            NvmlGpu {
                index: 1,
                uuid: Some("GPU-aaaa-0002".into()),
                bdf: Some(g1),
                links: vec![link(g0); 2],
                p2p: vec![],
            },
        ];
        let mut live = scan();
        let w = nvml::apply(&mut live, &gpus);
        live.warnings.extend(w.clone());
        live.nvlink_visible = true;
        assert!(!live.nvlinks.is_empty());
        for keep in [true, false] {
            let f = facts_of(&live, true, "NVML loaded".into(), w.clone(), keep);
            let json = serde_json::to_string(&f).unwrap();
            let mut back = scan();
            let mut root = MemRoot::new("cap");
            root.insert(NVML_NAME.into(), MemNode::File(json.clone().into_bytes()));
            apply_stored_nvml(&root, &mut back).unwrap();
            assert_eq!(back.nvlinks, live.nvlinks);
            assert!(back.nvlink_visible);
            assert_eq!(json.contains("GPU-aaaa-0001"), keep);
            if keep {
                assert_eq!(
                    serde_json::to_value(&back).unwrap(),
                    serde_json::to_value(&live).unwrap()
                );
            }
        }
        // A damaged facts file is an error, not silently ignored.
        let mut root = MemRoot::new("cap");
        root.insert(NVML_NAME.into(), MemNode::File(b"{not json".to_vec()));
        assert!(apply_stored_nvml(&root, &mut scan()).is_err());
    }
}
