//! The one file-access layer: a read-only view of a filesystem root, either a directory on
//! disk ([`DirRoot`]: the live `/` or an extracted snapshot, resolved by the kernel inside the
//! root) or a snapshot tarball held in memory ([`MemRoot`]). All paths are relative to the root
//! (`sys/bus/pci/devices`); links are resolved inside the root, never outside it; only regular
//! files are read, each to a bound. Files named on the command line go through [`input`].

mod dir;
pub mod input;

pub use dir::{DirRoot, MAX_DIR_ENTRIES, MAX_PATH_BYTES, Resolver};

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::ops::Bound;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Most links followed while resolving one path (the kernel's `MAXSYMLINKS`); more is a loop
/// (`ELOOP`).
pub const MAX_LINKS: usize = 40;

/// The error for a file that is not a regular file: named by its type, never opened for a
/// read that could block (a FIFO) or never end (a device).
fn special_file_error(t: rustix::fs::FileType) -> io::Error {
    use rustix::fs::FileType as T;
    let what = match t {
        T::Fifo => "a named pipe (FIFO)",
        T::Socket => "a socket",
        T::CharacterDevice => "a character device",
        T::BlockDevice => "a block device",
        T::Directory => "a directory",
        T::Symlink => "a symbolic link",
        _ => "a special file",
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file; not read"),
    )
}

/// What a directory entry is (without following it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Anything else (device node, socket).
    Other,
}

/// One directory entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// File name (sysfs names are ASCII; non-UTF-8 names are skipped with a warning).
    pub name: String,
    /// Kind, not followed.
    pub kind: EntryKind,
}

/// Read-only access to a root. Implementations must not write.
pub trait FsRoot: Send + Sync {
    /// Reads a whole file (at most `limit` bytes).
    fn read_limited(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>>;
    /// Target of a symlink, as stored.
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;
    /// Entries of a directory, sorted by name. Follows a symlinked directory.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<Entry>>;
    /// Kind of a path without following a final symlink; `None` if it does not exist.
    fn kind(&self, path: &Path) -> Option<EntryKind>;
    /// Human description (`/`, `fixtures/x.tar.bz2`).
    fn describe(&self) -> String;

    /// The identity of the file at `path` (its device and inode), links followed inside the
    /// root: two paths with one identity are one file (hard links), read once. `None` where
    /// the root has no such identity (an archive held in memory) or the file cannot be opened.
    fn file_id(&self, _path: &Path) -> Option<(u64, u64)> {
        None
    }

    /// Reads a whole file of at most [`MAX_ATTR_BYTES`] (sysfs attributes are at most a page;
    /// `config` 4 KiB): a longer one is an error saying so, never silently cut.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        read_whole(self, path, MAX_ATTR_BYTES)
    }

    /// Opens a directory once for several look-ups of names directly in it (a device's
    /// attributes and links), without listing it: a name that is absent is `NotFound` from the
    /// read itself, which costs less than a listing of a directory of tens of entries. The
    /// default goes through the path-based methods; [`DirRoot`] keeps one descriptor, so each
    /// name is a one-component lookup instead of a walk from the root.
    fn open_dir<'a>(&'a self, path: &Path) -> io::Result<Box<dyn OpenDir + 'a>> {
        if !self.is_dir(path) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: no such directory", path.display()),
            ));
        }
        Ok(path_dir(self, path))
    }

    /// Whether `path`, links followed inside the root, is a directory.
    fn is_dir(&self, path: &Path) -> bool {
        self.resolve(path)
            .is_ok_and(|p| self.kind(&p) == Some(EntryKind::Dir))
    }

    /// Resolves `path` to a path with no symlinks, inside the root. `..` never climbs above the
    /// root; absolute link targets are taken relative to the root (as `chroot` would); at most
    /// 40 links are followed (ELOOP beyond).
    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let mut todo: Vec<PathBuf> = Vec::new();
        push_components(&mut todo, path);
        todo.reverse();
        let mut out = PathBuf::new();
        let mut links = 0;
        while let Some(c) = todo.pop() {
            if c.as_os_str() == ".." {
                out.pop();
                continue;
            }
            let cand = out.join(&c);
            match self.kind(&cand) {
                Some(EntryKind::Symlink) => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(io::Error::other(format!(
                            "too many levels of symbolic links at {}",
                            cand.display()
                        )));
                    }
                    let target = self.read_link(&cand)?;
                    if target.is_absolute() {
                        out = PathBuf::new();
                    }
                    let mut comps = Vec::new();
                    push_components(&mut comps, &target);
                    for c in comps.into_iter().rev() {
                        todo.push(c);
                    }
                }
                Some(_) => out = cand,
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("{} does not exist", cand.display()),
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// A directory opened by [`FsRoot::open_dir`]: names in it read relative to it. Names are
/// single components (`vendor`, `driver`); anything else is resolved from the root like a path.
pub trait OpenDir {
    /// The directory's path, relative to the root.
    fn path(&self) -> &Path;
    /// Reads the file `name` in the directory, at most `limit` bytes.
    fn read_limited(&self, name: &str, limit: usize) -> io::Result<Vec<u8>>;
    /// Target of the link `name` in the directory, as stored.
    fn read_link(&self, name: &str) -> io::Result<PathBuf>;

