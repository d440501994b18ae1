//! `gpu-nic-path` and `nic-sharing`: pairs GPUs with RDMA NICs by the node's one matching
//! ([`crate::analysis::pairing::assign_nics`]: rails only, path label, then bandwidth share).
//!
//! A GPU is judged by the best rail NIC it can reach (path finding when that is worse than
//! PXB); how many GPUs share a NIC is a bandwidth question, reported apart (`nic-sharing`, with
//! each NIC's port speed). A NIC slower than half the node's fastest is a management or
//! storage adapter ([`crate::analysis::pairing::rail_mask`]) and never counts as a GPU's NIC.
//! The remedy names the adapter, where it is now (slot, root port, host bridge, NUMA node) and
//! where it belongs (the PCIe switch that holds the GPU, with a free downstream port where one
//! exists), never a port of an endpoint's internal bridge ([`super::arrangement::is_internal_switch`]).
//!
//! Facts: the classification (labels, bottlenecks), the switches of the topology, and each
//! NIC's port rate (`/sys/class/infiniband/<dev>/ports/<p>/rate`, NCCL XML `speed`).

use super::arrangement::{Arrangement, location, target};
use super::gpu_verdict::{GpuVerdict, judge_gpu};
use super::judged::Judged;
use super::{CheckId, Ctx, Evidence, Finding, Pair, RemedyClass, Severity, Subject, device_place};
use crate::analysis::classify::Label;
use crate::analysis::classify::topo_file::FileJudgement;
use crate::analysis::nccl::NcclPath;
use crate::analysis::pairing::{RAIL_FRACTION, nic_speed_gbps, rail_mask};
use crate::model::{Bdf, Device, Topology};

fn gbps(s: Option<f64>) -> String {
    match s {
        Some(g) => format!("{g} Gb/s"),
        None => "speed unknown".to_string(),
    }
}

/// Builds the GPU → NIC matching and adds the `gpu-nic-path` and `nic-sharing` findings: the
/// matching, a pair per GPU, a finding per GPU without GDR on its best rail NIC, a finding per
/// NIC no GPU reaches at PIX/PXB, then the shared NICs.
pub fn pair(ctx: &Ctx, findings: &mut Vec<Finding>) -> Vec<Pair> {
    if ctx.gpus.is_empty() || ctx.nics.is_empty() {
        if !ctx.gpus.is_empty() {
            findings.push(no_rdma_nic(ctx));
        }
        return Vec::new();
    }
    let judged = Judged::new(ctx);
    let m = Matching::new(ctx, &judged);
    let mut pairs = m.pairs();
    let misplaced_gpu = m.gpu_findings(&mut pairs, findings);
    m.nic_findings(misplaced_gpu, findings);
    findings.extend(sharing(ctx, &pairs, &m.assignment, &m.speeds));
    pairs
}

/// GPUs but no RDMA NIC: no path to judge.
fn no_rdma_nic(ctx: &Ctx) -> Finding {
    Finding::new(
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
    )
}

/// The one GPU→NIC matching and what its findings read: port speeds, the rail rule, and the
/// arrangement and design, built only when a GPU has to be judged.
struct Matching<'c, 'v, 'a> {
    ctx: &'c Ctx<'a>,
    judged: &'c Judged<'v, 'a>,
    /// Port speed per audit NIC.
    speeds: Vec<Option<f64>>,
    /// Rail NICs (the rule the matching applies to its candidates).
    rail: Vec<bool>,
    /// The node's fastest RDMA NIC.
    fastest: f64,
    /// NIC per GPU.
    assignment: Vec<usize>,
    /// GPUs per NIC.
    paired: Vec<Vec<usize>>,
    /// Built only when a GPU has to be judged (most nodes have every GPU within PXB).
    arrangement: std::cell::OnceCell<Arrangement>,
    design: std::cell::OnceCell<Option<crate::analysis::design::Design>>,
}

