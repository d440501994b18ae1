//! `export --format dra`: real `resource.k8s.io/v1` ResourceSlice objects, validated by
//! `kubernetes-validate --strict` (PyPI; the Kubernetes OpenAPI schemas, unknown fields
//! rejected) against Kubernetes 1.34 (the first with `resource.k8s.io/v1`) and the newest it
//! knows; and the attributes checked against the classification: a GPU and its NIC share `rail`,
//! equal `pcieSwitch` means the pair is within PXB, `pcieRoot` is the sysfs root component.
//!
//! `.ci/run` installs kubernetes-validate in a virtual environment and puts it on PATH; without
//! it the schema check fails under CI and is reported as skipped elsewhere.

mod common;

use common::{validate, validator};
use peerpath::analysis::classify::{Classifier, ClassifyOptions, Label};
use peerpath::model::{Bdf, Topology};
use peerpath::sources::{self, LoadOptions};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

fn synth(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/synth/{name}.tar.gz"))
}

fn export(input: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(["export", "--format", "dra", "-i"])
        .arg(input)
        .args(extra)
        .output()
        .unwrap()
}

fn ok(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn resource_slices_pass_the_kubernetes_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for name in ["hgx-h100", "dgx-a100", "misplaced-nic", "vm-flat"] {
        let yaml = ok(export(&synth(name), &["--node-name", "gpu-node-01"]));
        assert!(yaml.contains("kind: ResourceSlice\n"), "{name}");
        let f = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&f, &yaml).unwrap();
        files.push(f);
        let json = ok(export(
            &synth(name),
            &["--node-name", "gpu-node-01", "--json"],
        ));
        let f = dir.path().join(format!("{name}.json"));
        std::fs::write(&f, &json).unwrap();
        files.push(f);
    }
    // An AMD node (issue 34): its GPUs under AMD's driver name, with their xGMI hive.
    let mi300x = dir.path().join("mi300x.tar.gz");
    assert!(
        Command::new(bin())
            .args(["fixture", "mi300x-8gpu", "-o"])
            .arg(&mi300x)
            .status()
            .unwrap()
            .success()
    );
    let yaml = ok(export(&mi300x, &["--node-name", "mi300x-node-01"]));
    assert!(yaml.contains("gpu.amd.com"), "{yaml}");
    let f = dir.path().join("mi300x.yaml");
    std::fs::write(&f, &yaml).unwrap();
    files.push(f);
    // A node with more than 128 devices: several slices of one pool.
    let big = dir.path().join("scaling.tar.gz");
    assert!(
        Command::new(bin())
            .args(["fixture", "scaling-1024", "-o"])
            .arg(&big)
            .status()
            .unwrap()
            .success()
    );
    let yaml = ok(export(
        &big,
        &["--node-name", "big", "--driver", "gpu.example.com"],
    ));
    let docs = yaml.matches("kind: ResourceSlice\n").count();
    assert!(docs >= 2, "{docs} slices");
    assert!(yaml.contains(&format!("resourceSliceCount: {docs}\n")));
    let f = dir.path().join("scaling.yaml");
    std::fs::write(&f, &yaml).unwrap();
    files.push(f);
    let json: Value =
        serde_json::from_str(&ok(export(&big, &["--node-name", "big", "--json"]))).unwrap();
    assert_eq!(json["kind"], "ResourceSliceList");
    assert_eq!(json["items"].as_array().unwrap().len(), docs);
    // kubernetes-validate names each resource by metadata.name, which a list's ListMeta does
    // not have: its items are validated one by one.
    for (i, s) in json["items"].as_array().unwrap().iter().enumerate() {
        assert!(s["spec"]["devices"].as_array().unwrap().len() <= 128);
        let f = dir.path().join(format!("scaling-item{i}.json"));
        std::fs::write(&f, serde_json::to_string(s).unwrap()).unwrap();
        files.push(f);
    }

    let Some(v) = validator() else { return };
    for version in ["1.34.0", "1.37.0"] {
        let (pass, text) = validate(&v, version, &files);
        assert!(pass, "kubernetes {version}: {text}");
        assert_eq!(
            text.matches("passed").count(),
            files.len() + docs - 1,
            "{text}"
        );
    }
    // The validator reads what it is given: the old export's `kind` field on a device fails.
    let bad = std::fs::read_to_string(&files[0]).unwrap().replacen(
        "  - attributes:",
        "  - kind: gpu\n    attributes:",
        1,
    );
    let f = dir.path().join("bad.yaml");
    std::fs::write(&f, bad).unwrap();
    let (pass, text) = validate(&v, "1.37.0", &[f]);
    assert!(!pass && text.contains("'kind' was unexpected"), "{text}");
}

fn devices(t: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&ok(export(t, &["--node-name", "n1", "--json"]))).unwrap();
    assert_eq!(v["apiVersion"], "resource.k8s.io/v1");
    assert_eq!(v["spec"]["driver"], "peerpath.io");
    assert_eq!(v["spec"]["nodeName"], "n1");
    assert_eq!(v["spec"]["pool"]["name"], "n1");
    v["spec"]["devices"].as_array().unwrap().clone()
}

