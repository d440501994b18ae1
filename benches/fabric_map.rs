//! `rails --fabric-map` at SuperPOD scale (issue 50): a 16,384-host, 8-rail pod's
//! `ibnetdiscover` (131,072 host adapters, 4,096 leaves, 4 spines; about 1.1 M lines and 42 MB,
//! written by `synth::fabric` in the tool's own grammar, one host's rail-2/rail-5 cables
//! crossed) read from disk, parsed and judged — with the layout every host shares and from
//! the map alone — beside `wc -l` of the same file as the I/O floor.
//!
//! Each judged run is a child process (this bench run again with `FABRIC_MAP_ONE` set) so its
//! peak RSS (`VmHWM` of `/proc/self/status`) is its own. Target: ≤ 1 s and ≤ 256 MB each.
//!
//! Run: `cargo bench --bench fabric_map` (release build); `FABRIC_MAP_NODES=512` for a smaller
//! pod, `FABRIC_MAP_RUNS` for the runs per mode (default 5), `FABRIC_MAP_KEEP=FILE` to keep the map. Prints each mode's median wall
//! time and largest peak RSS, `wc -l`'s median, the file's lines and bytes, and the machine's
//! load (`/proc/loadavg`). `cargo test --all-targets` only compiles it.

use peerpath::analysis::cabling::{FindingKind, judge};
use peerpath::model::fabric::Producer;
use peerpath::parse::fabric::{detect, parse};
use peerpath::synth::fabric::{Pod, PodFault, ibnetdiscover, layout};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Peak resident set of this process in KiB.
fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// CPU time this process has run, in seconds (`/proc/self/schedstat`'s first field, ns): on
/// a loaded machine the fairer figure beside the wall time.
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(0.0, |ns| ns / 1e9)
}

/// One judged run in this (child) process: prints `<seconds> <peak KiB> <read+parse s>
/// <judge s> <CPU s> <judge CPU s>`.
fn one(path: &str, nodes: usize, with_layout: bool) {
    let t0 = Instant::now();
    let t = std::fs::read_to_string(path).expect("read");
    assert_eq!(detect(&t), Some(Producer::Ibnetdiscover));
    let m = parse(&t, Producer::Ibnetdiscover, "pod").expect("parse");
    drop(t);
    let parsed = t0.elapsed().as_secs_f64();
    let parsed_cpu = cpu_s();
    let lay = if with_layout {
        vec![layout(&Pod::new(nodes))]
    } else {
        Vec::new()
    };
    let c = judge(&m, &lay);
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(c.hosts, nodes);
    assert!(
        c.findings.len() == 1 && c.findings[0].kind == FindingKind::Crossed,
        "the crossed pair, nothing else: {:?}",
        c.findings
    );
    let cpu = cpu_s();
    println!(
        "{secs} {} {parsed} {} {cpu} {}",
        vm_hwm_kib(),
        secs - parsed,
        cpu - parsed_cpu
    );
}

fn main() {
    let nodes: usize = std::env::var("FABRIC_MAP_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16_384);
    if let Ok(mode) = std::env::var("FABRIC_MAP_ONE") {
        let path = std::env::var("FABRIC_MAP_PATH").expect("FABRIC_MAP_PATH");
        one(&path, nodes, mode == "layout");
        return;
    }
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs: usize = std::env::var("FABRIC_MAP_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let pod = Pod::new(nodes);
    let dir = tempfile::tempdir().expect("temporary directory");
    // FABRIC_MAP_KEEP=FILE: write the map there and leave it (for `perf record` of one run).
    let path = std::env::var_os("FABRIC_MAP_KEEP")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("pod.ibnetdiscover"));
    let text = ibnetdiscover(
        &pod,
        &[PodFault::SwapRails {
            host: nodes * 3 / 5,
            a: 2,
            b: 5,
        }],
    );
    std::fs::write(&path, &text).expect("write the map");
    let (lines, bytes) = (text.lines().count(), text.len());
    drop(text);
    let me = std::env::current_exe().expect("this bench");
    println!(
        "pod of {nodes} hosts × 8 rails: {lines} lines, {bytes} bytes, {} host adapters",
        nodes * 8
    );
    for mode in ["layout", "alone"] {
        let mut wall = Vec::new();
        let mut phases = Vec::new();
        let mut peak = 0u64;
        for _ in 0..runs {
            let o = Command::new(&me)
                .env("FABRIC_MAP_ONE", mode)
                .env("FABRIC_MAP_PATH", &path)
                .env("FABRIC_MAP_NODES", nodes.to_string())
                .output()
                .expect("child runs");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let out = String::from_utf8_lossy(&o.stdout);
            let mut f = out.split_whitespace();
            let secs: f64 = f.next().and_then(|v| v.parse().ok()).expect("seconds");
            let kib: u64 = f.next().and_then(|v| v.parse().ok()).expect("KiB");
            let parse_s: f64 = f.next().and_then(|v| v.parse().ok()).expect("parse");
            let judge_s: f64 = f.next().and_then(|v| v.parse().ok()).expect("judge");
            let cpu: f64 = f.next().and_then(|v| v.parse().ok()).expect("cpu");
            let judge_cpu: f64 = f.next().and_then(|v| v.parse().ok()).expect("judge cpu");
            phases.push((parse_s, judge_s, cpu, judge_cpu));
            wall.push(Duration::from_secs_f64(secs));
            peak = peak.max(kib);
        }
        println!(
            "read + parse + judge ({}), median of {runs}: {:.3} s, peak RSS {:.0} MB",
            if mode == "layout" {
                "with the layout"
            } else {
                "from the map alone"
            },
            median(wall).as_secs_f64(),
            peak as f64 * 1024.0 / 1e6
        );
        let list: Vec<String> = phases
            .iter()
            .map(|(p, j, c, jc)| format!("{p:.3} + {j:.3} (CPU {c:.3}, judge {jc:.3})"))
            .collect();
        println!(
            "  read + parse + judge, each run, wall s (CPU s of the process, of judge): {}",
            list.join(", ")
        );
    }
    let mut wc = Vec::new();
    for _ in 0..runs {
        let t0 = Instant::now();
        let ok = Command::new("wc")
            .arg("-l")
            .arg(&path)
            .stdout(Stdio::null())
            .status()
            .expect("wc runs")
            .success();
        wc.push(t0.elapsed());
        assert!(ok);
    }
    println!(
        "wc -l (process spawn included), median of {runs}: {:.3} s",
        median(wc).as_secs_f64()
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
}
