//! Sources: each turns something outside (the live machine, a snapshot, an XML or JSON file)
//! into one [`Topology`]. A source only reads; none classifies.
//!
//! Every source but peerpath's own JSON works in two phases: `discover` reads raw facts into
//! an [`assemble::RawTopology`], and the one [`assemble::assemble`] infers the structure,
//! indexes, tallies NVLinks and names devices. NVML (live) and stored NVML facts (snapshots)
//! are folded in after assembly, as hwloc's NVML plugin annotates its topology.

pub mod archive;
pub mod assemble;
pub mod budget;
pub mod c2c;
pub mod datadirect;
pub mod ethtool;
pub mod fabric;
pub mod fsroot;
pub mod hwloc_xml;
pub mod json;
pub mod kfd;
pub mod lspci;
pub mod naming;
pub mod nccl_conf;
pub mod nccl_xml;
pub mod nvml;
pub mod nvml_store;
pub mod rdma_order;
pub mod storage;
pub mod sysfs;
pub mod tree;
pub mod warn_cap;
pub mod xmltree;

use crate::model::{SourceInfo, Topology};
use anyhow::{Context, Result, bail};
use fsroot::FsRoot;
use std::path::{Path, PathBuf};

/// What `--input` turned out to be, by content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputKind {
    /// A directory holding `sys/` (the live `/` or an extracted snapshot).
    SysfsRoot,
    /// A tar archive (plain, gzip, bzip2, xz): a snapshot, or a sosreport/supportconfig.
    Tarball,
    /// An XML document (hwloc or NCCL topology).
    Xml,
    /// A JSON document written by peerpath.
    Json,
    /// Any other text: read as operator text (`lspci` output, [`lspci`]), refused when it
    /// holds none.
    Text,
}

