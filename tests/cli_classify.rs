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
    assert_eq!(v["schema"], "peerpath.matrix/1");
    let eps = v["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 12);
    for k in ["name", "bdf", "kind", "rdma", "numa_node", "cpus"] {
        assert!(eps[0].get(k).is_some(), "endpoint key {k}");
    }
    assert_eq!(eps[0]["kind"], "accelerator");
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 66);
    let p = &pairs[0];
    for k in ["a", "b", "label", "nccl", "bottleneck_gbytes_per_s", "hops"] {
        assert!(p.get(k).is_some(), "pair key {k}");
    }
    for k in ["path", "gdr", "p2p", "rules"] {
        assert!(p["nccl"].get(k).is_some(), "nccl key {k}");
    }
    assert_eq!(p["label"], "PIX");
    assert_eq!(p["nccl"]["path"], "PIX");
    assert_eq!(p["nccl"]["version"], "2.19");
    assert!(p["hops"].as_array().unwrap().len() >= 3);
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
