//! The cluster's topology for its scheduler (`export --format slurm-topology`,
//! `slurm-topology-yaml`, `k8s-topology`, `kueue-topology`; issue 52): the published DGX H100
//! SuperPOD plane (NVIDIA topograph's `tests/output/ibnetdiscover/example.out`) gives its 8
//! scalable units, hosts grouped exactly by the rail leaves they reach, one switch over all;
//! synthesized pods (labelled so: `synth::fabric`) give a crossed cable, a missing cable and
//! NVLink domains; a hostile name never makes a live line; and real Slurm (Debian 12's
//! slurmctld 22.05, tests/slurm/topo.sh) loads the tree and places a `--switches=1` job inside
//! one unit.

mod common;

use peerpath::analysis::cabling::FindingKind;
use peerpath::analysis::schedtopo::{self, BlockBasis, SchedOptions, SchedTopo};
use peerpath::model::fabric::{FabricMap, NodeKind};
use peerpath::parse::fabric::{detect, parse};
use peerpath::render::schedtopo as out;
use peerpath::synth::fabric::{Pod, PodFault, ibnetdiscover};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const PLANE: &str = "fixtures/fabric/published/topograph-ibnetdiscover-dgx-h100-ndr-example.out";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

fn load(path: &str) -> FabricMap {
    let t = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    parse(&t, detect(&t).unwrap(), path).unwrap()
}

fn synth(pod: &Pod, faults: &[PodFault]) -> FabricMap {
    let t = ibnetdiscover(pod, faults);
    parse(&t, detect(&t).unwrap(), "synth").unwrap()
}

/// Slurm's hostlist expansion, as far as our writer uses it: `p[01-03,07],q`.
fn expand(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[start..]);
    for p in parts {
        let Some((prefix, rest)) = p.split_once('[') else {
            out.push(p.to_string());
            continue;
        };
        for span in rest.trim_end_matches(']').split(',') {
            let (a, b) = span.split_once('-').unwrap_or((span, span));
            let w = a.len();
            for n in a.parse::<u64>().unwrap()..=b.parse::<u64>().unwrap() {
                out.push(format!("{prefix}{n:0w$}"));
            }
        }
    }
    out
}

/// Each named host's set of switches its adapters are cabled to, read from the map here
/// (independently of the analysis): `<host> <adapter>` descriptions only.
fn leaf_sets(map: &FabricMap) -> BTreeMap<String, BTreeSet<usize>> {
    let mut sets: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for l in &map.links {
        for (ca, sw) in [(l.a.node, l.b.node), (l.b.node, l.a.node)] {
            let (c, s) = (&map.nodes[ca], &map.nodes[sw]);
            if c.kind != NodeKind::Ca || s.kind != NodeKind::Switch {
                continue;
            }
            // A firmware-default description (`MT4129 ConnectX7   Mellanox Technologies`)
            // or a SHARP node names no host: a host name has no blank.
            if let Some((h, _)) = c.desc.trim().rsplit_once(' ')
                && !h.trim().contains(' ')
            {
                sets.entry(h.trim().to_string()).or_default().insert(sw);
            }
        }
    }
    sets
}

