//! peerpath: tells an operator, before a GPU job runs, whether every accelerator in a node can
//! reach its network adapter the fast way (GPUDirect RDMA over a short PCIe path).
//!
//! Sources ([`sources`]) turn the live machine, a snapshot or an XML/JSON file into one
//! [`model::Topology`]; analyses classify, audit and place over it; renderers ([`render`]) write
//! text, JSON, pictures and scheduler files.

pub mod analysis;
pub mod capture;
pub mod fuzzing;
pub mod model;
pub mod output;
pub mod parse;
pub mod probe;
pub mod render;
pub mod sources;
pub mod synth;
