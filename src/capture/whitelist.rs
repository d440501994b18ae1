//! The capture whitelist: the one list, in code, of what peerpath may ever copy off a
//! machine ([`DEVICE_ATTRS`] and [`LSPCI_ATTRS`] in a device directory, [`WHITELIST`] globs
//! elsewhere). A path is archived only when the scanner (or capture, for lspci) touched it
//! *and* it is on this list.

use std::path::{Component, Path};

/// Attribute files and links of a PCI device directory the scanner reads (the `virtfn*` links
/// are admitted by prefix). They are archived wherever the device directory lies: under
/// `sys/devices/**` (the kernel's layout) or directly under `sys/bus/pci/devices/*` (some
/// hand-made snapshots).
pub const DEVICE_ATTRS: &[&str] = &[
    "numa_node",
    "local_cpulist",
    "local_cpus",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "config",
    "resource",
    "aer_dev_correctable",
    "aer_dev_nonfatal",
    "aer_dev_fatal",
    "driver",
    "iommu_group",
    "physfn",
    // Copied only where the scanner read it (ConnectX NIC and Data Direct DMA functions, to
    // pair them); in the archive the serial number is masked and each board UUID replaced by the
    // board's number in the capture.
    "vpd",
    // AMD GPUs: the amdgpu partition modes (SPX/CPX, NPS1/NPS4).
    "current_compute_partition",
    "current_memory_partition",
];

/// The identity files of a PCI device directory that `lspci -A linux-sysfs` opens (the scan
/// takes the IDs from `config`; capture reads these for lspci). Whitelisted like
/// [`DEVICE_ATTRS`].
pub const LSPCI_ATTRS: [&str; 7] = [
    "vendor",
    "device",
    "subsystem_vendor",
    "subsystem_device",
    "class",
    "revision",
    "irq",
];

/// Every other path (relative to the root) peerpath may copy into a capture, as component
/// globs: `*` inside a component matches any text, `**` matches any number of components.
/// With [`DEVICE_ATTRS`] this is the whole whitelist: a path is archived only when the scanner
/// touched it *and* it is whitelisted; a directory the scanner touched is archived as an empty
/// directory (its name only).
pub const WHITELIST: &[&str] = &[
    "sys/bus/pci/devices/*",
    "sys/kernel/iommu_groups/*/type",
    // Class devices and the attributes read under them.
    "sys/class/infiniband/*",
    "sys/class/cxi/*",
    "sys/class/net/*",
    "sys/class/nvme/*",
    "sys/**/infiniband/*/ports/*/rate",
    "sys/**/infiniband/*/ports/*/state",
    "sys/**/infiniband/*/ports/*/phys_state",
    "sys/**/infiniband/*/ports/*/link_layer",
    "sys/**/infiniband/*/fw_ver",
    "sys/**/infiniband/*/hca_type",
    "sys/**/infiniband/*/board_id",
    "sys/**/infiniband/*/node_type",
    // How the fabric's own map names an adapter (`rails --fabric-map`): node GUID, the node
    // description the driver sets (`<host> mlx5_N`), GID 0 (subnet prefix + port GUID).
    "sys/**/infiniband/*/node_guid",
    "sys/**/infiniband/*/node_desc",
    "sys/**/infiniband/*/ports/*/gids/0",
    "sys/**/net/*/operstate",
    // Read only where operstate is `unknown` (libfabric's cxi provider does the same).
    "sys/**/net/*/carrier",
    // An HPE Cassini's link state: `properties/link` of its PCI function (shs-cxi-driver
    // cass_sysfs.c), read only for functions with a CXI device.
    "sys/devices/**/properties/link",
    "sys/bus/pci/devices/*/properties/link",
    "sys/**/net/*/speed",
    "sys/**/nvme/*/model",
    "sys/bus/pci/slots/*/address",
    "sys/devices/system/node/node*/cpulist",
    "sys/devices/system/node/node*/distance",
    "sys/class/iommu/*",
    // Node-wide facts.
    "proc/cpuinfo",
    "proc/cmdline",
    "sys/class/dmi/id/sys_vendor",
    "sys/class/dmi/id/product_name",
    "sys/hypervisor/type",
    "proc/driver/nvidia/version",
    "proc/driver/nvidia/gpus/*/information",
    "proc/driver/nvidia/gpus/*/numa_status",
    "sys/module/nvidia/version",
    "sys/module/nvidia_peermem/version",
    "sys/module/nv_peer_mem/version",
    "sys/module/ib_core/version",
    "sys/kernel/mm/memory_peers/*/version",
    // GPUDirect Storage (sources/storage.rs): nvidia-fs, cuFile's configuration (user paths in
    // it redacted), the P2PDMA prerequisites, the mount table and the block devices below it.
    "sys/module/nvidia_fs/version",
    "proc/driver/nvidia-fs/version",
    "etc/cufile.json",
    // NCCL's own configuration file (sources/nccl_conf.rs): the node's NCCL settings.
    "etc/nccl.conf",
    "proc/sys/kernel/osrelease",
    "boot/config-*",
    "sys/module/nvme_core/parameters/multipath",
    "proc/driver/nvidia/params",
    "proc/self/mountinfo",
    "proc/mounts",
    "sys/dev/block/*",
    "sys/class/block/*",
    "sys/**/slaves",
    "sys/**/slaves/*",
    "sys/devices/**/nvme/*/nvme*",
    "sys/devices/**/nvme/*/nvme*/nvme*",
    "sys/devices/**/block/*",
    "sys/devices/**/block/*/*",
    "sys/devices/virtual/nvme-subsystem/*/nvme*",
    "sys/devices/virtual/nvme-subsystem/*/nvme*/nvme*",
    // The KFD topology (AMD GPUs: nodes, xGMI and CPU io_links, memory banks).
    "sys/class/kfd/kfd",
    "sys/**/kfd/kfd/topology/nodes",
    "sys/**/kfd/kfd/topology/nodes/*",
    "sys/**/kfd/kfd/topology/nodes/*/properties",
    "sys/**/kfd/kfd/topology/nodes/*/io_links",
    "sys/**/kfd/kfd/topology/nodes/*/io_links/*",
    "sys/**/kfd/kfd/topology/nodes/*/io_links/*/properties",
    "sys/**/kfd/kfd/topology/nodes/*/mem_banks",
    "sys/**/kfd/kfd/topology/nodes/*/mem_banks/*",
    "sys/**/kfd/kfd/topology/nodes/*/mem_banks/*/properties",
];

