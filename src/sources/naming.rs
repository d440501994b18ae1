//! Device names from the PCI ID database (`pci.ids`), read at run time through the input layer
//! and parsed by [`crate::parse::pci_ids`] for the vendors present only; for a GPU the database
//! does not know (a system `pci.ids` older than the card: Debian 12's of April 2023 has no H200),
//! the NVIDIA driver's own name for it ([`name_from_driver`]), marked with its
//! [`NameSource`] so every output can say where the name came from.
//! Names are decoration: a missing database or entry leaves the numeric IDs and never fails.

use crate::model::{NameSource, OsDeviceKind, Topology};
use crate::parse::pci_ids::parse_stream;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Where the system keeps the database, in lookup order (after `--pci-ids` and `$PCI_IDS`).
pub const SYSTEM_PATHS: [&str; 3] = [
    "/usr/share/hwdata/pci.ids",
    "/usr/share/misc/pci.ids",
    "/usr/share/pci.ids",
];

/// The database to use: the explicit path, else `$PCI_IDS`, else the first system path that
/// exists.
pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("PCI_IDS") {
        return Some(PathBuf::from(p));
    }
    SYSTEM_PATHS.iter().map(PathBuf::from).find(|p| p.exists())
}

/// Fills `vendor_name` and `device_name` of every device from the database at `path`; a name
/// the source carried itself (hwloc's `PCIVendor`/`PCIDevice`) stays where the database has
/// none. An unreadable database adds a warning and leaves the names as they are.
pub fn name_devices(path: &Path, topo: &mut Topology) {
    let wanted: HashSet<u16> = topo.devices.iter().filter_map(|d| d.vendor_id).collect();
    if wanted.is_empty() {
        return;
    }
    // Through the input layer: a FIFO or device (`--pci-ids /dev/zero`) is refused by type,
    // and no more than 64 MiB is read (the real file is under 2 MiB).
    let max = crate::sources::fsroot::input::MAX_SIDE_FILE_BYTES;
    let unreadable = |topo: &mut Topology, e: std::io::Error| {
        topo.warnings.push(crate::model::Warning {
            path: path.display().to_string(),
            message: format!("PCI ID database unreadable ({e}); devices shown by numeric ID"),
        });
    };
    let file = match crate::sources::fsroot::input::open_input_file(path, max) {
        Ok(f) => f,
        Err(e) => return unreadable(topo, e),
    };
    let present: HashSet<(u16, u16)> = topo
        .devices
        .iter()
        .filter_map(|d| Some((d.vendor_id?, d.device_id?)))
        .collect();
    let names = match parse_stream(file, &wanted, Some(&present)) {
        Ok(n) => n,
        Err(e) => return unreadable(topo, e),
    };
    for d in &mut topo.devices {
        let Some(v) = d.vendor_id else { continue };
        d.vendor_name = names.vendors.get(&v).cloned().or(d.vendor_name.take());
        if let Some(dev) = d.device_id {
            d.device_name = names
                .devices
                .get(&(v, dev))
                .cloned()
                .or(d.device_name.take());
        }
    }
}

/// Names each device the database left without a device name from its driver's own record,
/// and says so in [`crate::model::Device::name_source`]: an NVIDIA GPU from the `Model:` line
/// of `/proc/driver/nvidia/gpus/<bdf>/information` (the `Model` attribute of its `nvidia_gpu` OS
/// device; a capture stores the same attributes in `peerpath-nvml.json`). A name the
/// database or the input gave is never replaced. Runs whether or not a database was found.
pub fn name_from_driver(topo: &mut Topology) {
    for d in &mut topo.devices {
        if d.device_name.is_some() {
            continue;
        }
        let model = d
            .os_devices
            .iter()
            .filter(|o| o.kind == OsDeviceKind::NvidiaGpu)
            .flat_map(|o| o.attrs.iter())
            .find(|(k, v)| k == "Model" && !v.trim().is_empty())
            .map(|(_, v)| v.trim().to_string());
        if let Some(m) = model {
            d.device_name = Some(m);
            d.name_source = Some(NameSource::NvidiaDriver);
        }
    }
}
