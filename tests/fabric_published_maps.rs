//! Rail cabling judged on published and synthesized whole-fabric maps: one plane of a DGX
//! H100 SuperPOD (NVIDIA/topograph's example), ibdiagnet's db_csv and its ibnetdiscover file,
//! a published iblinkinfo, and port counters read from two maps (split from
//! tests/fabric_rails.rs, which keeps the parsers, the synthesized pods and the command).

mod common;

use peerpath::analysis::cabling::{Cabling, CablingFinding, FindingKind, Rail, Severity, judge};
use peerpath::parse::fabric::{detect, parse};
use peerpath::synth::fabric::{
    Pod, PodFault, SWITCH_DESC, ibdiag_csv, ibdiagnet_ibnetdiscover, layout, ndr_pod_ibdiag,
};

fn published(name: &str) -> String {
    std::fs::read_to_string(common::repo().join("fixtures/fabric/published").join(name)).unwrap()
}

/// A published map judged from the map alone (no layout), as `rails --fabric-map` on a head
/// node does.
fn judge_published(name: &str, layouts: &[peerpath::analysis::cabling::NodeLayout]) -> Cabling {
    let t = published(name);
    let m = parse(&t, detect(&t).unwrap(), name).unwrap();
    judge(&m, layouts)
}

const SUPERPOD: &str = "topograph-ibnetdiscover-dgx-h100-ndr-example.out";

/// One plane of a DGX H100 SuperPOD (NVIDIA/topograph's example), read by hand: 582 `Ca`
/// blocks — HCA-1 103, HCA-2 103, HCA-5 92, HCA-6 103, mlx5_0 19, mlx5_1 19, mlx5_4 17,
/// mlx5_5 17, 69 `MT4129 ConnectX7   Mellanox Technologies` (firmware default, no host) and
/// 40 `Mellanox Technologies Aggregation Node` (SHARP, port 65 of each switch). 122 named
/// hosts: 109 with 4 adapters, 11 with 3 (a05-p1-dgx-01-c01…c18 and `localhost`: scalable unit
/// 1, whose HCA-5 leaf `IBLEAF-03-01` is not in the file), `ubuntu` and `B11-P1-CUFM-02` with 2
/// (`mlx5_0`/`mlx5_1` on the unit-8 HCA-5/HCA-6 leaves). 31 leaves `IBLEAF-RR-SS` (rail RR,
/// unit SS) in 8 units. The one fault: line 127, `B09-P1-IBLEAF-04-08` (13 HCA-6 hosts) port 1
/// holds `b08-p1-dgx-08-c01 HCA-5`; line 171, `B09-P1-IBLEAF-03-08` (13 HCA-5 hosts) port 1
/// holds its HCA-6. Before issue 50 this stopped ("no GPU on a rail") without a layout and,
/// with the HGX layout, judged 19 hosts and never saw the pair.
#[test]
fn superpod_plane_judged_from_the_map_alone() {
    let c = judge_published(SUPERPOD, &[]);
    assert_eq!(
        c.hosts, 120,
        "122 named hosts less ubuntu and the UFM server"
    );
    assert!(c.hosts >= 100);
    assert_eq!(c.leaves.len(), 31);
    assert_eq!(c.units.len(), 8, "{:#?}", c.units);
    assert_eq!(c.unnamed_adapters, 69);
    assert_eq!(c.aggregation_nodes, 40);
    let not_gpu: Vec<&str> = c.not_gpu_nodes.iter().map(|n| n.host.as_str()).collect();
    assert_eq!(not_gpu.len(), 2, "{not_gpu:?}");
    assert!(not_gpu.contains(&"ubuntu") && not_gpu.contains(&"B11-P1-CUFM-02"));
    assert!(
        c.units
            .iter()
            .all(|u| !u.hosts.iter().any(|h| h == "ubuntu"))
    );
    // Exactly one cabling error: the crossed pair, both adapters, both leaves and ports.
    assert_eq!(c.findings.len(), 1, "{:#?}", c.findings);
    let f = &c.findings[0];
    assert_eq!(f.kind, FindingKind::Crossed);
    assert_eq!(f.host.as_deref(), Some("b08-p1-dgx-08-c01"));
    assert_eq!(f.adapters, ["HCA-5", "HCA-6"]);
    assert_eq!(
        f.leaves,
        [
            "MF0;B09-P1-IBLEAF-04-08:MQM9701/U1",
            "MF0;B09-P1-IBLEAF-03-08:MQM9701/U1"
        ]
    );
    assert_eq!(f.leaf_ports, ["1", "1"]);
    assert_eq!(f.rail, Some(Rail::Name("HCA-5".into())));
    assert_eq!(f.leaf_rail, Some(Rail::Name("HCA-6".into())));
    assert!(f.evidence[0].ends_with("line 127") && f.evidence[1].ends_with("line 171"));
    let text = peerpath::render::cabling::render_text(&c, SUPERPOD);
    assert!(
        text.contains("compare node GUIDs with `peerpath capture --keep-serials`"),
        "{text}"
    );
    // Unit 1 reaches 3 leaves where the others reach 4: said once, not per host.
    assert_eq!(c.coverage.leaves_per_host, Some(4));
    assert_eq!(c.coverage.short_units.len(), 1, "{:#?}", c.coverage);
    assert_eq!(c.coverage.short_units[0].hosts, 11);
    assert_eq!(text.matches("reach 3 leaves").count(), 1, "{text}");
    // One unit's hosts name their adapters mlx5_{0,1,4,5} (leaves A09-P1-IBLEAF-0N-04), the
    // other seven units' HCA-{1,2,5,6}: 8 names on the leaves, never said as 8 rails.
    let namings: Vec<(Vec<String>, usize)> = c
        .coverage
        .namings
        .iter()
        .map(|n| (n.rails.iter().map(ToString::to_string).collect(), n.units))
        .collect();
    assert_eq!(
        namings,
        vec![
            (
                vec![
                    "HCA-1".into(),
                    "HCA-2".into(),
                    "HCA-5".into(),
                    "HCA-6".into()
                ],
                7
            ),
            (
                vec![
                    "mlx5_0".into(),
                    "mlx5_1".into(),
                    "mlx5_4".into(),
                    "mlx5_5".into()
                ],
                1
            ),
        ]
    );
    assert!(!text.contains("leaves carry 8 rail(s)"), "{text}");
    assert!(text.contains("name their adapters 2 ways"), "{text}");
}

