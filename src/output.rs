//! The one output writer: every `-o FILE` (export, capture, report, and any later command)
//! writes through [`write_output`] or [`write_output_with`], so all of them behave alike:
//!
//! - a regular file (or a new name) is replaced atomically: the bytes go to an exclusive
//!   temporary file with a random name in the target's directory (`O_CREAT | O_EXCL`, so a
//!   link or file planted at that name is never followed or reused), flushed to disk, then
//!   renamed over the target; a reader never sees half a file, and the existing file's
//!   permission bits are kept;
//! - a name that is a symbolic link to a regular file (or a dangling one) is replaced by the
//!   new file, like any regular file: the link's target is never written (a link planted in a
//!   shared directory cannot redirect the output);
//! - a FIFO, character or block device, socket, or the very file this process's standard
//!   output or error is (`-o /dev/stdout`, `-o /dev/fd/1`, `-o >(gzip > x)`), is written
//!   through as it is: never replaced, truncated or created;
//! - a directory is refused before anything is created;
//! - on every error the temporary file is removed (it is owned by a guard that deletes it
//!   when dropped), and the message names the target;
//! - on success the command says what it wrote, on standard error: the path and the byte
//!   count (`peerpath: wrote 12345 bytes to node.svg`).

use anyhow::{Context, Result, bail};
use std::fmt;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Bytes of the target's name kept in its temporary file's name (`.NAME.` + 10 random
/// characters + `.tmp` is then at most 255 bytes, NAME_MAX).
const TMP_NAME_KEPT: usize = 255 - 2 - 10 - 4;

/// How the bytes reached the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A new regular file was created (atomically, by rename).
    Created,
    /// An existing regular file was replaced atomically.
    Replaced,
    /// A symbolic link was replaced by a regular file; its target was not written.
    ReplacedLink,
    /// Written through to a FIFO, device, socket or this process's own standard output/error.
    WroteThrough(&'static str),
}

/// What one write did: the path, the bytes and how they got there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The target as given.
    pub path: PathBuf,
    /// Bytes written.
    pub bytes: u64,
    /// How.
    pub delivery: Delivery,
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wrote {} bytes to {}", self.bytes, self.path.display())?;
        match self.delivery {
            Delivery::Created | Delivery::Replaced => Ok(()),
            Delivery::ReplacedLink => {
                write!(
                    f,
                    " (replaced the symbolic link; its target was not written)"
                )
            }
            Delivery::WroteThrough(what) => write!(f, " ({what}, written through)"),
        }
    }
}

