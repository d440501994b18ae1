//! Rail cabling from the fabric's own map: published maps parsed, synthesized pods judged
//! (clean, swapped cables, a collapsed rail, a slow link, an unplugged cable), and the
//! command run end to end on a synthesized node layout.

mod common;

use peerpath::analysis::cabling::{Cabling, CablingFinding, FindingKind, Rail, Severity, judge};
use peerpath::model::fabric::{NodeKind, Producer};
use peerpath::parse::fabric::{detect, parse, parse_lldpctl};
use peerpath::synth::fabric::{
    Pod, PodFault, SWITCH_DESC, ibdiag_csv, ibdiagnet_ibnetdiscover, iblinkinfo, ibnetdiscover,
    ibnetdiscover_ports, layout, ndr_pod_ibdiag,
};
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
        // One finding: the pair, crossed (was two wrong-rail findings before issue 50).
        assert_eq!(c.findings.len(), 1, "{n}: {:#?}", c.findings);
        let f = &c.findings[0];
        assert_eq!(f.kind, FindingKind::Crossed);
        assert_eq!(
            f.host.as_deref(),
            Some(host.as_str()),
            "no other host blamed"
        );
        assert_eq!(f.adapters, ["mlx5_2", "mlx5_5"]);
        assert_eq!(f.gpus, ["GPU2", "GPU5"]);
        assert_eq!(f.leaves, [Pod::leaf(5, g), Pod::leaf(2, g)]);
        assert_eq!(
            f.should_reach,
            [Pod::leaf(2, g), Pod::leaf(5, g)],
            "{n}: each the other's leaf, of its own unit"
        );
        assert_eq!(f.rail, Some(Rail::Index(2)));
        assert_eq!(f.leaf_rail, Some(Rail::Index(5)));
        let port = (h % 32 + 1).to_string();
        assert_eq!(f.leaf_ports, [port.clone(), port]);
        assert!(f.evidence[0].starts_with("pod line "));
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
    assert_eq!(
        mixed[0].rails_on_leaf,
        [(Rail::Index(2), 4), (Rail::Index(3), 4)]
    );
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
        [(
            "gpu0007".into(),
            "mlx5_2,mlx5_5".into(),
            "leaf-r5-su0".into(),
            vec!["leaf-r2-su0".to_string(), "leaf-r5-su0".to_string()]
        )]
    );
}

fn pod_file(dir: &std::path::Path, n: usize, faults: &[PodFault]) -> PathBuf {
    let p = dir.join(format!("pod{n}.ibnetdiscover"));
    std::fs::write(&p, ibnetdiscover(&Pod::new(n), faults)).unwrap();
    p
}

fn node_layout(dir: &std::path::Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let st = common::peerpath()
        .args(["fixture", "hgx-h100", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(st.status.success());
    out
}

#[test]
fn cli_rails_fabric_exit_codes_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let node = node_layout(dir.path(), "h100.tar.gz");
    let run = |map: &std::path::Path, json: bool| {
        let mut c = common::peerpath();
        c.args(["rails", "-i"])
            .arg(&node)
            .arg("--fabric-map")
            .arg(map);
        if json {
            c.args(["--format", "json"]);
        }
        c.output().unwrap()
    };
    // A clean pod exits 0.
    let clean = pod_file(dir.path(), 8, &[]);
    let o = run(&clean, false);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("64 adapter ports paired"), "{text}");
    // Swapped rail-2/rail-5 cables on gpu0003: exit 1, both adapters and both leaves named.
    let bad = dir.path().join("swapped.ibnetdiscover");
    std::fs::write(
        &bad,
        ibnetdiscover(
            &Pod::new(8),
            &[PodFault::SwapRails {
                host: 2,
                a: 2,
                b: 5,
            }],
        ),
    )
    .unwrap();
    let o = run(&bad, false);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("CROSSED      gpu0003: mlx5_2 on leaf-r5-su0 port 3 (a rail-5 leaf) and mlx5_5 on leaf-r2-su0 port 3 (a rail-2 leaf): crossed cables"),
        "{text}"
    );
    assert_eq!(text.matches("CROSSED").count(), 1, "{text}");
    let o = run(&bad, true);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], peerpath::analysis::cabling::CABLING_SCHEMA);
    assert_eq!(v["findings"][0]["kind"], "crossed");
    assert_eq!(v["findings"][0]["host"], "gpu0003");
    assert_eq!(v["findings"][0]["should_reach"][1], "leaf-r5-su0");
    // Not a map: a clear error, exit 2.
    let o = run(&node, false);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a fabric map peerpath reads") || err.contains("UTF-8"),
        "{err}"
    );
}

