//! Building and writing the archive: each touched, whitelisted path as the source holds it
//! (prefix directories, symlinks met on the way, the final entry), serial numbers redacted,
//! written as a deterministic gzip-compressed tarball.

use super::recorder::{Access, Log};
use super::{Capture, MANIFEST_NAME, Node};
use crate::sources::fsroot::{EntryKind, FsRoot};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

/// Collects the archive entries of one capture.
pub(super) struct Builder<'a> {
    pub(super) fs: &'a dyn FsRoot,
    pub(super) log: &'a Log,
    pub(super) out: BTreeMap<PathBuf, Node>,
    pub(super) redacted: Vec<String>,
    pub(super) keep_serials: bool,
    /// VPD board UUIDs met so far, numbered in the order met (see [`redact_vpd`]).
    pub(super) boards: BTreeMap<Vec<u8>, usize>,
}

impl Builder<'_> {
    /// Adds `path` as the source holds it: every existing prefix directory, every symlink met on
    /// the way (followed inside the root), and the final entry per `access`.
    pub(super) fn add(&mut self, path: &Path, access: Access) -> io::Result<()> {
        let comps: Vec<PathBuf> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(PathBuf::from(s)),
                Component::ParentDir => Some(PathBuf::from("..")),
                _ => None,
            })
            .collect();
        let last = comps.len();
        let mut todo: Vec<(PathBuf, bool)> = comps
            .into_iter()
            .enumerate()
            .map(|(i, c)| (c, i + 1 == last))
            .collect();
        todo.reverse();
        let mut cur = PathBuf::new();
        let mut links = 0;
        while let Some((c, is_final)) = todo.pop() {
            if c.as_os_str() == ".." {
                cur.pop();
                continue;
            }
            let cand = cur.join(&c);
            match self.fs.kind(&cand) {
                None => return Ok(()),
                Some(EntryKind::Dir) => {
                    self.out.entry(cand.clone()).or_insert(Node::Dir);
                    cur = cand;
                }
                Some(EntryKind::Symlink) => {
                    let target = self.fs.read_link(&cand)?;
                    self.out.insert(cand.clone(), Node::Link(target.clone()));
                    let follow = !is_final || matches!(access, Access::Read | Access::List);
                    if !follow {
                        return Ok(());
                    }
                    links += 1;
                    if links > 40 {
                        return Ok(());
                    }
                    if target.is_absolute() {
                        cur = PathBuf::new();
                    }
                    let mut tc: Vec<(PathBuf, bool)> = target
                        .components()
                        .filter_map(|c| match c {
                            Component::Normal(s) => Some(PathBuf::from(s)),
                            Component::ParentDir => Some(PathBuf::from("..")),
                            _ => None,
                        })
                        .map(|c| (c, false))
                        .collect();
                    if is_final && let Some(l) = tc.last_mut() {
                        l.1 = true;
                    }
                    for x in tc.into_iter().rev() {
                        todo.push(x);
                    }
                }
                Some(EntryKind::File) => {
                    if is_final {
                        let bytes = match self.log.content.get(path) {
                            Some(b) => b.clone(),
                            None => self.fs.read(&cand)?,
                        };
                        if self.guid_left_out(&cand) {
                            return Ok(());
                        }
                        let bytes = self.redact(&cand, bytes);
                        self.out.insert(cand, Node::File(bytes));
                    }
                    return Ok(());
                }
                Some(EntryKind::Other) => return Ok(()),
            }
        }
        Ok(())
    }

    /// An RDMA device's GUIDs (`node_guid`, `ports/<p>/gids/0`: derived from the adapter's
    /// burnt-in address, as a serial number is) are archived only with `keep_serials`; without
    /// it they are left out whole and the manifest says so (the scanner read them; `rails
    /// --fabric-map` then matches the capture by node description instead).
    fn guid_left_out(&mut self, path: &Path) -> bool {
        if self.keep_serials {
            return false;
        }
        let s = path.to_string_lossy();
        let guid = s.contains("/infiniband/")
            && (s.ends_with("/node_guid") || (s.ends_with("/gids/0") && s.contains("/ports/")));
        if guid {
            // Named by the device directory: the note itself must not spell the files.
            let dev: PathBuf = path
                .ancestors()
                .find(|a| a.parent().is_some_and(|p| p.ends_with("infiniband")))
                .map_or_else(|| path.to_path_buf(), Path::to_path_buf);
            let note = format!(
                "{}: adapter GUIDs left out (kept with --keep-serials)",
                dev.display()
            );
            if !self.redacted.contains(&note) {
                self.redacted.push(note);
            }
        }
        guid
    }

    fn redact(&mut self, path: &Path, bytes: Vec<u8>) -> Vec<u8> {
        if self.keep_serials {
            return bytes;
        }
        let name = path.file_name().and_then(|s| s.to_str()).unwrap_or("");
        if name == "information" && path.starts_with("proc/driver/nvidia/gpus") {
            let (text, n) = redact_information(&String::from_utf8_lossy(&bytes));
            if n > 0 {
                self.redacted
                    .push(format!("{}: {n} serial line(s)", path.display()));
                return text.into_bytes();
            }
        } else if name == "vpd" {
            let mut b = bytes;
            let n = redact_vpd(&mut b, &mut self.boards);
            if n > 0 {
                self.redacted.push(format!(
                    "{}: {n} VPD serial/UUID value(s) (each board UUID replaced by the board's number in this capture, so functions of one board still pair)",
                    path.display()
                ));
            }
            return b;
        } else if name == "cufile.json"
            || (path.starts_with("proc") && (name == "mountinfo" || name == "mounts"))
        {
            let (text, n) = redact_user_paths(&String::from_utf8_lossy(&bytes));
            if n > 0 {
                self.redacted.push(format!(
                    "{}: {n} user name(s) in /home/<user> paths",
                    path.display()
                ));
                return text.into_bytes();
            }
        } else if name == "config" {
            let mut b = bytes;
            if redact_dsn(&mut b) {
                self.redacted.push(format!(
                    "{}: PCIe Device Serial Number capability",
                    path.display()
                ));
            }
            return b;
        }
        bytes
    }
}

