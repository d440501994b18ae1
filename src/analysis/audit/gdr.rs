//! The GPUDirect RDMA kernel path and driver identity: `gdr-peer-module` (is there a mechanism
//! at all: nvidia-peermem / nv_peer_mem registered, or dma-buf through the open kernel module)
//! and `driver-mismatch` (kernel module, procfs driver and peer-module versions agree).
//!
//! Facts come from [`crate::model::MachineInfo`], read once by the scanner from
//! `/sys/module/{nvidia,nvidia_peermem,nv_peer_mem}`, `/sys/kernel/mm/memory_peers/*/version`
//! and `/proc/driver/nvidia/version` (reference §2.7, §2.8).

use super::{CheckId, Ctx, Finding, Severity, Subject};

const PROC_VERSION: &str = "/proc/driver/nvidia/version";
const MOD_NVIDIA: &str = "/sys/module/nvidia/version";
const MOD_PEERMEM: &str = "/sys/module/nvidia_peermem/version";
const MOD_NV_PEER_MEM: &str = "/sys/module/nv_peer_mem";
const MEMORY_PEERS: &str = "/sys/kernel/mm/memory_peers";

/// Whether `/proc/driver/nvidia/version` names the open kernel module (dma-buf exporter).
pub fn is_open_module(line: &str) -> bool {
    line.contains("Open Kernel Module")
}

