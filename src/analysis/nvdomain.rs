//! Which NVLink domain each host's GPUs are in, from the fabric registration a source read
//! for each NVIDIA GPU ([`crate::model::Device::nvlink_fabric`]: NVML's
//! `nvmlDeviceGetGpuFabricInfo`, live or stored by `peerpath capture`, or `nvidia-smi -q`).
//!
//! A GPU is in the domain `ClusterUUID.CliqueId` (topograph's name for it, and the GPU
//! operator's `nvidia.com/gpu.clique`) when its registration completed with status `Success`
//! and a cluster UUID that is not all zero — NCCL joins two GPUs over multi-node NVLink only
//! when both UUID and clique match (`ncclTopoCheckMNNVL`). A state `NOT_SUPPORTED` (or
//! nvidia-smi's `N/A`) is a fact: no NVLink domain. A registration not finished or finished
//! with an error leaves the domain unknown, with the reason. A host is in a domain when every
//! NVIDIA GPU it has is in that one; GPUs in different domains are an error the map names. This
//! is what a scheduler export (Slurm `topology/block`, Kubernetes
//! `accelerator.topograph.run/domain`) groups hosts by.

use crate::model::bdf::Bdf;
use crate::model::fact::Fact;
use crate::model::nvfabric::{DomainId, FabricState, GpuFabric};
use crate::model::{Device, DeviceKind, Topology};
use serde::Serialize;
use std::collections::BTreeMap;

/// NVIDIA's PCI vendor ID.
const NVIDIA: u16 = 0x10de;

/// What one GPU's registration says of its domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Membership {
    /// In this domain.
    Domain {
        /// `ClusterUUID.CliqueId`.
        id: DomainId,
    },
    /// A fact: in no NVLink domain; why, with the value read.
    NoDomain {
        /// The state read (`NOT_SUPPORTED`, nvidia-smi's `N/A`, a zero cluster UUID).
        reason: String,
    },
    /// Cannot be told; why.
    Unknown {
        /// Not read, registration unfinished or failed, a value missing.
        reason: String,
    },
}

/// The one rule: what a GPU's registration says of its domain ([`Membership`]).
pub fn membership(f: &Fact<GpuFabric>) -> Membership {
    let f = match f {
        Fact::Known(f) => f,
        Fact::Unknown(why) => {
            return Membership::Unknown {
                reason: why.clone(),
            };
        }
    };
    let unknown = |why: &str| Membership::Unknown {
        reason: format!("{why} ({})", f.source),
    };
    match f.state {
        FabricState::NotSupported => Membership::NoDomain {
            reason: format!("no NVLink fabric: NVML state NOT_SUPPORTED ({})", f.source),
        },
        FabricState::NotAvailable => Membership::NoDomain {
            reason: format!(
                "no NVLink fabric registration: nvidia-smi printed N/A ({})",
                f.source
            ),
        },
        FabricState::NotStarted | FabricState::InProgress => unknown(&format!(
            "fabric registration not finished: state {}",
            f.state.name()
        )),
        FabricState::Completed => match (f.status.as_deref(), f.cluster_uuid, f.clique_id) {
            (Some("Success"), Some(u), _) if u.is_zero() => Membership::NoDomain {
                reason: format!(
                    "no multi-node NVLink domain: registration completed with an all-zero cluster UUID ({})",
                    f.source
                ),
            },
            (Some("Success"), Some(u), Some(c)) => Membership::Domain {
                id: DomainId {
                    cluster_uuid: u,
                    clique_id: c,
                },
            },
            (Some("Success"), _, _) => {
                unknown("registration completed but the cluster UUID or clique id was not given")
            }
            (Some(s), _, _) => unknown(&format!(
                "fabric registration completed with status {s:?}, not Success"
            )),
            (None, _, _) => unknown("fabric registration completed but no status was given"),
        },
    }
}

