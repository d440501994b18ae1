//! Placement, rails and every export, on the synthesized layouts, each export read back by a
//! consumer: the NCCL XML by peerpath's own NCCL-XML source, the .prom file by a Prometheus
//! text-format parser, NFD labels against NFD's documented label rules, gres.conf field by
//! field, the Slurm wrapper by bash. The consumer tests (`tests/consumer_*.rs`) load them into
//! the real consumers.

mod common;

use common::{load_spec, place_plan};
use peerpath::analysis::audit::{self, AuditOptions};
use peerpath::analysis::classify::{Classifier, ClassifyOptions, Label};
use peerpath::analysis::paths::Paths;
use peerpath::analysis::place::{self, NodeView, PlaceOptions, Placement};
use peerpath::analysis::rails;
use peerpath::model::{Bdf, DeviceKind, NvLink, Topology};
use peerpath::parse::cpulist;
use peerpath::render::{dot, gres, nccl_xml, nfd, prom};
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::layouts;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// `(cpu → sibling set)` from the topology's `/proc/cpuinfo` triples.
fn siblings(t: &Topology) -> BTreeMap<u32, BTreeSet<u32>> {
    let mut by_core: BTreeMap<(u32, u32), BTreeSet<u32>> = BTreeMap::new();
    for &(cpu, core, pkg) in &t.machine.cpu_cores {
        by_core.entry((pkg, core)).or_default().insert(cpu);
    }
    let mut out = BTreeMap::new();
    for set in by_core.values() {
        for &c in set {
            out.insert(c, set.clone());
        }
    }
    out
}

fn check_cores(t: &Topology, p: &Placement) {
    let sib = siblings(t);
    assert!(!sib.is_empty(), "the layout carries /proc/cpuinfo");
    let mut seen = BTreeSet::new();
    for r in &p.ranks {
        let cpus: BTreeSet<u32> = cpulist::parse_list(r.cpus.as_bytes())
            .unwrap()
            .into_iter()
            .collect();
        assert!(!cpus.is_empty(), "rank {} got no CPU", r.rank);
        for c in &cpus {
            assert!(seen.insert(*c), "CPU {c} given twice (rank {})", r.rank);
            let s = &sib[c];
            assert!(
                s.is_subset(&cpus),
                "rank {}: CPU {c} without its SMT siblings {s:?}",
                r.rank
            );
        }
        // From the rank's NUMA node.
        let node = r.numa_node.unwrap();
        let node_cpus = t.numa_nodes.iter().find(|n| n.id == node).unwrap();
        let node_cpus: BTreeSet<u32> = cpulist::parse_list(node_cpus.cpus.as_bytes())
            .unwrap()
            .into_iter()
            .collect();
        assert!(
            cpus.is_subset(&node_cpus),
            "rank {} CPUs outside NUMA {node}",
            r.rank
        );
    }
}

#[test]
fn hgx_every_rank_gets_its_pix_partner() {
    let (_d, t) = load_spec(&layouts::hgx_h100());
    let p = place_plan(&t, 8);
    assert_eq!(p.schema, "peerpath.placement/1");
    assert_eq!(p.ranks.len(), 8);
    for r in &p.ranks {
        assert_eq!(r.gpu, layouts::hgx_gpu(r.cuda_index).to_string());
        assert_eq!(
            r.nic_bdf.as_deref(),
            Some(layouts::hgx_nic(r.cuda_index).to_string().as_str())
        );
        assert_eq!(r.path.as_deref(), Some("PIX"), "{:?}", r.why);
        assert!(r.nic_shared_with.is_empty());
        let nic = format!("mlx5_{}", r.cuda_index);
        assert_eq!(r.env["NCCL_IB_HCA"], format!("={nic}:1"));
        assert_eq!(r.env["UCX_NET_DEVICES"], format!("{nic}:1"));
        assert_eq!(r.env["CUDA_VISIBLE_DEVICES"], r.cuda_index.to_string());
        assert_eq!(r.why.len(), 3, "one line per choice");
        assert_eq!(r.bind[0], "numactl");
    }
    check_cores(&t, &p);
}

