//! A synthesized NVL72 fleet (labelled synthesized everywhere it lands): racks of 18 compute
//! trays with 4 GPUs each, every tray a capture as `peerpath capture` writes one — the sysfs
//! tree of the one Grace-Blackwell tray layout peerpath synthesizes ([`super::layouts::gb300_tray`]:
//! GB300 GPUs, ConnectX-8 with Data Direct) and its `peerpath-nvml.json` holding what NVML
//! would say of each GPU's NVLink fabric registration: state `COMPLETED`, status `Success`,
//! the rack's cluster UUID and clique id 32766 (the clique a rack's default NVLink partition
//! reports: `…/32766` in kubernetes-sigs/dra-driver-nvidia-gpu PR 630's log of a GB200 rack).
//! A GB200 NVL72 rack has the same NVLink domain shape (18 trays × 4 GPUs behind one rack of
//! NVLink switches); what differs, the tray's PCIe, is not what this fleet is for: it feeds
//! the NVLink domain map ([`crate::analysis::nvdomain`]) and the scheduler exports built on it.

use super::{Entry, Spec, WriteOptions, build_entries, layouts, writer};
use crate::model::bdf::Bdf;
use crate::model::fact::Fact;
use crate::model::nvfabric::{ClusterUuid, FabricState, GpuFabric};
use crate::model::topology::NvLink;
use crate::sources::nvml_store::{NVML_NAME, NVML_SCHEMA, NvmlFacts};
use std::io;
use std::path::{Path, PathBuf};

/// Compute trays per NVL72 rack.
pub const TRAYS_PER_RACK: usize = 18;
/// GPUs per compute tray.
pub const GPUS_PER_TRAY: usize = 4;
/// The clique id of a rack's default NVLink partition.
pub const DEFAULT_CLIQUE: u32 = 32766;
/// NVLinks per Blackwell GPU, all to the rack's NVLink switches.
const LINKS_PER_GPU: u32 = 18;
/// NVLink version of Blackwell (NVLink 5).
const NVLINK_VERSION: u32 = 5;

/// Rack `rack`'s cluster UUID (synthesized: `5e17c0de-0000-4000-8000-` then the rack number
/// in twelve hexadecimal digits).
pub fn rack_uuid(rack: usize) -> ClusterUuid {
    let mut u = [
        0x5e, 0x17, 0xc0, 0xde, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0,
    ];
    let r = (rack as u64).to_be_bytes();
    u[10..16].copy_from_slice(&r[2..8]);
    ClusterUuid(u)
}

/// The host name of tray `tray` (1-based) of rack `rack` (1-based): `nvl72-r01-t07`.
pub fn tray_name(rack: usize, tray: usize) -> String {
    format!("nvl72-r{rack:02}-t{tray:02}")
}

/// What NVML would report of each GPU of a tray of rack `rack`: registered in the rack's
/// domain.
pub fn tray_fabric(rack: usize) -> Vec<(Bdf, Fact<GpuFabric>)> {
    let u = rack_uuid(rack);
    (0..GPUS_PER_TRAY)
        .map(|i| {
            (
                layouts::gb300_gpu(i),
                Fact::Known(GpuFabric {
                    state: FabricState::Completed,
                    status: Some("Success".into()),
                    clique_id: Some(DEFAULT_CLIQUE),
                    cluster_uuid: Some(u),
                    source: format!(
                        "synthesized NVML nvmlDeviceGetGpuFabricInfo: state COMPLETED, status Success, cliqueId {DEFAULT_CLIQUE}, clusterUuid {u}"
                    ),
                }),
            )
        })
        .collect()
}

/// The stored NVML facts of a tray ([`NVML_NAME`]): loaded, each GPU's 18 NVLinks to the
/// switches, and its fabric registration.
pub fn tray_nvml_facts(rack: usize) -> NvmlFacts {
    NvmlFacts {
        schema: NVML_SCHEMA.into(),
        loaded: true,
        message: format!(
            "synthesized NVL72 tray (rack {rack}): NVML facts written by `peerpath fixture`, not measured"
        ),
        nvlink_visible: true,
        nvlinks: (0..GPUS_PER_TRAY)
            .map(|i| NvLink {
                a: layouts::gb300_gpu(i),
                b: None,
                count: LINKS_PER_GPU,
                version: Some(NVLINK_VERSION),
            })
            .collect(),
        gpus: Vec::new(),
        warnings: Vec::new(),
        fabric: Some(tray_fabric(rack)),
    }
}

/// The spec of one tray: the GB300 tray layout named after the tray.
pub fn tray_spec(rack: usize, tray: usize) -> Spec {
    let mut s = layouts::gb300_tray();
    s.name = tray_name(rack, tray);
    s
}

/// Writes one tray's capture (`.tar.gz`, top folder the tray's name) to `out`.
pub fn write_tray(rack: usize, tray: usize, out: &mut dyn io::Write) -> io::Result<()> {
    let spec = tray_spec(rack, tray);
    let mut entries = build_entries(&spec, &WriteOptions::default())?;
    let facts = serde_json::to_vec_pretty(&tray_nvml_facts(rack)).map_err(io::Error::other)?;
    entries.push((PathBuf::from(NVML_NAME), Entry::File(facts)));
    writer::write_tar_gz(
        &writer::nodes(entries),
        &spec.name,
        out,
        flate2::Compression::fast(),
    )
}

/// Writes `racks` racks of [`TRAYS_PER_RACK`] tray captures into `dir` (created if needed), as
/// `nvl72-rRR-tTT.tar.gz`; returns their paths in rack, then tray order.
pub fn write_fleet(dir: &Path, racks: usize) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for r in 1..=racks {
        for t in 1..=TRAYS_PER_RACK {
            let p = dir.join(format!("{}.tar.gz", tray_name(r, t)));
            let mut f = io::BufWriter::new(std::fs::File::create(&p)?);
            write_tray(r, t, &mut f)?;
            io::Write::flush(&mut f)?;
            out.push(p);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn racks_have_distinct_uuids() {
        assert_eq!(
            rack_uuid(1).to_string(),
            "5e17c0de-0000-4000-8000-000000000001"
        );
        assert_ne!(rack_uuid(1), rack_uuid(2));
        assert_eq!(tray_name(2, 7), "nvl72-r02-t07");
    }
}
