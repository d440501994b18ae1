//! A GPU's registration in a multi-node NVLink fabric, as NVML's `nvmlDeviceGetGpuFabricInfo`
//! (`nvmlGpuFabricInfo_t`: `clusterUuid[16]`, `status`, `cliqueId`, `state`) reports it, live
//! or through `nvidia-smi -q` (its `Fabric` section: `State`, `Status`, `CliqueId`,
//! `ClusterUUID`) and `nvidia-smi -q -x` (`<fabric><state>…<clusterUuid>`). The GPUs of one
//! NVLink domain (a GB200 NVL72 rack's default partition) share the cluster UUID and the clique
//! id; NCCL compares both (`ncclTopoCheckMNNVL`) and topograph names the domain
//! `ClusterUUID.CliqueId`. Which GPUs make a domain is judged in
//! [`crate::analysis::nvdomain`]; this module only holds what a source read.

use serde::{Deserialize, Serialize};
use std::fmt;

/// NVML's `nvmlGpuFabricState_t` (`NVML_GPU_FABRIC_STATE_*`), or nvidia-smi's `N/A`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FabricState {
    /// `NVML_GPU_FABRIC_STATE_NOT_SUPPORTED` (0), nvidia-smi `Not Supported`: the GPU takes
    /// part in no NVLink fabric.
    NotSupported,
    /// `NVML_GPU_FABRIC_STATE_NOT_STARTED` (1): registration with the fabric manager not begun.
    NotStarted,
    /// `NVML_GPU_FABRIC_STATE_IN_PROGRESS` (2): registration under way.
    InProgress,
    /// `NVML_GPU_FABRIC_STATE_COMPLETED` (3): registration done; `status` says whether it
    /// succeeded.
    Completed,
    /// nvidia-smi printed `N/A`: NVML gave no fabric information for the GPU (it prints `N/A`
    /// both when the query is refused as unsupported and when it fails).
    NotAvailable,
}

impl FabricState {
    /// The state from NVML's number; `None` for a number NVML does not define.
    pub fn from_nvml(v: u8) -> Option<Self> {
        Some(match v {
            0 => FabricState::NotSupported,
            1 => FabricState::NotStarted,
            2 => FabricState::InProgress,
            3 => FabricState::Completed,
            _ => return None,
        })
    }

    /// The state as nvidia-smi prints it (`Not Supported`, `Not Started`, `In Progress`,
    /// `Completed`, `N/A`); `None` for any other word.
    pub fn from_nvsmi(s: &str) -> Option<Self> {
        Some(match s.trim() {
            "Not Supported" => FabricState::NotSupported,
            "Not Started" => FabricState::NotStarted,
            "In Progress" => FabricState::InProgress,
            "Completed" => FabricState::Completed,
            "N/A" => FabricState::NotAvailable,
            _ => return None,
        })
    }

    /// NVML's name of the state (`COMPLETED`), or `N/A`.
    pub fn name(self) -> &'static str {
        match self {
            FabricState::NotSupported => "NOT_SUPPORTED",
            FabricState::NotStarted => "NOT_STARTED",
            FabricState::InProgress => "IN_PROGRESS",
            FabricState::Completed => "COMPLETED",
            FabricState::NotAvailable => "N/A",
        }
    }
}

/// A fabric's cluster UUID (`clusterUuid`, 16 bytes), written as nvidia-smi writes it:
/// `dc6e40c4-d722-4357-9ba6-5291dd461278`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterUuid(pub [u8; 16]);

impl ClusterUuid {
    /// Whether every byte is zero (NVML reports this where the GPU joined no multi-node
    /// fabric, e.g. an HGX H100 with a completed state).
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }
}

impl fmt::Display for ClusterUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for ClusterUuid {
    type Err = String;
    /// Reads `8-4-4-4-12` hexadecimal digits (either case); anything else is refused.
    fn from_str(s: &str) -> Result<Self, String> {
        let groups: Vec<&str> = s.trim().split('-').collect();
        let shape = groups.iter().map(|g| g.len()).collect::<Vec<_>>();
        if shape != [8, 4, 4, 4, 12] {
            return Err(format!(
                "{s:?} is not a UUID (8-4-4-4-12 hexadecimal digits)"
            ));
        }
        let hex: String = groups.concat();
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| format!("{s:?} is not a UUID (a digit is not hexadecimal)"))?;
        }
        Ok(ClusterUuid(out))
    }
}

impl Serialize for ClusterUuid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ClusterUuid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One NVLink domain: the cluster UUID and clique id its GPUs share, named as topograph and the
/// GPU operator's `nvidia.com/gpu.clique` label name it, `ClusterUUID.CliqueId`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DomainId {
    /// `clusterUuid`.
    pub cluster_uuid: ClusterUuid,
    /// `cliqueId`.
    pub clique_id: u32,
}

impl fmt::Display for DomainId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.cluster_uuid, self.clique_id)
    }
}

/// What a source read of one GPU's fabric registration. A field the source printed as `N/A`
/// or did not print is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuFabric {
    /// The registration state.
    pub state: FabricState,
    /// The registration's status as NVML names it (`Success`, `Insufficient Resources`);
    /// meaningful only when the state is [`FabricState::Completed`].
    pub status: Option<String>,
    /// `cliqueId`.
    pub clique_id: Option<u32>,
    /// `clusterUuid`.
    pub cluster_uuid: Option<ClusterUuid>,
    /// Where it was read, with the raw values (`NVML nvmlDeviceGetGpuFabricInfo`,
    /// `nvidia-smi -q line 241: State N/A`).
    pub source: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_reads_and_writes_as_nvidia_smi_prints_it() {
        let s = "dc6e40c4-d722-4357-9ba6-5291dd461278";
        let u: ClusterUuid = s.parse().unwrap();
        assert_eq!(u.to_string(), s);
        assert_eq!(
            "DC6E40C4-D722-4357-9BA6-5291DD461278"
                .parse::<ClusterUuid>()
                .unwrap(),
            u
        );
        assert!(!u.is_zero());
        assert!(
            "00000000-0000-0000-0000-000000000000"
                .parse::<ClusterUuid>()
                .unwrap()
                .is_zero()
        );
        for bad in [
            "N/A",
            "dc6e40c4d7224357",
            "dc6e40c4-d722-4357-9ba6-5291dd46127g",
            "",
        ] {
            assert!(bad.parse::<ClusterUuid>().is_err(), "{bad}");
        }
        let d = DomainId {
            cluster_uuid: u,
            clique_id: 2,
        };
        assert_eq!(d.to_string(), format!("{s}.2"));
        let j = serde_json::to_string(&d).unwrap();
        assert!(j.contains(s), "{j}");
        assert_eq!(serde_json::from_str::<DomainId>(&j).unwrap(), d);
    }

    #[test]
    fn states_read_from_both_spellings() {
        assert_eq!(FabricState::from_nvml(3), Some(FabricState::Completed));
        assert_eq!(FabricState::from_nvml(9), None);
        assert_eq!(
            FabricState::from_nvsmi("In Progress"),
            Some(FabricState::InProgress)
        );
        assert_eq!(
            FabricState::from_nvsmi("N/A"),
            Some(FabricState::NotAvailable)
        );
        assert_eq!(FabricState::from_nvsmi("Done"), None);
    }
}
