//! `peerpath diff` names each physical change once, by PCI address on both sides (every
//! synthesized fault against its clean twin, the five-fault HGX node of
//! `fixtures/diff/`, kernel renames, a VM); `peerpath rails` invents no rail on the faulty node;
//! `peerpath fleet` groups 200 captured nodes with renumbered buses and renamed RDMA devices,
//! explains exactly the three faulty ones, and reports what it read when interrupted.

mod common;

use peerpath::analysis::diff::{self, Diff, What};
use peerpath::analysis::fleet::{self, Fleet};
use peerpath::analysis::pairing::NodeView;
use peerpath::analysis::rails;
use peerpath::capture::{self, CaptureOptions};
use peerpath::model::{Bdf, SourceInfo, Topology};
use peerpath::sources::fsroot::{MemNode, MemRoot};
use peerpath::sources::sysfs::{self, ScanOptions};
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{Entry, Spec, WriteOptions, build_entries, layouts};
use std::path::{Path, PathBuf};

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

fn bdf(s: &str) -> Bdf {
    s.parse().unwrap()
}

/// Each change as `kind A-address` (the device's, or the first device's), in order.
fn kinds(d: &Diff) -> Vec<String> {
    d.changes
        .iter()
        .map(|c| match &c.what {
            What::Moved(m) => format!("moved {}", m.device.a.bdf),
            What::Added { device, .. } => format!("added {}", device.bdf),
            What::Removed { device, .. } => format!("removed {}", device.bdf),
            What::Replaced { device } => format!("replaced {}", device.a.bdf),
            What::Link { device, .. } => format!("link {}", device.a.bdf),
            What::Acs { port, .. } => format!("acs {}", port.a.bdf),
            What::Aer { device, .. } => format!("aer {}", device.a.bdf),
            What::Iommu { devices, .. } => format!("iommu {}", devices[0].a.bdf),
            What::Numa { devices, .. } => format!("numa {}", devices[0].a.bdf),
            What::Renamed { renames } => format!("renamed {}", renames.len()),
            What::Fact { fact, .. } => format!("fact {fact}"),
            What::Labels { a, b } => format!("labels {a}->{b}"),
            What::Finding { appeared } => format!("finding {appeared}"),
        })
        .collect()
}

