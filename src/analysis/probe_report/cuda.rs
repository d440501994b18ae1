//! What the CUDA probes report (`peerpath probe --memory cuda`, docs/probe.md §9): per GPU the
//! driver's GPUDirect attributes, dma-buf support and copy bandwidths, per GPU pair peer access
//! and copy bandwidth. `probe::cuda` measures them; the audit and the report read them back.

use serde::{Deserialize, Serialize};

/// What the CUDA probes found about one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CudaDevice {
    /// CUDA ordinal.
    pub ordinal: usize,
    /// `cuDeviceGetName`.
    pub name: Option<String>,
    /// `cuDeviceGetPCIBusId`.
    pub pci_bus_id: Option<String>,
    /// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`.
    pub dma_buf_supported: Option<bool>,
    /// Whether `cuMemGetHandleForAddressRange` exported a 2 MiB allocation.
    pub dma_buf_export: bool,
    /// Why the export failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dma_buf_export_error: Option<String>,
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED`.
    pub gpudirect_rdma_supported: Option<bool>,
    /// Pinned host → device copy bandwidth, GB/s (10^9 bytes/s).
    pub h2d_gbytes_per_s: Option<f64>,
    /// Device → pinned host copy bandwidth, GB/s.
    pub d2h_gbytes_per_s: Option<f64>,
    /// Errors of the calls above, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// Device→device copy between two GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CudaPeer {
    /// Source ordinal.
    pub src: usize,
    /// Destination ordinal.
    pub dst: usize,
    /// `cuDeviceCanAccessPeer(dst → src)`.
    pub can_access_peer: Option<bool>,
    /// `cuMemcpyPeer` without peer access enabled (the driver stages through host), GB/s.
    pub without_peer_gbytes_per_s: Option<f64>,
    /// `cuMemcpyPeer` after `cuCtxEnablePeerAccess`, GB/s.
    pub with_peer_gbytes_per_s: Option<f64>,
    /// Errors (or why peer access was not measured), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// The CUDA probes' report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CudaReport {
    /// Whether the probes ran.
    pub available: bool,
    /// Why not, when they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `cuDriverGetVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<i32>,
    /// Per GPU.
    pub devices: Vec<CudaDevice>,
    /// Per ordered GPU pair.
    pub peers: Vec<CudaPeer>,
}
