//! GPUDirect Storage end to end: NVIDIA's published `gdscheck -p` beside peerpath's reading of
//! the same cufile.json; the synthesized GDS node's drives as lstopo sees them; a capture of it
//! (what it keeps, what it redacts) audited back; `place --storage` and `launch`; and
//! `probe-storage` on a machine without CUDA or without NVMe.

use peerpath::model::storage::DEFAULT_MAX_DIRECT_IO_SIZE_KB;
use peerpath::parse::cufile;
use peerpath::synth::layouts;
use peerpath::synth::{Spec, WriteOptions, write_tarball, write_tree};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_peerpath"))
}

/// A layout as a snapshot tarball (one file: far cheaper to write than a sysfs tree), in a
/// temporary directory kept alive by the returned guard.
fn snapshot(spec: &Spec) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("node.tar.gz");
    write_tarball(spec, &tar, &WriteOptions::default()).unwrap();
    (dir, tar)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/gds")
            .join(name),
    )
    .unwrap()
}

/// `gdscheck -p`'s `key : value` lines (`properties.use_compat_mode : true`, `NVMe : Supported`),
/// as gdscheck prints them: one space of indent, the key, ` : `, the value. Lines cut in the
/// published copy (the marker line) are not read.
fn gdscheck(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('['))
        .filter_map(|l| l.trim().split_once(" : "))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[test]
fn gdscheck_p_beside_our_reading_of_the_default_cufile_json() {
    // nccl#1637: gdscheck -p on a machine with NVIDIA's default configuration.
    let g = gdscheck(&fixture("nccl-issue-1637-rtx5090.gdscheck-p.EXCERPT.txt"));
    let c = cufile::parse(&fixture("cufile.default.json")).unwrap();
    // gdscheck names cufile.json's `allow_compat_mode` `use_compat_mode`.
    assert_eq!(
        g["properties.use_compat_mode"],
        c.compat_allowed().to_string()
    );
    assert_eq!(
        g["properties.force_compat_mode"],
        c.compat_forced().to_string()
    );
    assert_eq!(g["properties.use_pci_p2pdma"], c.p2pdma().to_string());
    assert_eq!(
        g["properties.max_direct_io_size_kb"],
        c.max_direct_io_size_kb
            .unwrap_or(DEFAULT_MAX_DIRECT_IO_SIZE_KB)
            .to_string()
    );
    // What the default leaves out, gdscheck reports at the documented default.
    assert_eq!(c.force_compat_mode, None);
    assert_eq!(c.use_pci_p2pdma, None);
    assert_eq!(g["NVMe P2PDMA"], "Unsupported");
    // gds-nvidia-fs#77: compat mode turned off; the reader keeps every whole line of it.
    let g = gdscheck(&fixture("gds-nvidia-fs-issue-77.gdscheck-p.EXCERPT.txt"));
    assert_eq!(g["properties.use_compat_mode"], "false");
    assert_eq!(g["properties.use_pci_p2pdma"], "false");
    assert_eq!(g["NVMe"], "Unsupported");
    // pg-strom#913: both direct paths on one machine (nvidia-fs 2.24 and PCI P2PDMA).
    let g = gdscheck(&fixture("pg-strom-issue-913.gdscheck-p.EXCERPT.txt"));
    assert_eq!(
        (g["NVMe P2PDMA"].as_str(), g["NVMe"].as_str()),
        ("Supported", "Supported")
    );
}

/// `Block(Disk) "nvme0n1"` under each PCI busid in `lstopo-no-graphics -v --whole-io`.
fn lstopo_disks(root: &Path) -> Option<BTreeMap<String, String>> {
    let out = Command::new("lstopo-no-graphics")
        .args(["--if", "fsroot", "--input"])
        .arg(root)
        .args(["--whole-io", "-v", "--no-collapse"])
        .env("LANG", "C")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut map = BTreeMap::new();
    let mut bus = String::new();
    for l in text.lines() {
        if let Some(i) = l.find("busid=") {
            bus = l[i + 6..i + 18].to_string();
        }
        if l.contains("Block(Disk)")
            && let Some(name) = l.rsplit('"').nth(1)
        {
            map.insert(name.to_string(), bus.clone());
        }
    }
    Some(map)
}

