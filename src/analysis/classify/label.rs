//! The `nvidia-smi topo -m` label of a pair, with its one order, its printed form and its
//! parser (classification.md §1.2 for the spellings).

use serde::{Serialize, Serializer};
use std::fmt;

/// An `nvidia-smi topo -m` cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Label {
    /// Same device (` X `).
    X,
    /// A bonded set of this many NVLinks (`NV12`).
    Nv(u32),
    /// Two AMD GPUs of one xGMI (Infinity Fabric) hive: `XGMI`, rocm-smi's link type. Ranked
    /// with `NV#` (an NVLink label sorts first should both ever meet).
    Xgmi,
    /// At most a single PCIe bridge (one switch, or two functions of one adapter).
    Pix,
    /// Multiple PCIe bridges (switches) without the host bridge.
    Pxb,
    /// Through one PCIe host bridge.
    Phb,
    /// Between host bridges of one NUMA node.
    Node,
    /// Across the SMP interconnect between NUMA nodes.
    Sys,
    /// Could not be decided from what the source holds (the reason is in
    /// [`super::PairClass::reason`]); shown as `?`, never a guess.
    Unknown,
}

impl Label {
    /// The one order of labels, best first: `X` < `NV#` < `PIX` < `PXB` < `PHB` < `NODE` <
    /// unknown < `SYS`. An unknown label is "NODE or SYS" (two host bridges whose NUMA nodes are
    /// not known), so it ranks between the two. Every comparison of labels in peerpath uses this
    /// order (through [`Ord`]); nvidia-smi's legend order is the same with unknown left out.
    pub fn rank(self) -> u8 {
        match self {
            Label::X => 0,
            Label::Nv(_) | Label::Xgmi => 1,
            Label::Pix => 2,
            Label::Pxb => 3,
            Label::Phb => 4,
            Label::Node => 5,
            Label::Unknown => 6,
            Label::Sys => 7,
        }
    }

    /// PIX or PXB (or better): within NCCL's default GPUDirect RDMA distance.
    pub fn within_pxb(self) -> bool {
        self <= Label::Pxb
    }
}

impl PartialOrd for Label {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Label {
    /// [`Label::rank`] order; among NVLink labels more links is better.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (Label::Nv(a), Label::Nv(b)) => b.cmp(a),
            (Label::Nv(_), Label::Xgmi) => std::cmp::Ordering::Less,
            (Label::Xgmi, Label::Nv(_)) => std::cmp::Ordering::Greater,
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::X => f.write_str("X"),
            Label::Nv(n) => write!(f, "NV{n}"),
            Label::Xgmi => f.write_str("XGMI"),
            Label::Pix => f.write_str("PIX"),
            Label::Pxb => f.write_str("PXB"),
            Label::Phb => f.write_str("PHB"),
            Label::Node => f.write_str("NODE"),
            Label::Sys => f.write_str("SYS"),
            Label::Unknown => f.write_str("?"),
        }
    }
}

impl std::str::FromStr for Label {
    type Err = String;
    /// Parses an nvidia-smi cell: `X`, `NV<n>`, `PIX`, `PXB`, `PHB`, `NODE`, `SYS`, the 2017
    /// spelling `SOC` (= SYS), and `?`, and rocm-smi's `XGMI`; surrounding whitespace is
    /// ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Ok(match t {
            "X" => Label::X,
            "PIX" => Label::Pix,
            "PXB" => Label::Pxb,
            "PHB" => Label::Phb,
            "NODE" => Label::Node,
            "SYS" | "SOC" => Label::Sys,
            "?" => Label::Unknown,
            "XGMI" => Label::Xgmi,
            _ => match t.strip_prefix("NV").and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n > 0 => Label::Nv(n),
                _ => return Err(format!("not an nvidia-smi topology label: {s:?}")),
            },
        })
    }
}

impl Serialize for Label {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_order_best_first() {
        let order = [
            Label::X,
            Label::Nv(18),
            Label::Nv(4),
            Label::Xgmi,
            Label::Pix,
            Label::Pxb,
            Label::Phb,
            Label::Node,
            Label::Unknown,
            Label::Sys,
        ];
        for w in order.windows(2) {
            assert!(w[0] < w[1], "{} < {}", w[0], w[1]);
        }
        assert!(Label::Pxb.within_pxb() && !Label::Phb.within_pxb());
    }
}
