//! The commands users wait for, end to end: each run is the `peerpath` binary itself (process
//! start, input read, analysis, output formatted and written to /dev/null), as
//! `peerpath CMD -i TREE` runs, on the synthesized 1,054-function node
//! (`peerpath fixture scaling-1024`: 248 GPUs, 248 NICs, 16 host bridges). Issue [perf]: matrix
//! and audit at most 3x scan of the same tree; issue 28: `matrix --format json` too, writing at
//! most 10x the scan's JSON. `benches/compare.py` prints the same ratios beside the peer tools,
//! and the bytes written (`--node-only`: that node alone).
//!
//! Run: `cargo bench --bench commands` (release build). `cargo test --all-targets` runs each
//! command once on the 58-function HGX fixture instead, as a smoke test.

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const PEERPATH: &str = env!("CARGO_BIN_EXE_peerpath");

/// Runs `peerpath args…`, output discarded; audit's exit 1 (findings) is a normal answer.
fn run(args: &[&str], input: &Path) {
    let status = Command::new(PEERPATH)
        .arg(args[0])
        .arg("-i")
        .arg(input)
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("peerpath runs");
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "peerpath {args:?} -i {}: {status}",
        input.display()
    );
}

fn bench(c: &mut Criterion) {
    let full = std::env::args().any(|a| a == "--bench");
    let _dir;
    let input: PathBuf = if full {
        let d = tempfile::tempdir().expect("temporary directory");
        let root = d.path().join("scaling-1024");
        let ok = Command::new(PEERPATH)
            .args(["fixture", "scaling-1024", "-o"])
            .arg(&root)
            .stdout(Stdio::null())
            .status()
            .expect("peerpath fixture runs")
            .success();
        assert!(ok, "peerpath fixture scaling-1024");
        _dir = Some(d);
        root
    } else {
        _dir = None;
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/synth/hgx-h100.tar.gz")
    };
    let mut g = c.benchmark_group(if full { "node-1024" } else { "hgx-h100" });
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for (name, args) in [
        ("scan --format json", &["scan", "--format", "json"][..]),
        ("matrix", &["matrix"][..]),
        ("audit", &["audit"][..]),
        ("place --ranks 8", &["place", "--ranks", "8"][..]),
        ("matrix --format json", &["matrix", "--format", "json"][..]),
    ] {
        g.bench_function(name, |b| b.iter(|| run(args, &input)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
