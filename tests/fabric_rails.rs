//! Rail cabling from the fabric's own map: published maps parsed, synthesized pods judged
//! (clean, swapped cables, a collapsed rail, a slow link, an unplugged cable), and the
//! command run end to end on a synthesized node layout.

mod common;

use peerpath::analysis::cabling::{Cabling, FindingKind, judge};
use peerpath::model::fabric::{NodeKind, Producer};
use peerpath::parse::fabric::{detect, parse, parse_lldpctl};
use peerpath::synth::fabric::{Pod, PodFault, ibnetdiscover, layout};
use std::path::PathBuf;

fn published(name: &str) -> String {
    std::fs::read_to_string(common::repo().join("fixtures/fabric/published").join(name)).unwrap()
}

#[test]
fn published_ibnetdiscover_manpage_example() {
    let t = published("ibnetdiscover-manpage.txt");
    assert_eq!(detect(&t), Some(Producer::Ibnetdiscover));
    let m = parse(&t, Producer::Ibnetdiscover, "man").unwrap();
    assert_eq!(m.nodes.len(), 6);
    assert_eq!(m.links.len(), 7, "each cable once, from whichever end");
    let switches = m
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .count();
    assert_eq!(switches, 2);
    // ISR9024 port 12 ↔ the InfiniHost's port 1: printed 4xSDR by the switch (first seen).
    let isr = m
        .nodes
        .iter()
        .position(|n| n.desc == "ISR9024 Voltaire")
        .unwrap();
    let l = m
        .links
        .iter()
        .find(|l| (l.a.node, l.a.port) == (isr, 12))
        .unwrap();
    assert_eq!(l.rate.as_ref().unwrap().raw, "4xSDR");
    assert_eq!(l.b.port_guid, Some(0x8f10403960559));
    assert_eq!(l.rate.as_ref().unwrap().gbps, Some(10.0));
}

#[test]
fn published_iblinkinfo() {
    let t = published("iblinkinfo-archwiki.txt");
    assert_eq!(detect(&t), Some(Producer::Iblinkinfo));
    let m = parse(&t, Producer::Iblinkinfo, "arch").unwrap();
    assert_eq!(m.links.len(), 1, "two adapters back to back: one cable");
    assert_eq!(m.links[0].rate.as_ref().unwrap().gbps, Some(20.0), "4X DDR");
    let t = published("iblinkinfo-teaker.txt");
    let m = parse(&t, Producer::Iblinkinfo, "teaker").unwrap();
    assert_eq!(
        m.links.len(),
        9,
        "8 hosts, teaker-9 cabled twice; down ports skipped"
    );
    let sw: Vec<_> = m
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .collect();
    assert_eq!(sw.len(), 1);
    assert_eq!(sw[0].guid, Some(0x0002c902004b2678));
    assert!(
        m.links
            .iter()
            .all(|l| l.rate.as_ref().unwrap().gbps == Some(40.0))
    );
}

#[test]
fn published_lldpctl_both_forms() {
    for f in [
        "lldpctl-json-lldpd-tests.json",
        "lldpctl-json0-lldpd-tests.json",
    ] {
        let t = published(f);
        assert_eq!(detect(&t), Some(Producer::Lldpctl));
        let m = parse_lldpctl(&t, "ns-1", f).unwrap();
        assert_eq!(m.links.len(), 1, "{f}");
        let l = &m.links[0];
        assert_eq!(m.nodes[l.a.node].desc, "ns-2.example.com", "{f}");
        assert_eq!(
            l.port_names,
            Some(("eth1".to_string(), "eth0".to_string())),
            "{f}: the port id is a MAC, its description names the port"
        );
    }
}

fn judge_pod(pod: &Pod, faults: &[PodFault]) -> Cabling {
    let text = ibnetdiscover(pod, faults);
    let m = parse(&text, Producer::Ibnetdiscover, "pod").unwrap();
    judge(&m, &[layout(pod)])
}

#[test]
fn clean_pods_from_4_to_1024_nodes() {
    for n in [4, 64, 1024] {
        let pod = Pod::new(n);
        let c = judge_pod(&pod, &[]);
        assert!(c.findings.is_empty(), "{n}: {:?}", c.findings);
        assert!(c.ok);
        assert_eq!(c.hosts, n);
        assert_eq!(c.adapters_matched, n * 8);
        assert_eq!(c.leaves.len(), 8 * n.div_ceil(32));
        assert!(c.leaves.iter().all(|l| l.rail.is_some()));
    }
}