impl<'c, 'v, 'a> Matching<'c, 'v, 'a> {
    /// The one GPU→NIC matching (analysis::pairing) over the audit's GPUs and RDMA NICs.
    fn new(ctx: &'c Ctx<'a>, judged: &'c Judged<'v, 'a>) -> Self {
        // Port speeds and the rail rule over the audit's RDMA NICs (the same rule the matching
        // applies to its candidates).
        let speeds: Vec<Option<f64>> = ctx.nics.iter().map(|n| nic_speed_gbps(n)).collect();
        let rail = rail_mask(&speeds);
        let fastest = speeds.iter().flatten().fold(0.0f64, |m, &s| m.max(s));
        let view = &ctx.view;
        let gpu_rows: Vec<usize> = judged.view_rows().unwrap_or_default();
        let best_rail = |gi: usize| judged.best_rail(gi, &rail);
        let assignment: Vec<usize> = if gpu_rows.len() == ctx.gpus.len() {
            view.assign_with(ctx.cl, &gpu_rows)
                .into_iter()
                .enumerate()
                .map(|(gi, k)| {
                    k.and_then(|k| judged.nic_of_col(k))
                        .unwrap_or_else(|| best_rail(gi))
                })
                .collect()
        } else {
            (0..ctx.gpus.len()).map(best_rail).collect()
        };
        // The GPUs paired with each NIC.
        let mut paired: Vec<Vec<usize>> = vec![Vec::new(); ctx.nics.len()];
        for (gi, &ni) in assignment.iter().enumerate() {
            paired[ni].push(gi);
        }
        Matching {
            ctx,
            judged,
            speeds,
            rail,
            fastest,
            assignment,
            paired,
            arrangement: std::cell::OnceCell::new(),
            design: std::cell::OnceCell::new(),
        }
    }

    /// The best rail NIC GPU `gi` can reach.
    fn best_rail(&self, gi: usize) -> usize {
        self.judged.best_rail(gi, &self.rail)
    }

    /// One pair per GPU, its NIC the matching's.
    fn pairs(&self) -> Vec<Pair> {
        let (ctx, judged) = (self.ctx, self.judged);
        let mut pairs = Vec::new();
        for (gi, &ni) in self.assignment.iter().enumerate() {
            let (g, n, j) = (ctx.gpus[gi], ctx.nics[ni], judged.at(gi, ni));
            pairs.push(Pair {
                gpu: g.bdf,
                nic: n.bdf,
                rdma: n.rdma_names().next().map(str::to_string),
                label: j.word(),
                reason: ctx.reason(&g.bdf, &n.bdf),
                bottleneck_gbytes: j.bottleneck_gbytes,
                local: j.local(),
                gdr: j.gdr,
                remedy: RemedyClass::None,
            });
        }
        pairs
    }

    /// Path: each GPU by the best rail NIC it can reach; sets each pair's remedy class and
    /// returns the first GPU whose NIC is misplaced.
    fn gpu_findings(&self, pairs: &mut [Pair], findings: &mut Vec<Finding>) -> Option<usize> {
        let (ctx, judged) = (self.ctx, self.judged);
        let mut misplaced_gpu = None;
        for (gi, g) in ctx.gpus.iter().enumerate() {
            let bi = self.best_rail(gi);
            let best = judged.at(gi, bi);
            // A pair the job's NCCL_TOPO_FILE leaves unknown is judged even when the node's
            // own tree gives it GDR.
            let file_unknown = ctx
                .cl
                .topo_file_pair(&g.bdf, &ctx.nics[bi].bdf)
                .is_some_and(|f| !matches!(f, FileJudgement::Decided { .. }));
            if best.local() && best.gdr && !file_unknown {
                continue;
            }
            // An APU (MI300A) with its NIC on its own NUMA node and no switch between them is
            // the platform's intended pairing: `amd-apu-gdr-level` judges it (RCCL's GDR level).
            if crate::model::amd::is_apu(g) && matches!(best.label, Label::Phb | Label::Node) {
                // The design's pairing: what would give it GDR is the setting its operators
                // document (RCCL's level), which `amd-apu-gdr-level` names.
                if let Some(p) = pairs.get_mut(gi).filter(|p| !p.gdr) {
                    p.remedy = RemedyClass::Design;
                }
                continue;
            }
            // The matched NIC has the best label (label first); name it when it is the best.
            let at = judged.at(gi, self.assignment[gi]);
            let ni = if at.label == best.label && at.gdr == best.gdr {
                self.assignment[gi]
            } else {
                bi
            };
            let verdict = judge_gpu(
                ctx,
                gi,
                ni,
                judged,
                self.arrangement
                    .get_or_init(|| Arrangement::new(ctx, &self.rail, &judged.local_table())),
                self.design
                    .get_or_init(|| crate::analysis::design::recognise(ctx.paths()))
                    .as_ref(),
            );
            if verdict.class == RemedyClass::Misplaced && misplaced_gpu.is_none() {
                misplaced_gpu = Some(gi);
            }
            // The pair's class is this verdict's, unless the matching gave the GPU another NIC
            // on which it has GDR.
            if let Some(p) = pairs.get_mut(gi) {
                p.remedy = if p.nic != ctx.nics[ni].bdf && p.gdr {
                    RemedyClass::None
                } else {
                    verdict.class
                };
            }
            findings.push(self.gpu_finding(gi, ni, verdict, pairs.get(gi)));
        }
        misplaced_gpu
    }

