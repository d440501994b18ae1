//! AMD Instinct: what silently breaks GPUDirect RDMA (and RCCL's use of it) on an AMD node,
//! beside the vendor-neutral checks that already judge it (`acs-redirect`, `iommu-translation`,
//! `gpu-nic-path`).
//!
//! - `amd-driver`: each AMD GPU bound to `amdgpu` (`/sys/bus/pci/devices/<bdf>/driver`).
//! - `amd-peer-memory`: the kernel support RCCL's `ncclIbGdrSupport` (ROCm/rccl
//!   `src/transport/net_ib.cc`) looks for: the amdkfd peer-memory client's
//!   `/sys/kernel/mm/memory_peers/amdkfd/version`; else GDR only through DMA-BUF, which RCCL
//!   uses only with `NCCL_DMABUF_ENABLE=1` on a kernel with `CONFIG_DMABUF_MOVE_NOTIFY` and
//!   `CONFIG_PCI_P2PDMA` (`src/misc/rocmwrap.cc`).
//! - `amd-pcie-atomics`: the `NO_ATOMICS_32/64` flags KFD sets on a GPU's io_link to its CPU
//!   when `pci_enable_atomic_ops_to_root()` failed (`kfd_set_iolink_no_atomics()`).
//! - `amd-large-bar`: the `BI_DIRECTIONAL` flag KFD sets on that link only when the whole VRAM is
//!   visible through the BAR (`kfd_dev_is_large_bar()`), and the BAR sizes (`resource`) against
//!   the VRAM (`mem_banks`): with a small BAR, KFD refuses host-visible VRAM and peers (the NIC)
//!   cannot reach GPU memory.
//! - `amd-xgmi`: every GPU of a hive joined to its peers (KFD io_links of type 11, RCCL
//!   `<xgmi>`), all GPUs in one hive.
//! - `amd-apu-gdr-level`: an MI300A APU whose NIC hangs off its own NUMA node with no switch (the
//!   platform's pairing): RCCL's default GDR level (PXB) refuses the PHB path unless its
//!   Rome-class relaxation applies.
//! - `amd-partition`: compute and memory partition modes (CPX, NPS4), which multiply the GPUs
//!   RCCL sees behind one PCI function and NIC path.

use super::{CheckId, Ctx, Finding, Severity, Subject, pci_path};
use crate::analysis::classify::Label;
use crate::model::Device;
use crate::model::amd::{KFD_FLAG_BI_DIRECTIONAL, KFD_LINK_PCIE, is_amd_gpu, is_apu};

/// A path read under the input's root as on the live machine (`/sys/...`).
fn live(p: &str) -> String {
    if p.starts_with('/') {
        p.to_string()
    } else {
        format!("/{p}")
    }
}

/// The AMD GPUs of the audit (address order).
fn amd_gpus<'a>(ctx: &'a Ctx) -> impl Iterator<Item = &'a &'a Device> {
    ctx.gpus.iter().filter(|d| is_amd_gpu(d))
}

/// `amd-driver`: an AMD GPU not bound to amdgpu has no ROCm and no peer memory.
pub fn driver(ctx: &Ctx) -> Vec<Finding> {
    if !ctx.has_device_files() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for d in amd_gpus(ctx) {
        let ev = pci_path(&d.bdf, "driver");
        match d.driver.as_deref() {
            Some("amdgpu") => {}
            Some(other) => out.push(
                Finding::new(
                    CheckId::AmdDriver,
                    if other == "vfio-pci" { Severity::Warning } else { Severity::Error },
                    Subject::Device(d.bdf),
                    format!("AMD GPU {} is bound to {other}, not amdgpu: ROCm, RCCL and its GPUDirect RDMA do not see it here{}", d.bdf, if other == "vfio-pci" { " (passed to a VM)" } else { "" }),
                    "bind it to amdgpu (`echo <bdf> > /sys/bus/pci/drivers/<driver>/unbind`, then `modprobe amdgpu`), or audit the VM it is passed to",
                )
                .with(ev, other),
            ),
            None => out.push(
                Finding::new(
                    CheckId::AmdDriver,
                    Severity::Error,
                    Subject::Device(d.bdf),
                    format!("AMD GPU {} has no driver bound: amdgpu is not loaded or failed on it (check `dmesg | grep amdgpu`)", d.bdf),
                    "load amdgpu (`modprobe amdgpu`, or the ROCm amdgpu-dkms package for your kernel) and read its kernel log",
                )
                .with(ev, "no driver link"),
            ),
        }
    }
    out
}

