//! `peerpath matrix` read the way scripts read `nvidia-smi topo -m` (grep/awk on tab-separated
//! lines), held cell by cell against the published matrices of the machines the synthesized
//! layouts model (fixtures/topo-ground-truth/, copied from shared/reference/), and the tree's
//! link marks on a healthy and a faulty HGX node.

mod common;

use peerpath::model::Bdf;
use peerpath::model::topology::NvLink;
use peerpath::sources::nvml_store::{NVML_NAME, NVML_SCHEMA, NvmlFacts};
use peerpath::sources::rdma_order::{RDMA_NAME, RDMA_SCHEMA, RdmaIndex, RdmaOrder};
use peerpath::synth::{Spec, WriteOptions, layouts, write_tree};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// Writes a layout as a sysfs tree; with `nvlinks`, NVML facts that put every GPU on the
/// NVSwitch fabric with that many links (as a capture on the live machine stores them).
fn tree(spec: &Spec, nvlinks: Option<u32>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_tree(spec, dir.path(), &WriteOptions::default()).unwrap();
    if let Some(n) = nvlinks {
        let gpus: Vec<Bdf> = spec
            .functions
            .iter()
            .filter(|f| f.class >> 8 == 0x0302 && f.vendor == 0x10de)
            .map(|f| f.bdf)
            .collect();
        let facts = NvmlFacts {
            schema: NVML_SCHEMA.into(),
            loaded: true,
            message: "test".into(),
            nvlink_visible: true,
            nvlinks: gpus
                .iter()
                .map(|&a| NvLink {
                    a,
                    b: None,
                    count: n,
                    version: Some(4),
                })
                .collect(),
            gpus: vec![],
            warnings: vec![],
            fabric: None,
        };
        std::fs::write(
            dir.path().join(NVML_NAME),
            serde_json::to_vec(&facts).unwrap(),
        )
        .unwrap();
    }
    dir
}

fn run(args: &[&str]) -> String {
    let o = common::peerpath().args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn matrix(dir: &Path, extra: &[&str]) -> String {
    let d = dir.display().to_string();
    let mut a = vec!["matrix", "-i", d.as_str()];
    a.extend_from_slice(extra);
    run(&a)
}

/// A matrix as a script reads nvidia-smi's: the header is the first line starting with a tab,
/// rows are lines starting with `GPU`/`NIC` split on tabs, the NIC legend is `  NICk: name`.
struct Parsed {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    legend: Vec<(String, String)>,
}

fn parse_tabs(text: &str) -> Parsed {
    let header: Vec<String> = text
        .lines()
        .find(|l| l.starts_with('\t'))
        .expect("a header line starting with a tab")
        .split('\t')
        .map(str::to_string)
        .collect();
    let rows = text
        .lines()
        .filter(|l| l.starts_with("GPU") || l.starts_with("NIC"))
        .filter(|l| l.contains('\t'))
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    let legend = text
        .lines()
        .skip_while(|l| *l != "NIC Legend:")
        .skip(2)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("  ")?.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Parsed {
        header,
        rows,
        legend,
    }
}

/// A published matrix (whitespace-aligned or tab-separated): `(row, column) → label` over the
/// GPU and NIC columns, and the NIC legend.
/// `(row, column) → label`.
type Cells = HashMap<(String, String), String>;

fn published(file: &str) -> (Cells, Vec<(String, String)>) {
    let text =
        std::fs::read_to_string(common::repo().join("fixtures/topo-ground-truth").join(file))
            .unwrap();
    let mut names: Vec<String> = Vec::new();
    let mut cells = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let toks: Vec<&str> = line.split_whitespace().collect();
        if names.is_empty() {
            if toks.first() == Some(&"GPU0") {
                names = toks
                    .iter()
                    .take_while(|t| **t != "CPU")
                    .map(|t| t.to_string())
                    .collect();
            }
            continue;
        }
        match toks.first() {
            Some(r) if names.iter().any(|n| n == r) => {
                for (i, c) in toks[1..].iter().take(names.len()).enumerate() {
                    cells.insert((r.to_string(), names[i].clone()), c.to_string());
                }
            }
            _ => {}
        }
    }
    let legend = text
        .lines()
        .filter_map(|l| l.trim().split_once(": "))
        .filter(|(k, _)| k.starts_with("NIC") && !k.contains(' '))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect();
    (cells, legend)
}

