//! Issue 51 ([texts-real]): job logs as operators publish them, 2024–2026 — each reading a real
//! published log (fixtures/evidence/, tests/data/evidence/, with their sources in the READMEs
//! and manifest there) and checking what the issue found peerpath got wrong.

use peerpath::analysis::evidence::{self, EvidenceReport, Gdr, Input, Options};
use peerpath::render::evidence::{EXIT_NOTHING_READ, exit_code, nothing_read, verdict_line};

mod common;

fn report_of(name: &str, bytes: &[u8]) -> EvidenceReport {
    let i = Input::from_bytes(name, bytes).unwrap();
    evidence::analyze(&[i], None, &Options { nic: None })
}

fn report(rel: &str) -> EvidenceReport {
    let bytes = std::fs::read(common::repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    report_of(rel, &bytes)
}

/// Logs whose processes, ranks and NICs are read but whose GDR no line shows: an RCCL init log
/// (ROCm/rccl PR #2078), a job that failed at bootstrap (sgl-project/sglang#6017), an
/// nccl-tests `# Using devices` header without its table (NVIDIA/nccl-tests#252). Before: each
/// was `NOTHING READ`, exit 3 — as if the reader had found nothing.
#[test]
fn a_log_whose_processes_were_read_is_never_nothing_read() {
    for (rel, procs, ranks) in [
        (
            "fixtures/evidence/rccl-pr-2078-mi300x-ainic-ionic-roce-init-only.EXCERPT.log",
            2,
            2,
        ),
        (
            "fixtures/evidence/sglang-issue-6017-ibext-v8-renamed-hcas-bootstrap-failure.EXCERPT.log",
            4,
            4,
        ),
        (
            "tests/data/evidence/nccl-tests-252-kolyoz1-h100-header.log",
            0,
            4,
        ),
    ] {
        let r = report(rel);
        let n: usize = r.inputs.iter().map(|i| i.processes.len()).sum();
        assert_eq!((n, r.ranks.len()), (procs, ranks), "{rel}");
        assert!(!nothing_read(&r), "{rel}");
        let head = verdict_line(&r);
        assert!(head.starts_with("NOTHING JUDGED ("), "{rel}: {head}");
        assert!(
            head.contains(&format!("{ranks} rank(s)/GPU(s) read")),
            "{rel}: {head}"
        );
        assert_eq!(exit_code(&r), 0, "{rel}: {head}");
        assert!(r.ranks.iter().all(|x| x.gdr == Gdr::Unknown), "{rel}");
    }
    // Prose is still nothing read.
    let r = report(
        "fixtures/evidence/nccl-issue-2409-2x8xh100-8x400g-roce.nccl-tests+perftest-summary.EXCERPT.md",
    );
    assert!(nothing_read(&r));
    assert_eq!(exit_code(&r), EXIT_NOTHING_READ);
    assert!(verdict_line(&r).starts_with("NOTHING READ: "));
}
