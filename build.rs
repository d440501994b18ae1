//! Build script: records the commit the binary is built from, for `peerpath --version` and the
//! man pages' date.
//!
//! `PEERPATH_COMMIT` is set for the compiler to "<12 hex digits of HEAD> <commit date>" when
//! the package root is the top of a git work tree and `git` runs; otherwise (a source tarball
//! without `.git`, a tree unpacked inside some other repository, no `git` on the build host)
//! it is "unknown commit" and `PEERPATH_COMMIT_DATE` is empty: never another repository's
//! commit, never a guess.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=build.rs");
    let (commit, date) = match head(&root) {
        Some((hash, date, watch)) => {
            for p in watch {
                println!("cargo:rerun-if-changed={}", p.display());
            }
            (format!("{hash} {date}"), date)
        }
        None => ("unknown commit".to_owned(), String::new()),
    };
    println!("cargo:rustc-env=PEERPATH_COMMIT={commit}");
    println!("cargo:rustc-env=PEERPATH_COMMIT_DATE={date}");
}

/// Runs `git ARGS` in `root`; its trimmed standard output when it succeeded.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_owned())
}

/// HEAD's abbreviated hash and commit date (YYYY-MM-DD), and the files whose change moves
/// HEAD (HEAD itself, the branch's loose ref or its folder, packed-refs); None unless `root`
/// is the top of its own git work tree.
fn head(root: &Path) -> Option<(String, String, Vec<PathBuf>)> {
    let top = PathBuf::from(git(root, &["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != root.canonicalize().ok()? {
        return None;
    }
    let line = git(root, &["log", "-1", "--format=%H %cs"])?;
    let (hash, date) = line.split_once(' ')?;
    if hash.len() < 12 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let path = |name: &str| git(root, &["rev-parse", "--git-path", name]).map(|p| root.join(p));
    let mut watch: Vec<PathBuf> = [path("HEAD"), path("packed-refs")]
        .into_iter()
        .flatten()
        .collect();
    if let Some(branch) = git(root, &["symbolic-ref", "-q", "HEAD"])
        && let Some(r) = path(&branch)
    {
        // A branch packed away has no loose file until its next commit: watch its folder.
        watch.push(match r.parent() {
            Some(dir) if !r.exists() => dir.to_path_buf(),
            _ => r,
        });
    }
    watch.retain(|p| p.exists());
    Some((hash[..12].to_owned(), date.to_owned(), watch))
}
