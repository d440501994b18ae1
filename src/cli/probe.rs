//! `peerpath probe`: the live transfer probe's command line — options, text/JSON output and
//! exit codes (docs/probe.md).

use clap::{Args, ValueEnum};
use peerpath::probe::memory::MemoryKind;
use peerpath::probe::pairs::PairMode;
use peerpath::probe::run::{self, FabricKind, Fault, ProbeOptions, ProbeReport};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// Every cell ran and none contradicted its label.
pub const EXIT_OK: u8 = 0;
/// Some cell contradicted its label, or a registration or transfer failed.
pub const EXIT_CONTRADICTED: u8 = 1;
/// The probe could not run: a library, provider or device is missing.
pub const EXIT_UNAVAILABLE: u8 = 3;
/// Stopped by Ctrl-C (everything registered was released).
pub const EXIT_INTERRUPTED: u8 = 130;

/// `--fabric`: which RDMA library the probe loads.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FabricArg {
    /// libibverbs.so.1 (InfiniBand, RoCE).
    Verbs,
    /// libfabric.so.1 (EFA, Slingshot, UET, tcp).
    Ofi,
}

/// `--memory`: the memory under test.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum MemoryArg {
    /// Host memory only (the baseline).
    Host,
    /// CUDA device memory (GPUDirect RDMA) next to the host baseline.
    Cuda,
}

/// `--pairs`: which GPU–NIC pairs.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PairsArg {
    /// Each GPU with its best NIC plus one worse control.
    Best,
    /// Every GPU with every NIC.
    All,
}

/// `--format`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ProbeFormat {
    /// One line per cell.
    Text,
    /// `peerpath.probe/1` JSON.
    Json,
}

/// Options of `peerpath probe`.
#[derive(Args)]
pub struct ProbeArgs {
    /// Topology to choose GPU–NIC pairs from (sysfs root, snapshot, XML, JSON); default: the
    /// live machine. Counters are re-read only when this is the live machine.
    #[arg(short, long, value_name = "PATH")]
    pub input: Option<PathBuf>,
    /// Fabric library: libibverbs (InfiniBand/RoCE) or libfabric.
    #[arg(long, value_enum, default_value = "verbs")]
    pub fabric: FabricArg,
    /// libfabric provider (with --fabric ofi): tcp, efa, cxi, verbs, …
    #[arg(long, default_value = "tcp")]
    pub provider: String,
    /// Memory under test: CUDA device memory (GDR) or host memory (baseline only).
    #[arg(long, value_enum, default_value = "cuda")]
    pub memory: MemoryArg,
    /// Pairs: each GPU with its best NIC plus one worse control, or all.
    #[arg(long, value_enum, default_value = "best")]
    pub pairs: PairsArg,
    /// Bound on the whole run, seconds.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub duration: f64,
    /// Message sizes in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [65536usize, 8388608usize])]
    pub sizes: Vec<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ProbeFormat,
}

/// Runs the subcommand; returns the exit code.
pub fn run(
    a: ProbeArgs,
    load: impl Fn(Option<&std::path::Path>) -> anyhow::Result<peerpath::model::Topology>,
) -> anyhow::Result<u8> {
    if !(a.duration > 0.0 && a.duration.is_finite()) {
        anyhow::bail!("--duration must be a positive number of seconds");
    }
    if a.sizes.is_empty() || a.sizes.iter().any(|&s| s == 0 || s > (1 << 30)) {
        anyhow::bail!("--sizes must be between 1 byte and 1 GiB");
    }
    peerpath::probe::install_interrupt_handler();
    let fabric = match a.fabric {
        FabricArg::Verbs => FabricKind::Verbs,
        FabricArg::Ofi => FabricKind::Ofi,
    };
    let topo = match fabric {
        FabricKind::Verbs => Some(load(a.input.as_deref())?),
        FabricKind::Ofi => None,
    };
    let live = a
        .input
        .as_ref()
        .is_none_or(|p| p == std::path::Path::new("/"));
    let json = a.format == ProbeFormat::Json;
    let opts = ProbeOptions {
        fabric,
        provider: a.provider.clone(),
        memory: match a.memory {
            MemoryArg::Host => MemoryKind::Host,
            MemoryArg::Cuda => MemoryKind::Cuda,
        },
        pairs: match a.pairs {
            PairsArg::Best => PairMode::Best,
            PairsArg::All => PairMode::All,
        },
        duration: Duration::from_secs_f64(a.duration),
        sizes: a.sizes.clone(),
        counters_root: live.then(|| PathBuf::from("/")),
        progress: !json && std::io::stderr().is_terminal(),
        fault: Fault::from_env(),
    };
    match run::run(topo.as_ref(), &opts) {
        Err(u) => {
            if json {
                let v = serde_json::json!({"schema": peerpath::probe::PROBE_SCHEMA, "error": u.message, "results": []});
                println!("{}", serde_json::to_string_pretty(&v)?);
            }
            eprintln!("peerpath probe: cannot run: {u}");
            Ok(EXIT_UNAVAILABLE)
        }
        Ok(report) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", render_text(&report));
            }
            Ok(if report.interrupted {
                EXIT_INTERRUPTED
            } else if report.any_contradiction() {
                EXIT_CONTRADICTED
            } else {
                EXIT_OK
            })
        }
    }
}

