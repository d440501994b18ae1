//! The topology model: one graph of NUMA nodes, host bridges, ports, switches and endpoints,
//! built by a source (sysfs, snapshot, XML, JSON) and read by every analysis and renderer.

pub mod bandwidth;
pub mod bdf;
pub mod device;
pub mod fact;
pub mod linkfmt;
pub mod parts;
pub mod pcie;
pub mod serde_fmt;
pub mod topology;

pub use bdf::Bdf;
pub use device::{
    C2cLink, DataDirect, Device, DeviceKind, LinkInfo, OsDevice, OsDeviceKind, RdmaPort,
};
pub use fact::Fact;
pub use topology::{
    HostBridge, MachineInfo, NumaNode, NvLink, SourceInfo, Switch, Topology, Warning,
};
