//! The matrix's own cost per pair against its writing (issue 42): `peerpath matrix --format
//! json` streams one row per pair; at 16,388 functions its time may be at most twice the time
//! to write the same bytes through the same writer. This measures both in one process, on a
//! tree `peerpath fixture scaling-N` writes:
//!
//! - **the command's way**: [`matrix::write_json`] of [`matrix::doc`] into a 64 KiB
//!   `BufWriter` over `/dev/null` (the command's writer with its stdout sent there), each row
//!   classified as it is written — the classifier built first, as the command does, and timed
//!   with it;
//! - **the writer alone**: the same document with its rows computed ahead, a chunk of
//!   [`CHUNK`] rows at a time ([`matrix::pair_row`], the command's own row), the time spent
//!   computing them taken out, so what is left is serde_json and the writer writing the same
//!   bytes.
//!
//! Times are this thread's CPU time (the machine is shared; wall time of the command's way is
//! printed beside). Both documents are hashed as they are written and must be the same bytes (so the writer is
//! timed on what the command writes, not on something easier). The ratio is the command's
//! time over the writer's, per run, the median of the runs; the bound is [`BOUND`], checked at the sizes `MATRIX_SIZES` names
//! (default `1024,4096,16384` with `--bench`).
//!
//! Run: `cargo bench --bench matrix_bound`, or the test-profile binary with `--bench` (release
//! dependencies are what count: `cargo test` builds them at opt-level 2), `MATRIX_DIR` reusing
//! trees `scaling-N/` written there, `RUNS` (default 3) runs per size, the median reported.
//! `cargo test --all-targets` runs it on 64 functions as a smoke test: the bytes must agree;
//! the ratio is printed, not checked, at that size.

use peerpath::analysis::classify::{Classifier, ClassifyOptions};
use peerpath::render::matrix;
use peerpath::sources::{LoadOptions, load};
use serde::Serialize;
use serde::ser::SerializeSeq;
use std::cell::Cell;
use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// CPU time of this thread (user and system): what the work itself cost, not the waits of a
/// machine shared with other builds (wall time is reported beside it).
fn cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration;
    // CLOCK_THREAD_CPUTIME_ID needs no other argument.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Command time over writer time allowed (the "at most twice").
const BOUND: f64 = 2.0;

/// Rows computed ahead per chunk: enough that taking the time per chunk costs nothing, few
/// enough that the chunk stays in cache-sized memory (about 4 MB).
const CHUNK: usize = 1 << 16;

/// A writer that hashes what passes through it and counts it, over another writer.
struct Hashing<W> {
    inner: W,
    hash: std::collections::hash_map::DefaultHasher,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(b)?;
        self.hash.write(&b[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn dev_null() -> Hashing<std::fs::File> {
    Hashing {
        inner: std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .expect("/dev/null opens"),
        hash: Default::default(),
        bytes: 0,
    }
}

/// The classifier's rows, computed [`CHUNK`] at a time before they are written; the time
/// spent computing is added to `computing`.
struct AheadRows<'a, 't> {
    cl: &'a Classifier<'t>,
    computing: &'a Cell<Duration>,
}

impl Serialize for AheadRows<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        let mut pairs = self.cl.summaries();
        let mut chunk: Vec<matrix::PairRow> = Vec::with_capacity(CHUNK);
        loop {
            let t0 = cpu_now();
            chunk.clear();
            chunk.extend(
                pairs
                    .by_ref()
                    .take(CHUNK)
                    .map(|(i, j, p)| matrix::pair_row(self.cl, i, j, &p)),
            );
            self.computing.set(self.computing.get() + (cpu_now() - t0));
            if chunk.is_empty() {
                break;
            }
            for row in &chunk {
                seq.serialize_element(row)?;
            }
        }
        seq.end()
    }
}

/// One measurement: (command CPU seconds, writer CPU seconds, command wall seconds, bytes).
fn measure(tree: &Path) -> (f64, f64, f64, u64) {
    let topo = load(
        Some(tree),
        &LoadOptions {
            skip_names: true,
            ..Default::default()
        },
    )
    .expect("tree loads");
    let opts = ClassifyOptions::default();

    // The command's way.
    let (t0, w0) = (cpu_now(), std::time::Instant::now());
    let cl = Classifier::new(&topo, &opts);
    let notes = cl.matrix_notes();
    let mut sink = dev_null();
    {
        let mut buf = std::io::BufWriter::with_capacity(1 << 16, &mut sink);
        matrix::write_json(&matrix::doc(&cl, &notes, false), &mut buf).expect("written");
        buf.flush().expect("flushed");
    }
    let command = (cpu_now() - t0).as_secs_f64();
    let wall = w0.elapsed().as_secs_f64();
    let (command_hash, command_bytes) = (sink.hash.finish(), sink.bytes);

    // The writer alone, the rows computed ahead.
    let computing = Cell::new(Duration::ZERO);
    let rows = AheadRows {
        cl: &cl,
        computing: &computing,
    };
    let mut sink = dev_null();
    let t0 = cpu_now();
    {
        let mut buf = std::io::BufWriter::with_capacity(1 << 16, &mut sink);
        matrix::write_json(&matrix::doc_with_rows(&cl, &notes, rows), &mut buf).expect("written");
        buf.flush().expect("flushed");
    }
    let writer = (cpu_now() - t0 - computing.get()).as_secs_f64();
    assert_eq!(
        (sink.hash.finish(), sink.bytes),
        (command_hash, command_bytes),
        "the rows computed ahead must write the command's bytes ({})",
        tree.display()
    );
    (command, writer, wall, command_bytes)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The tree `scaling-N`: under `MATRIX_DIR` when it is there, else written into `tmp`.
fn tree(n: usize, tmp: &Path) -> PathBuf {
    if let Ok(d) = std::env::var("MATRIX_DIR") {
        let p = Path::new(&d).join(format!("scaling-{n}"));
        if p.exists() {
            return p;
        }
    }
    let p = tmp.join(format!("scaling-{n}"));
    let ok = std::process::Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(["fixture", &format!("scaling-{n}"), "-o"])
        .arg(&p)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("peerpath fixture runs")
        .success();
    assert!(ok, "peerpath fixture scaling-{n}");
    p
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("MATRIX_SIZES") {
        Ok(s) => s
            .split(',')
            .map(|x| x.trim().parse().expect("MATRIX_SIZES: numbers"))
            .collect(),
        Err(_) if bench => vec![1024, 4096, 16384],
        Err(_) => vec![64],
    };
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(if bench { 3 } else { 1 });
    let tmp = tempfile::tempdir().expect("temporary directory");
    let mut over = Vec::new();
    println!("functions      command cpu s  writer cpu s  ratio  command wall s  bytes");
    for n in sizes {
        let t = tree(n, tmp.path());
        let (mut cmd, mut wr, mut walls, mut ratios) = (vec![], vec![], vec![], vec![]);
        let mut bytes = 0;
        for _ in 0..runs {
            let (c, w, wall, b) = measure(&t);
            cmd.push(c);
            wr.push(w);
            walls.push(wall);
            ratios.push(c / w);
            bytes = b;
        }
        // The ratio of each run (command and writer measured back to back), the median taken.
        let ratio = median(ratios);
        let (c, w, wall) = (median(cmd), median(wr), median(walls));
        println!("scaling-{n:<6} {c:14.3} {w:13.3} {ratio:6.2} {wall:15.3}  {bytes}");
        if bench && ratio > BOUND {
            over.push(format!("scaling-{n}: {ratio:.2}× > {BOUND}×"));
        }
    }
    assert!(over.is_empty(), "matrix over its bound: {over:?}");
}
