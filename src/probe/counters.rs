//! Before/after snapshots of the files that show a path misbehaving under load: AER counters
//! (`aer_dev_correctable`, `aer_dev_nonfatal`, `aer_dev_fatal`) and link state
//! (`current_link_speed`, `current_link_width`) of every device on the GPU's and NIC's paths
//! to the host bridge, and the RDMA port `state`, `phys_state`, `rate` and `counters/*`. The
//! paths are the scanner's (`Device::sysfs_path`, `sys/class/infiniband/<dev>/ports/<n>`),
//! re-read from the live root.

use crate::analysis::paths::Paths;
use crate::analysis::probe_report::Change;
use crate::model::Bdf;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Raw contents of each snapshotted file, by path relative to the root.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// `path → trimmed contents`; unreadable files are absent.
    pub values: BTreeMap<String, String>,
}

/// The files to watch for these devices (each with its ancestors) and RDMA devices.
pub fn files_for(p: &Paths, devices: &[Bdf], rdma: &[(String, u32)]) -> Vec<String> {
    let t = p.topo();
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for b in devices {
        for a in p.ancestors(b) {
            if !seen.insert(a) {
                continue;
            }
            if let Some(d) = t.device(&a) {
                for f in [
                    "aer_dev_correctable",
                    "aer_dev_nonfatal",
                    "aer_dev_fatal",
                    "current_link_speed",
                    "current_link_width",
                ] {
                    out.push(format!("{}/{f}", d.sysfs_path.trim_end_matches('/')));
                }
            }
        }
    }
    for (dev, port) in rdma {
        let base = format!("sys/class/infiniband/{dev}/ports/{port}");
        for f in ["state", "phys_state", "rate"] {
            out.push(format!("{base}/{f}"));
        }
        out.push(format!("{base}/counters/*"));
    }
    out
}

/// Reads the files under `root` (a trailing `/*` reads every file of that directory).
pub fn snapshot(root: &Path, files: &[String]) -> Snapshot {
    let mut values = BTreeMap::new();
    for f in files {
        if let Some(dir) = f.strip_suffix("/*") {
            let Ok(rd) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for e in rd.flatten() {
                let rel = format!("{dir}/{}", e.file_name().to_string_lossy());
                if let Ok(s) = std::fs::read_to_string(root.join(&rel)) {
                    values.insert(rel, s.trim().to_string());
                }
            }
        } else if let Ok(s) = std::fs::read_to_string(root.join(PathBuf::from(f))) {
            values.insert(f.clone(), s.trim().to_string());
        }
    }
    Snapshot { values }
}

/// Files that differ between two snapshots.
pub fn diff(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let keys: std::collections::BTreeSet<&String> =
        before.values.keys().chain(after.values.keys()).collect();
    keys.into_iter()
        .filter(|k| before.values.get(*k) != after.values.get(*k))
        .map(|k| Change {
            path: k.clone(),
            before: before.values.get(k).cloned(),
            after: after.values.get(k).cloned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_and_diff_see_a_counter_move() {
        let d = tempfile::tempdir().unwrap();
        let p = d
            .path()
            .join("sys/class/infiniband/mlx5_0/ports/1/counters");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("symbol_error"), "0\n").unwrap();
        std::fs::write(p.join("link_downed"), "1\n").unwrap();
        let files = vec!["sys/class/infiniband/mlx5_0/ports/1/counters/*".to_string()];
        let a = snapshot(d.path(), &files);
        assert_eq!(a.values.len(), 2);
        std::fs::write(p.join("symbol_error"), "5\n").unwrap();
        let b = snapshot(d.path(), &files);
        let c = diff(&a, &b);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].path,
            "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error"
        );
        assert_eq!(c[0].after.as_deref(), Some("5"));
    }
}
