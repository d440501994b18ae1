//! `lspci` text as an input (issue 39): the published operator pastes in fixtures/bundles/
//! (copied from shared/reference/bundles/, `cases.json` states what each shows) give the facts
//! their cases state and "unknown" where the text cannot know; and a differential test: the
//! real `lspci -A linux-sysfs` prints `-tv`, `-vvv` and `-xxxx` from our synthesized trees
//! (clean and with faults), peerpath reads the text back, and the audit from the text equals
//! the audit from the tree for every check the text can show.

use peerpath::analysis::audit::{self, AuditOptions, CheckId, Severity, Subject};
use peerpath::analysis::classify::{Classifier, ClassifyOptions};
use peerpath::model::{Bdf, DeviceKind, Topology};
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{self, WriteOptions, layouts};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "lspci_text/differential.rs"]
mod differential;
use differential::{Form, ibdev2netdev, lspci, scratch, shown};

fn bundle(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/bundles")
        .join(name)
}

/// No PCI ID database: names are read back by the built-in tables only, the same on every
/// machine.
fn no_db() -> LoadOptions {
    LoadOptions {
        pci_ids: Some(PathBuf::from("/nonexistent/pci.ids")),
        ..LoadOptions::default()
    }
}

fn load(name: &str) -> Topology {
    sources::load(Some(&bundle(name)), &no_db()).unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

fn b(s: &str) -> Bdf {
    s.parse().unwrap()
}

fn cases() -> serde_json::Value {
    let text = std::fs::read_to_string(bundle("cases.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn case(name: &str) -> serde_json::Value {
    cases()
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["file"] == name)
        .unwrap_or_else(|| panic!("{name} not in cases.json"))
        .clone()
}

fn strings(v: &serde_json::Value) -> BTreeSet<Bdf> {
    v.as_array()
        .map(|a| a.iter().map(|s| b(s.as_str().unwrap())).collect())
        .unwrap_or_default()
}

fn of_kind(t: &Topology, k: DeviceKind) -> BTreeSet<Bdf> {
    t.devices
        .iter()
        .filter(|d| d.kind == k)
        .map(|d| d.bdf)
        .collect()
}

fn root_port(t: &Topology, mut x: Bdf) -> Option<Bdf> {
    while let Some(p) = t.device(&x)?.parent {
        x = p;
    }
    Some(x)
}

const ASUS: &str = "stelline-asus-esc8000a-e12-4x-rtx6000ada-2x-cx7.lspci-tv+vvv+topo.md";
const PUGET: &str = "stelline-puget-wrx90-2x-rtx6000ada-cx7.lspci-tv+vvv+topo.md";
const BUGREPORT: &str = "nvidia-bug-report-2017-4x1080ti-2xpex8747.EXCERPT.log";
const RCCL547: &str = "rccl-issue-547-4x-mi100-cx6-pmc-switch.lspci-tv+acs.EXCERPT.md";
const ROCM4793: &str = "rocm-issue-4793-2x-mi50-x11sra.lspci-vvv-nn.EXCERPT.md";
const HWLOC653: &str = "hwloc-issue-653-a100-sxm4-40gb.lspci-vvv-nn.EXCERPT.md";
const NVTRUST51: &str = "nvtrust-issue-51-h100-pcie.lspci-vvv.EXCERPT.md";
const L2FWD6: &str = "l2fwd-nv-issue-6-cx6dx.lspci-vv+ibstat.EXCERPT.md";

#[test]
fn stelline_pages_give_their_devices_tree_labels_and_idle_links() {
    let c = case(ASUS);
    let t = load(ASUS);
    let e = &c["expect"];
    assert_eq!(of_kind(&t, DeviceKind::Gpu), strings(&e["gpus"]));
    let nics = of_kind(&t, DeviceKind::Nic);
    for n in strings(&e["rdma_nics"]) {
        assert!(nics.contains(&n), "{n} is a NIC");
    }
    for (dev, port) in e["root_port_of"].as_object().unwrap() {
        assert_eq!(
            root_port(&t, b(dev)),
            Some(b(port.as_str().unwrap())),
            "root port of {dev}"
        );
        assert_eq!(
            t.device(&b(port.as_str().unwrap())).unwrap().kind,
            DeviceKind::RootPort
        );
    }
    // Labels, by GPU address order and the NICs mlx5_0..3 in address order.
    let cl = Classifier::new(&t, &ClassifyOptions::default());
    let gpus: Vec<Bdf> = strings(&e["gpus"]).into_iter().collect();
    let nics: Vec<Bdf> = strings(&e["rdma_nics"]).into_iter().collect();
    let name = |s: &str| -> Bdf {
        let (kind, i) = s.split_at(s.find(|c: char| c.is_ascii_digit()).unwrap());
        match kind {
            "GPU" => gpus[i.parse::<usize>().unwrap()],
            _ => nics[s.trim_start_matches("mlx5_").parse::<usize>().unwrap()],
        }
    };
    for key in ["gpu_nic_label", "gpu_gpu_label"] {
        for (pair, want) in e[key].as_object().unwrap() {
            let (a, z) = pair.split_once('-').unwrap();
            let (got, _) = cl.label_of(&name(a), &name(z)).unwrap();
            assert_eq!(got.to_string(), want.as_str().unwrap(), "{pair}");
        }
    }
    // Idle GPUs at 2.5GT/s x16 are no fault; the HighPoint x2→x1 is read as such.
    let r = audit::run(&t, &AuditOptions::default());
    let faults: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == CheckId::LinkDegraded && f.severity <= Severity::Warning)
        .collect();
    assert!(faults.is_empty(), "{faults:#?}");
    let idle = r
        .findings
        .iter()
        .find(|f| f.id == CheckId::LinkDegraded && f.severity == Severity::Info)
        .expect("idle GPUs");
    for g in &gpus {
        assert!(
            idle.evidence
                .iter()
                .any(|ev| ev.path.contains(&g.to_string())),
            "{g} idle: {idle:#?}"
        );
    }
    for o in e["other_link_findings"].as_array().unwrap() {
        let d = t.device(&b(o["bdf"].as_str().unwrap())).unwrap();
        let l = d.link.unwrap();
        assert_eq!((l.max_width, l.current_width), (Some(2), Some(1)));
    }
    // AER status bits of the CX7s; the evidence names the file and line.
    for bdf in e["aer"].as_object().unwrap().keys() {
        let f = r
            .findings
            .iter()
            .find(|f| f.id == CheckId::AerErrors && f.subject == Subject::Device(b(bdf)))
            .unwrap_or_else(|| panic!("AER on {bdf}"));
        assert!(f.summary.contains("AdvNonFatalErr"), "{}", f.summary);
        assert!(
            f.evidence[0]
                .path
                .starts_with(&format!("{}", bundle(ASUS).display()))
        );
        assert!(f.evidence[0].path.contains(" line "), "{:?}", f.evidence);
    }
    // The root ports are only in the tree: their ACS is unknown (not a pass), with the reason,
    // and the ACSCtl grep is counted without being placed.
    let acs = r
        .findings
        .iter()
        .find(|f| f.id == CheckId::AcsRedirect)
        .unwrap();
    assert_eq!(acs.severity, Severity::Unknown);
    assert!(
        acs.summary.contains("only in the `lspci -t` tree"),
        "{}",
        acs.summary
    );
    let w: Vec<&str> = t.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        w.iter()
            .any(|m| m.contains("`ACSCtl:` line(s)") && m.contains(": 0 redirect")),
        "{w:?}"
    );
    // mlx5_0..3 from the page's ibv_devinfo (matched in address order), every port DOWN on
    // Ethernet, as the page shows: the audit says so with the text's line.
    for (i, nic) in nics.iter().enumerate() {
        let d = t.device(nic).unwrap();
        let o = d
            .os_devices
            .iter()
            .find(|o| o.kind == peerpath::model::OsDeviceKind::Rdma)
            .unwrap();
        assert_eq!(o.name, format!("mlx5_{i}"));
        assert_eq!(o.ports[0].state.as_ref().unwrap().1, "DOWN");
        assert_eq!(o.ports[0].link_layer.as_deref(), Some("Ethernet"));
    }
    assert!(
        t.source
            .limitations
            .iter()
            .any(|l| l.contains("`ibv_devinfo` text"))
    );
    let down: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == CheckId::NicPortDown)
        .collect();
    assert_eq!(down.len(), 4, "{down:#?}");
    assert!(
        down[0].evidence[0].path.contains("`ibv_devinfo` line"),
        "{:?}",
        down[0].evidence
    );
    // Two NUMA nodes from numactl; the NICs on their GPUs' sockets.
    assert_eq!(t.numa_nodes.len(), 2);
    assert_eq!(t.device(&b("0000:81:00.0")).unwrap().numa_node, Some(1));

    // The Puget page: one NUMA node, so GPU–NIC is NODE, CX7 Rollover/Timeout read.
    let t = load(PUGET);
    assert_eq!(t.numa_nodes.len(), 1);
    let cl = Classifier::new(&t, &ClassifyOptions::default());
    let (l, _) = cl.label_of(&b("0000:c1:00.0"), &b("0000:21:00.0")).unwrap();
    assert_eq!(l.to_string(), "NODE");
    let (l, _) = cl.label_of(&b("0000:c1:00.0"), &b("0000:c2:00.0")).unwrap();
    assert_eq!(l.to_string(), "PHB");
    let aer = t
        .device(&b("0000:21:00.0"))
        .unwrap()
        .aer_correctable
        .clone()
        .unwrap();
    let names: Vec<&str> = aer.counters.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.iter().any(|n| n.starts_with("Rollover")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("Timeout")), "{names:?}");
}

