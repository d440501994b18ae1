//! [`DirRoot`]: a directory on disk read as a root that nothing escapes. Every path is resolved
//! by the kernel with `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)` against a descriptor
//! of the root (absolute link targets and `..` stay inside it, as under `chroot`), or, where
//! the kernel lacks `openat2` (before Linux 5.6, or a seccomp filter that refuses it), by a
//! checked walk: one component at a time with `O_NOFOLLOW`, each link read with `readlinkat`
//! and resolved inside the root. Files are opened `O_NONBLOCK | O_CLOEXEC | O_NOCTTY`, checked
//! with `fstat` and refused unless regular (a FIFO or device never blocks or is read), and read
//! to a bound.

use crate::sources::fsroot::{Entry, EntryKind, FsRoot, MAX_LINKS, OpenDir, special_file_error};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, ResolveFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Longest path a lookup accepts, in bytes (the kernel's `PATH_MAX`; `openat2` refuses longer
/// paths with `ENAMETOOLONG`, and the walk does the same).
pub const MAX_PATH_BYTES: usize = 4096;

/// Most directories the walk holds open at once (a deeper path is refused, not followed).
const MAX_WALK_DEPTH: usize = 512;

/// Most entries one directory listing returns; a larger directory is refused (a real sysfs
/// directory holds at most tens of thousands: one per PCI function or VF).
pub const MAX_DIR_ENTRIES: usize = 1 << 20;

/// How paths are resolved inside the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// The kernel resolves each path with `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`.
    Openat2,
    /// A checked component-by-component walk (`O_NOFOLLOW`, `readlinkat`), used where
    /// `openat2` is missing.
    Walk,
}

/// A directory on disk used as the root (`/` for the live machine, an extracted snapshot or
/// fixture for `-i DIR`). Reads never leave it, whatever links it holds.
pub struct DirRoot {
    root: PathBuf,
    fd: Result<OwnedFd, (io::ErrorKind, String)>,
    resolver: Resolver,
    /// The directory the last [`FsRoot::read_link`] looked in, with its descriptor: the scan
    /// reads every link of `sys/bus/pci/devices` (and of a device's directory) in a row, and
    /// resolving the same directory once per link was one extra open and close per device.
    link_dir: std::sync::Mutex<Option<(PathBuf, OwnedFd)>>,
}

fn errno(e: Errno) -> io::Error {
    io::Error::from(e)
}

/// The path as a relative path with only normal and `..` components (a leading `/` means the
/// root, as inside the root every absolute path does).
fn relative(path: &Path) -> io::Result<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::ParentDir => out.push(".."),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    if out.as_os_str().len() > MAX_PATH_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("path longer than {MAX_PATH_BYTES} bytes (PATH_MAX); not followed"),
        ));
    }
    Ok(out)
}

