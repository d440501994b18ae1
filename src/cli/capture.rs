//! `peerpath capture`, `peerpath diff` and `peerpath fleet`: snapshot a node, compare two nodes,
//! group many.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use peerpath::analysis::{diff, fleet};
use peerpath::capture::{self, CaptureOptions};
use peerpath::model::{SourceInfo, Topology};
use peerpath::sources::fsroot::FsRoot;
use peerpath::sources::{self, LoadOptions, fsroot};
use std::path::{Path, PathBuf};

/// Output format of `diff` and `fleet`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// Lines for people.
    Text,
    /// JSON (`peerpath.diff/1`, `peerpath.fleet/1`).
    Json,
}

/// Arguments of `peerpath capture`.
#[derive(Args)]
pub struct CaptureArgs {
    /// Output tarball (gzip-compressed tar).
    #[arg(short, long, value_name = "FILE.tar.gz")]
    output: PathBuf,
    /// Keep serial numbers (GPU UUIDs, PCIe Device Serial Numbers); redacted by default.
    #[arg(long)]
    keep_serials: bool,
    /// Capture this sysfs root (a directory holding sys/, or a snapshot tarball) instead of the
    /// live machine.
    #[arg(long, value_name = "DIR|TARBALL")]
    root: Option<PathBuf>,
}

/// Runs `peerpath capture`; returns the exit code.
pub fn run_capture(a: &CaptureArgs) -> Result<u8> {
    let (fs, shown): (Box<dyn fsroot::FsRoot>, String) = match &a.root {
        None => (Box::new(fsroot::DirRoot::new("/")), "/".to_string()),
        Some(p) if p.is_dir() => {
            let fs = fsroot::DirRoot::open(p)?;
            // Looked up inside the root: a `sys` link out of it is not a sys/ folder.
            if !fs.is_dir(Path::new("sys")) {
                bail!("{}: no sys/ folder; not a sysfs root", p.display());
            }
            (Box::new(fs), p.display().to_string())
        }
        Some(p) => {
            let bytes = fsroot::input::read_input(p, fsroot::MAX_SNAPSHOT_BYTES)
                .with_context(|| format!("cannot read {}", p.display()))?;
            let shown = p.display().to_string();
            let m = fsroot::MemRoot::from_tar_bytes(&shown, &bytes)
                .with_context(|| format!("{shown}: not a readable snapshot tarball"))?;
            (Box::new(m), shown)
        }
    };
    let src = SourceInfo {
        kind: if a.root.is_none() {
            "sysfs"
        } else {
            "snapshot"
        }
        .into(),
        path: shown,
        limitations: vec![],
    };
    let mut opts = CaptureOptions {
        keep_serials: a.keep_serials,
        nvml_json: None,
    };
    let mut c = capture::capture(fs.as_ref(), src.clone(), &opts)?;
    if a.root.is_none() {
        // NVML facts exist only on the live machine; the scan was the capture's own.
        opts.nvml_json = capture::nvml_facts(&c.topology, a.keep_serials);
        if opts.nvml_json.is_some() {
            c = capture::capture(fs.as_ref(), src, &opts)?;
        } else {
            c.set_nvml_note("not included: no NVIDIA PCI device, so NVML was not loaded")?;
        }
    }
    peerpath::output::write_output_with(&a.output, |w| c.write_tar_gz(w))?;
    let m = &c.manifest;
    super::say(&format!(
        "peerpath: captured {} files from {} into {} ({} device(s)); serials {}; NVML: {}",
        m.files,
        m.source,
        a.output.display(),
        c.topology.devices.len(),
        if m.keep_serials {
            "kept".to_string()
        } else {
            format!("redacted ({} place(s))", m.redacted.len())
        },
        m.nvml
    ));
    if !m.left_out.is_empty() {
        super::say(&format!(
            "peerpath: warning: {} path(s) the scanner read are not on the capture whitelist and were left out: {}",
            m.left_out.len(),
            m.left_out.join(", ")
        ));
    }
    Ok(0)
}

/// Arguments of `peerpath diff`.
#[derive(Args)]
pub struct DiffArgs {
    /// First node: `live` (this machine), a snapshot tarball, a sysfs root, hwloc/NCCL XML or
    /// peerpath JSON.
    a: String,
    /// Second node, same forms.
    b: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// PCI ID database for device names.
    #[arg(long, value_name = "FILE")]
    pci_ids: Option<PathBuf>,
}

fn load_named(s: &str, pci_ids: &Option<PathBuf>) -> Result<Topology> {
    let opts = LoadOptions {
        pci_ids: pci_ids.clone(),
        ..Default::default()
    };
    if s == "live" && !Path::new(s).exists() {
        sources::load(None, &opts)
    } else {
        sources::load(Some(Path::new(s)), &opts)
    }
}