/// The SuperPOD plane: 8 units, each host in exactly one, hosts grouped exactly by the
/// leaves they reach (checked against the map read here), the non-GPU hosts said, the 9
/// spines over all under one top switch.
#[test]
fn superpod_plane_gives_eight_units_grouped_by_their_leaves() {
    let map = load(PLANE);
    let t = schedtopo::build(&map, &[], &SchedOptions::default());
    assert_eq!(t.units.len(), 8, "{:#?}", t.units);
    // 120 hosts by name, one of them `localhost` (three adapters whose node descriptions
    // were set before their host had its name): a placeholder, left out and said.
    assert_eq!(t.hosts, 119);
    assert_eq!(t.placeholder_names, ["localhost"]);
    let sets = leaf_sets(&map);
    let mut seen = BTreeSet::new();
    for u in &t.units {
        let first = &sets[&u.hosts[0]];
        for h in &u.hosts {
            assert!(seen.insert(h.clone()), "{h} under two units");
            assert_eq!(
                &sets[h], first,
                "{h} reaches other leaves than {}",
                u.hosts[0]
            );
        }
        assert_eq!(u.leaves.len(), first.len());
    }
    // Units differ in their leaves: grouped exactly.
    let distinct: BTreeSet<&BTreeSet<usize>> = t.units.iter().map(|u| &sets[&u.hosts[0]]).collect();
    assert_eq!(distinct.len(), 8);
    let not_gpu: Vec<&str> = t.not_gpu_nodes.iter().map(|n| n.host.as_str()).collect();
    assert_eq!(not_gpu, ["ubuntu", "B11-P1-CUFM-02"]);
    for h in sets.keys() {
        assert!(
            seen.contains(h) || not_gpu.contains(&h.as_str()) || h == "localhost",
            "{h} neither in a unit nor said"
        );
    }
    assert!(t.spine_groups.is_empty());
    assert_eq!(t.top_spines.len(), 9, "{:?}", t.top_spines);
    assert!(t.unnamed_adapters > 0);
    // topograph's own expected output names this unit (pkg/ib/ib_test.go).
    assert!(
        t.units
            .iter()
            .any(|u| out::hostlist(&u.hosts) == "a06-p1-dgx-02-c[01-04,07,10-12,14,16,18]")
    );
    // The crossed host is named and kept, unless asked.
    assert!(
        t.faults
            .iter()
            .any(|f| f.host == "b08-p1-dgx-08-c01" && f.kind == FindingKind::Crossed)
    );
}

fn export(args: &[&str]) -> (String, String) {
    let o = Command::new(bin())
        .arg("export")
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// The CLI's topology.conf of the plane: only comments and `SwitchName=` lines, every named
/// compute host under exactly one leaf-level line, one switch over all 8, names ≤ 64, a
/// comment naming each unit's leaves with their GUIDs; the fault on stderr.
#[test]
fn superpod_tree_conf_puts_every_host_under_one_leaf_line() {
    let plane = Path::new(env!("CARGO_MANIFEST_DIR")).join(PLANE);
    let plane = plane.to_str().unwrap();
    let (conf, err) = export(&["--format", "slurm-topology", "--fabric-map", plane]);
    assert!(err.contains("FAULT b08-p1-dgx-08-c01: crossed"), "{err}");
    assert!(err.contains("1 placeholder name(s) (localhost)"), "{err}");
    assert!(
        conf.contains("# left out: host name \"localhost\" is a placeholder, not a host's name"),
        "{conf}"
    );
    let mut hosts: BTreeMap<String, usize> = BTreeMap::new();
    let (mut leaf_lines, mut tops) = (0, Vec::new());
    let lines: Vec<&str> = conf.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        let rest = l.strip_prefix("SwitchName=").expect(l);
        let (name, kv) = rest.split_once(' ').unwrap();
        assert!(name.len() <= 64);
        if let Some(nodes) = kv.strip_prefix("Nodes=") {
            leaf_lines += 1;
            for h in expand(nodes) {
                *hosts.entry(h).or_default() += 1;
            }
            assert!(lines[i - 1].starts_with(&format!("# {name}: ")));
            assert!(lines[i - 1].contains("(0x2c5eab03"), "{}", lines[i - 1]);
        } else {
            tops.push(kv.strip_prefix("Switches=").unwrap().to_string());
        }
    }
    assert_eq!(leaf_lines, 8);
    assert_eq!(hosts.len(), 119);
    assert!(hosts.values().all(|&n| n == 1));
    assert_eq!(tops, ["su[01-08]"]);
    assert!(conf.contains("# not a GPU node, left out: ubuntu"));
    let (excl, _) = export(&[
        "--format",
        "slurm-topology",
        "--fabric-map",
        plane,
        "--exclude-faulty",
    ]);
    assert!(
        excl.contains("SwitchName=su08 Nodes=b08-p1-dgx-08-c[04-06,08,10-18]"),
        "{excl}"
    );
}

