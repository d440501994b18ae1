//! Analyses: pure functions of the [`crate::model::Topology`] (plus probe evidence) that judge it.
//! `classify` labels every endpoint pair the way `nvidia-smi topo -m` and NCCL would; `audit`
//! checks the node for every known cause of a silent GPUDirect RDMA fallback.

pub mod audit;
pub mod classify;
pub mod nccl;

pub mod testkit;
