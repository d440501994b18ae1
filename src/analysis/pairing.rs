//! The one GPU↔NIC pairing of a node and the tables it is chosen from.
//!
//! Data: the GPU and NIC endpoints and their pair labels and bottlenecks from
//! [`crate::analysis::classify`] over the [`crate::analysis::paths`] model (summaries only: no
//! words are produced here). [`NodeView`] holds the tables; [`assign_nics`] is the matching
//! every command that pairs GPUs with NICs uses (place for its ranks, rails and the audit for
//! every GPU): a min-cost assignment (Kuhn–Munkres) where each GPU's cost is,
//! lexicographically, its path label to the NIC, then the bandwidth it would get (the path
//! bottleneck divided by the GPUs sharing that NIC), then how many already share it. A NIC is
//! therefore shared only when every unshared NIC has a worse label; with fewer NICs than GPUs,
//! sharing is spread evenly.

use super::classify::{Classifier, ClassifyOptions, Endpoint, Label, PairSummary};
use crate::model::{DeviceKind, Topology};
use std::collections::BTreeMap;

/// Rank of a path label for sorting: lower is better ([`Label::rank`]).
pub type PathRank = u32;

/// A GPU as the chooser sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuCand {
    /// Display name (`GPU0`).
    pub name: String,
    /// NUMA node, when known.
    pub numa_node: Option<u32>,
}

/// A NIC as the chooser sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NicCand {
    /// Display name (`mlx5_0`).
    pub name: String,
    /// NUMA node, when known.
    pub numa_node: Option<u32>,
}

/// One GPU–GPU or GPU–NIC relation as the chooser sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCand {
    /// The nvidia-smi label.
    pub label: Label,
    /// Bottleneck bandwidth of the path in GB/s, when known.
    pub bottleneck_gbps: Option<f64>,
}

impl PairCand {
    /// Sort rank of the label (lower is better).
    pub fn rank(&self) -> PathRank {
        self.label.rank() as PathRank
    }
    /// Whether this is an NVLink relation.
    pub fn nvlink(&self) -> bool {
        matches!(self.label, Label::Nv(_))
    }
}

/// The tables the chooser works on.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidates {
    /// GPUs in CUDA (PCI bus) order.
    pub gpus: Vec<GpuCand>,
    /// NICs eligible for ranks.
    pub nics: Vec<NicCand>,
    /// `gg[i][j]`: GPU i to GPU j (`None` on the diagonal or when unclassifiable).
    pub gg: Vec<Vec<Option<PairCand>>>,
    /// `gn[i][k]`: GPU i to NIC k.
    pub gn: Vec<Vec<Option<PairCand>>>,
    /// Whether NVLink state was visible (otherwise "no NVLink" is not a fact).
    pub nvlink_visible: bool,
}

/// Rank used for a missing relation: worse than any label.
pub const UNKNOWN_RANK: PathRank = 100;

/// Rank of a relation; [`UNKNOWN_RANK`] when it could not be classified.
pub fn pair_rank(p: &Option<PairCand>) -> PathRank {
    p.as_ref().map(|p| p.rank()).unwrap_or(UNKNOWN_RANK)
}

