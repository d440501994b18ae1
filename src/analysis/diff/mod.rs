//! `peerpath diff A B`: what physically differs between two nodes (or one node at two times),
//! one change per physical difference, each naming its devices by PCI address on both sides.
//!
//! Three steps:
//! - [`layout`]: each node reduced to a [`NodeLayout`] (devices with structural features,
//!   endpoint pair labels, audit findings, node facts) from one classifier and one audit;
//! - [`matching`]: which device of B is which device of A, by a minimum-cost assignment over
//!   structural features (the kernel's `mlx5_N` names and bus numbers are never trusted alone);
//! - [`changes`]: the physical changes between matched devices (a card moved, replaced, added
//!   or removed; a link retrained; ACS, AER or the IOMMU group type changed; the kernel renamed
//!   devices; a node fact changed), with what follows from each folded under it: pair labels
//!   that changed because of it, each GPU's best-NIC label, the audit findings on its devices.
//!   What no physical change explains is listed on its own.

pub mod changes;
pub mod layout;
pub mod matching;

pub use changes::diff;
pub use layout::NodeLayout;

use crate::model::{Bdf, Topology};
use serde::{Deserialize, Serialize};

/// Version tag of the diff JSON document.
pub const DIFF_SCHEMA: &str = "peerpath.diff/2";

/// A device on one side, as the change names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevRef {
    /// Kind (`gpu`, `nic`, `root-port`, `switch-downstream`, …).
    pub kind: String,
    /// PCI address on that side.
    pub bdf: Bdf,
    /// `vvvv:dddd`, or `?`.
    pub ids: String,
    /// Matrix name (`GPU3`, `NIC3`) for an endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// First RDMA device name (`mlx5_3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<String>,
    /// Serial the source kept (GPU UUID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// Switch of a switch port (`sw3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
}

/// The same device on both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Both {
    /// In A.
    pub a: DevRef,
    /// In B.
    pub b: DevRef,
}

/// Where a card sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// The port or bridge above it (`None`: on a root bus).
    pub port: Option<DevRef>,
    /// Slot name of that port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// NUMA node.
    pub numa: Option<u32>,
    /// Host bridge (`pci0000:d7`).
    pub host_bridge: String,
    /// The GPUs nearest to it on that side (`GPU3`).
    pub with: Vec<String>,
    /// The port exists only on this side (a new root port, or one removed with the card).
    pub port_only_here: bool,
}

/// A PCIe link state: `32GT/s x16`, `down` (width 0), or `?` parts when unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkState {
    /// Negotiated.
    pub current: String,
    /// Capable.
    pub max: String,
}

/// AER totals (`aer_dev_correctable`, `aer_dev_nonfatal`, `aer_dev_fatal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AerTotals {
    /// Correctable.
    pub correctable: Option<u64>,
    /// Non-fatal.
    pub nonfatal: Option<u64>,
    /// Fatal.
    pub fatal: Option<u64>,
}

/// A name the kernel gave to the same device differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rename {
    /// The device on both sides.
    pub device: Both,
    /// RDMA and netdev names in A (`mlx5_4`, `ib4`).
    pub a: Vec<String>,
    /// In B.
    pub b: Vec<String>,
}

/// A card that sits under another port (or on another NUMA node) in B.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The card's (first) function.
    pub device: Both,
    /// Its other functions that moved with it.
    pub functions: usize,
    /// Where it was.
    pub from: Place,
    /// Where it is.
    pub to: Place,
    /// Its link, when that changed with the move.
    pub link: Option<(LinkState, LinkState)>,
    /// The port it left: its link in B (`down` when empty).
    pub left: Option<LinkState>,
}

