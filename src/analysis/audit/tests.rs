//! Whole-audit tests: one fault per test, each against the clean twin built by
//! [`super::testkit`]. Each checks that the finding names the right device and evidence path,
//! and the clean twin yields no error.

use super::testkit::*;
use super::*;
use crate::analysis::classify::Label;
use crate::model::device::Device;
use crate::model::pci_config::PortType;

fn audit(t: &Topology) -> Report {
    run(t, &AuditOptions::default())
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

#[test]
fn clean_twin_passes_without_errors_or_unknowns() {
    let r = audit(&clean());
    assert_eq!(r.verdict, "pass", "{:#?}", r.findings);
    assert!(errors(&r).is_empty());
    assert_eq!(r.counts.unknown, 0, "{:#?}", r.findings);
    assert_eq!(r.counts.warning, 0, "{:#?}", r.findings);
    assert_eq!(r.pairs.len(), 4);
    for p in &r.pairs {
        assert_eq!(p.label, PathLabel(Label::Pix), "{p:?}");
        // Each GPU gets the NIC behind its own switch.
        assert_eq!(p.nic.bus, p.gpu.bus + 1);
    }
}

/// Moves NIC mlx5_0 (0000:14:00.0, behind GPU 0000:13:00.0's switch on socket 0) to a root
/// port of socket 1.
fn nic_on_other_socket() -> Vec<Device> {
    let mut d: Vec<Device> = hgx(4)
        .into_iter()
        .filter(|x| x.bdf != b("0000:14:00.0"))
        .collect();
    d.push(device(
        "0000:c0:01.0",
        None,
        "pci0000:c0",
        PortType::RootPort,
        0x060400,
        0x8086,
        1,
    ));
    let mut nic = hgx(4)
        .into_iter()
        .find(|x| x.bdf == b("0000:14:00.0"))
        .unwrap();
    nic.bdf = b("0000:c1:00.0");
    nic.parent = Some(b("0000:c0:01.0"));
    nic.host_bridge = "pci0000:c0".into();
    nic.numa_node = Some(1);
    nic.slot = Some("7".into());
    d.push(nic);
    d
}

#[test]
fn misplaced_nic_names_adapter_location_and_target() {
    let t = topo(nic_on_other_socket(), machine());
    let r = audit(&t);
    assert_eq!(r.verdict, "fail");
    let f = find(&r, CheckId::GpuNicPath, "0000:13:00.0");
    assert_eq!(f.severity, Severity::Error);
    // The one pairing gives the GPU the nearest NIC it can get (shared, NODE); the card to
    // move is the one no GPU can use.
    assert!(
        f.summary.contains("mlx5_1") && f.summary.contains("NODE"),
        "{}",
        f.summary
    );
    // Where the stray card is now: slot, root port, NUMA node.
    for s in ["mlx5_0", "slot 7", "root port 0000:c0:01.0", "NUMA node 1"] {
        assert!(f.remedy.contains(s), "remedy lacks {s:?}: {}", f.remedy);
    }
    // Where it belongs: the GPU's switch and the free downstream ports there.
    for s in [
        "switch sw0",
        "upstream port 0000:11:00.0",
        "0000:12:01.0",
        "0000:12:02.0",
    ] {
        assert!(f.remedy.contains(s), "remedy lacks {s:?}: {}", f.remedy);
    }
    assert!(
        f.evidence
            .iter()
            .any(|e| e.path == "/sys/bus/pci/devices/0000:c1:00.0")
    );
    // The NIC itself: not usable at PIX/PXB by any GPU and unpaired while a GPU lacks one →
    // warning.
    let n = find(&r, CheckId::GpuNicPath, "mlx5_0");
    assert_eq!(n.severity, Severity::Warning);
    // Only that GPU fails.
    assert_eq!(errors(&r).len(), 1, "{:#?}", errors(&r));
}

#[test]
fn acs_redirect_on_one_downstream_port() {
    let mut d = hgx(4);
    edit(&mut d, "0000:32:01.0", |p| {
        p.config.as_mut().unwrap().acs.as_mut().unwrap().control = 0x1d
    });
    let r = audit(&topo(d, machine()));
    let f = find(&r, CheckId::AcsRedirect, "0000:32:01.0");
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(
        f.evidence[0].path,
        "/sys/bus/pci/devices/0000:32:01.0/config"
    );
    assert!(f.evidence[0].value.contains("0x001d") && f.evidence[0].value.contains("ReqRedir"));
    assert_eq!(f.pairs.len(), 1);
    assert_eq!(f.pairs[0].gpu, b("0000:33:00.0"));
    assert_eq!(f.pairs[0].rdma.as_deref(), Some("mlx5_1"));
    assert!(f.remedy.contains("pci=disable_acs_redir=0000:32:01.0"));
    assert_eq!(errors(&r).len(), 1);
    // SV alone (the clean twin) is not a redirect.
    assert!(
        !audit(&clean())
            .findings
            .iter()
            .any(|f| f.id == CheckId::AcsRedirect)
    );
}

#[test]
fn acs_redirect_off_path_is_ignored() {
    // The free downstream port is on no GPU–NIC path.
    let mut d = hgx(4);
    edit(&mut d, "0000:12:02.0", |p| {
        p.config.as_mut().unwrap().acs.as_mut().unwrap().control = 0x1d
    });
    assert!(errors(&audit(&topo(d, machine()))).is_empty());
}

#[test]
fn one_hop_trained_to_x8() {
    let mut d = hgx(4);
    // Root port 0000:50:01.0 ↔ switch upstream port 0000:51:00.0 at x8.
    edit(&mut d, "0000:51:00.0", |u| {
        u.link.as_mut().unwrap().current_width = Some(8)
    });
    edit(&mut d, "0000:50:01.0", |u| {
        u.link.as_mut().unwrap().current_width = Some(8)
    });
    let r = audit(&topo(d, machine()));
    let f = find(&r, CheckId::LinkDegraded, "0000:51:00.0");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.summary.contains("x8") && f.summary.contains("x16"),
        "{}",
        f.summary
    );
    assert_eq!(
        f.evidence[0].path,
        "/sys/bus/pci/devices/0000:51:00.0/current_link_width"
    );
    assert_eq!(f.evidence[0].value, "8");
    assert_eq!(errors(&r).len(), 1, "{:#?}", errors(&r));
}

