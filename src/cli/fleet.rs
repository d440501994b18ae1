//! `peerpath fleet`: group many nodes by what they are, name the outliers. The reading of the
//! inputs (directories expanded, recorded fingerprints trusted once checked, scans in
//! parallel) is [`peerpath::capture::fleet`]; this file holds the flags, the progress bar, the
//! figures `--stats` prints and the output.

use super::Format;
use anyhow::{Result, bail};
use clap::Args;
use peerpath::capture::fleet as fleet_read;
use peerpath::sources::{self, LoadOptions};
use std::path::PathBuf;

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
    let files = fleet_read::expand(&a.inputs)?;
    if files.is_empty() {
        bail!("no inputs found");
    }
    let started = std::time::Instant::now();
    let cpu0 = cpu_seconds();
    // Ctrl-C sets a flag (the probe's handler); the loop stops after the batch in flight and
    // the nodes read so far are reported.
    peerpath::probe::install_interrupt_handler();
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
    let (f, interrupted) = fleet_read::read_fleet(
        &files,
        &no_names,
        jobs,
        !a.rescan,
        peerpath::probe::interrupted,
        |done, f| {
            pb.inc(done as u64);
            pb.set_message(format!("{} group(s)", f.group_count()));
        },
    );
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
