//! The audit's GPU × NIC judgements ([`Judged`]), read from the one GPU–NIC table the node's
//! matching is chosen from ([`crate::analysis::pairing::NodeView::gpu_nic`]): the classifier's
//! label, bottleneck, NCCL path and GPUDirect RDMA decision per pair, without words.

use super::{Ctx, PathLabel};
use crate::analysis::classify::Label;
use crate::model::Bdf;

/// Every audit GPU against every audit RDMA NIC, read from the matching's own table
/// (`ctx.view`, classified once for the node) where both are in it, judged by the classifier
/// otherwise (a GPU or NIC the view leaves out). The same summary either way, so the node's
/// GPU–NIC pairs are classified once, not twice, and no second GPU × NIC table is held. On a
/// [`NodeView::near`](crate::analysis::pairing::NodeView::near) view a pair under two host
/// bridges (NODE or worse) is judged when it is asked for.
pub struct Judged<'v, 'a> {
    ctx: &'v Ctx<'a>,
    /// View row per audit GPU, view column per audit NIC (`None`: not in the view).
    rows: Vec<Option<usize>>,
    cols: Vec<Option<usize>>,
    /// Audit NIC per view column (distinct NICs have distinct addresses: one column each).
    nic_of_col: Vec<Option<usize>>,
    /// Audit NICs the view leaves out.
    unviewed: Vec<usize>,
    /// The judgements of pairs the view does not hold, by (GPU, NIC) position.
    rest: std::collections::HashMap<(usize, usize), Judgement>,
    /// On a near view: per audit NIC, whether a GPU has it within PXB.
    local_nic: Option<Vec<bool>>,
}

impl<'v, 'a> Judged<'v, 'a> {
    /// Maps the audit's GPUs and NICs onto the view and judges the pairs it lacks.
    pub fn new(ctx: &'v Ctx<'a>) -> Self {
        use std::collections::HashMap;
        let view = &ctx.view;
        let first = |eps: &[crate::analysis::classify::Endpoint]| {
            let mut at: HashMap<Bdf, usize> = HashMap::with_capacity(eps.len());
            for (k, e) in eps.iter().enumerate() {
                at.entry(e.bdf).or_insert(k);
            }
            at
        };
        let (gpu_at, nic_at) = (first(&view.gpus), first(&view.nics));
        let nrows = match &view.near {
            Some(n) => n.rows.len(),
            None => view.cand.gn.len(),
        };
        let rows: Vec<Option<usize>> = ctx
            .gpus
            .iter()
            .map(|g| gpu_at.get(&g.bdf).copied().filter(|&i| i < nrows))
            .collect();
        let cols: Vec<Option<usize>> = ctx
            .nics
            .iter()
            .map(|n| nic_at.get(&n.bdf).copied())
            .collect();
        let mut nic_of_col = vec![None; view.nics.len()];
        for (ni, c) in cols.iter().enumerate() {
            if let Some(c) = *c
                && nic_of_col[c].is_none()
            {
                nic_of_col[c] = Some(ni);
            }
        }
        let unviewed = (0..cols.len()).filter(|&ni| cols[ni].is_none()).collect();
        let mut j = Judged {
            ctx,
            rows,
            cols,
            nic_of_col,
            unviewed,
            rest: HashMap::new(),
            local_nic: None,
        };
        // The pairs of a GPU or NIC the view leaves out.
        for (gi, g) in ctx.gpus.iter().enumerate() {
            let nics: Vec<usize> = match j.rows[gi] {
                None => (0..ctx.nics.len()).collect(),
                Some(_) => j.unviewed.clone(),
            };
            for ni in nics {
                j.rest
                    .insert((gi, ni), ctx.judge(&g.bdf, &ctx.nics[ni].bdf));
            }
        }
        if view.near.is_some() {
            let mut local = vec![false; ctx.nics.len()];
            for gi in 0..ctx.gpus.len() {
                let nics = j
                    .near_nics(gi)
                    .unwrap_or_else(|| (0..ctx.nics.len()).collect());
                for ni in nics {
                    local[ni] |= j.at(gi, ni).local();
                }
            }
            j.local_nic = Some(local);
        }
        j
    }

    fn held(&self, gi: usize, ni: usize) -> Option<Judgement> {
        let p = self.ctx.view.gn(self.rows[gi]?, self.cols[ni]?)?;
        Some(Judgement {
            label: p.label,
            bottleneck_gbytes: p.bottleneck_gbps,
            nccl_path: p.nccl_path,
            gdr: p.gdr,
        })
    }

    /// GPU `gi` (index into `ctx.gpus`) against NIC `ni` (into `ctx.nics`).
    pub fn at(&self, gi: usize, ni: usize) -> Judgement {
        if let Some(j) = self
            .held(gi, ni)
            .or_else(|| self.rest.get(&(gi, ni)).copied())
        {
            return j;
        }
        // In the view but not held: a far pair of a near view (or one the table could not
        // classify): the classifier's word.
        let (g, n) = (self.ctx.gpus[gi], self.ctx.nics[ni]);
        self.ctx.judge(&g.bdf, &n.bdf)
    }

