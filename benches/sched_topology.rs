//! `export --format slurm-topology` at SuperPOD scale (issue 52): a 16,384-host, 8-rail pod's
//! `ibnetdiscover` (written by `synth::fabric` in the tool's own grammar, one host's
//! rail-2/rail-5 cables crossed; about 1.1 M lines, 42 MB) to `topology.conf` — in this process
//! (read, parse, build, render, each timed) and through the release binary end to end.
//! Target: ≤ 1 s.
//!
//! Run: `cargo bench --bench sched_topology` (release build); `SCHED_TOPO_NODES=512` for a
//! smaller pod, `SCHED_TOPO_RUNS` for the runs (default 5). Prints the medians and the
//! machine's load (`/proc/loadavg`). `cargo test --all-targets` only compiles it.

use peerpath::analysis::schedtopo::{self, SchedOptions};
use peerpath::model::fabric::Producer;
use peerpath::parse::fabric::{detect, parse};
use peerpath::render::schedtopo as out;
use peerpath::synth::fabric::{Pod, PodFault, ibnetdiscover};
use std::process::Command;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64()
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let nodes = env("SCHED_TOPO_NODES", 16_384);
    let runs = env("SCHED_TOPO_RUNS", 5);
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("pod.ibnetdiscover");
    let text = ibnetdiscover(
        &Pod::new(nodes),
        &[PodFault::SwapRails {
            host: nodes * 3 / 5,
            a: 2,
            b: 5,
        }],
    );
    std::fs::write(&path, &text).expect("write the map");
    println!(
        "pod of {nodes} hosts × 8 rails: {} lines, {} bytes",
        text.lines().count(),
        text.len()
    );
    drop(text);
    let (mut parse_t, mut build_t, mut render_t, mut all_t) = (vec![], vec![], vec![], vec![]);
    let mut lines = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let t = std::fs::read_to_string(&path).expect("read");
        assert_eq!(detect(&t), Some(Producer::Ibnetdiscover));
        let m = parse(&t, Producer::Ibnetdiscover, "pod").expect("parse");
        drop(t);
        let t1 = Instant::now();
        let s = schedtopo::build(&m, &[], &SchedOptions::default());
        let t2 = Instant::now();
        let conf = out::tree_conf(&s);
        let t3 = Instant::now();
        assert_eq!(s.hosts, nodes);
        assert_eq!(s.faults.len(), 1);
        lines = conf.lines().count();
        parse_t.push(t1 - t0);
        build_t.push(t2 - t1);
        render_t.push(t3 - t2);
        all_t.push(t3 - t0);
    }
    println!(
        "in process, median of {runs}: {:.3} s (read + parse {:.3}, build {:.3}, render {:.3}); topology.conf {lines} lines",
        median(all_t),
        median(parse_t),
        median(build_t),
        median(render_t)
    );
    let conf = dir.path().join("topology.conf");
    let mut cli = Vec::new();
    for _ in 0..runs {
        let t0 = Instant::now();
        let o = Command::new(env!("CARGO_BIN_EXE_peerpath"))
            .args(["export", "--format", "slurm-topology", "--fabric-map"])
            .arg(&path)
            .arg("-o")
            .arg(&conf)
            .output()
            .expect("peerpath runs");
        cli.push(t0.elapsed());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    println!(
        "peerpath export --format slurm-topology --fabric-map POD -o FILE, median of {runs}: {:.3} s",
        median(cli)
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
}