/// What a redacted value reads as.
pub const REDACTED: &str = "(redacted by peerpath capture)";

/// Replaces the value of every `GPU UUID` / `… Serial …` line of an NVIDIA `information` file
/// (unless the driver already masked it); returns the text and how many lines changed.
pub fn redact_information(text: &str) -> (String, usize) {
    let mut n = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        match body.split_once(':') {
            Some((k, v)) if serial_key(k) && !masked(v) => {
                n += 1;
                out.push_str(k);
                out.push_str(":\t ");
                out.push_str(REDACTED);
                out.push_str(nl);
            }
            _ => out.push_str(line),
        }
    }
    (out, n)
}

/// What a user name in a redacted path reads as (`/home/(user)/cufile_logs`): no space, quote
/// or slash, so JSON strings and mount-table fields keep their grammar.
pub const USER_REDACTED: &str = "(user)";

/// Replaces the user name of every `/home/<user>` path (cuFile's `logging.dir`, a mount point
/// under a home directory) with [`USER_REDACTED`]; returns the text and how many were
/// replaced. cufile.json is configuration, not a secret: only the names of people go.
pub fn redact_user_paths(text: &str) -> (String, usize) {
    const HOME: &str = "/home/";
    let mut out = String::with_capacity(text.len());
    let mut n = 0;
    let mut rest = text;
    while let Some(i) = rest.find(HOME) {
        out.push_str(&rest[..i + HOME.len()]);
        rest = &rest[i + HOME.len()..];
        let end = rest
            .find(['/', '"', '\\', '\'', ',', ' ', '\t', '\n', ']'])
            .unwrap_or(rest.len());
        let user = &rest[..end];
        // NVIDIA's placeholders (`/home/<xxx>`) and an empty name are no one's.
        if user.is_empty() || user.starts_with('<') || user == USER_REDACTED {
            continue;
        }
        out.push_str(USER_REDACTED);
        rest = &rest[end..];
        n += 1;
    }
    out.push_str(rest);
    (out, n)
}