#[test]
fn drives_below_each_mount_agree_with_lstopo() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        &layouts::hgx_h100_gds(),
        dir.path(),
        &WriteOptions::default(),
    )
    .unwrap();
    let Some(disks) = lstopo_disks(dir.path()) else {
        eprintln!("lstopo-no-graphics not installed: skipped (CI installs hwloc)");
        return;
    };
    assert_eq!(disks.len(), 10, "{disks:?}");
    let topo = peerpath::sources::load(Some(dir.path()), &Default::default()).unwrap();
    let table = topo.machine.storage.mounts.known().unwrap();
    let mut checked = 0;
    for m in &table.mounts {
        // Every NVMe namespace peerpath walked to lies, for lstopo, on a drive peerpath names.
        for b in m.block.iter().filter(|b| disks.contains_key(*b)) {
            let bus = &disks[b];
            assert!(
                m.drives.iter().any(|d| &d.to_string() == bus),
                "{}: {b} on {bus} per lstopo, drives {:?}",
                m.mount_point,
                m.drives
            );
            checked += 1;
        }
    }
    // /raid0 and /raid1: four namespaces each; / (md2): both boot namespaces; /boot/efi: one.
    assert_eq!(checked, 11);
}

#[test]
fn capture_keeps_the_gds_files_and_redacts_user_paths() {
    let mut spec = layouts::hgx_h100_gds();
    let s = spec.node.storage.as_mut().unwrap();
    let json = s.cufile_json.as_mut().unwrap();
    *json = json.replace(
        "//\"dir\": \"/home/<xxxx>\",",
        "\"dir\": \"/home/alice/cufile_logs\",",
    );
    assert!(json.contains("/home/alice"));
    let (dir, root) = snapshot(&spec);
    let snap = dir.path().join("snap.tar.gz");
    let status = bin()
        .args(["capture", "-o"])
        .arg(&snap)
        .args([Path::new("-i"), &root])
        .status()
        .unwrap();
    assert!(status.success(), "capture exited {status}");
    let bytes = std::fs::read(&snap).unwrap();
    let fs = peerpath::sources::fsroot::MemRoot::from_tar_bytes("snap", &bytes).unwrap();
    use peerpath::sources::fsroot::FsRoot;
    let kept = |p: &str| {
        fs.read(Path::new(p))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let cj = kept("etc/cufile.json").unwrap();
    assert!(
        cj.contains("/home/(user)/cufile_logs") && !cj.contains("alice"),
        "{cj}"
    );
    assert!(
        cj.contains("/home/<xxx>/cufile.json"),
        "NVIDIA's placeholder is no one's name"
    );
    assert!(kept("proc/self/mountinfo").unwrap().contains("/raid0"));
    // The snapshot audits as the tree does: the same GDS findings.
    let audit = |p: &Path| {
        let out = bin()
            .args(["audit", "--format", "json", "-i"])
            .arg(p)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["id"].as_str().unwrap().starts_with("gds-"))
            .map(|f| (f["id"].to_string(), f["summary"].to_string()))
            .collect::<Vec<_>>()
    };
    let (a, b) = (audit(&root), audit(&snap));
    assert_eq!(a.len(), 4, "{a:#?}");
    assert_eq!(a, b);
}

