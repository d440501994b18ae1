//! The fabric side of the probe: a loopback pair of connected endpoints on one NIC (or one
//! libfabric provider domain), memory registration, RDMA WRITE/READ and completion polling.
//! Two implementations: [`verbs`] (libibverbs, InfiniBand/RoCE) and [`ofi`] (libfabric: EFA,
//! Slingshot, Ultra Ethernet, and here its `tcp` provider). Both load their library at run time.

/// Declares a struct of C entry points resolved by name from a library opened at run time
/// (`$soname`, or in a debug build the path in `$env`), and `shared`, which opens it once per
/// process. Fields are named as the C symbols; `optional` ones are `None` when the library
/// predates them. A missing library or required symbol is an [`Unavailable`] naming `$package`.
macro_rules! dyn_library {
    ($(#[$m:meta])* struct $name:ident from $soname:ident ($env:literal, $package:literal) {
        $( $sym:ident : $ty:ty ),* $(,)?
    } optional {
        $( $osym:ident : $oty:ty ),* $(,)?
    }) => {
        $(#[$m])*
        #[allow(non_snake_case)]
        struct $name {
            /// Keeps the library loaded while the entry points below are used.
            _lib: libloading::Library,
            $( $sym: $ty, )*
            $( $osym: Option<$oty>, )*
        }

        impl $name {
            /// The library, opened on first use and kept loaded for the rest of the process
            /// (a failure to open it is kept too). Loading runs the library's initialisers —
            /// libfabric 1.17's dependencies calibrate PSM's clock for about 0.2 s — and each
            /// `dlclose` + `dlopen` pair would run them again for every fabric opened.
            fn shared() -> Result<&'static $name, $crate::probe::Unavailable> {
                static LIB: std::sync::OnceLock<Result<$name, $crate::probe::Unavailable>> =
                    std::sync::OnceLock::new();
                LIB.get_or_init($name::open).as_ref().map_err(Clone::clone)
            }

            fn open() -> Result<$name, $crate::probe::Unavailable> {
                let unavailable = |detail: &str| {
                    $crate::probe::Unavailable::library($soname, $package, detail)
                };
                let path = $crate::probe::lib_name($soname, $env);
                // SAFETY: loading the library runs its initialisers, which have no
                // preconditions.
                let lib = unsafe { libloading::Library::new(path) }
                    .map_err(|e| unavailable(&e.to_string()))?;
                Ok($name {
                    $( $sym: {
                        let name = concat!(stringify!($sym), "\0").as_bytes();
                        // SAFETY: `$ty` is the symbol's C signature in the headers the `_sys`
                        // file mirrors; the pointer is copied out of the `Symbol` but only
                        // called while `_lib` keeps the library loaded.
                        *unsafe { lib.get::<$ty>(name) }
                            .map_err(|e| unavailable(&format!("missing symbol: {e}")))?
                    }, )*
                    $( $osym: {
                        let name = concat!(stringify!($osym), "\0").as_bytes();
                        // SAFETY: as above.
                        unsafe { lib.get::<$oty>(name) }.ok().map(|s| *s)
                    }, )*
                    _lib: lib,
                })
            }
        }
    };
}

pub mod layout;
pub mod ofi;
pub mod ofi_sys;
pub mod verbs;
pub mod verbs_sys;

use super::Unavailable;
use super::memory::Buffer;
use crate::analysis::probe_report::{MemoryKind, NicRef, Op, RegAttempt};

impl RegAttempt {
    /// A successful attempt.
    pub fn ok(method: &str) -> Self {
        RegAttempt {
            method: method.into(),
            ok: false,
            errno: None,
            detail: None,
        }
        .succeeded()
    }
    fn succeeded(mut self) -> Self {
        self.ok = true;
        self
    }
    /// A failed attempt with an errno, mapped to its usual meaning for `method`.
    pub fn failed(method: &str, errno: Option<i32>, what: &str) -> Self {
        let meaning = errno.map(|e| map_reg_errno(method, e));
        let detail = match meaning {
            Some(m) => format!("{what}: {m}"),
            None => what.to_string(),
        };
        RegAttempt {
            method: method.into(),
            ok: false,
            errno,
            detail: Some(detail),
        }
    }
}

