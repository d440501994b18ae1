//! The differential half of `tests/lspci_text.rs`: the real `lspci -A linux-sysfs` prints
//! from a synthesized tree of every layout and fault, read back by peerpath, and the audit
//! from the text compared with the audit from the tree.

use peerpath::analysis::audit::{self, AuditOptions, CheckId, Severity, Subject};
use peerpath::model::{Bdf, Topology};
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{self, Spec, WriteOptions, layouts};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// `lspci -A linux-sysfs` on a tree; `None` (after a note, or a panic under CI) without lspci.
pub(crate) fn lspci(root: &Path, args: &[&str]) -> Option<String> {
    let sysfs = format!("sysfs.path={}", root.join("sys/bus/pci").display());
    let mut c = Command::new("lspci");
    c.args(["-A", "linux-sysfs", "-O", &sysfs])
        .args(args)
        .env("LANG", "C")
        .env("LC_ALL", "C");
    match c.output() {
        Ok(o) => {
            assert!(
                o.status.success(),
                "lspci {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(String::from_utf8(o.stdout).unwrap())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var_os("CI").is_none(),
                "lspci not installed under CI"
            );
            eprintln!("note: lspci not installed; differential test skipped");
            None
        }
        Err(e) => panic!("cannot run lspci: {e}"),
    }
}

/// A scratch directory for a synthesized tree, on tmpfs where there is one: writing and
/// removing thousands of small files is most of these tests' time on a disk.
pub(crate) fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// The checks lspci text can show, compared finding by finding.
pub(crate) const SHOWN: [CheckId; 4] = [
    CheckId::AcsRedirect,
    CheckId::LinkDegraded,
    CheckId::MpsMrrs,
    CheckId::GpuNicPath,
];

/// A finding as (check, severity, subject), an RDMA device subject by its PCI address: the
/// text's RDMA names are the kernel's default ones, a layout may have renamed its devices.
pub(crate) fn key(t: &Topology, f: &audit::Finding) -> (String, Severity, String) {
    let subject = match &f.subject {
        Subject::RdmaDevice(n) => t
            .devices
            .iter()
            .find(|d| d.rdma_names().any(|r| r == n))
            .map(|d| d.bdf.to_string())
            .unwrap_or_else(|| n.clone()),
        Subject::Nic { bdf, .. } => bdf.to_string(),
        s => s.to_string(),
    };
    (f.id.as_str().to_string(), f.severity, subject)
}

pub(crate) fn shown(t: &Topology, r: &audit::Report) -> BTreeSet<(String, Severity, String)> {
    r.findings
        .iter()
        .filter(|f| SHOWN.contains(&f.id))
        .map(|f| key(t, f))
        .collect()
}

/// The forms operators paste, each printed by the real `lspci -A linux-sysfs` from the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Form {
    /// `lspci -tv` then `lspci -vvv`.
    TvVvv,
    /// `lspci -nnDvvv` alone: the structure from the bridges' bus ranges.
    NnDvvv,
    /// `lspci -tvnn` alone: no registers, no NUMA.
    Tvnn,
    /// nvidia-bug-report's `lspci -nnDvvvxxxx`: config space from the hex dumps.
    NnDvvvxxxx,
    /// `lspci -tv` with bare `-xxxx` dumps: no NUMA node, no VPD.
    TvXxxx,
    /// `lspci -tvD` with the bus-centric `lspci -bvvv` (bus addresses in `Region` lines).
    TvDBvvv,
}

const FORMS: [Form; 6] = [
    Form::TvVvv,
    Form::NnDvvv,
    Form::Tvnn,
    Form::NnDvvvxxxx,
    Form::TvXxxx,
    Form::TvDBvvv,
];

impl Form {
    /// The text, or `None` without lspci.
    pub(crate) fn print(self, root: &Path) -> Option<String> {
        let two =
            |a: &[&str], b: &[&str]| Some(format!("{}\n{}", lspci(root, a)?, lspci(root, b)?));
        match self {
            Form::TvVvv => two(&["-tv"], &["-vvv"]),
            Form::NnDvvv => lspci(root, &["-nnDvvv"]),
            Form::Tvnn => lspci(root, &["-tvnn"]),
            Form::NnDvvvxxxx => lspci(root, &["-nnDvvvxxxx"]),
            Form::TvXxxx => two(&["-tv"], &["-xxxx"]),
            Form::TvDBvvv => two(&["-tvD"], &["-bvvv"]),
        }
    }
    /// Whether the form prints each device's NUMA node.
    fn numa(self) -> bool {
        !matches!(self, Form::Tvnn | Form::TvXxxx)
    }
}