    /// On a near view: the audit NICs that can be within PHB of GPU `gi`, ascending (those
    /// under its host bridge, and any the view leaves out); every other NIC is NODE or worse
    /// to it. `None` on a dense view, or for a GPU the view leaves out: any NIC can be.
    pub fn near_nics(&self, gi: usize) -> Option<Vec<usize>> {
        let near = self.ctx.view.near.as_ref()?;
        let row = self.rows[gi]?;
        let mut out: Vec<usize> = near.rows[row]
            .iter()
            .filter_map(|&(c, _)| self.nic_of_col[c])
            .chain(self.unviewed.iter().copied())
            .collect();
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// The view row of every audit GPU, in audit order; `None` when the view leaves one out.
    pub fn view_rows(&self) -> Option<Vec<usize>> {
        self.rows.iter().copied().collect()
    }

    /// The audit NIC of view NIC column `c` (`None`: no RDMA NIC of the audit).
    pub fn nic_of_col(&self, c: usize) -> Option<usize> {
        self.nic_of_col.get(c).copied().flatten()
    }

    /// GPU `gi`'s best rail NIC (`rail` per audit NIC): GDR under the effective settings
    /// first, then label, then bottleneck (the matching's own order after GDR); the first in
    /// NIC order on a tie; 0 without rails.
    pub fn best_rail(&self, gi: usize, rail: &[bool]) -> usize {
        // Each NIC judged once (a far pair of a near view is classified on each `at`).
        let best = |nics: &mut dyn Iterator<Item = usize>| {
            let judged: Vec<(usize, Judgement)> = nics
                .filter(|&k| rail[k])
                .map(|k| (k, self.at(gi, k)))
                .collect();
            judged.into_iter().min_by(|(_, a), (_, b)| {
                b.gdr.cmp(&a.gdr).then(a.label.cmp(&b.label)).then(
                    b.bottleneck_gbytes
                        .unwrap_or(0.0)
                        .total_cmp(&a.bottleneck_gbytes.unwrap_or(0.0)),
                )
            })
        };
        // On a near view, a GPU whose best NIC under its host bridge is within PXB with GDR
        // has found its best: every other NIC is NODE or worse, so it loses on GDR or on the
        // label, and ties (the first in NIC order wins) are among near NICs.
        if let Some(near) = self.near_nics(gi)
            && let Some((b, j)) = best(&mut near.into_iter())
            && j.local()
            && j.gdr
        {
            return b;
        }
        best(&mut (0..self.cols.len())).map_or(0, |(k, _)| k)
    }

    /// Whether any GPU has NIC `ni` within PXB.
    pub fn any_local(&self, ni: usize) -> bool {
        match &self.local_nic {
            Some(l) => l[ni],
            None => (0..self.ctx.gpus.len()).any(|gi| self.at(gi, ni).local()),
        }
    }

    /// GPU × NIC within PXB (on a near view only the near pairs are judged: the others are
    /// NODE or worse).
    pub fn local_table(&self) -> Vec<Vec<bool>> {
        (0..self.ctx.gpus.len())
            .map(|gi| match self.near_nics(gi) {
                Some(near) => {
                    let mut row = vec![false; self.cols.len()];
                    for ni in near {
                        row[ni] = self.at(gi, ni).local();
                    }
                    row
                }
                None => (0..self.cols.len())
                    .map(|ni| self.at(gi, ni).local())
                    .collect(),
            })
            .collect()
    }
}

/// The path between a GPU and a NIC as the matching sees it: the classifier's label and
/// bottleneck (no words; [`Ctx::reason`] words the pairs a finding names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judgement {
    /// nvidia-smi label (`Unknown` when the source cannot decide NODE vs SYS, or a device is
    /// missing).
    pub label: Label,
    /// Bottleneck bandwidth in GB/s, when the links are known.
    pub bottleneck_gbytes: Option<f64>,
    /// NCCL's path type (NCCL has no NODE: it is PHB there).
    pub nccl_path: crate::analysis::nccl::NcclPath,
    /// Whether NCCL uses GPUDirect RDMA on the pair under the effective settings.
    pub gdr: bool,
}

impl Judgement {
    /// PIX or PXB (or better): NCCL uses GPUDirect RDMA by default.
    pub fn local(&self) -> bool {
        self.label.within_pxb()
    }

    /// The label as the audit writes it (`unknown`, not `?`).
    pub fn word(&self) -> PathLabel {
        PathLabel(self.label)
    }
}

