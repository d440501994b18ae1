//! The one GPU↔NIC pairing of a node and the tables it is chosen from.
//!
//! Data: the GPU and NIC endpoints and their pair labels and bottlenecks from
//! [`crate::analysis::classify`] over the [`crate::analysis::paths`] model (summaries only: no
//! words are produced here), and each NIC's port speed (RDMA port `rate`, NCCL XML `speed`,
//! netdev `speed`). [`NodeView`] holds the tables; [`assign_nics`] is the matching every
//! command that pairs GPUs with NICs uses (place for its ranks, rails and the audit for every
//! GPU): a min-cost assignment (Kuhn–Munkres) where each GPU's cost is, lexicographically, its
//! path label to the NIC, then the bandwidth it would get (the path bottleneck divided by the
//! GPUs sharing that NIC), then how many already share it. A NIC is therefore shared only when
//! every unshared NIC has a worse label; with fewer NICs than GPUs, sharing is spread evenly.
//! Only rails are offered: a NIC slower than half the node's fastest ([`rail_mask`]) is a
//! management or storage adapter and never carries a GPU's traffic.

use super::classify::{Classifier, ClassifyOptions, Endpoint, Label, Matrix, PairSummary};
use crate::model::{Bdf, DeviceKind, Topology};
use std::collections::{BTreeMap, HashMap};

pub mod blocks;
pub mod near;

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
    /// Its fastest port that is not known to be down, in Gb/s ([`nic_speed_gbps`]).
    pub speed_gbps: Option<f64>,
    /// Whether it is a rail: GPUs are paired only with rails ([`rail_mask`]).
    pub rail: bool,
}

/// A NIC slower than this fraction of the node's fastest RDMA NIC is no rail: a management,
/// storage or in-band adapter (a 10 Gb/s port next to 200 Gb/s rails, 100 Gb/s next to 400).
pub const RAIL_FRACTION: f64 = 0.5;

/// Whether a port is known to be down (`state` not ACTIVE/ARMED or `phys_state` not LinkUp).
fn port_down(p: &crate::model::RdmaPort) -> bool {
    p.state.as_ref().is_some_and(|(n, _)| *n != 4 && *n != 5)
        || p.phys_state.as_ref().is_some_and(|(n, _)| *n != 5)
}

/// A NIC's fastest port in Gb/s among ports not known to be down: the RDMA ports' `rate`
/// (`/sys/class/infiniband/<dev>/ports/<p>/rate`, NCCL XML `net speed`), else its netdevs'
/// `speed` (`/sys/class/net/<if>/speed`, Mb/s). `None` when no rate was read.
pub fn nic_speed_gbps(d: &crate::model::Device) -> Option<f64> {
    use crate::model::OsDeviceKind;
    let rdma = d
        .os_devices
        .iter()
        .filter(|o| o.kind == OsDeviceKind::Rdma)
        .flat_map(|o| o.ports.iter())
        .filter(|p| !port_down(p))
        .filter_map(|p| p.rate_gbps)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    rdma.or_else(|| {
        d.os_devices
            .iter()
            .filter(|o| o.kind == OsDeviceKind::Net && o.operstate.as_deref() != Some("down"))
            .filter_map(|o| o.speed_mbps)
            .filter(|&s| s > 0)
            .map(|s| s as f64 / 1000.0)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))
    })
}

/// The rail rule, over NIC speeds: a NIC is a rail unless its speed is known and below
/// [`RAIL_FRACTION`] of the fastest known speed. A NIC of unknown speed is a rail (its speed
/// is not evidence against it).
pub fn rail_mask(speeds: &[Option<f64>]) -> Vec<bool> {
    let fastest = speeds.iter().flatten().fold(0.0f64, |m, &s| m.max(s));
    speeds
        .iter()
        .map(|s| s.is_none_or(|s| fastest <= 0.0 || s >= fastest * RAIL_FRACTION))
        .collect()
}

