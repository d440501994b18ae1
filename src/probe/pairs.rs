//! Which GPU–NIC pairs the probe measures: by default each GPU with its best NIC plus one worse
//! NIC as a control; `--pairs all` for every pair. Pairs are ranked by the classifier's
//! nvidia-smi label (PIX best … SYS worst), which is also the label the measurement is judged
//! against.

use crate::analysis::classify::{self, Label};
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

/// The expected path label of a pair, from the classifier
/// ([`classify::classify_pair`]): `PIX`, `PXB`, `PHB`, `NODE`, `SYS`, `NV#`, or
/// [`Label::Unknown`] when the topology cannot decide it.
pub fn local_label(t: &Topology, a: &Bdf, b: &Bdf) -> Label {
    classify::classify_pair(t, a, b, &Default::default())
        .map(|p| p.label)
        .unwrap_or(Label::Unknown)
}

/// The pairs to probe.
pub fn select(t: &Topology, mode: PairMode) -> Vec<Pair> {
    let nics = rdma_nics(t);
    let mut out = Vec::new();
    for g in t
        .devices
        .iter()
        .filter(|d| d.kind.is_compute() && !d.is_vf())
    {
        let mut ranked: Vec<(&RdmaNic, Label)> = nics
            .iter()
            .map(|n| (n, local_label(t, &g.bdf, &n.bdf)))
            .collect();
        ranked.sort_by_key(|(n, l)| (l.rank(), n.bdf, n.rdma.clone()));
        match mode {
            PairMode::All => out.extend(ranked.iter().map(|(n, l)| Pair {
                gpu: g.bdf,
                nic: (*n).clone(),
                expected_label: *l,
                control: false,
            })),
            PairMode::Best => {
                let Some((best, bl)) = ranked.first() else {
                    continue;
                };
                out.push(Pair {
                    gpu: g.bdf,
                    nic: (*best).clone(),
                    expected_label: *bl,
                    control: false,
                });
                if let Some((worse, wl)) = ranked.iter().find(|(_, l)| l.rank() > bl.rank()) {
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
