//! `rails --fabric-map` at pod scale: a 512-node pod's `ibnetdiscover` (4,096 host adapters, 128
//! leaves, 4 spines; about 35,000 lines, written by `synth::fabric` in the tool's own
//! grammar) read from disk, parsed and judged against the node layout, beside `wc -l` of the
//! same file as the I/O floor (the least any reader of the file does). Issue 40: well under a
//! second.
//!
//! Run: `cargo bench --bench fabric_map` (release build). Prints the median of 15 runs of each
//! and their ratio, the file's lines and bytes, and the machine's load (`/proc/loadavg`).
//! `cargo test --all-targets` only compiles it.

use peerpath::analysis::cabling::judge;
use peerpath::model::fabric::Producer;
use peerpath::parse::fabric::{detect, parse};
use peerpath::synth::fabric::{Pod, PodFault, ibnetdiscover, layout};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let pod = Pod::new(512);
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("pod512.ibnetdiscover");
    let text = ibnetdiscover(
        &pod,
        &[PodFault::SwapRails {
            host: 300,
            a: 2,
            b: 5,
        }],
    );
    std::fs::write(&path, &text).expect("write the map");
    let lines = text.lines().count();
    let bytes = text.len();
    drop(text);
    let lay = [layout(&pod)];
    let runs = 15;
    let mut ours = Vec::new();
    let mut findings = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let t = std::fs::read_to_string(&path).expect("read");
        assert_eq!(detect(&t), Some(Producer::Ibnetdiscover));
        let m = parse(&t, Producer::Ibnetdiscover, "pod512").expect("parse");
        let c = judge(&m, &lay);
        ours.push(t0.elapsed());
        findings = c.findings.len();
        assert_eq!(c.adapters_matched, 4096);
    }
    assert_eq!(findings, 2, "the swapped pair, nothing else");
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
    let (o, w) = (median(ours), median(wc));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("pod of 512 nodes: {lines} lines, {bytes} bytes, 4096 host adapters");
    println!(
        "read + parse + judge (in process), median of {runs}: {:.1} ms",
        o.as_secs_f64() * 1e3
    );
    println!(
        "wc -l (process spawn included), median of {runs}: {:.1} ms",
        w.as_secs_f64() * 1e3
    );
    println!("ratio: {:.2}x wc -l", o.as_secs_f64() / w.as_secs_f64());
    println!("load average: {}", load.trim());
}
