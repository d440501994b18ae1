//! Probe evidence (`--evidence FILE`, a [`ProbeEvidence`] read from a probe report as `peerpath probe --format json`
//! writes it, schema [`crate::analysis::probe_report::PROBE_SCHEMA`]): a measured verdict for a GPU–NIC
//! pair overrides what the audit inferred for it.
//!
//! - measured `confirmed`: inferred errors about that pair (ACS redirect, IOMMU translation,
//!   path class, link) become warnings — configured restrictively or placed far, but measured
//!   at full speed;
//! - measured `degraded` (warning) or `bad_path` / `host_staged` / `registration_failed` /
//!   `transfer_failed` (error): a `gpu-nic-path` finding at that severity, whatever was
//!   inferred.
//!
//! Results are matched to the audit's pairs by the typed references the probe writes: the
//! GPU's PCI address, and the NIC's PCI address (or, without one, its RDMA device name).
//! Every changed or added finding says so in its `measured` field.

use super::{CheckId, Ctx, Finding, Pair, Severity, Subject};
use crate::analysis::evidence::EvidenceReport;
use crate::analysis::probe_report::NicRef;
use crate::analysis::probe_report::measured::ProbeEvidence;
use crate::analysis::probe_report::verdict::Verdict;
use crate::model::Bdf;
use std::collections::BTreeMap;

/// Whether the probe's NIC is the pair's NIC: by PCI address when the probe gives one, else by
/// RDMA device name.
fn same_nic(nic: &NicRef, p: &Pair) -> bool {
    match nic.bdf {
        Some(b) => b == p.nic,
        None => nic.rdma.is_some() && nic.rdma == p.rdma,
    }
}

/// Checks whose errors a `confirmed` measurement downgrades.
const DOWNGRADABLE: [CheckId; 4] = [
    CheckId::AcsRedirect,
    CheckId::IommuTranslation,
    CheckId::GpuNicPath,
    CheckId::LinkDegraded,
];

