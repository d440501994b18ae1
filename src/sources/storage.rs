//! GPUDirect Storage facts under a root ([`crate::model::storage::StorageFacts`]): the
//! nvidia-fs module (`/sys/module/nvidia_fs/version`, `/proc/driver/nvidia-fs/version`),
//! `/etc/cufile.json`, the upstream P2PDMA prerequisites (`/proc/sys/kernel/osrelease`,
//! `CONFIG_PCI_P2PDMA` in `/boot/config-<release>`, `/sys/module/nvme_core/parameters/multipath`,
//! the `RegistryDwords` of `/proc/driver/nvidia/params`) and the mount table
//! (`/proc/self/mountinfo`, else `/proc/mounts`), each mount tied to the NVMe controllers below
//! it through `/sys/dev/block/<maj:min>` (partitions, md/dm `slaves`, NVMe multipath
//! subsystems). Parsing is in `parse::cufile` and `parse::mounts`.

use super::fsroot::{FsRoot, read_whole, shown_size};
use super::warn_cap::SourceWarnings;
use crate::model::Bdf;
use crate::model::device::{Device, DeviceKind};
use crate::model::fact::Fact;
use crate::model::storage::{CufileFile, Mount, MountTable, StorageFacts};
use crate::model::topology::Warning;
use crate::parse::{cufile, mounts};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

/// Largest file read here but the mount table: `cufile.json` (NVIDIA's default is 10 KiB), a
/// kernel config (about 300 KiB), `/proc/driver/nvidia/params`. A larger file is not read, and
/// said so.
const LIMIT: usize = 4 << 20;
/// Largest mount table read (a busy container host's is a few hundred KiB; 16 MiB is about
/// 100,000 mounts). A larger one is not read, and said so: the mount table is then unknown.
pub const MAX_MOUNT_TABLE_BYTES: usize = 16 << 20;
/// How deep md/dm `slaves` are followed.
const MAX_STACK: usize = 8;

/// Where `/etc/cufile.json` lies (cuFile also honours `CUFILE_ENV_PATH_JSON`, a process's own
/// setting the node scan cannot see).
pub const CUFILE_JSON: &str = "etc/cufile.json";

/// A file's text: `Ok(None)` when it is absent, `Err(why)` when it is there but was not read
/// (a FIFO or device in its place, permission denied, larger than `cap`).
fn read_text(fs: &dyn FsRoot, p: &str, cap: usize) -> Result<Option<String>, String> {
    match read_whole(fs, Path::new(p), cap) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// A file's text, `None` when absent or not read (with a warning for the latter).
fn text(fs: &dyn FsRoot, p: &str, w: &mut SourceWarnings) -> Option<String> {
    read_text(fs, p, LIMIT).unwrap_or_else(|e| {
        w.push(format_args!("/{p}"), || {
            format!("not read ({e}); what it says is unknown")
        });
        None
    })
}

fn line(fs: &dyn FsRoot, p: &str, w: &mut SourceWarnings) -> Option<String> {
    text(fs, p, w)
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
    let mut w = SourceWarnings::new("GPUDirect Storage files", "/etc/cufile.json");
    let s = read_into(fs, by_path, devices, &mut w);
    (s, w.finish())
}

fn read_into(
    fs: &dyn FsRoot,
    by_path: &HashMap<PathBuf, usize>,
    devices: &[Device],
    w: &mut SourceWarnings,
) -> StorageFacts {
    let mut s = StorageFacts {
        read: true,
        ..Default::default()
    };
    s.nvidia_fs = line(fs, "sys/module/nvidia_fs/version", w)
        .map(|v| ("/sys/module/nvidia_fs/version".to_string(), v))
        .or_else(|| {
            line(fs, "proc/driver/nvidia-fs/version", w)
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
    let path = format!("/{CUFILE_JSON}");
    match read_text(fs, CUFILE_JSON, LIMIT) {
        Ok(None) => {}
        // There but not read (a FIFO, a device, permission denied, too large): not "absent".
        Err(e) => {
            w.push(&path, || {
                format!("not read ({e}); its settings are unknown")
            });
            s.cufile = Some(CufileFile {
                path: path.clone(),
                config: None,
                error: Some(e),
                unreadable: true,
            });
        }
        Ok(Some(t)) => {
            let (config, error) = match cufile::parse(&t) {
                Ok(c) => {
                    for (k, v) in &c.wrong_type {
                        w.push(&path, || {
                            format!("{k} is {v}, not of the type cuFile expects; ignored")
                        });
                    }
                    if c.wrong_type_more > 0 {
                        w.push(&path, || {
                            format!(
                                "{} more value(s) of the wrong type; ignored",
                                c.wrong_type_more
                            )
                        });
                    }
                    (Some(c), None)
                }
                Err(e) => {
                    w.push(&path, || {
                        format!("not JSON with comments ({e}); its settings unknown")
                    });
                    (None, Some(e))
                }
            };
            s.cufile = Some(CufileFile {
                path,
                config,
                error,
                unreadable: false,
            });
        }
    }
    s.kernel_release = line(fs, "proc/sys/kernel/osrelease", w);
    if let Some(rel) = &s.kernel_release
        && !rel.contains('/')
    {
        let p = format!("boot/config-{rel}");
        if let Some(t) = text(fs, &p, w) {
            let on = t.lines().any(|l| l.trim() == "CONFIG_PCI_P2PDMA=y");
            s.kernel_p2pdma = Some((format!("/{p}"), on));
        }
    }
    s.nvme_multipath = line(fs, "sys/module/nvme_core/parameters/multipath", w);
    s.nvidia_registry_dwords = text(fs, "proc/driver/nvidia/params", w).and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("RegistryDwords:"))
            .map(|l| l.trim().to_string())
    });
    s.mounts = mount_table(fs, by_path, devices, w);
    s
}

