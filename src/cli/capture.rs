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
    // `-r`/`--root` were this flag's names before every command read its input with `-i`;
    // kept, hidden, for scripts.
    #[arg(
        short,
        long,
        alias = "root",
        short_alias = 'r',
        value_name = "DIR|TARBALL"
    )]
    input: Option<PathBuf>,
}

/// Runs `peerpath capture`; returns the exit code.
pub fn run_capture(a: &CaptureArgs) -> Result<u8> {
    let (fs, shown): (Box<dyn fsroot::FsRoot>, String) = match &a.input {
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
        kind: if a.input.is_none() {
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
    if a.input.is_none() {
        // NVML facts exist only on the live machine; the scan was the capture's own.
        opts.nvml_json = capture::nvml_facts(&c.topology, a.keep_serials);
        if opts.nvml_json.is_some() {
            c = capture::capture(fs.as_ref(), src, &opts)?;
        } else {
            c.set_nvml_note("not included: no NVIDIA PCI device, so NVML was not loaded")?;
        }
        // nvidia-smi's NIC numbering: the registration order, from the live kernel only.
        c.set_rdma_order(&peerpath::sources::rdma_order::read_live())?;
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
    /// List the pair labels and findings folded under each change.
    #[arg(long, short = 'v')]
    verbose: bool,
    /// PCI ID database for device names (default: $PCI_IDS, then the system's pci.ids).
    #[arg(long, value_name = "FILE")]
    pci_ids: Option<PathBuf>,
}

/// Every host of one side of `diff` (the live machine is one host).
fn load_named(s: &str, pci_ids: &Option<PathBuf>) -> Result<diff::Hosts> {
    let opts = LoadOptions {
        pci_ids: pci_ids.clone(),
        ..Default::default()
    };
    let all = if s == "live" && !Path::new(s).exists() {
        vec![sources::load(None, &opts)?]
    } else {
        sources::load_hosts(Path::new(s), &opts)?
    };
    Ok(all
        .into_iter()
        .map(|t| (sources::host_name(&t).map(str::to_string), t))
        .collect())
}

/// Runs `peerpath diff`; exit 0 when equal, 1 when they differ. An input of several hosts
/// makes each host its own node ([`diff::diff_hosts`]).
pub fn run_diff(a: &DiffArgs) -> Result<u8> {
    let ha = load_named(&a.a, &a.pci_ids).with_context(|| format!("A ({})", a.a))?;
    let hb = load_named(&a.b, &a.pci_ids).with_context(|| format!("B ({})", a.b))?;
    if ha.len() > 1 || hb.len() > 1 {
        let h = diff::diff_hosts(&a.a, &ha, &a.b, &hb);
        match a.format {
            Format::Text => {
                super::print_text(&peerpath::render::diff::render_hosts_text(&h, a.verbose))
            }
            Format::Json => {
                super::print_document(&(serde_json::to_string_pretty(&h)? + "\n"), true)
            }
        }
        return Ok(if h.equal { 0 } else { 1 });
    }
    let (ta, tb) = (&ha[0].1, &hb[0].1);
    let mut d = diff::diff_topologies(ta, tb);
    d.a = a.a.clone();
    d.b = a.b.clone();
    match a.format {
        Format::Text => super::print_text(&peerpath::render::diff::render_text(&d, a.verbose)),
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
    /// List the pair labels and findings folded under each change of an outlier group.
    #[arg(long, short = 'v')]
    verbose: bool,
    /// A group holding more than this share of the nodes is a majority (the largest always is).
    #[arg(long, default_value_t = 0.1, value_name = "SHARE")]
    majority_share: f64,
    /// Print throughput (inputs per second), CPU time per input and peak memory (VmHWM) to
    /// stderr when done.
    #[arg(long)]
    stats: bool,
    /// Inputs read in parallel (default: the number of CPUs). Memory stays bounded: at most
    /// four inputs per worker are in flight.
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Scan every input, ignoring the fingerprints `capture` recorded in its manifests.
    #[arg(long)]
    rescan: bool,
    /// Input bytes (files and decompressed snapshots, up to 512 MiB each) all workers may hold
    /// at once, in MiB: a worker waits rather than exceed it; the oldest input in flight always
    /// proceeds.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    memory_budget: u64,
}

/// One host read from an input: its host name (an input of several hosts), fingerprint and
/// topology.
type ScannedHost = (Option<String>, u64, Box<Topology>);

/// Loads one input and fingerprints each of its hosts.
fn scan_node(p: &Path, opts: &LoadOptions) -> std::result::Result<Vec<ScannedHost>, String> {
    sources::load_hosts(p, opts)
        .map(|ts| {
            ts.into_iter()
                .map(|t| {
                    let host = sources::host_name(&t).map(str::to_string);
                    (host, fleet::fingerprint(&t), Box::new(t))
                })
                .collect()
        })
        .map_err(|e| format!("{e:#}"))
}

/// What a worker thread made of one input.
enum Read {
    /// The fingerprint its capture manifest recorded (this build's scheme); not scanned.
    Recorded(u64),
    /// Scanned: every host's fingerprint and topology (one for an input of one host).
    Scanned(Vec<ScannedHost>),
    /// Unreadable, and why.
    Failed(String),
}

/// The fingerprint a `peerpath capture` tarball recorded in its manifest, the archive's first
/// entry, when this build's scheme computed it; `None` for anything else (another scheme or
/// version, no manifest, not a gzip tar, a manifest over 1 MiB). Only the head of the file is
/// decompressed. The file is opened as every input is ([`fsroot::input::open_input_file`]:
/// without blocking, a FIFO, socket or device refused by type), so a named pipe in a fleet
/// directory is reported unreadable by the scan that follows instead of hanging the fleet.
fn recorded_fingerprint(p: &Path) -> Option<u64> {
    use std::io::{BufRead, Read as _};
    let f = fsroot::input::open_input_file(p, fsroot::MAX_SNAPSHOT_BYTES).ok()?;
    let mut r = std::io::BufReader::new(f);
    if !r.fill_buf().ok()?.starts_with(&[0x1f, 0x8b]) {
        return None;
    }
    let mut archive = tar::Archive::new(flate2::bufread::GzDecoder::new(r));
    let mut first = archive.entries().ok()?.next()?.ok()?;
    if first.path().ok()?.as_os_str() != capture::MANIFEST_NAME || first.size() > 1 << 20 {
        return None;
    }
    let mut text = String::new();
    first.read_to_string(&mut text).ok()?;
    let m: capture::Manifest = serde_json::from_str(&text).ok()?;
    let fp = m.fingerprint?;
    if fp.scheme != capture::fingerprint_scheme() {
        return None;
    }
    u64::from_str_radix(&fp.value, 16).ok()
}

/// Reads one input on a worker thread: the recorded fingerprint when allowed and present,
/// else a scan.
fn read_node(p: &Path, opts: &LoadOptions, recorded: bool) -> Read {
    if recorded && let Some(fp) = recorded_fingerprint(p) {
        return Read::Recorded(fp);
    }
    match scan_node(p, opts) {
        Ok(hosts) => Read::Scanned(hosts),
        Err(e) => Read::Failed(e),
    }
}

/// Peak resident memory of this process (`VmHWM` in `/proc/self/status`), as the kernel
/// writes it (`123456 kB`); `None` where there is no such file.
fn peak_rss() -> Option<String> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().to_string())
}

/// User + system CPU seconds of this process so far (`/proc/self/stat` fields 14 and 15, in
/// clock ticks of 100 Hz, the `USER_HZ` Linux reports there).
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
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

/// A progress bar on stderr when it is a terminal, hidden otherwise.
fn progress(len: usize) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len as u64);
    if let Ok(s) = indicatif::ProgressStyle::with_template(
        "{bar:30} {pos}/{len} nodes  {per_sec}  eta {eta}  {msg}",
    ) {
        pb.set_style(s);
    }
    pb
}