fn human(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// The text report: one line per cell, then CUDA probes, counters and notes.
pub fn render_text(r: &ProbeReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "probe over {} ({} cells)", r.fabric, r.results.len());
    for c in &r.results {
        let _ = writeln!(
            s,
            "  {:<14} {:<28} {:<5} {:<12} {:<5} {:>7}  {:>8.3} GB/s  {:<9} {:<19} {}{}{}",
            c.gpu.as_deref().unwrap_or("-"),
            c.nic,
            c.memory.as_str(),
            serde_json::to_value(c.direction)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            c.op.as_str(),
            human(c.message_bytes),
            c.gbytes_per_s,
            if c.verified { "verified" } else { "UNVERIFIED" },
            c.verdict.as_str(),
            c.expected_label
                .as_deref()
                .map(|l| format!("[expected {l}] "))
                .unwrap_or_default(),
            if c.contradicts { "CONTRADICTS: " } else { "" },
            c.reason,
        );
    }
    let _ = writeln!(s, "cuda:");
    if !r.cuda.available {
        let _ = writeln!(
            s,
            "  not run: {}",
            r.cuda.reason.as_deref().unwrap_or("unknown")
        );
    }
    let f = |x: Option<f64>| match x {
        Some(v) => format!("{v:.2} GB/s"),
        None => "n/a".to_string(),
    };
    for d in &r.cuda.devices {
        let _ = writeln!(
            s,
            "  GPU {} {} {}: H2D {}, D2H {}, dma-buf {}, GPUDirect RDMA attribute {}{}",
            d.ordinal,
            d.pci_bus_id.as_deref().unwrap_or("?"),
            d.name.as_deref().unwrap_or("?"),
            f(d.h2d_gbytes_per_s),
            f(d.d2h_gbytes_per_s),
            if d.dma_buf_export {
                "exported".to_string()
            } else {
                format!(
                    "not exported ({})",
                    d.dma_buf_export_error.as_deref().unwrap_or("?")
                )
            },
            d.gpudirect_rdma_supported
                .map_or("unknown", |b| if b { "yes" } else { "no" }),
            if d.errors.is_empty() {
                String::new()
            } else {
                format!(" [{}]", d.errors.join("; "))
            }
        );
    }
    for p in &r.cuda.peers {
        let _ = writeln!(
            s,
            "  GPU {} -> GPU {}: peer access {}, with {}, without {}{}",
            p.src,
            p.dst,
            p.can_access_peer
                .map_or("unknown", |b| if b { "yes" } else { "no" }),
            f(p.with_peer_gbytes_per_s),
            f(p.without_peer_gbytes_per_s),
            if p.errors.is_empty() {
                String::new()
            } else {
                format!(" [{}]", p.errors.join("; "))
            }
        );
    }
    if !r.counter_changes.is_empty() {
        let _ = writeln!(s, "counters that changed during the run:");
        for c in &r.counter_changes {
            let _ = writeln!(s, "  {}: {:?} -> {:?}", c.path, c.before, c.after);
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    if r.interrupted {
        let _ = writeln!(
            s,
            "interrupted: remaining cells not run; every registration, endpoint and buffer was released"
        );
    }
    s
}