#[test]
fn idle_gpu_speed_is_not_an_error_but_nic_speed_is() {
    let mut d = hgx(4);
    edit(&mut d, "0000:13:00.0", |g| {
        g.link.as_mut().unwrap().current_gts = Some(2.5)
    });
    let r = audit(&topo(d.clone(), machine()));
    assert!(errors(&r).is_empty(), "{:#?}", errors(&r));
    assert_eq!(
        find(&r, CheckId::LinkDegraded, "0000:13:00.0").severity,
        Severity::Info
    );
    edit(&mut d, "0000:14:00.0", |n| {
        n.link.as_mut().unwrap().current_gts = Some(16.0)
    });
    let r = audit(&topo(d, machine()));
    assert_eq!(
        find(&r, CheckId::LinkDegraded, "0000:14:00.0").severity,
        Severity::Error
    );
}

#[test]
fn aer_correctable_and_fatal() {
    let mut d = hgx(4);
    edit(&mut d, "0000:14:00.0", |n| {
        n.aer_correctable = crate::parse::aer::parse(b"RxErr 0\nBadTLP 3\nTOTAL_ERR_COR 3\n").ok();
    });
    edit(&mut d, "0000:33:00.0", |g| {
        g.aer_fatal =
            crate::parse::aer::parse(b"Undefined 0\nSurpriseDown 1\nTOTAL_ERR_FATAL 1\n").ok();
    });
    let r = audit(&topo(d, machine()));
    let c = find(&r, CheckId::AerErrors, "0000:14:00.0");
    assert_eq!(c.severity, Severity::Warning);
    assert!(c.summary.contains("BadTLP=3"), "{}", c.summary);
    assert_eq!(
        c.evidence[0].path,
        "/sys/bus/pci/devices/0000:14:00.0/aer_dev_correctable"
    );
    let f = find(&r, CheckId::AerErrors, "0000:33:00.0");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.summary.contains("SurpriseDown=1"));
    assert_eq!(
        f.evidence[0].path,
        "/sys/bus/pci/devices/0000:33:00.0/aer_dev_fatal"
    );
    assert_eq!(errors(&r).len(), 1);
}

