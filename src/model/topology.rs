//! The whole node: machine facts, NUMA nodes, host bridges, PCI devices, switches, NVLinks,
//! and the graph over them.

use super::bdf::Bdf;
use super::device::{Device, DeviceKind};
use super::fact::Fact;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Version tag of the topology JSON document (`docs/json.md`).
pub const TOPOLOGY_SCHEMA: &str = "peerpath.topology/1";

/// Longest ancestor chain a device may have, itself included (64 bridges above it at most):
/// sources drop deeper devices with a warning, so every walk up `parent` links ends within
/// this many steps. A real PCIe hierarchy is under 20 deep (256 buses per domain bound it).
pub const MAX_CHAIN: usize = 65;

/// Where a topology came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// `sysfs` (live or a root prefix), `snapshot`, `hwloc-xml`, `nccl-xml`, `json`.
    pub kind: String,
    /// The path given with `--input` (`/` for the live machine).
    pub path: String,
    /// Facts the source cannot hold (NCCL XML has no host bridges, …).
    #[serde(default)]
    pub limitations: Vec<String>,
}

/// One host of an input that describes several (an NCCL topology XML fused across hosts by
/// NCCL's multi-node NVLink support carries a `host_hash` attribute on every `cpu` element).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// How the input names it: the `host_hash` value as written (`0xffa2647d9c5a65e8`).
    pub name: String,
    /// GPUs the input lists for it that the scan keeps (`gpu` elements inside a `pci`).
    pub gpus: usize,
    /// NIC ports the input lists for it that the scan keeps (`net` elements inside a `pci`; a
    /// `nic` directly under a `cpu`, NCCL's socket or virtual NIC, makes no device).
    pub nics: usize,
}

/// Which host of a multi-host input a topology describes (from the input's host names, and
/// `--host` or the default: the first host in input order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostScope {
    /// Every host the input holds, in input order.
    pub hosts: Vec<HostInfo>,
    /// Index in `hosts` of the host this topology describes.
    pub selected: usize,
    /// Whether `--host` chose it (false: the default, the first host).
    #[serde(default)]
    pub chosen: bool,
}

impl HostScope {
    /// The selected host.
    pub fn host(&self) -> &HostInfo {
        &self.hosts[self.selected.min(self.hosts.len().saturating_sub(1))]
    }

    /// One line naming every host and the one shown, for every command's output:
    /// `input holds 2 hosts; shown: host 0 (host_hash 0xffa2…, 4 GPUs, 4 NIC ports), the first,
    /// by default; not shown: host 1 (host_hash 0xb93b…, 4 GPUs, 4 NIC ports), select with
    /// --host 1`. One host: `host 0xffa2… (4 GPUs, 4 NIC ports)`.
    pub fn line(&self) -> String {
        let h = self.host();
        let desc = |h: &HostInfo| format!("{} GPUs, {} NIC ports", h.gpus, h.nics);
        if self.hosts.len() == 1 {
            return format!("host {} ({})", h.name, desc(h));
        }
        let others: Vec<String> = self
            .hosts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.selected)
            .map(|(i, o)| {
                format!(
                    "host {i} (host_hash {}, {}), select with --host {i}",
                    o.name,
                    desc(o)
                )
            })
            .collect();
        format!(
            "input holds {} hosts; shown: host {} (host_hash {}, {}){}; not shown: {}",
            self.hosts.len(),
            self.selected,
            h.name,
            desc(h),
            if self.chosen {
                ", chosen with --host"
            } else {
                ", the first, by default"
            },
            others.join("; ")
        )
    }
}

