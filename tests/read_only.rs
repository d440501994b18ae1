//! peerpath never writes under sysfs or procfs: every read-only command runs over a copy of a
//! fixture, and the tree (paths, contents, link targets, modification times) is unchanged.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

fn fingerprint(root: &Path) -> BTreeMap<String, (Vec<u8>, Option<std::time::SystemTime>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let key = p.strip_prefix(root).unwrap().display().to_string();
            let body = if m.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .display()
                    .to_string()
                    .into_bytes()
            } else if m.is_dir() {
                stack.push(p.clone());
                Vec::new()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.insert(key, (body, m.modified().ok()));
        }
    }
    out
}

#[test]
fn no_command_writes_under_the_root() {
    let src = common::repo().join("fixtures/synth/hgx-h100.tar.gz");
    let (_g, root) = common::extract(&src);
    let before = fingerprint(&root);
    let out = tempfile::tempdir().unwrap();
    let o = |f: &str| out.path().join(f).display().to_string();
    let r = root.display().to_string();
    let runs: Vec<Vec<String>> = vec![
        vec!["scan".into()],
        vec!["scan".into(), "--format".into(), "json".into()],
        vec!["matrix".into()],
        vec!["explain".into(), "GPU0".into(), "NIC0".into()],
        vec!["audit".into()],
        vec!["place".into(), "--ranks".into(), "4".into()],
        vec!["rails".into()],
        vec!["export".into(), "--format".into(), "prom".into()],
        vec!["export".into(), "--format".into(), "nccl-xml".into()],
        vec!["report".into(), "-o".into(), o("node.svg")],
        vec!["capture".into(), "-o".into(), o("snap.tar.gz")],
    ];
    for args in runs {
        let mut c = common::peerpath();
        c.args(&args);
        c.args(["-i", &r]);
        let res = c.output().unwrap();
        assert!(
            matches!(res.status.code(), Some(0) | Some(1)),
            "{args:?}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
    }
    assert_eq!(
        before,
        fingerprint(&root),
        "a command changed the fixture tree"
    );
}
