//! Checks for today's platforms, with the rules NVIDIA's `rdma_topo` applies
//! (linux-rdma/rdma-core `kernel-boot/rdma_topo`: `compute_acs`, each complex's `check`):
//! per-port ACS as the platform needs it (`acs-redirect`, called from
//! [`super::pcie::acs_redirect`]), IOMMU groups (`iommu-group`), the ConnectX-8 Data Direct DMA
//! function (`data-direct`) and a Grace GPU's C2C link (`c2c-link`). The platform and its
//! complexes come from [`crate::analysis::nvcx`]; every fact from the one scan.

use super::config_unknown;
use super::{CheckId, Ctx, Evidence, Finding, PairRef, RemedyClass, Severity, Subject, pci_path};
use crate::analysis::nvcx::{self, AcsRule};
use crate::analysis::paths::DevIx;
use crate::model::parts::{self, Part};
use crate::model::pci_config::acs;
use crate::model::rdma_topo::ComplexKind;
use crate::model::{Bdf, DeviceKind};
use std::collections::BTreeSet;

/// The ACS controls set in `control`, as `lspci -vvv` names them, or `none`.
fn names(control: u16) -> String {
    let v = acs::names(control);
    if v.is_empty() {
        "none".into()
    } else {
        v.join(" ")
    }
}

/// The GPU–NIC pairs whose data path crosses a port (or whose ends are the port's complex).
fn pairs_through(ctx: &Ctx, port: DevIx) -> Vec<PairRef> {
    let p = ctx.paths();
    ctx.pairs
        .iter()
        .filter(|x| {
            let on = |b: &Bdf| {
                p.index(b)
                    .is_some_and(|i| p.chain(p.data_path(i)).contains(&port))
            };
            on(&x.gpu) || on(&x.nic)
        })
        .map(|x| x.to_ref())
        .collect()
}

fn rdma_topo_remedy(port: Bdf, rule: &AcsRule, control: u16) -> String {
    let pat = rule.mask.pattern();
    format!(
        "set ACS on {port} to {pat} as rdma_topo computes it: at boot with the kernel parameter `pci=config_acs=\"{pat}@{port}\"` (`rdma_topo write-grub-acs` writes this for every port; needs a kernel with config_acs), or now with `setpci -r -s {port} ECAP_ACS+0x6.w={:04x}` (`rdma_topo setpci-acs`; older kernels need the NVIDIA driver's NVreg_GrdmaPciTopoCheckOverride=1); then `rdma_topo check`",
        rule.mask.apply(control)
    )
}

/// `acs-redirect` on a recognised platform: every port rdma_topo configures is held to its
/// mask; a redirect the mask requires is correct, a required one that is missing and a
/// forbidden one that is set are errors (warnings in a VM). Returns the findings and the ports
/// judged, which the generic rule then leaves alone.
pub fn acs_platform(ctx: &Ctx) -> (Vec<Finding>, BTreeSet<Bdf>) {
    let mut out = Vec::new();
    let mut covered = BTreeSet::new();
    let Some(pl) = &ctx.platform else {
        return (out, covered);
    };
    // Inputs without config space (NCCL and hwloc XML) cannot say; the generic rule reports
    // the ACS it could not read.
    if !ctx.has_config_space() {
        return (out, covered);
    }
    let p = ctx.paths();
    if pl.kind == ComplexKind::Inline && pl.virt.is_none() {
        out.push(Finding::new(
            CheckId::AcsRedirect,
            Severity::Unknown,
            Subject::Node,
            format!(
                "ACS the {} needs unknown: it depends on whether the node is set up for VMs ({})",
                nvcx::kind_words(pl.kind),
                pl.virt_why
            ),
            "run as root so the NICs' ATS capability is readable, or decide the mode and check with `rdma_topo check --virt` / `--no-virt`",
        ));
        return (out, covered);
    }
    let rules = nvcx::expected_acs(p, pl);
    let sev = ctx.config_fault_severity();
    let mut ok: Vec<Evidence> = Vec::new();
    let mut unknown: Vec<(Bdf, String)> = Vec::new();
    for r in &rules {
        covered.insert(p.device(r.port).bdf);
        match acs_port(ctx, pl, r, sev) {
            PortAcs::Unknown(b, why) => unknown.push((b, why)),
            PortAcs::Holds(ev) => ok.push(ev),
            PortAcs::Fault(f) => out.push(f),
            PortAcs::Nothing => {}
        }
    }
    if !ok.is_empty() {
        out.push(acs_held(pl, ok));
    }
    if !unknown.is_empty() {
        out.push(acs_unread(pl, &unknown));
    }
    (out, covered)
}