/// Runs `peerpath fleet`; exit 0 when every node is in a majority group, 1 when there are
/// outliers or unreadable inputs, 130 when interrupted (after printing the partial report).
pub fn run_fleet(a: &FleetArgs) -> Result<u8> {
    if !(0.0..1.0).contains(&a.majority_share) {
        bail!("--majority-share must be in [0, 1)");
    }
    let files = expand(&a.inputs)?;
    if files.is_empty() {
        bail!("no inputs found");
    }
    let started = std::time::Instant::now();
    let cpu0 = cpu_seconds();
    // Ctrl-C sets a flag (the probe's handler); the loop stops after the batch in flight and
    // the nodes read so far are reported.
    peerpath::probe::install_interrupt_handler();
    let mut f = fleet::Fleet::new();
    // Device names are not part of a fingerprint: skip reading pci.ids once per node.
    let budget = sources::budget::ByteBudget::new(a.memory_budget.saturating_mul(1 << 20));
    let no_names = LoadOptions {
        skip_names: true,
        budget: Some(budget.clone()),
        ..Default::default()
    };
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let pb = progress(files.len());
    let mut interrupted = false;
    // Recorded fingerprints checked against their files: fingerprint → whether they matched.
    let mut checked: std::collections::HashMap<u64, bool> = std::collections::HashMap::new();
    // Batches of 4 inputs per worker: each worker takes every jobs-th input of the batch, the
    // nodes are added in input order, and their topologies dropped unless one starts a group.
    for batch in files.chunks(jobs * 4) {
        if peerpath::probe::interrupted() {
            interrupted = true;
            break;
        }
        let mut results: Vec<Option<Read>> = (0..batch.len()).map(|_| None).collect();
        let recorded = !a.rescan;
        std::thread::scope(|sc| {
            let handles: Vec<_> = (0..jobs.min(batch.len()))
                .map(|w| {
                    let no_names = &no_names;
                    sc.spawn(move || {
                        (w..batch.len())
                            .step_by(jobs)
                            .map(|i| (i, read_node(&batch[i], no_names, recorded)))
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
            let name = fleet::node_name(p);
            let shown = p.display().to_string();
            let r = match r {
                // A recorded fingerprint joins its group once that group's first capture was
                // scanned and matched it; a fingerprint that did not match is never trusted.
                Some(Read::Recorded(fp)) => match checked.get(&fp) {
                    Some(true) if f.add_known(&name, fp) => continue,
                    Some(false) => Some(read_node(p, &no_names, false)),
                    _ => {
                        let r = read_node(p, &no_names, false);
                        if let Read::Scanned(hosts) = &r
                            && let [(_, got, _)] = &hosts[..]
                        {
                            checked.insert(fp, *got == fp);
                            if *got != fp {
                                f.add_note(format!(
                                    "{shown}: the fingerprint its manifest records ({fp:016x}) is not that of its files ({got:016x}); captures recording {fp:016x} are scanned"
                                ));
                            }
                        }
                        Some(r)
                    }
                },
                r => r,
            };
            match r {
                // Every host of a multi-host input is its own node, named by its host hash.
                Some(Read::Scanned(hosts)) => {
                    for (host, fp, t) in hosts {
                        match host {
                            Some(h) => f.add_fingerprinted(&format!("{name}:{h}"), fp, *t),
                            None => f.add_fingerprinted(&name, fp, *t),
                        }
                    }
                }
                Some(Read::Failed(e)) => f.add_error(&shown, e),
                Some(Read::Recorded(_)) | None => {
                    f.add_error(&shown, "worker thread failed".into())
                }
            }
        }
        pb.inc(batch.len() as u64);
        pb.set_message(format!("{} group(s)", f.group_count()));
    }
    pb.finish_and_clear();
    let groups = f.group_count();
    let read = f.node_count();
    if a.stats {
        let secs = started.elapsed().as_secs_f64();
        let cpu = match (cpu0, cpu_seconds()) {
            (Some(x), Some(y)) => format!(
                ", {:.2} ms CPU per input",
                (y - x) * 1000.0 / (read.max(1)) as f64
            ),
            _ => String::new(),
        };
        eprintln!(
            "peerpath: fleet: {read} input(s) in {secs:.2} s ({:.1}/s){cpu}, {groups} group(s), peak RSS {}, peak input bytes in flight {} MiB (budget {} MiB)",
            read as f64 / secs.max(1e-9),
            peak_rss().unwrap_or_else(|| "unknown (no /proc/self/status)".into()),
            budget.peak() >> 20,
            budget.limit() >> 20
        );
    }
    let s = f.finish(a.majority_share, files.len(), interrupted);
    if s.nodes == 0 {
        if interrupted {
            bail!("interrupted before any input was read");
        }
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
        Format::Text => super::print_text(&peerpath::render::fleet::render_text(&s, a.verbose)),
        Format::Json => super::print_document(&(serde_json::to_string_pretty(&s)? + "\n"), true),
    }
    Ok(if interrupted {
        130
    } else if s.outliers.is_empty() && s.unreadable.is_empty() {
        0
    } else {
        1
    })
}

#[cfg(test)]
mod tests {
    use crate::{Cli, Command};
    use clap::{CommandFactory, Parser};
    use std::path::Path;

    /// The input `capture` parses from these arguments.
    fn input_of(args: &[&str]) -> Option<std::path::PathBuf> {
        let cli = Cli::try_parse_from([&["peerpath", "capture", "-o", "x.tar.gz"], args].concat())
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        match cli.command {
            Command::Capture(a) => a.input,
            _ => unreachable!(),
        }
    }

    #[test]
    fn input_is_dash_i_as_in_every_command_and_the_old_names_still_work() {
        for args in [
            &["-i", "snap.tar.gz"][..],
            &["--input", "snap.tar.gz"],
            &["--input=snap.tar.gz"],
            &["-r", "snap.tar.gz"],
            &["--root", "snap.tar.gz"],
            &["--root=snap.tar.gz"],
        ] {
            assert_eq!(
                input_of(args).as_deref(),
                Some(Path::new("snap.tar.gz")),
                "{args:?}"
            );
        }
        assert_eq!(input_of(&[]), None);
    }

    #[test]
    fn help_shows_dash_i_and_not_the_old_names() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("capture")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains("-i, --input <DIR|TARBALL>"), "{help}");
        assert!(!help.contains("--root") && !help.contains("-r,"), "{help}");
    }
}