/// `topology/block` of the plane: a block per unit, `BlockSizes` valid as Slurm's
/// `block_record.c` reads it (first the base, each further a power-of-two multiple of it,
/// no block smaller than the base).
#[test]
fn superpod_blocks_have_valid_block_sizes() {
    let t = schedtopo::build(&load(PLANE), &[], &SchedOptions::default());
    assert_eq!(t.block_basis, BlockBasis::ScalableUnit);
    let conf = out::block_conf(&t);
    let sizes: Vec<usize> = conf
        .lines()
        .find_map(|l| l.strip_prefix("BlockSizes="))
        .unwrap()
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let blocks: Vec<usize> = conf
        .lines()
        .filter_map(|l| l.strip_prefix("BlockName="))
        .map(|l| expand(l.split_once(" Nodes=").unwrap().1).len())
        .collect();
    assert_eq!(blocks.len(), 8);
    let base = sizes[0];
    assert_eq!(base, *blocks.iter().min().unwrap());
    assert!(blocks.iter().all(|&b| b >= base));
    for s in &sizes[1..] {
        assert!(s % base == 0 && (s / base).is_power_of_two() && s / base <= 1 << 15);
    }
    assert_eq!(sizes, [10, 20, 40, 80]);
}

/// A synthesized pod (labelled: `synth::fabric`) with one host's rail-2/rail-5 cables swapped:
/// the host is named as crossed and kept in its unit; `exclude_faulty` leaves it out.
#[test]
fn crossed_cable_is_named_and_excluded_on_request() {
    let map = synth(
        &Pod::new(64),
        &[PodFault::SwapRails {
            host: 5,
            a: 2,
            b: 5,
        }],
    );
    let t = schedtopo::build(&map, &[], &SchedOptions::default());
    assert_eq!(t.units.len(), 2);
    assert_eq!(t.faults.len(), 1, "{:?}", t.faults);
    assert_eq!(t.faults[0].host, "gpu0006");
    assert_eq!(t.faults[0].kind, FindingKind::Crossed);
    assert!(t.units[0].hosts.contains(&"gpu0006".to_string()));
    assert!(out::tree_conf(&t).contains("# FAULT gpu0006: crossed"));
    let o = SchedOptions {
        exclude_faulty: true,
        ..Default::default()
    };
    let t = schedtopo::build(&map, &[], &o);
    assert_eq!(t.hosts, 63);
    assert!(!t.units[0].hosts.contains(&"gpu0006".to_string()));
    let conf = out::tree_conf(&t);
    assert!(
        conf.contains("SwitchName=su01 Nodes=gpu[0001-0005,0007-0032]"),
        "{conf}"
    );
}

/// A host with a cable unplugged stays with its unit (not a unit of its own), the missing
/// leaf named; a host on another unit's leaf joins the unit most of its leaves are, and is a
/// fault.
#[test]
fn missing_cable_stays_in_its_unit() {
    let map = synth(&Pod::new(64), &[PodFault::Unplugged { host: 3, rail: 1 }]);
    let t = schedtopo::build(&map, &[], &SchedOptions::default());
    assert_eq!(t.units.len(), 2, "{:#?}", t.units);
    assert_eq!(t.units[0].hosts.len(), 32);
    assert_eq!(t.units[0].missing.len(), 1);
    assert_eq!(t.units[0].missing[0].host, "gpu0004");
    assert_eq!(t.units[0].missing[0].leaves, ["leaf-r1-su0"]);
    assert!(out::tree_conf(&t).contains("# gpu0004 stays in su01 with a cable missing"));

    // gpu0002's rail-0 cable moved onto unit 2's rail-0 leaf.
    let mut map = synth(&Pod::new(64), &[]);
    let node = |d: &str| map.nodes.iter().position(|n| n.desc == d).unwrap();
    let (ca, own, other) = (
        node("gpu0002 mlx5_0"),
        node("leaf-r0-su0"),
        node("leaf-r0-su1"),
    );
    for l in &mut map.links {
        if l.a.node == ca && l.b.node == own {
            l.b.node = other;
        } else if l.b.node == ca && l.a.node == own {
            l.a.node = other;
        }
    }
    let t = schedtopo::build(&map, &[], &SchedOptions::default());
    assert_eq!(t.units.len(), 2, "{:#?}", t.units);
    assert!(t.units[0].hosts.contains(&"gpu0002".to_string()));
    assert!(
        t.faults
            .iter()
            .any(|f| f.host == "gpu0002" && f.kind == FindingKind::OtherUnit),
        "{:?}",
        t.faults
    );
}

