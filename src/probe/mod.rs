//! The live transfer probe (shared/reference/gdr-probe-and-audit.md §1): for chosen GPU–NIC
//! pairs, register GPU memory (dma-buf first, then peer memory), run loopback RDMA WRITE and
//! READ with the GPU as source and as destination next to a host-memory baseline on the same
//! NIC, verify every byte, and turn the bandwidth ratios into verdicts that confirm or
//! contradict the topology's classification. Plus CUDA copy probes that need no NIC.
//!
//! Hardware libraries (libibverbs, libfabric, libcuda, libamdhip64) are loaded at run time; a missing one
//! is an [`Unavailable`] naming the package that brings it.
//!
//! Stages: [`plan`] (which jobs and cells), [`run`] (fabrics, registrations, the transfer
//! loop), [`outcome`] (rows, skips, the finished report); [`report`] is the typed report that
//! `--format json` writes and `audit --evidence` reads.
//!
//! Unsafe code (the FFI in `fabric`, `cuda`, `host`) is held to: every `unsafe` block small and
//! preceded by a `SAFETY:` comment, every `unsafe fn` with a `# Safety` section (the lints
//! below keep it so).
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod control;
pub mod counters;
pub mod cuda;
pub mod cufile;
pub mod fabric;
pub mod hip;
pub mod host;
pub mod live;
pub mod memory;
pub mod outcome;
pub mod pairs;
pub mod plan;
pub mod remote;
pub mod run;
pub mod storage;

use std::sync::atomic::{AtomicBool, Ordering};

pub use crate::analysis::probe_report::PROBE_SCHEMA;

/// Why the probe could not run at all (exit code 3): a library or device is missing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unavailable {
    /// What is missing, in words, with the package that brings it when it is a library.
    pub message: String,
}

impl Unavailable {
    /// A shared library that could not be loaded.
    pub fn library(soname: &str, package: &str, detail: &str) -> Self {
        Unavailable {
            message: format!(
                "{soname} could not be loaded ({detail}); it is installed by {package}"
            ),
        }
    }
    /// A device or provider that is absent.
    pub fn device(detail: &str) -> Self {
        Unavailable {
            message: detail.to_string(),
        }
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Unavailable {}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C was pressed (set by the handler [`install_interrupt_handler`] installs). The
/// transfer loop stops at the next check, and every registration, endpoint and buffer is freed
/// by its owner's `Drop` on the way out.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

extern "C" fn on_sigint(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Installs a SIGINT handler that only sets the [`interrupted`] flag. Called again after a
/// fabric library is initialised, because some libfabric providers (PSM) install their own
/// SIGINT handler that exits the process, which would skip the cleanup.
pub fn install_interrupt_handler() {
    // SAFETY: struct sigaction is plain data; all zero is "no handler, no flags".
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_sigint as *const () as libc::sighandler_t;
    sa.sa_flags = libc::SA_RESTART;
    // SAFETY: sa_mask is a valid sigset_t to clear.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: sa is fully initialised, and its handler only stores to an atomic, which is
    // async-signal-safe; the old action is not asked for.
    unsafe { libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut()) };
}

/// Sets the interrupted flag (tests, and the handler).
pub fn set_interrupted(v: bool) {
    INTERRUPTED.store(v, Ordering::Relaxed);
}

/// The library to load: `default`, or in a debug build the path in the environment variable
/// `var` (tests use it to simulate a missing library; release builds ignore it).
pub fn lib_name(default: &str, var: &str) -> String {
    if cfg!(debug_assertions)
        && let Ok(v) = std::env::var(var)
    {
        return v;
    }
    default.to_string()
}
