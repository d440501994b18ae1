//! Pairs ConnectX-8 Data Direct DMA functions (`15b3:2100`) with the NIC functions whose
//! RDMA traffic they carry, and folds `rdma_topo topology -j` output into a topology.
//!
//! What the kernel exposes (docs/nextgen.md): no sysfs link joins an RDMA device to its DMA
//! function. The `mlx5_ib` driver binds the DMA function (its `mlx5_data_direct` PCI driver)
//! and matches it to an RDMA device by the board's VUID: the DMA function's VPD keyword `VU`
//! against the VUID firmware reports for the RDMA device; userspace learns the DMA function's
//! path only through the `mlx5dv_get_data_direct_sysfs_path` verb, which NCCL uses to expose
//! `<dev>_dma`. rdma_topo pairs them offline by the VPD keyword `V3` (the same board UUID in
//! every function of the adapter). peerpath does what rdma_topo does: `vpd` is readable by root
//! only, so an unprivileged scan leaves the DMA function unpaired and says so; rdma_topo's own
//! JSON (`--rdma-topo`) can pair them instead.

use crate::model::device::{DataDirect, Device};
use crate::model::parts::{self, Part};
use crate::model::rdma_topo::{Complex, ComplexKind};
use crate::model::topology::{Topology, Warning};
use crate::model::{Bdf, DeviceKind};
use std::collections::HashMap;

/// VPD keywords that carry the board UUID, in the order tried: `V3` (rdma_topo), `VU` (the
/// kernel's `mlx5_data_direct` driver).
pub const UUID_KEYWORDS: [&str; 2] = ["V3", "VU"];

/// Board-UUID keywords read from each function's VPD, by address: `[(keyword, value)]`.
pub type VpdUuids = HashMap<Bdf, Vec<(String, String)>>;

