//! Support archives an operator attaches to a case — a `sosreport` (`sos report`, Red Hat and
//! Ubuntu) or a SUSE `supportconfig` — read in memory without extracting: the members that
//! hold `lspci` output (`sos_commands/pci/lspci_*`, supportconfig's `hardware.txt`), the RDMA
//! tools (`sos_commands/infiniband/*`, `ib.txt`), `numactl --hardware`, the kernel log
//! (`sos_commands/kernel/dmesg`: IOMMU mode, AER and Xid lines) and the kernel command
//! line (`proc/cmdline`, supportconfig's `boot.txt`) are joined and read as `lspci` text
//! ([`super::lspci`]).

use super::budget::Charge;
use super::fsroot;
use crate::model::fact::Fact;
use crate::model::topology::{SourceInfo, Topology, Warning};
use std::path::Path;

/// The largest member read (an `lspci -nnvv` of a big node is a few MiB).
const MAX_MEMBER: usize = 64 << 20;

/// The most files read from a directory of text.
const MAX_FILES: usize = 64;

/// Which kind of archive a member path shows, and whether peerpath reads the member.
fn classify(path: &str) -> Option<(&'static str, u8)> {
    // sosreport-HOST-DATE/sos_commands/pci/lspci_-nnvv; scc_HOST_DATE/hardware.txt.
    let rest = path.split_once('/').map(|(_, r)| r).unwrap_or(path);
    let file = path.rsplit('/').next().unwrap_or(path);
    if let Some(r) = rest.strip_prefix("sos_commands/") {
        // The tree first, so the -vvv blocks find their domains in it.
        return if r.starts_with("pci/lspci_-tv") || r.starts_with("pci/lspci_-t") {
            Some(("sosreport", 0))
        } else if r.starts_with("pci/lspci") {
            Some(("sosreport", 1))
        } else if r.starts_with("infiniband/")
            || r.starts_with("numa/numactl_--hardware")
            || r == "kernel/lsmod"
            || r == "kernel/dmesg"
        {
            Some(("sosreport", 2))
        } else {
            None
        };
    }
    if rest == "proc/cmdline" {
        return Some(("sosreport", 3));
    }
    match file {
        "hardware.txt" => Some(("supportconfig", 1)),
        "ib.txt" => Some(("supportconfig", 2)),
        "boot.txt" => Some(("supportconfig", 3)),
        _ => None,
    }
}

/// The most text joined from a directory's files (an archive's inflated bytes are bounded
/// alike, [`fsroot::MAX_SNAPSHOT_BYTES`]): 64 files of 64 MiB would otherwise be 4 GiB.
const MAX_DIR_TEXT: u64 = fsroot::MAX_SNAPSHOT_BYTES;

/// Reads a directory of operator text: an extracted sosreport (its `sos_commands/pci`,
/// `sos_commands/infiniband`, `sos_commands/numa` and `proc/cmdline`), else every regular file
/// at its top (`lspci-vvv.txt`, `lspci-tv.txt`, `ibstat.txt`, …), read through the root
/// (nothing outside it, no link followed out). `Ok(None)` when none holds `lspci` output and
/// no file was left out; a file over [`MAX_MEMBER`], or files joining to more than
/// [`MAX_DIR_TEXT`], refuse the whole directory (never a cut of it judged), and a file left
/// out (a NUL byte, unreadable) is named in a warning. Each file is read, appended to the one
/// joined text and dropped: the text is held once.
/// The text joined is taken from `charge` (`fleet -j`: [`crate::sources::budget`]) as each
/// file is read.
pub fn read_dir(
    fs: &dyn fsroot::FsRoot,
    shown: &str,
    pci_ids: Option<&Path>,
    charge: Option<&mut Charge>,
) -> anyhow::Result<Option<Topology>> {
    read_dir_capped(fs, shown, pci_ids, MAX_MEMBER, charge)
}

