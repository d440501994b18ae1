//! GPUDirect Storage (GDS) facts of a node: the kernel path cuFile can take (nvidia-fs, or the
//! upstream PCI P2PDMA path), `/etc/cufile.json` as cuFile reads it, and the mounted file
//! systems tied to the NVMe drives below them. Read by `sources::storage`; judged by
//! `analysis::audit::gds`; the facts come from the files named on each field.

use super::{Bdf, Fact};
use serde::{Deserialize, Serialize};

/// Default of `properties.max_direct_io_size_kb` (NVIDIA, GDS configuration guide, "GPUDirect
/// Storage Parameters").
pub const DEFAULT_MAX_DIRECT_IO_SIZE_KB: u64 = 16384;

/// The node's GDS facts. Every field is `None`/empty when the input cannot carry it (an XML
/// input; [`StorageFacts::read`] says whether a sysfs root or snapshot was read at all).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct StorageFacts {
    /// The facts below were looked for (a sysfs root or snapshot was read).
    pub read: bool,
    /// The nvidia-fs kernel module: the file that showed it and its raw value
    /// (`/sys/module/nvidia_fs/version`, else `/proc/driver/nvidia-fs/version`, else the
    /// module directory with `loaded (no version file)`); `None` when not loaded.
    pub nvidia_fs: Option<(String, String)>,
    /// `/etc/cufile.json` (`None`: absent, or not in the input: see [`StorageFacts::etc_visible`]).
    pub cufile: Option<CufileFile>,
    /// The input holds `/etc` at all (a snapshot taken before peerpath read cufile.json, or by
    /// hwloc-gather-topology, does not: cufile.json's absence is then unknown).
    pub etc_visible: bool,
    /// `/proc/sys/kernel/osrelease` (`6.8.0-49-generic`).
    pub kernel_release: Option<String>,
    /// `CONFIG_PCI_P2PDMA` in `/boot/config-<release>`: the file and whether it is `=y`
    /// (`None`: no such file read).
    pub kernel_p2pdma: Option<(String, bool)>,
    /// `/sys/module/nvme_core/parameters/multipath` (`Y`/`N`): P2PDMA needs `N`.
    pub nvme_multipath: Option<String>,
    /// The `RegistryDwords` line of `/proc/driver/nvidia/params` (P2PDMA needs
    /// `RMForceStaticBar1=1`).
    pub nvidia_registry_dwords: Option<String>,
    /// Mounted file systems: `/proc/self/mountinfo`, else `/proc/mounts`; unknown with the
    /// reason when neither could be read.
    pub mounts: Fact<MountTable>,
}

impl StorageFacts {
    /// Whether nothing was looked for (an XML input): such facts are left out of the JSON.
    pub fn unread(&self) -> bool {
        !self.read
    }
}

/// `/etc/cufile.json`: where it was read and what it says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CufileFile {
    /// The path as on the machine (`/etc/cufile.json`).
    pub path: String,
    /// The settings, when the file parsed as JSON with comments.
    pub config: Option<CufileConfig>,
    /// Why it did not parse (line and column), when it did not: cuFile then runs on its
    /// defaults or refuses to start.
    pub error: Option<String>,
    /// The file is there but could not be read (a FIFO or device in its place, permission
    /// denied, larger than peerpath reads): `error` says why, and its settings are unknown.
    pub unreadable: bool,
}

