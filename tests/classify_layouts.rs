//! Pair classification on layouts built in code that reproduce published `nvidia-smi topo -m`
//! outputs (fixtures/topo-ground-truth/, copied from shared/reference/topo-ground-truth/), and
//! the hand-derived NCCL expectations of that directory's README.

use peerpath::analysis::classify::{
    Classifier, ClassifyOptions, Label, Matrix, classify_all, classify_pair,
};
use peerpath::analysis::nccl::NcclPath;
use peerpath::analysis::testkit::TopoBuilder;
use peerpath::model::{Bdf, Topology};
use std::collections::HashMap;
use std::path::Path;

fn b(s: &str) -> Bdf {
    s.parse().unwrap()
}

fn opts(v: &str) -> ClassifyOptions {
    ClassifyOptions {
        nccl_version: v.parse().unwrap(),
    }
}

/// A published matrix: column names and `(row, col) -> label`.
struct Published {
    names: Vec<String>,
    cells: HashMap<(String, String), String>,
}

fn published(file: &str) -> Published {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/topo-ground-truth")
        .join(file);
    let text = std::fs::read_to_string(&p).unwrap();
    let mut names: Vec<String> = Vec::new();
    let mut cells = HashMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            if !names.is_empty() && line.trim().is_empty() {
                break;
            }
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        if names.is_empty() {
            if toks.first() == Some(&"GPU0") && line.starts_with(char::is_whitespace) {
                names = toks
                    .iter()
                    .take_while(|t| **t != "CPU")
                    .map(|t| t.to_string())
                    .collect();
            }
            continue;
        }
        let Some(row) = toks.first() else { continue };
        if !names.iter().any(|n| n == row) {
            continue;
        }
        for (i, c) in toks[1..].iter().take(names.len()).enumerate() {
            cells.insert((row.to_string(), names[i].clone()), c.to_string());
        }
    }
    assert!(!names.is_empty(), "{file}: no header");
    Published { names, cells }
}

/// Our label for two published names (`GPU0`, `NIC3`, `mlx5_0`).
fn our_label(m: &Matrix, a: &str, c: &str) -> String {
    let find = |n: &str| {
        m.endpoints
            .iter()
            .find(|e| e.name == n || e.rdma.iter().any(|r| r == n))
            .unwrap_or_else(|| panic!("no endpoint {n}"))
            .bdf
    };
    let (x, y) = (find(a), find(c));
    if x == y {
        return "X".into();
    }
    m.pair(&x, &y).unwrap().label.to_string()
}

/// Compares every published cell; returns the mismatches as `(row, col, published, ours)`.
fn compare(m: &Matrix, p: &Published) -> Vec<(String, String, String, String)> {
    let mut bad = Vec::new();
    let mut n = 0;
    for ((r, c), want) in &p.cells {
        let got = our_label(m, r, c);
        n += 1;
        if *want != got {
            bad.push((r.clone(), c.clone(), want.clone(), got));
        }
    }
    assert!(n > 0);
    bad.sort();
    bad
}

/// DGX A100: per GPU pair a Broadcom PEX switch T (1000:c010, subsystem 1000:a064) with two
/// second-level PEX switches La/Lb (same signature); each leaf holds a baseboard switch
/// (1000:c010, subsystem 10de:13b8) with the GPU, and a NIC. Pairs on NUMA 3, 1, 7, 5 (NPS4,
/// AMD Rome); the storage dual-port HCA on NUMA 0. NVSwitch: NV12.
fn dgx_a100() -> Topology {
    let cpus: Vec<String> = (0..8)
        .map(|i| format!("{}-{}", i * 16, i * 16 + 15))
        .collect();
    let cpus: Vec<&str> = cpus.iter().map(|s| s.as_str()).collect();
    let mut t = TopoBuilder::new(&cpus).cpu("AuthenticAMD", 23, 49);
    for (k, numa) in [3u32, 1, 7, 5].into_iter().enumerate() {
        let r = 0x20 * k as u32;
        let a = |off: u32, dev: u32| format!("0000:{:02x}:{:02x}.0", r + off, dev);
        let n = Some(numa);
        let rp = format!("0000:{:02x}:01.1", r);
        t.bridge(&rp, None, n);
        t.switch(&rp, &a(1, 0), &[&a(2, 0), &a(2, 1)], n);
        for (leaf, (usp, dsp)) in [(3u32, 0u32), (9, 1)].into_iter().enumerate() {
            let up = a(usp, 0);
            let parent_dsp = a(2, dsp);
            t.switch(&parent_dsp, &up, &[&a(usp + 1, 0), &a(usp + 1, 1)], n);
            t.ids(&up, (0x1000, 0xc010));
            t.subsystem(&up, (0x1000, 0xa064));
            let g_up = a(usp + 2, 0);
            t.switch(&a(usp + 1, 0), &g_up, &[&a(usp + 3, 0)], n);
            t.ids(&g_up, (0x1000, 0xc010));
            t.subsystem(&g_up, (0x10de, 0x13b8));
            let gpu = a(usp + 4, 0);
            t.gpu(&gpu, Some(&a(usp + 3, 0)), n);
            t.nvlink(&gpu, None, 12, Some(3));
            let nic_name = format!("mlx5_{}", 2 * k + leaf);
            t.nic(&a(usp + 5, 0), Some(&a(usp + 1, 1)), n, &[&nic_name]);
        }
        let top = a(1, 0);
        t.ids(&top, (0x1000, 0xc010));
        t.subsystem(&top, (0x1000, 0xa064));
    }
    t.bridge("0000:a0:01.1", None, Some(0));
    t.nic("0000:a1:00.0", Some("0000:a0:01.1"), Some(0), &["mlx5_8"]);
    t.nic("0000:a1:00.1", Some("0000:a0:01.1"), Some(0), &["mlx5_9"]);
    t.build()
}