/// NVLink domains: connected components of the GPUs over NVLink relations, as sorted GPU
/// index lists, in order of their first GPU.
pub fn nvlink_domains(c: &Candidates) -> Vec<Vec<usize>> {
    let n = c.gpus.len();
    let mut comp: Vec<usize> = (0..n).collect();
    fn find(comp: &mut [usize], mut x: usize) -> usize {
        while comp[x] != x {
            comp[x] = comp[comp[x]];
            x = comp[x];
        }
        x
    }
    for i in 0..n {
        for j in 0..n {
            if i != j && c.gg[i][j].as_ref().is_some_and(|p| p.nvlink()) {
                let (a, b) = (find(&mut comp, i), find(&mut comp, j));
                if a != b {
                    comp[a.max(b)] = a.min(b);
                }
            }
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..n {
        let r = find(&mut comp, i);
        groups.entry(r).or_default().push(i);
    }
    groups.into_values().collect()
}

/// Scale of the path-label term in the NIC assignment cost (dominates everything else).
const W_LABEL: i64 = 1_000_000_000_000;
/// Scale of the bandwidth term (MB/s, below 10^6 for any real path).
const W_BW: i64 = 1_000;
/// Bandwidth ceiling in MB/s used to turn "more is better" into a cost.
const BW_CEIL_MBPS: i64 = 999_999;

/// Assigns a NIC to each chosen GPU (by index into `c.nics`), by the rules in the module doc.
/// Returns, per rank, the NIC index (`None` when there is no NIC at all) and how many ranks
/// share it.
pub fn assign_nics(c: &Candidates, gpus: &[usize]) -> Vec<Option<usize>> {
    let r = gpus.len();
    let k = c.nics.len();
    if r == 0 || k == 0 {
        return vec![None; r];
    }
    // Columns: NIC k, slot s (s-th rank on that NIC).
    let cols = k * r;
    let weights = pathfinding::matrix::Matrix::from_fn(r, cols, |(row, col)| {
        let nic = col / r;
        let slot = col % r;
        let p = &c.gn[gpus[row]][nic];
        let rank = pair_rank(p) as i64;
        let bw_mbps = p
            .as_ref()
            .and_then(|p| p.bottleneck_gbps)
            .map(|g| ((g * 1000.0) / (slot as f64 + 1.0)).round() as i64)
            .unwrap_or(0)
            .clamp(0, BW_CEIL_MBPS);
        rank * W_LABEL + (BW_CEIL_MBPS - bw_mbps) * W_BW + slot as i64
    });
    let (_, assignment) = pathfinding::kuhn_munkres::kuhn_munkres_min(&weights);
    assignment.into_iter().map(|col| Some(col / r)).collect()
}

/// The node's GPUs and rank-eligible NICs with the chooser's tables, built from the
/// classification.
#[derive(Debug, Clone)]
pub struct NodeView {
    /// GPU endpoints in CUDA (PCI bus) order.
    pub gpus: Vec<Endpoint>,
    /// NIC endpoints (RDMA-capable ones when any NIC has RDMA).
    pub nics: Vec<Endpoint>,
    /// The chooser's tables over them.
    pub cand: Candidates,
    /// Classification notes (NVLink visibility, VM, unknown NUMA).
    pub notes: Vec<String>,
}

fn cand_of(p: &PairSummary) -> PairCand {
    PairCand {
        label: p.label,
        bottleneck_gbps: p.bottleneck_gbytes_per_s,
    }
}

impl NodeView {
    /// Classifies every GPU–GPU and GPU–NIC pair of the topology once.
    pub fn new(t: &Topology) -> NodeView {
        Self::from_classifier(&Classifier::new(t, &ClassifyOptions::default()))
    }

    /// The tables over an existing classification (summaries: labels and bottlenecks).
    pub fn from_classifier(cl: &Classifier) -> NodeView {
        let t = cl.topo();
        let eps = cl.endpoints().to_vec();
        let ix = |e: &Endpoint| cl.endpoint_index(&e.bdf).unwrap_or(usize::MAX);
        let gpus: Vec<Endpoint> = eps
            .iter()
            .filter(|e| e.kind == DeviceKind::Gpu)
            .cloned()
            .collect();
        let nics: Vec<Endpoint> = eps
            .iter()
            .filter(|e| e.kind == DeviceKind::Nic)
            .cloned()
            .collect();
        let mut gg = vec![vec![None; gpus.len()]; gpus.len()];
        let mut gn = vec![vec![None; nics.len()]; gpus.len()];
        for (i, a) in gpus.iter().enumerate() {
            for (j, b) in gpus.iter().enumerate() {
                if i < j {
                    let p = cl.summary(ix(a), ix(b)).map(|p| cand_of(&p));
                    gg[i][j] = p.clone();
                    gg[j][i] = p;
                }
            }
            for (k, n) in nics.iter().enumerate() {
                gn[i][k] = cl.summary(ix(a), ix(n)).map(|p| cand_of(&p));
            }
        }
        let cand = Candidates {
            gpus: gpus
                .iter()
                .map(|g| GpuCand {
                    name: g.name.clone(),
                    numa_node: g.numa_node,
                })
                .collect(),
            nics: nics
                .iter()
                .map(|n| NicCand {
                    name: nic_name(n),
                    numa_node: n.numa_node,
                })
                .collect(),
            gg,
            gn,
            nvlink_visible: t.nvlink_visible,
        };
        NodeView {
            gpus,
            nics,
            cand,
            notes: cl.notes(),
        }
    }
}

/// The name a NIC goes by in launcher variables: its first RDMA device, else its netdev, else
/// its address.
pub fn nic_name(n: &Endpoint) -> String {
    n.rdma
        .first()
        .or(n.net.first())
        .cloned()
        .unwrap_or_else(|| n.bdf.to_string())
}

impl NodeView {
    /// The one GPU→NIC pairing of the node: [`assign_nics`] over every GPU (index into
    /// `nics` per GPU; `None` only when the node has no NIC).
    pub fn pairing(&self) -> Vec<Option<usize>> {
        let all: Vec<usize> = (0..self.gpus.len()).collect();
        assign_nics(&self.cand, &all)
    }
}
