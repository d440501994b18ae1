//! Support texts as operators publish them (issue 51): `nvidia-bug-report.log`, `lspci` text
//! with a kernel log beside it. Each test runs the audit on a real published file in
//! fixtures/bundles/ (source in its README) and holds it to what a by-hand reading of the file
//! supports: an unknown is never a mismatch, what the kernel log says is read and cited.

use peerpath::analysis::audit::{self, AuditOptions, CheckId, Finding, Severity};
use peerpath::model::Topology;
use peerpath::sources::{self, LoadOptions};
use std::path::{Path, PathBuf};

fn bundle(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/bundles")
        .join(name)
}

/// No PCI ID database: the same reading on every machine.
fn no_db() -> LoadOptions {
    LoadOptions {
        pci_ids: Some(PathBuf::from("/nonexistent/pci.ids")),
        ..LoadOptions::default()
    }
}

fn load(name: &str) -> Topology {
    sources::load(Some(&bundle(name)), &no_db()).unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

fn findings(t: &Topology, id: CheckId) -> Vec<Finding> {
    audit::run(t, &AuditOptions::default())
        .findings
        .into_iter()
        .filter(|f| f.id == id)
        .collect()
}

/// A 2019 bug report (driver 440.31 throughout; 4x RTX 2080 Ti, printed `GV102` by its old
/// pci.ids).
const BR2019: &str = "nvidia-bug-report-2019-4x-rtx2080ti-supermicro-x10drg.EXCERPT.log";

#[test]
fn one_driver_in_a_bug_report_is_no_mismatch() {
    // Before: `driver-mismatch` error "440.31 vs loaded (/proc/modules …; no version there)".
    let t = load(BR2019);
    let f = findings(&t, CheckId::DriverMismatch);
    assert!(
        f.iter().all(|f| f.severity == Severity::Unknown),
        "a module listed without its version is unknown, never a mismatch: {f:#?}"
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].summary.contains("440.31"), "{}", f[0].summary);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.value.contains("/proc/modules at line")),
        "the side without a version is named with where it was read: {:#?}",
        f[0].evidence
    );
}
