//! Kueue's topology-aware scheduling reads a `Topology` object (`kueue.x-k8s.io`) whose levels
//! name node labels, and the nodes' labels themselves. Both are validated as the API server
//! would accept them: the `Topology` against Kueue's own CRD schema
//! (`tests/k8s/kueue.x-k8s.io_topologies.yaml`, from kubernetes-sigs/kueue; README beside it),
//! unknown fields refused, its CEL rules on levels (unique, `kubernetes.io/hostname` lowest)
//! evaluated; the labels by Kubernetes' label syntax, and every node carrying every level's
//! label (Kueue considers only nodes that do), with `tests/k8s/validate_crd.py`; the Node
//! objects against Kubernetes' own schema with kubernetes-validate where installed.
//!
//! Needs python3 with jsonschema and PyYAML (`.ci/run`'s venv); skipped elsewhere, a failure
//! under CI.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// SYNTHESIZED (labelled so: written here after Kueue's Topology documentation and topograph's
/// label keys): spine group above scalable unit above host.
const TOPOLOGY: &str = "apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata:
  name: peerpath-fabric
spec:
  levels:
  - nodeLabel: fabric.topograph.run/tier-1
  - nodeLabel: fabric.topograph.run/tier-0
  - nodeLabel: kubernetes.io/hostname
";

/// SYNTHESIZED: two nodes of two scalable units under one spine group, labelled with the
/// Topology's levels and an NVLink domain.
const NODES: &str = "apiVersion: v1
kind: Node
metadata:
  name: dgx-01
  labels:
    fabric.topograph.run/tier-0: su-1
    fabric.topograph.run/tier-1: spines-1
    accelerator.topograph.run/domain: nvl-1
---
apiVersion: v1
kind: Node
metadata:
  name: dgx-02
  labels:
    fabric.topograph.run/tier-0: su-2
    fabric.topograph.run/tier-1: spines-1
    accelerator.topograph.run/domain: nvl-2
";

fn crd() -> PathBuf {
    common::repo().join("tests/k8s/kueue.x-k8s.io_topologies.yaml")
}