#[test]
fn cli_directory_of_captures_named_by_host() {
    let dir = tempfile::tempdir().unwrap();
    let caps = dir.path().join("caps");
    std::fs::create_dir(&caps).unwrap();
    node_layout(&caps, "gpu0001.tar.gz");
    std::fs::copy(caps.join("gpu0001.tar.gz"), caps.join("gpu0002.tar.gz")).unwrap();
    // gpu0002's rail-6 cable unplugged: absent, named with the capture's evidence. The map
    // names hosts by FQDN, the captures by short name.
    let map = pod_file(dir.path(), 4, &[PodFault::Unplugged { host: 1, rail: 6 }]);
    let fqdn = std::fs::read_to_string(&map)
        .unwrap()
        .replace(" mlx5_", ".cluster.example mlx5_");
    std::fs::write(&map, fqdn).unwrap();
    let o = common::peerpath()
        .args(["rails", "--format", "json", "-i"])
        .arg(&caps)
        .arg("--fabric-map")
        .arg(&map)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["hosts"], 4,
        "gpu0003 and gpu0004 judged too (peerpath.cabling/2)"
    );
    assert_eq!(v["adapters_matched"], 15);
    assert_eq!(
        v["unmatched_total"], 16,
        "gpu0003 and gpu0004 have no capture"
    );
    let f = &v["findings"];
    assert_eq!(f.as_array().unwrap().len(), 1, "{f}");
    assert_eq!(f[0]["kind"], "absent");
    assert_eq!(f[0]["host"], "gpu0002");
    assert_eq!(f[0]["adapters"][0], "mlx5_6");
    assert!(
        f[0]["evidence"][0]
            .as_str()
            .unwrap()
            .contains("mlx5_6 port 1 state ACTIVE"),
        "{f}"
    );
}

/// Which netdev the hgx-h100 capture gives each RDMA device (`mlx5_3` → its interface).
fn netdevs(node: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let o = common::peerpath()
        .args(["scan", "--format", "json", "-i"])
        .arg(node)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut netdev_of: std::collections::BTreeMap<String, String> = Default::default();
    for d in v["devices"].as_array().unwrap() {
        let os = d["os_devices"].as_array().cloned().unwrap_or_default();
        let rdma = os.iter().find(|o| o["kind"] == "rdma");
        let net = os.iter().find(|o| o["kind"] == "net");
        if let (Some(r), Some(n)) = (rdma, net) {
            netdev_of.insert(
                r["name"].as_str().unwrap().to_string(),
                n["name"].as_str().unwrap().to_string(),
            );
        }
    }
    netdev_of
}

