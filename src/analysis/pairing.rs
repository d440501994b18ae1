//! Which devices pair up, decided here once so that renderers only draw or write the result:
//! the GPU–NIC rail pairs of the node picture and the NVLink counts between GPUs that Slurm's
//! `gres.conf` `Links=` holds.
//!
//! Data: the classification [`Matrix`] (endpoints in matrix order and every pair's label), the
//! audit's GPU→NIC matching ([`audit::Pair`]), and the topology's NVLinks (from NVML:
//! `nvmlDeviceGetNvLinkRemotePciInfo` per link, tallied per peer; a `None` peer is the
//! NVSwitch fabric).

use super::audit;
use super::classify::{Endpoint, Matrix};
use crate::model::{Bdf, Device, DeviceKind, Topology};
use std::collections::HashMap;

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

/// The rail pairs the picture draws: the audit's matching when it has one (pairs whose GPU or
/// NIC is no matrix endpoint are left out), else each compute endpoint's [`nearest_nic`].
pub fn rail_pairs(m: &Matrix, audit_pairs: &[audit::Pair]) -> RailPairs {
    if !audit_pairs.is_empty() {
        let ep: HashMap<Bdf, &Endpoint> = m.endpoints.iter().map(|e| (e.bdf, e)).collect();
        let by_bdf = |b: &Bdf| ep.get(b).copied();
        let pairs = audit_pairs
            .iter()
            .filter_map(|p| Some(rail_pair(by_bdf(&p.gpu)?, by_bdf(&p.nic)?)))
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

/// What counts as an NVLink between two GPUs that reach each other only through NVSwitches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NvSwitchLinks {
    /// 0, as Slurm's `AutoDetect=nvml` writes (it counts only GPU-to-GPU links).
    #[default]
    Slurm,
    /// The smaller of the two GPUs' link counts into the fabric (what PyTorch's NVLink mesh
    /// detection does).
    Fabric,
}

/// NVLink count between GPUs `a` and `b` per the policy: the direct links (the larger of the
/// two directions' tallies, as each end may report them), plus under [`NvSwitchLinks::Fabric`]
/// the smaller of their fabric link counts. `None` when NVLink state is not visible.
pub fn link_count(t: &Topology, a: &Device, b: &Device, policy: NvSwitchLinks) -> Option<u32> {
    if !t.nvlink_visible {
        return None;
    }
    let direct: u32 = t
        .nvlinks
        .iter()
        .filter(|l| (l.a == a.bdf && l.b == Some(b.bdf)) || (l.a == b.bdf && l.b == Some(a.bdf)))
        .map(|l| l.count)
        .max()
        .unwrap_or(0);
    let fabric = |g: &Device| -> u32 {
        t.nvlinks
            .iter()
            .filter(|l| l.a == g.bdf && l.b.is_none())
            .map(|l| l.count)
            .sum()
    };
    Some(match policy {
        NvSwitchLinks::Slurm => direct,
        NvSwitchLinks::Fabric => direct + fabric(a).min(fabric(b)),
    })
}

/// One position of a GPU's NVLink row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvLinkCell {
    /// The GPU itself.
    Itself,
    /// The number of links to that GPU (0: none).
    Links(u32),
}

/// GPU `g`'s NVLink row over `gpus` (Slurm's `Links=` matrix row): per GPU, [`NvLinkCell::Itself`]
/// or its [`link_count`]. `None` when a count is needed and NVLink state is not visible.
pub fn nvlink_row(
    t: &Topology,
    gpus: &[&Device],
    g: &Device,
    policy: NvSwitchLinks,
) -> Option<Vec<NvLinkCell>> {
    gpus.iter()
        .map(|h| {
            if h.bdf == g.bdf {
                Some(NvLinkCell::Itself)
            } else {
                link_count(t, g, h, policy).map(NvLinkCell::Links)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::{ClassifyOptions, classify_all};
    use crate::analysis::testkit::TopoBuilder;

    /// One host bridge: a switch holding GPU0 and `mlx5_1` (NIC1), GPU1 on a root port of its
    /// own, `mlx5_0` (NIC0) on another: GPU1 is PHB from both NICs.
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
        assert_eq!(names("GPU0").as_deref(), Some("NIC1"), "the better class");
        assert_eq!(
            names("GPU1").as_deref(),
            Some("NIC0"),
            "a tie: matrix order"
        );
        let r = rail_pairs(&m, &[]);
        assert_eq!(r.source, RailPairSource::Nearest);
        let pairs: Vec<_> = r.pairs.iter().map(|p| (&*p.compute, &*p.nic)).collect();
        assert_eq!(pairs, [("GPU0", "NIC1"), ("GPU1", "NIC0")]);
    }

    #[test]
    fn the_audit_matching_wins_when_there_is_one() {
        let t = node();
        let m = classify_all(&t, &ClassifyOptions::default());
        let audit = crate::analysis::audit::run(&t, &Default::default());
        let r = rail_pairs(&m, &audit.pairs);
        assert_eq!(r.source, RailPairSource::Audit);
        assert_eq!(r.pairs.len(), audit.pairs.len());
        assert!(r.pairs.iter().all(|p| p.compute.starts_with("GPU")));
    }

    #[test]
    fn nvlink_rows_follow_the_policy() {
        let gpu = |t: &Topology, a: &str| t.device(&a.parse().unwrap()).unwrap().clone();
        let t = node();
        let (g0, g1) = (gpu(&t, "0000:13:00.0"), gpu(&t, "0000:15:00.0"));
        assert_eq!(
            nvlink_row(&t, &[&g0, &g1], &g0, NvSwitchLinks::Slurm),
            None,
            "NVLink state unknown"
        );
        assert_eq!(
            nvlink_row(&t, &[&g0], &g0, NvSwitchLinks::Slurm),
            Some(vec![NvLinkCell::Itself]),
            "a lone GPU needs no NVLink state"
        );
        let mut b = TopoBuilder::new(&["0-7"]);
        b.gpu("0000:13:00.0", None, Some(0));
        b.gpu("0000:15:00.0", None, Some(0));
        b.nvlink("0000:13:00.0", Some("0000:15:00.0"), 4, Some(4));
        b.nvlink("0000:15:00.0", Some("0000:13:00.0"), 4, Some(4));
        b.nvlink("0000:13:00.0", None, 12, Some(4));
        b.nvlink("0000:15:00.0", None, 18, Some(4));
        let t = b.build();
        let (g0, g1) = (gpu(&t, "0000:13:00.0"), gpu(&t, "0000:15:00.0"));
        let row = |p| nvlink_row(&t, &[&g0, &g1], &g0, p);
        assert_eq!(
            row(NvSwitchLinks::Slurm),
            Some(vec![NvLinkCell::Itself, NvLinkCell::Links(4)]),
            "both ends' reports of one bundle count once"
        );
        assert_eq!(
            row(NvSwitchLinks::Fabric),
            Some(vec![NvLinkCell::Itself, NvLinkCell::Links(16)])
        );
    }
}
