//! Long fuzz runs of every target with the stable mutational harness: `cargo bench --bench fuzz
//! -- [EXECS] [TARGET…]` (default 10,000,000 per cheap target; tarball, JSON, evidence,
//! support-archive and bug-report targets get 1/100 of it, the XML ones 1/10, unless targets
//! are named: then each named one gets EXECS). Prints executions, crashes and rate per target.
//! Coverage-guided runs: `fuzz/README.md`.

use peerpath::fuzzing::{Stats, TARGETS, run_mutations};
use std::time::Instant;

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it,
    // and then a quick pass is enough (the smoke test in tests/fuzz_smoke.rs covers the rest).
    let benching = std::env::args().any(|a| a == "--bench");
    let execs: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(if benching { 10_000_000 } else { 1_000 });
    println!(
        "{:<10} {:>12} {:>8} {:>12}",
        "target", "execs", "crashes", "execs/s"
    );
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-') && a.parse::<u64>().is_err())
        .collect();
    for t in TARGETS
        .iter()
        .filter(|t| named.is_empty() || named.iter().any(|n| n == t.name))
    {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus")
            .join(t.name);
        let corpus: Vec<Vec<u8>> = std::fs::read_dir(&dir)
            .map(|r| {
                r.filter_map(|e| std::fs::read(e.ok()?.path()).ok())
                    .collect()
            })
            .unwrap_or_default();
        let n = match t.name {
            _ if !named.is_empty() => execs,
            "snapshot" | "json" | "evidence" | "sosreport" | "bug_report" => execs / 100,
            "hwloc_xml" | "nccl_xml" => execs / 10,
            _ => execs,
        };
        let start = Instant::now();
        let s = run_in_chunks(t.name, t.run, &corpus, n, start);
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{:<10} {:>12} {:>8} {:>12.0}",
            t.name,
            s.execs,
            s.crashes,
            s.execs as f64 / secs
        );
        if let Some(c) = s.first_crash {
            println!("  first crash input: {:?}", String::from_utf8_lossy(&c));
            // Kept whole for a reproduction (`peerpath evidence FILE`, a seed once fixed).
            if let Some(d) = std::env::var_os("FUZZ_CRASH_DIR") {
                let _ = std::fs::write(std::path::Path::new(&d).join(t.name), &c);
            }
        }
    }
}

/// Executions per chunk of a long run: each chunk is a mutation stream of its own seed, and
/// its end is reported on stderr (executions so far, crashes, elapsed), so a long run shows how
/// far it got.
const CHUNK: u64 = 100_000;

/// Runs `n` executions of `run` over `corpus` in chunks of [`CHUNK`], summing their stats.
/// `FUZZ_FIRST_CHUNK=K` starts at chunk K (its seed), so that one long run can be split across
/// processes without repeating a chunk: `1000000` from chunk 0 and `1000000` from chunk 10
/// are two million distinct executions.
fn run_in_chunks(name: &str, run: fn(&[u8]), corpus: &[Vec<u8>], n: u64, start: Instant) -> Stats {
    let mut total = Stats::default();
    let mut chunk: u64 = std::env::var("FUZZ_FIRST_CHUNK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while total.execs < n {
        let k = (n - total.execs).min(CHUNK);
        let seed = 0x2545_f491_4f6c_dd1d ^ chunk.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let s = run_mutations(run, corpus, k, seed);
        total.execs += s.execs;
        total.crashes += s.crashes;
        total.first_crash = total.first_crash.or(s.first_crash);
        chunk += 1;
        if n > CHUNK {
            eprintln!(
                "{name}: {} execs (to chunk {chunk}), {} crashes, {:.0} s",
                total.execs,
                total.crashes,
                start.elapsed().as_secs_f64()
            );
        }
    }
    total
}
