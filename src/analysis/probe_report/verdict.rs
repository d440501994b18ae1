//! Verdicts: what one measured cell says about a GPU–NIC path, from the thresholds in
//! shared/reference/gdr-probe-and-audit.md §1.7 — a GPU cell is `confirmed` at ≥ 0.90 of the
//! host-memory baseline on the same NIC, op and size *and* ≥ 0.85 of line rate (when the line
//! rate is known); `degraded` at 0.60–0.90; `bad_path` below 0.60. Registration and transfer
//! failures, missing GDR evidence (`host_staged`) and cells not run have their own verdicts.

use crate::analysis::classify::Label;
use serde::{Deserialize, Serialize};

/// Fraction of the host baseline a GPU cell must reach to confirm the path.
pub const CONFIRM_RATIO: f64 = 0.90;
/// Fraction of line rate a GPU cell must reach to confirm the path.
pub const CONFIRM_LINE_FRACTION: f64 = 0.85;
/// Below this fraction of the host baseline the path is bad, not merely degraded.
pub const BAD_PATH_RATIO: f64 = 0.60;

/// The verdict on one cell (pair, memory, direction, op, size). Measured verdicts rank in
/// one order, [`Verdict::WORST_TO_BEST`]; `not_run` carries no evidence and has no rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Bytes verified, at ≥ 0.90 of the host baseline and ≥ 0.85 of line rate.
    Confirmed,
    /// Bytes verified, 0.60–0.90 of the host baseline (or below 0.85 of line rate).
    Degraded,
    /// Bytes verified, below 0.60 of the host baseline.
    BadPath,
    /// Bytes verified, but no evidence the NIC touched GPU memory (the memory was not device
    /// memory, or no GPU registration method was used).
    HostStaged,
    /// No registration method worked.
    RegistrationFailed,
    /// A completion error, a post error, a timeout, or bytes that did not verify.
    TransferFailed,
    /// Not run (see reason).
    NotRun,
}

impl Verdict {
    /// The verdicts that carry evidence, worst first: the one order in which the audit keeps
    /// the worst measurement of a pair.
    pub const WORST_TO_BEST: [Verdict; 6] = [
        Verdict::RegistrationFailed,
        Verdict::TransferFailed,
        Verdict::HostStaged,
        Verdict::BadPath,
        Verdict::Degraded,
        Verdict::Confirmed,
    ];

    /// Position in [`Verdict::WORST_TO_BEST`] (0 = worst); `None` for `not_run`.
    pub fn rank(self) -> Option<usize> {
        Self::WORST_TO_BEST.iter().position(|v| *v == self)
    }

    /// Name in JSON and text.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Confirmed => "confirmed",
            Verdict::Degraded => "degraded",
            Verdict::BadPath => "bad_path",
            Verdict::HostStaged => "host_staged",
            Verdict::RegistrationFailed => "registration_failed",
            Verdict::TransferFailed => "transfer_failed",
            Verdict::NotRun => "not_run",
        }
    }
}

/// What the classification predicts for a path, from its nvidia-smi label (`PIX`, `PXB`,
/// `PHB`, `NODE`, `SYS`, `NV#`; classification.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expectation {
    /// PIX, PXB, NV# (and X): GDR should run at full speed.
    Fast,
    /// PHB, NODE: through a host bridge; degraded or worse expected.
    Slow,
    /// SYS: across sockets; bad path expected.
    CrossSocket,
    /// No label, or one this table does not know.
    Unknown,
}

/// Maps a classification label to what it predicts.
pub fn expectation(label: Option<Label>) -> Expectation {
    match label {
        Some(Label::Pix | Label::Pxb | Label::X | Label::Nv(_) | Label::Xgmi) => Expectation::Fast,
        Some(Label::Phb | Label::Node) => Expectation::Slow,
        Some(Label::Sys) => Expectation::CrossSocket,
        Some(Label::Unknown) | None => Expectation::Unknown,
    }
}

/// Inputs of a GPU-cell verdict.
#[derive(Debug, Clone, Copy)]
pub struct CellFacts {
    /// Bytes moved and verified (false: some byte differed or the transfer did not finish).
    pub verified: bool,
    /// Measured GB/s.
    pub gbytes_per_s: f64,
    /// Host baseline on the same NIC, op and size, GB/s (None: baseline missing or failed).
    pub baseline_gbytes_per_s: Option<f64>,
    /// Line rate, GB/s, when known.
    pub line_rate_gbytes_per_s: Option<f64>,
    /// Evidence the NIC moved device memory: `cuPointerGetAttribute == DEVICE` and a GPU
    /// registration method (dmabuf, peer, hmem) worked.
    pub gdr_evidence: bool,
}

/// The verdict for a GPU cell that ran, with the reason in words.
pub fn judge_gpu(f: &CellFacts) -> (Verdict, String) {
    if !f.verified {
        return (
            Verdict::TransferFailed,
            "bytes at the destination did not match the pattern".into(),
        );
    }
    if !f.gdr_evidence {
        return (
            Verdict::HostStaged,
            "the transfer verified but the buffer was not device memory registered for GDR".into(),
        );
    }
    let Some(h) = f.baseline_gbytes_per_s.filter(|h| *h > 0.0) else {
        return (
            Verdict::NotRun,
            "no host baseline on this NIC to compare with".into(),
        );
    };
    let r = f.gbytes_per_s / h;
    let line = f.line_rate_gbytes_per_s.map(|l| f.gbytes_per_s / l);
    let line_txt = match (line, f.line_rate_gbytes_per_s) {
        (Some(x), Some(l)) => format!(", {:.2} of line rate {:.1} GB/s", x, l),
        _ => ", line rate unknown".into(),
    };
    let why = format!("{:.2} of host baseline {:.2} GB/s{line_txt}", r, h);
    if r < BAD_PATH_RATIO {
        (Verdict::BadPath, why)
    } else if r < CONFIRM_RATIO || line.is_some_and(|x| x < CONFIRM_LINE_FRACTION) {
        (Verdict::Degraded, why)
    } else {
        (Verdict::Confirmed, why)
    }
}

