//! The `peerpath` command line: parses arguments, calls the library, maps errors to exit codes.

use anyhow::Result;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use peerpath::render;
use peerpath::sources::{self, LoadOptions};
use std::path::PathBuf;
use std::process::ExitCode;

mod cli;

/// Exit code when the command itself could not run (bad input, unreadable root).
const EXIT_ERROR: u8 = 2;

/// `peerpath --version`: the package version and the commit it was built from (hash and
/// commit date, or "unknown commit"), as `build.rs` found it.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("PEERPATH_COMMIT"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "peerpath",
    version = VERSION,
    about = "GPU↔NIC PCIe path judge: scan, classify, audit, probe, report"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the topology comes from; shared by every command that reads one.
#[derive(Args, Clone)]
struct InputArgs {
    /// Sysfs root directory, snapshot tarball (.tar/.tar.gz/.tar.bz2/.tar.xz), hwloc/NCCL XML,
    /// peerpath JSON, or operator text: lspci -vvv/-tv/-xxxx output, nvidia-bug-report.log(.gz),
    /// a sosreport or supportconfig archive, a directory of such text; detected by content.
    /// Default: the live machine (/).
    #[arg(short, long, value_name = "PATH")]
    input: Option<PathBuf>,
    /// PCI ID database for device names (default: $PCI_IDS, then the system's pci.ids).
    #[arg(long, value_name = "FILE")]
    pci_ids: Option<PathBuf>,
    /// Which host of an input holding several (NCCL XML fused across hosts, one per
    /// host_hash): its index in input order or its host_hash. Default: the first; every output
    /// names the hosts and the one shown.
    #[arg(long, value_name = "NAME|INDEX")]
    host: Option<String>,
    /// JSON printed by NVIDIA's `rdma_topo topology -j`: pairs ConnectX-8 Data Direct DMA
    /// functions with their NICs and GPUs where the scan cannot (VPD needs root).
    #[arg(long, value_name = "FILE")]
    rdma_topo: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ScanFormat {
    Tree,
    Json,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ExplainFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Scan the node into one PCIe topology and print it as a tree (or JSON).
    Scan {
        #[command(flatten)]
        input: InputArgs,
        /// Output format.
        #[arg(long, value_enum, default_value = "tree")]
        format: ScanFormat,
        /// Show every PCI function, including folded uncore functions and SR-IOV VFs.
        #[arg(long)]
        all: bool,
    },
    /// Plan GPUs, a NIC and CPU cores for N local ranks, with the reason for each choice.
    Place(cli::place::PlaceArgs),
    /// Run a command as one local rank: set its GPU/NIC variables, bind its CPUs and memory,
    /// exec it (`srun peerpath launch -- python train.py`).
    Launch(cli::launch::LaunchArgs),
    /// Write a scheduler or monitoring file: gres, nfd, dra, nccl-xml, prom, dot.
    Export(cli::export::ExportArgs),
    /// Show the NVLink domains and every fabric port leaving them, with the plant they cost.
    Rails(cli::rails::RailsArgs),
    /// nvidia-smi-style matrix of every GPU, accelerator and NIC pair (labels, legend, NIC legend).
    Matrix {
        #[command(flatten)]
        input: InputArgs,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: cli::classify::MatrixFormat,
        /// NCCL version whose rules the NCCL view follows (e.g. 2.19; default: the newest modelled).
        #[arg(long, value_name = "X.Y", value_parser = cli::classify::parse_nccl_version)]
        nccl_version: Option<peerpath::analysis::nccl::NcclVersion>,
        /// Table: leave SR-IOV virtual functions out (NIC numbers stay nvidia-smi's).
        #[arg(long)]
        fold_vfs: bool,
        /// JSON: add every pair's reason, NCCL rules and hops (`detail`, the objects of
        /// `explain --format json`); large on big nodes. Refused with the table formats, which
        /// have no room for words (`explain A B` words one pair).
        #[arg(long)]
        detail: bool,
    },
    /// Explain one pair hop by hop: links, label and why, bottleneck, NCCL's decision.
    Explain {
        /// First device: GPU index (0, GPU0), NIC0, ACC0, NVME0, PCI address, RDMA name or netdev.
        a: String,
        /// Second device, same forms.
        b: String,
        #[command(flatten)]
        input: InputArgs,
        /// NCCL version whose rules the NCCL view follows (e.g. 2.19; default: the newest modelled).
        #[arg(long, value_name = "X.Y", value_parser = cli::classify::parse_nccl_version)]
        nccl_version: Option<peerpath::analysis::nccl::NcclVersion>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: ExplainFormat,
        /// Hidden: the old spelling of `--format json`, kept for scripts (tests/cli_flags.rs).
        #[arg(long, hide = true, conflicts_with = "format")]
        json: bool,
    },
    /// Audit the node for every known cause of a silent GPUDirect RDMA fallback.
    /// Exit 0: no error finding (a node with no GPU, accelerator or RDMA NIC: "nothing to
    /// judge"); 1: an error finding; 2: the audit could not run; 3: operator text that cannot
    /// identify its devices (a bare `lspci -t`, a grep of bridges): nothing judged.
    Audit {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        args: cli::audit::AuditArgs,
    },
    /// Draw the node: SVG or PNG picture, or a self-contained HTML report (picture, GPU
    /// selector, matrix, audit findings, probe results).
    Report {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        args: cli::report::ReportArgs,
    },
    /// Write a synthesized sysfs tree (a named layout, optionally with faults) for tests.
    Fixture(cli::fixture::FixtureArgs),
    /// Snapshot this node: a tar.gz of exactly the sysfs/procfs files peerpath reads (serial
    /// numbers redacted), readable anywhere with `-i FILE.tar.gz`.
    Capture(cli::capture::CaptureArgs),
    /// Compare two nodes by role (GPU index, NIC rail), not by PCI address.
    /// Exit 0: equal; 1: they differ; 2: an input could not be read.
    Diff(cli::diff::DiffArgs),
    /// Group many snapshots or JSON reports by topology fingerprint and show the outliers.
    /// Exit 0: no outlier; 1: outliers or unreadable inputs; 2: nothing could be read.
    Fleet(cli::fleet::FleetArgs),
    /// Read what a job printed (NCCL INFO logs, nccl-tests, perftest, probe JSON) into per-rank
    /// GDR and bandwidth verdicts, joined to a topology with -i (docs/evidence.md).
    /// Exit 0: nothing wrong shown; 1: GDR off, low bandwidth or errors; 2: unreadable input;
    /// 3: nothing read (no GDR shown, no nccl-tests or perftest run, no error).
    Evidence(cli::evidence::EvidenceArgs),
    /// Live transfer probe: loopback RDMA WRITE/READ from GPU and host memory on each chosen
    /// GPU–NIC pair, verified and judged against the classification (docs/probe.md). Link
    /// counters are re-read only when the input is the live machine.
    Probe(cli::probe::ProbeArgs),
    /// GPUDirect Storage probe: read a file on each chosen drive into each GPU with cuFile and
    /// with pread + copy, verified, with the path cuFile took (docs/probe.md).
    /// Exit 0: all verified; 1: a read failed; 3: no drive, CUDA or libcufile.
    ProbeStorage(cli::probe_storage::StorageArgs),
}

fn load(i: &InputArgs) -> Result<peerpath::model::Topology> {
    load_named(i, true)
}

/// Loads the input for `scan`, which judges nothing: the node's own files (its
/// `/etc/nccl.conf`), not the command's environment.
fn load_node(i: &InputArgs) -> Result<peerpath::model::Topology> {
    load_with(i, true, false)
}

/// Loads the input; `names`: whether devices are named from the PCI ID database. `matrix`
/// prints no device name (endpoints are `GPU0`/`NIC0`, the legend names netdevs and RDMA
/// devices), so it does not read and parse the database (1.4 MB) on every run.
fn load_named(i: &InputArgs, names: bool) -> Result<peerpath::model::Topology> {
    load_with(i, names, true)
}

/// [`load_named`]; `job`: the command judges GPUDirect RDMA, so the job's environment is layered
/// over the node's NCCL settings (`cli::job_environment`).
fn load_with(i: &InputArgs, names: bool, job: bool) -> Result<peerpath::model::Topology> {
    let topo = sources::load(
        i.input.as_deref(),
        &LoadOptions {
            pci_ids: i.pci_ids.clone(),
            skip_names: !names,
            host: i.host.clone(),
            rdma_topo: i.rdma_topo.clone(),
            nccl_env: job.then(cli::job_environment),
            ..Default::default()
        },
    )?;
    // A multi-host input is never narrowed silently, whatever the output format.
    if let Some(s) = topo.host_scope.as_ref().filter(|s| s.hosts.len() > 1) {
        cli::say(&format!("peerpath: note: {}", s.line()));
    }
    Ok(topo)
}

fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Scan { input, format, all } => {
            let topo = load_node(&input)?;
            match format {
                ScanFormat::Tree => cli::print_text(&render::tree::render(
                    &topo,
                    render::tree::TreeOptions { all },
                )),
                ScanFormat::Json if std::io::IsTerminal::is_terminal(&std::io::stdout()) => {
                    // On a terminal: whole, with control characters escaped.
                    cli::print_document(&(serde_json::to_string_pretty(&topo)? + "\n"), true);
                }
                ScanFormat::Json => {
                    // Streamed: a 16k-device document is never held whole in memory.
                    use std::io::Write;
                    let mut out =
                        std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
                    serde_json::to_writer_pretty(&mut out, &topo)?;
                    writeln!(out)?;
                    out.flush()?;
                }
            }
            Ok(0)
        }
        Command::Place(a) => cli::place::run(a),
        Command::Launch(a) => cli::launch::run(a),
        Command::Export(a) => cli::export::run(a),
        Command::Rails(a) => cli::rails::run(a),
        Command::Matrix {
            input,
            format,
            nccl_version,
            fold_vfs,
            detail,
        } => {
            if detail && format != cli::classify::MatrixFormat::Json {
                anyhow::bail!(
                    "--detail adds each pair's words to the JSON document (--format json); the table has no room for them: use `peerpath explain A B` for one pair"
                );
            }
            let topo = load_named(&input, false)?;
            use std::io::{IsTerminal, Write};
            let buffered = |print: fn(&str)| -> Result<()> {
                let mut buf = Vec::new();
                cli::classify::run_matrix(&topo, format, nccl_version, fold_vfs, detail, &mut buf)?;
                print(&String::from_utf8_lossy(&buf));
                Ok(())
            };
            match format {
                cli::classify::MatrixFormat::Table | cli::classify::MatrixFormat::RocmSmi => {
                    buffered(cli::print_text)?
                }
                // A terminal gets the document with control characters escaped.
                cli::classify::MatrixFormat::Json if std::io::stdout().is_terminal() => {
                    buffered(|s| cli::print_document(s, true))?
                }
                // A pipe or file gets the pairs streamed as they are worded.
                cli::classify::MatrixFormat::Json => {
                    let mut out =
                        std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
                    cli::classify::run_matrix(
                        &topo,
                        format,
                        nccl_version,
                        fold_vfs,
                        detail,
                        &mut out,
                    )?;
                    out.flush()?;
                }
            }
            Ok(0)
        }
        Command::Explain {
            a,
            b,
            input,
            nccl_version,
            format,
            json,
        } => {
            let topo = load(&input)?;
            let json = json || format == ExplainFormat::Json;
            let out = cli::classify::run_explain(&topo, &a, &b, nccl_version, json)?;
            if json {
                cli::print_document(&out, true);
            } else {
                cli::print_text(&out);
            }
            Ok(0)
        }
        Command::Audit { input, args } => {
            cli::audit::run(&load(&input)?, &args, input.input.is_none())
        }
        Command::Report { input, args } => cli::report::run(&load(&input)?, &args),
        Command::Fixture(a) => cli::fixture::run(a),
        Command::Probe(args) => cli::probe::run(args),
        Command::Evidence(a) => cli::evidence::run(a),
        Command::Capture(a) => cli::capture::run_capture(&a),
        Command::Diff(a) => cli::diff::run_diff(&a),
        Command::Fleet(a) => cli::fleet::run_fleet(&a),
        Command::ProbeStorage(a) => cli::probe_storage::run(a),
    }
}

fn main() -> ExitCode {
    reset_sigpipe();
    // The packagers' hidden command sits beside `Cli`, not in it, so that the man pages and
    // completions it writes from `Cli` show only the commands users run.
    let matches = cli::assets::beside(Cli::command()).get_matches();
    let result = match matches.subcommand() {
        Some((cli::assets::NAME, m)) => cli::assets::run(m),
        _ => run(Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            cli::say(&format!("peerpath: error: {e:#}"));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Piping into `head` must end quietly, not panic on EPIPE.
fn reset_sigpipe() {
    #[cfg(unix)]
    unsafe {
        libc_signal();
    }
}

#[cfg(unix)]
unsafe fn libc_signal() {
    unsafe extern "C" {
        fn signal(sig: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}