#[test]
fn cli_lldp_directory_per_host() {
    let dir = tempfile::tempdir().unwrap();
    let node = node_layout(dir.path(), "h100.tar.gz");
    let netdev_of = netdevs(&node);
    assert_eq!(
        netdev_of.len(),
        8,
        "the hgx-h100 fixture gives each RDMA device a netdev"
    );
    let maps = dir.path().join("lldp");
    std::fs::create_dir(&maps).unwrap();
    for h in ["gpu0001", "gpu0002", "gpu0003"] {
        let mut ifs = Vec::new();
        for r in 0..8 {
            // gpu0002's rail 1 and rail 6 swapped.
            let leaf_rail = match (h, r) {
                ("gpu0002", 1) => 6,
                ("gpu0002", 6) => 1,
                _ => r,
            };
            let ifname = &netdev_of[&format!("mlx5_{r}")];
            ifs.push(serde_json::json!({ ifname.clone(): {
                "via": "LLDP",
                "chassis": { format!("leaf-r{leaf_rail}"): { "id": { "type": "mac", "value": "aa:bb:cc:00:00:0{leaf_rail}" } } },
                "port": { "id": { "type": "ifname", "value": format!("swp{}", &h[3..]) } }
            }}));
        }
        let doc = serde_json::json!({ "lldp": { "interface": ifs } });
        std::fs::write(maps.join(format!("{h}.json")), doc.to_string()).unwrap();
    }
    let o = common::peerpath()
        .args(["rails", "--format", "json", "-i"])
        .arg(&node)
        .arg("--fabric-map")
        .arg(&maps)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["adapters_matched"], 24);
    let f = v["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0]["kind"], "crossed");
    assert_eq!(f[0]["host"], "gpu0002");
    assert_eq!(f[0]["adapters"][0], "mlx5_1");
    assert_eq!(f[0]["adapters"][1], "mlx5_6");
    assert_eq!(f[0]["leaves"][0], "leaf-r6");
    assert_eq!(f[0]["leaves"][1], "leaf-r1");
    assert_eq!(f[0]["should_reach"][0], "leaf-r1");
}

