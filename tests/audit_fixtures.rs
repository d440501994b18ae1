//! `peerpath audit` on sysfs trees written to disk and read back by the scanner: one
//! synthesized fault per test against its clean twin (the `synth` layouts), the same trees read
//! with 64-byte configs (as non-root), the real hwloc fixtures, and the CLI's exit codes.

use peerpath::analysis::audit::{
    self, AuditOptions, CheckId, Finding, GdrReadiness, GdrReason, PathLabel, Report, Severity,
    Subject,
};
use peerpath::analysis::classify::Label;
use peerpath::model::{Bdf, Topology};
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::layouts::{self, hgx_gpu, hgx_nic, hgx_nic_port};
use peerpath::synth::{Spec, WriteOptions, write_tarball, write_tree};
use std::path::Path;
use std::process::Command;

/// Writes a spec as a snapshot tarball (the sysfs tree hwloc-gather-topology would capture)
/// and scans it back.
fn load(spec: &Spec, unprivileged: bool) -> Topology {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("node.tar.gz");
    write_tarball(spec, &tar, &WriteOptions { unprivileged }).unwrap();
    sources::load(Some(&tar), &LoadOptions::default()).unwrap()
}

fn audit(spec: &Spec) -> Report {
    audit::run(&load(spec, false), &AuditOptions::default())
}

fn errors(r: &Report) -> Vec<&Finding> {
    r.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect()
}

fn find<'a>(r: &'a Report, id: CheckId, subject: &str) -> &'a Finding {
    r.findings
        .iter()
        .find(|f| f.id == id && f.subject.to_string() == subject)
        .unwrap_or_else(|| panic!("no {id} finding for {subject}: {:#?}", r.findings))
}

fn ev<'a>(f: &'a Finding, path: &str) -> &'a str {
    f.evidence
        .iter()
        .find(|e| e.path == path)
        .map(|e| e.value.as_str())
        .unwrap_or_else(|| panic!("no evidence {path}: {:#?}", f.evidence))
}

fn p(b: Bdf, attr: &str) -> String {
    format!("/sys/bus/pci/devices/{b}/{attr}")
}

#[test]
fn clean_twins_pass_with_nothing_unknown() {
    for spec in [layouts::hgx_h100(), layouts::dgx_a100()] {
        let r = audit(&spec);
        assert_eq!(r.verdict, "pass", "{}: {:#?}", spec.name, errors(&r));
        assert_eq!(r.counts.unknown, 0, "{}: {:#?}", spec.name, r.findings);
        assert_eq!(r.counts.warning, 0, "{}: {:#?}", spec.name, r.findings);
        assert_eq!(r.pairs.len(), 8);
        assert!(
            r.pairs.iter().all(|p| p.label == PathLabel(Label::Pix)),
            "{:#?}",
            r.pairs
        );
    }
}

#[test]
fn nic_on_the_other_socket() {
    let r = audit(&layouts::misplaced_nic());
    assert_eq!(r.verdict, "fail");
    assert_eq!(errors(&r).len(), 1, "{:#?}", errors(&r));
    let f = find(&r, CheckId::GpuNicPath, &hgx_gpu(3).to_string());
    // GPU3 gets the nearest NIC it can (mlx5_0, shared with GPU0, NODE); the remedy moves the
    // card no GPU can use (mlx5_3, on the other socket).
    assert!(
        f.summary.contains("NODE") && f.summary.contains("mlx5_0"),
        "{}",
        f.summary
    );
    for s in [
        "mlx5_3",
        "slot 13",
        "root port 0000:e0:01.0",
        "NUMA node 1",
        "switch sw3",
        "root port 0000:48:01.0",
    ] {
        assert!(f.remedy.contains(s), "remedy lacks {s:?}: {}", f.remedy);
    }
    assert!(
        f.evidence
            .iter()
            .any(|e| e.path == format!("/sys/bus/pci/devices/{}", layouts::MISPLACED_NIC))
    );
}