    /// Reads the file `name`, at most [`MAX_ATTR_BYTES`] (as [`FsRoot::read`]): a longer one
    /// is an error saying so.
    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        let b = self.read_limited(name, MAX_ATTR_BYTES + 1)?;
        if b.len() > MAX_ATTR_BYTES {
            return Err(too_long(MAX_ATTR_BYTES));
        }
        Ok(b)
    }
}

/// An [`OpenDir`] that reads through the path-based methods of `fs` (the default of
/// [`FsRoot::open_dir`], for roots that hold no descriptors).
pub fn path_dir<'a, F: FsRoot + ?Sized>(fs: &'a F, path: &Path) -> Box<dyn OpenDir + 'a> {
    Box::new(PathDir {
        fs,
        path: path.to_path_buf(),
    })
}

/// [`OpenDir`] through the path-based methods of any root.
struct PathDir<'a, F: FsRoot + ?Sized> {
    fs: &'a F,
    path: PathBuf,
}

impl<F: FsRoot + ?Sized> OpenDir for PathDir<'_, F> {
    fn path(&self) -> &Path {
        &self.path
    }
    fn read_limited(&self, name: &str, limit: usize) -> io::Result<Vec<u8>> {
        self.fs.read_limited(&self.path.join(name), limit)
    }
    fn read_link(&self, name: &str) -> io::Result<PathBuf> {
        self.fs.read_link(&self.path.join(name))
    }
}

fn push_components(out: &mut Vec<PathBuf>, p: &Path) {
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(PathBuf::from(s)),
            Component::ParentDir => out.push(PathBuf::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}

/// Reads a whole file inside a root, at most `cap` bytes: a longer file is an error saying so
/// (`InvalidData`), never a silent cut that a parser would then misread (a mount table cut
/// mid-line, a `properties` file cut mid-pair). Errors are the root's own (`NotFound` for an
/// absent file; a FIFO, device or socket refused by its type).
pub fn read_whole<F: FsRoot + ?Sized>(fs: &F, path: &Path, cap: usize) -> io::Result<Vec<u8>> {
    let b = fs.read_limited(path, cap.saturating_add(1))?;
    if b.len() > cap {
        return Err(too_long(cap));
    }
    Ok(b)
}

/// Largest file inside an input read by [`FsRoot::read`] (a sysfs attribute, `/proc/cpuinfo`
/// of a few hundred CPUs).
pub const MAX_ATTR_BYTES: usize = 1 << 20;

fn too_long(cap: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "larger than the {} peerpath reads of this file; not read",
            shown_size(cap as u64)
        ),
    )
}

