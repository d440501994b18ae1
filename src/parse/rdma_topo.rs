//! The JSON NVIDIA's `rdma_topo topology -j` prints (linux-rdma/rdma-core,
//! `kernel-boot/rdma_topo`, `topo_json` and each complex's `to_dict`): a list of "NVCX
//! complexes", each a GPU with the NIC functions rdma_topo paired with it.
//!
//! Three shapes, told apart by their keys:
//! - Data Direct (DMA-based, GB200/GB300 with ConnectX-8): `rdma_nic_pf_bdf`, `rdma_dma_bdf`,
//!   `gpu_bdf`, optional `numa_node`, `nvme_bdf`, `rdma_nic_vpd_name`;
//! - inline (a ConnectX NIC and a GPU under one ConnectX switch, HGX B300): `rdma_nic_pf_bdf`,
//!   `gpu_bdf`, `rdma_nic_ats`;
//! - NUMA-based (GPUs on Grace root ports): `numa_node`, `gpu_bdfs`, and either
//!   `rdma_nic_pf_bdf` + `rdma_nic_ats` (one PF) or `rdma_nic_boards[].nics[].pf_bdfs`.
//!
//! Every shape has `subsystems`: `{ "<bdf>": { "infiniband": ["mlx5_0"], "net": [...] } }`.

use super::{Reason, Refusal};
use crate::model::Bdf;
use crate::model::rdma_topo::{Complex, ComplexKind};
use serde_json::Value;

fn bdf(v: &Value) -> Option<Bdf> {
    v.as_str()?.parse().ok()
}

fn bdfs(v: Option<&Value>) -> Vec<Bdf> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(bdf).collect())
        .unwrap_or_default()
}

/// Parses `rdma_topo topology -j` output. Refuses anything that is not a JSON list of objects
/// each naming at least one GPU.
pub fn parse(bytes: &[u8]) -> Result<Vec<Complex>, Refusal> {
    let refuse = || Refusal::of(bytes, Reason::NotRdmaTopo);
    let v: Value = serde_json::from_slice(bytes).map_err(|_| refuse())?;
    let list = v.as_array().ok_or_else(refuse)?;
    let mut out = Vec::with_capacity(list.len());
    for item in list {
        let o = item.as_object().ok_or_else(refuse)?;
        let dma = o.get("rdma_dma_bdf").and_then(bdf);
        let mut gpus: Vec<Bdf> = o.get("gpu_bdf").and_then(bdf).into_iter().collect();
        gpus.extend(bdfs(o.get("gpu_bdfs")));
        if gpus.is_empty() {
            return Err(refuse());
        }
        let mut nic_pfs: Vec<Bdf> = o.get("rdma_nic_pf_bdf").and_then(bdf).into_iter().collect();
        for board in o
            .get("rdma_nic_boards")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for nic in board
                .get("nics")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                nic_pfs.extend(bdfs(nic.get("pf_bdfs")));
            }
        }
        let kind = if dma.is_some() {
            ComplexKind::DataDirect
        } else if o.contains_key("gpu_bdfs") {
            ComplexKind::Numa
        } else {
            ComplexKind::Inline
        };
        let mut rdma = Vec::new();
        if let Some(s) = o.get("subsystems").and_then(Value::as_object) {
            for (k, sub) in s {
                let Ok(b) = k.parse::<Bdf>() else { continue };
                for name in sub
                    .get("infiniband")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    rdma.push((b, name.to_string()));
                }
            }
        }
        rdma.sort();
        out.push(Complex {
            kind,
            nic_pfs,
            dma,
            gpus,
            numa_node: o.get("numa_node").and_then(Value::as_i64),
            ats: o.get("rdma_nic_ats").and_then(Value::as_bool),
            rdma,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_shapes() {
        let j = br#"[
  {"rdma_nic_pf_bdf": "0000:01:00.0", "rdma_dma_bdf": "0008:03:00.0", "gpu_bdf": "0008:06:00.0",
   "subsystems": {"0000:01:00.0": {"infiniband": ["mlx5_0"], "net": ["ibp1s0"]}}, "numa_node": 0},
  {"rdma_nic_pf_bdf": "0000:11:00.0", "gpu_bdf": "0000:14:00.0", "subsystems": {}, "rdma_nic_ats": false},
  {"numa_node": 1, "gpu_bdfs": ["0009:01:00.0"], "subsystems": {},
   "rdma_nic_boards": [{"board_sn": "UNKNOWN", "nics": [{"parent_bdf": "0002:00:00.0", "ats": false, "pf_bdfs": ["0002:01:00.0", "0002:01:00.1"]}]}]}
]"#;
        let c = parse(j).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].kind, ComplexKind::DataDirect);
        assert_eq!(c[0].dma, Some("0008:03:00.0".parse().unwrap()));
        assert_eq!(
            c[0].rdma,
            vec![("0000:01:00.0".parse().unwrap(), "mlx5_0".into())]
        );
        assert_eq!(c[1].kind, ComplexKind::Inline);
        assert_eq!(c[1].ats, Some(false));
        assert_eq!(c[2].kind, ComplexKind::Numa);
        assert_eq!(c[2].nic_pfs.len(), 2);
        assert_eq!(c[2].numa_node, Some(1));
    }

    #[test]
    fn refuses_other_json() {
        assert!(parse(b"{}").is_err());
        assert!(parse(b"[1]").is_err());
        assert!(parse(b"[{\"rdma_nic_pf_bdf\": \"0000:01:00.0\"}]").is_err());
        assert!(parse(b"not json").is_err());
        assert_eq!(parse(b"[]").unwrap(), vec![]);
    }
}