#[test]
fn acs_redirect_on_one_downstream_port() {
    let port = hgx_nic_port(2);
    let r = audit(&layouts::with_acs_redirect(layouts::hgx_h100(), port).unwrap());
    assert_eq!(r.verdict, "fail");
    assert_eq!(errors(&r).len(), 1, "{:#?}", errors(&r));
    let f = find(&r, CheckId::AcsRedirect, &port.to_string());
    assert!(ev(f, &p(port, "config")).contains("0x001d"));
    assert_eq!(f.pairs[0].gpu, hgx_gpu(2));
}

#[test]
fn one_hop_trained_to_x8() {
    let nic = hgx_nic(4);
    let r = audit(&layouts::with_link_width(layouts::hgx_h100(), nic, 8).unwrap());
    assert_eq!(errors(&r).len(), 1, "{:#?}", errors(&r));
    let f = find(&r, CheckId::LinkDegraded, &nic.to_string());
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(ev(f, &p(nic, "current_link_width")), "8");
    assert_eq!(ev(f, &p(nic, "max_link_width")), "16");
}

#[test]
fn aer_correctable_and_fatal() {
    let spec = layouts::with_aer(layouts::hgx_h100(), hgx_nic(0), 5, 0, 0).unwrap();
    let spec = layouts::with_aer(spec, hgx_gpu(5), 0, 0, 2).unwrap();
    let r = audit(&spec);
    let c = find(&r, CheckId::AerErrors, &hgx_nic(0).to_string());
    assert_eq!(c.severity, Severity::Warning);
    assert!(c.summary.contains("BadTLP=5"), "{}", c.summary);
    assert!(ev(c, &p(hgx_nic(0), "aer_dev_correctable")).contains("BadTLP 5"));
    let f = find(&r, CheckId::AerErrors, &hgx_gpu(5).to_string());
    assert_eq!(f.severity, Severity::Error);
    assert!(f.summary.contains("MalfTLP=2"), "{}", f.summary);
    assert!(ev(f, &p(hgx_gpu(5), "aer_dev_fatal")).contains("MalfTLP 2"));
    assert_eq!(errors(&r).len(), 1);
}

#[test]
fn iommu_group_in_dma_mode() {
    let g = hgx_gpu(2);
    let r = audit(&layouts::with_iommu_type(layouts::hgx_h100(), g, "DMA").unwrap());
    let f = find(&r, CheckId::IommuTranslation, &g.to_string());
    assert_eq!(f.severity, Severity::Error);
    let group = f
        .evidence
        .iter()
        .find(|e| e.path.starts_with("/sys/kernel/iommu_groups/"))
        .unwrap();
    assert_eq!(group.value, "DMA");
    assert!(errors(&r).iter().all(|e| e.id == CheckId::IommuTranslation));
}

#[test]
fn peer_module_absent() {
    // Proprietary kernel module (DGX A100 layout): no mechanism at all → error.
    let r = audit(&layouts::without_peer_module(layouts::dgx_a100()));
    assert_eq!(r.verdict, "fail");
    let f = find(&r, CheckId::GdrPeerModule, "node");
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(ev(f, "/sys/module/nvidia_peermem/version"), "(absent)");
    assert_eq!(errors(&r).len(), 1);
    // Open kernel module (HGX layout): dma-buf remains → info, no error.
    let r = audit(&layouts::without_peer_module(layouts::hgx_h100()));
    assert_eq!(r.verdict, "pass");
    let f = find(&r, CheckId::GdrPeerModule, "node");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("dma-buf"));
}

#[test]
fn a_vm() {
    for spec in [layouts::as_vm(layouts::hgx_h100()), layouts::vm_flat()] {
        let r = audit(&spec);
        assert_eq!(r.verdict, "pass", "{}: {:#?}", spec.name, errors(&r));
        let v = find(&r, CheckId::Virtualized, "node");
        assert_eq!(v.severity, Severity::Warning);
        assert!(v.evidence.iter().any(|e| e.path == "/proc/cpuinfo"));
    }
}