/// A cap in words (`4 MiB`, `64 KiB`, `300 bytes`).
pub fn shown_size(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// Joins a relative link target onto the directory holding the link, lexically.
pub fn join_link(link: &Path, target: &Path) -> PathBuf {
    let mut out: Vec<std::ffi::OsString> = if target.is_absolute() {
        Vec::new()
    } else {
        link.parent()
            .map(|p| {
                p.components()
                    .filter_map(|c| match c {
                        Component::Normal(s) => Some(s.to_os_string()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    for c in target.components() {
        match c {
            Component::Normal(s) => out.push(s.to_os_string()),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out.iter().collect()
}

/// Reads at most `left` bytes, then fails with a clear error (instead of a silent cut that
/// tar reports as a confusing "unexpected EOF").
struct LimitedReader<'c, R> {
    inner: R,
    left: u64,
    charge: Option<&'c mut super::budget::Charge>,
}

impl<R: Read> Read for LimitedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "snapshot is larger than {} MiB uncompressed; extract it and pass the directory",
                    MAX_SNAPSHOT_BYTES >> 20
                ),
            ));
        }
        let n = buf.len().min(self.left as usize);
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got as u64;
        if let Some(c) = self.charge.as_deref_mut() {
            c.take(got as u64);
        }
        Ok(got)
    }
}

/// A node of an in-memory tree.
#[derive(Debug, Clone)]
pub enum MemNode {
    /// File contents.
    File(Vec<u8>),
    /// Symlink target.
    Symlink(PathBuf),
    /// Directory (children are the map entries under it).
    Dir,
}

impl MemNode {
    fn entry_kind(&self) -> EntryKind {
        match self {
            MemNode::File(_) => EntryKind::File,
            MemNode::Dir => EntryKind::Dir,
            MemNode::Symlink(_) => EntryKind::Symlink,
        }
    }
}

/// A snapshot held in memory (a tarball read without extracting it).
///
/// Paths are keyed by their bytes with components joined by one `/` ([`key`]): a look-up is a
/// byte comparison, not a walk over `Path` components (which cost most of reading a snapshot,
/// measured with callgrind for issue 31). Byte order keeps the entries below a directory `d`
/// together, under the prefix `d/`.
pub struct MemRoot {
    nodes: BTreeMap<Box<[u8]>, MemNode>,
    name: String,
    skipped: Vec<(PathBuf, String)>,
}

/// Largest snapshot accepted, uncompressed (a real node's whitelisted sysfs is a few MiB).
pub const MAX_SNAPSHOT_BYTES: u64 = 512 << 20;

/// The map key of a path: its components joined by `/` (a leading `/` kept for an absolute
/// path, `.` dropped, `..` kept as a name), so that two spellings of one path meet. Borrowed
/// when the path is spelled so already, as every path the scanner builds is.
fn key(path: &Path) -> Cow<'_, [u8]> {
    let b = path.as_os_str().as_bytes();
    let body = b.strip_prefix(b"/").unwrap_or(b);
    if body.is_empty()
        || body
            .split(|&c| c == b'/')
            .all(|c| !c.is_empty() && c != b".")
    {
        return Cow::Borrowed(b);
    }
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    if b.starts_with(b"/") {
        out.push(b'/');
    }
    for c in path.components() {
        let name = match c {
            Component::Normal(s) => s.as_bytes(),
            Component::ParentDir => b"..",
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
        };
        if !out.is_empty() && out != b"/" {
            out.push(b'/');
        }
        out.extend_from_slice(name);
    }
    Cow::Owned(out)
}

/// The parent of a key (`None` at the top).
fn parent_key(k: &[u8]) -> Option<&[u8]> {
    memchr::memrchr(b'/', k)
        .map(|i| &k[..i])
        .filter(|p| !p.is_empty())
}

/// A tar stream's bytes: decompressed (gzip, bzip2 or xz by magic bytes, every member of a
/// multi-member stream — `cat a.tar.gz b.tar.gz`, `pigz`, `pbzip2` — read in turn, at most
/// [`MAX_SNAPSHOT_BYTES`], every byte taken from `charge`), or the input itself when it is a
/// plain tar. A stream cut short or corrupt is an error naming the compressed byte where
/// decompression stopped, never a silently shorter archive.
fn tar_bytes<'b>(
    bytes: &'b [u8],
    charge: Option<&mut super::budget::Charge>,
) -> io::Result<Cow<'b, [u8]>> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        // The gzip trailer's ISIZE (the size modulo 2^32) sizes the buffer once; a lying
        // trailer only costs a regrowth, never more than deflate's 1032:1 bound allows.
        let isize = bytes
            .len()
            .checked_sub(4)
            .map(|i| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]))
            .unwrap_or(0) as usize;
        let bound = bytes
            .len()
            .saturating_mul(1032)
            .min(MAX_SNAPSHOT_BYTES as usize);
        let mut d = flate2::bufread::MultiGzDecoder::new(bytes);
        let r = decompress(&mut d, isize.min(bound), charge);
        let left = d.get_ref().len();
        named_offset(r, "gzip", bytes.len() - left, bytes.len())
    } else if bytes.starts_with(b"BZh") {
        let mut d = bzip2::bufread::MultiBzDecoder::new(bytes);
        let r = decompress(&mut d, 0, charge);
        let left = d.get_ref().len();
        named_offset(r, "bzip2", bytes.len() - left, bytes.len())
    } else if bytes.starts_with(XZ_MAGIC) {
        let mut d = xz2::bufread::XzDecoder::new_multi_decoder(bytes);
        let r = decompress(&mut d, 0, charge);
        let left = d.get_ref().len();
        named_offset(r, "xz", bytes.len() - left, bytes.len())
    } else {
        Ok(Cow::Borrowed(bytes))
    }
}