#[test]
fn hgx_four_ranks_stay_on_one_numa_node() {
    let (_d, t) = load_spec(&layouts::hgx_h100());
    let p = place_plan(&t, 4);
    let numa: BTreeSet<Option<u32>> = p.ranks.iter().map(|r| r.numa_node).collect();
    assert_eq!(numa.len(), 1, "{p:?}");
    assert!(p.ranks.iter().all(|r| r.path.as_deref() == Some("PIX")));
    check_cores(&t, &p);
    // A whole NUMA node (56 cores) split evenly between 4 ranks.
    assert!(p.ranks.iter().all(|r| r.cores == 14));
    assert!(
        place::plan(
            &t,
            &PlaceOptions {
                ranks: 9,
                cores_per_rank: None
            }
        )
        .is_err()
    );
    let capped = place::plan(
        &t,
        &PlaceOptions {
            ranks: 2,
            cores_per_rank: Some(3),
        },
    )
    .unwrap();
    assert!(capped.ranks.iter().all(|r| r.cores == 3));
}

#[test]
fn misplaced_nic_is_routed_around_and_said() {
    let (_d, t) = load_spec(&layouts::misplaced_nic());
    let p = place_plan(&t, 8);
    let r3 = p.ranks.iter().find(|r| r.cuda_index == 3).unwrap();
    // mlx5_3 is SYS from GPU3: the advice takes a nearer (shared) NIC and says why.
    assert_ne!(r3.nic.as_deref(), Some("mlx5_3"), "{:?}", r3.why);
    assert_ne!(r3.path.as_deref(), Some("SYS"));
    let why = r3.why.join(" | ");
    // Rail 3 by position is NIC3 in nvidia-smi's numbering (mlx5_4 here: the moved card is
    // the last NIC); either way it is SYS from GPU3 and routed around.
    assert!(why.contains("routes around mlx5_4"), "{why}");
    assert!(why.contains("GPUDirect RDMA off"), "{why}");
    assert!(!r3.nic_shared_with.is_empty());
    for r in p.ranks.iter().filter(|r| r.cuda_index != 3) {
        assert_eq!(r.path.as_deref(), Some("PIX"), "rank {}", r.rank);
    }
    check_cores(&t, &p);
    let view = NodeView::new(&t);
    let rl = rails::build(&t, &view, 1);
    assert!(!rl.rail_optimised);
    assert!(
        rl.problems
            .iter()
            .any(|p| p.contains("mlx5_3 serves no GPU")),
        "{:?}",
        rl.problems
    );
    assert!(
        rl.problems
            .iter()
            .any(|p| p.contains("GPU3 has no NIC within PXB")),
        "{:?}",
        rl.problems
    );
    assert_eq!(rl.ports.len(), 8, "the misplaced NIC is still cabled");
}

#[test]
fn rails_on_hgx_multiply_by_nodes() {
    let (_d, t) = load_spec(&layouts::hgx_h100());
    let view = NodeView::new(&t);
    let r = rails::build(&t, &view, 32);
    assert!(r.rail_optimised, "{:?}", r.problems);
    assert_eq!(r.ports.len(), 8);
    assert!(r.ports.iter().all(|p| p.speed == "400G" && p.path == "PIX"));
    for (i, p) in r.ports.iter().enumerate() {
        assert_eq!(p.rail, Some(i));
        assert_eq!(p.gpus, vec![format!("GPU{i}")]);
    }
    assert_eq!(r.plant_per_node.switch_ports, 8);
    assert_eq!(r.plant_total.fibres, 8 * 32);
    assert_eq!(r.by_rail.len(), 8);
    assert!(r.by_rail.iter().all(|g| g.ports == 32));
    assert_eq!(
        r.other_nics,
        Vec::<String>::new(),
        "the I210 has no RDMA: not a rail candidate"
    );
}

