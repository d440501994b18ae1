//! What sysfs shows of a GPU's NVLink-C2C link on a Grace system, and what it does not.
//!
//! sysfs has no C2C link: the GPU's PCI function hangs under a Grace root port (`10de:22b1`,
//! `22b2`, `22b8`; rdma_topo's `grace_rp`), directly (GH200, GB200) or through a ConnectX-8
//! switch (GB300), and its memory is onlined as a NUMA node of its own, which the NVIDIA driver
//! names in `/proc/driver/nvidia/gpus/<bdf>/numa_status` (`Node: N`). Those two facts together
//! say the GPU is coherently attached to the Grace CPU over C2C; how many links are up, and at
//! what bandwidth, only NVML says (NCCL reads the same NVML field values to write `<c2c>`).

use crate::model::Bdf;
use crate::model::device::{C2cLink, Device};
use crate::model::parts::{self, Part};
use std::collections::HashMap;

/// Marks every NVIDIA GPU that sits under a Grace/Vera root port and whose memory is a NUMA
/// node as C2C-attached, with the link count and state unknown. A GPU that already has C2C
/// facts (NVML) keeps them.
pub fn infer(devices: &mut [Device]) {
    let parent: HashMap<Bdf, Option<Bdf>> = devices.iter().map(|d| (d.bdf, d.parent)).collect();
    let by_bdf: HashMap<Bdf, usize> = devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.bdf, i))
        .collect();
    let mut marks = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        if d.c2c.is_some() || parts::part_of(d) != Some(Part::NvidiaGpu) {
            continue;
        }
        // The GPU memory NUMA node the driver reported, when it is one.
        let Some(node) = d.gpu_memory_numa_node().filter(|&n| n < 255) else {
            continue;
        };
        // The topmost device above it: the root port.
        let mut top = d.bdf;
        for _ in 0..64 {
            match parent.get(&top).copied().flatten() {
                Some(p) => top = p,
                None => break,
            }
        }
        let Some(rp) = by_bdf.get(&top).map(|&j| &devices[j]) else {
            continue;
        };
        if !parts::part_of(rp).is_some_and(Part::is_nvidia_root_port) {
            continue;
        }
        marks.push((
            i,
            format!(
                "inferred from sysfs: GPU under {} root port {} ({:04x}:{:04x}) with its memory as NUMA node {node} (numa_status); link count and state need NVML",
                if parts::part_of(rp) == Some(Part::GraceRootPort) { "Grace" } else { "Vera" },
                rp.bdf,
                rp.vendor_id.unwrap_or(0),
                rp.device_id.unwrap_or(0)
            ),
        ));
    }
    for (i, source) in marks {
        devices[i].c2c = Some(C2cLink {
            links_up: None,
            links_total: None,
            link_mbytes_per_s: None,
            source,
        });
    }
}
