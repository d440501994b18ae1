//! The first real GPU machine (issue 29): a Firecracker VM with one NVIDIA H200 (10de:2335),
//! driver 580.159.04, no RDMA device, one virtio NIC. `fixtures/real/h200-vm.tar.gz` is the
//! `peerpath capture` taken on it (with its NVML facts), and the nvidia-smi outputs beside it
//! are from the same run (fixtures/real/README.md). Each test holds peerpath's output on the
//! capture against what the machine's own tools printed or what the docs promise.

mod common;

use serde_json::Value;
use std::path::PathBuf;

fn real(name: &str) -> PathBuf {
    common::repo().join("fixtures/real").join(name)
}

fn capture() -> String {
    real("h200-vm.tar.gz").display().to_string()
}

/// Runs peerpath; returns (exit code, stdout).
fn run(args: &[&str]) -> (i32, String) {
    let o = common::peerpath().args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
    )
}

fn ok(args: &[&str]) -> String {
    let (code, out) = run(args);
    assert_eq!(code, 0, "{args:?}");
    out
}

/// A PCI ID database with NVIDIA and, when `h200` is given, a name for 10de:2335.
fn pci_ids(dir: &tempfile::TempDir, h200: Option<&str>) -> String {
    let mut text = String::from("10de  NVIDIA Corporation\n\t2330  GH100 [H100 SXM5 80GB]\n");
    if let Some(n) = h200 {
        text.push_str(&format!("\t2335  {n}\n"));
    }
    text.push_str("1af4  Red Hat, Inc.\n\t1041  Virtio 1.0 network device\n");
    let p = dir.path().join("pci.ids");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The capture's tree and JSON scan, named from a database that names the H200 `h200` (or not).
fn scan(h200: Option<&str>) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let ids = pci_ids(&dir, h200);
    let c = capture();
    let tree = ok(&["scan", "-i", &c, "--pci-ids", &ids]);
    let json = ok(&["scan", "-i", &c, "--pci-ids", &ids, "--format", "json"]);
    (tree, serde_json::from_str(&json).unwrap())
}

