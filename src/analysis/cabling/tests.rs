//! The speed and physical-layer rules on maps built here (the readers that fill
//! `supported_gbps` and `counters` from real files are tested beside them).

use super::*;
use crate::model::fabric::{
    CounterSpan, FabricLink, FabricNode, LinkEnd, LinkRate, NodeKind, PortCounters, Producer,
};

fn node(kind: NodeKind, guid: u64, desc: &str) -> FabricNode {
    FabricNode {
        kind,
        guid: Some(guid),
        desc: desc.into(),
        key: format!("{guid:x}"),
        ports: None,
    }
}

fn rate(gbps: f64, supported: Option<f64>) -> LinkRate {
    LinkRate {
        lanes: Some(4),
        generation: None,
        gbps: Some(gbps),
        raw: format!("4x {gbps}"),
        supported_gbps: supported,
        supported_raw: supported.map(|s| format!("both ends support {s}")),
    }
}

/// `hosts` hosts × 2 rails on two leaves (`Quantum-2 Mellanox Technologies` both, told apart
/// by GUID), every cable at 400 Gb/s with `supported` known or not.
fn pod(hosts: usize, supported: Option<f64>) -> FabricMap {
    pod_rails(hosts, 2, supported)
}

/// `hosts` hosts × `rails` rails on one leaf per rail, all described alike.
fn pod_rails(hosts: usize, rails: usize, supported: Option<f64>) -> FabricMap {
    let mut nodes: Vec<FabricNode> = (0..rails)
        .map(|r| {
            node(
                NodeKind::Switch,
                0xa0 + r as u64,
                "Quantum-2 Mellanox Technologies",
            )
        })
        .collect();
    let mut links = Vec::new();
    for h in 0..hosts {
        for r in 0..rails {
            let n = nodes.len();
            nodes.push(node(
                NodeKind::Ca,
                0x100 + (h * rails + r) as u64,
                &format!("h{h:02} mlx5_{r}"),
            ));
            links.push(FabricLink {
                a: LinkEnd {
                    node: r,
                    port: h as u32 + 1,
                    port_guid: None,
                },
                b: LinkEnd {
                    node: n,
                    port: 1,
                    port_guid: None,
                },
                port_names: None,
                rate: Some(rate(400.0, supported)),
                evidence: format!("map line {}", links.len() + 1),
                loopback: false,
            });
        }
    }
    FabricMap {
        producer: Producer::IbdiagnetCsv,
        nodes,
        links,
        counters: Vec::new(),
        limitations: Vec::new(),
    }
}

fn kinds(c: &Cabling) -> Vec<FindingKind> {
    c.findings.iter().map(|f| f.kind).collect()
}

#[test]
fn clean_pod_leaves_told_apart_by_guid() {
    let c = judge(&pod(4, Some(400.0)), &[]);
    assert!(c.findings.is_empty(), "{:#?}", c.findings);
    assert!(c.ok);
    assert_eq!(c.hosts, 4);
    let names: Vec<&str> = c.leaves.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Quantum-2 Mellanox Technologies (0x00000000000000a0)",
            "Quantum-2 Mellanox Technologies (0x00000000000000a1)"
        ]
    );
    assert_eq!(c.units.len(), 1);
    assert_eq!(c.units[0].leaves.len(), 2);
}

/// Trained down where both ends support more: degraded (error), whatever its peers run.
#[test]
fn degraded_only_where_both_ends_support_more() {
    let mut m = pod(4, Some(400.0));
    m.links[3].rate = Some(rate(200.0, Some(400.0)));
    let c = judge(&m, &[]);
    assert_eq!(kinds(&c), [FindingKind::Degraded]);
    let f = &c.findings[0];
    assert_eq!(f.severity, Severity::Error);
    assert_eq!((f.gbps, f.supported_gbps), (Some(200.0), Some(400.0)));
    assert_eq!(f.host.as_deref(), Some("h01"));
    assert_eq!(f.adapters, ["mlx5_1"]);
    assert!(f.evidence.iter().any(|e| e == "both ends support 400"));
    // At its hardware's own maximum: neither degraded nor slow, though slower than its peers.
    m.links[3].rate = Some(rate(200.0, Some(200.0)));
    assert!(judge(&m, &[]).findings.is_empty());
}

