//! Hostile sysfs trees: dangling and looping links, a device directory duplicated under two host
//! bridges, truncated and oversized config, non-UTF-8 and empty attributes, numa_node -1
//! everywhere, "Unknown" links, a bridge missing from sys/bus/pci/devices, a 10,000-VF NIC,
//! permission denied on a subtree and a device vanishing between listing and reading. Each gives
//! a partial result with warnings naming the path, and never a panic.

mod common;

use peerpath::model::{Bdf, DeviceKind, SourceInfo, Topology};
use peerpath::sources::fsroot::{self, DirRoot, Entry, EntryKind, FsRoot, OpenDir};
use peerpath::sources::sysfs::{self, ScanOptions};
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Writes a minimal but real-looking device directory and its bus link.
fn device(root: &Path, chain: &str, class: &str, vendor: &str) -> PathBuf {
    let dir = root.join("sys/devices").join(chain);
    std::fs::create_dir_all(&dir).unwrap();
    let bdf = chain.rsplit('/').next().unwrap();
    for (f, v) in [
        ("class", class),
        ("vendor", vendor),
        ("device", "0x1234"),
        ("numa_node", "-1"),
        ("current_link_speed", "Unknown"),
        ("current_link_width", "0"),
        ("max_link_speed", "Unknown"),
        ("max_link_width", "255"),
    ] {
        std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
    }
    let bus = root.join("sys/bus/pci/devices");
    std::fs::create_dir_all(&bus).unwrap();
    let depth = "../../../devices/".to_string() + chain;
    let _ = symlink(depth, bus.join(bdf));
    dir
}

fn scan_dir(root: &Path) -> Topology {
    let fs = DirRoot::new(root);
    sysfs::scan(
        &fs,
        SourceInfo {
            kind: "sysfs".into(),
            path: root.display().to_string(),
            limitations: vec![],
        },
        &ScanOptions::default(),
    )
    .expect("a hostile tree still scans")
}

fn bdf(s: &str) -> Bdf {
    s.parse().unwrap()
}

#[test]
fn dangling_and_looping_links_are_warnings() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    device(r, "pci0000:00/0000:00:01.0", "0x060400", "0x8086");
    device(
        r,
        "pci0000:00/0000:00:01.0/0000:01:00.0",
        "0x030200",
        "0x10de",
    );
    let bus = r.join("sys/bus/pci/devices");
    symlink(
        "../../../devices/pci0000:00/0000:00:09.0",
        bus.join("0000:00:09.0"),
    )
    .unwrap(); // dangling
    symlink("0000:00:0a.0", bus.join("0000:00:0a.0")).unwrap(); // loops on itself
    symlink(
        "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/nowhere",
        r.join("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/driver"),
    )
    .unwrap();
    let topo = scan_dir(r);
    assert_eq!(topo.devices.len(), 2);
    assert!(
        topo.warnings
            .iter()
            .any(|w| w.path.ends_with("0000:00:09.0") && w.message.contains("dangling"))
    );
    assert!(
        topo.warnings
            .iter()
            .any(|w| w.path.ends_with("0000:00:0a.0"))
    );
    let gpu = topo.device(&bdf("0000:01:00.0")).unwrap();
    assert_eq!(gpu.kind, DeviceKind::Gpu);
    assert_eq!(gpu.driver.as_deref(), Some("nowhere")); // a dangling driver link still names it
    // "Unknown" speeds and impossible widths are unknown, never zero or 255 lanes.
    assert!(gpu.link.is_none());
    assert_eq!(gpu.numa_node, None);
}

#[test]
fn duplicated_device_directory_counts_once() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    device(r, "pci0000:00/0000:00:02.0", "0x060400", "0x8086");
    device(
        r,
        "pci0000:00/0000:00:02.0/0000:02:00.0",
        "0x020700",
        "0x15b3",
    );
    // A copy under another host bridge, not linked from the bus (fakepcilocalities' trap).
    let copy = r.join("sys/devices/pci0000:80/0000:80:02.0/0000:02:00.0");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::write(copy.join("class"), "0x020700\n").unwrap();
    let topo = scan_dir(r);
    assert_eq!(
        topo.devices
            .iter()
            .filter(|d| d.bdf == bdf("0000:02:00.0"))
            .count(),
        1
    );
    assert_eq!(
        topo.device(&bdf("0000:02:00.0")).unwrap().host_bridge,
        "pci0000:00"
    );
}