/// [`read_dir`] with the per-file cap given (tests use a small one).
fn read_dir_capped(
    fs: &dyn fsroot::FsRoot,
    shown: &str,
    pci_ids: Option<&Path>,
    max_member: usize,
    charge: Option<&mut Charge>,
) -> anyhow::Result<Option<Topology>> {
    let mut paths = dir_files(fs);
    // The tree first and the command line last, as in an archive.
    paths.sort_by_key(|p| {
        (
            if p.contains("lspci_-t") || p.contains("-tv") {
                0
            } else if p.ends_with("cmdline") {
                2
            } else {
                1
            },
            p.clone(),
        )
    });
    let (joined, left_out) = join_dir_files(fs, shown, paths, max_member, charge)?;
    match joined.read("directory", shown, pci_ids)? {
        Some(mut topo) => {
            for (p, why) in left_out.into_iter().rev() {
                topo.warnings.insert(
                    0,
                    Warning {
                        path: p,
                        message: why,
                    },
                );
            }
            Ok(Some(topo))
        }
        None if left_out.is_empty() => Ok(None),
        None => {
            let named: Vec<String> = left_out.iter().map(|(p, w)| format!("{p} ({w})")).collect();
            anyhow::bail!(
                "{shown}: no lspci text read from the directory; left out: {}",
                named.join("; ")
            )
        }
    }
}

/// The paths of the directory's text files peerpath reads (see [`read_dir`]), at most
/// [`MAX_FILES`].
fn dir_files(fs: &dyn fsroot::FsRoot) -> Vec<String> {
    let dirs: Vec<&str> = if fs.is_dir(Path::new("sos_commands")) {
        vec![
            "sos_commands/pci",
            "sos_commands/infiniband",
            "sos_commands/numa",
            "sos_commands/kernel",
            "proc",
        ]
    } else {
        vec![""]
    };
    let mut paths = Vec::new();
    for d in dirs {
        let Ok(entries) = fs.read_dir(Path::new(d)) else {
            continue;
        };
        for e in entries {
            if e.kind != fsroot::EntryKind::File
                || (d == "proc" && e.name != "cmdline")
                || (d == "sos_commands/kernel" && e.name != "lsmod" && e.name != "dmesg")
            {
                continue;
            }
            if paths.len() >= MAX_FILES {
                return paths;
            }
            paths.push(if d.is_empty() {
                e.name.clone()
            } else {
                format!("{d}/{}", e.name)
            });
        }
    }
    paths
}

/// Reads the directory's files in `paths` order into one joined text, each file dropped once
/// appended: one over `max_member` bytes, or all of them over [`MAX_DIR_TEXT`], refuses the
/// whole input; one holding a NUL byte or unreadable is left out and named (path, why).
fn join_dir_files(
    fs: &dyn fsroot::FsRoot,
    shown: &str,
    paths: Vec<String>,
    max_member: usize,
    mut charge: Option<&mut Charge>,
) -> anyhow::Result<(Joined, Vec<(String, String)>)> {
    let mut joined = Joined::default();
    let mut left_out = Vec::new();
    // Hard links to one file (one device and inode) are read once.
    let mut seen: std::collections::HashMap<(u64, u64), String> = Default::default();
    for p in paths {
        if let Some(id) = fs.file_id(Path::new(&p)) {
            if let Some(first) = seen.get(&id) {
                let why = format!("the same file as {first} (a hard link): read once");
                left_out.push((p, why));
                continue;
            }
            seen.insert(id, p.clone());
        }
        match fs.read_limited(Path::new(&p), max_member.saturating_add(1)) {
            Ok(b) if b.len() > max_member => anyhow::bail!(
                "{shown}: {p}: more than the {} peerpath reads of such a file; the directory is refused (never judged from a cut)",
                fsroot::shown_size(max_member as u64)
            ),
            Ok(b) => match b.iter().position(|&c| c == 0) {
                Some(at) => left_out.push((
                    p,
                    format!("holds a NUL byte at offset {at}: not text, left out of the reading"),
                )),
                None => {
                    if (joined.text.len() + b.len()) as u64 > MAX_DIR_TEXT {
                        anyhow::bail!(
                            "{shown}: {p}: the directory's text files join to more than the {} peerpath reads of a directory of text; the directory is refused (never judged from a cut)",
                            fsroot::shown_size(MAX_DIR_TEXT)
                        );
                    }
                    if let Some(c) = charge.as_deref_mut() {
                        c.take(b.len() as u64);
                    }
                    joined.push(&p, &b);
                }
            },
            Err(e) => left_out.push((
                p,
                format!("could not be read ({e}); left out of the reading"),
            )),
        }
    }
    Ok((joined, left_out))
}

/// Reads a sosreport or supportconfig archive; `Ok(None)` when the archive is neither (no
/// member holds `lspci` output), so the caller reports its own error. A member peerpath reads
/// that is over [`MAX_MEMBER`] refuses the whole archive (never a cut of it judged).
pub fn read(bytes: &[u8], shown: &str, pci_ids: Option<&Path>) -> anyhow::Result<Option<Topology>> {
    read_data(fsroot::tar_data(bytes, None)?, shown, pci_ids, None)
}