/// Where the map cannot say what the ends support, a slower link is a warning naming the
/// peers' rate, and the verdict stays ok.
#[test]
fn slower_than_peers_is_a_warning_where_the_map_cannot_say() {
    let mut m = pod(4, None);
    m.links[5].rate = Some(rate(200.0, None));
    let c = judge(&m, &[]);
    assert_eq!(kinds(&c), [FindingKind::SlowLink]);
    assert_eq!(c.findings[0].severity, Severity::Warning);
    assert_eq!(c.findings[0].peers_gbps, Some(400.0));
    assert!(c.ok);
}

fn counters(m: &mut FabricMap, node: usize, span: CounterSpan, values: &[(&str, u64)]) {
    m.counters.push(PortCounters {
        node,
        port: 1,
        span,
        values: values.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        evidence: format!("map PM row {}", m.counters.len() + 1),
    });
}

/// Standing counters over rdma-core's thresholds are warnings, a saturated 16-bit counter is
/// "at least 65,535", a link down 55 times named; a delta is climbing (an error).
#[test]
fn physical_layer_standing_saturated_and_climbing() {
    let mut m = pod(4, Some(400.0));
    // h00 mlx5_0 is node 2; h01 mlx5_1 node 5; h02 mlx5_0 node 6.
    counters(
        &mut m,
        2,
        CounterSpan::SinceClear,
        &[
            ("SymbolErrorCounter", 65535),
            ("LinkDownedCounter", 55),
            ("PortXmitDiscards", 3),
        ],
    );
    counters(
        &mut m,
        5,
        CounterSpan::SinceClear,
        &[("PortRcvErrors", 9), ("SymbolErrorCounter", 0)],
    );
    counters(
        &mut m,
        6,
        CounterSpan::Delta,
        &[("symbol_error_counter", 4)],
    );
    let c = judge(&m, &[]);
    assert_eq!(c.port_errors.len(), 2, "{:#?}", c.port_errors);
    let a = &c.port_errors[0];
    assert_eq!((a.host.as_str(), a.adapter.as_str()), ("h00", "mlx5_0"));
    assert!(!a.climbing);
    assert_eq!(a.readings.len(), 2, "PortXmitDiscards 3 is under its 100");
    assert!(a.readings[0].saturated && a.readings[0].value == 65535);
    assert_eq!(
        (a.readings[1].counter.as_str(), a.readings[1].value),
        ("LinkDownedCounter", 55)
    );
    assert!(!a.readings[1].saturated);
    let b = &c.port_errors[1];
    assert_eq!(b.host, "h02");
    assert!(b.climbing);
    assert!(!c.ok, "a climbing counter fails the verdict");
    // Standing only: said, the cabling verdict stays ok.
    m.counters.pop();
    assert!(judge(&m, &[]).ok);
}

/// A host on another unit's leaf is named; crossed cables judged by map names.
#[test]
fn other_unit_and_crossed_by_names() {
    // 8 hosts × 3 rails; h04–h07 moved to three more leaves: a second unit.
    let mut m = pod_rails(8, 3, Some(400.0));
    for r in 0..3 {
        m.nodes
            .push(node(NodeKind::Switch, 0xb0 + r, &format!("leaf-b{r}")));
    }
    let b0 = m.nodes.len() - 3;
    for l in m.links.iter_mut().skip(12) {
        l.a.node += b0;
    }
    // h07's rail-1 cable (link 22) on unit 1's rail-1 leaf.
    m.links[22].a.node = 1;
    // h02's rail-0 and rail-1 cables (links 6, 7) crossed.
    m.links[6].a.node = 1;
    m.links[7].a.node = 0;
    let c = judge(&m, &[]);
    assert_eq!(
        kinds(&c),
        [FindingKind::Crossed, FindingKind::OtherUnit],
        "{:#?}",
        c.findings
    );
    assert_eq!(c.findings[0].host.as_deref(), Some("h02"));
    assert_eq!(c.findings[0].adapters, ["mlx5_0", "mlx5_1"]);
    assert_eq!(c.findings[1].host.as_deref(), Some("h07"));
    assert_eq!(c.findings[1].should_reach, ["leaf-b1"]);
}

