//! `gpu-nic-path` and `nic-sharing`: pairs GPUs with RDMA NICs by the node's one matching
//! ([`crate::analysis::pairing::assign_nics`]: rails only, path label, then bandwidth share).
//!
//! A GPU is judged by the best rail NIC it can reach (path finding when that is worse than
//! PXB); how many GPUs share a NIC is a bandwidth question, reported apart (`nic-sharing`, with
//! each NIC's port speed). A NIC slower than half the node's fastest is a management or
//! storage adapter ([`crate::analysis::pairing::rail_mask`]) and never counts as a GPU's NIC.
//! The remedy names the adapter, where it is now (slot, root port, host bridge, NUMA node) and
//! where it belongs (the PCIe switch that holds the GPU, with a free downstream port where one
//! exists), never a port of an endpoint's internal bridge ([`is_internal_switch`]).
//!
//! Facts: the classification (labels, bottlenecks), the switches of the topology, and each
//! NIC's port rate (`/sys/class/infiniband/<dev>/ports/<p>/rate`, NCCL XML `speed`).

use super::{CheckId, Ctx, Evidence, Finding, Pair, PathLabel, Severity, Subject, pci_path};
use crate::analysis::classify::Label;
use crate::analysis::pairing::{RAIL_FRACTION, assign_nics, nic_speed_gbps, rail_mask};
use crate::model::{Bdf, Device, DeviceKind, Switch, Topology};

/// The path between a GPU and a NIC as the matching sees it: the classifier's label and
/// bottleneck (no words; [`Ctx::reason`] words the pairs a finding names).
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// nvidia-smi label (`Unknown` when the source cannot decide NODE vs SYS, or a device is
    /// missing).
    pub label: Label,
    /// Bottleneck bandwidth in GB/s, when the links are known.
    pub bottleneck_gbytes: Option<f64>,
}

impl Judgement {
    /// PIX or PXB (or better): NCCL uses GPUDirect RDMA by default.
    pub fn local(&self) -> bool {
        self.label.within_pxb()
    }

    /// The label as the audit writes it (`unknown`, not `?`).
    pub fn word(&self) -> PathLabel {
        PathLabel(self.label)
    }
}

impl Ctx<'_> {
    /// Judges the path between two devices with the classifier built once for the audit.
    pub fn judge(&self, a: &Bdf, b: &Bdf) -> Judgement {
        match self.cl.summary_of(a, b) {
            Some(s) => Judgement {
                label: s.label,
                bottleneck_gbytes: s.bottleneck_gbytes_per_s,
            },
            None => Judgement {
                label: Label::Unknown,
                bottleneck_gbytes: None,
            },
        }
    }

    /// Why the classifier labels a pair as it does, in words.
    pub fn reason(&self, a: &Bdf, b: &Bdf) -> String {
        match self.cl.label_and_reason(a, b) {
            Some((_, r)) => r,
            None => format!("{a} or {b} not in the topology"),
        }
    }
}

/// Where a device sits: slot, root port, host bridge, NUMA node.
pub fn location(ctx: &Ctx, d: &Device) -> String {
    let topo = ctx.topo;
    let chain = ctx.paths().ancestors(&d.bdf);
    let slot = chain
        .iter()
        .filter_map(|b| topo.device(b).and_then(|x| x.slot.clone()))
        .next();
    let root = chain.last().filter(|b| **b != d.bdf);
    let mut parts = Vec::new();
    if let Some(s) = slot {
        parts.push(format!("slot {s}"));
    }
    if let Some(r) = root {
        parts.push(format!("root port {r}"));
    }
    parts.push(format!("host bridge {}", d.host_bridge));
    parts.push(match topo.numa_of(d) {
        Some(n) => format!("NUMA node {n}"),
        None => "NUMA node unknown".to_string(),
    });
    parts.join(", ")
}

/// PCIe switch vendors (Broadcom/PLX, LSI, Microchip/PMC-Sierra, ASMedia, Pericom, IDT): a
/// switch of theirs is board or card switching, never one endpoint's own bridge.
pub const SWITCH_VENDORS: [u16; 7] = [0x10b5, 0x1000, 0x11f8, 0x1b21, 0x12d8, 0x111d, 0x1d0f];

