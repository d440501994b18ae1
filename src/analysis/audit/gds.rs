//! GPUDirect Storage (GDS): the same silent fallback as GPUDirect RDMA, for NVMe and for file
//! systems over RDMA. When the kernel path or the PCIe path is wrong, cuFile reads through a
//! bounce buffer in host memory (compat mode) and nothing fails.
//!
//! Checks: `gds-kernel` (nvidia-fs loaded, or the upstream PCI P2PDMA path's prerequisites),
//! `gds-config` (`/etc/cufile.json`: compat mode, `use_pci_p2pdma`, RDMA addresses,
//! `max_direct_io_size_kb`), `gds-path` (ACS redirect and IOMMU translation between GPUs and data
//! drives), `gds-drive-placement` (a data drive behind another root complex or socket than
//! every GPU) and `gds-mounts` (the file systems on the data drives or over RDMA, and whether
//! GDS supports them).
//!
//! Facts: [`crate::model::storage::StorageFacts`] (nvidia-fs, cufile.json, kernel release,
//! `CONFIG_PCI_P2PDMA`, nvme_core multipath, NVIDIA registry keys, the mount table),
//! `MachineInfo.nvidia_driver`/`nvidia_module_version`, config-space ACS and IOMMU groups of the
//! ports and drives, and the labels of [`crate::analysis::storage`]. Sources: docs/audit.md
//! (NVIDIA's GDS configuration, troubleshooting and P2PDMA guides, the nvidia-fs README).

use super::{CheckId, Ctx, Evidence, Finding, Severity, Subject, config_unknown, pci_path};
use crate::analysis::classify::Label;
use crate::analysis::storage::{controller, data_drives, mounts_on};
use crate::model::storage::{CufileConfig, DEFAULT_MAX_DIRECT_IO_SIZE_KB, Mount, StorageFacts};
use crate::model::{Bdf, Device, DeviceKind};
use std::collections::BTreeMap;

/// File systems nvidia-fs serves directly on NVMe (ext4 only in ordered mode).
const LOCAL_FS: &[&str] = &["ext4", "xfs"];
/// Distributed file systems GDS reads over RDMA (`nfs` only with `proto=rdma`): Lustre (DDN
/// EXAScaler), IBM Spectrum Scale, WekaFS, BeeGFS, NFS (VAST, NetApp, Dell), ScaTeFS.
const RDMA_FS: &[&str] = &[
    "lustre", "gpfs", "wekafs", "beegfs", "nfs", "nfs4", "scatefs",
];

fn storage<'a>(ctx: &'a Ctx) -> &'a StorageFacts {
    &ctx.topo.machine.storage
}

/// Something here GDS would read: a data NVMe drive, or a file system mounted over RDMA.
fn has_target(ctx: &Ctx) -> bool {
    !data_drives(ctx.topo).is_empty()
        || storage(ctx)
            .mounts
            .known()
            .is_some_and(|t| t.mounts.iter().any(rdma_fs))
}

/// GDS is in use here: nvidia-fs is loaded, or `/etc/cufile.json` exists and there is something
/// to read with it. cufile.json alone is no evidence: CUDA's toolkit installs it (through
/// `/etc/alternatives`) on machines that never use GDS.
fn expected(ctx: &Ctx) -> bool {
    let s = storage(ctx);
    s.nvidia_fs.is_some() || (s.cufile.is_some() && has_target(ctx))
}

fn cufile(s: &StorageFacts) -> Option<&CufileConfig> {
    s.cufile.as_ref().and_then(|c| c.config.as_ref())
}

fn nvme_count(ctx: &Ctx) -> usize {
    ctx.topo.of_kind(DeviceKind::Nvme).count()
}