/// NVLink domains passed in (as NVML's fabric cluster UUID and clique would give them): one
/// block per domain, in unit order, BlockSizes from the domain size; the Kueue Topology gets the
/// domain level below the units, and the labels carry it.
#[test]
fn nvlink_domains_make_the_blocks() {
    let map = synth(&Pod::new(64), &[]);
    let domains: BTreeMap<String, String> = (0..64)
        .map(|h| {
            (
                Pod::host(h),
                format!("7f3c2a10-5b4e-4d6a-9c1e-2b8f0e6d4a91.{}", h / 16),
            )
        })
        .collect();
    let o = SchedOptions {
        domains: domains.clone(),
        ..Default::default()
    };
    let t = schedtopo::build(&map, &[], &o);
    assert_eq!(t.block_basis, BlockBasis::NvlinkDomain);
    assert_eq!(t.blocks.len(), 4);
    assert_eq!(t.block_sizes, [16, 32, 64]);
    let conf = out::block_conf(&t);
    assert!(
        conf.contains("BlockName=nvl01 Nodes=gpu[0001-0016]\n"),
        "{conf}"
    );
    assert!(conf.ends_with("BlockSizes=16,32,64\n"));
    let keys = out::LabelKeys {
        tier_prefix: out::DEFAULT_TIER_PREFIX.into(),
        domain: out::DEFAULT_DOMAIN_KEY.into(),
    };
    let k = out::kueue_topology(&t, &keys, &domains);
    assert!(
        k.contains("  - nodeLabel: \"fabric.topograph.run/tier-1\"\n  - nodeLabel: \"fabric.topograph.run/tier-0\"\n  - nodeLabel: \"accelerator.topograph.run/domain\"\n  - nodeLabel: \"kubernetes.io/hostname\"\n"),
        "{k}"
    );
    let s = out::k8s_script(&t, &keys, &domains);
    assert!(s.contains("kubectl label node --overwrite gpu0017 fabric.topograph.run/tier-0=su01 fabric.topograph.run/tier-1=fabric accelerator.topograph.run/domain=7f3c2a10-5b4e-4d6a-9c1e-2b8f0e6d4a91.1\n"), "{s}");
    // A domain id that is no label value is hashed, and said.
    assert!(out::domain_value("a b").1);
    assert!(out::domain_value("a b").0.len() <= 63);
}

/// Labels and keys: valid by the API server's rules, a bad key refused.
#[test]
fn k8s_labels_validate() {
    let t = schedtopo::build(&load(PLANE), &[], &SchedOptions::default());
    let keys = out::LabelKeys {
        tier_prefix: out::DEFAULT_TIER_PREFIX.into(),
        domain: out::DEFAULT_DOMAIN_KEY.into(),
    };
    let s = out::k8s_script(&t, &keys, &BTreeMap::new());
    let mut nodes = 0;
    for l in s.lines().filter(|l| l.starts_with("kubectl label")) {
        nodes += 1;
        for kv in l.split(' ').skip(5) {
            let (k, v) = kv.split_once('=').unwrap();
            out::check_key(k).unwrap();
            assert!(peerpath::render::nfd::name_ok(v, 63), "{v}");
        }
    }
    assert_eq!(nodes, 119);
    assert!(out::check_key("bad key/x").is_err());
    assert!(out::check_key("example.com/tier-").is_err());
    assert!(out::check_key("example.com/tier-0").is_ok());
}