/// Whether a switch is an endpoint's internal bridge rather than a place for another card: its
/// upstream port is made by the vendor of a GPU, accelerator or NIC below it (an AMD Instinct's
/// or Hygon DCU's own PCIe switch, a ConnectX-8's switch), and that vendor is not a PCIe switch
/// maker ([`SWITCH_VENDORS`]). Its "free" downstream ports are on the card, not slots.
pub fn is_internal_switch(topo: &Topology, sw: &Switch) -> bool {
    let Some(v) = topo.device(&sw.upstream).and_then(|d| d.vendor_id) else {
        return false;
    };
    if SWITCH_VENDORS.contains(&v) {
        return false;
    }
    let mut stack: Vec<Bdf> = sw.downstream.clone();
    while let Some(b) = stack.pop() {
        for c in topo.children(&b) {
            let endpoint = c.kind.is_compute() || c.kind == DeviceKind::Nic;
            if endpoint && c.vendor_id == Some(v) {
                return true;
            }
            stack.push(c.bdf);
        }
    }
    false
}

/// Where a NIC belongs to be PIX/PXB with a GPU: the nearest PCIe switch above the GPU that is
/// not an endpoint's internal bridge, naming a free downstream port (one with nothing below
/// it) of that switch or of a switch above it (internal bridges' ports are never proposed).
pub fn target(ctx: &Ctx, gpu: &Device) -> String {
    let topo = ctx.topo;
    let mut cur = gpu.switch.as_deref().and_then(|id| topo.switch(id));
    let mut internal = Vec::new();
    while let Some(s) = cur.filter(|s| is_internal_switch(topo, s)) {
        internal.push(s.id.clone());
        cur = s.parent_switch.as_deref().and_then(|id| topo.switch(id));
    }
    let own = if internal.is_empty() {
        String::new()
    } else {
        format!(
            " (above its own internal bridge {}, whose ports are no slots)",
            internal.join(", ")
        )
    };
    let Some(sw) = cur else {
        return format!(
            "GPU {}{own} sits on a root port with no PCIe switch above it, so no slot makes the pair PIX/PXB; the closest is a root port of host bridge {} (PHB) or, failing that, of NUMA node {} (NODE)",
            gpu.bdf,
            gpu.host_bridge,
            topo.numa_of(gpu)
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into())
        );
    };
    let mut free = Vec::new();
    let mut up = Some(sw);
    while let Some(s) = up {
        if !is_internal_switch(topo, s) {
            for p in &s.downstream {
                if topo.children(p).is_empty() {
                    let slot = topo.device(p).and_then(|d| d.slot.clone());
                    free.push(match slot {
                        Some(sl) => format!("{p} (slot {sl}, switch {})", s.id),
                        None => format!("{p} (switch {})", s.id),
                    });
                }
            }
        }
        up = s.parent_switch.as_deref().and_then(|id| topo.switch(id));
    }
    let root = ctx.paths().ancestors(&gpu.bdf).last().copied();
    let mut s = format!(
        "behind PCIe switch {} (upstream port {}{}) with GPU {}{own}",
        sw.id,
        sw.upstream,
        root.map(|r| format!(", root port {r}")).unwrap_or_default(),
        gpu.bdf
    );
    if free.is_empty() {
        s.push_str(
            ": no free downstream port there (free one, or move a non-GPU device out of that switch)",
        );
    } else {
        s.push_str(&format!(": free downstream port {}", free.join(", ")));
    }
    s
}

/// Whether the CPU is an IBM POWER (`/proc/cpuinfo` `cpu`/`model name`, hwloc `CPUModel`
/// `POWER9, altivec supported`), whose NVIDIA GPUs can attach to the CPU over NVLink.
pub fn power_cpu(m: &crate::model::MachineInfo) -> bool {
    m.cpu_model
        .as_deref()
        .is_some_and(|s| s.starts_with("POWER"))
        || m.cpu_vendor.as_deref() == Some("IBM")
}

fn gbps(s: Option<f64>) -> String {
    match s {
        Some(g) => format!("{g} Gb/s"),
        None => "speed unknown".to_string(),
    }
}

