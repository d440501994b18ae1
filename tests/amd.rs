//! AMD Instinct nodes against what their published files state (fixtures/amd/README.md): RCCL's
//! topology models (every `<xgmi>` pair an xGMI link, each GPU paired with the NIC under its
//! switch), rocm-smi's `--showtopo` tables (the `matrix --format rocm-smi` layout of the
//! synthesized MI300X and MI300A nodes reads as the published MI308X and MI300A outputs do),
//! the KFD topology of the synthesized nodes, and an hwloc file of an MI300X server, which
//! cannot show xGMI and says so.

mod common;

use peerpath::analysis::audit::{self, AuditOptions};
use peerpath::analysis::classify::{Classifier, ClassifyOptions, Label, NcclPath};
use peerpath::analysis::rocm_topo;
use peerpath::model::{Bdf, Topology};
use peerpath::render::rocm_smi;
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::layouts;
use peerpath::synth::{Spec, WriteOptions, write_tarball, write_tree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    common::repo().join("fixtures/amd").join(name)
}

fn load(p: &Path) -> Topology {
    sources::load(Some(p), &LoadOptions::default()).unwrap()
}

fn b(s: &str) -> Bdf {
    s.parse().unwrap()
}

/// `(gpu busid, target)` of every `<xgmi>` element, read from the text with the element's own
/// grammar (`<pci busid>` … `<gpu>` … `<xgmi target>`), independently of peerpath's reader.
fn xgmi_elements(xml: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut last_busid = String::new();
    for line in xml.lines() {
        let t = line.trim();
        let attr = |name: &str| {
            t.split(&format!("{name}=\""))
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(str::to_string)
        };
        if t.starts_with("<pci ") {
            last_busid = attr("busid").unwrap_or_default();
        } else if t.starts_with("<xgmi ") {
            out.push((last_busid.clone(), attr("target").unwrap_or_default()));
        }
    }
    out
}

#[test]
fn rccl_models_every_xgmi_pair_is_an_xgmi_link() {
    for f in [
        "rccl-topo-mi300x-8gpu-8cx7-topo_8p_940.xml",
        "rccl-topo-mi300x-8gpu-8nic-vm-topo_8p_940vm.xml",
        "rccl-topo-mi300a-4apu-4cxi-topo_4p_942.xml",
        "rccl-topo-mi250-16gcd-8cx6-topo_16p1h.xml",
        "rccl-topo-mi250-16gcd-8nic-vm-topo_16p1h_vm.xml",
        "rccl-topo-mi250-8gcd-8cx6-topo_8p1h_4.xml",
        "rccl-topo-gfx90a-8gpu-1nic-topo_8p_90a.xml",
        "rccl-topo-mi100-8gpu-6nic-topo_8p6l_6nic.xml",
        "rccl-topo-mi100-8gpu-4cx6-topo_8p_rome_4n_1.xml",
        "rccl-topo-gfx906-8gpu-pcieonly-2nic-topo_8p_pcie_2nic.xml",
    ] {
        let path = fixture(f);
        let t = load(&path);
        let elems = xgmi_elements(&std::fs::read_to_string(&path).unwrap());
        // Each pair is listed by both of its GPUs.
        assert_eq!(t.xgmi.len() * 2, elems.len(), "{f}");
        assert!(t.xgmi_visible, "{f}");
        assert!(
            t.source
                .limitations
                .iter()
                .any(|l| l.contains("RCCL XML lists an xGMI pair only")),
            "{f}"
        );
        let c = Classifier::new(&t, &ClassifyOptions::default());
        assert!(c.is_rccl(), "{f}");
        for (g, target) in &elems {
            let s = c.summary_of(&b(g), &b(target)).unwrap();
            assert_eq!(s.label, Label::Xgmi, "{f}: {g}–{target}");
            assert_eq!(s.nccl_path, NcclPath::Xgmi, "{f}: {g}–{target}");
            assert!(s.p2p, "{f}: {g}–{target}");
        }
        // A GPU pair without an <xgmi> between them (PCIe-only file, other hives) is no XGMI.
        if elems.is_empty() {
            let gpus: Vec<Bdf> = t
                .of_kind(peerpath::model::DeviceKind::Gpu)
                .map(|d| d.bdf)
                .collect();
            let s = c.summary_of(&gpus[0], &gpus[1]).unwrap();
            assert_ne!(s.label, Label::Xgmi, "{f}");
        }
    }
}

