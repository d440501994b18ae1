//! Support archives an operator attaches to a case — a `sosreport` (`sos report`, Red Hat and
//! Ubuntu) or a SUSE `supportconfig` — read in memory without extracting: the members that
//! hold `lspci` output (`sos_commands/pci/lspci_*`, supportconfig's `hardware.txt`), the RDMA
//! tools (`sos_commands/infiniband/*`, `ib.txt`), `numactl --hardware`, the kernel log
//! (`sos_commands/kernel/dmesg`: IOMMU mode, AER and Xid lines) and the kernel command
//! line (`proc/cmdline`, supportconfig's `boot.txt`) are joined and read as `lspci` text
//! ([`super::lspci`]).

use super::fsroot;
use crate::model::fact::Fact;
use crate::model::topology::{SourceInfo, Topology};
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
/// (nothing outside it, no link followed out). `Ok(None)` when none holds `lspci` output.
pub fn read_dir(
    fs: &dyn fsroot::FsRoot,
    shown: &str,
    pci_ids: Option<&Path>,
) -> anyhow::Result<Option<Topology>> {
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
            if let Ok(b) = fs.read_limited(Path::new(&p), MAX_MEMBER)
                && !b.contains(&0)
            {
                members.push((p, b));
            }
        }
    }
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
    join_and_read(members, "directory", shown, pci_ids)
}

/// Reads a sosreport or supportconfig archive; `Ok(None)` when the archive is neither (no
/// member holds `lspci` output), so the caller reports its own error.
pub fn read(bytes: &[u8], shown: &str, pci_ids: Option<&Path>) -> anyhow::Result<Option<Topology>> {
    let mut members = fsroot::archive_members(bytes, |p| classify(p).is_some(), MAX_MEMBER)?;
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
}