/// Reads a decompressor to its end, at most [`MAX_SNAPSHOT_BYTES`].
fn decompress(
    d: &mut dyn Read,
    hint: usize,
    charge: Option<&mut super::budget::Charge>,
) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(hint);
    LimitedReader {
        inner: d,
        left: MAX_SNAPSHOT_BYTES,
        charge,
    }
    .read_to_end(&mut out)?;
    Ok(out)
}

/// A decompression error with the compressed byte where it stopped (the size cap's own error
/// is kept as it is).
fn named_offset(
    r: io::Result<Vec<u8>>,
    what: &str,
    at: usize,
    of: usize,
) -> io::Result<Cow<'static, [u8]>> {
    match r {
        Ok(v) => Ok(Cow::Owned(v)),
        Err(e) if e.to_string().contains("MiB uncompressed") => Err(e),
        Err(e) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{what} stream is truncated or corrupt: decompression stopped at compressed byte {at} of {of} ({e})"
            ),
        )),
    }
}

/// The first bytes of an xz stream.
pub const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0];

/// A tar archive's bytes, decompressed once ([`tar_bytes`]: gzip, bzip2 or xz by magic bytes,
/// at most [`MAX_SNAPSHOT_BYTES`], every inflated byte taken from `charge`), for a caller that
/// walks one inflated copy more than once ([`holds_path`], [`archive_member_slices`],
/// [`MemRoot::from_tar_data`]) instead of inflating it again for each reader.
pub fn tar_data<'b>(
    bytes: &'b [u8],
    charge: Option<&mut super::budget::Charge>,
) -> io::Result<Cow<'b, [u8]>> {
    tar_bytes(bytes, charge)
}

/// Whether some member path of an inflated tar ([`tar_data`]) holds `needle` as whole
/// components (at its start or after a `/`); a malformed archive is an error.
pub fn holds_path(data: &[u8], needle: &str) -> io::Result<bool> {
    let n = needle.as_bytes();
    let mut found = false;
    walk_tar(data, |m| {
        let p: &[u8] = &m.path;
        found |= memchr::memmem::find_iter(p, n).any(|i| {
            let end = i + n.len();
            (i == 0 || p[i - 1] == b'/') && (end == p.len() || p[end] == b'/')
        });
        Ok(())
    })?;
    Ok(found)
}

/// The regular files of an inflated tar ([`tar_data`]) whose path `want` accepts: `(path,
/// bytes)` in archive order, each a slice of `data` (nothing copied); a wanted member over
/// `max_each` bytes is an error of kind `FileTooLarge` (never a cut). A malformed archive is
/// an error.
pub fn archive_member_slices(
    data: &[u8],
    want: impl Fn(&str) -> bool,
    max_each: usize,
) -> io::Result<Vec<(String, &[u8])>> {
    let mut out = Vec::new();
    walk_tar(data, |m| {
        if !m.kind.is_file() {
            return Ok(());
        }
        let path = String::from_utf8_lossy(&m.path).into_owned();
        if want(&path) {
            if m.body.len() > max_each {
                // Refused whole, never a cut judged: the caller says so (kind `FileTooLarge`).
                return Err(io::Error::new(
                    io::ErrorKind::FileTooLarge,
                    format!(
                        "member {path:?} is {} bytes, more than the {} peerpath reads of such a member; the archive is refused (never judged from a cut)",
                        m.body.len(),
                        shown_size(max_each as u64)
                    ),
                ));
            }
            out.push((path, m.body));
        }
        Ok(())
    })?;
    Ok(out)
}

/// One member of a tar archive held in memory, as [`walk_tar`] gives it.
struct Member<'a> {
    /// Path as stored (GNU long name or pax `path` applied).
    path: Cow<'a, [u8]>,
    /// Entry type.
    kind: tar::EntryType,
    /// Link target (GNU long link or pax `linkpath` applied).
    link: Option<Cow<'a, [u8]>>,
    /// The member's data, where the archive holds it.
    body: &'a [u8],
}