/// Builds the GPU → NIC matching and adds the `gpu-nic-path` and `nic-sharing` findings.
pub fn pair(ctx: &Ctx, findings: &mut Vec<Finding>) -> Vec<Pair> {
    let topo = ctx.topo;
    if ctx.gpus.is_empty() || ctx.nics.is_empty() {
        if !ctx.gpus.is_empty() {
            findings.push(Finding::new(
                CheckId::GpuNicPath,
                Severity::Info,
                Subject::Node,
                format!(
                    "{} GPU(s) but no RDMA NIC{}: no GPU–NIC path to judge",
                    ctx.gpus.len(),
                    if ctx.plain_nics.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} NIC(s) without an RDMA device)", ctx.plain_nics.len())
                    }
                ),
                "none, unless this node should do GPUDirect RDMA: then install the RDMA driver (mlx5_ib) or the NIC",
            ));
        }
        return Vec::new();
    }
    let judged: Vec<Vec<Judgement>> = ctx
        .gpus
        .iter()
        .map(|g| ctx.nics.iter().map(|n| ctx.judge(&g.bdf, &n.bdf)).collect())
        .collect();
    // Port speeds and the rail rule over the audit's RDMA NICs (the same rule the matching
    // applies to its candidates).
    let speeds: Vec<Option<f64>> = ctx.nics.iter().map(|n| nic_speed_gbps(n)).collect();
    let rail = rail_mask(&speeds);
    let fastest = speeds.iter().flatten().fold(0.0f64, |m, &s| m.max(s));
    // The one GPU→NIC matching (analysis::pairing) over the audit's GPUs and RDMA NICs.
    let view = &ctx.view;
    let gpu_rows: Vec<usize> = ctx
        .gpus
        .iter()
        .map(|g| view.gpus.iter().position(|e| e.bdf == g.bdf))
        .collect::<Option<_>>()
        .unwrap_or_default();
    let nic_of_view: Vec<Option<usize>> = view
        .nics
        .iter()
        .map(|e| ctx.nics.iter().position(|n| n.bdf == e.bdf))
        .collect();
    // Best rail NIC by label, then bottleneck (the matching's own order).
    let best_rail = |gi: usize| -> usize {
        (0..ctx.nics.len())
            .filter(|&k| rail[k])
            .min_by(|&x, &y| {
                let (a, b) = (&judged[gi][x], &judged[gi][y]);
                a.label.cmp(&b.label).then(
                    b.bottleneck_gbytes
                        .unwrap_or(0.0)
                        .total_cmp(&a.bottleneck_gbytes.unwrap_or(0.0)),
                )
            })
            .unwrap_or(0)
    };
    let assignment: Vec<usize> = if gpu_rows.len() == ctx.gpus.len() {
        assign_nics(&view.cand, &gpu_rows)
            .into_iter()
            .enumerate()
            .map(|(gi, k)| {
                k.and_then(|k| nic_of_view[k])
                    .unwrap_or_else(|| best_rail(gi))
            })
            .collect()
    } else {
        (0..ctx.gpus.len()).map(best_rail).collect()
    };
    let mut pairs = Vec::new();
    for (gi, &ni) in assignment.iter().enumerate() {
        let (g, n, j) = (ctx.gpus[gi], ctx.nics[ni], &judged[gi][ni]);
        pairs.push(Pair {
            gpu: g.bdf,
            nic: n.bdf,
            rdma: n.rdma_names().next().map(str::to_string),
            label: j.word(),
            reason: ctx.reason(&g.bdf, &n.bdf),
            bottleneck_gbytes: j.bottleneck_gbytes,
            local: j.local(),
        });
    }
    let far_sev = if ctx.virtualized {
        Severity::Warning
    } else {
        Severity::Error
    };
    // Path: each GPU by the best rail NIC it can reach.
    for (gi, g) in ctx.gpus.iter().enumerate() {
        let bi = best_rail(gi);
        let best = &judged[gi][bi];
        if best.local() {
            continue;
        }
        // An APU (MI300A) with its NIC on its own NUMA node and no switch between them is the
        // platform's intended pairing: `amd-apu-gdr-level` judges it (RCCL's GDR level).
        if crate::model::amd::is_apu(g) && matches!(best.label, Label::Phb | Label::Node) {
            continue;
        }
        // The matched NIC has the best label (label first); name it when it is the best.
        let ni = if judged[gi][assignment[gi]].label == best.label {
            assignment[gi]
        } else {
            bi
        };
        let (n, j) = (ctx.nics[ni], &judged[gi][ni]);
        // On POWER8/9 an NVIDIA GPU can reach the CPU over NVLink, a link no input here can
        // represent: the PCIe label may not be the route NCCL takes.
        let cpu_nvlink = power_cpu(&topo.machine) && g.vendor_id == Some(0x10de);
        let sev = if j.label == Label::Unknown || cpu_nvlink {
            Severity::Unknown
        } else {
            far_sev
        };
        let slow_closer: Vec<String> = (0..ctx.nics.len())
            .filter(|&k| !rail[k] && judged[gi][k].label < j.label)
            .map(|k| {
                format!(
                    "{} is closer ({}) but at {} no rail",
                    ctx.name(&ctx.nics[k].bdf),
                    judged[gi][k].word(),
                    gbps(speeds[k])
                )
            })
            .collect();
        let nic_name = ctx.name(&n.bdf);
        // The adapter to move: a rail NIC that no GPU can use at PIX/PXB and no GPU is paired
        // with (the misplaced card), else the best NIC unless a GPU it is local to needs it.
        let stray = (0..ctx.nics.len()).find(|&k| {
            rail[k] && !assignment.contains(&k) && !judged.iter().any(|row| row[k].local())
        });
        let serves_local = pairs
            .iter()
            .any(|q| q.nic == n.bdf && q.local && q.gpu != g.bdf);
        let remedy = match (stray, serves_local) {
            (Some(k), _) => {
                let m = ctx.nics[k];
                format!(
                    "move NIC {} — now at {}, where no GPU can use it — {}",
                    ctx.name(&m.bdf),
                    location(ctx, m),
                    target(ctx, g)
                )
            }
            (None, true) => format!(
                "add an RDMA NIC {} ({nic_name} is local to another GPU and stays)",
                target(ctx, g)
            ),
            (None, false) => format!(
                "move NIC {nic_name} — now at {} — {}",
                location(ctx, n),
                target(ctx, g)
            ),
        };
        let reason = ctx.reason(&g.bdf, &n.bdf);
        findings.push(
            Finding::new(
                CheckId::GpuNicPath,
                sev,
                Subject::Device(g.bdf),
                format!(
                    "GPU {}: best NIC it can reach, {nic_name} at {}, is {} ({reason}){}; {}",
                    g.bdf,
                    gbps(speeds[ni]),
                    j.word(),
                    if slow_closer.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", slow_closer.join("; "))
                    },
                    if cpu_nvlink {
                        "on this POWER CPU the GPU may reach the CPU over NVLink, which this input cannot show, so whether NCCL uses GPUDirect RDMA is unknown from the PCIe path alone"
                    } else {
                        "NCCL will not use GPUDirect RDMA beyond PXB"
                    }
                ),
                if ctx.virtualized {
                    format!(
                        "this is a VM: the guest PCIe tree may not show the host's; run `peerpath probe` and audit with --evidence. On the host, place NIC {nic_name} (guest view: {}) behind the GPU's PCIe switch",
                        location(ctx, n)
                    )
                } else {
                    remedy
                },
            )
            .with_all(path_evidence(topo, &g.bdf, &n.bdf))
            .with_all(
                stray
                    .filter(|_| !ctx.virtualized)
                    .map(|k| path_evidence(topo, &ctx.nics[k].bdf, &ctx.nics[k].bdf))
                    .unwrap_or_default()
                    .into_iter()
                    .take(1),
            )
            .with_pairs(pairs.get(gi).map(|p| p.to_ref())),
        );
    }
    // NICs no GPU reaches at PIX/PXB.
    for (ni, n) in ctx.nics.iter().enumerate() {
        if !rail[ni] {
            findings.push(
                Finding::new(
                    CheckId::GpuNicPath,
                    Severity::Info,
                    nic_subject(n),
                    format!(
                        "NIC {} at {} is no rail: below {:.0} % of the node's fastest RDMA NIC ({}), so a management or storage adapter; no GPU is paired with it",
                        ctx.name(&n.bdf),
                        gbps(speeds[ni]),
                        RAIL_FRACTION * 100.0,
                        gbps(Some(fastest))
                    ),
                    "none; if it should carry GPU traffic, it needs the rails' speed",
                )
                .with_all(port_rate_evidence(n)),
            );
            continue;
        }
        if judged.iter().any(|row| row[ni].local()) {
            continue;
        }
        // The NIC of an APU on the APU's own NUMA node (`amd-apu-gdr-level` judges it).
        let apu_nic = assignment.iter().enumerate().any(|(gi, &k)| {
            k == ni
                && crate::model::amd::is_apu(ctx.gpus[gi])
                && matches!(judged[gi][ni].label, Label::Phb | Label::Node)
        });
        if apu_nic {
            continue;
        }
        let used = assignment.contains(&ni);
        let needy = (0..ctx.gpus.len()).find(|&gi| !judged[gi][best_rail(gi)].local());
        // Unpaired while some GPU has no NIC within PXB: most likely that GPU's NIC in the
        // wrong slot.
        let (sev, tail) = match (used, needy) {
            (true, _) => (Severity::Warning, String::new()),
            (false, Some(gi)) => (
                Severity::Warning,
                format!(
                    " and no GPU is paired with it, while GPU {} has no NIC within PXB: likely that GPU's NIC in the wrong slot",
                    ctx.gpus[gi].bdf
                ),
            ),
            (false, None) => (
                Severity::Info,
                " (not paired with a GPU: fine for storage or in-band traffic)".to_string(),
            ),
        };
        let remedy = match needy {
            Some(gi) => format!(
                "if it carries GPU traffic, move it — now at {} — {}",
                location(ctx, n),
                target(ctx, ctx.gpus[gi])
            ),
            None => format!(
                "none if it serves storage/in-band; else move it (now at {}) behind a GPU's PCIe switch",
                location(ctx, n)
            ),
        };
        findings.push(
            Finding::new(
                CheckId::GpuNicPath,
                sev,
                nic_subject(n),
                format!(
                    "NIC {} is not at PIX/PXB from any GPU{tail}",
                    ctx.name(&n.bdf)
                ),
                remedy,
            )
            .with_all(path_evidence(topo, &n.bdf, &n.bdf).into_iter().take(1)),
        );
    }
    findings.extend(sharing(ctx, &pairs, &assignment, &speeds));
    pairs
}

