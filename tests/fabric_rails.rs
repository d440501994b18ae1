//! Rail cabling from the fabric's own map: published maps parsed, synthesized pods judged
//! (clean, swapped cables, a collapsed rail, a slow link, an unplugged cable), and the
//! command run end to end on a synthesized node layout.

mod common;

use peerpath::analysis::cabling::{Cabling, FindingKind, Rail, judge};
use peerpath::model::fabric::{NodeKind, Producer};
use peerpath::parse::fabric::{detect, parse, parse_lldpctl};
use peerpath::synth::fabric::{
    Pod, PodFault, iblinkinfo, ibnetdiscover, ibnetdiscover_ports, layout,
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
