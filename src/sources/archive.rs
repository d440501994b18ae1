//! Support archives an operator attaches to a case — a `sosreport` (`sos report`, Red Hat and
//! Ubuntu) or a SUSE `supportconfig` — read in memory without extracting: the members that
//! hold `lspci` output (`sos_commands/pci/lspci_*`, supportconfig's `hardware.txt`), the RDMA
//! tools (`sos_commands/infiniband/*`, `ib.txt`), `numactl --hardware`, the kernel log
//! (`sos_commands/kernel/dmesg`: IOMMU mode, AER and Xid lines) and the kernel command
//! line (`proc/cmdline`, supportconfig's `boot.txt`) are joined and read as `lspci` text
//! ([`super::lspci`]).

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

/// Reads a directory of operator text: an extracted sosreport (its `sos_commands/pci`,
/// `sos_commands/infiniband`, `sos_commands/numa` and `proc/cmdline`), else every regular file
/// at its top (`lspci-vvv.txt`, `lspci-tv.txt`, `ibstat.txt`, …), read through the root
/// (nothing outside it, no link followed out). `Ok(None)` when none holds `lspci` output and
/// no file was left out; a file over [`MAX_MEMBER`] refuses the whole directory (never a cut
/// of it judged), and a file left out (a NUL byte, unreadable) is named in a warning.
pub fn read_dir(
    fs: &dyn fsroot::FsRoot,
    shown: &str,
    pci_ids: Option<&Path>,
) -> anyhow::Result<Option<Topology>> {
    read_dir_capped(fs, shown, pci_ids, MAX_MEMBER)
}

