//! Every endpoint pair's matrix cell (class and reason) in a form that stays small on a node of
//! thousands of endpoints: the HTML report's data (`peerpath report -o FILE.html`).
//!
//! The cell of two endpoints is what the matrix holds for them: `X` on the diagonal, `PIX` for
//! two endpoints of one PCI function, the pair's label and reason (the one wording,
//! [`Classifier::label_and_reason`], of the pair in matrix order) when [`pair_wanted`] names
//! their kinds, and nothing otherwise.
//!
//! Most cells of a large node repeat: for two endpoints under different host bridges, with no
//! NVLink, no xGMI and no Data Direct DMA function, no PCIe device is on both their paths (no
//! common switch, no ACS on the path, no shared adapter), so the label is NODE/SYS/`?` by the
//! two NUMA nodes, and the reason names only the two host bridges and the NUMA nodes. Such
//! endpoints are put in *groups* (host bridge, NUMA node, kind), and the cell of two endpoints
//! of groups under different host bridges is computed once per ordered pair of groups
//! ([`PairCells::far`]). Every other cell of a requested row is computed pair by pair
//! ([`PairCells::near`]). [`PairCells::code`] expands the two back into every cell.

use super::{Classifier, Label, pair_wanted};
use crate::model::DeviceKind;
use std::collections::HashMap;

/// The cells of the requested rows of the pair matrix, each distinct cell once.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCells {
    /// Distinct cells; code 0 is `None` (a pair the matrix does not classify), each other code a
    /// `(label, reason)` (reason empty for `X` and for two endpoints of one function).
    pub cells: Vec<Option<(Label, String)>>,
    /// Per endpoint (matrix order): its group, `None` when its cells are computed pair by pair.
    pub group: Vec<Option<u32>>,
    /// Per group: its host bridge (interned, [`crate::analysis::paths::Paths::host_bridge`]).
    pub group_hb: Vec<u32>,
    /// `far[x · groups + y]`: the cell code of an endpoint of group `x` (first in matrix order)
    /// and one of group `y`, for groups under different host bridges (0 otherwise).
    pub far: Vec<u32>,
    /// Per endpoint: the codes of its row's near columns (see [`PairCells::is_near`]) in matrix
    /// order, or `None` when the row was not requested.
    pub near: Vec<Option<Vec<u32>>>,
}

impl PairCells {
    /// Number of groups.
    pub fn groups(&self) -> usize {
        self.group_hb.len()
    }

    /// Whether the cell of endpoints `a` and `b` is in a row's near list (computed pair by pair)
    /// rather than in the group table: either is in no group, or both groups are under one host
    /// bridge.
    pub fn is_near(&self, a: usize, b: usize) -> bool {
        match (self.group[a], self.group[b]) {
            (Some(x), Some(y)) => self.group_hb[x as usize] == self.group_hb[y as usize],
            _ => true,
        }
    }

    /// The codes of row `a`, every column in matrix order; `None` when the row was not
    /// requested.
    pub fn row(&self, a: usize) -> Option<Vec<u32>> {
        let near = self.near.get(a)?.as_ref()?;
        let mut near = near.iter();
        let n = self.group.len();
        let g = self.groups();
        (0..n)
            .map(|b| {
                if self.is_near(a, b) {
                    near.next().copied()
                } else {
                    let (x, y) = if a < b { (a, b) } else { (b, a) };
                    let (gx, gy) = (self.group[x]? as usize, self.group[y]? as usize);
                    self.far.get(gx * g + gy).copied()
                }
            })
            .collect()
    }

    /// The cell code of endpoints `a` and `b` (row `a` must have been requested).
    pub fn code(&self, a: usize, b: usize) -> Option<u32> {
        self.row(a)?.get(b).copied()
    }
}