#[test]
fn truncated_oversized_empty_and_non_utf8_files() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    let a = device(r, "pci0000:00/0000:00:03.0", "0x060400", "0x8086");
    std::fs::write(a.join("config"), [0x86u8, 0x80, 0x00]).unwrap(); // truncated
    let b = device(
        r,
        "pci0000:00/0000:00:03.0/0000:03:00.0",
        "0x020000",
        "0x15b3",
    );
    std::fs::write(b.join("config"), vec![0x5au8; 1 << 16]).unwrap(); // oversized: refused
    std::fs::write(b.join("vendor"), b"\xff\xfe\n").unwrap(); // non-UTF-8
    std::fs::write(b.join("local_cpulist"), b"").unwrap(); // empty
    std::fs::write(b.join("resource"), b"0x1 0x0 0x200\ngarbage\n").unwrap();
    std::fs::write(b.join("aer_dev_fatal"), b"\x00\x01").unwrap();
    let topo = scan_dir(r);
    let bridge = topo.device(&bdf("0000:00:03.0")).unwrap();
    assert!(bridge.config.is_none());
    assert!(
        topo.warnings
            .iter()
            .any(|w| w.path.ends_with("0000:00:03.0/config"))
    );
    let nic = topo.device(&bdf("0000:03:00.0")).unwrap();
    // Vendor unreadable as text; a config longer than PCIe's 4096 bytes is not a config space:
    // refused whole (never its first 4096 bytes judged), and said.
    assert!(nic.config.is_none());
    assert!(
        topo.warnings
            .iter()
            .any(|w| w.path.ends_with("0000:03:00.0/config")
                && w.message.contains("more than 4096 bytes"))
    );
    assert_eq!(nic.local_cpus.as_deref(), Some(&[][..]));
    assert!(nic.bars.is_empty());
    assert!(topo.warnings.iter().any(|w| w.path.ends_with("resource")));
}

#[test]
fn missing_bridge_is_kept_with_a_warning() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    device(r, "pci0000:00/0000:00:04.0", "0x060400", "0x8086");
    let mid = r.join("sys/devices/pci0000:00/0000:00:04.0/0000:04:00.0");
    std::fs::create_dir_all(&mid).unwrap();
    std::fs::write(mid.join("class"), "0x060400\n").unwrap();
    device(
        r,
        "pci0000:00/0000:00:04.0/0000:04:00.0/0000:05:00.0",
        "0x030200",
        "0x10de",
    );
    let topo = scan_dir(r);
    let gpu = topo.device(&bdf("0000:05:00.0")).unwrap();
    assert_eq!(gpu.parent, Some(bdf("0000:04:00.0")));
    assert!(!topo.device(&bdf("0000:04:00.0")).unwrap().listed);
    assert!(
        topo.warnings
            .iter()
            .any(|w| w.message.contains("no sys/bus/pci/devices entry"))
    );
}

#[test]
fn ten_thousand_vfs() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    device(r, "pci0000:00/0000:00:05.0", "0x060400", "0x8086");
    let pf = device(
        r,
        "pci0000:00/0000:00:05.0/0000:06:00.0",
        "0x020000",
        "0x15b3",
    );
    let bus_dir = r.join("sys/bus/pci/devices");
    for i in 0..10_000u32 {
        let b = format!("0000:{:02x}:{:02x}.{}", 0x07 + i / 256, (i / 8) % 32, i % 8);
        // VFs of a real NIC live beside the PF under the same port.
        let vf = r.join("sys/devices/pci0000:00/0000:00:05.0").join(&b);
        if vf.exists() {
            continue;
        }
        std::fs::create_dir_all(&vf).unwrap();
        std::fs::write(vf.join("class"), "0x020000\n").unwrap();
        symlink("../0000:06:00.0", vf.join("physfn")).unwrap();
        symlink(format!("../{b}"), pf.join(format!("virtfn{i}"))).unwrap();
        symlink(
            format!("../../../devices/pci0000:00/0000:00:05.0/{b}"),
            bus_dir.join(&b),
        )
        .unwrap();
    }
    let topo = scan_dir(r);
    let pfd = topo.device(&bdf("0000:06:00.0")).unwrap();
    assert!(pfd.vf_count >= 8000, "{}", pfd.vf_count);
    let vfs = topo.devices.iter().filter(|d| d.is_vf()).count();
    assert_eq!(vfs as u32, pfd.vf_count);
    // The tree folds them: one line for the PF, no line per VF.
    let tree = peerpath::render::tree::render(&topo, Default::default());
    assert!(tree.lines().count() < 40, "{tree}");
    assert!(tree.contains(&format!("(+{} VFs)", pfd.vf_count)));
}

/// A root that injects faults: permission denied under one subtree, and one device that
/// vanishes after the bus listing (reads of its directory fail with NotFound).
struct FaultyRoot {
    inner: DirRoot,
    denied: PathBuf,
    vanished: PathBuf,
}

impl FaultyRoot {
    fn check(&self, p: &Path) -> io::Result<()> {
        if p.starts_with(&self.denied) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "Permission denied",
            ));
        }
        if p.starts_with(&self.vanished) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "No such file or directory",
            ));
        }
        Ok(())
    }
}

