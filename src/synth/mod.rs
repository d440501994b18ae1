//! Synthesized sysfs trees: fixtures written from a compact [`Spec`].
//!
//! A [`Spec`] describes a node (CPUs, NUMA nodes, host bridges, a tree of PCI functions with
//! their links, capabilities, drivers and class devices, and node-wide kernel facts). The
//! writer turns it into the files the kernel would show under `/sys` and `/proc`, faithful
//! enough that `lspci -A linux-sysfs`, `lstopo --if fsroot` and peerpath's own scanner read
//! them. Nothing here reads the live machine: every byte comes from the spec.
//!
//! - [`write_tree`] writes a directory; [`write_tarball`] writes the same tree as `.tar.gz`.
//! - [`layouts`] holds named specs (HGX H100, DGX A100, VMs, scaling trees) and fault variants.

pub mod config;
pub mod fabric;
mod host_files;
pub mod hostile;
pub mod layouts;
pub mod nvl72;
pub mod verify;
mod writer;

use crate::model::bdf::Bdf;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

pub use writer::{Entry, build_entries};

/// A whole node to synthesize. Serializable, so a spec can come from a TOML or JSON file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Spec {
    /// Name of the layout (used as the tarball's top folder; informational otherwise).
    pub name: String,
    /// CPU and platform facts (written to `proc/cpuinfo`, `sys/devices/system/cpu`, DMI).
    pub machine: Machine,
    /// NUMA nodes (written to `sys/devices/system/node/nodeN`).
    pub numa_nodes: Vec<NumaSpec>,
    /// Host bridges (`sys/devices/pciDDDD:BB`): each root function lies on one.
    pub host_bridges: Vec<HostBridgeSpec>,
    /// PCI functions, parents before or after children (order does not matter).
    pub functions: Vec<Function>,
    /// Node-wide kernel facts: command line, IOMMU, modules, NVIDIA driver.
    pub node: NodeFacts,
}

/// CPU and platform facts of the node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    /// `vendor_id` in `proc/cpuinfo` (`GenuineIntel`, `AuthenticAMD`).
    pub cpu_vendor: String,
    /// `model name` in `proc/cpuinfo`.
    pub cpu_model: String,
    /// `cpu family`.
    pub cpu_family: u32,
    /// `model`.
    pub cpu_model_number: u32,
    /// Number of sockets (packages).
    pub sockets: u32,
    /// Physical cores per socket.
    pub cores_per_socket: u32,
    /// Hardware threads per core (1 = no SMT, 2 = SMT/Hyper-Threading).
    pub threads_per_core: u32,
    /// Whether the `hypervisor` CPU flag is set (a virtual machine).
    pub hypervisor: bool,
    /// `sys/class/dmi/id/sys_vendor`, if any.
    pub dmi_vendor: Option<String>,
    /// `sys/class/dmi/id/product_name`, if any.
    pub dmi_product: Option<String>,
    /// Memory per NUMA node in KiB (`nodeN/meminfo`, `proc/meminfo`).
    pub memory_kib_per_node: u64,
    /// An Arm CPU (`CPU implementer`, `CPU part` in `proc/cpuinfo`, as aarch64 kernels write
    /// it) instead of the x86 fields.
    pub arm: Option<ArmCpu>,
}

/// What an aarch64 `proc/cpuinfo` says of a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmCpu {
    /// `CPU implementer` (0x41 = Arm Ltd).
    pub implementer: u8,
    /// `CPU part` (0xd4f = Neoverse V2, the Grace core).
    pub part: u16,
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            cpu_vendor: "GenuineIntel".into(),
            cpu_model: "Intel(R) Xeon(R) CPU".into(),
            cpu_family: 6,
            cpu_model_number: 143,
            sockets: 1,
            cores_per_socket: 2,
            threads_per_core: 1,
            hypervisor: false,
            dmi_vendor: None,
            dmi_product: None,
            memory_kib_per_node: 16 * 1024 * 1024,
            arm: None,
        }
    }
}

impl Machine {
    /// Total logical CPUs. Linux numbers them thread-major: CPU `t * (sockets*cores) +
    /// socket * cores + core`, so the SMT siblings of CPU 0 are `0, N, 2N…`.
    pub fn logical_cpus(&self) -> u32 {
        self.sockets * self.cores_per_socket * self.threads_per_core.max(1)
    }
    /// (socket, core within socket, thread) of a logical CPU, by the numbering above.
    pub fn cpu_position(&self, cpu: u32) -> (u32, u32, u32) {
        let per_thread = (self.sockets * self.cores_per_socket).max(1);
        let t = cpu / per_thread;
        let r = cpu % per_thread;
        (
            r / self.cores_per_socket.max(1),
            r % self.cores_per_socket.max(1),
            t,
        )
    }
}

