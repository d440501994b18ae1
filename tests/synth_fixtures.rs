//! The committed `fixtures/synth/*.tar.gz` must be what the code generates today: each is
//! regenerated in a temp dir and compared entry by entry, and both scan identically. On a
//! failure, regenerate with `peerpath fixture LAYOUT -o fixtures/synth/LAYOUT.tar.gz`.

use peerpath::model::topology::SourceInfo;
use peerpath::sources::fsroot::{MemNode, MemRoot};
use peerpath::sources::sysfs::{self, ScanOptions};
use peerpath::synth::{self, WriteOptions, layouts};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const COMMITTED: [&str; 4] = ["hgx-h100", "dgx-a100", "misplaced-nic", "vm-flat"];

fn entries(root: &MemRoot) -> BTreeMap<PathBuf, String> {
    root.paths()
        .map(|(p, n)| {
            let v = match n {
                MemNode::Dir => "dir".to_string(),
                MemNode::File(b) => format!("file {:?}", b),
                MemNode::Symlink(t) => format!("link {}", t.display()),
            };
            (p.to_path_buf(), v)
        })
        .collect()
}

fn scan_json(root: &MemRoot) -> serde_json::Value {
    let src = SourceInfo {
        kind: "snapshot".into(),
        path: String::new(),
        limitations: vec![],
    };
    serde_json::to_value(sysfs::scan(root, src, &ScanOptions::default()).unwrap()).unwrap()
}

#[test]
fn committed_fixtures_are_current() {
    let dir = tempfile::tempdir().unwrap();
    for name in COMMITTED {
        let committed = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/synth")
            .join(format!("{name}.tar.gz"));
        let bytes =
            std::fs::read(&committed).unwrap_or_else(|e| panic!("{}: {e}", committed.display()));
        assert!(
            bytes.len() < 256 * 1024,
            "{name}: {} bytes; fixtures must stay small",
            bytes.len()
        );
        let fresh = dir.path().join(format!("{name}.tar.gz"));
        let spec = layouts::by_name(name).unwrap();
        synth::write_tarball(&spec, &fresh, &WriteOptions::default()).unwrap();
        let old = MemRoot::from_tar_bytes(name, &bytes).unwrap();
        let new = MemRoot::from_tar_bytes(name, &std::fs::read(&fresh).unwrap()).unwrap();
        let (eo, en) = (entries(&old), entries(&new));
        let changed: Vec<&PathBuf> = eo
            .keys()
            .chain(en.keys())
            .filter(|p| eo.get(*p) != en.get(*p))
            .take(5)
            .collect();
        assert!(
            changed.is_empty(),
            "fixtures/synth/{name}.tar.gz is stale (first differences: {changed:?}); regenerate with \
             `cargo run -- fixture {name} -o fixtures/synth/{name}.tar.gz`"
        );
        assert!(
            scan_json(&old) == scan_json(&new),
            "{name}: committed and regenerated trees scan differently"
        );
    }
}

#[test]
fn committed_fixtures_load_through_the_cli_path() {
    // `peerpath scan -i fixtures/synth/X.tar.gz` goes through sources::load (tarball detection).
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/synth/hgx-h100.tar.gz");
    let t = peerpath::sources::load(Some(&p), &Default::default()).unwrap();
    assert_eq!(t.source.kind, "snapshot");
    assert_eq!(t.switches.len(), 8);
    assert_eq!(
        t.devices
            .iter()
            .filter(|d| d.rdma_names().next().is_some())
            .count(),
        8
    );
}