fn two_rail_layout() -> NodeLayout {
    NodeLayout::one_adapter_per_rail(2, "layout")
}

/// A host naming its adapters `HCA-K` (not the layout's names) on leaves whose other adapters
/// the layout pairs: paired by its leaf's rail, its GPU named, never dropped. Where no adapter
/// of its leaf is paired, judged from the map alone and counted as not paired.
#[test]
fn map_names_not_the_layouts_pair_by_their_leaf_rail() {
    let mut m = pod(4, Some(400.0));
    for r in 0..2 {
        let i = 2 + 3 * 2 + r; // h03's adapters
        m.nodes[i].desc = format!("h03 HCA-{}", r + 1);
    }
    let c = judge(&m, &[two_rail_layout()]);
    assert_eq!(c.hosts, 4);
    assert_eq!(c.adapters_matched, 8);
    assert_eq!(c.matched_by.get("leaf rail"), Some(&2));
    assert!(c.findings.is_empty(), "{:#?}", c.findings);
    // Every host HCA-named: nothing pairs; all judged from the map alone, all said.
    let mut m = pod(4, Some(400.0));
    for n in m.nodes.iter_mut().skip(2) {
        n.desc = n.desc.replace("mlx5_0", "HCA-1").replace("mlx5_1", "HCA-2");
    }
    let c = judge(&m, &[two_rail_layout()]);
    assert_eq!((c.hosts, c.adapters_matched, c.unmatched_total), (4, 0, 8));
    assert!(
        c.limitations
            .iter()
            .any(|l| l.contains("judged from the map alone"))
    );
}

/// Two maps of one fabric: the rise between them is climbing; a counter saturated before
/// shows no rise; one lower after was cleared between (its value is the rise).
#[test]
fn counters_climbing_between_two_maps() {
    let mut before = pod(4, Some(400.0));
    counters(
        &mut before,
        2,
        CounterSpan::SinceClear,
        &[("SymbolErrorCounter", 20), ("LinkDownedCounter", 255)],
    );
    counters(
        &mut before,
        5,
        CounterSpan::SinceClear,
        &[("PortRcvErrors", 50)],
    );
    counters(
        &mut before,
        6,
        CounterSpan::SinceClear,
        &[("PortRcvErrors", 7)],
    );
    let mut after = pod(4, Some(400.0));
    counters(
        &mut after,
        2,
        CounterSpan::SinceClear,
        &[("SymbolErrorCounter", 30), ("LinkDownedCounter", 255)],
    );
    counters(
        &mut after,
        5,
        CounterSpan::SinceClear,
        &[("PortRcvErrors", 5)],
    );
    counters(
        &mut after,
        6,
        CounterSpan::SinceClear,
        &[("PortRcvErrors", 7)],
    );
    let rises = counters::between(&before, &after);
    let got: Vec<(usize, Vec<(String, u64)>)> =
        rises.iter().map(|c| (c.node, c.values.clone())).collect();
    assert_eq!(
        got,
        [
            (2, vec![("SymbolErrorCounter".to_string(), 10)]),
            (5, vec![("PortRcvErrors".to_string(), 5)]),
        ]
    );
    after.counters.extend(rises);
    let c = judge(&after, &[]);
    let climbing: Vec<&str> = c
        .port_errors
        .iter()
        .filter(|p| p.climbing)
        .map(|p| p.host.as_str())
        .collect();
    assert_eq!(climbing, ["h00", "h01"]);
    assert!(!c.ok);
}
