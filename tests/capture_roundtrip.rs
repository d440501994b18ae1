//! `peerpath capture`: the archive read back with `-i` gives the scan of the tree it was taken
//! from (every hwloc fixture extracted to disk, every synthesized layout), and it holds no
//! serial number and no file off the whitelist.

mod common;

use peerpath::capture::{self, CaptureOptions, MANIFEST_NAME, Node};
use peerpath::model::{SourceInfo, Topology};
use peerpath::sources::fsroot::{DirRoot, MemRoot};
use peerpath::sources::sysfs::{self, ScanOptions};
use peerpath::synth::{WriteOptions, layouts, write_tree};
use std::path::Path;

fn src(p: &str) -> SourceInfo {
    SourceInfo {
        kind: "sysfs".into(),
        path: p.into(),
        limitations: vec![],
    }
}

/// The scan as JSON, without the `source` member (the input path differs by design). The
/// wording of a "file absent" reason depends on the reader (the OS says "No such file or
/// directory", an in-memory snapshot "does not exist"); both mean absent and are made equal.
fn comparable(t: &Topology) -> serde_json::Value {
    let mut v = serde_json::to_value(t).unwrap();
    v.as_object_mut().unwrap().remove("source");
    let text = serde_json::to_string(&v)
        .unwrap()
        .replace("No such file or directory (os error 2)", "ABSENT")
        .replace("proc/cmdline does not exist", "ABSENT")
        .replace("sys/class/iommu does not exist", "ABSENT");
    serde_json::from_str(&text).unwrap()
}

/// Captures the tree under `root`, reads the tarball back through `sources::load` (the `-i`
/// path), and compares with a direct scan of the tree.
fn round_trip(root: &Path, keep_serials: bool) -> capture::Capture {
    let fs = DirRoot::new(root);
    let direct = sysfs::scan(&fs, src("direct"), &ScanOptions::default()).unwrap();
    let c = capture::capture(
        &fs,
        src(&root.display().to_string()),
        &CaptureOptions {
            keep_serials,
            nvml_json: None,
        },
    )
    .unwrap();
    assert_eq!(
        comparable(&c.topology),
        comparable(&direct),
        "recording changed the scan"
    );
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("snap.tar.gz");
    std::fs::write(&tar, c.to_tar_gz().unwrap()).unwrap();
    let back = peerpath::sources::load(Some(&tar), &Default::default()).unwrap();
    assert_eq!(back.source.kind, "snapshot");
    // `-i` names devices from the system's pci.ids when there is one; so does this scan.
    let named = ScanOptions {
        pci_ids: peerpath::sources::naming::locate(None),
    };
    let direct = sysfs::scan(&fs, src("direct"), &named).unwrap();
    let (a, b) = (comparable(&direct), comparable(&back));
    if a != b {
        let (sa, sb) = (
            serde_json::to_string_pretty(&a).unwrap(),
            serde_json::to_string_pretty(&b).unwrap(),
        );
        let first = sa
            .lines()
            .zip(sb.lines())
            .enumerate()
            .find(|(_, (x, y))| x != y)
            .map(|(i, (x, y))| format!("line {i}: direct {x:?} vs snapshot {y:?}"));
        panic!("{}: round trip differs: {first:?}", root.display());
    }
    assert!(
        c.manifest.left_out.is_empty(),
        "{}: scanner touched paths not on the whitelist: {:?}",
        root.display(),
        c.manifest.left_out
    );
    c
}

#[test]
fn hwloc_fixtures_round_trip() {
    let tarballs = common::hwloc_tarballs();
    assert!(tarballs.len() >= 5);
    common::par_each(&tarballs, |t| {
        let (_g, root) = common::extract(t);
        let c = round_trip(&root, true);
        // Smaller than the fixture: only what the scanner needs.
        let all = walk_count(&root);
        assert!(c.entries.len() <= all, "{}", t.display());
    });
}

fn walk_count(root: &Path) -> usize {
    let mut n = 0;
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            n += 1;
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            }
        }
    }
    n
}

#[test]
fn synth_layouts_round_trip() {
    // The 1024-function tree is covered by the hwloc and HGX cases' logic.
    let cases: Vec<(&str, bool)> = layouts::LAYOUTS
        .iter()
        .filter(|(name, _)| !name.starts_with("scaling"))
        .flat_map(|(name, _)| [(*name, false), (*name, true)])
        .collect();
    common::par_each(&cases, |&(name, unprivileged)| {
        let spec = layouts::by_name(name).unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_tree(&spec, dir.path(), &WriteOptions { unprivileged }).unwrap();
        round_trip(dir.path(), false);
    });
}