/// A NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct NumaSpec {
    /// Node number.
    pub id: u32,
    /// CPUs as a kernel cpulist (`0-55,112-167`); empty for a memory-only node.
    pub cpus: String,
    /// Row of the distance matrix (`nodeN/distance`), one entry per node in id order.
    pub distances: Vec<u32>,
}

/// A host bridge (`pciDDDD:BB`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct HostBridgeSpec {
    /// PCI domain (segment).
    pub domain: u32,
    /// Root bus number.
    pub bus: u8,
    /// NUMA node of the devices below it; `None` writes `numa_node` = -1 (as in most VMs).
    pub numa_node: Option<u32>,
}

/// What a function is in the PCIe hierarchy; decides the header type and the port type in the
/// PCI Express capability (bits 7:4 of the Express Capabilities register).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// PCIe endpoint (port type 0, type-0 header).
    #[default]
    Endpoint,
    /// Root complex integrated endpoint (port type 9), e.g. the host bridge function 00:00.0.
    RcIntegrated,
    /// Root port (port type 4, type-1 header).
    RootPort,
    /// Switch upstream port (port type 5, type-1 header).
    SwitchUpstream,
    /// Switch downstream port (port type 6, type-1 header).
    SwitchDownstream,
    /// PCI Express to PCI bridge (port type 7, type-1 header).
    PcieToPci,
}

impl Role {
    /// Whether the function has a type-1 (bridge) header and a secondary bus.
    pub fn is_bridge(self) -> bool {
        matches!(
            self,
            Role::RootPort | Role::SwitchUpstream | Role::SwitchDownstream | Role::PcieToPci
        )
    }
    /// Port type field value (PCIe capability, flags bits 7:4).
    pub fn port_type(self) -> u8 {
        match self {
            Role::Endpoint => 0,
            Role::RcIntegrated => 9,
            Role::RootPort => 4,
            Role::SwitchUpstream => 5,
            Role::SwitchDownstream => 6,
            Role::PcieToPci => 7,
        }
    }
}

/// A PCIe link as this function's own Link Capabilities / Link Status registers report it.
/// For a root or downstream port that is the link below it; for an endpoint or upstream port
/// the link above it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Negotiated speed, GT/s (2.5, 5, 8, 16, 32, 64).
    pub speed: f64,
    /// Negotiated width, lanes.
    pub width: u32,
    /// Capable speed, GT/s.
    pub max_speed: f64,
    /// Capable width, lanes.
    pub max_width: u32,
}

impl Link {
    /// A link trained at its capability.
    pub fn full(speed: f64, width: u32) -> Self {
        Link {
            speed,
            width,
            max_speed: speed,
            max_width: width,
        }
    }
}

/// A memory or I/O BAR (`resource` file and the BAR registers of a type-0 header).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    /// BAR index 0..=5 (a 64-bit BAR uses two registers: index and index+1).
    pub index: u8,
    /// Start address.
    pub start: u64,
    /// Size in bytes (a power of two).
    pub size: u64,
    /// 64-bit memory BAR.
    pub mem64: bool,
    /// Prefetchable.
    pub prefetchable: bool,
}

/// AER counters by the names current kernels use (`RxErr`, `BadTLP`, `CmpltTO`, …); names
/// not listed read 0. The writer prints the kernel's full name list and the `TOTAL_ERR_*` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Aer {
    /// `aer_dev_correctable` counters.
    pub correctable: std::collections::BTreeMap<String, u64>,
    /// `aer_dev_nonfatal` counters.
    pub nonfatal: std::collections::BTreeMap<String, u64>,
    /// `aer_dev_fatal` counters.
    pub fatal: std::collections::BTreeMap<String, u64>,
}

/// An RDMA device (`sys/class/infiniband/<name>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Rdma {
    /// Device name (`mlx5_0`).
    pub name: String,
    /// `fw_ver`.
    pub fw_ver: String,
    /// `hca_type` (`MT4129`).
    pub hca_type: String,
    /// `board_id`.
    pub board_id: String,
    /// Ports, numbered from 1.
    pub ports: Vec<RdmaPort>,
}

