//! GPUDirect Storage facts under a root ([`crate::model::storage::StorageFacts`]): the
//! nvidia-fs module (`/sys/module/nvidia_fs/version`, `/proc/driver/nvidia-fs/version`),
//! `/etc/cufile.json`, the upstream P2PDMA prerequisites (`/proc/sys/kernel/osrelease`,
//! `CONFIG_PCI_P2PDMA` in `/boot/config-<release>`, `/sys/module/nvme_core/parameters/multipath`,
//! the `RegistryDwords` of `/proc/driver/nvidia/params`) and the mount table
//! (`/proc/self/mountinfo`, else `/proc/mounts`), each mount tied to the NVMe controllers below
//! it through `/sys/dev/block/<maj:min>` (partitions, md/dm `slaves`, NVMe multipath
//! subsystems). Parsing is in `parse::cufile` and `parse::mounts`.

use super::fsroot::FsRoot;
use crate::model::Bdf;
use crate::model::device::{Device, DeviceKind};
use crate::model::fact::Fact;
use crate::model::storage::{CufileFile, Mount, MountTable, StorageFacts};
use crate::model::topology::Warning;
use crate::parse::{cufile, mounts};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Largest file read here (a mount table of a busy container host is a few hundred KiB).
const LIMIT: usize = 4 << 20;
/// How deep md/dm `slaves` are followed.
const MAX_STACK: usize = 8;

/// Where `/etc/cufile.json` lies (cuFile also honours `CUFILE_ENV_PATH_JSON`, a process's own
/// setting the node scan cannot see).
pub const CUFILE_JSON: &str = "etc/cufile.json";

fn text(fs: &dyn FsRoot, p: &str) -> Option<String> {
    fs.read_limited(Path::new(p), LIMIT)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn line(fs: &dyn FsRoot, p: &str) -> Option<String> {
    text(fs, p)
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// Reads the node's GDS facts. `by_path` maps each PCI function's directory (relative to the
/// root, no symlinks) to its index in `devices`; warnings name the file and what was refused.
pub fn read(
    fs: &dyn FsRoot,
    by_path: &HashMap<PathBuf, usize>,
    devices: &[Device],
) -> (StorageFacts, Vec<Warning>) {
    let mut warnings = Vec::new();
    let mut s = StorageFacts {
        read: true,
        ..Default::default()
    };
    s.nvidia_fs = line(fs, "sys/module/nvidia_fs/version")
        .map(|v| ("/sys/module/nvidia_fs/version".to_string(), v))
        .or_else(|| {
            line(fs, "proc/driver/nvidia-fs/version")
                .map(|v| ("/proc/driver/nvidia-fs/version".to_string(), v))
        })
        .or_else(|| {
            fs.kind(Path::new("sys/module/nvidia_fs")).map(|_| {
                (
                    "/sys/module/nvidia_fs".to_string(),
                    "loaded (no version file)".to_string(),
                )
            })
        });
    s.etc_visible = fs.kind(Path::new("etc")).is_some();
    if let Some(t) = text(fs, CUFILE_JSON) {
        let path = format!("/{CUFILE_JSON}");
        let (config, error) = match cufile::parse(&t) {
            Ok(c) => {
                for (k, v) in &c.wrong_type {
                    warnings.push(Warning {
                        path: path.clone(),
                        message: format!("{k} is {v}, not of the type cuFile expects; ignored"),
                    });
                }
                (Some(c), None)
            }
            Err(e) => {
                warnings.push(Warning {
                    path: path.clone(),
                    message: format!("not JSON with comments ({e}); its settings unknown"),
                });
                (None, Some(e))
            }
        };
        s.cufile = Some(CufileFile {
            path,
            config,
            error,
        });
    }
    s.kernel_release = line(fs, "proc/sys/kernel/osrelease");
    if let Some(rel) = &s.kernel_release
        && !rel.contains('/')
    {
        let p = format!("boot/config-{rel}");
        if let Some(t) = text(fs, &p) {
            let on = t.lines().any(|l| l.trim() == "CONFIG_PCI_P2PDMA=y");
            s.kernel_p2pdma = Some((format!("/{p}"), on));
        }
    }
    s.nvme_multipath = line(fs, "sys/module/nvme_core/parameters/multipath");
    s.nvidia_registry_dwords = text(fs, "proc/driver/nvidia/params").and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("RegistryDwords:"))
            .map(|l| l.trim().to_string())
    });
    s.mounts = mount_table(fs, by_path, devices, &mut warnings);
    (s, warnings)
}