/// The usual meaning of a registration errno (shared/reference/gdr-probe-and-audit.md §1.1,
/// §1.6: perftest and NCCL error handling).
pub fn map_reg_errno(method: &str, errno: i32) -> String {
    let os = std::io::Error::from_raw_os_error(errno);
    let why = match errno {
        libc::EFAULT if method == "peer" => {
            "no peer-memory client claimed the GPU address (nvidia-peermem not loaded, or a dma-buf-only stack)"
        }
        libc::EFAULT => "bad address",
        libc::EOPNOTSUPP | libc::EPROTONOSUPPORT => {
            "dma-buf registration not supported by the kernel or rdma-core"
        }
        libc::EINVAL => "invalid arguments or alignment",
        libc::ENOMEM => {
            "out of memory or registration resources (for GPU memory: BAR1 may be exhausted)"
        }
        libc::EPERM | libc::EACCES => "not permitted (memlock limit or device permissions)",
        libc::ENOSYS => "not implemented by this library or provider",
        libc::EBADF => "bad file descriptor",
        _ => "",
    };
    if why.is_empty() {
        format!("errno {errno} ({os})")
    } else {
        format!("errno {errno} ({os}): {why}")
    }
}

/// What a fabric reports about a registration it made: its handle in the fabric's own table
/// (so the fabric can free every registration it made, even on Ctrl-C), the method that
/// worked and every attempt. Only [`Registration::new`] sees it.
#[derive(Debug, Clone)]
pub struct RawRegistration {
    /// Index into the fabric's registration table.
    pub handle: usize,
    /// The method that worked.
    pub method: String,
    /// Every attempt, in order (failed dma-buf first, then the one that worked, …).
    pub attempts: Vec<RegAttempt>,
}

/// Names one live registration in a [`Transfer`]. It cannot be built or copied outside this
/// module, so the only way to get one is to borrow it from a live [`Registration`]: a posted
/// transfer always names memory that is still registered and still allocated.
#[derive(Debug)]
pub struct RegKey {
    /// Address of the fabric that made the registration (compared, never dereferenced).
    owner: *const (),
    /// Index into that fabric's table.
    handle: usize,
}

impl RegKey {
    /// The handle in `fabric`'s table, when `fabric` made this registration (a key of another
    /// fabric is refused rather than read as an index into the wrong table).
    pub fn handle_for<F: Fabric>(&self, fabric: &F) -> Option<usize> {
        std::ptr::eq(self.owner, fabric as *const F as *const ()).then_some(self.handle)
    }
}

/// A buffer registered with a fabric, deregistered when dropped. It borrows the buffer
/// mutably and the fabric shared for its whole life, so the borrow checker — not a calling
/// convention — ensures the buffer is neither freed nor moved while the NIC may access it,
/// and that the fabric (protection domain) outlives the registration:
///
/// ```compile_fail
/// # use peerpath::probe::fabric::{Fabric, Registration};
/// # use peerpath::probe::host::HostBuffer;
/// fn register_then_free(fabric: &dyn Fabric) {
///     let mut buf = HostBuffer::new(4096).unwrap();
///     let reg = Registration::new(fabric, &mut buf).unwrap();
///     drop(buf); // error[E0505]: `buf` is still borrowed by the registration
///     drop(reg);
/// }
/// ```
pub struct Registration<'f, 'b> {
    fabric: &'f dyn Fabric,
    buf: &'b mut dyn Buffer,
    key: RegKey,
    method: String,
    attempts: Vec<RegAttempt>,
}

impl<'f, 'b> Registration<'f, 'b> {
    /// Registers `buf` with `fabric` (dma-buf first for device memory, then plain or
    /// peer-memory registration); on failure, every attempt with its errno and meaning.
    pub fn new(fabric: &'f dyn Fabric, buf: &'b mut dyn Buffer) -> Result<Self, Vec<RegAttempt>> {
        // SAFETY: the registration ends in `Drop` below, and until then `buf` stays mutably
        // borrowed by the returned value, so its memory can be neither freed nor moved while
        // registered.
        let raw = unsafe { fabric.register_raw(buf) }?;
        Ok(Registration {
            fabric,
            buf,
            key: RegKey {
                owner: fabric as *const dyn Fabric as *const (),
                handle: raw.handle,
            },
            method: raw.method,
            attempts: raw.attempts,
        })
    }
    /// The key naming this registration in a [`Transfer`].
    pub fn key(&self) -> &RegKey {
        &self.key
    }
    /// The registered buffer (to fill it before and read it back after the transfers).
    pub fn buffer(&mut self) -> &mut dyn Buffer {
        &mut *self.buf
    }
    /// The method that worked (`dmabuf`, `peer`, `hmem`, `host`).
    pub fn method(&self) -> &str {
        &self.method
    }
    /// Every attempt, in order.
    pub fn attempts(&self) -> &[RegAttempt] {
        &self.attempts
    }
}