/// What physically changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum What {
    /// A card sits under another port (or on another NUMA node).
    Moved(Box<Move>),
    /// A device (and the devices below it) only in B.
    Added {
        /// The topmost device added.
        device: DevRef,
        /// Where.
        place: Place,
        /// Devices added below it.
        below: Vec<DevRef>,
    },
    /// A device (and the devices below it) only in A.
    Removed {
        /// The topmost device removed.
        device: DevRef,
        /// Where it was.
        place: Place,
        /// Devices removed below it.
        below: Vec<DevRef>,
    },
    /// Another card in the same place (IDs differ).
    Replaced {
        /// The function on both sides.
        device: Both,
    },
    /// A link trained differently; `port` is the other end when it reports the same link.
    Link {
        /// The device below the link.
        device: Both,
        /// The port above it.
        port: Option<Box<Both>>,
        /// In A.
        a: LinkState,
        /// In B.
        b: LinkState,
    },
    /// ACS peer-to-peer redirection on a port changed.
    Acs {
        /// The port.
        port: Both,
        /// Redirecting controls in A (`None`: not redirecting).
        a: Option<String>,
        /// In B.
        b: Option<String>,
        /// Endpoints below the port (B names).
        below: Vec<String>,
    },
    /// AER counters changed.
    Aer {
        /// The device.
        device: Both,
        /// In A.
        a: AerTotals,
        /// In B.
        b: AerTotals,
    },
    /// The IOMMU group's default-domain type changed (devices changing the same way are one
    /// change: a VM has no IOMMU groups at all).
    Iommu {
        /// The devices.
        devices: Vec<Both>,
        /// In A.
        a: Option<String>,
        /// In B.
        b: Option<String>,
    },
    /// The NUMA node of devices that did not move (known on one side only).
    Numa {
        /// The devices.
        devices: Vec<Both>,
        /// In A.
        a: Option<u32>,
        /// In B.
        b: Option<u32>,
    },
    /// The kernel named the same devices differently (probe order).
    Renamed {
        /// Each renamed device.
        renames: Vec<Rename>,
    },
    /// A node fact differs.
    Fact {
        /// Its name.
        fact: String,
        /// In A.
        a: String,
        /// In B.
        b: String,
    },
    /// Pair labels no listed change explains, all changing the same way.
    Labels {
        /// In A.
        a: String,
        /// In B.
        b: String,
    },
    /// An audit finding no listed change explains.
    Finding {
        /// Whether it appeared in B (else it vanished from A).
        appeared: bool,
    },
}

/// A pair whose label changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelChange {
    /// The pair in A's names (`GPU3 NIC3`), `-` when not in A.
    pub pair_a: String,
    /// The pair in B's names.
    pub pair_b: String,
    /// Label in A (`-` when the pair is not in A).
    pub a: String,
    /// Label in B.
    pub b: String,
}

/// A GPU whose best NIC label changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BestNic {
    /// The GPU in B's names (`GPU3`).
    pub gpu: String,
    /// Best label in A and the NIC with it (`PIX`, `mlx5_3`).
    pub a: (String, String),
    /// In B.
    pub b: (String, String),
}

/// An audit finding, its subject named on its side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRef {
    /// Check id.
    pub id: String,
    /// Severity.
    pub severity: String,
    /// Subject on its side (`GPU3 (0000:18:00.0)`, `mlx5_7`, `node`).
    pub subject: String,
    /// The finding's line.
    pub summary: String,
}

/// One physical change and what follows from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The change.
    pub what: What,
    /// GPUs whose best NIC label changed because of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub best_nic: Vec<BestNic>,
    /// Pair labels that changed because of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<LabelChange>,
    /// Findings in B and not in A on its devices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings_appeared: Vec<FindingRef>,
    /// Findings in A and not in B on its devices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings_vanished: Vec<FindingRef>,
}

/// The differences between two nodes (`peerpath.diff/2`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    /// Always [`DIFF_SCHEMA`].
    pub schema: String,
    /// Source of A.
    pub a: String,
    /// Source of B.
    pub b: String,
    /// Whether nothing differs.
    pub equal: bool,
    /// One entry per physical change, then what no change explains.
    pub changes: Vec<Change>,
}