/// The findings folded under each change, as `+id severity`.
fn folded_findings(d: &Diff) -> Vec<Vec<String>> {
    d.changes
        .iter()
        .map(|c| {
            c.findings_appeared
                .iter()
                .map(|f| format!("+{} {}", f.id, f.severity))
                .chain(
                    c.findings_vanished
                        .iter()
                        .map(|f| format!("-{} {}", f.id, f.severity)),
                )
                .collect()
        })
        .collect()
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

/// The same node after a kernel that probed the ConnectX cards in reverse order: `mlx5_i` and
/// `ibi` become `mlx5_{7-i}` and `ib{7-i}`; nothing physical changes.
fn renamed(spec: &Spec) -> Spec {
    let mut s = spec.clone();
    for f in &mut s.functions {
        for r in &mut f.rdma {
            if let Some(n) = r
                .name
                .strip_prefix("mlx5_")
                .and_then(|n| n.parse::<u32>().ok())
            {
                r.name = format!("mlx5_{}", 7 - n);
            }
        }
        for d in &mut f.netdevs {
            if let Some(n) = d
                .name
                .strip_prefix("ib")
                .and_then(|n| n.parse::<u32>().ok())
            {
                d.name = format!("ib{}", 7 - n);
            }
        }
    }
    s
}

#[test]
fn clean_twin_is_equal_to_itself_to_a_renumbered_copy_and_keeps_its_fingerprint() {
    let clean = scan(&layouts::hgx_h100());
    let d = diff::diff_topologies(&clean, &clean);
    assert!(d.equal, "{d:#?}");
    let moved = scan(&renumber(&layouts::hgx_h100(), 3, 0x11));
    let d = diff::diff_topologies(&clean, &moved);
    assert!(d.equal, "renumbered buses must not differ: {d:#?}");
    assert_eq!(fleet::fingerprint(&clean), fleet::fingerprint(&moved));
}

#[test]
fn each_amd_and_gds_fault_changes_the_fingerprint_and_renumbering_does_not() {
    // The fleet groups nodes by fingerprint and explains only outlier groups: a fault the
    // audit finds but the fingerprint ignores would hide a broken node in a healthy group.
    // Every AMD (issue 34) and GDS (issue 33) fault against its clean twin must split it.
    let g = |i| layouts::mi300x_gpu(i).to_string();
    let a = |i| layouts::mi300a_apu(i).to_string();
    let cases: Vec<(Spec, String)> = vec![
        (layouts::mi300x_8gpu(), format!("small-bar={}", g(3))),
        (layouts::mi300x_8gpu(), format!("no-atomics={}", g(5))),
        (
            layouts::mi300x_8gpu(),
            format!("xgmi-down={},{}", g(2), g(3)),
        ),
        (layouts::mi300x_8gpu(), "no-amdkfd-peer".into()),
        (
            layouts::mi300a_4apu(),
            format!("xgmi-down={},{}", a(0), a(1)),
        ),
        (layouts::hgx_h100_gds(), "no-nvidia-fs".into()),
        (layouts::hgx_h100_gds(), "compat-forced".into()),
    ];
    for (clean, fault) in cases {
        let before = fleet::fingerprint(&scan(&clean));
        let faulty = layouts::apply_fault(clean.clone(), &fault).unwrap();
        assert_ne!(
            before,
            fleet::fingerprint(&scan(&faulty)),
            "{}: {fault} keeps the clean twin's fingerprint",
            clean.name
        );
    }
    // A fault that would change nothing is refused, not written as a clean twin.
    let nic = layouts::mi300x_nic(0).to_string();
    let e = layouts::apply_fault(layouts::mi300x_8gpu(), &format!("xgmi-down={},{nic}", g(0)));
    assert!(format!("{:?}", e.unwrap_err()).contains("not an AMD GPU"));
    let e = layouts::apply_fault(layouts::mi300a_4apu(), &format!("no-atomics={}", a(1)));
    assert!(format!("{:?}", e.unwrap_err()).contains("APU"));
    for clean in [layouts::mi300x_8gpu(), layouts::hgx_h100_gds()] {
        assert_eq!(
            fleet::fingerprint(&scan(&clean)),
            fleet::fingerprint(&scan(&renumber(&clean, 2, 0x11))),
            "{}: renumbered buses changed the fingerprint",
            clean.name
        );
    }
}

#[test]
fn kernel_renames_alone_are_one_rename_change_and_keep_the_fingerprint() {
    let clean = layouts::hgx_h100();
    let other = renamed(&clean);
    let d = diff_of(&clean, &other);
    assert_eq!(kinds(&d), ["renamed 8"], "{d:#?}");
    let What::Renamed { renames } = &d.changes[0].what else {
        unreachable!()
    };
    // The card at GPU0's switch is still the card at GPU0's switch, whatever its name.
    let r0 = renames
        .iter()
        .find(|r| r.device.a.bdf == layouts::hgx_nic(0))
        .unwrap();
    assert_eq!(r0.device.b.bdf, layouts::hgx_nic(0));
    assert_eq!((r0.a[0].as_str(), r0.b[0].as_str()), ("mlx5_0", "mlx5_7"));
    assert!(d.changes[0].labels.is_empty() && d.changes[0].best_nic.is_empty());
    assert_eq!(
        fleet::fingerprint(&scan(&clean)),
        fleet::fingerprint(&scan(&other))
    );
}

#[test]
fn each_fault_is_one_change_carrying_its_finding() {
    let clean = layouts::hgx_h100();
    let f = |s: &str| layouts::apply_fault(clean.clone(), s).unwrap();
    let nic_port2 = layouts::hgx_nic_port(2);
    // (faulty spec, its changes, the findings folded under each change)
    type Case = (Spec, Vec<String>, Vec<Vec<&'static str>>);
    let cases: Vec<Case> = vec![
        (
            f(&format!("acs-redirect={nic_port2}")),
            vec![format!("acs {nic_port2}")],
            vec![vec!["+acs-redirect error"]],
        ),
        (
            f(&format!("link-width={},8", layouts::hgx_nic(3))),
            vec![format!("link {}", layouts::hgx_nic(3))],
            vec![vec!["+link-degraded error"]],
        ),
        (
            f(&format!("aer={},5,0,0", layouts::hgx_nic(0))),
            vec![format!("aer {}", layouts::hgx_nic(0))],
            vec![vec!["+aer-errors warning"]],
        ),
        (
            f(&format!("iommu-type={},DMA", layouts::hgx_gpu(2))),
            vec![format!("iommu {}", layouts::hgx_gpu(2))],
            vec![vec!["+iommu-translation error"]],
        ),
        (
            f("no-peermem"),
            vec!["fact memory_peers".into(), "fact nvidia_peermem".into()],
            vec![vec![], vec![]],
        ),
    ];
    let clean_fp = fleet::fingerprint(&scan(&clean));
    for (spec, want, findings) in cases {
        let d = diff_of(&clean, &spec);
        assert_eq!(kinds(&d), want, "{d:#?}");
        assert_eq!(folded_findings(&d), findings, "{d:#?}");
        assert!(d.changes.iter().all(|c| c.labels.is_empty()), "{d:#?}");
        assert_ne!(fleet::fingerprint(&scan(&spec)), clean_fp, "{want:?}");
    }
    // The x8 link names both ends: the NIC and the switch port above it.
    let d = diff_of(&clean, &f(&format!("link-width={},8", layouts::hgx_nic(3))));
    let What::Link { port, a, b, .. } = &d.changes[0].what else {
        unreachable!()
    };
    assert_eq!(port.as_ref().unwrap().b.bdf, layouts::hgx_nic_port(3));
    assert_eq!(
        (a.current.as_str(), b.current.as_str()),
        ("32GT/s x16", "32GT/s x8")
    );
    // The proprietary-module DGX: the peer-module finding turns from info into an error, under
    // the fact that changed.
    let dgx = layouts::dgx_a100();
    let d = diff_of(&dgx, &layouts::without_peer_module(dgx.clone()));
    assert_eq!(kinds(&d), ["fact memory_peers", "fact nvidia_peermem"]);
    assert_eq!(
        folded_findings(&d)[0],
        ["+gdr-peer-module error", "-gdr-peer-module info"]
    );
}

fn five_faults() -> PathBuf {
    common::repo().join("fixtures/diff/hgx-h100-five-faults.tar.gz")
}

fn clean_fixture() -> PathBuf {
    common::repo().join("fixtures/synth/hgx-h100.tar.gz")
}

const FIVE_FAULTS: [&str; 5] = [
    "move=0000:4c:00.0,1",
    "acs-redirect=0000:28:01.0",
    "link-width=0000:bc:00.0,8",
    "aer=0000:ac:00.0,7,0,0",
    "iommu-type=0000:3a:00.0,DMA",
];

#[test]
fn five_fault_fixture_is_what_the_builder_writes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("five.tar.gz");
    let mut c = common::peerpath();
    c.args(["fixture", "hgx-h100", "-o"]).arg(&out);
    for f in FIVE_FAULTS {
        c.args(["--fault", f]);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        std::fs::read(&out).unwrap() == std::fs::read(five_faults()).unwrap(),
        "fixtures/diff/hgx-h100-five-faults.tar.gz is stale: regenerate it (fixtures/diff/README.md)"
    );
}

#[test]
fn five_fault_tree_reads_the_same_in_lspci_and_lstopo() {
    let (_d, root) = common::extract(&five_faults());
    let sysfs = format!("sysfs.path={}", root.join("sys/bus/pci").display());
    if let Some(out) = common::tool(
        "lspci",
        &["-A", "linux-sysfs", "-O", &sysfs, "-PP", "-D"],
        &[],
    ) {
        assert!(
            out.contains("0000:d7:01.0/d8:00.0 Infiniband controller"),
            "{out}"
        );
        assert!(!out.contains("4a:01.0/4c:00.0"), "{out}");
        assert!(
            out.contains("0000:48:01.0/49:00.0/4a:01.0 PCI bridge"),
            "{out}"
        );
    }
    if let Some(out) = common::tool(
        "lstopo-no-graphics",
        &[
            "--if",
            "fsroot",
            "-i",
            &root.display().to_string(),
            "--of",
            "console",
            "-v",
        ],
        &[],
    ) {
        let at = out.find("d8:00.0").expect("lstopo lists the moved card");
        assert!(out[at..].contains("mlx5_7"), "{out}");
    }
}

#[test]
fn five_fault_node_is_at_most_twelve_lines_naming_each_change_by_address() {
    let run = |fmt: &str| {
        common::peerpath()
            .args(["diff", "--format", fmt])
            .arg(clean_fixture())
            .arg(five_faults())
            .output()
            .unwrap()
    };
    let o = run("text");
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(['~', '+', '-']))
        .collect();
    assert!(lines.len() <= 12, "{text}");
    // Every line after the two source lines is a change line or the count.
    assert_eq!(text.lines().count(), lines.len() + 3, "{text}");
    let moved: Vec<&&str> = lines.iter().filter(|l| l.contains(" moved ")).collect();
    assert_eq!(moved.len(), 1, "{text}");
    assert!(
        moved[0].contains("NIC mlx5_3 (0000:4c:00.0) moved from switch sw3 port 0000:4a:01.0")
            && moved[0].contains("to root port 0000:d7:01.0")
            && moved[0].contains("now mlx5_7 at 0000:d8:00.0")
            && moved[0].contains("GPU3's best NIC PIX → NODE"),
        "{}",
        moved[0]
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("link of GPU6 (0000:bc:00.0)")
                && l.contains("switch sw6 port 0000:bb:00.0")
                && l.contains("→ 32GT/s x8")),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("ACS on switch sw1 port 0000:28:01.0"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("AER counters of NIC mlx5_5 (0000:ac:00.0) [now mlx5_4]"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("IOMMU group type identity → DMA of GPU2 (0000:3a:00.0)"))
    );

    let o = run("json");
    let d: Diff = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d.schema, diff::DIFF_SCHEMA);
    // No untouched NIC is called moved, added or removed.
    let ks = kinds(&d);
    assert_eq!(
        ks,
        [
            "moved 0000:4c:00.0",
            "link 0000:bc:00.0",
            "acs 0000:28:01.0",
            "aer 0000:ac:00.0",
            "iommu 0000:3a:00.0",
            "renamed 5",
            "fact iommu_units",
        ],
        "{d:#?}"
    );
    let c = &d.changes[0];
    let What::Moved(m) = &c.what else {
        unreachable!()
    };
    let (device, from, to) = (&m.device, &m.from, &m.to);
    assert_eq!(
        (device.a.bdf, device.b.bdf),
        (bdf("0000:4c:00.0"), bdf("0000:d8:00.0"))
    );
    assert_eq!((from.numa, to.numa), (Some(0), Some(1)));
    assert_eq!(from.with, ["GPU3"]);
    assert!(to.port_only_here && to.with.is_empty());
    assert_eq!(c.best_nic.len(), 1);
    assert_eq!(c.best_nic[0].gpu, "GPU3");
    // Every label that changed involves the moved card, and sits under its move.
    assert_eq!(c.labels.len(), 15, "{:#?}", c.labels);
    assert!(
        c.labels
            .iter()
            .all(|l| l.pair_a.contains("NIC3") && l.pair_b.contains("NIC7"))
    );
    assert!(d.changes[1..].iter().all(|c| c.labels.is_empty()));
    // Every new finding sits under the change that caused it.
    let f = folded_findings(&d);
    // GPU3 now shares a NIC of its socket (nic-sharing, info): a consequence of the move too.
    assert_eq!(
        f[0],
        [
            "+gpu-nic-path error",
            "+gpu-nic-path warning",
            "+nic-sharing info"
        ]
    );
    assert_eq!(f[1], ["+link-degraded error"]);
    assert_eq!(f[2], ["+acs-redirect error"]);
    assert_eq!(f[3], ["+aer-errors warning"]);
    assert_eq!(f[4], ["+iommu-translation error"]);
}