fn kind_of(t: FileType) -> EntryKind {
    match t {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

impl DirRoot {
    /// A root at `root`, resolved with `openat2` where the kernel has it. A root that cannot
    /// be opened gives that error on every read (use [`DirRoot::open`] to see it at once).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        match Self::open(&root) {
            Ok(r) => r,
            Err(e) => DirRoot {
                fd: Err((e.kind(), e.to_string())),
                root,
                resolver: Resolver::Walk,
                link_dir: Default::default(),
            },
        }
    }

    /// Opens `root` (following a link given as the root itself: the caller named it) and
    /// picks the resolver: `openat2` when the kernel answers it, else the walk.
    pub fn open(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        let fd = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            io::Error::new(
                errno(e).kind(),
                format!(
                    "cannot open {} as a directory: {}",
                    root.display(),
                    errno(e)
                ),
            )
        })?;
        let resolver = match rustix::fs::openat2(
            &fd,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(_) => Resolver::Openat2,
            // ENOSYS: kernel before 5.6; EPERM: a seccomp filter refusing the call; EINVAL or
            // E2BIG: a kernel that does not know these flags.
            Err(_) => Resolver::Walk,
        };
        Ok(DirRoot {
            root,
            fd: Ok(fd),
            resolver,
            link_dir: Default::default(),
        })
    }

    /// Opens `root` with the given resolver (tests prove both paths on one kernel).
    pub fn with_resolver(root: impl Into<PathBuf>, resolver: Resolver) -> io::Result<Self> {
        let mut r = Self::open(root)?;
        if resolver == Resolver::Openat2 && r.resolver != Resolver::Openat2 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel does not provide openat2",
            ));
        }
        r.resolver = resolver;
        Ok(r)
    }

    /// The resolver in use.
    pub fn resolver(&self) -> Resolver {
        self.resolver
    }

    /// The root directory as given.
    pub fn path(&self) -> &Path {
        &self.root
    }

    fn root_fd(&self) -> io::Result<BorrowedFd<'_>> {
        match &self.fd {
            Ok(fd) => Ok(fd.as_fd()),
            Err((k, m)) => Err(io::Error::new(*k, m.clone())),
        }
    }

    /// Opens `path` inside the root with `flags`, following every link inside the root
    /// (`O_NOFOLLOW` in `flags` keeps a final link unfollowed).
    fn open_in_root(&self, path: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let root = self.root_fd()?;
        let rel = relative(path)?;
        let rel: &Path = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &rel
        };
        match self.resolver {
            Resolver::Openat2 => {
                let mut tries = 0;
                loop {
                    match rustix::fs::openat2(
                        root,
                        rel,
                        flags | OFlags::CLOEXEC,
                        Mode::empty(),
                        ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
                    ) {
                        // A rename or mount raced the lookup: the kernel asks for a retry.
                        Err(Errno::AGAIN) if tries < 8 => tries += 1,
                        r => return r.map_err(errno),
                    }
                }
            }
            Resolver::Walk => walk(root, rel, flags | OFlags::CLOEXEC),
        }
    }

    /// The directory holding `path` (opened inside the root) and the final name.
    fn parent_and_name<'p>(&self, path: &'p Path) -> io::Result<(OwnedFd, &'p OsStr)> {
        let name = match path.components().next_back() {
            Some(Component::Normal(n)) => n,
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: no final name to look up", path.display()),
                ));
            }
        };
        let parent = path.parent().unwrap_or(Path::new(""));
        let fd = self.open_in_root(parent, OFlags::PATH | OFlags::DIRECTORY)?;
        Ok((fd, name))
    }
}

/// `fstat`s an open file, refuses anything but a regular file, and reads up to `limit` bytes
/// with as few `read` calls as the file allows. A short read of a file with a size is its end:
/// sysfs hands an attribute over whole in one read (it reports a page, or a binary attribute's
/// length, as the size) and a file on disk gives what is left. A file that reports no size
/// (procfs) may hand over a record at a time, so it is read until a read returns nothing.
fn read_regular(fd: OwnedFd, limit: usize) -> io::Result<Vec<u8>> {
    let st = rustix::fs::fstat(&fd).map_err(errno)?;
    let t = FileType::from_raw_mode(st.st_mode);
    if t != FileType::RegularFile {
        return Err(special_file_error(t));
    }
    let sized = st.st_size > 0;
    let first = if sized {
        usize::try_from(st.st_size)
            .unwrap_or(usize::MAX)
            .saturating_add(1)
    } else {
        4096
    };
    let mut buf = vec![0u8; first.min(limit)];
    let mut len = 0;
    let mut file = File::from(fd);
    loop {
        if len == buf.len() {
            if len >= limit {
                break;
            }
            buf.resize(len.saturating_mul(2).clamp(4096, limit), 0);
        }
        let asked = buf.len() - len;
        let n = match file.read(&mut buf[len..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        len += n;
        if n == 0 || (sized && n < asked) {
            break;
        }
    }
    buf.truncate(len);
    Ok(buf)
}

/// The entries of the open directory `fd`, sorted by name, read with `getdents64` on that
/// descriptor (no second descriptor). `.` and `..` and names that are not UTF-8 are left out;
/// an entry of unknown type (a file system that does not say) is looked at with `fstatat`.
fn list(fd: BorrowedFd<'_>) -> io::Result<Vec<Entry>> {
    let mut v = Vec::new();
    let mut buf: Vec<MaybeUninit<u8>> = Vec::with_capacity(16 << 10);
    buf.resize(16 << 10, MaybeUninit::uninit());
    let mut it = RawDir::new(fd, &mut buf);
    while let Some(e) = it.next() {
        let e = e.map_err(errno)?;
        let name = e.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        let kind = match e.file_type() {
            FileType::Unknown => rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| kind_of(FileType::from_raw_mode(st.st_mode)))
                .unwrap_or(EntryKind::Other),
            t => kind_of(t),
        };
        if v.len() >= MAX_DIR_ENTRIES {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("more than {MAX_DIR_ENTRIES} entries; directory not listed"),
            ));
        }
        v.push(Entry {
            name: name.to_string(),
            kind,
        });
    }
    v.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(v)
}