/// Each GPU's bus and the NICs its source names for it.
type Want<'a> = &'a [(&'a str, &'a [&'a str])];

#[test]
fn rccl_models_pair_each_gpu_with_the_nic_its_source_names() {
    // (file, [(GPU bus, NICs the README lists for it)]): the NIC under the GPU's own switch.
    let cases: &[(&str, Want)] = &[
        (
            "rccl-topo-mi300x-8gpu-8cx7-topo_8p_940.xml",
            &[
                ("0c", &["mlx5_0"]),
                ("15", &["mlx5_1"]),
                ("1e", &["mlx5_2"]),
                ("69", &["mlx5_3"]),
                ("9f", &["mlx5_4"]),
                ("af", &["mlx5_5"]),
                ("bf", &["mlx5_6"]),
                ("df", &["mlx5_7"]),
            ],
        ),
        (
            "rccl-topo-mi300a-4apu-4cxi-topo_4p_942.xml",
            &[
                ("82", &["cxi0"]),
                ("c2", &["cxi1"]),
                ("02", &["cxi2"]),
                ("42", &["cxi3"]),
            ],
        ),
        (
            "rccl-topo-mi250-16gcd-8cx6-topo_16p1h.xml",
            &[
                ("4e", &["mlx5_0"]),
                ("51", &["mlx5_0"]),
                ("56", &["mlx5_1"]),
                ("59", &["mlx5_1"]),
                ("0e", &["mlx5_2"]),
                ("11", &["mlx5_2"]),
                ("16", &["mlx5_3"]),
                ("19", &["mlx5_3"]),
                ("cf", &["mlx5_4"]),
                ("d2", &["mlx5_4"]),
                ("d7", &["mlx5_5"]),
                ("da", &["mlx5_5"]),
                ("8f", &["mlx5_7"]),
                ("92", &["mlx5_7"]),
                ("97", &["mlx5_8"]),
                ("9a", &["mlx5_8"]),
            ],
        ),
        (
            "rccl-topo-mi250-8gcd-8cx6-topo_8p1h_4.xml",
            &[
                ("32", &["mlx5_0", "mlx5_1"]),
                ("35", &["mlx5_0", "mlx5_1"]),
                ("11", &["mlx5_2", "mlx5_3"]),
                ("14", &["mlx5_2", "mlx5_3"]),
                ("ae", &["mlx5_5"]),
                ("b3", &["mlx5_6"]),
                ("8e", &["mlx5_7"]),
                ("93", &["mlx5_8"]),
            ],
        ),
        (
            "rccl-topo-mi100-8gpu-4cx6-topo_8p_rome_4n_1.xml",
            &[
                ("4a", &["mlx5_1"]),
                ("50", &["mlx5_1"]),
                ("0a", &["mlx5_3"]),
                ("0f", &["mlx5_3"]),
                ("cb", &["mlx5_5"]),
                ("d1", &["mlx5_5"]),
                ("8a", &["mlx5_7"]),
                ("90", &["mlx5_7"]),
            ],
        ),
    ];
    for (f, want) in cases {
        let r = audit::run(&load(&fixture(f)), &AuditOptions::default());
        assert_eq!(r.pairs.len(), want.len(), "{f}: {:#?}", r.pairs);
        for (bus, nics) in *want {
            let p = r
                .pairs
                .iter()
                .find(|p| format!("{:02x}", p.gpu.bus) == *bus)
                .unwrap_or_else(|| panic!("{f}: no pair for GPU bus {bus}"));
            let got = p.rdma.as_deref().unwrap_or("");
            assert!(
                nics.contains(&got),
                "{f}: GPU {bus} paired with {got}, want {nics:?}"
            );
        }
    }
    // The MI300A's pairs are PHB (no switch), the platform's pairing: RCCL's Rome-class
    // relaxation needs the GPU one switch below its CPU, so the default level refuses GDR.
    let t = load(&fixture("rccl-topo-mi300a-4apu-4cxi-topo_4p_942.xml"));
    let c = Classifier::new(&t, &ClassifyOptions::default());
    let s = c
        .summary_of(&b("0000:82:00.0"), &b("0000:81:00.0"))
        .unwrap();
    assert_eq!(
        (s.label, s.nccl_path, s.gdr),
        (Label::Phb, NcclPath::Phb, false)
    );
}

#[test]
fn rccl_decisions_by_cpu() {
    // topo_8p6l_6nic: Rome (familyid 143, modelid 49), NICs directly on the CPU and GPUs one
    // switch below it: RCCL raises the GDR level to PHB where their bus numbers share the high
    // nibble (ncclTopoCheckGdr), and keeps PXB elsewhere.
    let t = load(&fixture("rccl-topo-mi100-8gpu-6nic-topo_8p6l_6nic.xml"));
    let c = Classifier::new(&t, &ClassifyOptions::default());
    let s = c
        .summary_of(&b("0000:24:00.0"), &b("0000:2a:00.0"))
        .unwrap();
    assert_eq!((s.nccl_path, s.gdr), (NcclPath::Phb, true));
    let s = c
        .summary_of(&b("0000:03:00.0"), &b("0000:2a:00.0"))
        .unwrap();
    assert_eq!((s.nccl_path, s.gdr), (NcclPath::Phb, false));
    let pc = c.pair(&b("0000:24:00.0"), &b("0000:2a:00.0")).unwrap();
    assert!(
        pc.nccl.rules.iter().any(|r| r.contains("Rome-class")),
        "{:#?}",
        pc.nccl.rules
    );
    // RCCL's P2P cut-off on AMD CPUs is SYS (no NCCL 2.23 two-GPU rule).
    let pg = c.pair(&b("0000:03:00.0"), &b("0000:83:00.0")).unwrap();
    assert!(
        pg.nccl
            .rules
            .iter()
            .any(|r| r.contains("default P2P cut-off SYS (AMD")),
        "{:#?}",
        pg.nccl.rules
    );
    // Intel CPU (topo_8p_940): RCCL's P2P cut-off is PXB, xGMI pairs stay P2P.
    let t = load(&fixture("rccl-topo-mi300x-8gpu-8cx7-topo_8p_940.xml"));
    let c = Classifier::new(&t, &ClassifyOptions::default());
    let pc = c.pair(&b("0000:0c:00.0"), &b("0000:15:00.0")).unwrap();
    assert_eq!(pc.nccl.library, "RCCL");
    assert!(
        pc.nccl
            .rules
            .iter()
            .any(|r| r.contains("P2P cut-off PXB on Intel")),
        "{:#?}",
        pc.nccl.rules
    );
    let pn = c.pair(&b("0000:0c:00.0"), &b("0000:07:00.0")).unwrap();
    assert!(pn.nccl.gdr && pn.nccl.pxn_via.is_none());
    assert!(
        pn.nccl
            .rules
            .iter()
            .any(|r| r.contains("PXN is off by default in RCCL"))
    );
}

/// rocm-smi's `--showtopo` blocks as tables: block title → rows of cells, and the NUMA lines.
fn parse_showtopo(text: &str) -> (BTreeMap<String, Vec<Vec<String>>>, Vec<String>) {
    let mut blocks: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    let mut numa = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("===") {
            let title = t.trim_matches('=').trim().to_string();
            cur = Some(title);
            continue;
        }
        if t.starts_with("GPU[") {
            numa.push(t.split_whitespace().collect::<Vec<_>>().join(" "));
            continue;
        }
        if let Some(c) = &cur
            && t.starts_with("GPU")
        {
            let cells: Vec<String> = t.split_whitespace().skip(1).map(str::to_string).collect();
            blocks.entry(c.clone()).or_default().push(cells);
        }
    }
    (blocks, numa)
}

fn rocm_layout(spec: &Spec) -> String {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("n.tar.gz");
    write_tarball(spec, &tar, &WriteOptions::default()).unwrap();
    let t = load(&tar);
    let c = Classifier::new(&t, &ClassifyOptions::default());
    rocm_smi::render(&rocm_topo::rocm_topo(&c), c.endpoints(), &[])
}

#[test]
fn rocm_smi_layout_reads_as_the_published_showtopo() {
    // MI308X (ms-swift's dump) and the synthesized MI300X: same board, 8 GPUs, 4 per socket.
    for (published, spec) in [
        (
            "rocm-smi-showtopo-ms-swift-mi308x-1.txt",
            layouts::mi300x_8gpu(),
        ),
        (
            "rocm-smi-showtopo-mzank-HIP-mi300a-1.txt",
            layouts::mi300a_4apu(),
        ),
    ] {
        let (want, want_numa) =
            parse_showtopo(&std::fs::read_to_string(fixture(published)).unwrap());
        let ours = rocm_layout(&spec);
        let (got, got_numa) = parse_showtopo(&ours);
        for block in [
            "Weight between two GPUs",
            "Hops between two GPUs",
            "Link Type between two GPUs",
        ] {
            assert_eq!(
                got.get(block),
                want.get(block),
                "{published}: {block}\n{ours}"
            );
        }
        assert_eq!(got_numa, want_numa, "{published}");
    }
    // Spacing: each block title line is exactly rocm-smi's (90 columns of '=').
    let ours = rocm_layout(&layouts::mi300x_8gpu());
    let published =
        std::fs::read_to_string(fixture("rocm-smi-showtopo-ms-swift-mi308x-1.txt")).unwrap();
    for title in [
        "Weight between two GPUs",
        "Hops between two GPUs",
        "Link Type between two GPUs",
        "Numa Nodes",
    ] {
        let line = |s: &str| s.lines().find(|l| l.contains(title)).map(str::to_string);
        assert_eq!(line(&ours), line(&published), "{title}");
    }
}

#[test]
fn kfd_topology_of_the_synthesized_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = layouts::apply_fault(
        layouts::mi300x_8gpu(),
        &format!(
            "xgmi-down={},{}",
            layouts::mi300x_gpu(2),
            layouts::mi300x_gpu(3)
        ),
    )
    .unwrap();
    write_tree(&spec, dir.path(), &WriteOptions::default()).unwrap();
    let t = load(dir.path());
    assert!(t.xgmi_visible);
    assert_eq!(t.xgmi.len(), 27, "28 pairs less the one down");
    let l = &t.xgmi[0];
    assert_eq!(
        (l.weight, l.min_bandwidth, l.max_bandwidth, l.count),
        (Some(15), Some(50000), Some(50000), Some(1))
    );
    assert!(l.source.contains("type 11"), "{}", l.source);
    let g = t.device(&layouts::mi300x_gpu(1)).unwrap();
    let a = g.amd.as_ref().unwrap();
    assert_eq!(
        (a.drm_render_minor, a.gfx_target_version),
        (Some(129), Some(90402))
    );
    assert_eq!(a.compute_partition.as_deref(), Some("SPX"));
    assert_eq!(
        a.cpu_link.as_ref().map(|l| (l.link_type, l.weight)),
        Some((2, Some(20)))
    );
    // rocm-smi without the io_link: PCIE, hops 2 and weight 20+20 on one NUMA node; RCCL still
    // reaches the pair over xGMI through the hive.
    let c = Classifier::new(&t, &ClassifyOptions::default());
    let r = rocm_topo::rocm_topo(&c);
    let p = r.pair(2, 3).unwrap();
    assert_eq!(
        (p.link.as_str(), p.hops, p.weight),
        ("PCIE", Some(2), Some(40))
    );
    let p = r.pair(0, 4).unwrap();
    assert_eq!(
        (p.link.as_str(), p.hops, p.weight),
        ("XGMI", Some(1), Some(15))
    );
    let s = c
        .summary_of(&layouts::mi300x_gpu(2), &layouts::mi300x_gpu(3))
        .unwrap();
    assert_eq!(s.nccl_path, NcclPath::Xgmi);
}

#[test]
fn hwloc_of_an_mi300x_server_pairs_by_pcie_and_says_it_cannot_show_xgmi() {
    // lstopo's own XML of the synthesized MI300X tree: no RSMI plugin ran, so no xGMI.
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        &layouts::mi300x_8gpu(),
        dir.path(),
        &WriteOptions::default(),
    )
    .unwrap();
    let xml = dir.path().join("topo.xml");
    let ok = Command::new("lstopo-no-graphics")
        .args(["--if", "fsroot", "-i"])
        .arg(dir.path())
        .args(["--whole-io", "--of", "xml"])
        .arg(&xml)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("lstopo-no-graphics not available: skipped");
        return;
    }
    let t = load(&xml);
    assert!(!t.xgmi_visible && t.xgmi.is_empty());
    assert!(
        t.source
            .limitations
            .iter()
            .any(|l| l.contains("cannot show xGMI")),
        "{:#?}",
        t.source.limitations
    );
    let r = audit::run(&t, &AuditOptions::default());
    let paired: Vec<_> = r.pairs.iter().map(|p| (p.gpu, p.nic)).collect();
    for i in 0..8 {
        let want = (layouts::mi300x_gpu(i), layouts::mi300x_nic(i));
        assert!(paired.contains(&want), "GPU{i}: {paired:?}");
    }
    let c = Classifier::new(&t, &ClassifyOptions::default());
    assert!(
        c.matrix_notes()
            .iter()
            .any(|n| n.contains("xGMI not visible"))
    );
}

