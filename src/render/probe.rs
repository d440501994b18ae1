//! `peerpath probe`'s text output: one line per cell of a [`ProbeReport`], then the CUDA copy
//! probes, the counters that changed and the notes. Formatting only: every value comes from
//! the report.

use crate::analysis::probe_report::ProbeReport;

/// `65536` → `64 KiB`, `8388608` → `8 MiB`.
fn human(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// The text report of [`crate::probe::run::run`]: one line per cell, then CUDA probes,
/// counters and notes.
pub fn render_text(r: &ProbeReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "probe over {} ({} cells)", r.fabric, r.results.len());
    for c in &r.results {
        let _ = writeln!(
            s,
            "  {:<14} {:<28} {:<5} {:<12} {:<5} {:>7}  {:>8.3} GB/s  {:<9} {:<19} {}{}{}",
            c.gpu.as_ref().map_or("-".to_string(), |g| g.to_string()),
            c.nic.to_string(),
            c.memory.as_str(),
            c.direction.as_str(),
            c.op.as_str(),
            human(c.message_bytes),
            c.gbytes_per_s,
            if c.verified { "verified" } else { "UNVERIFIED" },
            c.verdict.as_str(),
            c.expected_label
                .map(|l| format!("[expected {l}] "))
                .unwrap_or_default(),
            if c.contradicts { "CONTRADICTS: " } else { "" },
            c.reason,
        );
    }
    let _ = writeln!(s, "cuda:");
    if !r.cuda.available {
        let _ = writeln!(
            s,
            "  not run: {}",
            r.cuda.reason.as_deref().unwrap_or("unknown")
        );
    }
    let f = |x: Option<f64>| match x {
        Some(v) => format!("{v:.2} GB/s"),
        None => "n/a".to_string(),
    };
    for d in &r.cuda.devices {
        let _ = writeln!(
            s,
            "  GPU {} {} {}: H2D {}, D2H {}, dma-buf {}, GPUDirect RDMA attribute {}{}",
            d.ordinal,
            d.pci_bus_id.as_deref().unwrap_or("?"),
            d.name.as_deref().unwrap_or("?"),
            f(d.h2d_gbytes_per_s),
            f(d.d2h_gbytes_per_s),
            if d.dma_buf_export {
                "exported".to_string()
            } else {
                format!(
                    "not exported ({})",
                    d.dma_buf_export_error.as_deref().unwrap_or("?")
                )
            },
            d.gpudirect_rdma_supported
                .map_or("unknown", |b| if b { "yes" } else { "no" }),
            if d.errors.is_empty() {
                String::new()
            } else {
                format!(" [{}]", d.errors.join("; "))
            }
        );
    }
    for p in &r.cuda.peers {
        let _ = writeln!(
            s,
            "  GPU {} -> GPU {}: peer access {}, with {}, without {}{}",
            p.src,
            p.dst,
            p.can_access_peer
                .map_or("unknown", |b| if b { "yes" } else { "no" }),
            f(p.with_peer_gbytes_per_s),
            f(p.without_peer_gbytes_per_s),
            if p.errors.is_empty() {
                String::new()
            } else {
                format!(" [{}]", p.errors.join("; "))
            }
        );
    }
    if !r.counter_changes.is_empty() {
        let _ = writeln!(s, "counters that changed during the run:");
        for c in &r.counter_changes {
            let v = |x: &Option<String>| x.clone().unwrap_or_else(|| "absent".into());
            let _ = writeln!(s, "  {}: {} -> {}", c.path, v(&c.before), v(&c.after));
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    if r.interrupted {
        let _ = writeln!(
            s,
            "interrupted: remaining cells not run; every registration, endpoint and buffer was released"
        );
    }
    let timed: f64 = r.results.iter().map(|c| c.seconds).sum();
    let _ = writeln!(
        s,
        "wall time: {:.2} s for the whole run, {timed:.2} s of it in the cells' timed windows",
        r.wall_seconds
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::Label;
    use crate::analysis::probe_report::MemoryKind;
    use crate::analysis::probe_report::Op;
    use crate::analysis::probe_report::cuda::CudaReport;
    use crate::analysis::probe_report::verdict::Verdict;
    use crate::analysis::probe_report::{CellResult, Direction, GpuRef, NicRef, PROBE_SCHEMA};

    #[test]
    fn cells_print_their_refs_in_short_form() {
        let cell = CellResult {
            gpu: Some(GpuRef {
                bdf: Some("0000:13:00.0".parse().unwrap()),
                cuda: Some(0),
            }),
            nic: NicRef::verbs("mlx5_0", 1, Some("0000:14:00.0".parse().unwrap())),
            memory: MemoryKind::Cuda,
            direction: Direction::HostToGpu,
            op: Op::Read,
            message_bytes: 8 << 20,
            bytes: 0,
            seconds: 0.0,
            gbytes_per_s: 12.5,
            verified: true,
            ops_in_flight: 0,
            verdict: Verdict::Degraded,
            expected_label: Some(Label::Pix),
            reason: "0.70 of host baseline".into(),
            contradicts: true,
            control: false,
            registration: vec![],
        };
        let r = ProbeReport {
            schema: PROBE_SCHEMA.into(),
            fabric: "verbs".into(),
            results: vec![cell],
            cuda: CudaReport::unavailable("no driver"),
            counter_changes: vec![],
            notes: vec!["a note".into()],
            interrupted: false,
            wall_seconds: 1.5,
        };
        let t = render_text(&r);
        assert!(t.starts_with("probe over verbs (1 cells)\n"), "{t}");
        assert!(
            t.ends_with(
                "wall time: 1.50 s for the whole run, 0.00 s of it in the cells' timed windows\n"
            ),
            "{t}"
        );
        assert!(
            t.contains("  0000:13:00.0   verbs:mlx5_0:1 (0000:14:00.0) cuda  host_to_gpu  read    8 MiB    12.500 GB/s  verified  degraded            [expected PIX] CONTRADICTS: 0.70 of host baseline\n"),
            "{t}"
        );
        assert!(t.contains("  not run: no driver\nnote: a note\n"), "{t}");
    }
}
