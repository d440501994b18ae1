//! All-pairs classification of a 512-endpoint synthetic topology built in code (issue [classify]:
//! target ≤ 50 ms). Layout: 2 NUMA nodes × 8 host bridges; each root port holds a top switch
//! with 4 leaf switches of 4 GPUs and 4 NICs (32 endpoints per host bridge, 256 GPUs and 256
//! NICs); every GPU on the NVSwitch fabric.
//!
//! Run: `cargo bench --bench classify`. `summary_all` is the classification (label, NCCL
//! path/GDR/P2P/PXN, bottleneck) of every pair without allocation per pair; `classify_all`
//! adds the words and the hop list of every pair (what `matrix --format json` prints). These are
//! the analysis alone, in process; `benches/commands.rs` times the commands themselves, end to end.

use criterion::{Criterion, criterion_group, criterion_main};
use peerpath::analysis::classify::{Classifier, ClassifyOptions, classify_all};
use peerpath::analysis::testkit::TopoBuilder;
use peerpath::model::Topology;
use std::hint::black_box;

/// `host_bridges` × 32 endpoints.
fn topology(host_bridges: u32) -> Topology {
    let mut t = TopoBuilder::new(&["0-31", "32-63"]).cpu("GenuineIntel", 6, 143);
    let mut nic = 0;
    for hb in 0..host_bridges {
        let numa = Some(hb * 2 / host_bridges);
        let root = hb * 0x10;
        let rp = format!("0000:{root:02x}:01.0");
        t.bridge(&rp, None, numa);
        let a = |off: u32, dev: u32, f: u32| format!("0000:{:02x}:{dev:02x}.{f}", root + off);
        let top_dsps: Vec<String> = (0..4).map(|d| a(2, d, 0)).collect();
        let refs: Vec<&str> = top_dsps.iter().map(|s| s.as_str()).collect();
        t.switch(&rp, &a(1, 0, 0), &refs, numa);
        for leaf in 0..4u32 {
            let up = a(3 + leaf * 3, 0, 0);
            let dsps: Vec<String> = (0..8).map(|d| a(4 + leaf * 3, d, 0)).collect();
            let refs: Vec<&str> = dsps.iter().map(|s| s.as_str()).collect();
            t.switch(&top_dsps[leaf as usize], &up, &refs, numa);
            for d in 0..8u32 {
                // Endpoints on bus 5 + leaf*3, one device number per downstream port.
                let ep = a(5 + leaf * 3, d, 0);
                if d < 4 {
                    t.gpu(&ep, Some(&dsps[d as usize]), numa);
                    t.nvlink(&ep, None, 18, Some(4));
                } else {
                    let name = format!("mlx5_{nic}");
                    nic += 1;
                    t.nic(&ep, Some(&dsps[d as usize]), numa, &[&name]);
                }
            }
        }
    }
    t.build()
}

fn bench(c: &mut Criterion) {
    // `cargo test --all-targets` runs each benchmark once without `--bench`: use a 64-endpoint
    // tree there so the smoke run stays quick in a debug build.
    let full = std::env::args().any(|a| a == "--bench");
    let host_bridges = if full { 16 } else { 2 };
    let t = topology(host_bridges);
    let opts = ClassifyOptions::default();
    let cl = Classifier::new(&t, &opts);
    assert_eq!(cl.endpoints().len(), 32 * host_bridges as usize);
    c.bench_function("classify/prepare_512", |b| {
        b.iter(|| black_box(Classifier::new(&t, &opts)))
    });
    c.bench_function("classify/label_table_512", |b| {
        b.iter(|| black_box(cl.label_table()))
    });
    c.bench_function("classify/summary_all_512", |b| {
        b.iter(|| black_box(cl.summary_all()))
    });
    c.bench_function("classify/prepare_and_summary_all_512", |b| {
        b.iter(|| black_box(Classifier::new(&t, &opts).summary_all()))
    });
    let mut g = c.benchmark_group("classify_slow");
    g.sample_size(10);
    g.bench_function("classify_all_512", |b| {
        b.iter(|| black_box(classify_all(&t, &opts)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
