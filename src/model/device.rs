//! One PCI function and what the kernel says about it.

use super::bdf::Bdf;
use crate::model::aer::AerCounters;
use crate::model::bar::Bar;
use crate::model::pci_config::ConfigSpace;
use serde::{Deserialize, Serialize};

/// What role a PCI function plays, from its class code, vendor and place in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    /// Display class (0x03xx) from a GPU vendor (NVIDIA, AMD, Intel).
    Gpu,
    /// Processing accelerator (0x12xx) or co-processor (0x0b40).
    Accelerator,
    /// Network (0x02xx) or InfiniBand serial-bus (0x0c06) controller.
    Nic,
    /// NVM Express (0x0108).
    Nvme,
    /// Upstream port of a PCIe switch.
    SwitchUpstream,
    /// Downstream port of a PCIe switch.
    SwitchDownstream,
    /// Root port of a root complex.
    RootPort,
    /// Any other bridge (PCIe-to-PCI, vendor bridges).
    Bridge,
    /// Anything else.
    Other,
}

impl DeviceKind {
    /// Whether this kind is a bridge or port (has a secondary bus).
    pub fn is_bridge(self) -> bool {
        matches!(
            self,
            DeviceKind::SwitchUpstream
                | DeviceKind::SwitchDownstream
                | DeviceKind::RootPort
                | DeviceKind::Bridge
        )
    }
    /// GPUs and other accelerators: the compute endpoints of a pair.
    pub fn is_compute(self) -> bool {
        matches!(self, DeviceKind::Gpu | DeviceKind::Accelerator)
    }
    /// The name used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Gpu => "gpu",
            DeviceKind::Accelerator => "accelerator",
            DeviceKind::Nic => "nic",
            DeviceKind::Nvme => "nvme",
            DeviceKind::SwitchUpstream => "switch-upstream",
            DeviceKind::SwitchDownstream => "switch-downstream",
            DeviceKind::RootPort => "root-port",
            DeviceKind::Bridge => "bridge",
            DeviceKind::Other => "other",
        }
    }
}

/// PCI vendors whose display-class (0x03xx) functions are GPUs: NVIDIA, AMD, Intel and Hygon
/// (DCU compute GPUs, e.g. `1d94:55b7`, class 0x0380). Display functions of other vendors
/// (ASPEED and Matrox BMC VGA) are [`DeviceKind::Other`].
pub const GPU_VENDORS: [u16; 4] = [0x10de, 0x1002, 0x8086, 0x1d94];

/// Vendors whose processing accelerators (class 0x12xx) are GPUs: AMD (Instinct MI300 series
/// report 0x1200) and Hygon (DCU).
pub const GPU_VENDORS_PROCESSING: [u16; 2] = [0x1002, 0x1d94];

/// Vendors whose processing accelerators (class 0x12xx) are compute accelerators with device
/// memory a NIC can reach: Habana/Intel Gaudi (`1da3`), Huawei Ascend (`19e5`), Baidu Kunlun
/// (`1d22`).
pub const ACCELERATOR_VENDORS: [u16; 3] = [0x1da3, 0x19e5, 0x1d22];

/// Whether a function is a compute co-processor (class 0x0b40) a NIC can write into: NEC
/// SX-Aurora Vector Engines (`1bcf:001c`) and Intel Xeon Phi (`8086:2250`–`225e`, reachable by
/// InfiniBand through MPSS CCL-Direct). Other co-processors — Intel QuickAssist (`4940`, `4942`,
/// `4944`, `37c8`) and Dynamic Load Balancer (`2710`, `2714`) on the CPU die — offload crypto,
/// compression and queueing and are no endpoint of a GPUDirect path.
pub fn is_compute_coprocessor(vendor: Option<u16>, device: Option<u16>) -> bool {
    match (vendor, device) {
        (Some(0x1bcf), Some(0x001c)) => true,
        (Some(0x8086), Some(d)) => (0x2250..=0x225e).contains(&d),
        _ => false,
    }
}