/// [`read`] over an archive already inflated ([`fsroot::tar_data`]): the members' text is
/// joined into one copy (taken from `charge`), then the inflated archive is dropped (and given
/// back to `charge`) before the text is read, so at most the archive and the text are held at
/// once (≤ 2× the inflated size), and while reading only the text.
pub fn read_data(
    data: std::borrow::Cow<'_, [u8]>,
    shown: &str,
    pci_ids: Option<&Path>,
    charge: Option<&mut Charge>,
) -> anyhow::Result<Option<Topology>> {
    read_capped(data, shown, pci_ids, MAX_MEMBER, charge)
}

/// [`read_data`] with the per-member cap given (tests use a small one).
fn read_capped(
    data: std::borrow::Cow<'_, [u8]>,
    shown: &str,
    pci_ids: Option<&Path>,
    max_member: usize,
    mut charge: Option<&mut Charge>,
) -> anyhow::Result<Option<Topology>> {
    let mut members = fsroot::archive_member_slices(&data, |p| classify(p).is_some(), max_member)?;
    let Some(kind) = members
        .iter()
        .filter_map(|(p, _)| classify(p))
        .find(|(_, order)| *order <= 1)
        .map(|(k, _)| k)
    else {
        return Ok(None);
    };
    members.sort_by_key(|(p, _)| classify(p).map(|(_, o)| o).unwrap_or(9));
    let size: usize = members.iter().map(|(_, b)| b.len() + 2).sum();
    if let Some(c) = charge.as_deref_mut() {
        c.take(size as u64);
    }
    let mut joined = Joined::with_capacity(size);
    for (p, b) in &members {
        joined.push(p, b);
    }
    drop(members);
    if let (std::borrow::Cow::Owned(d), Some(c)) = (&data, charge) {
        c.give_back(d.len() as u64);
    }
    drop(data);
    joined.read(kind, shown, pci_ids)
}

/// The text of an archive's or a directory's members joined in reading order, held once:
/// what the `lspci` reader reads, with the kernel command line and the members used.
#[derive(Default)]
struct Joined {
    text: String,
    cmdline: Option<String>,
    used: Vec<String>,
}

impl Joined {
    fn with_capacity(n: usize) -> Self {
        Joined {
            text: String::with_capacity(n),
            ..Joined::default()
        }
    }

    /// Appends one member's text (invalid UTF-8 replaced), ended by a blank line.
    fn push(&mut self, path: &str, bytes: &[u8]) {
        let t = String::from_utf8_lossy(bytes);
        if path.ends_with("proc/cmdline") {
            self.cmdline = Some(t.trim().to_string());
        }
        // Room for the text and its two newlines at once (one allocation, not a doubling for
        // the final newline).
        self.text.reserve(t.len() + 2);
        self.text.push_str(&t);
        if !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push('\n');
        self.used.push(path.to_string());
    }

