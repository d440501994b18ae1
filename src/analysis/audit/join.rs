//! The audit's side of `evidence -i` and `audit --evidence LOG` ([`Node`]): joins the job's verdicts to a topology (`-i SNAPSHOT`): each rank's GPU found by PCI address
//! (or bus number, or NVML index = PCI order), the NIC the audit's one pairing gives it, the path
//! label to the NIC the log shows it used, and the audit's findings about that GPU's path; the
//! NIC capacity the bandwidth is judged against. Several identical hosts against one snapshot
//! are grouped by GPU.

use crate::analysis::audit::{self, AuditOptions, CheckId, Report, Severity};
use crate::analysis::classify::Classifier;
use crate::analysis::evidence::{
    Capacity, CauseKind, GBPS_TO_BUSBW, Gdr, GpuIdent, Node, NvlinkCapacity, Prediction,
    RankVerdict,
};
use crate::model::{Bdf, Device, DeviceKind};
use std::collections::BTreeMap;

/// The checks whose errors and warnings are faults on a GPU–NIC path, the ones that can slow a
/// job's network traffic (`gpu-nic-path`, the pair's class, is added where a rank's own path is
/// described).
const PATH_FAULTS: [CheckId; 6] = [
    CheckId::AcsRedirect,
    CheckId::IommuTranslation,
    CheckId::LinkDegraded,
    CheckId::MpsMrrs,
    CheckId::NicPortDown,
    CheckId::AerErrors,
];

/// A topology with its audit, ready to join.
pub struct Topo<'a> {
    /// The classification.
    pub cl: &'a Classifier<'a>,
    /// The audit over it (pairs, peer memory, path findings).
    pub audit: Report,
    gpus: Vec<&'a Device>,
}

impl<'a> Topo<'a> {
    /// Runs the audit once over the classification.
    pub fn new(cl: &'a Classifier<'a>) -> Self {
        Self::with_report(cl, audit::run_with(cl, &AuditOptions::default()))
    }

    /// Joins to an audit already run over this classification (`audit --evidence`: the
    /// command's own audit, so it runs once).
    pub fn with_report(cl: &'a Classifier<'a>, audit: Report) -> Self {
        let gpus = cl.topo().of_kind(DeviceKind::Gpu).collect();
        Topo { cl, audit, gpus }
    }

    /// The audit, given back once the join is done.
    pub fn into_report(self) -> Report {
        self.audit
    }

    /// The GPU of a rank, and how it was matched.
    fn gpu_of(&self, g: &GpuIdent) -> Option<(Bdf, String)> {
        if let Some(b) = g.bdf.as_deref().and_then(|b| b.parse::<Bdf>().ok())
            && self.gpus.iter().any(|d| d.bdf == b)
        {
            return Some((b, "PCI address from NCCL's busId".into()));
        }
        if let Some(bus) = g.bus {
            let m: Vec<&&Device> = self.gpus.iter().filter(|d| d.bdf.bus == bus).collect();
            if m.len() == 1 {
                return Some((
                    m[0].bdf,
                    format!("PCI bus {bus:02x} from nccl-tests (the only GPU on that bus)"),
                ));
            }
        }
        if let Some(n) = g.nvml_dev
            && let Some(d) = self.gpus.get(n as usize)
        {
            return Some((
                d.bdf,
                format!("NVML index {n} (NVML numbers GPUs in PCI bus order)"),
            ));
        }
        None
    }

    /// The NIC device carrying an RDMA device (or netdev) name.
    fn nic_named(&self, name: &str) -> Option<&Device> {
        let first = name.split('+').next().unwrap_or(name);
        self.cl
            .topo()
            .of_kind(DeviceKind::Nic)
            .find(|d| d.os_devices.iter().any(|o| o.name == first))
    }

    /// Audit sentences about a GPU's path and the node's GDR mechanism.
    fn audit_facts(&self, gpu: &Bdf) -> Vec<String> {
        let mut out = Vec::new();
        let mech = match self.audit.peer_memory {
            audit::gdr::PeerMemory::Missing => {
                Some("peer memory is not loaded (no nvidia-peermem, not the open kernel module)")
            }
            audit::gdr::PeerMemory::NoDriver => Some("no NVIDIA kernel driver is loaded"),
            audit::gdr::PeerMemory::LoadedNotRegistered => {
                Some("nvidia-peermem is loaded but not registered under memory_peers")
            }
            audit::gdr::PeerMemory::DmaBufOnly => {
                Some("only dma-buf (open kernel module) is available")
            }
            audit::gdr::PeerMemory::Registered => Some("peer memory is registered"),
            audit::gdr::PeerMemory::Loaded => Some("nvidia-peermem is loaded"),
            _ => None,
        };
        if let Some(m) = mech {
            out.push(m.to_string());
        }
        for f in &self.audit.findings {
            if !matches!(f.severity, Severity::Error | Severity::Warning) {
                continue;
            }
            let about = f.pairs.iter().any(|p| p.gpu == *gpu) || f.subject.bdf() == Some(*gpu);
            if about && (PATH_FAULTS.contains(&f.id) || f.id == CheckId::GpuNicPath) {
                out.push(format!("{} [{}]", f.summary, f.id));
            }
        }
        out
    }

