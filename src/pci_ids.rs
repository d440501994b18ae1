//! Device names from the PCI ID database (`pci.ids`), read at run time and parsed lazily: only
//! the vendors present in the topology are parsed, the rest of the file is skipped line by line.
//! Names are decoration: a missing database or entry leaves the numeric IDs and never fails.

use crate::model::Topology;
use std::collections::{HashMap, HashSet};
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

/// Names of the wanted vendors and their devices.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// Vendor ID → name.
    pub vendors: HashMap<u16, String>,
    /// (vendor, device) → name.
    pub devices: HashMap<(u16, u16), String>,
}

/// Parses only the sections of `text` that belong to `wanted` vendors. Lines are
/// `vvvv  Name`, `\tdddd  Name`, `\t\tssss ssss  Name`; vendors are listed in ascending ID
/// order, so reading stops after the last wanted vendor (and at the class section, `C xx`).
pub fn parse_wanted(text: impl std::io::BufRead, wanted: &HashSet<u16>) -> Names {
    let mut out = Names::default();
    let Some(&last) = wanted.iter().max() else {
        return out;
    };
    let mut current: Option<u16> = None;
    for line in text.split(b'\n') {
        let Ok(line) = line else { break };
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        if line[0] != b'\t' {
            if line.starts_with(b"C ") {
                break;
            }
            current = None;
            if line.len() < 6 {
                continue;
            }
            let Some(id) = hex4(&line[..4]) else { continue };
            if id > last {
                break;
            }
            if wanted.contains(&id) {
                current = Some(id);
                out.vendors.insert(id, name_of(&line[4..]));
            }
        } else if let Some(v) = current
            && line.len() > 6
            && line[1] != b'\t'
            && let Some(id) = hex4(&line[1..5])
        {
            out.devices.insert((v, id), name_of(&line[5..]));
        }
    }
    out
}

fn hex4(b: &[u8]) -> Option<u16> {
    u16::from_str_radix(std::str::from_utf8(b).ok()?, 16).ok()
}

fn name_of(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim().to_string()
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
    let text = match crate::sources::fsroot::input::open_input_file(path, max) {
        Ok(f) => std::io::BufReader::with_capacity(64 << 10, f),
        Err(e) => {
            topo.warnings.push(crate::model::Warning {
                path: path.display().to_string(),
                message: format!("PCI ID database unreadable ({e}); devices shown by numeric ID"),
            });
            return;
        }
    };
    let names = parse_wanted(text, &wanted);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_subset() {
        let db = b"# c\n10b5  PLX Technology, Inc.\n\t9797  PEX 9797 PCIe Gen3 Switch\n15b3  Mellanox Technologies\n\t1013  MT27700 Family [ConnectX-4]\n\t\t15b3 0003  sub\nC 02  Network controller\n\t00  Ethernet\n";
        let n = parse_wanted(&db[..], &HashSet::from([0x15b3]));
        assert_eq!(n.vendors.len(), 1);
        assert_eq!(n.devices[&(0x15b3, 0x1013)], "MT27700 Family [ConnectX-4]");
        assert!(!n.devices.contains_key(&(0x10b5, 0x9797)));
    }
}