/// Kind from class code, vendor and device ID alone (bridges are refined later from the tree
/// and config). The accelerator rule (docs/sources.md, "What counts as a GPU or accelerator"):
/// display class from a [`GPU_VENDORS`] vendor, or processing accelerator from a
/// [`GPU_VENDORS_PROCESSING`] vendor, is a GPU; a processing accelerator from an
/// [`ACCELERATOR_VENDORS`] vendor, or a co-processor that [`is_compute_coprocessor`], is an
/// accelerator; every other 0x12xx / 0x0b40 function (QAT, DLB, NPUs of client CPUs, FPGAs) is
/// [`DeviceKind::Other`].
pub fn kind_from_class(class: u32, vendor: Option<u16>, device: Option<u16>) -> DeviceKind {
    let base = class >> 16;
    let sub = (class >> 8) & 0xff;
    let from = |list: &[u16]| vendor.is_some_and(|v| list.contains(&v));
    match (base, sub) {
        (0x03, _) if from(&GPU_VENDORS) => DeviceKind::Gpu,
        (0x12, _) if from(&GPU_VENDORS_PROCESSING) => DeviceKind::Gpu,
        (0x12, _) if from(&ACCELERATOR_VENDORS) => DeviceKind::Accelerator,
        (0x0b, 0x40) if is_compute_coprocessor(vendor, device) => DeviceKind::Accelerator,
        (0x02, _) | (0x0c, 0x06) => DeviceKind::Nic,
        (0x01, 0x08) => DeviceKind::Nvme,
        (0x06, 0x04) | (0x06, 0x09) => DeviceKind::Bridge,
        _ => DeviceKind::Other,
    }
}

/// The PCIe link of a device to the port above it, as the device's own sysfs attributes
/// (`current_link_speed`, `current_link_width`, `max_link_speed`, `max_link_width`) or, failing
/// those, its config space (LNKSTA/LNKCAP) report it. For a root or downstream port the
/// attributes describe the link below it. A link that is down reads `current_width: 0` (known,
/// not unknown); a function with no link of its own (a root-complex integrated endpoint, an
/// SR-IOV virtual function) has no `LinkInfo` at all. Whether a link is degraded is judged
/// from both of its ends by [`crate::analysis::paths::link`], never from one `LinkInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LinkInfo {
    /// Negotiated speed, GT/s.
    pub current_gts: Option<f64>,
    /// Negotiated width, lanes.
    pub current_width: Option<u32>,
    /// Capable speed, GT/s.
    pub max_gts: Option<f64>,
    /// Capable width, lanes.
    pub max_width: Option<u32>,
}

impl LinkInfo {
    /// True when any field is known.
    pub fn any(&self) -> bool {
        self.current_gts.is_some()
            || self.current_width.is_some()
            || self.max_gts.is_some()
            || self.max_width.is_some()
    }
}

/// Kind of an OS device attached to a PCI function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OsDeviceKind {
    /// RDMA device (`/sys/class/infiniband/<name>`).
    Rdma,
    /// Network interface (`/sys/class/net/<name>`).
    Net,
    /// NVMe controller (`/sys/class/nvme/<name>`).
    Nvme,
    /// Block device.
    Block,
    /// GPU as the NVIDIA driver lists it (`/proc/driver/nvidia/gpus/<bdf>`).
    NvidiaGpu,
    /// AMD GPU as ROCm lists it: an RCCL XML `gpu` element (`hip<dev>`), an hwloc RSMI OS
    /// device (`rsmi<N>`).
    AmdGpu,
}

/// One RDMA port (`/sys/class/infiniband/<dev>/ports/<n>/…`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RdmaPort {
    /// Port number.
    pub port: u32,
    /// `state`, e.g. `(4, "ACTIVE")`.
    pub state: Option<(u32, String)>,
    /// `phys_state`, e.g. `(5, "LinkUp")`.
    pub phys_state: Option<(u32, String)>,
    /// `rate` in Gb/s.
    pub rate_gbps: Option<f64>,
    /// Raw `rate` text, e.g. `400 Gb/sec (4X NDR)`.
    pub rate_text: Option<String>,
    /// `link_layer`: `InfiniBand` or `Ethernet`.
    pub link_layer: Option<String>,
}

