//! Support texts as operators publish them (issue 51): `nvidia-bug-report.log`, `lspci` text
//! with a kernel log beside it. Each test runs the audit on a real published file in
//! fixtures/bundles/ (source in its README) and holds it to what a by-hand reading of the file
//! supports: an unknown is never a mismatch, what the kernel log says is read and cited.

use peerpath::analysis::audit::{self, AuditOptions, CheckId, Finding, Severity};
use peerpath::model::Topology;
use peerpath::sources::{self, LoadOptions};
use std::path::{Path, PathBuf};

fn bundle(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/bundles")
        .join(name)
}

/// No PCI ID database: the same reading on every machine.
fn no_db() -> LoadOptions {
    LoadOptions {
        pci_ids: Some(PathBuf::from("/nonexistent/pci.ids")),
        ..LoadOptions::default()
    }
}

fn load(name: &str) -> Topology {
    sources::load(Some(&bundle(name)), &no_db()).unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

fn findings(t: &Topology, id: CheckId) -> Vec<Finding> {
    audit::run(t, &AuditOptions::default())
        .findings
        .into_iter()
        .filter(|f| f.id == id)
        .collect()
}

/// A 2019 bug report (driver 440.31 throughout; 4x RTX 2080 Ti, printed `GV102` by its old
/// pci.ids).
const BR2019: &str = "nvidia-bug-report-2019-4x-rtx2080ti-supermicro-x10drg.EXCERPT.log";

#[test]
fn one_driver_in_a_bug_report_is_no_mismatch() {
    // Before: `driver-mismatch` error "440.31 vs loaded (/proc/modules …; no version there)".
    let t = load(BR2019);
    let f = findings(&t, CheckId::DriverMismatch);
    assert!(
        f.iter().all(|f| f.severity == Severity::Unknown),
        "a module listed without its version is unknown, never a mismatch: {f:#?}"
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].summary.contains("440.31"), "{}", f[0].summary);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.value.contains("/proc/modules at line")),
        "the side without a version is named with where it was read: {:#?}",
        f[0].evidence
    );
}

const ASUS: &str = "stelline-asus-esc8000a-e12-4x-rtx6000ada-2x-cx7.lspci-tv+vvv+topo.md";