/// The same plane with the HGX H100 layout (8 rails, `mlx5_0`…`mlx5_7`): the 17 hosts of unit 4
/// name their adapters `mlx5_{0,1,4,5}` and pair by description (68 ports); the HCA-named hosts
/// are judged from the map alone, never dropped; the missing plane is said once (4 of 8 rails),
/// with no ABSENT line (before: 72 ABSENT findings of the other plane).
#[test]
fn superpod_plane_with_the_layout_says_the_missing_plane_once() {
    let c = judge_published(SUPERPOD, &[layout(&Pod::new(1))]);
    assert_eq!(c.hosts, 120);
    assert_eq!(c.adapters_matched, 68);
    assert_eq!(c.coverage.layout_rails, 8);
    assert_eq!(c.coverage.layout_rails_held.len(), 4);
    assert!(
        !c.findings.iter().any(|f| f.kind == FindingKind::Absent),
        "{:#?}",
        c.findings
    );
    assert_eq!(c.findings.len(), 1);
    assert_eq!(c.findings[0].kind, FindingKind::Crossed);
    let text = peerpath::render::cabling::render_text(&c, SUPERPOD);
    assert_eq!(
        text.matches("the map holds 4 of the layout's 8 rails: one plane of 2")
            .count(),
        1,
        "{text}"
    );
    assert!(c.unmatched_total > 0 && text.contains("judged from the map alone"));
}

/// A GB200 tray whose port saw no switch (topograph's example-bad.out): header and one `Ca`
/// block `dgx-gb200-n01-c1 HCA-1`, no port line. Named, an error, nothing else judged.
#[test]
fn lone_adapter_named() {
    let c = judge_published("topograph-ibnetdiscover-gb200-lone-ca-example-bad.out", &[]);
    assert_eq!(c.findings.len(), 1, "{:#?}", c.findings);
    let f = &c.findings[0];
    assert_eq!(f.kind, FindingKind::NoSwitch);
    assert_eq!(f.host.as_deref(), Some("dgx-gb200-n01-c1"));
    assert_eq!(f.adapters, ["HCA-1"]);
    assert!(
        f.evidence[0].contains("0xb8e92403009ca838"),
        "{:?}",
        f.evidence
    );
    assert!(!c.ok);
}

/// A vendor lab's `ibnetdiscover` (ibtopotool tests/3.topo), read by hand: `SwitchIB Mellanox
/// Technologies` has three loopback cables — ports 1↔2, 19↔21, 29↔30 (each printed from both
/// ends, lines 12/13, 15/16, 17/18), all 4xEDR — one 4xFDR cable to the SX6012 (its port 3), and
/// hosts at SDR/QDR/FDR/EDR. Each loop said once; none is a host link; the loops are no rate
/// baseline, so the one switch-to-switch cable (FDR) is not called slow against them.
#[test]
fn loopback_cables_said_once() {
    let c = judge_published(
        "ibtopotool-ibnetdiscover-nvidia-kb-ufm-lab-stderr-loops.topo",
        &[],
    );
    let loops: Vec<&Vec<String>> = c
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::Loopback)
        .map(|f| &f.leaf_ports)
        .collect();
    assert_eq!(
        loops,
        [
            &vec!["1".to_string(), "2".into()],
            &vec!["19".to_string(), "21".into()],
            &vec!["29".to_string(), "30".into()]
        ]
    );
    assert!(
        c.findings
            .iter()
            .all(|f| f.kind != FindingKind::Loopback || f.host.is_none())
    );
    assert!(
        !c.findings
            .iter()
            .any(|f| f.kind == FindingKind::SlowLink && f.adapters[0].contains("SX6012")),
        "{:#?}",
        c.findings
    );
    assert!(
        !c.rails_judged,
        "one adapter per host: not a rail-optimised fabric"
    );
}

