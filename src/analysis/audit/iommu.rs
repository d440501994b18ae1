//! `iommu-translation`: the IOMMU translates DMA of a GPU or RDMA NIC (group default domain
//! `DMA` or `DMA-FQ`), or a device is owned by `vfio-pci`.
//!
//! Facts: `Device.iommu_group` (the `/sys/bus/pci/devices/<bdf>/iommu_group` link),
//! `Device.iommu_group_type` (`/sys/kernel/iommu_groups/<n>/type`, kernel ≥ 5.11),
//! `Device.driver`, `MachineInfo.iommu_units` (`/sys/class/iommu`) and the kernel command line
//! (reference §2.3).

use super::{CheckId, Ctx, Evidence, Finding, Severity, Subject, pci_path};
use crate::model::Fact;

fn cmdline_iommu(ctx: &Ctx) -> Option<Evidence> {
    let Fact::Known(c) = &ctx.topo.machine.kernel_cmdline else {
        return None;
    };
    let toks: Vec<&str> = c
        .split_whitespace()
        .filter(|t| t.contains("iommu") || t.starts_with("pci="))
        .collect();
    Some(Evidence::new(
        "/proc/cmdline",
        if toks.is_empty() {
            "(no iommu options)".to_string()
        } else {
            toks.join(" ")
        },
    ))
}

/// Whether the kernel command line asks for passthrough (`iommu=pt` or `iommu.passthrough=1`).
fn pt_on_cmdline(ctx: &Ctx) -> bool {
    ctx.topo.machine.kernel_cmdline.known().is_some_and(|c| {
        c.split_whitespace()
            .any(|t| t == "iommu=pt" || t == "iommu.passthrough=1")
    })
}

/// What the kernel log in the input says of DMA translation ([`crate::model::kmsg`]), with the
/// lines that say it.
enum LogMode {
    /// `Default domain type: Translated` and an IOMMU driver took the devices.
    Translated(Vec<Evidence>),
    /// `Default domain type: Passthrough`.
    Passthrough(Vec<Evidence>),
    /// An IOMMU disabled, or a whole boot log in which no device joined an IOMMU group.
    Off(Vec<Evidence>),
    /// The log says something, but not enough to decide: the reason and its lines.
    Undecided(String, Vec<Evidence>),
}

fn log_mode(ctx: &Ctx) -> Option<LogMode> {
    let k = &ctx.topo.machine.kernel_log;
    let at = |l: &crate::model::kmsg::LogLine| {
        Evidence::new(
            format!("{} line {}", ctx.topo.source.path, l.line),
            l.text.clone(),
        )
    };
    if let Some(off) = &k.iommu_off {
        return Some(LogMode::Off(vec![at(off)]));
    }
    let on: Vec<Evidence> = k
        .iommu_on
        .iter()
        .map(at)
        .chain(k.groups.first().map(|(_, _, l)| at(l)))
        .collect();
    // An AMD root complex enables its IOMMU by default (amd_iommu=off turns it off); Intel's
    // needs intel_iommu=on unless the kernel was built default-on, so only AMD counts here.
    let mut on_translated = Vec::new();
    if on.is_empty()
        && let Some(rc) = ctx.topo.devices.iter().find(|d| {
            // Its root ports, or the root complex function at 00.0 of a root bus.
            d.vendor_id == Some(0x1022)
                && (d.kind == crate::model::DeviceKind::RootPort
                    || (d.parent.is_none() && d.bdf.device == 0 && d.bdf.function == 0))
        })
    {
        on_translated.push(Evidence::new(
            crate::analysis::audit::pci_path(&rc.bdf, "vendor"),
            "0x1022: an AMD root complex, whose IOMMU the kernel enables by default (no amd_iommu=off seen)",
        ));
    }
    match &k.default_domain {
        Some((t, l)) if t == "Passthrough" => Some(LogMode::Passthrough(vec![at(l)])),
        // A whole boot log says it itself: an IOMMU took devices, or none did.
        Some((t, l)) if t == "Translated" && !on.is_empty() => {
            Some(LogMode::Translated(std::iter::once(at(l)).chain(on).collect()))
        }
        Some((t, l)) if k.from_boot && on.is_empty() => Some(LogMode::Off(vec![
            at(l),
            Evidence::new(
                format!("{} (kernel log)", ctx.topo.source.path),
                format!("default domain {t}, but no IOMMU driver took a device: no `Adding to iommu group` line in the boot log"),
            ),
        ])),
        // A part of the log (a grep): an AMD root complex's IOMMU is on unless turned off.
        Some((t, l)) if t == "Translated" && !on_translated.is_empty() => Some(
            LogMode::Translated(std::iter::once(at(l)).chain(on_translated).collect()),
        ),
        Some((t, l)) => Some(LogMode::Undecided(
            format!("the kernel log says `Default domain type: {t}` but not whether an IOMMU driver took the devices (the log does not start at boot)"),
            vec![at(l)],
        )),
        None if k.from_boot && on.is_empty() => Some(LogMode::Off(vec![Evidence::new(
            format!("{} (kernel log)", ctx.topo.source.path),
            "the boot log shows no IOMMU driver enabling DMA remapping (no `DMAR: Intel(R) Virtualization Technology for Directed I/O`, no `AMD-Vi: Found IOMMU`) and no device added to an IOMMU group",
        )])),
        None if !on.is_empty() => Some(LogMode::Undecided(
            "an IOMMU is on, but the kernel log prints no default domain type (kernels before 5.2 do not)".into(),
            on,
        )),
        None => None,
    }
}