/// Plants serial numbers and a non-whitelisted file in a synthesized HGX tree; none of them may
/// reach the archive (searched in the raw decompressed tar stream, not only by path).
#[test]
fn serials_and_unlisted_files_stay_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_tree(&layouts::hgx_h100(), root, &WriteOptions::default()).unwrap();
    let nic = layouts::hgx_nic(0);
    let nic_dir = std::fs::canonicalize(root.join(format!("sys/bus/pci/devices/{nic}"))).unwrap();
    let ib = std::fs::read_dir(nic_dir.join("infiniband"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(ib.join("node_guid"), "b8ce:f603:00aa:bb01\n").unwrap();
    std::fs::write(ib.join("sys_image_guid"), "b8ce:f603:00aa:bb00\n").unwrap();
    let net = std::fs::read_dir(nic_dir.join("net"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(net.join("address"), "b8:ce:f6:aa:bb:01\n").unwrap();
    std::fs::write(nic_dir.join("secret_token"), "TOKEN-DO-NOT-SHIP\n").unwrap();
    std::fs::create_dir_all(root.join("proc/self")).unwrap();
    std::fs::write(root.join("proc/self/environ"), "PASSWORD=hunter2\0").unwrap();
    std::fs::create_dir_all(root.join("sys/class/dmi/id")).unwrap();
    std::fs::write(
        root.join("sys/class/dmi/id/product_serial"),
        "SN-PLANTED-42\n",
    )
    .unwrap();
    let gpu = layouts::hgx_gpu(0);
    let info = root.join(format!("proc/driver/nvidia/gpus/{gpu}/information"));
    let mut text = std::fs::read_to_string(&info).unwrap_or_default();
    text.push_str("GPU UUID: \t GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n");
    std::fs::write(&info, text).unwrap();

    let fs = DirRoot::new(root);
    let c = capture::capture(&fs, src("/"), &CaptureOptions::default()).unwrap();
    let raw = decompressed(&c.to_tar_gz().unwrap());
    for needle in [
        "b8ce:f603:00aa:bb01",
        "b8ce:f603:00aa:bb00",
        "b8:ce:f6:aa:bb:01",
        "TOKEN-DO-NOT-SHIP",
        "hunter2",
        "SN-PLANTED-42",
        "GPU-0f1e2d3c",
        "node_guid",
        "secret_token",
        "product_serial",
        "environ",
    ] {
        assert!(
            !contains(&raw, needle.as_bytes()),
            "{needle} reached the archive"
        );
    }
    assert!(
        c.manifest
            .redacted
            .iter()
            .any(|r| r.contains("information")),
        "{:?}",
        c.manifest.redacted
    );
    // With --keep-serials the UUID and the adapter's node GUID are kept (issue 40: the fabric's
    // map names adapters by GUID), the unlisted files still are not (sys_image_guid is read by
    // nothing and stays out).
    let c = capture::capture(
        &fs,
        src("/"),
        &CaptureOptions {
            keep_serials: true,
            nvml_json: None,
        },
    )
    .unwrap();
    let raw = decompressed(&c.to_tar_gz().unwrap());
    assert!(contains(&raw, b"GPU-0f1e2d3c"));
    assert!(!contains(&raw, b"TOKEN-DO-NOT-SHIP"));
    assert!(contains(&raw, b"b8ce:f603:00aa:bb01"));
    assert!(!contains(&raw, b"b8ce:f603:00aa:bb00"));
}

/// Every archived file is whitelisted (or the manifest), and the manifest says what it is.
#[test]
fn archive_holds_only_whitelisted_files() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(&layouts::dgx_a100(), dir.path(), &WriteOptions::default()).unwrap();
    let c = round_trip(dir.path(), false);
    let mem = MemRoot::from_tar_bytes("x", &c.to_tar_gz().unwrap()).unwrap();
    let mut files = 0;
    for (p, n) in mem.paths() {
        if let peerpath::sources::fsroot::MemNode::File(_) = n {
            files += 1;
            if p == Path::new(MANIFEST_NAME) {
                continue;
            }
            // Stored at the resolved place; the scanner's path to it was whitelisted.
            assert!(
                capture::whitelisted(p) || p.starts_with("sys/devices/virtual/dmi"),
                "{} is not whitelisted",
                p.display()
            );
        }
    }
    assert_eq!(files, c.manifest.files + 1);
    assert!(c.entries.values().any(|n| matches!(n, Node::Link(_))));
    let m: serde_json::Value =
        serde_json::from_slice(&match c.entries.get(Path::new(MANIFEST_NAME)).unwrap() {
            Node::File(b) => b.clone(),
            _ => unreachable!(),
        })
        .unwrap();
    assert_eq!(m["schema"], "peerpath.capture/1");
}

fn decompressed(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut v = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut v)
        .unwrap();
    v
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn lspci_reads_a_capture_as_it_reads_the_machine() {
    // `lspci -A linux-sysfs` opens each function's vendor, device, class, irq… and resolves its
    // driver link; the scan takes the IDs from `config`, so capture reads those files for
    // lspci. Before, lspci refused every capture ("Cannot open …/vendor").
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("tree");
    let gz = d.path().join("c.tar.gz");
    let x = d.path().join("x");
    std::fs::create_dir(&x).unwrap();
    let run = |args: &[&str]| {
        let o = common::peerpath().args(args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&["fixture", "hgx-h100", "-o", tree.to_str().unwrap()]);
    run(&[
        "capture",
        "-i",
        tree.to_str().unwrap(),
        "-o",
        gz.to_str().unwrap(),
    ]);
    let Some(_) = common::tool(
        "tar",
        &["-xzf", gz.to_str().unwrap(), "-C", x.to_str().unwrap()],
        &[],
    ) else {
        return;
    };
    let lspci = |root: &Path, args: &[&str]| {
        let sysfs = format!("sysfs.path={}", root.join("sys/bus/pci").display());
        let mut a = vec!["-A", "linux-sysfs", "-O", sysfs.as_str()];
        a.extend_from_slice(args);
        common::tool("lspci", &a, &[])
    };
    for args in [&["-nnvvv"][..], &["-tv"][..]] {
        let (Some(machine), Some(captured)) = (lspci(&tree, args), lspci(&x, args)) else {
            return;
        };
        assert!(
            machine.contains("ConnectX-7") || machine.contains("15b3"),
            "{machine}"
        );
        assert_eq!(captured, machine, "lspci {args:?} on the capture");
    }
}
