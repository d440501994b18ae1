//! `audit --job` with the job's own `NCCL_TOPO_FILE` (issue 54): GPUDirect RDMA judged on the
//! tree NCCL reads from the file, as NCCL merges it with what it detects, beside the node's
//! own tree. The file is Azure's published ND H100 v5 topology
//! (`fixtures/nccl/azure-ndv5-h100-azhpc-images.nccl-topo.xml`, source in that folder's
//! README); the nodes are synthesized (labelled so): a Hyper-V guest's flat tree, every GPU and
//! IB VF in its own PCI domain, at the bus ids that file lists.

use peerpath::analysis::testkit::TopoBuilder;
use std::path::{Path, PathBuf};
use std::process::Command;

const GPUS: [&str; 8] = [
    "0001:00:00.0",
    "0002:00:00.0",
    "0003:00:00.0",
    "0008:00:00.0",
    "0009:00:00.0",
    "000a:00:00.0",
    "000b:00:00.0",
    "000c:00:00.0",
];

fn ndv5_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/nccl/azure-ndv5-h100-azhpc-images.nccl-topo.xml")
}

/// A synthesized ND H100 v5-shaped guest: GPU k at `GPUS[k]`, IB VF k at `01(k+1):00:00.0`
/// (`mlx5_ib<k>`), each on its own host bridge with no bridge above it; GPUs 0–3 on NUMA node
/// 0, 4–7 on 1. `nic_numa` gives each VF's NUMA node.
fn guest(nic_numa: impl Fn(usize) -> u32) -> String {
    let mut b = TopoBuilder::new(&["0-47", "48-95"]).cpu("GenuineIntel", 6, 143);
    for (k, g) in GPUS.iter().enumerate() {
        b.gpu(g, None, Some((k / 4) as u32));
        b.nic(
            &format!("01{:02x}:00:00.0", k + 1),
            None,
            Some(nic_numa(k)),
            &[&format!("mlx5_ib{k}")],
        );
    }
    serde_json::to_string(&b.build()).unwrap()
}

/// [`guest`] whose `/etc/nccl.conf` (as the scan records it) names `NCCL_TOPO_FILE`, as
/// Azure's HPC images write it.
fn guest_with_conf() -> String {
    use peerpath::model::nccl_settings::{ConfFile, ConfFileState, NcclSetting, SettingSource};
    let mut t: peerpath::model::Topology =
        serde_json::from_str(&guest(|k| (k / 4) as u32)).unwrap();
    t.machine.nccl.entries.push(NcclSetting {
        name: "NCCL_TOPO_FILE".into(),
        value: "/opt/microsoft/ndv5/topo.xml".into(),
        source: SettingSource::File {
            path: "/etc/nccl.conf".into(),
            line: 1,
        },
    });
    t.machine.nccl.files.push(ConfFile {
        path: "/etc/nccl.conf".into(),
        role: "/etc/nccl.conf".into(),
        state: ConfFileState::Read(1),
    });
    serde_json::to_string(&t).unwrap()
}

/// `peerpath audit -i <node> --job` under `NCCL_TOPO_FILE=file` (no other NCCL variable).
fn audit(node: &str, file: Option<&Path>) -> (i32, String) {
    audit_with(node, file, &[])
}

/// [`audit`] with more arguments.
fn audit_with(node: &str, file: Option<&Path>, more: &[&str]) -> (i32, String) {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("node.json");
    std::fs::write(&input, node).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_peerpath"));
    c.args(["audit", "-i", input.to_str().unwrap(), "--job"])
        .args(more)
        .env("PCI_IDS", "/nonexistent/pci.ids");
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("NCCL_")) {
        c.env_remove(k);
    }
    if let Some(f) = file {
        c.env("NCCL_TOPO_FILE", f);
    }
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