/// A kernel log beside the real Genoa page, in a directory as an operator hands it over.
/// SYNTHESIZED: the lines follow the kernel's own printk formats (arch/x86/kernel/setup.c
/// `Command line: %s`, drivers/iommu/amd/init.c `AMD-Vi: Found IOMMU cap 0x%x`,
/// drivers/iommu/iommu.c `Default domain type: %s%s` and `Adding to iommu group %d`,
/// drivers/pci/pcie/aer.c `PCIe Bus Error: severity=%s, type=%s, (%s)`, NVRM's Xid line);
/// the stelline page itself has no kernel log.
const GENOA_DMESG: &str = "\
[    0.000000] Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103) #49-Ubuntu SMP
[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=0 ro quiet
[    1.104566] pci 0000:00:00.2: AMD-Vi: Found IOMMU cap 0x40
[    1.230561] iommu: Default domain type: Translated
[    1.230563] iommu: DMA domain TLB invalidation policy: lazy mode
[    1.402104] pci 0000:01:00.0: Adding to iommu group 12
[ 3021.118811] pcieport 0000:20:03.1: AER: Corrected error received: 0000:21:00.0
[ 3021.118820] mlx5_core 0000:21:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
[ 3021.118824] mlx5_core 0000:21:00.0:   device [15b3:1021] error status/mask=00000001/0000e000
[ 3021.118829] mlx5_core 0000:21:00.0:    [ 0] RxErr                  (First)
[ 4410.220301] NVRM: Xid (PCI:0000:41:00): 79, pid=0, name=python3, GPU has fallen off the bus.
";

fn dir_with_dmesg(dmesg: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(bundle(ASUS), dir.path().join("lspci.md")).unwrap();
    std::fs::write(dir.path().join("dmesg.txt"), dmesg).unwrap();
    dir
}

#[test]
fn a_kernel_log_beside_lspci_text_is_read_and_cited() {
    // Before: "IOMMU mode unknown … group type not readable" on this Genoa node, whatever its
    // dmesg says; no AER line and no Xid read.
    let dir = dir_with_dmesg(GENOA_DMESG);
    let t = sources::load(Some(dir.path()), &no_db()).unwrap();
    let f = findings(&t, CheckId::IommuTranslation);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(
        f[0].severity,
        Severity::Error,
        "Translated with AMD-Vi on: {f:#?}"
    );
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.value.contains("Default domain type: Translated") && e.path.contains("line")),
        "{:#?}",
        f[0].evidence
    );
    // The group the log names; the command line from the log's banner.
    let g = t.device(&"0000:01:00.0".parse().unwrap()).unwrap();
    assert_eq!(g.iommu_group, Some(12));
    assert!(
        t.machine
            .kernel_cmdline
            .known()
            .is_some_and(|c| c.contains("vmlinuz-6.8.0-49"))
    );
    // AER lines counted on the device they name; Xid lines on their GPU.
    let nic = t.device(&"0000:21:00.0".parse().unwrap()).unwrap();
    assert!(
        nic.aer_correctable.as_ref().is_some_and(|c| c
            .counters
            .iter()
            .any(|(k, n)| k.contains("Physical Layer RxErr") && *n == 1)),
        "{:?}",
        nic.aer_correctable
    );
    let x = findings(&t, CheckId::GpuXid);
    assert_eq!(x.len(), 1, "{x:#?}");
    assert_eq!(x[0].severity, Severity::Warning);
    assert!(x[0].summary.contains("Xid 79"));
    // Only the default-domain line (a `dmesg | grep 'Default domain'`): on an AMD root complex,
    // whose IOMMU is on by default, that is translation, never "IOMMU mode unknown".
    let dir = dir_with_dmesg("[    1.230561] iommu: Default domain type: Translated\n");
    let t = sources::load(Some(dir.path()), &no_db()).unwrap();
    let f = findings(&t, CheckId::IommuTranslation);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].severity, Severity::Error, "{f:#?}");
    // `iommu=pt` booted: passthrough, said as info with the log's line.
    let pt = GENOA_DMESG
        .replace("ro quiet", "ro quiet iommu=pt")
        .replace("Translated", "Passthrough (set via kernel command line)");
    let dir = dir_with_dmesg(&pt);
    let t = sources::load(Some(dir.path()), &no_db()).unwrap();
    let f = findings(&t, CheckId::IommuTranslation);
    assert!(f.iter().all(|f| f.severity == Severity::Info), "{f:#?}");
}

/// SYNTHESIZED in the form pciutils prints (ls-ecaps.c `cap_aer`, tab-indented as `lspci -vvv`
/// writes it): an H100 SXM whose CESta shows RxErr+ BadTLP+ Timeout+, all masked in CEMsk, as
/// published HGX H100 pastes show on every GPU.
const H100_MASKED: &str = "\
18:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
\tSubsystem: NVIDIA Corporation Device [10de:16c1]
\tNUMA node: 0
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tDevCtl:\tCorrErr- NonFatalErr+ FatalErr+ UnsupReq-
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 32GT/s, Width x16
\tCapabilities: [100 v2] Advanced Error Reporting
\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-
\t\tUEMsk:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-
\t\tUESvrt:\tDLP+ SDES+ TLP- FCP+ CmpltTO- CmpltAbrt- UnxCmplt- RxOF+ MalfTLP+ ECRC- UnsupReq- ACSViol-
\t\tCESta:\tRxErr+ BadTLP+ BadDLLP- Rollover- Timeout+ AdvNonFatalErr-
\t\tCEMsk:\tRxErr+ BadTLP+ BadDLLP+ Rollover+ Timeout+ AdvNonFatalErr+
\tKernel driver in use: nvidia
";