/// gres.conf parsed field by field.
fn parse_gres(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut m = BTreeMap::new();
        let mut first = None;
        for field in line.split_whitespace() {
            let (k, v) = field
                .split_once('=')
                .unwrap_or_else(|| panic!("field without '=': {field:?} in {line:?}"));
            assert!(
                [
                    "AutoDetect",
                    "NodeName",
                    "Name",
                    "Type",
                    "File",
                    "Cores",
                    "Links"
                ]
                .contains(&k),
                "unknown key {k}"
            );
            assert!(!v.is_empty(), "empty value for {k}");
            first.get_or_insert(k.to_string());
            assert!(
                m.insert(k.to_string(), v.to_string()).is_none(),
                "duplicate key {k}"
            );
        }
        if m.contains_key("Name") {
            let f = first.unwrap();
            assert!(
                f == "Name" || f == "NodeName",
                "a GRES line starts with NodeName= or Name="
            );
        }
        out.push(m);
    }
    out
}

#[test]
fn gres_conf_fields() {
    let (_d, mut t) = load_spec(&layouts::hgx_h100());
    let cores = peerpath::analysis::cores::CoreMap::from_topology(&t);
    let text = gres::render(&t, &cores, &gres::GresOptions::default());
    let lines = parse_gres(&text);
    assert_eq!(lines[0].get("AutoDetect").map(String::as_str), Some("off"));
    let gpus: Vec<_> = lines
        .iter()
        .filter(|l| l.get("Name").map(String::as_str) == Some("gpu"))
        .collect();
    assert_eq!(gpus.len(), 8);
    for (i, g) in gpus.iter().enumerate() {
        let f = &g["File"];
        let n: u32 = f.strip_prefix("/dev/nvidia").unwrap().parse().unwrap();
        assert!(n < 8);
        // Slurm core ids: socket 0 = cores 0-55, socket 1 = 56-111 (not OS CPUs 0-55,112-167).
        let want = if i < 4 { "0-55" } else { "56-111" };
        assert_eq!(g["Cores"], want, "GPU {i}");
        let ids = cpulist::parse_list(g["Cores"].as_bytes()).unwrap();
        assert!(ids.iter().all(|&c| c < 112));
        assert!(
            !g.contains_key("Links"),
            "NVLink not visible: Links left out, not faked"
        );
    }
    // With NVLinks known: direct links counted, NVSwitch per policy, -1 on the diagonal.
    let g: Vec<Bdf> = t.of_kind(DeviceKind::Gpu).map(|d| d.bdf).collect();
    t.nvlink_visible = true;
    t.nvlinks.push(NvLink {
        a: g[0],
        b: Some(g[1]),
        count: 4,
        version: Some(4),
    });
    for &x in &g {
        t.nvlinks.push(NvLink {
            a: x,
            b: None,
            count: 18,
            version: Some(4),
        });
    }
    let slurm = parse_gres(&gres::render(&t, &cores, &gres::GresOptions::default()));
    let links = |ls: &Vec<BTreeMap<String, String>>, i: usize| -> Vec<i64> {
        let gl: Vec<_> = ls.iter().filter(|l| l.contains_key("Links")).collect();
        gl[i]["Links"]
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect()
    };
    assert_eq!(links(&slurm, 0), vec![-1, 4, 0, 0, 0, 0, 0, 0]);
    assert_eq!(links(&slurm, 1)[0], 4);
    assert_eq!(links(&slurm, 5)[5], -1);
    let fabric = parse_gres(&gres::render(
        &t,
        &cores,
        &gres::GresOptions {
            nvswitch: gres::NvSwitchLinks::Fabric,
            ..Default::default()
        },
    ));
    assert_eq!(links(&fabric, 0), vec![-1, 22, 18, 18, 18, 18, 18, 18]);
}