/// `validate_crd.py ARGS…`: (success, what it printed).
fn validate(py: &Path, args: &[&Path]) -> (bool, String) {
    let o = Command::new(py)
        .arg(common::repo().join("tests/k8s/validate_crd.py"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Asserts the Topology in `text` passes Kueue's CRD, with no CEL rule left unevaluated.
fn assert_topology_valid(py: &Path, file: &Path) {
    let (pass, text) = validate(py, &[&crd(), file]);
    assert!(
        pass && text.starts_with("PASS") && !text.contains("not evaluated"),
        "{text}"
    );
}

#[test]
fn topology_passes_kueues_crd_as_v1beta1_and_v1beta2() {
    let Some(py) = common::python_with_jsonschema() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    assert_topology_valid(&py, &write(dir.path(), "b1.yaml", TOPOLOGY));
    let v1beta2 = TOPOLOGY.replace("/v1beta1", "/v1beta2");
    assert_topology_valid(&py, &write(dir.path(), "b2.yaml", &v1beta2));
}

/// Each fault the API server refuses is refused here, with its reason: so a passing export is
/// a judged one.
#[test]
fn topology_faults_are_refused_with_their_reason() {
    let Some(py) = common::python_with_jsonschema() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tier0 = "  - nodeLabel: fabric.topograph.run/tier-0\n";
    let host = "  - nodeLabel: kubernetes.io/hostname\n";
    let cases = [
        // Two levels on one label: the CEL rule `must be unique`.
        (TOPOLOGY.replace(host, tier0), "must be unique"),
        // The host level above another: the CEL rule on kubernetes.io/hostname.
        (
            TOPOLOGY.replace(&format!("{tier0}{host}"), &format!("{host}{tier0}")),
            "can only be used at the lowest level",
        ),
        // A field Kueue does not know: strict field validation.
        (
            TOPOLOGY.replace(host, &format!("{host}    rank: 3\n")),
            "'rank' was unexpected",
        ),
        // A label name with a blank: the CRD's pattern.
        (TOPOLOGY.replace("tier-0", "tier 0"), "does not match"),
        // No levels: minItems.
        (
            TOPOLOGY
                .split("  - ")
                .next()
                .unwrap()
                .replace("levels:\n", "levels: []\n"),
            "spec.levels: []",
        ),
        // The group's other kind name: no CRD.
        (
            TOPOLOGY.replace("kind: Topology", "kind: Topologies"),
            "no CRD",
        ),
    ];
    for (i, (text, reason)) in cases.iter().enumerate() {
        let f = write(dir.path(), &format!("bad{i}.yaml"), text);
        let (pass, out) = validate(&py, &[&crd(), &f]);
        assert!(!pass && out.contains(reason), "case {i} ({reason}): {out}");
    }
}

#[test]
fn node_labels_are_valid_and_carry_every_level() {
    let Some(py) = common::python_with_jsonschema() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let topo = write(dir.path(), "topology.yaml", TOPOLOGY);
    let nodes = write(dir.path(), "nodes.yaml", NODES);
    let levels = Path::new("--levels");
    let labels = Path::new("--labels");
    let (pass, text) = validate(&py, &[labels, levels, &topo, &nodes]);
    assert!(pass && text.matches("PASS").count() == 2, "{text}");
    // A node without its unit's label is one Kueue would never consider.
    let missing = write(
        dir.path(),
        "missing.yaml",
        &NODES.replace("    fabric.topograph.run/tier-0: su-2\n", ""),
    );
    let (pass, text) = validate(&py, &[labels, levels, &topo, &missing]);
    assert!(
        !pass && text.contains("Node/dgx-02: no label 'fabric.topograph.run/tier-0'"),
        "{text}"
    );
    // A value the API server refuses (a `/`, over 63 characters).
    let long = format!("su-{}", "9".repeat(61));
    for bad in ["su/2", long.as_str()] {
        let f = write(dir.path(), "bad.yaml", &NODES.replace("su-2", bad));
        let (pass, text) = validate(&py, &[labels, &f]);
        assert!(
            !pass && text.contains("is not a valid label value"),
            "{bad}: {text}"
        );
    }
    // The Node objects themselves, against Kubernetes' schema.
    if let Some(v) = common::validator() {
        let (pass, text) = common::validate(&v, "1.37.0", &[nodes]);
        assert!(pass, "{text}");
    }
}

/// `peerpath export --format FORMAT --fabric-map` the published SuperPOD plane.
fn export_plane(format: &str) -> String {
    let o = common::peerpath()
        .args(["export", "--format", format, "--fabric-map"])
        .arg(
            common::repo()
                .join("fixtures/fabric/published/topograph-ibnetdiscover-dgx-h100-ndr-example.out"),
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The nodes of a `kubectl label node --overwrite NAME KEY=VALUE…` script as Node objects
/// (YAML, every key and value quoted; a shell's single quotes around them removed).
fn nodes_of_label_script(script: &str) -> (usize, String) {
    let mut docs = Vec::new();
    for line in script.lines() {
        let Some(rest) = line.strip_prefix("kubectl label node --overwrite ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let name = words.next().unwrap();
        let labels: String = words
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                let (k, v) = (k.trim_matches('\''), v.trim_matches('\''));
                format!("    {k:?}: {v:?}\n")
            })
            .collect();
        docs.push(format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name:?}\n  labels:\n{labels}"
        ));
    }
    (docs.len(), docs.join("---\n"))
}

/// peerpath's Kueue Topology and labels of the plane: the Topology passes Kueue's CRD, the
/// script applies that same Topology, and each of the 119 nodes it labels carries valid labels
/// for every level.
#[test]
fn export_of_superpod_plane_passes_kueue_and_label_rules() {
    let Some(py) = common::python_with_jsonschema() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let topology = export_plane("kueue-topology");
    let topo = write(dir.path(), "topology.yaml", &topology);
    assert_topology_valid(&py, &topo);
    let script = export_plane("k8s-topology");
    assert!(
        script.contains(&topology),
        "the script applies the same Topology:\n{script}"
    );
    let (n, nodes) = nodes_of_label_script(&script);
    assert_eq!(n, 119, "{script}");
    let nodes = write(dir.path(), "nodes.yaml", &nodes);
    let (pass, text) = validate(
        &py,
        &[Path::new("--labels"), Path::new("--levels"), &topo, &nodes],
    );
    assert!(pass && text.matches("PASS").count() == 119, "{text}");
}

/// SYNTHESIZED: two GB200 NVL72 racks of 18 trays in one scalable unit (`peerpath::synth`:
/// each tray's capture carries its rack's NVLink domain); `export --format FORMAT` of them.
fn export_nvl72(dir: &Path, format: &str) -> String {
    let (map, caps) = common::nvl72_fleet(dir, 2);
    let o = common::peerpath()
        .args(["export", "--format", format, "--fabric-map"])
        .arg(&map)
        .arg("-i")
        .arg(&caps)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// With NVLink domains the Topology gains the domain level; it still passes Kueue's CRD, and
/// each of the 36 trays carries a valid label for every level, the domain's included.
#[test]
fn export_of_nvl72_fleet_passes_kueue_with_the_domain_level() {
    let Some(py) = common::python_with_jsonschema() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let topology = export_nvl72(dir.path(), "kueue-topology");
    assert!(
        topology.contains("accelerator.topograph.run/domain"),
        "{topology}"
    );
    let topo = write(dir.path(), "topology.yaml", &topology);
    assert_topology_valid(&py, &topo);
    let (n, nodes) = nodes_of_label_script(&export_nvl72(dir.path(), "k8s-topology"));
    assert_eq!(n, 36);
    let nodes = write(dir.path(), "nodes.yaml", &nodes);
    let (pass, text) = validate(
        &py,
        &[Path::new("--labels"), Path::new("--levels"), &topo, &nodes],
    );
    assert!(pass && text.matches("PASS").count() == 36, "{text}");
}