/// A directory of a [`DirRoot`] held open (an `O_PATH` descriptor): names in it are opened
/// relative to it, one component with `O_NOFOLLOW` (never `..`, never a path), so none can
/// leave the root; a name that is a link is resolved from the root like any path.
struct HeldDir<'a> {
    root: &'a DirRoot,
    path: PathBuf,
    fd: OwnedFd,
}

impl HeldDir<'_> {
    /// Whether `name` is one plain component that can be looked up in the directory itself.
    fn plain(name: &str) -> bool {
        !(name.is_empty() || name == "." || name == ".." || name.contains('/'))
    }
}

impl OpenDir for HeldDir<'_> {
    fn path(&self) -> &Path {
        &self.path
    }
    fn read_limited(&self, name: &str, limit: usize) -> io::Result<Vec<u8>> {
        if !Self::plain(name) {
            return self.root.read_limited(&self.path.join(name), limit);
        }
        match rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => read_regular(fd, limit),
            // A link (O_NOFOLLOW refuses it): resolved inside the root.
            Err(Errno::LOOP) => self.root.read_limited(&self.path.join(name), limit),
            Err(e) => Err(errno(e)),
        }
    }
    fn read_link(&self, name: &str) -> io::Result<PathBuf> {
        if !Self::plain(name) {
            return self.root.read_link(&self.path.join(name));
        }
        let t = rustix::fs::readlinkat(&self.fd, name, Vec::new()).map_err(errno)?;
        Ok(PathBuf::from(OsStr::from_bytes(t.as_bytes())))
    }
}

