//! The GPU↔NIC matching from nearest endpoints: each GPU is classified only against the NICs
//! under its own host bridge, and the matching over those pairs is proved optimal over all of
//! them (or the full table is built, as before).
//!
//! Data: the classifier's pair summaries ([`Classifier::summary`]) for GPU–NIC pairs whose data
//! paths ([`crate::analysis::paths::Paths::data_path`]) share a host bridge, and the paths
//! model's host bridge, top device and PCI address of each endpoint.
//!
//! Why the rest need not be classified: the label rules
//! ([`crate::analysis::classify`], `label_pcie`) give PIX or PXB only where the two data paths
//! share a PCI device (same top device under the host bridge) or are functions of one adapter
//! (same bus and device), and PHB only where they share a host bridge; NVLink is between GPUs
//! only. [`NearTable::build`] checks that every top device and adapter of the node's endpoints
//! lies under one host bridge (and that the node has no xGMI), so a pair under two host bridges
//! is NODE, unknown or SYS: rank ≥ NODE's. Its matching cost ([`cost_of`]) is therefore at
//! least `NODE × W_LABEL + slot` (the bandwidth and tie terms are ≥ 0).
//!
//! Why the matching is exact: the pairs under one host bridge form independent blocks. Each
//! block is solved by the same Kuhn–Munkres over (NIC, slot) columns, slots grown as in
//! [`super::assign_slots`]. From each block's optimum the dual prices follow (shortest
//! alternating paths to a free column: `u` per GPU, `v ≤ 0` per column, `v = 0` on free
//! columns). The restricted optimum is optimal for the whole GPU × NIC table when every
//! missing pair's reduced cost is ≥ 0, which holds when `u_g + max_col(v − slot) ≤ NODE ×
//! W_LABEL` for every GPU (LP duality for the assignment problem). When that fails for any GPU,
//! or a GPU's host bridge holds no offered NIC, [`NodeView::assign_with`] classifies the full
//! table and runs the dense matching: a node where every GPU is far from every NIC costs what
//! it cost before.
//!
//! Ties: an optimum is unique in cost, not in choice. Above [`NEAR_FROM_PAIRS`] GPU–NIC pairs
//! two NICs of equal cost may be chosen otherwise than the dense matrix would choose them (the
//! same total cost); below it the audit's view is the dense one.

use super::{Candidates, NodeView, PairCand, W_LABEL, assign_nics, cand_of, slot_columns_suffice};
use crate::analysis::classify::Classifier;
#[cfg(test)]
use crate::analysis::classify::Label;
use std::collections::{BTreeMap, HashMap};

/// A node with more GPU–NIC pairs than this gets the nearest-endpoint view from
/// [`NodeView::near`]; below it the dense table is built (every existing fixture and golden
/// output is below it).
pub const NEAR_FROM_PAIRS: usize = 1 << 16;

/// The GPU–NIC pairs under one host bridge, classified; every other pair is NODE or worse
/// (module doc). Indices are the view's GPU rows and NIC columns.
#[derive(Debug, Clone, PartialEq)]
pub struct NearTable {
    /// Per GPU: the NICs under its host bridge with their relation, ascending by NIC.
    pub rows: Vec<Vec<(usize, PairCand)>>,
    /// Block (interned host bridge of the data path) of each GPU and of each NIC.
    gpu_block: Vec<u32>,
    nic_block: Vec<u32>,
    /// Endpoint index (into [`Classifier::endpoints`]) of each GPU and NIC.
    gpu_ep: Vec<usize>,
    nic_ep: Vec<usize>,
}

/// The least label rank of a pair outside a GPU's block (GPU–NIC, and GPU–GPU without NVLink
/// between them: the same label rules).
pub(crate) const FAR_RANK: i64 = 5;

/// Cost of a pair at a slot (see [`super::slot_cost`]); a pair not classified costs as
/// [`super::UNKNOWN_RANK`].
pub(super) fn cost_of(p: Option<&PairCand>, slot: usize) -> i64 {
    use super::{BW_CEIL_MBPS, UNKNOWN_RANK, W_BW, W_TIE};
    let rank = p.map_or(UNKNOWN_RANK, |p| p.rank()) as i64;
    let bw_mbps = p
        .and_then(|p| p.bottleneck_gbps)
        .map(|g| ((g * 1000.0) / (slot as f64 + 1.0)).round() as i64)
        .unwrap_or(0)
        .clamp(0, BW_CEIL_MBPS);
    let tie = p.map_or(0, |p| i64::from(p.tie.min(9)));
    rank * W_LABEL + (BW_CEIL_MBPS - bw_mbps) * W_BW + tie * W_TIE + slot as i64
}