/// One layout of `peerpath fixture --list` with faults, read back in some forms.
struct Case {
    layout: &'static str,
    /// `--fault` strings, built from the layout's spec (addresses of its GPUs and NICs).
    faults: fn(&Spec) -> Vec<String>,
    unprivileged: bool,
    forms: &'static [Form],
    /// Append the tree's RDMA names as `ibdev2netdev` prints them: `Some(false)` plain (no
    /// addresses), `Some(true)` `ibdev2netdev -v` (each with its PCI address).
    names: Option<bool>,
    /// A documented difference: findings about these functions exist only in the text.
    text_only: &'static [&'static str],
}

fn none(_: &Spec) -> Vec<String> {
    Vec::new()
}

/// The first function of a class group (`0x03` display, `0x02` network, `0x12` accelerator).
fn first(spec: &Spec, classes: &[u32]) -> Bdf {
    spec.functions
        .iter()
        .find(|f| classes.contains(&(f.class >> 16)) && f.vendor != 0x8086 && f.vendor != 0x1a03)
        .map(|f| f.bdf)
        .unwrap_or_else(|| panic!("{}: no function of class {classes:x?}", spec.name))
}

fn gpu(spec: &Spec) -> Bdf {
    first(spec, &[0x03, 0x12])
}

fn nic(spec: &Spec) -> Bdf {
    first(spec, &[0x02])
}

/// Every layout `peerpath fixture --list` names and every fault kind it takes, each read in
/// one or two forms (each form on several layouts), so the whole stays within CI time.
fn differential_cases() -> Vec<Case> {
    use Form::*;
    let c = |layout, faults, forms| Case {
        layout,
        faults,
        unprivileged: false,
        forms,
        names: None,
        text_only: &[],
    };
    vec![
        c(
            "hgx-h100",
            |s| {
                let g = gpu(s);
                vec![
                    format!("acs-redirect={}", s.function(g).unwrap().parent.unwrap()),
                    format!("link-width={g},8"),
                    format!("link-width={},4", layouts::hgx_nic(5)),
                ]
            },
            &[TvVvv, NnDvvvxxxx],
        ),
        Case {
            unprivileged: true,
            ..c("hgx-h100", none, &[TvVvv])
        },
        c("misplaced-nic", none, &[NnDvvv, TvXxxx]),
        c("vm-flat", none, &[Tvnn, NnDvvv]),
        c("virtio-vm", |_| vec!["vm".into()], &[TvDBvvv]),
        c(
            "dgx-a100",
            |s| vec![format!("aer={},0,3,0", gpu(s))],
            &[TvVvv, Tvnn],
        ),
        c("hgx-h100-13nic", none, &[TvDBvvv, Tvnn]),
        c("hgx-h100-field", none, &[NnDvvv]),
        c(
            "hgx-h100-gds",
            |_| vec!["no-nvidia-fs".into(), "compat-forced".into()],
            &[TvVvv],
        ),
        c(
            "cray-ex-a100",
            |s| vec!["no-peermem".into(), format!("move={},2", nic(s))],
            &[NnDvvvxxxx],
        ),
        c(
            "polaris-a100",
            |s| {
                let port = s.function(gpu(s)).unwrap().parent.unwrap();
                vec![format!("acs={port},1d")]
            },
            &[TvXxxx, Tvnn],
        ),
        c(
            "hgx-b300",
            |s| vec![format!("iommu-type={},DMA", gpu(s))],
            &[TvDBvvv, NnDvvvxxxx],
        ),
        // Grace: C2C and Data Direct need the GPU memory's NUMA node and the VPD; -vvv prints
        // the VPD (pairs the DMA functions), -xxxx does not (the paths are then unknown).
        c("gb300-tray", none, &[TvVvv, TvXxxx]),
        c(
            "mi300x-8gpu",
            |s| {
                let g = gpu(s);
                vec![
                    format!("small-bar={g}"),
                    format!("no-atomics={g}"),
                    "no-amdkfd-peer".into(),
                ]
            },
            &[TvVvv],
        ),
        c("mi300a-4apu", none, &[NnDvvvxxxx]),
        c("mi50-rome", none, &[TvVvv]),
        c("scaling-34", none, &[TvXxxx, TvDBvvv]),
        c("many-vfs-4", none, &[Tvnn, NnDvvv]),
        // A bond named beside the text (ibdev2netdev, without and with addresses): its slave
        // port has no RDMA device, as in the tree.
        Case {
            names: Some(false),
            ..c("h200-bond", none, &[TvVvv])
        },
        Case {
            names: Some(true),
            ..c("h200-bond", none, &[TvXxxx])
        },
        // Without a naming source the bond cannot be seen: its slave port 21:00.1 becomes an
        // RDMA NIC of its own (said in the limitations).
        Case {
            text_only: &["0000:21:00.1"],
            ..c("h200-bond", none, &[NnDvvv])
        },
    ]
}