/// One port's ACS against its rule.
enum PortAcs {
    /// Its config space not readable: the port and why.
    Unknown(Bdf, String),
    /// The control holds the mask: the evidence.
    Holds(Evidence),
    /// No ACS capability where the mask sets bits, or the control breaks the mask.
    Fault(Finding),
    /// No ACS capability and the mask sets nothing.
    Nothing,
}

/// Holds one port rdma_topo configures to its rule's mask.
fn acs_port(ctx: &Ctx, pl: &nvcx::Platform, r: &AcsRule, sev: Severity) -> PortAcs {
    let d = ctx.paths().device(r.port);
    if let Some(why) = config_unknown(d, 4096) {
        return PortAcs::Unknown(d.bdf, why);
    }
    // The port as findings name it, and its finding at the platform's severity.
    let port = format!("{} {} ({})", d.kind.as_str(), d.bdf, r.role);
    let port_finding = |summary: String, remedy: String| {
        Finding::new(
            CheckId::AcsRedirect,
            sev,
            Subject::Device(d.bdf),
            summary,
            remedy,
        )
    };
    let Some(cap) = d.config.as_ref().and_then(|c| c.acs) else {
        if r.mask.set == 0 {
            return PortAcs::Nothing;
        }
        return PortAcs::Fault(
            port_finding(
                format!(
                    "{port} has no ACS capability; the {} needs {}",
                    nvcx::kind_words(pl.kind),
                    r.mask.pattern()
                ),
                "check the port's firmware; rdma_topo cannot configure a port without ACS".into(),
            )
            .with(pci_path(&d.bdf, "config"), "no ACS extended capability")
            .with_pairs(pairs_through(ctx, r.port)),
        );
    };
    let ev = Evidence::new(
        pci_path(&d.bdf, "config"),
        format!(
            "ACSCtl @0x{:03x} = 0x{:04x}: {}",
            cap.offset + 6,
            cap.control,
            names(cap.control)
        ),
    );
    if r.mask.holds(cap.control) {
        return PortAcs::Holds(Evidence::new(
            ev.path,
            format!(
                "{} — {} as required{} for {}",
                ev.value,
                r.mask.pattern(),
                if r.requires_redirect {
                    " (redirect on)"
                } else {
                    ""
                },
                r.role
            ),
        ));
    }
    let mut wrong = Vec::new();
    for (b, n) in acs::NAMES {
        if r.mask.set & b != 0 && cap.control & b == 0 {
            wrong.push(format!("{n} must be on"));
        }
        if r.mask.clear & b != 0 && cap.control & b != 0 {
            wrong.push(format!("{n} must be off"));
        }
    }
    PortAcs::Fault(
        port_finding(
            format!(
                "ACS on {port} is {} (0x{:04x}); the {} needs {}: {}",
                names(cap.control),
                cap.control,
                nvcx::kind_words(pl.kind),
                r.mask.pattern(),
                wrong.join(", ")
            ),
            rdma_topo_remedy(d.bdf, r, cap.control),
        )
        .with_all([ev])
        .with_pairs(pairs_through(ctx, r.port)),
    )
}

/// The ports whose ACS is as the platform needs, in one info finding.
fn acs_held(pl: &nvcx::Platform, ok: Vec<Evidence>) -> Finding {
    Finding::new(
        CheckId::AcsRedirect,
        Severity::Info,
        Subject::Node,
        format!(
            "ACS on {} port(s) as the {} needs (rdma_topo's settings{})",
            ok.len(),
            nvcx::kind_words(pl.kind),
            match pl.virt {
                Some(true) => ", VM mode",
                Some(false) => ", bare metal",
                None => "",
            }
        ),
        "none",
    )
    .with_all(ok)
}