/// Node-wide facts read once by the scan (each from the file named in its doc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MachineInfo {
    /// `vendor_id` in `/proc/cpuinfo` (`GenuineIntel`, `AuthenticAMD`).
    pub cpu_vendor: Option<String>,
    /// `model name` in `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// `cpu family` in `/proc/cpuinfo`.
    pub cpu_family: Option<u32>,
    /// `model` in `/proc/cpuinfo`.
    pub cpu_model_number: Option<u32>,
    /// Number of distinct `physical id` values in `/proc/cpuinfo`.
    pub sockets: Option<u32>,
    /// Number of logical CPUs in `/proc/cpuinfo`.
    pub logical_cpus: Option<u32>,
    /// SMT siblings: `(cpu, core id, physical id)` from `/proc/cpuinfo`.
    #[serde(default)]
    pub cpu_cores: Vec<(u32, u32, u32)>,
    /// Hypervisor evidence: `(path, raw value)` — the cpuinfo `hypervisor` flag,
    /// `/sys/hypervisor/type`, DMI vendor/product naming a VM.
    #[serde(default)]
    pub hypervisor: Vec<(String, String)>,
    /// `/sys/class/dmi/id/sys_vendor`.
    pub dmi_sys_vendor: Option<String>,
    /// `/sys/class/dmi/id/product_name`.
    pub dmi_product_name: Option<String>,
    /// `/proc/cmdline`.
    pub kernel_cmdline: Fact<String>,
    /// Entries of `/sys/class/iommu` (`dmar0`, `ivhd0`); empty = no IOMMU registered.
    pub iommu_units: Fact<Vec<String>>,
    /// First line of `/proc/driver/nvidia/version`.
    pub nvidia_driver: Option<String>,
    /// `/sys/module/nvidia/version`.
    pub nvidia_module_version: Option<String>,
    /// `/sys/module/nvidia_peermem/version` (module loaded), `None` if absent.
    pub nvidia_peermem_version: Option<String>,
    /// `/sys/module/nv_peer_mem` exists (legacy Mellanox module).
    pub nv_peer_mem_loaded: bool,
    /// Clients under `/sys/kernel/mm/memory_peers/` with their `version` file.
    #[serde(default)]
    pub memory_peers: Vec<(String, Option<String>)>,
    /// `/sys/module/ib_core` exists: the kernel RDMA stack is loaded.
    pub ib_core_loaded: bool,
    /// `/sys/module` could be listed at all (a snapshot without it cannot tell a missing module
    /// from an uncaptured one).
    #[serde(default)]
    pub modules_visible: bool,
    /// `/sys/kernel/mm` could be listed: an empty [`MachineInfo::memory_peers`] then means no
    /// peer-memory client registered, not "not captured".
    #[serde(default)]
    pub mm_visible: bool,
    /// What the kernel log in the input says (IOMMU mode, command line, groups, Xid lines):
    /// read from operator text only (see [`crate::model::kmsg`]); empty elsewhere.
    #[serde(
        default,
        skip_serializing_if = "crate::model::kmsg::KernelLog::is_empty"
    )]
    pub kernel_log: crate::model::kmsg::KernelLog,
    /// GPUDirect Storage facts: nvidia-fs, `/etc/cufile.json`, the P2PDMA prerequisites, the
    /// mounts and their NVMe drives (see [`crate::model::storage`]).
    #[serde(
        default,
        skip_serializing_if = "crate::model::storage::StorageFacts::unread"
    )]
    pub storage: crate::model::storage::StorageFacts,
    /// The NCCL settings a job here would run with and where each came from: the node's
    /// `/etc/nccl.conf` (read by the scan, inside the input root), and the command's
    /// environment with `NCCL_CONF_FILE` or `~/.nccl.conf` when the command hands them in
    /// (`sources::LoadOptions::nccl_env`).
    #[serde(
        default,
        skip_serializing_if = "crate::model::nccl_settings::NcclSettings::is_empty"
    )]
    pub nccl: crate::model::nccl_settings::NcclSettings,
}

/// A NUMA node (`/sys/devices/system/node/node<N>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    /// Node number.
    pub id: u32,
    /// `cpulist`, as a cpulist string (`0-7,16-23`); empty for memory-only nodes (GPU memory
    /// exposed as NUMA, CXL).
    pub cpus: String,
    /// `distance` row, if read.
    #[serde(default)]
    pub distances: Vec<u32>,
}

/// A host bridge (root complex): the `pciDDDD:BB` directory under `/sys/devices`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostBridge {
    /// `pciDDDD:BB`.
    pub name: String,
    /// PCI domain.
    pub domain: u32,
    /// Root bus number.
    pub bus: u8,
    /// NUMA node, agreed by the devices under it (`None` when they report -1 or disagree).
    pub numa_node: Option<u32>,
    /// Local CPUs of the devices under it, as a cpulist string.
    pub cpus: Option<String>,
}