fn mount_table(
    fs: &dyn FsRoot,
    by_path: &HashMap<PathBuf, usize>,
    devices: &[Device],
    warnings: &mut Vec<Warning>,
) -> Fact<MountTable> {
    let (path, (mut list, bad)) = if let Some(t) = text(fs, "proc/self/mountinfo") {
        ("/proc/self/mountinfo", mounts::mountinfo(&t))
    } else if let Some(t) = text(fs, "proc/mounts") {
        ("/proc/mounts", mounts::mounts(&t))
    } else {
        return Fact::Unknown("neither /proc/self/mountinfo nor /proc/mounts was read".into());
    };
    for (n, r) in bad {
        warnings.push(Warning {
            path: path.to_string(),
            message: format!("line {n}: {r}; skipped"),
        });
    }
    for m in &mut list {
        resolve(fs, by_path, devices, m);
    }
    Fact::Known(MountTable {
        path: path.to_string(),
        mounts: list,
    })
}

/// Ties a mount to its block devices and NVMe controllers.
fn resolve(fs: &dyn FsRoot, by_path: &HashMap<PathBuf, usize>, devices: &[Device], m: &mut Mount) {
    let start = match &m.dev {
        Some(d) if !d.starts_with("0:") => PathBuf::from(format!("sys/dev/block/{d}")),
        Some(_) => return, // major 0: no block device (nfs, tmpfs, overlay, lustre)
        None => match m.source.strip_prefix("/dev/") {
            Some(n) if !n.is_empty() && !n.contains('/') => {
                PathBuf::from(format!("sys/class/block/{n}"))
            }
            _ => return,
        },
    };
    let Ok(dir) = fs.resolve(&start) else { return };
    let mut block = Vec::new();
    let mut drives = Vec::new();
    walk(fs, by_path, devices, &dir, 0, &mut block, &mut drives);
    drives.sort();
    drives.dedup();
    m.block = block;
    m.drives = drives;
}

/// Whether `rest` names a partition of disk `disk`: the kernel appends the number, with a `p`
/// when the disk's name ends in a digit (`sda1`, `nvme0n1p1`, `md0p1`).
fn is_partition_suffix(disk: &str, rest: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    if disk.ends_with(|c: char| c.is_ascii_digit()) {
        rest.strip_prefix('p').is_some_and(digits)
    } else {
        digits(rest)
    }
}

fn owner(by_path: &HashMap<PathBuf, usize>, devices: &[Device], p: &Path) -> Option<Bdf> {
    p.ancestors()
        .find_map(|a| by_path.get(a))
        .map(|&i| &devices[i])
        .filter(|d| d.kind == DeviceKind::Nvme)
        .map(|d| d.bdf)
}

/// Follows one block device down: a partition to its disk, a disk to its NVMe controller, an
/// NVMe multipath namespace to its subsystem's controllers, md/dm to their `slaves`.
fn walk(
    fs: &dyn FsRoot,
    by_path: &HashMap<PathBuf, usize>,
    devices: &[Device],
    dir: &Path,
    depth: usize,
    block: &mut Vec<String>,
    drives: &mut Vec<Bdf>,
) {
    if depth > MAX_STACK {
        return;
    }
    let name = |p: &Path| p.file_name().and_then(|s| s.to_str()).map(str::to_string);
    let Some(mut n) = name(dir) else { return };
    let mut disk = dir.to_path_buf();
    // A partition's directory lies in its disk's (`nvme0n1/nvme0n1p1`, `sda/sda1`); a
    // namespace's lies in its controller's (`nvme0/nvme0n1`), which is no block device.
    if let Some(parent) = dir.parent()
        && let Some(pn) = name(parent)
        && let Some(rest) = n.strip_prefix(pn.as_str())
        && is_partition_suffix(&pn, rest)
    {
        block.push(n);
        disk = parent.to_path_buf();
        n = pn;
    }
    block.push(n);
    if let Some(b) = owner(by_path, devices, &disk) {
        drives.push(b);
        return;
    }
    // NVMe native multipath: the namespace lies under its subsystem, next to links to the
    // controllers (`nvme-subsys0/nvme0 -> …/0000:5a:00.0/nvme/nvme0`).
    if let Some(sub) = disk.parent()
        && sub.parent().and_then(name).as_deref() == Some("nvme-subsystem")
    {
        for e in fs.read_dir(sub).unwrap_or_default() {
            let is_ctrl = e
                .name
                .strip_prefix("nvme")
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|c| c.is_ascii_digit()));
            if is_ctrl && let Ok(c) = fs.resolve(&sub.join(&e.name)) {
                drives.extend(owner(by_path, devices, &c));
            }
        }
        return;
    }
    // md RAID and device-mapper: the block devices below are in `slaves`.
    let slaves = disk.join("slaves");
    for e in fs.read_dir(&slaves).unwrap_or_default() {
        if let Ok(p) = fs.resolve(&slaves.join(&e.name)) {
            walk(fs, by_path, devices, &p, depth + 1, block, drives);
        }
    }
}