/// ASUS ESC8000A-E12 as its `lspci -tv`: every GPU and each dual-port CX7 on its own root
/// port of its own host bridge; 2 AMD Genoa sockets = 2 NUMA nodes.
fn asus_esc8000a(gpus: usize) -> Topology {
    let mut t = TopoBuilder::new(&["0-31", "32-63"]).cpu("AuthenticAMD", 25, 17);
    let all_gpus = [
        ("00", "01", 0u32),
        ("40", "41", 0),
        ("c0", "c1", 1),
        ("e0", "e1", 1),
    ];
    for (hb, bus, numa) in all_gpus.iter().take(gpus) {
        let rp = format!("0000:{hb}:01.1");
        t.bridge(&rp, None, Some(*numa));
        t.gpu(&format!("0000:{bus}:00.0"), Some(&rp), Some(*numa));
    }
    t.bridge("0000:20:03.1", None, Some(0));
    t.nic("0000:21:00.0", Some("0000:20:03.1"), Some(0), &["mlx5_0"]);
    t.nic("0000:21:00.1", Some("0000:20:03.1"), Some(0), &["mlx5_1"]);
    t.bridge("0000:80:01.1", None, Some(1));
    t.nic("0000:81:00.0", Some("0000:80:01.1"), Some(1), &["mlx5_2"]);
    t.nic("0000:81:00.1", Some("0000:80:01.1"), Some(1), &["mlx5_3"]);
    t.nvlink_visible();
    t.build()
}

/// 8 GPUs in two cascaded switch trees (one per socket), mlx5_0 on another root port of the
/// second socket's host bridge. Broadwell-era Intel.
fn pcie_8gpu_switches() -> Topology {
    let mut t = TopoBuilder::new(&["0-13", "14-27"]).cpu("GenuineIntel", 6, 79);
    for (s, root) in [(0u32, 0x00u32), (1, 0x80)] {
        let n = Some(s);
        let a = |off: u32, dev: u32| format!("0000:{:02x}:{:02x}.0", root + off, dev);
        let rp = format!("0000:{:02x}:02.0", root);
        t.bridge(&rp, None, n);
        t.switch(&rp, &a(1, 0), &[&a(2, 8), &a(2, 16)], n);
        for (leaf, base) in [(8u32, 3u32), (16, 8)] {
            t.switch(
                &a(2, leaf),
                &a(base, 0),
                &[&a(base + 1, 8), &a(base + 1, 16)],
                n,
            );
            t.gpu(&a(base + 2, 0), Some(&a(base + 1, 8)), n);
            t.gpu(&a(base + 3, 0), Some(&a(base + 1, 16)), n);
        }
    }
    t.bridge("0000:80:03.0", None, Some(1));
    t.nic("0000:90:00.0", Some("0000:80:03.0"), Some(1), &["mlx5_0"]);
    t.nvlink_visible();
    t.build()
}

/// KVM guest (q35): the passthrough GPU and NIC on root ports of the guest's one root bus.
fn kvm_vm() -> Topology {
    let mut t = TopoBuilder::new(&["0-251"]).cpu("AuthenticAMD", 25, 17);
    t.bridge("0000:00:02.0", None, Some(0));
    t.bridge("0000:00:02.1", None, Some(0));
    t.gpu("0000:01:00.0", Some("0000:00:02.0"), Some(0));
    t.nic("0000:02:00.0", Some("0000:00:02.1"), Some(0), &["mlx5_0"]);
    t.build()
}