/// NFD's rules: `<prefix>/<name>=<value>`, prefix a DNS subdomain, name and value ≤ 63 of
/// `[A-Za-z0-9._-]` with alphanumeric ends (value may be empty).
const NFD_LINE: &str = r"^(?P<prefix>[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/(?P<name>[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)=(?P<value>([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?)$";

fn nfd_labels(t: &Topology) -> BTreeMap<String, String> {
    let view = NodeView::new(t);
    let r = rails::build(t, &view, 1);
    let text = nfd::render(
        t,
        &r,
        &nfd::NfdOptions {
            prefix: "peerpath.io".into(),
            expiry_unix: 1_893_456_000,
            gdr: audit::run(t, &AuditOptions::default()).gdr_ready(),
        },
    )
    .unwrap();
    assert!(text.len() < 65_536, "NFD ignores files over 64 kB");
    let line_re = regex::Regex::new(NFD_LINE).unwrap();
    let expiry_re =
        regex::Regex::new(r"^# \+expiry-time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").unwrap();
    let mut saw_expiry = false;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with("# +") {
            assert!(expiry_re.is_match(line), "{line}");
            assert_eq!(line, "# +expiry-time=2030-01-01T00:00:00Z");
            saw_expiry = true;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        assert!(saw_expiry, "labels after the expiry directive");
        let c = line_re
            .captures(line)
            .unwrap_or_else(|| panic!("not an NFD label line: {line:?}"));
        assert!(c["prefix"].len() <= 253);
        assert!(c["name"].len() <= 63, "{line}");
        assert!(c["value"].len() <= 63, "{line}");
        assert!(!c["prefix"].ends_with("kubernetes.io"));
        out.insert(c["name"].to_string(), c["value"].to_string());
    }
    out
}

#[test]
fn nfd_labels_follow_the_rules() {
    let (_d, t) = load_spec(&layouts::hgx_h100());
    let l = nfd_labels(&t);
    assert_eq!(l["rail-aligned"], "true");
    assert_eq!(l["worst-gpu-nic"], "PIX");
    assert_eq!(l["gdr-ready"], "true", "hgx-h100 loads nvidia-peermem");
    assert_eq!(l["gpu-count"], "8");
    assert_eq!(l["rdma-nic-count"], "8");
    assert_eq!(l["rail-speed"], "400G");
    let (_d2, m) = load_spec(&layouts::misplaced_nic());
    let l = nfd_labels(&m);
    assert_eq!(l["rail-aligned"], "false");
    assert_eq!(l["worst-gpu-nic"], "NODE");
    assert_eq!(l["gdr-ready"], "false");
    let (_d3, np) = load_spec(&layouts::without_peer_module(layouts::hgx_h100()));
    assert_eq!(
        nfd_labels(&np)["gdr-ready"],
        "unknown",
        "no peermem: DMA-BUF may serve; not a fact either way"
    );
}

/// Exports NCCL XML, loads it with peerpath's NCCL-XML source, and compares labels pair by pair.
fn nccl_round_trip(t: &Topology, opts: &nccl_xml::NcclXmlOptions) -> Topology {
    let xml = nccl_xml::render(t, opts).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("topo.xml");
    std::fs::write(&p, &xml).unwrap();
    let back = sources::load(Some(&p), &LoadOptions::default()).unwrap();
    assert_eq!(back.source.kind, "nccl-xml");
    back
}

fn labels(t: &Topology) -> BTreeMap<(Bdf, Bdf), (Label, String)> {
    let cl = Classifier::new(t, &ClassifyOptions::default());
    let eps: Vec<_> = cl
        .endpoints()
        .iter()
        .filter(|e| matches!(e.kind, DeviceKind::Gpu | DeviceKind::Nic))
        .cloned()
        .collect();
    let mut out = BTreeMap::new();
    for a in &eps {
        for b in &eps {
            if a.bdf < b.bdf && (a.kind == DeviceKind::Gpu || b.kind == DeviceKind::Gpu) {
                let p = cl.pair(&a.bdf, &b.bdf).unwrap();
                out.insert((a.bdf, b.bdf), (p.label, format!("{:?}", p.nccl.path)));
            }
        }
    }
    out
}