/// Detects an input's kind from its content (never from its name alone). The path is opened
/// without blocking and must be a directory or a regular file: a FIFO, socket or device is
/// refused by type before a byte is read.
pub fn detect(path: &Path) -> Result<InputKind> {
    let opened = fsroot::input::open_input(path)
        .with_context(|| format!("cannot open input {}", path.display()))?;
    let mut f = match opened {
        fsroot::input::Opened::Dir => return Ok(InputKind::SysfsRoot),
        fsroot::input::Opened::File(f, _) => f,
    };
    let mut head = [0u8; 512];
    let n = {
        use std::io::Read;
        let mut total = 0;
        loop {
            let k = f
                .read(&mut head[total..])
                .with_context(|| format!("cannot read input {}", path.display()))?;
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
    sniff(&head[..n]).with_context(|| {
        format!(
            "{}: not a sysfs root directory, snapshot tarball (.tar/.tar.gz/.tar.bz2), XML, JSON or lspci text",
            path.display()
        )
    })
}

/// The kind the first bytes of a file show (`None`: none peerpath reads). The window may end
/// inside a multi-byte UTF-8 character: only the complete characters before it are looked at.
fn sniff(h: &[u8]) -> Option<InputKind> {
    if h.starts_with(&[0x1f, 0x8b])
        || h.starts_with(b"BZh")
        || h.starts_with(fsroot::XZ_MAGIC)
        || (h.len() >= 262 && &h[257..262] == b"ustar")
    {
        return Some(InputKind::Tarball);
    }
    let t = match std::str::from_utf8(h) {
        Ok(t) => t,
        // Cut inside a character at the window's end: the valid prefix is the text.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&h[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let t = t.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('<') {
        return Some(InputKind::Xml);
    }
    if t.starts_with('{') {
        return Some(InputKind::Json);
    }
    // Text (no NUL): what it holds is decided by reading it.
    if !t.is_empty() && !t.contains('\0') {
        return Some(InputKind::Text);
    }
    None
}

/// Options every source honours.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--pci-ids FILE`.
    pub pci_ids: Option<PathBuf>,
    /// Skip device names entirely (no pci.ids read): for callers that never show names, such as
    /// `fleet`, which loads thousands of nodes.
    pub skip_names: bool,
    /// `--host NAME|INDEX`: which host of an input holding several (an NCCL XML fused across
    /// hosts) to read; `None`: the first. An input of one host accepts `0` and its own name.
    pub host: Option<String>,
    /// `--rdma-topo FILE`: the JSON of NVIDIA's `rdma_topo topology -j`, folded in as evidence
    /// ([`datadirect::apply_rdma_topo`]).
    pub rdma_topo: Option<PathBuf>,
    /// A budget shared by loads running in parallel: the input file's bytes and a snapshot's
    /// decompressed bytes are taken from it while the load runs (`fleet -j`).
    pub budget: Option<std::sync::Arc<budget::ByteBudget>>,
    /// The job's environment (`NCCL_*` and `HOME`), as the command hands it in: layered over
    /// the node's `/etc/nccl.conf` in NCCL's order, with `NCCL_CONF_FILE` or (live only)
    /// `~/.nccl.conf` ([`nccl_conf::apply_environment`]). `None`: the node's files alone.
    pub nccl_env: Option<Vec<(String, String)>>,
}

/// Loads a topology from `--input` (`None`: the live machine at `/`) for the host
/// [`LoadOptions::host`] names, then folds in rdma_topo's JSON when `--rdma-topo` names one.
pub fn load(input: Option<&Path>, opts: &LoadOptions) -> Result<Topology> {
    let mut topo = load_input(input, opts)?;
    if let Some(env) = &opts.nccl_env {
        nccl_conf::apply_environment(&mut topo.machine.nccl, env, input.is_none());
    }
    if let Some(want) = opts.host.as_deref()
        && topo.source.kind != "nccl-xml"
    {
        // Only NCCL XML selects among hosts; any other input describes one host (a JSON
        // document keeps the host it was written for): `--host` must name that one.
        let names: Vec<String> = match &topo.host_scope {
            Some(s) => s.hosts.iter().map(|h| h.name.clone()).collect(),
            None => vec!["this machine".to_string()],
        };
        let i = nccl_xml::select_host(&names, want)?;
        let own = topo.host_scope.as_ref().map(|s| s.selected).unwrap_or(0);
        if i != own {
            bail!(
                "--host {want}: this input ({}) describes only host {own} ({})",
                topo.source.path,
                names[own]
            );
        }
    }
    if let Some(p) = &opts.rdma_topo {
        let shown = p.display().to_string();
        let bytes = fsroot::input::read_input(p, fsroot::input::MAX_SIDE_FILE_BYTES)
            .with_context(|| format!("cannot read {shown}"))?;
        let complexes =
            crate::parse::rdma_topo::parse(&bytes).map_err(|r| anyhow::anyhow!("{shown}: {r}"))?;
        datadirect::apply_rdma_topo(&mut topo, &shown, complexes);
    }
    Ok(topo)
}

/// Loads every host of an input: one topology per host of an input holding several (an NCCL
/// XML fused across hosts, each read as `--host I` reads it, in input order), the one
/// topology of any other input. With [`LoadOptions::host`] set, only that host. What `fleet`
/// and `diff` read, so that each host is its own node.
pub fn load_hosts(input: &Path, opts: &LoadOptions) -> Result<Vec<Topology>> {
    let first = load(Some(input), opts)?;
    let count = match (&opts.host, &first.host_scope) {
        (None, Some(s)) => s.hosts.len(),
        _ => 1,
    };
    let mut all = vec![first];
    for i in 1..count {
        let one = LoadOptions {
            host: Some(i.to_string()),
            ..opts.clone()
        };
        all.push(load(Some(input), &one)?);
    }
    Ok(all)
}

/// The name of the host a topology describes when its input holds several (its `host_hash`
/// as the input writes it); `None` for an input of one host.
pub fn host_name(t: &Topology) -> Option<&str> {
    t.host_scope
        .as_ref()
        .filter(|s| s.hosts.len() > 1)
        .map(|s| s.host().name.as_str())
}

fn load_input(input: Option<&Path>, opts: &LoadOptions) -> Result<Topology> {
    let scan_opts = sysfs::ScanOptions {
        pci_ids: if opts.skip_names {
            None
        } else {
            naming::locate(opts.pci_ids.as_deref())
        },
    };
    let Some(path) = input else {
        return scan_live(&scan_opts);
    };
    let shown = path.display().to_string();
    // Operator text names devices where it prints no IDs (`lspci -tv`, `-vvv` without -nn):
    // the database reads those names back to IDs, so text is never read without it (it is
    // opened only when a name needs it).
    let text_ids = naming::locate(opts.pci_ids.as_deref());
    // Held until this load returns: the input's bytes and its decompressed snapshot.
    let mut charge = opts.budget.as_ref().map(|b| b.start());
    let size_of = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let kind = detect(path)?;
    // Every input but a directory is charged its size (at most what its reader reads).
    let cap = match kind {
        InputKind::SysfsRoot => None,
        InputKind::Tarball => Some(fsroot::MAX_SNAPSHOT_BYTES),
        InputKind::Xml | InputKind::Text | InputKind::Json => {
            Some(fsroot::input::MAX_TEXT_INPUT_BYTES)
        }
    };
    if let (Some(c), Some(cap)) = (charge.as_mut(), cap) {
        c.take(size_of(path).min(cap));
    }
    match kind {
        InputKind::SysfsRoot => load_dir(
            path,
            shown,
            &scan_opts,
            text_ids.as_deref(),
            charge.as_mut(),
        ),
        InputKind::Tarball => load_tarball(
            path,
            shown,
            &scan_opts,
            text_ids.as_deref(),
            charge.as_mut(),
        ),
        InputKind::Xml => load_xml(path, shown, &scan_opts, opts),
        InputKind::Text => {
            let text = read_text(path, &shown)?;
            read_operator_text(&text, &shown, text_ids.as_deref())
        }
        InputKind::Json => {
            let text = read_text(path, &shown)?;
            json::read(&text, &shown).with_context(|| format!("{shown}: peerpath JSON"))
        }
    }
}

/// The live machine: sysfs under `/`, with what only a live machine has (supported link
/// modes, the RDMA registration order, NVML's NVLink state).
fn scan_live(scan_opts: &sysfs::ScanOptions) -> Result<Topology> {
    let fs = fsroot::DirRoot::new("/");
    let src = SourceInfo {
        kind: "sysfs".into(),
        path: "/".into(),
        limitations: vec![],
    };
    // NVML starts on its own thread while sysfs is read (its start is most of the time a
    // live scan takes on a GPU node); it is folded in below as before.
    let nvml_pending = nvml::start(&fs);
    let mut topo = sysfs::scan(&fs, src, scan_opts)?;
    // Supported link modes (the port's SKU speed) are only on the live machine.
    ethtool::enrich(&mut topo);
    // The RDMA registration order (nvidia-smi's NIC numbering) is only live, over netlink.
    rdma_order::apply(&mut topo, &rdma_order::read_live());
    // NVLink state is only on the live machine, through NVML; never panics without it.
    let status = nvml::enrich_with(&mut topo, nvml_pending);
    if let Some(w) = status.warning() {
        topo.warnings.push(w);
    }
    Ok(topo)
}

/// A directory: a sysfs root prefix (an extracted snapshot), else a directory of operator
/// text (lspci output, an extracted sosreport).
fn load_dir(
    path: &Path,
    shown: String,
    scan_opts: &sysfs::ScanOptions,
    text_ids: Option<&Path>,
    charge: Option<&mut budget::Charge>,
) -> Result<Topology> {
    let fs = fsroot::DirRoot::open(path)?;
    // `sys` is looked up inside the root: a `sys` link out of it is not a sys/ folder.
    if !fs.is_dir(Path::new("sys")) {
        // A directory of operator text (lspci output, an extracted sosreport).
        if let Some(t) = archive::read_dir(&fs, &shown, text_ids, charge)? {
            return Ok(t);
        }
        bail!(
            "{shown}: directory has no sys/ folder and no lspci text; expected a sysfs root prefix (e.g. an extracted snapshot)"
        );
    }
    scan_stored(&fs, "sysfs", shown, scan_opts)
}

/// A snapshot's sysfs, with what the capture stored beside it (the RDMA registration order,
/// NVML's facts).
fn scan_stored(
    fs: &dyn FsRoot,
    kind: &str,
    shown: String,
    scan_opts: &sysfs::ScanOptions,
) -> Result<Topology> {
    let src = SourceInfo {
        kind: kind.into(),
        path: shown,
        limitations: vec![],
    };
    let mut topo = sysfs::scan(fs, src, scan_opts)?;
    rdma_order::apply_stored(fs, &mut topo)?;
    nvml_store::apply_stored_nvml(fs, &mut topo)?;
    Ok(topo)
}

/// A gzip or tar file: gzipped text, a snapshot tarball, or a support archive (sosreport,
/// supportconfig) holding lspci text.
fn load_tarball(
    path: &Path,
    shown: String,
    scan_opts: &sysfs::ScanOptions,
    text_ids: Option<&Path>,
    mut charge: Option<&mut budget::Charge>,
) -> Result<Topology> {
    let bytes = fsroot::input::read_input(path, fsroot::MAX_SNAPSHOT_BYTES)
        .with_context(|| format!("cannot read {shown}"))?;
    // A gzip file that holds text, not a tar archive (`lspci-vvv.txt.gz`).
    if let Some(text) = gunzip_text(&bytes, fsroot::input::MAX_TEXT_INPUT_BYTES)
        .with_context(|| format!("{shown}: gzip text"))?
    {
        // The inflated text is held while it is read: charged as a snapshot's bytes are.
        if let Some(c) = charge.as_deref_mut() {
            c.take(text.len() as u64);
        }
        return read_operator_text(&text, &shown, text_ids);
    }
    let fs = match support_archive(&bytes, &shown, text_ids, charge)? {
        Ok(t) => return Ok(t),
        Err(fs) => fs,
    };
    let mut topo = scan_stored(&fs, "snapshot", shown, scan_opts)?;
    for (p, m) in fs.skipped() {
        topo.warnings.insert(
            0,
            crate::model::Warning {
                path: p.display().to_string(),
                message: m.clone(),
            },
        );
    }
    Ok(topo)
}

/// A tar archive, inflated once: a support archive (sosreport, supportconfig: no member path
/// holds `sys/bus/pci`, and a member holds lspci text) is read from its members' text, the
/// inflated archive dropped before the text is read (≤ 2× the inflated size, issue 53: it was
/// inflated twice and every file copied, 3.4×); anything else is the snapshot (`Err`), or
/// the snapshot reader's error. A member over its cap refuses the archive in the cap's words.
fn support_archive(
    bytes: &[u8],
    shown: &str,
    text_ids: Option<&Path>,
    mut charge: Option<&mut budget::Charge>,
) -> Result<std::result::Result<Topology, fsroot::MemRoot>> {
    let not_snapshot =
        |e| anyhow::Error::new(e).context(format!("{shown}: not a readable snapshot tarball"));
    let held_before = charge.as_ref().map_or(0, |c| c.held());
    let data = fsroot::tar_data(bytes, charge.as_deref_mut()).map_err(not_snapshot)?;
    let mut archive_err = None;
    if !fsroot::holds_path(&data, "sys/bus/pci").unwrap_or(false) {
        // Not a snapshot: a sosreport or supportconfig holds lspci text instead. The archive
        // reader takes the inflated copy and drops it once the text is joined.
        match archive::read_data(data, shown, text_ids, charge.as_deref_mut()) {
            Ok(Some(t)) => return Ok(Ok(t)),
            // A member over its cap refuses the archive in the cap's words.
            Err(ae) if is_too_large(&ae) => {
                return Err(ae).with_context(|| format!("{shown}: support archive"));
            }
            Err(ae) => archive_err = Some(ae),
            Ok(None) => {}
        }
        // Neither: the snapshot reader says why (it inflates the archive again; what the
        // archive reader took is given back first).
        if let Some(c) = charge.as_deref_mut() {
            c.give_back(c.held().saturating_sub(held_before));
        }
        return match fsroot::MemRoot::from_tar_bytes_charged(shown, bytes, charge) {
            Ok(fs) => match archive_err {
                Some(ae) => Err(ae).with_context(|| format!("{shown}: support archive")),
                None => Ok(Err(fs)),
            },
            Err(e) => Err(not_snapshot(e)),
        };
    }
    match fsroot::MemRoot::from_tar_data(shown, data, charge) {
        Ok(fs) => Ok(Err(fs)),
        Err(e) => Err(not_snapshot(e)),
    }
}

/// An XML file: hwloc's `<topology>` or NCCL's `<system>` (the host `opts.host` names).
fn load_xml(
    path: &Path,
    shown: String,
    scan_opts: &sysfs::ScanOptions,
    opts: &LoadOptions,
) -> Result<Topology> {
    let text = read_text(path, &shown)?;
    let doc = xmltree::parse(&text).with_context(|| format!("{shown}: not readable as XML"))?;
    let root = doc.root().map(|r| r.name.clone()).unwrap_or_default();
    let src = SourceInfo {
        kind: String::new(),
        path: shown.clone(),
        limitations: vec![],
    };
    match root.as_str() {
        "topology" => hwloc_xml::read(&doc, src, scan_opts.pci_ids.as_deref())
            .with_context(|| format!("{shown}: hwloc XML")),
        "system" => nccl_xml::read_host(
            &doc,
            src,
            scan_opts.pci_ids.as_deref(),
            opts.host.as_deref(),
        )
        .with_context(|| format!("{shown}: NCCL topology XML")),
        other => bail!(
            "{shown}: XML root element <{other}> is neither hwloc's <topology> nor NCCL's <system>"
        ),
    }
}

/// Reads text an operator pasted (`lspci` output) into a topology, or says it holds none.
fn read_operator_text(text: &str, shown: &str, pci_ids: Option<&Path>) -> Result<Topology> {
    let src = SourceInfo {
        kind: "lspci".into(),
        path: shown.to_string(),
        limitations: vec![],
    };
    match lspci::read(text, src, pci_ids) {
        Err(e) if is_too_large(&e) => Err(e).with_context(|| shown.to_string()),
        r => r.with_context(|| {
            format!(
                "{shown}: text, but not lspci output peerpath reads (`lspci -vvv`, `lspci -tv`, `lspci -xxxx`)"
            )
        }),
    }
}

/// Whether an error is a size cap's refusal (kind `FileTooLarge`), anywhere in its chain.
pub(crate) fn is_too_large(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::FileTooLarge)
    })
}