#[test]
fn set_but_masked_aer_bits_are_said_never_no_bit_set() {
    // Before: "no uncleared AER status bit (UESta/CESta) is set on these devices".
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("lspci-vvv.txt");
    std::fs::write(&p, H100_MASKED).unwrap();
    let t = sources::load(Some(&p), &no_db()).unwrap();
    let f = findings(&t, CheckId::AerErrors);
    assert!(
        !f.iter()
            .any(|f| f.summary.contains("no uncleared AER status bit")),
        "a set bit is never 'no bit set': {f:#?}"
    );
    let info: Vec<&Finding> = f.iter().filter(|f| f.severity == Severity::Info).collect();
    assert_eq!(info.len(), 1, "{f:#?}");
    for bit in [
        "RxErr",
        "BadTLP",
        "Timeout",
        "never counted",
        "signal quality",
    ] {
        assert!(info[0].summary.contains(bit), "{bit}: {}", info[0].summary);
    }
    assert!(
        info[0]
            .evidence
            .iter()
            .any(|e| e.value.contains("CESta RxErr+ masked in CEMsk") && e.path.ends_with("line 8")),
        "{:#?}",
        info[0].evidence
    );
    // No warning or error: masked bits were never reported.
    assert!(
        f.iter()
            .all(|f| matches!(f.severity, Severity::Info | Severity::Unknown)),
        "{f:#?}"
    );
}

fn audit_cli(path: &Path) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(["audit", "-i"])
        .arg(path)
        .args(["--pci-ids", "/nonexistent/pci.ids"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn text_that_cannot_identify_devices_is_unknown_not_pass() {
    // Before: "PASS: 0 error(s), 0 warning(s), 0 unknown" on both, and the grep's PEX 8747
    // switch functions drawn as root ports under host bridges made from their bus numbers.
    for (name, lacks) in [
        (
            "club-3090-issue-1322-2x-rtx5090.lspci-t.EXCERPT.md",
            // 58 entries; the last, `+-01.0` with no newline after it, is cut and not read.
            "names none of its 57 device(s)",
        ),
        (
            "nccl-issue-19-supermicro-7048gr-pex8747.lspci-grep-plx.EXCERPT.md",
            "lists only bridges",
        ),
        (
            "nccl-issue-85-2x-p100-pcie-broadwell-stall.lspci-grep-bridge.EXCERPT.md",
            "lists only bridges",
        ),
    ] {
        let t = load(name);
        let r = audit::run(&t, &AuditOptions::default());
        assert_eq!(r.verdict, "unknown", "{name}");
        assert!(
            r.not_judged.as_deref().is_some_and(|w| w.contains(lacks)),
            "{name}: {:?}",
            r.not_judged
        );
        assert!(r.counts.unknown >= 1, "{name}");
        let (code, out) = audit_cli(&bundle(name));
        assert_eq!(code, 3, "{name}: {out}");
        assert!(out.starts_with("UNKNOWN:"), "{name}: {out}");
        assert!(!out.contains("No GPU"), "{name}: {out}");
    }
    let t = load("nccl-issue-19-supermicro-7048gr-pex8747.lspci-grep-plx.EXCERPT.md");
    assert!(
        t.devices
            .iter()
            .all(|d| d.kind != peerpath::model::DeviceKind::RootPort),
        "a function named a Switch is never a root port: {:?}",
        t.devices
            .iter()
            .map(|d| (d.bdf, d.kind))
            .collect::<Vec<_>>()
    );
}

/// SYNTHESIZED `lspci -nn` of a CPU-only node (pciutils' header format): no GPU, no
/// accelerator, no RDMA NIC.
const CPU_NODE: &str = "\
00:00.0 Host bridge [0600]: Intel Corporation Sky Lake-E DMI3 Registers [8086:2020] (rev 04)
00:11.5 SATA controller [0106]: Intel Corporation C620 Series Chipset Family SSATA Controller [AHCI mode] [8086:a1d2] (rev 09)
00:14.0 USB controller [0c03]: Intel Corporation C620 Series Chipset Family USB 3.0 xHCI Controller [8086:a1af] (rev 09)
00:1c.0 PCI bridge [0604]: Intel Corporation C620 Series Chipset Family PCI Express Root Port #1 [8086:a190] (rev f9)
02:00.0 VGA compatible controller [0300]: ASPEED Technology, Inc. ASPEED Graphics Family [1a03:2000] (rev 41)
18:00.0 Ethernet controller [0200]: Intel Corporation Ethernet Controller X710 for 10GbE SFP+ [8086:1572] (rev 02)
";

#[test]
fn a_node_with_nothing_to_judge_says_so_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("lspci-nn.txt");
    std::fs::write(&p, CPU_NODE).unwrap();
    let (code, out) = audit_cli(&p);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("PASS (nothing to judge)"), "{out}");
    assert!(out.contains("no GPU, accelerator or RDMA NIC"), "{out}");
}