impl Drop for Registration<'_, '_> {
    fn drop(&mut self) {
        self.fabric.deregister_raw(self.key.handle);
    }
}

/// A fabric's live registrations by handle, for the implementations ([`verbs`], [`ofi`]):
/// `M` is the library's registration object.
pub(crate) struct RegTable<M: Copy> {
    slots: std::cell::RefCell<Vec<Option<Slot<M>>>>,
}

/// One live registration: the library object and the registered range.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot<M> {
    /// The library's registration object.
    pub mr: M,
    /// First registered address (host virtual address or device pointer).
    pub addr: u64,
    /// Registered bytes.
    pub len: usize,
}

impl<M: Copy> RegTable<M> {
    /// An empty table.
    pub fn new() -> Self {
        RegTable {
            slots: Default::default(),
        }
    }
    /// Records a registration of `buf`; returns its handle.
    pub fn insert(&self, mr: M, buf: &dyn Buffer) -> usize {
        let mut s = self.slots.borrow_mut();
        s.push(Some(Slot {
            mr,
            addr: buf.addr(),
            len: buf.len(),
        }));
        s.len() - 1
    }
    /// Forgets a registration; returns its object to release (`None`: already released).
    pub fn remove(&self, handle: usize) -> Option<M> {
        self.slots
            .borrow_mut()
            .get_mut(handle)
            .and_then(|s| s.take())
            .map(|s| s.mr)
    }
    /// The live registration `k` names, when `owner` made it.
    pub fn slot<F: Fabric>(&self, owner: &F, k: &RegKey) -> Option<Slot<M>> {
        k.handle_for(owner)
            .and_then(|h| self.slots.borrow().get(h).copied().flatten())
    }
    /// Number of live registrations.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.slots.borrow().iter().flatten().count()
    }
    /// Forgets every registration; returns the objects to release.
    pub fn drain(&self) -> Vec<M> {
        self.slots
            .borrow_mut()
            .drain(..)
            .flatten()
            .map(|s| s.mr)
            .collect()
    }
    /// The local and remote registrations of a transfer posted on `owner`, when `owner` made
    /// both and both ranges lie inside them.
    pub fn resolve<F: Fabric>(
        &self,
        owner: &F,
        t: &Transfer<'_>,
    ) -> Result<(Slot<M>, Slot<M>), String> {
        let slots = self.slots.borrow();
        let get = |k: &RegKey| {
            k.handle_for(owner)
                .and_then(|h| slots.get(h).copied().flatten())
        };
        let (Some(l), Some(r)) = (get(t.local), get(t.remote)) else {
            return Err("post on a registration this fabric does not hold".into());
        };
        if t.local_off.checked_add(t.len).is_none_or(|e| e > l.len)
            || t.remote_off.checked_add(t.len).is_none_or(|e| e > r.len)
        {
            return Err("post past the end of a registered buffer".into());
        }
        Ok((l, r))
    }
}

/// A registration in a peer process as that process exported it ([`Fabric::export`]) and sent
/// it over the probe's control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteRegion {
    /// Address RMA operations name for the region's first byte (0 when the provider
    /// addresses registrations by offset).
    pub addr: u64,
    /// The remote key.
    pub key: u64,
    /// Registered bytes.
    pub len: usize,
}

/// A peer's registration imported into a fabric, forgotten when dropped; its [`RegKey`] names
/// it as the remote side of a [`Transfer`]. The fabric checks every post against its length,
/// the peer checks nothing: the bytes land where the peer's key lets them.
pub struct RemoteRegistration<'f> {
    fabric: &'f dyn Fabric,
    key: RegKey,
}

impl<'f> RemoteRegistration<'f> {
    /// Imports `region` into `fabric`.
    pub fn new(fabric: &'f dyn Fabric, region: RemoteRegion) -> Result<Self, String> {
        let handle = fabric.import_remote(region)?;
        Ok(RemoteRegistration {
            fabric,
            key: RegKey {
                owner: fabric as *const dyn Fabric as *const (),
                handle,
            },
        })
    }
    /// The key naming the peer's region in a [`Transfer`].
    pub fn key(&self) -> &RegKey {
        &self.key
    }
}

impl Drop for RemoteRegistration<'_> {
    fn drop(&mut self) {
        self.fabric.forget_remote(self.key.handle);
    }
}

/// A completed operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The `wr_id` given to `post`.
    pub wr_id: u64,
    /// `Err(what)` for an error completion (status, provider errno).
    pub status: Result<(), String>,
}

/// Whether a post was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    /// Queued.
    Yes,
    /// The send queue is full: poll and retry.
    Busy,
}