fn bad_tar(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Walks a tar archive held in memory, header by header, with the `tar` crate's header
/// parsing (`Header`, `PaxExtensions`): checksums checked, GNU long names and links and pax
/// `path`, `linkpath` and `size` applied, the walk ending at the first zero block (as
/// `tar::Archive` does). Each member's data is a slice of `data`: nothing is copied, and no
/// scratch buffer is cleared per header (what made `tar::Archive` cost 20% of a fleet's read,
/// measured with callgrind for issue 31). A member whose data runs past the end is an error.
fn walk_tar<'a>(
    data: &'a [u8],
    mut each: impl FnMut(Member<'a>) -> io::Result<()>,
) -> io::Result<()> {
    const BLOCK: usize = 512;
    let mut pos = 0usize;
    // Extension members' data, for the next member: GNU long name, GNU long link, pax.
    let mut long_name: Option<&[u8]> = None;
    let mut long_link: Option<&[u8]> = None;
    let mut pax: Option<&[u8]> = None;
    loop {
        let Some(block) = data.get(pos..pos + BLOCK) else {
            // GNU tar, bsdtar and the `tar` crate all end an archive with zero blocks; an
            // archive that stops without them (or inside a header) was cut.
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                if pos >= data.len() {
                    format!(
                        "snapshot is truncated: the archive ends at byte {} without its end-of-archive blocks",
                        data.len()
                    )
                } else {
                    format!(
                        "snapshot is truncated: a header at byte {pos} is cut after {} of its 512 bytes",
                        data.len() - pos
                    )
                },
            ));
        };
        if block.iter().all(|&b| b == 0) {
            break;
        }
        let h = tar::Header::from_byte_slice(block);
        let sum = block[..148]
            .iter()
            .chain(&block[156..])
            .map(|&b| u32::from(b))
            .sum::<u32>()
            + 8 * 32;
        if h.cksum()? != sum {
            return Err(bad_tar(format!(
                "archive header checksum mismatch at byte {pos}"
            )));
        }
        let kind = h.entry_type();
        let (mut size, mut path, mut link) = (h.entry_size()?, None, None);
        // A pax header applies to the next member that is not itself an extension header.
        let extension = kind.is_gnu_longname()
            || kind.is_gnu_longlink()
            || kind.is_pax_local_extensions()
            || kind.is_pax_global_extensions();
        if !extension && let Some(p) = pax.take() {
            for e in tar::PaxExtensions::new(p) {
                let e = e?;
                match e.key_bytes() {
                    b"path" => path = Some(Cow::Borrowed(e.value_bytes())),
                    b"linkpath" => link = Some(Cow::Borrowed(e.value_bytes())),
                    b"size" => {
                        size = e
                            .value()
                            .ok()
                            .and_then(|v| v.parse().ok())
                            .ok_or_else(|| bad_tar("pax size is not a number".into()))?
                    }
                    _ => {}
                }
            }
        }
        let start = pos + BLOCK;
        let body = usize::try_from(size)
            .ok()
            .and_then(|n| data.get(start..start.checked_add(n)?))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "snapshot is truncated: {} (header at byte {pos}) ends past the archive's end at byte {}",
                        String::from_utf8_lossy(&h.path_bytes()),
                        data.len()
                    ),
                )
            })?;
        pos = start + body.len().div_ceil(BLOCK) * BLOCK;
        let nul_cut = |b: &'a [u8]| b.split(|&c| c == 0).next().unwrap_or(b);
        if kind.is_gnu_longname() {
            long_name = Some(nul_cut(body));
        } else if kind.is_gnu_longlink() {
            long_link = Some(nul_cut(body));
        } else if kind.is_pax_local_extensions() {
            pax = Some(body);
        } else if !kind.is_pax_global_extensions() {
            let path = path
                .or(long_name.take().map(Cow::Borrowed))
                .unwrap_or_else(|| h.path_bytes());
            let link = link
                .or(long_link.take().map(Cow::Borrowed))
                .or_else(|| h.link_name_bytes());
            each(Member {
                path,
                kind,
                link,
                body,
            })?;
        }
    }
    Ok(())
}

impl MemRoot {
    /// An empty tree.
    pub fn new(name: impl Into<String>) -> Self {
        MemRoot {
            nodes: BTreeMap::new(),
            name: name.into(),
            skipped: Vec::new(),
        }
    }

    /// Inserts a node; parents are created as directories.
    pub fn insert(&mut self, path: PathBuf, node: MemNode) {
        let k = key(&path).into_owned().into_boxed_slice();
        self.insert_key(k, node);
    }