#[test]
fn held_out_mi350x_model_and_tioga_hwloc() {
    // RCCL's MI350X model (not in shared/reference while peerpath was built): every pair xGMI,
    // each GPU with the Thor2 under its Broadcom switch, above its 1022:1500 bridge.
    let f = fixture("rccl-topo-mi350x-8gpu-8thor2-topo_8p_950.xml");
    let t = load(&f);
    assert_eq!(t.xgmi.len(), 28);
    let elems = xgmi_elements(&std::fs::read_to_string(&f).unwrap());
    let c = Classifier::new(&t, &ClassifyOptions::default());
    for (g, target) in &elems {
        assert_eq!(c.summary_of(&b(g), &b(target)).unwrap().label, Label::Xgmi);
    }
    let r = audit::run(&t, &AuditOptions::default());
    assert_eq!(r.pairs.len(), 8);
    for (i, p) in r.pairs.iter().enumerate() {
        assert_eq!(
            p.rdma.as_deref(),
            Some(format!("bnxt_re{i}").as_str()),
            "{p:?}"
        );
        assert_eq!(p.label, peerpath::analysis::audit::PathLabel(Label::Pxb));
        assert!(c.summary_of(&p.gpu, &p.nic).unwrap().gdr);
    }
    // LLNL's Tioga hwloc file: xGMI from the RSMI plugin's XGMIHops, with what it cannot say.
    let t = load(&fixture("hwloc-llnl-tioga-mi250x-rsmi.xml"));
    assert!(t.xgmi_visible);
    assert_eq!(t.xgmi.len(), 28);
    assert!(
        t.xgmi
            .iter()
            .all(|l| l.hops == Some(1) && l.count.is_none())
    );
    assert!(
        t.source
            .limitations
            .iter()
            .any(|l| l.contains("XGMIHops is rocm-smi's hop count")),
        "{:#?}",
        t.source.limitations
    );
    let hive = t
        .device(&b("0000:c1:00.0"))
        .and_then(|d| d.amd.as_ref())
        .and_then(|a| a.hive_id);
    assert_eq!(hive, Some(0xdc41_93b3_799d_5078));
}

