//! The [`Recorder`]: an [`FsRoot`] wrapper that logs every path the scanner read, listed,
//! followed or tested, with the bytes it read, so the archive is exactly what was read.

use crate::sources::fsroot::{Entry, EntryKind, FsRoot, OpenDir};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How the scanner touched a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Access {
    /// `kind()`: existence and type only (a final symlink is not followed).
    Kind,
    /// `read_link()`: the link itself.
    Link,
    /// `read_dir()`: the directory (a final symlink is followed).
    List,
    /// `read()`: the file (a final symlink is followed).
    Read,
}

/// What the scanner touched: the strongest access per path, directory listings, file bytes.
#[derive(Default)]
pub(super) struct Log {
    pub(super) touched: BTreeMap<PathBuf, Access>,
    pub(super) listed: BTreeMap<PathBuf, Vec<Entry>>,
    pub(super) content: BTreeMap<PathBuf, Vec<u8>>,
}

/// An [`FsRoot`] wrapper that records every path the scanner touches (and the bytes it read),
/// so a capture can archive exactly those.
pub struct Recorder<'a> {
    inner: &'a dyn FsRoot,
    log: Mutex<Log>,
}

impl<'a> Recorder<'a> {
    /// Wraps a root.
    pub fn new(inner: &'a dyn FsRoot) -> Self {
        Recorder {
            inner,
            log: Mutex::new(Log::default()),
        }
    }

    fn note(&self, path: &Path, a: Access) {
        if let Ok(mut l) = self.log.lock() {
            let e = l.touched.entry(path.to_path_buf()).or_insert(a);
            *e = (*e).max(a);
        }
    }

    /// The log, once the scan is over.
    pub(super) fn into_log(self) -> io::Result<Log> {
        self.log
            .into_inner()
            .map_err(|_| io::Error::other("capture log poisoned"))
    }

    /// Every path touched, as read (for tests and `--explain`-style listings).
    pub fn touched(&self) -> Vec<PathBuf> {
        self.log
            .lock()
            .map(|l| l.touched.keys().cloned().collect())
            .unwrap_or_default()
    }
}

impl FsRoot for Recorder<'_> {
    fn read_limited(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>> {
        self.note(path, Access::Read);
        let r = self.inner.read_limited(path, limit);
        if let (Ok(b), Ok(mut l)) = (&r, self.log.lock()) {
            l.content.insert(path.to_path_buf(), b.clone());
        }
        r
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.note(path, Access::Link);
        self.inner.read_link(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<Entry>> {
        self.note(path, Access::List);
        let r = self.inner.read_dir(path);
        if let (Ok(v), Ok(mut l)) = (&r, self.log.lock()) {
            l.listed.insert(path.to_path_buf(), v.clone());
        }
        r
    }
    fn open_dir<'b>(&'b self, path: &Path) -> io::Result<Box<dyn OpenDir + 'b>> {
        // Opening a directory is a look at it: the names read in it are noted one by one.
        self.note(path, Access::Kind);
        let inner = self.inner.open_dir(path)?;
        Ok(Box::new(RecordedDir { rec: self, inner }))
    }
    fn kind(&self, path: &Path) -> Option<EntryKind> {
        self.note(path, Access::Kind);
        self.inner.kind(path)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// A directory held open through a [`Recorder`]: every name read or followed in it is logged
/// under its full path, as the path-based calls are.
struct RecordedDir<'b> {
    rec: &'b Recorder<'b>,
    inner: Box<dyn OpenDir + 'b>,
}

impl OpenDir for RecordedDir<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn read_limited(&self, name: &str, limit: usize) -> io::Result<Vec<u8>> {
        let path = self.inner.path().join(name);
        self.rec.note(&path, Access::Read);
        let r = self.inner.read_limited(name, limit);
        if let (Ok(b), Ok(mut l)) = (&r, self.rec.log.lock()) {
            l.content.insert(path, b.clone());
        }
        r
    }
    fn read_link(&self, name: &str) -> io::Result<PathBuf> {
        self.rec.note(&self.inner.path().join(name), Access::Link);
        self.inner.read_link(name)
    }
}