/// One GPU–GPU or GPU–NIC relation as the chooser sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCand {
    /// The nvidia-smi label.
    pub label: Label,
    /// Bottleneck bandwidth of the path in GB/s, when known.
    pub bottleneck_gbps: Option<f64>,
    /// A last tie-break between NICs of one label and bandwidth: on an AMD node (RCCL), the
    /// bridge units on a PIX/PXB path, so a GCD takes the NIC under its own switch before one a
    /// switch level further (MI250's nested Broadcom levels); 0 everywhere else.
    pub tie: u32,
    /// GPU–NIC: NCCL uses GPUDirect RDMA on the pair under the job's effective settings (the
    /// classifier's decision); false for other pairs.
    pub gdr: bool,
    /// NCCL's path type of the pair (the classifier's; NCCL has no NODE: it is PHB there).
    pub nccl_path: super::nccl::NcclPath,
}

impl PairCand {
    /// Sort rank of the label (lower is better).
    pub fn rank(&self) -> PathRank {
        self.label.rank() as PathRank
    }
    /// Whether this is a scale-up fabric relation: NVLink, or xGMI between AMD GPUs.
    pub fn nvlink(&self) -> bool {
        matches!(self.label, Label::Nv(_) | Label::Xgmi)
    }
}

/// The tables the chooser works on.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidates {
    /// GPUs in CUDA (PCI bus) order.
    pub gpus: Vec<GpuCand>,
    /// NICs eligible for ranks.
    pub nics: Vec<NicCand>,
    /// `gg[i][j]`: GPU i to GPU j (`None` on the diagonal or when unclassifiable); empty in a
    /// [`NodeView::gpu_nic`] view.
    pub gg: Vec<Vec<Option<PairCand>>>,
    /// `gn[i][k]`: GPU i to NIC k; empty in a [`NodeView::near`] view of a large node (read
    /// [`NodeView::gn`] there).
    pub gn: Vec<Vec<Option<PairCand>>>,
    /// Whether NVLink state was visible (otherwise "no NVLink" is not a fact); on an AMD
    /// node, whether xGMI state was.
    pub nvlink_visible: bool,
    /// The GPUs' scale-up fabric, as the words name it: `NVLink`, or `xGMI` on an AMD node.
    pub fabric: &'static str,
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
            let p =
                c.gg.get(i)
                    .and_then(|row| row.get(j))
                    .and_then(Option::as_ref);
            if i != j && p.is_some_and(|p| p.nvlink()) {
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
/// Scale of the tie-break term ([`PairCand::tie`]): below one MB/s of the bandwidth term,
/// above any slot number (bridge units stay below 10, ranks below 100).
const W_TIE: i64 = 100;
/// Bandwidth ceiling in MB/s used to turn "more is better" into a cost.
const BW_CEIL_MBPS: i64 = 999_999;

/// Assigns a NIC to each chosen GPU (by index into `c.nics`), by the rules in the module doc.
/// Only rails are offered ([`NicCand::rail`]; every NIC when none is). Returns, per rank, the
/// NIC index (`None` when there is no NIC at all).
///
/// The assignment is over columns (NIC, slot): the s-th rank on a NIC costs its label, its
/// bandwidth divided by s + 1, and s. Every NIC could take every rank, but a solution that
/// leaves a free slot on each NIC is optimal over all slots (the proof is at
/// `slot_columns_suffice`), so the columns start at an even share per NIC and only a NIC whose
/// slots all filled gets more: the matrix is ranks × NICs × the share instead of ranks² × NICs.
pub fn assign_nics(c: &Candidates, gpus: &[usize]) -> Vec<Option<usize>> {
    match assign_nics_in(c, blocks::Table::Dense, gpus) {
        Ok(v) => v,
        Err(near::Uncertified) => vec![None; gpus.len()],
    }
}

/// [`assign_nics`] over the pairs of `table`: the dense one, or on a near table the same
/// assignment block by block ([`blocks`]; [`near::Uncertified`] where that needs the dense
/// table).
fn assign_nics_in(
    c: &Candidates,
    table: blocks::Table,
    gpus: &[usize],
) -> Result<Vec<Option<usize>>, near::Uncertified> {
    Ok(match assign_slots_in(c, table, gpus, false)? {
        Some((_, cols)) => cols.into_iter().map(|(nic, _)| Some(nic)).collect(),
        None => vec![None; gpus.len()],
    })
}

/// Cost of the `slot`-th rank on NIC `nic` being GPU `gpus[row]` (see the module doc).
#[cfg(test)]
fn slot_cost(c: &Candidates, gpus: &[usize], row: usize, nic: usize, slot: usize) -> i64 {
    near::cost_of(blocks::Table::Dense.pair(c, gpus[row], nic), slot)
}

/// The NICs a matching offers ranks, by index into `c.nics`: the rails ([`NicCand::rail`]),
/// every NIC when none is.
fn offered_nics(c: &Candidates) -> Vec<usize> {
    let rails: Vec<usize> = (0..c.nics.len()).filter(|&k| c.nics[k].rail).collect();
    if rails.is_empty() {
        (0..c.nics.len()).collect()
    } else {
        rails
    }
}

/// The min-cost assignment of [`assign_nics`]: its total cost and each rank's (NIC, slot);
/// `None` without ranks or NICs. `all_slots` offers every slot of every NIC at once (the
/// definition, for tests) instead of growing them.
#[cfg(test)]
fn assign_slots(
    c: &Candidates,
    gpus: &[usize],
    all_slots: bool,
) -> Option<(i64, Vec<(usize, usize)>)> {
    assign_slots_in(c, blocks::Table::Dense, gpus, all_slots).unwrap_or(None)
}

/// [`assign_slots`] over the pairs of `table`, each round of slots solved by
/// [`blocks::Table::solve`].
#[allow(clippy::type_complexity)]
fn assign_slots_in(
    c: &Candidates,
    table: blocks::Table,
    gpus: &[usize],
    all_slots: bool,
) -> Result<Option<(i64, Vec<(usize, usize)>)>, near::Uncertified> {
    let r = gpus.len();
    let offered = offered_nics(c);
    let k = offered.len();
    if r == 0 || k == 0 {
        return Ok(None);
    }
    // Slots offered per NIC: enough for every rank in total, grown where they all filled.
    let mut slots = vec![if all_slots { r } else { r.div_ceil(k) }; k];
    loop {
        // Columns in NIC order, then slot order.
        let cols: Vec<(usize, usize)> = (0..k)
            .flat_map(|n| (0..slots[n]).map(move |s| (n, s)))
            .collect();
        let col_nic: Vec<usize> = cols.iter().map(|&(n, _)| offered[n]).collect();
        let (total, assignment) = table.solve(gpus, &col_nic, |row, col| {
            near::cost_of(table.pair(c, gpus[row], col_nic[col]), cols[col].1)
        })?;
        let mut used = vec![0usize; k];
        for &col in &assignment {
            used[cols[col].0] += 1;
        }
        if slot_columns_suffice(&used, &slots, r) {
            return Ok(Some((
                total,
                assignment
                    .into_iter()
                    .map(|col| (offered[cols[col].0], cols[col].1))
                    .collect(),
            )));
        }
        for n in 0..k {
            if used[n] == slots[n] {
                slots[n] = (slots[n] * 2).min(r);
            }
        }
    }
}

/// Whether a min-cost assignment over the first `slots[n]` slots of each NIC `n` (`used[n]`
/// of them taken) is also min-cost over all `ranks` slots of every NIC.
///
/// It is when every NIC either offers all slots or has one free. Proof: take an optimum over
/// all slots that differs from ours, and the alternating paths of the two assignments. A
/// path whose columns are all offered cannot improve ours (ours is optimal over them), so a
/// cheaper optimum has a path that starts at a slot (n, s) not offered, s ≥ slots[n]. NIC n
/// then has a free offered slot s' < s; a rank's cost grows strictly with its slot number on
/// a NIC, so the same path started at (n, s') (a column ours does not use) is cheaper still
/// and uses offered columns only: a contradiction.
fn slot_columns_suffice(used: &[usize], slots: &[usize], ranks: usize) -> bool {
    used.iter().zip(slots).all(|(&u, &s)| u < s || s >= ranks)
}

/// The node's GPUs and rank-eligible NICs with the chooser's tables, built from the
/// classification.
#[derive(Debug, Clone)]
pub struct NodeView {
    /// GPU endpoints in CUDA (PCI bus) order.
    pub gpus: Vec<Endpoint>,
    /// NIC endpoints (one per RDMA device when any NIC has one, in nvidia-smi's numbering;
    /// virtual functions whose physical function is listed are left out).
    pub nics: Vec<Endpoint>,
    /// The chooser's tables over them.
    pub cand: Candidates,
    /// Classification notes (NVLink visibility, VM, unknown NUMA).
    pub notes: Vec<String>,
    /// Every GPU–data-drive pair with its label, the GPU's nearest drive marked
    /// ([`crate::analysis::storage`]): GPU index, drive choice, nearest.
    pub gpu_nvme: Vec<(usize, crate::analysis::storage::DriveChoice, bool)>,
    /// On a [`NodeView::near`] view of a large node: the GPU–NIC pairs under one host bridge,
    /// and `cand.gn` is empty; `None` when `cand.gn` holds every pair.
    pub near: Option<near::NearTable>,
}

fn cand_of(p: &PairSummary, rccl: bool) -> PairCand {
    PairCand {
        label: p.label,
        bottleneck_gbps: p.bottleneck_gbytes_per_s,
        tie: match p.why {
            crate::analysis::classify::Why::CommonBridge { units, .. } if rccl => units,
            _ => 0,
        },
        gdr: p.gdr,
        nccl_path: p.nccl_path,
    }
}

impl NodeView {
    /// Classifies every GPU–GPU and GPU–NIC pair of the topology once.
    pub fn new(t: &Topology) -> NodeView {
        Self::from_classifier(&Classifier::new(t, &ClassifyOptions::default()))
    }

    /// The tables over an existing classification (summaries: labels and bottlenecks).
    pub fn from_classifier(cl: &Classifier) -> NodeView {
        Self::build(cl, true, None)
    }

    /// [`NodeView::from_classifier`] without the GPU–GPU table: `cand.gg` is left empty. What
    /// the audit's matching reads (GPU–NIC pairs only): on a node of n GPUs the n² GPU pairs
    /// are not classified for it. A caller that needs GPU pairs builds the full view (rails) or
    /// the one of [`NodeView::place_from`] (place).
    pub fn gpu_nic(cl: &Classifier) -> NodeView {
        Self::build(cl, false, None)
    }

    fn build(cl: &Classifier, gpu_pairs: bool, near_from: Option<usize>) -> NodeView {
        let t = cl.topo();
        let eps = cl.endpoints();
        let gpu_ix: Vec<usize> = (0..eps.len())
            .filter(|&k| eps[k].kind == DeviceKind::Gpu)
            .collect();
        // Virtual functions share their physical function's port: ranks are given physical
        // NICs (a VF stays a candidate where its PF is not an endpoint, as in a VM guest).
        let pf_nic = |b: &Bdf| eps.iter().any(|e| e.kind == DeviceKind::Nic && e.bdf == *b);
        let nic_ix: Vec<usize> = (0..eps.len())
            .filter(|&k| eps[k].kind == DeviceKind::Nic)
            .filter(|&k| !eps[k].physfn.as_ref().is_some_and(pf_nic))
            .collect();
        let gpus: Vec<Endpoint> = gpu_ix.iter().map(|&k| eps[k].clone()).collect();
        let nics: Vec<Endpoint> = nic_ix.iter().map(|&k| eps[k].clone()).collect();
        let near = near_from
            .is_some_and(|n| gpus.len() * nics.len() > n)
            .then(|| near::NearTable::build(cl, &gpu_ix, &nic_ix))
            .flatten();
        // A near view never holds the GPU × GPU table (its readers classify GPU pairs on
        // demand: [`near::NearTable::gpu_pair`]).
        let gpu_pairs = gpu_pairs && near.is_none();
        let mut gg = if gpu_pairs {
            vec![vec![None; gpus.len()]; gpus.len()]
        } else {
            Vec::new()
        };
        let mut gn = if near.is_some() {
            Vec::new()
        } else {
            vec![vec![None; nics.len()]; gpus.len()]
        };
        for (i, &a) in gpu_ix.iter().enumerate() {
            for (j, &b) in gpu_ix.iter().enumerate() {
                if gpu_pairs && i < j {
                    let p = cl.summary(a, b).map(|p| cand_of(&p, cl.is_rccl()));
                    gg[i][j] = p.clone();
                    gg[j][i] = p;
                }
            }
            if let Some(row) = gn.get_mut(i) {
                for (k, &n) in nic_ix.iter().enumerate() {
                    row[k] = cl.summary(a, n).map(|p| cand_of(&p, cl.is_rccl()));
                }
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
            nics: {
                let speeds: Vec<Option<f64>> = nics
                    .iter()
                    .map(|n| t.device(&n.bdf).and_then(nic_speed_gbps))
                    .collect();
                let rails = rail_mask(&speeds);
                nics.iter()
                    .zip(speeds.iter().zip(rails))
                    .map(|(n, (&speed_gbps, rail))| NicCand {
                        name: nic_name(n),
                        numa_node: n.numa_node,
                        speed_gbps,
                        rail,
                    })
                    .collect()
            },
            gg,
            gn,
            nvlink_visible: if cl.is_rccl() {
                t.xgmi_visible
            } else {
                t.nvlink_visible
            },
            fabric: if cl.is_rccl() { "xGMI" } else { "NVLink" },
        };
        let gpu_nvme = crate::analysis::storage::gpu_drive_pairs(
            cl,
            &gpus.iter().map(|g| g.bdf).collect::<Vec<_>>(),
        );
        NodeView {
            gpus,
            nics,
            cand,
            notes: cl.notes(),
            gpu_nvme,
            near,
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

/// Rails: one NIC per GPU, none shared (rail k of a rail-optimised node = the NIC GPU k owns),
/// by a min-cost assignment on path label, then bandwidth, over rail NICs only
/// ([`NicCand::rail`]). With fewer rails than GPUs the GPUs get [`assign_nics`]'s shared
/// pairing instead.
pub fn assign_rails(c: &Candidates, gpus: &[usize]) -> Vec<Option<usize>> {
    match assign_rails_in(c, blocks::Table::Dense, gpus) {
        Ok(v) => v,
        Err(near::Uncertified) => vec![None; gpus.len()],
    }
}

/// [`assign_rails`] over the pairs of `table` (see [`assign_nics_in`]).
fn assign_rails_in(
    c: &Candidates,
    table: blocks::Table,
    gpus: &[usize],
) -> Result<Vec<Option<usize>>, near::Uncertified> {
    let r = gpus.len();
    let offered = offered_nics(c);
    let k = offered.len();
    if r == 0 || k < r {
        return assign_nics_in(c, table, gpus);
    }
    let (_, assignment) = table.solve(gpus, &offered, |row, col| {
        blocks::rail_cost(table.pair(c, gpus[row], offered[col]))
    })?;
    Ok(assignment
        .into_iter()
        .map(|col| Some(offered[col]))
        .collect())
}

impl NodeView {
    /// The one GPU→NIC pairing of the node: [`assign_nics`] over every GPU (index into
    /// `nics` per GPU; `None` only when the node has no NIC). A [`NodeView::near`] view of a
    /// large node is matched with [`NodeView::assign_with`] instead.
    pub fn pairing(&self) -> Vec<Option<usize>> {
        let all: Vec<usize> = (0..self.gpus.len()).collect();
        assign_nics(&self.cand, &all)
    }
}

/// Where the picture's rail pairs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RailPairSource {
    /// The audit's GPU→RDMA NIC matching.
    Audit,
    /// No audit matching (no GPU or no RDMA NIC): each GPU/accelerator to its nearest NIC.
    Nearest,
}

/// One compute endpoint and the NIC its rail line goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailPair {
    /// Compute endpoint name (`GPU0`, `ACC1`).
    pub compute: String,
    /// Its PCI address.
    pub compute_bdf: Bdf,
    /// NIC endpoint name (`NIC3`).
    pub nic: String,
    /// Its PCI address.
    pub nic_bdf: Bdf,
}

/// The rail pairs of a node and where they come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailPairs {
    /// Where they come from.
    pub source: RailPairSource,
    /// The pairs, in the audit's order or in matrix order of the compute endpoints.
    pub pairs: Vec<RailPair>,
}

fn rail_pair(c: &Endpoint, n: &Endpoint) -> RailPair {
    RailPair {
        compute: c.name.clone(),
        compute_bdf: c.bdf,
        nic: n.name.clone(),
        nic_bdf: n.bdf,
    }
}

/// The NIC nearest to a compute endpoint: the lowest [`Label::rank`](super::classify::Label::rank)
/// among its classified pairs with NICs, the first in matrix order on a tie; `None` when no NIC
/// pair is classified.
pub fn nearest_nic<'a>(m: &'a Matrix, compute: &Endpoint) -> Option<&'a Endpoint> {
    m.endpoints
        .iter()
        .filter(|e| e.kind == DeviceKind::Nic)
        .filter_map(|n| m.pair(&compute.bdf, &n.bdf).map(|p| (p.label.rank(), n)))
        .min_by_key(|(r, _)| *r)
        .map(|(_, n)| n)
}