/// The driver version in the first line of `/proc/driver/nvidia/version`: the first token after
/// `Module` that looks like `\d+\.\d+(\.\d+)?`.
pub fn proc_driver_version(line: &str) -> Option<String> {
    let after = line.split_once("Module").map(|(_, r)| r).unwrap_or(line);
    after
        .split_whitespace()
        .find(|t| {
            let parts: Vec<&str> = t.split('.').collect();
            (2..=3).contains(&parts.len())
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// The GPUDirect RDMA mechanism of the node, as `gdr-peer-module` decides it (from
/// [`crate::model::MachineInfo`]: `/sys/module`, `/sys/kernel/mm/memory_peers`,
/// `/proc/driver/nvidia/version`). Not in the audit JSON: the finding says it in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PeerMemory {
    /// No NVIDIA GPU or no RDMA NIC: the check does not apply.
    NotApplicable,
    /// A peer-memory client (`nv_mem*`) is registered under `memory_peers`.
    Registered,
    /// nvidia-peermem is loaded and `memory_peers` is visible, but no `nv_mem` client is
    /// registered there (presence ≠ registration), and the open kernel module is absent.
    LoadedNotRegistered,
    /// nvidia-peermem or nv_peer_mem is loaded; registration is not visible (no
    /// `memory_peers`, as with inbox rdma-core).
    Loaded,
    /// No peer module; the open kernel module can export dma-buf (whether the kernel,
    /// rdma-core and NIC driver take it is not visible statically: the probe confirms).
    DmaBufOnly,
    /// `/sys/module` not readable or not captured.
    #[default]
    Unknown,
    /// No NVIDIA kernel driver loaded.
    NoDriver,
    /// The proprietary kernel module without a peer module: no mechanism at all.
    Missing,
}

/// Decides the node's [`PeerMemory`] mechanism.
pub fn peer_memory(ctx: &Ctx) -> PeerMemory {
    let m = &ctx.topo.machine;
    if ctx.nvidia_gpus().next().is_none() || ctx.nics.is_empty() {
        return PeerMemory::NotApplicable;
    }
    let registered = m.memory_peers.iter().any(|(n, _)| n.starts_with("nv_mem"));
    let peermem = m.nvidia_peermem_version.is_some() || m.nv_peer_mem_loaded;
    let open = m.nvidia_driver.as_deref().is_some_and(is_open_module);
    if registered {
        PeerMemory::Registered
    } else if peermem && m.mm_visible && !open {
        PeerMemory::LoadedNotRegistered
    } else if peermem {
        PeerMemory::Loaded
    } else if open {
        PeerMemory::DmaBufOnly
    } else if !m.modules_visible {
        PeerMemory::Unknown
    } else if m.nvidia_module_version.is_none() && m.nvidia_driver.is_none() {
        PeerMemory::NoDriver
    } else {
        PeerMemory::Missing
    }
}

/// The node's GPUs as every finding counts them (`Ctx::gpus`): all of them, and how many are
/// NVIDIA's, other vendors' and of a vendor the input does not record (an NCCL topology file
/// written by hand gives `class` only), so "0 NVIDIA GPU(s)" is never said of 8 GPUs of
/// unrecorded vendor.
fn gpu_count_words(ctx: &Ctx) -> String {
    let nv = ctx.nvidia_gpus().count();
    let unrecorded = ctx.gpus.iter().filter(|d| d.vendor_id.is_none()).count();
    let other = ctx.gpus.len() - nv - unrecorded;
    if unrecorded == 0 && other == 0 {
        return format!("{nv} NVIDIA GPU(s)");
    }
    let mut parts = vec![format!("{nv} NVIDIA")];
    if other > 0 {
        parts.push(format!("{other} of other vendors"));
    }
    if unrecorded > 0 {
        parts.push(format!(
            "{unrecorded} of a vendor this input does not record"
        ));
    }
    format!("{} GPU(s) ({})", ctx.gpus.len(), parts.join(", "))
}

/// `gdr-peer-module`: is any GPUDirect RDMA mechanism available ([`peer_memory`])?
///
/// - a registered peer-memory client (`memory_peers/nv_mem*`) → info;
/// - nvidia-peermem loaded but not registered while `memory_peers` is visible → warning
///   (presence ≠ registration, reference §3 row 6);
/// - open kernel module (dma-buf possible) → info;
/// - none, with `/sys/module` visible → error; without it → unknown.
pub fn peer_module(ctx: &Ctx) -> Vec<Finding> {
    let m = &ctx.topo.machine;
    let mech = peer_memory(ctx);
    if mech == PeerMemory::NotApplicable {
        return vec![Finding::new(
            CheckId::GdrPeerModule,
            Severity::Info,
            Subject::Node,
            format!(
                "GPUDirect RDMA not applicable: {}, {} RDMA NIC(s)",
                gpu_count_words(ctx),
                ctx.nics.len()
            ),
            "none",
        )];
    }
    let registered: Vec<&(String, Option<String>)> = m
        .memory_peers
        .iter()
        .filter(|(n, _)| n.starts_with("nv_mem"))
        .collect();
    let open = m.nvidia_driver.as_deref().is_some_and(is_open_module);
    let mut ev = Vec::new();
    if let Some(l) = &m.nvidia_driver {
        ev.push(super::Evidence::new(PROC_VERSION, l.clone()));
    }
    if let Some(v) = &m.nvidia_peermem_version {
        ev.push(super::Evidence::new(MOD_PEERMEM, v.clone()));
    }
    if m.nv_peer_mem_loaded {
        ev.push(super::Evidence::new(MOD_NV_PEER_MEM, "present"));
    }
    for (n, v) in &m.memory_peers {
        ev.push(super::Evidence::new(
            format!("{MEMORY_PEERS}/{n}/version"),
            v.clone().unwrap_or_else(|| "(unreadable)".into()),
        ));
    }
    let dmabuf_note = if open {
        "; dma-buf also possible (open kernel module)"
    } else {
        ""
    };
    let f = match mech {
        PeerMemory::NotApplicable | PeerMemory::Registered => Finding::new(
            CheckId::GdrPeerModule,
            Severity::Info,
            Subject::Node,
            format!(
                "peer-memory client registered ({}){dmabuf_note}",
                registered
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "none",
        ),
        PeerMemory::LoadedNotRegistered => Finding::new(
            CheckId::GdrPeerModule,
            Severity::Warning,
            Subject::Node,
            "nvidia-peermem is loaded but no nv_mem client is registered under /sys/kernel/mm/memory_peers; NCCL ≤ 2.22.3 disables GPUDirect RDMA",
            "check dmesg for 'ib_register_peer_memory_client' symbol errors; rebuild nvidia-peermem against the installed MLNX/DOCA OFED, or use NCCL ≥ 2.23 / dma-buf with the open kernel module",
        ),
        PeerMemory::Loaded => Finding::new(
            CheckId::GdrPeerModule,
            Severity::Info,
            Subject::Node,
            format!(
                "nvidia-peermem loaded (registration under memory_peers not visible){dmabuf_note}"
            ),
            "none",
        ),
        PeerMemory::DmaBufOnly => Finding::new(
            CheckId::GdrPeerModule,
            Severity::Info,
            Subject::Node,
            "no peer-memory module; GPUDirect RDMA must use dma-buf (open kernel module present; needs kernel ≥ 5.12 and rdma-core ≥ 34, the probe confirms)",
            "none; for the legacy path load nvidia-peermem (`modprobe nvidia-peermem`)",
        ),
        PeerMemory::Unknown if ctx.topo.source.kind == "lspci" => Finding::new(
            CheckId::GdrPeerModule,
            Severity::Unknown,
            Subject::Node,
            "peer-memory module unknown: the text holds no `lsmod` table (nvidia-peermem, nv_peer_mem)",
            "add `lsmod` output to the text (a sosreport has it), or audit the live machine",
        ),
        PeerMemory::Unknown => Finding::new(
            CheckId::GdrPeerModule,
            Severity::Unknown,
            Subject::Node,
            "peer-memory module unknown: /sys/module not readable or not captured in this snapshot",
            "audit the live machine, or capture sys/module and sys/kernel/mm in the snapshot",
        ),
        PeerMemory::NoDriver => Finding::new(
            CheckId::GdrPeerModule,
            Severity::Error,
            Subject::Node,
            "NVIDIA kernel driver not loaded (no /sys/module/nvidia, no /proc/driver/nvidia/version): no GPUDirect RDMA",
            "install and load the NVIDIA driver (prefer the open kernel module for dma-buf), then `modprobe nvidia-peermem` if using the peer-memory path",
        )
        .with(MOD_NVIDIA, "(absent)"),
        PeerMemory::Missing => Finding::new(
            CheckId::GdrPeerModule,
            Severity::Error,
            Subject::Node,
            "no GPUDirect RDMA mechanism: nvidia-peermem/nv_peer_mem not loaded and the proprietary kernel module cannot export dma-buf; NCCL silently stages through host memory",
            "`modprobe nvidia-peermem` (and add it to /etc/modules-load.d), or switch to the NVIDIA open kernel module for dma-buf",
        )
        .with(MOD_PEERMEM, "(absent)"),
    };
    vec![f.with_all(ev)]
}

/// Whether a value names a driver version (`570.86.15`, `550.135`), not a word such as "loaded
/// (lsmod; no version there)".
pub(super) fn is_version(v: &str) -> bool {
    proc_driver_version(&format!("Module {v}")).as_deref() == Some(v.trim())
}

/// `driver-mismatch`: the NVIDIA driver version in `/proc/driver/nvidia/version`,
/// `/sys/module/nvidia/version`, `/sys/module/nvidia_peermem/version` and
/// `/sys/kernel/mm/memory_peers/nv_mem*/version` must all be the same; any difference is an
/// error (the peer module or user space will refuse to work with the kernel module). Only
/// versions are compared: a side the input shows without its version (`/proc/modules` and
/// `lsmod` list none) is unknown, never a mismatch; when the versions shown agree but such a
/// side exists, the finding is unknown and names it with its reason.
pub fn driver_mismatch(ctx: &Ctx) -> Vec<Finding> {
    let m = &ctx.topo.machine;
    let mut seen: Vec<(String, String, String)> = Vec::new(); // (path, raw, version)
    let mut unseen: Vec<(String, String)> = Vec::new(); // (path, what the input says)
    if let Some(l) = &m.nvidia_driver {
        match proc_driver_version(l) {
            Some(v) => seen.push((PROC_VERSION.into(), l.clone(), v)),
            None => unseen.push((PROC_VERSION.into(), l.clone())),
        }
    }
    for (path, v) in [
        (MOD_NVIDIA, &m.nvidia_module_version),
        (MOD_PEERMEM, &m.nvidia_peermem_version),
    ] {
        match v {
            Some(v) if is_version(v) => seen.push((path.into(), v.clone(), v.trim().to_string())),
            Some(v) => unseen.push((path.into(), v.clone())),
            None => {}
        }
    }
    for (n, v) in &m.memory_peers {
        if let Some(v) = v
            && n.starts_with("nv_mem")
        {
            seen.push((format!("{MEMORY_PEERS}/{n}/version"), v.clone(), v.clone()));
        }
    }
    let mut versions: Vec<&str> = seen.iter().map(|(_, _, v)| v.as_str()).collect();
    versions.sort();
    versions.dedup();
    let evidence = |seen: Vec<(String, String, String)>, unseen: Vec<(String, String)>| {
        seen.into_iter()
            .map(|(p, raw, _)| super::Evidence::new(p, raw))
            .chain(
                unseen
                    .into_iter()
                    .map(|(p, raw)| super::Evidence::new(p, raw)),
            )
            .collect::<Vec<_>>()
    };
    if versions.len() > 1 {
        let f = Finding::new(
            CheckId::DriverMismatch,
            Severity::Error,
            Subject::Node,
            format!("NVIDIA driver versions disagree: {}", versions.join(" vs ")),
            "reinstall one driver version for the kernel module, nvidia-peermem and user space (then reboot or reload the modules); rebuild nvidia-peermem after any OFED upgrade",
        );
        return vec![f.with_all(evidence(seen, unseen))];
    }
    if versions.len() == 1 && !unseen.is_empty() {
        let f = Finding::new(
            CheckId::DriverMismatch,
            Severity::Unknown,
            Subject::Node,
            format!(
                "NVIDIA driver {} is the only version shown; whether {} agree(s) is unknown: the input shows no version there",
                versions[0],
                unseen
                    .iter()
                    .map(|(p, _)| p.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            "compare `cat /sys/module/nvidia/version /sys/module/nvidia_peermem/version` with `cat /proc/driver/nvidia/version` on the machine (or `modinfo -F version nvidia nvidia-peermem`)",
        );
        return vec![f.with_all(evidence(seen, unseen))];
    }
    Vec::new()
}

/// `gpu-excluded`: the NVIDIA driver lists a GPU as excluded (`GPU Excluded: Yes` in
/// `/proc/driver/nvidia/gpus/<bdf>/information`): no CUDA context, no GPUDirect RDMA on it.
pub fn gpu_excluded(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for g in ctx.nvidia_gpus() {
        for od in g
            .os_devices
            .iter()
            .filter(|o| o.kind == crate::model::OsDeviceKind::NvidiaGpu)
        {
            let Some((_, v)) = od.attrs.iter().find(|(k, _)| k == "GPU Excluded") else {
                continue;
            };
            if v.eq_ignore_ascii_case("yes") {
                out.push(
                    Finding::new(
                        CheckId::GpuExcluded,
                        Severity::Error,
                        Subject::Device(g.bdf),
                        format!("the NVIDIA driver excludes GPU {} (GPU Excluded: Yes)", g.bdf),
                        "check `nvidia-smi -q` and the kernel log (Xid, row-remapping failure, NVRM_EXCLUDED_GPUS / NVreg_ExcludedGpus); reset or replace the GPU",
                    )
                    .with(
                        format!("/proc/driver/nvidia/gpus/{}/information", od.name),
                        format!("GPU Excluded: {v}"),
                    ),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::analysis::classify::Classifier;

    #[test]
    fn versions_from_proc() {
        assert_eq!(
            proc_driver_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.135  Tue Nov 12 2024"
            )
            .as_deref(),
            Some("550.135")
        );
        assert_eq!(
            proc_driver_version(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build"
            )
            .as_deref(),
            Some("570.86.15")
        );
        assert_eq!(proc_driver_version("garbage"), None);
    }

    #[test]
    fn clean_twin_has_registered_peer() {
        let t = clean();
        let f = peer_module(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info, "{f:?}");
        assert!(driver_mismatch(&Ctx::new(&Classifier::new(&t, &Default::default()))).is_empty());
    }

    #[test]
    fn peer_module_absent_is_error() {
        let mut m = machine();
        m.nvidia_peermem_version = None;
        m.memory_peers.clear();
        m.nvidia_driver =
            Some("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Release Build".into());
        let t = topo(hgx(2), m);
        let f = peer_module(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f[0].severity, Severity::Error, "{f:?}");
        assert_eq!(f[0].subject, Subject::Node);
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.path == MOD_PEERMEM && e.value == "(absent)")
        );
    }

    #[test]
    fn peer_module_unknown_without_sys_module() {
        let mut m = machine();
        m.nvidia_peermem_version = None;
        m.memory_peers.clear();
        m.nvidia_driver = None;
        m.nvidia_module_version = None;
        m.modules_visible = false;
        let t = topo(hgx(2), m);
        assert_eq!(
            peer_module(&Ctx::new(&Classifier::new(&t, &Default::default())))[0].severity,
            Severity::Unknown
        );
    }

    #[test]
    fn loaded_not_registered_warns() {
        let mut m = machine();
        m.memory_peers.clear();
        m.nvidia_driver =
            Some("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Release Build".into());
        let t = topo(hgx(2), m);
        assert_eq!(
            peer_module(&Ctx::new(&Classifier::new(&t, &Default::default())))[0].severity,
            Severity::Warning
        );
    }

    #[test]
    fn excluded_gpu() {
        let mut d = hgx(2);
        let g = d.iter_mut().find(|x| x.bdf == b("0000:13:00.0")).unwrap();
        let mut od =
            crate::model::OsDevice::new(crate::model::OsDeviceKind::NvidiaGpu, "0000:13:00.0");
        od.attrs.push(("GPU Excluded".into(), "Yes".into()));
        g.os_devices.push(od);
        let t = topo(d, machine());
        let f = gpu_excluded(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(
            f[0].evidence[0].path,
            "/proc/driver/nvidia/gpus/0000:13:00.0/information"
        );
        assert!(
            gpu_excluded(&Ctx::new(&Classifier::new(&clean(), &Default::default()))).is_empty()
        );
    }

    #[test]
    fn intel_igpu_is_not_an_endpoint() {
        let mut d = hgx(2);
        d.push(device(
            "0000:00:02.0",
            None,
            "pci0000:00",
            crate::model::pci_config::PortType::Endpoint,
            0x030000,
            0x8086,
            0,
        ));
        let t = topo(d, machine());
        assert_eq!(
            Ctx::new(&Classifier::new(&t, &Default::default()))
                .gpus
                .len(),
            2
        );
    }

    #[test]
    fn a_module_shown_without_its_version_is_unknown_not_a_mismatch() {
        // nvidia-bug-report's /proc/modules and lsmod list modules without versions.
        let mut m = machine();
        m.nvidia_module_version =
            Some("loaded (/proc/modules at line 3342; no version there)".into());
        m.nvidia_peermem_version =
            Some("loaded (lsmod table at line 9; lsmod lists no version)".into());
        m.memory_peers.clear();
        let t = topo(hgx(2), m);
        let f = driver_mismatch(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Unknown, "{f:?}");
        assert!(f[0].summary.contains("570.86.15") && f[0].summary.contains(MOD_NVIDIA));
        // A real difference among the versions shown is still an error.
        let mut m = machine();
        m.nvidia_module_version = Some("loaded (lsmod; no version)".into());
        m.nvidia_peermem_version = Some("565.57.01".into());
        let t = topo(hgx(2), m);
        let f = driver_mismatch(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f[0].severity, Severity::Error);
        assert!(!f[0].summary.contains("loaded"), "{}", f[0].summary);
    }

    #[test]
    fn mismatch_names_every_source() {
        let mut m = machine();
        m.nvidia_peermem_version = Some("565.57.01".into());
        let t = topo(hgx(2), m);
        let f = driver_mismatch(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].summary.contains("565.57.01") && f[0].summary.contains("570.86.15"));
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.path == MOD_PEERMEM && e.value == "565.57.01")
        );
    }
}