/// The ports whose config space could not be read, in one unknown finding.
fn acs_unread(pl: &nvcx::Platform, unknown: &[(Bdf, String)]) -> Finding {
    Finding::new(
        CheckId::AcsRedirect,
        Severity::Unknown,
        Subject::Node,
        format!(
            "ACS the {} needs unknown on {} port(s): {}",
            nvcx::kind_words(pl.kind),
            unknown.len(),
            unknown[0].1
        ),
        "run `peerpath audit` as root (or `rdma_topo check`) so the full config space is readable",
    )
    .with_all(
        unknown
            .iter()
            .map(|(b, _)| Evidence::new(pci_path(b, "config"), "not readable as a whole")),
    )
}

fn group_of(ctx: &Ctx, i: DevIx) -> (Bdf, Option<u32>) {
    let d = ctx.paths().device(i);
    (d.bdf, d.iommu_group)
}

fn group_ev(b: Bdf, g: Option<u32>) -> Evidence {
    Evidence::new(
        pci_path(&b, "iommu_group"),
        g.map(|g| format!("-> ../../../kernel/iommu_groups/{g}"))
            .unwrap_or_else(|| "(absent)".into()),
    )
}

/// `iommu-group`: the IOMMU groups rdma_topo requires: a Data Direct DMA function and its GPU
/// in one group; on an inline platform NIC and GPU in one group on bare metal (or both without
/// one) and in different groups in VM mode; on a NUMA platform every NIC and GPU of a NUMA node
/// in a group of its own.
pub fn iommu_group(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(pl) = &ctx.platform else {
        return out;
    };
    // Sources without IOMMU groups (NCCL and hwloc XML) cannot say.
    if !ctx.has_device_files() {
        return out;
    }
    let sev = ctx.config_fault_severity();
    let remedy = "IOMMU groups follow ACS: apply rdma_topo's ACS settings (see acs-redirect) and reboot; check with `rdma_topo check`";
    // A group that breaks rdma_topo's rule, at the platform's severity.
    let fault = |subject: Subject, summary: String| {
        Finding::new(CheckId::IommuGroup, sev, subject, summary, remedy)
    };
    let mut unknown = Vec::new();
    let mut ok = Vec::new();
    for c in &pl.complexes {
        match c.kind {
            ComplexKind::DataDirect => {
                let (Some(dma), Some(&g)) = (c.dma, c.gpus.first()) else {
                    continue;
                };
                let (db, dg) = group_of(ctx, dma);
                let (gb, gg) = group_of(ctx, g);
                let ev = [group_ev(db, dg), group_ev(gb, gg)];
                match (dg, gg) {
                    (Some(x), Some(y)) if x == y => ok.extend(ev),
                    (Some(x), Some(y)) => out.push(
                        fault(
Subject::Device(db),
format!("Data Direct DMA function {db} and GPU {gb} are in different IOMMU groups ({x} ≠ {y}); rdma_topo requires one group (ACS Source Validation off on the Grace root port) so the NVIDIA driver's GPUDirect topology check passes without NVreg_GrdmaPciTopoCheckOverride"))
                        .with_all(ev),
                    ),
                    _ => unknown.extend(ev),
                }
            }
            ComplexKind::Inline => {
                let (Some(&x), Some(&g)) = (c.nics.first(), c.gpus.first()) else {
                    continue;
                };
                let Some(virt) = pl.virt else { continue };
                let (nb, ng) = group_of(ctx, x);
                let (gb, gg) = group_of(ctx, g);
                let ev = [group_ev(nb, ng), group_ev(gb, gg)];
                let good = match (virt, ng, gg) {
                    (false, None, None) => true,
                    (false, a, b) => a == b,
                    (true, Some(a), Some(b)) => a != b,
                    (true, _, _) => false,
                };
                if good {
                    ok.extend(ev);
                } else {
                    out.push(
                        fault(
Subject::Device(nb),
if virt {
                                format!("NIC {nb} and GPU {gb} must be in different IOMMU groups when the node is set up for VMs (rdma_topo); they are {} and {}", show(ng), show(gg))
                            } else {
                                format!("NIC {nb} and GPU {gb} must share an IOMMU group on bare metal (rdma_topo); they are {} and {}", show(ng), show(gg))
                            })
                        .with_all(ev),
                    );
                }
            }
            ComplexKind::Numa => {
                let devs: Vec<DevIx> = c.nics.iter().chain(c.gpus.iter()).copied().collect();
                let groups: Vec<(Bdf, Option<u32>)> =
                    devs.iter().map(|&i| group_of(ctx, i)).collect();
                let ev: Vec<Evidence> = groups.iter().map(|&(b, g)| group_ev(b, g)).collect();
                if groups.iter().any(|(_, g)| g.is_none()) {
                    unknown.extend(ev);
                    continue;
                }
                let mut seen = BTreeSet::new();
                let dup: Vec<u32> = groups
                    .iter()
                    .filter_map(|&(_, g)| g)
                    .filter(|g| !seen.insert(*g))
                    .collect();
                if dup.is_empty() {
                    ok.extend(ev);
                } else {
                    out.push(
                        fault(
Subject::Node,
format!("NUMA node {}: NICs and GPUs share IOMMU group(s) {dup:?}; rdma_topo requires a group of its own for each", c.numa.map(|n| n.to_string()).unwrap_or_else(|| "?".into())))
                        .with_all(ev),
                    );
                }
            }
        }
    }
    if !ok.is_empty() {
        out.push(
            Finding::new(
                CheckId::IommuGroup,
                Severity::Info,
                Subject::Node,
                format!(
                    "IOMMU groups as the {} needs (rdma_topo's check)",
                    nvcx::kind_words(pl.kind)
                ),
                "none",
            )
            .with_all(ok),
        );
    }
    if !unknown.is_empty() {
        out.push(
            Finding::new(
                CheckId::IommuGroup,
                Severity::Unknown,
                Subject::Node,
                format!(
                    "IOMMU groups the {} needs unknown: some devices have no iommu_group (IOMMU off, or not captured)",
                    nvcx::kind_words(pl.kind)
                ),
                "audit the live machine with the IOMMU on (iommu.passthrough=1 / iommu=pt keeps it out of the data path)",
            )
            .with_all(unknown),
        );
    }
    out
}

