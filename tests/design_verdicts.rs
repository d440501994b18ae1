//! A verdict that knows the node's design and the job's NCCL settings (issue 38): every
//! published production machine and the switchless designs, each against the verdict
//! written down from the published facts before the rule was coded
//! (`tests/data/design/expected.toml`); the settings read where NCCL reads them (environment,
//! `NCCL_CONF_FILE`, `/etc/nccl.conf` inside the input root) and the same decision in every
//! consumer (audit, `audit --job`, place, matrix, explain, NFD, Prometheus).

use peerpath::analysis::audit::{self, AuditOptions, CheckId, RemedyClass, Report, Severity};
use peerpath::analysis::classify::{Classifier, ClassifyOptions};
use peerpath::model::Topology;
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{self, layouts};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Deserialize)]
struct Expected {
    machine: Vec<Machine>,
}

#[derive(Deserialize)]
struct Machine {
    input: String,
    design: String,
    verdict: String,
    worst: String,
    remedy: String,
    setting: Option<String>,
    worst_with_setting: Option<String>,
    remedy_has: Option<String>,
    #[allow(dead_code)]
    deviation: Option<String>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn load(input: &str) -> Topology {
    match input.strip_prefix("synth:") {
        Some(name) => {
            let spec = layouts::by_name(name).unwrap_or_else(|| panic!("no layout {name}"));
            let d = tempfile::tempdir().unwrap();
            synth::write_tree(&spec, d.path(), &Default::default()).unwrap();
            sources::load(Some(d.path()), &LoadOptions::default()).unwrap()
        }
        None => sources::load(
            Some(&root().join(input)),
            &LoadOptions {
                pci_ids: Some(PathBuf::from("/nonexistent/pci.ids")),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{input}: {e:#}")),
    }
}

fn sev_word(s: Option<Severity>) -> &'static str {
    match s {
        None => "none",
        Some(Severity::Info) => "info",
        Some(Severity::Warning) => "warning",
        Some(Severity::Error) => "error",
        Some(Severity::Unknown) => "unknown",
    }
}

/// The worst per-GPU GDR finding (a GPU's `gpu-nic-path`, or `amd-apu-gdr-level`).
fn worst(r: &Report) -> Option<Severity> {
    r.findings
        .iter()
        .filter(|f| {
            (f.id == CheckId::GpuNicPath && f.summary.starts_with("GPU "))
                || f.id == CheckId::AmdApuGdrLevel
        })
        .map(|f| f.severity)
        .min()
}

fn with_env(t: &Topology, setting: &str) -> Topology {
    let (k, v) = setting.split_once('=').unwrap();
    let mut t = t.clone();
    t.machine
        .nccl
        .layer_environment(&[(k.to_string(), v.to_string())]);
    t
}

#[test]
fn every_published_design_gets_the_verdict_its_facts_give() {
    let text = std::fs::read_to_string(root().join("tests/data/design/expected.toml")).unwrap();
    let e: Expected = toml::from_str(&text).unwrap();
    assert!(e.machine.len() >= 19, "{}", e.machine.len());
    let mut failures = Vec::new();
    for m in &e.machine {
        let t = load(&m.input);
        let r = audit::run(&t, &AuditOptions::default());
        let cl = Classifier::new(&t, &ClassifyOptions::default());
        let design = peerpath::analysis::design::recognise(cl.paths())
            .map(|d| d.id)
            .unwrap_or("");
        let mut got = vec![];
        if design != m.design {
            got.push(format!("design {design:?}, expected {:?}", m.design));
        }
        if r.verdict != m.verdict {
            got.push(format!("verdict {}, expected {}", r.verdict, m.verdict));
        }
        if sev_word(worst(&r)) != m.worst {
            got.push(format!(
                "worst {}, expected {}",
                sev_word(worst(&r)),
                m.worst
            ));
        }
        let classes: Vec<RemedyClass> = r
            .pairs
            .iter()
            .filter(|p| !p.gdr || p.remedy != RemedyClass::None)
            .map(|p| p.remedy)
            .collect();
        let want = m.remedy.as_str();
        let ok = if want == "none" {
            classes.is_empty()
        } else {
            !classes.is_empty() && classes.iter().all(|c| c.as_str() == want)
        };
        if !ok {
            got.push(format!("remedy classes {classes:?}, expected {want}"));
        }
        if let Some(h) = &m.remedy_has {
            for f in r.findings.iter().filter(|f| {
                f.id == CheckId::GpuNicPath
                    && f.summary.starts_with("GPU ")
                    && f.severity <= Severity::Warning
            }) {
                if !f.remedy.contains(h.as_str()) {
                    got.push(format!("remedy {:?} lacks {h:?}", f.remedy));
                }
            }
        }
        // "Move" is said only where a card can move.
        for f in r.findings.iter().filter(|f| f.id == CheckId::GpuNicPath) {
            if f.remedy.starts_with("move NIC") && m.remedy != "misplaced" {
                got.push(format!(
                    "a move remedy on a {} node: {}",
                    m.remedy, f.remedy
                ));
            }
        }
        if let (Some(s), Some(w)) = (&m.setting, &m.worst_with_setting) {
            let r2 = audit::run(&with_env(&t, s), &AuditOptions::default());
            if sev_word(worst(&r2)) != w {
                got.push(format!(
                    "with {s}: worst {}, expected {w}",
                    sev_word(worst(&r2))
                ));
            }
            // With the setting, nothing says GDR is off for a pair the setting admits.
            for f in r2
                .findings
                .iter()
                .filter(|f| f.id == CheckId::GpuNicPath && f.severity == Severity::Info)
            {
                if f.summary.contains("does not use GPUDirect RDMA") {
                    got.push(format!("with {s}: {}", f.summary));
                }
            }
        }
        if !got.is_empty() {
            failures.push(format!("{}: {}", m.input, got.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The Slingshot-style node: its remedy names `NCCL_NET_GDR_LEVEL=PHB`, never a move, and no
/// slot is proposed; with that value in the environment or in the node's `/etc/nccl.conf`, no
/// consumer says GDR is off for its pairs.
#[test]
fn slingshot_node_under_the_documented_setting_in_env_or_nccl_conf() {
    let spec = layouts::cray_ex_a100();
    let d = tempfile::tempdir().unwrap();
    synth::write_tree(&spec, d.path(), &Default::default()).unwrap();
    let root = d.path().to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_peerpath");
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(bin);
        c.args(args).env("PCI_IDS", "/nonexistent/pci.ids");
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("NCCL_")) {
            c.env_remove(k);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (code, out) = run(&["audit", "-i", root], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("[gpu-nic-path]"), "{out}");
    assert!(out.contains("NCCL_NET_GDR_LEVEL=PHB"), "{out}");
    assert!(!out.contains("move NIC"), "{out}");
    assert!(out.contains("HPE"), "{out}");
    let (_, nfd) = run(&["export", "--format", "nfd", "-i", root], &[]);
    assert!(nfd.contains("gdr-ready=false"), "{nfd}");
    // `place --format env` passes the platform's documented level on, marked, and a shell
    // (its consumer) sets it.
    let (_, env_out) = run(
        &[
            "place", "-i", root, "--ranks", "4", "--format", "env", "--rank", "1",
        ],
        &[],
    );
    assert!(
        env_out.contains("documented for this platform"),
        "{env_out}"
    );
    let sh = Command::new("sh")
        .arg("-c")
        .arg(format!("{env_out}\nprintf %s \"$NCCL_NET_GDR_LEVEL\""))
        .output()
        .unwrap();
    assert!(
        sh.status.success(),
        "{}",
        String::from_utf8_lossy(&sh.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&sh.stdout), "PHB");

    let env_phb = [("NCCL_NET_GDR_LEVEL", "PHB")];
    // And the same value in the node's own /etc/nccl.conf.
    std::fs::create_dir_all(d.path().join("etc")).unwrap();
    for (label, env) in [("env", &env_phb[..]), ("nccl.conf", &[][..])] {
        if label == "nccl.conf" {
            std::fs::write(d.path().join("etc/nccl.conf"), "NCCL_NET_GDR_LEVEL=PHB\n").unwrap();
        }
        let (code, out) = run(&["audit", "-i", root], env);
        assert_eq!(code, 0, "{label}: {out}");
        assert!(
            !out.contains("WARNINGS\n  [gpu-nic-path]"),
            "{label}: {out}"
        );
        assert!(
            !out.contains("does not use GPUDirect RDMA"),
            "{label}: {out}"
        );
        assert!(
            out.contains("uses GPUDirect RDMA on this pair"),
            "{label}: {out}"
        );
        if label == "nccl.conf" {
            assert!(out.contains("/etc/nccl.conf line 1"), "{out}");
        }
        let (_, job) = run(&["audit", "-i", root, "--job"], env);
        assert!(
            !job.contains("does not use GPUDirect RDMA"),
            "{label}: {job}"
        );
        assert!(
            job.contains("uses GPUDirect RDMA on this pair"),
            "{label}: {job}"
        );
        if label == "env" {
            // The job check counts the pairs' own decision.
            assert!(
                job.contains("NCCL_NET_GDR_LEVEL=PHB: NCCL uses GPUDirect RDMA on 4 of 4"),
                "{job}"
            );
        }
        let (_, place) = run(&["place", "-i", root, "--ranks", "4"], env);
        assert!(
            !place.contains("keeps GPUDirect RDMA off"),
            "{label}: {place}"
        );
        assert!(place.contains("GPUDirect RDMA on"), "{label}: {place}");
        let (_, explain) = run(&["explain", "GPU0", "NIC0", "-i", root], env);
        assert!(explain.contains("GDR on"), "{label}: {explain}");
        let (_, matrix) = run(&["matrix", "-i", root, "--format", "json"], env);
        let v: serde_json::Value = serde_json::from_str(&matrix).unwrap();
        let gdr_col = v["pair_fields"]
            .as_array()
            .unwrap()
            .iter()
            .position(|f| f == "gdr")
            .unwrap();
        let gpu_nic: Vec<&serde_json::Value> = v["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p[2] == "PHB")
            .collect();
        assert!(!gpu_nic.is_empty());
        assert!(
            gpu_nic.iter().all(|p| p[gdr_col] == true),
            "{label}: {gpu_nic:?}"
        );
        let (_, nfd) = run(&["export", "--format", "nfd", "-i", root], env);
        assert!(nfd.contains("gdr-ready=true"), "{label}: {nfd}");
        let (_, prom) = run(&["export", "--format", "prom", "-i", root], env);
        assert!(prom.contains("peerpath_gdr_ready 1"), "{label}: {prom}");
    }
}

/// A misplaced adapter stays an error naming both addresses (the GPU and the NIC to move) and
/// the free port, whatever the GDR level.
#[test]
fn the_misplaced_nic_is_still_an_error_naming_both_addresses() {
    let t = load("synth:misplaced-nic");
    for r in [
        audit::run(&t, &AuditOptions::default()),
        audit::run(
            &with_env(&t, "NCCL_NET_GDR_LEVEL=PHB"),
            &AuditOptions::default(),
        ),
    ] {
        let f = r
            .findings
            .iter()
            .find(|f| f.id == CheckId::GpuNicPath && f.severity == Severity::Error)
            .unwrap_or_else(|| panic!("{:#?}", r.findings));
        let gpu = layouts::hgx_gpu(3).to_string();
        let nic = layouts::MISPLACED_NIC.to_string();
        assert!(f.summary.contains(&gpu), "{}", f.summary);
        assert!(f.remedy.contains(&nic), "{}", f.remedy);
        assert!(f.remedy.contains("free downstream port"), "{}", f.remedy);
        assert_eq!(r.verdict, "fail");
    }
}

/// A setting that turns GDR off where the path allows it is an error naming the setting and
/// its source; a value NCCL does not read as written is said as such.
#[test]
fn settings_that_turn_gdr_off_are_errors_with_their_source() {
    let t = load("synth:hgx-h100");
    for (k, v, says) in [
        ("NCCL_NET_GDR_LEVEL", "PIX", "turns GPUDirect RDMA off"),
        ("NCCL_NET_GDR_LEVEL", "LOC", "turns GPUDirect RDMA off"),
        ("NCCL_IB_DISABLE", "1", "does not drive this NIC over RDMA"),
        ("NCCL_NET", "Socket", "does not drive this NIC over RDMA"),
    ] {
        let mut t2 = t.clone();
        t2.machine
            .nccl
            .layer_environment(&[(k.to_string(), v.to_string())]);
        let r = audit::run(&t2, &AuditOptions::default());
        let cl = Classifier::new(&t2, &ClassifyOptions::default());
        let pxb_or_pix = r.pairs.iter().filter(|p| p.local).count();
        assert!(pxb_or_pix > 0);
        let errs: Vec<_> = r
            .findings
            .iter()
            .filter(|f| f.id == CheckId::GpuNicPath && f.severity == Severity::Error)
            .collect();
        // HGX H100 pairs are PIX: LOC and Socket cut every one, PIX none.
        if v == "PIX" {
            assert!(errs.is_empty(), "{k}={v}: {errs:#?}");
            assert!(r.pairs.iter().all(|p| p.gdr));
            continue;
        }
        assert_eq!(errs.len(), 8, "{k}={v}: {:#?}", r.findings);
        assert!(errs.iter().all(|f| f.summary.contains(says)), "{errs:#?}");
        assert!(
            errs.iter()
                .all(|f| f.evidence.iter().any(|e| e.path == format!("env {k}")))
        );
        assert!(
            r.pairs
                .iter()
                .all(|p| !p.gdr && p.remedy == RemedyClass::Setting)
        );
        assert_eq!(r.gdr_ready().ready, Some(false));
        let s = cl.summary_of(&r.pairs[0].gpu, &r.pairs[0].nic).unwrap();
        assert!(!s.gdr, "{k}={v}: the classifier's GDR column says off too");
    }
    // NCCL reads level names case-sensitively: `phb` is ignored, and where PHB would have
    // admitted the path that is an error naming the file and line.
    let mut t3 = load("synth:polaris-a100");
    t3.machine
        .nccl
        .entries
        .push(peerpath::model::nccl_settings::NcclSetting {
            name: "NCCL_NET_GDR_LEVEL".into(),
            value: "phb".into(),
            source: peerpath::model::nccl_settings::SettingSource::File {
                path: "/etc/nccl.conf".into(),
                line: 3,
            },
        });
    let r = audit::run(&t3, &AuditOptions::default());
    let setting_errs: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == CheckId::GpuNicPath && f.severity == Severity::Error)
        .collect();
    assert_eq!(setting_errs.len(), 2, "{:#?}", r.findings);
    assert!(
        setting_errs[0]
            .remedy
            .contains("write `NCCL_NET_GDR_LEVEL=PHB` in /etc/nccl.conf line 3"),
        "{}",
        setting_errs[0].remedy
    );
    assert!(r.findings.iter().any(|f| f.id == CheckId::NcclSettings
        && f.severity == Severity::Warning
        && f.summary.contains("case-sensitively")));
}

/// The number written just before each "GPU(s)" in `s` (`8 GPU(s)`, `0 NVIDIA GPU(s)`).
fn gpu_counts(s: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find("GPU(s)") {
        let words: Vec<&str> = rest[..at].split_whitespace().collect();
        let n = words
            .iter()
            .rev()
            .take(2)
            .find_map(|w| w.trim_start_matches('(').parse::<usize>().ok());
        if let Some(n) = n {
            let from = at.saturating_sub(30);
            out.push((n, rest[from..at + 6].to_string()));
        }
        rest = &rest[at + 6..];
    }
    out
}

/// Issue 51: Azure's hand-made NDv2 topology file (8 `<pci class="0x030200">` entries, no
/// vendor attribute) once drew "0 NVIDIA GPU(s)" in one finding and "8 GPU(s)" in another. Every
/// finding now counts the GPUs the file holds (8), saying the vendor is not recorded.
#[test]
fn one_gpu_count_in_every_finding_of_a_hand_made_topology_file() {
    let t = load("fixtures/platforms/azure-ndv2-v100-azhpc-images.nccl-topo.xml");
    let r = audit::run(&t, &AuditOptions::default());
    let mut seen = 0;
    for f in &r.findings {
        for (n, ctx) in gpu_counts(&f.summary) {
            seen += 1;
            assert_eq!(n, 8, "{:?}: {ctx:?} in {}", f.id, f.summary);
        }
    }
    assert!(seen >= 2, "{:?}", r.findings);
    let g = r
        .findings
        .iter()
        .find(|f| f.id == CheckId::GdrPeerModule)
        .unwrap();
    assert!(
        g.summary.contains("vendor this input does not record"),
        "{}",
        g.summary
    );
}

/// Issue 51: on AWS p4d the aws-ofi-nccl plugin's own topology file puts each GPU pair and its
/// EFA behind one switch. No finding says their traffic is staged or that an EFA is beyond PXB
/// from every GPU; each GPU's finding names the file, and the pair is GDR on.
#[test]
fn aws_p4d_gdr_is_stated_under_the_plugins_topology_file() {
    let t = load("fixtures/platforms/aws-p4d.24xl.nixl.hwloc2.xml");
    let r = audit::run(&t, &AuditOptions::default());
    assert_eq!(r.pairs.len(), 8, "{:?}", r.pairs);
    assert!(r.pairs.iter().all(|p| p.gdr), "{:?}", r.pairs);
    for f in r.findings.iter().filter(|f| f.id == CheckId::GpuNicPath) {
        assert!(f.summary.starts_with("GPU "), "{}", f.summary);
        assert!(!f.summary.contains("stages"), "{}", f.summary);
        assert!(f.summary.contains("p4d-24xl-topo.xml"), "{}", f.summary);
        assert_eq!(f.severity, Severity::Info, "{}", f.summary);
    }
    // A job's own NCCL_TOPO_FILE replaces the plugin's: the VM's view (PHB, staged) again.
    let r = audit::run(
        &with_env(&t, "NCCL_TOPO_FILE=/opt/mine.xml"),
        &AuditOptions::default(),
    );
    assert!(r.pairs.iter().all(|p| !p.gdr), "{:?}", r.pairs);
}