    fn insert_key(&mut self, k: Box<[u8]>, node: MemNode) {
        let mut p = parent_key(&k);
        while let Some(d) = p {
            // A parent already present had its own parents created when it was inserted.
            if self.nodes.contains_key(d) {
                break;
            }
            self.nodes.insert(d.into(), MemNode::Dir);
            p = parent_key(d);
        }
        self.nodes.insert(k, node);
    }

    /// Reads a tar stream (plain, gzip or bzip2 by magic bytes). Entry paths that are absolute
    /// or contain `..` are rejected (they could not escape memory, but they mean a corrupt or
    /// hostile archive). When every entry sits under one top folder that holds `sys/`
    /// (hwloc-gather-topology's layout), that folder is stripped.
    pub fn from_tar_bytes(name: &str, bytes: &[u8]) -> io::Result<Self> {
        Self::from_tar_bytes_charged(name, bytes, None)
    }

    /// [`MemRoot::from_tar_bytes`], taking every decompressed byte, and every file's bytes
    /// as they are copied out of the archive, from a shared budget (`fleet -j`: see
    /// [`super::budget`]).
    ///
    /// The stream is decompressed whole first and the archive walked in memory
    /// ([`walk_tar`]: a file's bytes are sliced out where its header says they are).
    pub fn from_tar_bytes_charged(
        name: &str,
        bytes: &[u8],
        mut charge: Option<&mut super::budget::Charge>,
    ) -> io::Result<Self> {
        let data = tar_bytes(bytes, charge.as_deref_mut())?;
        Self::from_tar_data(name, data, charge)
    }

    /// [`MemRoot::from_tar_bytes_charged`] over a stream already inflated ([`tar_data`]),
    /// dropped once its files are copied out.
    pub fn from_tar_data(
        name: &str,
        data: Cow<'_, [u8]>,
        mut charge: Option<&mut super::budget::Charge>,
    ) -> io::Result<Self> {
        let mut raw: Vec<(Vec<u8>, MemNode)> = Vec::new();
        let mut skipped_long: Vec<Vec<u8>> = Vec::new();
        walk_tar(&data, |m| {
            let mut clean: Vec<u8> = Vec::with_capacity(m.path.len());
            for c in Path::new(OsStr::from_bytes(&m.path)).components() {
                match c {
                    Component::Normal(s) => {
                        if !clean.is_empty() {
                            clean.push(b'/');
                        }
                        clean.extend_from_slice(s.as_bytes());
                    }
                    Component::CurDir => {}
                    _ => {
                        return Err(bad_tar(format!(
                            "snapshot entry escapes the snapshot root: {}",
                            String::from_utf8_lossy(&m.path)
                        )));
                    }
                }
            }
            if clean.is_empty() {
                return Ok(());
            }
            if clean.len() > MAX_PATH_BYTES {
                skipped_long.push(clean);
                return Ok(());
            }
            let node = if m.kind.is_symlink() {
                let t = m
                    .link
                    .ok_or_else(|| bad_tar("symlink without target".into()))?;
                if t.len() > MAX_PATH_BYTES {
                    skipped_long.push(clean);
                    return Ok(());
                }
                MemNode::Symlink(PathBuf::from(OsStr::from_bytes(&t)))
            } else if m.kind.is_dir() {
                MemNode::Dir
            } else if m.kind.is_file() {
                // The copy is held with the archive until the walk ends: charged too.
                if let Some(c) = charge.as_deref_mut() {
                    c.take(m.body.len() as u64);
                }
                MemNode::File(m.body.to_vec())
            } else {
                return Ok(());
            };
            raw.push((clean, node));
            Ok(())
        })?;
        drop(data);
        if raw.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "empty snapshot"));
        }
        let top = |p: &[u8]| {
            p.split(|&c| c == b'/')
                .next()
                .map(<[u8]>::to_vec)
                .unwrap_or_default()
        };
        let has_sys_at_top = raw.iter().any(|(p, _)| top(p) == b"sys");
        let mut strip: Option<Vec<u8>> = None;
        if !has_sys_at_top {
            let first = top(&raw[0].0);
            if raw.iter().all(|(p, _)| top(p) == first) {
                strip = Some(first);
            }
        }
        let mut root = MemRoot::new(name);
        if let Some(first) = skipped_long.first() {
            let shown = String::from_utf8_lossy(first);
            let cut: String = shown.chars().take(120).collect();
            root.skipped.push((
                PathBuf::from(format!("{cut}…")),
                format!(
                    "{} snapshot entries have a path or link target longer than {MAX_PATH_BYTES} bytes (PATH_MAX) and were skipped (first: {cut}…)",
                    skipped_long.len()
                ),
            ));
        }
        for (p, n) in raw {
            let p = match &strip {
                Some(s) => match p.strip_prefix(&s[..]).and_then(|r| r.strip_prefix(b"/")) {
                    Some(r) if !r.is_empty() => r.to_vec(),
                    _ => continue,
                },
                None => p,
            };
            root.insert_key(p.into_boxed_slice(), n);
        }
        Ok(root)
    }

    fn not_found(path: &Path) -> io::Error {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{}: not in snapshot", path.display()),
        )
    }

    fn get(&self, path: &Path) -> Option<&MemNode> {
        self.nodes.get(&*key(path))
    }

    /// What reading the archive skipped, as (path, message) pairs for the scan's warnings.
    pub fn skipped(&self) -> &[(PathBuf, String)] {
        &self.skipped
    }

    /// Iterates every stored path (for capture round trips and tests), in byte order.
    pub fn paths(&self) -> impl Iterator<Item = (&Path, &MemNode)> {
        self.nodes
            .iter()
            .map(|(k, n)| (Path::new(OsStr::from_bytes(k)), n))
    }
}