/// The text inside a gzip file that is not a tar archive: `Ok(None)` for a tar, a file that
/// does not decompress, or one whose content is not UTF-8 text; an error (the cap's words,
/// never a cut judged) when the text inflates past `max` bytes.
pub(crate) fn gunzip_text(bytes: &[u8], max: u64) -> Result<Option<String>> {
    use std::io::Read;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(None);
    }
    let mut d = flate2::read::MultiGzDecoder::new(bytes);
    // The tar header first: a tarball is not inflated here only to be thrown away.
    let mut out = Vec::new();
    if (&mut d).take(512).read_to_end(&mut out).is_err() {
        return Ok(None);
    }
    if out.len() >= 262 && &out[257..262] == b"ustar" {
        return Ok(None);
    }
    let rest = max.saturating_add(1).saturating_sub(out.len() as u64);
    if d.take(rest).read_to_end(&mut out).is_err() {
        return Ok(None);
    }
    if out.len() as u64 > max {
        bail!(
            "inflates to more than the {} peerpath reads of a text; refused (never judged from a cut)",
            fsroot::shown_size(max)
        );
    }
    if out.contains(&0) {
        return Ok(None);
    }
    Ok(String::from_utf8(out).ok())
}

/// Reads a whole text input, refusing non-UTF-8 content with a clear message.
fn read_text(path: &Path, shown: &str) -> Result<String> {
    let bytes = fsroot::input::read_input(path, fsroot::input::MAX_TEXT_INPUT_BYTES)
        .with_context(|| format!("cannot read {shown}"))?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{shown}: not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gz(b: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    /// Issue 53: a `.txt.gz` that inflates past the cap was cut at 256 MiB and judged; it is
    /// refused in the cap's words. At the cap it is read whole.
    #[test]
    fn gzip_text_over_the_cap_is_refused_never_cut() {
        let text = "01:00.0 3D controller [0302]: NVIDIA Corporation Device 2330 [10de:2330]\n";
        let body = text.repeat(100);
        let z = gz(body.as_bytes());
        let e = format!("{:#}", gunzip_text(&z, body.len() as u64 - 1).unwrap_err());
        assert!(e.contains("more than the") && e.contains("refused"), "{e}");
        assert_eq!(
            gunzip_text(&z, body.len() as u64).unwrap().as_deref(),
            Some(body.as_str())
        );
        // The real cap, on 257 MiB of blank lines (a quarter of a MiB compressed).
        let big = gz(&vec![b'\n'; (257 << 20) as usize]);
        let e = format!(
            "{:#}",
            gunzip_text(&big, fsroot::input::MAX_TEXT_INPUT_BYTES).unwrap_err()
        );
        assert!(e.contains("256 MiB"), "{e}");
        // A tarball is not inflated here.
        let mut tar = vec![0u8; 1024];
        tar[257..262].copy_from_slice(b"ustar");
        assert!(gunzip_text(&gz(&tar), 10).unwrap().is_none());
    }

    #[test]
    fn sniff_window_may_cut_a_character() {
        // "é" is two bytes: put its first byte at offset 511 of the window.
        let mut json = b"{\"x\": \"".to_vec();
        json.resize(511, b'a');
        json.extend_from_slice("é\"}".as_bytes());
        assert_eq!(sniff(&json[..512]), Some(InputKind::Json));
        let mut xml = b"<topology><!-- ".to_vec();
        xml.resize(510, b' ');
        xml.extend_from_slice("€ --></topology>".as_bytes());
        assert_eq!(sniff(&xml[..512]), Some(InputKind::Xml));
        // Invalid UTF-8 before the first tag is still refused.
        assert_eq!(sniff(b"\xff\xfe<x/>"), None);
        assert_eq!(sniff(b"\xef\xbb\xbf  {}"), Some(InputKind::Json));
    }
}
