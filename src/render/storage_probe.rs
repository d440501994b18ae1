//! `peerpath probe-storage`'s text output: the cuFile library and driver flags, each probed
//! file, then one line per GPU and file with the path cuFile took and both bandwidths.
//! Formatting only: every value comes from the [`StorageProbeReport`].

use crate::analysis::probe_report::storage::{CufilePath, ReadResult, StorageProbeReport};
use std::fmt::Write;

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

fn read(r: &Option<ReadResult>) -> String {
    match r {
        Some(r) => format!(
            "{:>7.2} GB/s {}",
            r.gbytes_per_s,
            if r.verified { "verified" } else { "UNVERIFIED" }
        ),
        None => format!("{:>7} {:<12}", "-", "not measured"),
    }
}

/// The text report.
pub fn render_text(r: &StorageProbeReport) -> String {
    let mut s = String::new();
    let d = &r.driver;
    let _ = writeln!(
        s,
        "cuFile {}{}: nvidia-fs {}, NVMe direct {}, NVMe P2PDMA {}, compat mode allowed {}, forced {}",
        d.library,
        d.version
            .map(|v| format!(" (version {v})"))
            .unwrap_or_default(),
        match d.nvfs_version.as_deref() {
            Some("0.0") | None => "not loaded".to_string(),
            Some(v) => v.to_string(),
        },
        yes_no(d.nvme_supported),
        yes_no(d.nvme_p2pdma_supported),
        yes_no(d.compat_allowed),
        yes_no(d.compat_forced),
    );
    let _ = writeln!(
        s,
        "  driver open with compat mode disallowed: {}",
        d.strict_open
    );
    for (k, t) in r.targets.iter().enumerate() {
        let drives: Vec<String> = t.drives.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(
            s,
            "file {k}: {} ({} {}{}){}",
            t.file,
            t.mount_point.as_deref().unwrap_or("?"),
            t.fs_type.as_deref().unwrap_or("?"),
            if drives.is_empty() {
                ", on no NVMe drive".to_string()
            } else {
                format!(", NVMe {}", drives.join(" "))
            },
            if t.o_direct {
                ""
            } else {
                ", buffered (no O_DIRECT)"
            }
        );
    }
    for c in &r.cells {
        let path = match c.path {
            CufilePath::Compat => "COMPAT (host bounce buffer)",
            CufilePath::NvidiaFs => "direct (nvidia-fs)",
            CufilePath::P2pdma => "direct (P2PDMA)",
            CufilePath::Unknown => "unknown",
        };
        let _ = writeln!(
            s,
            "  GPU{} {:<13} file {} {:<6} cuFile {}  pread+copy {}  {:<27}{}",
            c.gpu,
            c.gpu_pci_bus_id.as_deref().unwrap_or("?"),
            c.target,
            c.label
                .as_deref()
                .map(|l| format!("[{l}]"))
                .unwrap_or_default(),
            read(&c.cufile),
            read(&c.posix),
            path,
            c.ratio()
                .map(|x| format!("  ratio {x:.2}"))
                .unwrap_or_default(),
        );
        let _ = writeln!(s, "      path: {}", c.path_evidence);
        for e in &c.errors {
            let _ = writeln!(s, "      error: {e}");
        }
    }
    if !r.notes.is_empty() {
        let _ = writeln!(s, "notes:");
        for n in &r.notes {
            let _ = writeln!(s, "  - {n}");
        }
    }
    s
}