/// `nic-sharing`: one info finding per rail NIC the matching gives to more than one GPU, with
/// the NIC's port speed and each GPU's share when all send at once. Sharing is bandwidth, not
/// path: a GPU sharing a PIX/PXB NIC still uses GPUDirect RDMA.
fn sharing(
    ctx: &Ctx,
    pairs: &[Pair],
    assignment: &[usize],
    speeds: &[Option<f64>],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (ni, n) in ctx.nics.iter().enumerate() {
        let users: Vec<usize> = (0..assignment.len())
            .filter(|&gi| assignment[gi] == ni)
            .collect();
        if users.len() < 2 {
            continue;
        }
        let share = speeds[ni].map(|s| s / users.len() as f64);
        let names: Vec<String> = users
            .iter()
            .map(|&gi| format!("{} ({})", ctx.gpus[gi].bdf, pairs[gi].label))
            .collect();
        out.push(
            Finding::new(
                CheckId::NicSharing,
                Severity::Info,
                nic_subject(n),
                format!(
                    "NIC {} at {} is shared by {} GPUs: {}{}",
                    ctx.name(&n.bdf),
                    gbps(speeds[ni]),
                    users.len(),
                    names.join(", "),
                    match share {
                        Some(s) => format!("; {s:.0} Gb/s each when all send at once"),
                        None => String::new(),
                    }
                ),
                if ctx.nics.len() < ctx.gpus.len() {
                    "none: the node has fewer rail NICs than GPUs; for full per-GPU bandwidth add NICs behind the GPUs' switches".to_string()
                } else {
                    "none if intended; otherwise move a NIC next to the GPUs that share this one".to_string()
                },
            )
            .with_all(port_rate_evidence(n))
            .with_pairs(users.iter().map(|&gi| pairs[gi].to_ref())),
        );
    }
    out
}