fn keyword<'a>(uuids: &'a VpdUuids, b: &Bdf, k: &str) -> Option<&'a str> {
    uuids
        .get(b)?
        .iter()
        .find(|(n, v)| n == k && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

/// Pairs every Data Direct DMA function with the NIC functions that share its VPD board UUID
/// (`V3`, else `VU`; values in `uuids`, read by the scan and not kept in the model); a VF
/// inherits its PF's pairing. Returns warnings for DMA functions that could not be paired,
/// naming why (VPD unreadable, no matching NIC function).
pub fn pair_by_vpd(devices: &mut [Device], uuids: &VpdUuids) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let uuid_of = |d: &Device| {
        UUID_KEYWORDS
            .iter()
            .find_map(|k| keyword(uuids, &d.bdf, k).map(|v| (*k, v)))
    };
    // (address, board UUID keyword and value, sysfs path) of each DMA function.
    type Dma = (Bdf, Option<(&'static str, String)>, String);
    let dmas: Vec<Dma> = devices
        .iter()
        .filter(|d| parts::is_data_direct_dma(d))
        .map(|d| {
            (
                d.bdf,
                uuid_of(d).map(|(k, v)| (k, v.to_string())),
                d.sysfs_path.clone(),
            )
        })
        .collect();
    for (dma, uuid, path) in dmas {
        let Some((k, v)) = uuid else {
            warnings.push(Warning {
                path: format!("{path}/vpd"),
                message: format!(
                    "Data Direct DMA function {dma}: VPD not read (the vpd file is readable by root only) or without a V3/VU board UUID; not paired with its RDMA device (run as root, or pass rdma_topo's JSON with --rdma-topo)"
                ),
            });
            continue;
        };
        let mut n = 0;
        for d in devices.iter_mut() {
            if d.bdf == dma || parts::is_data_direct_dma(d) || d.physfn.is_some() {
                continue;
            }
            let is_nic = d.kind == DeviceKind::Nic || parts::part_of(d) == Some(Part::CxNic);
            if is_nic && keyword(uuids, &d.bdf, k) == Some(v.as_str()) {
                d.data_direct = Some(DataDirect {
                    dma,
                    evidence: format!("VPD {k} (board UUID) equal to DMA function {dma}'s"),
                });
                n += 1;
            }
        }
        if n == 0 {
            warnings.push(Warning {
                path: format!("{path}/vpd"),
                message: format!(
                    "Data Direct DMA function {dma}: no NIC function carries its board UUID (VPD {k}); not paired (the NIC's RDMA function may be missing or its VPD unreadable)"
                ),
            });
        }
    }
    inherit_to_vfs(devices);
    warnings
}

/// VFs share their PF's adapter: each VF without a pairing takes its PF's.
fn inherit_to_vfs(devices: &mut [Device]) {
    let pf_dd: Vec<(Bdf, DataDirect)> = devices
        .iter()
        .filter_map(|d| Some((d.bdf, d.data_direct.clone()?)))
        .collect();
    for d in devices.iter_mut() {
        if d.data_direct.is_some() {
            continue;
        }
        if let Some(pf) = d.physfn
            && let Some((_, dd)) = pf_dd.iter().find(|(b, _)| *b == pf)
        {
            d.data_direct = Some(DataDirect {
                dma: dd.dma,
                evidence: format!("its PF {pf}: {}", dd.evidence),
            });
        }
    }
}

/// Folds rdma_topo's complexes into a topology: a NIC function of a Data Direct complex that
/// peerpath did not pair gets the complex's DMA function (evidence `rdma_topo`); a pairing that
/// disagrees with rdma_topo's, and any address rdma_topo names that the topology lacks, become
/// warnings. The complexes are kept in [`Topology::rdma_topo`] for the audit.
pub fn apply_rdma_topo(topo: &mut Topology, path: &str, complexes: Vec<Complex>) {
    let mut warnings = Vec::new();
    for c in &complexes {
        for b in c.nic_pfs.iter().chain(c.gpus.iter()).chain(c.dma.iter()) {
            if topo.device(b).is_none() {
                warnings.push(Warning {
                    path: path.to_string(),
                    message: format!(
                        "rdma_topo {} complex names {b}, which this topology does not have; ignored",
                        c.kind.as_str()
                    ),
                });
            }
        }
        if c.kind != ComplexKind::DataDirect {
            continue;
        }
        let Some(dma) = c.dma else { continue };
        if topo.device(&dma).is_none() {
            continue;
        }
        for pf in &c.nic_pfs {
            let Some(i) = topo.device_index(pf) else {
                continue;
            };
            let d = &mut topo.devices[i];
            match &d.data_direct {
                None => {
                    d.data_direct = Some(DataDirect {
                        dma,
                        evidence: format!("rdma_topo JSON {path}: rdma_dma_bdf {dma}"),
                    })
                }
                Some(dd) if dd.dma != dma => warnings.push(Warning {
                    path: path.to_string(),
                    message: format!(
                        "rdma_topo pairs NIC function {pf} with DMA function {dma}, the scan with {} ({}); the scan's pairing kept",
                        dd.dma, dd.evidence
                    ),
                }),
                Some(_) => {}
            }
        }
    }
    inherit_to_vfs(&mut topo.devices);
    topo.warnings.extend(warnings);
    topo.rdma_topo = Some(crate::model::topology::RdmaTopoEvidence {
        path: path.to_string(),
        complexes,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(bdf: &str, ids: (u16, u16, u32), v3: Option<&str>, uuids: &mut VpdUuids) -> Device {
        let mut d = Device::new(
            bdf.parse().unwrap(),
            "pci0000:00".into(),
            format!("d/{bdf}"),
        );
        d.vendor_id = Some(ids.0);
        d.device_id = Some(ids.1);
        d.class = ids.2;
        d.kind = crate::model::device::kind_from_class(ids.2, Some(ids.0), Some(ids.1));
        if let Some(v) = v3 {
            d.vpd.push("V3".into());
            uuids.insert(d.bdf, vec![("V3".into(), v.into())]);
        }
        d
    }

    #[test]
    fn pairs_by_board_uuid_and_vfs_follow() {
        let (nic, dmaf, vf) = (
            (0x15b3, 0x1023, 0x020700),
            (0x15b3, 0x2100, 0x080100),
            (0x15b3, 0x101e, 0x020700),
        );
        let mut u = VpdUuids::new();
        let mut v = vec![
            dev("0000:01:00.0", nic, Some("aa"), &mut u),
            dev("0000:01:00.1", nic, Some("aa"), &mut u),
            dev("0000:02:00.0", nic, Some("bb"), &mut u),
            dev("0008:03:00.0", dmaf, Some("aa"), &mut u),
            dev("0009:03:00.0", dmaf, None, &mut u),
            dev("0000:01:00.2", vf, None, &mut u),
        ];
        v[5].physfn = Some("0000:01:00.0".parse().unwrap());
        let w = pair_by_vpd(&mut v, &u);
        let dma: Bdf = "0008:03:00.0".parse().unwrap();
        assert_eq!(v[0].data_direct.as_ref().unwrap().dma, dma);
        assert_eq!(v[1].data_direct.as_ref().unwrap().dma, dma);
        assert!(v[2].data_direct.is_none());
        assert!(
            v[5].data_direct
                .as_ref()
                .unwrap()
                .evidence
                .starts_with("its PF")
        );
        // The UUID itself is not in the evidence.
        assert!(!v[0].data_direct.as_ref().unwrap().evidence.contains("aa"));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].message.contains("readable by root only"));
    }
}