/// Counts the bytes passed through.
struct Counting<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// What is at a target path, as the writer sees it.
enum Target {
    /// Write through to an existing non-regular file (or our own stdout/stderr file).
    Through(&'static str),
    /// Replace (or create) with a renamed temporary file.
    Replace {
        existing_mode: Option<u32>,
        is_link: bool,
    },
}

fn special_kind(ft: &std::fs::FileType) -> Option<&'static str> {
    if ft.is_fifo() {
        Some("a pipe")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// Whether `m` is the file our standard output or error already writes to (a shell
/// redirection `> file` with `-o /dev/stdout`).
fn is_own_stdio(m: &std::fs::Metadata) -> bool {
    use std::os::fd::AsFd;
    [
        rustix::fs::fstat(io::stdout().as_fd()),
        rustix::fs::fstat(io::stderr().as_fd()),
    ]
    .into_iter()
    .filter_map(Result::ok)
    .any(|st| st.st_dev == m.dev() && st.st_ino == m.ino())
}

fn classify(path: &Path) -> Result<Target> {
    let shown = path.display();
    let followed = std::fs::metadata(path);
    let own = std::fs::symlink_metadata(path);
    if let Ok(m) = &followed {
        let ft = m.file_type();
        if let Some(what) = special_kind(&ft) {
            return Ok(Target::Through(what));
        }
        if ft.is_dir() {
            bail!("{shown} is a directory; give a file name to write");
        }
        if ft.is_file() && is_own_stdio(m) {
            return Ok(Target::Through("this command's own standard output"));
        }
    }
    match own {
        Ok(m) if m.file_type().is_symlink() => Ok(Target::Replace {
            existing_mode: None,
            is_link: true,
        }),
        Ok(m) if m.file_type().is_file() => Ok(Target::Replace {
            existing_mode: Some(m.permissions().mode() & 0o777),
            is_link: false,
        }),
        Ok(_) => bail!("{shown} is neither a regular file nor a device; not replaced"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Replace {
            existing_mode: None,
            is_link: false,
        }),
        Err(e) => Err(e).with_context(|| format!("cannot look at {shown}")),
    }
}

/// Writes what `write` produces to `path` by the rules in the module doc; returns what was
/// written without printing it (see [`write_output_with`]).
pub fn write_quietly(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<Written> {
    let shown = path.display();
    match classify(path)? {
        Target::Through(what) => {
            let mut opts = OpenOptions::new();
            opts.write(true)
                .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC);
            if what.starts_with("this command") {
                // The shell's file: add after what is there, never truncate it.
                opts.append(true);
            }
            let f = opts
                .open(path)
                .with_context(|| format!("cannot open {shown} for writing"))?;
            let mut w = Counting {
                inner: BufWriter::with_capacity(1 << 16, f),
                n: 0,
            };
            write(&mut w)
                .and_then(|()| w.flush())
                .with_context(|| format!("cannot write {shown}"))?;
            Ok(Written {
                path: path.to_path_buf(),
                bytes: w.n,
                delivery: Delivery::WroteThrough(what),
            })
        }
        Target::Replace {
            existing_mode,
            is_link,
        } => {
            let name = path
                .file_name()
                .with_context(|| format!("{shown}: the output path has no file name"))?;
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            // `.NAME.` + 10 random characters + `.tmp` must fit NAME_MAX (255 bytes) for any
            // legal NAME: the name is cut to 239 bytes in the temporary name only.
            use std::os::unix::ffi::{OsStrExt, OsStringExt};
            let cut = &name.as_bytes()[..name.len().min(TMP_NAME_KEPT)];
            let prefix = std::ffi::OsString::from_vec([&b"."[..], cut, &b"."[..]].concat());
            // Exclusive and random: O_CREAT|O_EXCL never follows a link at the name, and a
            // name taken is retried with another. Removed when dropped unless persisted.
            let tmp = tempfile::Builder::new()
                .prefix(&prefix)
                .suffix(".tmp")
                .rand_bytes(10)
                .permissions(Permissions::from_mode(existing_mode.unwrap_or(0o666)))
                .tempfile_in(dir)
                .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
            let mut w = Counting {
                inner: BufWriter::with_capacity(1 << 16, tmp.as_file()),
                n: 0,
            };
            write(&mut w)
                .and_then(|()| w.flush())
                .with_context(|| format!("cannot write {shown}"))?;
            let n = w.n;
            drop(w);
            let file: &File = tmp.as_file();
            if let Some(mode) = existing_mode {
                // The umask applied at creation; the replaced file's own bits win.
                file.set_permissions(Permissions::from_mode(mode))
                    .with_context(|| format!("cannot set the permissions of {shown}"))?;
            }
            file.sync_all()
                .with_context(|| format!("cannot write {shown}"))?;
            tmp.persist(path)
                .map_err(|e| e.error)
                .with_context(|| format!("cannot rename the temporary file to {shown}"))?;
            Ok(Written {
                path: path.to_path_buf(),
                bytes: n,
                delivery: if is_link {
                    Delivery::ReplacedLink
                } else if existing_mode.is_some() {
                    Delivery::Replaced
                } else {
                    Delivery::Created
                },
            })
        }
    }
}

/// Writes what `write` produces to `path` (see the module doc) and says so on standard
/// error: `peerpath: wrote N bytes to PATH`.
pub fn write_output_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<Written> {
    let w = write_quietly(path, write)?;
    eprintln!("peerpath: {w}");
    Ok(w)
}

/// Writes `bytes` to `path` (see the module doc) and says so on standard error.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<Written> {
    write_output_with(path, |w| w.write_all(bytes))
}

/// Writes a tree of files under a directory (`fixture -o DIR`) without following a link
/// placed inside it: every component below the root is opened relative to its parent's
/// descriptor with `O_NOFOLLOW` (`openat`), so a planted `DIR/sys -> elsewhere` makes the write
/// fail naming it instead of writing through it. The root itself is named by the caller and may
/// be a link. Files are created `0644`, directories `0755`; a link the tree itself holds is
/// replaced (`unlinkat`, then `symlinkat`), so a tree can be written again over itself.
pub struct DirWriter {
    root: PathBuf,
    top: std::os::fd::OwnedFd,
    /// The directory of the last entry written, and its descriptor (entries come parents first
    /// and grouped, so this saves walking from the root for each one).
    last: Option<(PathBuf, std::os::fd::OwnedFd)>,
}

impl DirWriter {
    /// Creates `root` (and its parents) when absent and opens it.
    pub fn new(root: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(root)?;
        let top = rustix::fs::open(
            root,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        Ok(DirWriter {
            root: root.to_path_buf(),
            top,
            last: None,
        })
    }

    fn refused(&self, rel: &Path, e: rustix::io::Errno) -> io::Error {
        let full = self.root.join(rel);
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            io::Error::other(format!(
                "{} is a symbolic link or not a directory; not written through",
                full.display()
            ))
        } else {
            io::Error::other(format!("{}: {}", full.display(), io::Error::from(e)))
        }
    }