    /// Reads the joined text as `lspci` text; `None` when it holds none; a cap's refusal
    /// (too many devices) is an error.
    fn read(
        self,
        kind: &str,
        shown: &str,
        pci_ids: Option<&Path>,
    ) -> anyhow::Result<Option<Topology>> {
        let src = SourceInfo {
            kind: "lspci".into(),
            path: shown.to_string(),
            limitations: vec![],
        };
        let mut topo = match super::lspci::read(&self.text, src, pci_ids) {
            Ok(t) => t,
            Err(e) if super::is_too_large(&e) => return Err(e),
            Err(_) => return Ok(None),
        };
        if let Some(c) = self.cmdline.filter(|c| !c.is_empty()) {
            topo.machine.kernel_cmdline = Fact::Known(c);
        }
        topo.source.limitations.insert(
            0,
            format!(
                "read from the {kind}'s files, joined in this order (evidence line numbers count lines of the joined text): {}",
                self.used.join(", ")
            ),
        );
        Ok(Some(topo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_of_both_archives() {
        assert_eq!(
            classify("sosreport-n1-2026/sos_commands/pci/lspci_-nnvv"),
            Some(("sosreport", 1))
        );
        assert_eq!(
            classify("sosreport-n1-2026/sos_commands/pci/lspci_-tv"),
            Some(("sosreport", 0))
        );
        assert_eq!(
            classify("sosreport-n1-2026/proc/cmdline"),
            Some(("sosreport", 3))
        );
        assert_eq!(
            classify("scc_n1_260101_1200/hardware.txt"),
            Some(("supportconfig", 1))
        );
        // The kernel log: IOMMU mode, AER and Xid lines (issue 51).
        assert_eq!(
            classify("sosreport-n1-2026/sos_commands/kernel/dmesg"),
            Some(("sosreport", 2))
        );
        assert_eq!(
            classify("sosreport-n1-2026/sos_commands/kernel/sysctl_-a"),
            None
        );
    }

    /// Two GPUs and a NIC as `lspci -nnvv` prints them (synthesized, the grammar of
    /// pciutils' `lspci`).
    const NODE: &str = "\
01:00.0 3D controller [0302]: NVIDIA Corporation Device 2330 [10de:2330] (rev a1)
02:00.0 3D controller [0302]: NVIDIA Corporation Device 2330 [10de:2330] (rev a1)
";
    const NIC_AFTER: &str = "03:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n";

    /// `NODE`, blank lines to `len` bytes, then a NIC: a cut anywhere before `len` loses it.
    fn padded(len: usize) -> Vec<u8> {
        let mut b = NODE.as_bytes().to_vec();
        b.resize(len - NIC_AFTER.len(), b'\n');
        b.extend_from_slice(NIC_AFTER.as_bytes());
        b
    }

    fn tar_of(path: &str, body: &[u8]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, path, body).unwrap();
        b.into_inner().unwrap()
    }

    /// Issue 53: a 65 MiB `lspci_-nnvv` in a sosreport was read to 64 MiB and judged (the NIC
    /// after the cut missing, exit 0); it is refused whole, in the cap's words.
    #[test]
    fn sosreport_member_over_the_cap_refuses_the_archive() {
        let tar = tar_of(
            "sosreport-n1/sos_commands/pci/lspci_-nnvv",
            &padded(65 << 20),
        );
        let e = format!("{:#}", read(&tar, "sos.tar", None).unwrap_err());
        assert!(
            e.contains("more than the 64 MiB") && e.contains("lspci_-nnvv"),
            "{e}"
        );
        assert!(e.contains("refused"), "{e}");
        // One byte over a small cap is refused; at the cap it is read whole.
        let body = padded(4096);
        let tar = tar_of("sosreport-n1/sos_commands/pci/lspci_-nnvv", &body);
        assert!(read_capped(tar.as_slice().into(), "sos.tar", None, 4095, None).is_err());
        let t = read_capped(tar.as_slice().into(), "sos.tar", None, 4096, None)
            .unwrap()
            .unwrap();
        assert_eq!(t.devices.len(), 3);
    }

    /// Issue 53: a 65 MiB lspci text in a directory was read to 64 MiB and judged; the
    /// directory is refused whole, naming the file and the cap.
    #[test]
    fn directory_text_over_the_cap_refuses_the_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("lspci-vvv.txt"), padded(65 << 20)).unwrap();
        let fs = fsroot::DirRoot::open(d.path()).unwrap();
        let e = format!("{:#}", read_dir(&fs, "ticket", None, None).unwrap_err());
        assert!(e.contains("lspci-vvv.txt") && e.contains("64 MiB"), "{e}");
        std::fs::write(d.path().join("lspci-vvv.txt"), padded(4096)).unwrap();
        assert!(read_dir_capped(&fs, "ticket", None, 4095, None).is_err());
        let t = read_dir_capped(&fs, "ticket", None, 4096, None)
            .unwrap()
            .unwrap();
        assert_eq!(t.devices.len(), 3);
    }

    /// Issue 53: a text file holding one NUL byte was dropped from a directory without a word;
    /// it is named in a warning, and when it was the only lspci text the error names it.
    #[test]
    fn directory_file_with_a_nul_is_named() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("lspci-vvv.txt"), NODE).unwrap();
        std::fs::write(d.path().join("lspci-nic.txt"), format!("{NIC_AFTER}\0")).unwrap();
        let fs = fsroot::DirRoot::open(d.path()).unwrap();
        let t = read_dir(&fs, "ticket", None, None).unwrap().unwrap();
        let w = t
            .warnings
            .iter()
            .find(|w| w.path == "lspci-nic.txt")
            .unwrap_or_else(|| panic!("{:?}", t.warnings));
        assert!(w.message.contains("NUL byte at offset"), "{}", w.message);
        std::fs::remove_file(d.path().join("lspci-vvv.txt")).unwrap();
        let e = format!("{:#}", read_dir(&fs, "ticket", None, None).unwrap_err());
        assert!(e.contains("lspci-nic.txt") && e.contains("NUL"), "{e}");
    }
}