#[test]
fn old_bug_report_reads_links_from_its_hex_dumps() {
    let t = load(BUGREPORT);
    let gpus = of_kind(&t, DeviceKind::Gpu);
    assert_eq!(gpus.len(), 4, "{gpus:?}");
    // Pairs share a PLX switch.
    let cl = Classifier::new(&t, &ClassifyOptions::default());
    let g: Vec<Bdf> = gpus.into_iter().collect();
    assert_eq!(cl.label_of(&g[0], &g[1]).unwrap().0.to_string(), "PIX");
    assert_eq!(cl.label_of(&g[2], &g[3]).unwrap().0.to_string(), "PIX");
    for gpu in &g {
        let d = t.device(gpu).unwrap();
        let c = d.config.as_ref().unwrap();
        assert_eq!(c.len, 256, "-xxx dumps 256 bytes");
        assert_eq!(
            d.link.unwrap().current_width,
            Some(16),
            "x16 from the hex dump"
        );
        assert_eq!(d.vendor_id, Some(0x10de));
    }
    // No extended config space: ACS unknown with the reason, never a pass.
    let r = audit::run(&t, &AuditOptions::default());
    for f in r.findings.iter().filter(|f| f.id == CheckId::AcsRedirect) {
        assert_eq!(f.severity, Severity::Unknown);
    }
    assert!(
        t.devices
            .iter()
            .filter_map(|d| d.config_note.as_deref())
            .any(|n| n.contains("-xxx")),
        "the 256-byte dump is named"
    );
    // nvidia-smi -q names the GPUs (the database is not read here) and its GPU Link Info
    // agrees with the hex dumps (Gen3 x16 capable; 04:00.0 at Gen3, 05:00.0 at Gen2).
    let g = t.device(&b("0000:04:00.0")).unwrap();
    assert_eq!(g.display_name(), "GeForce GTX 1080 Ti");
    let model = |d: &peerpath::model::Device| {
        d.os_devices
            .iter()
            .flat_map(|o| &o.attrs)
            .any(|(k, v)| k == "Model" && v == "GeForce GTX 1080 Ti")
    };
    assert!(g.os_devices.len() == 1 && model(g));
    assert_eq!(g.link.unwrap().current_gts, Some(8.0));
    assert_eq!(
        t.device(&b("0000:05:00.0"))
            .unwrap()
            .link
            .unwrap()
            .current_gts,
        Some(5.0)
    );
    // Its /proc/cmdline section; no intel_iommu= there, so the IOMMU units stay unknown.
    assert_eq!(
        t.machine.kernel_cmdline.known().map(String::as_str),
        Some("BOOT_IMAGE=/boot/vmlinuz-4.4.0-87-generic.efi.signed root=/dev/sde2 ro")
    );
    assert!(t.machine.iommu_units.known().is_none());
    // As attached to a case: nvidia-bug-report.log.gz, the same reading.
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("nvidia-bug-report.log.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&std::fs::read(bundle(BUGREPORT)).unwrap())
        .unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let z = sources::load(Some(&gz), &no_db()).unwrap();
    assert_eq!(
        z.devices
            .iter()
            .map(|d| (d.bdf, d.kind))
            .collect::<Vec<_>>(),
        t.devices
            .iter()
            .map(|d| (d.bdf, d.kind))
            .collect::<Vec<_>>()
    );
}

#[test]
fn issue_excerpts_give_what_they_show_and_no_more() {
    // ROCm #4793: links ok, GPU ACS off, no PCIe fault; no tree, so the flat listing is said.
    let c = case(ROCM4793);
    let t = load(ROCM4793);
    assert_eq!(of_kind(&t, DeviceKind::Gpu), strings(&c["expect"]["gpus"]));
    for g in strings(&c["expect"]["gpus"]) {
        let d = t.device(&g).unwrap();
        let l = d.link.unwrap();
        assert_eq!((l.current_gts, l.current_width), (Some(16.0), Some(16)));
        assert_eq!(d.numa_node, Some(0));
        assert_eq!(d.config.as_ref().unwrap().acs.unwrap().control, 0);
        assert!(d.bars.iter().any(|b| b.index == 0 && b.size == 16 << 30));
    }
    assert!(
        t.source
            .limitations
            .iter()
            .any(|l| l.contains("no `lspci -t` tree"))
    );
    let r = audit::run(&t, &AuditOptions::default());
    assert!(
        !r.findings.iter().any(|f| f.severity == Severity::Error),
        "nothing PCIe-visible: {:#?}",
        r.findings
    );
    // hwloc #653: `Capabilities: [68] Null` and a cut `Ln` line: the GPU and its NUMA node,
    // its link unknown.
    let t = load(HWLOC653);
    let gpu = t.device(&b("0000:da:00.0")).unwrap();
    assert_eq!(gpu.kind, DeviceKind::Gpu);
    assert_eq!((gpu.vendor_id, gpu.device_id), (Some(0x10de), Some(0x20b0)));
    assert_eq!(gpu.numa_node, Some(5));
    assert!(gpu.link.is_none());
    // nvtrust #51: `Device 2331` read as the ID, the IOMMU group read.
    let t = load(NVTRUST51);
    let gpu = t.device(&b("0000:61:00.0")).unwrap();
    assert_eq!((gpu.vendor_id, gpu.device_id), (Some(0x10de), Some(0x2331)));
    assert_eq!(gpu.iommu_group, Some(64));
    // l2fwd-nv #6: the CX6 Dx's LnkCap read, LnkSta not in the excerpt.
    let t = load(L2FWD6);
    let nic = t.device(&b("0000:b3:00.0")).unwrap();
    assert_eq!(nic.kind, DeviceKind::Nic);
    let l = nic.link.unwrap();
    assert_eq!((l.max_gts, l.max_width), (Some(16.0), Some(16)));
    assert_eq!(l.current_width, None);
    // ibstat names mlx5_0 and mlx5_1 but the excerpt shows one function: not matched.
    assert!(
        t.warnings.iter().any(|w| w
            .message
            .contains("2 RDMA device(s) named mlx5_* in the text (ibstat")),
        "{:?}",
        t.warnings
    );
    // rccl #547: the tree fragment from `+-[0000:40]`, the MI100s two switches down, the
    // redirect on root port 40:01.1 read but above the GPUs' and NIC's common switch.
    let c = case(RCCL547);
    let t = load(RCCL547);
    assert_eq!(of_kind(&t, DeviceKind::Gpu), strings(&c["expect"]["gpus"]));
    let port = t.device(&b("0000:40:01.1")).unwrap();
    assert!(port.config.as_ref().unwrap().acs.unwrap().redirects_p2p());
    let cl = Classifier::new(&t, &ClassifyOptions::default());
    for (pair, want) in c["expect"]["gpu_nic_label"].as_object().unwrap() {
        let (a, z) = pair.split_once('-').unwrap();
        let got = cl.label_of(&b(a), &b(z)).unwrap().0.to_string();
        assert!(want.as_str().unwrap().starts_with(&got), "{pair}: {got}");
    }
    let r = audit::run(&t, &AuditOptions::default());
    assert!(
        !r.findings
            .iter()
            .any(|f| f.id == CheckId::AcsRedirect && f.severity == Severity::Error),
        "40:01.1 is not between the GPU and its NIC"
    );
}

#[test]
fn fragments_and_greps_are_refused_with_what_they_hold() {
    let err = |name: &str| {
        format!(
            "{:#}",
            sources::load(Some(&bundle(name)), &no_db()).unwrap_err()
        )
    };
    let e = err("nccl-issue-246-v100-pcie-cx5-sriov-vf.lspci-tv.EXCERPT.md");
    assert!(e.contains("fragment"), "{e}");
    let c = case("nccl-issue-606-rtxa6000-amd-switch.acsctl-grep.EXCERPT.md");
    let e = err("nccl-issue-606-rtxa6000-amd-switch.acsctl-grep.EXCERPT.md");
    let lines = c["expect"]["acsctl_lines"].as_u64().unwrap();
    assert!(
        e.contains(&format!("{lines} line(s), 0 redirecting")),
        "{e}"
    );
    let e = err("nccl-issue-629-illegal-memory-access.acsctl-grep.EXCERPT.md");
    // 14 + 16 lines, 1 + 4 redirecting, the last of each chunk cut by the index.
    assert!(e.contains("30 line(s), 5 redirecting"), "{e}");
    assert!(e.contains("2 cut"), "{e}");
    let e = err("README.md");
    assert!(e.contains("no lspci device lines"), "{e}");
}

/// A tar of `(path, text)` members, compressed by `pack`.
fn tarball(members: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (p, t) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(t.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, p, t.as_bytes()).unwrap();
    }
    b.into_inner().unwrap()
}

