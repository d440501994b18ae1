//! `peerpath probe`: the live transfer probe's command line — options, text/JSON output and
//! exit codes (docs/probe.md).

use clap::{Args, ValueEnum};
use peerpath::analysis::probe_report::MemoryKind;
use peerpath::analysis::probe_report::{FabricKind, ProbeFailure};
use peerpath::probe::pairs::PairMode;
use peerpath::probe::run::{self, Fault, ProbeOptions};
use peerpath::render::probe::render_text;
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
    /// AMD GPU memory through ROCm's HIP (libamdhip64.so): GPUDirect RDMA by dma-buf or peer
    /// memory, next to the host baseline.
    Hip,
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
    /// `peerpath.probe/2` JSON (docs/probe.md).
    Json,
}

/// Options of `peerpath probe`. `--key-file` and `--insecure` belong to the control connection
/// across nodes: given without `--listen` or `--peer` they are refused (group `across`), not
/// silently ignored by a probe on this node alone.
#[derive(Args)]
#[command(group(clap::ArgGroup::new("across").args(["listen", "peer"]).multiple(true)))]
pub struct ProbeArgs {
    /// Topology to choose GPU–NIC pairs from (`-i`: sysfs root, snapshot, XML, JSON, with
    /// `--pci-ids`, `--host` and `--rdma-topo` as every topology command reads them); default:
    /// the live machine. Counters are re-read only when this is the live machine.
    #[command(flatten)]
    pub input: crate::InputArgs,
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
    /// Operations in flight per cell, 1 to 64: 1 moves one message at a time (as
    /// `fi_pingpong` does); fewer run when fewer messages fit the buffers.
    #[arg(long, default_value_t = run::DEFAULT_DEPTH as u16, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=run::MAX_DEPTH as i64))]
    pub depth: u16,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ProbeFormat,
    /// Across two nodes, this side: wait for one peer's control connection on this TCP port
    /// and serve its rail (libfabric, host memory).
    #[arg(long, value_name = "PORT", conflicts_with = "peer")]
    pub listen: Option<u16>,
    /// With --listen: the address to accept the control connection on.
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "0.0.0.0",
        requires = "listen"
    )]
    pub bind: std::net::IpAddr,
    /// Across two nodes, the other side: a listening peer `HOST:PORT`, once per rail (rail 0
    /// first); each rail's bytes go to the address its peer is reached at.
    #[arg(long, value_name = "HOST:PORT")]
    pub peer: Vec<String>,
    /// Bound on each wait for the peer (connecting, each answer as a whole, the fabric
    /// connection; on the listener, the wait for a peer that proves the key), seconds.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub timeout: f64,
    /// With --listen/--peer: the file holding the key both sides share (at least 16 bytes,
    /// readable by its owner only); default: the environment variable PEERPATH_PROBE_KEY.
    #[arg(long, value_name = "PATH", requires = "across")]
    pub key_file: Option<PathBuf>,
    /// With --listen/--peer: run the control connection without a key (both sides must say
    /// so): the listener serves whoever connects first. Trusted networks only.
    #[arg(long, requires = "across")]
    pub insecure: bool,
}

