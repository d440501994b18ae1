//! `peerpath audit`: loads the topology, the optional profile and probe evidence, runs every
//! check and prints text or JSON. Exit 0: no error finding; 1: an error finding; 2: the audit
//! could not run (returned as an `Err` to `main`).

use anyhow::Result;
use clap::{Args, ValueEnum};
use peerpath::analysis::audit::{self, AuditOptions, evidence::ProbeEvidence, profile};
use std::path::PathBuf;

/// Output format of `audit`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AuditFormat {
    /// Findings grouped by severity after a one-line verdict.
    Text,
    /// `peerpath.audit/1` JSON.
    Json,
}

/// Arguments of `peerpath audit`.
#[derive(Args, Clone)]
pub struct AuditArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: AuditFormat,
    /// Expected layout: a built-in name (dgx-h100, dgx-h200, dgx-a100, rail-optimised) or a
    /// TOML file.
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// Probe result (`peerpath probe --format json`); measured verdicts override inferred ones.
    #[arg(long, value_name = "FILE")]
    pub evidence: Option<PathBuf>,
}

/// Runs the audit on a loaded topology; returns the exit code.
pub fn run(topo: &peerpath::model::Topology, a: &AuditArgs) -> Result<u8> {
    let profile = match &a.profile {
        Some(p) => Some(profile::Profile::resolve(p)?),
        None => None,
    };
    let evidence = match &a.evidence {
        Some(p) => Some(ProbeEvidence::load(p)?),
        None => None,
    };
    let report = audit::run(topo, &AuditOptions { profile, evidence });
    match a.format {
        AuditFormat::Text => super::print_text(&peerpath::render::audit::render(&report)),
        AuditFormat::Json => {
            super::print_document(&(serde_json::to_string_pretty(&report)? + "\n"), true)
        }
    }
    Ok(if report.failed() { 1 } else { 0 })
}
