//! `peerpath report` from the command line: the format follows the file extension, the three
//! outputs are what they claim to be, probe evidence is embedded in the HTML, and bad input is a
//! clear error (exit 2), never a panic.

use peerpath::synth::{self, WriteOptions, layouts};
use std::path::Path;
use std::process::{Command, Output};

fn peerpath(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(args)
        .output()
        .expect("run peerpath")
}

fn fixture(dir: &Path) -> String {
    let p = dir.join("misplaced.tar.gz");
    synth::write_tarball(&layouts::misplaced_nic(), &p, &WriteOptions::default()).unwrap();
    p.display().to_string()
}

#[test]
fn writes_svg_png_and_html_by_extension() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture(dir.path());
    for ext in ["svg", "png", "html"] {
        let out = dir.path().join(format!("node.{ext}"));
        let o = peerpath(&["report", "-i", &input, "-o", out.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{ext}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let bytes = std::fs::read(&out).unwrap();
        match ext {
            "svg" => {
                let s = String::from_utf8(bytes).unwrap();
                assert!(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
                assert!(s.contains("data-ep=\"GPU3\""));
                // GPU3 shares the nearest NIC it can get (NODE): the one pairing.
                assert!(
                    s.contains("data-label=\"NODE\""),
                    "GPU3's rail pair is NODE"
                );
            }
            "png" => assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n"),
            _ => {
                let s = String::from_utf8(bytes).unwrap();
                assert!(s.starts_with("<!DOCTYPE html>"));
                assert!(s.contains("<select id=\"gpu-select\">"));
                assert!(s.contains("id=\"matrix\"") && s.contains("id=\"findings\""));
            }
        }
    }
    // --format overrides the extension.
    let out = dir.path().join("picture.out");
    let o = peerpath(&[
        "report",
        "-i",
        &input,
        "-o",
        out.to_str().unwrap(),
        "--format",
        "svg",
    ]);
    assert!(o.status.success());
    assert!(std::fs::read_to_string(&out).unwrap().starts_with("<svg"));
}

#[test]
fn probe_evidence_is_listed_in_the_html() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture(dir.path());
    let ev = dir.path().join("probe.json");
    std::fs::write(
        &ev,
        r#"{"schema":"peerpath.probe/2","fabric":"verbs","results":[{"gpu":{"bdf":"0000:4b:00.0","cuda":3},"nic":{"fabric":"verbs","rdma":"mlx5_3","port":1},"memory":"cuda","direction":"host_to_gpu","op":"write","message_bytes":1048576,"gbytes_per_s":3.25,"verified":true,"verdict":"bad_path","expected_label":"SYS","reason":"at 14% of the host baseline"}]}"#,
    )
    .unwrap();
    let out = dir.path().join("r.html");
    let o = peerpath(&[
        "report",
        "-i",
        &input,
        "-o",
        out.to_str().unwrap(),
        "--evidence",
        ev.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = std::fs::read_to_string(&out).unwrap();
    assert!(s.contains("id=\"probe\""));
    assert!(s.contains("<td>bad_path</td>") && s.contains("at 14% of the host baseline"));
    assert!(s.contains("<td>3.25</td>"));
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture(dir.path());
    let cases: [(&[&str], &str); 3] = [
        (&["-o", "node.jpeg"], "name it .svg, .png or .html"),
        (
            &["-o", "node.png", "--font", "/nonexistent.ttf"],
            "/nonexistent.ttf",
        ),
        (
            &["-o", "node.html", "--evidence", "/nonexistent.json"],
            "cannot read evidence",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["report", "-i", input.as_str()];
        all.extend_from_slice(args);
        let o = Command::new(env!("CARGO_BIN_EXE_peerpath"))
            .args(&all)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"schema":"other/1","results":[]}"#).unwrap();
    let o = peerpath(&[
        "report",
        "-i",
        &input,
        "-o",
        "/dev/null",
        "--format",
        "html",
        "--evidence",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("peerpath.probe/2"));
}

/// The HTML page carries every pair's class once, packed, and no per-box or per-cell copies:
/// from 68 to 272 functions it grows about as the scan's JSON does (before the packing it grew
/// 10.9× against the scan's 3.9×: 232 KB → 2.5 MB), and stays below twice that JSON.
#[test]
fn html_grows_with_the_scan_not_with_its_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let mut sizes = Vec::new();
    for n in [64, 256] {
        let input = dir.path().join(format!("s{n}.tar.gz"));
        synth::write_tarball(&layouts::scaling(n), &input, &WriteOptions::default()).unwrap();
        let input = input.to_str().unwrap();
        let page = dir.path().join(format!("s{n}.html"));
        let o = peerpath(&["report", "-i", input, "-o", page.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let scan = peerpath(&["scan", "-i", input, "--format", "json"]);
        assert!(scan.status.success());
        let html = std::fs::metadata(&page).unwrap().len() as f64;
        let json = scan.stdout.len() as f64;
        assert!(
            html <= 2.0 * json,
            "scaling-{n}: page {html} bytes, scan JSON {json}"
        );
        sizes.push((html, json));
    }
    let (page_growth, scan_growth) = (sizes[1].0 / sizes[0].0, sizes[1].1 / sizes[0].1);
    assert!(
        page_growth <= 1.5 * scan_growth,
        "page grew {page_growth:.1}x, scan JSON {scan_growth:.1}x"
    );
}
