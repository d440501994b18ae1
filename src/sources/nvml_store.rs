//! NVML facts stored in a live capture (`peerpath-nvml.json`, schema [`NVML_SCHEMA`]): what
//! NVML added to the live scan (NVLinks, NVML index/UUID/P2P attributes, NVML warnings), read
//! back so that a snapshot gives the topology the live machine gave. `peerpath capture` writes
//! the file (src/capture/); this module only reads and applies it.

use super::fsroot::FsRoot;
use crate::model::bdf::Bdf;
use crate::model::device::{OsDevice, OsDeviceKind};
use crate::model::fact::Fact;
use crate::model::nvfabric::GpuFabric;
use crate::model::topology::{NvLink, Topology, Warning};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Name of the NVML facts file at the top of a capture tarball.
pub const NVML_NAME: &str = "peerpath-nvml.json";

/// Schema tag of the NVML facts stored in a live capture.
pub const NVML_SCHEMA: &str = "peerpath.nvml/1";

/// What NVML added to a live scan, as stored in [`NVML_NAME`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NvmlFacts {
    /// Always [`NVML_SCHEMA`].
    pub schema: String,
    /// Whether NVML loaded and answered.
    pub loaded: bool,
    /// What happened, in words.
    pub message: String,
    /// `Topology::nvlink_visible` after NVML.
    pub nvlink_visible: bool,
    /// `Topology::nvlinks` after NVML.
    pub nvlinks: Vec<NvLink>,
    /// Per NVIDIA GPU (by address), its `nvidia_gpu` OS devices after NVML.
    pub gpus: Vec<(Bdf, Vec<OsDevice>)>,
    /// Warnings NVML added (and the status warning when it failed).
    pub warnings: Vec<Warning>,
    /// Each NVIDIA GPU's NVLink fabric registration (`nvmlDeviceGetGpuFabricInfo`), or why it
    /// was not read; absent from captures made before peerpath recorded it (each GPU's is
    /// then unknown, "not captured").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricReadings>,
}

/// GPUs' fabric registrations by address ([`NvmlFacts::fabric`]).
pub type FabricReadings = Vec<(Bdf, Fact<GpuFabric>)>;

/// Why a GPU's fabric registration is unknown in a capture that did not record it.
pub const FABRIC_NOT_CAPTURED: &str = "not captured: this capture's peerpath-nvml.json predates NVLink fabric information (made by an older peerpath); capture again to record it";

/// Folds stored NVML facts into a topology read from a capture: the GPUs' `nvidia_gpu` OS
/// devices and the NVLinks are replaced when NVML had loaded; the warnings are added.
pub fn apply_nvml_facts(topo: &mut Topology, f: &NvmlFacts) {
    if f.loaded {
        for (bdf, ods) in &f.gpus {
            if let Some(d) = topo.devices.iter_mut().find(|d| d.bdf == *bdf) {
                d.os_devices.retain(|o| o.kind != OsDeviceKind::NvidiaGpu);
                d.os_devices.extend(ods.iter().cloned());
            }
        }
        topo.nvlinks = f.nvlinks.clone();
        topo.nvlink_visible = f.nvlink_visible;
    }
    match &f.fabric {
        Some(r) => super::nvml::fabric::apply(topo, r),
        None => super::nvml::fabric::mark_unread(topo, FABRIC_NOT_CAPTURED),
    }
    topo.warnings.extend(f.warnings.iter().cloned());
    // The stored OS devices carry the driver's record too: a GPU still unnamed gets its name.
    super::naming::name_from_driver(topo);
    topo.rebuild();
}

/// Reads [`NVML_NAME`] from a capture root, if present, and folds it in; then the NVLink
/// fabric of GPUs it did not give from an `nvidia-smi -q` text or XML kept at the root
/// ([`super::nvml::fabric::apply_beside`]). A present but unreadable facts file is an error
/// (the capture is damaged), never silently ignored.
pub fn apply_stored_nvml(fs: &dyn FsRoot, topo: &mut Topology) -> anyhow::Result<()> {
    apply_facts_file(fs, topo)?;
    super::nvml::fabric::apply_beside(fs, topo);
    Ok(())
}

/// The facts file part of [`apply_stored_nvml`].
fn apply_facts_file(fs: &dyn FsRoot, topo: &mut Topology) -> anyhow::Result<()> {
    let p = Path::new(NVML_NAME);
    if fs.kind(p).is_none() {
        return Ok(());
    }
    let b = fs
        .read(p)
        .map_err(|e| anyhow::anyhow!("{}: {NVML_NAME}: {e}", fs.describe()))?;
    let f: NvmlFacts = serde_json::from_slice(&b)
        .map_err(|e| anyhow::anyhow!("{}: {NVML_NAME} is not {NVML_SCHEMA}: {e}", fs.describe()))?;
    if f.schema != NVML_SCHEMA {
        anyhow::bail!(
            "{}: {NVML_NAME} has schema {:?}, expected {NVML_SCHEMA:?}",
            fs.describe(),
            f.schema
        );
    }
    apply_nvml_facts(topo, &f);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::topology::{MachineInfo, SourceInfo};
    use crate::sources::assemble::{RawTopology, assemble};
    use crate::sources::fsroot::{MemNode, MemRoot};

    fn empty() -> Topology {
        let src = SourceInfo {
            kind: "snapshot".into(),
            path: "t".into(),
            limitations: vec![],
        };
        assemble(RawTopology::new(src, MachineInfo::default()), None)
    }

    #[test]
    fn stored_facts_are_checked() {
        let mut t = empty();
        // No file: nothing changes.
        assert!(apply_stored_nvml(&MemRoot::new("cap"), &mut t).is_ok());
        let mut root = MemRoot::new("cap");
        root.insert(NVML_NAME.into(), MemNode::File(b"{not json".to_vec()));
        assert!(apply_stored_nvml(&root, &mut t).is_err());
        let f = NvmlFacts {
            schema: "peerpath.nvml/9".into(),
            loaded: false,
            message: String::new(),
            nvlink_visible: false,
            nvlinks: vec![],
            gpus: vec![],
            warnings: vec![],
            fabric: None,
        };
        let mut root = MemRoot::new("cap");
        root.insert(
            NVML_NAME.into(),
            MemNode::File(serde_json::to_vec(&f).unwrap()),
        );
        let e = apply_stored_nvml(&root, &mut t).unwrap_err();
        assert!(e.to_string().contains("peerpath.nvml/9"), "{e}");
        // A failed NVML load keeps its warning and changes nothing else.
        let f = NvmlFacts {
            schema: NVML_SCHEMA.into(),
            warnings: vec![Warning {
                path: "libnvidia-ml.so.1".into(),
                message: "NVLink was not visible".into(),
            }],
            ..f
        };
        apply_nvml_facts(&mut t, &f);
        assert_eq!(t.warnings.len(), 1);
        assert!(!t.nvlink_visible);
    }
}