fn show(g: Option<u32>) -> String {
    g.map(|g| format!("group {g}"))
        .unwrap_or_else(|| "no group".into())
}

/// `data-direct`: each ConnectX-8 Data Direct DMA function is bound to `mlx5_ib` (else
/// `mlx5dv_get_data_direct_sysfs_path` fails and NCCL cannot open `<dev>_dma`:
/// NVIDIA/nccl#1866), paired with an RDMA function, and sits in one ConnectX switch with one GPU
/// under a Grace root port (rdma_topo's DMA complex); rdma_topo's JSON, when given, agrees.
pub fn data_direct(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(pl) = ctx
        .platform
        .as_ref()
        .filter(|p| p.kind == ComplexKind::DataDirect)
    else {
        return out;
    };
    let p = ctx.paths();
    let sysfs = matches!(ctx.topo.source.kind.as_str(), "sysfs" | "snapshot");
    for c in &pl.complexes {
        let Some(dma) = c.dma else { continue };
        let d = p.device(dma);
        let mut bad: Vec<String> = Vec::new();
        let mut ev = vec![Evidence::new(
            pci_path(&d.bdf, "device"),
            format!(
                "0x{:04x} (class 0x{:06x})",
                d.device_id.unwrap_or(0),
                d.class
            ),
        )];
        if sysfs {
            match d.driver.as_deref() {
                Some("mlx5_ib") => ev.push(Evidence::new(pci_path(&d.bdf, "driver"), "mlx5_ib")),
                Some(other) => {
                    ev.push(Evidence::new(pci_path(&d.bdf, "driver"), other));
                    bad.push(format!("bound to {other}, not mlx5_ib's Data Direct driver: mlx5dv_get_data_direct_sysfs_path fails and NCCL cannot use {}_dma (NVIDIA/nccl#1866)", "<dev>"));
                }
                None => {
                    ev.push(Evidence::new(pci_path(&d.bdf, "driver"), "(absent)"));
                    bad.push("bound to no driver: mlx5_ib (with the mlx5_data_direct driver, Linux ≥ 6.12 or MLNX_OFED) must claim it, else NCCL finds no <dev>_dma (NVIDIA/nccl#1866)".into());
                }
            }
        }
        let users: Vec<String> = c
            .nics
            .iter()
            .map(|&u| {
                let x = p.device(u);
                if let Some(dd) = &x.data_direct {
                    ev.push(Evidence::new(pci_path(&x.bdf, "vpd"), dd.evidence.clone()));
                }
                ctx.name(&x.bdf)
            })
            .collect();
        let self_nic = d.data_direct.is_some();
        let mut unpaired_unknown = false;
        if users.is_empty() && !self_nic {
            if d.vpd.is_empty() {
                out.push(
                    Finding::new(
                        CheckId::DataDirect,
                        Severity::Unknown,
                        Subject::Device(d.bdf),
                        format!(
                            "Data Direct DMA function {}: its RDMA function is unknown ({})",
                            d.bdf,
                            if sysfs {
                                "VPD readable by root only"
                            } else {
                                "this input holds no VPD"
                            }
                        ),
                        "audit the live node as root, or pass rdma_topo's JSON with --rdma-topo",
                    )
                    .with(pci_path(&d.bdf, "vpd"), "(not readable)"),
                );
                unpaired_unknown = true;
            } else {
                bad.push(
                    "no RDMA function carries its board UUID: the DMA function is not paired"
                        .into(),
                );
            }
        }
        for prob in &c.problems {
            // With the VPD unread the pairing is unknown (said above), not a fault.
            if unpaired_unknown && prob.ends_with("is not paired with an RDMA function") {
                continue;
            }
            bad.push(format!("{prob} (rdma_topo: unexpected topology)"));
        }
        if let (Some(&g), Some(rt)) = (c.gpus.first(), ctx.topo.rdma_topo.as_ref()) {
            let gb = p.device(g).bdf;
            match rt.complexes.iter().find(|x| x.dma == Some(d.bdf)) {
                Some(x) if x.gpus.contains(&gb) => ev.push(Evidence::new(
                    rt.path.clone(),
                    format!("rdma_topo: rdma_dma_bdf {} gpu_bdf {gb}", d.bdf),
                )),
                Some(x) => bad.push(format!(
                    "rdma_topo pairs it with GPU {:?}, peerpath with {gb}",
                    x.gpus.iter().map(|b| b.to_string()).collect::<Vec<_>>()
                )),
                None => bad.push(format!(
                    "rdma_topo's JSON ({}) has no complex for it",
                    rt.path
                )),
            }
        }
        if bad.is_empty() && unpaired_unknown {
            continue;
        }
        if bad.is_empty() {
            out.push(
                Finding::new(
                    CheckId::DataDirect,
                    Severity::Info,
                    Subject::Device(d.bdf),
                    format!(
                        "Data Direct DMA function {} carries the GPU traffic of {} next to GPU {}",
                        d.bdf,
                        if users.is_empty() {
                            d.rdma_names().collect::<Vec<_>>().join(", ")
                        } else {
                            users.join(", ")
                        },
                        c.gpus
                            .first()
                            .map(|&g| p.device(g).bdf.to_string())
                            .unwrap_or_else(|| "?".into())
                    ),
                    "none",
                )
                .with_all(ev),
            );
        } else {
            let sev = ctx.config_fault_severity();
            out.push(
                Finding::new(
                    CheckId::DataDirect,
                    sev,
                    Subject::Device(d.bdf),
                    format!("Data Direct DMA function {}: {}", d.bdf, bad.join("; ")),
                    "load mlx5_ib with Data Direct support (Linux ≥ 6.12 or MLNX_OFED), check the ConnectX-8 firmware's Data Direct setting, and compare with `rdma_topo topology`; meanwhile NCCL_IB_DATA_DIRECT=0 makes NCCL use the RDMA function's own (C2C) path",
                )
                .with_all(ev),
            );
        }
    }
    out
}

