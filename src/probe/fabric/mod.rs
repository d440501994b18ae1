//! The fabric side of the probe: a loopback pair of connected endpoints on one NIC (or one
//! libfabric provider domain), memory registration, RDMA WRITE/READ and completion polling.
//! Two implementations: [`verbs`] (libibverbs, InfiniBand/RoCE) and [`ofi`] (libfabric: EFA,
//! Slingshot, Ultra Ethernet, and here its `tcp` provider). Both load their library at run time.

pub mod layout;
pub mod ofi;
pub mod ofi_sys;
pub mod verbs;
pub mod verbs_sys;

use super::Unavailable;
use super::memory::Buffer;
use serde::Serialize;

/// The RDMA operation a cell measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// RDMA WRITE: the initiator's local buffer is read by its NIC and written into the target.
    Write,
    /// RDMA READ: the target's buffer is read by the NIC and written into the initiator's.
    Read,
}

impl Op {
    /// Name in JSON and text.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
        }
    }
}

/// How a registration was attempted and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegAttempt {
    /// `dmabuf` (`ibv_reg_dmabuf_mr` / libfabric dma-buf), `peer` (plain `ibv_reg_mr` on a
    /// device pointer, claimed by a peer-memory client such as nvidia-peermem), `hmem`
    /// (`fi_mr_regattr` with `FI_HMEM_CUDA`), or `host` (plain registration of host memory).
    pub method: String,
    /// Whether it worked.
    pub ok: bool,
    /// errno (positive) when it failed and one was reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errno: Option<i32>,
    /// What the failure means (mapped from the errno), or why the method was not tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

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

/// A registered buffer, by handle into the fabric's own table (so the fabric frees every
/// registration it made, even on Ctrl-C).
#[derive(Debug, Clone)]
pub struct Registered {
    /// Handle for `post` and `deregister`.
    pub handle: usize,
    /// The method that worked.
    pub method: String,
    /// Every attempt, in order (failed dma-buf first, then the one that worked, …).
    pub attempts: Vec<RegAttempt>,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// WRITE or READ.
    pub op: Op,
    /// Handle of the initiator-side registration.
    pub local: usize,
    /// Offset in it.
    pub local_off: usize,
    /// Handle of the target-side registration.
    pub remote: usize,
    /// Offset in it.
    pub remote_off: usize,
    /// Bytes.
    pub len: usize,
    /// Returned in the completion.
    pub wr_id: u64,
}

/// A fabric opened on one device/provider with a connected loopback pair: an initiator
/// endpoint and a target endpoint sharing one protection domain.
pub trait Fabric {
    /// What was opened, e.g. `ofi:tcp:lo` or `verbs:mlx5_0:1`.
    fn name(&self) -> String;
    /// Line rate of the port in GB/s (10^9 bytes/s), when the device reports one.
    fn line_rate_gbytes(&self) -> Option<f64>;
    /// Most operations that may be outstanding at once.
    fn max_outstanding(&self) -> usize;
    /// Registers a buffer for local and remote read/write access: dma-buf first for device
    /// memory, then plain/peer-memory registration.
    fn register(&mut self, buf: &mut dyn Buffer) -> Result<Registered, Vec<RegAttempt>>;
    /// Releases a registration.
    fn deregister(&mut self, handle: usize);
    /// Posts one operation on the initiator (see [`Transfer`]).
    fn post(&mut self, t: &Transfer) -> Result<Posted, String>;
    /// Polls the initiator's completions (and drives the target's progress), appending them.
    fn poll(&mut self, out: &mut Vec<Completion>) -> Result<(), String>;
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