#[test]
fn non_root_reads_give_unknown_never_pass() {
    for spec in [
        layouts::hgx_h100(),
        layouts::with_acs_redirect(layouts::hgx_h100(), hgx_nic_port(2)).unwrap(),
        layouts::dgx_a100(),
        layouts::misplaced_nic(),
    ] {
        let r = audit::run(&load(&spec, true), &AuditOptions::default());
        for id in [CheckId::AcsRedirect, CheckId::MpsMrrs] {
            let f: Vec<&Finding> = r.findings.iter().filter(|f| f.id == id).collect();
            assert!(!f.is_empty(), "{}: no {id} finding", spec.name);
            assert!(
                f.iter().all(|f| f.severity == Severity::Unknown),
                "{}: {f:#?}",
                spec.name
            );
            assert!(
                f[0].summary.contains("64 of 4096 bytes"),
                "{}",
                f[0].summary
            );
        }
        assert!(r.counts.unknown >= 2);
    }
}

#[test]
fn hwloc_fixtures_audit_without_panics() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hwloc");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if !path.to_string_lossy().ends_with(".tar.bz2") {
            continue;
        }
        n += 1;
        let t = sources::load(Some(&path), &LoadOptions::default()).unwrap();
        let r = audit::run(&t, &AuditOptions::default());
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["schema"], "peerpath.audit/1");
        // These snapshots hold 64-byte configs: a NIC's MPS/MRRS is unknown, never judged.
        let has_rdma = t.devices.iter().any(|d| d.rdma_names().next().is_some());
        if has_rdma {
            let m = r
                .findings
                .iter()
                .find(|f| f.id == CheckId::MpsMrrs)
                .unwrap();
            assert_eq!(m.severity, Severity::Unknown, "{}", path.display());
        }
        // No GPU in these snapshots: nothing may fail.
        assert_eq!(r.verdict, "pass", "{}: {:#?}", path.display(), errors(&r));
    }
    assert!(n >= 5);
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_peerpath"))
}