/// An OS-visible device attached to a PCI function: RDMA device, netdev, NVMe controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OsDevice {
    /// What it is.
    pub kind: OsDeviceKind,
    /// Its name (`mlx5_0`, `ib0`, `nvme0`).
    pub name: String,
    /// RDMA ports (RDMA devices only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<RdmaPort>,
    /// Netdev operational state (`operstate`), netdevs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operstate: Option<String>,
    /// Netdev speed in Mb/s (`speed`), netdevs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    /// The fastest link mode the netdev supports, in Mb/s: the port's SKU speed (`ethtool
    /// <if>` "Supported link modes", read with `ETHTOOL_GLINKSETTINGS` on the live machine
    /// only; `None` in snapshots and XML, or when the driver reports no speed modes, as IPoIB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_modes_max_mbps: Option<u64>,
    /// Netdev carrier (`carrier`: `1` up, `0` down), netdevs only; read where `operstate` is
    /// `unknown`, as libfabric's cxi provider does (`prov/cxi/src/cxip_if.c`, `netdev_link`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier: Option<bool>,
    /// An HPE Cassini's CXI device (`/sys/class/cxi/cxi<N>`) only: the driver's link state,
    /// `properties/link` of its PCI function (`1` when the PHY is RUNNING, else `0`:
    /// shs-cxi-driver `cass_sysfs.c`, `link_show`). `None` where the input does not carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cxi_link: Option<bool>,
    /// Free-form facts (`fw_ver`, `model`, the NVIDIA `information` lines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attrs: Vec<(String, String)>,
    /// RDMA devices: the order the kernel registered them in, which is the order
    /// `nvidia-smi topo -m` and libibverbs (so NCCL) list them. Live: the kernel's device
    /// index (`RDMA_NLDEV_ATTR_DEV_INDEX` over netlink, what `rdma dev` prints before the name;
    /// allocated cyclically, so a later registration has a larger index); snapshots carry it
    /// in `peerpath-rdma.json`; NCCL XML: the `<net dev>` number (NCCL's device number, in
    /// libibverbs order). `None` where the source does not carry it (sysfs files alone, hwloc
    /// XML): docs/matrix.md gives the fallback order then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
}

impl OsDevice {
    /// A bare OS device.
    pub fn new(kind: OsDeviceKind, name: impl Into<String>) -> Self {
        OsDevice {
            kind,
            name: name.into(),
            ports: Vec::new(),
            operstate: None,
            speed_mbps: None,
            link_modes_max_mbps: None,
            carrier: None,
            cxi_link: None,
            attrs: Vec::new(),
            index: None,
        }
    }
}

/// Where a device's name came from when the PCI ID database has none for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NameSource {
    /// The NVIDIA driver's own record: the `Model:` line of
    /// `/proc/driver/nvidia/gpus/<bdf>/information` (kept as the `Model` attribute of the
    /// GPU's `nvidia_gpu` OS device, which a capture also stores in `peerpath-nvml.json`).
    #[serde(rename = "nvidia-driver")]
    NvidiaDriver,
}

impl NameSource {
    /// How text output says where the name came from.
    pub fn describe(self) -> &'static str {
        match self {
            NameSource::NvidiaDriver => "name from the NVIDIA driver; pci.ids has none",
        }
    }
}

