//! The topology model: one graph of NUMA nodes, host bridges, ports, switches and endpoints,
//! built by a source (sysfs, snapshot, XML, JSON) and read by every analysis and renderer.

pub mod aer;
pub mod amd;
pub mod bandwidth;
pub mod bar;
pub mod bdf;
pub mod cpulist;
pub mod device;
pub mod fabric;
pub mod fact;
pub mod kmsg;
pub mod linkfmt;
pub mod nccl_settings;
pub mod nvfabric;
pub mod parts;
pub mod pci_config;
pub mod pcie;
pub mod rdma_topo;
pub mod serde_fmt;
pub mod storage;
pub mod topology;

pub use bdf::Bdf;
pub use device::{
    C2cLink, DataDirect, Device, DeviceKind, LinkInfo, NameSource, OsDevice, OsDeviceKind, RdmaPort,
};
pub use fact::Fact;
pub use topology::{
    HostBridge, HostInfo, HostScope, MachineInfo, NumaNode, NvLink, SourceInfo, Switch, Topology,
    Warning,
};