/// `c2c-link`: every Grace GPU has its NVLink-C2C link with all links up. A GPU under a
/// Grace/Vera root port, or on a platform whose other GPUs report C2C, without C2C facts is a
/// warning; links known up fewer than NVML's count are an error; a link known only by inference
/// is unknown.
pub fn c2c_link(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let p = ctx.paths();
    let any = ctx.gpus.iter().any(|g| g.c2c.is_some());
    for g in &ctx.gpus {
        let Some(i) = p.index(&g.bdf) else { continue };
        let on_grace = p
            .chain(i)
            .last()
            .is_some_and(|&r| parts::part_of(p.device(r)).is_some_and(Part::is_nvidia_root_port));
        let Some(c) = &g.c2c else {
            if (on_grace || any) && g.vendor_id == Some(0x10de) && g.kind == DeviceKind::Gpu {
                if ctx.topo.source.kind == "lspci" {
                    // C2C is inferred from the GPU memory's NUMA node (the driver's
                    // numa_status) or read from NVML; lspci text holds neither.
                    out.push(Finding::new(
                        CheckId::C2cLink,
                        Severity::Unknown,
                        Subject::Device(g.bdf),
                        format!("GPU {}: NVLink-C2C unknown: it {}, but C2C is not visible in lspci text (the GPU memory's NUMA node in /proc/driver/nvidia/gpus/BDF/numa_status, or NVML, shows it)", g.bdf, if on_grace { "sits under a Grace/Vera root port" } else { "is on a node whose other GPUs have one" }),
                        "read `nvidia-smi c2c -s` on the node, or audit the live node or a snapshot of it",
                    ));
                    continue;
                }
                out.push(Finding::new(
                    CheckId::C2cLink,
                    if ctx.topo.source.kind == "nccl-xml" {
                        Severity::Error
                    } else {
                        Severity::Warning
                    },
                    Subject::Device(g.bdf),
                    format!("GPU {} shows no NVLink-C2C link while {}", g.bdf, if on_grace { "it sits under a Grace/Vera root port" } else { "other GPUs of this node have one" }),
                    "read `nvidia-smi c2c -s` (or NVML C2C field values) on the live node; a missing C2C link needs the GPU/tray serviced",
                ));
            }
            continue;
        };
        let ev = Evidence::new(format!("GPU {} C2C", g.bdf), c.source.clone());
        let serviced = "a C2C link down needs the tray serviced";
        let (sev, summary, remedy) = match (c.links_up, c.links_total) {
            (Some(up), Some(total)) if up < total => (
                Severity::Error,
                format!("GPU {}: {up} of {total} NVLink-C2C links up", g.bdf),
                format!(
                    "check `nvidia-smi c2c -s` and the kernel log (Xid) on the node; {serviced}"
                ),
            ),
            (Some(0), _) => (
                Severity::Error,
                format!("GPU {}: no NVLink-C2C link up", g.bdf),
                format!("check `nvidia-smi c2c -s` and the kernel log (Xid); {serviced}"),
            ),
            (Some(up), _) => (
                Severity::Info,
                format!(
                    "GPU {}: {up} NVLink-C2C link(s) up{}",
                    g.bdf,
                    match c.gbytes_per_s() {
                        Some(x) => format!(", {x:.1} GB/s in NCCL's model"),
                        None => String::new(),
                    }
                ),
                "none (compare with the expected count with --profile gb300)".to_string(),
            ),
            (None, _) => (
                Severity::Unknown,
                format!(
                    "GPU {}: NVLink-C2C link present, how many links are up is unknown",
                    g.bdf
                ),
                "audit the live node (NVML C2C field values), or read `nvidia-smi c2c -s`"
                    .to_string(),
            ),
        };
        out.push(
            Finding::new(
                CheckId::C2cLink,
                sev,
                Subject::Device(g.bdf),
                summary,
                remedy,
            )
            .with_all([ev]),
        );
    }
    out
}