#[test]
fn cli_exit_codes_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean");
    let bad = dir.path().join("bad.tar.gz");
    // One tree as a directory (the live-machine code path), one as a snapshot tarball.
    write_tree(&layouts::hgx_h100(), &clean, &WriteOptions::default()).unwrap();
    write_tarball(&layouts::misplaced_nic(), &bad, &WriteOptions::default()).unwrap();
    let out = bin()
        .args(["audit", "--format", "json", "-i"])
        .arg(&clean)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["schema"], "peerpath.audit/1");
    assert_eq!(j["verdict"], "pass");
    let out = bin().args(["audit", "-i"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("FAIL: 1 error(s)"), "{text}");
    assert!(text.contains("ERRORS\n  [gpu-nic-path]"));
    // The audit itself cannot run: missing input, unknown profile, bad evidence.
    let out = bin()
        .args(["audit", "-i"])
        .arg(dir.path().join("nope"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin()
        .args(["audit", "--profile", "no-such-profile", "-i"])
        .arg(&clean)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let evf = dir.path().join("ev.json");
    std::fs::write(&evf, "{\"schema\":\"something-else\"}").unwrap();
    let out = bin()
        .args(["audit", "--evidence"])
        .arg(&evf)
        .arg("-i")
        .arg(&clean)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // A measurement of the audit's own pair for GPU3 (mlx5_0, NODE) confirms it; one of
    // GPU3 with the stray mlx5_3 is outside the pairing and is said to change nothing.
    let cell = |nic: &str| {
        format!(
            "{{\"gpu\":{{\"bdf\":\"{}\"}},\"nic\":{{\"fabric\":\"verbs\",\"rdma\":\"{nic}\"}},\"memory\":\"cuda\",\"direction\":\"host_to_gpu\",\"op\":\"write\",\"message_bytes\":65536,\"verdict\":\"confirmed\"}}",
            hgx_gpu(3)
        )
    };
    std::fs::write(
        &evf,
        format!(
            "{{\"schema\":\"peerpath.probe/2\",\"results\":[{},{}]}}",
            cell("mlx5_0"),
            cell("mlx5_3")
        ),
    )
    .unwrap();
    let out = bin()
        .args(["audit", "--format", "json", "--evidence"])
        .arg(&evf)
        .arg("-i")
        .arg(&bad)
        .output()
        .unwrap();
    // A measured `confirmed` beats the inferred SYS: the audit passes, and says why.
    assert_eq!(out.status.code(), Some(0));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == CheckId::GpuNicPath.as_str() && f["subject"] == hgx_gpu(3).to_string())
        .unwrap();
    assert_eq!(f["severity"], "warning");
    assert!(f["measured"].as_str().unwrap().contains("confirmed"));
    assert!(
        j["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["subject"] == "node"
                && f["summary"]
                    .as_str()
                    .unwrap()
                    .contains("not the GPU–NIC pairs the audit judges")
                && f["summary"].as_str().unwrap().contains("mlx5_3")),
        "{j:#}"
    );
}

#[test]
fn builtin_profiles_on_matching_layouts() {
    // dgx-a100 profile on the synthesized DGX A100: no profile differences.
    let t = load(&layouts::dgx_a100(), false);
    let opts = AuditOptions {
        profile: audit::profile::Profile::builtin("dgx-a100"),
        evidence: None,
        ..Default::default()
    };
    let r = audit::run(&t, &opts);
    let d: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.id == CheckId::ProfileDiff)
        .collect();
    assert!(d.is_empty(), "{d:#?}");
    // rail-optimised on the misplaced NIC: rail 3 moved.
    let t = load(&layouts::misplaced_nic(), false);
    let opts = AuditOptions {
        profile: audit::profile::Profile::builtin("rail-optimised"),
        evidence: None,
        ..Default::default()
    };
    let r = audit::run(&t, &opts);
    assert!(
        r.findings
            .iter()
            .any(|f| f.id == CheckId::ProfileDiff && f.summary.starts_with("moved: rail-3 NIC")),
        "{:#?}",
        r.findings
    );
}