    /// What to do, from the cause and the audit.
    fn fix(&self, r: &RankVerdict, local: Option<bool>) -> Option<String> {
        use audit::gdr::PeerMemory as P;
        if r.gdr != Gdr::Off {
            return None;
        }
        let kind = r.cause.as_ref().map(|c| c.kind);
        Some(match (kind, self.audit.peer_memory, local) {
            (Some(CauseKind::Socket), _, _) => "make the RDMA devices visible to the job (device plugin, /dev/infiniband, NCCL_IB_HCA naming a present HCA)".into(),
            (Some(CauseKind::GdrLevelEnv), _, _) => "unset NCCL_NET_GDR_LEVEL (or set it to the path class the topology gives)".into(),
            (Some(CauseKind::Distance), _, Some(true)) => "the topology says this pair is local: check NCCL_NET_GDR_LEVEL and whether NCCL sees the same PCIe tree (VM, NCCL_TOPO_FILE)".into(),
            (Some(CauseKind::Distance), _, _) => "pin the rank to a GPU near its NIC (peerpath place) or raise NCCL_NET_GDR_LEVEL knowingly".into(),
            (Some(CauseKind::NoModule | CauseKind::NicDisabled | CauseKind::NotShown), P::DmaBufOnly, _) => "this node offers only dma-buf (open kernel module): NCCL uses it from 2.13 with a dma-buf capable NIC driver — upgrade NCCL, or load nvidia-peermem".into(),
            (_, P::Missing | P::LoadedNotRegistered | P::NoDriver, _) | (Some(CauseKind::NoModule), _, _) => "load nvidia-peermem or use dma-buf (open kernel module, NCCL ≥ 2.13)".into(),
            (_, P::Unknown, _) => "check that nvidia-peermem is loaded (the snapshot does not show /sys/module) or use dma-buf".into(),
            _ => "read NCCL_DEBUG_SUBSYS=INIT,NET output for the per-NIC GDR check".into(),
        })
    }
}

