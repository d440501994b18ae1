//! Each NVIDIA GPU's NVLink fabric registration ([`crate::model::nvfabric::GpuFabric`]):
//! asked of NVML on the live machine (`nvmlDeviceGetGpuFabricInfo`, which `nvml-wrapper` 0.13
//! does not wrap: called through the function table it loaded, below), or read from an
//! `nvidia-smi -q` text or `nvidia-smi -q -x` XML kept beside an input, and set on the GPU's
//! [`crate::model::Device::nvlink_fabric`].
//!
//! Unsafe code (the NVML call, and reading NVML's static error string) is held to a
//! `SAFETY:` comment on every block.
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use crate::model::bdf::Bdf;
use crate::model::fact::Fact;
use crate::model::nvfabric::{ClusterUuid, FabricState, GpuFabric};
use crate::model::{Device, DeviceKind, Topology};
use crate::parse::nvsmi_fabric::{self, RawFabric};
use nvml_wrapper_sys::bindings::nvmlGpuFabricInfo_t;

/// NVIDIA's PCI vendor ID.
const NVIDIA: u16 = 0x10de;
/// `NVML_SUCCESS`.
const NVML_SUCCESS: u32 = 0;
/// `NVML_ERROR_NOT_SUPPORTED`: the GPU has no fabric registration to report.
const NVML_ERROR_NOT_SUPPORTED: u32 = 3;

/// What NVML answered for one GPU, made into a reading: `rc` the call's return, `status_name`
/// NVML's words for `info.status` (`nvmlErrorString`: `Success`, `Insufficient Resources`), as
/// nvidia-smi prints them. `NVML_ERROR_NOT_SUPPORTED` is a fact (state `NOT_SUPPORTED`: no
/// fabric on this GPU); any other failure leaves the reading unknown with NVML's words.
pub fn from_nvml(
    rc: u32,
    rc_name: &str,
    info: &nvmlGpuFabricInfo_t,
    status_name: &str,
) -> Fact<GpuFabric> {
    const CALL: &str = "NVML nvmlDeviceGetGpuFabricInfo";
    if rc == NVML_ERROR_NOT_SUPPORTED {
        return Fact::Known(GpuFabric {
            state: FabricState::NotSupported,
            status: None,
            clique_id: None,
            cluster_uuid: None,
            source: format!("{CALL}: {rc_name} (the GPU reports no fabric registration)"),
        });
    }
    if rc != NVML_SUCCESS {
        return Fact::Unknown(format!("{CALL} failed: {rc_name} (return {rc})"));
    }
    let Some(state) = FabricState::from_nvml(info.state) else {
        return Fact::Unknown(format!(
            "{CALL}: state {} is not one NVML defines",
            info.state
        ));
    };
    let uuid = ClusterUuid(info.clusterUuid);
    Fact::Known(GpuFabric {
        state,
        status: Some(status_name.to_string()),
        clique_id: Some(info.cliqueId),
        cluster_uuid: Some(uuid),
        source: format!(
            "{CALL}: state {}, status {status_name}, cliqueId {}, clusterUuid {uuid}",
            state.name(),
            info.cliqueId
        ),
    })
}