/// GPUs whose GPU–NIC path this input cannot show, with the reason: a GPU next to a Data
/// Direct DMA function whose RDMA function is unknown (no VPD read, no rdma_topo JSON: the NIC
/// that carries its traffic cannot be told), and, from `lspci` text, an NVIDIA GPU under a
/// Grace/Vera root port without C2C facts (C2C + PHB is NCCL's P2C; the GPU memory's NUMA node
/// that shows C2C is not in the text).
pub fn unseen_paths(ctx: &Ctx) -> Vec<(Bdf, String)> {
    let p = ctx.paths();
    let mut out = Vec::new();
    if let Some(pl) = ctx
        .platform
        .as_ref()
        .filter(|pl| pl.kind == ComplexKind::DataDirect && ctx.topo.rdma_topo.is_none())
    {
        for c in &pl.complexes {
            let Some(dma) = c.dma.map(|i| p.device(i)) else {
                continue;
            };
            if c.nics.is_empty() && dma.data_direct.is_none() && dma.vpd.is_empty() {
                for &g in &c.gpus {
                    out.push((p.device(g).bdf, format!("Data Direct not visible in this input: the RDMA function of DMA function {} next to it is unknown (no VPD board UUID read)", dma.bdf)));
                }
            }
        }
    }
    if ctx.topo.source.kind == "lspci" {
        for g in ctx
            .gpus
            .iter()
            .filter(|g| g.c2c.is_none() && g.vendor_id == Some(0x10de))
        {
            let on_grace = p.index(&g.bdf).is_some_and(|i| {
                p.chain(i).last().is_some_and(|&r| {
                    parts::part_of(p.device(r)).is_some_and(Part::is_nvidia_root_port)
                })
            });
            if on_grace && !out.iter().any(|(b, _)| *b == g.bdf) {
                out.push((g.bdf, "C2C not visible in lspci text: under a Grace/Vera root port its path to a NIC through the CPU may be NCCL's P2C (NVLink-C2C), which needs the GPU memory's NUMA node (numa_status) or NVML".into()));
            }
        }
    }
    out
}