impl Diff {
    /// Number of changes (one line each in the text output).
    pub fn len(&self) -> usize {
        self.changes.len()
    }
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
    /// Label changes and finding changes folded under the changes.
    pub fn folded(&self) -> (usize, usize) {
        self.changes.iter().fold((0, 0), |(l, f), c| {
            (
                l + c.labels.len(),
                f + c.findings_appeared.len() + c.findings_vanished.len(),
            )
        })
    }
}

/// Compares two topologies (builds both layouts, then [`diff`]).
pub fn diff_topologies(a: &Topology, b: &Topology) -> Diff {
    diff(&NodeLayout::of(a), &NodeLayout::of(b))
}

/// Version tag of the JSON of a diff between inputs of several hosts.
pub const HOSTS_DIFF_SCHEMA: &str = "peerpath.diff-hosts/1";

/// One side of a diff between inputs that may hold several hosts: each host's name (its
/// `host_hash`; `None` for an input of one host) and topology, in input order.
pub type Hosts = Vec<(Option<String>, Topology)>;

/// `diff A B` where A or B holds several hosts (an NCCL XML fused across hosts): each host is
/// its own node. Hosts are paired by name (`host_hash`, compared without case and `0x`); when
/// one side is a single host without a name, it is compared with every host of the other side.
#[derive(Debug, Clone, Serialize)]
pub struct HostsDiff {
    /// Always [`HOSTS_DIFF_SCHEMA`].
    pub schema: String,
    /// Input A as given.
    pub a: String,
    /// Input B as given.
    pub b: String,
    /// Whether every host has a counterpart and no pair differs.
    pub equal: bool,
    /// One diff per pair of hosts; its `a` and `b` name the input and the host.
    pub pairs: Vec<Diff>,
    /// Hosts of A with no counterpart in B.
    pub only_a: Vec<String>,
    /// Hosts of B with no counterpart in A.
    pub only_b: Vec<String>,
}

/// Pairs the hosts of two inputs and diffs each pair (see [`HostsDiff`]); `a` and `b` are the
/// inputs as the user named them.
pub fn diff_hosts(a: &str, ha: &Hosts, b: &str, hb: &Hosts) -> HostsDiff {
    let norm = |s: &str| {
        s.trim()
            .trim_start_matches("0x")
            .trim_start_matches("0X")
            .to_ascii_lowercase()
    };
    let shown = |input: &str, host: &Option<String>| match host {
        Some(h) => format!("{input} (host {h})"),
        None => input.to_string(),
    };
    let mut pairs = Vec::new();
    let mut used_b = vec![false; hb.len()];
    let mut only_a = Vec::new();
    let single = |h: &Hosts| h.len() == 1 && h[0].0.is_none();
    for (na, ta) in ha {
        let matched: Vec<usize> = if single(ha) {
            (0..hb.len()).collect()
        } else if single(hb) {
            vec![0]
        } else {
            hb.iter()
                .position(|(nb, _)| {
                    na.as_deref().map(norm) == nb.as_deref().map(norm) && na.is_some()
                })
                .into_iter()
                .collect()
        };
        if matched.is_empty() {
            only_a.push(na.clone().unwrap_or_default());
        }
        for j in matched {
            used_b[j] = true;
            let mut d = diff_topologies(ta, &hb[j].1);
            d.a = shown(a, na);
            d.b = shown(b, &hb[j].0);
            pairs.push(d);
        }
    }
    let only_b: Vec<String> = hb
        .iter()
        .zip(&used_b)
        .filter(|(_, u)| !**u)
        .map(|((n, _), _)| n.clone().unwrap_or_default())
        .collect();
    HostsDiff {
        schema: HOSTS_DIFF_SCHEMA.into(),
        a: a.into(),
        b: b.into(),
        equal: only_a.is_empty() && only_b.is_empty() && pairs.iter().all(|d| d.equal),
        pairs,
        only_a,
        only_b,
    }
}
