//! Files named on the command line (`-i`, `--pci-ids`, `--evidence`, `--profile`, `--font`,
//! spec files, fleet inputs): opened `O_NONBLOCK | O_CLOEXEC | O_NOCTTY`, checked with `fstat`
//! before a byte is read (a FIFO, socket or device is refused, never waited on or read
//! forever), and read to a stated bound. The path itself may be a link: the caller named it.

use crate::sources::fsroot::special_file_error;
use rustix::fs::{FileType, Mode, OFlags};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Largest peerpath JSON, hwloc XML or NCCL XML read (a 16,000-function node's JSON is about
/// 40 MiB).
pub const MAX_TEXT_INPUT_BYTES: u64 = 256 << 20;

/// Largest small side file read whole (`--evidence`, `--profile`, spec files, fonts, pci.ids).
pub const MAX_SIDE_FILE_BYTES: u64 = 64 << 20;

/// Largest job output `evidence` reads (an `NCCL_DEBUG=INFO` log of a 1,000-rank job is tens
/// of MiB): `evidence` holds about 9× a real log, up to ~40× one of a single line per process
/// (its report and output are then several times the input; docs/bad-input.md).
pub const MAX_EVIDENCE_BYTES: u64 = 128 << 20;

/// An input path, opened and checked.
pub enum Opened {
    /// A directory.
    Dir,
    /// A regular file and its size as `fstat` gave it (procfs files say 0).
    File(File, u64),
}

/// Opens an input path without blocking and says what it is; anything but a directory or a
/// regular file is an error naming its type.
pub fn open_input(path: &Path) -> io::Result<Opened> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        // A socket cannot be opened at all (ENXIO): name what it is rather than the errno.
        match rustix::fs::stat(path).map(|st| FileType::from_raw_mode(st.st_mode)) {
            Ok(t) if !matches!(t, FileType::RegularFile | FileType::Directory) => {
                special_file_error(t)
            }
            _ => io::Error::from(e),
        }
    })?;
    let st = rustix::fs::fstat(&fd)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => Ok(Opened::Dir),
        FileType::RegularFile => Ok(Opened::File(File::from(fd), st.st_size.max(0) as u64)),
        t => Err(special_file_error(t)),
    }
}

/// Opens a regular input file (not a directory) for streaming, reading at most `max` bytes:
/// the reader fails with a clear error past that.
pub fn open_input_file(path: &Path, max: u64) -> io::Result<impl Read> {
    let (f, _) = regular_input(path, max)?;
    Ok(Bounded {
        inner: f,
        left: max,
        max,
    })
}

/// Opens a regular input file and gives its size, refusing a directory, a special file or a
/// size over `max`.
fn regular_input(path: &Path, max: u64) -> io::Result<(File, u64)> {
    match open_input(path)? {
        Opened::Dir => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a directory, not a file",
        )),
        Opened::File(_, len) if len > max => Err(too_large(len, max)),
        Opened::File(f, len) => Ok((f, len)),
    }
}

/// Reads a whole regular input file of at most `max` bytes.
pub fn read_input(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let (file, len) = regular_input(path, max)?;
    // Room for the whole file as `fstat` gave it, and a byte to see its end: one read for a
    // file that is not growing (procfs says 0, and the buffer grows as it goes).
    let mut v = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    Bounded {
        inner: file,
        left: max,
        max,
    }
    .read_to_end(&mut v)?;
    Ok(v)
}

/// Reads a whole regular input file of at most `max` bytes as UTF-8 text (the error names the
/// first byte that is not).
pub fn read_input_text(path: &Path, max: u64) -> io::Result<String> {
    String::from_utf8(read_input(path, max)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

fn too_large(len: u64, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{} bytes, more than the {} MiB peerpath reads of such a file; refused",
            len,
            max >> 20
        ),
    )
}

/// A reader that fails (rather than silently stops) past `max` bytes.
struct Bounded<R> {
    inner: R,
    left: u64,
    max: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            return Err(too_large(self.max + 1, self.max));
        }
        let n = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got as u64;
        Ok(got)
    }
}

/// Why an entry of a directory of inputs `dir` (canonical: a fleet directory, an `lldpctl` map
/// directory) is not read, the one rule for both: only regular files and directories under it
/// are; a link is followed only when where it leads is one of those and lies under `dir` (a
/// planted `zz -> /` would otherwise make this machine a node). Nothing is opened: a FIFO is
/// named from its type, never waited on.
pub fn dir_entry_refusal(dir: &Path, e: &std::fs::DirEntry) -> Option<String> {
    let t = match e.file_type() {
        Ok(t) => t,
        Err(err) => return Some(format!("cannot read its type ({err})")),
    };
    if t.is_file() || t.is_dir() {
        return None;
    }
    if !t.is_symlink() {
        return Some(special_kind(&t).to_string() + ", not a regular file or directory; not read");
    }
    let to = std::fs::read_link(e.path())
        .map(|l| l.display().to_string())
        .unwrap_or_default();
    match std::fs::canonicalize(e.path()) {
        Ok(target) if target.starts_with(dir) && target != dir => {
            match std::fs::metadata(&target) {
                Ok(m) if m.is_file() || m.is_dir() => None,
                Ok(m) => Some(format!(
                    "a link to {}, {}, not a regular file or directory; not read",
                    target.display(),
                    special_kind(&m.file_type())
                )),
                Err(err) => Some(format!("a link to {to} that cannot be read ({err})")),
            }
        }
        Ok(target) => Some(format!(
            "a link out of {} (to {}); not read",
            dir.display(),
            target.display()
        )),
        Err(err) => Some(format!(
            "a link to {to} that does not resolve ({err}); not read"
        )),
    }
}

fn special_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = read_input(&fifo, 10).err().unwrap();
        assert!(e.to_string().contains("named pipe"), "{e}");
        let e = read_input(Path::new("/dev/zero"), 10).err().unwrap();
        assert!(e.to_string().contains("character device"), "{e}");
        let f = d.path().join("f");
        std::fs::write(&f, b"0123456789ab").unwrap();
        let e = read_input(&f, 10).err().unwrap();
        assert!(e.to_string().contains("12 bytes"), "{e}");
        assert_eq!(read_input(&f, 12).unwrap(), b"0123456789ab");
        assert!(matches!(open_input(d.path()).unwrap(), Opened::Dir));
    }
}