/// One RDMA port (`ports/<n>/…`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RdmaPort {
    /// Port number (1-based).
    pub port: u32,
    /// Logical state number (4 = ACTIVE, 1 = DOWN); the name is added by the writer.
    pub state: u32,
    /// Physical state number (5 = LinkUp, 3 = Disabled, 2 = Polling).
    pub phys_state: u32,
    /// `rate` text, e.g. `400 Gb/sec (4X NDR)`.
    pub rate: String,
    /// `InfiniBand` or `Ethernet`.
    pub link_layer: String,
}

/// A network interface (`sys/class/net/<name>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Netdev {
    /// Interface name.
    pub name: String,
    /// `operstate` (`up`, `down`).
    pub operstate: String,
    /// `speed` in Mb/s; `None` writes no file (the kernel gives EINVAL when the link is down).
    pub speed_mbps: Option<u64>,
    /// `mtu`.
    pub mtu: u32,
}

/// An NVMe controller (`sys/class/nvme/<name>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Nvme {
    /// Controller name (`nvme0`).
    pub name: String,
    /// `model`.
    pub model: String,
    /// Namespaces (block devices) of the controller (`nvme0n1`), each with its partitions.
    pub namespaces: Vec<BlockDev>,
}

/// A block device: an NVMe namespace (`<controller>/nvme0n1`) or one of its partitions
/// (`nvme0n1/nvme0n1p1`), linked from `sys/class/block/<name>` and `sys/dev/block/<dev>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct BlockDev {
    /// Kernel name (`nvme0n1`, `nvme0n1p1`).
    pub name: String,
    /// `dev`: `major:minor` (`259:0`).
    pub dev: String,
    /// Partitions (a namespace's only).
    pub partitions: Vec<BlockDev>,
}

/// A software RAID (`md0`, `sys/devices/virtual/block/md0`) over block devices (`slaves`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MdRaid {
    /// Kernel name (`md0`).
    pub name: String,
    /// `major:minor` (`9:0`).
    pub dev: String,
    /// Names of the member block devices (`nvme2n1`).
    pub slaves: Vec<String>,
}

/// One line of `proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MountSpec {
    /// Mount point (spaces are written as `\040`).
    pub mount_point: String,
    /// File-system type.
    pub fs_type: String,
    /// Mount source (`/dev/nvme0n1p2`).
    pub source: String,
    /// `major:minor` (`0:52` for file systems without a block device).
    pub dev: String,
    /// Per-mount options.
    pub options: String,
    /// Per-superblock options.
    pub super_options: String,
}

/// GPUDirect Storage files of the node (`sources::storage` reads them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct StorageNode {
    /// `etc/cufile.json`, verbatim.
    pub cufile_json: Option<String>,
    /// `proc/sys/kernel/osrelease`.
    pub kernel_release: Option<String>,
    /// `sys/module/nvme_core/parameters/multipath` (`Y`/`N`).
    pub nvme_multipath: Option<String>,
    /// Software RAIDs.
    pub md: Vec<MdRaid>,
    /// `proc/self/mountinfo`, in order.
    pub mounts: Vec<MountSpec>,
}

/// A hot-plug slot on a root or downstream port (`sys/bus/pci/slots/<name>/address` names the
/// port's secondary bus; SLTCAP carries the physical slot number).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Slot {
    /// Slot directory name (often the physical slot number as text).
    pub name: String,
    /// Physical slot number (SLTCAP bits 31:19).
    pub number: u32,
}