/// DGX-2 (as far as the excerpt shows): per socket two host bridges, each with a PLX tree of
/// a parent switch and two leaf switches; each leaf holds two GPUs and one HCA. NV6 fabric.
fn dgx2() -> Topology {
    let mut t = TopoBuilder::new(&["0-23,48-71", "24-47,72-95"]).cpu("GenuineIntel", 6, 85);
    let mut gpu = 0;
    for tree in 0..4u32 {
        let numa = Some(tree / 2);
        let root = 0x20 * tree;
        let a = |off: u32, dev: u32| format!("0000:{:02x}:{:02x}.0", root + off, dev);
        let rp = format!("0000:{:02x}:00.0", root);
        t.bridge(&rp, None, numa);
        t.switch(&rp, &a(1, 0), &[&a(2, 0), &a(2, 1)], numa);
        for leaf in 0..2u32 {
            let base = 3 + leaf * 8;
            t.switch(
                &a(2, leaf),
                &a(base, 0),
                &[&a(base + 1, 0), &a(base + 1, 1), &a(base + 1, 2)],
                numa,
            );
            for g in 0..2u32 {
                let addr = a(base + 2 + g, 0);
                t.gpu(&addr, Some(&a(base + 1, g)), numa);
                t.nvlink(&addr, None, 6, Some(2));
                gpu += 1;
            }
            let name = format!("mlx5_{}", tree * 2 + leaf);
            t.nic(&a(base + 4, 0), Some(&a(base + 1, 2)), numa, &[&name]);
        }
    }
    assert_eq!(gpu, 16);
    t.bridge("0000:90:00.0", None, Some(1));
    t.nic("0000:91:00.0", Some("0000:90:00.0"), Some(1), &["mlx5_8"]);
    t.bridge("0000:90:01.0", None, Some(1));
    t.nic("0000:92:00.0", Some("0000:90:01.0"), Some(1), &["mlx5_9"]);
    t.build()
}

#[test]
fn dgx_a100_reproduces_published_matrix() {
    let m = classify_all(&dgx_a100(), &ClassifyOptions::default());
    let p = published("dgx-a100-8gpu-10nic.nvidia-smi-topo-m.txt");
    assert_eq!(p.names.len(), 18);
    assert_eq!(p.cells.len(), 18 * 18);
    assert_eq!(compare(&m, &p), vec![]);
}

#[test]
fn asus_esc8000a_reproduces_published_matrix() {
    let m = classify_all(&asus_esc8000a(4), &ClassifyOptions::default());
    let p = published("asus-esc8000a-e12-4x-rtx6000ada-cx7.nvidia-smi-topo-m.txt");
    assert_eq!(p.cells.len(), 8 * 8);
    assert_eq!(compare(&m, &p), vec![]);
}

#[test]
fn pcie_8gpu_switches_reproduces_published_matrix() {
    let m = classify_all(&pcie_8gpu_switches(), &ClassifyOptions::default());
    let p = published("pcie-8gpu-2socket-switches-mlx5.nvidia-smi-topo-m.txt");
    assert_eq!(p.cells.len(), 9 * 9);
    assert_eq!(compare(&m, &p), vec![]);
}

#[test]
fn kvm_vm_reproduces_published_matrix() {
    let m = classify_all(&kvm_vm(), &ClassifyOptions::default());
    let p = published("h100-pcie-kvm-vm-1gpu.nvidia-smi-topo-m.txt");
    assert_eq!(p.cells.len(), 4);
    assert_eq!(compare(&m, &p), vec![]);
}

#[test]
fn dgx2_reproduces_published_rows() {
    let m = classify_all(&dgx2(), &ClassifyOptions::default());
    let p = published("dgx2-v100-16gpu-10nic.nvidia-smi-topo-m.EXCERPT.txt");
    assert_eq!(p.names.len(), 26);
    assert_eq!(p.cells.len(), 5 * 26, "GPU0-GPU4 rows");
    assert_eq!(compare(&m, &p), vec![]);
}

// ---- NCCL expectations of topo-ground-truth/README.md ----

#[test]
fn nccl_dgx_a100_gpu0_nic0_pxb_gdr_on() {
    let t = dgx_a100();
    let m = classify_all(&t, &ClassifyOptions::default());
    let g0 = m.endpoint("GPU0").unwrap().bdf;
    let n0 = m.endpoint("NIC0").unwrap().bdf;
    let p = m.pair(&g0, &n0).unwrap();
    assert_eq!(p.label, Label::Pxb);
    assert_eq!(p.nccl.path, NcclPath::Pxb);
    assert!(p.nccl.gdr, "{:?}", p.nccl.rules);
    assert_eq!(p.nccl.version, "2.30");
}

#[test]
fn nccl_dgx_a100_gpu0_nic2_sys_with_pxn_via_gpu2_or_gpu3() {
    let t = dgx_a100();
    let m = classify_all(&t, &ClassifyOptions::default());
    let g0 = m.endpoint("GPU0").unwrap().bdf;
    let n2 = m.endpoint("NIC2").unwrap().bdf;
    let p = m.pair(&g0, &n2).unwrap();
    assert_eq!(p.label, Label::Sys);
    assert_eq!(p.nccl.path, NcclPath::Sys);
    assert!(!p.nccl.gdr);
    let relay = p.nccl.pxn_via.expect("PXN relay");
    let g2 = m.endpoint("GPU2").unwrap().bdf;
    let g3 = m.endpoint("GPU3").unwrap().bdf;
    assert!(relay == g2 || relay == g3, "{relay}");
    assert!(p.nccl.rules.iter().any(|r| r.contains("PXN")));
    // NUMA 3 and NUMA 1 share a socket: still SYS, with AMD's inter-CPU figure.
    assert_eq!(p.bottleneck_gbytes_per_s, Some(16.0));
    // PXN does not exist before NCCL 2.12.
    let old = classify_pair(&t, &g0, &n2, &opts("2.11")).unwrap();
    assert_eq!(old.nccl.pxn_via, None);
}

