//! The "NVCX complexes" NVIDIA's `rdma_topo topology -j` reports (linux-rdma/rdma-core,
//! `kernel-boot/rdma_topo`): each a GPU with the NIC functions rdma_topo paired with it, as
//! `parse::rdma_topo` reads them from a capture or a file beside an input.

use crate::model::Bdf;
use serde::{Deserialize, Serialize};

/// Which kind of complex rdma_topo found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ComplexKind {
    /// A NIC function, its Data Direct DMA function and the GPU next to the DMA function.
    DataDirect,
    /// A NIC function and a GPU under one ConnectX switch.
    Inline,
    /// The NIC functions and GPUs of one NUMA node (GPUs on Grace root ports).
    Numa,
}

impl ComplexKind {
    /// rdma_topo's own name for the topology type (`DMA-based`, `Inline`, `NUMA-based`).
    pub fn as_str(self) -> &'static str {
        match self {
            ComplexKind::DataDirect => "DMA-based",
            ComplexKind::Inline => "Inline",
            ComplexKind::Numa => "NUMA-based",
        }
    }
}

/// One complex of the JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Complex {
    /// The shape.
    pub kind: ComplexKind,
    /// NIC physical functions (`rdma_nic_pf_bdf`, or every `pf_bdfs` entry).
    pub nic_pfs: Vec<Bdf>,
    /// The Data Direct DMA function (`rdma_dma_bdf`).
    pub dma: Option<Bdf>,
    /// The GPUs (`gpu_bdf`, or `gpu_bdfs`).
    pub gpus: Vec<Bdf>,
    /// `numa_node`, when given.
    pub numa_node: Option<i64>,
    /// `rdma_nic_ats`: whether the NIC function has the ATS capability.
    pub ats: Option<bool>,
    /// RDMA device names per function (`subsystems.<bdf>.infiniband`).
    pub rdma: Vec<(Bdf, String)>,
}