/// One PCI function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Function {
    /// Address.
    pub bdf: Bdf,
    /// Parent bridge; `None` for a function on a host bridge's root bus. A VF has the same
    /// parent as its PF (the kernel puts VFs beside the PF in `sys/devices`).
    pub parent: Option<Bdf>,
    /// Role in the hierarchy.
    pub role: Role,
    /// Vendor ID.
    pub vendor: u16,
    /// Device ID.
    pub device: u16,
    /// Subsystem vendor ID.
    pub subsystem_vendor: u16,
    /// Subsystem device ID.
    pub subsystem_device: u16,
    /// Class code `0xCCSSPP`.
    pub class: u32,
    /// Revision ID.
    pub revision: u8,
    /// Whether the function has a PCI Express capability (conventional PCI devices, such as
    /// virtio on a plain PCI bus, have none and a 256-byte config space).
    pub pcie: bool,
    /// Link as the function's LNKCAP/LNKSTA report it (`None` for integrated functions).
    pub link: Option<Link>,
    /// Max Payload Size in use, bytes.
    pub mps: u32,
    /// Max Payload Size supported, bytes.
    pub mps_supported: u32,
    /// Max Read Request Size, bytes.
    pub mrrs: u32,
    /// Relaxed ordering enabled (DEVCTL bit 4).
    pub relaxed_ordering: bool,
    /// ACS extended capability with this control value (`None`: no ACS capability).
    pub acs_control: Option<u16>,
    /// AER counters; `Some` also adds the AER extended capability.
    pub aer: Option<Aer>,
    /// BARs.
    pub bars: Vec<Bar>,
    /// Bound driver name (`driver` link).
    pub driver: Option<String>,
    /// IOMMU group number (`iommu_group` link).
    pub iommu_group: Option<u32>,
    /// Type of that group (`identity`, `DMA`, …); `None`: the node's default.
    pub iommu_type: Option<String>,
    /// NUMA node override (`Some(-1)` for unknown); `None`: the host bridge's.
    pub numa_node: Option<i32>,
    /// RDMA devices on this function.
    pub rdma: Vec<Rdma>,
    /// Network interfaces on this function.
    pub netdevs: Vec<Netdev>,
    /// NVMe controllers on this function.
    pub nvme: Vec<Nvme>,
    /// Physical function, for an SR-IOV VF.
    pub physfn: Option<Bdf>,
    /// SR-IOV TotalVFs; a non-zero value adds the SR-IOV capability (NumVFs = VFs naming this
    /// function as `physfn`).
    pub total_vfs: u16,
    /// Device ID of the VFs (SR-IOV capability +0x1a).
    pub vf_device: u16,
    /// Hot-plug slot, on a root or downstream port.
    pub slot: Option<Slot>,
    /// NVIDIA GPU model name for `proc/driver/nvidia/gpus/<bdf>/information` (`None`: not
    /// listed by the NVIDIA driver).
    pub nvidia_model: Option<String>,
    /// Secondary bus of a bridge with no children (bridges with children take the lowest bus
    /// of their children).
    pub secondary_bus: Option<u8>,
    /// Vital Product Data written as `vpd` (ConnectX functions carry the board UUID in `V3`).
    pub vpd: Option<VpdSpec>,
    /// Address Translation Services extended capability (enabled), as on a NIC set up for VMs.
    pub ats: bool,
    /// NUMA node the GPU's memory is onlined as (`proc/driver/nvidia/gpus/<bdf>/numa_status`,
    /// Grace systems).
    pub gpu_memory_numa: Option<u32>,
    /// An AMD GPU as the amdgpu/KFD driver shows it (its KFD topology node, xGMI hive,
    /// partition modes); `None` for every other function.
    pub amd: Option<AmdGpuSpec>,
}

/// What the amdgpu/KFD driver shows of one AMD GPU: the writer adds a KFD topology node for it
/// (`sys/devices/virtual/kfd/kfd/topology/nodes/<N>`, after one node per NUMA node with CPUs,
/// as KFD numbers them), its io_link to its CPU node, xGMI io_links (type 11) to every other
/// GPU of its hive, a memory bank, and the partition attributes in its device directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct AmdGpuSpec {
    /// `hive_id` (0: in no hive; GPUs with the same non-zero id are joined by xGMI).
    pub hive_id: u64,
    /// `gfx_target_version` (90402 = gfx942).
    pub gfx_target_version: u32,
    /// `simd_count` (4 per CU).
    pub simd_count: u32,
    /// `num_xcc`.
    pub num_xcc: u32,
    /// `drm_render_minor` (`/dev/dri/renderD<minor>`).
    pub render_minor: u32,
    /// VRAM in bytes (the memory bank's `size_in_bytes`).
    pub vram_bytes: u64,
    /// The whole VRAM is visible through the BAR: the GPU→CPU io_link carries
    /// `CRAT_IOLINK_FLAGS_BI_DIRECTIONAL` and the bank heap type 1 (public), else 2.
    pub large_bar: bool,
    /// PCIe atomics were enabled for the GPU: without, the GPU→CPU io_link carries the
    /// `NO_ATOMICS_32/64` flags.
    pub atomics: bool,
    /// An APU (MI300A): its link to the CPU is xGMI with weight 13.
    pub apu: bool,
    /// `current_compute_partition` (`SPX`), `None`: no file.
    pub compute_partition: Option<String>,
    /// `current_memory_partition` (`NPS1`), `None`: no file.
    pub memory_partition: Option<String>,
    /// xGMI io_link weight, min and max bandwidth (MB/s) to each hive peer.
    pub xgmi: (u32, u32, u32),
    /// Hive peers with no xGMI io_link to this GPU (a link down).
    pub xgmi_down: Vec<Bdf>,
}

