//! The `Fabric` section of `nvidia-smi -q` (and the same four values of `nvidia-smi -q -x`'s
//! `<fabric>`): each GPU's NVLink fabric registration ([`crate::model::nvfabric::GpuFabric`]).
//!
//! nvidia-smi prints it inside each `GPU 00000000:BB:DD.F` block, from NVML's
//! `nvmlDeviceGetGpuFabricInfo(V)` (real GB200 output, kubernetes-sigs/dra-driver-nvidia-gpu
//! issue 626):
//!
//! ```text
//!     Fabric
//!         State                             : Completed
//!         Status                            : Success
//!         CliqueId                          : 2
//!         ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278
//!         Health
//! ```
//!
//! and `N/A` in all four where NVML gave nothing (an H200 VM, `fixtures/real/`). Pure: text
//! in, one reading per `Fabric` section out; a value that is neither `N/A` nor of its form
//! makes that GPU's reading unknown with the raw value, never a guess.

use crate::model::bdf::Bdf;
use crate::model::fact::Fact;
use crate::model::nvfabric::{ClusterUuid, FabricState, GpuFabric};

/// One `Fabric` section of the text.
#[derive(Debug, Clone, PartialEq)]
pub struct FabricSection {
    /// The address of the `GPU …` block it sits in; `None` for an excerpt without one (a
    /// `grep -C3` of the text).
    pub gpu: Option<Bdf>,
    /// 1-based line of the `Fabric` heading.
    pub line: usize,
    /// What it says.
    pub fabric: Fact<GpuFabric>,
}

/// The four raw values of a fabric section (`State`, `Status`, `CliqueId`, `ClusterUUID`),
/// as printed; `None` when not printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawFabric {
    /// `State` / `<state>`.
    pub state: Option<String>,
    /// `Status` / `<status>`.
    pub status: Option<String>,
    /// `CliqueId` / `<cliqueId>`.
    pub clique_id: Option<String>,
    /// `ClusterUUID` / `<clusterUuid>`.
    pub cluster_uuid: Option<String>,
}

/// Reads the four printed values into a registration; `source` names where they were read.
/// `N/A` is "not given" for the status, clique and UUID and [`FabricState::NotAvailable`] for
/// the state; a value of neither form makes the whole reading unknown, naming it.
pub fn from_raw(raw: &RawFabric, source: &str) -> Fact<GpuFabric> {
    let given = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty() && *v != "N/A")
            .map(str::to_string)
    };
    let Some(state_text) = raw.state.as_deref() else {
        return Fact::Unknown(format!("{source}: no fabric State printed"));
    };
    let Some(state) = FabricState::from_nvsmi(state_text) else {
        return Fact::Unknown(format!(
            "{source}: fabric State {state_text:?} is not one nvidia-smi prints"
        ));
    };
    let clique_id = match given(&raw.clique_id) {
        None => None,
        Some(c) => match c.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                return Fact::Unknown(format!(
                    "{source}: CliqueId {c:?} is not a 32-bit unsigned number"
                ));
            }
        },
    };
    let cluster_uuid = match given(&raw.cluster_uuid) {
        None => None,
        Some(u) => match u.parse::<ClusterUuid>() {
            Ok(u) => Some(u),
            Err(e) => return Fact::Unknown(format!("{source}: ClusterUUID {e}")),
        },
    };
    let shown = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .unwrap_or("(absent)")
            .to_string()
    };
    Fact::Known(GpuFabric {
        state,
        status: given(&raw.status),
        clique_id,
        cluster_uuid,
        source: format!(
            "{source}: State {}, Status {}, CliqueId {}, ClusterUUID {}",
            state_text.trim(),
            shown(&raw.status),
            shown(&raw.clique_id),
            shown(&raw.cluster_uuid)
        ),
    })
}

/// Leading spaces of a line.
fn indent(l: &str) -> usize {
    l.len() - l.trim_start_matches(' ').len()
}

/// Every `Fabric` section of `nvidia-smi -q` text, in text order; `shown` names the text in
/// each reading's source (`nvidia-smi -q line N` when empty).
pub fn sections(text: &str, shown: &str) -> Vec<FabricSection> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut gpu: Option<Bdf> = None;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end();
        if let Some(b) = l
            .strip_prefix("GPU ")
            .and_then(|r| r.trim().parse::<Bdf>().ok())
        {
            gpu = Some(b);
        }
        if l.trim() != "Fabric" {
            i += 1;
            continue;
        }
        let depth = indent(l);
        let mut raw = RawFabric::default();
        let mut sub: Option<usize> = None;
        let mut j = i + 1;
        while let Some(n) = lines.get(j) {
            let d = indent(n);
            if n.trim().is_empty() || d <= depth {
                break;
            }
            // Only the section's own level: `Health`'s `Summary` is not the state.
            let level = *sub.get_or_insert(d);
            if d == level
                && let Some((k, v)) = n.split_once(':')
            {
                let v = Some(v.trim().to_string());
                match k.trim() {
                    "State" => raw.state = v,
                    "Status" => raw.status = v,
                    "CliqueId" => raw.clique_id = v,
                    "ClusterUUID" => raw.cluster_uuid = v,
                    _ => {}
                }
            }
            j += 1;
        }
        let place = if shown.is_empty() {
            format!("nvidia-smi -q line {}", i + 1)
        } else {
            format!("{shown} line {}", i + 1)
        };
        out.push(FabricSection {
            gpu,
            line: i + 1,
            fabric: from_raw(&raw, &place),
        });
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn na_section_is_read_as_not_available() {
        let t = "GPU 00000000:00:06.0\n    GPU Fabric GUID : N/A\n    Fabric\n        State : N/A\n        Status : N/A\n        CliqueId : N/A\n        ClusterUUID : N/A\n        Health\n            Summary : N/A\n    Processes : None\n";
        let s = sections(t, "");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].gpu, Some("0000:00:06.0".parse().unwrap()));
        let f = s[0].fabric.known().unwrap();
        assert_eq!(f.state, FabricState::NotAvailable);
        assert_eq!((f.clique_id, f.cluster_uuid), (None, None));
        assert!(
            f.source.starts_with("nvidia-smi -q line 3: State N/A"),
            "{}",
            f.source
        );
    }

    #[test]
    fn garbage_values_make_the_reading_unknown() {
        let raw = RawFabric {
            state: Some("Completed".into()),
            status: Some("Success".into()),
            clique_id: Some("-1".into()),
            cluster_uuid: Some("dc6e40c4-d722-4357-9ba6-5291dd461278".into()),
        };
        assert!(from_raw(&raw, "x").reason().unwrap().contains("\"-1\""));
        let raw = RawFabric {
            clique_id: Some("2".into()),
            cluster_uuid: Some("not-a-uuid".into()),
            ..raw
        };
        assert!(from_raw(&raw, "x").reason().unwrap().contains("not-a-uuid"));
        let raw = RawFabric {
            state: Some("Registered".into()),
            ..RawFabric::default()
        };
        assert!(from_raw(&raw, "x").reason().unwrap().contains("Registered"));
        assert!(from_raw(&RawFabric::default(), "x").reason().is_some());
    }
}