#[test]
fn nccl_dgx_a100_gpu0_gpu1_nvl_240() {
    let t = dgx_a100();
    let m = classify_all(&t, &ClassifyOptions::default());
    let g0 = m.endpoint("GPU0").unwrap().bdf;
    let g1 = m.endpoint("GPU1").unwrap().bdf;
    let p = m.pair(&g0, &g1).unwrap();
    assert_eq!(p.label, Label::Nv(12));
    assert_eq!(p.nccl.path, NcclPath::Nvl);
    assert!(p.nccl.p2p);
    assert_eq!(p.bottleneck_gbytes_per_s, Some(240.0));
}

#[test]
fn nccl_dgx_a100_broadcom_flattening_nic_pair() {
    // nvidia-smi counts La, T and Lb (PXB); NCCL fuses La and Lb into T (PIX).
    let t = dgx_a100();
    let m = classify_all(&t, &ClassifyOptions::default());
    let n0 = m.endpoint("NIC0").unwrap().bdf;
    let n1 = m.endpoint("NIC1").unwrap().bdf;
    let p = m.pair(&n0, &n1).unwrap();
    assert_eq!(p.label, Label::Pxb);
    assert_eq!(p.nccl.path, NcclPath::Pix);
    assert!(
        p.nccl
            .rules
            .iter()
            .any(|r| r.contains("ncclTopoFlattenBcmSwitches")),
        "{:?}",
        p.nccl.rules
    );
    assert!(m.notes.iter().any(|n| n.contains("Broadcom")));
    // The baseboard switch (subsystem 10de:13b8) is not fused: GPU–NIC stays PXB for NCCL.
    let g0 = m.endpoint("GPU0").unwrap().bdf;
    assert_eq!(m.pair(&g0, &n0).unwrap().nccl.path, NcclPath::Pxb);
    // Storage HCA functions: PIX to each other.
    let n8 = m.endpoint("NIC8").unwrap().bdf;
    let n9 = m.endpoint("NIC9").unwrap().bdf;
    assert_eq!(m.pair(&n8, &n9).unwrap().label, Label::Pix);
}

#[test]
fn nccl_asus_gpu0_gpu1_phb_p2p_depends_on_gpu_count() {
    let t = asus_esc8000a(4);
    let m = classify_all(&t, &ClassifyOptions::default());
    let g0 = m.endpoint("GPU0").unwrap().bdf;
    let g1 = m.endpoint("GPU1").unwrap().bdf;
    let p = m.pair(&g0, &g1).unwrap();
    assert_eq!(p.label, Label::Node);
    assert_eq!(p.nccl.path, NcclPath::Phb);
    assert!(!p.nccl.p2p, "{:?}", p.nccl.rules);
    // Only two GPUs on an AMD CPU: cut-off SYS, P2P on.
    let t2 = asus_esc8000a(2);
    let p2 = classify_pair(&t2, &g0, &g1, &ClassifyOptions::default()).unwrap();
    assert_eq!(p2.nccl.path, NcclPath::Phb);
    assert!(p2.nccl.p2p, "{:?}", p2.nccl.rules);
    // NCCL 2.22 on AMD: SYS cut-off whatever the GPU count.
    let p3 = classify_pair(&t, &g0, &g1, &opts("2.22")).unwrap();
    assert!(p3.nccl.p2p, "{:?}", p3.nccl.rules);
}

#[test]
fn nccl_asus_gpu0_nic0_phb_gdr_off() {
    let t = asus_esc8000a(4);
    let m = classify_all(&t, &ClassifyOptions::default());
    let g0 = m.endpoint("GPU0").unwrap().bdf;
    let n0 = m.endpoint("NIC0").unwrap().bdf;
    let p = m.pair(&g0, &n0).unwrap();
    assert_eq!(p.label, Label::Node);
    assert_eq!(p.nccl.path, NcclPath::Phb);
    assert!(!p.nccl.gdr);
    assert_eq!(p.nccl.pxn_via, None, "no NVLink: no PXN");
}

#[test]
fn nccl_pcie_8gpu_gpu0_gpu2_pxb_p2p_on_and_gpu4_nic_phb_gdr_off() {
    let t = pcie_8gpu_switches();
    let m = classify_all(&t, &ClassifyOptions::default());
    let e = |n: &str| m.endpoint(n).unwrap().bdf;
    let p = m.pair(&e("GPU0"), &e("GPU2")).unwrap();
    assert_eq!(p.nccl.path, NcclPath::Pxb);
    assert!(p.nccl.p2p);
    let q = m.pair(&e("GPU4"), &e("NIC0")).unwrap();
    assert_eq!(q.label, Label::Phb);
    assert_eq!(q.nccl.path, NcclPath::Phb);
    assert!(!q.nccl.gdr);
    // Broadwell-class inter-CPU figure on SYS paths.
    let s = m.pair(&e("GPU0"), &e("NIC0")).unwrap();
    assert_eq!(s.nccl.path, NcclPath::Sys);
    assert_eq!(s.bottleneck_gbytes_per_s, Some(6.0));
}