#[test]
fn nccl_xml_round_trips_through_the_nccl_source() {
    for spec in [
        layouts::hgx_h100(),
        layouts::misplaced_nic(),
        layouts::dgx_a100(),
    ] {
        let (_d, t) = load_spec(&spec);
        let back = nccl_round_trip(&t, &nccl_xml::NcclXmlOptions::default());
        let before = labels(&t);
        let after = labels(&back);
        assert_eq!(
            before.keys().collect::<Vec<_>>(),
            after.keys().collect::<Vec<_>>(),
            "{}",
            spec.name
        );
        for (k, (l0, n0)) in &before {
            let (l1, n1) = &after[k];
            assert_eq!(n0, n1, "{}: NCCL path of {k:?}", spec.name);
            match l0 {
                // NCCL XML has no host bridges: NODE and PHB are one NCCL type.
                Label::Node | Label::Phb => assert!(
                    matches!(l1, Label::Node | Label::Phb),
                    "{k:?}: {l0} vs {l1}"
                ),
                _ => assert_eq!(l0, l1, "{}: label of {k:?}", spec.name),
            }
        }
        // And placement on the re-imported file picks the same NICs.
        let p0 = place_plan(&t, 8);
        let p1 = place_plan(&back, 8);
        let nics = |p: &Placement| {
            p.ranks
                .iter()
                .map(|r| r.nic_bdf.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(nics(&p0), nics(&p1), "{}", spec.name);
    }
}

#[test]
fn nccl_xml_replaces_a_flattened_vm_topology() {
    let (_d, t) = load_spec(&layouts::vm_flat());
    let gpu = t.of_kind(DeviceKind::Gpu).next().unwrap().bdf;
    let nic = t
        .of_kind(DeviceKind::Nic)
        .find(|d| d.rdma_names().next().is_some())
        .unwrap()
        .bdf;
    let before = labels(&t);
    assert_eq!(
        before[&(gpu.min(nic), gpu.max(nic))].0,
        Label::Phb,
        "a flat guest tree"
    );
    let back = nccl_round_trip(
        &t,
        &nccl_xml::NcclXmlOptions {
            pairs: vec![(gpu, nic)],
            ..Default::default()
        },
    );
    let after = labels(&back);
    assert_eq!(
        after[&(gpu.min(nic), gpu.max(nic))].0,
        Label::Pix,
        "declared pair under one synthetic switch"
    );
    let xml = nccl_xml::render(
        &t,
        &nccl_xml::NcclXmlOptions {
            pairs: vec![(gpu, nic)],
            ..Default::default()
        },
    )
    .unwrap();
    assert!(xml.contains("busid=\"ffff:ff:01.0\""));
    assert!(xml.contains("DECLARED"));
    // A skeleton has no gpu/nic/net elements.
    let sk = nccl_xml::render(
        &t,
        &nccl_xml::NcclXmlOptions {
            skeleton: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!sk.contains("<net") && !sk.contains("<nic") && !sk.contains("<gpu"));
    // A bad pair is an error, not a silent omission.
    assert!(
        nccl_xml::render(
            &t,
            &nccl_xml::NcclXmlOptions {
                pairs: vec![(nic, gpu)],
                ..Default::default()
            }
        )
        .is_err()
    );
}

#[test]
fn prom_textfile_parses() {
    let (_d, t) = load_spec(&layouts::misplaced_nic());
    let view = NodeView::new(&t);
    let r = rails::build(&t, &view, 1);
    let report = audit::run(&t, &AuditOptions::default());
    let text = prom::render(
        &Paths::new(&t),
        &view,
        &r,
        &prom::PromInputs {
            now_unix: 1_767_225_600,
            audit: Some(&report),
            fingerprint: None,
        },
    );
    assert!(text.ends_with('\n'));
    // Our own strictness on top of the parser: HELP and TYPE before each family's samples, no
    // timestamps, valid names.
    let name_re = regex::Regex::new(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$").unwrap();
    let mut declared = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').unwrap();
            assert_eq!(ty, "gauge");
            assert!(declared.insert(name.to_string()), "{name} declared twice");
        } else if !line.starts_with('#') {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(
                name_re.is_match(name) && name.starts_with("peerpath_"),
                "{line}"
            );
            assert!(declared.contains(name), "{name} sampled before its TYPE");
            let tail = line
                .rsplit_once('}')
                .map(|x| x.1)
                .unwrap_or(line.split_once(' ').unwrap().1);
            assert_eq!(tail.split_whitespace().count(), 1, "no timestamp: {line}");
        }
    }
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
    let by = |name: &str| {
        scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .collect::<Vec<_>>()
    };
    let paths = by("peerpath_gpu_nic_path");
    assert_eq!(paths.len(), 8 * 8, "every GPU–NIC pair");
    let g3 = paths
        .iter()
        .find(|s| s.labels.get("gpu") == Some("3") && s.labels.get("nic") == Some("mlx5_3"))
        .unwrap();
    assert_eq!(g3.labels.get("path"), Some("SYS"));
    assert_eq!(g3.labels.get("rail"), Some("false"));
    let g0 = paths
        .iter()
        .find(|s| s.labels.get("gpu") == Some("0") && s.labels.get("nic") == Some("mlx5_0"))
        .unwrap();
    assert_eq!(
        (g0.labels.get("path"), g0.labels.get("rail")),
        (Some("PIX"), Some("true"))
    );
    assert!(
        matches!(by("peerpath_rail_optimised")[0].value, prometheus_parse::Value::Gauge(v) if v == 0.0)
    );
    assert!(
        matches!(by("peerpath_last_run_timestamp_seconds")[0].value, prometheus_parse::Value::Gauge(v) if v == 1_767_225_600.0)
    );
    let errors = by("peerpath_findings")
        .into_iter()
        .find(|s| s.labels.get("severity") == Some("error"))
        .unwrap();
    assert!(
        matches!(errors.value, prometheus_parse::Value::Gauge(v) if v == report.counts.error as f64 && v >= 1.0)
    );
    assert!(
        matches!(by("peerpath_gdr_ready")[0].value, prometheus_parse::Value::Gauge(v) if v == 0.0)
    );
    let widths = by("peerpath_pcie_link_width_lanes");
    assert!(
        widths
            .iter()
            .any(|s| s.labels.get("pci_bus_id") == Some("0000:e1:00.0")
                && s.labels.get("kind") == Some("max"))
    );
    assert!(scrape.docs.contains_key("peerpath_gpu_nic_path"));
    // Without an audit the findings family and the GDR verdict are absent, not zero.
    let no_audit = prom::render(&Paths::new(&t), &view, &r, &prom::PromInputs::default());
    assert!(!no_audit.contains("peerpath_findings"));
    assert!(!no_audit.contains("peerpath_gdr_ready"));
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

fn write_fixture(layout: &str, dir: &Path) -> std::path::PathBuf {
    let out = dir.join(format!("{layout}.tar.gz"));
    let st = Command::new(bin())
        .args(["fixture", layout, "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    out
}

#[test]
fn cli_exports_write_files() {
    let dir = tempfile::tempdir().unwrap();
    let fx = write_fixture("hgx-h100", dir.path());
    for fmt in ["gres", "nfd", "dra", "nccl-xml", "prom", "dot"] {
        let o = dir.path().join(format!("out.{fmt}"));
        let st = Command::new(bin())
            .args(["export", "--format", fmt, "--node-name", "n1", "-o"])
            .arg(&o)
            .arg("-i")
            .arg(&fx)
            .status()
            .unwrap();
        assert!(st.success(), "{fmt}");
        let text = std::fs::read_to_string(&o).unwrap();
        assert!(!text.is_empty(), "{fmt}");
    }
    // The JSON placement document.
    let out = Command::new(bin())
        .args(["place", "--ranks", "8", "--format", "json", "-i"])
        .arg(&fx)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "peerpath.placement/1");
    let r0 = &v["ranks"][0];
    for k in [
        "rank",
        "gpu",
        "cuda_index",
        "nic",
        "nic_bdf",
        "path",
        "numa_node",
        "cpus",
        "env",
    ] {
        assert!(!r0[k].is_null(), "{k}");
    }
    // rails: exit 0 when rail-optimised, 1 when not.
    assert!(
        Command::new(bin())
            .args(["rails", "-i"])
            .arg(&fx)
            .output()
            .unwrap()
            .status
            .success()
    );
    let bad = write_fixture("misplaced-nic", dir.path());
    assert_eq!(
        Command::new(bin())
            .args(["rails", "-i"])
            .arg(&bad)
            .output()
            .unwrap()
            .status
            .code(),
        Some(1)
    );
    // Asking for more ranks than GPUs is an error, not a panic.
    let e = Command::new(bin())
        .args(["place", "--ranks", "9", "-i"])
        .arg(&fx)
        .output()
        .unwrap();
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("8 GPUs"));
}

#[test]
fn dot_is_well_formed() {
    let (_d, t) = load_spec(&layouts::hgx_h100());
    let d = dot::render(&Paths::new(&t));
    assert!(d.starts_with("digraph peerpath {"));
    assert_eq!(d.matches('{').count(), d.matches('}').count());
    // Every edge endpoint is a declared node.
    let node_re = regex::Regex::new(r#"^\s*("(?:[^"\\]|\\.)*")\s*\["#).unwrap();
    let edge_re =
        regex::Regex::new(r#"^\s*("(?:[^"\\]|\\.)*")\s*->\s*("(?:[^"\\]|\\.)*")"#).unwrap();
    let mut nodes = BTreeSet::new();
    for l in d.lines() {
        if let Some(c) = edge_re.captures(l) {
            let _ = c;
        } else if let Some(c) = node_re.captures(l) {
            nodes.insert(c[1].to_string());
        }
    }
    let mut edges = 0;
    for l in d.lines() {
        if let Some(c) = edge_re.captures(l) {
            edges += 1;
            assert!(nodes.contains(&c[1]) && nodes.contains(&c[2]), "{l}");
        }
    }
    assert!(edges >= 16, "GPU and NIC edges");
    // If Graphviz is installed, let it judge.
    if let Ok(mut child) = Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(d.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
    }
}

/// HGX with NVLinks added the way NVML reports them: GPU0–GPU4 joined directly (across the
/// sockets), the rest alone. Two ranks go to the NVLink pair even though it spans NUMA nodes.
fn with_nvlinks(t: &mut Topology, fabric: bool) {
    let g: Vec<Bdf> = t.of_kind(DeviceKind::Gpu).map(|d| d.bdf).collect();
    t.nvlink_visible = true;
    if fabric {
        for &x in &g {
            t.nvlinks.push(NvLink {
                a: x,
                b: None,
                count: 18,
                version: Some(4),
            });
        }
    } else {
        t.nvlinks.push(NvLink {
            a: g[0],
            b: Some(g[4]),
            count: 12,
            version: Some(4),
        });
    }
}

#[test]
fn nvlink_domain_beats_numa_node() {
    let (_d, mut t) = load_spec(&layouts::hgx_h100());
    with_nvlinks(&mut t, false);
    let p = place_plan(&t, 2);
    let idx: Vec<usize> = p.ranks.iter().map(|r| r.cuda_index).collect();
    assert_eq!(idx, vec![0, 4], "{:?}", p.notes);
    assert!(
        p.notes.iter().any(|n| n.contains("1 NVLink domain")),
        "{:?}",
        p.notes
    );
    check_cores(&t, &p);
    // Each rank still gets its own PIX NIC and its own NUMA node's cores.
    assert_eq!(p.ranks[1].numa_node, Some(1));
    assert!(p.ranks.iter().all(|r| r.path.as_deref() == Some("PIX")));
}

#[test]
fn nccl_xml_carries_nvlinks() {
    let (_d, mut t) = load_spec(&layouts::hgx_h100());
    with_nvlinks(&mut t, true);
    let xml = nccl_xml::render(&t, &nccl_xml::NcclXmlOptions::default()).unwrap();
    assert!(
        xml.contains("<nvlink target=\"fffffff:ffff:ff\" count=\"18\" tclass=\"0x068000\"/>"),
        "{xml}"
    );
    let back = nccl_round_trip(&t, &nccl_xml::NcclXmlOptions::default());
    let before = labels(&t);
    let after = labels(&back);
    let g0 = layouts::hgx_gpu(0);
    let g7 = layouts::hgx_gpu(7);
    assert!(
        matches!(before[&(g0, g7)].0, Label::Nv(_)),
        "{:?}",
        before[&(g0, g7)]
    );
    assert_eq!(before[&(g0, g7)].0, after[&(g0, g7)].0);
}

/// Prometheus's own linter, when installed (`.ci/run` installs Debian's `prometheus` package;
/// under CI its absence is a failure, elsewhere the test says it skipped).
#[test]
fn prom_textfile_passes_promtool() {
    let Ok(probe) = Command::new("promtool").arg("--version").output() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool missing under CI: .ci/run installs `prometheus`"
        );
        eprintln!("promtool not installed: skipped (apt-get install prometheus)");
        return;
    };
    assert!(probe.status.success());
    for spec in [layouts::hgx_h100(), layouts::misplaced_nic()] {
        let (_d, t) = load_spec(&spec);
        let view = NodeView::new(&t);
        let r = rails::build(&t, &view, 1);
        let report = audit::run(&t, &AuditOptions::default());
        let text = prom::render(
            &Paths::new(&t),
            &view,
            &r,
            &prom::PromInputs {
                now_unix: 1_767_225_600,
                audit: Some(&report),
                fingerprint: None,
            },
        );
        let mut child = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "promtool on {}: {}{}",
            spec.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `export --format nfd|prom` carry the audit's GDR verdict (`Report::gdr_ready`): false on
/// vm-flat (every GPU–NIC pair PHB: NCCL will not use GPUDirect RDMA, although the audit
/// passes) and misplaced-nic (one GPU's NIC is SYS), true on hgx-h100 and dgx-a100 (every GPU
/// has a PIX NIC, nvidia-peermem registered, nothing breaks it).
#[test]
fn exports_carry_the_audits_gdr_verdict() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/synth");
    for (name, want) in [
        ("vm-flat", false),
        ("misplaced-nic", false),
        ("hgx-h100", true),
        ("dgx-a100", true),
    ] {
        let input = root.join(format!("{name}.tar.gz"));
        let export = |format: &str| {
            let out = Command::new(bin())
                .args(["export", "--format", format, "-i"])
                .arg(&input)
                .output()
                .unwrap();
            assert!(out.status.success(), "{name} {format}");
            String::from_utf8(out.stdout).unwrap()
        };
        let nfd = export("nfd");
        let line = format!("peerpath.io/gdr-ready={want}");
        assert!(nfd.lines().any(|l| l == line), "{name}: want {line}\n{nfd}");
        let prom = export("prom");
        let line = format!("peerpath_gdr_ready {}", u8::from(want));
        assert!(
            prom.lines().any(|l| l == line),
            "{name}: want {line}\n{prom}"
        );
        let t = sources::load(Some(&input), &LoadOptions::default()).unwrap();
        let r = audit::run(&t, &AuditOptions::default());
        assert_eq!(
            r.gdr_ready().ready,
            Some(want),
            "{name}: {:?}",
            r.gdr_ready()
        );
    }
}
