//! Flags spelled the same in every command (issue 28), through the binary: `capture` reads its
//! input with `-i`/`--input` like every other command, and the names it had before, `-r` and
//! `--root`, still work (hidden) for existing scripts. The rule over the whole command tree is
//! the unit test in src/cli/flags.rs.

mod common;

#[test]
fn capture_takes_dash_i_and_still_takes_dash_r_and_root() {
    let src = common::repo().join("fixtures/synth/hgx-h100.tar.gz");
    let src = src.to_str().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut snapshots = Vec::new();
    for (n, flag) in ["-i", "--input", "-r", "--root"].into_iter().enumerate() {
        let o = out.path().join(format!("{n}.tar.gz"));
        let res = common::peerpath()
            .args(["capture", flag, src, "-o", o.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            res.status.success(),
            "capture {flag}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
        snapshots.push((flag, std::fs::read(&o).unwrap()));
    }
    // The same source gives the same bytes (entries are written in order with mtime 0).
    for (flag, bytes) in &snapshots[1..] {
        assert!(
            *bytes == snapshots[0].1,
            "capture {flag} wrote another snapshot than capture -i"
        );
    }
}

/// Runs the binary; (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let o = common::peerpath().args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn matrix_refuses_detail_with_a_table_format_instead_of_ignoring_it() {
    let src = common::repo().join("fixtures/synth/hgx-h100.tar.gz");
    let src = src.to_str().unwrap();
    for format in ["table", "rocm-smi"] {
        let (rc, out, err) = run(&["matrix", "-i", src, "--format", format, "--detail"]);
        assert_eq!(rc, 2, "matrix --format {format} --detail: {out}");
        assert!(
            err.contains("--detail") && err.contains("--format json"),
            "{err}"
        );
    }
    let (rc, out, _) = run(&["matrix", "-i", src, "--format", "json", "--detail"]);
    assert_eq!(rc, 0);
    assert!(
        out.contains("\"reason\""),
        "--detail adds each pair's words"
    );
}

#[test]
fn explain_json_is_one_flag_format_json_with_the_old_spelling_hidden() {
    let src = common::repo().join("fixtures/synth/hgx-h100.tar.gz");
    let src = src.to_str().unwrap();
    let (rc, format_json, _) = run(&["explain", "GPU0", "NIC0", "-i", src, "--format", "json"]);
    assert_eq!(rc, 0);
    // `--json`, the spelling scripts used, still gives the same document…
    let (rc, json, _) = run(&["explain", "GPU0", "NIC0", "-i", src, "--json"]);
    assert_eq!(rc, 0);
    assert_eq!(json, format_json);
    // … is no longer offered beside --format …
    let (_, help, _) = run(&["explain", "--help"]);
    assert!(
        help.contains("--format") && !help.contains("--json"),
        "{help}"
    );
    // … and cannot contradict it.
    let (rc, _, err) = run(&[
        "explain", "GPU0", "NIC0", "-i", src, "--json", "--format", "text",
    ]);
    assert_eq!(rc, 2, "{err}");
}
