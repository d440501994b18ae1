//! Probe evidence (`--evidence FILE`, a `peerpath.probe/1` document written by `peerpath
//! probe`): a measured verdict for a GPU–NIC pair overrides what the audit inferred for it.
//!
//! - measured `confirmed`: inferred errors about that pair (ACS redirect, IOMMU translation,
//!   path class, link) become warnings — configured restrictively or placed far, but measured
//!   at full speed;
//! - measured `degraded` (warning) or `bad_path` / `host_staged` / `registration_failed` /
//!   `transfer_failed` (error): a `gpu-nic-path` finding at that severity, whatever was
//!   inferred.
//!
//! Every changed or added finding says so in its `measured` field.

use super::{Ctx, Finding, Severity};
use crate::model::Bdf;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::BTreeMap;

/// Version tag the probe writes.
pub const PROBE_SCHEMA: &str = "peerpath.probe/1";

/// The worst measured verdict per GPU–NIC pair.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeEvidence {
    /// Where it was read from.
    pub source: String,
    /// `(gpu, nic: PCI address or RDMA name)` → `(verdict, reason)`.
    pub verdicts: BTreeMap<(Bdf, String), (String, String)>,
    /// GPU-memory results that name no PCI GPU or NIC (`cuda:0`, `ofi:tcp:lo`), as
    /// `gpu nic` strings: they cannot be matched to a pair.
    pub unmapped: Vec<String>,
}

/// Verdicts from worst to best; `not_run` and unrecognised verdicts carry no evidence.
const ORDER: [&str; 6] = [
    "registration_failed",
    "transfer_failed",
    "host_staged",
    "bad_path",
    "degraded",
    "confirmed",
];

fn rank(v: &str) -> Option<usize> {
    ORDER.iter().position(|x| *x == v)
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => ["bdf", "name", "rdma", "address"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str))
            .map(str::to_string),
        _ => None,
    }
}

/// The NIC as the probe names it — `verbs:mlx5_0:1 (0000:17:00.0)`, `mlx5_0`, or a PCI address —
/// reduced to a PCI address when one is given, else the RDMA device name. `None` for fabrics
/// that are not a PCI NIC (`ofi:tcp:lo`).
pub fn nic_key(s: &str) -> Option<String> {
    if let (Some(a), Some(b)) = (s.find('('), s.rfind(')'))
        && a < b
        && let Ok(bdf) = s[a + 1..b].trim().parse::<Bdf>()
    {
        return Some(bdf.to_string());
    }
    let head = s.split_whitespace().next()?;
    if let Some(rest) = head.strip_prefix("verbs:") {
        return rest
            .split(':')
            .next()
            .filter(|n| !n.is_empty())
            .map(str::to_string);
    }
    if head.starts_with("ofi:") {
        return None;
    }
    Some(
        head.parse::<Bdf>()
            .map(|b| b.to_string())
            .unwrap_or_else(|_| head.to_string()),
    )
}

impl ProbeEvidence {
    /// Parses a probe document. Results on host memory only (the baseline) and `not_run`
    /// results are skipped; for each pair the worst verdict is kept.
    pub fn parse(source: &str, json: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(json).with_context(|| format!("{source}: not JSON"))?;
        let schema = v.get("schema").and_then(Value::as_str).unwrap_or("");
        if schema != PROBE_SCHEMA {
            bail!(
                "{source}: schema is {schema:?}, expected {PROBE_SCHEMA:?} (a `peerpath probe --format json` result)"
            );
        }
        let results = v
            .get("results")
            .and_then(Value::as_array)
            .with_context(|| format!("{source}: no results array"))?;
        let mut out = ProbeEvidence {
            source: source.to_string(),
            ..Default::default()
        };
        for (i, r) in results.iter().enumerate() {
            let memory = r.get("memory").and_then(Value::as_str).unwrap_or("");
            if memory == "host" {
                continue;
            }
            let Some(verdict) = r.get("verdict").and_then(Value::as_str) else {
                bail!("{source}: results[{i}] has no verdict");
            };
            let Some(gpu) = text(r.get("gpu")) else {
                continue; // host-only baseline cell
            };
            let nic_raw = text(r.get("nic")).unwrap_or_default();
            let (Ok(gpu), Some(nic)) = (gpu.parse::<Bdf>(), nic_key(&nic_raw)) else {
                if rank(verdict).is_some() {
                    out.unmapped.push(format!("{gpu} {nic_raw}"));
                }
                continue;
            };
            let Some(rk) = rank(verdict) else { continue };
            let reason = r
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let e = out
                .verdicts
                .entry((gpu, nic))
                .or_insert((verdict.to_string(), reason.clone()));
            if rank(&e.0).is_none_or(|old| rk < old) {
                *e = (verdict.to_string(), reason);
            }
        }
        Ok(out)
    }

