//! Human text for an audit report: a one-line verdict, then findings grouped by severity
//! (errors, warnings, unknowns, info), each with its evidence and remedy, then the GPU → NIC
//! pairs that were judged.

use super::escape::one_line;
use crate::analysis::audit::{Report, Severity};
use std::fmt::Write;

/// The one-line verdict: `PASS` / `FAIL` with counts; a pass with unknown facts says so.
pub fn verdict_line(r: &Report) -> String {
    let c = &r.counts;
    let word = if r.failed() {
        "FAIL"
    } else if r.undecided() {
        "UNKNOWN"
    } else if r.not_judged.is_some() {
        "PASS (nothing to judge)"
    } else {
        "PASS"
    };
    let mut s = format!(
        "{word}: {} error(s), {} warning(s), {} unknown, {} info — {}",
        c.error, c.warning, c.unknown, c.info, r.source
    );
    if let Some(why) = &r.not_judged {
        s.push_str(&format!(" ({why})"));
    } else if !r.failed() && c.unknown > 0 {
        s.push_str(" (some facts could not be read: the pass covers only what was readable)");
    }
    s
}

/// Lines for a node health checker (Slurm's `HealthCheckProgram`, LBNL NHC). The first is the
/// drain reason, short enough that `sinfo -R`'s 20-character column shows the check and the
/// device (addresses as `lspci` prints them): `gpu-nic-path 4b:00.0 (peerpath)`, with
/// `+N more` before the tag when there are other errors; `ok (peerpath): …` when there is no
/// error finding. Then one line per error and per warning, `peerpath: error|warning CHECK
/// SUBJECT: SUMMARY` (what LBNL NHC's `check_cmd_output` matches). Errors drain a node,
/// warnings are only logged (docs/fleet.md, "Slurm: drain a bad node").
pub fn render_health(r: &Report) -> String {
    use crate::analysis::audit::Subject;
    let errors: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    let mut out = match errors.first() {
        Some(f) => {
            let subject = match &f.subject {
                Subject::Device(b) => b.short(),
                Subject::Nic { bdf, .. } => bdf.short(),
                s => s.to_string(),
            };
            let more = match errors.len() {
                1 => String::new(),
                n => format!(" +{} more", n - 1),
            };
            format!("{} {}{more} (peerpath)", f.id, one_line(&subject))
        }
        None => format!(
            "ok (peerpath): no error finding, {} warning(s)",
            r.counts.warning
        ),
    };
    out.push('\n');
    for (sev, word) in [(Severity::Error, "error"), (Severity::Warning, "warning")] {
        for f in r.findings.iter().filter(|f| f.severity == sev) {
            let line = format!("{} {}: {}", f.id, f.subject, f.summary);
            let _ = writeln!(out, "peerpath: {word} {}", one_line(&line));
        }
    }
    out
}

/// Renders the whole report as text.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", verdict_line(r));
    if let Some(h) = &r.host {
        let _ = writeln!(out, "host: {h}");
    }
    if let Some(p) = &r.profile {
        let _ = writeln!(out, "profile: {p}");
    }
    for (sev, title) in [
        (Severity::Error, "ERRORS"),
        (Severity::Warning, "WARNINGS"),
        (Severity::Unknown, "UNKNOWN (could not be read)"),
        (Severity::Info, "INFO"),
    ] {
        let group: Vec<_> = r.findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title}");
        for f in group {
            let _ = writeln!(out, "  [{}] {}: {}", f.id, f.subject, f.summary);
            for e in &f.evidence {
                let _ = writeln!(out, "      {} = {}", e.path, e.value);
            }
            if let Some(m) = &f.measured {
                let _ = writeln!(out, "      measured: {m}");
            }
            if f.remedy != "none" {
                let _ = writeln!(out, "      remedy: {}", f.remedy);
            }
        }
    }
    if !r.pairs.is_empty() {
        let _ = writeln!(out, "\nGPU → NIC pairs");
        for p in &r.pairs {
            let _ = writeln!(
                out,
                "  {} → {}{}  {}  ({}{})",
                p.gpu,
                p.nic,
                p.rdma
                    .as_deref()
                    .map(|n| format!(" {n}"))
                    .unwrap_or_default(),
                p.label,
                p.reason,
                p.bottleneck_gbytes
                    .map(|g| format!(", {g:.1} GB/s"))
                    .unwrap_or_default()
            );
        }
    }
    out
}
