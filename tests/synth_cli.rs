//! `peerpath fixture` end to end: list, write a tarball with faults, read it back with
//! `peerpath scan`, round-trip a spec file, and fail cleanly on bad input.

use std::process::Command;

fn peerpath(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn list_names_every_layout() {
    let o = peerpath(&["fixture", "--list"]);
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    for n in [
        "hgx-h100",
        "dgx-a100",
        "vm-flat",
        "virtio-vm",
        "misplaced-nic",
        "scaling-",
        "many-vfs-",
    ] {
        assert!(s.contains(n), "{n} missing from\n{s}");
    }
}

#[test]
fn tarball_with_faults_scans_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hgx.tar.gz");
    let o = peerpath(&[
        "fixture",
        "hgx-h100",
        "-o",
        out.to_str().unwrap(),
        "--unprivileged",
        "--fault",
        "link-width=0000:18:00.0,8",
        "--fault",
        "no-peermem",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = peerpath(&["scan", "-i", out.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let t: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let gpu = t["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["bdf"] == "0000:18:00.0")
        .unwrap();
    assert_eq!(gpu["link"]["current_width"], 8);
    assert_eq!(gpu["link"]["max_width"], 16);
    assert_eq!(gpu["config"]["len"], 64);
    assert!(t["machine"]["nvidia_peermem_version"].is_null());
    assert_eq!(t["switches"].as_array().unwrap().len(), 8);
    assert!(
        t["switches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["evidence"] == "tree")
    );
}

#[test]
fn spec_file_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let o = peerpath(&["fixture", "vm-flat", "--print-spec"]);
    assert!(o.status.success(), "{}", text(&o));
    let spec = dir.path().join("vm.toml");
    std::fs::write(&spec, &o.stdout).unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    assert!(
        peerpath(&["fixture", "vm-flat", "-o", a.to_str().unwrap()])
            .status
            .success()
    );
    let o = peerpath(&["fixture", spec.to_str().unwrap(), "-o", b.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let scan = |p: &std::path::Path| {
        let o = peerpath(&["scan", "-i", p.to_str().unwrap(), "--format", "json"]);
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v.as_object_mut().unwrap().remove("source");
        v
    };
    assert!(
        scan(&a) == scan(&b),
        "a spec file written by --print-spec gives the same tree"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let o = peerpath(&["fixture", "no-such-layout", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("unknown layout"), "{}", text(&o));
    let o = peerpath(&[
        "fixture",
        "hgx-h100",
        "-o",
        out.to_str().unwrap(),
        "--fault",
        "acs-redirect=0000:18:00.0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("root ports and switch downstream ports"),
        "{}",
        text(&o)
    );
    let o = peerpath(&[
        "fixture",
        "hgx-h100",
        "-o",
        out.to_str().unwrap(),
        "--fault",
        "aer=0000:19:00.0,x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
}