    /// The `gpu-nic-path` finding of GPU `gi` on rail NIC `ni` under its verdict.
    fn gpu_finding(
        &self,
        gi: usize,
        ni: usize,
        verdict: GpuVerdict,
        pair: Option<&Pair>,
    ) -> Finding {
        let (ctx, judged, topo) = (self.ctx, self.judged, self.ctx.topo);
        let (g, n) = (ctx.gpus[gi], ctx.nics[ni]);
        let j = judged.at(gi, ni);
        let slow_closer: Vec<String> = (0..ctx.nics.len())
            .filter(|&k| !self.rail[k] && judged.at(gi, k).label < j.label)
            .map(|k| {
                format!(
                    "{} is closer ({}) but at {} no rail",
                    ctx.name(&ctx.nics[k].bdf),
                    judged.at(gi, k).word(),
                    gbps(self.speeds[k])
                )
            })
            .collect();
        let nic_name = ctx.name(&n.bdf);
        let reason = ctx.reason(&g.bdf, &n.bdf);
        let moved = match verdict.class {
            RemedyClass::Misplaced => verdict.move_nic,
            _ => None,
        };
        Finding::new(
            CheckId::GpuNicPath,
            verdict.severity,
            Subject::Device(g.bdf),
            format!(
                "GPU {}: best NIC it can reach, {nic_name} at {}, is {} ({reason}){}; {}",
                g.bdf,
                gbps(self.speeds[ni]),
                j.word(),
                if slow_closer.is_empty() {
                    String::new()
                } else {
                    format!("; {}", slow_closer.join("; "))
                },
                verdict.words
            ),
            verdict.remedy,
        )
        .with_all(path_evidence(topo, &g.bdf, &n.bdf))
        .with_all(
            moved
                .map(|k| path_evidence(topo, &ctx.nics[k].bdf, &ctx.nics[k].bdf))
                .unwrap_or_default()
                .into_iter()
                .take(1),
        )
        .with_all(verdict.evidence)
        .with_pairs(pair.map(|p| p.to_ref()))
    }

    /// NICs no GPU reaches at PIX/PXB: a slow NIC is no rail; a rail NIC unpaired while a
    /// GPU's NIC is misplaced is likely that GPU's NIC.
    fn nic_findings(&self, misplaced_gpu: Option<usize>, findings: &mut Vec<Finding>) {
        let (ctx, judged) = (self.ctx, self.judged);
        for (ni, n) in ctx.nics.iter().enumerate() {
            if !self.rail[ni] {
                findings.push(self.no_rail(ni, n));
                continue;
            }
            if judged.any_local(ni) {
                continue;
            }
            // The NIC of an APU on the APU's own NUMA node (`amd-apu-gdr-level` judges it).
            let apu_nic = self.paired[ni].iter().any(|&gi| {
                crate::model::amd::is_apu(ctx.gpus[gi])
                    && matches!(judged.at(gi, ni).label, Label::Phb | Label::Node)
            });
            if apu_nic {
                continue;
            }
            // A NIC the platform plugin's own topology file, or the job's NCCL_TOPO_FILE, puts
            // within PXB of a GPU: local to NCCL (the GPU's gpu-nic-path finding says so),
            // whatever the VM's tree shows.
            if ctx.gpus.iter().any(|g| {
                ctx.cl.plugin_file_words(&g.bdf, &n.bdf).is_some()
                    || file_local(ctx, &g.bdf, &n.bdf)
            }) {
                continue;
            }
            findings.push(self.not_local(ni, n, misplaced_gpu));
        }
    }