#[test]
fn rails_on_the_five_fault_node_invent_no_rail() {
    let t = sources::load(Some(&five_faults()), &LoadOptions::default()).unwrap();
    let view = NodeView::new(&t);
    let r = rails::build(&t, &view, 4);
    assert!(!r.rail_optimised);
    for p in &r.ports {
        match p.rail {
            Some(k) => {
                assert!(k < 8, "invented rail {k}");
                assert_eq!(p.gpus, [format!("GPU{k}")]);
                assert_eq!(p.path, "PIX");
            }
            None => assert_eq!(p.nic_bdf, "0000:d8:00.0"),
        }
    }
    assert!(!r.ports.iter().any(|p| p.rail == Some(3)));
    assert_eq!(r.missing.len(), 1);
    assert_eq!(
        (r.missing[0].rail, r.missing[0].gpu.as_str()),
        (Some(3), "GPU3")
    );
    assert_eq!(r.by_rail.len(), 8);
    assert_eq!(r.by_rail[3].ports, 0);
    assert!(
        r.by_rail
            .iter()
            .filter(|g| g.rail != 3)
            .all(|g| g.ports == 4)
    );
    assert_eq!(r.off_rail_ports, 1);
    let o = common::peerpath()
        .args(["rails", "--format", "json", "-i"])
        .arg(five_faults())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], rails::RAILS_SCHEMA);
    let text = String::from_utf8(
        common::peerpath()
            .args(["rails", "-i"])
            .arg(five_faults())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        !text.contains("rail 8") && !text.contains("\n  8 "),
        "{text}"
    );
}

