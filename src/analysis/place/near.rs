//! `place` on a near view of a large node: GPU pairs per host bridge and on demand, each GPU's
//! best NIC from its near NICs ([`crate::analysis::pairing::near`]), so that the chooser
//! ([`super::choose_gpus`]) makes the choice the full tables give without building them.
//!
//! Data: the classifier's pair summaries and the near view's blocks (host bridges) and near
//! GPU–NIC pairs.

use super::{PathRank, UNKNOWN_RANK, pair_rank};
use crate::analysis::classify::Classifier;
use crate::analysis::pairing::near::{FAR_RANK, NearTable};
use std::cell::RefCell;
use std::collections::HashMap;

/// GPU pairs and best NICs on a near view of a large node ([`NodeView::place_from`]), where
/// the view holds neither the GPU × GPU nor the GPU × NIC table: the pairs of GPUs under one
/// host bridge are classified once per block, any other pair when asked (and kept).
pub(super) struct NearPairs<'a> {
    pub(super) cl: &'a Classifier<'a>,
    pub(super) near: &'a NearTable,
    /// Per block (host bridge), its GPU rows ascending.
    pub(super) blocks: Vec<Vec<usize>>,
    /// Each GPU's block (index into `blocks`) and its position there.
    pub(super) at: Vec<(usize, usize)>,
    /// Per block, the rank of each pair of its GPUs, row-major by position.
    within: Vec<Vec<PathRank>>,
    /// Pairs of two blocks, classified when first asked.
    memo: RefCell<HashMap<(usize, usize), PathRank>>,
}

impl<'a> NearPairs<'a> {
    /// `None` when a GPU has no block (the view is then not near: never on a near view).
    pub(super) fn new(cl: &'a Classifier<'a>, near: &'a NearTable, gpus: usize) -> Option<Self> {
        let mut ids: HashMap<u32, usize> = HashMap::new();
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        let mut at = Vec::with_capacity(gpus);
        for g in 0..gpus {
            let hb = near.gpu_block(g)?;
            let b = *ids.entry(hb).or_insert_with(|| {
                blocks.push(Vec::new());
                blocks.len() - 1
            });
            at.push((b, blocks[b].len()));
            blocks[b].push(g);
        }
        let within = blocks
            .iter()
            .map(|m| {
                let mut t = vec![UNKNOWN_RANK; m.len() * m.len()];
                for (x, &i) in m.iter().enumerate() {
                    for (y, &j) in m.iter().enumerate().skip(x + 1) {
                        let r = pair_rank(&near.gpu_pair(cl, i, j));
                        t[x * m.len() + y] = r;
                        t[y * m.len() + x] = r;
                    }
                }
                t
            })
            .collect();
        Some(NearPairs {
            cl,
            near,
            blocks,
            at,
            within,
            memo: RefCell::new(HashMap::new()),
        })
    }

    /// What the dense view's `pair_rank(&gg[i][j])` is, `i < j`.
    pub(super) fn rank(&self, i: usize, j: usize) -> PathRank {
        let ((bi, pi), (bj, pj)) = (self.at[i], self.at[j]);
        if bi == bj {
            return self.within[bi][pi * self.blocks[bi].len() + pj];
        }
        *self
            .memo
            .borrow_mut()
            .entry((i, j))
            .or_insert_with(|| pair_rank(&self.near.gpu_pair(self.cl, i, j)))
    }

    /// GPU `g`'s best rank to any NIC: its near NICs' best when that beats every far pair
    /// (rank < NODE's), else its whole row classified.
    pub(super) fn best_nic(&self, g: usize) -> PathRank {
        let near = self.near.rows[g].iter().map(|(_, p)| p.rank()).min();
        match near {
            Some(r) if i64::from(r) < FAR_RANK => r,
            _ => self
                .near
                .full_row(self.cl, g)
                .iter()
                .map(pair_rank)
                .min()
                .unwrap_or(UNKNOWN_RANK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PlaceOptions, plan_near_from, plan_with};
    use crate::analysis::classify::Classifier;
    use crate::analysis::pairing::{NodeView, nvlink_domains, pair_rank};
    use crate::analysis::testkit::TopoBuilder;

    /// Five host bridges: 25 GPUs and 8 NICs, so that 7 or 8 ranks are chosen greedily. Host
    /// bridge 2 has no NIC (its GPUs' best NIC is far), GPU 0001:13 sits on NUMA 1 among NUMA 0
    /// devices (from it the best next GPU is under another host bridge), host bridge 4 holds a
    /// lone GPU, and NVLinks join GPUs across host bridges.
    fn node() -> crate::model::Topology {
        let mut b = TopoBuilder::new(&["0-7", "8-15"]);
        // Per host bridge: its NUMA node and its 8 endpoints (G: GPU, N: NIC).
        b.switched_host_bridges(
            &[
                (0, "GNGGGNGG"),
                (0, "GGNGGGNG"),
                (1, "GGGGGGGG"),
                (1, "NGNGNGNG"),
            ],
            |d, j| (d == 1 && j == 3).then_some(1),
        );
        b.bridge("0004:00:01.0", None, Some(0));
        b.gpu("0004:01:00.0", Some("0004:00:01.0"), Some(0));
        b.nvlink("0000:10:00.0", Some("0002:10:00.0"), 4, Some(4));
        b.nvlink("0002:11:00.0", Some("0002:12:00.0"), 4, Some(4));
        b.nvlink("0001:13:00.0", Some("0004:01:00.0"), 2, Some(4));
        b.build()
    }

    #[test]
    fn a_near_plan_is_the_dense_plan() {
        let t = node();
        let cl = Classifier::new(&t, &Default::default());
        let dense = NodeView::from_classifier(&cl);
        let near = NodeView::place_from(&cl, 0);
        let table = near.near.as_ref().expect("a near view");
        assert!(near.cand.gg.is_empty() && near.cand.gn.is_empty());
        assert_eq!(dense.gpus.len(), 25);
        assert_eq!(table.nvlink_domains(&cl), nvlink_domains(&dense.cand));
        // Every GPU pair and every GPU's best NIC as the dense tables give them (host bridge 2
        // has no NIC: its GPUs' rows are classified whole).
        let pairs = super::NearPairs::new(&cl, table, 25).unwrap();
        for i in 0..25 {
            for j in i + 1..25 {
                assert_eq!(pairs.rank(i, j), pair_rank(&dense.cand.gg[i][j]), "{i} {j}");
            }
            let best = dense.cand.gn[i].iter().map(pair_rank).min().unwrap();
            assert_eq!(pairs.best_nic(i), best, "GPU {i}");
        }
        for ranks in [1, 3, 7, 8, 12, 25] {
            let o = PlaceOptions {
                ranks,
                cores_per_rank: None,
            };
            let want = serde_json::to_string(&plan_with(&t, &dense, &o).unwrap()).unwrap();
            let got = serde_json::to_string(&plan_near_from(&t, &cl, &o, 0).unwrap()).unwrap();
            assert_eq!(got, want, "--ranks {ranks}");
        }
        // Below the threshold the view is the dense one, GPU pairs included.
        let small = NodeView::place_from(&cl, usize::MAX);
        assert!(small.near.is_none() && small.cand.gg.len() == 25);
    }
}
