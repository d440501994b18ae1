//! `nccl-settings`: the NCCL settings this audit's verdicts read, each with where it came from
//! (the job's environment, `NCCL_CONF_FILE` or `~/.nccl.conf`, `/etc/nccl.conf`), and every
//! value NCCL would not read as written: a level name in the wrong case or with a blank, a
//! blank around `=` in a file, a CRLF file, a renamed variable, a file value the environment
//! hides. Facts: `MachineInfo::nccl` (sources::nccl_conf), read by `analysis::settings` as
//! the modelled NCCL release reads them.

use super::{CheckId, Ctx, Evidence, Finding, Severity, Subject};
use crate::model::nccl_settings::ConfFileState;

/// Variables whose value changes a decision peerpath models (GDR, P2P, the transport, the
/// topology NCCL reads).
const DECIDING: &[&str] = &[
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_C2C",
    "NCCL_NET_GDR_READ",
    "NCCL_P2P_LEVEL",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_NET",
    "NCCL_NET_PLUGIN",
    "NCCL_TOPO_FILE",
    "NCCL_IB_HCA",
    "NCCL_CROSS_NIC",
];

/// The check.
pub fn check(ctx: &Ctx) -> Vec<Finding> {
    let s = &ctx.topo.machine.nccl;
    let st = ctx.cl.settings();
    let mut out = Vec::new();
    if s.is_empty() {
        return out;
    }
    let mut read: Vec<String> = Vec::new();
    let mut ev: Vec<Evidence> = Vec::new();
    for f in &s.files {
        let state = match &f.state {
            ConfFileState::Read(n) => format!("read, {n} NCCL setting(s)"),
            ConfFileState::Absent => "absent".to_string(),
            ConfFileState::Unreadable(why) => {
                out.push(
                    settings_finding(Severity::Unknown, format!(
                            "{} ({}) could not be read ({why}): the settings NCCL would take from it are unknown",
                            f.path, f.role
                        ),
                        "make it readable to the audit (NCCL reads it as the job's user)",
                    )
                    .with(f.path.clone(), why.clone()),
                );
                format!("unreadable ({why})")
            }
            ConfFileState::NotLooked(why) => format!("not read: {why}"),
        };
        read.push(format!("{} {state}", f.path));
        ev.push(Evidence::new(f.path.clone(), state));
    }
    let effective: Vec<String> = s
        .used()
        .filter(|e| DECIDING.contains(&e.name.as_str()))
        .map(|e| e.described())
        .collect();
    let effective_ev = s.used().map(setting_evidence);
    out.push(
        settings_finding(
            Severity::Info,
            format!(
                "NCCL settings read as NCCL {} reads them{}: {}; {}",
                st.version,
                if s.environment_read {
                    " (the environment, then its files)"
                } else {
                    " (the node's files only: no job environment was given)"
                },
                if effective.is_empty() {
                    "none that changes GPUDirect RDMA, P2P or the transport".to_string()
                } else {
                    effective.join(", ")
                },
                read.join("; ")
            ),
            "none",
        )
        .with_all(ev)
        .with_all(effective_ev),
    );
    for m in &st.misread {
        out.push(
            settings_finding(
                Severity::Warning,
                format!("{}: {}", m.setting.described(), m.why),
                match &m.meant {
                    Some(w) => format!("write `{w}` in {}", m.setting.source),
                    None => format!("fix it in {}", m.setting.source),
                },
            )
            .with_all([setting_evidence(&m.setting)]),
        );
    }
    for (hidden, winner) in s.shadowed() {
        if !DECIDING.contains(&hidden.name.as_str()) || hidden.value == winner.value {
            continue;
        }
        out.push(
            settings_finding(Severity::Info, format!(
                    "{} is not used: {} comes first (NCCL never lets a file override a variable already set)",
                    hidden.described(),
                    winner.described()
                ),
                "none if intended; otherwise keep one value",
            )
            .with_all([
                setting_evidence(hidden),
                setting_evidence(winner),
            ]),
        );
    }
    if s.get("NCCL_CONF_FILE").is_some() && !st.version.at_least(23) {
        out.push(settings_finding(Severity::Warning, format!(
                "NCCL_CONF_FILE is set, but NCCL {} reads it only from 2.23.4: this release reads ~/.nccl.conf instead",
                st.version
            ),
            "use NCCL ≥ 2.23.4, or put the settings in ~/.nccl.conf or the environment",
        ));
    }
    out
}

/// A finding of this check about the node's NCCL settings.
fn settings_finding(severity: Severity, what: String, fix: impl Into<String>) -> Finding {
    Finding::new(CheckId::NcclSettings, severity, Subject::Node, what, fix)
}

/// A setting as finding evidence: `env NAME` = value, or `FILE line N` = `NAME=value`.
pub fn setting_evidence(s: &crate::model::nccl_settings::NcclSetting) -> Evidence {
    use crate::model::nccl_settings::SettingSource;
    match &s.source {
        SettingSource::Environment => Evidence::new(format!("env {}", s.name), s.value.clone()),
        SettingSource::File { path, line } => Evidence::new(
            format!("{path} line {line}"),
            format!("{}={}", s.name, s.value),
        ),
    }
}