fn gpu(scan: &Value) -> &Value {
    scan["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["bdf"] == "0000:00:06.0")
        .expect("the H200 at 0000:00:06.0")
}

/// A pci.ids without the H200 (Debian 12's, April 2023, is one): the GPU is named as NVIDIA's
/// driver names it, the output says so, and its NVML facts (stored in the capture) are there.
/// Before issue 29 the tree said `"[10de:2335]"`.
#[test]
fn h200_is_named_by_the_driver_when_pci_ids_has_no_entry() {
    let (tree, json) = scan(None);
    assert!(
        tree.contains(
            "GPU 0000:00:06.0 \"NVIDIA H200\" (name from the NVIDIA driver; pci.ids has none) [32.0 GT/s x16]"
        ),
        "{tree}"
    );
    let g = gpu(&json);
    assert_eq!(g["kind"], "gpu");
    assert_eq!(g["device_name"], "NVIDIA H200");
    assert_eq!(g["name_source"], "nvidia-driver");
    assert_eq!(g["vendor_name"], "NVIDIA Corporation");
    // The NVML facts the capture stored: index, (redacted) UUID, the driver's record.
    let attrs: Vec<(String, String)> = g["os_devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "nvidia_gpu")
        .flat_map(|o| o["attrs"].as_array().unwrap().iter())
        .map(|a| {
            (
                a[0].as_str().unwrap().to_string(),
                a[1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let attr = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
    assert_eq!(attr("nvml_index"), Some("0"));
    assert_eq!(attr("GPU Firmware"), Some("580.159.04"));
    assert_eq!(attr("Bus Location"), Some("0000:00:06.0"));
    assert_eq!(attr("uuid"), Some("(redacted by peerpath capture)"));
    assert_eq!(json["nvlink_visible"], true);
}

/// A database that knows the card wins, and then nothing says otherwise.
#[test]
fn pci_ids_name_wins_when_it_has_one() {
    let (tree, json) = scan(Some("GH100 [H200 SXM 141GB]"));
    assert!(
        tree.contains("GPU 0000:00:06.0 \"NVIDIA Corporation GH100 [H200 SXM 141GB]\" [32.0"),
        "{tree}"
    );
    assert!(gpu(&json).get("name_source").is_none());
}

/// Strips the terminal escapes nvidia-smi puts around its header (`ESC[4m … ESC[0m`).
fn strip_escapes(s: &str) -> String {
    let re = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
    re.replace_all(s, "").into_owned()
}

/// `peerpath matrix` of the capture is the saved `nvidia-smi topo -m` of the same machine, byte
/// for byte (header, GPU row with its CPU and NUMA affinity and GPU NUMA ID, legend), once the
/// NIC column nvidia-smi omits (eth0: no RDMA device on the node) and what follows the legend
/// are taken out. docs/matrix.md says why that column is shown.
#[test]
fn matrix_is_nvidia_smis_plus_the_eth0_column() {
    let ours = ok(&["matrix", "-i", &capture()]);
    let smi =
        strip_escapes(&std::fs::read_to_string(real("h200-vm.nvidia-smi-topo-m.txt")).unwrap());
    let mut lines = ours.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let drop: Vec<usize> = (0..header.len())
        .filter(|&i| header[i].starts_with("NIC"))
        .collect();
    assert_eq!(drop.len(), 1, "one NIC column: {header:?}");
    // Rows carry one cell more than the header (the empty one before `GPU NUMA ID`), after the
    // NIC columns: dropping by index keeps it.
    let pick = |l: &str| -> String {
        l.split('\t')
            .enumerate()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, c)| c)
            .collect::<Vec<_>>()
            .join("\t")
    };
    let mut rebuilt = vec![pick(&header.join("\t"))];
    for l in ours.lines().skip(1) {
        if l.starts_with("NIC") && l.contains('\t') {
            continue; // the NIC row
        }
        if l == "NIC Legend:" {
            break;
        }
        rebuilt.push(if l.starts_with("GPU") {
            pick(l)
        } else {
            l.to_string()
        });
    }
    let rebuilt = rebuilt.join("\n");
    assert_eq!(rebuilt.trim_end(), smi.trim_end());
    // What the extra column is, said below the legends as docs/matrix.md promises.
    assert!(ours.contains("NIC Legend:\n\n  NIC0: eth0\n"), "{ours}");
    assert!(ours.contains(
        "no RDMA device in this input: NIC columns are network functions in PCI address order (nvidia-smi lists RDMA devices only)"
    ));
    let gpu0: Vec<&str> = ours.lines().nth(1).unwrap().split('\t').collect();
    assert_eq!(gpu0[2], "PHB", "GPU0 to eth0 across the root complex");
}

/// docs/audit.md, "A VM with a GPU and no RDMA device": PASS (exit 0); the `virtualized`
/// warning; `gdr-peer-module` and `gpu-nic-path` as info saying there is nothing to judge;
/// unknown only for what the VM does not expose (AER counters here); GPUDirect RDMA not ready,
/// which the exports carry.
#[test]
fn audit_gives_what_the_docs_promise_for_a_gpu_vm_without_rdma() {
    let c = capture();
    let (code, out) = run(&["audit", "-i", &c, "--format", "json"]);
    assert_eq!(code, 0, "{out}");
    let a: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(a["verdict"], "pass");
    let got: Vec<(String, String)> = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("virtualized", "warning"),
        ("aer-errors", "unknown"),
        ("gdr-peer-module", "info"),
        ("gds-kernel", "info"),
        ("gpu-nic-path", "info"),
        ("nccl-settings", "info"),
    ]
    .iter()
    .map(|(i, s)| (i.to_string(), s.to_string()))
    .collect();
    assert_eq!(got, want);
    let summary = |id: &str| {
        a["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap()["summary"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        summary("gdr-peer-module"),
        "GPUDirect RDMA not applicable: 1 NVIDIA GPU(s), 0 RDMA NIC(s)"
    );
    assert!(summary("gpu-nic-path").contains("no GPU–NIC path to judge"));
    // Captured before capture kept /etc/cufile.json: GDS said absent from nvidia-fs, and the
    // file not in the input (fixtures/gds/h200-vm-gds.tar.gz is the same VM with it).
    assert_eq!(
        summary("gds-kernel"),
        "no GPUDirect Storage on this node: nvidia-fs is not loaded (/etc/cufile.json is not in this input), and no NVMe drive; a program using cuFile reads through host memory (compat mode)"
    );
    assert_eq!(a["pairs"].as_array().unwrap().len(), 0);
    let nfd = ok(&["export", "-i", &c, "--format", "nfd"]);
    assert!(nfd.contains("peerpath.io/gdr-ready=false\n"), "{nfd}");
    // No RDMA NIC: no GPU–NIC path for GPUDirect, whatever the placement names for sockets
    // (the label once said PHB, the path to the VM's virtio eth0).
    assert!(nfd.contains("peerpath.io/rdma-nic-count=0\n"), "{nfd}");
    assert!(nfd.contains("peerpath.io/worst-gpu-nic=none\n"), "{nfd}");
    let prom = ok(&["export", "-i", &c, "--format", "prom"]);
    assert!(prom.contains("\npeerpath_gdr_ready 0\n"), "{prom}");
}