/// `peerpath rails --fabric-map MAP` with no `-i`: on a head node (no GPU) the map is judged
/// alone; on a GPU node its layout stands for every host. Either way the crossed pair is named
/// and the command exits 1 (before issue 50, on a machine without a GPU: "the node layout has
/// no GPU on a rail", exit 2).
#[test]
fn cli_fabric_map_without_a_layout() {
    let map = common::repo()
        .join("fixtures/fabric/published")
        .join(SUPERPOD);
    let o = common::peerpath()
        .args(["rails", "--fabric-map"])
        .arg(&map)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains(
            "CROSSED      b08-p1-dgx-08-c01: HCA-5 on MF0;B09-P1-IBLEAF-04-08:MQM9701/U1 port 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("120 GPU nodes judged in 8 scalable unit(s), 31 leaves"),
        "{text}"
    );
}

/// The synthesized ibdiagnet 2.10 db_csv of issue 50's kept-aside run (SYNTHESIZED by
/// `synth::fabric::ibdiag_csv`, the writer the readers' branch added): 32 hosts × 8 NDR rails
/// on 8 leaves sharing the description `Quantum-2 Mellanox Technologies`. Clean: no cabling
/// finding, 8 leaves told apart by GUID.
#[test]
fn db_csv_clean_pod_leaves_told_apart() {
    let (pod, _) = ndr_pod_ibdiag();
    let text = ibdiag_csv(&pod, &[]);
    let m = parse(&text, detect(&text).unwrap(), "db_csv").unwrap();
    let c = judge(&m, &[]);
    assert!(c.findings.is_empty(), "{:#?}", c.findings);
    assert!(c.port_errors.is_empty());
    assert_eq!(c.hosts, 32);
    assert_eq!(c.leaves.len(), 8);
    let names: std::collections::BTreeSet<&str> =
        c.leaves.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with(SWITCH_DESC) && n.contains("(0x"))
    );
    assert!(c.ok);
}

/// The same pod with the run's faults: host 3's rail-2 cable at HDR where both ends support
/// NDR (DEGRADED, an error, naming the supported rate), host 17's rails 4/5 crossed (exactly
/// that host), five host rails with a saturated counter (hosts 5, 9, 20, 26, 30), host 26's
/// link down 55 times, host 9's symbol errors climbing during the run.
#[test]
fn db_csv_degraded_crossed_and_saturated_counters() {
    let (pod, faults) = ndr_pod_ibdiag();
    let text = ibdiag_csv(&pod, &faults);
    let m = parse(&text, detect(&text).unwrap(), "db_csv").unwrap();
    let c = judge(&m, &[]);
    let kinds: Vec<FindingKind> = c.findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [FindingKind::Crossed, FindingKind::Degraded],
        "{:#?}",
        c.findings
    );
    let x = &c.findings[0];
    assert_eq!(x.host.as_deref(), Some("gpu0018"));
    assert_eq!(x.adapters, ["mlx5_4", "mlx5_5"]);
    let d = &c.findings[1];
    assert_eq!(
        (d.host.as_deref(), d.adapters.as_slice()),
        (Some("gpu0004"), &["mlx5_2".to_string()][..])
    );
    assert_eq!((d.gbps, d.supported_gbps), (Some(200.0), Some(400.0)));
    let rails: Vec<(&str, &str, bool)> = c
        .port_errors
        .iter()
        .map(|p| {
            (
                p.host.as_str(),
                p.adapter.as_str(),
                p.readings.iter().any(|r| r.saturated),
            )
        })
        .collect();
    assert_eq!(
        rails,
        [
            ("gpu0006", "mlx5_0", true),
            ("gpu0010", "mlx5_1", true),
            ("gpu0021", "mlx5_6", true),
            ("gpu0027", "mlx5_3", true),
            ("gpu0031", "mlx5_7", true),
        ]
    );
    let downed = c.port_errors[3]
        .readings
        .iter()
        .find(|r| r.counter == "LinkDownedCounter")
        .unwrap();
    assert_eq!(downed.value, 55);
    assert!(c.port_errors[1].climbing, "host 9's delta");
    assert_eq!(c.port_errors.iter().filter(|p| p.climbing).count(), 1);
    let text = peerpath::render::cabling::render_text(&c, "db_csv");
    assert_eq!(
        text.matches("at least 65,535 (saturated)").count(),
        5,
        "{text}"
    );
}

