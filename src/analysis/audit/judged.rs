//! The audit's GPU × NIC judgements ([`Judged`]), read from the one GPU–NIC table the node's
//! matching is chosen from ([`crate::analysis::pairing::NodeView::gpu_nic`]): the classifier's
//! label, bottleneck, NCCL path and GPUDirect RDMA decision per pair, without words.

use super::Ctx;
use super::placement::Judgement;
use crate::analysis::classify::Label;
use crate::model::Bdf;

/// Every audit GPU against every audit RDMA NIC, read from the matching's own table
/// (`ctx.view.cand.gn`, classified once for the node) where both are in it, judged by the
/// classifier otherwise (a GPU or NIC the view leaves out). The same summary either way, so the
/// node's GPU–NIC pairs are classified once, not twice, and no second GPU × NIC table is held.
pub struct Judged<'v> {
    gn: &'v [Vec<Option<crate::analysis::pairing::PairCand>>],
    /// Row of `gn` per audit GPU, column per audit NIC (`None`: not in the view).
    rows: Vec<Option<usize>>,
    cols: Vec<Option<usize>>,
    /// The judgements of pairs the view does not hold, by (GPU, NIC) position.
    rest: std::collections::HashMap<(usize, usize), Judgement>,
    gpus: usize,
}

impl<'v> Judged<'v> {
    /// Maps the audit's GPUs and NICs onto the view and judges the pairs it lacks.
    pub fn new(ctx: &'v Ctx) -> Self {
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
        let gn = view.cand.gn.as_slice();
        let rows: Vec<Option<usize>> = ctx
            .gpus
            .iter()
            .map(|g| gpu_at.get(&g.bdf).copied().filter(|&i| i < gn.len()))
            .collect();
        let cols: Vec<Option<usize>> = ctx
            .nics
            .iter()
            .map(|n| nic_at.get(&n.bdf).copied())
            .collect();
        let mut j = Judged {
            gn,
            rows,
            cols,
            rest: HashMap::new(),
            gpus: ctx.gpus.len(),
        };
        for (gi, g) in ctx.gpus.iter().enumerate() {
            for (ni, n) in ctx.nics.iter().enumerate() {
                if j.held(gi, ni).is_none() {
                    j.rest.insert((gi, ni), ctx.judge(&g.bdf, &n.bdf));
                }
            }
        }
        j
    }

    fn held(&self, gi: usize, ni: usize) -> Option<Judgement> {
        let p = self.gn.get(self.rows[gi]?)?.get(self.cols[ni]?)?.as_ref()?;
        Some(Judgement {
            label: p.label,
            bottleneck_gbytes: p.bottleneck_gbps,
            nccl_path: p.nccl_path,
            gdr: p.gdr,
        })
    }

    /// GPU `gi` (index into `ctx.gpus`) against NIC `ni` (into `ctx.nics`).
    pub fn at(&self, gi: usize, ni: usize) -> Judgement {
        self.held(gi, ni)
            .or_else(|| self.rest.get(&(gi, ni)).copied())
            .unwrap_or(Judgement {
                label: Label::Unknown,
                bottleneck_gbytes: None,
                nccl_path: crate::analysis::nccl::NcclPath::Dis,
                gdr: false,
            })
    }

    /// Whether any GPU has NIC `ni` within PXB.
    pub fn any_local(&self, ni: usize) -> bool {
        (0..self.gpus).any(|gi| self.at(gi, ni).local())
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

    #[test]
    fn the_view_table_judges_every_pair_as_the_classifier_does() {
        // Four switches; the first NIC has two RDMA devices (two endpoints of one function),
        // the second none (no audit NIC, still a view NIC), the third a different port rate.
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
        let t = topo(devs, machine());
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
}
