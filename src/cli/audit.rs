//! `peerpath audit`: loads the topology, the optional profile, probe evidence, the job's own
//! output (`--evidence LOG`) and environment (`--job`), runs every check and prints text or
//! JSON. Exit 0: no error finding; 1: an error finding; 2: the audit could not run (returned as
//! an `Err` to `main`).

use anyhow::Result;
use clap::{Args, ValueEnum};
use peerpath::analysis::audit::join::Topo;
use peerpath::analysis::audit::{self, AuditOptions, job, profile};
use peerpath::analysis::classify::{Classifier, ClassifyOptions};
use peerpath::analysis::evidence::{self as jobev, Input, Loaded, NicSpec};
use peerpath::analysis::probe_report::measured::ProbeEvidence;
use std::path::PathBuf;

/// Output format of `audit`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AuditFormat {
    /// Findings grouped by severity after a one-line verdict.
    Text,
    /// `peerpath.audit/1` JSON.
    Json,
    /// For a node health checker (Slurm `HealthCheckProgram`, LBNL NHC): the first line is the
    /// drain reason (`peerpath: CHECK error on DEVICE`) or `peerpath: ok`; then one line per
    /// error and warning. Exit 1 when a node should drain (an error finding).
    Health,
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
    /// Evidence, repeatable: a probe result (`peerpath probe --format json`; measured verdicts
    /// override inferred ones) or the job's own output (NCCL log, nccl-tests, perftest; its
    /// verdicts become evidence-gdr and evidence-bandwidth findings). Kind read from content.
    #[arg(long, value_name = "FILE")]
    pub evidence: Vec<PathBuf>,
    /// NICs the evidence's bandwidth is judged against, N×SPEED in Gb/s (default: the topology's).
    #[arg(long, value_name = "NxGBPS", value_parser = |s: &str| s.parse::<NicSpec>())]
    pub nic_gbps: Option<NicSpec>,
    /// Also check this job's environment (NCCL_*/CUDA_* variables of this process) and, without
    /// -i, what it can see live (RDMA devices, libibverbs, memlock, /dev/shm, cpuset).
    #[arg(long)]
    pub job: bool,
}

/// Runs the audit on a loaded topology; returns the exit code. `live` says that the topology
/// is the machine the command runs on (no `-i`).
pub fn run(topo: &peerpath::model::Topology, a: &AuditArgs, live: bool) -> Result<u8> {
    let profile = match &a.profile {
        Some(p) => Some(profile::Profile::resolve(p)?),
        None => None,
    };
    let mut probe: Option<ProbeEvidence> = None;
    let mut logs = Vec::new();
    for p in &a.evidence {
        match Input::load(p)? {
            Input {
                loaded: Loaded::Probe(e),
                ..
            } => match &mut probe {
                Some(all) => {
                    all.source = format!("{}, {}", all.source, e.source);
                    all.measured.extend(e.measured);
                    all.unmapped.extend(e.unmapped);
                }
                None => probe = Some(e),
            },
            i => logs.push(i),
        }
    }
    let mut job = a.job.then(|| job_env(live));
    // One classification and one audit: the job's logs are joined to the audit's own report
    // and folded into it afterwards.
    let t = audit::job_topology(topo, job.as_ref());
    if let Some(j) = job.as_mut() {
        conf_topo_file(j, &t, live);
    }
    let cl = Classifier::new(&t, &ClassifyOptions::default());
    // The job's own NCCL_TOPO_FILE is NCCL's tree for the pairs it decides: a second input.
    let cl = match job.as_ref().and_then(job::JobEnv::topo_file_input) {
        Some((path, file)) => cl.with_topo_file(path, file),
        None => cl,
    };
    let mut report = audit::run_with(
        &cl,
        &AuditOptions {
            profile,
            evidence: probe,
            job_evidence: None,
            job,
        },
    );
    if !logs.is_empty() {
        let joined = Topo::with_report(&cl, report);
        let ev = jobev::analyze(&logs, Some(&joined), &jobev::Options { nic: a.nic_gbps });
        report = audit::add_job_evidence(&t, joined.into_report(), &ev);
    }
    match a.format {
        AuditFormat::Text => super::print_text(&peerpath::render::audit::render(&report)),
        AuditFormat::Json => {
            super::print_document(&(serde_json::to_string_pretty(&report)? + "\n"), true)
        }
        AuditFormat::Health => super::print_text(&peerpath::render::audit::render_health(&report)),
    }
    Ok(if report.failed() {
        1
    } else if report.undecided() {
        3
    } else {
        0
    })
}

/// This process's NCCL/CUDA variables, `NCCL_TOPO_FILE` read, and the live facts when `live`.
fn job_env(live: bool) -> job::JobEnv {
    let vars: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("NCCL_") || k.starts_with("CUDA_"))
        .collect();
    let topo_file = vars
        .iter()
        .find(|(k, _)| k == "NCCL_TOPO_FILE")
        .map(|(_, v)| read_topo_file(v));
    job::JobEnv {
        vars,
        live: live.then(peerpath::probe::live::read),
        topo_file,
        topo_file_conf: None,
    }
}

/// An `NCCL_TOPO_FILE` read as NCCL topology XML, or why it could not be.
fn read_topo_file(v: &str) -> Result<peerpath::model::Topology, String> {
    let p = std::path::Path::new(v);
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(job::NO_SUCH_TOPO_FILE.to_string());
        }
        // NCCL opens the path as a file (`fopen`); a directory or device is never read as an
        // input of its own here (a directory would be scanned as a sysfs tree).
        Ok(m) if m.is_dir() => {
            return Err("a directory, not a file: NCCL cannot read it as topology XML".into());
        }
        Ok(m) if !m.is_file() => {
            return Err("not a regular file: NCCL cannot read it as topology XML".into());
        }
        _ => {}
    }
    peerpath::sources::load(Some(p), &Default::default())
        .map_err(|e| format!("not readable as a topology: {e:#}"))
        .and_then(|t| {
            if t.source.kind.contains("nccl") {
                Ok(t)
            } else {
                Err(format!("a {} file, not NCCL topology XML", t.source.kind))
            }
        })
}

/// `NCCL_TOPO_FILE` set only in a configuration file NCCL reads (the node's `/etc/nccl.conf`,
/// `NCCL_CONF_FILE`): the file is read on this machine when the audit is live; a snapshot's
/// names a file on the node, which the input does not hold.
fn conf_topo_file(j: &mut job::JobEnv, t: &peerpath::model::Topology, live: bool) {
    use peerpath::model::nccl_settings::SettingSource;
    if j.topo_file.is_some() {
        return;
    }
    let Some(s) = t.machine.nccl.get("NCCL_TOPO_FILE") else {
        return;
    };
    let SettingSource::File { path, line } = &s.source else {
        return;
    };
    j.topo_file_conf = Some((s.value.clone(), format!("{path} line {line}")));
    j.topo_file = Some(if live {
        read_topo_file(&s.value)
    } else {
        Err(format!(
            "named in {path} of the input; the file is on the node, not in this input"
        ))
    });
}