#[test]
fn misplaced_nic_is_one_move_of_nic3() {
    let d = diff_of(&layouts::hgx_h100(), &layouts::misplaced_nic());
    assert_eq!(
        kinds(&d),
        [
            format!("moved {}", layouts::hgx_nic(3)),
            "fact iommu_units".into()
        ],
        "{d:#?}"
    );
    let What::Moved(m) = &d.changes[0].what else {
        unreachable!()
    };
    let (device, from, to) = (&m.device, &m.from, &m.to);
    assert_eq!(device.b.bdf, layouts::MISPLACED_NIC);
    // The switch port stays, empty (as sysfs shows a slot whose card was taken out); the root
    // port the card went to is new.
    assert!(!from.port_only_here && to.port_only_here);
    assert!(
        d.changes[0]
            .labels
            .iter()
            .all(|l| l.pair_a.contains("NIC3"))
    );
}

#[test]
fn a_vm_shows_unknown_numa_not_moves() {
    let d = diff_of(&layouts::hgx_h100(), &layouts::as_vm(layouts::hgx_h100()));
    let ks = kinds(&d);
    assert!(!ks.iter().any(|k| k.starts_with("moved")), "{ks:?}");
    assert!(
        d.changes
            .iter()
            .any(|c| matches!(&c.what, What::Numa { b: None, devices, .. } if devices.len() > 20))
    );
    let fact = d
        .changes
        .iter()
        .find(|c| matches!(&c.what, What::Fact { fact, .. } if fact == "hypervisor"))
        .unwrap();
    assert!(fact.findings_appeared.iter().any(|f| f.id == "virtualized"));
    assert!(d.len() <= 6, "{ks:?}");
}

