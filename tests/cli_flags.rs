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