/// One operation to post: `len` bytes between registration `local` at `local_off` (on the
/// initiator) and registration `remote` at `remote_off` (on the target).
#[derive(Debug, Clone, Copy)]
pub struct Transfer<'k> {
    /// WRITE or READ.
    pub op: Op,
    /// The initiator-side registration.
    pub local: &'k RegKey,
    /// Offset in it.
    pub local_off: usize,
    /// The target-side registration.
    pub remote: &'k RegKey,
    /// Offset in it.
    pub remote_off: usize,
    /// Bytes.
    pub len: usize,
    /// Returned in the completion.
    pub wr_id: u64,
}

/// A fabric opened on one device/provider with a connected loopback pair: an initiator
/// endpoint and a target endpoint sharing one protection domain. Every method takes `&self`
/// so that [`Registration`]s can hold the fabric while transfers are posted.
pub trait Fabric {
    /// What was opened: the RDMA device and port, or the libfabric provider and domain (the
    /// PCI address is the caller's to add, from the topology).
    fn nic(&self) -> NicRef;
    /// Line rate of the port in GB/s (10^9 bytes/s), when the device reports one.
    fn line_rate_gbytes(&self) -> Option<f64>;
    /// Most operations that may be outstanding at once.
    fn max_outstanding(&self) -> usize;
    /// Registers a buffer for local and remote read/write access: dma-buf first for device
    /// memory, then plain/peer-memory registration. Use [`Registration::new`].
    ///
    /// # Safety
    ///
    /// From the call until [`Fabric::deregister_raw`] with the returned handle, the NIC may
    /// read and write the buffer's memory: the caller must keep the buffer allocated and in
    /// place until then.
    unsafe fn register_raw(&self, buf: &mut dyn Buffer)
    -> Result<RawRegistration, Vec<RegAttempt>>;
    /// Releases a registration (a no-op for a handle already released).
    fn deregister_raw(&self, handle: usize);
    /// Posts one operation on the initiator (see [`Transfer`]).
    fn post(&self, t: &Transfer<'_>) -> Result<Posted, String>;
    /// What a peer process needs to address a registration of this fabric with RMA: the
    /// address its operations name (the virtual address, or 0 where the provider addresses
    /// registrations by offset), the remote key and the length. `None` where the fabric cannot
    /// be reached from another process (verbs' loopback pair).
    fn export(&self, key: &RegKey) -> Option<RemoteRegion> {
        let _ = key;
        None
    }
    /// Records a peer's registration (received over the control connection) so that
    /// [`Transfer`]s can name it; use [`RemoteRegistration::new`]. Returns its handle.
    fn import_remote(&self, region: RemoteRegion) -> Result<usize, String> {
        let _ = region;
        Err("this fabric cannot address another process's memory".into())
    }
    /// Forgets an imported peer registration (a no-op for one already forgotten).
    fn forget_remote(&self, handle: usize) {
        let _ = handle;
    }
    /// Polls the initiator's completions (and drives the target's progress, unless a
    /// [`TargetDriver`] of this fabric is alive), appending them.
    fn poll(&self, out: &mut Vec<Completion>) -> Result<(), String>;
    /// For a fabric whose target side is progressed in software (libfabric's `tcp`: the
    /// target's socket is read only while its completion queue is), a driver to run on a
    /// thread of its own while transfers run, as the remote node's own CPU would; `None` where
    /// the NIC progresses the target itself (verbs) or the library does not allow the target's
    /// queue to be read from another thread. While the driver is alive, [`Fabric::poll`] leaves
    /// the target to it.
    fn target_driver(&self) -> Option<Box<dyn TargetDriver + '_>> {
        None
    }
    /// Why this fabric, as the library was built, cannot register memory of `kind` at all
    /// (a gap of the library, not of the node: nothing about the GPU path is learned by
    /// trying), or `None` when it can try. libfabric without FI_HMEM says so for GPU memory.
    fn cannot_register(&self, kind: MemoryKind) -> Option<String> {
        let _ = kind;
        None
    }
}

/// Drives the target side's progress from another thread (see [`Fabric::target_driver`]).
pub trait TargetDriver: Send {
    /// Drives progress until `stop` is set; `Err` with the target side's first error.
    fn run(self: Box<Self>, stop: &std::sync::atomic::AtomicBool) -> Result<(), String>;
}

/// Why a fabric could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// Library, provider or device absent: the probe cannot run (exit 3).
    Unavailable(Unavailable),
    /// Present but setup failed.
    Failed(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Unavailable(u) => write!(f, "{u}"),
            OpenError::Failed(s) => f.write_str(s),
        }
    }
}