fn mount_table(
    fs: &dyn FsRoot,
    by_path: &HashMap<PathBuf, usize>,
    devices: &[Device],
    warnings: &mut SourceWarnings,
) -> Fact<MountTable> {
    let mut not_read = Vec::new();
    let mut table = None;
    for (p, parse) in [
        (
            "proc/self/mountinfo",
            mounts::mountinfo as fn(&str) -> (Vec<Mount>, crate::parse::LineRefusals),
        ),
        ("proc/mounts", mounts::mounts),
    ] {
        match read_text(fs, p, MAX_MOUNT_TABLE_BYTES) {
            Ok(Some(t)) => {
                table = Some((p, parse(&t)));
                break;
            }
            Ok(None) => {}
            Err(e) => {
                warnings.push(format_args!("/{p}"), || format!("not read ({e})"));
                not_read.push(format!("/{p}: {e}"));
            }
        }
    }
    let Some((p, (mut list, bad))) = table else {
        return Fact::Unknown(if not_read.is_empty() {
            "neither /proc/self/mountinfo nor /proc/mounts was read".into()
        } else {
            format!(
                "the mount table was not read ({}; peerpath reads at most {})",
                not_read.join("; "),
                shown_size(MAX_MOUNT_TABLE_BYTES as u64)
            )
        });
    };
    let path = format!("/{p}");
    for (n, r) in &bad.first {
        warnings.push(&path, || format!("line {n}: {r}; skipped"));
    }
    if bad.more() > 0 {
        warnings.push(&path, || {
            format!("{} more line(s) refused; skipped", bad.more())
        });
    }
    for m in &mut list {
        resolve(fs, by_path, devices, m);
    }
    Fact::Known(MountTable { path, mounts: list })
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
    let mut seen = HashSet::new();
    walk(
        fs,
        by_path,
        devices,
        &dir,
        0,
        &mut Walked {
            block: &mut block,
            drives: &mut drives,
            seen: &mut seen,
        },
    );
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

/// What a walk down from one mount found, and where it has been.
struct Walked<'a> {
    block: &'a mut Vec<String>,
    drives: &'a mut Vec<Bdf>,
    /// Block device directories visited: each is walked once, so a `slaves/` link back to its
    /// own device (or a diamond of md over dm over the same disks) costs one visit, not one per
    /// path to it (issue 41: ~10^9 visits).
    seen: &'a mut HashSet<PathBuf>,
}

/// Follows one block device down: a partition to its disk, a disk to its NVMe controller, an
/// NVMe multipath namespace to its subsystem's controllers, md/dm to their `slaves`.
fn walk(
    fs: &dyn FsRoot,
    by_path: &HashMap<PathBuf, usize>,
    devices: &[Device],
    dir: &Path,
    depth: usize,
    out: &mut Walked,
) {
    if depth > MAX_STACK || !out.seen.insert(dir.to_path_buf()) {
        return;
    }
    let (block, drives) = (&mut *out.block, &mut *out.drives);
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
            walk(fs, by_path, devices, &p, depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fsroot::DirRoot;
    use std::os::unix::fs::symlink;

    fn read_tree(root: &Path) -> (StorageFacts, Vec<Warning>) {
        read(&DirRoot::new(root), &HashMap::new(), &[])
    }

    /// Issue 41: a cufile.json that is a FIFO is "there, not read", not absent; a mount table
    /// over the cap is unknown with the reason, not cut and its cut line misreported.
    #[test]
    fn unreadable_and_oversized_files_are_said() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("etc")).unwrap();
        std::fs::create_dir_all(d.path().join("proc/self")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.path().join(CUFILE_JSON),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let mi = d.path().join("proc/self/mountinfo");
        std::fs::File::create(&mi)
            .unwrap()
            .set_len(MAX_MOUNT_TABLE_BYTES as u64 + 1)
            .unwrap();
        let (s, w) = read_tree(d.path());
        let c = s.cufile.expect("a FIFO is not an absent file");
        assert!(c.unreadable && c.config.is_none(), "{c:?}");
        assert!(c.error.unwrap().contains("named pipe"));
        match &s.mounts {
            Fact::Unknown(why) => assert!(why.contains("larger than the 16 MiB"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(
            w.iter()
                .any(|w| w.path == "/proc/self/mountinfo" && w.message.contains("not read")),
            "{w:?}"
        );
    }

    /// Issue 41: an md device whose `slaves/` link back to itself is visited once (the walk
    /// remembers where it has been; depth-limited only, it made 3^9 visits here).
    #[test]
    fn a_slaves_loop_is_walked_once() {
        let d = tempfile::tempdir().unwrap();
        let md = d.path().join("sys/devices/virtual/block/md0");
        std::fs::create_dir_all(md.join("slaves")).unwrap();
        for n in ["a", "b", "c"] {
            symlink("../../md0", md.join("slaves").join(n)).unwrap();
        }
        std::fs::create_dir_all(d.path().join("sys/dev/block")).unwrap();
        symlink(
            "../../devices/virtual/block/md0",
            d.path().join("sys/dev/block/9:0"),
        )
        .unwrap();
        std::fs::create_dir_all(d.path().join("proc/self")).unwrap();
        std::fs::write(
            d.path().join("proc/self/mountinfo"),
            "30 1 9:0 / /data rw - xfs /dev/md0 rw\n",
        )
        .unwrap();
        let (s, _) = read_tree(d.path());
        let Fact::Known(t) = &s.mounts else {
            panic!("{:?}", s.mounts)
        };
        assert_eq!(t.mounts[0].block, ["md0"]);
    }
}