/// A PCIe switch: one upstream port and its downstream ports (port types 5 and 6 in config
/// space, or inferred from the tree when only 64 bytes of config could be read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Switch {
    /// Stable id within this topology (`sw0`, `sw1`, … in upstream-port address order).
    pub id: String,
    /// Upstream port.
    pub upstream: Bdf,
    /// Downstream ports.
    pub downstream: Vec<Bdf>,
    /// Id of the switch this one hangs under (cascaded switches), if any.
    pub parent_switch: Option<String>,
    /// How the switch was recognised: `config` (port types) or `tree` (64-byte heuristic).
    pub evidence: String,
}

/// NVLinks between two GPUs (from NVML or an XML source).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NvLink {
    /// One GPU.
    pub a: Bdf,
    /// The other GPU, or the NVSwitch fabric when `b` is `None`.
    pub b: Option<Bdf>,
    /// Number of links.
    pub count: u32,
    /// NVLink version, when known.
    pub version: Option<u32>,
}

/// Something the scan had to assume or skip, with the path it concerns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// The file or directory involved.
    pub path: String,
    /// What happened and what was assumed.
    pub message: String,
}

/// The output of `rdma_topo topology -j` (linux-rdma/rdma-core `kernel-boot/rdma_topo`) read as
/// evidence: which NIC functions, DMA functions and GPUs rdma_topo grouped into complexes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RdmaTopoEvidence {
    /// The file it was read from.
    pub path: String,
    /// Its complexes, in file order.
    pub complexes: Vec<crate::model::rdma_topo::Complex>,
}

/// A node of the topology graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphNode {
    /// The machine (root).
    Machine,
    /// A NUMA node by id.
    Numa(u32),
    /// A host bridge by index in `host_bridges`.
    HostBridge(usize),
    /// A device by index in `devices`.
    Device(usize),
}

/// The node's topology.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Topology {
    /// Always [`TOPOLOGY_SCHEMA`].
    pub schema: String,
    /// Where it came from.
    pub source: SourceInfo,
    /// Node-wide facts.
    pub machine: MachineInfo,
    /// NUMA nodes.
    pub numa_nodes: Vec<NumaNode>,
    /// Host bridges.
    pub host_bridges: Vec<HostBridge>,
    /// PCI functions, in address order.
    pub devices: Vec<Device>,
    /// PCIe switches.
    pub switches: Vec<Switch>,
    /// NVLinks.
    #[serde(default)]
    pub nvlinks: Vec<NvLink>,
    /// Whether NVLink state was visible (NVML loaded, or the source carries it).
    #[serde(default)]
    pub nvlink_visible: bool,
    /// xGMI (Infinity Fabric) links between AMD GPUs of one hive (KFD topology, RCCL XML,
    /// hwloc's RSMI plugin), one per GPU pair.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xgmi: Vec<crate::model::amd::XgmiLink>,
    /// Whether xGMI state was visible (the KFD topology was read, the RCCL XML lists AMD GPUs,
    /// the hwloc file has RSMI devices): an empty [`Topology::xgmi`] then means "none".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub xgmi_visible: bool,
    /// Warnings from the source.
    pub warnings: Vec<Warning>,
    /// The host this topology describes when the input holds several, or names its one host
    /// (`None`: one machine, unnamed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_scope: Option<HostScope>,
    /// NVIDIA rdma_topo's complexes, when its JSON was given (`--rdma-topo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_topo: Option<RdmaTopoEvidence>,
    #[serde(skip)]
    index: HashMap<Bdf, usize>,
    #[serde(skip)]
    graph: DiGraph<GraphNode, ()>,
    #[serde(skip)]
    device_nodes: Vec<NodeIndex>,
}

impl Topology {
    /// Assembles a topology from its parts and builds the index and graph.
    /// Devices are sorted by address; kinds of bridges and the switch grouping must already
    /// be set (see [`crate::sources::tree::infer_structure`]).
    pub fn new(
        source: SourceInfo,
        machine: MachineInfo,
        numa_nodes: Vec<NumaNode>,
        host_bridges: Vec<HostBridge>,
        devices: Vec<Device>,
        switches: Vec<Switch>,
        warnings: Vec<Warning>,
    ) -> Self {
        let mut t = Topology {
            schema: TOPOLOGY_SCHEMA.to_string(),
            source,
            machine,
            numa_nodes,
            host_bridges,
            devices,
            switches,
            nvlinks: Vec::new(),
            nvlink_visible: false,
            xgmi: Vec::new(),
            xgmi_visible: false,
            warnings,
            host_scope: None,
            rdma_topo: None,
            index: HashMap::new(),
            graph: DiGraph::new(),
            device_nodes: Vec::new(),
        };
        t.rebuild();
        t
    }

