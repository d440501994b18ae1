//! The dense Kuhn–Munkres assignment, ties included, computed one host bridge at a time.
//!
//! Data: the near GPU–NIC pairs of a [`NearTable`] (classified under one host bridge) and
//! their matching costs ([`super::near::cost_of`]); every pair under two host bridges costs at
//! least [`FAR_COST`] (the label argument of [`super::near`]: NODE, SYS or unknown).
//!
//! Why the answer is the dense one, not merely as cheap. `pathfinding`'s `kuhn_munkres_min`
//! takes the rows in order; each row's search grows an alternating tree by the column of least
//! slack (the first such column, in column order), raising the row prices `u` of the tree and
//! lowering the column prices `v` (`v ≤ 0`, 0 until a column is in a tree). Solve each block
//! (the rows and columns of one host bridge, in their order) alone, with one column added
//! last, the *sentinel*, that costs `FAR_COST − 1` from every row. Suppose the sentinel ends
//! free in every block. Then:
//!
//! - The sentinel was never taken into a tree (a free column taken into a tree ends the search
//!   and is matched from then on). So at each step the chosen column's slack `δ` is at most the
//!   sentinel's slack, `min over tree rows x of (FAR_COST − 1 − u_x)`.
//! - In the dense run, in the same state, a column of another block has slack
//!   `min over x of (cost − u_x − v) ≥ min over x of (FAR_COST − u_x)`, strictly more than the
//!   sentinel's, hence more than `δ`: the dense run picks the same column (the first of least
//!   slack within the block, the block keeping the dense order), raises the same prices by
//!   the same `δ` and extends or augments the same tree. Other blocks' rows, prices and
//!   columns are untouched, so the runs agree step by step, by induction.
//! - A row's first price is its cheapest cost over all columns: it is the same in both runs
//!   because a row whose block offers nothing below `FAR_COST − 1` starts its search at slack 0
//!   on the sentinel alone and takes it.
//!
//! So where every sentinel stays free, the union of the blocks' assignments is the dense
//! assignment, column for column (and its total is the dense total: the sentinel's price stays
//! 0). Where a sentinel is taken, or a block has more rows than columns, the caller classifies
//! the full table and runs the dense matching.

use super::near::{FAR_RANK, NearTable, Uncertified, cost_of};
use super::{Candidates, PairCand, W_LABEL};
use std::collections::BTreeMap;

/// The least cost of a GPU–NIC pair under two host bridges (label NODE or worse).
pub(super) const FAR_COST: i64 = FAR_RANK * W_LABEL;

/// Where a matching reads its GPU–NIC pairs and how it solves the assignment.
#[derive(Debug, Clone, Copy)]
pub(super) enum Table<'a> {
    /// The view's dense `cand.gn`, one Kuhn–Munkres over the whole matrix.
    Dense,
    /// A near table, solved block by block ([`by_blocks`]); [`Uncertified`] where a block's
    /// sentinel is taken.
    Near(&'a NearTable),
}

impl<'a> Table<'a> {
    /// GPU row `g` to NIC column `k`; on a near table `None` for a pair under two host
    /// bridges too (never read by [`Table::solve`]: those pairs are in no block).
    pub(super) fn pair<'c>(&self, c: &'c Candidates, g: usize, k: usize) -> Option<&'c PairCand>
    where
        'a: 'c,
    {
        match self {
            Table::Dense => c.gn.get(g).and_then(|r| r.get(k)).and_then(Option::as_ref),
            Table::Near(n) => n.get(g, k),
        }
    }

    /// `kuhn_munkres_min` over `rows` GPU rows × the columns (`col_nic[j]`: the NIC of column
    /// `j`), `cost(row, col)`: the dense one, or [`by_blocks`] on a near table (rows' blocks
    /// from `row_gpu`).
    pub(super) fn solve(
        &self,
        row_gpu: &[usize],
        col_nic: &[usize],
        cost: impl Fn(usize, usize) -> i64,
    ) -> Result<(i64, Vec<usize>), Uncertified> {
        match self {
            Table::Dense => {
                let w =
                    pathfinding::matrix::Matrix::from_fn(row_gpu.len(), col_nic.len(), |(i, j)| {
                        cost(i, j)
                    });
                Ok(pathfinding::kuhn_munkres::kuhn_munkres_min(&w))
            }
            Table::Near(n) => {
                let rb: Vec<u32> = row_gpu
                    .iter()
                    .map(|&g| n.gpu_block(g))
                    .collect::<Option<_>>()
                    .ok_or(Uncertified)?;
                let cb: Vec<u32> = col_nic
                    .iter()
                    .map(|&k| n.nic_block(k))
                    .collect::<Option<_>>()
                    .ok_or(Uncertified)?;
                by_blocks(&rb, &cb, cost).ok_or(Uncertified)
            }
        }
    }
}

