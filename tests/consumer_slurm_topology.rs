//! Slurm topology files loaded by real, newer Slurm: Debian 12's Slurm (22.05, the CI image's,
//! tests/consumer_slurm.rs) has neither `topology/block` nor `topology.yaml`, so these tests run
//! Debian trixie's Slurm 24.11 and sid's 25.05+ (26.05 when written) from a Debian root that
//! `tests/slurm/chroot.sh SUITE` builds with mmdebstrap into `target/slurm-SUITE`.
//! `tests/slurm/topology.sh` starts slurmctld and one slurmd per test node (Debian builds Slurm
//! with multiple-slurmd support: each node its own port) inside that root, as PID 1 of private
//! mount, PID and UTS namespaces, so every daemon and job ends with the test.
//!
//! The same runner runs this system's own Slurm (`/` as the root: Debian 12's 22.05 in CI) on
//! the tree.
//!
//! Checked on each Slurm: `scontrol show topology` lists every switch and block exactly as the
//! file wrote it (names, nodes, child switches); with one node of the first unit held by a job,
//! a 2-node job with `--switches=1` (topology/tree) or `--segment=2` (topology/block) runs on
//! the two nodes of the other unit, where Slurm without a topology puts it across units (the
//! control run); and a `topology.yaml` with a tree marked `cluster_default` and a block
//! topology named by a partition's `Topology=` places each partition's job by its own topology.
//!
//! Needs root (namespaces, chroot), `unshare`, and the roots: `.ci/run` builds them; under CI
//! (`CI` set) a missing root fails, elsewhere the test says SKIPPED and the command to build it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The root `tests/slurm/chroot.sh SUITE` builds, when it is finished (its stamp present), or
/// `/` for `system` (this system's Slurm: Debian 12's 22.05 in CI), when this process may use
/// it (root); `None` with the reason printed (a failure under CI).
fn slurm_root(suite: &str) -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let under_ci = std::env::var_os("CI").is_some();
    let root = if suite == "system" {
        PathBuf::from("/")
    } else {
        repo.join("target").join(format!("slurm-{suite}"))
    };
    if suite == "system" && !Path::new("/usr/sbin/slurmctld").is_file() {
        assert!(
            !under_ci,
            ".ci/run installs slurmctld, slurmd and slurm-client"
        );
        eprintln!(
            "SKIPPED: no /usr/sbin/slurmctld (apt-get install slurmctld slurmd slurm-client)"
        );
        return None;
    }
    if suite != "system" && !root.join(".peerpath-root").is_file() {
        assert!(
            !under_ci,
            "{} missing under CI: .ci/run builds it with tests/slurm/chroot.sh {suite}",
            root.display()
        );
        eprintln!(
            "SKIPPED: no Slurm root at {} (build it as root: tests/slurm/chroot.sh {suite})",
            root.display()
        );
        return None;
    }
    if !common::is_root() {
        assert!(!under_ci, "CI runs as root");
        eprintln!("SKIPPED: needs root (mount, PID and UTS namespaces, chroot)");
        return None;
    }
    Some(root)
}