/// The rail pairs the picture draws: the audit's matching (`(GPU, NIC)` addresses, as the audit
/// report's `pairs` hold them) when it has one (pairs whose GPU or NIC is no matrix endpoint are
/// left out), else each compute endpoint's [`nearest_nic`].
pub fn rail_pairs(m: &Matrix, audit_pairs: &[(Bdf, Bdf)]) -> RailPairs {
    if !audit_pairs.is_empty() {
        let ep: HashMap<Bdf, &Endpoint> = m.endpoints.iter().map(|e| (e.bdf, e)).collect();
        let by_bdf = |b: &Bdf| ep.get(b).copied();
        let pairs = audit_pairs
            .iter()
            .filter_map(|(gpu, nic)| Some(rail_pair(by_bdf(gpu)?, by_bdf(nic)?)))
            .collect();
        return RailPairs {
            source: RailPairSource::Audit,
            pairs,
        };
    }
    let pairs = m
        .endpoints
        .iter()
        .filter(|e| e.kind.is_compute())
        .filter_map(|e| Some(rail_pair(e, nearest_nic(m, e)?)))
        .collect();
    RailPairs {
        source: RailPairSource::Nearest,
        pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::{ClassifyOptions, classify_all};
    use crate::analysis::testkit::TopoBuilder;

    /// One host bridge: a switch holding GPU0 and `mlx5_1` (NIC0: the lower PCI address, so
    /// registered first), GPU1 on a root port of its own, `mlx5_0` (NIC1) on another: GPU1 is
    /// PHB from both NICs.
    fn node() -> Topology {
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.switch(
            "0000:10:01.0",
            "0000:11:00.0",
            &["0000:12:00.0", "0000:12:01.0"],
            Some(0),
        );
        b.gpu("0000:13:00.0", Some("0000:12:00.0"), Some(0));
        b.nic("0000:14:00.0", Some("0000:12:01.0"), Some(0), &["mlx5_1"]);
        b.bridge("0000:10:02.0", None, Some(0));
        b.gpu("0000:15:00.0", Some("0000:10:02.0"), Some(0));
        b.bridge("0000:10:03.0", None, Some(0));
        b.nic("0000:16:00.0", Some("0000:10:03.0"), Some(0), &["mlx5_0"]);
        b.build()
    }

    /// Tables of `gpus` × `nics` relations from a list of (label, bandwidth) choices.
    pub(super) fn tables(gpus: usize, nics: usize, rel: &[(u8, u8)]) -> Candidates {
        let labels = ["PIX", "PXB", "PHB", "NODE", "SYS"];
        let bws = [None, Some(12.0), Some(24.0), Some(24.5)];
        let mut it = rel.iter().cycle();
        let mut next = || {
            let &(l, b) = it.next().unwrap();
            (l < 5).then(|| {
                let label: Label = labels[l as usize].parse().unwrap();
                PairCand {
                    label,
                    bottleneck_gbps: bws[b as usize % 4],
                    tie: 0,
                    gdr: label.within_pxb(),
                    nccl_path: crate::analysis::nccl::NcclPath::Pxb,
                }
            })
        };
        Candidates {
            gpus: (0..gpus)
                .map(|i| GpuCand {
                    name: format!("GPU{i}"),
                    numa_node: None,
                })
                .collect(),
            nics: (0..nics)
                .map(|i| NicCand {
                    name: format!("mlx5_{i}"),
                    numa_node: None,
                    speed_gbps: None,
                    rail: true,
                })
                .collect(),
            gg: vec![vec![None; gpus]; gpus],
            gn: (0..gpus)
                .map(|_| (0..nics).map(|_| next()).collect())
                .collect(),
            nvlink_visible: false,
            fabric: "NVLink",
        }
    }

    proptest::proptest! {
        /// Growing the slots reaches the cost of offering every slot of every NIC at once.
        #[test]
        fn grown_slots_cost_what_all_slots_cost(
            gpus in 1usize..10,
            nics in 1usize..6,
            rel in proptest::collection::vec((0u8..6, 0u8..4), 1..40),
        ) {
            let c = tables(gpus, nics, &rel);
            let rows: Vec<usize> = (0..gpus).collect();
            let grown = assign_slots(&c, &rows, false).unwrap();
            let all = assign_slots(&c, &rows, true).unwrap();
            proptest::prop_assert_eq!(grown.0, all.0);
            let total: i64 = grown.1.iter().enumerate()
                .map(|(row, &(nic, slot))| slot_cost(&c, &rows, row, nic, slot))
                .sum();
            proptest::prop_assert_eq!(total, grown.0);
        }
    }

    #[test]
    fn one_close_nic_takes_every_gpu() {
        // NIC0 PIX to all eight GPUs, the seven others SYS: the label outweighs sharing, so
        // NIC0's slots grow from one to all eight.
        let mut rel = Vec::new();
        for _ in 0..8 {
            rel.push((0, 2));
            rel.extend([(4, 2); 7]);
        }
        let c = tables(8, 8, &rel);
        let rows: Vec<usize> = (0..8).collect();
        assert_eq!(assign_nics(&c, &rows), vec![Some(0); 8]);
        assert_eq!(
            assign_slots(&c, &rows, false),
            assign_slots(&c, &rows, true)
        );
    }

    #[test]
    fn nearest_nic_takes_the_best_class_then_matrix_order() {
        let m = classify_all(&node(), &ClassifyOptions::default());
        let names = |c: &str| {
            let e = m.endpoint(c).unwrap();
            nearest_nic(&m, e).map(|n| n.name.clone())
        };
        let label = |a: &str, b: &str| {
            let (a, b) = (m.endpoint(a).unwrap(), m.endpoint(b).unwrap());
            m.pair(&a.bdf, &b.bdf).unwrap().label
        };
        assert_eq!(label("GPU1", "NIC0"), label("GPU1", "NIC1"));
        assert_eq!(names("GPU0").as_deref(), Some("NIC0"), "the better class");
        assert_eq!(
            names("GPU1").as_deref(),
            Some("NIC0"),
            "a tie: matrix order"
        );
        assert_eq!(m.endpoint("NIC1").unwrap().rdma, ["mlx5_0"]);
        let r = rail_pairs(&m, &[]);
        assert_eq!(r.source, RailPairSource::Nearest);
        let pairs: Vec<_> = r.pairs.iter().map(|p| (&*p.compute, &*p.nic)).collect();
        assert_eq!(pairs, [("GPU0", "NIC0"), ("GPU1", "NIC0")]);
    }

    #[test]
    fn the_audit_matching_wins_when_there_is_one() {
        let t = node();
        let m = classify_all(&t, &ClassifyOptions::default());
        let audit = crate::analysis::audit::run(&t, &Default::default());
        let matched: Vec<(Bdf, Bdf)> = audit.pairs.iter().map(|p| (p.gpu, p.nic)).collect();
        let r = rail_pairs(&m, &matched);
        assert_eq!(r.source, RailPairSource::Audit);
        assert_eq!(r.pairs.len(), audit.pairs.len());
        assert!(r.pairs.iter().all(|p| p.compute.starts_with("GPU")));
    }
}
