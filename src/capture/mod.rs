//! `peerpath capture`: a snapshot tarball of exactly the sysfs/procfs files the scanner reads,
//! for offline analysis (`peerpath scan -i FILE.tar.gz`) on another machine.
//!
//! How the file set is chosen: the scan runs over a [`Recorder`], an [`FsRoot`] wrapper that
//! logs every path the scanner read, listed, followed or tested, and keeps the bytes it read.
//! The archive holds those paths and nothing else, each also checked against [`WHITELIST`] (the
//! one list, in code, of what peerpath may ever copy off a machine), plus each PCI function's
//! identity files that `lspci -A linux-sysfs` needs (`vendor`, `device`, `class`, …, `irq`).
//! So the archive holds no file the scanner or lspci did not need, and reading it back gives
//! the scan the live machine gave:
//! the bytes archived are the bytes the scan saw (no second read that could race a changing
//! counter).
//!
//! Serial numbers are redacted unless `keep_serials` is set: the `GPU UUID` (and any `Serial`)
//! line of `proc/driver/nvidia/gpus/*/information`, and the serial of the PCIe Device Serial
//! Number extended capability in `config` (often derived from a MAC address or GUID). The
//! scanner never reads MAC `address` files, DMI serials or `vpd`, so they are never archived.
//! It does read an RDMA device's `node_guid`, `node_desc` and `ports/<p>/gids/0` (subnet prefix
//! and port GUID): the fabric's own map names adapters by them, and `rails --fabric-map` matches a
//! capture to the map through them. The description is archived as read; the two GUIDs, derived
//! from the adapter's burnt-in address like a serial number, only with `keep_serials` (left out
//! whole otherwise, the manifest saying so).

mod archive;
pub mod domains;
pub mod fleet;
mod nvml_store;
mod recorder;
mod whitelist;

/// The stored NVML facts are read by the sources; their names are kept here for writers.
pub use crate::sources::nvml_store::{
    NVML_NAME, NVML_SCHEMA, NvmlFacts, apply_nvml_facts, apply_stored_nvml,
};
pub use archive::{REDACTED, redact_dsn, redact_information};
pub use nvml_store::{facts_of, nvml_facts};
pub use recorder::Recorder;
pub use whitelist::{DEVICE_ATTRS, LSPCI_ATTRS, WHITELIST, whitelisted};

use crate::model::topology::{SourceInfo, Topology};
use crate::sources::fsroot::{EntryKind, FsRoot};
use crate::sources::sysfs;
use archive::Builder;
use recorder::Access;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::PathBuf;

/// Schema tag of the manifest stored in every capture (`peerpath-capture.json`).
pub const CAPTURE_SCHEMA: &str = "peerpath.capture/1";

/// Name of the manifest file at the top of a capture tarball.
pub const MANIFEST_NAME: &str = crate::sources::nccl_conf::CAPTURE_MANIFEST;

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
    /// Whether the RDMA registration order is included (`peerpath-rdma.json`), and why not.
    #[serde(default)]
    pub rdma_order: String,
    /// The topology fingerprint of the archived files as `peerpath fleet` computes it, so
    /// that `fleet` can group captures without scanning them again (it checks the first
    /// capture of every group against its files). `None` in captures written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<RecordedFingerprint>,
}

/// A fingerprint recorded in a manifest: the scheme it was computed with and its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedFingerprint {
    /// [`crate::analysis::fleet::FINGERPRINT_SCHEME`] and the peerpath version that computed
    /// it (`peerpath.fingerprint/3 0.1.0`); a reader of another scheme or version recomputes.
    pub scheme: String,
    /// 16 hex digits.
    pub value: String,
}

/// The fingerprint scheme this build computes (scheme tag and peerpath version).
pub fn fingerprint_scheme() -> String {
    format!(
        "{} {}",
        crate::analysis::fleet::FINGERPRINT_SCHEME,
        env!("CARGO_PKG_VERSION")
    )
}

