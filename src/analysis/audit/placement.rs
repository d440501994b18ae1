//! `gpu-nic-path`: pairs GPUs with RDMA NICs by the node's one matching
//! ([`crate::analysis::pairing::assign_nics`]: path label, then bandwidth share), and reports misplaced adapters: a GPU whose best
//! available NIC is worse than PXB, and a NIC no GPU can use at PIX/PXB. The remedy names the
//! adapter, where it is now (slot, root port, host bridge, NUMA node) and where it belongs (the
//! switch that holds the GPU, with a free downstream port where one exists).

use super::{CheckId, Ctx, Evidence, Finding, Pair, PathLabel, Severity, Subject, pci_path};
use crate::analysis::classify::Label;
use crate::analysis::pairing::assign_nics;
use crate::model::{Bdf, Device, Topology};

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

/// Where a NIC belongs to be PIX/PXB with a GPU: the GPU's switch, naming a free downstream
/// port (one with nothing below it) of that switch or of a switch above it.
pub fn target(ctx: &Ctx, gpu: &Device) -> String {
    let topo = ctx.topo;
    let Some(sw) = gpu.switch.as_deref().and_then(|id| topo.switch(id)) else {
        return format!(
            "GPU {} sits directly on a root port (no PCIe switch above it), so no slot makes the pair PIX/PXB; the closest is a root port of host bridge {} (PHB) or, failing that, of NUMA node {} (NODE)",
            gpu.bdf,
            gpu.host_bridge,
            topo.numa_of(gpu)
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into())
        );
    };
    let mut free = Vec::new();
    let mut cur = Some(sw);
    while let Some(s) = cur {
        for p in &s.downstream {
            if topo.children(p).is_empty() {
                let slot = topo.device(p).and_then(|d| d.slot.clone());
                free.push(match slot {
                    Some(sl) => format!("{p} (slot {sl}, switch {})", s.id),
                    None => format!("{p} (switch {})", s.id),
                });
            }
        }
        cur = s.parent_switch.as_deref().and_then(|id| topo.switch(id));
    }
    let root = ctx.paths().ancestors(&gpu.bdf).last().copied();
    let mut s = format!(
        "behind PCIe switch {} (upstream port {}{}) with GPU {}",
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

/// Builds the GPU → NIC matching and adds the `gpu-nic-path` findings.
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
    let assignment: Vec<usize> = if gpu_rows.len() == ctx.gpus.len() {
        assign_nics(&view.cand, &gpu_rows)
            .into_iter()
            .map(|k| k.and_then(|k| nic_of_view[k]).unwrap_or(0))
            .collect()
    } else {
        vec![0; ctx.gpus.len()]
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
    for (gi, p) in pairs.iter().enumerate() {
        if p.local {
            continue;
        }
        let (g, ni) = (ctx.gpus[gi], assignment[gi]);
        let n = ctx.nics[ni];
        let j = &judged[gi][ni];
        let sev = if j.label == Label::Unknown {
            Severity::Unknown
        } else {
            far_sev
        };
        let best_any = judged[gi].iter().map(|x| x.label).min();
        let shared = if best_any < Some(j.label) {
            " (a closer NIC exists but serves another GPU)"
        } else {
            ""
        };
        let nic_name = ctx.name(&n.bdf);
        // The adapter to move: one that no GPU can use at PIX/PXB and no GPU is paired with
        // (the misplaced card), else the paired NIC unless a GPU it is local to needs it.
        let stray = (0..ctx.nics.len())
            .find(|&k| !assignment.contains(&k) && !judged.iter().any(|row| row[k].local()));
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
        findings.push(
            Finding::new(
                CheckId::GpuNicPath,
                sev,
                Subject::Device(g.bdf),
                format!(
                    "GPU {}: best available NIC {nic_name} is {} ({}){shared}; NCCL will not use GPUDirect RDMA beyond PXB",
                    g.bdf,
                    j.word(),
                    p.reason
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
            .with_pairs([p.to_ref()]),
        );
    }
    for (ni, n) in ctx.nics.iter().enumerate() {
        if judged.iter().any(|row| row[ni].local()) {
            continue;
        }
        let used = assignment.contains(&ni);
        let needy = pairs.iter().position(|p| !p.local);
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
                n.rdma_names()
                    .next()
                    .map(|r| Subject::RdmaDevice(r.to_string()))
                    .unwrap_or(Subject::Device(n.bdf)),
                format!(
                    "NIC {} is not at PIX/PXB from any GPU{tail}",
                    ctx.name(&n.bdf)
                ),
                remedy,
            )
            .with_all(path_evidence(topo, &n.bdf, &n.bdf).into_iter().take(1)),
        );
    }
    pairs
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