#[test]
fn toml_profile_pins_rails_by_bus() {
    let buses: Vec<String> = (0..8)
        .map(|i| format!("\"0x{:02x}\"", hgx_nic(i).bus))
        .collect();
    let text = format!(
        "name = \"hgx-lab\"\n[gpus]\ncount = 8\nnuma = [0, 0, 0, 0, 1, 1, 1, 1]\npcie_gen = 5\npcie_width = 16\n[nics]\nbuses = [{}]\naux_max = 0\n",
        buses.join(", ")
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hgx-lab.toml");
    std::fs::write(&file, text).unwrap();
    let profile = audit::profile::Profile::resolve(file.to_str().unwrap()).unwrap();
    let opts = AuditOptions {
        profile: Some(profile),
        evidence: None,
        ..Default::default()
    };
    let clean = audit::run(&load(&layouts::hgx_h100(), false), &opts);
    let d: Vec<&Finding> = clean
        .findings
        .iter()
        .filter(|f| f.id == CheckId::ProfileDiff)
        .collect();
    assert!(d.is_empty(), "{d:#?}");
    assert_eq!(clean.profile.as_deref(), Some("hgx-lab"));
    let moved = audit::run(&load(&layouts::misplaced_nic(), false), &opts);
    let d: Vec<&Finding> = moved
        .findings
        .iter()
        .filter(|f| f.id == CheckId::ProfileDiff)
        .collect();
    assert!(
        d.iter().any(|f| f.subject == Subject::Rail(3)
            && f.summary.starts_with("missing: compute NIC of rail 3")
            && f.severity == Severity::Error),
        "{d:#?}"
    );
    assert!(
        d.iter()
            .any(|f| f.summary.starts_with("extra RDMA NIC") && f.summary.contains("mlx5_3")),
        "{d:#?}"
    );
}

/// The audit's one GPUDirect RDMA verdict (`Report::gdr_ready`, read by the nfd and prom
/// exports): true only when every GPU has a NIC within PXB and nothing breaks GPUDirect RDMA,
/// unknown when the mechanism is not established, false otherwise, with the reasons.
#[test]
fn gdr_readiness_verdicts() {
    use audit::gdr::PeerMemory;
    let hgx = audit(&layouts::hgx_h100());
    assert_eq!(
        hgx.gdr_ready(),
        GdrReadiness {
            ready: Some(true),
            reasons: vec![]
        }
    );
    assert_eq!(audit(&layouts::dgx_a100()).gdr_ready().ready, Some(true));
    // The same devices inside a VM whose PCIe tree keeps the switches: still PIX.
    assert_eq!(
        audit(&layouts::as_vm(layouts::hgx_h100()))
            .gdr_ready()
            .ready,
        Some(true)
    );
    // Non-root: ACS and MPS unknown, but neither is needed for NCCL to use GDR.
    let nonroot = audit::run(&load(&layouts::hgx_h100(), true), &AuditOptions::default());
    assert!(nonroot.counts.unknown > 0);
    assert_eq!(nonroot.gdr_ready().ready, Some(true));

    // vm-flat: every pair PHB, so NCCL stages every GPU through host memory, although the
    // audit passes (path findings are warnings in a VM).
    let vm = audit(&layouts::vm_flat());
    assert_eq!(vm.verdict, "pass");
    let g = vm.gdr_ready();
    assert_eq!(g.ready, Some(false));
    assert_eq!(g.reasons.len(), vm.pairs.len(), "{g:?}");
    assert!(g.reasons.iter().all(|r| matches!(
        r,
        GdrReason::NoGdr { label, remedy, .. } if *label == PathLabel(Label::Phb) && *remedy == audit::RemedyClass::Design
    )));

    let mis = audit(&layouts::misplaced_nic()).gdr_ready();
    assert_eq!(mis.ready, Some(false));
    assert!(mis.reasons.iter().any(|r| matches!(
        r,
        GdrReason::NoGdr { gpu, remedy, .. } if *gpu == hgx_gpu(3) && *remedy == audit::RemedyClass::Misplaced
    )));

    let acs = audit(&layouts::with_acs_redirect(layouts::hgx_h100(), hgx_nic_port(2)).unwrap());
    assert_eq!(
        acs.gdr_ready().reasons,
        vec![GdrReason::Broken {
            check: CheckId::AcsRedirect,
            subject: Subject::Device(hgx_nic_port(2)),
        }]
    );
    let iommu = audit(&layouts::with_iommu_type(layouts::hgx_h100(), hgx_gpu(2), "DMA").unwrap());
    assert_eq!(iommu.gdr_ready().ready, Some(false));
    // A narrow link costs bandwidth, not GPUDirect RDMA.
    let narrow = audit(&layouts::with_link_width(layouts::hgx_h100(), hgx_nic(4), 8).unwrap());
    assert_eq!(narrow.verdict, "fail");
    assert_eq!(narrow.gdr_ready().ready, Some(true));

    // Proprietary driver without peermem: no mechanism at all.
    let none = audit(&layouts::without_peer_module(layouts::dgx_a100())).gdr_ready();
    assert_eq!(none.ready, Some(false));
    assert_eq!(
        none.reasons,
        vec![GdrReason::Mechanism(PeerMemory::Missing)]
    );
    // Open kernel module without peermem: dma-buf may serve, not a fact either way.
    let dmabuf = audit(&layouts::without_peer_module(layouts::hgx_h100())).gdr_ready();
    assert_eq!(dmabuf.ready, None);
    assert_eq!(
        dmabuf.reasons,
        vec![GdrReason::Mechanism(PeerMemory::DmaBufOnly)]
    );
    // ... but a far pair is false whatever the mechanism.
    let both = audit(&layouts::without_peer_module(layouts::vm_flat())).gdr_ready();
    assert_eq!(both.ready, Some(false));
}

/// hwloc and NCCL inputs without an RDMA NIC (or without a GPU) are not GPUDirect RDMA ready.
#[test]
fn no_gpu_nic_pair_is_not_ready() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for f in [
        "hwloc/nvidiaDGX2.xml",
        "hwloc/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2",
    ] {
        let t = sources::load(Some(&root.join(f)), &LoadOptions::default()).unwrap();
        let r = audit::run(&t, &AuditOptions::default());
        assert!(r.pairs.is_empty(), "{f}");
        assert_eq!(
            r.gdr_ready(),
            GdrReadiness {
                ready: Some(false),
                reasons: vec![GdrReason::NoPair]
            },
            "{f}"
        );
    }
}