/// A capture records each adapter's node GUID, node description and GID 0; the map is matched
/// through the GUID when the description does not name the host (the driver's default before
/// the host name is set). Fails without the sysfs reads and the whitelist entries.
#[test]
fn capture_records_guids_and_the_map_matches_by_them() {
    let dir = tempfile::tempdir().unwrap();
    let node = node_layout(dir.path(), "h100.tar.gz");
    let (_guard, root) = common::extract(&node);
    // Host gpu0007 of the synthesized pod: its adapters' GUIDs are a088c203000006<rail>.
    for r in 0..8 {
        let d = root.join(format!("sys/class/infiniband/mlx5_{r}"));
        let d = std::fs::canonicalize(&d).unwrap();
        std::fs::write(d.join("node_guid"), format!("a088:c203:0000:060{r}\n")).unwrap();
        std::fs::write(d.join("node_desc"), format!("gpu0007 mlx5_{r}\n")).unwrap();
        let g = d.join("ports/1/gids");
        std::fs::create_dir_all(&g).unwrap();
        std::fs::write(
            g.join("0"),
            format!("fe80:0000:0000:0000:a088:c203:0000:060{r}\n"),
        )
        .unwrap();
    }
    let caps = dir.path().join("caps");
    std::fs::create_dir(&caps).unwrap();
    let cap = caps.join("gpu0007.tar.gz");
    let o = common::peerpath()
        .args(["capture", "--keep-serials", "-i"])
        .arg(&root)
        .arg("-o")
        .arg(&cap)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The capture holds the three files for every adapter.
    let names: Vec<String> = {
        let f = std::fs::File::open(&cap).unwrap();
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
        a.entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    for f in ["node_guid", "node_desc", "ports/1/gids/0"] {
        let n = names
            .iter()
            .filter(|p| p.contains("/infiniband/mlx5_") && p.ends_with(f))
            .count();
        assert_eq!(n, 8, "{f} archived for every adapter");
    }
    // Without --keep-serials the GUIDs are left out whole, the description kept.
    let plain = dir.path().join("plain.tar.gz");
    let o = common::peerpath()
        .args(["capture", "-i"])
        .arg(&root)
        .arg("-o")
        .arg(&plain)
        .output()
        .unwrap();
    assert!(o.status.success());
    let names_plain: Vec<String> = {
        let f = std::fs::File::open(&plain).unwrap();
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
        a.entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert!(
        !names_plain
            .iter()
            .any(|n| n.ends_with("node_guid") || n.ends_with("gids/0"))
    );
    assert_eq!(
        names_plain
            .iter()
            .filter(|n| n.ends_with("node_desc"))
            .count(),
        8
    );
    // The map names gpu0007's adapters by the driver's default description only.
    let pod = Pod::new(8);
    let text = ibnetdiscover(
        &pod,
        &[PodFault::SwapRails {
            host: 6,
            a: 0,
            b: 7,
        }],
    )
    .replace("\"gpu0007 mlx5_", "\"MT4129 ConnectX-7 mlx5_");
    let map = dir.path().join("pod.ibnetdiscover");
    std::fs::write(&map, text).unwrap();
    let o = common::peerpath()
        .args(["rails", "--format", "json", "-i"])
        .arg(&caps)
        .arg("--fabric-map")
        .arg(&map)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["matched_by"]["guid"], 8, "{v}");
    let f = v["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0]["kind"], "crossed");
    assert_eq!(f[0]["host"], "gpu0007");
    assert_eq!(f[0]["adapters"][0], "mlx5_0");
    assert_eq!(f[0]["adapters"][1], "mlx5_7");
    assert_eq!(f[0]["leaves"][0], "leaf-r7-su0");
}

/// Bad input: every published map and a small pod, cut at many points and with bytes changed,
/// is read or refused with a line number, never a panic.
#[test]
fn truncated_and_corrupted_maps_never_panic() {
    let mut inputs: Vec<String> = [
        "ibnetdiscover-manpage.txt",
        "iblinkinfo-archwiki.txt",
        "iblinkinfo-teaker.txt",
        "lldpctl-json-lldpd-tests.json",
        "lldpctl-json0-lldpd-tests.json",
    ]
    .iter()
    .map(|f| published(f))
    .collect();
    inputs.push(ibnetdiscover(&Pod::new(4), &[]));
    let mut seed: u64 = 40;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for t in &inputs {
        let b = t.as_bytes();
        for i in 0..200 {
            let mut v = b[..(next() as usize % (b.len() + 1))].to_vec();
            if i % 2 == 1 && !v.is_empty() {
                for _ in 0..4 {
                    let at = next() as usize % v.len();
                    v[at] = [b'[', b']', b'"', b'#', b'(', 0xff, b' ', b'\n', b'x']
                        [next() as usize % 9];
                }
            }
            let s = String::from_utf8_lossy(&v);
            for p in [
                Producer::Ibnetdiscover,
                Producer::IbnetdiscoverPorts,
                Producer::Iblinkinfo,
                Producer::IbdiagnetCsv,
            ] {
                if let Ok(m) = parse(&s, p, "x") {
                    let _ = judge(&m, &[layout(&Pod::new(4))]);
                }
            }
            let _ = parse_lldpctl(&s, "h", "x");
            let _ = detect(&s);
        }
    }
}

/// One pod, its faults, printed by three producers (`ibnetdiscover`, `ibnetdiscover -p`,
/// `iblinkinfo`), judged alike: the same hosts, adapters, leaves and ports named.
#[test]
fn three_producers_one_verdict() {
    let pod = Pod::new(96);
    let faults = [
        PodFault::SwapRails {
            host: 70,
            a: 2,
            b: 5,
        },
        PodFault::Slow {
            host: 3,
            rail: 1,
            rate: "4xHDR",
        },
        PodFault::Unplugged { host: 40, rail: 7 },
    ];
    let key = |c: &Cabling| -> Vec<String> {
        c.findings
            .iter()
            .map(|f| {
                // What a map can show of a slow link differs (iblinkinfo's "Could be" note
                // makes it degraded; ibnetdiscover only slower than its peers): same place.
                let kind = match f.kind {
                    FindingKind::Degraded | FindingKind::SlowLink => "speed".to_string(),
                    k => format!("{k:?}"),
                };
                format!(
                    "{kind} {:?} {:?} {:?} {:?} {:?}",
                    f.host, f.adapters, f.leaf, f.leaf_ports, f.should_reach
                )
            })
            .collect()
    };
    let mut verdicts = Vec::new();
    for (producer, text) in [
        (Producer::Ibnetdiscover, ibnetdiscover(&pod, &faults)),
        (
            Producer::IbnetdiscoverPorts,
            ibnetdiscover_ports(&pod, &faults),
        ),
        (Producer::Iblinkinfo, iblinkinfo(&pod, &faults)),
    ] {
        assert_eq!(detect(&text), Some(producer));
        let m = parse(&text, producer, "pod").unwrap();
        let c = judge(&m, &[layout(&pod)]);
        assert_eq!(c.adapters_matched, 96 * 8 - 1, "{producer:?}");
        // iblinkinfo's "Could be" note shows both ends support NDR: degraded; the others
        // cannot say: slower than its peers.
        let speed = if producer == Producer::Iblinkinfo {
            FindingKind::Degraded
        } else {
            FindingKind::SlowLink
        };
        assert!(c.findings.iter().any(|f| f.kind == speed), "{producer:?}");
        verdicts.push(key(&c));
    }
    assert_eq!(
        verdicts[0].len(),
        3,
        "crossed, slow, absent: {:#?}",
        verdicts[0]
    );
    assert_eq!(verdicts[0], verdicts[1]);
    assert_eq!(verdicts[0], verdicts[2]);
}

/// The HTML report draws the cabling: both wrong cables and the leaves they should reach.
#[test]
fn report_draws_the_cabling() {
    let dir = tempfile::tempdir().unwrap();
    let node = node_layout(dir.path(), "h100.tar.gz");
    let map = common::repo().join("fixtures/fabric/pods/pod16-gpu0007-r2r5-swapped.ibnetdiscover");
    let out = dir.path().join("r.html");
    let o = common::peerpath()
        .args(["report", "-i"])
        .arg(&node)
        .arg("--fabric-map")
        .arg(&map)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    let at = html
        .find("<h2>Rail cabling</h2>")
        .expect("a cabling section");
    let sec = &html[at..];
    assert!(sec.contains("1 cabling error(s)"));
    assert!(sec.contains(r#"class="cabling""#));
    assert!(sec.contains("<title>should reach leaf-r2-su0</title>"));
    assert!(sec.contains("<title>should reach leaf-r5-su0</title>"));
    assert!(sec.contains("mlx5_2 (GPU2)"));
    assert_eq!(
        sec.matches(r##"stroke="#c00""##).count(),
        2,
        "two wrong cables drawn"
    );
}

/// LLDP as the switches see it (lldpd on Cumulus Linux / SONiC): one file per leaf, each port
/// naming the host and its interface; gpu0002's rail-1 and rail-6 cables swapped.
#[test]
fn cli_lldp_from_switches() {
    let dir = tempfile::tempdir().unwrap();
    let node = node_layout(dir.path(), "h100.tar.gz");
    let netdev_of = netdevs(&node);
    assert_eq!(netdev_of.len(), 8);
    let maps = dir.path().join("lldp-sw");
    std::fs::create_dir(&maps).unwrap();
    for leaf in 0..8 {
        let mut ifs = Vec::new();
        for (i, h) in ["gpu0001", "gpu0002", "gpu0003"].iter().enumerate() {
            let rail = match (*h, leaf) {
                ("gpu0002", 1) => 6,
                ("gpu0002", 6) => 1,
                _ => leaf,
            };
            let ifname = &netdev_of[&format!("mlx5_{rail}")];
            ifs.push(serde_json::json!({ format!("swp{}", i + 1): {
                "via": "LLDP",
                "chassis": { h.to_string(): { "id": { "type": "mac", "value": "aa:bb:cc:00:00:01" } } },
                "port": { "id": { "type": "ifname", "value": ifname } }
            }}));
        }
        let doc = serde_json::json!({ "lldp": { "interface": ifs } });
        std::fs::write(maps.join(format!("leaf-r{leaf}.json")), doc.to_string()).unwrap();
    }
    let o = common::peerpath()
        .args(["rails", "--format", "json", "--lldp-from", "switch", "-i"])
        .arg(&node)
        .arg("--fabric-map")
        .arg(&maps)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["adapters_matched"], 24);
    let f = v["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0]["kind"], "crossed");
    assert_eq!(f[0]["host"], "gpu0002");
    assert_eq!(f[0]["adapters"][0], "mlx5_1");
    assert_eq!(f[0]["adapters"][1], "mlx5_6");
    assert_eq!(f[0]["leaves"][0], "leaf-r6");
    assert_eq!(f[0]["leaves"][1], "leaf-r1");
    assert_eq!(f[0]["leaf_ports"][0], "swp2");
    assert_eq!(f[0]["should_reach"][0], "leaf-r1");
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
/// neither (before: 87 slow links; the issue's "8" counted lines on both ends of more files).
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