/// The node's GPUDirect RDMA mechanism as RCCL sees it, for the readiness verdict: `None` when
/// the node has no AMD GPU or no RDMA NIC (NVIDIA's `gdr-peer-module` decides then).
pub fn mechanism(ctx: &Ctx) -> Option<super::gdr::PeerMemory> {
    use super::gdr::PeerMemory;
    let m = &ctx.topo.machine;
    if amd_gpus(ctx).next().is_none() || ctx.nics.is_empty() || ctx.nvidia_gpus().next().is_some() {
        return None;
    }
    Some(if m.memory_peers.iter().any(|(n, _)| n == "amdkfd") {
        PeerMemory::Registered
    } else if m.mm_visible && ctx.has_device_files() {
        PeerMemory::Missing
    } else {
        PeerMemory::Unknown
    })
}

/// `amd-peer-memory`: the NIC-side GPUDirect RDMA support RCCL checks.
pub fn peer_memory(ctx: &Ctx) -> Vec<Finding> {
    let m = &ctx.topo.machine;
    if amd_gpus(ctx).next().is_none() || ctx.nics.is_empty() || !ctx.has_device_files() {
        return Vec::new();
    }
    const PEERS: &str = "/sys/kernel/mm/memory_peers";
    if let Some((_, v)) = m.memory_peers.iter().find(|(n, _)| n == "amdkfd") {
        let v = v.clone().unwrap_or_else(|| "(no version file)".into());
        return vec![
            Finding::new(
                CheckId::AmdPeerMemory,
                Severity::Info,
                Subject::Node,
                format!("amdkfd is registered as a peer-memory client (version {v}): RCCL's ncclIbGdrSupport finds GPUDirect RDMA"),
                "none",
            )
            .with(format!("{PEERS}/amdkfd/version"), v),
        ];
    }
    if !m.mm_visible {
        return vec![
            Finding::new(
                CheckId::AmdPeerMemory,
                Severity::Unknown,
                Subject::Node,
                "/sys/kernel/mm not readable or not captured: whether amdkfd is registered as a peer-memory client is unknown",
                "read it on the node: `cat /sys/kernel/mm/memory_peers/amdkfd/version`",
            )
            .with("/sys/kernel/mm", "not read"),
        ];
    }
    let others: Vec<String> = m.memory_peers.iter().map(|(n, _)| n.clone()).collect();
    vec![
        Finding::new(
            CheckId::AmdPeerMemory,
            Severity::Error,
            Subject::Node,
            format!(
                "no amdkfd peer-memory client under {PEERS}{}: RCCL's ncclIbGdrSupport finds no GPUDirect RDMA support (unless /proc/kallsyms has ib_register_peer_memory_client, not read here) and falls back to host memory; DMA-BUF is used only with NCCL_DMABUF_ENABLE=1",
                if others.is_empty() {
                    String::new()
                } else {
                    format!(" (clients: {})", others.join(", "))
                }
            ),
            "use an RDMA stack with the peer-memory API (MLNX_OFED/DOCA-OFED, or the NIC vendor's) and the ROCm amdgpu-dkms driver, which registers amdkfd with it; or run RCCL with NCCL_DMABUF_ENABLE=1 on a kernel built with CONFIG_DMABUF_MOVE_NOTIFY=y and CONFIG_PCI_P2PDMA=y",
        )
        .with(PEERS, if others.is_empty() { "empty".to_string() } else { others.join(" ") }),
    ]
}

/// `amd-pcie-atomics`: KFD found no PCIe atomics for a GPU.
pub fn atomics(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in amd_gpus(ctx) {
        let Some(l) = d.amd.as_ref().and_then(|a| a.cpu_link.as_ref()) else {
            continue;
        };
        if l.link_type != KFD_LINK_PCIE || l.no_atomics() != Some(true) {
            continue;
        }
        let up: Vec<crate::model::Bdf> = ctx
            .paths()
            .ancestors(&d.bdf)
            .into_iter()
            .filter(|b| *b != d.bdf)
            .collect();
        out.push(
            Finding::new(
                CheckId::AmdAtomics,
                Severity::Warning,
                Subject::Device(d.bdf),
                format!(
                    "no PCIe atomics for AMD GPU {}: KFD's io_link to the CPU carries NO_ATOMICS_32/64 (pci_enable_atomic_ops_to_root failed: a port on the way to the root ({}) does not route AtomicOps, or the root port does not complete them); ROCm's runtime needs them for host-visible atomics and signals",
                    d.bdf,
                    up.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(" → ")
                ),
                "enable PCIe AtomicOp routing on every switch port above the GPU (switch firmware / BIOS 'PCIe atomics'), check `lspci -vvv` DevCap2 'AtomicOpsCap Routing+' on each port and '32bit+ 64bit+' completer on the root port",
            )
            .with(live(&l.path), format!("flags {:#x}", l.flags.unwrap_or(0))),
        );
    }
    out
}