/// NVML's words for a return code (`nvmlErrorString`), or the number when the library lacks
/// the function.
fn error_string(lib: &nvml_wrapper_sys::bindings::NvmlLib, code: u32) -> String {
    if lib.nvmlErrorString.is_err() {
        return format!("NVML return {code}");
    }
    // SAFETY: the symbol was loaded (checked above); nvmlErrorString takes any return code and
    // returns a pointer to a static NUL-terminated string owned by the library (or NULL).
    let p = unsafe { lib.nvmlErrorString(code) };
    if p.is_null() {
        return format!("NVML return {code}");
    }
    // SAFETY: `p` is non-null and points to NVML's static NUL-terminated string, which lives
    // as long as the library stays loaded (it does: `lib` is borrowed for this call).
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// Asks NVML for one GPU's fabric registration (live only).
pub fn read_live(d: &nvml_wrapper::Device) -> Fact<GpuFabric> {
    let lib = d.nvml().lib();
    if lib.nvmlDeviceGetGpuFabricInfo.is_err() {
        return Fact::Unknown(
            "the driver's NVML has no nvmlDeviceGetGpuFabricInfo (drivers before R530 report no NVLink fabric)"
                .into(),
        );
    }
    let mut info = nvmlGpuFabricInfo_t {
        clusterUuid: [0; 16],
        status: 0,
        cliqueId: 0,
        state: 0,
    };
    // SAFETY: the symbol was loaded (checked above); the handle is a live device of the `Nvml`
    // that `d` borrows (NVML stays initialised while `d` lives); `info` is a valid, writable
    // `nvmlGpuFabricInfo_t` that NVML fills and does not keep.
    let rc = unsafe { lib.nvmlDeviceGetGpuFabricInfo(d.handle(), &mut info) };
    from_nvml(
        rc,
        &error_string(lib, rc),
        &info,
        &error_string(lib, info.status),
    )
}

/// Sets each GPU's reading (by address) on the topology.
pub fn apply(topo: &mut Topology, readings: &[(Bdf, Fact<GpuFabric>)]) {
    apply_devices(&mut topo.devices, readings);
}

/// [`apply`] over a list of devices (a text source before assembly).
fn apply_devices(devices: &mut [Device], readings: &[(Bdf, Fact<GpuFabric>)]) {
    for (b, f) in readings {
        if let Some(d) = devices.iter_mut().find(|d| d.bdf == *b) {
            d.nvlink_fabric = Some(f.clone());
        }
    }
}

/// Marks every NVIDIA GPU not yet read as unknown with `why` (NVML did not load, a capture
/// that did not record the fabric).
pub fn mark_unread(topo: &mut Topology, why: &str) {
    for d in topo.devices.iter_mut().filter(|d| {
        d.kind == DeviceKind::Gpu && d.vendor_id == Some(NVIDIA) && d.nvlink_fabric.is_none()
    }) {
        d.nvlink_fabric = Some(Fact::Unknown(why.to_string()));
    }
}

/// The readings of the `Fabric` sections of an `nvidia-smi -q` text that sit in a `GPU …`
/// block (`shown` names the text in each reading's source).
fn nvsmi_text(text: &str, shown: &str) -> Vec<(Bdf, Fact<GpuFabric>)> {
    nvsmi_fabric::sections(text, shown)
        .into_iter()
        .filter_map(|s| Some((s.gpu?, s.fabric)))
        .collect()
}

/// Sets the readings of the `Fabric` sections of an `nvidia-smi -q` text (an operator's text,
/// a bug report's `nvidia-smi --query`) on the devices they name.
pub fn apply_nvsmi_text(devices: &mut [Device], text: &str) {
    apply_devices(devices, &nvsmi_text(text, "`nvidia-smi -q`"));
}

/// The readings of an `nvidia-smi -q -x` document: each `<gpu id="…">`'s `<fabric>` (its
/// `<state>`, `<status>`, `<cliqueId>`, `<clusterUuid>`), read as the text's section is.
pub fn nvsmi_xml(doc: &crate::sources::xmltree::Doc, shown: &str) -> Vec<(Bdf, Fact<GpuFabric>)> {
    let els = &doc.elements;
    let child = |i: usize, name: &str| {
        els[i]
            .children
            .iter()
            .copied()
            .find(|&c| els[c].name == name)
    };
    let text = |i: usize, name: &str| child(i, name).map(|c| els[c].text.trim().to_string());
    let mut out = Vec::new();
    for (i, e) in els.iter().enumerate() {
        if e.name != "gpu" || e.parent.is_none_or(|p| els[p].name != "nvidia_smi_log") {
            continue;
        }
        let Some(b) = e.attr("id").and_then(|s| s.parse::<Bdf>().ok()) else {
            continue;
        };
        let Some(f) = child(i, "fabric") else {
            continue;
        };
        let raw = RawFabric {
            state: text(f, "state"),
            status: text(f, "status"),
            clique_id: text(f, "cliqueId"),
            cluster_uuid: text(f, "clusterUuid"),
        };
        let place = format!("{shown} line {} <fabric>", els[f].line);
        out.push((b, nvsmi_fabric::from_raw(&raw, &place)));
    }
    out
}

/// File names of nvidia-smi's fabric-bearing output peerpath reads at the top of a capture or
/// snapshot directory: `nvidia-smi -q` text and `-q -x` XML.
pub const BESIDE_TEXT: &[&str] = &["nvidia-smi-q.txt", "nvidia-smi.q.txt"];
/// See [`BESIDE_TEXT`].
pub const BESIDE_XML: &[&str] = &["nvidia-smi-q.xml", "nvidia-smi.q.xml"];

/// Reads the fabric sections of an `nvidia-smi -q` text or `-q -x` XML kept at the top of a
/// capture root ([`BESIDE_TEXT`], [`BESIDE_XML`]) onto GPUs not already read by NVML. A present
/// file that is not readable is named in a warning, never taken as "no fabric".
pub fn apply_beside(fs: &dyn crate::sources::fsroot::FsRoot, topo: &mut Topology) {
    use crate::model::Warning;
    use std::path::Path;
    let unread = |t: &Topology, b: &Bdf| {
        t.devices
            .iter()
            .any(|d| d.bdf == *b && !matches!(d.nvlink_fabric, Some(Fact::Known(_))))
    };
    for name in BESIDE_TEXT.iter().chain(BESIDE_XML) {
        let p = Path::new(name);
        if fs.kind(p).is_none() {
            continue;
        }
        let shown = format!("{}/{name}", fs.describe());
        let bytes = match fs.read(p) {
            Ok(b) => b,
            Err(e) => {
                topo.warnings.push(Warning {
                    path: shown,
                    message: format!("not read: {e}; NVLink fabric not taken from it"),
                });
                continue;
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        let readings: Vec<(Bdf, Fact<GpuFabric>)> = if name.ends_with(".xml") {
            match crate::sources::xmltree::parse(&text) {
                Ok(doc) => nvsmi_xml(&doc, &shown),
                Err(e) => {
                    topo.warnings.push(Warning {
                        path: shown,
                        message: format!(
                            "not readable as XML ({e}); NVLink fabric not taken from it"
                        ),
                    });
                    continue;
                }
            }
        } else {
            nvsmi_text(&text, &shown)
        };
        let fresh: Vec<_> = readings
            .into_iter()
            .filter(|(b, _)| unread(topo, b))
            .collect();
        apply(topo, &fresh);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(state: u8, status: u32, clique: u32, first: u8) -> nvmlGpuFabricInfo_t {
        let mut u = [0u8; 16];
        u[0] = first;
        nvmlGpuFabricInfo_t {
            clusterUuid: u,
            status,
            cliqueId: clique,
            state,
        }
    }

    #[test]
    fn nvml_answers_become_readings() {
        let f = from_nvml(0, "Success", &info(3, 0, 7, 0xab), "Success");
        let g = f.known().unwrap();
        assert_eq!(g.state, FabricState::Completed);
        assert_eq!(g.clique_id, Some(7));
        assert_eq!(
            g.cluster_uuid.unwrap().to_string(),
            "ab000000-0000-0000-0000-000000000000"
        );
        assert!(
            g.source
                .contains("state COMPLETED, status Success, cliqueId 7")
        );
        // NOT_SUPPORTED from the call is a fact, not unknown.
        let n = from_nvml(3, "Not Supported", &info(0, 0, 0, 0), "Success");
        assert_eq!(n.known().unwrap().state, FabricState::NotSupported);
        // Another failure is unknown, with NVML's words.
        let u = from_nvml(999, "Unknown Error", &info(0, 0, 0, 0), "Success");
        assert!(u.reason().unwrap().contains("Unknown Error"));
        let bad = from_nvml(0, "Success", &info(9, 0, 0, 0), "Success");
        assert!(bad.reason().unwrap().contains("state 9"));
    }
}