impl Classifier<'_> {
    /// The matrix cell of endpoints `a` and `b` (see the module documentation), worded.
    pub fn cell(&self, a: usize, b: usize) -> Option<(Label, String)> {
        let eps = self.endpoints();
        let (x, y) = if a <= b { (a, b) } else { (b, a) };
        let (ex, ey) = (eps.get(x)?, eps.get(y)?);
        if ex.bdf == ey.bdf {
            let l = if x == y { Label::X } else { Label::Pix };
            return Some((l, String::new()));
        }
        if !pair_wanted(ex.kind, ey.kind) {
            return None;
        }
        self.label_and_reason(&ex.bdf, &ey.bdf)
    }

    /// The group key of endpoint `k` (host bridge, NUMA node, kind), or `None` when a pair of
    /// it across host bridges may depend on more than that: an NVLink or xGMI GPU, a NIC with
    /// a Data Direct DMA function, a device whose path reaches a top device that another host
    /// bridge's endpoint also reaches, or whose bus number is used under another host bridge.
    fn group_key(&self, k: usize, shared: &std::collections::HashSet<usize>) -> Option<GroupKey> {
        let p = &self.paths;
        let d = self.ep_dev[k];
        if shared.contains(&k) || p.data_path(d) != d || p.may_nvlink(d) {
            return None;
        }
        let kind = self.endpoints()[k].kind;
        if p.any_xgmi() && matches!(kind, DeviceKind::Gpu | DeviceKind::Accelerator) {
            return None;
        }
        Some((p.host_bridge(d), p.numa(d), kind))
    }

    /// The cells of the rows `rows` asks for (one flag per endpoint), every other row left out.
    pub fn pair_cells(&self, rows: &[bool]) -> PairCells {
        let p = &self.paths;
        let n = self.ep_dev.len();
        // Endpoints whose top device or bus is also another host bridge's: pair by pair.
        let mut top_hb: HashMap<u32, u32> = HashMap::new();
        let mut bus_hb: HashMap<(u32, u8), u32> = HashMap::new();
        let mut clash_top = std::collections::HashSet::new();
        let mut clash_bus = std::collections::HashSet::new();
        for &d in &self.ep_dev {
            let (hb, top, bdf) = (p.host_bridge(d), p.top(d), p.device(d).bdf);
            if *top_hb.entry(top).or_insert(hb) != hb {
                clash_top.insert(top);
            }
            if *bus_hb.entry((bdf.domain, bdf.bus)).or_insert(hb) != hb {
                clash_bus.insert((bdf.domain, bdf.bus));
            }
        }
        let shared: std::collections::HashSet<usize> = (0..n)
            .filter(|&k| {
                let d = self.ep_dev[k];
                let bdf = p.device(d).bdf;
                clash_top.contains(&p.top(d)) || clash_bus.contains(&(bdf.domain, bdf.bus))
            })
            .collect();
        let mut keys: HashMap<GroupKey, u32> = HashMap::new();
        let mut group_hb = Vec::new();
        let mut rep = Vec::new();
        let group: Vec<Option<u32>> = (0..n)
            .map(|k| {
                let key = self.group_key(k, &shared)?;
                Some(*keys.entry(key).or_insert_with(|| {
                    group_hb.push(key.0);
                    rep.push(k);
                    rep.len() as u32 - 1
                }))
            })
            .collect();
        let mut cells: Vec<Option<(Label, String)>> = vec![None];
        let mut code_of: HashMap<(Label, String), u32> = HashMap::new();
        let mut code = |c: Option<(Label, String)>| -> u32 {
            let Some(c) = c else { return 0 };
            if let Some(&k) = code_of.get(&c) {
                return k;
            }
            cells.push(Some(c.clone()));
            let k = cells.len() as u32 - 1;
            code_of.insert(c, k);
            k
        };
        let g = rep.len();
        let mut far = vec![0u32; g * g];
        for x in 0..g {
            for y in 0..g {
                if group_hb[x] != group_hb[y] {
                    let (ex, ey) = (&self.endpoints()[rep[x]], &self.endpoints()[rep[y]]);
                    let c = if pair_wanted(ex.kind, ey.kind) {
                        self.label_and_reason(&ex.bdf, &ey.bdf)
                    } else {
                        None
                    };
                    far[x * g + y] = code(c);
                }
            }
        }
        let mut out = PairCells {
            cells: Vec::new(),
            group,
            group_hb,
            far,
            near: vec![None; n],
        };
        for a in (0..n).filter(|&a| rows.get(a).copied().unwrap_or(false)) {
            let row: Vec<u32> = (0..n)
                .filter(|&b| out.is_near(a, b))
                .map(|b| code(self.cell(a, b)))
                .collect();
            out.near[a] = Some(row);
        }
        out.cells = cells;
        out
    }
}

/// What the cells of an endpoint across host bridges depend on: its host bridge, NUMA node and
/// kind.
type GroupKey = (u32, Option<u32>, DeviceKind);