/// The checked walk: resolves `rel` under `root` one component at a time. Every component is
/// looked at without following (`statat(AT_SYMLINK_NOFOLLOW)`) and opened with `O_NOFOLLOW`,
/// so a link swapped in between the look and the open fails (`ELOOP`) instead of being
/// followed; a link is read with `readlinkat` and its target resolved here, an absolute target
/// from the root, `..` never above it; at most [`MAX_LINKS`] links.
fn walk(root: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    let follow_final = !flags.contains(OFlags::NOFOLLOW);
    let mut todo: Vec<Vec<u8>> = Vec::new();
    push_components(&mut todo, rel.as_os_str().as_bytes());
    let mut stack: Vec<OwnedFd> = Vec::new();
    let mut links = 0;
    while let Some(c) = todo.pop() {
        if c == b".." {
            stack.pop();
            continue;
        }
        let last = todo.is_empty();
        let cur = stack.last().map(|f| f.as_fd()).unwrap_or(root);
        let name = OsStr::from_bytes(&c);
        let st = rustix::fs::statat(cur, name, AtFlags::SYMLINK_NOFOLLOW).map_err(errno)?;
        let t = FileType::from_raw_mode(st.st_mode);
        if t == FileType::Symlink && (!last || follow_final) {
            links += 1;
            if links > MAX_LINKS {
                return Err(errno(Errno::LOOP));
            }
            let target = rustix::fs::readlinkat(cur, name, Vec::new()).map_err(errno)?;
            let target = target.as_bytes();
            if target.first() == Some(&b'/') {
                stack.clear();
            }
            if todo.iter().map(Vec::len).sum::<usize>() + target.len() > MAX_PATH_BYTES {
                return Err(errno(Errno::NAMETOOLONG));
            }
            push_components(&mut todo, target);
            continue;
        }
        if last {
            return rustix::fs::openat(cur, name, flags | OFlags::NOFOLLOW, Mode::empty())
                .map_err(errno);
        }
        if t != FileType::Directory {
            return Err(errno(Errno::NOTDIR));
        }
        let fd = rustix::fs::openat(
            cur,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        if stack.len() >= MAX_WALK_DEPTH {
            return Err(errno(Errno::NAMETOOLONG));
        }
        stack.push(fd);
    }
    // The path ended on the root or on `..`: open the directory reached.
    let cur = stack.last().map(|f| f.as_fd()).unwrap_or(root);
    rustix::fs::openat(cur, ".", flags, Mode::empty()).map_err(errno)
}

/// Pushes the components of a path (bytes) onto a stack of pending components, in reverse so
/// that the first component pops first; empty and `.` components are dropped.
fn push_components(todo: &mut Vec<Vec<u8>>, path: &[u8]) {
    for c in path.split(|&b| b == b'/').rev() {
        if !c.is_empty() && c != b"." {
            todo.push(c.to_vec());
        }
    }
}

impl FsRoot for DirRoot {
    fn read_limited(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>> {
        let fd = self.open_in_root(path, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)?;
        read_regular(fd, limit)
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let parent = path.parent().unwrap_or(Path::new(""));
        // The last directory's descriptor, when this link is in it (a poisoned lock only loses
        // the cache).
        let mut cached = self.link_dir.lock().ok();
        if let Some(Some((p, fd))) = cached.as_deref()
            && p == parent
            && let Some(Component::Normal(name)) = path.components().next_back()
        {
            let t = rustix::fs::readlinkat(fd, name, Vec::new()).map_err(errno)?;
            return Ok(PathBuf::from(OsStr::from_bytes(t.as_bytes())));
        }
        let (dir, name) = self.parent_and_name(path)?;
        let t = rustix::fs::readlinkat(&dir, name, Vec::new()).map_err(errno)?;
        if let Some(c) = cached.as_deref_mut() {
            *c = Some((parent.to_path_buf(), dir));
        }
        Ok(PathBuf::from(OsStr::from_bytes(t.as_bytes())))
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<Entry>> {
        let fd = self.open_in_root(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK)?;
        list(fd.as_fd())
    }

    fn open_dir<'a>(&'a self, path: &Path) -> io::Result<Box<dyn OpenDir + 'a>> {
        let fd = self.open_in_root(path, OFlags::PATH | OFlags::DIRECTORY)?;
        Ok(Box::new(HeldDir {
            root: self,
            path: path.to_path_buf(),
            fd,
        }))
    }

    fn kind(&self, path: &Path) -> Option<EntryKind> {
        if relative(path).ok()?.as_os_str().is_empty() {
            return self.root_fd().ok().map(|_| EntryKind::Dir);
        }
        let (dir, name) = self.parent_and_name(path).ok()?;
        let st = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(kind_of(FileType::from_raw_mode(st.st_mode)))
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn file_id(&self, path: &Path) -> Option<(u64, u64)> {
        let fd = self.open_in_root(path, OFlags::PATH).ok()?;
        let st = rustix::fs::fstat(&fd).ok()?;
        Some((st.st_dev, st.st_ino))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_read_in_turn_from_two_directories_keep_their_own_targets() {
        let t = tempfile::tempdir().unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir(t.path().join(d)).unwrap();
            symlink(format!("to-{d}"), t.path().join(d).join("x")).unwrap();
            symlink(format!("other-{d}"), t.path().join(d).join("y")).unwrap();
        }
        for resolver in [Resolver::Openat2, Resolver::Walk] {
            let Ok(r) = DirRoot::with_resolver(t.path(), resolver) else {
                continue;
            };
            // The same directory twice (the cached descriptor), then the other one, then back.
            for (path, want) in [
                ("a/x", "to-a"),
                ("a/y", "other-a"),
                ("b/x", "to-b"),
                ("a/x", "to-a"),
                ("b/y", "other-b"),
            ] {
                assert_eq!(r.read_link(Path::new(path)).unwrap(), PathBuf::from(want));
            }
            // A name that is no link is still an error after a cached read.
            std::fs::write(t.path().join("a/f"), b"").unwrap();
            assert!(r.read_link(Path::new("a/f")).is_err());
        }
    }

    /// A root with links that try to leave it, a FIFO where an attribute should be, and a
    /// host file outside it that must never be read.
    fn hostile() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), b"HOST SECRET\n").unwrap();
        let r = t.path().join("root");
        let dev = r.join("sys/devices/pci0000:00/0000:00:01.0");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("vendor"), b"0x10de\n").unwrap();
        std::fs::create_dir_all(r.join("etc")).unwrap();
        std::fs::write(r.join("etc/secret"), b"ROOT COPY\n").unwrap();
        // Absolute link: inside the root it names root/…/secret, never the host's.
        symlink(outside.join("secret"), dev.join("abs")).unwrap();
        symlink("/etc/secret", dev.join("abs_in_root")).unwrap();
        // `..` far above the root stays at the root.
        symlink("../../../../../../../../../outside/secret", dev.join("up")).unwrap();
        // A directory link leaving the root.
        symlink(&outside, r.join("sys/escape")).unwrap();
        symlink("devices/pci0000:00/0000:00:01.0", r.join("sys/bus")).unwrap();
        symlink("loop", dev.join("loop")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dev.join("config"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        (t, r)
    }

    fn both(r: &Path) -> Vec<DirRoot> {
        let mut v = vec![DirRoot::with_resolver(r, Resolver::Walk).unwrap()];
        if let Ok(o) = DirRoot::with_resolver(r, Resolver::Openat2) {
            v.push(o);
        }
        v
    }

    #[test]
    fn nothing_outside_the_root_is_read() {
        let (_t, r) = hostile();
        let dev = Path::new("sys/devices/pci0000:00/0000:00:01.0");
        for fs in both(&r) {
            let who = format!("{:?}", fs.resolver());
            assert_eq!(fs.read(&dev.join("vendor")).unwrap(), b"0x10de\n", "{who}");
            assert_eq!(
                fs.read(&dev.join("abs_in_root")).unwrap(),
                b"ROOT COPY\n",
                "{who}"
            );
            for p in ["abs", "up"] {
                let e = fs.read(&dev.join(p)).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::NotFound, "{who} {p}: {e}");
            }
            assert!(fs.read(Path::new("sys/escape/secret")).is_err(), "{who}");
            assert!(fs.read_dir(Path::new("sys/escape")).is_err(), "{who}");
            assert!(fs.read(&dev.join("loop")).is_err(), "{who}");
            // A FIFO never blocks: refused by type.
            let e = fs.read(&dev.join("config")).unwrap_err();
            assert!(e.to_string().contains("named pipe"), "{who}: {e}");
            // Links inside the root resolve; kind and read_link do not follow the last one.
            assert_eq!(
                fs.read(Path::new("sys/bus/vendor")).unwrap(),
                b"0x10de\n",
                "{who}"
            );
            assert_eq!(fs.kind(Path::new("sys/bus")), Some(EntryKind::Symlink));
            assert_eq!(fs.kind(Path::new("sys/bus/vendor")), Some(EntryKind::File));
            assert_eq!(fs.kind(&dev.join("config")), Some(EntryKind::Other));
            assert_eq!(fs.kind(Path::new("")), Some(EntryKind::Dir));
            assert_eq!(fs.kind(Path::new("sys/escape/secret")), None, "{who}");
            assert_eq!(
                fs.read_link(Path::new("sys/bus")).unwrap(),
                PathBuf::from("devices/pci0000:00/0000:00:01.0")
            );
            let names: Vec<String> = fs
                .read_dir(Path::new("sys/bus"))
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
            assert!(names.contains(&"vendor".to_string()), "{who}: {names:?}");
            assert!(fs.is_dir(Path::new("sys/bus")));
            assert!(!fs.is_dir(Path::new("sys/escape")), "{who}");
            // Names read relative to a held directory: a link inside the root resolves, one
            // leaving it does not, a FIFO is refused, `..` never climbs out.
            let held = fs.open_dir(dev).unwrap();
            assert!(fs.open_dir(Path::new("sys/escape")).is_err(), "{who}");
            assert_eq!(held.read("vendor").unwrap(), b"0x10de\n", "{who}");
            assert_eq!(held.read("abs_in_root").unwrap(), b"ROOT COPY\n", "{who}");
            for bad in [
                "config",
                "abs",
                "up",
                "nothing",
                "loop",
                "../../../../../outside/secret",
            ] {
                assert!(held.read(bad).is_err(), "{who} {bad}");
            }
            assert!(held.read_link("abs").is_ok(), "{who}");
            assert!(held.read_link("vendor").is_err(), "{who}");
        }
    }

    #[test]
    fn overlong_paths_are_refused() {
        let (_t, r) = hostile();
        let long = "a/".repeat(MAX_PATH_BYTES);
        for fs in both(&r) {
            let e = fs.read(Path::new(&long)).unwrap_err();
            assert!(e.to_string().contains("PATH_MAX"), "{e}");
        }
        let e = DirRoot::open(r.join("nope")).err().unwrap();
        assert!(e.to_string().contains("nope"), "{e}");
        let bad = DirRoot::new(r.join("nope"));
        assert!(bad.read(Path::new("sys")).is_err());
    }
}
