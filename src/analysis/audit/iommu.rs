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
    fn missing_type_is_unknown() {
        let mut d = hgx(2);
        edit(&mut d, "0000:13:00.0", |g| g.iommu_group_type = None);
        let t = topo(d, machine());
        let f = iommu_translation(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Unknown);
    }
}