/// The rows and columns of each block, each list ascending.
type Blocks = BTreeMap<u32, (Vec<usize>, Vec<usize>)>;

/// The assignment `kuhn_munkres_min` gives over the whole rows × columns matrix, solved per
/// block (`row_block`, `col_block`) with a sentinel column (module doc): `cost(row, col)` is
/// read only within a block, and every pair across blocks must cost at least [`FAR_COST`].
/// Returns the total and each row's column; `None` where a block has more rows than columns or
/// takes its sentinel.
pub(super) fn by_blocks(
    row_block: &[u32],
    col_block: &[u32],
    cost: impl Fn(usize, usize) -> i64,
) -> Option<(i64, Vec<usize>)> {
    let mut blocks: Blocks = BTreeMap::new();
    for (i, &b) in row_block.iter().enumerate() {
        blocks.entry(b).or_default().0.push(i);
    }
    for (j, &b) in col_block.iter().enumerate() {
        blocks.entry(b).or_default().1.push(j);
    }
    let mut out = vec![0usize; row_block.len()];
    let mut total = 0i64;
    for (rows, cols) in blocks.values() {
        if rows.is_empty() {
            continue;
        }
        if rows.len() > cols.len() {
            return None;
        }
        let sentinel = cols.len();
        let w = pathfinding::matrix::Matrix::from_fn(rows.len(), cols.len() + 1, |(i, j)| {
            if j == sentinel {
                FAR_COST - 1
            } else {
                cost(rows[i], cols[j])
            }
        });
        let (cost, assignment) = pathfinding::kuhn_munkres::kuhn_munkres_min(&w);
        if assignment.contains(&sentinel) {
            return None;
        }
        for (i, &j) in assignment.iter().enumerate() {
            out[rows[i]] = cols[j];
        }
        total += cost;
    }
    Some((total, out))
}

/// The two matchings `rails` reads, over every GPU of a near view: [`super::assign_nics`]
/// (the node's pairing) and [`super::assign_rails`], each the assignment the dense table gives,
/// ties included (module doc); `None` where either needs the dense table.
#[allow(clippy::type_complexity)]
pub fn rails_matchings(
    c: &Candidates,
    near: &NearTable,
) -> Option<(Vec<Option<usize>>, Vec<Option<usize>>)> {
    let all: Vec<usize> = (0..c.gpus.len()).collect();
    let t = Table::Near(near);
    let pairing = super::assign_nics_in(c, t, &all).ok()?;
    let rails = super::assign_rails_in(c, t, &all).ok()?;
    Some((pairing, rails))
}

