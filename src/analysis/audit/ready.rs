//! GPUDirect RDMA readiness: the audit's one verdict on whether NCCL will use GPUDirect RDMA on
//! every GPU of this node, read by every export (`nfd` `gdr-ready`, `prom`
//! `peerpath_gdr_ready`). Computed from the [`Report`] alone: its GPU → NIC pairs, its typed
//! findings and the peer-memory mechanism the `gdr-peer-module` check decided.

use super::gdr::PeerMemory;
use super::{CheckId, Finding, Pair, PathLabel, Report, Severity, Subject};
use crate::model::Bdf;
use std::fmt;

/// Checks whose error findings on a rail pair (or on the node) mean GPUDirect RDMA does not
/// work there: mismatched driver pieces, an excluded GPU, P2P redirected by ACS, DMA
/// translated by the IOMMU, a path measured broken or placed beyond PXB, a rail NIC's port
/// down. The peer-memory mechanism is judged from [`PeerMemory`]. Link width, AER, BAR1 and MPS
/// findings cost bandwidth or buffer size but do not stop GPUDirect RDMA, so they are not here.
const BREAKS_GDR: [CheckId; 6] = [
    CheckId::DriverMismatch,
    CheckId::GpuExcluded,
    CheckId::AcsRedirect,
    CheckId::IommuTranslation,
    CheckId::GpuNicPath,
    CheckId::NicPortDown,
];

/// What the mechanism says: `Some(false)` none, `None` not established, `Some(true)` present.
/// Only the mechanism can make the verdict unknown: other unknowns (ACS or IOMMU state as
/// non-root, AER files absent) are not needed to say NCCL will use GPUDirect RDMA, and stay in
/// the audit.
fn mechanism(m: PeerMemory) -> Option<bool> {
    match m {
        PeerMemory::Registered | PeerMemory::Loaded => Some(true),
        PeerMemory::NoDriver | PeerMemory::Missing => Some(false),
        // Loaded but not registered (NCCL ≤ 2.22.3 disables GPUDirect RDMA, newer ones may
        // fail to register), dma-buf only (kernel, rdma-core and driver support not visible),
        // not readable, or not an NVIDIA GPU (its mechanism is not checked).
        PeerMemory::LoadedNotRegistered
        | PeerMemory::DmaBufOnly
        | PeerMemory::Unknown
        | PeerMemory::NotApplicable => None,
    }
}

/// Why the verdict is not `true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GdrReason {
    /// The node has no GPU–RDMA NIC pair (no GPU, or no NIC with an RDMA device).
    NoPair,
    /// NCCL does not use GPUDirect RDMA on a GPU's rail pair under the job's effective
    /// settings (beyond the GDR level, or a setting turns it off): NCCL stages that GPU's
    /// traffic through host memory.
    NoGdr {
        /// GPU address.
        gpu: Bdf,
        /// Its matched NIC.
        nic: Bdf,
        /// The path class.
        label: PathLabel,
        /// What would give it GDR (misplaced, design, setting).
        remedy: super::RemedyClass,
    },
    /// The peer-memory mechanism is missing (`Some(false)` verdict) or not established
    /// (unknown verdict).
    Mechanism(PeerMemory),
    /// An error finding that breaks GPUDirect RDMA on a rail pair or on the whole node.
    Broken {
        /// The check.
        check: CheckId,
        /// What it is about.
        subject: Subject,
    },
}

impl fmt::Display for GdrReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GdrReason::NoPair => f.write_str("no GPU–RDMA NIC pair"),
            GdrReason::NoGdr {
                gpu,
                nic,
                label,
                remedy,
            } => write!(
                f,
                "GPU {gpu} ↔ NIC {nic} is {label}: no GPUDirect RDMA under the effective NCCL settings ({})",
                remedy.as_str()
            ),
            GdrReason::Mechanism(m) => write!(f, "peer-memory mechanism: {m:?}"),
            GdrReason::Broken { check, subject } => write!(f, "{check} error on {subject}"),
        }
    }
}

/// The verdict: `ready` is `Some(true)` only when NCCL uses GPUDirect RDMA on every GPU's rail
/// pair under the effective settings (within PXB by default; across the host bridge where a
/// setting such as `NCCL_NET_GDR_LEVEL=PHB` admits it) and nothing
/// breaks GPUDirect RDMA; `None` (unknown) when a needed fact is unknown and nothing says
/// false; `Some(false)` otherwise. `reasons` says why it is not `true` (empty when it is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdrReadiness {
    /// `Some(true)` ready, `Some(false)` not ready, `None` unknown.
    pub ready: Option<bool>,
    /// What made it false (or, when `ready` is `None`, unknown); empty when ready.
    pub reasons: Vec<GdrReason>,
}

/// Whether a finding concerns a rail pair of the report or the whole node.
fn on_rail(f: &Finding, pairs: &[Pair]) -> bool {
    if !f.pairs.is_empty() {
        return f
            .pairs
            .iter()
            .any(|r| pairs.iter().any(|p| p.gpu == r.gpu && p.nic == r.nic));
    }
    match &f.subject {
        Subject::Node => true,
        s => {
            s.bdf()
                .is_some_and(|b| pairs.iter().any(|p| p.gpu == b || p.nic == b))
                || s.rdma()
                    .is_some_and(|d| pairs.iter().any(|p| p.rdma.as_deref() == Some(d)))
        }
    }
}