// GPUDirect Storage: the GDS layout's four faults against their clean twin.

/// The `gds-*` findings that are not info (what a fault adds).
fn gds_faults(r: &Report) -> Vec<(CheckId, Severity, String)> {
    r.findings
        .iter()
        .filter(|f| f.id.as_str().starts_with("gds-") && f.severity != Severity::Info)
        .map(|f| (f.id, f.severity, f.subject.to_string()))
        .collect()
}

// ---- AMD Instinct (issue 34): each AMD check's fault against the clean MI300X / MI300A twin.

fn amd(spec: Spec, faults: &[&str]) -> Report {
    let mut s = spec;
    for f in faults {
        s = layouts::apply_fault(s, f).unwrap();
    }
    audit(&s)
}

fn ids(r: &Report, sev: Severity) -> Vec<(CheckId, String)> {
    r.findings
        .iter()
        .filter(|f| f.severity == sev)
        .map(|f| (f.id, f.subject.to_string()))
        .collect()
}

#[test]
fn gds_clean_twin_passes_and_says_what_it_read() {
    let r = audit(&layouts::hgx_h100_gds());
    assert_eq!(r.verdict, "pass", "{:#?}", errors(&r));
    assert!(gds_faults(&r).is_empty(), "{:#?}", gds_faults(&r));
    let k = find(&r, CheckId::GdsKernel, "node");
    assert_eq!(ev(k, "/sys/module/nvidia_fs/version"), "2.22.3");
    let c = find(&r, CheckId::GdsConfig, "node");
    assert_eq!(
        ev(c, "/etc/cufile.json"),
        "properties.allow_compat_mode: true"
    );
    // Both data volumes are found on their own socket's four drives.
    let mounts: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.id == CheckId::GdsMounts)
        .map(|f| f.summary.as_str())
        .collect();
    assert_eq!(mounts.len(), 2, "{mounts:?}");
    assert!(
        mounts[0].starts_with("/raid0 (xfs) on NVMe 0000:1a:00.0 (nvme0)"),
        "{mounts:?}"
    );
    // The layout without GDS (hgx-h100) says so plainly, once, and passes.
    let plain = audit(&layouts::hgx_h100());
    let g: Vec<&Finding> = plain
        .findings
        .iter()
        .filter(|f| f.id.as_str().starts_with("gds-"))
        .collect();
    assert_eq!(g.len(), 1, "{g:#?}");
    assert_eq!(g[0].severity, Severity::Info);
    assert!(
        g[0].summary
            .starts_with("no GPUDirect Storage on this node"),
        "{}",
        g[0].summary
    );
}

