//! The `matrix` and `explain` subcommands, run as the binary on a real fixture.

use std::process::Command;

const VE: &str = "fixtures/hwloc/32intel64-2p8co2t+8ve.tar.bz2";

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn matrix_table_has_rows_legend_and_nic_legend() {
    let (rc, out, err) = run(&["matrix", "-i", VE]);
    assert_eq!(rc, 0, "{err}");
    // nvidia-smi's layout: a tab-led header, one tab-separated row per NIC; accelerators are
    // no columns of nvidia-smi's matrix, so they are lines below the legends.
    let header = out.lines().next().unwrap();
    assert!(header.starts_with('\t'), "{header:?}");
    let cols: Vec<&str> = header.split('\t').collect();
    assert_eq!(&cols[1..3], &["NIC0", "NIC1"]);
    assert_eq!(
        &cols[cols.len() - 3..],
        ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    );
    assert!(!out.lines().any(|l| l.starts_with("ACC0\t")));
    let acc0 = out.lines().find(|l| l.starts_with("ACC0 (")).unwrap();
    assert!(
        acc0.contains("CPUs 0-7,16-23, NUMA 0")
            && acc0.contains("ACC1 PIX, ACC2 PIX, ACC3 PIX, ACC4 NODE")
            && acc0.contains("NIC0 PIX"),
        "{acc0}"
    );
    let legend_at = out
        .find(peerpath::render::matrix::NVIDIA_SMI_LEGEND)
        .unwrap();
    assert!(
        out.find(acc0).unwrap() > legend_at,
        "accelerators below the legends"
    );
    assert!(out.contains("NIC Legend:\n\n  NIC0: "));
    assert!(out.contains("  NIC2: enp96s0f0"));
    // Deterministic.
    assert_eq!(run(&["matrix", "-i", VE]).1, out);
}

#[test]
fn matrix_json_schema() {
    let (rc, out, err) = run(&[
        "matrix",
        "-i",
        VE,
        "--format",
        "json",
        "--nccl-version",
        "2.19",
    ]);
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "peerpath.matrix/2");
    assert_eq!(v["nccl_version"], "2.19");
    assert_eq!(v["nccl_path_codes"]["PIX"], 3, "NCCL 2.19's PATH_PIX");
    assert!(v["nccl_path_codes"]["C2C"].is_null(), "no C2C before 2.26");
    let eps = v["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 12);
    for k in ["name", "bdf", "kind", "rdma", "numa_node", "cpus"] {
        assert!(eps[0].get(k).is_some(), "endpoint key {k}");
    }
    assert_eq!(eps[0]["kind"], "accelerator");
    assert_eq!(
        v["pair_fields"],
        serde_json::json!([
            "a",
            "b",
            "label",
            "nccl_path",
            "gdr",
            "p2p",
            "pxn_via",
            "bottleneck_gbytes_per_s"
        ])
    );
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 66);
    assert_eq!(
        pairs[0],
        serde_json::json!([0, 1, "PIX", "PIX", false, false, null, 12.0])
    );
    assert!(
        v.get("detail").is_none(),
        "words and hops only with --detail"
    );
    // One row per line.
    assert!(out.contains("\n    [0,1,\"PIX\",\"PIX\",false,false,null,12.0],\n"));
}

/// `--detail` adds every pair's words and hops, in the rows' order: the object `explain
/// --format json` prints for that pair.
#[test]
fn matrix_json_detail_is_explain_for_every_pair() {
    let (rc, out, err) = run(&["matrix", "-i", VE, "--format", "json", "--detail"]);
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (pairs, detail) = (
        v["pairs"].as_array().unwrap(),
        v["detail"].as_array().unwrap(),
    );
    assert_eq!(detail.len(), pairs.len());
    let eps = v["endpoints"].as_array().unwrap();
    for (row, d) in pairs.iter().zip(detail) {
        let ep = |k: usize| &eps[row[k].as_u64().unwrap() as usize];
        assert_eq!((&d["a"], &d["b"]), (&ep(0)["bdf"], &ep(1)["bdf"]));
        assert_eq!(d["label"], row[2]);
        assert_eq!(d["nccl"]["path"], row[3]);
        assert_eq!(d["bottleneck_gbytes_per_s"], row[7]);
        assert!(!d["hops"].as_array().unwrap().is_empty());
    }
    let k = 20;
    let name = |i: usize| eps[pairs[k][i].as_u64().unwrap() as usize]["name"].clone();
    let (a, b) = (name(0), name(1));
    let (rc, one, _) = run(&[
        "explain",
        a.as_str().unwrap(),
        b.as_str().unwrap(),
        "-i",
        VE,
        "--json",
    ]);
    assert_eq!(rc, 0);
    let one: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(one, detail[k]);
}