/// Issue 51: RCCL's Rome rule on the synthesized MI50 node (`mi50-rome`). RCCL's sysfs walk
/// climbs two levels at a time, so the MI50's own `1002:14a0` upstream port is the GPU's one PCI
/// node (its `14a1` downstream port and the root port are dropped): GPU→CPU and NET→CPU both
/// count 2 to CPU 0 and the bus numbers (64, 61) share their high nibble, so the level is PHB
/// and GDR is on by default for GPU 3. GPU 0–2 (same NUMA node, other root complexes, other
/// nibbles) and GPU 4–7 (other socket) stay staged.
#[test]
fn rccl_rome_rule_admits_the_mi50_on_the_nics_root_complex() {
    let d = tempfile::tempdir().unwrap();
    write_tree(&layouts::mi50_rome(), d.path(), &WriteOptions::default()).unwrap();
    let t = load(d.path());
    let r = audit::run(&t, &AuditOptions::default());
    let nic = layouts::mi50_nic();
    for i in 0..8 {
        let g = layouts::mi50_gpu(i);
        let p = r
            .pairs
            .iter()
            .find(|p| p.gpu == g && p.nic == nic)
            .unwrap_or_else(|| panic!("no pair {g}–{nic}: {:?}", r.pairs));
        assert_eq!(
            p.gdr,
            i == layouts::MI50_ROME_NIC_HB,
            "GPU {i} {g}: gdr {} ({})",
            p.gdr,
            p.reason
        );
    }
    let g3 = layouts::mi50_gpu(layouts::MI50_ROME_NIC_HB).to_string();
    let f = r
        .findings
        .iter()
        .find(|f| f.summary.starts_with(&format!("GPU {g3}")))
        .unwrap_or_else(|| panic!("no finding for {g3}"));
    assert_eq!(f.severity, audit::Severity::Info, "{}", f.summary);
    assert!(!f.summary.contains("stages"), "{}", f.summary);
    let c = Classifier::new(&t, &ClassifyOptions::default());
    let x = c.pair(&g3.parse().unwrap(), &nic).unwrap();
    let text = format!("{x:?}");
    assert!(text.contains("Rome-class"), "{text}");
}