/// A host name holding a newline, `$(` or `#`, and a switch description holding a newline and
/// a `SwitchName=` line: no file gets a live line from them; the host is left out, said in a
/// comment.
#[test]
fn hostile_names_never_make_a_live_line() {
    let mut map = synth(&Pod::new(64), &[]);
    for n in &mut map.nodes {
        if n.desc.starts_with("gpu0001 ") {
            n.desc = n
                .desc
                .replace("gpu0001", "gpu0001\nSwitchName=evil Nodes=$(reboot)#");
        }
        if n.desc == "leaf-r0-su0" {
            n.desc = "leaf\nSwitchName=evil2 Nodes=x\r\n#".into();
        }
    }
    let t = schedtopo::build(&map, &[], &SchedOptions::default());
    assert_eq!(t.refused_names.len(), 1);
    assert_eq!(t.hosts, 63);
    let keys = out::LabelKeys {
        tier_prefix: out::DEFAULT_TIER_PREFIX.into(),
        domain: out::DEFAULT_DOMAIN_KEY.into(),
    };
    for text in [
        out::tree_conf(&t),
        out::block_conf(&t),
        out::topology_yaml(&t, false),
        out::k8s_script(&t, &keys, &BTreeMap::new()),
    ] {
        assert!(text.contains("evil"), "said somewhere: {text}");
        for l in text.lines() {
            if l.contains("evil") {
                assert!(l.trim_start().starts_with('#'), "live line: {l:?}");
            }
            assert!(!l.contains('\r'));
        }
    }
}