#[test]
fn nccl_kvm_gpu0_nic0_phb_gdr_off() {
    let t = kvm_vm();
    let m = classify_all(&t, &ClassifyOptions::default());
    let p = &m.pairs[0];
    assert_eq!(p.label, Label::Phb);
    assert_eq!(p.nccl.path, NcclPath::Phb);
    assert!(!p.nccl.gdr);
}

// ---- rules on small layouts ----

#[test]
fn numa_unknown_on_two_numa_machine_is_unknown_not_a_guess() {
    let mut t = TopoBuilder::new(&["0-7", "8-15"]);
    t.bridge("0000:00:01.0", None, None);
    t.gpu("0000:01:00.0", Some("0000:00:01.0"), None);
    t.bridge("0000:80:01.0", None, None);
    t.nic("0000:81:00.0", Some("0000:80:01.0"), None, &["mlx5_0"]);
    let t = t.build();
    let p = classify_pair(
        &t,
        &b("0000:01:00.0"),
        &b("0000:81:00.0"),
        &ClassifyOptions::default(),
    )
    .unwrap();
    assert_eq!(p.label, Label::Unknown);
    assert_eq!(p.label.to_string(), "?");
    assert!(p.reason.contains("cannot be decided"), "{}", p.reason);
    // NCCL keys both by numa_node -1: one CPU node, PHB.
    assert_eq!(p.nccl.path, NcclPath::Phb);
    let m = classify_all(&t, &ClassifyOptions::default());
    assert!(m.notes.iter().any(|n| n.contains("NUMA node unknown")));
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["pairs"][0]["label"], "?");
}

#[test]
fn one_numa_unknown_gives_nccl_sys() {
    let mut t = TopoBuilder::new(&["0-7", "8-15"]);
    t.bridge("0000:00:01.0", None, Some(0));
    t.gpu("0000:01:00.0", Some("0000:00:01.0"), Some(0));
    t.bridge("0000:80:01.0", None, None);
    t.nic("0000:81:00.0", Some("0000:80:01.0"), None, &["mlx5_0"]);
    let t = t.build();
    let p = classify_pair(
        &t,
        &b("0000:01:00.0"),
        &b("0000:81:00.0"),
        &ClassifyOptions::default(),
    )
    .unwrap();
    assert_eq!(p.label, Label::Unknown);
    assert_eq!(p.nccl.path, NcclPath::Sys);
    assert!(p.nccl.rules[0].contains("-1"), "{:?}", p.nccl.rules);
}

#[test]
fn single_numa_machine_makes_node_decidable() {
    let mut t = TopoBuilder::new(&["0-7"]);
    t.bridge("0000:00:01.0", None, None);
    t.gpu("0000:01:00.0", Some("0000:00:01.0"), None);
    t.bridge("0000:80:01.0", None, None);
    t.nic("0000:81:00.0", Some("0000:80:01.0"), None, &["mlx5_0"]);
    let t = t.build();
    let p = classify_pair(
        &t,
        &b("0000:01:00.0"),
        &b("0000:81:00.0"),
        &ClassifyOptions::default(),
    )
    .unwrap();
    assert_eq!(p.label, Label::Node, "{}", p.reason);
}

#[test]
fn nvb_through_an_intermediate_gpu() {
    // DGX-1-like chain: GPU0 -NV2- GPU1 -NV2- GPU2, no GPU0–GPU2 link, all on one switch.
    let mut t = TopoBuilder::new(&["0-7"]).cpu("GenuineIntel", 6, 85);
    t.bridge("0000:00:01.0", None, Some(0));
    t.switch(
        "0000:00:01.0",
        "0000:01:00.0",
        &["0000:02:00.0", "0000:02:01.0", "0000:02:02.0"],
        Some(0),
    );
    t.gpu("0000:03:00.0", Some("0000:02:00.0"), Some(0));
    t.gpu("0000:04:00.0", Some("0000:02:01.0"), Some(0));
    t.gpu("0000:05:00.0", Some("0000:02:02.0"), Some(0));
    t.nvlink("0000:03:00.0", Some("0000:04:00.0"), 2, Some(2));
    t.nvlink("0000:04:00.0", Some("0000:05:00.0"), 2, Some(2));
    let t = t.build();
    let m = classify_all(&t, &ClassifyOptions::default());
    let p01 = m.pair(&b("0000:03:00.0"), &b("0000:04:00.0")).unwrap();
    assert_eq!(p01.label, Label::Nv(2));
    assert_eq!(p01.nccl.path, NcclPath::Nvl);
    let p02 = m.pair(&b("0000:03:00.0"), &b("0000:05:00.0")).unwrap();
    assert_eq!(p02.label, Label::Pix, "nvidia-smi never shows NVB");
    assert_eq!(p02.nccl.path, NcclPath::Nvb);
    assert!(p02.nccl.p2p);
}

