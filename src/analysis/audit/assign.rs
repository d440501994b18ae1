//! Minimum-cost assignment (the Hungarian method with potentials, O(n²·m)) and the balanced
//! GPU→NIC matching built on it: each NIC gets at most ⌈GPUs / NICs⌉ GPUs, so one NIC per GPU
//! when there are enough NICs, and an even share otherwise.

/// Assigns each row to a distinct column at minimum total cost. `cost` is `n` rows of `m`
/// columns with `n ≤ m`. Returns, for each row, its column; `None` when the matrix is empty,
/// ragged or has more rows than columns.
pub fn min_cost_assignment(cost: &[Vec<i64>]) -> Option<Vec<usize>> {
    let n = cost.len();
    if n == 0 {
        return Some(Vec::new());
    }
    let m = cost[0].len();
    if n > m || cost.iter().any(|r| r.len() != m) {
        return None;
    }
    const INF: i64 = i64::MAX / 4;
    // 1-based arrays as in the classic formulation; column 0 is the virtual start.
    let mut u = vec![0i64; n + 1];
    let mut v = vec![0i64; m + 1];
    let mut p = vec![0usize; m + 1]; // p[j] = row matched to column j
    let mut way = vec![0usize; m + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0usize;
        let mut minv = vec![INF; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = INF;
            let mut j1 = 0usize;
            for j in 1..=m {
                if !used[j] {
                    let cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut out = vec![0usize; n];
    for j in 1..=m {
        if p[j] != 0 {
            out[p[j] - 1] = j - 1;
        }
    }
    Some(out)
}

/// Balanced matching of `cost.len()` GPUs onto `nics` NICs (`cost[g][n]`): each NIC is offered
/// ⌈G/N⌉ times, then the minimum-cost assignment picks. Returns the NIC index of each GPU;
/// empty when there are no NICs.
pub fn balanced(cost: &[Vec<i64>], nics: usize) -> Vec<usize> {
    let g = cost.len();
    if g == 0 || nics == 0 {
        return Vec::new();
    }
    let share = g.div_ceil(nics);
    let wide: Vec<Vec<i64>> = cost
        .iter()
        .map(|row| (0..nics * share).map(|k| row[k % nics]).collect())
        .collect();
    match min_cost_assignment(&wide) {
        Some(a) => a.into_iter().map(|k| k % nics).collect(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn total(cost: &[Vec<i64>], a: &[usize]) -> i64 {
        a.iter().enumerate().map(|(i, &j)| cost[i][j]).sum()
    }

    /// Exhaustive minimum over all injective assignments (for small matrices).
    fn brute(cost: &[Vec<i64>]) -> i64 {
        fn go(cost: &[Vec<i64>], i: usize, used: &mut Vec<bool>) -> i64 {
            if i == cost.len() {
                return 0;
            }
            let mut best = i64::MAX;
            for j in 0..used.len() {
                if !used[j] {
                    used[j] = true;
                    best = best.min(cost[i][j] + go(cost, i + 1, used));
                    used[j] = false;
                }
            }
            best
        }
        go(cost, 0, &mut vec![false; cost[0].len()])
    }

    #[test]
    fn greedy_would_be_wrong() {
        // Greedy row-by-row gives 1 + 100; the optimum is 2 + 3.
        let c = vec![vec![1, 2], vec![3, 100]];
        let a = min_cost_assignment(&c).unwrap();
        assert_eq!(a, vec![1, 0]);
    }

    #[test]
    fn rectangular_and_degenerate() {
        let c = vec![vec![5, 1, 9]];
        assert_eq!(min_cost_assignment(&c).unwrap(), vec![1]);
        assert!(min_cost_assignment(&[vec![1], vec![2]]).is_none());
        assert_eq!(min_cost_assignment(&[]).unwrap(), Vec::<usize>::new());
    }

    #[test]
    fn balanced_shares_evenly() {
        // 4 GPUs, 2 NICs, every GPU prefers NIC 0: each NIC still gets two.
        let c = vec![vec![0, 10]; 4];
        let a = balanced(&c, 2);
        assert_eq!(a.iter().filter(|&&n| n == 0).count(), 2);
        assert_eq!(a.iter().filter(|&&n| n == 1).count(), 2);
        assert!(balanced(&c, 0).is_empty());
    }

    proptest! {
        #[test]
        fn matches_brute_force(n in 1usize..5, extra in 0usize..3, seed in proptest::collection::vec(0i64..50, 40)) {
            let m = n + extra;
            let c: Vec<Vec<i64>> = (0..n).map(|i| (0..m).map(|j| seed[(i * m + j) % seed.len()]).collect()).collect();
            let a = min_cost_assignment(&c).unwrap();
            let mut cols = a.clone();
            cols.sort();
            cols.dedup();
            prop_assert_eq!(cols.len(), n);
            prop_assert_eq!(total(&c, &a), brute(&c));
        }
    }
}