/// Runs the check over every GPU and RDMA NIC.
pub fn iommu_translation(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut unknown = Vec::new();
    let mut booted_pt = Vec::new();
    let units = &ctx.topo.machine.iommu_units;
    for d in ctx.gpus.iter().chain(ctx.nics.iter()) {
        if d.driver.as_deref() == Some("vfio-pci") {
            out.push(
                Finding::new(
                    CheckId::IommuTranslation,
                    Severity::Warning,
                    Subject::Device(d.bdf),
                    format!("{} is bound to vfio-pci (passed to a VM or user-space driver): its IOMMU domain is the VM's, not the group's default type", ctx.name(&d.bdf)),
                    "if this node should run GPU jobs itself, unbind vfio-pci and bind the native driver; for a VM, enable ATS on the NIC and ACS Direct Translated P2P on the host",
                )
                .with(pci_path(&d.bdf, "driver"), "vfio-pci"),
            );
            continue;
        }
        match (d.iommu_group, d.iommu_group_type.as_deref()) {
            (Some(g), Some(t @ ("DMA" | "DMA-FQ"))) => {
                let sev = ctx.config_fault_severity();
                let mut f = Finding::new(
                    CheckId::IommuTranslation,
                    sev,
                    Subject::Device(d.bdf),
                    format!("IOMMU translates DMA of {} {} (group {g} type {t}): GPUDirect RDMA hangs or loses bandwidth", d.kind.as_str(), ctx.name(&d.bdf)),
                    if pt_on_cmdline(ctx) {
                        format!("`iommu=pt` is already on the kernel command line, so this group was switched to translation at run time (or by a driver): with the driver unbound, `echo identity > /sys/kernel/iommu_groups/{g}/type`, and find what set it")
                    } else {
                        format!("boot with `iommu=pt` (plus `intel_iommu=on` / `amd_iommu=on` as needed), or with the driver unbound set the group to passthrough: `echo identity > /sys/kernel/iommu_groups/{g}/type`")
                    },
                )
                .with(format!("/sys/kernel/iommu_groups/{g}/type"), t)
                .with(pci_path(&d.bdf, "iommu_group"), format!("../../../kernel/iommu_groups/{g}"))
                .with_pairs(ctx.pairs_of(&d.bdf).map(|p| p.to_ref()));
                f.evidence.extend(cmdline_iommu(ctx));
                out.push(f);
            }
            // From lspci text the type is the boot default `iommu=pt` gives (sources::lspci).
            (Some(g), Some(t)) if ctx.topo.source.kind == "lspci" => booted_pt.push(Evidence::new(
                pci_path(&d.bdf, "iommu_group"),
                format!("{}: IOMMU group {g}, type {t} from the kernel command line", d.bdf),
            )),
            (Some(_), Some(_)) => {} // identity, unmanaged, blocked: not translated for this use
            (Some(g), None) if ctx.topo.source.kind == "lspci" => unknown.push(Evidence::new(
                pci_path(&d.bdf, "iommu_group"),
                format!("{}: IOMMU group {g}; lspci text does not say the group's type (DMA or identity)", d.bdf),
            )),
            (Some(g), None) => unknown.push(Evidence::new(
                format!("/sys/kernel/iommu_groups/{g}/type"),
                format!("{}: absent (kernel < 5.11) or not captured", d.bdf),
            )),
            (None, _) => match units {
                Fact::Known(u) if u.is_empty() => {} // no IOMMU registered: DMA is untranslated
                Fact::Known(_) => {}                 // IOMMU present but device not grouped
                Fact::Unknown(r) => unknown.push(Evidence::new(
                    pci_path(&d.bdf, "iommu_group"),
                    format!("{}: absent; /sys/class/iommu unknown ({r})", d.bdf),
                )),
            },
        }
    }
    if !booted_pt.is_empty() {
        let mut f = Finding::new(
            CheckId::IommuTranslation,
            Severity::Info,
            Subject::Node,
            format!(
                "IOMMU passthrough for {} GPU/NIC device(s): `iommu=pt` on the kernel command line makes every group's default domain identity at boot; a group switched to DMA at run time is not visible in lspci text",
                booted_pt.len()
            ),
            "none; to be sure no group was switched, audit the live machine (/sys/kernel/iommu_groups/<n>/type)",
        );
        f.evidence.extend(cmdline_iommu(ctx).map(|mut e| {
            e.path = format!("{} (kernel command line)", ctx.topo.source.path);
            e
        }));
        out.push(f.with_all(booted_pt));
    }
    if !unknown.is_empty()
        && let Some(mode) = log_mode(ctx)
    {
        out.push(from_log(ctx, mode, unknown));
        return out;
    }
    if !unknown.is_empty() {
        out.push(
            Finding::new(
                CheckId::IommuTranslation,
                Severity::Unknown,
                Subject::Node,
                format!("IOMMU mode unknown for {} GPU/NIC device(s): group type not readable", unknown.len()),
                "audit the live machine (kernel ≥ 5.11 exposes /sys/kernel/iommu_groups/<n>/type); check `dmesg | grep 'Default domain type'`",
            )
            .with_all(unknown),
        );
    }
    out
}

