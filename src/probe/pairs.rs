//! Which GPU–NIC pairs the probe measures: by default each GPU with its best NIC plus one worse
//! NIC as a control; `--pairs all` for every pair. Pairs are ranked by the classifier's
//! nvidia-smi label (PIX best … SYS worst), which is also the label the measurement is judged
//! against.

use crate::analysis::classify::{Classifier, ClassifyOptions, Label};
use crate::analysis::pairing::NodeView;
use crate::model::{Bdf, DeviceKind, Topology};
use serde::Serialize;

/// Pair selection mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairMode {
    /// Each GPU with its best NIC, plus one worse NIC as a control.
    Best,
    /// Every GPU with every NIC.
    All,
}

/// One RDMA NIC: PCI function, RDMA device name, first port and its rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RdmaNic {
    /// PCI address.
    pub bdf: Bdf,
    /// RDMA device (`mlx5_0`), from `/sys/class/infiniband`.
    pub rdma: String,
    /// Port number used (the first ACTIVE port in sysfs, else the first).
    pub port: u32,
    /// Port rate in Gb/s (`ports/<n>/rate`).
    pub rate_gbps: Option<f64>,
}

/// A chosen pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    /// GPU PCI address.
    pub gpu: Bdf,
    /// The NIC.
    pub nic: RdmaNic,
    /// The classifier's label for the pair (PIX, PXB, PHB, NODE, SYS, NV#, or `?`).
    pub expected_label: Label,
    /// Whether this is the control (worse) pair of its GPU.
    pub control: bool,
}

/// RDMA-capable NICs of a topology (physical functions with an RDMA device).
pub fn rdma_nics(t: &Topology) -> Vec<RdmaNic> {
    let mut out = Vec::new();
    for d in t.of_kind(DeviceKind::Nic) {
        for o in d
            .os_devices
            .iter()
            .filter(|o| o.kind == crate::model::OsDeviceKind::Rdma)
        {
            let port = o
                .ports
                .iter()
                .find(|p| p.state.as_ref().is_some_and(|(n, _)| *n == 4))
                .or_else(|| o.ports.first());
            out.push(RdmaNic {
                bdf: d.bdf,
                rdma: o.name.clone(),
                port: port.map(|p| p.port).unwrap_or(1),
                rate_gbps: port.and_then(|p| p.rate_gbps),
            });
        }
    }
    out
}

/// The nvidia-smi label of two devices ([`crate::analysis::classify`]): `PIX`, `PXB`, `PHB`,
/// `NODE`, `SYS`, `NV#`, or unknown.
pub fn local_label(t: &Topology, a: &Bdf, b: &Bdf) -> Label {
    Classifier::new(t, &ClassifyOptions::default())
        .label_of(a, b)
        .map(|(l, _)| l)
        .unwrap_or(Label::Unknown)
}

/// The GPU–NIC pairs to probe. `Best`: each GPU with the NIC the node's one pairing gives it
/// ([`crate::analysis::pairing`], the pair the audit judges), other compute devices with
/// their best-labelled NIC, each plus one worse control; `All`: every compute device with
/// every RDMA port. Labels come from one classification of the topology.
pub fn select(t: &Topology, mode: PairMode) -> Vec<Pair> {
    let cl = Classifier::new(t, &ClassifyOptions::default());
    let view = NodeView::from_classifier(&cl);
    let paired = view.pairing();
    let label = |a: &Bdf, b: &Bdf| cl.label_of(a, b).map(|(l, _)| l).unwrap_or(Label::Unknown);
    let nics = rdma_nics(t);
    let mut out = Vec::new();
    for g in t
        .devices
        .iter()
        .filter(|d| d.kind.is_compute() && !d.is_vf())
    {
        let mut ranked: Vec<(&RdmaNic, Label)> =
            nics.iter().map(|n| (n, label(&g.bdf, &n.bdf))).collect();
        ranked.sort_by(|(na, la), (nb, lb)| {
            la.cmp(lb)
                .then(na.bdf.cmp(&nb.bdf))
                .then(na.rdma.cmp(&nb.rdma))
        });
        match mode {
            PairMode::All => out.extend(ranked.iter().map(|(n, l)| Pair {
                gpu: g.bdf,
                nic: (*n).clone(),
                expected_label: *l,
                control: false,
            })),
            PairMode::Best => {
                let pairing_nic = view
                    .gpus
                    .iter()
                    .position(|e| e.bdf == g.bdf)
                    .and_then(|i| paired.get(i).copied().flatten())
                    .map(|k| view.nics[k].bdf);
                let chosen = pairing_nic
                    .and_then(|b| ranked.iter().find(|(n, _)| n.bdf == b))
                    .or(ranked.first());
                let Some((best, bl)) = chosen else {
                    continue;
                };
                out.push(Pair {
                    gpu: g.bdf,
                    nic: (*best).clone(),
                    expected_label: *bl,
                    control: false,
                });
                if let Some((worse, wl)) = ranked.iter().find(|(_, l)| l > bl) {
                    out.push(Pair {
                        gpu: g.bdf,
                        nic: (*worse).clone(),
                        expected_label: *wl,
                        control: true,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::{LoadOptions, load};
    use std::path::Path;

    #[test]
    fn real_snapshot_pairs_the_phi_with_the_connectx3_through_the_host_bridge() {
        // hwloc's 32em64t-2n8c+dax+nvme+mic+dimms: ConnectX-3 (mlx4_0) under root port
        // 80:02.2 and a Xeon Phi under root port 80:03.0, both on host bridge pci0000:80.
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/hwloc/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2");
        let t = load(Some(&p), &LoadOptions::default()).unwrap();
        let nics = rdma_nics(&t);
        assert_eq!(nics.len(), 1);
        assert_eq!(nics[0].rdma, "mlx4_0");
        let gpu: Bdf = "0000:83:00.0".parse().unwrap();
        assert_eq!(local_label(&t, &gpu, &nics[0].bdf), Label::Phb);
        let best = select(&t, PairMode::Best);
        assert_eq!(best.len(), 1, "one NIC: no worse control exists");
        assert_eq!(best[0].gpu, gpu);
        assert_eq!(best[0].expected_label, Label::Phb);
        assert!(!best[0].control);
        assert_eq!(select(&t, PairMode::All).len(), 1);
    }
}