/// `amd-large-bar`: the whole VRAM is not visible through the BAR.
pub fn large_bar(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in amd_gpus(ctx) {
        if is_apu(d) {
            continue; // An APU's memory is the system's: no VRAM BAR to judge.
        }
        let Some(a) = &d.amd else { continue };
        let flag = a
            .cpu_link
            .as_ref()
            .filter(|l| l.link_type == KFD_LINK_PCIE)
            .and_then(|l| l.flags.map(|f| (l, f & KFD_FLAG_BI_DIRECTIONAL != 0)));
        let bar = d.bars.iter().map(|b| b.size).max();
        let small_by_size = match (bar, a.vram_bytes) {
            (Some(b), Some(v)) if v > 0 => Some(b < v),
            _ => None,
        };
        let small = match (flag.map(|(_, f)| !f), small_by_size) {
            (Some(true), _) | (None, Some(true)) => true,
            (Some(false), _) | (None, Some(false)) => false,
            (None, None) => continue,
        };
        if !small {
            continue;
        }
        let mut f = Finding::new(
            CheckId::AmdLargeBar,
            Severity::Error,
            Subject::Device(d.bdf),
            format!(
                "AMD GPU {} has a small BAR{}: KFD refuses host-visible VRAM (\"Alloc host visible vram on small bar is not allowed\"), so the NIC cannot reach GPU memory and RCCL stages through host memory",
                d.bdf,
                match (bar, a.vram_bytes) {
                    (Some(b), Some(v)) =>
                        format!(" ({} MiB of {} GiB VRAM visible)", b >> 20, v >> 30),
                    _ => String::new(),
                }
            ),
            "enable 'Above 4G Decoding' and 'Re-Size BAR Support' (Large BAR) in the BIOS; on MI300-class boards also check the platform's MMIO high base/size settings",
        );
        if let Some((l, _)) = flag {
            f = f.with(
                live(&l.path),
                format!("flags {:#x} (no BI_DIRECTIONAL)", l.flags.unwrap_or(0)),
            );
        }
        if let Some(b) = bar {
            f = f.with(
                pci_path(&d.bdf, "resource"),
                format!("largest BAR {b} bytes"),
            );
        }
        if let Some(v) = a.vram_bytes {
            f = f.with(
                live(&format!("{}/mem_banks", a.source)),
                format!("VRAM {v} bytes"),
            );
        }
        out.push(f);
    }
    out
}

/// `amd-xgmi`: GPUs of one board joined by xGMI as their hive says.
pub fn xgmi(ctx: &Ctx) -> Vec<Finding> {
    let t = ctx.topo;
    let gpus: Vec<&Device> = amd_gpus(ctx).copied().collect();
    if gpus.len() < 2 || !t.xgmi_visible {
        return Vec::new();
    }
    let p = ctx.paths();
    let mut out = Vec::new();
    // Peers each GPU has a direct link to, and how many the best-linked GPU has.
    let peers = |g: &Device| -> Vec<&Device> {
        gpus.iter()
            .copied()
            .filter(|o| o.bdf != g.bdf)
            .filter(|o| {
                matches!(
                    (p.index(&g.bdf), p.index(&o.bdf)),
                    (Some(x), Some(y)) if p.xgmi(x, y).is_some_and(|(_, direct)| direct)
                )
            })
            .collect()
    };
    let counts: Vec<usize> = gpus.iter().map(|g| peers(g).len()).collect();
    let most = counts.iter().copied().max().unwrap_or(0);
    if most == 0 {
        return Vec::new(); // no xGMI on this node (PCIe-only GPUs)
    }
    // A full mesh (every GPU linked to every other) is what MI300-class boards have; a GPU with
    // fewer direct peers than the best-linked one lost links.
    for (g, &n) in gpus.iter().zip(&counts) {
        if n == most {
            continue;
        }
        let linked = peers(g);
        let missing: Vec<String> = gpus
            .iter()
            .filter(|o| o.bdf != g.bdf && !linked.iter().any(|x| x.bdf == o.bdf))
            .map(|o| o.bdf.to_string())
            .collect();
        let hive = g.amd.as_ref().and_then(|a| a.hive_id);
        out.push(
            Finding::new(
                CheckId::AmdXgmi,
                Severity::Error,
                Subject::Device(g.bdf),
                format!(
                    "AMD GPU {} has xGMI links to {n} GPUs where its best-linked peers have {most}: no xGMI link to {}; RCCL routes those pairs through the CPU (or over other GPUs) and its rings and all-to-all slow down",
                    g.bdf,
                    if missing.is_empty() { "some peers".to_string() } else { missing.join(", ") }
                ),
                "check the xGMI links (`amd-smi topology`, `amd-smi metric --xgmi-err`, the kernel log for xGMI/WAFL errors); a link down needs the baseboard serviced",
            )
            .with(
                live(&g.amd.as_ref().map(|a| format!("{}/io_links", a.source)).unwrap_or_else(|| "sys/class/kfd/kfd/topology/nodes".into())),
                format!("{n} xGMI io_links; hive_id {}", hive.map(|h| format!("{h:#x}")).unwrap_or_else(|| "?".into())),
            ),
        );
    }
    // GPUs of several hives on one node.
    let mut hives: Vec<u64> = gpus
        .iter()
        .filter_map(|g| g.amd.as_ref().and_then(|a| a.hive_id))
        .filter(|&h| h != 0)
        .collect();
    hives.sort_unstable();
    hives.dedup();
    if hives.len() > 1 {
        out.push(Finding::new(
            CheckId::AmdXgmi,
            Severity::Info,
            Subject::Node,
            format!("{} xGMI hives on this node ({}): GPUs of different hives reach each other over PCIe only", hives.len(), hives.iter().map(|h| format!("{h:#x}")).collect::<Vec<_>>().join(", ")),
            "none if the node is built so (MI100 4+4, MI210 bridge pairs); otherwise check the xGMI bridges",
        ));
    }
    out
}

