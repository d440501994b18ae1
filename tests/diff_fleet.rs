//! `peerpath diff` on every synthesized fault against its clean twin (the diff names exactly the
//! planted change), and `peerpath fleet` over 200 captured nodes with renumbered buses and three
//! faulty variants (exactly those three are the outliers).

mod common;

use peerpath::analysis::diff::{self, Diff, NodeView};
use peerpath::analysis::fleet::{self, Fleet};
use peerpath::capture::{self, CaptureOptions};
use peerpath::model::{Bdf, SourceInfo, Topology};
use peerpath::sources::fsroot::{MemNode, MemRoot};
use peerpath::sources::sysfs::{self, ScanOptions};
use peerpath::synth::{Entry, Spec, WriteOptions, build_entries, layouts};
use std::collections::BTreeSet;

/// The spec's tree in memory, as a sysfs root.
fn mem_root(spec: &Spec) -> MemRoot {
    let mut m = MemRoot::new(spec.name.clone());
    for (p, e) in build_entries(spec, &WriteOptions::default()).unwrap() {
        let n = match e {
            Entry::Dir => MemNode::Dir,
            Entry::File(b) => MemNode::File(b),
            Entry::Link(t) => MemNode::Symlink(t.into()),
        };
        m.insert(p, n);
    }
    m
}

fn src(name: &str) -> SourceInfo {
    SourceInfo {
        kind: "snapshot".into(),
        path: name.into(),
        limitations: vec![],
    }
}

fn scan(spec: &Spec) -> Topology {
    sysfs::scan(&mem_root(spec), src(&spec.name), &ScanOptions::default()).unwrap()
}

fn diff_of(a: &Spec, b: &Spec) -> Diff {
    diff::diff_topologies(&scan(a), &scan(b))
}

/// Every role a diff mentions, by section.
fn touched(d: &Diff) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    s.extend(d.added.iter().map(|r| format!("added {r}")));
    s.extend(d.removed.iter().map(|r| format!("removed {r}")));
    s.extend(d.moved.iter().map(|m| format!("moved {}", m.role)));
    s.extend(
        d.changed
            .iter()
            .map(|c| format!("{} {}: {} -> {}", c.field, c.role, c.a, c.b)),
    );
    s.extend(
        d.findings_appeared
            .iter()
            .map(|f| format!("+{} {} {}", f.id, f.severity, f.subject)),
    );
    s.extend(
        d.findings_vanished
            .iter()
            .map(|f| format!("-{} {} {}", f.id, f.severity, f.subject)),
    );
    s.extend(d.facts.iter().map(|f| format!("fact {}", f.fact)));
    s
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn clean_twin_is_equal_to_itself_and_to_a_renumbered_copy() {
    let d = diff_of(&layouts::hgx_h100(), &layouts::hgx_h100());
    assert!(d.equal, "{d:#?}");
    let d = diff_of(
        &layouts::hgx_h100(),
        &renumber(&layouts::hgx_h100(), 3, 0x11),
    );
    assert!(d.equal, "renumbered buses must not differ by role: {d:#?}");
}