/// Decides GPUDirect RDMA readiness from an audit report (see [`GdrReadiness`]).
pub fn gdr_readiness(r: &Report) -> GdrReadiness {
    let mut not = Vec::new();
    if r.pairs.is_empty() {
        not.push(GdrReason::NoPair);
    }
    for p in r.pairs.iter().filter(|p| !p.gdr) {
        not.push(GdrReason::NoGdr {
            gpu: p.gpu,
            nic: p.nic,
            label: p.label,
            remedy: p.remedy,
        });
    }
    let mech = mechanism(r.peer_memory);
    if mech == Some(false) {
        not.push(GdrReason::Mechanism(r.peer_memory));
    }
    for f in &r.findings {
        if f.severity == Severity::Error && BREAKS_GDR.contains(&f.id) && on_rail(f, &r.pairs) {
            not.push(GdrReason::Broken {
                check: f.id,
                subject: f.subject.clone(),
            });
        }
    }
    if !not.is_empty() {
        GdrReadiness {
            ready: Some(false),
            reasons: not,
        }
    } else if mech.is_none() {
        GdrReadiness {
            ready: None,
            reasons: vec![GdrReason::Mechanism(r.peer_memory)],
        }
    } else {
        GdrReadiness {
            ready: Some(true),
            reasons: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::{AuditOptions, run};
    use super::*;
    use crate::analysis::classify::Label;

    #[test]
    fn clean_twin_is_ready() {
        let r = run(&clean(), &AuditOptions::default());
        assert_eq!(r.peer_memory, PeerMemory::Registered);
        assert_eq!(
            r.gdr_ready(),
            GdrReadiness {
                ready: Some(true),
                reasons: vec![]
            }
        );
    }

    #[test]
    fn far_pair_beats_unknown_mechanism() {
        let mut r = run(&clean(), &AuditOptions::default());
        r.peer_memory = PeerMemory::DmaBufOnly;
        assert_eq!(r.gdr_ready().ready, None);
        r.pairs[1].local = false;
        r.pairs[1].gdr = false;
        r.pairs[1].remedy = super::super::RemedyClass::Misplaced;
        r.pairs[1].label = PathLabel(Label::Phb);
        let g = r.gdr_ready();
        assert_eq!(g.ready, Some(false));
        assert_eq!(
            g.reasons,
            vec![GdrReason::NoGdr {
                gpu: r.pairs[1].gpu,
                nic: r.pairs[1].nic,
                label: PathLabel(Label::Phb),
                remedy: super::super::RemedyClass::Misplaced,
            }]
        );
        assert!(
            g.reasons[0]
                .to_string()
                .contains("is PHB: no GPUDirect RDMA")
        );
        // A PHB pair a setting admits is ready.
        r.pairs[1].gdr = true;
        r.pairs[1].remedy = super::super::RemedyClass::None;
        assert_eq!(r.gdr_ready().ready, None);
    }

    #[test]
    fn errors_break_only_on_a_rail_or_the_node() {
        let base = run(&clean(), &AuditOptions::default());
        let unpaired = b("0000:99:00.0");
        let mut r = base.clone();
        // An IOMMU error on a device no pair uses does not break the rails.
        r.findings.push(Finding::new(
            CheckId::IommuTranslation,
            Severity::Error,
            Subject::Device(unpaired),
            "s",
            "r",
        ));
        assert_eq!(r.gdr_ready().ready, Some(true));
        // One on a paired GPU does; so does a node-wide driver mismatch.
        let gpu = base.pairs[0].gpu;
        r.findings.push(Finding::new(
            CheckId::GpuExcluded,
            Severity::Error,
            Subject::Device(gpu),
            "s",
            "r",
        ));
        r.findings.push(Finding::new(
            CheckId::DriverMismatch,
            Severity::Error,
            Subject::Node,
            "s",
            "r",
        ));
        // A link error costs bandwidth, not GPUDirect RDMA.
        r.findings.push(Finding::new(
            CheckId::LinkDegraded,
            Severity::Error,
            Subject::Device(gpu),
            "s",
            "r",
        ));
        let g = r.gdr_ready();
        assert_eq!(g.ready, Some(false));
        assert_eq!(
            g.reasons,
            vec![
                GdrReason::Broken {
                    check: CheckId::GpuExcluded,
                    subject: Subject::Device(gpu)
                },
                GdrReason::Broken {
                    check: CheckId::DriverMismatch,
                    subject: Subject::Node
                },
            ]
        );
    }

    #[test]
    fn no_pair_and_missing_mechanism() {
        let mut r = run(&clean(), &AuditOptions::default());
        r.pairs.clear();
        r.peer_memory = PeerMemory::Missing;
        assert_eq!(
            r.gdr_ready().reasons,
            vec![GdrReason::NoPair, GdrReason::Mechanism(PeerMemory::Missing)]
        );
    }
}