/// Every published GPU and NIC cell against ours; returns the mismatches.
fn mismatches(ours: &Parsed, want: &Cells) -> Vec<String> {
    let col: HashMap<&str, usize> = ours
        .header
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut bad = Vec::new();
    for ((r, c), w) in want {
        let row = ours.rows.iter().find(|x| x[0] == *r);
        let got = row
            .and_then(|x| col.get(c.as_str()).and_then(|&i| x.get(i)))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "(missing)".into());
        if got != *w {
            bad.push(format!("{r}/{c}: published {w}, ours {got}"));
        }
    }
    bad.sort();
    bad
}

#[test]
fn h200_bond_matches_the_published_matrix_and_legend() {
    let dir = tree(&layouts::h200_bond(), Some(18));
    let text = matrix(dir.path(), &[]);
    let ours = parse_tabs(&text);
    let (want, legend) = published("h200-8gpu-9nic-bond.nvidia-smi-topo-m.txt");
    assert_eq!(want.len(), 17 * 17, "the published file has every cell");
    assert_eq!(mismatches(&ours, &want), Vec::<String>::new());
    assert_eq!(ours.legend, legend, "NICk → RDMA device");
    assert_eq!(ours.legend.len(), 9);
    // The same layout: header `\tGPU0…\tNIC8\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID`.
    assert_eq!(ours.header[0], "");
    assert_eq!(
        &ours.header[ours.header.len() - 3..],
        ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    );
    let gpu0 = &ours.rows[0];
    assert_eq!(gpu0[0], "GPU0");
    assert_eq!(gpu0[1], " X ", "the self cell is ` X `");
    assert_eq!(&gpu0[gpu0.len() - 4..], ["0-55,112-167", "0", "", "N/A"]);
    let nic0 = ours.rows.iter().find(|r| r[0] == "NIC0").unwrap();
    assert_eq!(
        nic0.len(),
        ours.header.len() + 1,
        "NIC rows: empty affinity cells"
    );
    assert!(nic0[nic0.len() - 4..].iter().all(String::is_empty));
    // Everything peerpath adds is below the legends, never in a cell.
    let legend_end = text.find("  NIC8: mlx5_bond_0\n").unwrap();
    assert!(text[legend_end..].contains("NCCL view for NCCL"));
    assert!(!text[..legend_end].contains("NCCL view"));
}

/// The scripts people run on nvidia-smi's output, run on ours.
#[test]
fn grep_and_awk_read_it_like_nvidia_smi() {
    let dir = tree(&layouts::h200_bond(), Some(18));
    let out = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(out.path(), matrix(dir.path(), &[])).unwrap();
    let p = out.path().display().to_string();
    let Some(n) = common::tool("grep", &["-c", "^GPU", &p], &[]) else {
        return;
    };
    assert_eq!(n.trim(), "8", "one row per GPU, starting at column 0");
    let Some(col) = common::tool(
        "awk",
        &[
            "-F\t",
            "/^GPU3\\t/ { for (i = 1; i <= NF; i++) if ($i == \"PIX\") print i - 1 }",
            &p,
        ],
        &[],
    ) else {
        return;
    };
    // GPU3 is PIX to NIC3, the 12th column (8 GPUs, NIC0…NIC3).
    assert_eq!(col.trim(), "12");
    let numa = Command::new("awk")
        .args(["-F\t", "/^GPU5\\t/ { print $(NF-2) }", &p])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&numa.stdout).trim(), "1");
}