/// Zeroes the serial number of the PCIe Device Serial Number extended capability (ID 0x0003)
/// in a config-space image; returns whether one was found.
pub fn redact_dsn(b: &mut [u8]) -> bool {
    let mut ptr = 0x100usize;
    let mut visits = 0;
    let mut found = false;
    while ptr >= 0x100 && ptr + 4 <= b.len() && visits < 96 {
        visits += 1;
        let hdr = u32::from_le_bytes([b[ptr], b[ptr + 1], b[ptr + 2], b[ptr + 3]]);
        if hdr == 0 || hdr == 0xffff_ffff {
            break;
        }
        if hdr & 0xffff == 0x0003 && ptr + 12 <= b.len() {
            b[ptr + 4..ptr + 12].fill(0);
            found = true;
        }
        ptr = (hdr >> 20) as usize & 0xffc;
    }
    found
}

/// Redacts a VPD image in place: the serial number (`SN`) becomes `X`s; each board UUID (`V3`,
/// `VU`) becomes the board's number in this capture (`boards`, in the order met), right-aligned
/// and zero-padded to the value's length, so the functions of one board still carry one value
/// and Data Direct pairing works from the snapshot, while nothing identifies the board across
/// captures. Lengths are kept (the VPD's structure stays valid). Returns how many values
/// changed.
pub fn redact_vpd(b: &mut [u8], boards: &mut BTreeMap<Vec<u8>, usize>) -> usize {
    let Some((_, kws)) = crate::parse::vpd::spans(b) else {
        return 0;
    };
    let mut n = 0;
    for (k, r) in kws {
        match k.as_str() {
            "SN" => b[r].fill(b'X'),
            "V3" | "VU" => {
                let next = boards.len();
                let id = *boards.entry(b[r.clone()].to_vec()).or_insert(next);
                let text = format!("{:0>w$}", format!("board{id}"), w = r.len());
                // Longer than the value only for absurdly short values: keep its tail.
                let tail = &text.as_bytes()[text.len() - r.len()..];
                b[r].copy_from_slice(tail);
            }
            _ => continue,
        }
        n += 1;
    }
    n
}

impl Capture {
    /// Writes the capture as a gzip-compressed tarball. Entries are in path order, owned by
    /// root with mtime 0, so the same node gives the same bytes.
    pub fn write_tar_gz(&self, w: impl Write) -> io::Result<()> {
        let gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
        let mut tb = tar::Builder::new(gz);
        tb.follow_symlinks(false);
        for (path, node) in &self.entries {
            let mut h = tar::Header::new_gnu();
            h.set_mtime(0);
            h.set_uid(0);
            h.set_gid(0);
            match node {
                Node::Dir => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_mode(0o755);
                    h.set_size(0);
                    tb.append_data(&mut h, path, io::empty())?;
                }
                Node::Link(t) => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_mode(0o777);
                    h.set_size(0);
                    tb.append_link(&mut h, path, t)?;
                }
                Node::File(bytes) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_mode(0o444);
                    h.set_size(bytes.len() as u64);
                    tb.append_data(&mut h, path, &bytes[..])?;
                }
            }
        }
        tb.into_inner()?.finish()?;
        Ok(())
    }

    /// Replaces the manifest's NVML note (the CLI knows why a live capture has no NVML facts).
    pub fn set_nvml_note(&mut self, note: &str) -> io::Result<()> {
        self.manifest.nvml = note.to_string();
        let text = serde_json::to_string_pretty(&self.manifest).map_err(io::Error::other)?;
        self.entries
            .insert(PathBuf::from(MANIFEST_NAME), Node::File(text.into_bytes()));
        Ok(())
    }

    /// Stores the RDMA registration order read from the live kernel as
    /// [`crate::sources::rdma_order::RDMA_NAME`] and says so in the manifest.
    pub fn set_rdma_order(&mut self, o: &crate::sources::rdma_order::RdmaOrder) -> io::Result<()> {
        use crate::sources::rdma_order::RDMA_NAME;
        let text = serde_json::to_string_pretty(o).map_err(io::Error::other)?;
        self.entries
            .insert(PathBuf::from(RDMA_NAME), Node::File(text.into_bytes()));
        self.manifest.rdma_order = format!("included as {RDMA_NAME}: {}", o.message);
        let m = serde_json::to_string_pretty(&self.manifest).map_err(io::Error::other)?;
        self.entries
            .insert(PathBuf::from(MANIFEST_NAME), Node::File(m.into_bytes()));
        Ok(())
    }

    /// The tarball as bytes.
    pub fn to_tar_gz(&self) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        self.write_tar_gz(&mut v)?;
        Ok(v)
    }
}