/// One PCI function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Its address (the `sys/bus/pci/devices` entry name).
    pub bdf: Bdf,
    /// The bridge or port directly above (from the canonical sysfs path); `None` directly
    /// under a host bridge.
    pub parent: Option<Bdf>,
    /// Host bridge (root complex) it hangs under, `pciDDDD:BB`.
    pub host_bridge: String,
    /// Role.
    pub kind: DeviceKind,
    /// Class code `0xCCSSPP` (`class`).
    #[serde(with = "super::serde_fmt::class")]
    pub class: u32,
    /// `vendor`.
    #[serde(with = "super::serde_fmt::opt_id16")]
    pub vendor_id: Option<u16>,
    /// `device`.
    #[serde(with = "super::serde_fmt::opt_id16")]
    pub device_id: Option<u16>,
    /// `subsystem_vendor`.
    #[serde(with = "super::serde_fmt::opt_id16")]
    pub subsystem_vendor_id: Option<u16>,
    /// `subsystem_device`.
    #[serde(with = "super::serde_fmt::opt_id16")]
    pub subsystem_device_id: Option<u16>,
    /// `revision`.
    #[serde(with = "super::serde_fmt::opt_id8")]
    pub revision: Option<u8>,
    /// Vendor name from the PCI ID database.
    pub vendor_name: Option<String>,
    /// Device name from the PCI ID database, else from the device's driver (then
    /// [`Device::name_source`] says so).
    pub device_name: Option<String>,
    /// Where `device_name` came from when it is not the PCI ID database (nor the input's own
    /// name, hwloc's `PCIDevice`): set by `sources::naming` for a device the database has no
    /// entry for. Absent (`None`) otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_source: Option<NameSource>,
    /// `numa_node` (`None` when -1 or absent).
    pub numa_node: Option<u32>,
    /// `local_cpulist` (else `local_cpus`), sorted CPU numbers; a cpulist string in JSON.
    #[serde(with = "super::serde_fmt::opt_cpus")]
    pub local_cpus: Option<Vec<u32>>,
    /// This device's link attributes.
    pub link: Option<LinkInfo>,
    /// RDMA devices, netdevs, NVMe controllers attached to it.
    pub os_devices: Vec<OsDevice>,
    /// Id of the switch whose downstream port this device hangs under (`None` if none).
    pub switch: Option<String>,
    /// Kernel driver (name of the `driver` link target).
    pub driver: Option<String>,
    /// IOMMU group number (`iommu_group` link).
    pub iommu_group: Option<u32>,
    /// IOMMU group default-domain type (`/sys/kernel/iommu_groups/<n>/type`).
    pub iommu_group_type: Option<String>,
    /// Decoded config space (`config`); `None` when absent or unreadable.
    pub config: Option<ConfigSpace>,
    /// Why the input could not show more of this device's config space than [`Self::config`]
    /// holds, where the input says (an `lspci` text run without root, printed with `-v` only,
    /// elided by its poster, or a 256-byte hex dump; set by `sources::lspci`). `None`: the
    /// reason is the sysfs one (a `config` file shorter than 4096 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_note: Option<String>,
    /// Physical function, when this is an SR-IOV virtual function (`physfn`).
    pub physfn: Option<Bdf>,
    /// Number of virtual functions: the scanned functions whose `physfn` link names this one
    /// (the kernel also links them from here as `virtfn*`).
    pub vf_count: u32,
    /// Assigned BARs (`resource`).
    pub bars: Vec<Bar>,
    /// `aer_dev_correctable`.
    pub aer_correctable: Option<AerCounters>,
    /// `aer_dev_nonfatal`.
    pub aer_nonfatal: Option<AerCounters>,
    /// `aer_dev_fatal`.
    pub aer_fatal: Option<AerCounters>,
    /// AER status bits operator text shows set, masked or not (`lspci -vvv`'s UESta/CESta with
    /// UEMsk/CEMsk); empty elsewhere and when none is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aer_status_bits: Vec<crate::model::aer::AerBit>,
    /// Physical slot name (`sys/bus/pci/slots/<name>/address`).
    pub slot: Option<String>,
    /// Path of the device directory relative to the root (`sys/devices/pci0000:17/…`).
    pub sysfs_path: String,
    /// False when the device was found in `sys/devices` but has no `sys/bus/pci/devices` entry.
    pub listed: bool,
    /// The read-only VPD keywords carrying the board's UUID (`V3`, `VU`) found in `vpd`
    /// (readable by root only) of a ConnectX function. Only their names are kept: the values
    /// pair functions during the scan and are not stored (nor is the serial number).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vpd: Vec<String>,
    /// For a NIC function: the Data Direct DMA function its RDMA traffic really uses (a
    /// ConnectX-8 `15b3:2100` function, found by VPD UUID, rdma_topo JSON or an NCCL XML `_dma`
    /// NIC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_direct: Option<DataDirect>,
    /// For a GPU: its NVLink-C2C link to its CPU (NVML field values, NCCL XML `<c2c>`, or
    /// inferred on a Grace host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c2c: Option<C2cLink>,
    /// For an AMD GPU: what the amdgpu/KFD driver says about it (KFD topology node, hive,
    /// partition modes, its link to the CPU; [`crate::model::amd::AmdGpu`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amd: Option<crate::model::amd::AmdGpu>,
    /// For an NVIDIA GPU: its NVLink fabric registration ([`crate::model::nvfabric`]) as NVML
    /// (`nvmlDeviceGetGpuFabricInfo`, live or stored in a capture) or an `nvidia-smi -q` text or
    /// XML beside the input reported it, or why it could not be read; `None` where the input
    /// carries no such information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_fabric: Option<crate::model::fact::Fact<crate::model::nvfabric::GpuFabric>>,
}