#[test]
fn place_and_launch_give_each_rank_its_nearest_drive() {
    let (_dir, gds) = snapshot(&layouts::hgx_h100_gds());
    let out = bin()
        .args(["place", "--ranks", "8", "--format", "json", "-i"])
        .arg(&gds)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    for (r, rank) in v["ranks"].as_array().unwrap().iter().enumerate() {
        let want = layouts::gds_drive(r).to_string();
        assert_eq!(rank["drive"]["drive"], want.as_str(), "rank {r}");
        assert_eq!(rank["drive"]["label"], "PIX");
        let gds_dir = if r < 4 { "/raid0" } else { "/raid1" };
        assert_eq!(rank["env"]["PEERPATH_GDS_DIR"], gds_dir);
    }
    let out = bin()
        .args(["launch", "--rank", "6", "--dry-run", "-i"])
        .arg(&gds)
        .args(["--", "true"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PEERPATH_GDS_DRIVE=nvme8"), "{text}");
    // A node without GDS: no drive unless asked for.
    let (_plain, plain) = snapshot(&layouts::hgx_h100());
    let run = |extra: &[&str]| {
        let out = bin()
            .args(["place", "--ranks", "2", "-i"])
            .arg(&plain)
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(!run(&[]).contains("Drive:"));
    assert!(run(&["--storage"]).contains("Drive: nvme0 (0000:5a:00.0): NODE to the GPU"));
}

#[test]
fn probe_storage_says_plainly_what_is_missing() {
    // A machine without NVMe: nothing to probe unless --dir is given.
    let (dir, vm) = snapshot(&layouts::by_name("virtio-vm").unwrap());
    let out = bin()
        .args(["probe-storage", "-i"])
        .arg(&vm)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("this machine has no NVMe drive; give --dir DIR"),
        "{err}"
    );
    // With a directory: here there is no CUDA driver, and the JSON says so.
    let (_g, gds) = snapshot(&layouts::hgx_h100_gds());
    let out = bin()
        .args(["probe-storage", "--format", "json", "--dir"])
        .arg(dir.path())
        .arg("-i")
        .arg(&gds)
        .env("LD_LIBRARY_PATH", "/nonexistent")
        .output()
        .unwrap();
    if Path::new("/usr/lib/x86_64-linux-gnu/libcuda.so.1").exists() {
        return; // a machine with the NVIDIA driver: the probe runs (docs/probe.md)
    }
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "peerpath.storage-probe/1");
    assert!(
        v["unavailable"]
            .as_str()
            .unwrap()
            .starts_with("libcuda.so.1 could not be loaded")
    );
    // Bad sizes are refused before anything is read.
    let out = bin()
        .args(["probe-storage", "--size", "1000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_real_gpu_vm_with_cudas_cufile_json_but_no_gds_target() {
    // Captured with `peerpath capture` on the lent H200 VM (fixtures/gds/README.md): CUDA 13's
    // /etc/cufile.json (through /etc/alternatives), no nvidia-fs, no NVMe, / on virtio vda.
    let snap = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/gds/h200-vm-gds.tar.gz");
    let topo = peerpath::sources::load(Some(&snap), &Default::default()).unwrap();
    let s = &topo.machine.storage;
    let c = s.cufile.as_ref().unwrap().config.as_ref().unwrap();
    assert_eq!(
        (c.allow_compat_mode, c.use_pci_p2pdma),
        (Some(true), Some(false))
    );
    assert!(s.nvidia_fs.is_none());
    let t = s.mounts.known().unwrap();
    let root = t.mounts.iter().find(|m| m.mount_point == "/").unwrap();
    assert_eq!(
        (root.dev.as_deref(), root.block.as_slice()),
        (Some("254:0"), &["vda".to_string()][..])
    );
    assert!(root.drives.is_empty(), "virtio is no NVMe drive");
    let r = peerpath::analysis::audit::run(&topo, &Default::default());
    let g: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id.as_str().starts_with("gds-"))
        .map(|f| (f.id.as_str(), f.severity.as_str()))
        .collect();
    assert_eq!(
        g,
        [("gds-config", "info"), ("gds-kernel", "info")],
        "{:#?}",
        r.findings
    );
}