/// Cost of a rails pair ([`super::assign_rails`]): the slot cost of slot 0.
pub(super) fn rail_cost(p: Option<&PairCand>) -> i64 {
    cost_of(p, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathfinding::kuhn_munkres::kuhn_munkres_min;
    use pathfinding::matrix::Matrix;

    /// xorshift64: the same cases on every run.
    fn rng(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        }
    }

    /// The dense matrix of a block layout: within a block one of a few costs (so ties are
    /// everywhere), across blocks `FAR_COST` or more, as the label rules make them.
    fn matrix(rb: &[u32], cb: &[u32], next: &mut impl FnMut(u64) -> u64) -> Matrix<i64> {
        let near = [W_LABEL, 2 * W_LABEL, 2 * W_LABEL + 5_000, 3 * W_LABEL];
        Matrix::from_fn(rb.len(), cb.len(), |(i, j)| {
            if rb[i] == cb[j] {
                near[next(near.len() as u64) as usize]
            } else {
                FAR_COST + next(3) as i64 * W_LABEL
            }
        })
    }

    /// Where the blocks answer, they answer the dense assignment column for column and the
    /// dense total, on layouts full of equal costs (rows and columns of blocks interleaved).
    #[test]
    fn blocks_give_the_dense_assignment_ties_included() {
        let mut next = rng(0x2545_f491_4f6c_dd1d);
        let (mut answered, cases) = (0, 600);
        for _ in 0..cases {
            let blocks = 1 + next(4) as u32;
            let rows = 1 + next(9) as usize;
            let cols = rows + next(5) as usize;
            let rb: Vec<u32> = (0..rows).map(|_| next(u64::from(blocks)) as u32).collect();
            let cb: Vec<u32> = (0..cols).map(|_| next(u64::from(blocks)) as u32).collect();
            let w = matrix(&rb, &cb, &mut next);
            let dense = kuhn_munkres_min(&w);
            if let Some(got) = by_blocks(&rb, &cb, |i, j| {
                assert_eq!(rb[i], cb[j], "a pair across blocks was read");
                w[(i, j)]
            }) {
                answered += 1;
                assert_eq!(got, dense, "{rb:?} {cb:?} {w:?}");
            }
        }
        assert!(answered * 3 > cases, "{answered} of {cases} answered");
    }

    /// Two blocks, rows and columns interleaved, every near pair the same cost: many optima,
    /// and the blocks pick the one the dense run picks (not the first in each block's order).
    #[test]
    fn a_tie_is_settled_as_the_dense_run_settles_it() {
        let rb = [0, 1, 0, 1, 0];
        let cb = [1, 0, 1, 0, 0, 1, 1];
        let w = Matrix::from_fn(5, 7, |(i, j)| {
            if rb[i] == cb[j] {
                2 * W_LABEL
            } else {
                FAR_COST
            }
        });
        let dense = kuhn_munkres_min(&w);
        // The optimum is not unique: rows 0 and 2 (block 0) can swap their NICs.
        let mut other = dense.1.clone();
        other.swap(0, 2);
        let cost = |a: &[usize]| a.iter().enumerate().map(|(i, &j)| w[(i, j)]).sum::<i64>();
        assert_ne!(other, dense.1);
        assert_eq!(cost(&other), dense.0);
        assert_eq!(by_blocks(&rb, &cb, |i, j| w[(i, j)]), Some(dense));
    }

    /// A row whose block offers nothing below `FAR_COST` (an unclassified pair) takes its
    /// sentinel, and a block with more rows than columns has no answer: the caller falls back
    /// to the dense table, whose assignment there crosses blocks.
    #[test]
    fn the_sentinel_sends_a_far_row_to_the_dense_matching() {
        let unknown = 100 * W_LABEL;
        let (rb, cb) = ([0, 1], [0, 1, 1]);
        let w = Matrix::from_rows(vec![
            vec![unknown, FAR_COST, FAR_COST],
            vec![FAR_COST, W_LABEL, W_LABEL],
        ])
        .unwrap();
        assert_eq!(by_blocks(&rb, &cb, |i, j| w[(i, j)]), None);
        let dense = kuhn_munkres_min(&w).1;
        assert_ne!(rb[0], cb[dense[0]], "the dense answer leaves row 0's block");
        // Two rows, one column in their block.
        assert_eq!(by_blocks(&[0, 0], &[0, 1, 1], |_, _| W_LABEL), None);
    }
}