/// A NIC function's Data Direct DMA function (ConnectX-8 "Data Direct": the NIC reaches GPU
/// memory through a separate DMA function that sits in the PCIe switch next to the GPU, while
/// its RDMA function hangs elsewhere, e.g. under a Grace root port).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataDirect {
    /// The DMA function.
    pub dma: Bdf,
    /// How the pairing was made, with the raw value (`vpd V3 = <uuid>`, `rdma_topo JSON
    /// rdma_dma_bdf`, `nccl-xml net rdma_vf_rail1_dma`).
    pub evidence: String,
}

/// A GPU's NVLink-C2C link to its CPU (Grace), as a source reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct C2cLink {
    /// Links reported up (NCCL's `<c2c count>`, which counts the links NVML reports with
    /// status 1; NVML `NVML_FI_DEV_C2C_LINK_GET_STATUS`); `None` when not read.
    pub links_up: Option<u32>,
    /// Links the GPU has (`NVML_FI_DEV_C2C_LINK_COUNT`); `None` from NCCL XML, which writes
    /// only the up ones.
    pub links_total: Option<u32>,
    /// Bandwidth per link in MB/s (`NVML_FI_DEV_C2C_LINK_GET_MAX_BW`, NCCL's `<c2c bw>`).
    pub link_mbytes_per_s: Option<u32>,
    /// Where the facts come from and the raw values (`nccl-xml <c2c bw="44712" count="5">`).
    pub source: String,
}

impl C2cLink {
    /// NCCL's bandwidth of the link in GB/s (`bw × count / 1000`, `ncclTopoAddC2c`), when both
    /// are known.
    pub fn gbytes_per_s(&self) -> Option<f64> {
        Some(f64::from(self.link_mbytes_per_s?) * f64::from(self.links_up?) / 1000.0)
    }
}

impl Device {
    /// Whether this function is an HPE Cassini (Slingshot) NIC: PCI vendor `17db` (Cray), the
    /// only functions of that vendor in a host (its `vendor` file, hwloc's `pci_type`, NCCL
    /// XML's `vendor`).
    pub fn is_cassini(&self) -> bool {
        self.vendor_id == Some(0x17db)
    }

    /// A device with only its address, path and kind set (sources fill in the rest).
    pub fn new(bdf: Bdf, host_bridge: String, sysfs_path: String) -> Self {
        Device {
            bdf,
            parent: None,
            host_bridge,
            kind: DeviceKind::Other,
            class: 0,
            vendor_id: None,
            device_id: None,
            subsystem_vendor_id: None,
            subsystem_device_id: None,
            revision: None,
            vendor_name: None,
            device_name: None,
            name_source: None,
            numa_node: None,
            local_cpus: None,
            link: None,
            os_devices: Vec::new(),
            switch: None,
            driver: None,
            iommu_group: None,
            iommu_group_type: None,
            config: None,
            config_note: None,
            physfn: None,
            vf_count: 0,
            bars: Vec::new(),
            aer_correctable: None,
            aer_nonfatal: None,
            aer_fatal: None,
            aer_status_bits: Vec::new(),
            slot: None,
            sysfs_path,
            listed: true,
            vpd: Vec::new(),
            data_direct: None,
            c2c: None,
            amd: None,
            nvlink_fabric: None,
        }
    }

