//! Slurm `gres.conf` lines for the node's GPUs (gres.conf(5)).
//!
//! Data: GPUs from the topology (class 0x03 from NVIDIA/AMD/Intel, sorted by PCI address, which
//! is the NVML / `AutoDetect` index order), `/dev/nvidiaN` from the NVIDIA driver's
//! `/proc/driver/nvidia/gpus/<bdf>/information` "Device Minor" line, `Cores=` from each GPU's
//! `local_cpulist` converted to Slurm's abstract core ids by [`CoreMap`], `Links=` from the
//! NVLink row [`nvlink::nvlink_row`] computes from the topology's NVLinks. Conventions:
//! shared/reference/ecosystem.md §1.1.
//!
//! `Links` is Slurm's NVLink count matrix row: position k is the number of links to GPU k,
//! `-1` for the GPU itself, `0` for none. Slurm's own `AutoDetect=nvml` counts only links whose
//! far end is another GPU, so behind NVSwitches it writes 0 everywhere; [`NvSwitchLinks`]
//! chooses between that and the fabric count.

use super::escape::one_line;
use crate::analysis::cores::CoreMap;
use crate::analysis::nvlink::{self, NvLinkCell};
use crate::model::cpulist;
use crate::model::{Device, DeviceKind, OsDeviceKind, Topology};
use std::fmt::Write;

/// The `Links=` policy for NVSwitch pairs, decided in [`nvlink`]; named here too because the
/// options below take it.
pub use crate::analysis::nvlink::NvSwitchLinks;

/// Options for the gres.conf export.
#[derive(Debug, Clone, Default)]
pub struct GresOptions {
    /// `NodeName=` to put first on each line (none: lines apply to the node reading them).
    pub node_name: Option<String>,
    /// `Type=` for the GPUs (e.g. `h100`); none: omitted.
    pub gpu_type: Option<String>,
    /// NVSwitch policy for `Links=`.
    pub nvswitch: NvSwitchLinks,
}

/// GPUs in Slurm's index order (PCI address order).
pub fn gpus(t: &Topology) -> Vec<&Device> {
    t.of_kind(DeviceKind::Gpu).collect()
}