impl FsRoot for MemRoot {
    fn read_limited(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>> {
        // Fast path: a stored file at this exact path (no link on the way to resolve).
        if let Some(MemNode::File(b)) = self.get(path) {
            return Ok(b[..b.len().min(limit)].to_vec());
        }
        let p = self.resolve(path)?;
        match self.get(&p) {
            Some(MemNode::File(b)) => Ok(b[..b.len().min(limit)].to_vec()),
            Some(MemNode::Dir) => Err(io::Error::other("is a directory")),
            _ => Err(Self::not_found(path)),
        }
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        match self.get(path) {
            Some(MemNode::Symlink(t)) => Ok(t.clone()),
            Some(_) => Err(io::Error::new(io::ErrorKind::InvalidInput, "not a symlink")),
            None => Err(Self::not_found(path)),
        }
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<Entry>> {
        let k = key(path);
        let dir: Vec<u8> = if k.is_empty() || matches!(self.nodes.get(&*k), Some(MemNode::Dir)) {
            k.into_owned()
        } else {
            key(&self.resolve(path)?).into_owned()
        };
        if !dir.is_empty() && !matches!(self.nodes.get(&dir[..]), Some(MemNode::Dir)) {
            return Err(Self::not_found(path));
        }
        // Everything below `dir` has the prefix `dir/` and is contiguous in byte order.
        let mut prefix = dir;
        if !prefix.is_empty() {
            prefix.push(b'/');
        }
        let mut v = Vec::new();
        let below = self
            .nodes
            .range::<[u8], _>((Bound::Included(&prefix[..]), Bound::Unbounded));
        for (k, n) in below {
            let Some(rest) = k.strip_prefix(&prefix[..]) else {
                break;
            };
            if rest.is_empty() || rest.contains(&b'/') {
                continue;
            }
            let Ok(name) = std::str::from_utf8(rest) else {
                continue;
            };
            v.push(Entry {
                name: name.to_string(),
                kind: n.entry_kind(),
            });
        }
        v.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(v)
    }
    fn kind(&self, path: &Path) -> Option<EntryKind> {
        if path.as_os_str().is_empty() {
            return Some(EntryKind::Dir);
        }
        self.get(path).map(MemNode::entry_kind)
    }
    fn describe(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> MemRoot {
        let mut m = MemRoot::new("t");
        m.insert(
            "sys/devices/pci0000:00/0000:00:01.0/vendor".into(),
            MemNode::File(b"0x8086\n".to_vec()),
        );
        m.insert(
            "sys/bus/pci/devices/0000:00:01.0".into(),
            MemNode::Symlink("../../../devices/pci0000:00/0000:00:01.0".into()),
        );
        m.insert("sys/loop".into(), MemNode::Symlink("loop".into()));
        m.insert("sys/up".into(), MemNode::Symlink("../../../../etc".into()));
        m
    }

    #[test]
    fn resolves_inside_root() {
        let m = tree();
        let p = m
            .resolve(Path::new("sys/bus/pci/devices/0000:00:01.0"))
            .unwrap();
        assert_eq!(p, PathBuf::from("sys/devices/pci0000:00/0000:00:01.0"));
        assert_eq!(
            m.read(Path::new("sys/bus/pci/devices/0000:00:01.0/vendor"))
                .unwrap(),
            b"0x8086\n"
        );
        assert!(m.resolve(Path::new("sys/loop")).is_err());
        // climbing above the root stays at the root: "etc" does not exist there
        assert!(m.resolve(Path::new("sys/up")).is_err());
        let names: Vec<_> = m
            .read_dir(Path::new("sys"))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec!["bus", "devices", "loop", "up"]);
    }

    /// A tar with a GNU long name, a long link target and a pax `path`, read back through the
    /// in-memory walk, looked up under other spellings of the same path; cut short, it is an
    /// error naming the cut member.
    #[test]
    fn tar_walk_reads_long_names_pax_paths_and_refuses_a_cut_archive() {
        let long = format!("sys/{}/attr", "d".repeat(150));
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(3);
        h.set_mode(0o644);
        b.append_data(&mut h, &long, &b"abc"[..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        b.append_link(&mut h, "sys/link", format!("../{long}"))
            .unwrap();
        b.append_pax_extensions([("path", &b"sys/from-pax"[..])])
            .unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_path("sys/ignored").unwrap();
        h.set_size(2);
        h.set_cksum();
        b.append(&h, &b"px"[..]).unwrap();
        let tar = b.into_inner().unwrap();
        let m = MemRoot::from_tar_bytes("t", &tar).unwrap();
        assert_eq!(m.read(Path::new(&long)).unwrap(), b"abc");
        assert_eq!(
            m.read_link(Path::new("sys/link")).unwrap(),
            PathBuf::from(format!("../{long}"))
        );
        assert_eq!(m.read(Path::new("sys/from-pax")).unwrap(), b"px");
        assert!(m.kind(Path::new("sys/ignored")).is_none());
        assert_eq!(m.read(Path::new("./sys//from-pax/")).unwrap(), b"px");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(
            MemRoot::from_tar_bytes("t", &gz)
                .unwrap()
                .read(Path::new("sys/from-pax"))
                .unwrap(),
            b"px"
        );
        // Cut inside the pax member's data: refused, not read short.
        let e = MemRoot::from_tar_bytes("t", &tar[..tar.len() - 1024 - 511])
            .err()
            .unwrap();
        assert!(e.to_string().contains("truncated"), "{e}");
        assert!(MemRoot::from_tar_bytes("t", &gz[..gz.len() / 2]).is_err());
    }

    /// Issue 41: an archive cut inside a header or before its end blocks, and a gzip stream
    /// cut short, are errors naming the byte; two gzip members joined with `cat` are read whole.
    #[test]
    fn cut_archives_are_errors_naming_the_byte_and_gzip_members_are_all_read() {
        let tar_of = |name: &str, body: &[u8]| {
            let mut b = tar::Builder::new(Vec::new());
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, body).unwrap();
            b.into_inner().unwrap()
        };
        let mut two = tar_of("sys/a", b"one");
        // A second member after the first (its end blocks dropped), then cut mid-header.
        two.truncate(1024);
        let second = tar_of("sys/b", b"two");
        two.extend_from_slice(&second[..300]);
        let e = MemRoot::from_tar_bytes("t", &two).err().unwrap();
        assert!(
            e.to_string()
                .contains("header at byte 1024 is cut after 300"),
            "{e}"
        );
        two.truncate(1024);
        let e = MemRoot::from_tar_bytes("t", &two).err().unwrap();
        assert!(e.to_string().contains("ends at byte 1024 without"), "{e}");
        let gz = |b: &[u8]| {
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut z, b).unwrap();
            z.finish().unwrap()
        };
        // `cat first.gz second.gz`: the first member holds the first entry without its end
        // blocks, the second the rest; read whole, both entries are there.
        let mut joined = gz(&two);
        joined.extend(gz(&second));
        let m = MemRoot::from_tar_bytes("t", &joined).unwrap();
        assert_eq!(m.read(Path::new("sys/b")).unwrap(), b"two");
        assert_eq!(m.read(Path::new("sys/a")).unwrap(), b"one");
        let cut = &joined[..joined.len() - 10];
        let e = MemRoot::from_tar_bytes("t", cut).err().unwrap();
        assert!(
            e.to_string().contains(&format!("of {}", cut.len()))
                && e.to_string().contains("gzip stream is truncated"),
            "{e}"
        );
    }

    #[test]
    fn join() {
        assert_eq!(
            join_link(
                Path::new("sys/bus/pci/devices/x"),
                Path::new("../../../devices/pci0000:00/x")
            ),
            PathBuf::from("sys/devices/pci0000:00/x")
        );
    }
}