#[test]
fn iommu_dma_mode_fails_the_audit() {
    let mut d = hgx(4);
    edit(&mut d, "0000:53:00.0", |g| {
        g.iommu_group_type = Some("DMA".into())
    });
    let r = audit(&topo(d, machine()));
    assert_eq!(r.verdict, "fail");
    let f = find(&r, CheckId::IommuTranslation, "0000:53:00.0");
    assert_eq!(f.evidence[0].path, "/sys/kernel/iommu_groups/83/type");
    assert!(
        f.evidence
            .iter()
            .any(|e| e.path == "/proc/cmdline" && e.value.contains("iommu=pt"))
    );
}

#[test]
fn peer_module_absent_fails_the_audit() {
    let mut m = machine();
    m.nvidia_peermem_version = None;
    m.memory_peers.clear();
    m.nvidia_driver =
        Some("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Release Build".into());
    let r = audit(&topo(hgx(4), m));
    assert_eq!(r.verdict, "fail");
    let f = find(&r, CheckId::GdrPeerModule, "node");
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(errors(&r).len(), 1);
}

/// A VM: every device on its own root port of the guest's single root bus, hypervisor flag.
fn vm() -> Topology {
    let mut v = Vec::new();
    for i in 0..4u32 {
        let rp = format!("0000:00:{:02x}.0", 2 + i);
        let bus = 1 + i;
        v.push(device(
            &rp,
            None,
            "pci0000:00",
            PortType::RootPort,
            0x060400,
            0x1b36,
            0,
        ));
        let ep = format!("0000:{bus:02x}:00.0");
        let mut x = if i % 2 == 0 {
            let mut g = hgx(1)
                .into_iter()
                .find(|d| d.kind == crate::model::DeviceKind::Gpu)
                .unwrap();
            g.bdf = b(&ep);
            g
        } else {
            let mut n = hgx(1)
                .into_iter()
                .find(|d| d.kind == crate::model::DeviceKind::Nic)
                .unwrap();
            n.bdf = b(&ep);
            n.os_devices[0].name = format!("mlx5_{}", i / 2);
            n
        };
        x.parent = Some(b(&rp));
        x.host_bridge = "pci0000:00".into();
        x.numa_node = None;
        v.push(x);
    }
    let mut m = machine();
    m.sockets = Some(1);
    m.hypervisor
        .push(("proc/cpuinfo".into(), "flags: hypervisor".into()));
    m.hypervisor
        .push(("sys/class/dmi/id/sys_vendor".into(), "QEMU".into()));
    let mut t = topo(v, m);
    t.numa_nodes.truncate(1);
    t.rebuild();
    t
}

#[test]
fn vm_is_advisory_not_a_failure() {
    let r = audit(&vm());
    assert_eq!(r.verdict, "pass", "{:#?}", errors(&r));
    let v = find(&r, CheckId::Virtualized, "node");
    assert_eq!(v.severity, Severity::Warning);
    assert!(
        v.evidence
            .iter()
            .any(|e| e.path == "/sys/class/dmi/id/sys_vendor" && e.value == "QEMU")
    );
    // PHB pairs on the synthetic root bus: a warning, not an error.
    let g = find(&r, CheckId::GpuNicPath, "0000:01:00.0");
    assert_eq!(g.severity, Severity::Warning);
    assert!(g.summary.contains("PHB"));
}

#[test]
fn unprivileged_config_gives_unknown_never_pass() {
    let mut d = hgx(4);
    // The fault is there, but a non-root reader cannot see it.
    edit(&mut d, "0000:32:01.0", |p| {
        p.config.as_mut().unwrap().acs.as_mut().unwrap().control = 0x1d
    });
    unprivileged(&mut d);
    let t = topo(d, machine());
    let r = audit(&t);
    let acs = r
        .findings
        .iter()
        .find(|f| f.id == CheckId::AcsRedirect)
        .expect("acs finding");
    assert_eq!(acs.severity, Severity::Unknown);
    assert!(acs.summary.contains("64 of 4096 bytes"), "{}", acs.summary);
    assert!(
        acs.evidence
            .iter()
            .any(|e| e.path == "/sys/bus/pci/devices/0000:32:01.0/config")
    );
    let mps = r
        .findings
        .iter()
        .find(|f| f.id == CheckId::MpsMrrs)
        .expect("mps finding");
    assert_eq!(mps.severity, Severity::Unknown);
    assert!(r.counts.unknown >= 2);
    assert!(errors(&r).is_empty());
}

