//! How each command's time grows with the node (issue 42): every command end to end (the
//! `peerpath` binary: process start, read, analysis, output to /dev/null) on the synthesized
//! nodes `peerpath fixture scaling-N` writes (1,054, 4,114 and 16,388 PCI functions, about a
//! quarter of them GPUs and a quarter NICs), median of `RUNS` runs per size (after one untimed
//! run that reads the tree into the page cache), and a growth check: from one size to the next, a command's time may grow at most `SLACK` times as fast as
//! n·log n in functions. A command that classifies every GPU–NIC pair grows with n² and fails
//! (`matrix`, which prints every pair, is measured against the bytes it writes instead: its
//! output itself grows with n²).
//!
//! Run by hand: `cargo bench --bench growth` (release build; the 16,388-function tree is
//! 2.2 GB on disk and the run takes minutes), or the test-profile bench binary with `--bench`
//! and `PEERPATH=target/release/peerpath`. `GROWTH_SIZES=1024,4096` picks sizes,
//! `GROWTH_DIR` reuses trees already written there (`scaling-N/`), `RUNS` (default 3) the runs
//! per size. `cargo test --all-targets` runs
//! it on sizes 64 and 256 (median of 3) as a smoke test (the
//! check too: at that size process start dominates and the ratio is near 1).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The binary measured: `PEERPATH` when set (a release build measured from the test-profile
/// bench binary, so a run need not build the dependencies a second time), else cargo's.
fn peerpath() -> String {
    std::env::var("PEERPATH").unwrap_or_else(|_| env!("CARGO_BIN_EXE_peerpath").to_string())
}

/// How much faster than n·log n a command's time may grow between two sizes before the check
/// fails: room for machine noise on a shared host, far below the n² of an all-pairs table (4×
/// functions is 16× pairs).
const SLACK: f64 = 1.6;

/// The commands measured, as `peerpath` arguments before `-i TREE` (the PNG report with
/// `--bench` only).
const COMMANDS: &[&[&str]] = &[
    &["scan", "--format", "json"],
    &["audit"],
    &["audit", "--format", "json"],
    &["place", "--ranks", "8"],
    &["explain", "GPU0", "NIC0"],
    &["matrix", "--format", "json"],
    &["report", "--format", "html", "-o", "/dev/null"],
    &["report", "--format", "png", "-o", "/dev/null"],
    &["rails"],
    &["rails", "--format", "json"],
];

/// Runs a command once over a tree; wall seconds and bytes written to stdout.
fn run(args: &[&str], input: &Path) -> (f64, u64) {
    let t0 = Instant::now();
    let mut child = Command::new(peerpath())
        .args(args)
        .arg("-i")
        .arg(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("peerpath runs");
    let bytes = std::io::copy(
        child.stdout.as_mut().expect("piped stdout"),
        &mut std::io::sink(),
    )
    .expect("stdout read");
    let status = child.wait().expect("peerpath waited for");
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "peerpath {args:?} -i {}: {status}",
        input.display()
    );
    (secs, bytes)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The PCI functions in a tree (`sys/bus/pci/devices` entries).
fn functions(root: &Path) -> usize {
    std::fs::read_dir(root.join("sys/bus/pci/devices"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn nlogn(n: usize) -> f64 {
    let n = n as f64;
    n * n.log2()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("GROWTH_SIZES") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) if full => vec![1024, 4096, 16384],
        Err(_) => vec![64, 256],
    };
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let tmp = tempfile::tempdir().expect("temporary directory");
    let dir: PathBuf = std::env::var_os("GROWTH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let mut trees = Vec::new();
    for &n in &sizes {
        let root = dir.join(format!("scaling-{n}"));
        if !root.join("sys").is_dir() {
            let ok = Command::new(peerpath())
                .args(["fixture", &format!("scaling-{n}"), "-o"])
                .arg(&root)
                .stdout(Stdio::null())
                .status()
                .expect("peerpath fixture runs")
                .success();
            assert!(ok, "peerpath fixture scaling-{n}");
        }
        trees.push((functions(&root), root));
    }
    let mut failed = Vec::new();
    for args in COMMANDS {
        // The PNG rasteriser in the test profile takes seconds a run even at 272 functions:
        // measured with `--bench` only, where the release build runs it.
        if !full && args.contains(&"png") {
            continue;
        }
        let name = args.join(" ");
        let mut prev: Option<(usize, f64, u64)> = None;
        for (n, root) in &trees {
            // One untimed run first: the tree's files into the page cache (a 16,388-function
            // tree is 2.2 GB of sysfs files; a cold first read measured the disk, not the command).
            run(args, root);
            let samples: Vec<(f64, u64)> = (0..runs.max(1)).map(|_| run(args, root)).collect();
            let bytes = samples[0].1;
            let t = median(samples.iter().map(|s| s.0).collect());
            let mut line = format!("GROWTH {name:<28} n={n:<6} median={t:.3}s bytes={bytes}");
            if let Some((pn, pt, pb)) = prev {
                let grew = t / pt;
                // matrix prints every pair: its bound is the bytes it writes, not n·log n.
                let allowed = if args[0] == "matrix" {
                    (bytes as f64 / pb.max(1) as f64).max(1.0) * SLACK
                } else {
                    nlogn(*n) / nlogn(pn) * SLACK
                };
                line += &format!(" grew={grew:.2}x allowed={allowed:.2}x");
                if grew > allowed {
                    line += " FAIL";
                    failed.push(format!(
                        "{name}: {pn} → {n} functions, {grew:.2}x > {allowed:.2}x"
                    ));
                }
            }
            println!("{line}");
            prev = Some((*n, t, bytes));
        }
    }
    if !failed.is_empty() {
        eprintln!("growth faster than n·log n:");
        for f in &failed {
            eprintln!("  {f}");
        }
        std::process::exit(1);
    }
}