#[test]
fn cascaded_switch_counts_and_plain_bridge() {
    let mut t = TopoBuilder::new(&["0-7"]);
    t.bridge("0000:00:01.0", None, Some(0));
    t.switch(
        "0000:00:01.0",
        "0000:01:00.0",
        &["0000:02:00.0", "0000:02:01.0"],
        Some(0),
    );
    // GPU one level deeper than the NIC under the same top switch: PXB.
    t.switch("0000:02:00.0", "0000:03:00.0", &["0000:04:00.0"], Some(0));
    t.gpu("0000:05:00.0", Some("0000:04:00.0"), Some(0));
    t.nic("0000:06:00.0", Some("0000:02:01.0"), Some(0), &["mlx5_0"]);
    // A PCIe-to-PCI bridge on its own root port with two devices: one bridge, PIX.
    t.bridge("0000:00:02.0", None, Some(0));
    t.bridge("0000:10:00.0", Some("0000:00:02.0"), Some(0));
    t.gpu("0000:11:00.0", Some("0000:10:00.0"), Some(0));
    t.gpu("0000:11:01.0", Some("0000:10:00.0"), Some(0));
    let t = t.build();
    let c = Classifier::new(&t, &ClassifyOptions::default());
    let p = c.pair(&b("0000:05:00.0"), &b("0000:06:00.0")).unwrap();
    assert_eq!(p.label, Label::Pxb, "{}", p.reason);
    assert!(p.reason.contains("2 PCIe"), "{}", p.reason);
    assert_eq!(p.nccl.path, NcclPath::Pxb);
    let q = c.pair(&b("0000:11:00.0"), &b("0000:11:01.0")).unwrap();
    assert_eq!(q.label, Label::Pix, "{}", q.reason);
    let r = c.pair(&b("0000:05:00.0"), &b("0000:11:00.0")).unwrap();
    assert_eq!(r.label, Label::Phb);
    // The label table agrees with the pair API and its diagonal is X.
    let n = c.endpoints().len();
    let table = c.label_table();
    assert_eq!(table.len(), n * n);
    for i in 0..n {
        assert_eq!(table[i * n + i], Label::X);
        for j in 0..n {
            if i != j {
                let (ei, ej) = (&c.endpoints()[i], &c.endpoints()[j]);
                assert_eq!(table[i * n + j], c.pair(&ei.bdf, &ej.bdf).unwrap().label);
            }
        }
    }
}

#[test]
fn degraded_link_is_the_bottleneck_and_says_so() {
    let mut t = TopoBuilder::new(&["0-7"]);
    t.bridge("0000:00:01.0", None, Some(0));
    t.switch(
        "0000:00:01.0",
        "0000:01:00.0",
        &["0000:02:00.0", "0000:02:01.0"],
        Some(0),
    );
    t.gpu("0000:03:00.0", Some("0000:02:00.0"), Some(0));
    t.nic("0000:04:00.0", Some("0000:02:01.0"), Some(0), &["mlx5_0"]);
    t.link("0000:04:00.0", (16.0, 8), (16.0, 16));
    let t = t.build();
    let p = classify_pair(
        &t,
        &b("0000:03:00.0"),
        &b("0000:04:00.0"),
        &ClassifyOptions::default(),
    )
    .unwrap();
    assert_eq!(p.label, Label::Pix);
    assert_eq!(p.bottleneck_gbytes_per_s, Some(12.0));
    let h = &p.hops[p.bottleneck_hop.unwrap()];
    assert_eq!(h.node, "0000:04:00.0");
    let note = h.note.as_deref().unwrap();
    assert!(
        note.contains("below what both ends support")
            && note.contains("DOWN: x8 of x16")
            && note.contains("bottleneck"),
        "{note}"
    );
}