#[test]
fn gds_nvidia_fs_missing() {
    // With NVIDIA's default cufile.json compat mode is allowed: every read silently falls back
    // (a warning); with compat mode disallowed every read fails (an error).
    let spec = layouts::apply_fault(layouts::hgx_h100_gds(), "no-nvidia-fs").unwrap();
    let r = audit(&spec);
    assert_eq!(
        gds_faults(&r),
        [(CheckId::GdsKernel, Severity::Warning, "node".to_string())]
    );
    let mut strict = spec.clone();
    let s = strict.node.storage.as_mut().unwrap();
    let json = s.cufile_json.as_mut().unwrap();
    *json = json.replace(
        "\"allow_compat_mode\": true",
        "\"allow_compat_mode\": false",
    );
    assert_eq!(
        gds_faults(&audit(&strict)),
        [(CheckId::GdsKernel, Severity::Error, "node".to_string())]
    );
    let f = find(&r, CheckId::GdsKernel, "node");
    assert_eq!(ev(f, "/sys/module/nvidia_fs"), "absent");
    assert_eq!(
        ev(f, "/etc/cufile.json"),
        "properties.use_pci_p2pdma absent (default false)"
    );
}

#[test]
fn gds_compat_mode_forced() {
    let spec = layouts::apply_fault(layouts::hgx_h100_gds(), "compat-forced").unwrap();
    let r = audit(&spec);
    assert_eq!(
        gds_faults(&r),
        [(CheckId::GdsConfig, Severity::Error, "node".to_string())]
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.id == CheckId::GdsConfig && f.severity == Severity::Error)
        .unwrap();
    assert_eq!(
        ev(f, "/etc/cufile.json"),
        "properties.force_compat_mode: true"
    );
}

#[test]
fn gds_acs_redirect_on_a_drives_switch_port() {
    let port = layouts::gds_drive_port(0);
    let spec =
        layouts::apply_fault(layouts::hgx_h100_gds(), &format!("acs-redirect={port}")).unwrap();
    let r = audit(&spec);
    assert_eq!(
        gds_faults(&r),
        [(CheckId::GdsPath, Severity::Error, port.to_string())]
    );
    let f = find(&r, CheckId::GdsPath, &port.to_string());
    assert!(ev(f, &p(port, "config")).contains("ReqRedir"), "{f:#?}");
    assert!(f.summary.contains("0000:1a:00.0 (nvme0)"), "{}", f.summary);
    // The GPU–NIC check does not see it: the drive's port is on no GPU–NIC path.
    assert!(r.findings.iter().all(|f| f.id != CheckId::AcsRedirect));
}

#[test]
fn gds_drive_on_the_far_socket() {
    let drive = layouts::gds_drive(0);
    let spec = layouts::apply_fault(layouts::hgx_h100_gds(), &format!("move={drive},1")).unwrap();
    let r = audit(&spec);
    let got = gds_faults(&r);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(
        got.iter()
            .all(|g| g.0 == CheckId::GdsDrivePlacement && g.1 == Severity::Warning)
    );
    let span = find(&r, CheckId::GdsDrivePlacement, "node");
    assert!(
        span.summary
            .starts_with("/raid0 spans NVMe drives on NUMA nodes [0, 1]"),
        "{}",
        span.summary
    );
    let moved = r
        .findings
        .iter()
        .find(|f| f.id == CheckId::GdsDrivePlacement && f.subject != Subject::Node)
        .unwrap();
    let b = moved.subject.bdf().unwrap();
    assert_eq!(ev(moved, &p(b, "numa_node")), "1");
}