/// ibdiagnet's own `ibdiagnet2.ibnetdiscover` of the same run reads the same cabling: the
/// crossed host (and the HDR cable only as a slow-link warning: that format prints no
/// supported rate).
#[test]
fn ibdiagnet_ibnetdiscover_reads_the_same() {
    let (pod, faults) = ndr_pod_ibdiag();
    let text = ibdiagnet_ibnetdiscover(&pod, &faults);
    let m = parse(&text, detect(&text).unwrap(), "ibdiagnet2.ibnetdiscover").unwrap();
    let c = judge(&m, &[]);
    assert_eq!(c.hosts, 32);
    assert_eq!(c.leaves.len(), 8);
    let errors: Vec<&str> = c
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.host.as_deref().unwrap())
        .collect();
    assert_eq!(errors, ["gpu0018"], "{:#?}", c.findings);
    let slow: Vec<&str> = c
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::SlowLink)
        .map(|f| f.host.as_deref().unwrap())
        .collect();
    assert_eq!(slow, ["gpu0004"]);
}

/// Utah's `iblinkinfo` (mixed QDR/FDR10/FDR/EDR/HDR), read by hand: 4 lines carry `( Could be
/// 14.0625 Gbps)` — lines 3361/3880 (LID 9 port 36 ↔ LID 37 port 36) and 3766/3886 (LID 24
/// port 33 ↔ LID 16 port 5): 2 cables, each printed from both ends, both FDR10 where both
/// ends support FDR. Only those are slow (DEGRADED); the QDR ports on QDR-only hardware are
/// neither (before: 87 slow links; the "8" counted lines on both ends of more files).
#[test]
fn utah_iblinkinfo_slow_only_where_it_says_could_be() {
    let c = judge_published(
        "ibparserwrapper-iblinkinfo-utah-chpc-mixed-qdr-fdr-edr.out",
        &[],
    );
    assert!(
        !c.findings.iter().any(|f| f.kind == FindingKind::SlowLink),
        "{:#?}",
        c.findings
            .iter()
            .filter(|f| f.kind == FindingKind::SlowLink)
            .take(3)
            .collect::<Vec<_>>()
    );
    let degraded: Vec<&CablingFinding> = c
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::Degraded)
        .collect();
    assert_eq!(degraded.len(), 2, "{degraded:#?}");
    for f in &degraded {
        assert_eq!(f.gbps, Some(40.0), "4X FDR10");
        assert!(
            f.evidence
                .iter()
                .any(|e| e.contains("Could be 14.0625 Gbps")),
            "{:?}",
            f.evidence
        );
    }
}

/// Two ibdiagnet runs of one fabric (SYNTHESIZED db_csv), the earlier first: gpu0006's
/// rail-0 symbol errors rose from 100 to 150 between them — climbing by 50, an error — while
/// gpu0011's 65,535 (saturated in both) stays standing.
#[test]
fn cli_two_maps_counters_climbing_between() {
    let dir = tempfile::tempdir().unwrap();
    let (pod, _) = ndr_pod_ibdiag();
    let counter = |host, rail, value| PodFault::Counter {
        host,
        rail,
        counter: "SymbolErrorCounter",
        value,
        delta: false,
        leaf: false,
    };
    let before = dir.path().join("run1.db_csv");
    let after = dir.path().join("run2.db_csv");
    std::fs::write(
        &before,
        ibdiag_csv(&pod, &[counter(5, 0, 100), counter(10, 2, 65535)]),
    )
    .unwrap();
    std::fs::write(
        &after,
        ibdiag_csv(&pod, &[counter(5, 0, 150), counter(10, 2, 65535)]),
    )
    .unwrap();
    let o = common::peerpath()
        .args(["rails", "--format", "json", "--fabric-map"])
        .arg(&before)
        .arg("--fabric-map")
        .arg(&after)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pe = v["port_errors"].as_array().unwrap();
    assert_eq!(pe.len(), 2, "{pe:?}");
    assert_eq!(pe[0]["host"], "gpu0006");
    assert_eq!(pe[0]["climbing"], true);
    let rose = pe[0]["readings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["span"] == "delta")
        .unwrap();
    assert_eq!(rose["value"], 50);
    assert_eq!(pe[1]["host"], "gpu0011");
    assert_eq!(pe[1]["climbing"], false);
    assert!(v["findings"].as_array().unwrap().is_empty());
}