#[test]
fn dgx_a100_matches_the_published_matrix_and_legend() {
    let dir = tree(&layouts::dgx_a100(), Some(12));
    let ours = parse_tabs(&matrix(dir.path(), &[]));
    let (mut want, legend) = published("dgx-a100-8gpu-10nic.nvidia-smi-topo-m.txt");
    // synth::dgx_a100 has no HGX baseboard switch between a GPU and its leaf switch, so GPUi and
    // NICi share one switch there (PIX) where the real machine says PXB (tests/classify_synth.rs
    // explains; tests/classify_layouts.rs models the baseboard level and gets PXB).
    for i in 0..8 {
        let (g, n) = (format!("GPU{i}"), format!("NIC{i}"));
        assert_eq!(want.remove(&(g.clone(), n.clone())).as_deref(), Some("PXB"));
        assert_eq!(want.remove(&(n, g)).as_deref(), Some("PXB"));
    }
    assert_eq!(mismatches(&ours, &want), Vec::<String>::new());
    assert_eq!(ours.legend, legend);
}

#[test]
fn renamed_devices_and_vfs_are_numbered_as_nvidia_smi() {
    let spec = layouts::hgx_h100_13nic();
    let dir = tree(&spec, None);
    let text = matrix(dir.path(), &[]);
    let ours = parse_tabs(&text);
    let names: Vec<&str> = ours.legend.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(
        names,
        [
            "mlx5_ib0",
            "mlx5_ib1",
            "mlx5_ib2",
            "mlx5_ib3",
            "mlx5_ib4",
            "mlx5_ib5",
            "mlx5_ib6",
            "mlx5_ib7",
            "mlx5_eth0",
            "mlx5_eth1",
            "mlx5_eth2",
            "mlx5_eth3",
            "mlx5_eth4"
        ]
    );
    assert_eq!(
        ours.rows.iter().filter(|r| r[0].starts_with("NIC")).count(),
        13
    );
    // Hand-derived cells (classification.md §1.5): the VFs (NIC10–12) sit beside their PF on one
    // root port of socket 1's host bridge: PIX to both ports, NODE to GPU4–7, SYS to GPU0–3.
    let mut want = HashMap::new();
    for v in ["NIC10", "NIC11", "NIC12"] {
        for o in ["NIC8", "NIC9"] {
            want.insert((v.to_string(), o.to_string()), "PIX".to_string());
        }
        want.insert((v.to_string(), "GPU5".into()), "NODE".into());
        want.insert((v.to_string(), "GPU1".into()), "SYS".into());
        want.insert((v.to_string(), "NIC4".into()), "NODE".into());
    }
    want.insert(("GPU2".into(), "NIC2".into()), "PIX".into());
    want.insert(("NIC8".into(), "NIC9".into()), "PIX".into());
    assert_eq!(mismatches(&ours, &want), Vec::<String>::new());
    // Folding VFs keeps the other NICs' numbers.
    let folded = parse_tabs(&matrix(dir.path(), &["--fold-vfs"]));
    let cols: Vec<&str> = folded.header.iter().map(String::as_str).collect();
    assert!(cols.contains(&"NIC9") && !cols.contains(&"NIC10"));
    assert_eq!(folded.legend.len(), 10);
    // JSON: VFs have no link of their own.
    let d = dir.path().display().to_string();
    let scan: serde_json::Value =
        serde_json::from_str(&run(&["scan", "-i", &d, "--format", "json"])).unwrap();
    let vf = scan["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["bdf"] == layouts::eth_fn(2).to_string())
        .unwrap();
    assert!(vf["link"].is_null());
}

/// With the kernel's registration order stored (as `peerpath capture` does), NICs follow it,
/// not PCI addresses: here the Ethernet ports registered first.
#[test]
fn stored_registration_order_wins() {
    let spec = layouts::hgx_h100_13nic();
    let dir = tree(&spec, None);
    let mut names: Vec<String> = (0..5).map(|i| format!("mlx5_eth{i}")).collect();
    names.extend((0..8).map(|i| format!("mlx5_ib{i}")));
    let order = RdmaOrder {
        schema: RDMA_SCHEMA.into(),
        read: true,
        message: "netlink: 13 RDMA device(s)".into(),
        devices: names
            .iter()
            .enumerate()
            .map(|(i, n)| RdmaIndex {
                index: 2 * i as u32 + 1,
                name: n.clone(),
            })
            .collect(),
    };
    std::fs::write(
        dir.path().join(RDMA_NAME),
        serde_json::to_vec(&order).unwrap(),
    )
    .unwrap();
    let text = matrix(dir.path(), &[]);
    let got: Vec<String> = parse_tabs(&text).legend.into_iter().map(|x| x.1).collect();
    assert_eq!(got, names);
    assert!(!text.contains("rebuilt"), "{text}");
}

#[test]
fn healthy_node_has_no_down_mark_and_a_faulty_one_has_one() {
    let spec = layouts::hgx_h100_field();
    let dir = tree(&spec, None);
    let d = dir.path().display().to_string();
    let scan = run(&["scan", "-i", &d]);
    assert_eq!(scan.matches("DOWN").count(), 0, "{scan}");
    let slot = scan
        .lines()
        .find(|l| l.contains(&layouts::FIELD_EMPTY_SLOT.to_string()))
        .unwrap();
    assert!(
        slot.contains("link down") && slot.contains("(empty)"),
        "{slot}"
    );
    assert!(!slot.contains("[32.0 GT/s x16]"), "{slot}");
    let json: serde_json::Value =
        serde_json::from_str(&run(&["scan", "-i", &d, "--format", "json"])).unwrap();
    let port = json["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["bdf"] == layouts::FIELD_EMPTY_SLOT.to_string())
        .unwrap();
    assert_eq!(port["link"]["current_width"], 0, "down is known: width 0");
    let dot = run(&["export", "-i", &d, "--format", "dot"]);
    assert!(!dot.contains("color=red"));
    let audit = run(&["audit", "-i", &d]);
    assert!(!audit.contains("ERROR"), "{audit}");

    let bad = layouts::with_link_width(spec, layouts::hgx_gpu(2), 8).unwrap();
    let dir = tree(&bad, None);
    let d = dir.path().display().to_string();
    let scan = run(&["scan", "-i", &d]);
    let marks: Vec<&str> = scan.lines().filter(|l| l.contains("DOWN")).collect();
    assert_eq!(marks.len(), 1, "{scan}");
    assert!(marks[0].contains("GPU") && marks[0].contains("DOWN: x8 of x16"));
    let dot = run(&["export", "-i", &d, "--format", "dot"]);
    assert_eq!(dot.matches(", color=red").count(), 1);
}

/// `matrix --format json` carries what the table carries: every GPU/NIC cell of the table
/// (both orders) is the `label` of the JSON row of that pair, every JSON row between two GPUs
/// or NICs is a cell of the table, and the GPU rows' affinity cells are the endpoints' `cpus`,
/// `numa_node` and `gpu_numa_id`. On NVLink labels (h200-bond, the NCCL dump with PXN), `?`
/// (nvidiagpunumanodes), bonds, renamed devices and VFs (hgx-h100-13nic) and a VM.
#[test]
fn json_labels_are_the_table_labels() {
    let trees = [
        tree(&layouts::h200_bond(), Some(18)),
        tree(&layouts::hgx_h100_13nic(), None),
        tree(&layouts::dgx_a100(), Some(12)),
    ];
    let mut inputs: Vec<String> = trees
        .iter()
        .map(|d| d.path().display().to_string())
        .collect();
    for f in [
        "fixtures/hwloc/nvidiagpunumanodes.tar.bz2",
        "fixtures/nccl/hgx-a100-icelake-bcm-5bond.nccl-topo-dump.xml",
        "fixtures/synth/vm-flat.tar.gz",
    ] {
        inputs.push(common::repo().join(f).display().to_string());
    }
    let mut seen_labels = std::collections::BTreeSet::new();
    for input in &inputs {
        let table = parse_tabs(&run(&["matrix", "-i", input]));
        let doc: serde_json::Value =
            serde_json::from_str(&run(&["matrix", "-i", input, "--format", "json"])).unwrap();
        assert_eq!(doc["schema"], "peerpath.matrix/2");
        let eps = doc["endpoints"].as_array().unwrap();
        let field = |name: &str| {
            doc["pair_fields"]
                .as_array()
                .unwrap()
                .iter()
                .position(|f| f == name)
                .unwrap_or_else(|| panic!("pair field {name}"))
        };
        let (fa, fb, fl) = (field("a"), field("b"), field("label"));
        let name = |k: &serde_json::Value| eps[k.as_u64().unwrap() as usize]["name"].clone();
        // (row, column) → label, both orders, GPU and NIC endpoints only (the table's).
        let mut json: HashMap<(String, String), String> = HashMap::new();
        for row in doc["pairs"].as_array().unwrap() {
            let (a, b) = (name(&row[fa]), name(&row[fb]));
            let (a, b) = (a.as_str().unwrap(), b.as_str().unwrap());
            if !["GPU", "NIC"].iter().any(|p| a.starts_with(p))
                || !["GPU", "NIC"].iter().any(|p| b.starts_with(p))
            {
                continue;
            }
            let l = row[fl].as_str().unwrap().to_string();
            seen_labels.insert(l.clone());
            json.insert((a.into(), b.into()), l.clone());
            json.insert((b.into(), a.into()), l);
        }
        let bdf = |n: &str| {
            eps.iter()
                .find(|e| e["name"] == n)
                .map(|e| e["bdf"].clone())
                .unwrap()
        };
        let cols = &table.header[1..table.header.len() - 3];
        let mut compared = 0;
        for r in &table.rows {
            for (k, c) in cols.iter().enumerate() {
                let cell = r[k + 1].trim();
                if *c == r[0] {
                    assert_eq!(cell, "X", "{input} {c}");
                    continue;
                }
                match json.get(&(r[0].clone(), c.clone())) {
                    Some(l) => {
                        assert_eq!(l, cell, "{input}: {}/{c}", r[0]);
                        compared += 1;
                    }
                    // Two RDMA devices of one function: no pair in the JSON, PIX in the table.
                    None => assert!(
                        bdf(&r[0]) == bdf(c) && cell == "PIX",
                        "{input}: {}/{c} is {cell} in the table and absent from the JSON",
                        r[0]
                    ),
                }
            }
            let e = eps.iter().find(|e| e["name"] == r[0].as_str()).unwrap();
            if r[0].starts_with("GPU") {
                let na = |v: &serde_json::Value| match v {
                    serde_json::Value::Null => "N/A".to_string(),
                    serde_json::Value::String(s) => s.clone(),
                    v => v.to_string(),
                };
                let n = r.len();
                assert_eq!(r[n - 4], na(&e["cpus"]), "{input} {}", r[0]);
                assert_eq!(r[n - 3], na(&e["numa_node"]), "{input} {}", r[0]);
                assert_eq!(r[n - 1], na(&e["gpu_numa_id"]), "{input} {}", r[0]);
            }
        }
        assert!(compared > 0, "{input}: no cell compared");
        assert_eq!(
            compared,
            json.len(),
            "{input}: a JSON pair missing from the table"
        );
    }
    for l in ["NV18", "NV12", "?", "PIX", "PXB", "NODE", "SYS", "PHB"] {
        assert!(seen_labels.contains(l), "no {l} cell among the inputs");
    }
}