    /// RDMA device names (`mlx5_0`).
    pub fn rdma_names(&self) -> impl Iterator<Item = &str> {
        self.os_devices
            .iter()
            .filter(|o| o.kind == OsDeviceKind::Rdma)
            .map(|o| o.name.as_str())
    }
    /// Netdev names (`ib0`, `enp1s0f0`).
    pub fn net_names(&self) -> impl Iterator<Item = &str> {
        self.os_devices
            .iter()
            .filter(|o| o.kind == OsDeviceKind::Net)
            .map(|o| o.name.as_str())
    }
    /// The name to show: PCI ID database name (vendor and device), else the driver's own name
    /// (which is whole, `NVIDIA H200`), else a name the source carried for a device without a
    /// vendor ID, else `[vvvv:dddd]`.
    pub fn display_name(&self) -> String {
        match (&self.vendor_name, &self.device_name) {
            (_, Some(d)) if self.name_source.is_some() => d.clone(),
            (Some(v), Some(d)) => format!("{v} {d}"),
            // A name the source carried with no vendor ID to name (lspci text).
            (None, Some(d)) if self.vendor_id.is_none() => d.clone(),
            _ => format!(
                "[{:04x}:{:04x}]",
                self.vendor_id.unwrap_or(0),
                self.device_id.unwrap_or(0)
            ),
        }
    }
    /// Whether this function is an SR-IOV virtual function.
    pub fn is_vf(&self) -> bool {
        self.physfn.is_some()
    }
    /// PCIe port type from config space, when it could be read.
    pub fn port_type(&self) -> Option<crate::model::pci_config::PortType> {
        self.config.as_ref()?.pcie.as_ref().map(|p| p.port_type)
    }
    /// The NUMA node of a GPU's memory as the NVIDIA driver's `numa_status` gives it (its
    /// `Node:` line, kept as the `memory_numa_node` attribute of the `nvidia_gpu` OS device),
    /// unchecked: C2C inference takes only values below 255 as a node.
    pub fn gpu_memory_numa_node(&self) -> Option<u32> {
        self.os_devices
            .iter()
            .filter(|o| o.kind == OsDeviceKind::NvidiaGpu)
            .flat_map(|o| o.attrs.iter())
            .find(|(k, _)| k == "memory_numa_node")
            .and_then(|(_, v)| v.trim().parse::<u32>().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let k = |c, v, d| kind_from_class(c, Some(v), Some(d));
        assert_eq!(k(0x030200, 0x10de, 0x2330), DeviceKind::Gpu);
        assert_eq!(
            k(0x030000, 0x1a03, 0x2000),
            DeviceKind::Other,
            "ASPEED BMC VGA"
        );
        assert_eq!(k(0x020700, 0x15b3, 0x1021), DeviceKind::Nic);
        assert_eq!(k(0x0c0600, 0x1077, 0x7322), DeviceKind::Nic);
        assert_eq!(
            k(0x0b4000, 0x1bcf, 0x001c),
            DeviceKind::Accelerator,
            "NEC VE"
        );
        assert_eq!(
            k(0x0b4000, 0x8086, 0x225c),
            DeviceKind::Accelerator,
            "Xeon Phi"
        );
        assert_eq!(
            k(0x120000, 0x1da3, 0x1020),
            DeviceKind::Accelerator,
            "Gaudi2"
        );
        assert_eq!(k(0x010802, 0x8086, 0x0a54), DeviceKind::Nvme);
        assert_eq!(k(0x060400, 0x10b5, 0x8796), DeviceKind::Bridge);
        // AMD Instinct: MI250 (display class) and MI300X (processing accelerator).
        assert_eq!(k(0x038000, 0x1002, 0x740c), DeviceKind::Gpu);
        assert_eq!(k(0x120000, 0x1002, 0x74a1), DeviceKind::Gpu);
        // Hygon DCU (ROCm/rccl#1185).
        assert_eq!(k(0x038000, 0x1d94, 0x55b7), DeviceKind::Gpu);
        // On-die offload engines of Sapphire Rapids: QAT and DLB are no accelerators.
        assert_eq!(k(0x0b4000, 0x8086, 0x4940), DeviceKind::Other, "QAT");
        assert_eq!(k(0x0b4000, 0x8086, 0x2710), DeviceKind::Other, "DLB");
        assert_eq!(k(0x0b4000, 0x8086, 0x37c8), DeviceKind::Other, "C62x QAT");
        // Client NPU (Meteor Lake) and an unknown vendor's processing accelerator.
        assert_eq!(k(0x120000, 0x8086, 0x7d1d), DeviceKind::Other);
        assert_eq!(k(0x120000, 0x17cb, 0xa100), DeviceKind::Other);
        assert_eq!(
            kind_from_class(0x0b4000, Some(0x8086), None),
            DeviceKind::Other,
            "device unknown: not claimed"
        );
    }
}