/// One cluster for `tests/slurm/topology.sh`: the topology file (its name in slurm.conf's
/// directory and its text), the plugin line, every node defined, the nodes that run a slurmd
/// (the others are defined DOWN: they appear in the topology, never run a job), extra
/// partition lines, and the steps (bash, with `hold`, `placed`, `topo`) run once all are idle.
struct Cluster {
    file: (&'static str, String),
    plugin: Option<&'static str>,
    nodes: Vec<String>,
    run: Vec<String>,
    partitions: String,
    steps: String,
}

/// slurm.conf's cluster lines for `c`: the plugin, one line per node, the partitions.
fn cluster_conf(c: &Cluster, ports: &[u16]) -> String {
    let mut s = String::new();
    if let Some(p) = c.plugin {
        s += &format!("TopologyPlugin={p}\n");
    }
    for n in &c.nodes {
        let common =
            format!("NodeName={n} NodeHostname=pp-slurm NodeAddr=127.0.0.1 CPUs=1 RealMemory=1");
        match c.run.iter().position(|r| r == n) {
            Some(i) => s += &format!("{common} Port={} State=UNKNOWN\n", ports[i]),
            None => s += &format!("{common} State=DOWN Reason=no_slurmd_in_this_test\n"),
        }
    }
    s += "PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
    s + &c.partitions
}

/// Runs `c` on the Slurm in `root`; returns what the steps printed, after asserting the run
/// finished (with the daemons' log tails when it did not).
fn run_cluster(root: &Path, c: &Cluster) -> String {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path();
    std::fs::create_dir_all(w.join("etc")).unwrap();
    std::fs::write(w.join("etc").join(c.file.0), &c.file.1).unwrap();
    let ports = common::free_ports(c.run.len() + 1);
    std::fs::write(w.join("cluster.conf"), cluster_conf(c, &ports[1..])).unwrap();
    std::fs::write(w.join("slurmd.nodes"), c.run.join("\n") + "\n").unwrap();
    std::fs::write(w.join("steps.sh"), &c.steps).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm/topology.sh");
    let o = common::run_bounded(
        Command::new("unshare")
            .args(["-m", "-p", "-u", "-f", "--propagation", "private", "bash"])
            .arg(&script)
            .arg(root)
            .arg(w)
            .arg(ports[0].to_string()),
        Duration::from_secs(180),
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let tail = |name: &str| {
        let t = std::fs::read_to_string(w.join("log").join(name)).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    assert!(
        o.status.success() && text.contains("\ndone"),
        "{text}\nstderr: {}\nslurmctld.log tail: {}",
        String::from_utf8_lossy(&o.stderr),
        tail("slurmctld.log")
    );
    text
}

/// Expands a Slurm hostlist (`a[01-03,7]b,c`) into its names: a test-side reading of the
/// one-bracket form topology files and `scontrol` use.
fn expand(list: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let (mut depth, mut start) = (0, 0);
    let bytes = list.as_bytes();
    for i in 0..=bytes.len() {
        match bytes.get(i) {
            Some(b'[') => depth += 1,
            Some(b']') => depth -= 1,
            Some(b',') if depth > 0 => {}
            Some(b',') | None => {
                expand_one(&list[start..i], &mut out);
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

fn expand_one(item: &str, out: &mut BTreeSet<String>) {
    let (Some(open), Some(close)) = (item.find('['), item.find(']')) else {
        if !item.is_empty() {
            out.insert(item.to_string());
        }
        return;
    };
    let (pre, ranges, post) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    for r in ranges.split(',') {
        let (a, b) = r.split_once('-').unwrap_or((r, r));
        let (lo, hi): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
        for v in lo..=hi {
            out.insert(format!("{pre}{v:0w$}{post}", w = a.len()));
        }
    }
}

/// A switch or block as a topology file or `scontrol show topology` gives it: its nodes and
/// child switches, expanded.
#[derive(Debug, Default, PartialEq)]
struct Unit {
    nodes: BTreeSet<String>,
    children: BTreeSet<String>,
}

/// The units of topology.conf lines or `scontrol show topology` lines, by name (`SwitchName`
/// or `BlockName`); `BlockSizes` and comments skipped.
fn units(text: &str) -> BTreeMap<String, Unit> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut name = None;
        let mut unit = Unit::default();
        for tok in line.split_whitespace() {
            let (k, v) = tok.split_once('=').unwrap_or((tok, ""));
            match k.to_ascii_lowercase().as_str() {
                "switchname" | "blockname" => name = Some(v.to_string()),
                "nodes" => unit.nodes = expand(v),
                "switches" => unit.children = expand(v),
                _ => {}
            }
        }
        if let Some(n) = name {
            out.insert(n, unit);
        }
    }
    out
}

/// Asserts Slurm lists exactly the units `written` names, each leaf with the nodes written and
/// each upper switch with the child switches written (Slurm adds the nodes below an upper
/// switch to its line; that union is not compared).
fn assert_listed_as_written(written: &BTreeMap<String, Unit>, shown: &BTreeMap<String, Unit>) {
    let (w, s): (BTreeSet<_>, BTreeSet<_>) = (written.keys().collect(), shown.keys().collect());
    assert_eq!(w, s, "names written vs listed by scontrol show topology");
    for (name, unit) in written {
        let got = &shown[name];
        if unit.children.is_empty() {
            assert_eq!(unit.nodes, got.nodes, "{name}: nodes");
        } else {
            assert_eq!(unit.children, got.children, "{name}: child switches");
        }
    }
}

/// The lines of `out` after `label: `.
fn labelled(out: &str, label: &str) -> String {
    let p = format!("{label}: ");
    out.lines()
        .filter_map(|l| l.strip_prefix(&p))
        .collect::<Vec<_>>()
        .join("\n")
}

fn names(list: &str) -> Vec<String> {
    list.split(',').map(str::to_string).collect()
}

/// SYNTHESIZED (labelled so: written here after topology.conf(5)'s examples): two leaf
/// switches of two nodes each and one switch over both.
const TREE_CONF: &str = "# two units under one top switch (synthesized after topology.conf(5))
SwitchName=su1 Nodes=n[1-2]
SwitchName=su2 Nodes=n[3-4]
SwitchName=top Switches=su[1-2]
";

/// SYNTHESIZED after topology.conf(5)'s topology/block example: two base blocks of two nodes.
const BLOCK_CONF: &str = "# two blocks of two nodes (synthesized after topology.conf(5))
BlockName=b1 Nodes=n[1-2]
BlockName=b2 Nodes=n[3-4]
BlockSizes=2
";

/// Steps: the topology listed, `n1` held, then the 2-node job of `args` placed.
fn hold_then_place(args: &str) -> String {
    format!("topo T\nhold n1\necho \"placed: $(placed -N2 {args})\"\n")
}

/// The units of a topology.conf that hold nodes (leaf switches, blocks), in file order, each
/// with its nodes sorted.
fn node_units(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let name = line.split_whitespace().find_map(|t| {
            let (k, v) = t.split_once('=')?;
            matches!(k.to_ascii_lowercase().as_str(), "switchname" | "blockname").then_some(v)
        });
        let nodes = line.split_whitespace().find_map(|t| {
            let (k, v) = t.split_once('=')?;
            (k.eq_ignore_ascii_case("nodes")).then_some(v)
        });
        if let (Some(n), Some(list)) = (name, nodes) {
            out.push((n.to_string(), expand(list).into_iter().collect()));
        }
    }
    out
}

/// A topology.conf of any size on the Slurm in `root`: every node it names defined, a slurmd
/// on the first two nodes of its first two units that hold two nodes or more, the first of
/// those held by a job, then a 2-node job with `args`. Asserts Slurm lists the file's units as
/// written and the job ran on the second unit's two nodes (the only two free nodes that share
/// a unit); returns the output.
fn place_across_units(root: &Path, text: &str, plugin: &'static str, args: &str) -> String {
    let (nodes, run) = fleet(text);
    let c = Cluster {
        file: ("topology.conf", text.to_string()),
        plugin: Some(plugin),
        nodes,
        run: run.clone(),
        partitions: String::new(),
        steps: format!(
            "topo T\nhold {}\necho \"placed: $(placed -N2 {args})\"\n",
            run[0]
        ),
    };
    let out = run_cluster(root, &c);
    assert_listed_as_written(&units(text), &units(&labelled(&out, "T")));
    let mut want = run[2..].to_vec();
    want.sort();
    assert_eq!(labelled(&out, "placed"), want.join(","), "{out}");
    out
}

/// The nodes a topology.conf names (each once, in file order) and the four that run a slurmd:
/// the first two nodes of its first two units that hold two nodes or more.
fn fleet(text: &str) -> (Vec<String>, Vec<String>) {
    let units_in_file = node_units(text);
    let mut seen = BTreeSet::new();
    let nodes: Vec<String> = units_in_file
        .iter()
        .flat_map(|u| u.1.clone())
        .filter(|n| seen.insert(n.clone()))
        .collect();
    let two: Vec<&(String, Vec<String>)> = units_in_file
        .iter()
        .filter(|u| u.1.len() >= 2)
        .take(2)
        .collect();
    assert_eq!(two.len(), 2, "two units of two nodes or more in:\n{text}");
    let run = two.iter().flat_map(|u| u.1[..2].to_vec()).collect();
    (nodes, run)
}

fn four_nodes(file: (&'static str, String), plugin: &'static str, args: &str) -> Cluster {
    Cluster {
        file,
        plugin: Some(plugin),
        nodes: names("n1,n2,n3,n4"),
        run: names("n1,n2,n3,n4"),
        partitions: String::new(),
        steps: hold_then_place(args),
    }
}

/// topology/tree from topology.conf: listed as written; `--switches=1` keeps the job in one unit.
fn tree_conf_on(suite: &str) {
    let Some(root) = slurm_root(suite) else {
        return;
    };
    let c = four_nodes(
        ("topology.conf", TREE_CONF.into()),
        "topology/tree",
        "--switches=1",
    );
    let out = run_cluster(&root, &c);
    assert_listed_as_written(&units(TREE_CONF), &units(&labelled(&out, "T")));
    assert_eq!(labelled(&out, "placed"), "n3,n4", "{out}");
}

/// topology/block from topology.conf: listed as written; `--segment=2` keeps the job in a block.
fn block_conf_on(suite: &str) {
    let Some(root) = slurm_root(suite) else {
        return;
    };
    let c = four_nodes(
        ("topology.conf", BLOCK_CONF.into()),
        "topology/block",
        "--segment=2",
    );
    let out = run_cluster(&root, &c);
    assert_listed_as_written(&units(BLOCK_CONF), &units(&labelled(&out, "T")));
    assert!(out.contains("BlockSize=2"), "{out}");
    assert_eq!(labelled(&out, "placed"), "n3,n4", "{out}");
}

#[test]
fn debian12_slurm_22_05_tree_switches_1_in_one_unit() {
    tree_conf_on("system");
}

#[test]
fn trixie_slurm_24_11_tree_switches_1_in_one_unit() {
    tree_conf_on("trixie");
}

#[test]
fn trixie_slurm_24_11_block_segment_in_one_block() {
    block_conf_on("trixie");
}

#[test]
fn sid_slurm_tree_switches_1_in_one_unit() {
    tree_conf_on("sid");
}

#[test]
fn sid_slurm_block_segment_in_one_block() {
    block_conf_on("sid");
}

/// The control: the same cluster and job without a topology (topology/flat) is placed across
/// the two units (n2, n3), so the placements above are the topology's doing.
#[test]
fn sid_slurm_without_topology_spans_units() {
    let Some(root) = slurm_root("sid") else {
        return;
    };
    let c = four_nodes(("topology.conf", String::new()), "topology/flat", "");
    let out = run_cluster(&root, &c);
    assert_eq!(labelled(&out, "placed"), "n2,n3", "{out}");
}

/// SYNTHESIZED after topology.yaml(5)'s example: the tree of TREE_CONF as the cluster default,
/// and a block topology whose blocks interleave the tree's units (n1 with n4, n2 with n3), so
/// a job placed by it differs from one placed by the tree.
const TOPOLOGY_YAML: &str = "# synthesized after topology.yaml(5)
- topology: units
  cluster_default: true
  tree:
    switches:
      - switch: su1
        nodes: n[1-2]
      - switch: su2
        nodes: n[3-4]
      - switch: top
        children: su[1-2]
- topology: racks
  cluster_default: false
  block:
    block_sizes:
      - 2
    blocks:
      - block: b1
        nodes: n[1,4]
      - block: b2
        nodes: n[2-3]
";

/// topology.yaml (Slurm 25.05+): both topologies listed by name, the one marked
/// `cluster_default` shown for the cluster and used by the partition naming none; with n1 held,
/// the default partition's `--switches=1` job lands in unit su2 (n3, n4) and the `Topology=racks`
/// partition's `--segment=2` job in block b2 (n2, n3).
#[test]
fn sid_slurm_topology_yaml_default_tree_and_block_partition() {
    let Some(root) = slurm_root("sid") else {
        return;
    };
    let c = Cluster {
        file: ("topology.yaml", TOPOLOGY_YAML.into()),
        plugin: None,
        nodes: names("n1,n2,n3,n4"),
        run: names("n1,n2,n3,n4"),
        partitions: "PartitionName=racks Nodes=ALL Topology=racks MaxTime=INFINITE State=UP\n"
            .into(),
        steps: "topo D\ntopo U units\ntopo R racks\nhold n1\n\
                echo \"tree: $(placed -p all -N2 --switches=1)\"\n\
                echo \"block: $(placed -p racks -N2 --segment=2)\"\n"
            .into(),
    };
    let out = run_cluster(&root, &c);
    let tree = units(&labelled(&out, "U"));
    assert_listed_as_written(&units(TREE_CONF), &tree);
    assert_eq!(
        units(&labelled(&out, "D")),
        tree,
        "the cluster default is the tree: {out}"
    );
    let racks = units(&labelled(&out, "R"));
    let written: BTreeMap<String, Unit> = [("b1", "n[1,4]"), ("b2", "n[2-3]")]
        .into_iter()
        .map(|(b, n)| {
            (
                b.to_string(),
                Unit {
                    nodes: expand(n),
                    ..Unit::default()
                },
            )
        })
        .collect();
    assert_listed_as_written(&written, &racks);
    assert_eq!(labelled(&out, "tree"), "n3,n4", "{out}");
    assert_eq!(labelled(&out, "block"), "n2,n3", "{out}");
}

/// The mark decides: the same file with `cluster_default: true` moved to the block topology
/// makes `scontrol show topology` show the blocks and places the partition naming no topology
/// by them (n2, n3 for the 2-node job, where the tree gave n3, n4).
#[test]
fn sid_slurm_topology_yaml_cluster_default_decides() {
    let Some(root) = slurm_root("sid") else {
        return;
    };
    let moved = TOPOLOGY_YAML
        .replace("cluster_default: true", "cluster_default: TREE")
        .replace("cluster_default: false", "cluster_default: true")
        .replace("cluster_default: TREE", "cluster_default: false");
    let c = Cluster {
        file: ("topology.yaml", moved),
        plugin: None,
        nodes: names("n1,n2,n3,n4"),
        run: names("n1,n2,n3,n4"),
        partitions: String::new(),
        steps: "topo D\ntopo R racks\nhold n1\n\
                echo \"placed: $(placed -p all -N2 --segment=2)\"\n"
            .into(),
    };
    let out = run_cluster(&root, &c);
    let racks = units(&labelled(&out, "R"));
    assert_eq!(racks.len(), 2, "{out}");
    assert_eq!(
        units(&labelled(&out, "D")),
        racks,
        "the default is now the blocks: {out}"
    );
    assert_eq!(labelled(&out, "placed"), "n2,n3", "{out}");
}

#[test]
fn hostlists_expand_as_slurm_writes_them() {
    let got: Vec<String> = expand("n[01-03,7],x,a[9-10]b").into_iter().collect();
    // As Slurm 26.05's `scontrol show hostnames` expands it: each range keeps its own width.
    assert_eq!(got, ["a10b", "a9b", "n01", "n02", "n03", "n7", "x"]);
}

/// SYNTHESIZED: a plane's worth of tree (8 units of 16 nodes named as the SuperPOD map names
/// its hosts, under one switch), loaded with 128 nodes defined and 4 slurmd running.
#[test]
fn sid_slurm_tree_of_128_nodes_places_in_one_unit() {
    let Some(root) = slurm_root("sid") else {
        return;
    };
    let mut conf = String::new();
    for u in 1..=8 {
        conf += &format!("SwitchName=su{u} Nodes=a0{u}-p1-dgx-0{u}-c[01-16]\n");
    }
    conf += "SwitchName=top Switches=su[1-8]\n";
    place_across_units(&root, &conf, "topology/tree", "--switches=1");
}

/// The published SuperPOD plane (NVIDIA/topograph's `example.out`, one plane of a DGX H100
/// SuperPOD; fixtures/fabric/published/README.md).
const PLANE: &str = "fixtures/fabric/published/topograph-ibnetdiscover-dgx-h100-ndr-example.out";

/// `peerpath export --format FORMAT --fabric-map PLANE ARGS…`: the file it wrote.
fn export_plane(format: &str, args: &[&str]) -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(["export", "--format", format, "--fabric-map"])
        .arg(repo.join(PLANE))
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// peerpath's topology.conf of the plane (8 units, one switch over all) on `suite`'s Slurm.
fn plane_tree_on(suite: &str) {
    let Some(root) = slurm_root(suite) else {
        return;
    };
    let conf = export_plane("slurm-topology", &[]);
    let out = place_across_units(&root, &conf, "topology/tree", "--switches=1");
    let shown = units(&labelled(&out, "T"));
    assert_eq!(shown.len(), 9, "8 units and the switch over all: {out}");
    let nodes: usize = shown
        .values()
        .filter(|u| u.children.is_empty())
        .map(|u| u.nodes.len())
        .sum();
    assert_eq!(
        nodes, 119,
        "the plane's 119 named GPU nodes, each under one unit: {out}"
    );
}

/// peerpath's topology/block file of the plane (a block per unit, `BlockSizes=10,20,40,80`).
fn plane_blocks_on(suite: &str) {
    let Some(root) = slurm_root(suite) else {
        return;
    };
    let conf = export_plane("slurm-topology", &["--slurm-plugin", "block"]);
    let out = place_across_units(&root, &conf, "topology/block", "--segment=2");
    let sizes = conf
        .lines()
        .find_map(|l| l.strip_prefix("BlockSizes="))
        .unwrap();
    let base = sizes.split(',').next().unwrap();
    assert!(
        out.contains(&format!("BlockSize={base}")),
        "base block size {base}: {out}"
    );
}

#[test]
fn export_tree_of_superpod_plane_on_slurm_24_11() {
    plane_tree_on("trixie");
}

#[test]
fn export_tree_of_superpod_plane_on_slurm_26_05() {
    plane_tree_on("sid");
}

#[test]
fn export_blocks_of_superpod_plane_on_slurm_24_11() {
    plane_blocks_on("trixie");
}

#[test]
fn export_blocks_of_superpod_plane_on_slurm_26_05() {
    plane_blocks_on("sid");
}

/// peerpath's topology.yaml of the plane on Slurm 26.05: the tree (marked `cluster_default`)
/// and the block topology listed by name exactly as the topology.conf exports wrote them, the
/// cluster's topology the tree; with a unit's first node held, the default partition's
/// `--switches=1` job and a `Topology=block` partition's `--segment=2` job each land on the
/// second unit's two nodes.
#[test]
fn export_topology_yaml_of_superpod_plane_on_slurm_26_05() {
    let Some(root) = slurm_root("sid") else {
        return;
    };
    let tree = export_plane("slurm-topology", &[]);
    let blocks = export_plane("slurm-topology", &["--slurm-plugin", "block"]);
    let yaml = export_plane("slurm-topology-yaml", &[]);
    let (nodes, run) = fleet(&tree);
    let c = Cluster {
        file: ("topology.yaml", yaml),
        plugin: None,
        nodes,
        run: run.clone(),
        partitions: "PartitionName=blk Nodes=ALL Topology=block MaxTime=INFINITE State=UP\n".into(),
        steps: format!(
            "topo D\ntopo U tree\ntopo B block\nhold {}\n\
             echo \"tree: $(placed -p all -N2 --switches=1)\"\n\
             echo \"block: $(placed -p blk -N2 --segment=2)\"\n",
            run[0]
        ),
    };
    let out = run_cluster(&root, &c);
    assert_listed_as_written(&units(&tree), &units(&labelled(&out, "U")));
    assert_listed_as_written(&units(&blocks), &units(&labelled(&out, "B")));
    assert_eq!(
        units(&labelled(&out, "D")),
        units(&labelled(&out, "U")),
        "{out}"
    );
    let mut want = run[2..].to_vec();
    want.sort();
    assert_eq!(labelled(&out, "tree"), want.join(","), "{out}");
    assert_eq!(labelled(&out, "block"), want.join(","), "{out}");
}

/// `peerpath export --format slurm-topology ARGS… --fabric-map MAP -i CAPS`.
fn export_fleet(map: &Path, caps: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(["export", "--format", "slurm-topology"])
        .args(args)
        .arg("--fabric-map")
        .arg(map)
        .arg("-i")
        .arg(caps)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The NVL72 fleet's block file (one block per rack, from the captures' NVLink domains) on
/// `suite`'s Slurm: both racks listed as blocks of 18 trays; with rack 1's first tray held, a
/// 2-node `--segment=2` job runs on two trays of rack 2, inside one NVLink domain.
fn nvl72_blocks_on(suite: &str) {
    let Some(root) = slurm_root(suite) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (map, caps) = common::nvl72_fleet(dir.path(), 2);
    let conf = export_fleet(&map, &caps, &["--slurm-plugin", "block"]);
    let out = place_across_units(&root, &conf, "topology/block", "--segment=2");
    let shown = units(&labelled(&out, "T"));
    let sizes: Vec<usize> = shown.values().map(|u| u.nodes.len()).collect();
    assert_eq!(sizes, [18, 18], "one block per rack: {out}");
    assert_eq!(
        labelled(&out, "placed"),
        "nvl72-r02-t01,nvl72-r02-t02",
        "{out}"
    );
}

#[test]
fn export_nvl72_blocks_one_per_rack_on_slurm_24_11() {
    nvl72_blocks_on("trixie");
}

#[test]
fn export_nvl72_blocks_one_per_rack_on_slurm_26_05() {
    nvl72_blocks_on("sid");
}

/// The control: the same fleet's tree file holds both racks in one unit (one set of rail
/// leaves), so the same job under `topology/tree` with `--switches=1` takes the first free
/// trays, one of each rack — across two NVLink domains. The blocks are what keep it in one.
#[test]
fn export_nvl72_tree_alone_spans_racks_on_slurm_26_05() {
    let Some(root) = slurm_root("sid") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (map, caps) = common::nvl72_fleet(dir.path(), 2);
    let conf = export_fleet(&map, &caps, &[]);
    let (nodes, _) = fleet(&export_fleet(&map, &caps, &["--slurm-plugin", "block"]));
    let run = names("nvl72-r01-t01,nvl72-r01-t02,nvl72-r02-t01,nvl72-r02-t02");
    let c = Cluster {
        file: ("topology.conf", conf.clone()),
        plugin: Some("topology/tree"),
        nodes,
        run,
        partitions: String::new(),
        steps: hold_then_place("--switches=1").replace("hold n1", "hold nvl72-r01-t01"),
    };
    let out = run_cluster(&root, &c);
    assert_listed_as_written(&units(&conf), &units(&labelled(&out, "T")));
    assert_eq!(
        labelled(&out, "placed"),
        "nvl72-r01-t02,nvl72-r02-t01",
        "{out}"
    );
}
