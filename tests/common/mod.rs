//! Shared test support: fixture extraction and running the peer tools (lspci, lstopo).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Root of the repository.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The hwloc sysfs tarballs committed under fixtures/hwloc.
pub fn hwloc_tarballs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("fixtures/hwloc"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tar.bz2"))
        .collect();
    v.sort();
    v
}

/// Extracts a tarball into a fresh temp dir and returns (guard, root) where root holds `sys/`.
pub fn extract(tarball: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(tarball).unwrap();
    let reader: Box<dyn std::io::Read> = if bytes.starts_with(b"BZh") {
        Box::new(bzip2::read::BzDecoder::new(&bytes[..]))
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(&bytes[..]))
    } else {
        Box::new(&bytes[..])
    };
    tar::Archive::new(reader).unpack(dir.path()).unwrap();
    let root = if dir.path().join("sys").is_dir() {
        dir.path().to_path_buf()
    } else {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.join("sys").is_dir())
            .expect("no sys/ in tarball")
    };
    (dir, root)
}

/// Extracts a tarball once per build directory (under `CARGO_TARGET_TMPDIR`) and returns the
/// root holding `sys/`. Safe across parallel tests: extraction goes to a private directory that
/// is renamed into place.
pub fn extracted(tarball: &Path) -> PathBuf {
    let name = tarball.file_name().unwrap().to_string_lossy().into_owned();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
    let dest = base.join(&name);
    let stamp = dest.join(".complete");
    if !stamp.exists() {
        std::fs::create_dir_all(&base).unwrap();
        let (tmp, _) = extract(tarball);
        std::fs::write(tmp.path().join(".complete"), b"").unwrap();
        let tmp = tmp.keep();
        if std::fs::rename(&tmp, &dest).is_err() {
            let _ = std::fs::remove_dir_all(&tmp); // another test got there first
        }
    }
    if dest.join("sys").is_dir() {
        dest
    } else {
        std::fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.join("sys").is_dir())
            .expect("no sys/ in tarball")
    }
}

/// Runs a peer tool; `None` (with a note) if it is not installed and we are not in CI.
pub fn tool(cmd: &str, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    let mut c = Command::new(cmd);
    c.args(args).env("LANG", "C").env("LC_ALL", "C");
    for (k, v) in env {
        c.env(k, v);
    }
    match c.output() {
        Ok(o) => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Err(e) => {
            if std::env::var_os("CI").is_some() {
                panic!("{cmd} is required in CI (installed by .ci/run): {e}");
            }
            eprintln!("note: {cmd} not installed ({e}); cross-check skipped");
            None
        }
    }
}

/// The peerpath binary built for this test run.
pub fn peerpath() -> Command {
    Command::new(env!("CARGO_BIN_EXE_peerpath"))
}

/// kubernetes-validate (PyPI; the Kubernetes OpenAPI schemas), or `None` (skipped outside CI;
/// `.ci/run` installs it in target/ci-venv and puts that on PATH).
pub fn validator() -> Option<PathBuf> {
    let p = std::env::var_os("KUBERNETES_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("kubernetes-validate"));
    match Command::new(&p).arg("--version").output() {
        Ok(o) if o.status.success() => Some(p),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "kubernetes-validate missing under CI: .ci/run installs it from PyPI"
            );
            eprintln!(
                "SKIPPED schema check: kubernetes-validate not installed (pip install kubernetes-validate)"
            );
            None
        }
    }
}

/// `kubernetes-validate --strict -k VERSION FILES…`; returns (success, output).
pub fn validate(v: &Path, version: &str, files: &[PathBuf]) -> (bool, String) {
    let o = Command::new(v)
        .args(["--strict", "--no-warn", "-k", version])
        .args(files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success() && !text.contains("ERROR"), text)
}

/// A Python 3 with the `jsonschema` and `yaml` packages (the CI venv's, which kubernetes-validate
/// brings in), or `None` (skipped outside CI).
pub fn python_with_jsonschema() -> Option<PathBuf> {
    let beside = validator().and_then(|v| {
        let found = if v.components().count() > 1 {
            Some(v)
        } else {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("kubernetes-validate"))
                    .find(|c| c.is_file())
            })
        };
        found.and_then(|v| v.parent().map(|d| d.join("python3")))
    });
    for py in beside.into_iter().chain([PathBuf::from("python3")]) {
        let ok = Command::new(&py)
            .args(["-c", "import jsonschema, yaml"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(py);
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "python3 with jsonschema missing under CI: .ci/run installs kubernetes-validate, which brings it"
    );
    eprintln!("SKIPPED schema check: no python3 with the jsonschema and yaml packages");
    None
}

/// A plain tar holding one entry, `../escape.txt`, that climbs out of the root: what a corrupt
/// or hostile snapshot looks like (readers must refuse it, naming the entry).
pub fn escaping_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    h.set_entry_type(tar::EntryType::Regular);
    h.as_gnu_mut().unwrap().name[..13].copy_from_slice(b"../escape.txt");
    h.set_cksum();
    b.append(&h, &b"x"[..]).unwrap();
    b.into_inner().unwrap()
}
