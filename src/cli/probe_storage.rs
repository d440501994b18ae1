//! `peerpath probe-storage`: the GPUDirect Storage probe's command line — options, text/JSON
//! output and exit codes (docs/probe.md "Storage probe").

use super::probe::{EXIT_OK, EXIT_UNAVAILABLE};
use crate::InputArgs;
use clap::{Args, ValueEnum};
use peerpath::analysis::probe_report::storage::{STORAGE_PROBE_SCHEMA, StorageProbeUnavailable};
use peerpath::probe::storage::{self, StorageOptions};
use peerpath::render::storage_probe::render_text;
use std::path::PathBuf;

/// A read failed or did not verify (0: every cell read and verified with both methods; 3,
/// [`EXIT_UNAVAILABLE`]: no drive to probe, no CUDA, or no libcufile).
pub const EXIT_FAILED: u8 = 1;

/// `--format` of the storage probe: `text` (one line per GPU and file) or `json`
/// (`peerpath.storage-probe/1`, docs/probe.md).
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StorageFormat {
    /// Text.
    Text,
    /// JSON.
    Json,
}

/// Options of `peerpath probe-storage`.
#[derive(Args)]
pub struct StorageArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Directory to probe (repeatable): a file is created there, read, and removed. Default:
    /// the data file system of each GPU's nearest NVMe drive.
    #[arg(long, value_name = "DIR")]
    dir: Vec<PathBuf>,
    /// Bytes of each probe file (4 KiB to 16 GiB, a multiple of 4 KiB).
    #[arg(long, default_value_t = 256 << 20, value_name = "BYTES")]
    size: usize,
    /// Timed passes per GPU, file and method.
    #[arg(long, default_value_t = 3, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    passes: u32,
    /// libcufile to load first (else libcufile.so.0 from the loader's path, CUDA's lib64, or
    /// the nvidia-cufile wheel: site-packages/nvidia/cufile/lib or nvidia/cu13/lib).
    #[arg(long, value_name = "PATH")]
    cufile: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: StorageFormat,
}

/// Runs the subcommand; returns the exit code.
pub fn run(a: StorageArgs) -> anyhow::Result<u8> {
    if a.size < 4096 || a.size > (16 << 30) || !a.size.is_multiple_of(4096) {
        anyhow::bail!("--size must be a multiple of 4 KiB between 4 KiB and 16 GiB");
    }
    let topo = crate::load(&a.input)?;
    let json = a.format == StorageFormat::Json;
    let opts = StorageOptions {
        dirs: a.dir.clone(),
        size: a.size,
        passes: a.passes,
        cufile: a.cufile.clone(),
    };
    let report = match storage::run(&topo, &opts) {
        Ok(r) => r,
        Err(u) => {
            let doc = StorageProbeUnavailable {
                schema: STORAGE_PROBE_SCHEMA.to_string(),
                unavailable: u.message.clone(),
            };
            let text = serde_json::to_string_pretty(&doc)?;
            if json {
                super::print_document(&format!("{text}\n"), true);
            }
            eprintln!("peerpath probe-storage: cannot run: {u}");
            return Ok(EXIT_UNAVAILABLE);
        }
    };
    match json {
        true => super::print_document(
            &format!("{}\n", serde_json::to_string_pretty(&report)?),
            true,
        ),
        false => super::print_text(&render_text(&report)),
    }
    Ok(match report.any_failed() {
        true => EXIT_FAILED,
        false => EXIT_OK,
    })
}