impl NearTable {
    /// Classifies each GPU (endpoint indices `gpu_ep`) against the NICs (`nic_ep`) under its
    /// host bridge. `None` where the node breaks the module doc's premise: xGMI links, or a top
    /// device or adapter holding endpoints of two host bridges.
    pub fn build(cl: &Classifier, gpu_ep: &[usize], nic_ep: &[usize]) -> Option<NearTable> {
        let p = cl.paths();
        if p.any_xgmi() {
            return None;
        }
        let eps = cl.endpoints();
        let mut top_hb: HashMap<u32, u32> = HashMap::new();
        let mut adapter_hb: HashMap<(u32, u8, u8), u32> = HashMap::new();
        let mut block = |k: usize| -> Option<u32> {
            let d = p.data_path(p.index(&eps[k].bdf)?);
            let hb = p.host_bridge(d);
            let b = p.device(d).bdf;
            let same = |x: &mut u32| *x == hb;
            (same(top_hb.entry(p.top(d)).or_insert(hb))
                && same(adapter_hb.entry((b.domain, b.bus, b.device)).or_insert(hb)))
            .then_some(hb)
        };
        let gpu_block: Vec<u32> = gpu_ep.iter().map(|&k| block(k)).collect::<Option<_>>()?;
        let nic_block: Vec<u32> = nic_ep.iter().map(|&k| block(k)).collect::<Option<_>>()?;
        let mut by_block: HashMap<u32, Vec<usize>> = HashMap::new();
        for (k, &b) in nic_block.iter().enumerate() {
            by_block.entry(b).or_default().push(k);
        }
        let rows = gpu_ep
            .iter()
            .zip(&gpu_block)
            .map(|(&g, b)| {
                by_block
                    .get(b)
                    .map(|nics| {
                        nics.iter()
                            .filter_map(|&k| {
                                let s = cl.summary(g, nic_ep[k])?;
                                Some((k, cand_of(&s, cl.is_rccl())))
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        Some(NearTable {
            rows,
            gpu_block,
            nic_block,
            gpu_ep: gpu_ep.to_vec(),
            nic_ep: nic_ep.to_vec(),
        })
    }

    /// GPU `g` to NIC `k` when the pair is under one host bridge (`None` otherwise: NODE or
    /// worse, not classified here).
    pub fn get(&self, g: usize, k: usize) -> Option<&PairCand> {
        let row = self.rows.get(g)?;
        row.binary_search_by_key(&k, |e| e.0)
            .ok()
            .map(|i| &row[i].1)
    }

    /// Whether GPU `g` and NIC `k` are under one host bridge (the pair is in [`Self::rows`]).
    pub fn near(&self, g: usize, k: usize) -> bool {
        self.gpu_block
            .get(g)
            .is_some_and(|b| self.nic_block.get(k) == Some(b))
    }

    /// The host bridge (interned) under which GPU row `g` lies: GPUs of one block are the pairs
    /// that can be PIX, PXB or PHB to each other; any other GPU pair without NVLink is NODE or
    /// worse (module doc).
    pub fn gpu_block(&self, g: usize) -> Option<u32> {
        self.gpu_block.get(g).copied()
    }

    /// The host bridge (interned) under which NIC column `k` lies.
    pub fn nic_block(&self, k: usize) -> Option<u32> {
        self.nic_block.get(k).copied()
    }

    /// GPU row `g` to NIC column `k`: the near pair from [`Self::rows`], any other classified
    /// through `cl` on demand (what the dense table holds for it).
    pub fn pair(&self, cl: &Classifier, g: usize, k: usize) -> Option<PairCand> {
        if self.near(g, k) {
            return self.get(g, k).cloned();
        }
        let (a, n) = (*self.gpu_ep.get(g)?, *self.nic_ep.get(k)?);
        cl.summary(a, n).map(|s| cand_of(&s, cl.is_rccl()))
    }

    /// GPU row `g` against every NIC column, classified through `cl` (one row of the dense
    /// table: what [`Self::full_table`] holds for it).
    pub fn full_row(&self, cl: &Classifier, g: usize) -> Vec<Option<PairCand>> {
        let Some(&a) = self.gpu_ep.get(g) else {
            return Vec::new();
        };
        self.nic_ep
            .iter()
            .map(|&n| cl.summary(a, n).map(|s| cand_of(&s, cl.is_rccl())))
            .collect()
    }

    /// GPU rows `i` and `j`, classified through `cl`: what the dense view's `cand.gg[i][j]`
    /// holds (`None` on the diagonal).
    pub fn gpu_pair(&self, cl: &Classifier, i: usize, j: usize) -> Option<PairCand> {
        if i == j {
            return None;
        }
        let (a, b) = (*self.gpu_ep.get(i)?, *self.gpu_ep.get(j)?);
        cl.summary(a, b).map(|s| cand_of(&s, cl.is_rccl()))
    }

    /// [`super::nvlink_domains`] without the GPU × GPU table: a pair is NVLink only when
    /// [`crate::analysis::paths::Paths::nvlink`] finds a link, which needs both GPUs to
    /// [`crate::analysis::paths::Paths::may_nvlink`] (xGMI is excluded by [`Self::build`]), so
    /// only pairs of those GPUs are classified. Same union and order as the dense one.
    pub fn nvlink_domains(&self, cl: &Classifier) -> Vec<Vec<usize>> {
        let p = cl.paths();
        let eps = cl.endpoints();
        let linked: Vec<usize> = (0..self.gpu_ep.len())
            .filter(|&g| {
                p.index(&eps[self.gpu_ep[g]].bdf)
                    .is_some_and(|d| p.may_nvlink(d))
            })
            .collect();
        let mut comp: Vec<usize> = (0..self.gpu_ep.len()).collect();
        fn find(comp: &mut [usize], mut x: usize) -> usize {
            while comp[x] != x {
                comp[x] = comp[comp[x]];
                x = comp[x];
            }
            x
        }
        for (a, &i) in linked.iter().enumerate() {
            for &j in &linked[a + 1..] {
                if self.gpu_pair(cl, i, j).is_some_and(|q| q.nvlink()) {
                    let (x, y) = (find(&mut comp, i), find(&mut comp, j));
                    if x != y {
                        comp[x.max(y)] = x.min(y);
                    }
                }
            }
        }
        let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for i in 0..comp.len() {
            let r = find(&mut comp, i);
            groups.entry(r).or_default().push(i);
        }
        groups.into_values().collect()
    }

    /// The full GPU × NIC table, every pair classified (the dense fallback).
    pub fn full_table(&self, cl: &Classifier) -> Vec<Vec<Option<PairCand>>> {
        self.gpu_ep
            .iter()
            .map(|&g| {
                self.nic_ep
                    .iter()
                    .map(|&n| cl.summary(g, n).map(|s| cand_of(&s, cl.is_rccl())))
                    .collect()
            })
            .collect()
    }
}

/// Why the nearest-endpoint matching gave no answer: the dense one is needed.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Uncertified;

/// The min-cost assignment of [`super::assign_slots`] over the near pairs, with its proof of
/// optimality over the whole table (module doc): total cost and each rank's (NIC, slot);
/// `Ok(None)` without ranks or NICs.
#[allow(clippy::type_complexity)]
pub(super) fn solve(
    c: &Candidates,
    near: &NearTable,
    gpus: &[usize],
) -> Result<Option<(i64, Vec<(usize, usize)>)>, Uncertified> {
    let r = gpus.len();
    let offered = super::offered_nics(c);
    let k = offered.len();
    if r == 0 || k == 0 {
        return Ok(None);
    }
    let base = r.div_ceil(k);
    // Blocks: ranks and offered NICs by host bridge.
    let mut blocks: BTreeMap<u32, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (row, &g) in gpus.iter().enumerate() {
        let b = *near.gpu_block.get(g).ok_or(Uncertified)?;
        blocks.entry(b).or_default().0.push(row);
    }
    for &n in &offered {
        if let Some(b) = near.nic_block.get(n) {
            blocks.entry(*b).or_default().1.push(n);
        }
    }
    let mut out = vec![(0usize, 0usize); r];
    let mut total = 0i64;
    // Per GPU row its price `u`; over every offered column the largest `v − slot`.
    let mut price = vec![0i64; r];
    let mut col_max = 0i64;
    for (rows, nics) in blocks.values() {
        if rows.is_empty() {
            // Free columns: v = 0, slot 0 gives v − slot = 0 (col_max starts there).
            continue;
        }
        if nics.is_empty() {
            return Err(Uncertified);
        }
        let mut slots = vec![base.max(rows.len().div_ceil(nics.len())).min(r); nics.len()];
        let (cols, weights, assignment, cost) = loop {
            let cols: Vec<(usize, usize)> = (0..nics.len())
                .flat_map(|n| (0..slots[n]).map(move |s| (n, s)))
                .collect();
            let weights = pathfinding::matrix::Matrix::from_fn(rows.len(), cols.len(), |(i, j)| {
                let (n, s) = cols[j];
                cost_of(near.get(gpus[rows[i]], nics[n]), s)
            });
            let (cost, assignment) = pathfinding::kuhn_munkres::kuhn_munkres_min(&weights);
            let mut used = vec![0usize; nics.len()];
            for &j in &assignment {
                used[cols[j].0] += 1;
            }
            if slot_columns_suffice(&used, &slots, r) {
                break (cols, weights, assignment, cost);
            }
            for n in 0..nics.len() {
                if used[n] == slots[n] {
                    slots[n] = (slots[n] * 2).min(r);
                }
            }
        };
        let (du, dv) = duals(&weights, &assignment).ok_or(Uncertified)?;
        for (i, &row) in rows.iter().enumerate() {
            price[row] = du[i];
            let (n, s) = cols[assignment[i]];
            out[row] = (nics[n], s);
        }
        for (j, &(_, s)) in cols.iter().enumerate() {
            col_max = col_max.max(-dv[j] - s as i64);
        }
        total += cost;
    }
    // Every pair outside a block costs at least FAR_RANK × W_LABEL + its slot.
    if price.iter().any(|&u| u + col_max > FAR_RANK * W_LABEL) {
        return Err(Uncertified);
    }
    Ok(Some((total, out)))
}

/// Bellman–Ford rounds [`duals`] runs at most.
const MAX_ROUNDS: usize = 64;

/// Dual prices of an optimal assignment of every row of `w` (rows ≤ columns): `D(row)` and
/// `D(col)`, the cheapest alternating path from each to a free column (`u = D(row)`,
/// `v = −D(col)`), by Bellman–Ford rounds. `None` when a row reaches no free column, the
/// assignment is not optimal (a negative path or cycle) or the rounds run out.
#[allow(clippy::type_complexity)]
fn duals(
    w: &pathfinding::matrix::Matrix<i64>,
    assignment: &[usize],
) -> Option<(Vec<i64>, Vec<i64>)> {
    const INF: i64 = i64::MAX / 4;
    let (nr, nc) = (w.rows, w.columns);
    let mut dc = vec![0i64; nc];
    for &j in assignment {
        dc[j] = INF;
    }
    let mut dr = vec![INF; nr];
    // A path longer than MAX_ROUNDS alternations is not looked for: no prices, the dense
    // matching decides (on a node's blocks the paths are a step or two).
    for _ in 0..=(nr + 1).min(MAX_ROUNDS) {
        let mut changed = false;
        for i in 0..nr {
            let best = (0..nc)
                .filter(|&j| j != assignment[i] && dc[j] < INF)
                .map(|j| w[(i, j)] + dc[j])
                .min()
                .unwrap_or(INF);
            if best < dr[i] {
                dr[i] = best;
                changed = true;
            }
        }
        for i in 0..nr {
            if dr[i] < INF {
                let v = dr[i] - w[(i, assignment[i])];
                if v < dc[assignment[i]] {
                    dc[assignment[i]] = v;
                    changed = true;
                }
            }
        }
        if !changed {
            let ok = dr.iter().all(|&d| d < INF) && dc.iter().all(|&d| (0..INF).contains(&d));
            return ok.then(|| (dr, dc.into_iter().map(|d| -d).collect()));
        }
    }
    None
}

impl NodeView {
    /// The view [`NodeView::gpu_nic`] gives, except that on a node of more than
    /// [`NEAR_FROM_PAIRS`] GPU–NIC pairs each GPU is classified only against the NICs under
    /// its host bridge ([`NearTable`]; `cand.gn` is then empty): what the audit reads. Match
    /// with [`NodeView::assign_with`].
    pub fn near(cl: &Classifier) -> NodeView {
        Self::near_from(cl, NEAR_FROM_PAIRS)
    }

    /// [`NodeView::near`] with another threshold (tests: 0 makes any node's view near).
    pub fn near_from(cl: &Classifier, from_pairs: usize) -> NodeView {
        Self::build(cl, false, Some(from_pairs))
    }

    /// What `place` reads: the [`NodeView::near`] view above `from_pairs` GPU–NIC pairs (no
    /// GPU × GPU table either: the chooser classifies GPU pairs on demand), else the full view
    /// of [`NodeView::from_classifier`] (every GPU pair too).
    pub fn place_from(cl: &Classifier, from_pairs: usize) -> NodeView {
        Self::build(cl, true, Some(from_pairs))
    }

    /// What `rails` reads: the NVLink domains, and the GPU–NIC pairs with `rails`' two
    /// matchings when they can be had without the full table. Above `from_pairs` GPU–NIC
    /// pairs, where a [`NearTable`] can be built, the GPU × GPU table is not classified: the
    /// domains come from [`NearTable::nvlink_domains`] (the same groups as
    /// [`super::nvlink_domains`] over `cand.gg`) and `cand.gg` is left empty. There the
    /// matchings are solved host bridge by host bridge ([`super::blocks::rails_matchings`]:
    /// the dense assignments, ties included); when that holds the view keeps its near table
    /// (`cand.gn` empty: read pairs with [`NearTable::pair`]) and the matchings are returned.
    /// Otherwise `cand.gn` is the full table (`near` `None`, as in
    /// [`NodeView::from_classifier`]) and the caller runs the dense matchings on it.
    #[allow(clippy::type_complexity)]
    pub fn rails_from(
        cl: &Classifier,
        from_pairs: usize,
    ) -> (
        NodeView,
        Vec<Vec<usize>>,
        Option<(Vec<Option<usize>>, Vec<Option<usize>>)>,
    ) {
        let mut view = Self::place_from(cl, from_pairs);
        let Some(near) = view.near.take() else {
            let domains = super::nvlink_domains(&view.cand);
            return (view, domains, None);
        };
        let domains = near.nvlink_domains(cl);
        match super::blocks::rails_matchings(&view.cand, &near) {
            Some(m) => {
                view.near = Some(near);
                (view, domains, Some(m))
            }
            None => {
                view.cand.gn = near.full_table(cl);
                (view, domains, None)
            }
        }
    }

    /// [`assign_nics`] over this view's GPU rows `gpus`: the dense matching, or on a
    /// [`NodeView::near`] view the nearest-endpoint one (module doc), which classifies the full
    /// table through `cl` when its proof fails.
    pub fn assign_with(&self, cl: &Classifier, gpus: &[usize]) -> Vec<Option<usize>> {
        let Some(near) = &self.near else {
            return assign_nics(&self.cand, gpus);
        };
        match solve(&self.cand, near, gpus) {
            Ok(Some((_, cols))) => cols.into_iter().map(|(n, _)| Some(n)).collect(),
            Ok(None) => vec![None; gpus.len()],
            Err(Uncertified) => {
                let mut c = self.cand.clone();
                c.gn = near.full_table(cl);
                assign_nics(&c, gpus)
            }
        }
    }

    /// GPU row `g` to NIC column `k`: from the dense table, or on a near view from its near
    /// pairs (`None` for a pair under two host bridges: NODE or worse, not classified).
    pub fn gn(&self, g: usize, k: usize) -> Option<&PairCand> {
        match &self.near {
            Some(n) => n.get(g, k),
            None => self.cand.gn.get(g)?.get(k)?.as_ref(),
        }
    }
}

/// Whether a label is better than every far pair's (NODE).
#[cfg(test)]
fn near_label(l: Label) -> bool {
    i64::from(l.rank()) < FAR_RANK
}

#[cfg(test)]
mod tests {
    use super::super::tests::tables;
    use super::super::{assign_slots, slot_cost};
    use super::*;

    /// A near table over dense tables `c`, blocks by `gpu_block` / `nic_block`: the pairs within
    /// a block, as [`NearTable::build`] would hold them.
    fn near_of(c: &Candidates, gpu_block: Vec<u32>, nic_block: Vec<u32>) -> NearTable {
        let rows = (0..c.gpus.len())
            .map(|g| {
                (0..c.nics.len())
                    .filter(|&k| gpu_block[g] == nic_block[k])
                    .filter_map(|k| Some((k, c.gn[g][k].clone()?)))
                    .collect()
            })
            .collect();
        NearTable {
            rows,
            gpu_ep: (0..gpu_block.len()).collect(),
            nic_ep: (0..nic_block.len()).collect(),
            gpu_block,
            nic_block,
        }
    }

    /// Where the near matching proves itself it costs what the dense matching costs (over every
    /// slot), with far pairs NODE, SYS or unknown as the label rules make them and near ones
    /// anything; and it proves itself on most tables.
    #[test]
    fn near_matching_costs_what_the_dense_one_costs() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as usize
        };
        let (mut proved, cases) = (0, 400);
        for _ in 0..cases {
            let (gpus, nics, blocks) = (1 + next(8), 1 + next(6), 1 + next(3) as u32);
            let rel: Vec<(u8, u8)> = (0..gpus * nics)
                .map(|_| (next(6) as u8, next(4) as u8))
                .collect();
            let mut c = tables(gpus, nics, &rel);
            let gpu_block: Vec<u32> = (0..gpus).map(|_| next(blocks as u64) as u32).collect();
            let nic_block: Vec<u32> = (0..nics).map(|_| next(blocks as u64) as u32).collect();
            for (row, gb) in c.gn.iter_mut().zip(&gpu_block) {
                for (cell, nb) in row.iter_mut().zip(&nic_block) {
                    let far = gb != nb;
                    let phb = next(4) != 0;
                    if let Some(p) = cell.as_mut() {
                        if far && near_label(p.label) {
                            p.label = Label::Node;
                        } else if !far && phb && !near_label(p.label) {
                            // Mostly what a shared host bridge gives (PHB at worst).
                            p.label = Label::Phb;
                        }
                    }
                }
            }
            let near = near_of(&c, gpu_block, nic_block);
            let rows: Vec<usize> = (0..gpus).collect();
            let dense = assign_slots(&c, &rows, true).unwrap();
            if let Ok(Some((total, cols))) = solve(&c, &near, &rows) {
                proved += 1;
                assert_eq!(total, dense.0, "{c:?}");
                let sum: i64 = cols
                    .iter()
                    .enumerate()
                    .map(|(row, &(nic, slot))| slot_cost(&c, &rows, row, nic, slot))
                    .sum();
                assert_eq!(sum, total);
            }
        }
        assert!(proved * 4 > cases, "{proved} of {cases} proved");
    }

    #[test]
    fn the_price_check_sends_a_gpu_whose_best_nic_is_far_to_the_dense_matching() {
        // GPU0's host bridge holds only NIC0, SYS to it; NIC1, under another host bridge, is
        // NODE to it. The block's optimum (NIC0) is not the node's (NIC1): only the price
        // check knows.
        let mut c = tables(2, 2, &[(4, 2), (3, 2), (4, 2), (0, 2)]);
        assert_eq!(c.gn[0][0].as_ref().unwrap().label, Label::Sys);
        c.gn[1][0] = None;
        let near = near_of(&c, vec![0, 1], vec![0, 1]);
        let rows = [0, 1];
        assert_eq!(solve(&c, &near, &rows), Err(Uncertified));
        let dense = assign_slots(&c, &rows, true).unwrap();
        let nics: Vec<usize> = dense.1.iter().map(|x| x.0).collect();
        assert_eq!(nics, [1, 1], "both on NIC1: NODE and PIX");
        // Where every GPU has a near NIC better than NODE, it proves itself and agrees.
        let c = tables(2, 2, &[(0, 2), (4, 2), (4, 2), (1, 2)]);
        let near = near_of(&c, vec![0, 1], vec![0, 1]);
        let (total, cols) = solve(&c, &near, &rows).unwrap().unwrap();
        assert_eq!(total, assign_slots(&c, &rows, true).unwrap().0);
        assert_eq!(cols, [(0, 0), (1, 0)]);
    }
}
