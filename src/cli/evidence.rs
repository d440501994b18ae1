//! `peerpath evidence FILE… [-i SNAPSHOT] [--nic-gbps N×SPEED] [--format text|json]`: reads
//! what a job printed (NCCL logs, nccl-tests, perftest, probe documents; kind detected from
//! content) into GDR and bandwidth verdicts, joined to a topology when `-i` is given.
//! Exit 0: nothing wrong shown; 1: a rank without GDR, low or broken bandwidth, a flagged
//! GPU-vs-host comparison or completion errors; 2: an input could not be read; 3: nothing was
//! read (no GDR verdict, judged bandwidth, perftest run or error: prose, another tool's output,
//! a log whose only network line was refused).

use crate::InputArgs;
use anyhow::Result;
use clap::{Args, ValueEnum};
use peerpath::analysis::audit::join::Topo;
use peerpath::analysis::classify::{Classifier, ClassifyOptions};
use peerpath::analysis::evidence::{self, Input, NicSpec, Options};
use peerpath::render;
use std::path::PathBuf;

/// Output format of `evidence`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EvidenceFormat {
    /// Verdict line, then each input's ranks, bandwidth and perftest verdicts.
    Text,
    /// `peerpath.evidence/1` JSON.
    Json,
}

/// Arguments of `evidence`.
#[derive(Args)]
pub struct EvidenceArgs {
    /// Job output files: NCCL_DEBUG=INFO logs, nccl-tests output, perftest output, or
    /// `peerpath probe --format json` documents (kind detected from content).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Topology to join the verdicts to (snapshot, sysfs root, hwloc/NCCL XML, peerpath JSON).
    /// Without it nothing is read from this machine.
    #[command(flatten)]
    input: InputArgs,
    /// NICs the bandwidth is judged against, N×SPEED in Gb/s (`8x400`); overrides the snapshot.
    #[arg(long, value_name = "NxGBPS", value_parser = |s: &str| s.parse::<NicSpec>())]
    nic_gbps: Option<NicSpec>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: EvidenceFormat,
}

/// Runs `evidence`.
pub fn run(a: EvidenceArgs) -> Result<u8> {
    let inputs = a
        .files
        .iter()
        .map(|p| Input::load(p))
        .collect::<Result<Vec<_>>>()?;
    let topo = match &a.input.input {
        Some(_) => Some(crate::load(&a.input)?),
        None => None,
    };
    let cl = topo
        .as_ref()
        .map(|t| Classifier::new(t, &ClassifyOptions::default()));
    let joined = cl.as_ref().map(Topo::new);
    let report = evidence::analyze(
        &inputs,
        joined.as_ref().map(|t| t as &dyn evidence::Node),
        &Options { nic: a.nic_gbps },
    );
    // What was read is folded into the report: free it before the report is written.
    drop(inputs);
    match a.format {
        EvidenceFormat::Text => {
            super::stream_text(|out| render::evidence::write_text(out, &report))
        }
        EvidenceFormat::Json => super::stream_json(&report)?,
    }
    Ok(render::evidence::exit_code(&report))
}