impl Ctx<'_> {
    /// Judges the path between two devices with the classifier built once for the audit.
    pub fn judge(&self, a: &Bdf, b: &Bdf) -> Judgement {
        match self.cl.summary_of(a, b) {
            Some(s) => Judgement {
                label: s.label,
                bottleneck_gbytes: s.bottleneck_gbytes_per_s,
                nccl_path: s.nccl_path,
                gdr: s.gdr,
            },
            None => Judgement {
                label: Label::Unknown,
                bottleneck_gbytes: None,
                nccl_path: crate::analysis::nccl::NcclPath::Dis,
                gdr: false,
            },
        }
    }

    /// Why the classifier labels a pair as it does, in words.
    pub fn reason(&self, a: &Bdf, b: &Bdf) -> String {
        match self.cl.label_and_reason(a, b) {
            Some((_, r)) => r,
            None => format!("{a} or {b} not in the topology"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::audit::testkit::{device, edit, hgx, machine, topo};
    use crate::analysis::classify::Classifier;
    use crate::analysis::pairing::NodeView;
    use crate::model::pci_config::PortType;
    use crate::model::{OsDevice, OsDeviceKind};

    /// Four switches, each under a host bridge of its own; the first NIC has two RDMA devices
    /// (two endpoints of one function), the second none (no audit NIC, still a view NIC), the
    /// third a different port rate; Intel integrated graphics on the root bus.
    fn devices() -> Vec<crate::model::Device> {
        let mut devs = hgx(4);
        edit(&mut devs, "0000:14:00.0", |d| {
            let mut od = d.os_devices[0].clone();
            od.name = "mlx5_9".into();
            d.os_devices.push(od);
        });
        edit(&mut devs, "0000:34:00.0", |d| d.os_devices.clear());
        edit(&mut devs, "0000:54:00.0", |d| {
            d.os_devices[0].ports[0].rate_gbps = Some(100.0);
            d.os_devices.push(OsDevice::new(OsDeviceKind::Net, "eth9"));
        });
        // Intel integrated graphics on the root bus: a view GPU (first in bus order), no audit
        // GPU, so the audit's GPU rows are not the view's.
        devs.push(device(
            "0000:00:02.0",
            None,
            "pci0000:00",
            PortType::Endpoint,
            0x030000,
            0x8086,
            0,
        ));
        devs
    }

    fn node() -> crate::model::Topology {
        topo(devices(), machine())
    }

    #[test]
    fn the_view_table_judges_every_pair_as_the_classifier_does() {
        let t = node();
        let cl = Classifier::new(&t, &Default::default());
        let ctx = Ctx::new(&cl);
        assert_eq!((ctx.gpus.len(), ctx.nics.len()), (4, 3));
        let j = Judged::new(&ctx);
        let mut labels = std::collections::BTreeSet::new();
        for (gi, g) in ctx.gpus.iter().enumerate() {
            for (ni, n) in ctx.nics.iter().enumerate() {
                let want = ctx.judge(&g.bdf, &n.bdf);
                assert_eq!(j.at(gi, ni), want, "{} {}", g.bdf, n.bdf);
                labels.insert(want.label.to_string());
            }
            // Every pair came from the view's table: none was judged twice.
            assert!(j.rest.is_empty());
        }
        // The node has near and far pairs, so the comparison is not between equal cells.
        assert!(labels.len() >= 2, "{labels:?}");
        // The audit's view holds the same GPU–NIC table as the full one, and no GPU pairs.
        let full = NodeView::from_classifier(&cl);
        assert_eq!(ctx.view.cand.gn, full.cand.gn);
        assert!(ctx.view.cand.gg.is_empty() && full.cand.gg.len() == 5);
        assert_eq!(ctx.view.pairing(), full.pairing());
    }

    #[test]
    fn a_near_view_judges_and_pairs_as_the_dense_one() {
        // GPU 0000:33 has no NIC under its host bridge: its best NIC is under another (judged
        // on demand, and the matching falls back to the full table).
        let mut devs = devices();
        devs.retain(|d| d.bdf.to_string() != "0000:34:00.0");
        let t = topo(devs, machine());
        let cl = Classifier::new(&t, &Default::default());
        let dense = Ctx::new(&cl);
        let mut near = Ctx::new(&cl);
        near.view = NodeView::near_from(&cl, 0);
        assert!(near.view.near.is_some() && near.view.cand.gn.is_empty());
        assert!(dense.view.near.is_none());
        let (jd, jn) = (Judged::new(&dense), Judged::new(&near));
        for gi in 0..dense.gpus.len() {
            for ni in 0..dense.nics.len() {
                assert_eq!(jn.at(gi, ni), jd.at(gi, ni), "{gi} {ni}");
                // Every pair within PXB is near.
                if jd.at(gi, ni).local() {
                    assert!(jn.near_nics(gi).unwrap().contains(&ni), "{gi} {ni}");
                }
            }
        }
        for ni in 0..dense.nics.len() {
            assert_eq!(jn.any_local(ni), jd.any_local(ni));
        }
        assert_eq!(jn.local_table(), jd.local_table());
        let (mut fd, mut fnr) = (Vec::new(), Vec::new());
        let pd = crate::analysis::audit::placement::pair(&dense, &mut fd);
        let pn = crate::analysis::audit::placement::pair(&near, &mut fnr);
        assert_eq!(pn, pd);
        assert_eq!(format!("{fnr:?}"), format!("{fd:?}"));
        assert!(fd.len() > dense.nics.len(), "a GPU was judged: {fd:?}");
    }
}
