//! Compares every struct size, field offset and constant the probe carries for libibverbs and
//! libfabric (`peerpath::probe::fabric::layout::all_entries`) with the real headers: a C
//! program printing each expression is generated, compiled with `cc` against
//! `<infiniband/verbs.h>` and `<rdma/fi_*.h>` (Debian's libibverbs-dev and libfabric-dev,
//! installed by .ci/run), run, and its output compared value by value.

use peerpath::probe::fabric::layout::all_entries;
use std::collections::BTreeMap;
use std::process::Command;

const HEADERS: &[&str] = &[
    "stddef.h",
    "stdio.h",
    "sys/uio.h",
    "netinet/in.h",
    "infiniband/verbs.h",
    "rdma/fabric.h",
    "rdma/fi_domain.h",
    "rdma/fi_endpoint.h",
    "rdma/fi_eq.h",
    "rdma/fi_cm.h",
    "rdma/fi_rma.h",
    "rdma/fi_errno.h",
];

#[test]
fn carried_layouts_match_the_system_headers() {
    let entries = all_entries();
    assert!(
        entries.len() > 300,
        "layout table unexpectedly small: {}",
        entries.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let mut c = String::new();
    for h in HEADERS {
        c.push_str(&format!("#include <{h}>\n"));
    }
    c.push_str("int main(void) {\n");
    for (i, e) in entries.iter().enumerate() {
        c.push_str(&format!(
            "  printf(\"{i} %llu\\n\", (unsigned long long)({}));\n",
            e.expr
        ));
    }
    c.push_str("  return 0;\n}\n");
    let src = dir.path().join("layout.c");
    let exe = dir.path().join("layout");
    std::fs::write(&src, &c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("could not run {cc}: {e}"));
    assert!(
        out.status.success(),
        "compiling the layout check failed (are libibverbs-dev and libfabric-dev installed? .ci/run installs them):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    let got: BTreeMap<usize, u64> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (i, v) = l.split_once(' ').unwrap();
            (i.parse().unwrap(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(got.len(), entries.len());
    let bad: Vec<String> = entries
        .iter()
        .enumerate()
        .filter(|(i, e)| got[i] != e.value)
        .map(|(i, e)| format!("{}: C says {}, Rust says {}", e.expr, got[&i], e.value))
        .collect();
    println!(
        "{} layout entries checked against the headers",
        entries.len()
    );
    assert!(
        bad.is_empty(),
        "{} of {} layout entries differ:\n{}",
        bad.len(),
        entries.len(),
        bad.join("\n")
    );
}

#[test]
fn every_declared_struct_is_in_the_table() {
    // Each `c_struct!` declaration must contribute its sizeof entry; a struct declared in the
    // sys modules but left out of `layout_entries()` would escape the check above.
    let src = [
        include_str!("../src/probe/fabric/ofi_sys.rs"),
        include_str!("../src/probe/fabric/verbs_sys.rs"),
    ];
    let declared: Vec<String> = src
        .iter()
        .flat_map(|s| s.lines())
        .filter_map(|l| {
            l.trim()
                .split_once("\" => pub struct ")
                .map(|(c, _)| c.trim_start_matches('"').to_string())
        })
        .collect();
    assert!(
        declared.len() >= 45,
        "found only {} c_struct! declarations",
        declared.len()
    );
    let entries = all_entries();
    for c in &declared {
        let want = format!("sizeof({c})");
        assert!(
            entries.iter().any(|e| e.expr == want),
            "{c} is declared but not checked"
        );
    }
}
