//! The done-when sweep of issue 51 for operator texts: `peerpath audit -i` on every file of
//! fixtures/bundles/ (copied from shared/reference/bundles/ with sources in its README) gives
//! exactly the errors and warnings the file's by-hand reading supports, written first in
//! `tests/data/bundles/expected.toml`, and its verdict.

use peerpath::analysis::audit::{self, AuditOptions, Severity};
use peerpath::sources::{self, LoadOptions};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
struct Expected {
    file: Vec<Reading>,
}

#[derive(Deserialize)]
struct Reading {
    input: String,
    #[allow(dead_code)]
    reading: String,
    verdict: String,
    errors: Vec<String>,
    warnings: Vec<String>,
    must_not: Vec<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_bundle_gets_only_what_its_reading_supports() {
    let text = std::fs::read_to_string(root().join("tests/data/bundles/expected.toml")).unwrap();
    let e: Expected = toml::from_str(&text).unwrap();
    // Every data file of the folder has its reading.
    let listed: BTreeSet<&str> = e
        .file
        .iter()
        .map(|f| f.input.trim_start_matches("fixtures/bundles/"))
        .collect();
    for entry in std::fs::read_dir(root().join("fixtures/bundles")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name == "README.md" || name == "cases.json" {
            continue;
        }
        assert!(
            listed.contains(name.as_str()),
            "{name} has no by-hand reading"
        );
    }
    let opts = LoadOptions {
        pci_ids: Some(PathBuf::from("/nonexistent/pci.ids")),
        ..LoadOptions::default()
    };
    let mut failures = Vec::new();
    for f in &e.file {
        let loaded = sources::load(Some(Path::new(&root().join(&f.input))), &opts);
        let t = match (loaded, f.verdict.as_str()) {
            (Err(_), "refused") => continue,
            (Err(err), _) => {
                failures.push(format!(
                    "{}: refused ({err:#}), expected {}",
                    f.input, f.verdict
                ));
                continue;
            }
            (Ok(_), "refused") => {
                failures.push(format!("{}: read, expected refused", f.input));
                continue;
            }
            (Ok(t), _) => t,
        };
        let r = audit::run(&t, &AuditOptions::default());
        let said = |sev: Severity| -> BTreeSet<String> {
            r.findings
                .iter()
                .filter(|x| x.severity == sev)
                .map(|x| format!("{} {}", x.id, x.subject))
                .collect()
        };
        if r.verdict != f.verdict {
            failures.push(format!(
                "{}: verdict {}, expected {}",
                f.input, r.verdict, f.verdict
            ));
        }
        for (sev, want) in [
            (Severity::Error, &f.errors),
            (Severity::Warning, &f.warnings),
        ] {
            let want: BTreeSet<String> = want.iter().cloned().collect();
            let got = said(sev);
            if got != want {
                failures.push(format!(
                    "{}: {} not in the reading: {:?}; in the reading but not said: {:?}",
                    f.input,
                    sev.as_str(),
                    got.difference(&want).collect::<Vec<_>>(),
                    want.difference(&got).collect::<Vec<_>>()
                ));
            }
        }
        for w in &f.must_not {
            if let Some(x) = r.findings.iter().find(|x| x.summary.contains(w.as_str())) {
                failures.push(format!("{}: says {w:?}: {}", f.input, x.summary));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