/// Whether one path component matches a component glob (`*` matches any text).
fn component_matches(glob: &str, name: &str) -> bool {
    match glob.split_once('*') {
        None => glob == name,
        Some((pre, rest)) => {
            if !name.starts_with(pre) {
                return false;
            }
            let tail = &name[pre.len()..];
            if rest.is_empty() {
                return true;
            }
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| component_matches(rest, &tail[i..]))
        }
    }
}

fn glob_matches(glob: &[&str], path: &[&str]) -> bool {
    match glob.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|i| glob_matches(rest, &path[i..])),
        Some((g, rest)) => match path.split_first() {
            Some((p, prest)) => component_matches(g, p) && glob_matches(rest, prest),
            None => false,
        },
    }
}

/// Whether a root-relative path is on the whitelist ([`DEVICE_ATTRS`] in a device directory,
/// or a [`WHITELIST`] glob).
pub fn whitelisted(path: &Path) -> bool {
    let comps: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let Some((name, dir)) = comps.split_last() else {
        return false;
    };
    let device_attr =
        DEVICE_ATTRS.contains(name) || LSPCI_ATTRS.contains(name) || name.starts_with("virtfn");
    let in_device_dir = (dir.len() >= 3 && dir[..2] == ["sys", "devices"])
        || (dir.len() == 5 && dir[..4] == ["sys", "bus", "pci", "devices"]);
    if device_attr && in_device_dir && dir[2] != "system" && dir[2] != "virtual" {
        return true;
    }
    WHITELIST
        .iter()
        .any(|g| glob_matches(&g.split('/').collect::<Vec<_>>(), &comps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/vendor"
        )));
        assert!(whitelisted(Path::new("sys/bus/pci/devices/0000:01:00.0")));
        assert!(whitelisted(Path::new(
            "sys/bus/pci/devices/0000:01:00.0/class"
        )));
        assert!(!whitelisted(Path::new(
            "sys/bus/pci/devices/0000:01:00.0/rom"
        )));
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/virtfn12"
        )));
        assert!(!whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/net/eth0/address"
        )));
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/node_guid"
        )));
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/ports/1/gids/0"
        )));
        assert!(!whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/ports/1/gids/3"
        )));
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/ports/1/rate"
        )));
        assert!(!whitelisted(Path::new("sys/class/dmi/id/product_serial")));
        assert!(!whitelisted(Path::new("proc/self/environ")));
        assert!(whitelisted(Path::new(
            "sys/devices/system/node/node3/cpulist"
        )));
        assert!(!whitelisted(Path::new(
            "sys/devices/system/node/node3/meminfo"
        ))); // GDS: the mount table, cuFile's configuration, the block devices below a mount.
        assert!(whitelisted(Path::new("etc/cufile.json")));
        assert!(whitelisted(Path::new("proc/self/mountinfo")));
        assert!(whitelisted(Path::new("sys/dev/block/259:1")));
        assert!(whitelisted(Path::new(
            "sys/devices/pci0000:59/0000:59:01.0/0000:5a:00.0/nvme/nvme0/nvme0n1/nvme0n1p1"
        )));
        assert!(whitelisted(Path::new(
            "sys/devices/virtual/block/md0/slaves/nvme0n1"
        )));
        assert!(!whitelisted(Path::new("etc/shadow")));
        assert!(!whitelisted(Path::new(
            "sys/devices/pci0000:59/0000:59:01.0/0000:5a:00.0/nvme/nvme0/serial"
        )));
    }

    /// A Cassini's link state (`properties/link` of its PCI function) and a netdev's carrier
    /// are captured; other files of the driver's `properties` directory are not.
    #[test]
    fn cassini_link_and_carrier_are_captured() {
        for p in [
            "sys/devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/properties/link",
            "sys/bus/pci/devices/0000:c1:00.0/properties/link",
            "sys/devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/net/hsn0/carrier",
        ] {
            assert!(whitelisted(Path::new(p)), "{p}");
        }
        assert!(!whitelisted(Path::new(
            "sys/devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/properties/nid"
        )));
    }

    #[test]
    fn kfd_topology_and_amd_partitions_are_captured() {
        for p in [
            "sys/class/kfd/kfd",
            "sys/class/kfd/kfd/topology/nodes",
            "sys/class/kfd/kfd/topology/nodes/2/properties",
            "sys/class/kfd/kfd/topology/nodes/2/io_links/1/properties",
            "sys/devices/virtual/kfd/kfd/topology/nodes/2/mem_banks/0/properties",
            "sys/devices/pci0000:00/0000:00:01.1/0000:05:00.0/current_compute_partition",
        ] {
            assert!(whitelisted(Path::new(p)), "{p}");
        }
        assert!(!whitelisted(Path::new(
            "sys/class/kfd/kfd/topology/nodes/2/caches/0/properties"
        )));
    }
}