/// The tree's RDMA devices as `ibdev2netdev` prints them (`mlx5_0 port 1 ==> ib0 (Up)`), by
/// name; with `-v` each line starts with the PCI address (`0000:19:00.0 mlx5_0 (MT4129 - …)
/// fw … port 1 (ACTIVE) ==> ib0 (Up)`).
pub(crate) fn ibdev2netdev(t: &Topology, v: bool) -> String {
    let mut lines: Vec<String> = t
        .devices
        .iter()
        .flat_map(|d| d.rdma_names().map(|r| (d.bdf, r.to_string())).collect::<Vec<_>>())
        .map(|(b, r)| match v {
            false => format!("{r} port 1 ==> net_{r} (Up)"),
            true => format!("{b} {r} (MT4129 - 900-9X7AH-0078-DTZ) fw 28.39.1002 port 1 (ACTIVE) ==> net_{r} (Up)"),
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

#[test]
fn audit_from_lspci_text_equals_audit_from_the_tree() {
    let cases = differential_cases();
    // Every layout and fault kind is here, and every form is read on several layouts.
    for (name, _) in layouts::LAYOUTS {
        let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
        assert!(
            cases
                .iter()
                .any(|c| c.layout == *name || c.layout.starts_with(stem) && stem.ends_with('-')),
            "layout {name} not in the differential test"
        );
    }
    let faults: Vec<String> = cases
        .iter()
        .flat_map(|c| (c.faults)(&layouts::by_name(c.layout).unwrap()))
        .map(|f| f.split('=').next().unwrap().to_string())
        .collect();
    for kind in [
        "acs-redirect",
        "acs",
        "link-width",
        "aer",
        "iommu-type",
        "move",
        "no-peermem",
        "vm",
        "no-nvidia-fs",
        "compat-forced",
        "small-bar",
        "no-atomics",
        "no-amdkfd-peer",
    ] {
        assert!(faults.iter().any(|f| f == kind), "fault {kind} not tried");
    }
    for form in FORMS {
        let n = cases.iter().filter(|c| c.forms.contains(&form)).count();
        assert!(n >= 2, "{form:?} read on {n} layout(s)");
    }
    let opts = LoadOptions::default();
    let ao = AuditOptions::default();
    for case in cases {
        let mut spec = layouts::by_name(case.layout).unwrap();
        for f in (case.faults)(&spec.clone()) {
            spec = layouts::apply_fault(spec, &f).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
        let name = format!(
            "{}{}{}",
            case.layout,
            if case.unprivileged {
                " unprivileged"
            } else {
                ""
            },
            (case.faults)(&layouts::by_name(case.layout).unwrap())
                .iter()
                .map(|f| format!(" +{f}"))
                .collect::<String>()
        );
        let dir = scratch();
        synth::write_tree(
            &spec,
            dir.path(),
            &WriteOptions {
                unprivileged: case.unprivileged,
            },
        )
        .unwrap();
        let tree = sources::load(Some(dir.path()), &opts).unwrap();
        let want = audit::run(&tree, &ao);
        for &form in case.forms {
            let Some(mut text) = form.print(dir.path()) else {
                return;
            };
            if let Some(v) = case.names {
                text = format!("{text}\n{}\n", ibdev2netdev(&tree, v));
            }
            check_form(&name, form, &case, &text, dir.path(), &tree, &want);
        }
    }
}

fn check_form(
    name: &str,
    form: Form,
    case: &Case,
    text: &str,
    dir: &Path,
    tree: &Topology,
    want: &audit::Report,
) {
    let file = dir.join("lspci.txt");
    std::fs::write(&file, text).unwrap();
    let t = sources::load(Some(&file), &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{name} {form:?}: {e:#}"));
    assert_eq!(t.source.kind, "lspci");
    assert_eq!(
        t.devices
            .iter()
            .map(|d| (d.bdf, d.parent, d.kind))
            .collect::<Vec<_>>(),
        tree.devices
            .iter()
            .map(|d| (d.bdf, d.parent, d.kind))
            .collect::<Vec<_>>(),
        "{name} {form:?}: devices, parents and kinds"
    );
    let got = audit::run(&t, &AuditOptions::default());
    let (mut w, mut g) = (shown(tree, want), shown(&t, &got));
    for s in case.text_only {
        // A documented difference: what the text cannot tell apart about that function.
        assert!(
            g.iter().any(|k| k.2 == *s) && !w.iter().any(|k| k.2 == *s),
            "{name} {form:?}: the documented difference about {s} is gone"
        );
        g.retain(|k| k.2 != *s);
        assert!(
            t.source.limitations.iter().any(|l| l.contains("LAG bond")),
            "{name} {form:?}: no limitation says bonds cannot be seen"
        );
    }
    if form == Form::Tvnn {
        // A tree alone: no registers, so ACS, links and MPS are unknown, never a pass.
        for id in [
            CheckId::AcsRedirect,
            CheckId::LinkDegraded,
            CheckId::MpsMrrs,
        ] {
            let mine: Vec<_> = got.findings.iter().filter(|f| f.id == id).collect();
            // (A layout with no GPU has no such check in the tree either.)
            let tree_has = want.findings.iter().any(|f| f.id == id);
            assert!(
                (!mine.is_empty() || !tree_has)
                    && mine.iter().all(|f| f.severity == Severity::Unknown),
                "{name} {form:?}: {id:?} {mine:#?}"
            );
        }
        w.retain(|k| k.0 == "gpu-nic-path");
        g.retain(|k| k.0 == "gpu-nic-path");
    }
    if case.unprivileged {
        // sysfs gives links to anyone; lspci without root prints `<access denied>`: the
        // links are unknown from the text, with the reason.
        let f = got
            .findings
            .iter()
            .find(|f| f.id == CheckId::LinkDegraded)
            .unwrap_or_else(|| panic!("{name} {form:?}: no link-degraded finding"));
        assert_eq!(f.severity, Severity::Unknown, "{name} {form:?}");
        assert!(f.summary.contains("without root"), "{}", f.summary);
        w.retain(|k| k.0 != "link-degraded");
        g.retain(|k| k.0 != "link-degraded");
    }
    // C2C or a Data Direct pairing the text cannot show (said by those checks as unknown).
    let unseen_platform = got.findings.iter().any(|f| {
        f.severity == Severity::Unknown
            && (matches!(f.id, CheckId::C2cLink | CheckId::DataDirect)
                || f.id == CheckId::GpuNicPath && f.summary.contains("not visible in"))
    });
    if !form.numa() || unseen_platform {
        // Without NUMA nodes, or where C2C/Data Direct is not in the text, a placement finding
        // of the tree is unknown (or the NIC's summary note) from the text, never another
        // verdict.
        let place = |s: &BTreeSet<(String, Severity, String)>| -> BTreeSet<String> {
            s.iter()
                .filter(|k| k.0 == "gpu-nic-path")
                .map(|k| k.2.clone())
                .collect()
        };
        // A tree alone cannot tell an SR-IOV VF (found from its PF's registers) from a NIC
        // of its own: with VFs in the tree, its extra NICs' notes are allowed.
        let vfs = tree.devices.iter().any(|d| d.physfn.is_some());
        if form == Form::Tvnn && vfs || unseen_platform {
            // Where C2C/Data Direct is not visible the text may be unknown about a pair the
            // tree passes (no finding); every finding of the tree still has its subject.
            assert!(
                place(&w).is_subset(&place(&g)),
                "{name} {form:?}: placement subjects"
            );
        } else {
            assert_eq!(
                place(&w),
                place(&g),
                "{name} {form:?}: placement subjects (tree {w:?}, text {g:?})"
            );
        }
        for k in g.iter().filter(|k| k.0 == "gpu-nic-path") {
            assert!(
                w.contains(k) || matches!(k.1, Severity::Unknown | Severity::Info),
                "{name} {form:?}: {k:?}"
            );
        }
        w.retain(|k| k.0 != "gpu-nic-path");
        g.retain(|k| k.0 != "gpu-nic-path");
    }
    assert_eq!(
        w.difference(&g).collect::<Vec<_>>(),
        g.difference(&w).collect::<Vec<_>>(),
        "{name} {form:?}: findings of the checks text can show (tree only, text only)"
    );
    // The rest: a fault the tree shows is unknown from text, never a pass. (A VM is seen in
    // its QEMU bridges' names, which `-t` does not print: the tree alone cannot show it, and
    // says it is no full listing.)
    for f in want.findings.iter().filter(|f| {
        !SHOWN.contains(&f.id)
            && matches!(f.severity, Severity::Error | Severity::Warning)
            && !(form == Form::Tvnn && f.id == CheckId::Virtualized)
    }) {
        // GPUDirect Storage and AMD's KFD checks rest on files no lspci text holds: the
        // input's limits say so.
        let said = |words: &str| {
            got.findings
                .iter()
                .any(|x| x.id == CheckId::InputLimits && x.summary.contains(words))
        };
        let gds = matches!(
            f.id,
            CheckId::GdsKernel | CheckId::GdsConfig | CheckId::GdsPath | CheckId::GdsMounts
        ) && said("no GPUDirect Storage facts")
            || f.id.as_str().starts_with("amd-") && said("no KFD topology");
        assert!(
            gds || got
                .findings
                .iter()
                .any(|x| x.id == f.id
                    && (x.severity == f.severity || x.severity == Severity::Unknown)),
            "{name} {form:?}: {:?} {} lost",
            f.id,
            f.summary
        );
    }
    // And no false alarm: an error or warning from the text is one the tree gives too (same
    // check and subject), or of a check the tree gives at least as severe.
    let tree_keys: BTreeSet<_> = want.findings.iter().map(|f| key(tree, f)).collect();
    for f in got
        .findings
        .iter()
        .filter(|f| matches!(f.severity, Severity::Error | Severity::Warning))
    {
        let k = key(&t, f);
        assert!(
            tree_keys.contains(&k) || case.text_only.contains(&k.2.as_str()),
            "{name} {form:?}: the text gives {k:?} ({}), the tree does not",
            f.summary
        );
    }
}

/// A Grace tray without Data Direct (GH200/GB200-like: each GPU reaches its NIC through the
/// Grace CPU, over C2C): the tree infers C2C from the GPU memory's NUMA node and NCCL's P2C
/// path follows; lspci text shows neither, so every GPU–NIC verdict the tree does not give as
/// a fault is unknown from the text ("C2C not visible"), never an error or warning.
#[test]
fn grace_without_data_direct_is_unknown_not_a_fault_from_text() {
    let mut spec = layouts::gb300_tray();
    // The DMA functions and the switch ports they hang from.
    let dma: Vec<Bdf> = spec
        .functions
        .iter()
        .filter(|f| f.vendor == 0x15b3 && f.device == 0x2100)
        .flat_map(|f| [Some(f.bdf), f.parent])
        .flatten()
        .collect();
    spec.functions.retain(|f| !dma.contains(&f.bdf));
    let dir = scratch();
    synth::write_tree(&spec, dir.path(), &WriteOptions::default()).unwrap();
    let tree = sources::load(Some(dir.path()), &LoadOptions::default()).unwrap();
    assert!(tree.devices.iter().any(|d| d.c2c.is_some()));
    let want = audit::run(&tree, &AuditOptions::default());
    let Some(text) = Form::TvVvv.print(dir.path()) else {
        return;
    };
    let file = dir.path().join("lspci.txt");
    std::fs::write(&file, text).unwrap();
    let t = sources::load(Some(&file), &LoadOptions::default()).unwrap();
    let got = audit::run(&t, &AuditOptions::default());
    // The tree: C2C inferred, NCCL's P2C, GPUDirect RDMA on (info).
    let paths = |r: &audit::Report| -> Vec<(Severity, String)> {
        r.findings
            .iter()
            .filter(|f| f.id == CheckId::GpuNicPath && matches!(f.subject, Subject::Device(_)))
            .map(|f| (f.severity, f.summary.clone()))
            .collect()
    };
    let w = paths(&want);
    assert_eq!(w.len(), 4, "{w:#?}");
    assert!(
        w.iter()
            .all(|(s, m)| *s == Severity::Info && m.contains("P2C")),
        "{w:#?}"
    );
    // The text: the same GPUs, unknown, C2C named as the reason first.
    let g = paths(&got);
    assert_eq!(g.len(), 4, "{g:#?}");
    for (s, m) in &g {
        assert_eq!(*s, Severity::Unknown, "{m}");
        assert!(
            m.starts_with("unknown, not a fault: C2C not visible in lspci text"),
            "{m}"
        );
    }
    assert!(
        got.findings
            .iter()
            .filter(|f| matches!(f.severity, Severity::Error | Severity::Warning))
            .all(|f| want.findings.iter().any(|x| key(&tree, x) == key(&t, f))),
        "{:#?}",
        got.findings
    );
}