/// topology.yaml as Slurm 25.05's `topology.yaml(5)` lays it out, read by a YAML parser
/// (python3's PyYAML where present): a tree and a block topology, exactly one
/// `cluster_default`, every host in one leaf switch and one block.
#[test]
fn topology_yaml_holds_tree_and_block() {
    let t = schedtopo::build(&load(PLANE), &[], &SchedOptions::default());
    let y = out::topology_yaml(&t, true);
    let py = Command::new("python3")
        .args([
            "-c",
            "import sys, yaml, json; print(json.dumps(yaml.safe_load(sys.stdin)))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = py else {
        eprintln!("SKIPPED: no python3 to read the YAML");
        return;
    };
    use std::io::Write;
    child.stdin.take().unwrap().write_all(y.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("No module named") {
        eprintln!("SKIPPED: python3 has no PyYAML");
        return;
    }
    assert!(
        o.status.success(),
        "{}\n{y}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let topos = v.as_array().unwrap();
    assert_eq!(topos.len(), 2);
    assert_eq!(topos[0]["topology"], "tree");
    assert_eq!(topos[0]["cluster_default"], false);
    assert_eq!(topos[1]["cluster_default"], true);
    let sw = topos[0]["tree"]["switches"].as_array().unwrap();
    let leaf_hosts: usize = sw
        .iter()
        .filter_map(|s| s["nodes"].as_str())
        .map(|n| expand(n).len())
        .sum();
    assert_eq!(leaf_hosts, 119);
    assert_eq!(sw.last().unwrap()["children"], "su[01-08]");
    let blocks = topos[1]["block"]["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 8);
    assert_eq!(topos[1]["block"]["block_sizes"][0], 10);
}

fn sched_topo_of_plane() -> SchedTopo {
    schedtopo::build(&load(PLANE), &[], &SchedOptions::default())
}

fn free_port() -> u16 {
    common::free_ports(1)[0]
}

/// Whether real Slurm can run here (the daemons, root for namespaces); under CI a missing
/// piece fails, elsewhere the test says it is skipped.
fn slurm_available() -> bool {
    common::slurm_available(&["slurmctld", "slurmd", "scontrol", "srun", "unshare"])
}

/// Real slurmctld (Debian 12's 22.05) with `TopologyPlugin=topology/tree` and our
/// topology.conf of the SuperPOD plane: `scontrol show topology` lists every switch as
/// written; with three live slurmd (one node in su01, two in su02), a 2-node `--switches=1`
/// job runs on su02's two nodes, where a scheduler blind to the topology takes the first two
/// idle nodes (su01's and su02's). About 5 s.
#[test]
fn slurmctld_loads_the_tree_and_packs_a_job_in_one_unit() {
    if !slurm_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("topology.conf");
    std::fs::write(&topo, out::tree_conf(&sched_topo_of_plane())).unwrap();
    let live = [
        "a05-p1-dgx-01-c01",
        "a06-p1-dgx-02-c01",
        "a06-p1-dgx-02-c02",
    ];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm/topo.sh");
    let o = common::run_bounded(
        common::in_pid_namespace(&script)
            .arg(dir.path().join("w"))
            .arg(&topo)
            .arg(free_port().to_string())
            .arg(free_port().to_string())
            .args(live),
        Duration::from_secs(120),
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let why = format!(
        "{text}\nstderr: {}\nslurmctld.log: {}",
        String::from_utf8_lossy(&o.stderr),
        std::fs::read_to_string(dir.path().join("w/log/slurmctld.log")).unwrap_or_default()
    );
    assert!(o.status.success() && text.contains("\ndone"), "{why}");
    // Every switch as written: name, and its nodes or children.
    let conf = std::fs::read_to_string(&topo).unwrap();
    for l in conf.lines().filter(|l| l.starts_with("SwitchName=")) {
        let (name, kv) = l["SwitchName=".len()..].split_once(' ').unwrap();
        let shown = text
            .lines()
            .find(|s| s.starts_with(&format!("SwitchName={name} ")))
            .unwrap_or_else(|| panic!("{name} not shown: {why}"));
        assert!(shown.contains(kv), "{l} shown as {shown}");
    }
    let flat = text.lines().find_map(|l| l.strip_prefix("flat: ")).unwrap();
    assert_eq!(flat, "a05-p1-dgx-01-c01,a06-p1-dgx-02-c01", "{why}");
    let job = text.lines().find_map(|l| l.strip_prefix("job: ")).unwrap();
    assert_eq!(job, "a06-p1-dgx-02-c[01-02]", "{why}");
}

/// A synthesized GB200 NVL72 fleet (labelled: `synth::nvl72`, two racks of 18 trays, each
/// tray's NVML registration in its rack's domain) on a synthesized 4-rail pod map whose one
/// scalable unit holds both racks: `-i` the captures gives one block per rack (NVLink domain),
/// not one per unit, and the labels carry each tray's domain.
#[test]
fn nvl72_fleet_gives_one_block_per_rack() {
    use peerpath::synth::nvl72::rack_uuid;
    let dir = tempfile::tempdir().unwrap();
    let (map, caps) = common::nvl72_fleet(dir.path(), 2);
    let (map, caps) = (map.to_str().unwrap(), caps.to_str().unwrap());
    let (conf, _) = export(&[
        "--format",
        "slurm-topology",
        "--slurm-plugin",
        "block",
        "--fabric-map",
        map,
        "-i",
        caps,
    ]);
    let blocks: Vec<&str> = conf.lines().filter(|l| l.starts_with("Block")).collect();
    assert_eq!(
        blocks,
        [
            "BlockName=nvl01 Nodes=nvl72-r01-t[01-18]",
            "BlockName=nvl02 Nodes=nvl72-r02-t[01-18]",
            "BlockSizes=18,36"
        ],
        "{conf}"
    );
    assert!(
        conf.contains(&format!("NVLink domain {}.", rack_uuid(2))),
        "{conf}"
    );
    let (tree, _) = export(&[
        "--format",
        "slurm-topology",
        "--fabric-map",
        map,
        "-i",
        caps,
    ]);
    assert!(
        tree.contains("SwitchName=su01 Nodes=nvl72-r01-t[01-18],nvl72-r02-t[01-18]\n"),
        "{tree}"
    );
    let (script, _) = export(&["--format", "k8s-topology", "--fabric-map", map, "-i", caps]);
    let line = script
        .lines()
        .find(|l| l.contains(" nvl72-r02-t05 "))
        .unwrap();
    assert!(
        line.contains(&format!(
            "accelerator.topograph.run/domain={}.",
            rack_uuid(2)
        )),
        "{line}"
    );
}