/// `amd-apu-gdr-level`: an APU whose best NIC is its own NUMA node's, beyond PXB.
pub fn apu_gdr_level(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &ctx.pairs {
        let Some(g) = ctx.topo.device(&p.gpu) else {
            continue;
        };
        if !is_apu(g) || p.local || !matches!(p.label.0, Label::Phb | Label::Node) {
            continue;
        }
        let gdr = ctx.cl.summary_of(&p.gpu, &p.nic).is_some_and(|s| s.gdr);
        let numa = ctx.topo.numa_of(g);
        out.push(
            Finding::new(
                CheckId::AmdApuGdrLevel,
                if gdr { Severity::Info } else { Severity::Warning },
                Subject::Device(p.gpu),
                format!(
                    "APU {} and its NIC {} share NUMA node {} with no PCIe switch ({}): the platform's pairing, but {}",
                    p.gpu,
                    ctx.name(&p.nic),
                    numa.map(|n| n.to_string()).unwrap_or_else(|| "?".into()),
                    p.label,
                    if gdr {
                        "RCCL's Rome-class relaxation allows GPUDirect RDMA here (level PHB)"
                    } else {
                        "RCCL's default NCCL_NET_GDR_LEVEL (PXB) refuses this path: without a level it stages through host memory"
                    }
                ),
                if gdr {
                    "none"
                } else {
                    "run RCCL with NCCL_NET_GDR_LEVEL=PHB (the APU's memory is the host's; the NIC on the same NUMA node is the intended path)"
                },
            )
            .with_pairs([p.to_ref()]),
        );
    }
    out
}

/// `amd-partition`: compute or memory partitions other than SPX/NPS1, read from the device's
/// `current_compute_partition`/`current_memory_partition`, or counted by the source (hwloc's
/// RSMI plugin lists one OS device per compute partition; the mode is named where the device's
/// XCD count fixes it, and the memory partition is then unknown).
pub fn partition(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in amd_gpus(ctx) {
        let Some(a) = &d.amd else { continue };
        let c = a.compute_partition.as_deref();
        let m = a.memory_partition.as_deref();
        let counted = a.partition_count.unwrap_or(1);
        if c.is_none_or(|c| c == "SPX") && m.is_none_or(|m| m == "NPS1") && counted <= 1 {
            continue;
        }
        let parts = if a.kfd_nodes.is_empty() {
            counted
        } else {
            a.kfd_nodes.len() as u32
        };
        let memory = match (m, &a.partition_evidence) {
            (Some(m), _) => format!("/{m}"),
            (None, Some(_)) => ", memory partition (NPS) not recorded in this input".into(),
            (None, None) => String::new(),
        };
        let what = if a.partition_evidence.is_some() {
            "compute partition(s) (one GPU each to RCCL and ROCm) on one PCI function"
        } else {
            "KFD node(s) on one PCI function"
        };
        let mut f = Finding::new(
            CheckId::AmdPartition,
            Severity::Info,
            Subject::Device(d.bdf),
            format!(
                "AMD GPU {} is partitioned ({}{memory}): {parts} {what} share its PCIe path and NIC",
                d.bdf,
                c.unwrap_or("compute mode not named for this device"),
            ),
            "none; RCCL and place see one GPU per partition, all behind this function's NIC",
        );
        match &a.partition_evidence {
            Some((path, raw)) => f = f.with(path.clone(), raw.clone()),
            None => {
                if let Some(c) = c {
                    f = f.with(pci_path(&d.bdf, "current_compute_partition"), c);
                }
            }
        }
        if let Some(m) = m {
            f = f.with(pci_path(&d.bdf, "current_memory_partition"), m);
        }
        out.push(f);
    }
    out
}