#[test]
fn fleet_of_200_explains_exactly_the_3_faulty_nodes() {
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
        // Every node numbered differently (domains 0..4, bus shifts 0..15), and every 7th
        // clean node's RDMA devices probed in another order.
        let base = if i % 7 == 3 && !faulty.iter().any(|(k, _)| *k == i) {
            renamed(&base)
        } else {
            base
        };
        let spec = renumber(&base, (i % 5) as u32, (i % 16) as u8);
        let name = format!("node{i:03}");
        let c = capture::capture(&mem_root(&spec), src(&name), &CaptureOptions::default()).unwrap();
        std::fs::write(
            dir.path().join(format!("{name}.tar.gz")),
            c.to_tar_gz().unwrap(),
        )
        .unwrap();
        fl.add(&name, c.topology);
    }
    assert_eq!(fl.group_count(), 4);
    let s = fl.finish(0.1, 200, false);
    let names: Vec<&str> = s.outliers.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["node017", "node088", "node150"]);
    assert_eq!(s.groups[0].count, 197);
    let diff_of_node = |n: &str| {
        s.groups
            .iter()
            .find(|g| g.representative == n)
            .and_then(|g| g.diff.clone())
            .unwrap()
    };
    // node017: domain 2, buses +1.
    let d = diff_of_node("node017");
    assert_eq!(d.len(), 1, "{d:#?}");
    let What::Link { device, b, .. } = &d.changes[0].what else {
        panic!("{d:#?}")
    };
    let mut want = layouts::hgx_nic(4);
    want.domain = 2;
    want.bus += 1;
    assert_eq!((device.b.bdf, b.current.as_str()), (want, "32GT/s x8"));
    let d = diff_of_node("node088");
    assert!(matches!(d.changes[0].what, What::Moved(_)), "{d:#?}");
    let d = diff_of_node("node150");
    assert_eq!(kinds(&d).len(), 1, "{d:#?}");
    assert!(matches!(d.changes[0].what, What::Acs { .. }));

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
    assert_eq!(
        (v["nodes"].as_u64(), v["interrupted"].as_bool()),
        (Some(200), Some(false))
    );
    let cli: Vec<&str> = v["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(cli, ["node017", "node088", "node150"]);
    let explained = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| {
            g["diff"]["changes"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
        })
        .count();
    assert_eq!(explained, 3);
}