/// The remedy class of each GPU–NIC pair whose GPU's path this input cannot show
/// ([`unseen_paths`]): `misplaced` ("move a NIC") and `design` ("no arrangement does better")
/// are claims about a path the input does not show, so they become `unknown`; `none` and
/// `setting` stay (they do not rest on the unseen path being worse). What `place` and the
/// report read of the pair (`pairs[].remedy`), beside the finding [`withdraw_unseen_paths`]
/// makes unknown.
pub fn unsettle_unseen_pairs(unseen: &[(Bdf, String)], pairs: &mut [super::Pair]) {
    for p in pairs.iter_mut().filter(|p| {
        matches!(p.remedy, RemedyClass::Misplaced | RemedyClass::Design)
            && unseen.iter().any(|(g, _)| *g == p.gpu)
    }) {
        p.remedy = RemedyClass::Unknown;
    }
}

/// A `gpu-nic-path` error, warning or unknown about a GPU whose path this input cannot show
/// ([`unseen_paths`]) becomes unknown with the reason first; so does a NIC's "not at PIX/PXB"
/// warning on such a platform (its GPU may reach it over C2C or Data Direct). The verdicts
/// themselves are the placement check's; only their certainty is withdrawn.
pub fn withdraw_unseen_paths(ctx: &Ctx, findings: &mut [Finding]) {
    let unseen = unseen_paths(ctx);
    if unseen.is_empty() {
        return;
    }
    for f in findings.iter_mut().filter(|f| {
        f.id == CheckId::GpuNicPath
            && matches!(
                f.severity,
                Severity::Error | Severity::Warning | Severity::Unknown
            )
    }) {
        let why = match &f.subject {
            // (An unknown of the placement check itself gets the reason too: its words about
            // GPUDirect RDMA assume the PCIe path.)
            Subject::Device(b) => unseen.iter().find(|(g, _)| g == b).map(|(_, w)| w.clone()),
            Subject::Nic { .. } if f.severity != Severity::Unknown => Some(format!(
                "its GPUs' paths are not all visible in this input ({})",
                unseen
                    .iter()
                    .map(|(g, _)| g.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => None,
        };
        if let Some(why) = why {
            f.severity = Severity::Unknown;
            f.summary = format!(
                "unknown, not a fault: {why}; what the input shows: {}",
                f.summary
            );
        }
    }
}
