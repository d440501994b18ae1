//! Every case of the hostile corpus (`peerpath::synth::hostile::corpus`) through the commands
//! users run, as a directory and as a snapshot tarball: nothing outside the root is read (the
//! canary files the links point at never reach any output or capture), nothing hangs (each run
//! has a deadline), nothing aborts (no signal, no panic; exit 0/1 or a clear error with exit 2),
//! and no escape sequence from the input reaches a text output.

mod common;

use peerpath::synth::hostile::{self, Case};
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The canaries behind the corpus's `OUTSIDE` links.
const CANARIES: [&str; 3] = [
    "CANARY-ENVIRON-5d1e",
    "CANARY-PASSWD-5d1e",
    "CANARY-SYSBUS-5d1e",
];

/// A directory outside every root, filled with the files the corpus links point at.
fn outside(dir: &Path) -> std::path::PathBuf {
    let o = dir.join("outside");
    std::fs::create_dir_all(o.join("sysbus/pci/devices")).unwrap();
    std::fs::write(o.join("environ"), format!("SECRET={}\n", CANARIES[0])).unwrap();
    std::fs::write(
        o.join("passwd"),
        format!("root:x:0:0:{}:/root\n", CANARIES[1]),
    )
    .unwrap();
    std::fs::write(o.join("sysbus/pci/devices/uevent"), CANARIES[2]).unwrap();
    std::fs::write(o.join("sysbus/CANARY-SYSBUS-5d1e"), CANARIES[2]).unwrap();
    o
}

/// One run: its exit code, standard output and standard error. Fails the test on a hang (the
/// child is killed at the deadline) or a death by signal.
fn run(case: &str, args: &[&str]) -> (i32, Vec<u8>, String) {
    let mut child = common::peerpath()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain both pipes on threads so a large output never blocks the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{case}: `peerpath {}` hung (killed after 120 s)",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = t_out.join().unwrap();
    let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).into_owned();
    let code = status.code().unwrap_or_else(|| {
        panic!(
            "{case}: `peerpath {}` died by a signal: {status:?}\n{stderr}",
            args.join(" ")
        )
    });
    assert!(
        !stderr.contains("panicked"),
        "{case}: `peerpath {}` panicked:\n{stderr}",
        args.join(" ")
    );
    assert!(
        matches!(code, 0..=2),
        "{case}: `peerpath {}` exit {code}:\n{stderr}",
        args.join(" ")
    );
    (code, stdout, stderr)
}

fn assert_no_canary(case: &str, what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for c in CANARIES {
        assert!(
            !text.contains(c),
            "{case}: {what} holds {c}: a file outside the root was read"
        );
    }
}

/// Decompressed bytes of a capture (tar.gz).
fn gunzip(path: &Path) -> Vec<u8> {
    let f = std::fs::File::open(path).unwrap();
    let mut v = Vec::new();
    flate2::read::GzDecoder::new(f).read_to_end(&mut v).unwrap();
    v
}

fn check_case(tmp: &Path, outside_dir: &Path, c: &Case) {
    let entries = hostile::build(c.layout, &hostile::with_outside(&c.attacks, outside_dir))
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let tarball = tmp.join(format!("{}.tar.gz", c.name));
    let mut f = std::fs::File::create(&tarball).unwrap();
    hostile::write_tar_gz(&entries, "node", &mut f).unwrap();
    drop(f);
    let name = c.name;
    let mut inputs = vec![tarball.to_str().unwrap().to_string()];
    // A tree deeper than PATH_MAX exists only as a tarball: a directory cannot hold it.
    let root = tmp.join(format!("root-{name}"));
    let have_dir = match hostile::write_dir(&entries, &root) {
        Ok(()) => true,
        Err(e) if e.raw_os_error() == Some(36) => false, // ENAMETOOLONG
        Err(e) => panic!("{name}: {e}"),
    };
    if have_dir {
        inputs.insert(0, root.to_str().unwrap().to_string());
    }
    for input in &inputs {
        let i = input.as_str();
        // Text outputs: no escape character from the input reaches them.
        for args in [
            vec!["scan", "-i", i],
            vec!["matrix", "-i", i],
            vec!["audit", "-i", i],
        ] {
            let (code, out, err) = run(name, &args);
            assert_no_canary(name, &format!("`{}` output", args.join(" ")), &out);
            assert_no_canary(
                name,
                &format!("`{}` stderr", args.join(" ")),
                err.as_bytes(),
            );
            if code != 2 {
                assert!(
                    !out.contains(&0x1b),
                    "{name}: `{}` printed a raw escape character",
                    args.join(" ")
                );
            }
            assert!(
                !err.contains('\u{1b}'),
                "{name}: `{}` printed a raw escape character on stderr",
                args.join(" ")
            );
        }
        // Machine-readable outputs.
        for args in [
            vec!["scan", "-i", i, "--format", "json"],
            vec![
                "export", "-i", i, "--format", "nccl-xml", "--arch", "x86_64",
            ],
        ] {
            let (_, out, err) = run(name, &args);
            assert_no_canary(name, &format!("`{}` output", args.join(" ")), &out);
            assert_no_canary(
                name,
                &format!("`{}` stderr", args.join(" ")),
                err.as_bytes(),
            );
        }
    }
    // A capture of the tree archives nothing from outside it.
    if have_dir {
        let capture = tmp.join(format!("{name}-capture.tar.gz"));
        let args = [
            "capture",
            "-i",
            inputs[0].as_str(),
            "-o",
            capture.to_str().unwrap(),
        ];
        let (_, _, err) = run(name, &args);
        assert_no_canary(name, "`capture` stderr", err.as_bytes());
        if capture.exists() {
            assert_no_canary(name, "the capture", &gunzip(&capture));
        }
    }
}

#[test]
fn every_hostile_case_stays_inside_its_root_and_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let outside_dir = outside(tmp.path());
    let corpus = hostile::corpus();
    assert!(corpus.len() >= 9);
    common::par_each(&corpus, |c| check_case(tmp.path(), &outside_dir, c));
}

/// The test can fail: the canary is found when the same file is given as the input itself.
#[test]
fn a_canary_named_as_input_does_reach_the_output() {
    let tmp = tempfile::tempdir().unwrap();
    let outside_dir = outside(tmp.path());
    let entries = hostile::build("hgx-h100", &[]).unwrap();
    let root = tmp.path().join("root");
    hostile::write_dir(&entries, &root).unwrap();
    // A cmdline inside the root carrying the canary is read, as it should be.
    std::fs::copy(outside_dir.join("environ"), root.join("proc/cmdline")).unwrap();
    let (_, out, _) = run(
        "control",
        &["scan", "-i", root.to_str().unwrap(), "--format", "json"],
    );
    assert!(
        String::from_utf8_lossy(&out).contains(CANARIES[0]),
        "the scan JSON should carry proc/cmdline"
    );
}