#[test]
fn each_fault_names_exactly_its_change() {
    let clean = layouts::hgx_h100();
    let f = |s: &str| layouts::apply_fault(clean.clone(), s).unwrap();
    let nic_port2 = layouts::hgx_nic_port(2);
    let cases: Vec<(Spec, BTreeSet<String>)> = vec![
        (
            f(&format!("acs-redirect={nic_port2}")),
            set(&["+acs-redirect error switch-downstream@2[NIC2]"]),
        ),
        (
            f(&format!("link-width={},8", layouts::hgx_nic(3))),
            set(&[
                "link NIC3: 32GT/s x16 -> 32GT/s x8",
                // The port above trains to the same width: one link, seen from both ends.
                "link switch-downstream@2[NIC3]: 32GT/s x16 -> 32GT/s x8",
                "+link-degraded error NIC3",
            ]),
        ),
        (
            f(&format!("aer={},5,0,0", layouts::hgx_nic(0))),
            set(&["+aer-errors warning NIC0"]),
        ),
        (
            f(&format!("iommu-type={},DMA", layouts::hgx_gpu(2))),
            set(&["+iommu-translation error GPU2"]),
        ),
        (
            f("no-peermem"),
            set(&["fact nvidia_peermem", "fact memory_peers"]),
        ),
    ];
    for (spec, want) in cases {
        let d = diff_of(&clean, &spec);
        assert!(!d.equal);
        assert!(d.labels.is_empty(), "{:?}", d.labels);
        assert_eq!(touched(&d), want, "{d:#?}");
    }
    // The proprietary-module DGX: the peer-module finding turns from info into an error.
    let dgx = layouts::dgx_a100();
    let d = diff_of(&dgx, &layouts::without_peer_module(dgx.clone()));
    assert_eq!(
        touched(&d),
        set(&[
            "+gdr-peer-module error node",
            "-gdr-peer-module info node",
            "fact nvidia_peermem",
            "fact memory_peers",
        ])
    );
}

#[test]
fn misplaced_nic_is_a_move_of_nic3_only() {
    let d = diff_of(&layouts::hgx_h100(), &layouts::misplaced_nic());
    // NICs are numbered as nvidia-smi numbers them (registration order; rebuilt from PCI
    // addresses in a synthesized tree, docs/matrix.md): the moved card (`mlx5_3`, now on bus
    // e1) is the last, NIC7, and NIC3…NIC6 are the next pairs' NICs, as on a rebooted node.
    let moved = d
        .moved
        .iter()
        .find(|m| m.to == "numa1 root-port")
        .unwrap_or_else(|| panic!("{d:#?}"));
    assert_eq!(moved.role, "NIC7");
    assert!(
        moved
            .from
            .starts_with("numa1 root-port/switch-upstream/switch-downstream")
    );
    assert_eq!(d.added, ["root-port@0[NIC7]"]);
    assert_eq!(d.removed, ["switch-downstream@2[NIC7]"]);
    assert!(d.changed.is_empty(), "{:?}", d.changed);
    assert!(
        d.labels.iter().all(|l| l.pair.contains("NIC")),
        "{:?}",
        d.labels
    );
    let g3 = d.labels.iter().find(|l| l.pair == "GPU3 NIC3").unwrap();
    assert_eq!((g3.a.as_str(), g3.b.as_str()), ("PIX", "SYS"));
    assert!(d.findings_vanished.is_empty());
    // GPU3 now shares GPU0's NIC (nic-sharing, info): a consequence of the move too.
    assert!(
        d.findings_appeared.iter().all(|f| f.subject == "GPU3"
            || f.subject == "mlx5_3"
            || (f.id == "nic-sharing" && f.subject == "mlx5_0")),
        "{:?}",
        d.findings_appeared
    );
}

#[test]
fn a_vm_shows_unknown_numa_not_moves() {
    let d = diff_of(&layouts::hgx_h100(), &layouts::as_vm(layouts::hgx_h100()));
    assert!(d.moved.is_empty() && d.added.is_empty() && d.removed.is_empty());
    assert!(d.changed.iter().all(|c| c.field == "numa" && c.b == "?"));
    assert!(d.findings_appeared.iter().any(|f| f.id == "virtualized"));
    assert!(d.facts.iter().any(|f| f.fact == "hypervisor"));
}

/// Moves every function to PCI domain `domain` and shifts every bus by `shift` (order kept, as
/// firmware does when a node has another riser or BIOS version).
fn renumber(spec: &Spec, domain: u32, shift: u8) -> Spec {
    let mut s = spec.clone();
    let mv = |b: &mut Bdf| {
        b.domain = domain;
        b.bus = b
            .bus
            .checked_add(shift)
            .expect("bus overflow in test renumbering");
    };
    for f in &mut s.functions {
        mv(&mut f.bdf);
        if let Some(p) = &mut f.parent {
            mv(p);
        }
        if let Some(p) = &mut f.physfn {
            mv(p);
        }
        if let Some(b) = &mut f.secondary_bus {
            *b += shift;
        }
    }
    for h in &mut s.host_bridges {
        h.domain = domain;
        h.bus += shift;
    }
    s
}