/// Applies the measured verdicts to the findings of an audit.
pub fn fold(ctx: &Ctx, ev: &ProbeEvidence, findings: &mut Vec<Finding>) {
    // Map each measured pair onto the audit's pair; the worst verdict per pair counts.
    let mut measured: BTreeMap<(Bdf, Bdf), (Verdict, &str)> = BTreeMap::new();
    let mut outside: Vec<String> = Vec::new();
    for m in &ev.measured {
        let Some(p) = ctx
            .pairs
            .iter()
            .find(|p| p.gpu == m.gpu && same_nic(&m.nic, p))
        else {
            outside.push(format!("{} ↔ {}: {}", m.gpu, m.nic, m.verdict.as_str()));
            continue;
        };
        let e = measured
            .entry((p.gpu, p.nic))
            .or_insert((m.verdict, m.reason.as_str()));
        if m.verdict.rank() < e.0.rank() {
            *e = (m.verdict, m.reason.as_str());
        }
    }
    // Results that change no finding, said once with the file they came from.
    let unused = |summary: String, remedy: &str, why: &str| {
        Finding::new(
            CheckId::GpuNicPath,
            Severity::Info,
            Subject::Node,
            summary,
            remedy,
        )
        .with(ev.source.clone(), why)
    };
    if !ev.unmapped.is_empty() {
        findings.push(unused(
                format!(
                    "{} probe result(s) name no PCI GPU/NIC pair and were not used: {}",
                    ev.unmapped.len(),
                    ev.unmapped.join("; ")
                ),
                "run the probe with verbs on PCI GPUs (CUDA_DEVICE_ORDER=PCI_BUS_ID) so results name PCI addresses",
            "unmapped results",
        ));
    }
    if !outside.is_empty() {
        findings.push(unused(
                format!(
                    "{} measured pair(s) are not the GPU–NIC pairs the audit judges, so they change no finding: {}",
                    outside.len(),
                    outside.join("; ")
                ),
                "probe each GPU with the NIC the audit pairs it with (`peerpath probe --pairs best`), or read the measurement as a fact about that pair only",
            "pairs outside the audit's pairing",
        ));
    }
    for f in findings.iter_mut() {
        if f.severity != Severity::Error || !DOWNGRADABLE.contains(&f.id) || f.pairs.is_empty() {
            continue;
        }
        let all_confirmed = f.pairs.iter().all(|p| {
            measured
                .get(&(p.gpu, p.nic))
                .is_some_and(|(v, _)| *v == Verdict::Confirmed)
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
        let Some(&(verdict, reason)) = measured.get(&(p.gpu, p.nic)) else {
            continue;
        };
        if verdict == Verdict::Confirmed {
            continue;
        }
        let sev = if verdict == Verdict::Degraded {
            Severity::Warning
        } else {
            Severity::Error
        };
        let verdict = verdict.as_str();
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
            f.id == CheckId::GpuNicPath && f.pairs.iter().any(|r| r.gpu == p.gpu && r.nic == p.nic)
        });
        match existing {
            Some(f) => {
                f.severity = f.severity.min(sev);
                f.measured = Some(note);
            }
            None => {
                let mut f = Finding::new(
                    CheckId::GpuNicPath,
                    sev,
                    Subject::Device(p.gpu),
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

/// Folds the verdicts read from the job's own output (`audit --evidence LOG`, an
/// [`EvidenceReport`] joined to this audit's topology) into findings: `evidence-gdr` for each GPU
/// the log shows without GDR (error), with GDR (info) or not at all (unknown), and for
/// completion errors; `evidence-bandwidth` for nccl-tests runs and perftest comparisons. The
/// pairs are the audit's own (each finding names its GPU's).
pub fn fold_job(pairs: &[Pair], ev: &EvidenceReport, findings: &mut Vec<Finding>) {
    use crate::analysis::evidence::{BwVerdict, Gdr};
    let pair_of = |gpu: &Bdf| pairs.iter().find(|p| p.gpu == *gpu).map(Pair::to_ref);
    for j in &ev.joined {
        let Ok(gpu) = j.gpu.parse::<Bdf>() else {
            continue;
        };
        let (sev, what) = match j.gdr {
            Gdr::Off => (Severity::Error, "without GDR"),
            Gdr::Used => (Severity::Info, "with GDR"),
            Gdr::Unknown => (Severity::Unknown, "with GDR not shown"),
            Gdr::NotApplicable => (
                Severity::Info,
                "on one host without network traffic (GDR not applicable)",
            ),
        };
        let rank = ev
            .ranks
            .iter()
            .find(|r| r.topology.as_ref().is_some_and(|t| t.gpu == j.gpu) && r.gdr == j.gdr);
        let cause = rank
            .and_then(|r| r.cause.as_ref())
            .map(|c| format!(": {}", c.text))
            .unwrap_or_default();
        let mut f = Finding::new(
            CheckId::EvidenceGdr,
            sev,
            Subject::Device(gpu),
            format!(
                "the job's log shows GPU {gpu} {what} on {} ({}){cause}",
                j.hosts.join(", "),
                j.ranks.join(" ")
            ),
            j.sentence
                .rsplit_once(" → ")
                .map_or("see the evidence report", |x| x.1),
        )
        .remedy_only_if_error();
        if let Some(r) = rank {
            let lines: Vec<String> = r.lines.iter().map(|l| l.to_string()).collect();
            f = f.with(
                r.source.clone(),
                format!("lines {}: {}", lines.join(", "), r.basis),
            );
        }
        if let Some(p) = pair_of(&gpu) {
            f = f.with_pairs([p]);
        }
        f.measured = Some(j.sentence.clone());
        findings.push(f);
    }
    let unjoined = ev.ranks.iter().filter(|r| r.topology.is_none()).count();
    if unjoined > 0 {
        findings.push(Finding::new(
            CheckId::EvidenceGdr,
            Severity::Info,
            Subject::Node,
            format!("{unjoined} rank(s)/GPU(s) of the job's log could not be placed on a GPU of this topology (no busId, bus or NVML index shown, or another machine)"),
            "none",
        ));
    }
    for e in &ev.errors {
        findings.push(
            Finding::new(
                CheckId::EvidenceGdr,
                Severity::Warning,
                Subject::Node,
                format!(
                    "NCCL warned {} ×{} on {}{}: {}",
                    e.status_name,
                    e.count,
                    e.hosts.join(", "),
                    e.vendor_err
                        .map(|v| format!(", vendor err {v}"))
                        .unwrap_or_default(),
                    e.meaning
                ),
                "read the first error of the job; check ACS and the IOMMU on the GPU–NIC paths",
            )
            .with(e.source.clone(), format!("line {}", e.line)),
        );
    }
    for b in &ev.bandwidth {
        let sev = match b.verdict {
            BwVerdict::Broken => Severity::Error,
            BwVerdict::Low => Severity::Warning,
            // A fall at large sizes is a finding whatever the largest size is judged against.
            _ if b.collapse.is_some() => Severity::Warning,
            BwVerdict::Ok => Severity::Info,
            BwVerdict::Unknown => Severity::Unknown,
        };
        let mut f = Finding::new(
            CheckId::EvidenceBandwidth,
            sev,
            Subject::Node,
            format!("{} (line {}): {}", b.test, b.line, b.summary),
            if matches!(sev, Severity::Error | Severity::Warning) {
                "fix what the GDR and path findings name, then re-run the test"
            } else {
                "none"
            },
        )
        .with(b.source.clone(), format!("line {}", b.line));
        if !b.explanation.is_empty() {
            f.measured = Some(b.explanation.join("; "));
        }
        findings.push(f);
    }
    for c in ev.comparisons.iter().filter(|c| c.flagged) {
        findings.push(Finding::new(
            CheckId::EvidenceBandwidth,
            Severity::Warning,
            Subject::RdmaDevice(c.device.clone()),
            c.summary.clone(),
            "check the GPU's PCIe path to the NIC (ACS, relaxed ordering, link width)",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::clean;
    use super::super::{AuditOptions, run};
    use super::*;
    use crate::analysis::probe_report::cuda::CudaReport;
    use crate::analysis::probe_report::{
        CellResult, Direction, GpuRef, MemoryKind, Op, PROBE_SCHEMA, ProbeReport,
    };

    /// The clean twin's mlx5_0, as the verbs probe names it.
    fn mlx5_0() -> NicRef {
        verbs("mlx5_0", Some("0000:14:00.0"))
    }

    /// The clean twin's first GPU, CUDA ordinal 0.
    fn gpu0() -> Option<GpuRef> {
        gpu("0000:13:00.0", 0)
    }

    /// libfabric's tcp provider on loopback: a NIC that names no PCI device.
    fn tcp_lo() -> NicRef {
        NicRef::ofi("tcp", Some("lo"))
    }

    fn gpu(bdf: &str, cuda: usize) -> Option<GpuRef> {
        Some(GpuRef {
            bdf: Some(bdf.parse().unwrap()),
            cuda: Some(cuda),
        })
    }

    fn verbs(rdma: &str, bdf: Option<&str>) -> NicRef {
        NicRef::verbs(rdma, 1, bdf.map(|b| b.parse().unwrap()))
    }

    fn cell(gpu: Option<GpuRef>, nic: NicRef, memory: MemoryKind, verdict: Verdict) -> CellResult {
        CellResult {
            gpu,
            nic,
            memory,
            direction: Direction::GpuToHost,
            op: Op::Write,
            message_bytes: 65536,
            bytes: 0,
            seconds: 0.0,
            gbytes_per_s: 0.0,
            verified: true,
            ops_in_flight: 0,
            verdict,
            expected_label: None,
            reason: format!("{} cell", verdict.as_str()),
            contradicts: false,
            control: false,
            registration: Vec::new(),
        }
    }

    /// The JSON the probe writes for these results.
    fn probe_json(results: Vec<CellResult>) -> String {
        serde_json::to_string_pretty(&ProbeReport {
            schema: PROBE_SCHEMA.into(),
            fabric: "verbs".into(),
            results,
            cuda: CudaReport::unavailable("no driver"),
            counter_changes: Vec::new(),
            notes: Vec::new(),
            interrupted: false,
            wall_seconds: 0.0,
        })
        .unwrap()
    }

    #[test]
    fn keeps_worst_and_skips_host_and_not_run() {
        let nic = mlx5_0();
        let g = gpu0();
        let j = probe_json(vec![
            cell(g.clone(), nic.clone(), MemoryKind::Cuda, Verdict::Confirmed),
            cell(g.clone(), nic.clone(), MemoryKind::Cuda, Verdict::Degraded),
            cell(g.clone(), nic.clone(), MemoryKind::Cuda, Verdict::Confirmed),
            cell(g.clone(), nic.clone(), MemoryKind::Host, Verdict::BadPath),
            cell(None, nic.clone(), MemoryKind::Host, Verdict::TransferFailed),
            cell(
                gpu("0000:33:00.0", 1),
                verbs("mlx5_1", None),
                MemoryKind::Cuda,
                Verdict::NotRun,
            ),
        ]);
        let e = ProbeEvidence::parse("p.json", &j).unwrap();
        assert_eq!(e.measured.len(), 1);
        assert_eq!(e.measured[0].nic, nic);
        assert_eq!(e.measured[0].verdict, Verdict::Degraded);
        assert_eq!(e.measured[0].reason, "degraded cell");
        assert!(e.unmapped.is_empty());
    }

    #[test]
    fn results_without_a_pci_pair_are_listed_not_used() {
        let j = probe_json(vec![
            cell(
                Some(GpuRef {
                    bdf: None,
                    cuda: Some(0),
                }),
                mlx5_0(),
                MemoryKind::Cuda,
                Verdict::Confirmed,
            ),
            cell(gpu0(), tcp_lo(), MemoryKind::Cuda, Verdict::BadPath),
        ]);
        let e = ProbeEvidence::parse("p.json", &j).unwrap();
        assert!(e.measured.is_empty());
        assert_eq!(
            e.unmapped,
            [
                "cuda:0 verbs:mlx5_0:1 (0000:14:00.0)",
                "0000:13:00.0 ofi:tcp:lo"
            ]
        );
    }

    #[test]
    fn probe_json_round_trips_into_the_audit() {
        // The clean twin: GPU 0000:13:00.0 with mlx5_0 at 0000:14:00.0, PIX; 0000:33:00.0
        // with mlx5_1 at 0000:34:00.0.
        let j = probe_json(vec![
            cell(None, mlx5_0(), MemoryKind::Host, Verdict::Confirmed),
            cell(gpu0(), mlx5_0(), MemoryKind::Cuda, Verdict::Confirmed),
            cell(gpu0(), mlx5_0(), MemoryKind::Cuda, Verdict::BadPath),
            // Named by RDMA device only: matched by name.
            cell(
                gpu("0000:33:00.0", 1),
                verbs("mlx5_1", None),
                MemoryKind::Cuda,
                Verdict::Degraded,
            ),
            cell(
                gpu("0000:73:00.0", 3),
                tcp_lo(),
                MemoryKind::Cuda,
                Verdict::Confirmed,
            ),
        ]);
        let ev = ProbeEvidence::parse("probe.json", &j).unwrap();
        let r = run(
            &clean(),
            &AuditOptions {
                profile: None,
                evidence: Some(ev),
                ..Default::default()
            },
        );
        let get = |gpu: &str| {
            r.findings
                .iter()
                .find(|f| f.id == CheckId::GpuNicPath && f.subject.to_string() == gpu)
                .unwrap_or_else(|| panic!("no finding for {gpu}: {:#?}", r.findings))
        };
        let bad = get("0000:13:00.0");
        assert_eq!(bad.severity, Severity::Error);
        let m = bad.measured.as_deref().unwrap();
        assert!(
            m.contains("measured bad_path (bad_path cell)") && m.contains("PIX"),
            "{m}"
        );
        assert_eq!(get("0000:33:00.0").severity, Severity::Warning);
        let unmapped = get("node");
        assert_eq!(unmapped.severity, Severity::Info);
        assert!(unmapped.summary.contains("0000:73:00.0 ofi:tcp:lo"));
    }

    #[test]
    fn old_and_foreign_documents_are_refused() {
        let old = r#"{"schema":"peerpath.probe/1","results":[
          {"gpu":"0000:13:00.0","nic":"verbs:mlx5_0:1 (0000:14:00.0)","memory":"cuda","verdict":"bad_path"}]}"#;
        let e = format!("{:#}", ProbeEvidence::parse("old.json", old).unwrap_err());
        assert!(
            e.contains("peerpath.probe/1 documents") && e.contains("re-run"),
            "{e}"
        );
        let stringly = old.replace("peerpath.probe/1", PROBE_SCHEMA).replace(
            r#""verdict""#,
            r#""direction":"gpu_to_host","op":"write","message_bytes":1,"verdict""#,
        );
        let e = format!(
            "{:#}",
            ProbeEvidence::parse("s.json", &stringly).unwrap_err()
        );
        assert!(e.contains("is the string"), "{e}");
        assert!(
            ProbeEvidence::parse("x", r#"{"schema":"peerpath.audit/1","results":[]}"#).is_err()
        );
        assert!(ProbeEvidence::parse("x", "not json").is_err());
        // A result without a verdict is no probe result.
        let no_verdict = probe_json(vec![cell(
            gpu0(),
            verbs("mlx5_0", None),
            MemoryKind::Cuda,
            Verdict::Confirmed,
        )])
        .replace(r#""verdict": "confirmed","#, "");
        assert!(ProbeEvidence::parse("x", &no_verdict).is_err());
    }
}