#[test]
fn endpoint_order_and_names() {
    let mut t = TopoBuilder::new(&["0-7"]);
    t.bridge("0000:00:01.0", None, Some(0));
    t.nic("0000:01:00.0", Some("0000:00:01.0"), Some(0), &["mlx5_10"]);
    t.bridge("0000:00:02.0", None, Some(0));
    t.nic("0000:02:00.0", Some("0000:00:02.0"), Some(0), &["mlx5_2"]);
    t.bridge("0000:00:03.0", None, Some(0));
    t.gpu("0000:03:00.0", Some("0000:00:03.0"), Some(0));
    t.bridge("0000:00:04.0", None, Some(0));
    t.nvme("0000:04:00.0", Some("0000:00:04.0"), Some(0));
    // A NIC function without RDMA is left out when others have RDMA devices.
    t.bridge("0000:00:05.0", None, Some(0));
    t.dev(
        "0000:05:00.0",
        Some("0000:00:05.0"),
        0x020000,
        (0x8086, 0x1572),
        Some(0),
    );
    let t = t.build();
    let m = classify_all(&t, &ClassifyOptions::default());
    let names: Vec<(String, String)> = m
        .endpoints
        .iter()
        .map(|e| (e.name.clone(), e.bdf.to_string()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("GPU0".to_string(), "0000:03:00.0".to_string()),
            ("NIC0".to_string(), "0000:01:00.0".to_string()),
            ("NIC1".to_string(), "0000:02:00.0".to_string()),
            ("NVME0".to_string(), "0000:04:00.0".to_string()),
        ]
    );
    // No registration order in this input: NICs follow PCI addresses (docs/matrix.md), not
    // names (`mlx5_10` registered first), and the matrix says the numbers are rebuilt.
    assert_eq!(m.endpoint("NIC0").unwrap().rdma, ["mlx5_10"]);
    assert!(m.notes.iter().any(|n| n.contains("NIC numbers rebuilt")));
    // GPU–GPU/NIC pairs plus GPU–NVMe, but no NIC–NVMe pairs.
    assert_eq!(m.pairs.len(), 3 + 1);
    assert!(m.notes.iter().any(|n| n.contains("NVLink not visible")));
}

#[test]
fn summary_agrees_with_full_classification_on_every_layout() {
    for (name, t) in [
        ("dgx-a100", dgx_a100()),
        ("asus", asus_esc8000a(4)),
        ("pcie-8gpu", pcie_8gpu_switches()),
        ("kvm", kvm_vm()),
        ("dgx2", dgx2()),
    ] {
        for v in ["2.11", "2.19", "2.30"] {
            let c = Classifier::new(&t, &opts(v));
            let m = c.matrix();
            let s = c.summary_all();
            assert_eq!(s.len(), m.pairs.len(), "{name}");
            for ((i, j, s), p) in s.iter().zip(&m.pairs) {
                assert_eq!((c.endpoints()[*i].bdf, c.endpoints()[*j].bdf), (p.a, p.b));
                assert_eq!(s.label, p.label, "{name} {v}");
                assert_eq!(s.nccl_path, p.nccl.path, "{name} {v}");
                assert_eq!(
                    (s.gdr, s.p2p, s.pxn_via),
                    (p.nccl.gdr, p.nccl.p2p, p.nccl.pxn_via),
                    "{name} {v}"
                );
                assert_eq!(
                    s.bottleneck_gbytes_per_s, p.bottleneck_gbytes_per_s,
                    "{name} {v} {} {}",
                    p.a, p.b
                );
            }
        }
    }
}

/// The worked example of classification.md §3 (NCCL XML "spec-example-2s-2gpu"): Sapphire
/// Rapids 2S; socket 0 has a Broadcom Gen5 switch with an A100 (Gen4 x16) and a ConnectX-7
/// (Gen5 x16); socket 1 has the second A100 on a root port; 12 NVLinks join the GPUs.
#[test]
fn spec_example_2s_2gpu() {
    let mut t = TopoBuilder::new(&["0-15", "16-31"]).cpu("GenuineIntel", 6, 143);
    t.bridge("0000:16:01.0", None, Some(0));
    t.switch(
        "0000:16:01.0",
        "0000:17:00.0",
        &["0000:18:00.0", "0000:18:01.0"],
        Some(0),
    );
    t.ids("0000:17:00.0", (0x1000, 0xc030));
    t.subsystem("0000:17:00.0", (0x1000, 0x1001));
    t.link("0000:17:00.0", (32.0, 16), (32.0, 16));
    t.gpu("0000:19:00.0", Some("0000:18:00.0"), Some(0));
    t.nic("0000:1a:00.0", Some("0000:18:01.0"), Some(0), &["mlx5_0"]);
    t.link("0000:1a:00.0", (32.0, 16), (32.0, 16));
    t.bridge("0000:99:01.0", None, Some(1));
    t.gpu("0000:9a:00.0", Some("0000:99:01.0"), Some(1));
    t.nvlink("0000:19:00.0", Some("0000:9a:00.0"), 12, Some(3));
    let t = t.build();
    let m = classify_all(&t, &ClassifyOptions::default());
    let (g0, g1, n0) = (b("0000:19:00.0"), b("0000:9a:00.0"), b("0000:1a:00.0"));
    // GPU0–GPU1: NV12 / NVL at 12 × 20 = 240 GB/s, P2P on.
    let p = m.pair(&g0, &g1).unwrap();
    assert_eq!(p.label, Label::Nv(12));
    assert_eq!(p.nccl.path, NcclPath::Nvl);
    assert!(p.nccl.p2p);
    assert_eq!(p.bottleneck_gbytes_per_s, Some(240.0));
    // GPU0–mlx5_0: PIX at min(GPU 24, uplink 48, NIC 48) = 24 GB/s, GDR on.
    let p = m.pair(&g0, &n0).unwrap();
    assert_eq!(p.label, Label::Pix);
    assert_eq!(p.nccl.path, NcclPath::Pix);
    assert!(p.nccl.gdr);
    assert_eq!(p.bottleneck_gbytes_per_s, Some(24.0));
    assert_eq!(p.nccl.pxn_via, None);
    // GPU1–mlx5_0: SYS at 22 GB/s (SRP inter-CPU); sends go PXN through GPU0; receives stay SYS
    // without GDR.
    let p = m.pair(&g1, &n0).unwrap();
    assert_eq!(p.label, Label::Sys);
    assert_eq!(p.nccl.path, NcclPath::Sys);
    assert_eq!(p.bottleneck_gbytes_per_s, Some(22.0));
    assert_eq!(p.nccl.pxn_via, Some(g0));
    assert!(!p.nccl.gdr);
    // Before 2.26 the SRP bucket did not exist: 10 GB/s.
    let old = classify_pair(&t, &g1, &n0, &opts("2.25")).unwrap();
    assert_eq!(old.bottleneck_gbytes_per_s, Some(10.0));
    assert_eq!(old.nccl.path_code, Some(7));
}