/// A VPD image: identifier string and read-only keywords (`parse::vpd::build`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct VpdSpec {
    /// Identifier string (product name).
    pub name: String,
    /// Read-only keywords (`PN`, `SN`, `V3`), in order.
    pub keywords: Vec<(String, String)>,
}

impl Default for Function {
    fn default() -> Self {
        Function {
            bdf: Bdf {
                domain: 0,
                bus: 0,
                device: 0,
                function: 0,
            },
            parent: None,
            role: Role::Endpoint,
            vendor: 0,
            device: 0,
            subsystem_vendor: 0,
            subsystem_device: 0,
            class: 0,
            revision: 0,
            pcie: true,
            link: None,
            mps: 256,
            mps_supported: 512,
            mrrs: 512,
            relaxed_ordering: true,
            acs_control: None,
            aer: None,
            bars: Vec::new(),
            driver: None,
            iommu_group: None,
            iommu_type: None,
            numa_node: None,
            rdma: Vec::new(),
            netdevs: Vec::new(),
            nvme: Vec::new(),
            physfn: None,
            total_vfs: 0,
            vf_device: 0,
            slot: None,
            nvidia_model: None,
            secondary_bus: None,
            vpd: None,
            ats: false,
            gpu_memory_numa: None,
            amd: None,
        }
    }
}

/// The NVIDIA kernel driver as `proc/driver/nvidia/version` and `sys/module/nvidia` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct NvidiaDriver {
    /// Version (`550.90.07`).
    pub version: String,
    /// The open kernel module (`Open Kernel Module` in the version line).
    pub open: bool,
}

/// Node-wide kernel facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct NodeFacts {
    /// `proc/cmdline`.
    pub cmdline: String,
    /// Entries of `sys/class/iommu` (`dmar0`, `ivhd0`); empty: no IOMMU registered.
    pub iommu_units: Vec<String>,
    /// Type of every IOMMU group without its own (`identity`, `DMA`, `DMA-FQ`).
    pub iommu_default_type: Option<String>,
    /// Loaded modules (`sys/module/<name>`), each with its `version` file if `Some`.
    pub modules: Vec<Module>,
    /// Peer-memory clients (`sys/kernel/mm/memory_peers/<name>/version`).
    pub memory_peers: Vec<Module>,
    /// NVIDIA driver (`proc/driver/nvidia/version`), if loaded.
    pub nvidia: Option<NvidiaDriver>,
    /// GPUDirect Storage files (cufile.json, mounts, md RAID), if any.
    pub storage: Option<StorageNode>,
}

/// A kernel module or peer-memory client with an optional version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Module {
    /// Name (`nvidia_peermem`, `nv_mem`).
    pub name: String,
    /// Content of its `version` file.
    pub version: Option<String>,
}

/// Options of the writer.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Write every `config` as the 64 bytes an unprivileged reader sees, and no `vpd` (root
    /// only).
    pub unprivileged: bool,
}

/// Why a spec cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// Two functions share an address.
    #[error("duplicate PCI function {0}")]
    Duplicate(Bdf),
    /// A parent or PF named by a function is not in the spec.
    #[error("{0}: {1} {2} is not in the spec")]
    Missing(Bdf, &'static str, Bdf),
    /// A root function's bus has no host bridge in the spec.
    #[error("{0}: no host bridge {1:04x}:{2:02x} in the spec")]
    NoHostBridge(Bdf, u32, u8),
    /// The parent chain loops.
    #[error("{0}: parent chain loops")]
    Loop(Bdf),
    /// A parent is not a bridge, or a bridge's buses are inconsistent.
    #[error("{0}: {1}")]
    Invalid(Bdf, String),
    /// A fault names a function the spec does not have.
    #[error("no PCI function {0} in this layout")]
    NoSuchFunction(Bdf),
    /// Any other inconsistency.
    #[error("{0}")]
    Other(String),
}

