//! A short smoke of every fuzz target (the long runs are `benches/fuzz.rs` and `cargo fuzz`):
//! the committed seed corpus plus seeded mutations of it must not panic.

use peerpath::fuzzing::{TARGETS, run_mutations};

fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(name);
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .map(|r| {
            r.filter_map(|e| std::fs::read(e.ok()?.path()).ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn every_target_has_a_seed_corpus() {
    for t in TARGETS {
        assert!(
            !corpus(t.name).is_empty(),
            "fuzz/corpus/{} is empty",
            t.name
        );
    }
}

#[test]
fn smoke_every_target() {
    for t in TARGETS {
        let execs = match t.name {
            "snapshot" | "json" | "evidence" => 300,
            "hwloc_xml" | "nccl_xml" | "cufile" => 3_000,
            "fabric_map" => 2_000,
            // Each reads a support archive (or a bug report) of up to ~14 KiB into a topology
            // and audits it: ~2 ms an execution in a debug build.
            "lspci_text" | "sosreport" | "bug_report" => 1_000,
            _ => 20_000,
        };
        let s = run_mutations(t.run, &corpus(t.name), execs, 0x9e37_79b9_7f4a_7c15);
        assert_eq!(s.execs, execs);
        assert_eq!(s.crashes, 0, "{}: crashed on {:?}", t.name, s.first_crash);
    }
}

#[test]
fn the_harness_catches_a_panicking_target() {
    fn bad(d: &[u8]) {
        if d.len() > 3 && d[0] == b'X' {
            panic!("planted");
        }
    }
    let s = run_mutations(bad, &[b"Xabcd".to_vec()], 10, 1);
    assert!(s.crashes > 0);
}