/// The fingerprint of the archive entries as `fleet` would read them back: the entries as a
/// sysfs root, scanned, with the stored NVML facts applied.
fn fingerprint_of(
    entries: &BTreeMap<PathBuf, Node>,
    source: &SourceInfo,
) -> io::Result<RecordedFingerprint> {
    let mut m = crate::sources::fsroot::MemRoot::new(source.path.clone());
    for (p, n) in entries {
        let node = match n {
            Node::Dir => crate::sources::fsroot::MemNode::Dir,
            Node::Link(t) => crate::sources::fsroot::MemNode::Symlink(t.clone()),
            Node::File(b) => crate::sources::fsroot::MemNode::File(b.clone()),
        };
        m.insert(p.clone(), node);
    }
    let mut t = sysfs::scan(&m, source.clone(), &sysfs::ScanOptions::default())?;
    apply_stored_nvml(&m, &mut t).map_err(io::Error::other)?;
    Ok(RecordedFingerprint {
        scheme: fingerprint_scheme(),
        value: format!("{:016x}", crate::analysis::fleet::fingerprint(&t)),
    })
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

/// Reads each PCI function's identity files ([`LSPCI_ATTRS`]) through the recorder, so they
/// are archived as read: `lspci -A linux-sysfs` opens them (the scan takes the IDs from
/// `config`) and without them refuses the capture ("Cannot open …/vendor"). A file the machine
/// lacks stays absent.
fn read_lspci_files(rec: &Recorder, topology: &Topology) {
    for d in &topology.devices {
        let dir = PathBuf::from(format!("sys/bus/pci/devices/{}", d.bdf));
        for f in LSPCI_ATTRS {
            // An absent or unreadable file is left out of the archive, as lspci would find it.
            let _ = rec.read_limited(&dir.join(f), 64);
        }
        // lspci resolves the `driver` link (realpath) to name the driver: its directory is
        // archived empty, as every directory the recorder touched is.
        if let Some(name) = &d.driver {
            let _ = rec.kind(&PathBuf::from(format!("sys/bus/pci/drivers/{name}")));
        }
    }
}

/// Scans `fs` through a [`Recorder`] and collects exactly the touched, whitelisted paths,
/// and the identity files `lspci` needs to read the archive ([`LSPCI_ATTRS`]).
pub fn capture(fs: &dyn FsRoot, source: SourceInfo, opts: &CaptureOptions) -> io::Result<Capture> {
    let rec = Recorder::new(fs);
    let topology = sysfs::scan(&rec, source.clone(), &sysfs::ScanOptions::default())?;
    read_lspci_files(&rec, &topology);
    let log = rec.into_log()?;
    let mut b = Builder {
        fs,
        log: &log,
        out: BTreeMap::new(),
        redacted: Vec::new(),
        keep_serials: opts.keep_serials,
        boards: BTreeMap::new(),
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
    // Listing-only facts (entries the scanner counts without following them, such as the IOMMU
    // units of `sys/class/iommu`): whitelisted links only (a whitelisted file such as `vpd` is
    // copied only where the scanner read it).
    for (dir, entries) in &log.listed {
        for e in entries {
            let p = dir.join(&e.name);
            if e.kind == EntryKind::Symlink && !log.touched.contains_key(&p) && whitelisted(&p) {
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
    let mut entries = b.out;
    let fingerprint = Some(fingerprint_of(&entries, &source)?);
    let manifest = Manifest {
        schema: CAPTURE_SCHEMA.into(),
        peerpath_version: env!("CARGO_PKG_VERSION").into(),
        source: source.path,
        keep_serials: opts.keep_serials,
        redacted: b.redacted,
        left_out: left_out.into_iter().collect(),
        files,
        nvml,
        rdma_order: "not included: the RDMA registration order is read only from the live kernel"
            .into(),
        fingerprint,
    };
    let text = serde_json::to_string_pretty(&manifest).map_err(io::Error::other)?;
    entries.insert(PathBuf::from(MANIFEST_NAME), Node::File(text.into_bytes()));
    Ok(Capture {
        topology,
        entries,
        manifest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fsroot::{MemNode, MemRoot};
    use std::path::Path;

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
}