    /// A NIC slower than the rails: a management or storage adapter.
    fn no_rail(&self, ni: usize, n: &Device) -> Finding {
        let ctx = self.ctx;
        Finding::new(
            CheckId::GpuNicPath,
            Severity::Info,
            nic_subject(n),
            format!(
                "NIC {} at {} is no rail: below {:.0} % of the node's fastest RDMA NIC ({}), so a management or storage adapter; no GPU is paired with it",
                ctx.name(&n.bdf),
                gbps(self.speeds[ni]),
                RAIL_FRACTION * 100.0,
                gbps(Some(self.fastest))
            ),
            "none; if it should carry GPU traffic, it needs the rails' speed",
        )
        .with_all(port_rate_evidence(n))
    }

    /// A rail NIC at PIX/PXB from no GPU: serving GPUs across the host bridge, likely a
    /// misplaced GPU's NIC, or no GPU's.
    fn not_local(&self, ni: usize, n: &Device, misplaced_gpu: Option<usize>) -> Finding {
        let ctx = self.ctx;
        let used = !self.paired[ni].is_empty();
        // Unpaired while a GPU's NIC is misplaced: most likely that GPU's NIC.
        let needy = misplaced_gpu
            .filter(|_| !used && self.arrangement.get().is_some_and(|a| a.can_move(ni)));
        let (sev, tail, remedy) = match needy {
            Some(gi) => (
                Severity::Warning,
                format!(
                    " and no GPU is paired with it, while GPU {} has no NIC within PXB: likely that GPU's NIC in the wrong slot",
                    ctx.gpus[gi].bdf
                ),
                format!(
                    "if it carries GPU traffic, move it — now at {} — {}",
                    location(ctx, n),
                    target(ctx, ctx.gpus[gi])
                ),
            ),
            None if used => (
                Severity::Info,
                " (it serves the GPUs paired with it across the host bridge or the CPUs: see their gpu-nic-path findings)".to_string(),
                "none beyond the GPUs' own remedies".to_string(),
            ),
            None => (
                Severity::Info,
                " (not paired with a GPU: fine for storage or in-band traffic)".to_string(),
                "none if it serves storage/in-band traffic".to_string(),
            ),
        };
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
        .with_all(path_evidence(ctx.topo, &n.bdf, &n.bdf).into_iter().take(1))
    }
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

/// Where both endpoints were read: their canonical sysfs paths (whose `realpath`s show the
/// tree), or their place in an XML input ([`device_place`]).
fn path_evidence(topo: &Topology, a: &Bdf, b: &Bdf) -> Vec<Evidence> {
    [a, b]
        .iter()
        .filter_map(|x| topo.device(x))
        .map(|d| device_place(topo, d))
        .collect()
}

/// The job's `NCCL_TOPO_FILE` puts GPU `g` and NIC `n` within PXB of each other.
fn file_local(ctx: &Ctx, g: &Bdf, n: &Bdf) -> bool {
    matches!(
        ctx.cl.topo_file_pair(g, n),
        Some(FileJudgement::Decided { file, .. }) if file.le(NcclPath::Pxb, ctx.cl.options().nccl_version)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::audit::arrangement::is_internal_switch;
    use crate::analysis::audit::{AuditOptions, run};
    use crate::analysis::pairing::NodeView;
    use crate::analysis::testkit::TopoBuilder;
    use crate::model::DeviceKind;
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
        // Its switch has a free port but the node has no NIC to spare (mlx5_0 serves the AMD
        // GPUs' switch): the design, and the remedy adds a NIC there.
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.summary.contains("best NIC it can reach"), "{}", f.summary);
        assert!(f.summary.contains("already serves"), "{}", f.summary);
        assert!(f.remedy.contains("adding an RDMA NIC"), "{}", f.remedy);
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
        let spread = crate::analysis::pairing::assign_nics(&no_rail.cand, &[0, 1, 2, 3]);
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