/// Whether a value is already masked (the NVIDIA driver shows `GPU-????????-…` to non-root
/// readers); such values carry no serial and are kept as they are.
pub(super) fn masked(v: &str) -> bool {
    let v = v.trim();
    let v = v.strip_prefix("GPU-").unwrap_or(v);
    !v.is_empty() && v.chars().all(|c| c == '?' || c == '-')
}

/// Whether an attribute name holds a serial number (`uuid`, `GPU UUID`, `… Serial …`).
pub(super) fn serial_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    k.contains("uuid") || k.contains("serial")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_paths_redacted_grammar_kept() {
        let t = "{ // e.g. \"/home/<xxx>/cufile.json\"\n \"logging\": { \"dir\": \"/home/alice/cufile_logs\" },\n \"x\": [\"/home/bob\"] }";
        let (r, n) = redact_user_paths(t);
        assert_eq!(n, 2, "{r}");
        assert!(r.contains("/home/(user)/cufile_logs") && r.contains("\"/home/(user)\""));
        assert!(r.contains("/home/<xxx>/cufile.json"));
        assert!(crate::parse::cufile::parse(&r).is_ok());
        let m = "40 29 259:3 / /home/carol\\040x rw - xfs /dev/nvme1n1 rw\n";
        let (r, n) = redact_user_paths(m);
        assert_eq!(
            (r.as_str(), n),
            (
                "40 29 259:3 / /home/(user)\\040x rw - xfs /dev/nvme1n1 rw\n",
                1
            )
        );
        assert_eq!(
            crate::parse::mounts::mountinfo(&r).0[0].mount_point,
            "/home/(user) x"
        );
    }

    #[test]
    fn information_uuid_redacted() {
        let t =
            "Model: \t\t NVIDIA H100\nGPU UUID: \t GPU-1234-5678\nBus Location: \t 0000:17:00.0\n";
        let (r, n) = redact_information(t);
        assert_eq!(n, 1);
        assert!(!r.contains("GPU-1234"));
        assert!(r.contains("Bus Location: \t 0000:17:00.0\n"));
        assert!(r.contains("GPU UUID:"));
    }

    #[test]
    fn vpd_serial_redacted_uuid_digested() {
        let img = crate::parse::vpd::build("CX8", &[("SN", "MT2423X0001"), ("V3", "aabbccddee")]);
        let other = crate::parse::vpd::build("CX8", &[("SN", "MT2423X0002"), ("V3", "1122334455")]);
        let mut boards = BTreeMap::new();
        let mut a = img.clone();
        assert_eq!(redact_vpd(&mut a, &mut boards), 2);
        let v = crate::parse::vpd::parse(&a).unwrap();
        assert_eq!(v.keyword("SN"), Some("XXXXXXXXXXX"));
        assert_eq!(v.keyword("V3"), Some("0000board0"));
        // Same UUID, same board number: functions of one board still pair; another board gets
        // the next number.
        let mut b = img;
        redact_vpd(&mut b, &mut boards);
        assert_eq!(a, b);
        let mut c = other;
        redact_vpd(&mut c, &mut boards);
        let v = crate::parse::vpd::parse(&c).unwrap();
        assert_eq!(v.keyword("V3"), Some("0000board1"));
    }

    #[test]
    fn dsn_zeroed() {
        let mut b = vec![0u8; 4096];
        // ACS at 0x100 -> DSN at 0x140 -> end.
        b[0x100..0x104].copy_from_slice(&(0x000du32 | (1 << 16) | (0x140 << 20)).to_le_bytes());
        b[0x140..0x144].copy_from_slice(&(0x0003u32 | (1 << 16)).to_le_bytes());
        b[0x144..0x14c].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(redact_dsn(&mut b));
        assert_eq!(&b[0x144..0x14c], &[0; 8]);
        assert_eq!(b[0x140], 3);
    }
}