    /// Rebuilds the address index and the graph (after deserializing or editing).
    pub fn rebuild(&mut self) {
        self.devices.sort_by_key(|d| d.bdf);
        self.index = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| (d.bdf, i))
            .collect();
        let mut g = DiGraph::new();
        let machine = g.add_node(GraphNode::Machine);
        let mut numa_idx = HashMap::new();
        for n in &self.numa_nodes {
            let ix = g.add_node(GraphNode::Numa(n.id));
            g.add_edge(machine, ix, ());
            numa_idx.insert(n.id, ix);
        }
        let mut hb_idx = HashMap::new();
        for (i, hb) in self.host_bridges.iter().enumerate() {
            let ix = g.add_node(GraphNode::HostBridge(i));
            let up = hb
                .numa_node
                .and_then(|n| numa_idx.get(&n).copied())
                .unwrap_or(machine);
            g.add_edge(up, ix, ());
            hb_idx.insert(hb.name.clone(), ix);
        }
        let device_nodes: Vec<NodeIndex> = (0..self.devices.len())
            .map(|i| g.add_node(GraphNode::Device(i)))
            .collect();
        for (i, d) in self.devices.iter().enumerate() {
            let up = match d.parent.and_then(|p| self.index.get(&p)) {
                Some(&pi) => device_nodes[pi],
                None => hb_idx.get(&d.host_bridge).copied().unwrap_or(machine),
            };
            g.add_edge(up, device_nodes[i], ());
        }
        self.graph = g;
        self.device_nodes = device_nodes;
    }

    /// The graph: machine → NUMA → host bridge → ports → switches → endpoints.
    pub fn graph(&self) -> &DiGraph<GraphNode, ()> {
        &self.graph
    }

    /// Device by address.
    pub fn device(&self, bdf: &Bdf) -> Option<&Device> {
        self.index.get(bdf).map(|&i| &self.devices[i])
    }

    /// Index of a device in `devices`.
    pub fn device_index(&self, bdf: &Bdf) -> Option<usize> {
        self.index.get(bdf).copied()
    }

    /// Children of a device (functions whose parent is it), in address order.
    pub fn children(&self, bdf: &Bdf) -> Vec<&Device> {
        let Some(&i) = self.index.get(bdf) else {
            return Vec::new();
        };
        let mut v: Vec<&Device> = self
            .graph
            .neighbors_directed(self.device_nodes[i], petgraph::Direction::Outgoing)
            .filter_map(|n| match self.graph[n] {
                GraphNode::Device(j) => Some(&self.devices[j]),
                _ => None,
            })
            .collect();
        v.sort_by_key(|d| d.bdf);
        v
    }

    /// Devices directly under a host bridge, in address order.
    pub fn roots_of(&self, host_bridge: &str) -> Vec<&Device> {
        self.devices
            .iter()
            .filter(|d| d.parent.is_none() && d.host_bridge == host_bridge)
            .collect()
    }

    /// Switch by id.
    pub fn switch(&self, id: &str) -> Option<&Switch> {
        self.switches.iter().find(|s| s.id == id)
    }

    /// The switch a port belongs to (as upstream or downstream port).
    pub fn switch_of_port(&self, bdf: &Bdf) -> Option<&Switch> {
        self.switches
            .iter()
            .find(|s| s.upstream == *bdf || s.downstream.contains(bdf))
    }

    /// Host bridge by name.
    pub fn host_bridge(&self, name: &str) -> Option<&HostBridge> {
        self.host_bridges.iter().find(|h| h.name == name)
    }

    /// NUMA node of a device: its own `numa_node`, else its host bridge's.
    pub fn numa_of(&self, d: &Device) -> Option<u32> {
        d.numa_node
            .or_else(|| self.host_bridge(&d.host_bridge).and_then(|h| h.numa_node))
    }

    /// Devices of one kind, in address order (SR-IOV VFs excluded).
    pub fn of_kind(&self, kind: DeviceKind) -> impl Iterator<Item = &Device> {
        self.devices
            .iter()
            .filter(move |d| d.kind == kind && !d.is_vf())
    }

    /// Whether this topology has any GPU, accelerator or NIC.
    pub fn has_gdr_endpoints(&self) -> bool {
        self.devices
            .iter()
            .any(|d| d.kind.is_compute() || d.kind == DeviceKind::Nic)
    }
}