#[test]
fn fleet_of_200_finds_exactly_the_3_outliers() {
    let dir = tempfile::tempdir().unwrap();
    let clean = layouts::hgx_h100();
    let faulty: Vec<(usize, Spec)> = vec![
        (
            17,
            layouts::apply_fault(
                clean.clone(),
                &format!("link-width={},8", layouts::hgx_nic(4)),
            )
            .unwrap(),
        ),
        (88, layouts::misplaced_nic()),
        (
            150,
            layouts::apply_fault(
                clean.clone(),
                &format!("acs-redirect={}", layouts::hgx_gpu_port(6)),
            )
            .unwrap(),
        ),
    ];
    let mut fl = Fleet::new();
    for i in 0..200usize {
        let base = faulty
            .iter()
            .find(|(k, _)| *k == i)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| clean.clone());
        // Every node numbered differently: domains 0..4, bus shifts 0..15.
        let spec = renumber(&base, (i % 5) as u32, (i % 16) as u8);
        let name = format!("node{i:03}");
        let c = capture::capture(&mem_root(&spec), src(&name), &CaptureOptions::default()).unwrap();
        std::fs::write(
            dir.path().join(format!("{name}.tar.gz")),
            c.to_tar_gz().unwrap(),
        )
        .unwrap();
        // Library path: the view of the captured scan.
        fl.add_view(&name, NodeView::of(&c.topology));
    }
    assert_eq!(fl.group_count(), 4);
    let s = fl.finish(0.1);
    let names: Vec<&str> = s.outliers.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["node017", "node088", "node150"]);
    assert_eq!(s.groups[0].count, 197);
    let o17 = &s.outliers[0].diff;
    assert!(
        o17.changed
            .iter()
            .any(|c| c.role == "NIC4" && c.field == "link" && c.b.ends_with("x8")),
        "{o17:#?}"
    );
    assert_eq!(s.outliers[1].diff.moved[0].role, "NIC3");
    assert!(
        s.outliers[2]
            .diff
            .findings_appeared
            .iter()
            .any(|f| f.id == "acs-redirect" && f.subject == "switch-downstream@2[GPU6]")
    );

    // The CLI over the directory of snapshot tarballs agrees, and exits 1 for outliers.
    let out = common::peerpath()
        .args(["fleet", "--format", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], fleet::FLEET_SCHEMA);
    assert_eq!(v["nodes"], 200);
    let cli: Vec<&str> = v["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(cli, ["node017", "node088", "node150"]);
}

#[test]
fn diff_cli_exit_codes_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, spec: &Spec| {
        let p = dir.path().join(name);
        peerpath::synth::write_tarball(spec, &p, &WriteOptions::default()).unwrap();
        p
    };
    let a = w("a.tar.gz", &layouts::hgx_h100());
    let b = w("b.tar.gz", &renumber(&layouts::hgx_h100(), 1, 2));
    let c = w("c.tar.gz", &layouts::misplaced_nic());
    let run = |x: &std::path::Path, y: &std::path::Path| {
        common::peerpath()
            .args(["diff", "--format", "json"])
            .arg(x)
            .arg(y)
            .output()
            .unwrap()
    };
    let o = run(&a, &b);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = run(&a, &c);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], diff::DIFF_SCHEMA);
    assert_eq!(v["moved"][0]["role"], "NIC3");
    // The scan JSON of a node is an input too: same node, no difference.
    let json = dir.path().join("a.json");
    let o = common::peerpath()
        .args(["scan", "--format", "json", "-i"])
        .arg(&a)
        .output()
        .unwrap();
    std::fs::write(&json, &o.stdout).unwrap();
    assert_eq!(run(&a, &json).status.code(), Some(0));
    let o = run(&a, &dir.path().join("missing.tar.gz"));
    assert_eq!(o.status.code(), Some(2));
}