/// The verdict for a host-memory cell (the baseline itself, or `--memory host`): it judges the
/// NIC's host path only — `confirmed` when verified and not below 0.85 of a known line rate.
pub fn judge_host(verified: bool, gbytes_per_s: f64, line_rate: Option<f64>) -> (Verdict, String) {
    if !verified {
        return (
            Verdict::TransferFailed,
            "bytes at the destination did not match the pattern".into(),
        );
    }
    match line_rate {
        Some(l) if gbytes_per_s < CONFIRM_LINE_FRACTION * l => (
            Verdict::Degraded,
            format!("host-memory path at {:.2} of line rate {:.1} GB/s; says nothing about GDR", gbytes_per_s / l, l),
        ),
        Some(l) => (
            Verdict::Confirmed,
            format!("host-memory path at {:.2} of line rate {:.1} GB/s; says nothing about GDR", gbytes_per_s / l, l),
        ),
        None => (Verdict::Confirmed, "host-memory path moved and verified the bytes (line rate unknown); says nothing about GDR".into()),
    }
}

/// Whether a verdict contradicts what the label predicts: a fast label with anything short of
/// `confirmed`, or a slow/cross-socket label that turned out `confirmed`. `not_run` and unknown
/// labels never contradict.
pub fn contradicts(v: Verdict, e: Expectation) -> bool {
    match (e, v) {
        (_, Verdict::NotRun) | (Expectation::Unknown, _) => false,
        (Expectation::Fast, v) => v != Verdict::Confirmed,
        (Expectation::Slow | Expectation::CrossSocket, Verdict::Confirmed) => true,
        (Expectation::CrossSocket, Verdict::Degraded) => false,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(bw: f64, base: f64, line: Option<f64>) -> CellFacts {
        CellFacts {
            verified: true,
            gbytes_per_s: bw,
            baseline_gbytes_per_s: Some(base),
            line_rate_gbytes_per_s: line,
            gdr_evidence: true,
        }
    }

    #[test]
    fn thresholds_follow_the_reference() {
        assert_eq!(
            judge_gpu(&facts(45.0, 48.0, Some(50.0))).0,
            Verdict::Confirmed
        );
        // 0.94 of baseline but 0.80 of line rate: degraded.
        assert_eq!(
            judge_gpu(&facts(40.0, 42.5, Some(50.0))).0,
            Verdict::Degraded
        );
        assert_eq!(judge_gpu(&facts(35.0, 48.0, None)).0, Verdict::Degraded);
        // perftest#241: 11000 vs 23000 MiB/s on SYS = 0.48.
        assert_eq!(judge_gpu(&facts(11.0, 23.0, None)).0, Verdict::BadPath);
        let mut f = facts(45.0, 48.0, None);
        f.verified = false;
        assert_eq!(judge_gpu(&f).0, Verdict::TransferFailed);
        f.verified = true;
        f.gdr_evidence = false;
        assert_eq!(judge_gpu(&f).0, Verdict::HostStaged);
        f.gdr_evidence = true;
        f.baseline_gbytes_per_s = None;
        assert_eq!(judge_gpu(&f).0, Verdict::NotRun);
    }

    #[test]
    fn contradictions() {
        assert!(contradicts(Verdict::BadPath, expectation(Some(Label::Pix))));
        assert!(!contradicts(
            Verdict::Confirmed,
            expectation(Some(Label::Pxb))
        ));
        assert!(contradicts(
            Verdict::Confirmed,
            expectation(Some(Label::Sys))
        ));
        assert!(!contradicts(
            Verdict::BadPath,
            expectation(Some(Label::Sys))
        ));
        assert!(!contradicts(Verdict::TransferFailed, expectation(None)));
        assert!(!contradicts(
            Verdict::TransferFailed,
            expectation(Some(Label::Unknown))
        ));
        assert!(contradicts(
            Verdict::HostStaged,
            expectation(Some(Label::Nv(12)))
        ));
    }

    #[test]
    fn one_order_worst_to_best() {
        assert_eq!(Verdict::RegistrationFailed.rank(), Some(0));
        assert!(Verdict::BadPath.rank() < Verdict::Degraded.rank());
        assert_eq!(Verdict::Confirmed.rank(), Some(5));
        assert_eq!(Verdict::NotRun.rank(), None);
        for v in Verdict::WORST_TO_BEST {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
        }
    }

    #[test]
    fn host_cells() {
        assert_eq!(judge_host(true, 1.0, None).0, Verdict::Confirmed);
        assert_eq!(judge_host(false, 1.0, None).0, Verdict::TransferFailed);
        assert_eq!(judge_host(true, 10.0, Some(50.0)).0, Verdict::Degraded);
    }
}