#[test]
fn mps_mismatch_and_low_mrrs() {
    let mut d = hgx(4);
    edit(&mut d, "0000:33:00.0", |g| {
        g.config.as_mut().unwrap().pcie.as_mut().unwrap().mps = 128
    });
    edit(&mut d, "0000:54:00.0", |n| {
        n.config.as_mut().unwrap().pcie.as_mut().unwrap().mrrs = 256
    });
    let r = audit(&topo(d, machine()));
    let m = find(&r, CheckId::MpsMrrs, "0000:33:00.0");
    assert_eq!(m.severity, Severity::Warning);
    assert!(
        m.evidence
            .iter()
            .any(|e| e.path.ends_with("0000:33:00.0/config") && e.value.contains("128"))
    );
    let q = find(&r, CheckId::MpsMrrs, "0000:54:00.0");
    assert!(q.summary.contains("256"));
    assert!(errors(&r).is_empty());
}

#[test]
fn mps_or_mrrs_the_input_did_not_show_is_unknown_not_a_warning() {
    // lspci text cut before DevCtl's sizes leaves them 0, which DevCtl cannot encode.
    let mut d = hgx(4);
    edit(&mut d, "0000:33:00.0", |g| {
        g.config.as_mut().unwrap().pcie.as_mut().unwrap().mps = 0
    });
    edit(&mut d, "0000:54:00.0", |n| {
        n.config.as_mut().unwrap().pcie.as_mut().unwrap().mrrs = 0
    });
    let r = audit(&topo(d, machine()));
    let m: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == CheckId::MpsMrrs)
        .collect();
    assert!(m.iter().all(|f| f.severity == Severity::Unknown), "{m:#?}");
    assert!(m.iter().any(|f| f.summary.contains("not in the input")));
}

#[test]
fn small_bar1_warns() {
    let mut d = hgx(4);
    edit(&mut d, "0000:13:00.0", |g| g.bars[1].size = 256 << 20);
    let r = audit(&topo(d, machine()));
    let f = find(&r, CheckId::Bar1Small, "0000:13:00.0");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.evidence[0].path,
        "/sys/bus/pci/devices/0000:13:00.0/resource"
    );
}

#[test]
fn probe_confirmed_downgrades_and_bad_path_raises() {
    let mut d = hgx(4);
    edit(&mut d, "0000:32:01.0", |p| {
        p.config.as_mut().unwrap().acs.as_mut().unwrap().control = 0x1d
    });
    let t = topo(d, machine());
    let ev = crate::analysis::probe_report::measured::ProbeEvidence::parse(
        "probe.json",
        r#"{"schema":"peerpath.probe/2","results":[
            {"gpu":{"bdf":"0000:33:00.0"},"nic":{"fabric":"verbs","rdma":"mlx5_1"},"memory":"cuda",
             "direction":"gpu_to_host","op":"read","message_bytes":65536,"verdict":"confirmed"},
            {"gpu":{"bdf":"0000:73:00.0"},"nic":{"fabric":"verbs","bdf":"0000:74:00.0"},"memory":"cuda",
             "direction":"gpu_to_host","op":"read","message_bytes":65536,"verdict":"bad_path","reason":"ratio 0.41"}]}"#,
    )
    .unwrap();
    let r = run(
        &t,
        &AuditOptions {
            profile: None,
            evidence: Some(ev),
            ..Default::default()
        },
    );
    let acs = find(&r, CheckId::AcsRedirect, "0000:32:01.0");
    assert_eq!(acs.severity, Severity::Warning);
    assert!(acs.measured.as_deref().unwrap().contains("confirmed"));
    let bad = find(&r, CheckId::GpuNicPath, "0000:73:00.0");
    assert_eq!(bad.severity, Severity::Error);
    assert!(
        bad.measured.as_deref().unwrap().contains("bad_path")
            && bad.measured.as_deref().unwrap().contains("PIX")
    );
    assert_eq!(r.verdict, "fail");
}