/// The HGX A100 of `hgx-a100-icelake-bcm-5bond.nccl-topo-dump.xml` (first CPU): three nested
/// Broadcom levels — 0c (1000:a096) > 0e / 15 (1000:a096) > 11 / 17 (10de:13b8 baseboard) —
/// with GPU 13 and GPU 19, mlx5_bond_1 beside the second baseboard switch, mlx5_bond_0 on the CPU.
#[test]
fn hgx_a100_bcm_three_levels() {
    let mut t = TopoBuilder::new(&["0-31,64-95", "32-63,96-127"]).cpu("GenuineIntel", 6, 106);
    let n = Some(0);
    t.bridge("0000:00:01.0", None, n);
    t.nic("0000:06:00.0", Some("0000:00:01.0"), n, &["mlx5_bond_0"]);
    t.bridge("0000:00:02.0", None, n);
    t.switch(
        "0000:00:02.0",
        "0000:0c:00.0",
        &["0000:0d:00.0", "0000:0d:01.0"],
        n,
    );
    t.switch("0000:0d:00.0", "0000:0e:00.0", &["0000:0f:00.0"], n);
    t.switch("0000:0f:00.0", "0000:11:00.0", &["0000:12:00.0"], n);
    t.gpu("0000:13:00.0", Some("0000:12:00.0"), n);
    t.switch(
        "0000:0d:01.0",
        "0000:15:00.0",
        &["0000:16:00.0", "0000:16:01.0"],
        n,
    );
    t.switch("0000:16:00.0", "0000:17:00.0", &["0000:18:00.0"], n);
    t.gpu("0000:19:00.0", Some("0000:18:00.0"), n);
    t.nic("0000:1a:00.0", Some("0000:16:01.0"), n, &["mlx5_bond_1"]);
    for (sw, sub) in [
        ("0000:0c:00.0", (0x1000, 0xa096)),
        ("0000:0e:00.0", (0x1000, 0xa096)),
        ("0000:15:00.0", (0x1000, 0xa096)),
        ("0000:11:00.0", (0x10de, 0x13b8)),
        ("0000:17:00.0", (0x10de, 0x13b8)),
    ] {
        t.ids(sw, (0x1000, 0xc010));
        t.subsystem(sw, sub);
    }
    for g in ["0000:13:00.0", "0000:19:00.0"] {
        t.nvlink(g, None, 12, Some(3));
    }
    let t = t.build();
    let m = classify_all(&t, &ClassifyOptions::default());
    let (g0, g1) = (b("0000:13:00.0"), b("0000:19:00.0"));
    let (bond0, bond1) = (b("0000:06:00.0"), b("0000:1a:00.0"));
    // nvidia-smi counts 11, 0e, 0c, 15; NCCL fuses 0e and 15 into 0c but not the baseboard
    // switches: both PXB, GDR on (classification.md §2.3: HGX A100 GPU–NIC stays PXB).
    let p = m.pair(&g0, &bond1).unwrap();
    assert_eq!(p.label, Label::Pxb);
    assert!(p.reason.contains("4 PCIe"), "{}", p.reason);
    assert_eq!(p.nccl.path, NcclPath::Pxb);
    assert!(
        p.nccl.rules[0].contains("ncclTopoFlattenBcmSwitches: 4 switch nodes become 2"),
        "{:?}",
        p.nccl.rules
    );
    assert!(p.nccl.gdr);
    let q = m.pair(&g1, &bond1).unwrap();
    assert_eq!((q.label, q.nccl.path), (Label::Pxb, NcclPath::Pxb));
    // The CPU-attached bond: a different root port of the same host bridge.
    let r = m.pair(&g0, &bond0).unwrap();
    assert_eq!(
        (r.label, r.nccl.path, r.nccl.gdr),
        (Label::Phb, NcclPath::Phb, false)
    );
    // Sends from GPU0 to bond_0 go PXN? No: NCCL's local GPUs of bond_0 are PHB too.
    assert_eq!(r.nccl.pxn_via, None);
    assert_eq!(m.pair(&g0, &g1).unwrap().label, Label::Nv(12));
}
