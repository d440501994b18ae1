//! HGX H100 with GPUDirect Storage: a data NVMe drive on a third downstream port of every
//! GPU–NIC switch (as DGX H100 places its U.2 data drives behind the GPU switches), each
//! socket's four in an md RAID0 (`/raid0`, `/raid1`), the two boot drives in an md RAID1 at
//! `/`, nvidia-fs loaded and NVIDIA's default `/etc/cufile.json`.

use super::*;
use crate::synth::{BlockDev, MdRaid, MountSpec, StorageNode};

/// NVIDIA's default `/etc/cufile.json` (fixtures/gds/README.md names the source).
pub const CUFILE_DEFAULT_JSON: &str = include_str!("../../../fixtures/gds/cufile.default.json");

/// Address of the data drive under GPU i's switch in [`hgx_h100_gds`].
pub fn gds_drive(i: usize) -> Bdf {
    b(0, HGX_PAIR_BUSES[i] + 5, 0, 0)
}

/// The switch downstream port above [`gds_drive`] i.
pub fn gds_drive_port(i: usize) -> Bdf {
    b(0, HGX_PAIR_BUSES[i] + 2, 2, 0)
}

/// [`hgx_h100`] with eight data drives, one per GPU switch, named `nvmeN` in address order with
/// the two boot drives (the kernel's probe order); each socket's data namespaces in an md
/// RAID0 (`md0` xfs at `/raid0`, `md1` ext4 `data=ordered` at `/raid1`); the boot drives'
/// second partitions in an md RAID1 (`md2`, ext4 at `/`), the first boot drive's first
/// partition at `/boot/efi`; nvidia-fs 2.22.3 loaded, kernel 6.8.0-49-generic, NVIDIA's
/// default `cufile.json`.
pub fn hgx_h100_gds() -> Spec {
    let mut s = hgx_h100();
    s.name = "hgx-h100-gds".into();
    for (i, &bus) in HGX_PAIR_BUSES.iter().enumerate() {
        let usp = b(0, bus + 1, 0, 0);
        s.functions.push(port(
            gds_drive_port(i),
            Some(usp),
            Role::SwitchDownstream,
            0x1000,
            0xc030,
            Link::full(16.0, 4),
        ));
        s.functions
            .push(nvme(gds_drive(i), Some(gds_drive_port(i)), ""));
    }
    number_iommu_groups(&mut s);
    // Controllers and namespaces named in address (probe) order.
    let mut minor = 0;
    let mut data = [Vec::new(), Vec::new()];
    let mut boot = Vec::new();
    for (k, f) in s
        .functions
        .iter_mut()
        .filter(|f| !f.nvme.is_empty())
        .enumerate()
    {
        let ctrl = &mut f.nvme[0];
        ctrl.name = format!("nvme{k}");
        let ns = format!("nvme{k}n1");
        let mut dev = BlockDev {
            name: ns.clone(),
            dev: format!("259:{minor}"),
            partitions: Vec::new(),
        };
        minor += 1;
        if f.bdf.bus == 0x5a || f.bdf.bus == 0x5b {
            for p in 1..=2 {
                dev.partitions.push(BlockDev {
                    name: format!("{ns}p{p}"),
                    dev: format!("259:{minor}"),
                    partitions: Vec::new(),
                });
                minor += 1;
            }
            boot.push(ns.clone());
        } else {
            data[usize::from(f.bdf.bus >= 0x80)].push(ns.clone());
        }
        ctrl.namespaces.push(dev);
    }
    let mount = |mp: &str, fs: &str, src: &str, dev: &str, sopt: &str| MountSpec {
        mount_point: mp.into(),
        fs_type: fs.into(),
        source: src.into(),
        dev: dev.into(),
        options: "rw,relatime".into(),
        super_options: sopt.into(),
    };
    let dev_of = |name: &str| {
        s.functions
            .iter()
            .flat_map(|f| &f.nvme)
            .flat_map(|c| &c.namespaces)
            .flat_map(|n| std::iter::once(n).chain(&n.partitions))
            .find(|d| d.name == name)
            .map(|d| d.dev.clone())
            .unwrap_or_default()
    };
    let efi = format!("{}p1", boot[0]);
    let mounts = vec![
        mount("/", "ext4", "/dev/md2", "9:2", "rw,errors=remount-ro"),
        mount("/proc", "proc", "proc", "0:22", "rw"),
        mount("/sys", "sysfs", "sysfs", "0:21", "rw"),
        mount(
            "/boot/efi",
            "vfat",
            &format!("/dev/{efi}"),
            &dev_of(&efi),
            "rw,fmask=0077",
        ),
        mount(
            "/raid0",
            "xfs",
            "/dev/md0",
            "9:0",
            "rw,attr2,inode64,sunit=1024,swidth=4096",
        ),
        mount(
            "/raid1",
            "ext4",
            "/dev/md1",
            "9:1",
            "rw,stripe=256,data=ordered",
        ),
        mount(
            "/run/user/1000",
            "tmpfs",
            "tmpfs",
            "0:45",
            "rw,size=52428800k,mode=700",
        ),
    ];
    let [data0, data1] = data;
    let md = |k: usize, slaves: Vec<String>| MdRaid {
        name: format!("md{k}"),
        dev: format!("9:{k}"),
        slaves,
    };
    let raid = vec![
        md(0, data0),
        md(1, data1),
        md(2, boot.iter().map(|b| format!("{b}p2")).collect()),
    ];
    s.node.modules.push(Module {
        name: "nvidia_fs".into(),
        version: Some("2.22.3".into()),
    });
    s.node.storage = Some(StorageNode {
        cufile_json: Some(CUFILE_DEFAULT_JSON.into()),
        kernel_release: Some("6.8.0-49-generic".into()),
        nvme_multipath: Some("N".into()),
        md: raid,
        mounts,
    });
    s
}