#[test]
fn profile_diff_reports_missing_extra_moved() {
    // rail-optimised on the misplaced-NIC node: rail 0's NIC is moved.
    let t = topo(nic_on_other_socket(), machine());
    let p = profile::Profile::builtin("rail-optimised").unwrap();
    let r = run(
        &t,
        &AuditOptions {
            profile: Some(p),
            evidence: None,
            ..Default::default()
        },
    );
    let moved: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == CheckId::ProfileDiff)
        .collect();
    assert!(
        moved
            .iter()
            .any(|f| f.summary.starts_with("moved") && f.subject.rdma() == Some("mlx5_0")),
        "{moved:#?}"
    );
    // The clean twin matches rail-optimised exactly.
    let r = run(
        &clean(),
        &AuditOptions {
            profile: profile::Profile::builtin("rail-optimised"),
            evidence: None,
            ..Default::default()
        },
    );
    assert!(
        !r.findings.iter().any(|f| f.id == CheckId::ProfileDiff),
        "{:#?}",
        r.findings
    );
    // dgx-h100 on a 4-GPU node: GPUs missing, rails missing (buses differ).
    let r = run(
        &clean(),
        &AuditOptions {
            profile: profile::Profile::builtin("dgx-h100"),
            evidence: None,
            ..Default::default()
        },
    );
    assert!(
        r.findings
            .iter()
            .any(|f| f.id == CheckId::ProfileDiff && f.summary.starts_with("missing GPU"))
    );
    assert!(
        r.findings
            .iter()
            .any(|f| f.id == CheckId::ProfileDiff && f.subject == Subject::Rail(0))
    );
    // A TOML profile naming this node's buses: extra NIC beyond aux_max.
    let p = profile::Profile::from_toml(
        "t.toml",
        "name = \"lab\"\n[gpus]\ncount = 4\nnuma = [0, 0, 1, 1]\n[nics]\none_per_gpu = false\nbuses = [\"0x14\", \"0x34\", \"0x54\"]\naux_max = 0\n",
    )
    .unwrap();
    let r = run(
        &clean(),
        &AuditOptions {
            profile: Some(p),
            evidence: None,
            ..Default::default()
        },
    );
    let pd: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == CheckId::ProfileDiff)
        .collect();
    assert_eq!(pd.len(), 1, "{pd:#?}");
    assert!(pd[0].summary.starts_with("extra RDMA NIC") && pd[0].summary.contains("mlx5_3"));
}

#[test]
fn json_shape() {
    let r = audit(&topo(nic_on_other_socket(), machine()));
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(v["schema"], "peerpath.audit/1");
    assert_eq!(v["verdict"], "fail");
    let f = &v["findings"][0];
    for k in ["id", "severity", "subject", "summary", "evidence", "remedy"] {
        assert!(f.get(k).is_some(), "missing {k}");
    }
    assert_eq!(f["severity"], "error");
    assert!(f["evidence"][0].get("path").is_some() && f["evidence"][0].get("value").is_some());
    // Typed ids, subjects and labels read back and write out byte-identical.
    let text = serde_json::to_string_pretty(&r).unwrap();
    let back: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
    assert_eq!(back.findings, r.findings);
    assert_eq!(back.pairs, r.pairs);
}

#[test]
fn fewer_nics_than_gpus_share_evenly_and_locally() {
    // Two GPUs and one NIC behind each switch: each NIC serves its own switch's two GPUs.
    let mut d = hgx(2);
    for base in [0x10u32, 0x30] {
        let port = format!("0000:{:02x}:02.0", base + 2);
        let mut g = d
            .iter()
            .find(|x| x.bdf == b(&format!("0000:{:02x}:00.0", base + 3)))
            .unwrap()
            .clone();
        g.bdf = b(&format!("0000:{:02x}:00.0", base + 5));
        g.parent = Some(b(&port));
        d.push(g);
    }
    let r = audit(&topo(d, machine()));
    assert_eq!(r.pairs.len(), 4);
    assert!(
        r.pairs.iter().all(|p| p.label == PathLabel(Label::Pix)),
        "{:#?}",
        r.pairs
    );
    for nic in ["0000:14:00.0", "0000:34:00.0"] {
        assert_eq!(r.pairs.iter().filter(|p| p.nic == b(nic)).count(), 2);
    }
    assert!(
        !r.findings.iter().any(|f| f.id == CheckId::GpuNicPath),
        "{:#?}",
        r.findings
    );
    assert!(errors(&r).is_empty(), "{:#?}", errors(&r));
}