/// The node the file describes: each GPU and its VF on one NUMA node (NODE on the guest's
/// flat tree, PHB to NCCL: no GDR by NCCL's default), one invented switch in the file (PIX:
/// GDR on). Without the file every GPU is staged; with it, every pair is judged on the file.
#[test]
fn the_azure_file_is_the_tree_ndv5_pairs_are_judged_on() {
    let node = guest(|k| (k / 4) as u32);
    let (_, bare) = audit(&node, None);
    assert!(bare.contains("does not use GPUDirect RDMA"), "{bare}");
    let file = ndv5_file();
    let (_, out) = audit(&node, Some(&file));
    if std::env::var_os("SHOW").is_some() {
        println!("{out}");
    }
    let said = format!("judged on NCCL_TOPO_FILE={}, as NCCL will", file.display());
    assert_eq!(out.matches(&said).count(), 8, "{out}");
    assert!(!out.contains("does not use GPUDirect RDMA"), "{out}");
    assert!(
        out.contains("the node's own tree has them NODE: PHB"),
        "{out}"
    );
    assert!(out.contains("under ffff:ff:01.0 in the file"), "{out}");
    assert!(
        out.contains("it decides 64 of 64 (8 differ from the node's own tree)"),
        "{out}"
    );
    assert!(!out.contains("different CPUs"), "{out}");
    // The matching pairs each GPU with the VF the file puts behind its switch, with GDR.
    let (_, json) = audit_with(&node, Some(&file), &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let pairs: Vec<(String, String, bool)> = v["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["gpu"].as_str().unwrap().to_string(),
                p["nic"].as_str().unwrap().to_string(),
                p["gdr"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    let want: Vec<(String, String, bool)> = GPUS
        .iter()
        .enumerate()
        .map(|(k, g)| (g.to_string(), format!("01{:02x}:00:00.0", k + 1), true))
        .collect();
    assert_eq!(pairs, want, "{json}");
}

/// A node the file does not describe: its VFs on the other NUMA node. The file puts each GPU
/// and a VF behind one switch (PIX: NCCL takes it as local and uses GDR), the node's tree has
/// them across the CPUs (SYS): what the operator needs to hear.
#[test]
fn a_file_that_pairs_devices_across_cpus_is_named_per_pair() {
    let node = guest(|k| 1 - (k / 4) as u32);
    let (_, out) = audit(&node, Some(&ndv5_file()));
    if std::env::var_os("SHOW").is_some() {
        println!("{out}");
    }
    assert_eq!(
        out.matches("but the node's own tree has them on different CPUs (SYS)")
            .count(),
        8,
        "{out}"
    );
    assert!(
        out.contains("0001:00:00.0 and 0101:00:00.0 (mlx5_ib0) at PIX"),
        "{out}"
    );
    assert!(
        out.contains("the node's own tree has them SYS: SYS"),
        "{out}"
    );
}

/// A file NCCL_TOPO_FILE names that cannot be read as NCCL XML: every pair is unknown with the
/// reason, never a GDR verdict from the node's tree; a file that does not exist leaves NCCL
/// to detect the tree itself (the node's verdicts stand).
#[test]
fn an_unreadable_file_leaves_the_pairs_unknown() {
    let node = guest(|k| (k / 4) as u32);
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("topo.xml");
    std::fs::write(&bad, "<system version=\"1\"><cpu numaid=\"0\"><pci busid=").unwrap();
    let (_, out) = audit(&node, Some(&bad));
    assert_eq!(
        out.matches("whether it uses GPUDirect RDMA here is unknown")
            .count(),
        8,
        "{out}"
    );
    assert!(
        out.contains("[job-topo-file] node: NCCL_TOPO_FILE="),
        "{out}"
    );
    assert!(out.contains("could not be read here"), "{out}");
    assert!(!out.contains("does not use GPUDirect RDMA"), "{out}");
    assert!(!out.contains("uses GPUDirect RDMA on this pair"), "{out}");
    let (_, gone) = audit(&node, Some(&d.path().join("absent.xml")));
    assert!(
        gone.contains("NCCL warns and detects the topology itself"),
        "{gone}"
    );
    assert!(gone.contains("does not use GPUDirect RDMA"), "{gone}");
}

/// `NCCL_TOPO_FILE` naming a directory: NCCL opens it as a file and fails; peerpath says so and
/// never reads the directory as an input of its own (a sysfs tree there would have been scanned
/// and then refused as "a sysfs file", and `/` would have scanned this machine).
#[test]
fn a_directory_named_as_the_file_is_not_read_as_a_tree() {
    let node = guest(|k| (k / 4) as u32);
    let d = tempfile::tempdir().unwrap();
    let (_, out) = audit(&node, Some(d.path()));
    assert!(out.contains("a directory, not a file"), "{out}");
    assert_eq!(
        out.matches("whether it uses GPUDirect RDMA here is unknown")
            .count(),
        8,
        "{out}"
    );
}

/// A snapshot whose `/etc/nccl.conf` names the file (the environment does not): NCCL reads the
/// file on the node, which the input does not hold, so every pair is unknown, with where the
/// setting is — never the node's own tree's verdict.
#[test]
fn a_file_named_in_the_inputs_nccl_conf_is_not_read_from_this_machine() {
    let (_, out) = audit(&guest_with_conf(), None);
    assert_eq!(
        out.matches("whether it uses GPUDirect RDMA here is unknown")
            .count(),
        8,
        "{out}"
    );
    assert!(
        out.contains("named in /etc/nccl.conf of the input; the file is on the node"),
        "{out}"
    );
    assert!(
        out.contains("/etc/nccl.conf line 1 = NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml"),
        "{out}"
    );
    assert!(!out.contains("does not use GPUDirect RDMA"), "{out}");
}