/// Runs `peerpath diff`; exit 0 when equal, 1 when they differ.
pub fn run_diff(a: &DiffArgs) -> Result<u8> {
    let ta = load_named(&a.a, &a.pci_ids).with_context(|| format!("A ({})", a.a))?;
    let tb = load_named(&a.b, &a.pci_ids).with_context(|| format!("B ({})", a.b))?;
    let mut d = diff::diff_topologies(&ta, &tb);
    d.a = a.a.clone();
    d.b = a.b.clone();
    match a.format {
        Format::Text => super::print_text(&peerpath::render::diff::render_text(&d)),
        Format::Json => super::print_document(&(serde_json::to_string_pretty(&d)? + "\n"), true),
    }
    Ok(if d.equal { 0 } else { 1 })
}

/// Arguments of `peerpath fleet`.
#[derive(Args)]
pub struct FleetArgs {
    /// Snapshot tarballs, peerpath JSON reports, XML files or directories of them (a directory
    /// holding sys/ is one node).
    #[arg(required = true, value_name = "DIR|FILE")]
    inputs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// A group holding more than this share of the nodes is a majority (the largest always is).
    #[arg(long, default_value_t = 0.1, value_name = "SHARE")]
    majority_share: f64,
    /// Print throughput (inputs per second) and peak memory (VmHWM) to stderr when done.
    #[arg(long)]
    stats: bool,
    /// Inputs read in parallel (default: the number of CPUs). Memory stays bounded: at most
    /// four inputs per worker are in flight.
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
}

/// Loads one input and reduces it to its role-level view (run on a worker thread).
fn view_of(p: &Path, opts: &LoadOptions) -> std::result::Result<diff::NodeView, String> {
    sources::load(Some(p), opts)
        .map(|t| diff::NodeView::of(&t))
        .map_err(|e| format!("{e:#}"))
}

/// Peak resident memory of this process (`VmHWM` in `/proc/self/status`), as the kernel
/// writes it (`123456 kB`); `None` where there is no such file.
fn peak_rss() -> Option<String> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().to_string())
}

/// Expands the inputs: directories into their entries (sorted), files as given.
fn expand(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() && !p.join("sys").is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot list {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|q| {
                    let n = q
                        .file_name()
                        .map(|s| s.to_string_lossy())
                        .unwrap_or_default();
                    !n.starts_with('.') && !n.ends_with(".partial")
                })
                .collect();
            v.sort();
            out.extend(v);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Runs `peerpath fleet`; exit 0 when every node is in a majority group, 1 when there are
/// outliers or unreadable inputs.
pub fn run_fleet(a: &FleetArgs) -> Result<u8> {
    if !(0.0..1.0).contains(&a.majority_share) {
        bail!("--majority-share must be in [0, 1)");
    }
    let files = expand(&a.inputs)?;
    if files.is_empty() {
        bail!("no inputs found");
    }
    let started = std::time::Instant::now();
    let mut f = fleet::Fleet::new();
    // Device names are not part of a fingerprint: skip reading pci.ids once per node.
    let no_names = LoadOptions {
        skip_names: true,
        ..Default::default()
    };
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Batches of 4 inputs per worker: each worker takes every jobs-th input of the batch, the
    // views are added in input order, then dropped (only new groups keep one).
    for batch in files.chunks(jobs * 4) {
        let mut results: Vec<Option<std::result::Result<diff::NodeView, String>>> =
            (0..batch.len()).map(|_| None).collect();
        std::thread::scope(|sc| {
            let handles: Vec<_> = (0..jobs.min(batch.len()))
                .map(|w| {
                    let no_names = &no_names;
                    sc.spawn(move || {
                        (w..batch.len())
                            .step_by(jobs)
                            .map(|i| (i, view_of(&batch[i], no_names)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                // A panicking worker leaves its inputs as `None`: reported as unreadable below.
                if let Ok(v) = h.join() {
                    for (i, r) in v {
                        results[i] = Some(r);
                    }
                }
            }
        });
        for (p, r) in batch.iter().zip(results) {
            match r {
                Some(Ok(v)) => f.add_view(&fleet::node_name(p), v),
                Some(Err(e)) => f.add_error(&p.display().to_string(), e),
                None => f.add_error(&p.display().to_string(), "worker thread failed".into()),
            }
        }
    }
    let groups = f.group_count();
    let s = f.finish(a.majority_share);
    if a.stats {
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "peerpath: fleet: {} input(s) in {secs:.2} s ({:.1}/s), {groups} group(s), peak RSS {}",
            files.len(),
            files.len() as f64 / secs.max(1e-9),
            peak_rss().unwrap_or_else(|| "unknown (no /proc/self/status)".into())
        );
    }
    if s.nodes == 0 {
        bail!(
            "none of the {} input(s) could be read (first: {})",
            s.unreadable.len(),
            s.unreadable
                .first()
                .map(|u| format!("{}: {}", u.input, u.error))
                .unwrap_or_default()
        );
    }
    match a.format {
        Format::Text => super::print_text(&peerpath::render::fleet::render_text(&s)),
        Format::Json => super::print_document(&(serde_json::to_string_pretty(&s)? + "\n"), true),
    }
    Ok(if s.outliers.is_empty() && s.unreadable.is_empty() {
        0
    } else {
        1
    })
}