    /// Reads and parses a probe result file.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let s = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read evidence {}", path.display()))?;
        Self::parse(&path.display().to_string(), &s)
    }
}

/// Ids whose errors a `confirmed` measurement downgrades.
const DOWNGRADABLE: [&str; 4] = [
    "acs-redirect",
    "iommu-translation",
    "gpu-nic-path",
    "link-degraded",
];

/// Applies the measured verdicts to the findings of an audit.
pub fn fold(ctx: &Ctx, ev: &ProbeEvidence, findings: &mut Vec<Finding>) {
    // Map each probe entry onto a pair of the matching (NIC named by RDMA name or address).
    let mut measured: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
    for ((gpu, nic), v) in &ev.verdicts {
        let hit = ctx.pairs.iter().find(|p| {
            p.gpu == *gpu
                && (p.rdma.as_deref() == Some(nic.as_str())
                    || nic.parse::<Bdf>().is_ok_and(|b| b == p.nic))
        });
        if let Some(p) = hit {
            measured.insert((p.gpu.to_string(), p.nic.to_string()), v.clone());
        }
    }
    if !ev.unmapped.is_empty() {
        findings.push(
            Finding::new(
                "gpu-nic-path",
                Severity::Info,
                "node",
                format!(
                    "{} probe result(s) name no PCI GPU/NIC pair and were not used: {}",
                    ev.unmapped.len(),
                    ev.unmapped.join("; ")
                ),
                "run the probe with verbs on PCI GPUs (CUDA_DEVICE_ORDER=PCI_BUS_ID) so results name PCI addresses",
            )
            .with(ev.source.clone(), "unmapped results"),
        );
    }
    for f in findings.iter_mut() {
        if f.severity != Severity::Error
            || !DOWNGRADABLE.contains(&f.id.as_str())
            || f.pairs.is_empty()
        {
            continue;
        }
        let all_confirmed = f.pairs.iter().all(|p| {
            measured
                .get(&(p.gpu.clone(), p.nic.clone()))
                .is_some_and(|(v, _)| v == "confirmed")
        });
        if all_confirmed {
            f.severity = Severity::Warning;
            f.measured = Some(format!(
                "probe ({}) measured every pair here as confirmed: inferred error downgraded to warning",
                ev.source
            ));
        }
    }
    for p in &ctx.pairs {
        let Some((verdict, reason)) = measured.get(&(p.gpu.to_string(), p.nic.to_string())) else {
            continue;
        };
        if verdict == "confirmed" {
            continue;
        }
        let sev = if verdict == "degraded" {
            Severity::Warning
        } else {
            Severity::Error
        };
        let note = format!(
            "probe ({}) measured {verdict}{}; overrides the inferred {}",
            ev.source,
            if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            },
            p.label
        );
        let existing = findings.iter_mut().find(|f| {
            f.id == "gpu-nic-path"
                && f.pairs
                    .iter()
                    .any(|r| r.gpu == p.gpu.to_string() && r.nic == p.nic.to_string())
        });
        match existing {
            Some(f) => {
                f.severity = f.severity.min(sev);
                f.measured = Some(note);
            }
            None => {
                let mut f = Finding::new(
                    "gpu-nic-path",
                    sev,
                    p.gpu.to_string(),
                    format!(
                        "GPU {} ↔ {}: measured {verdict} although the path is {}",
                        p.gpu,
                        ctx.name(&p.nic),
                        p.label
                    ),
                    "look for what the static audit cannot see: AER and port counters that moved during the probe, link speed under load, platform P2P read limits; re-run the probe after a fix",
                )
                .with(ev.source.clone(), format!("gpu {} nic {}: {verdict}", p.gpu, p.rdma.clone().unwrap_or_else(|| p.nic.to_string())))
                .with_pairs([p.to_ref()]);
                f.measured = Some(note);
                findings.push(f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_worst_and_skips_host() {
        let j = r#"{"schema":"peerpath.probe/1","results":[
          {"gpu":"0000:13:00.0","nic":"mlx5_0","memory":"cuda","verdict":"confirmed"},
          {"gpu":"0000:13:00.0","nic":"mlx5_0","memory":"cuda","verdict":"degraded","reason":"read 0.7"},
          {"gpu":"0000:13:00.0","nic":"mlx5_0","memory":"host","verdict":"bad_path"},
          {"gpu":"0000:33:00.0","nic":"mlx5_1","memory":"cuda","verdict":"not_run"}]}"#;
        let e = ProbeEvidence::parse("p.json", j).unwrap();
        assert_eq!(e.verdicts.len(), 1);
        let v = &e.verdicts[&("0000:13:00.0".parse().unwrap(), "mlx5_0".to_string())];
        assert_eq!(v.0, "degraded");
        assert_eq!(v.1, "read 0.7");
    }

    #[test]
    fn probe_names() {
        assert_eq!(
            nic_key("verbs:mlx5_0:1 (0000:17:00.0)").as_deref(),
            Some("0000:17:00.0")
        );
        assert_eq!(nic_key("verbs:mlx5_3:1").as_deref(), Some("mlx5_3"));
        assert_eq!(nic_key("mlx5_3").as_deref(), Some("mlx5_3"));
        assert_eq!(nic_key("17:00.0").as_deref(), Some("0000:17:00.0"));
        assert_eq!(nic_key("ofi:tcp:lo"), None);
        assert_eq!(nic_key(")mlx5_1 (").as_deref(), Some(")mlx5_1"));
        let j = r#"{"schema":"peerpath.probe/1","results":[
          {"gpu":null,"nic":"verbs:mlx5_0:1 (0000:14:00.0)","memory":"host","verdict":"confirmed"},
          {"gpu":"0000:13:00.0","nic":"verbs:mlx5_0:1 (0000:14:00.0)","memory":"cuda","verdict":"bad_path"},
          {"gpu":"cuda:0","nic":"ofi:tcp:lo","memory":"cuda","verdict":"confirmed"}]}"#;
        let e = ProbeEvidence::parse("p.json", j).unwrap();
        assert_eq!(e.verdicts.len(), 1);
        assert_eq!(
            e.verdicts[&("0000:13:00.0".parse().unwrap(), "0000:14:00.0".to_string())].0,
            "bad_path"
        );
        assert_eq!(e.unmapped, vec!["cuda:0 ofi:tcp:lo".to_string()]);
    }

    #[test]
    fn rejects_other_documents() {
        assert!(
            ProbeEvidence::parse("x", r#"{"schema":"peerpath.audit/1","results":[]}"#).is_err()
        );
        assert!(ProbeEvidence::parse("x", "not json").is_err());
        assert!(
            ProbeEvidence::parse(
                "x",
                r#"{"schema":"peerpath.probe/1","results":[{"gpu":"0000:13:00.0","nic":"a"}]}"#
            )
            .is_err()
        );
    }
}