/// How NIC-level path and sharing findings name a NIC: its first RDMA device (`mlx5_0`).
fn nic_subject(n: &Device) -> Subject {
    n.rdma_names()
        .next()
        .map(|r| Subject::RdmaDevice(r.to_string()))
        .unwrap_or(Subject::Device(n.bdf))
}

/// The port rates a NIC's speed was read from.
fn port_rate_evidence(n: &Device) -> Vec<Evidence> {
    n.os_devices
        .iter()
        .filter(|o| o.kind == crate::model::OsDeviceKind::Rdma)
        .flat_map(|o| {
            o.ports.iter().map(move |p| {
                Evidence::new(
                    format!("/sys/class/infiniband/{}/ports/{}/rate", o.name, p.port),
                    p.rate_text
                        .clone()
                        .or(p.rate_gbps.map(|r| format!("{r} Gb/sec")))
                        .unwrap_or_else(|| "(not read)".into()),
                )
            })
        })
        .collect()
}

/// The canonical sysfs paths of both endpoints (their `realpath`s show the tree).
fn path_evidence(topo: &Topology, a: &Bdf, b: &Bdf) -> Vec<Evidence> {
    [a, b]
        .iter()
        .filter_map(|x| topo.device(x))
        .map(|d| {
            Evidence::new(
                pci_path(&d.bdf, "").trim_end_matches('/').to_string(),
                format!("-> /{}", d.sysfs_path),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::audit::{AuditOptions, run};
    use crate::analysis::pairing::NodeView;
    use crate::analysis::testkit::TopoBuilder;
    use crate::model::{OsDeviceKind, RdmaPort};

    fn rate(t: &mut Topology, nic: &str, gbps: f64) {
        let b: Bdf = nic.parse().unwrap();
        let i = t.device_index(&b).unwrap();
        for o in t.devices[i]
            .os_devices
            .iter_mut()
            .filter(|o| o.kind == OsDeviceKind::Rdma)
        {
            o.ports = vec![RdmaPort {
                port: 1,
                state: Some((4, "ACTIVE".into())),
                phys_state: Some((5, "LinkUp".into())),
                rate_gbps: Some(gbps),
                rate_text: Some(format!("{gbps} Gb/sec (4X)")),
                link_layer: Some("Ethernet".into()),
            }];
        }
    }

    /// Two NUMA nodes. Node 0: a Broadcom switch (upstream 0000:11:00.0) with four AMD GPUs,
    /// each behind its own internal AMD switch (a free internal downstream port on the first),
    /// a 200 Gb/s NIC and one free Broadcom downstream port. Node 1: a 10 Gb/s NIC on its own
    /// root port, optionally a second tree of four GPUs and a 200 Gb/s NIC (`second`).
    fn node(second: bool) -> Topology {
        let mut b = TopoBuilder::new(&["0-7", "8-15"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.switch(
            "0000:10:01.0",
            "0000:11:00.0",
            &[
                "0000:12:00.0",
                "0000:12:01.0",
                "0000:12:02.0",
                "0000:12:03.0",
                "0000:12:04.0",
                "0000:12:05.0",
            ],
            Some(0),
        );
        for (k, dsp) in [
            "0000:12:00.0",
            "0000:12:01.0",
            "0000:12:02.0",
            "0000:12:03.0",
        ]
        .iter()
        .enumerate()
        {
            let bus = 0x20 + 0x10 * k as u8;
            let usp = format!("0000:{bus:02x}:00.0");
            let ds = format!("0000:{:02x}:00.0", bus + 1);
            let ds_free = format!("0000:{:02x}:01.0", bus + 1);
            let gpu = format!("0000:{:02x}:00.0", bus + 2);
            let mut dsps = vec![ds.as_str()];
            if k == 0 {
                dsps.push(ds_free.as_str());
            }
            b.switch(dsp, &usp, &dsps, Some(0));
            b.ids(&usp, (0x1002, 0x14a0));
            b.ids(&ds, (0x1002, 0x14a1));
            if k == 0 {
                b.ids(&ds_free, (0x1002, 0x14a1));
            }
            b.dev(&gpu, Some(&ds), 0x120000, (0x1002, 0x74a1), Some(0));
        }
        b.nic("0000:18:00.0", Some("0000:12:04.0"), Some(0), &["mlx5_0"]);
        b.bridge("0000:80:01.0", None, Some(1));
        b.nic("0000:81:00.0", Some("0000:80:01.0"), Some(1), &["mlx5_2"]);
        if second {
            b.bridge("0000:90:01.0", None, Some(1));
            b.switch(
                "0000:90:01.0",
                "0000:91:00.0",
                &["0000:92:00.0", "0000:92:01.0"],
                Some(1),
            );
            b.gpu("0000:93:00.0", Some("0000:92:00.0"), Some(1));
            b.nic("0000:94:00.0", Some("0000:92:01.0"), Some(1), &["mlx5_1"]);
        }
        let mut t = b.build();
        rate(&mut t, "0000:18:00.0", 200.0);
        rate(&mut t, "0000:81:00.0", 10.0);
        if second {
            rate(&mut t, "0000:94:00.0", 200.0);
        }
        t
    }

    #[test]
    fn amd_instinct_internal_switches_are_recognised() {
        let t = node(false);
        let internal: Vec<&str> = t
            .switches
            .iter()
            .filter(|s| is_internal_switch(&t, s))
            .map(|s| s.id.as_str())
            .collect();
        assert_eq!(internal.len(), 4, "{:?}", t.switches);
        let bcm = t.switch_of_port(&"0000:11:00.0".parse().unwrap()).unwrap();
        assert!(
            !is_internal_switch(&t, bcm),
            "a Broadcom switch is board switching"
        );
        assert_eq!(
            t.of_kind(DeviceKind::Gpu).count(),
            4,
            "AMD Instinct with class 0x1200 is a GPU"
        );
    }

    /// ROCm/rccl#1185's shape: four GPUs share a 200 Gb/s NIC under their switch (PXB), a
    /// 10 Gb/s NIC sits on the other socket. No path error, one sharing finding with the speed,
    /// the 10 Gb/s NIC is no rail and no GPU is paired with it.
    #[test]
    fn sharing_a_close_nic_is_bandwidth_not_a_path_fault() {
        let r = run(&node(false), &AuditOptions::default());
        let path_errors: Vec<_> = r
            .findings
            .iter()
            .filter(|f| f.id == CheckId::GpuNicPath && f.severity >= Severity::Warning)
            .collect();
        assert!(
            r.findings
                .iter()
                .all(|f| f.id != CheckId::GpuNicPath || f.severity == Severity::Info),
            "{path_errors:#?}"
        );
        assert_eq!(r.pairs.len(), 4);
        assert!(r.pairs.iter().all(|p| p.rdma.as_deref() == Some("mlx5_0")));
        assert!(r.pairs.iter().all(|p| p.local), "{:#?}", r.pairs);
        let share: Vec<_> = r
            .findings
            .iter()
            .filter(|f| f.id == CheckId::NicSharing)
            .collect();
        assert_eq!(share.len(), 1, "{:#?}", r.findings);
        assert!(
            share[0].summary.contains("200 Gb/s"),
            "{}",
            share[0].summary
        );
        assert!(share[0].summary.contains("shared by 4 GPUs"));
        assert!(share[0].summary.contains("50 Gb/s each"));
        assert_eq!(share[0].pairs.len(), 4);
        let slow = r
            .findings
            .iter()
            .find(|f| f.summary.contains("is no rail"))
            .expect("the 10 Gb/s NIC is named as no rail");
        assert_eq!(slow.severity, Severity::Info);
        assert!(slow.summary.contains("mlx5_2"));
        assert!(slow.summary.contains("10 Gb/s"));
        assert!(slow.summary.contains("200 Gb/s"));
        assert!(
            r.findings
                .iter()
                .all(|f| !f.remedy.contains("0000:21:01.0"))
        );
    }

    /// With an NVIDIA GPU beyond PXB from every rail, the remedy names the Broadcom switch's free
    /// port, never the free port of an AMD GPU's internal switch, and never proposes moving the
    /// slow NIC.
    #[test]
    fn remedy_never_proposes_an_internal_bridge_port() {
        let mut t = node(true);
        // Take the second tree's NIC away: GPU 0000:93:00.0 now reaches only mlx5_0 (SYS).
        t.devices
            .retain(|d| d.bdf != "0000:94:00.0".parse().unwrap());
        t.rebuild();
        let r = run(&t, &AuditOptions::default());
        let f = r
            .findings
            .iter()
            .find(|f| f.id == CheckId::GpuNicPath && f.subject.to_string() == "0000:93:00.0")
            .unwrap_or_else(|| panic!("{:#?}", r.findings));
        assert_eq!(f.severity, Severity::Error);
        assert!(f.summary.contains("best NIC it can reach"), "{}", f.summary);
        assert!(!f.remedy.contains("mlx5_2"), "{}", f.remedy);
        // An internal bridge's port is never proposed, for any GPU.
        let far = r.findings.iter().filter(|f| f.id == CheckId::GpuNicPath);
        for f in far {
            assert!(!f.remedy.contains("0000:21:01.0"), "{}", f.remedy);
        }
        // The AMD GPUs' target: the Broadcom switch and its free port, above the internal one.
        let amd: Device = t.device(&"0000:22:00.0".parse().unwrap()).unwrap().clone();
        let cl = crate::analysis::classify::Classifier::new(&t, &Default::default());
        let ctx = Ctx::new(&cl);
        let s = target(&ctx, &amd);
        assert!(s.contains("upstream port 0000:11:00.0"), "{s}");
        assert!(s.contains("above its own internal bridge"), "{s}");
        assert!(s.contains("0000:12:05.0"), "{s}");
        assert!(!s.contains("0000:21:01.0"), "{s}");
    }

    /// A 10 Gb/s NIC as close as the 200 Gb/s one (same switch): bandwidth sharing alone would
    /// hand it half the GPUs; as no rail it gets none.
    #[test]
    fn a_slow_nic_at_the_same_label_takes_no_gpu() {
        let mut t = node(false);
        let slow: Bdf = "0000:81:00.0".parse().unwrap();
        let i = t.device_index(&slow).unwrap();
        t.devices[i].parent = Some("0000:12:05.0".parse().unwrap());
        t.devices[i].host_bridge = t.devices[0].host_bridge.clone();
        t.devices[i].numa_node = Some(0);
        let (devices, hbs, switches) = crate::sources::tree::infer_structure(
            std::mem::take(&mut t.devices),
            &t.numa_nodes,
            &mut Vec::new(),
        );
        let mut t = Topology::new(
            t.source.clone(),
            t.machine.clone(),
            t.numa_nodes.clone(),
            hbs,
            devices,
            switches,
            vec![],
        );
        t.rebuild();
        let r = run(&t, &AuditOptions::default());
        assert!(
            r.pairs.iter().all(|p| p.rdma.as_deref() == Some("mlx5_0")),
            "{:#?}",
            r.pairs
        );
        let mut no_rail = NodeView::from_classifier(&crate::analysis::classify::Classifier::new(
            &t,
            &Default::default(),
        ));
        assert!(no_rail.cand.nics.iter().any(|n| !n.rail));
        // Without the rail rule the matching would spread the GPUs over both NICs.
        no_rail.cand.nics.iter_mut().for_each(|n| n.rail = true);
        let spread = assign_nics(&no_rail.cand, &[0, 1, 2, 3]);
        let distinct: std::collections::BTreeSet<_> = spread.iter().flatten().collect();
        assert_eq!(distinct.len(), 2, "{spread:?}");
    }

    #[test]
    fn rail_rule() {
        assert_eq!(
            rail_mask(&[Some(200.0), Some(200.0), Some(10.0)]),
            [true, true, false]
        );
        assert_eq!(
            rail_mask(&[Some(400.0), Some(200.0), Some(100.0), None]),
            [true, true, false, true]
        );
        assert_eq!(rail_mask(&[None, None]), [true, true]);
    }
}
