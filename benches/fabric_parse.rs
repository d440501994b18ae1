//! The fabric map readers at SuperPOD scale: a 16,384-host, 8-rail pod's `ibnetdiscover`
//! (131,072 host adapters, 4,096 leaves; about 1 M lines, 42 MB, written by `synth::fabric`)
//! read from disk and parsed (detect + parse, no judgment), beside `wc -l` of the same file.
//! Issue 50: the readers' own cost, kept no slower than before their changes.
//!
//! Run: `cargo bench --bench fabric_parse` (release build). Prints the median of 5 runs.
//! `cargo test --all-targets` only compiles it.

use peerpath::model::fabric::Producer;
use peerpath::parse::fabric::{detect, parse};
use peerpath::synth::fabric::{Pod, ibnetdiscover};
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
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("pod16k.ibnetdiscover");
    let text = ibnetdiscover(&Pod::new(16384), &[]);
    std::fs::write(&path, &text).expect("write the map");
    let (lines, bytes) = (text.lines().count(), text.len());
    drop(text);
    let runs = 5;
    let mut ours = Vec::new();
    for _ in 0..runs {
        let t0 = Instant::now();
        let t = std::fs::read_to_string(&path).expect("read");
        assert_eq!(detect(&t), Some(Producer::Ibnetdiscover));
        let m = parse(&t, Producer::Ibnetdiscover, "pod16k").expect("parse");
        ours.push(t0.elapsed());
        assert_eq!(m.links.len(), 16384 * 8 + 4096 * 4);
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
    let (o, w) = (median(ours), median(wc));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("pod of 16384 hosts x 8 rails: {lines} lines, {bytes} bytes");
    println!(
        "read + detect + parse, median of {runs}: {:.0} ms",
        o.as_secs_f64() * 1e3
    );
    println!("wc -l, median of {runs}: {:.0} ms", w.as_secs_f64() * 1e3);
    println!("load average: {}", load.trim());
}