/// The document grows with the pairs, not with their words: one row per pair of the matrix
/// (every GPU/accelerator/NIC pair and GPU–NVMe pair, none between two RDMA devices of one
/// function), each a fixed-length row of numbers, booleans, null and short codes; a few tens of
/// bytes per pair, and at most 10× the scan's JSON on a synthesized 272-function node.
#[test]
fn matrix_json_has_one_short_row_per_pair() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("scaling-256");
    let root = root.to_str().unwrap();
    let (rc, _, err) = run(&["fixture", "scaling-256", "-o", root]);
    assert_eq!(rc, 0, "{err}");
    for input in [root, VE, "fixtures/synth/hgx-h100.tar.gz"] {
        let (rc, out, err) = run(&["matrix", "-i", input, "--format", "json"]);
        assert_eq!(rc, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let eps = v["endpoints"].as_array().unwrap();
        let kind = |e: &serde_json::Value| e["kind"].as_str().unwrap().to_string();
        let core = |k: &str| matches!(k, "gpu" | "accelerator" | "nic");
        let mut want = 0;
        for (i, a) in eps.iter().enumerate() {
            for b in &eps[i + 1..] {
                let (ka, kb) = (kind(a), kind(b));
                let wanted = (core(&ka) && core(&kb))
                    || (ka == "gpu" && kb == "nvme")
                    || (ka == "nvme" && kb == "gpu");
                if wanted && a["bdf"] != b["bdf"] {
                    want += 1;
                }
            }
        }
        let pairs = v["pairs"].as_array().unwrap();
        assert!(want > 0);
        assert_eq!(pairs.len(), want, "{input}: one row per pair");
        for row in pairs {
            let row = row.as_array().expect("a row is an array");
            assert_eq!(row.len(), 8, "{input}");
            for x in row {
                assert!(
                    match x {
                        serde_json::Value::String(s) => s.len() <= 4,
                        serde_json::Value::Array(_) | serde_json::Value::Object(_) => false,
                        _ => true,
                    },
                    "{input}: {x} in a row"
                );
            }
        }
        let start = out.find("\n  \"pairs\": [").unwrap();
        let len = out[start + 1..].find("\n  ]").unwrap();
        let per_pair = len as f64 / pairs.len() as f64;
        assert!(per_pair < 64.0, "{input}: {per_pair:.1} bytes per pair");
    }
    let (_, matrix, _) = run(&["matrix", "-i", root, "--format", "json"]);
    let (_, scan, _) = run(&["scan", "-i", root, "--format", "json"]);
    assert!(
        matrix.len() <= 10 * scan.len(),
        "matrix JSON {} bytes, scan JSON {}",
        matrix.len(),
        scan.len()
    );
}

#[test]
fn explain_prints_hops_label_bottleneck_and_nccl() {
    let (rc, out, err) = run(&["explain", "ACC0", "enp96s0f1", "-i", VE]);
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.starts_with("ACC0 (0000:1b:00.0) ↔ NIC3 (0000:60:00.1)"),
        "{out}"
    );
    assert!(out.contains("nvidia-smi label: NODE"));
    assert!(out.contains("pci0000:17") && out.contains("pci0000:5d"));
    assert!(out.contains("Bottleneck: 0.1875 GB/s"), "{out}");
    assert!(out.contains("2.5 GT/s x1 (max 8.0 GT/s x1)"), "{out}");
    assert!(out.contains("NCCL 2.30: path PHB"));
    let (rc, out, _) = run(&["explain", "0000:1b:00.0", "NIC0", "-i", VE, "--json"]);
    assert_eq!(rc, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["label"], "PIX");
}

#[test]
fn explain_unknown_name_lists_valid_names_and_exits_2() {
    let (rc, out, err) = run(&["explain", "GPU0", "ACC1", "-i", VE]);
    assert_eq!(rc, 2);
    assert!(out.is_empty());
    assert!(err.contains("unknown device \"GPU0\""), "{err}");
    assert!(
        err.contains("ACC0 0000:1b:00.0") && err.contains("NIC2 0000:60:00.0 enp96s0f0"),
        "{err}"
    );
}

#[test]
fn bad_nccl_version_is_a_usage_error() {
    let (rc, _, err) = run(&["matrix", "-i", VE, "--nccl-version", "2.6"]);
    assert_eq!(rc, 2);
    assert!(err.contains("not modelled"), "{err}");
}
