//! nvidia-smi's label rules (classification.md §1.5), in order: same device → `X`; GPU pair
//! with NVLinks → `NV#`; AMD GPU pair of one xGMI hive → `XGMI` (rocm-smi's link type); two functions of one adapter → `PIX`; a common ancestor below the host
//! bridge → count the distinct bridge units on the path (a switch — upstream plus downstream
//! ports — counts once, so do a plain bridge and a root port): one → `PIX`, more → `PXB`; same
//! host bridge → `PHB`; same NUMA node → `NODE`; different NUMA nodes → `SYS`; NUMA node unknown
//! on a machine with several → unknown. A NIC function with a ConnectX-8 Data Direct DMA
//! function is judged on the DMA function's path (the one its GPU traffic takes).

use super::{Classifier, Label, Why};
use crate::analysis::paths::DevIx;
use crate::analysis::paths::hops::{Crossing, Shape};

impl Why {
    /// The shape of the path this rule implies, for the hop walk.
    pub fn shape(self) -> Shape {
        match self {
            Why::NvLink { count, fabric } => Shape::NvLink { count, fabric },
            Why::Xgmi { count, .. } => Shape::Xgmi { count },
            Why::SameAdapter | Why::SharedDma { .. } => Shape::SameAdapter,
            Why::DifferentNuma(x, y) => Shape::Pcie(Crossing::Smp(x, y)),
            Why::NumaUnknown(..) => Shape::Pcie(Crossing::Unknown),
            _ => Shape::Pcie(Crossing::Direct),
        }
    }
}

impl Classifier<'_> {
    /// The label of two devices and the rule that chose it, judged on the path their traffic
    /// really takes: a NIC function with a Data Direct DMA function is measured to that DMA
    /// function ([`crate::analysis::paths::Paths::data_path`]). Allocates nothing.
    pub(super) fn label_ix(&self, a: DevIx, b: DevIx) -> (Label, Why) {
        let p = &self.paths;
        if a == b {
            return (Label::X, Why::SameDevice);
        }
        if let Some((count, fabric)) = p.nvlink(a, b) {
            return (Label::Nv(count), Why::NvLink { count, fabric });
        }
        if let Some((count, direct)) = p.xgmi(a, b) {
            return (Label::Xgmi, Why::Xgmi { count, direct });
        }
        let (a, b) = (p.data_path(a), p.data_path(b));
        if a == b {
            return (Label::Pix, Why::SharedDma { dma: a });
        }
        self.label_pcie(a, b)
    }

    /// The PCIe label rules of two distinct devices, on their own PCIe paths (no NVLink, no
    /// Data Direct mapping): what the rules give for a NIC's RDMA function itself.
    pub(super) fn label_pcie(&self, a: DevIx, b: DevIx) -> (Label, Why) {
        let p = &self.paths;
        let (da, db) = (p.device(a).bdf, p.device(b).bdf);
        if da.domain == db.domain && da.bus == db.bus && da.device == db.device {
            return (Label::Pix, Why::SameAdapter);
        }
        if let Some(m) = p.meet(a, b) {
            let units = p.bridge_units(a, b, m);
            let lca = p.chain(a)[m.ia];
            let label = if units <= 1 { Label::Pix } else { Label::Pxb };
            return (label, Why::CommonBridge { lca, units });
        }
        if p.host_bridge(a) == p.host_bridge(b) {
            return (Label::Phb, Why::SameHostBridge);
        }
        match (p.numa(a), p.numa(b)) {
            (Some(x), Some(y)) if x == y => (Label::Node, Why::SameNuma(x)),
            (Some(x), Some(y)) => (Label::Sys, Why::DifferentNuma(x, y)),
            _ if p.single_numa() => (Label::Node, Why::SingleNuma),
            (x, y) => (Label::Unknown, Why::NumaUnknown(x, y)),
        }
    }
}