/// `(major, minor)` of a kernel release (`6.8.0-49-generic` → (6, 8)).
fn kernel_version(rel: &str) -> Option<(u32, u32)> {
    let mut it = rel.split(['.', '-']);
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// A mount GDS could use: on an NVMe drive, or a distributed file system over RDMA.
fn rdma_fs(m: &Mount) -> bool {
    RDMA_FS.contains(&m.fs_type.as_str())
        && (!m.fs_type.starts_with("nfs") || m.option("proto") == Some("rdma"))
}

fn mount_evidence(path: &str, m: &Mount) -> Evidence {
    Evidence::new(
        path,
        format!(
            "{} {} {} {}{}",
            m.source,
            m.mount_point,
            m.fs_type,
            m.super_options,
            if m.block.is_empty() {
                String::new()
            } else {
                format!(" (block: {})", m.block.join(" → "))
            }
        ),
    )
}

/// `gds-kernel`: which kernel path cuFile can take.
pub fn gds_kernel(ctx: &Ctx) -> Vec<Finding> {
    let s = storage(ctx);
    if !s.read {
        return Vec::new(); // an XML input: input-limits says what it cannot show
    }
    let m = &ctx.topo.machine;
    let id = CheckId::GdsKernel;
    if let Some((path, v)) = &s.nvidia_fs {
        let f = Finding::new(
            id,
            Severity::Info,
            Subject::Node,
            format!("nvidia-fs {v} is loaded: cuFile's direct path through nvidia-fs is available"),
            "none",
        )
        .with(path.clone(), v.clone());
        return vec![with_driver(ctx, f)];
    }
    if !m.modules_visible {
        return vec![
            Finding::new(
                id,
                Severity::Unknown,
                Subject::Node,
                "whether nvidia-fs is loaded is unknown: /sys/module was not captured",
                "audit the live machine, or a snapshot taken with `peerpath capture`",
            )
            .with("/sys/module", "absent from the input"),
        ];
    }
    let cfg = cufile(s);
    if let (Some(c), false) = (&s.cufile, expected(ctx)) {
        return vec![Finding::new(
            id,
            Severity::Info,
            Subject::Node,
            format!(
                "no GPUDirect Storage target here: {} is present (CUDA's GDS package installs it) but nvidia-fs is not loaded and there is no NVMe data drive or file system over RDMA ({} NVMe drive(s)); cuFile would read through host memory (compat mode)",
                c.path,
                nvme_count(ctx)
            ),
            "none, unless jobs here should read with GDS: load nvidia-fs (or set up the P2PDMA path) and put the data on an NVMe drive or an RDMA file system",
        )
        .with("/sys/module/nvidia_fs", "absent")
        .with(c.path.clone(), "present")];
    }
    if !expected(ctx) {
        let nvme = nvme_count(ctx);
        let drives = if nvme == 0 {
            ", and no NVMe drive".to_string()
        } else {
            format!(" ({nvme} NVMe drive(s))")
        };
        let (cufile_said, cufile_value) = if s.etc_visible {
            (" and there is no /etc/cufile.json", "absent")
        } else {
            (
                " (/etc/cufile.json is not in this input)",
                "not in the input",
            )
        };
        return vec![Finding::new(
            id,
            Severity::Info,
            Subject::Node,
            format!(
                "no GPUDirect Storage on this node: nvidia-fs is not loaded{cufile_said}{drives}; a program using cuFile reads through host memory (compat mode)"
            ),
            "none, unless jobs here should read with GDS: install GDS (nvidia-fs, or the P2PDMA path on kernel ≥ 6.2 with the open driver ≥ 565) and /etc/cufile.json",
        )
        .with("/sys/module/nvidia_fs", "absent")
        .with("/etc/cufile.json", cufile_value)];
    }
    // GDS is configured but nvidia-fs is not loaded: only the P2PDMA path is left.
    let p2p_on = cfg.is_some_and(CufileConfig::p2pdma);
    let (unmet, unknown, ev) = p2pdma_prerequisites(ctx, p2p_on);
    let compat = cfg.is_none_or(CufileConfig::compat_allowed);
    let mut f = if !p2p_on {
        Finding::new(
            id,
            if compat {
                Severity::Warning
            } else {
                Severity::Error
            },
            Subject::Node,
            if compat {
                "GDS is configured (/etc/cufile.json, with drives or RDMA file systems to read) but nvidia-fs is not loaded and `use_pci_p2pdma` is off: every cuFile read silently goes through a host bounce buffer (compat mode)"
            } else {
                "GDS is configured with compat mode disallowed, but nvidia-fs is not loaded and `use_pci_p2pdma` is off: every cuFile read fails"
            },
            "load nvidia-fs (`modprobe nvidia-fs`; packages nvidia-fs-dkms or the GDS meta-package, with NVMe patches from MLNX_OFED/DOCA), or use the upstream P2PDMA path: kernel ≥ 6.2 with CONFIG_PCI_P2PDMA, open NVIDIA driver ≥ 565, `\"use_pci_p2pdma\": true` in /etc/cufile.json",
        )
    } else if !unmet.is_empty() {
        Finding::new(
            id,
            Severity::Error,
            Subject::Node,
            format!(
                "cuFile is set to the P2PDMA path (use_pci_p2pdma) but it is not usable: {}",
                unmet.join("; ")
            ),
            "meet each prerequisite (NVIDIA, GDS support for NVMe using Linux PCI P2PDMA): kernel ≥ 6.2 built with CONFIG_PCI_P2PDMA, open kernel module ≥ 565.47, `options nvme_core multipath=N`, `options nvidia NVreg_RegistryDwords=\"RMForceStaticBar1=1;RmForceDisableIomapWC=1;\"`; or load nvidia-fs",
        )
    } else if !unknown.is_empty() {
        Finding::new(
            id,
            Severity::Unknown,
            Subject::Node,
            format!(
                "cuFile is set to the P2PDMA path; not readable: {}",
                unknown.join("; ")
            ),
            "audit the live machine: `uname -r`, `grep CONFIG_PCI_P2PDMA /boot/config-$(uname -r)`, `cat /proc/driver/nvidia/version`",
        )
    } else {
        Finding::new(
            id,
            Severity::Info,
            Subject::Node,
            "nvidia-fs is not loaded; cuFile uses the upstream PCI P2PDMA path, whose prerequisites are met",
            "none",
        )
    };
    f = f.with("/sys/module/nvidia_fs", "absent").with_all(ev);
    if let Some(c) = &s.cufile {
        f = f.with(
            c.path.clone(),
            match cfg.and_then(|c| c.use_pci_p2pdma) {
                Some(v) => format!("properties.use_pci_p2pdma: {v}"),
                None => "properties.use_pci_p2pdma absent (default false)".into(),
            },
        );
    }
    vec![with_driver(ctx, f)]
}

fn with_driver(ctx: &Ctx, f: Finding) -> Finding {
    match &ctx.topo.machine.nvidia_driver {
        Some(d) => f.with("/proc/driver/nvidia/version", d.clone()),
        None => f,
    }
}

/// The P2PDMA path's prerequisites: `(unmet, unknown, evidence)`.
fn p2pdma_prerequisites(ctx: &Ctx, wanted: bool) -> (Vec<String>, Vec<String>, Vec<Evidence>) {
    let s = storage(ctx);
    let m = &ctx.topo.machine;
    let (mut unmet, mut unknown, mut ev) = (Vec::new(), Vec::new(), Vec::new());
    if !wanted {
        return (unmet, unknown, ev);
    }
    match s.kernel_release.as_deref() {
        Some(r) => {
            ev.push(Evidence::new("/proc/sys/kernel/osrelease", r));
            if kernel_version(r).is_some_and(|v| v < (6, 2)) {
                unmet.push(format!("kernel {r} is older than 6.2"));
            }
        }
        None => unknown.push("kernel release (/proc/sys/kernel/osrelease)".into()),
    }
    if let Some((p, on)) = &s.kernel_p2pdma {
        ev.push(Evidence::new(
            p.clone(),
            format!("CONFIG_PCI_P2PDMA={}", if *on { "y" } else { "(not set)" }),
        ));
        if !on {
            unmet.push("the kernel is built without CONFIG_PCI_P2PDMA".into());
        }
    }
    match &m.nvidia_driver {
        Some(d) if !d.contains("Open Kernel Module") => unmet
            .push("the NVIDIA driver is the proprietary kernel module, not the open one".into()),
        Some(_) => {}
        None => unknown.push("NVIDIA driver flavour (/proc/driver/nvidia/version)".into()),
    }
    if let Some(v) = &m.nvidia_module_version {
        ev.push(Evidence::new("/sys/module/nvidia/version", v.clone()));
        // Only a version is compared: a module listed without one (`/proc/modules`, `lsmod`)
        // leaves the driver's version to /proc/driver/nvidia/version, else unknown.
        let version = Some(v.clone())
            .filter(|v| super::gdr::is_version(v))
            .or_else(|| {
                m.nvidia_driver
                    .as_deref()
                    .and_then(super::gdr::proc_driver_version)
            });
        match version {
            Some(v) => {
                let mut it = v.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
                if (it.next().unwrap_or(0), it.next().unwrap_or(0)) < (565, 47) {
                    unmet.push(format!("NVIDIA driver {v} is older than 565.47"));
                }
            }
            None => unknown
                .push("NVIDIA driver version (the input lists the module without one)".into()),
        }
    }
    if let Some(mp) = &s.nvme_multipath {
        ev.push(Evidence::new(
            "/sys/module/nvme_core/parameters/multipath",
            mp.clone(),
        ));
        if mp == "Y" {
            unmet.push("NVMe native multipath is on (P2PDMA needs nvme_core multipath=N)".into());
        }
    }
    if let Some(r) = &s.nvidia_registry_dwords {
        ev.push(Evidence::new("/proc/driver/nvidia/params", r.clone()));
        if !r.contains("RMForceStaticBar1=1")
            && m.cpu_vendor.as_deref() != Some("CPU implementer 0x41 (arm64)")
        {
            unmet.push("RMForceStaticBar1=1 is not in the NVIDIA driver's RegistryDwords".into());
        }
    }
    (unmet, unknown, ev)
}

/// `gds-config`: `/etc/cufile.json` as cuFile reads it.
pub fn gds_config(ctx: &Ctx) -> Vec<Finding> {
    let s = storage(ctx);
    let Some(file) = &s.cufile else {
        return Vec::new();
    };
    let id = CheckId::GdsConfig;
    let path = file.path.clone();
    let Some(c) = &file.config else {
        return vec![Finding::new(
            id,
            Severity::Unknown,
            Subject::Node,
            if file.unreadable {
                format!("{path} is there but was not read: {}; how cuFile reads it is unknown", file.error.clone().unwrap_or_default())
            } else {
                format!("{path} does not parse as JSON with comments: {}; how cuFile reads it is unknown", file.error.clone().unwrap_or_default())
            },
            format!("fix the syntax of {path} (cuFile also honours CUFILE_ENV_PATH_JSON)"),
        )
        .with(path, file.error.clone().unwrap_or_default())];
    };
    let mut out = Vec::new();
    let shown = |v: Option<bool>, d: bool| match v {
        Some(b) => b.to_string(),
        None => format!("absent (default {d})"),
    };
    if c.compat_forced() {
        out.push(
            Finding::new(
                id,
                Severity::Error,
                Subject::Node,
                "cuFile is forced into compat mode: every read goes through a host bounce buffer, GPUDirect Storage is never used",
                format!("remove `force_compat_mode` from {path} (or set it false); check CUFILE_FORCE_COMPAT_MODE in the job's environment too"),
            )
            .with(path.clone(), format!("properties.force_compat_mode: {}", shown(c.force_compat_mode, false))),
        );
    }
    out.push(
        Finding::new(
            id,
            Severity::Info,
            Subject::Node,
            if c.compat_allowed() {
                "compat mode is allowed: when the direct path is not possible cuFile silently reads through host memory (run `peerpath probe-storage` to see which path each drive takes)"
            } else {
                "compat mode is not allowed: a read the direct path cannot serve fails instead of slowing down"
            },
            "none",
        )
        .with(path.clone(), format!("properties.allow_compat_mode: {}", shown(c.allow_compat_mode, true))),
    );
    if let Some(kb) = c.max_direct_io_size_kb
        && (kb < DEFAULT_MAX_DIRECT_IO_SIZE_KB || kb % 64 != 0)
    {
        out.push(
            Finding::new(
                id,
                Severity::Warning,
                Subject::Node,
                format!("max_direct_io_size_kb is {kb}: cuFile splits each read into chunks of at most {kb} KiB{} (default {DEFAULT_MAX_DIRECT_IO_SIZE_KB})", if kb % 64 != 0 { ", not a multiple of 64 KiB" } else { "" }),
                format!("set `\"max_direct_io_size_kb\": {DEFAULT_MAX_DIRECT_IO_SIZE_KB}` (a multiple of 64) in {path}"),
            )
            .with(path.clone(), format!("properties.max_direct_io_size_kb: {kb}")),
        );
    }
    let rdma_mounts: Vec<&Mount> = s
        .mounts
        .known()
        .map(|t| t.mounts.iter().filter(|m| rdma_fs(m)).collect())
        .unwrap_or_default();
    if !rdma_mounts.is_empty() && c.rdma_addrs().next().is_none() {
        let mp: Vec<&str> = rdma_mounts.iter().map(|m| m.mount_point.as_str()).collect();
        out.push(
            Finding::new(
                id,
                Severity::Warning,
                Subject::Node,
                format!("file systems over RDMA are mounted ({}) but cufile.json names no RDMA device address: cuFile cannot choose the NIC next to each GPU", mp.join(", ")),
                format!("list the client-side addresses of the storage NICs in `properties.rdma_dev_addr_list` (or per file system, `fs.<fs>.mount_table`) in {path}"),
            )
            .with(path.clone(), "properties.rdma_dev_addr_list: empty")
            .with_all(rdma_mounts.iter().map(|m| mount_evidence(&mount_path(s), m))),
        );
    }
    for (fs, kb) in &c.posix_gds_min_kb {
        out.push(
            Finding::new(
                id,
                Severity::Info,
                Subject::Node,
                format!("reads of {kb} KiB or less on {fs} go through POSIX (host memory)"),
                "none",
            )
            .with(path.clone(), format!("fs.{fs}.posix_gds_min_kb: {kb}")),
        );
    }
    for (list, entries) in &c.denylist {
        out.push(
            Finding::new(
                id,
                Severity::Info,
                Subject::Node,
                format!("cuFile is denied these {list}: {}", entries.join(", ")),
                "none",
            )
            .with(
                path.clone(),
                format!("denylist.{list}: {}", entries.join(", ")),
            ),
        );
    }
    if !c.wrong_type.is_empty() {
        out.push(
            Finding::new(
                id,
                Severity::Unknown,
                Subject::Node,
                format!("{} key(s) of {path} have a value of the wrong type; how cuFile reads them is unknown", c.wrong_type.len()),
                "give each the type NVIDIA's configuration guide lists (true/false, a number, a list of strings)",
            )
            .with_all(c.wrong_type.iter().map(|(k, v)| Evidence::new(path.clone(), format!("{k}: {v}")))),
        );
    }
    out
}

fn mount_path(s: &StorageFacts) -> String {
    s.mounts
        .known()
        .map(|t| t.path.clone())
        .unwrap_or_else(|| "/proc/self/mountinfo".into())
}

/// The data drives GDS would read, named for messages (`0000:1a:00.0 (nvme0)`).
fn drive_name(d: &Device) -> String {
    match controller(d) {
        Some(c) => format!("{} ({c})", d.bdf),
        None => d.bdf.to_string(),
    }
}

/// `gds-path`: ACS redirect on ports between GPUs and data drives, and IOMMU translation of a
/// data drive's DMA (nvidia-fs needs the IOMMU off or in passthrough for peer-to-peer).
pub fn gds_path(ctx: &Ctx) -> Vec<Finding> {
    if !expected(ctx) {
        return Vec::new();
    }
    let topo = ctx.topo;
    let drives = data_drives(topo);
    let id = CheckId::GdsPath;
    let sev = ctx.config_fault_severity();
    let mut ports: BTreeMap<Bdf, Vec<(Bdf, Bdf)>> = BTreeMap::new();
    for g in &ctx.gpus {
        for d in &drives {
            for b in ctx.path_devices(&g.bdf, &d.bdf).bridges() {
                if topo.device(b).is_some_and(|p| {
                    matches!(p.kind, DeviceKind::RootPort | DeviceKind::SwitchDownstream)
                }) {
                    ports.entry(*b).or_default().push((g.bdf, d.bdf));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut unreadable = Vec::new();
    for (port, pairs) in ports {
        let Some(p) = topo.device(&port) else {
            continue;
        };
        if let Some(why) = config_unknown(p, 4096) {
            unreadable.push(Evidence::new(pci_path(&port, "config"), why));
            continue;
        }
        let Some(acs) = p.config.as_ref().and_then(|c| c.acs) else {
            continue;
        };
        if !acs.redirects_p2p() {
            continue;
        }
        let names = acs.enabled_names().join(" ");
        let mut drives_here: Vec<String> = pairs
            .iter()
            .filter_map(|(_, d)| topo.device(d).map(drive_name))
            .collect();
        drives_here.sort();
        drives_here.dedup();
        out.push(
            Finding::new(
                id,
                sev,
                Subject::Device(port),
                format!(
                    "ACS redirects peer-to-peer traffic on {} {port} ({names}): GPUDirect Storage reads from {} go up to the root complex or fall back to compat mode ({} GPU–drive pair(s))",
                    p.kind.as_str(),
                    drives_here.join(", "),
                    pairs.len()
                ),
                super::pcie::acs_redirect_remedy(&port),
            )
            .with(pci_path(&port, "config"), super::pcie::acs_control_value(&acs)),
        );
    }
    for d in &drives {
        if let (Some(g), Some(t @ ("DMA" | "DMA-FQ"))) =
            (d.iommu_group, d.iommu_group_type.as_deref())
        {
            out.push(
                Finding::new(
                    id,
                    sev,
                    Subject::Device(d.bdf),
                    format!("the IOMMU translates DMA of NVMe drive {} (group {g} type {t}): nvidia-fs peer-to-peer needs the IOMMU off or in passthrough", drive_name(d)),
                    format!("boot with `iommu=pt` (plus `intel_iommu=on` / `amd_iommu=on` as needed), or with the driver unbound `echo identity > /sys/kernel/iommu_groups/{g}/type`"),
                )
                .with(format!("/sys/kernel/iommu_groups/{g}/type"), t),
            );
        }
    }
    if !unreadable.is_empty() {
        out.push(
            Finding::new(
                id,
                Severity::Unknown,
                Subject::Node,
                format!("ACS of {} port(s) between GPUs and data drives is unknown: their config space is not readable", unreadable.len()),
                "audit as root (config space beyond 64 bytes is root-only) or from a snapshot taken as root",
            )
            .with_all(unreadable),
        );
    }
    out
}

/// `gds-drive-placement`: a data drive whose nearest GPU is across the CPU (SYS) or behind
/// another root complex (NODE); a mount spanning drives on several NUMA nodes.
pub fn gds_drive_placement(ctx: &Ctx) -> Vec<Finding> {
    let s = storage(ctx);
    if !expected(ctx) || ctx.gpus.is_empty() {
        return Vec::new();
    }
    let topo = ctx.topo;
    let id = CheckId::GdsDrivePlacement;
    let mut out = Vec::new();
    for d in data_drives(topo) {
        let best = ctx
            .gpus
            .iter()
            .filter_map(|g| ctx.cl.label_of(&g.bdf, &d.bdf).map(|(l, _)| (l, g.bdf)))
            .min_by_key(|(l, g)| (l.rank(), *g));
        let Some((label, gpu)) = best else { continue };
        let numa = topo.numa_of(d);
        let far = match label {
            Label::Sys => {
                "on another socket than every GPU: every GDS read crosses the CPU interconnect"
            }
            Label::Node => {
                "behind another root complex than every GPU: peer-to-peer between root complexes is slow or unsupported, cuFile may fall back to compat mode"
            }
            _ => continue,
        };
        let mounts: Vec<String> = mounts_on(topo, &d.bdf)
            .iter()
            .map(|m| m.mount_point.clone())
            .collect();
        out.push(
            Finding::new(
                id,
                Severity::Warning,
                Subject::Device(d.bdf),
                format!(
                    "NVMe drive {}{} is {far} (nearest GPU {gpu}: {label})",
                    drive_name(d),
                    if mounts.is_empty() { String::new() } else { format!(" holding {}", mounts.join(", ")) }
                ),
                "move the drive to a slot behind a GPU's PCIe switch (or on the GPUs' socket), or read it only from GPUs on its socket (`peerpath place --storage`)",
            )
            .with(pci_path(&d.bdf, "numa_node"), numa.map_or("-1".to_string(), |n| n.to_string())),
        );
    }
    if let Some(t) = s.mounts.known() {
        for m in &t.mounts {
            let mut nodes: Vec<u32> = m
                .drives
                .iter()
                .filter_map(|b| topo.device(b).and_then(|d| topo.numa_of(d)))
                .collect();
            nodes.sort();
            nodes.dedup();
            if nodes.len() > 1 && !crate::analysis::storage::is_system_mount(&m.mount_point) {
                out.push(
                    Finding::new(
                        id,
                        Severity::Warning,
                        Subject::Node,
                        format!("{} spans NVMe drives on NUMA nodes {nodes:?}: a GPU reading it reaches some drives across the CPU interconnect", m.mount_point),
                        "build each volume from drives of one socket, and read it from that socket's GPUs",
                    )
                    .with_all([mount_evidence(&t.path, m)]),
                );
            }
        }
    }
    out
}

/// `gds-mounts`: the file systems GDS would read (on data drives, or distributed over RDMA),
/// and whether GDS supports them as mounted.
pub fn gds_mounts(ctx: &Ctx) -> Vec<Finding> {
    let s = storage(ctx);
    if !expected(ctx) {
        return Vec::new();
    }
    let id = CheckId::GdsMounts;
    let t = match &s.mounts {
        crate::model::Fact::Known(t) => t,
        crate::model::Fact::Unknown(r) => {
            return vec![Finding::new(
                id,
                Severity::Unknown,
                Subject::Node,
                format!("the mounted file systems are unknown: {r}"),
                "audit the live machine, or a snapshot taken with `peerpath capture`",
            )];
        }
    };
    let data: Vec<Bdf> = data_drives(ctx.topo).iter().map(|d| d.bdf).collect();
    let p2pdma_path = s.nvidia_fs.is_none() && cufile(s).is_some_and(CufileConfig::p2pdma);
    let mut out = Vec::new();
    let mut any = false;
    for m in &t.mounts {
        let on_data = m.drives.iter().any(|b| data.contains(b));
        let data_mount = on_data && !crate::analysis::storage::is_system_mount(&m.mount_point);
        if !data_mount && !rdma_fs(m) {
            continue;
        }
        any = true;
        let ev = mount_evidence(&t.path, m);
        let problem = if on_data && !LOCAL_FS.contains(&m.fs_type.as_str()) {
            Some(format!(
                "{} is not a file system GDS reads directly from NVMe (ext4 in ordered mode, xfs)",
                m.fs_type
            ))
        } else if m.fs_type == "ext4" && m.option("data").is_some_and(|d| d != "ordered") {
            Some(format!(
                "ext4 with data={}: GDS supports ext4 only in ordered mode",
                m.option("data").unwrap_or("")
            ))
        } else if p2pdma_path
            && m.block
                .iter()
                .any(|b| b.starts_with("md") || b.starts_with("dm-"))
        {
            Some("RAID over NVMe (md/dm) is not supported on the P2PDMA path".to_string())
        } else {
            None
        };
        out.push(match problem {
            Some(p) => Finding::new(
                id,
                Severity::Warning,
                Subject::Node,
                format!("{}: {p}; cuFile reads it in compat mode", m.mount_point),
                "put GDS data on xfs, or ext4 mounted with data=ordered (the default); with the P2PDMA path, on a single NVMe namespace (or load nvidia-fs for md RAID0)",
            )
            .with_all([ev]),
            None => Finding::new(
                id,
                Severity::Info,
                Subject::Node,
                format!(
                    "{} ({}) {}",
                    m.mount_point,
                    m.fs_type,
                    if on_data {
                        let names: Vec<String> = m.drives.iter().filter_map(|b| ctx.topo.device(b)).map(drive_name).collect();
                        format!("on NVMe {}", names.join(", "))
                    } else {
                        "over RDMA".to_string()
                    }
                ),
                "none",
            )
            .with_all([ev]),
        });
    }
    if !any {
        out.push(
            Finding::new(
                id,
                Severity::Info,
                Subject::Node,
                "no mounted file system here that GDS reads directly (none on a data NVMe drive, none over RDMA)",
                "none",
            )
            .with(t.path.clone(), format!("{} mount(s), none on a data NVMe drive", t.mounts.len())),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_listed_without_its_version_is_not_an_old_driver() {
        use super::super::testkit::*;
        use crate::analysis::classify::Classifier;
        let mut m = machine();
        m.nvidia_module_version =
            Some("loaded (lsmod table at line 9; lsmod lists no version)".into());
        m.nvidia_driver = None;
        let t = topo(hgx(2), m.clone());
        let cl = Classifier::new(&t, &Default::default());
        let (unmet, unknown, _) = p2pdma_prerequisites(&Ctx::new(&cl), true);
        assert!(
            !unmet.iter().any(|u| u.contains("older than 565.47")),
            "{unmet:?}"
        );
        assert!(
            unknown.iter().any(|u| u.contains("NVIDIA driver version")),
            "{unknown:?}"
        );
        // The procfs version decides where the text has it.
        m.nvidia_driver = Some(
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build"
                .into(),
        );
        let t = topo(hgx(2), m);
        let cl = Classifier::new(&t, &Default::default());
        let (unmet, _, _) = p2pdma_prerequisites(&Ctx::new(&cl), true);
        assert!(
            unmet.iter().any(|u| u.contains("550.54.15 is older")),
            "{unmet:?}"
        );
    }

    #[test]
    fn kernel_versions() {
        assert_eq!(kernel_version("6.8.0-49-generic"), Some((6, 8)));
        assert_eq!(kernel_version("5.15.0"), Some((5, 15)));
        assert_eq!(kernel_version("garbage"), None);
        assert!(kernel_version("6.1.0-13-amd64").unwrap() < (6, 2));
    }

    #[test]
    fn rdma_file_systems() {
        let m = |fs: &str, opts: &str| Mount {
            fs_type: fs.into(),
            super_options: opts.into(),
            ..Default::default()
        };
        assert!(rdma_fs(&m("nfs", "rw,vers=3,proto=rdma")));
        assert!(!rdma_fs(&m("nfs4", "rw,proto=tcp")));
        assert!(rdma_fs(&m("lustre", "rw,flock")));
        assert!(!rdma_fs(&m("ext4", "rw")));
    }
}