impl FsRoot for FaultyRoot {
    fn read_limited(&self, p: &Path, limit: usize) -> io::Result<Vec<u8>> {
        self.check(p)?;
        self.inner.read_limited(p, limit)
    }
    fn read_link(&self, p: &Path) -> io::Result<PathBuf> {
        self.inner.read_link(p)
    }
    fn read_dir(&self, p: &Path) -> io::Result<Vec<Entry>> {
        self.check(p)?;
        self.inner.read_dir(p)
    }
    fn open_dir<'a>(&'a self, p: &Path) -> io::Result<Box<dyn OpenDir + 'a>> {
        self.check(p)?;
        self.inner.open_dir(p)?;
        // Names are read through this root's checks, not the inner root's descriptor.
        Ok(fsroot::path_dir(self, p))
    }
    fn kind(&self, p: &Path) -> Option<EntryKind> {
        self.inner.kind(p)
    }
    fn describe(&self) -> String {
        "faulty".into()
    }
}

#[test]
fn permission_denied_and_vanishing_devices() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    device(r, "pci0000:00/0000:00:06.0", "0x060400", "0x8086");
    let gpu = device(
        r,
        "pci0000:00/0000:00:06.0/0000:08:00.0",
        "0x030200",
        "0x10de",
    );
    std::fs::write(gpu.join("config"), vec![0u8; 256]).unwrap();
    device(
        r,
        "pci0000:00/0000:00:06.0/0000:09:00.0",
        "0x020700",
        "0x15b3",
    );
    let fs = FaultyRoot {
        inner: DirRoot::new(r),
        denied: PathBuf::from("sys/devices/pci0000:00/0000:00:06.0/0000:08:00.0/config"),
        vanished: PathBuf::from("sys/devices/pci0000:00/0000:00:06.0/0000:09:00.0"),
    };
    let topo = sysfs::scan(
        &fs,
        SourceInfo {
            kind: "sysfs".into(),
            path: "x".into(),
            limitations: vec![],
        },
        &ScanOptions::default(),
    )
    .unwrap();
    let g = topo.device(&bdf("0000:08:00.0")).unwrap();
    assert!(
        g.config.is_none(),
        "denied config must be unknown, not parsed"
    );
    assert!(topo.warnings.iter().any(
        |w| w.path.ends_with("0000:08:00.0/config") && w.message.contains("Permission denied")
    ));
    assert!(topo.device(&bdf("0000:09:00.0")).is_none());
    assert!(
        topo.warnings
            .iter()
            .any(|w| w.path.ends_with("0000:09:00.0") && w.message.contains("vanished"))
    );
}

#[test]
fn not_a_sysfs_root_is_a_clear_error() {
    let t = tempfile::tempdir().unwrap();
    let out = common::peerpath()
        .args(["scan", "-i"])
        .arg(t.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no sys/ folder"), "{err}");
    std::fs::write(t.path().join("x.bin"), b"\x00\x01garbage").unwrap();
    let out = common::peerpath()
        .args(["scan", "-i"])
        .arg(t.path().join("x.bin"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // A tarball whose entry climbs out of the root is refused, naming the entry.
    let p = t.path().join("evil.tar");
    std::fs::write(&p, common::escaping_tar()).unwrap();
    let out = common::peerpath()
        .args(["scan", "-i"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("escapes"), "{err}");
    assert!(!t.path().parent().unwrap().join("escape.txt").exists());
}

#[test]
fn refused_values_are_warnings_naming_the_file_and_the_value() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    device(r, "pci0000:00/0000:00:07.0", "0x060400", "0x8086");
    let nic = device(
        r,
        "pci0000:00/0000:00:07.0/0000:0a:00.0",
        "0x020700",
        "0x15b3",
    );
    std::fs::write(nic.join("revision"), "0xzz\n").unwrap();
    std::fs::write(nic.join("local_cpulist"), "0-3,x\n").unwrap();
    std::fs::write(nic.join("aer_dev_correctable"), "nothing here\n").unwrap();
    let topo = scan_dir(r);
    let said = |file: &str| -> Vec<String> {
        topo.warnings
            .iter()
            .filter(|w| w.path.ends_with(&format!("0000:0a:00.0/{file}")))
            .map(|w| w.message.clone())
            .collect()
    };
    assert_eq!(
        said("current_link_speed"),
        ["\"Unknown\" is not a link speed; value treated as unknown"]
    );
    assert_eq!(
        said("max_link_width"),
        ["\"255\" is not a lane count (1 to 32); value treated as unknown"]
    );
    assert_eq!(
        said("revision"),
        ["\"0xzz\" is not a hexadecimal number; value treated as unknown"]
    );
    assert_eq!(
        said("local_cpulist"),
        ["\"0-3,x\" is not a cpulist; value treated as unknown"]
    );
    assert_eq!(
        said("aer_dev_correctable"),
        ["\"nothing here\" has no counter line; value treated as unknown"]
    );
    // numa_node -1 and a width of 0 are how the kernel says "unknown" and "down": no warning.
    assert!(said("numa_node").is_empty());
    assert!(said("current_link_width").is_empty());
    let d = topo.device(&bdf("0000:0a:00.0")).unwrap();
    assert_eq!(
        (d.revision, d.numa_node, d.local_cpus.clone()),
        (None, None, None)
    );
    // No Rust internals in any message.
    assert!(
        topo.warnings
            .iter()
            .all(|w| !w.message.contains("Some(") && !w.message.contains("None")),
        "{:?}",
        topo.warnings
    );
}