/// The settings of `cufile.json` peerpath judges, as written (`None`: key absent, cuFile's
/// default applies). Key names follow NVIDIA's GDS configuration guide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CufileConfig {
    /// `properties.allow_compat_mode` (default `true`): fall back to POSIX reads through a host
    /// bounce buffer when the direct path is not possible.
    pub allow_compat_mode: Option<bool>,
    /// `properties.force_compat_mode` (default `false`): every IO through compat mode.
    pub force_compat_mode: Option<bool>,
    /// `properties.use_pci_p2pdma` (default `false`): the upstream PCI P2PDMA path instead of
    /// nvidia-fs (GDS 1.13, CUDA 12.8 and later).
    pub use_pci_p2pdma: Option<bool>,
    /// `properties.max_direct_io_size_kb` (default 16384).
    pub max_direct_io_size_kb: Option<u64>,
    /// `properties.rdma_dev_addr_list`: client-side addresses of the RDMA NICs cuFile may use
    /// for distributed file systems.
    pub rdma_dev_addr_list: Option<Vec<String>>,
    /// `fs.<name>.rdma_dev_addr_list` and `fs.<name>.mount_table.<mount>.rdma_dev_addr_list`:
    /// `(fs or fs:mount, addresses)`.
    pub fs_rdma_dev_addr_lists: Vec<(String, Vec<String>)>,
    /// `fs.<name>.posix_gds_min_kb` above 0: IO of that size or below goes through POSIX.
    pub posix_gds_min_kb: Vec<(String, u64)>,
    /// `denylist.drivers`, `.devices`, `.mounts`, `.filesystems`: `(list, entries)` of the
    /// non-empty ones.
    pub denylist: Vec<(String, Vec<String>)>,
    /// Keys present with a value of the wrong type (`properties.allow_compat_mode: "yes"`):
    /// `(key, raw value)`; cuFile's own reading of them is not known.
    pub wrong_type: Vec<(String, String)>,
    /// Values of the wrong type past the first [`crate::parse::MAX_LINE_REFUSALS`], counted
    /// only (a list of 900,000 numbers is one count, not 900,000 copies of its key).
    pub wrong_type_more: usize,
}

impl CufileConfig {
    /// `allow_compat_mode` as cuFile applies it (absent: `true`).
    pub fn compat_allowed(&self) -> bool {
        self.allow_compat_mode.unwrap_or(true)
    }
    /// `force_compat_mode` as cuFile applies it (absent: `false`).
    pub fn compat_forced(&self) -> bool {
        self.force_compat_mode.unwrap_or(false)
    }
    /// `use_pci_p2pdma` as cuFile applies it (absent: `false`).
    pub fn p2pdma(&self) -> bool {
        self.use_pci_p2pdma.unwrap_or(false)
    }
    /// Every RDMA address listed anywhere (properties and per file system).
    pub fn rdma_addrs(&self) -> impl Iterator<Item = &str> {
        self.rdma_dev_addr_list
            .iter()
            .flatten()
            .chain(self.fs_rdma_dev_addr_lists.iter().flat_map(|(_, v)| v))
            .map(String::as_str)
    }
}

/// The mount table and the file it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MountTable {
    /// `/proc/self/mountinfo` or `/proc/mounts`.
    pub path: String,
    /// The mounts, in the file's order.
    pub mounts: Vec<Mount>,
}

/// One mounted file system (a line of `/proc/self/mountinfo` or `/proc/mounts`, octal escapes
/// decoded), with the NVMe drives below it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Mount {
    /// Mount point (`/data`).
    pub mount_point: String,
    /// File-system type (`ext4`, `xfs`, `nfs4`, `lustre`, `wekafs`).
    pub fs_type: String,
    /// Mount source (`/dev/nvme0n1p1`, `10.0.0.1:/export`).
    pub source: String,
    /// Per-mount options (`rw,relatime`).
    pub options: String,
    /// Per-superblock options (`rw,data=ordered`; mountinfo only, else the same as `options`).
    pub super_options: String,
    /// `major:minor` of the device (mountinfo only).
    pub dev: Option<String>,
    /// The block devices from the mount down to the NVMe namespaces (`md0`, `nvme0n1`,
    /// `nvme1n1`), when the device resolves under `/sys/dev/block`.
    pub block: Vec<String>,
    /// PCI functions of the NVMe controllers holding it (through partitions, md RAID and
    /// device-mapper `slaves`, and NVMe multipath subsystems).
    pub drives: Vec<Bdf>,
}

impl Mount {
    /// An option of the mount (per-mount or per-superblock): `Some("")` for a flag, the value
    /// for `key=value`.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .split(',')
            .chain(self.super_options.split(','))
            .find_map(|o| match o.split_once('=') {
                Some((k, v)) if k == key => Some(v),
                None if o == key => Some(""),
                _ => None,
            })
    }
}
