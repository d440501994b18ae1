//! What `peerpath probe-storage` reports (`peerpath.storage-probe/1`, docs/probe.md "Storage
//! probe"): for each GPU and each probed file, a read with cuFile and a read with `pread` plus
//! a host-to-device copy, each verified byte for byte, with the path cuFile took (nvidia-fs,
//! P2PDMA or compat mode) and how that was told. `probe::storage` measures; the contract lives
//! here, below the probe and any reader.

use crate::model::Bdf;
use serde::{Deserialize, Serialize};

/// Schema tag of the storage probe's JSON output.
pub const STORAGE_PROBE_SCHEMA: &str = "peerpath.storage-probe/1";

/// The path a cuFile read took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CufilePath {
    /// Direct DMA from the drive into GPU memory through nvidia-fs.
    NvidiaFs,
    /// Direct DMA through the kernel's PCI P2PDMA (no nvidia-fs).
    P2pdma,
    /// Compat mode: POSIX reads into a host bounce buffer, then a copy to the GPU.
    Compat,
    /// Could not be told (see the cell's `path_evidence`).
    Unknown,
}

impl CufilePath {
    /// The name in text and JSON (`nvidia_fs`, `p2pdma`, `compat`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            CufilePath::NvidiaFs => "nvidia_fs",
            CufilePath::P2pdma => "p2pdma",
            CufilePath::Compat => "compat",
            CufilePath::Unknown => "unknown",
        }
    }
}

/// cuFile's driver properties (`cuFileDriverGetProperties`) and parameters
/// (`cuFileGetParameterBool`), as the library reported them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CufileDriver {
    /// The library loaded (path or soname).
    pub library: String,
    /// `cuFileGetVersion` (e.g. 1150 for GDS 1.15), when exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// `nvfs.major_version.minor_version`: nvidia-fs's version (`0.0` when it is not loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvfs_version: Option<String>,
    /// `nvfs.dstatusflags` bit `CU_FILE_NVME_SUPPORTED` (4): NVMe through nvidia-fs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvme_supported: Option<bool>,
    /// `nvfs.dstatusflags` bit `CU_FILE_NVME_P2P_SUPPORTED` (11): NVMe through PCI P2PDMA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvme_p2pdma_supported: Option<bool>,
    /// `nvfs.dcontrolflags` bit `CU_FILE_ALLOW_COMPAT_MODE` (1), as configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat_allowed: Option<bool>,
    /// `CUFILE_PARAM_FORCE_COMPAT_MODE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat_forced: Option<bool>,
    /// `CUFILE_PARAM_USE_PCIP2PDMA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_pci_p2pdma: Option<bool>,
    /// `nvfs.max_direct_io_size` in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_direct_io_size_kb: Option<u64>,
    /// `cuFileDriverOpen` with compat mode disallowed: `ok`, or the error it returned (then no
    /// file can take a direct path).
    pub strict_open: String,
}

/// A file probed: where it lies and what holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageTarget {
    /// The probe file (created by the probe, removed after).
    pub file: String,
    /// The mount point holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_point: Option<String>,
    /// Its file-system type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
    /// The NVMe drives below it (PCI functions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drives: Vec<Bdf>,
    /// Whether `O_DIRECT` could be used (else buffered reads: the page cache may serve them).
    pub o_direct: bool,
}

/// One timed, verified read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResult {
    /// Bytes read per pass.
    pub bytes: u64,
    /// Passes timed.
    pub passes: u32,
    /// Mean bandwidth over the passes, GB/s (10^9 bytes/s).
    pub gbytes_per_s: f64,
    /// Every byte in GPU memory matched the file after each pass.
    pub verified: bool,
}

/// One GPU reading one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageCell {
    /// CUDA ordinal.
    pub gpu: usize,
    /// The GPU's PCI address (`cuDeviceGetPCIBusId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_pci_bus_id: Option<String>,
    /// Index into [`StorageProbeReport::targets`].
    pub target: usize,
    /// GPU–drive path label (nvidia-smi's classes), when the file lies on one NVMe drive and
    /// the scan classified the pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The path cuFile took.
    pub path: CufilePath,
    /// How the path was told (the strict registration's result, the driver's flags).
    pub path_evidence: String,
    /// `cuFileRead` into device memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cufile: Option<ReadResult>,
    /// `pread` into pinned host memory, then `cuMemcpyHtoD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub posix: Option<ReadResult>,
    /// Errors of this cell, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl StorageCell {
    /// cuFile over POSIX bandwidth, when both were measured.
    pub fn ratio(&self) -> Option<f64> {
        match (&self.cufile, &self.posix) {
            (Some(c), Some(p)) if p.gbytes_per_s > 0.0 => Some(c.gbytes_per_s / p.gbytes_per_s),
            _ => None,
        }
    }

    /// Whether a read failed or did not verify.
    pub fn failed(&self) -> bool {
        !self.errors.is_empty()
            || self.cufile.as_ref().is_none_or(|r| !r.verified)
            || self.posix.as_ref().is_none_or(|r| !r.verified)
    }
}

/// The storage probe's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageProbeReport {
    /// Always [`STORAGE_PROBE_SCHEMA`].
    pub schema: String,
    /// cuFile as loaded.
    pub driver: CufileDriver,
    /// The files probed.
    pub targets: Vec<StorageTarget>,
    /// One cell per GPU and file.
    pub cells: Vec<StorageCell>,
    /// Facts and caveats (how files were chosen, what was left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl StorageProbeReport {
    /// Whether any cell failed.
    pub fn any_failed(&self) -> bool {
        self.cells.iter().any(StorageCell::failed)
    }
}

/// The document written when the probe cannot run at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageProbeUnavailable {
    /// Always [`STORAGE_PROBE_SCHEMA`].
    pub schema: String,
    /// What is missing, in words.
    pub unavailable: String,
}