fn platform(name: &str) -> PathBuf {
    common::repo().join("fixtures/platforms").join(name)
}

const CORONA: &str = "llnl-corona-penguin-altus-xo1114gt-4xmi50-1cx6.hwloc1fmt.xml";

/// Issue 51: hwloc 1.x names a package `Socket` (2.0 renamed it `Package`); the CPU facts on it
/// (vendor, family, model) are what RCCL's Rome rule and NCCL's inter-CPU bandwidth read. LLNL
/// Corona's file (2× EPYC 7401: family 23, model 1) lost them all before.
#[test]
fn hwloc1_socket_objects_give_the_cpu_facts() {
    let t = load(&platform(CORONA));
    let m = &t.machine;
    assert_eq!(m.cpu_vendor.as_deref(), Some("AuthenticAMD"));
    assert_eq!(m.cpu_family, Some(23));
    assert_eq!(m.cpu_model_number, Some(1));
    assert_eq!(m.sockets, Some(2));
}

/// Issue 51, on a real hwloc 1.x file: Corona's node with its CPUs said to be EPYC 7402 (Rome,
/// model 49) and its ConnectX-6 moved from the PEX 8747 of host bridge 30 onto a root port of
/// GPU 13:00.0's host bridge (synthesized from the published file, in this test). RCCL's
/// walk: GPU–14a0–CPU and NET–NIC–CPU both count 2 on NUMA node 1, bus numbers 13/14 share
/// their high nibble → PHB, GDR on; the other three GPUs (other NUMA nodes) stay staged.
#[test]
fn corona_as_rome_with_the_nic_on_a_gpus_host_bridge_gets_gdr() {
    let text = std::fs::read_to_string(platform(CORONA)).unwrap();
    let text = text
        .replace(
            r#"<info name="CPUModelNumber" value="1"/>"#,
            r#"<info name="CPUModelNumber" value="49"/>"#,
        )
        .replace("AMD EPYC 7401 24-Core", "AMD EPYC 7402 24-Core");
    // Cut the CX-6 (with its switch) out of host bridge 30 and put it on a new root port
    // 10:03.1 as 14:00.0.
    let lines: Vec<&str> = text.lines().collect();
    let at = |pat: &str| lines.iter().position(|l| l.contains(pat)).unwrap();
    let close = |from: usize| {
        let ind = lines[from].len() - lines[from].trim_start().len();
        (from + 1..lines.len())
            .find(|&k| {
                lines[k].trim() == "</object>"
                    && lines[k].len() - lines[k].trim_start().len() == ind
            })
            .unwrap()
    };
    let (rp, nic) = (
        at(r#"pci_busid="0000:30:03.1""#),
        at(r#"pci_busid="0000:33:00.0""#),
    );
    let nic_lines: Vec<String> = lines[nic..=close(nic)]
        .iter()
        .map(|l| l.replace("0000:33:00.0", "0000:14:00.0"))
        .collect();
    let hb = at(r#"bridge_pci="0000:[10-15]""#);
    let mut out: Vec<String> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        if (rp..=close(rp)).contains(&k) {
            continue;
        }
        out.push(l.to_string());
        if k == hb {
            out.push(r#"<object type="Bridge" bridge_type="1-1" depth="1" bridge_pci="0000:[14-14]" pci_busid="0000:10:03.1" pci_type="0604 [1022:1453] [1458:1000] 00" pci_link_speed="15.753846">"#.into());
            out.extend(nic_lines.iter().cloned());
            out.push("</object>".into());
        }
    }
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("corona-as-rome.xml");
    std::fs::write(&p, out.join("\n")).unwrap();
    let t = load(&p);
    assert_eq!(t.machine.cpu_model_number, Some(49));
    let r = audit::run(&t, &AuditOptions::default());
    let nic = b("0000:14:00.0");
    for (g, gdr) in [
        ("0000:13:00.0", true),
        ("0000:23:00.0", false),
        ("0000:53:00.0", false),
        ("0000:73:00.0", false),
    ] {
        let p = r
            .pairs
            .iter()
            .find(|p| p.gpu == b(g) && p.nic == nic)
            .unwrap_or_else(|| panic!("no pair {g}: {:?}", r.pairs));
        assert_eq!(p.gdr, gdr, "{g}: {}", p.reason);
    }
}

/// Issue 51: LLNL Tuolumne in CPX mode (hwloc 2: six RSMI OS devices under each MI300A's PCI
/// function) showed 4 GPUs with no word of the mode. Each APU now has an `amd-partition` finding
/// naming CPX, the six partitions and the RSMI devices it was read from, and saying the memory
/// partition is not recorded; the SPX file of the same machine gets none.
#[test]
fn mi300a_cpx_mode_is_read_from_hwloc_and_said() {
    let t = load(&platform(
        "llnl-tuolumne-ex255a-4xmi300a-cpx-4cassini.hwloc2.xml",
    ));
    let r = audit::run(&t, &AuditOptions::default());
    let parts: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == audit::CheckId::AmdPartition)
        .collect();
    assert_eq!(parts.len(), 4, "{parts:?}");
    for f in &parts {
        assert!(
            f.summary
                .contains("(CPX, memory partition (NPS) not recorded"),
            "{}",
            f.summary
        );
        assert!(
            f.summary.contains(": 6 compute partition(s)"),
            "{}",
            f.summary
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e.value.contains("6 RSMI OS device(s) (rsmi")),
            "{:?}",
            f.evidence
        );
    }
    let spx = load(&platform(
        "hpe-cray-ex255a-tuolumne-4xmi300a-spx-4cassini.hwloc2.xml",
    ));
    let r = audit::run(&spx, &AuditOptions::default());
    assert!(
        !r.findings
            .iter()
            .any(|f| f.id == audit::CheckId::AmdPartition),
        "{:?}",
        r.findings
    );
}