/// Runs the subcommand; returns the exit code.
pub fn run(a: ProbeArgs) -> anyhow::Result<u8> {
    if !(a.duration > 0.0 && a.duration.is_finite()) {
        anyhow::bail!("--duration must be a positive number of seconds");
    }
    if a.sizes.is_empty() || a.sizes.iter().any(|&s| s == 0 || s > (1 << 30)) {
        anyhow::bail!("--sizes must be between 1 byte and 1 GiB");
    }
    peerpath::probe::install_interrupt_handler();
    if a.listen.is_some() || !a.peer.is_empty() {
        return across_nodes(&a);
    }
    let fabric = match a.fabric {
        FabricArg::Verbs => FabricKind::Verbs,
        FabricArg::Ofi => FabricKind::Ofi,
    };
    let topo = match fabric {
        FabricKind::Verbs => Some(crate::load(&a.input)?),
        FabricKind::Ofi => None,
    };
    let live = a
        .input
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
            MemoryArg::Hip => MemoryKind::Hip,
        },
        pairs: match a.pairs {
            PairsArg::Best => PairMode::Best,
            PairsArg::All => PairMode::All,
        },
        duration: Duration::from_secs_f64(a.duration),
        sizes: a.sizes.clone(),
        depth: usize::from(a.depth),
        counters_root: live.then(|| PathBuf::from("/")),
        progress: !json && std::io::stderr().is_terminal(),
        fault: Fault::from_env(),
    };
    match run::run(topo.as_ref(), &opts) {
        Err(u) => {
            if json {
                let doc = ProbeFailure::new(&u.message);
                super::print_document(&(serde_json::to_string_pretty(&doc)? + "\n"), true);
            }
            eprintln!("peerpath probe: cannot run: {u}");
            Ok(EXIT_UNAVAILABLE)
        }
        Ok(report) => {
            if json {
                super::print_document(&(serde_json::to_string_pretty(&report)? + "\n"), true);
            } else {
                super::print_text(&render_text(&report));
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

/// `--listen` / `--peer`: the probe across two nodes (docs/probe.md).
fn across_nodes(a: &ProbeArgs) -> anyhow::Result<u8> {
    use peerpath::probe::remote;
    use peerpath::render::escape::one_line;
    if a.fabric != FabricArg::Ofi {
        anyhow::bail!(
            "--listen/--peer run over libfabric only (--fabric ofi); verbs across nodes is not implemented"
        );
    }
    if a.memory != MemoryArg::Host {
        anyhow::bail!("--listen/--peer move host memory only in this version: pass --memory host");
    }
    if !(a.timeout > 0.0 && a.timeout <= 3600.0) {
        anyhow::bail!("--timeout must be between 0 and 3600 seconds");
    }
    let timeout = Duration::from_secs_f64(a.timeout);
    let key = remote::Key::resolve(a.key_file.as_deref(), a.insecure)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let json = a.format == ProbeFormat::Json;
    if let Some(port) = a.listen {
        let o = remote::ListenOptions {
            port,
            bind: a.bind,
            provider: a.provider.clone(),
            timeout,
            key: key.clone(),
            fault: Fault::from_env(),
        };
        // Log lines quote the other side (a stranger's bytes): escaped, one line each.
        let mut log = |l: &str| eprintln!("peerpath probe --listen: {}", one_line(l));
        return Ok(match remote::listen(&o, &mut log) {
            Ok(s) => {
                println!(
                    "served peer {} over {}: {} verified, {} wrong{}",
                    s.peer,
                    s.fabric,
                    s.verified,
                    s.wrong.len(),
                    s.wrong
                        .first()
                        .map(|w| format!(" (first: {w})"))
                        .unwrap_or_default()
                );
                if s.wrong.is_empty() {
                    EXIT_OK
                } else {
                    EXIT_CONTRADICTED
                }
            }
            Err(Ok(u)) => {
                eprintln!(
                    "peerpath probe --listen: cannot run: {}",
                    one_line(&u.to_string())
                );
                EXIT_UNAVAILABLE
            }
            Err(Err(e)) => {
                eprintln!("peerpath probe --listen: session failed: {}", one_line(&e));
                EXIT_CONTRADICTED
            }
        });
    }
    let o = remote::PeerOptions {
        peers: a.peer.clone(),
        provider: a.provider.clone(),
        sizes: a.sizes.clone(),
        depth: usize::from(a.depth),
        duration: Duration::from_secs_f64(a.duration),
        timeout,
        key,
        progress: !json && std::io::stderr().is_terminal(),
    };
    let run = match remote::probe_peers(&o) {
        Ok(r) => r,
        Err(u) => {
            if json {
                let doc = ProbeFailure::new(&u.message);
                super::print_document(&(serde_json::to_string_pretty(&doc)? + "\n"), true);
            }
            eprintln!("peerpath probe: cannot run: {u}");
            return Ok(EXIT_UNAVAILABLE);
        }
    };
    if json {
        super::print_document(&(serde_json::to_string_pretty(&run.report)? + "\n"), true);
    } else {
        super::print_text(&render_text(&run.report));
    }
    for u in &run.unreachable {
        eprintln!("peerpath probe: peer not reached: {}", one_line(u));
    }
    Ok(if !run.unreachable.is_empty() {
        EXIT_UNAVAILABLE
    } else if run.report.interrupted {
        EXIT_INTERRUPTED
    } else if run.report.any_contradiction() {
        EXIT_CONTRADICTED
    } else {
        EXIT_OK
    })
}
