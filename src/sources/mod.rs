//! Sources: each turns something outside (the live machine, a snapshot, an XML or JSON file)
//! into one [`Topology`]. A source only reads; none classifies.
//!
//! Every source but peerpath's own JSON works in two phases: `discover` reads raw facts into
//! an [`assemble::RawTopology`], and the one [`assemble::assemble`] infers the structure,
//! indexes, tallies NVLinks and names devices. NVML (live) and stored NVML facts (snapshots)
//! are folded in after assembly, as hwloc's NVML plugin annotates its topology.

pub mod assemble;
pub mod c2c;
pub mod datadirect;
pub mod fsroot;
pub mod hwloc_xml;
pub mod json;
pub mod nccl_xml;
pub mod nvml;
pub mod nvml_store;
pub mod sysfs;
pub mod tree;
pub mod xmltree;

use crate::model::{SourceInfo, Topology};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// What `--input` turned out to be, by content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputKind {
    /// A directory holding `sys/` (the live `/` or an extracted snapshot).
    SysfsRoot,
    /// A tar archive (plain, gzip, bzip2).
    Tarball,
    /// An XML document (hwloc or NCCL topology).
    Xml,
    /// A JSON document written by peerpath.
    Json,
}

/// Detects an input's kind from its content (never from its name alone).
pub fn detect(path: &Path) -> Result<InputKind> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot open input {}", path.display()))?;
    if meta.is_dir() {
        return Ok(InputKind::SysfsRoot);
    }
    let mut head = [0u8; 512];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(path)
            .with_context(|| format!("cannot open input {}", path.display()))?;
        let mut total = 0;
        loop {
            let k = f.read(&mut head[total..])?;
            if k == 0 {
                break;
            }
            total += k;
            if total == head.len() {
                break;
            }
        }
        total
    };
    let h = &head[..n];
    if h.starts_with(&[0x1f, 0x8b])
        || h.starts_with(b"BZh")
        || (n >= 262 && &h[257..262] == b"ustar")
    {
        return Ok(InputKind::Tarball);
    }
    let t = std::str::from_utf8(h)
        .unwrap_or("")
        .trim_start_matches('\u{feff}')
        .trim_start();
    if t.starts_with('<') {
        return Ok(InputKind::Xml);
    }
    if t.starts_with('{') {
        return Ok(InputKind::Json);
    }
    bail!(
        "{}: not a sysfs root directory, snapshot tarball (.tar/.tar.gz/.tar.bz2), XML or JSON",
        path.display()
    )
}

/// Options every source honours.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--pci-ids FILE`.
    pub pci_ids: Option<PathBuf>,
    /// Skip device names entirely (no pci.ids read): for callers that never show names, such as
    /// `fleet`, which loads thousands of nodes.
    pub skip_names: bool,
    /// `--rdma-topo FILE`: the JSON of NVIDIA's `rdma_topo topology -j`, folded in as evidence
    /// ([`datadirect::apply_rdma_topo`]).
    pub rdma_topo: Option<PathBuf>,
}

/// Loads a topology from `--input` (`None`: the live machine at `/`), then folds in rdma_topo's
/// JSON when `--rdma-topo` names one.
pub fn load(input: Option<&Path>, opts: &LoadOptions) -> Result<Topology> {
    let mut topo = load_input(input, opts)?;
    if let Some(p) = &opts.rdma_topo {
        let shown = p.display().to_string();
        let bytes = std::fs::read(p).with_context(|| format!("cannot read {shown}"))?;
        let complexes =
            crate::parse::rdma_topo::parse(&bytes).map_err(|r| anyhow::anyhow!("{shown}: {r}"))?;
        datadirect::apply_rdma_topo(&mut topo, &shown, complexes);
    }
    Ok(topo)
}

fn load_input(input: Option<&Path>, opts: &LoadOptions) -> Result<Topology> {
    let scan_opts = sysfs::ScanOptions {
        pci_ids: if opts.skip_names {
            None
        } else {
            crate::pci_ids::locate(opts.pci_ids.as_deref())
        },
    };
    let Some(path) = input else {
        let fs = fsroot::DirRoot::new("/");
        let src = SourceInfo {
            kind: "sysfs".into(),
            path: "/".into(),
            limitations: vec![],
        };
        let mut topo = sysfs::scan(&fs, src, &scan_opts)?;
        // NVLink state is only on the live machine, through NVML; never panics without it.
        let status = nvml::enrich(&mut topo);
        if let Some(w) = status.warning() {
            topo.warnings.push(w);
        }
        return Ok(topo);
    };
    let shown = path.display().to_string();
    match detect(path)? {
        InputKind::SysfsRoot => {
            if !path.join("sys").is_dir() {
                bail!(
                    "{shown}: directory has no sys/ folder; expected a sysfs root prefix (e.g. an extracted snapshot)"
                );
            }
            let fs = fsroot::DirRoot::new(path);
            let src = SourceInfo {
                kind: "sysfs".into(),
                path: shown,
                limitations: vec![],
            };
            let mut topo = sysfs::scan(&fs, src, &scan_opts)?;
            nvml_store::apply_stored_nvml(&fs, &mut topo)?;
            Ok(topo)
        }
        InputKind::Tarball => {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {shown}"))?;
            let fs = fsroot::MemRoot::from_tar_bytes(&shown, &bytes)
                .with_context(|| format!("{shown}: not a readable snapshot tarball"))?;
            let src = SourceInfo {
                kind: "snapshot".into(),
                path: shown,
                limitations: vec![],
            };
            let mut topo = sysfs::scan(&fs, src, &scan_opts)?;
            nvml_store::apply_stored_nvml(&fs, &mut topo)?;
            Ok(topo)
        }
        InputKind::Xml => {
            let text = read_text(path, &shown)?;
            let doc =
                xmltree::parse(&text).with_context(|| format!("{shown}: not readable as XML"))?;
            let root = doc.root().map(|r| r.name.clone()).unwrap_or_default();
            let src = SourceInfo {
                kind: String::new(),
                path: shown.clone(),
                limitations: vec![],
            };
            match root.as_str() {
                "topology" => hwloc_xml::read(&doc, src, scan_opts.pci_ids.as_deref())
                    .with_context(|| format!("{shown}: hwloc XML")),
                "system" => nccl_xml::read(&doc, src, scan_opts.pci_ids.as_deref())
                    .with_context(|| format!("{shown}: NCCL topology XML")),
                other => bail!(
                    "{shown}: XML root element <{other}> is neither hwloc's <topology> nor NCCL's <system>"
                ),
            }
        }
        InputKind::Json => {
            let text = read_text(path, &shown)?;
            json::read(&text, &shown).with_context(|| format!("{shown}: peerpath JSON"))
        }
    }
}

/// Reads a whole text input, refusing non-UTF-8 content with a clear message.
fn read_text(path: &Path, shown: &str) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {shown}"))?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{shown}: not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        )
    })
}