/// Which domain a host is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum HostDomain {
    /// Every NVIDIA GPU of the host is in this domain.
    Domain {
        /// `ClusterUUID.CliqueId`.
        id: DomainId,
        /// GPUs read.
        gpus: usize,
        /// The first GPU's reading, as evidence.
        evidence: String,
    },
    /// A fact: the host is in no NVLink domain (its GPUs say so, or it has no NVIDIA GPU).
    NoDomain {
        /// Why, with the value read.
        reason: String,
    },
    /// An error: its GPUs are in different domains, or some in one and some in none.
    Disagree {
        /// Each domain (or `none`) with the GPUs in it.
        groups: Vec<(String, Vec<Bdf>)>,
    },
    /// Cannot be told.
    Unknown {
        /// Why (the GPUs' reasons).
        reason: String,
    },
}

/// The host's NVIDIA GPUs (kind GPU, NVIDIA vendor ID).
fn nvidia_gpus(t: &Topology) -> impl Iterator<Item = &Device> {
    t.devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Gpu && d.vendor_id == Some(NVIDIA))
}

/// How many NVIDIA GPUs the host has (the GPUs [`host_domain`] reads).
pub fn nvidia_gpu_count(t: &Topology) -> usize {
    nvidia_gpus(t).count()
}

/// The domain of one host ([`HostDomain`]).
pub fn host_domain(t: &Topology) -> HostDomain {
    let gpus: Vec<&Device> = nvidia_gpus(t).collect();
    if gpus.is_empty() {
        return HostDomain::NoDomain {
            reason: "no NVIDIA GPU on this host".into(),
        };
    }
    if gpus.iter().all(|d| d.nvlink_fabric.is_none()) {
        return HostDomain::Unknown {
            reason: format!(
                "not read: this {} input carries no NVLink fabric information (NVML's fabric info is read on the live machine and kept by `peerpath capture`; `nvidia-smi -q` beside an lspci text also gives it)",
                if t.source.kind.is_empty() {
                    "kind of"
                } else {
                    t.source.kind.as_str()
                }
            ),
        };
    }
    let mut groups: BTreeMap<String, Vec<Bdf>> = BTreeMap::new();
    let mut domain: Option<(DomainId, String)> = None;
    let mut none_reason = None;
    let mut unknown = Vec::new();
    for d in &gpus {
        let m = match &d.nvlink_fabric {
            Some(f) => membership(f),
            None => Membership::Unknown {
                reason: "not read".into(),
            },
        };
        match m {
            Membership::Domain { id } => {
                groups.entry(id.to_string()).or_default().push(d.bdf);
                if domain.is_none()
                    && let Some(Fact::Known(f)) = &d.nvlink_fabric
                {
                    domain = Some((id, f.source.clone()));
                }
            }
            Membership::NoDomain { reason } => {
                groups.entry("none".into()).or_default().push(d.bdf);
                none_reason.get_or_insert(reason);
            }
            Membership::Unknown { reason } => unknown.push(format!("GPU {}: {reason}", d.bdf)),
        }
    }
    if groups.len() > 1 {
        return HostDomain::Disagree {
            groups: groups.into_iter().collect(),
        };
    }
    if !unknown.is_empty() {
        return HostDomain::Unknown {
            reason: unknown.join("; "),
        };
    }
    match (domain, none_reason) {
        (Some((id, evidence)), _) => HostDomain::Domain {
            id,
            gpus: gpus.len(),
            evidence,
        },
        (None, Some(reason)) => HostDomain::NoDomain { reason },
        (None, None) => HostDomain::Unknown {
            reason: "no GPU reading".into(),
        },
    }
}

/// Each host's NVLink domain, for a set of hosts (a fleet's captures).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DomainMap {
    /// Each host (as the caller named it) and its domain, in the order given.
    pub hosts: Vec<(String, HostDomain)>,
}