/// The finding for devices whose group type the input does not hold, decided by the kernel
/// log's lines ([`log_mode`]); `devices` are their per-device evidence.
fn from_log(ctx: &Ctx, mode: LogMode, devices: Vec<Evidence>) -> Finding {
    let n = devices.len();
    let (f, lines) = match mode {
        LogMode::Translated(ev) => (
            Finding::new(
                CheckId::IommuTranslation,
                ctx.config_fault_severity(),
                Subject::Node,
                format!(
                    "IOMMU translates DMA of {n} GPU/NIC device(s): the kernel log says the default domain is Translated and an IOMMU driver took the devices; GPUDirect RDMA hangs or loses bandwidth"
                ),
                "boot with `iommu=pt` (AMD: `amd_iommu=on iommu=pt`; Intel: `intel_iommu=on iommu=pt`), then check `dmesg | grep 'Default domain type'` says Passthrough",
            ),
            ev,
        ),
        LogMode::Passthrough(ev) => (
            Finding::new(
                CheckId::IommuTranslation,
                Severity::Info,
                Subject::Node,
                format!(
                    "IOMMU passthrough for {n} GPU/NIC device(s): the kernel log says the default domain is Passthrough; a group switched to DMA at run time is not in the log"
                ),
                "none; to be sure no group was switched, audit the live machine (/sys/kernel/iommu_groups/<n>/type)",
            ),
            ev,
        ),
        LogMode::Off(ev) => (
            Finding::new(
                CheckId::IommuTranslation,
                Severity::Info,
                Subject::Node,
                format!(
                    "IOMMU does not translate DMA of {n} GPU/NIC device(s): the kernel log shows no IOMMU driver remapping DMA"
                ),
                "none",
            ),
            ev,
        ),
        LogMode::Undecided(why, ev) => (
            Finding::new(
                CheckId::IommuTranslation,
                Severity::Unknown,
                Subject::Node,
                format!("IOMMU mode unknown for {n} GPU/NIC device(s): {why}"),
                "audit the live machine (kernel ≥ 5.11 exposes /sys/kernel/iommu_groups/<n>/type); check `dmesg | grep -e 'Default domain type' -e 'iommu group'`",
            ),
            ev,
        ),
    };
    f.with_all(lines).with_all(devices)
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::analysis::classify::Classifier;

    #[test]
    fn dma_group_on_nic_is_error_naming_group() {
        let mut d = hgx(2);
        edit(&mut d, "0000:14:00.0", |n| {
            n.iommu_group_type = Some("DMA-FQ".into())
        });
        let t = topo(d, machine());
        let f = iommu_translation(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[0].subject, Subject::Device(b("0000:14:00.0")));
        assert_eq!(f[0].evidence[0].path, "/sys/kernel/iommu_groups/20/type");
        assert_eq!(f[0].evidence[0].value, "DMA-FQ");
        assert!(
            iommu_translation(&Ctx::new(&Classifier::new(&clean(), &Default::default())))
                .is_empty()
        );
    }

    #[test]
    fn vfio_is_flagged() {
        let mut d = hgx(2);
        edit(&mut d, "0000:13:00.0", |g| {
            g.driver = Some("vfio-pci".into())
        });
        let t = topo(d, machine());
        let f = iommu_translation(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].subject, Subject::Device(b("0000:13:00.0")));
    }

    #[test]
    fn the_kernel_log_decides_what_the_text_cannot_show() {
        use crate::model::kmsg::LogLine;
        let line = |n: usize, t: &str| LogLine {
            line: n,
            text: t.into(),
        };
        let mut d = hgx(2);
        for x in &mut d {
            x.iommu_group_type = None;
        }
        let mut m = machine();
        m.iommu_units = Fact::Unknown("lspci text does not list IOMMU units".into());
        m.kernel_log.default_domain = Some((
            "Translated".into(),
            line(4, "[    1.23] iommu: Default domain type: Translated"),
        ));
        m.kernel_log.iommu_on = Some(line(3, "pci 0000:00:00.2: AMD-Vi: Found IOMMU cap 0x40"));
        let mut t = topo(d.clone(), m.clone());
        t.source.kind = "lspci".into();
        let f = iommu_translation(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].severity,
            Severity::Error,
            "Translated with AMD-Vi on is a fault, not unknown"
        );
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.path.ends_with("line 4") && e.value.contains("Translated"))
        );
        // Translated printed, but the log does not start at boot and shows no IOMMU (an Intel
        // root complex, which needs intel_iommu=on): unknown.
        m.kernel_log.iommu_on = None;
        let mut t = topo(d.clone(), m.clone());
        t.source.kind = "lspci".into();
        let f = iommu_translation(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f[0].severity, Severity::Unknown);
        // A whole boot log in which no IOMMU took a device: off, said as info.
        m.kernel_log.from_boot = true;
        let mut t = topo(d, m);
        t.source.kind = "lspci".into();
        let f = iommu_translation(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f[0].severity, Severity::Info, "{f:?}");
    }

    #[test]
    fn missing_type_is_unknown() {
        let mut d = hgx(2);
        edit(&mut d, "0000:13:00.0", |g| g.iommu_group_type = None);
        let t = topo(d, machine());
        let f = iommu_translation(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Unknown);
    }
}