/// [`read_dir`] with the per-file cap given (tests use a small one).
fn read_dir_capped(
    fs: &dyn fsroot::FsRoot,
    shown: &str,
    pci_ids: Option<&Path>,
    max_member: usize,
) -> anyhow::Result<Option<Topology>> {
    let (mut members, left_out) = dir_members(fs, shown, max_member)?;
    // The tree first and the command line last, as in an archive.
    members.sort_by_key(|(p, _)| {
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
    match join_and_read(members, "directory", shown, pci_ids)? {
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

/// The text files of a directory input that peerpath reads, and those it left out with why.
type DirMembers = (Vec<(String, Vec<u8>)>, Vec<(String, String)>);

/// Reads the directory's text files (see [`read_dir`]): one over `max_member` bytes refuses the
/// whole input; one holding a NUL byte or unreadable is left out and named.
fn dir_members(
    fs: &dyn fsroot::FsRoot,
    shown: &str,
    max_member: usize,
) -> anyhow::Result<DirMembers> {
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
    let mut members = Vec::new();
    let mut left_out = Vec::new();
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
            if members.len() >= MAX_FILES {
                break;
            }
            let p = if d.is_empty() {
                e.name.clone()
            } else {
                format!("{d}/{}", e.name)
            };
            match fs.read_limited(Path::new(&p), max_member.saturating_add(1)) {
                Ok(b) if b.len() > max_member => anyhow::bail!(
                    "{shown}: {p}: more than the {} peerpath reads of such a file; the directory is refused (never judged from a cut)",
                    fsroot::shown_size(max_member as u64)
                ),
                Ok(b) => match b.iter().position(|&c| c == 0) {
                    Some(at) => left_out.push((
                        p,
                        format!(
                            "holds a NUL byte at offset {at}: not text, left out of the reading"
                        ),
                    )),
                    None => members.push((p, b)),
                },
                Err(e) => left_out.push((
                    p,
                    format!("could not be read ({e}); left out of the reading"),
                )),
            }
        }
    }
    Ok((members, left_out))
}

/// Reads a sosreport or supportconfig archive; `Ok(None)` when the archive is neither (no
/// member holds `lspci` output), so the caller reports its own error. A member peerpath reads
/// that is over [`MAX_MEMBER`] refuses the whole archive (never a cut of it judged).
pub fn read(bytes: &[u8], shown: &str, pci_ids: Option<&Path>) -> anyhow::Result<Option<Topology>> {
    read_capped(bytes, shown, pci_ids, MAX_MEMBER)
}

/// [`read`] with the per-member cap given (tests use a small one).
fn read_capped(
    bytes: &[u8],
    shown: &str,
    pci_ids: Option<&Path>,
    max_member: usize,
) -> anyhow::Result<Option<Topology>> {
    let mut members = fsroot::archive_members(bytes, |p| classify(p).is_some(), max_member)?;
    let Some(kind) = members
        .iter()
        .filter_map(|(p, _)| classify(p))
        .find(|(_, order)| *order <= 1)
        .map(|(k, _)| k)
    else {
        return Ok(None);
    };
    members.sort_by_key(|(p, _)| classify(p).map(|(_, o)| o).unwrap_or(9));
    join_and_read(members, kind, shown, pci_ids)
}

/// Joins members' text and reads it as `lspci` text; `Ok(None)` when it holds none.
fn join_and_read(
    members: Vec<(String, Vec<u8>)>,
    kind: &str,
    shown: &str,
    pci_ids: Option<&Path>,
) -> anyhow::Result<Option<Topology>> {
    let mut text = String::new();
    let mut cmdline = None;
    let mut used = Vec::new();
    for (p, b) in &members {
        let t = String::from_utf8_lossy(b);
        if p.ends_with("proc/cmdline") {
            cmdline = Some(t.trim().to_string());
        }
        text.push_str(&t);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
        used.push(p.as_str());
    }
    let src = SourceInfo {
        kind: "lspci".into(),
        path: shown.to_string(),
        limitations: vec![],
    };
    let Ok(mut topo) = super::lspci::read(&text, src, pci_ids) else {
        return Ok(None);
    };
    if let Some(c) = cmdline.filter(|c| !c.is_empty()) {
        topo.machine.kernel_cmdline = Fact::Known(c);
    }
    topo.source.limitations.insert(
        0,
        format!(
            "read from the {kind}'s files, joined in this order (evidence line numbers count lines of the joined text): {}",
            used.join(", ")
        ),
    );
    Ok(Some(topo))
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
        assert!(read_capped(&tar, "sos.tar", None, 4095).is_err());
        let t = read_capped(&tar, "sos.tar", None, 4096).unwrap().unwrap();
        assert_eq!(t.devices.len(), 3);
    }

    /// Issue 53: a 65 MiB lspci text in a directory was read to 64 MiB and judged; the
    /// directory is refused whole, naming the file and the cap.
    #[test]
    fn directory_text_over_the_cap_refuses_the_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("lspci-vvv.txt"), padded(65 << 20)).unwrap();
        let fs = fsroot::DirRoot::open(d.path()).unwrap();
        let e = format!("{:#}", read_dir(&fs, "ticket", None).unwrap_err());
        assert!(e.contains("lspci-vvv.txt") && e.contains("64 MiB"), "{e}");
        std::fs::write(d.path().join("lspci-vvv.txt"), padded(4096)).unwrap();
        assert!(read_dir_capped(&fs, "ticket", None, 4095).is_err());
        let t = read_dir_capped(&fs, "ticket", None, 4096).unwrap().unwrap();
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
        let t = read_dir(&fs, "ticket", None).unwrap().unwrap();
        let w = t
            .warnings
            .iter()
            .find(|w| w.path == "lspci-nic.txt")
            .unwrap_or_else(|| panic!("{:?}", t.warnings));
        assert!(w.message.contains("NUL byte at offset"), "{}", w.message);
        std::fs::remove_file(d.path().join("lspci-vvv.txt")).unwrap();
        let e = format!("{:#}", read_dir(&fs, "ticket", None).unwrap_err());
        assert!(e.contains("lspci-nic.txt") && e.contains("NUL"), "{e}");
    }
}