/// The `Device Minor` the NVIDIA driver reports for a GPU, if captured.
pub fn nvidia_minor(d: &Device) -> Option<u32> {
    d.os_devices
        .iter()
        .filter(|o| o.kind == OsDeviceKind::NvidiaGpu)
        .flat_map(|o| o.attrs.iter())
        .find(|(k, _)| k == "Device Minor")
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// Renders gres.conf text: a header, `AutoDetect=off`, one `Name=gpu` line per GPU, and one
/// comment per RDMA NIC with its `Cores=` (Slurm has no NIC autodetection; the uverbs device
/// file is not captured by the scan, so the line is left for the operator to complete).
pub fn render(t: &Topology, cores: &CoreMap, o: &GresOptions) -> String {
    let mut s = String::new();
    let from = format!("{} ({})", t.source.path, t.source.kind);
    let _ = writeln!(
        s,
        "# gres.conf written by peerpath from {}",
        one_line(&from)
    );
    let _ = writeln!(
        s,
        "# Cores= are Slurm abstract core ids (core 0 = first core of the first socket, SMT siblings counted once), not OS CPU numbers."
    );
    let gs = gpus(t);
    let amd = !gs.is_empty() && gs.iter().all(|g| crate::model::amd::is_amd_gpu(g));
    if !amd {
        let _ = writeln!(
            s,
            "# Links= counts NVLinks to GPU k in PCI bus order (-1 = self, 0 = none); NVSwitch pairs: {}.",
            match o.nvswitch {
                NvSwitchLinks::Slurm => "0, as AutoDetect=nvml writes",
                NvSwitchLinks::Fabric => "the fabric link count",
            }
        );
    }
    if !cores.smt_known() {
        let _ = writeln!(
            s,
            "# Cores= omitted: /proc/cpuinfo was not captured, so Slurm core ids cannot be derived."
        );
    }
    if amd {
        return render_amd(t, cores, o, &gs, s);
    }
    if !t.nvlink_visible {
        let _ = writeln!(
            s,
            "# Links= omitted: NVLink state was not visible to this scan (no NVML); Slurm reads it with AutoDetect=nvml."
        );
    }
    if gs.is_empty() {
        let _ = writeln!(s, "# no GPU found: nothing to declare");
        return s;
    }
    let _ = writeln!(s, "AutoDetect=off");
    let prefix = node_prefix(o);
    for (i, g) in gs.iter().enumerate() {
        let (minor, minor_note) = match nvidia_minor(g) {
            Some(m) => (m, None),
            None => (
                i as u32,
                Some(
                    "device minor not captured; /dev/nvidiaN assumed to follow PCI order — check `nvidia-smi -q | grep Minor`",
                ),
            ),
        };
        let mut line = gpu_line(&prefix, o, &format!("/dev/nvidia{minor}"), g, cores);
        if let Some(row) = nvlink::nvlink_row(t, &gs, g, o.nvswitch) {
            let cells: Vec<String> = row
                .iter()
                .map(|c| match c {
                    NvLinkCell::Itself => "-1".to_string(),
                    NvLinkCell::Links(n) => n.to_string(),
                })
                .collect();
            let _ = write!(line, " Links={}", cells.join(","));
        }
        let _ = write!(s, "# GPU {i}: {}", g.bdf);
        if let Some(n) = minor_note {
            let _ = write!(s, " ({n})");
        }
        let _ = writeln!(s, "\n{line}");
    }
    nic_lines(t, cores, &prefix, &mut s);
    s
}

/// The AMD GPUs' lines as Slurm's `AutoDetect=rsmi` (`src/plugins/gpu/rsmi/gpu_rsmi.c`) would
/// declare them: `File=/dev/dri/renderD<minor>` from the GPU's KFD `drm_render_minor` (rsmi's
/// render minor; `128 + index` assumed, with a note, when not captured), `Links=` that record
/// only the PCI order (`-1` for the GPU itself, `0` elsewhere: rsmi counts no xGMI links).
fn render_amd(
    t: &Topology,
    cores: &CoreMap,
    o: &GresOptions,
    gs: &[&Device],
    mut s: String,
) -> String {
    let _ = writeln!(
        s,
        "# AMD GPUs: File= is the DRM render node AutoDetect=rsmi uses (/dev/dri/renderD<minor>, KFD drm_render_minor); Links= as AutoDetect=rsmi writes them (PCI order only; xGMI links are not counted). Slurm exports ROCR_VISIBLE_DEVICES to jobs."
    );
    let _ = writeln!(s, "AutoDetect=off");
    let prefix = node_prefix(o);
    for (i, g) in gs.iter().enumerate() {
        let minor = g.amd.as_ref().and_then(|a| a.drm_render_minor);
        let file = format!("/dev/dri/renderD{}", minor.unwrap_or(128 + i as u32));
        let mut line = gpu_line(&prefix, o, &file, g, cores);
        let links: Vec<&str> = (0..gs.len())
            .map(|k| if k == i { "-1" } else { "0" })
            .collect();
        let _ = write!(line, " Links={}", links.join(","));
        let _ = write!(s, "# GPU {i}: {}", g.bdf);
        if minor.is_none() {
            let _ = write!(
                s,
                " (render minor not captured; renderD{} assumed from PCI order — check `ls -l /sys/class/drm/` or `rocm-smi --showbus`)",
                128 + i
            );
        }
        let _ = writeln!(s, "\n{line}");
    }
    nic_lines(t, cores, &prefix, &mut s);
    s
}

/// `NodeName=<name> ` when a node name is given, else nothing.
fn node_prefix(o: &GresOptions) -> String {
    o.node_name
        .as_ref()
        .map(|n| format!("NodeName={n} "))
        .unwrap_or_default()
}

/// A GPU's `Name=gpu` line up to its `Links=`: the type, the device file and the GPU's
/// `Cores=` (when its local CPUs map to Slurm core ids).
fn gpu_line(prefix: &str, o: &GresOptions, file: &str, g: &Device, cores: &CoreMap) -> String {
    let mut line = format!("{prefix}Name=gpu");
    if let Some(ty) = &o.gpu_type {
        let _ = write!(line, " Type={ty}");
    }
    let _ = write!(line, " File={file}");
    if let Some(ids) = g.local_cpus.as_deref().and_then(|c| cores.slurm_ids_for(c))
        && !ids.is_empty()
    {
        let _ = write!(line, " Cores={}", cpulist::format_list(&ids));
    }
    line
}

/// One comment per RDMA NIC with its `Cores=`.
fn nic_lines(t: &Topology, cores: &CoreMap, prefix: &str, s: &mut String) {
    for n in t.of_kind(DeviceKind::Nic) {
        let Some(rdma) = n.rdma_names().next() else {
            continue;
        };
        let core_ids = n.local_cpus.as_deref().and_then(|c| cores.slurm_ids_for(c));
        let comment = format!(
            "{prefix}Name=nic File=/dev/infiniband/uverbs? {}# {rdma} {} (complete File= from /sys/class/infiniband/{rdma}/device/infiniband_verbs/)",
            core_ids
                .filter(|v| !v.is_empty())
                .map(|v| format!("Cores={} ", cpulist::format_list(&v)))
                .unwrap_or_default(),
            n.bdf
        );
        let _ = writeln!(s, "# {}", one_line(&comment));
    }
}