impl DomainMap {
    /// The domains and their hosts, each domain's hosts in the order given, domains ordered by
    /// their first host.
    pub fn blocks(&self) -> Vec<(DomainId, Vec<&str>)> {
        let mut out: Vec<(DomainId, Vec<&str>)> = Vec::new();
        for (h, d) in &self.hosts {
            if let HostDomain::Domain { id, .. } = d {
                match out.iter_mut().find(|(x, _)| x == id) {
                    Some((_, hs)) => hs.push(h),
                    None => out.push((*id, vec![h])),
                }
            }
        }
        out
    }

    /// The domain of one host, if it is in one.
    pub fn domain_of(&self, host: &str) -> Option<DomainId> {
        self.hosts.iter().find_map(|(h, d)| match d {
            HostDomain::Domain { id, .. } if h == host => Some(*id),
            _ => None,
        })
    }

    /// Hosts whose GPUs disagree (an error to name), with their groups.
    pub fn disagreeing(&self) -> impl Iterator<Item = (&str, &[(String, Vec<Bdf>)])> {
        self.hosts.iter().filter_map(|(h, d)| match d {
            HostDomain::Disagree { groups } => Some((h.as_str(), groups.as_slice())),
            _ => None,
        })
    }

    /// Hosts whose domain cannot be told, with why.
    pub fn unknown(&self) -> impl Iterator<Item = (&str, &str)> {
        self.hosts.iter().filter_map(|(h, d)| match d {
            HostDomain::Unknown { reason } => Some((h.as_str(), reason.as_str())),
            _ => None,
        })
    }

    /// Hosts in no NVLink domain (a fact), with why.
    pub fn without_domain(&self) -> impl Iterator<Item = (&str, &str)> {
        self.hosts.iter().filter_map(|(h, d)| match d {
            HostDomain::NoDomain { reason } => Some((h.as_str(), reason.as_str())),
            _ => None,
        })
    }
}

/// Each host's domain ([`host_domain`]); hosts named by the caller (a capture's file name, a
/// multi-host input's host name).
pub fn domains<'a>(nodes: impl IntoIterator<Item = (&'a str, &'a Topology)>) -> DomainMap {
    DomainMap {
        hosts: nodes
            .into_iter()
            .map(|(h, t)| (h.to_string(), host_domain(t)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::nvfabric::ClusterUuid;

    fn reading(state: FabricState, status: &str, uuid: &str, clique: u32) -> Fact<GpuFabric> {
        Fact::Known(GpuFabric {
            state,
            status: Some(status.into()),
            clique_id: Some(clique),
            cluster_uuid: Some(uuid.parse::<ClusterUuid>().unwrap()),
            source: "test".into(),
        })
    }

    const U: &str = "dc6e40c4-d722-4357-9ba6-5291dd461278";
    const ZERO: &str = "00000000-0000-0000-0000-000000000000";

    #[test]
    fn one_rule_per_state() {
        let c = FabricState::Completed;
        assert!(matches!(
            membership(&reading(c, "Success", U, 2)),
            Membership::Domain { id } if id.to_string() == format!("{U}.2")
        ));
        // Azure's failed registration: Completed, Insufficient Resources, clique 0, zero UUID.
        assert!(matches!(
            membership(&reading(c, "Insufficient Resources", ZERO, 0)),
            Membership::Unknown { reason } if reason.contains("Insufficient Resources")
        ));
        // NVML on an H100 HGX: Completed with an all-zero UUID is no multi-node domain.
        assert!(matches!(
            membership(&reading(c, "Success", ZERO, 0)),
            Membership::NoDomain { .. }
        ));
        assert!(matches!(
            membership(&reading(FabricState::NotSupported, "Success", ZERO, 0)),
            Membership::NoDomain { reason } if reason.contains("NOT_SUPPORTED")
        ));
        assert!(matches!(
            membership(&reading(FabricState::InProgress, "Success", U, 2)),
            Membership::Unknown { reason } if reason.contains("IN_PROGRESS")
        ));
        assert!(matches!(
            membership(&Fact::Unknown("NVML not loaded".into())),
            Membership::Unknown { reason } if reason == "NVML not loaded"
        ));
    }
}
