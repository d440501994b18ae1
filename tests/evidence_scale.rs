//! Issue 53 (memory): a job log of 10^6 ranks is read in time and memory linear in its size,
//! with a small factor. The logs are synthesized at test time in NCCL 2.21's line forms (a NIC
//! list per node, a NET channel line per rank, as `gen_log.py` of docs/performance.md writes
//! them), at n and 8n nodes; every node runs its ranks as the same pids, as containers do.
//! Timing is compared as a ratio in one process (the machine's load cancels out); memory is
//! the peak of the bytes this test binary holds allocated, counted by its allocator.

use peerpath::analysis::evidence::{self, Input, Options};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The system allocator, counting the bytes held and their peak.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = HELD.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        HELD.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

/// A log of `nodes` nodes × `gpus` GPUs, one process per rank, pids 1000, 1001, … on every
/// node.
fn job_log(nodes: usize, gpus: usize) -> String {
    let n = nodes * gpus;
    let mut s = String::from("NCCL version 2.21.5+cuda12.4\n");
    for node in 0..nodes {
        for g in 0..gpus {
            let (r, pid) = (node * gpus + g, 1000 + g);
            let h = format!("n{node:06}:{pid}:{} [{g}] NCCL INFO ", pid + 70);
            if g == 0 {
                s.push_str(&format!(
                    "{h}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB ib0:10.1.{}.{}<0>\n",
                    node / 250,
                    node % 250
                ));
            }
            s.push_str(&format!(
                "{h}Channel 00/0 : {r}[{g}] -> {}[{}] [send] via NET/IB/{}/GDRDMA\n",
                (r + 1) % n,
                (r + 1) % gpus,
                g / 2
            ));
        }
    }
    s
}

/// Text written nowhere, as standard output takes it: its first line and its size are kept.
#[derive(Default)]
struct Discard {
    first: String,
    bytes: usize,
}

impl std::fmt::Write for Discard {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if !self.first.contains('\n') {
            self.first.push_str(s);
        }
        self.bytes += s.len();
        Ok(())
    }
}

/// Reads and judges one log as `peerpath evidence` does and writes the text as it does (piece
/// by piece, `render::evidence::write_text`); the time it took, the peak bytes held above what
/// was held before (the log's own bytes, which the command reads from its file, excluded), and
/// the text's first line.
fn run(log: &str) -> (Duration, usize, String) {
    let base = HELD.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let start = Instant::now();
    let input = Input::from_bytes("big.log", log.as_bytes()).unwrap();
    let report = evidence::analyze(&[input], None, &Options::default());
    let judged = PEAK.load(Ordering::Relaxed) - base;
    let mut out = Discard::default();
    peerpath::render::evidence::write_text(&mut out, &report);
    let took = start.elapsed();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    eprintln!(
        "peak {judged} bytes while judging, {peak} in all; text {} bytes",
        out.bytes
    );
    let first = out.first.lines().next().unwrap_or("").to_string();
    (took, peak, first)
}

/// 8× the nodes take at most ~8× the time (allowing 2× for noise), and the bytes held stay
/// under 40× the log's size (≈ 17× in this shape now; issue 53's goal of ≈ 8× is not met yet:
/// docs/performance.md). One GPU per node (a pod per GPU): every host runs pid
/// 1000. Before: every pid's hosts were a list searched per line (quadratic: 12,500 nodes × 8
/// sharing pids took 63 s in a release build, 25,000 took 414 s).
#[test]
fn a_job_log_of_many_ranks_is_read_in_linear_time_and_memory() {
    let (small, big) = (job_log(4_000, 1), job_log(32_000, 1));
    let best = |log: &str| {
        let a = run(log);
        let b = run(log);
        if a.0 <= b.0 { a } else { b }
    };
    let (t1, p1, first) = best(&small);
    eprintln!("n: {t1:?} {p1} bytes held, log {} bytes", small.len());
    assert!(first.contains("GDR used on 4000"), "{first}");
    let (t8, peak, first) = best(&big);
    eprintln!("8n: {t8:?} {peak} bytes held, log {} bytes", big.len());
    assert!(first.contains("GDR used on 32000"), "{first}");
    let ratio = t8.as_secs_f64() / t1.as_secs_f64().max(1e-3);
    assert!(
        ratio < 16.0,
        "8x the nodes took {ratio:.1}x the time ({t1:?} → {t8:?})"
    );
    let per_byte = peak as f64 / big.len() as f64;
    assert!(
        per_byte < 40.0,
        "{peak} bytes held for a log of {} bytes ({per_byte:.1}×)",
        big.len()
    );
    // Issue 53: bytes held per rank at 32,000 ranks (one process, one NIC list per rank).
    // 4,063 with a `BTreeMap` of devices per process and a `BTreeSet` of lines per rank, and
    // the text held whole; 3,694 with sorted vectors, the topology join boxed and the text
    // written as rendered; 3,167 with each process's host and release moved into its summary;
    // 3,001 with the subjects' indexes freed before the verdicts.
    let per_rank = peak / 32_000;
    assert!(
        per_rank < 3_100,
        "{peak} bytes held for 32,000 ranks ({per_rank} per rank)"
    );
}