#[test]
fn a_grep_of_one_port_is_read_as_that_ports() {
    // SYNTHESIZED beside the real Genoa page: a per-port ACSCtl grep and a per-GPU link grep in
    // the form operators paste (`lspci -vvv -s BDF | grep …`, pciutils' tab-indented lines).
    // Before: the ACSCtl line was 'without its device' and 20:03.1's ACS stayed unknown.
    let grep = "\
$ sudo lspci -vvv -s 20:03.1 | grep ACSCtl
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
";
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(bundle(ASUS), dir.path().join("lspci.md")).unwrap();
    std::fs::write(dir.path().join("acs.txt"), grep).unwrap();
    let t = sources::load(Some(dir.path()), &no_db()).unwrap();
    let port = t.device(&"0000:20:03.1".parse().unwrap()).unwrap();
    assert!(
        port.config
            .as_ref()
            .and_then(|c| c.acs)
            .is_some_and(|a| a.redirects_p2p()),
        "{:?}",
        port.config
    );
    let f = findings(&t, CheckId::AcsRedirect);
    let on_port: Vec<&Finding> = f
        .iter()
        .filter(|x| x.subject.to_string() == "0000:20:03.1")
        .collect();
    assert_eq!(on_port.len(), 1, "{f:#?}");
    assert_eq!(on_port[0].severity, Severity::Error);
    assert!(
        on_port[0]
            .evidence
            .iter()
            .any(|e| e.value.contains("ReqRedir")),
        "{:#?}",
        on_port[0].evidence
    );
}

#[test]
fn a_link_whose_port_the_text_does_not_show_is_unknown_on_the_port() {
    // SYNTHESIZED in pciutils' form: the GPU's LnkCap and LnkSta shown (x8 of x16), its root
    // port printed without registers. Whether x8 is a fault depends on the port's capability:
    // unknown, and the evidence names the port's LnkCap, not the GPU's LnkSta as "absent".
    let text = "00:01.0 PCI bridge [0604]: Intel Corporation Device 09a4 [8086:09a4]
\tBus: primary=00, secondary=01, subordinate=01, sec-latency=0

01:00.0 3D controller [0302]: NVIDIA Corporation Device 2330 [10de:2330] (rev a1)
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16
\t\tLnkSta:\tSpeed 32GT/s, Width x8

";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("lspci.txt");
    std::fs::write(&p, text).unwrap();
    let t = sources::load(Some(&p), &no_db()).unwrap();
    let f = findings(&t, CheckId::LinkDegraded);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].severity, Severity::Unknown);
    assert!(
        f[0].evidence
            .iter()
            .all(|e| e.path.contains("0000:00:01.0 LnkCap")),
        "{:#?}",
        f[0].evidence
    );
}