fn attr<'v>(d: &'v Value, k: &str) -> Option<&'v Value> {
    let a = &d["attributes"][k];
    a.get("string").or(a.get("int"))
}

fn bdf(d: &Value) -> Bdf {
    attr(d, "resource.kubernetes.io/pciBusID")
        .and_then(Value::as_str)
        .unwrap()
        .parse()
        .unwrap()
}

fn load(p: &Path) -> Topology {
    sources::load(Some(p), &LoadOptions::default()).unwrap()
}

#[test]
fn attributes_match_the_classification() {
    let name_re = regex::Regex::new(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$").unwrap();
    for name in ["hgx-h100", "dgx-a100", "misplaced-nic", "vm-flat"] {
        let t = load(&synth(name));
        let cl = Classifier::new(&t, &ClassifyOptions::default());
        let devs = devices(&synth(name));
        let by_type = |ty: &str| -> Vec<&Value> {
            devs.iter()
                .filter(|d| attr(d, "type").and_then(Value::as_str) == Some(ty))
                .collect()
        };
        let (gpus, nics) = (by_type("gpu"), by_type("nic"));
        assert!(!gpus.is_empty() && !nics.is_empty(), "{name}");
        for d in &devs {
            let b = bdf(d);
            let dev = t.device(&b).unwrap();
            assert!(name_re.is_match(d["name"].as_str().unwrap()));
            // pcieRoot: the first component of the device's sysfs path.
            let first = dev
                .sysfs_path
                .trim_start_matches("sys/devices/")
                .split('/')
                .next()
                .unwrap();
            assert_eq!(
                attr(d, "resource.kubernetes.io/pcieRoot").and_then(Value::as_str),
                Some(first),
                "{name} {b}"
            );
            // numaNode: the kernel's value, absent when it is -1.
            assert_eq!(
                attr(d, "resource.kubernetes.io/numaNode").and_then(Value::as_u64),
                dev.numa_node.map(u64::from),
                "{name} {b}"
            );
        }
        let rail_nic: BTreeMap<i64, Bdf> = nics
            .iter()
            .filter_map(|n| Some((attr(n, "rail")?.as_i64()?, bdf(n))))
            .collect();
        for g in &gpus {
            let gb = bdf(g);
            // Equal pcieSwitch ⇔ within PXB, for every GPU–NIC pair (rail or not).
            for n in &nics {
                let label = cl.pair(&gb, &bdf(n)).unwrap().label;
                let same = attr(g, "pcieSwitch").is_some()
                    && attr(g, "pcieSwitch") == attr(n, "pcieSwitch");
                assert_eq!(
                    same,
                    matches!(label, Label::Pix | Label::Pxb),
                    "{name} {gb}–{}: {label}",
                    bdf(n)
                );
            }
            // The GPU's rail is a NIC's rail; railPath is the label of that pair.
            if let Some(rail) = attr(g, "rail").and_then(Value::as_i64) {
                let nb = rail_nic[&rail];
                let label = cl.pair(&gb, &nb).unwrap().label;
                assert_eq!(
                    attr(g, "railPath").and_then(Value::as_str),
                    Some(label.to_string().as_str()),
                    "{name} {gb}"
                );
            } else {
                // No rail: rails pair only within PXB, and no NIC is that close to this GPU.
                for n in &nics {
                    let label = cl.pair(&gb, &bdf(n)).unwrap().label;
                    assert!(
                        !matches!(label, Label::Pix | Label::Pxb),
                        "{name} {gb}–{}: {label} but no rail",
                        bdf(n)
                    );
                }
            }
        }
        if name == "misplaced-nic" {
            // GPU3's NIC sits on the other socket: GPU3 has no rail (no NIC within PXB; the
            // nearest it can use, GPU0's, is NODE away) and the moved NIC serves no rail.
            let g3 = gpus
                .iter()
                .find(|g| bdf(g).to_string() == "0000:4b:00.0")
                .unwrap();
            assert_eq!(attr(g3, "rail"), None);
            assert_eq!(attr(g3, "railPath").and_then(Value::as_str), Some("NODE"));
            let moved = nics
                .iter()
                .find(|n| bdf(n).to_string() == "0000:e1:00.0")
                .unwrap();
            assert_eq!(attr(moved, "rail"), None);
        }
    }
}

#[test]
fn dra_needs_a_node_name_and_a_driver_domain() {
    let e = export(&synth("hgx-h100"), &[]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("--node-name"));
    let e = export(
        &synth("hgx-h100"),
        &["--node-name", "n1", "--driver", "Not_A_Domain"],
    );
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("DNS subdomain"));
    let e = export(&synth("hgx-h100"), &["--node-name", "Node 1"]);
    assert_eq!(e.status.code(), Some(2));
}