#[test]
fn amd_clean_twins() {
    // MI300X: every GPU paired PXB with its Thor2 under the Broadcom switch (not the per-GPU
    // 1022:1500/1002:1501 bridges), GDR ready, nothing wrong or unknown.
    let r = amd(layouts::mi300x_8gpu(), &[]);
    assert_eq!(r.verdict, "pass", "{:#?}", errors(&r));
    assert_eq!(r.counts.warning + r.counts.unknown, 0, "{:#?}", r.findings);
    for i in 0..8 {
        let p = r
            .pairs
            .iter()
            .find(|p| p.gpu == layouts::mi300x_gpu(i))
            .unwrap();
        assert_eq!(p.nic, layouts::mi300x_nic(i), "GPU{i}");
        assert_eq!(p.label, PathLabel(Label::Pxb));
    }
    assert_eq!(r.gdr_ready().ready, Some(true), "{:?}", r.gdr_ready());
    find(&r, CheckId::AmdPeerMemory, "node");
    // MI300A: each APU paired with the NIC of its own NUMA node (PHB, no switch), no
    // gpu-nic-path finding; RCCL's default level refuses PHB, which amd-apu-gdr-level says.
    let r = amd(layouts::mi300a_4apu(), &[]);
    assert_eq!(r.verdict, "pass", "{:#?}", errors(&r));
    assert!(
        !r.findings
            .iter()
            .any(|f| f.id == CheckId::GpuNicPath && f.severity != Severity::Info)
    );
    for i in 0..4 {
        let p = r
            .pairs
            .iter()
            .find(|p| p.gpu == layouts::mi300a_apu(i))
            .unwrap();
        assert_eq!(
            (p.nic, p.label),
            (layouts::mi300a_nic(i), PathLabel(Label::Phb))
        );
        let f = find(
            &r,
            CheckId::AmdApuGdrLevel,
            &layouts::mi300a_apu(i).to_string(),
        );
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.remedy.contains("NCCL_NET_GDR_LEVEL=PHB"), "{}", f.remedy);
    }
}

#[test]
fn amd_faults_each_found_by_its_check() {
    let g = |i| layouts::mi300x_gpu(i).to_string();
    let clean = amd(layouts::mi300x_8gpu(), &[]);
    let r = amd(
        layouts::mi300x_8gpu(),
        &[
            &format!("small-bar={}", g(0)),
            &format!("no-atomics={}", g(1)),
            &format!("xgmi-down={},{}", g(2), g(3)),
            "no-amdkfd-peer",
            &format!("acs-redirect={}", layouts::mi300x_switch(4).1),
            &format!("iommu-type={},DMA", g(5)),
        ],
    );
    let errs = ids(&r, Severity::Error);
    for want in [
        (CheckId::AmdLargeBar, g(0)),
        (CheckId::AmdXgmi, g(2)),
        (CheckId::AmdXgmi, g(3)),
        (CheckId::AmdPeerMemory, "node".to_string()),
        (
            CheckId::AcsRedirect,
            layouts::mi300x_switch(4).1.to_string(),
        ),
        (CheckId::IommuTranslation, g(5)),
    ] {
        assert!(errs.contains(&want), "{want:?} in {errs:#?}");
        assert!(!ids(&clean, Severity::Error).contains(&want));
    }
    assert!(ids(&r, Severity::Warning).contains(&(CheckId::AmdAtomics, g(1))));
    let f = find(&r, CheckId::AmdLargeBar, &g(0));
    assert!(f.summary.contains("256 MiB of 192 GiB"), "{}", f.summary);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.path.ends_with("io_links/0/properties"))
    );
    let f = find(&r, CheckId::AmdAtomics, &g(1));
    assert!(
        f.evidence[0].value.contains("0x8000000d"),
        "{:?}",
        f.evidence
    );
    assert!(
        f.evidence[0]
            .path
            .starts_with("/sys/class/kfd/kfd/topology/nodes/")
    );
    let f = find(&r, CheckId::AmdXgmi, &g(2));
    assert!(
        f.summary.contains(&format!("no xGMI link to {}", g(3))),
        "{}",
        f.summary
    );
    assert_eq!(r.gdr_ready().ready, Some(false));
}
