//! GPUDirect Storage's side of the pairing: which NVMe drives hold data (not only the
//! operating system), what is mounted on each, and each GPU's nearest data drive — chosen the
//! way [`super::pairing`] gives a GPU its NIC: the best nvidia-smi path label first (PIX, PXB,
//! PHB, NODE, SYS), then the drive fewest GPUs already read from, then address order.
//!
//! Data: NVMe functions of the [`Topology`] (class 0x0108), their controllers
//! (`/sys/class/nvme`), the mounts of [`crate::model::storage`] tied to them through
//! `/sys/dev/block`, and the GPU–drive labels of the [`Classifier`].

use super::classify::{Classifier, Label};
use crate::model::storage::Mount;
use crate::model::{Bdf, Device, DeviceKind, OsDeviceKind, Topology};
use serde::Serialize;

/// Mount points of the operating system: a drive holding only these is no data drive.
pub fn is_system_mount(mount_point: &str) -> bool {
    mount_point == "/"
        || mount_point == "/boot"
        || mount_point.starts_with("/boot/")
        || mount_point == "[SWAP]"
}

/// The mounts on a drive (through partitions, md RAID, device-mapper), in mount-table order;
/// empty when the mount table is unknown.
pub fn mounts_on<'t>(topo: &'t Topology, drive: &Bdf) -> Vec<&'t Mount> {
    topo.machine
        .storage
        .mounts
        .known()
        .map(|t| {
            t.mounts
                .iter()
                .filter(|m| m.drives.contains(drive))
                .collect()
        })
        .unwrap_or_default()
}

/// The NVMe controller name of a drive (`nvme0`), from `/sys/class/nvme`.
pub fn controller(d: &Device) -> Option<&str> {
    d.os_devices
        .iter()
        .find(|o| o.kind == OsDeviceKind::Nvme)
        .map(|o| o.name.as_str())
}

/// The NVMe drives GDS would read from: the NVMe functions (SR-IOV VFs excluded) holding a
/// mounted file system other than the operating system's (`/`, `/boot…`). With the mount
/// table unknown, every NVMe function.
pub fn data_drives(topo: &Topology) -> Vec<&Device> {
    let known = topo.machine.storage.mounts.known().is_some();
    topo.of_kind(DeviceKind::Nvme)
        .filter(|d| d.physfn.is_none())
        .filter(|d| {
            !known
                || mounts_on(topo, &d.bdf)
                    .iter()
                    .any(|m| !is_system_mount(&m.mount_point))
        })
        .collect()
}

/// A GPU's nearest data drive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriveChoice {
    /// The GPU.
    pub gpu: Bdf,
    /// The drive's PCI function.
    pub drive: Bdf,
    /// Its controller (`nvme0`), when `/sys/class/nvme` names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvme: Option<String>,
    /// The GPU–drive path label.
    pub label: Label,
    /// Mount points on the drive (`/raid`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<String>,
}

impl DriveChoice {
    /// GPU `gpu` with drive `d` at `label`: the drive's controller and mount points read from
    /// `topo`.
    fn new(topo: &Topology, gpu: Bdf, d: &Device, label: Label) -> Self {
        DriveChoice {
            gpu,
            drive: d.bdf,
            nvme: controller(d).map(str::to_string),
            label,
            mounts: mounts_on(topo, &d.bdf)
                .iter()
                .map(|m| m.mount_point.clone())
                .collect(),
        }
    }
}

/// Each GPU's nearest data drive, in the order of `gpus` (`None`: no data drive, or no label
/// to any). Ties in label go to the drive fewest GPUs already have, then to the lower address.
pub fn assign_drives(cl: &Classifier, gpus: &[Bdf]) -> Vec<Option<DriveChoice>> {
    let topo = cl.topo();
    let drives = data_drives(topo);
    let mut uses = vec![0usize; drives.len()];
    gpus.iter()
        .map(|g| {
            let best = drives
                .iter()
                .enumerate()
                .filter_map(|(k, d)| cl.label_of(g, &d.bdf).map(|(l, _)| (l, k)))
                .min_by_key(|&(l, k)| (l.rank(), uses[k], drives[k].bdf))?;
            let (label, k) = best;
            uses[k] += 1;
            Some(DriveChoice::new(topo, *g, drives[k], label))
        })
        .collect()
}

/// Every GPU–data-drive pair with a label: `(GPU index in gpus, the pair, whether the drive
/// is that GPU's nearest by [`assign_drives`])`, GPUs in order, drives in address order.
pub fn gpu_drive_pairs(cl: &Classifier, gpus: &[Bdf]) -> Vec<(usize, DriveChoice, bool)> {
    let topo = cl.topo();
    let nearest = assign_drives(cl, gpus);
    let drives = data_drives(topo);
    let mut out = Vec::new();
    for (g, gpu) in gpus.iter().enumerate() {
        for d in &drives {
            let Some((label, _)) = cl.label_of(gpu, &d.bdf) else {
                continue;
            };
            let is_nearest = nearest[g].as_ref().is_some_and(|c| c.drive == d.bdf);
            out.push((g, DriveChoice::new(topo, *gpu, d, label), is_nearest));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::ClassifyOptions;
    use crate::analysis::testkit::TopoBuilder;

    #[test]
    fn nearest_drive_then_spread() {
        // Two GPUs under one switch with one drive, a second drive on its own root port: both
        // GPUs prefer the switch drive (PIX) to the root-port drive (PHB).
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.switch(
            "0000:10:01.0",
            "0000:11:00.0",
            &["0000:12:00.0", "0000:12:01.0", "0000:12:02.0"],
            Some(0),
        );
        let g0 = b.gpu("0000:13:00.0", Some("0000:12:00.0"), Some(0));
        let g1 = b.gpu("0000:14:00.0", Some("0000:12:01.0"), Some(0));
        let n0 = b.nvme("0000:15:00.0", Some("0000:12:02.0"), Some(0));
        b.bridge("0000:10:02.0", None, Some(0));
        let n1 = b.nvme("0000:16:00.0", Some("0000:10:02.0"), Some(0));
        let topo = b.build();
        let cl = Classifier::new(&topo, &ClassifyOptions::default());
        let c = assign_drives(&cl, &[g0, g1]);
        let c0 = c[0].as_ref().unwrap();
        assert_eq!((c0.drive, c0.label), (n0, Label::Pix));
        let c1 = c[1].as_ref().unwrap();
        assert_eq!(c1.drive, n0, "PIX beats spreading to a PHB drive");
        // The root-port drive is PHB: used only when the switch drive is gone.
        assert_eq!(cl.label_of(&g0, &n1).unwrap().0, Label::Phb);
        // Without the mount table every NVMe function is a data drive.
        assert_eq!(data_drives(&topo).len(), 2);
    }
}