impl From<SpecError> for io::Error {
    fn from(e: SpecError) -> Self {
        io::Error::new(io::ErrorKind::InvalidInput, e.to_string())
    }
}

impl Spec {
    /// The function at `bdf`.
    pub fn function(&self, bdf: Bdf) -> Option<&Function> {
        self.functions.iter().find(|f| f.bdf == bdf)
    }
    /// The function at `bdf`, mutably.
    pub fn function_mut(&mut self, bdf: Bdf) -> Option<&mut Function> {
        self.functions.iter_mut().find(|f| f.bdf == bdf)
    }
    /// The functions whose parent is `bdf`.
    pub fn children(&self, bdf: Bdf) -> impl Iterator<Item = &Function> {
        self.functions.iter().filter(move |f| f.parent == Some(bdf))
    }
    /// NUMA node the kernel would report for `f`: its override, else its host bridge's, else -1.
    pub fn numa_of(&self, f: &Function) -> i32 {
        if let Some(n) = f.numa_node {
            return n;
        }
        let mut cur = f;
        let mut guard = 0;
        while let Some(p) = cur.parent {
            guard += 1;
            match self.function(p) {
                Some(pf) if guard < 256 => cur = pf,
                _ => break,
            }
        }
        self.host_bridges
            .iter()
            .find(|h| h.domain == cur.bdf.domain && h.bus == cur.bdf.bus)
            .and_then(|h| h.numa_node)
            .map_or(-1, |n| n as i32)
    }
    /// Parses a spec from TOML or JSON text (JSON if it starts with `{`).
    pub fn from_text(text: &str) -> Result<Spec, SpecError> {
        if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| SpecError::Other(format!("spec JSON: {e}")))
        } else {
            toml::from_str(text).map_err(|e| SpecError::Other(format!("spec TOML: {e}")))
        }
    }
}

/// Writes the sysfs/procfs tree of `spec` under `root` (created if needed): `sys/devices/…`
/// directories following the PCI hierarchy, `sys/bus/pci/devices` relative links, class
/// devices, NUMA/CPU files, `proc/cpuinfo`, `proc/cmdline` and the node-wide facts.
pub fn write_tree(spec: &Spec, root: &Path, opts: &WriteOptions) -> io::Result<()> {
    writer::write_dir(&writer::nodes(build_entries(spec, opts)?), root)
}

/// The same tree held in memory, ready for [`crate::sources::sysfs::scan`] without touching
/// the disk (what tests and benchmarks of the scanner use).
pub fn to_mem_root(
    spec: &Spec,
    opts: &WriteOptions,
) -> io::Result<crate::sources::fsroot::MemRoot> {
    use crate::sources::fsroot::{MemNode, MemRoot};
    let entries = build_entries(spec, opts)?;
    let name = if spec.name.is_empty() {
        "synth".to_string()
    } else {
        format!("synth:{}", spec.name)
    };
    let mut root = MemRoot::new(name);
    for (p, e) in entries {
        let node = match e {
            Entry::Dir => MemNode::Dir,
            Entry::File(b) => MemNode::File(b),
            Entry::Link(t) => MemNode::Symlink(t.into()),
        };
        root.insert(p, node);
    }
    Ok(root)
}

/// Writes the same tree as [`write_tree`] as a gzip-compressed tar file at `path`, every
/// entry under one top folder named after the spec (as `hwloc-gather-topology` does).
/// Entries are sorted and timestamps fixed, so the same spec gives the same archive content.
pub fn write_tarball(spec: &Spec, path: &Path, opts: &WriteOptions) -> io::Result<()> {
    crate::output::write_quietly(path, |w| write_tarball_to(spec, w, opts))
        .map(|_| ())
        .map_err(|e| io::Error::other(format!("{e:#}")))
}

/// Writes the tarball of [`write_tarball`] to `out` (the `fixture -o` command passes the one
/// output writer's stream).
pub fn write_tarball_to(
    spec: &Spec,
    out: &mut dyn io::Write,
    opts: &WriteOptions,
) -> io::Result<()> {
    let entries = build_entries(spec, opts)?;
    let top = if spec.name.is_empty() {
        "synth".to_string()
    } else {
        spec.name.clone()
    };
    let nodes = writer::nodes(entries);
    writer::write_tar_gz(&nodes, &top, out, flate2::Compression::default())
}