#[test]
fn fleet_reports_what_it_read_when_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.tar.gz");
    peerpath::synth::write_tarball(&layouts::hgx_h100(), &one, &WriteOptions::default()).unwrap();
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    // Copies, not hard links: links to one file are read once (issue 53), and the fleet
    // would end before the interrupt.
    for i in 0..400 {
        std::fs::copy(&one, set.join(format!("n{i:04}.tar.gz"))).unwrap();
    }
    let child = common::peerpath()
        .args(["fleet", "-j", "1"])
        .arg(&set)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(130),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let first = text.lines().next().unwrap_or("");
    assert!(
        first.starts_with("interrupted: partial report over the "),
        "{text}"
    );
    assert!(
        first.ends_with(" of 400 input(s) read before Ctrl-C"),
        "{text}"
    );
    let read: usize = first
        .trim_start_matches("interrupted: partial report over the ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(read > 0 && read < 400, "{text}");
    assert!(
        text.contains(&format!("{read} node(s), 1 group(s)")),
        "{text}"
    );
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
    let run = |x: &Path, y: &Path| {
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
    assert_eq!(v["changes"][0]["what"]["kind"], "moved");
    assert_eq!(
        v["changes"][0]["what"]["device"]["a"]["bdf"],
        "0000:4c:00.0"
    );
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

#[test]
fn capture_records_the_fingerprint_fleet_computes_from_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let specs = [
        layouts::hgx_h100(),
        layouts::dgx_a100(),
        layouts::misplaced_nic(),
        layouts::vm_flat(),
        renamed(&renumber(&layouts::hgx_h100(), 1, 3)),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (i, spec) in specs.iter().enumerate() {
        let c = capture::capture(&mem_root(spec), src("n"), &CaptureOptions::default()).unwrap();
        let p = dir.path().join(format!("n{i}.tar.gz"));
        std::fs::write(&p, c.to_tar_gz().unwrap()).unwrap();
        let t = sources::load(Some(&p), &LoadOptions::default()).unwrap();
        let rec = c.manifest.fingerprint.clone().unwrap();
        assert_eq!(rec.scheme, capture::fingerprint_scheme());
        assert_eq!(
            rec.value,
            format!("{:016x}", fleet::fingerprint(&t)),
            "{}",
            spec.name
        );
        seen.insert(rec.value);
    }
    // The renumbered, renamed HGX shares the clean one's fingerprint; the others differ.
    assert_eq!(seen.len(), 4);
}

#[test]
fn fleet_checks_a_recorded_fingerprint_against_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, spec: &Spec, claim: Option<&str>| {
        let mut c =
            capture::capture(&mem_root(spec), src(name), &CaptureOptions::default()).unwrap();
        if let Some(v) = claim {
            c.manifest.fingerprint.as_mut().unwrap().value = v.to_string();
            let text = serde_json::to_string_pretty(&c.manifest).unwrap();
            c.entries.insert(
                PathBuf::from(capture::MANIFEST_NAME),
                capture::Node::File(text.into_bytes()),
            );
        }
        std::fs::write(
            dir.path().join(format!("{name}.tar.gz")),
            c.to_tar_gz().unwrap(),
        )
        .unwrap();
    };
    let faulty = layouts::apply_fault(
        layouts::hgx_h100(),
        &format!("link-width={},8", layouts::hgx_gpu(1)),
    )
    .unwrap();
    // Two faulty captures whose manifests claim a fingerprint their files do not have.
    write("a-bad0", &faulty, Some("0123456789abcdef"));
    write("a-bad1", &faulty, Some("0123456789abcdef"));
    for i in 0..6 {
        write(&format!("clean{i}"), &layouts::hgx_h100(), None);
    }
    let run = |rescan: bool| {
        let mut c = common::peerpath();
        // 2 of 8 nodes: an outlier group only below a 25 % majority share.
        c.args(["fleet", "--format", "json", "--majority-share", "0.3"]);
        if rescan {
            c.arg("--rescan");
        }
        let o = c.arg(dir.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(1));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let v = run(false);
    let outliers: Vec<&str> = v["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(outliers, ["a-bad0", "a-bad1"]);
    assert_eq!(v["notes"].as_array().map(|n| n.len()), Some(1), "{v:#}");
    // Five clean captures joined their group on the recorded fingerprint (the first was
    // scanned); both faulty ones were scanned.
    assert_eq!(v["from_manifest"], 5);
    let r = run(true);
    assert_eq!(r["from_manifest"], 0);
    assert_eq!(r["outliers"], v["outliers"]);
    assert_eq!(r["groups"], v["groups"]);
}

#[test]
fn the_prom_textfile_carries_the_fleet_fingerprint() {
    let prom = common::peerpath()
        .args(["export", "--format", "prom", "-i"])
        .arg(five_faults())
        .output()
        .unwrap();
    let prom = String::from_utf8(prom.stdout).unwrap();
    let fl = common::peerpath()
        .args(["fleet", "--format", "json"])
        .arg(five_faults())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&fl.stdout).unwrap();
    let fp = v["members"][0]["fingerprint"].as_str().unwrap();
    assert!(
        prom.lines().any(
            |l| l.starts_with("peerpath_info{") && l.contains(&format!("fingerprint=\"{fp}\""))
        ),
        "{prom}"
    );
}

/// The PromQL docs/fleet.md gives for grouping nodes by the prom export's fingerprint label
/// selects exactly the node outside the most common layout (`promtool test rules`).
#[test]
fn the_documented_promql_finds_the_outlier() {
    let dir = tempfile::tempdir().unwrap();
    let doc = std::fs::read_to_string(common::repo().join("docs/fleet.md")).unwrap();
    let query =
        "peerpath_info unless on (fingerprint) topk(1, count by (fingerprint) (peerpath_info))";
    assert!(
        doc.contains(query),
        "docs/fleet.md no longer shows the query tested here"
    );
    std::fs::write(
        dir.path().join("rules.yml"),
        format!(
            "groups:\n- name: peerpath\n  rules:\n  - alert: PeerpathLayoutOutlier\n    expr: {query}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("test.yml"),
        r#"rule_files: [rules.yml]
evaluation_interval: 1m
tests:
- interval: 1m
  input_series:
  - {series: 'peerpath_info{instance="a",fingerprint="edb61cd85f364d1e"}', values: '1x5'}
  - {series: 'peerpath_info{instance="b",fingerprint="edb61cd85f364d1e"}', values: '1x5'}
  - {series: 'peerpath_info{instance="c",fingerprint="947f234f8b8fb011"}', values: '1x5'}
  alert_rule_test:
  - eval_time: 2m
    alertname: PeerpathLayoutOutlier
    exp_alerts:
    - exp_labels: {instance: c, fingerprint: 947f234f8b8fb011}
"#,
    )
    .unwrap();
    let test = dir.path().join("test.yml");
    let Some(out) = common::tool("promtool", &["test", "rules", test.to_str().unwrap()], &[])
    else {
        return;
    };
    assert!(out.contains("SUCCESS"), "{out}");
}

/// `fleet --stats`' peak input bytes in flight, in MiB.
fn fleet_peak_mib(set: &Path, jobs: &str, budget_mib: &str) -> u64 {
    let out = common::peerpath()
        .args([
            "fleet",
            "--stats",
            "--rescan",
            "-j",
            jobs,
            "--memory-budget",
            budget_mib,
        ])
        .arg(set)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let at = err
        .find("peak input bytes in flight ")
        .unwrap_or_else(|| panic!("no peak in {err}"));
    err[at..]
        .split_whitespace()
        .nth(5)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"))
}

#[test]
fn fleet_workers_share_one_memory_budget() {
    // Eight copies of a DGX A100 snapshot (several MiB decompressed each), four workers.
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.tar.gz");
    peerpath::synth::write_tarball(&layouts::dgx_a100(), &one, &WriteOptions::default()).unwrap();
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    for i in 0..8 {
        std::fs::hard_link(&one, set.join(format!("n{i}.tar.gz"))).unwrap();
    }
    // One worker holds one input at a time: that input's bytes.
    let single = fleet_peak_mib(&set, "1", "1024");
    assert!(single >= 1, "{single}");
    // Four workers under a 1 MiB budget: the oldest input always proceeds, the others wait, so
    // the bytes in flight stay within the budget plus one input.
    let bounded = fleet_peak_mib(&set, "4", "1");
    assert!(bounded <= single + 1, "{bounded} MiB > {single} + 1");
}

/// Special files, unreadable files, truncated and hostile archives in a fleet directory: each is
/// reported unreadable with its reason, the good nodes are read, and nothing is waited on (the
/// FIFO has no writer: opening it for reading the ordinary way would block forever).
#[test]
fn fleet_reports_each_unreadable_input_with_its_reason_and_reads_the_rest() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    let good = set.join("good1.tar.gz");
    peerpath::synth::write_tarball(&layouts::hgx_h100(), &good, &WriteOptions::default()).unwrap();
    std::fs::copy(&good, set.join("good2.tar.gz")).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(set.join("truncated.tar.gz"), &bytes[..bytes.len() / 2]).unwrap();
    // A tar whose entry climbs out of the root.
    std::fs::write(set.join("hostile.tar"), common::escaping_tar()).unwrap();
    let fifo = set.join("pipe.tar.gz");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let _sock = std::os::unix::net::UnixListener::bind(set.join("sock.tar.gz")).unwrap();
    std::os::unix::fs::symlink("nowhere.tar.gz", set.join("dangling.tar.gz")).unwrap();
    let locked = set.join("locked.tar.gz");
    std::fs::copy(&good, &locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads a mode-000 file: run the fleet as nobody then, so the file is really
    // unreadable to it (the folders are opened up for that user).
    let root = std::fs::File::open(&locked).is_ok();
    for d in [dir.path(), set.as_path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut cmd = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_peerpath"));
        c
    } else {
        common::peerpath()
    };
    let mut child = cmd
        .args(["fleet", "--format", "json", "-j", "2"])
        .arg(&set)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("fleet still running after 60 s: it waits on an input");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["nodes"].as_u64(), v["inputs"].as_u64()),
        (Some(2), Some(8)),
        "{v}"
    );
    let why = |name: &str| -> String {
        v["unreadable"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["input"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("{name} not reported unreadable: {v}"))["error"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for (name, reason) in [
        ("pipe.tar.gz", "named pipe (FIFO), not a regular file"),
        ("sock.tar.gz", "socket"),
        ("truncated.tar.gz", "not a readable snapshot tarball"),
        ("hostile.tar", "escapes the snapshot root"),
        ("dangling.tar.gz", "No such file"),
        ("locked.tar.gz", "Permission denied"),
    ] {
        let w = why(name);
        assert!(w.contains(reason), "{name}: {w}");
    }
    assert_eq!(v["unreadable"].as_array().unwrap().len(), 6, "{v}");
}

/// An NCCL XML fused across hosts (OCI's two GB300 trays): every host is its own node in
/// `fleet`, named by its host hash, and `diff` pairs the hosts by host hash, so a change on the
/// second tray is found on that tray and the first tray stays equal.
#[test]
fn each_host_of_a_fused_nccl_xml_is_its_own_node_in_fleet_and_diff() {
    let fused = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/nccl/oci-gb300-2tray-fused.nccl-topo.xml");
    let text = std::fs::read_to_string(&fused).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    std::fs::write(set.join("job7.xml"), &text).unwrap();
    let out = common::peerpath()
        .args(["fleet", "--format", "json"])
        .arg(&set)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["job7:0xffa2647d9c5a65e8", "job7:0xb93bee07ef6f4564"],
        "{v}"
    );
    // The second tray's first GPU trained at x8.
    let gpu = r#"<pci busid="0008:06:00.0" class="0x030200" vendor="0x10de" device="0x31c2" subsystem_vendor="0x10de" subsystem_device="0x21f1" link_speed="64.0 GT/s PCIe" link_width="16">"#;
    let second = text.find(r#"<cpu host_hash="0xb93bee07ef6f4564""#).unwrap();
    let (head, tail) = text.split_at(second);
    assert!(tail.contains(gpu));
    let slow = dir.path().join("slow.xml");
    let x8 = gpu.replace(r#"link_width="16""#, r#"link_width="8""#);
    std::fs::write(&slow, format!("{head}{}", tail.replacen(gpu, &x8, 1))).unwrap();
    std::fs::write(set.join("job8.xml"), std::fs::read(&slow).unwrap()).unwrap();
    // One node in four: an outlier once a majority must hold more than 30 %.
    let out = common::peerpath()
        .args(["fleet", "--format", "json", "--majority-share", "0.3"])
        .arg(&set)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["nodes"], 4, "{v}");
    let outliers: Vec<&str> = v["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(outliers, ["job8:0xb93bee07ef6f4564"], "{v}");
    let out = common::peerpath()
        .args(["diff", "--format", "json"])
        .arg(&fused)
        .arg(&slow)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], diff::HOSTS_DIFF_SCHEMA);
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    assert!(
        pairs[0]["a"]
            .as_str()
            .unwrap()
            .ends_with("(host 0xffa2647d9c5a65e8)")
    );
    assert_eq!(pairs[0]["equal"], true, "{v}");
    assert!(
        pairs[1]["b"]
            .as_str()
            .unwrap()
            .ends_with("(host 0xb93bee07ef6f4564)")
    );
    assert_eq!(pairs[1]["equal"], false, "{v}");
    assert!(v["only_a"].as_array().unwrap().is_empty());
    // `--host-a`/`--host-b` pick one host of each side, as `--host` does for every topology
    // command: the first trays are equal, the second differ, a tray against another names
    // the x8 link.
    let one = |ha: &str, hb: &str| {
        common::peerpath()
            .args(["diff", "--host-a", ha, "--host-b", hb])
            .arg(&fused)
            .arg(&slow)
            .output()
            .unwrap()
    };
    assert_eq!(one("0", "0").status.code(), Some(0));
    let out = one("0xb93bee07ef6f4564", "1");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("x8"), "{text}");
    let out = one("2", "0");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no such host"), "{err}");
}