#[test]
fn swapped_rail_2_and_5_named_exactly() {
    for n in [4, 64, 1024] {
        let pod = Pod::new(n);
        let h = n - 2;
        let c = judge_pod(
            &pod,
            &[PodFault::SwapRails {
                host: h,
                a: 2,
                b: 5,
            }],
        );
        assert!(!c.ok);
        let host = Pod::host(h);
        let g = h / 32;
        assert_eq!(c.findings.len(), 2, "{n}: {:#?}", c.findings);
        for f in &c.findings {
            assert_eq!(f.kind, FindingKind::WrongRail);
            assert_eq!(
                f.host.as_deref(),
                Some(host.as_str()),
                "no other host blamed"
            );
        }
        let (f2, f5) = (&c.findings[0], &c.findings[1]);
        assert_eq!(f2.adapters, ["mlx5_2"]);
        assert_eq!(f2.gpus, ["GPU2"]);
        assert_eq!(f2.leaf.as_deref(), Some(Pod::leaf(5, g).as_str()));
        assert_eq!(
            f2.should_reach,
            [Pod::leaf(2, g)],
            "{n}: the leaf of its own unit"
        );
        assert_eq!(f5.adapters, ["mlx5_5"]);
        assert_eq!(f5.leaf.as_deref(), Some(Pod::leaf(2, g).as_str()));
        assert_eq!(f5.should_reach, [Pod::leaf(5, g)]);
        assert_eq!(f2.leaf_ports, [(h % 32 + 1).to_string()]);
        assert!(f2.evidence[0].starts_with("pod line "));
    }
}

#[test]
fn rail_collapsed_onto_one_leaf() {
    let pod = Pod::new(4);
    // Every host's rail-3 cable on rail 2's leaf: that leaf carries two rails half and half.
    let faults: Vec<PodFault> = (0..4)
        .map(|host| PodFault::Collapse {
            host,
            from: 3,
            onto: 2,
        })
        .collect();
    let c = judge_pod(&pod, &faults);
    let mixed: Vec<_> = c
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::MixedLeaf)
        .collect();
    assert_eq!(mixed.len(), 1);
    assert_eq!(mixed[0].leaf.as_deref(), Some("leaf-r2-su0"));
    assert_eq!(mixed[0].rails_on_leaf, [(2, 4), (3, 4)]);
    let shared = c
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::SharedLeaf)
        .count();
    assert_eq!(shared, 4, "each host: mlx5_2 and mlx5_3 on one leaf");
    // One host's cable alone: the leaf keeps its rail, the adapter is on the wrong one.
    let c = judge_pod(
        &pod,
        &[PodFault::Collapse {
            host: 1,
            from: 3,
            onto: 2,
        }],
    );
    let kinds: Vec<FindingKind> = c.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FindingKind::WrongRail, FindingKind::SharedLeaf]);
    assert_eq!(c.findings[0].adapters, ["mlx5_3"]);
    assert_eq!(c.findings[0].should_reach, ["leaf-r3-su0"]);
}

#[test]
fn slow_and_narrow_links_and_an_unplugged_cable() {
    let pod = Pod::new(64);
    let c = judge_pod(
        &pod,
        &[
            PodFault::Slow {
                host: 7,
                rail: 4,
                rate: "2xNDR",
            },
            PodFault::Slow {
                host: 40,
                rail: 0,
                rate: "4xHDR",
            },
            PodFault::Unplugged { host: 12, rail: 6 },
        ],
    );
    let slow: Vec<_> = c
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::SlowLink)
        .collect();
    assert_eq!(slow.len(), 2, "{:#?}", c.findings);
    assert_eq!(slow[0].host.as_deref(), Some("gpu0008"));
    assert_eq!(slow[0].adapters, ["mlx5_4"]);
    assert_eq!(
        (slow[0].gbps, slow[0].peers_gbps),
        (Some(200.0), Some(400.0))
    );
    assert_eq!(slow[0].rate.as_deref(), Some("2xNDR"));
    assert_eq!(slow[1].host.as_deref(), Some("gpu0041"));
    let absent: Vec<_> = c
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::Absent)
        .collect();
    assert_eq!(absent.len(), 1);
    assert_eq!(absent[0].host.as_deref(), Some("gpu0013"));
    assert_eq!(absent[0].adapters, ["mlx5_6"]);
    assert_eq!(c.findings.len(), 3);
}

/// The pod kept aside: a 16-node map with gpu0007's rail-2 and rail-5 cables swapped, written
/// once by the synthesizer and committed; its verdict is written here, not derived.
#[test]
fn kept_aside_pod() {
    let p: PathBuf =
        common::repo().join("fixtures/fabric/pods/pod16-gpu0007-r2r5-swapped.ibnetdiscover");
    let t = std::fs::read_to_string(&p).unwrap();
    let m = parse(&t, detect(&t).unwrap(), "pod16").unwrap();
    let c = judge(&m, &[layout(&Pod::new(16))]);
    let got: Vec<(String, String, String, Vec<String>)> = c
        .findings
        .iter()
        .map(|f| {
            (
                f.host.clone().unwrap(),
                f.adapters.join(","),
                f.leaf.clone().unwrap(),
                f.should_reach.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "gpu0007".into(),
                "mlx5_2".into(),
                "leaf-r5-su0".into(),
                vec!["leaf-r2-su0".to_string()]
            ),
            (
                "gpu0007".into(),
                "mlx5_5".into(),
                "leaf-r2-su0".into(),
                vec!["leaf-r5-su0".to_string()]
            ),
        ]
    );
}