    /// The descriptor of directory `rel` (relative to the root; created when absent), every
    /// component opened without following a link.
    fn open_dir(&mut self, rel: &Path, create: bool) -> io::Result<std::os::fd::BorrowedFd<'_>> {
        use rustix::fs::{Mode, OFlags};
        use std::os::fd::AsFd;
        if self.last.as_ref().is_none_or(|(p, _)| p != rel) {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            // Walking down from the last directory (the common case: entries come parents
            // first) opens only the components below it.
            let (mut cur, mut sofar, rest) = match self.last.take() {
                Some((p, fd)) if rel.starts_with(&p) => {
                    let rest = rel.strip_prefix(&p).unwrap_or(rel).to_path_buf();
                    (Some(fd), p, rest)
                }
                _ => (None, PathBuf::new(), rel.to_path_buf()),
            };
            for c in rest.components() {
                let std::path::Component::Normal(name) = c else {
                    return Err(io::Error::other(format!(
                        "{}: not a plain relative path",
                        rel.display()
                    )));
                };
                sofar.push(name);
                let parent = cur.as_ref().map_or(self.top.as_fd(), |f| f.as_fd());
                if create {
                    match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(self.refused(&sofar, e)),
                    }
                }
                let fd = rustix::fs::openat(parent, name, flags, Mode::empty())
                    .map_err(|e| self.refused(&sofar, e))?;
                cur = Some(fd);
            }
            let fd = match cur {
                Some(fd) => fd,
                None => rustix::fs::openat(self.top.as_fd(), ".", flags, Mode::empty())?,
            };
            self.last = Some((rel.to_path_buf(), fd));
        }
        Ok(self
            .last
            .as_ref()
            .map(|(_, f)| f.as_fd())
            .expect("set above"))
    }

    fn split(rel: &Path) -> io::Result<(&Path, &std::ffi::OsStr)> {
        let name = rel
            .file_name()
            .ok_or_else(|| io::Error::other(format!("{}: no file name", rel.display())))?;
        Ok((rel.parent().unwrap_or(Path::new("")), name))
    }

    /// Creates directory `rel` and its parents.
    pub fn dir(&mut self, rel: &Path) -> io::Result<()> {
        self.open_dir(rel, true).map(|_| ())
    }

    /// Writes file `rel` (created or truncated; a link at its name is refused, not followed).
    pub fn file(&mut self, rel: &Path, bytes: &[u8]) -> io::Result<()> {
        use rustix::fs::{Mode, OFlags};
        let (dir, name) = Self::split(rel)?;
        let parent = self.open_dir(dir, true)?;
        let fd = rustix::fs::openat(
            parent,
            name,
            OFlags::WRONLY
                | OFlags::CREATE
                | OFlags::TRUNC
                | OFlags::NOFOLLOW
                | OFlags::NOCTTY
                | OFlags::NONBLOCK
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        );
        let fd = fd.map_err(|e| self.refused(rel, e))?;
        let st = rustix::fs::fstat(&fd)?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(io::Error::other(format!(
                "{} is not a regular file; not written",
                self.root.join(rel).display()
            )));
        }
        File::from(fd).write_all(bytes)
    }

    /// Makes `rel` a symbolic link to `target` (verbatim), replacing what stands there.
    pub fn link(&mut self, rel: &Path, target: &str) -> io::Result<()> {
        let (dir, name) = Self::split(rel)?;
        let parent = self.open_dir(dir, true)?;
        match rustix::fs::unlinkat(parent, name, rustix::fs::AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
        rustix::fs::symlinkat(target, parent, name).map_err(io::Error::from)
    }

    /// Makes `rel` a FIFO (what the hostile corpus puts where a file should be).
    pub fn fifo(&mut self, rel: &Path) -> io::Result<()> {
        let (dir, name) = Self::split(rel)?;
        let parent = self.open_dir(dir, true)?;
        rustix::fs::mknodat(
            parent,
            name,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .map_err(io::Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn regular_files_are_replaced_atomically_and_keep_their_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.prom");
        let w = write_quietly(&p, |w| w.write_all(b"one\n")).unwrap();
        assert_eq!((w.bytes, w.delivery), (4, Delivery::Created));
        std::fs::set_permissions(&p, Permissions::from_mode(0o640)).unwrap();
        let w = write_quietly(&p, |w| w.write_all(b"two!\n")).unwrap();
        assert_eq!(w.delivery, Delivery::Replaced);
        assert_eq!(std::fs::read(&p).unwrap(), b"two!\n");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert!(leftovers(d.path()).is_empty());
        assert_eq!(w.to_string(), format!("wrote 5 bytes to {}", p.display()));
    }

    #[test]
    fn links_are_replaced_never_written_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let p = d.path().join("out.svg");
        symlink(&victim, &p).unwrap();
        let w = write_quietly(&p, |w| w.write_all(b"<svg/>")).unwrap();
        assert_eq!(w.delivery, Delivery::ReplacedLink);
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
        // A dangling link too: nothing is created at its target.
        let p2 = d.path().join("dangling.svg");
        symlink(d.path().join("created-by-attacker"), &p2).unwrap();
        write_quietly(&p2, |w| w.write_all(b"x")).unwrap();
        assert!(!d.path().join("created-by-attacker").exists());
    }

    #[test]
    fn errors_leave_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        // A directory target is refused before anything is created.
        let e = write_quietly(d.path(), |w| w.write_all(b"x")).unwrap_err();
        assert!(format!("{e:#}").contains("is a directory"), "{e:#}");
        // A failing producer removes its temporary file and leaves the old content.
        let p = d.path().join("keep");
        std::fs::write(&p, b"old").unwrap();
        let e = write_quietly(&p, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("renderer failed"))
        })
        .unwrap_err();
        assert!(format!("{e:#}").contains("renderer failed"), "{e:#}");
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
        // A missing directory is a clear error.
        let e = write_quietly(&d.path().join("no/such/dir/x"), |w| w.write_all(b"x")).unwrap_err();
        assert!(format!("{e:#}").contains("temporary file"), "{e:#}");
    }

    #[test]
    fn devices_and_pipes_are_written_through() {
        let w = write_quietly(Path::new("/dev/null"), |w| w.write_all(b"12345")).unwrap();
        assert_eq!(w.delivery, Delivery::WroteThrough("a character device"));
        assert_eq!(w.bytes, 5);
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        // /dev/full: the write fails, nothing replaces the device.
        if Path::new("/dev/full").exists() {
            let e = write_quietly(Path::new("/dev/full"), |w| w.write_all(&[0u8; 100_000]))
                .unwrap_err();
            assert!(format!("{e:#}").contains("/dev/full"), "{e:#}");
            assert!(
                std::fs::metadata("/dev/full")
                    .unwrap()
                    .file_type()
                    .is_char_device()
            );
        }
    }

    /// Issue 41: a legal 251-byte name is written (its temporary name was 267 bytes, past
    /// NAME_MAX, and the write refused).
    #[test]
    fn a_name_near_name_max_is_written() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("n".repeat(251));
        write_quietly(&p, |w| w.write_all(b"x")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
    }

    /// Issue 41: a link planted inside an output directory is not written through, at a
    /// directory or at a file; the tree's own links are replaced.
    #[test]
    fn the_directory_writer_never_follows_a_planted_link() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        symlink(&elsewhere, out.join("sys")).unwrap();
        symlink(elsewhere.join("victim"), out.join("file")).unwrap();
        let mut w = DirWriter::new(&out).unwrap();
        let e = w.file(Path::new("sys/devices/x"), b"1").unwrap_err();
        assert!(e.to_string().contains("out/sys is a symbolic link"), "{e}");
        let e = w.file(Path::new("file"), b"1").unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        w.file(Path::new("a/b/c"), b"abc").unwrap();
        w.link(Path::new("a/l"), "b/c").unwrap();
        w.link(Path::new("a/l"), "b").unwrap();
        assert_eq!(std::fs::read(out.join("a/b/c")).unwrap(), b"abc");
        assert_eq!(std::fs::read_link(out.join("a/l")).unwrap(), Path::new("b"));
    }
}