#[test]
fn sosreport_and_supportconfig_read_without_extracting() {
    use std::io::Write;
    let spec = layouts::with_acs_redirect(layouts::hgx_h100(), layouts::hgx_gpu_port(2)).unwrap();
    let dir = scratch();
    synth::write_tree(&spec, dir.path(), &WriteOptions::default()).unwrap();
    let tree = sources::load(Some(dir.path()), &LoadOptions::default()).unwrap();
    let want = audit::run(&tree, &AuditOptions::default());
    let Some(tv) = lspci(dir.path(), &["-tv"]) else {
        return;
    };
    let nnvv = lspci(dir.path(), &["-nnvv"]).unwrap();
    let cmdline = "BOOT_IMAGE=/vmlinuz-6.8.0 root=/dev/sda1 ro intel_iommu=on iommu=pt\n";
    // sos report: an xz tar with a top directory; members in any order.
    let sos = tarball(&[
        (
            "sosreport-n1-2026-12-05/sos_commands/pci/lspci_-nnvv",
            &nnvv,
        ),
        (
            "sosreport-n1-2026-12-05/sos_commands/kernel/dmesg",
            "[    0.0] Linux version\n",
        ),
        ("sosreport-n1-2026-12-05/proc/cmdline", cmdline),
        (
            "sosreport-n1-2026-12-05/sos_commands/kernel/lsmod",
            "Module                  Size  Used by\nnvidia_peermem         16384  0\nib_core               458752  8 nvidia_peermem,mlx5_ib\nnvidia              56778752  2 nvidia_peermem\n",
        ),
        ("sosreport-n1-2026-12-05/sos_commands/pci/lspci_-tv", &tv),
    ]);
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&sos).unwrap();
    let sos_xz = dir.path().join("sosreport-n1-2026-12-05.tar.xz");
    std::fs::write(&sos_xz, xz.finish().unwrap()).unwrap();
    // supportconfig: a bzip2 tar whose hardware.txt holds the lspci output under its headers.
    let hw = format!(
        "#==[ Command ]======================================#\n# /sbin/lspci -nnvv\n{nnvv}\n#==[ Command ]======================================#\n# /sbin/lspci -tv\n{tv}\n"
    );
    let scc = tarball(&[("scc_n1_261205_1200/hardware.txt", &hw)]);
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(&scc).unwrap();
    let scc_tbz = dir.path().join("scc_n1_261205_1200.tbz");
    std::fs::write(&scc_tbz, bz.finish().unwrap()).unwrap();
    // The same sosreport extracted, and a directory of two pasted files.
    let sos_dir = dir.path().join("sosreport-n1");
    std::fs::create_dir_all(sos_dir.join("sos_commands/pci")).unwrap();
    std::fs::create_dir_all(sos_dir.join("proc")).unwrap();
    std::fs::write(sos_dir.join("sos_commands/pci/lspci_-nnvv"), &nnvv).unwrap();
    std::fs::write(sos_dir.join("sos_commands/pci/lspci_-tv"), &tv).unwrap();
    std::fs::write(sos_dir.join("proc/cmdline"), cmdline).unwrap();
    let pasted = dir.path().join("ticket-1234");
    std::fs::create_dir_all(&pasted).unwrap();
    std::fs::write(pasted.join("lspci-vvv.txt"), &nnvv).unwrap();
    std::fs::write(pasted.join("lspci-tv.txt"), &tv).unwrap();
    for (file, kind) in [
        (&sos_xz, "sosreport"),
        (&scc_tbz, "supportconfig"),
        (&sos_dir, "directory"),
        (&pasted, "directory"),
    ] {
        let t = sources::load(Some(file), &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{kind}: {e:#}"));
        assert!(
            t.source.limitations[0].contains(kind),
            "{:?}",
            t.source.limitations
        );
        assert_eq!(t.devices.len(), tree.devices.len(), "{kind}");
        let got = audit::run(&t, &AuditOptions::default());
        assert_eq!(shown(&tree, &want), shown(&t, &got), "{kind}");
        assert!(
            got.findings
                .iter()
                .any(|f| f.id == CheckId::AcsRedirect && f.severity == Severity::Error)
        );
        if file == &sos_xz {
            // lsmod: nvidia-peermem loaded, so the peer module check is decided from text.
            let f = got
                .findings
                .iter()
                .find(|f| f.id == CheckId::GdrPeerModule)
                .unwrap();
            assert_eq!(f.severity, Severity::Info, "{f:#?}");
            assert!(t.machine.ib_core_loaded);
        }
        if file == &sos_xz || file == &sos_dir {
            assert_eq!(
                t.machine.kernel_cmdline.known().map(|s| s.as_str()),
                Some(cmdline.trim())
            );
        }
    }
}

/// Every topology command takes the text: `matrix`, `place`, `report` and `audit` run on a
/// published paste and say what the input cannot show.
#[test]
fn commands_run_on_a_paste() {
    let f = bundle(ASUS);
    let out = tempfile::tempdir().unwrap();
    let html = out.path().join("r.html");
    let runs: [&[&str]; 4] = [
        &["matrix"],
        &["place", "--ranks", "4"],
        &["report", "-o", html.to_str().unwrap()],
        &["audit", "--format", "json"],
    ];
    for args in runs {
        let o = Command::new(env!("CARGO_BIN_EXE_peerpath"))
            .args(&args[..1])
            .arg("-i")
            .arg(&f)
            .args(&args[1..])
            .env("PCI_IDS", "/nonexistent/pci.ids")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        // audit exits non-zero on this page (its NIC ports are down).
        assert!(
            o.status.success() || args[0] == "audit",
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        match args[0] {
            "matrix" => {
                assert!(text.contains("GPU0") && text.contains("NIC3"), "{text}");
                assert!(text.contains("input limit (lspci)"), "{text}");
            }
            "place" => assert!(text.contains("rank 3:"), "{text}"),
            "audit" => assert!(text.contains("\"input-limits\""), "{text}"),
            _ => assert!(std::fs::metadata(&html).unwrap().len() > 10_000),
        }
    }
}

/// A modern `nvidia-bug-report.log` written from the grammar of the script's own source
/// (driver 570-era `nvidia-bug-report.sh`, `$Change: 37062940 $`): its lspci section
/// (`lspci -nntv`, `lspci -nn`, `lspci -nnDvvvxxxx`, each after a separator line and the
/// command), its "NUMA information" section (`report_file` of each NVIDIA function 0's
/// `local_cpulist` and `numa_node`: `*** PATH`, `*** ls: …`, the value), `dmesg:`, and the
/// appended `/proc/cmdline`, `/proc/modules` and `/proc/driver/nvidia/version` — around real `lspci -A linux-sysfs` output
/// and the real files of a synthesized tree. `numa` false drops lspci's `NUMA node:` lines
/// (lspci prints none where it cannot read them), so the nodes can only come from the files.
fn modern_bug_report(root: &Path, numa: bool) -> Option<String> {
    let sep = "____________________________________________";
    let ls = |p: &str| {
        format!("*** ls: -r--r--r-- 1 root root 4096 2026-01-05 10:00:00.000000000 +0000 {p}")
    };
    let report_file =
        |p: &str, body: &str| format!("{sep}\n\n*** {p}\n{}\n{}\n\n", ls(p), body.trim_end());
    let mut vvv = lspci(root, &["-nnDvvvxxxx"])?;
    if !numa {
        vvv = vvv
            .lines()
            .filter(|l| !l.trim_start().starts_with("NUMA node:"))
            .map(|l| format!("{l}\n"))
            .collect();
    }
    let mut s = format!(
        "{sep}\n\nStart of NVIDIA bug report log file.\n\nnvidia-bug-report.sh Version: 37062940\n\n"
    );
    s += &format!(
        "{sep}\n\n/usr/bin/lspci -nntv\n\n{}\n",
        lspci(root, &["-nntv"])?
    );
    s += &format!(
        "{sep}\n\n/usr/bin/lspci -nn\n\n{}\n",
        lspci(root, &["-nn"])?
    );
    s += &format!("{sep}\n\n/usr/bin/lspci -nnDvvvxxxx\n\n{vvv}");
    s += &format!("{sep}\n\n");
    s += &report_file("/proc/sys/kernel/numa_balancing", "1");
    let devs = root.join("sys/bus/pci/devices");
    let mut gpus: Vec<String> = std::fs::read_dir(&devs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|b| {
            b.ends_with(".0")
                && std::fs::read_to_string(devs.join(b).join("vendor"))
                    .unwrap()
                    .trim()
                    == "0x10de"
        })
        .collect();
    gpus.sort();
    for g in &gpus {
        for f in ["local_cpulist", "numa_node"] {
            let p = format!("/sys/bus/pci/devices/{g}/{f}");
            s += &report_file(&p, &std::fs::read_to_string(devs.join(g).join(f)).unwrap());
        }
    }
    s += &format!("{sep}\n\ndmesg:\n\n[    0.000000] Linux version 6.8.0\n");
    s += &report_file(
        "/proc/cmdline",
        &std::fs::read_to_string(root.join("proc/cmdline")).unwrap(),
    );
    let mut modules: Vec<String> = std::fs::read_dir(root.join("sys/module"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    modules.sort();
    let table: String = modules
        .iter()
        .map(|m| format!("{m} 16384 0 - Live 0x0000000000000000\n"))
        .collect();
    s += &report_file("/proc/modules", &table);
    s += &report_file(
        "/proc/driver/nvidia/version",
        &std::fs::read_to_string(root.join("proc/driver/nvidia/version")).unwrap(),
    );
    Some(s)
}

#[test]
fn modern_bug_report_reads_lspci_numa_files_cmdline_and_modules() {
    let spec = layouts::with_acs_redirect(layouts::hgx_h100(), layouts::hgx_gpu_port(1)).unwrap();
    let spec = layouts::apply_fault(spec, "no-peermem").unwrap();
    let dir = scratch();
    synth::write_tree(&spec, dir.path(), &WriteOptions::default()).unwrap();
    let tree = sources::load(Some(dir.path()), &LoadOptions::default()).unwrap();
    let want = audit::run(&tree, &AuditOptions::default());
    for numa in [true, false] {
        let Some(text) = modern_bug_report(dir.path(), numa) else {
            return;
        };
        let file = dir.path().join("nvidia-bug-report.log");
        std::fs::write(&file, &text).unwrap();
        let t = sources::load(Some(&file), &LoadOptions::default()).unwrap();
        assert_eq!(t.source.kind, "lspci");
        assert_eq!(
            t.devices
                .iter()
                .map(|d| (d.bdf, d.parent, d.kind))
                .collect::<Vec<_>>(),
            tree.devices
                .iter()
                .map(|d| (d.bdf, d.parent, d.kind))
                .collect::<Vec<_>>()
        );
        // Every GPU's NUMA node: from lspci's lines, or else from the appended files.
        for g in tree.of_kind(DeviceKind::Gpu) {
            assert_eq!(
                t.device(&g.bdf).unwrap().numa_node,
                g.numa_node,
                "{} numa={numa}",
                g.bdf
            );
        }
        let from_files = t
            .warnings
            .iter()
            .any(|w| w.message.contains("numa_node files"));
        assert_eq!(from_files, !numa, "{:#?}", t.warnings);
        assert_eq!(
            t.machine.kernel_cmdline.known(),
            tree.machine.kernel_cmdline.known()
        );
        assert!(t.machine.modules_visible);
        let got = audit::run(&t, &AuditOptions::default());
        // The checks lspci shows (NIC paths need NUMA: with the files they are decided too),
        // and the peer module from /proc/modules: none loaded, as in the tree.
        assert_eq!(shown(&tree, &want), shown(&t, &got), "numa={numa}");
        let peer = |r: &audit::Report| {
            r.findings
                .iter()
                .filter(|f| f.id == CheckId::GdrPeerModule)
                .map(|f| f.severity)
                .collect::<Vec<_>>()
        };
        assert_eq!(peer(&want), peer(&got), "numa={numa}");
        assert!(peer(&got).iter().all(|s| *s != Severity::Unknown));
        // `intel_iommu=on iommu=pt` on the appended command line: the groups' boot default is
        // passthrough (the tree's groups are identity: no finding there), said with its source.
        assert!(
            !want
                .findings
                .iter()
                .any(|f| f.id == CheckId::IommuTranslation),
            "{:#?}",
            want.findings
        );
        let io: Vec<_> = got
            .findings
            .iter()
            .filter(|f| f.id == CheckId::IommuTranslation)
            .collect();
        assert_eq!(io.len(), 1, "{io:#?}");
        assert_eq!(io[0].severity, Severity::Info);
        assert!(io[0].evidence[0].path.ends_with("(kernel command line)"));
        assert_eq!(io[0].evidence[0].value, "intel_iommu=on iommu=pt");
    }
}

/// `matrix` reads the text without naming devices, yet the text's IDs come from the names it
/// prints (`lspci -tv`/`-vvv` without `-nn`): the labels of the GB300 tray's text (Data Direct
/// paired from the VPD `lspci -vvv` prints) and of h200-bond's (the bond named beside it) are
/// the tree's, cell for cell; and `place` on a text that cannot decide the paths says so.
#[test]
fn matrix_from_text_labels_as_from_the_tree() {
    let run = |input: &Path| -> String {
        let o = Command::new(env!("CARGO_BIN_EXE_peerpath"))
            .arg("matrix")
            .arg("-i")
            .arg(input)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // The label cells: every row's cells up to the CPU affinity column.
        let text = String::from_utf8(o.stdout).unwrap();
        let head: Vec<&str> = text.lines().next().unwrap().split('\t').collect();
        let n = head.iter().take_while(|c| !c.starts_with("CPU")).count();
        text.lines()
            .take_while(|l| !l.is_empty())
            .map(|l| l.split('\t').take(n).collect::<Vec<_>>().join("\t") + "\n")
            .collect()
    };
    for layout in ["gb300-tray", "h200-bond"] {
        let dir = scratch();
        let spec = layouts::by_name(layout).unwrap();
        synth::write_tree(&spec, dir.path(), &WriteOptions::default()).unwrap();
        let tree = sources::load(Some(dir.path()), &LoadOptions::default()).unwrap();
        let Some(mut text) = Form::TvVvv.print(dir.path()) else {
            return;
        };
        if layout == "h200-bond" {
            text = format!("{text}\n{}\n", ibdev2netdev(&tree, false));
        }
        let file = dir.path().join("lspci.txt");
        std::fs::write(&file, text).unwrap();
        assert_eq!(run(dir.path()), run(&file), "{layout}");
        if layout == "gb300-tray" {
            // `-tv` with bare `-xxxx` dumps holds neither NUMA nodes nor VPD: `place` says the
            // GPUs' GPUDirect RDMA is unknown, not off.
            std::fs::write(&file, Form::TvXxxx.print(dir.path()).unwrap()).unwrap();
            let o = Command::new(env!("CARGO_BIN_EXE_peerpath"))
                .args(["place", "--ranks", "4", "-i"])
                .arg(&file)
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(!out.contains("keeps GPUDirect RDMA off"), "{out}");
            assert_eq!(
                out.matches("GPUDirect RDMA on it is unknown").count(),
                4,
                "{out}"
            );
        }
    }
}