impl Node for Topo<'_> {
    /// Where the snapshot came from.
    fn source(&self) -> String {
        self.cl.topo().source.path.clone()
    }

    /// Joins one rank.
    fn join(&self, r: &RankVerdict) -> Option<Prediction> {
        let (gpu, matched_by) = self.gpu_of(&r.gpu)?;
        let pair = self.audit.pairs.iter().find(|p| p.gpu == gpu);
        let predicted_nic = pair.map(|p| p.rdma.clone().unwrap_or_else(|| p.nic.to_string()));
        let predicted_label = pair.map(|p| p.label.to_string());
        let used = r.nics.iter().find_map(|n| n.name.clone());
        let used_dev = used.as_deref().and_then(|n| self.nic_named(n));
        let used_label = used_dev
            .and_then(|d| self.cl.label_of(&gpu, &d.bdf))
            .map(|(l, _)| audit::PathLabel(l).to_string());
        let same_nic = match (used_dev, pair) {
            (Some(d), Some(p)) => Some(d.bdf == p.nic),
            _ => None,
        };
        let facts = self.audit_facts(&gpu);
        let who = match r.rank {
            Some(k) => format!("rank {k} on {} GPU {gpu}", r.host),
            None => format!("{} GPU {gpu}", r.host),
        };
        let nic_words = match (&used, &used_label) {
            (Some(n), Some(l)) => format!("{n} ({l} from this GPU)"),
            (Some(n), None) => format!("{n} (not in the snapshot)"),
            (None, _) if !r.nics.is_empty() => {
                format!("NET/{} (name not in the log)", r.nics[0].index)
            }
            (None, _) => "no NIC shown".into(),
        };
        let prediction = match (&predicted_nic, &predicted_label) {
            (Some(n), Some(l)) => format!("the topology pairs it with {n} ({l})"),
            _ => "the topology pairs it with no RDMA NIC".into(),
        };
        let gdr = match r.gdr {
            Gdr::Used => "with GDR",
            Gdr::Off => "without GDR",
            Gdr::Unknown => "with GDR unknown",
            Gdr::NotApplicable => "on one host without network traffic (GDR not applicable)",
        };
        let mut sentence = format!("{who} used {nic_words} {gdr}; {prediction}");
        if same_nic == Some(false) {
            sentence.push_str(" — not the NIC it used");
        }
        if !facts.is_empty() {
            sentence.push_str("; ");
            sentence.push_str(&facts.join("; "));
        }
        if let Some(fix) = self.fix(r, pair.map(|p| p.local)) {
            sentence.push_str(" → ");
            sentence.push_str(&fix);
        }
        Some(Prediction {
            gpu: gpu.to_string(),
            matched_by,
            predicted_nic,
            predicted_label,
            used_label,
            same_nic,
            audit: facts,
            sentence,
        })
    }

    /// NIC capacity from the snapshot: the NICs the audit pairs with GPUs, each RDMA port's
    /// rate. `None` when a paired NIC's rate is not in the snapshot.
    fn capacity(&self) -> Result<Capacity, String> {
        let mut nics: Vec<Bdf> = self.audit.pairs.iter().map(|p| p.nic).collect();
        nics.sort();
        nics.dedup();
        if nics.is_empty() {
            let n = self.cl.topo().of_kind(DeviceKind::Nic).count();
            return Err(format!(
                "the snapshot pairs no GPU with an RDMA NIC ({n} NIC function(s) without an RDMA device or rate)"
            ));
        }
        let mut ports = 0u32;
        let mut total = 0.0;
        let mut desc: BTreeMap<String, u32> = BTreeMap::new();
        for b in &nics {
            let Some(d) = self.cl.topo().device(b) else {
                continue;
            };
            for o in d
                .os_devices
                .iter()
                .filter(|o| o.kind == crate::model::OsDeviceKind::Rdma)
            {
                for p in &o.ports {
                    let Some(rate) = p.rate_gbps else {
                        return Err(format!(
                            "port {}/{} has no rate in the snapshot",
                            o.name, p.port
                        ));
                    };
                    if p.state.as_ref().is_some_and(|(n, _)| *n != 4) {
                        continue;
                    }
                    ports += 1;
                    total += rate;
                    *desc.entry(format!("{rate}")).or_default() += 1;
                }
            }
        }
        if ports == 0 {
            return Err("no ACTIVE RDMA port on the paired NICs".into());
        }
        let d: Vec<String> = desc.iter().map(|(r, n)| format!("{n}×{r} Gb/s")).collect();
        Ok(Capacity {
            nics: ports,
            total_gbps: total,
            expected_busbw: total * GBPS_TO_BUSBW,
            source: format!(
                "snapshot {}: {} port(s) of the NICs paired with GPUs ({})",
                self.source(),
                ports,
                d.join(" + ")
            ),
        })
    }

    /// NVLink capacity from the topology: per GPU, its NVLinks (direct and to the NVSwitch
    /// fabric) × NCCL's per-link figure for their generation; the GPU with the fewest bounds a
    /// ring. `Err` when no GPU has an NVLink (a PCIe-only node: not judged).
    fn nvlink_capacity(&self, nccl_minor: u32) -> Result<NvlinkCapacity, String> {
        let p = self.cl.paths();
        let mut per: Vec<(u32, f64)> = Vec::new();
        for d in &self.gpus {
            let Some(i) = p.index(&d.bdf) else { continue };
            let links = p.nvlink_links(i);
            if links > 0 {
                let bw = crate::model::bandwidth::nccl_nvlink_link_gbytes(
                    None,
                    p.nvlink_version(i),
                    nccl_minor,
                );
                per.push((links, bw));
            }
        }
        let Some(&(links, per_link)) = per
            .iter()
            .min_by(|a, b| (f64::from(a.0) * a.1).total_cmp(&(f64::from(b.0) * b.1)))
        else {
            return Err(format!(
                "no GPU of {} has an NVLink in the topology",
                self.source()
            ));
        };
        let expected = f64::from(links) * per_link;
        Ok(NvlinkCapacity {
            gpus: per.len() as u32,
            links,
            per_link,
            expected_busbw: expected,
            source: format!(
                "topology {}: {} GPU(s) with NVLink, the fewest {links} link(s) × {per_link} GB/s (NCCL's per-link figure for NCCL 2.{nccl_minor})",
                self.source(),
                per.len()
            ),
        })
    }

    /// The port rate of an RDMA device in the snapshot.
    fn port_gbps(&self, rdma: &str) -> Option<f64> {
        self.cl
            .topo()
            .devices
            .iter()
            .flat_map(|d| d.os_devices.iter())
            .find(|o| o.name == rdma)
            .and_then(|o| o.ports.iter().find_map(|p| p.rate_gbps))
    }

    /// Audit errors and warnings on the GPU–NIC paths (ACS, IOMMU, link, MPS), for a slow run.
    fn path_problems(&self) -> Vec<String> {
        self.audit
            .findings
            .iter()
            .filter(|f| {
                matches!(f.severity, Severity::Error | Severity::Warning)
                    && PATH_FAULTS.contains(&f.id)
            })
            .map(|f| format!("{} [{}]", f.summary, f.id))
            .collect()
    }
}
