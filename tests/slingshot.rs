//! HPE Slingshot (Cassini) nodes: what `place` exports for a rank's NIC, and the link state
//! `audit` (`nic-port-down`) reads for a Cassini NIC.
//!
//! Inputs: the synthesized HPE Cray EX A100 node (`peerpath fixture cray-ex-a100`: CXI devices
//! `cxi<N>` under `/sys/class/cxi`, Ethernet netdevs `hsn<N>`), LLNL Tioga's hwloc XML (real:
//! hwloc 2.8 names each Cassini `hsi<N>`, its netdev) and RCCL's `topo_4p_942.xml` (real: NCCL
//! XML naming the CXI devices `cxi<N>`), and synthesized sysfs trees for the link state
//! (fixtures/platforms/README.md cites the driver's attribute definitions).

use peerpath::analysis::place::{self, PlaceOptions, Placement};
use peerpath::model::Topology;
use peerpath::render;
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{self, WriteOptions, layouts};
use std::path::Path;

fn load(path: &Path) -> Topology {
    sources::load(Some(path), &LoadOptions::default()).unwrap()
}

fn plan(t: &Topology, n: usize) -> Placement {
    place::plan(
        t,
        &PlaceOptions {
            ranks: n,
            cores_per_rank: None,
        },
    )
    .unwrap()
}

fn cray_ex() -> (tempfile::TempDir, Topology) {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("cray-ex-a100.tar.gz");
    synth::write_tarball(&layouts::cray_ex_a100(), &tar, &WriteOptions::default()).unwrap();
    let t = load(&tar);
    (dir, t)
}

/// No rank of a Slingshot plan is given a variable only verbs or UCX read.
fn no_verbs_variables(p: &Placement) {
    for r in &p.ranks {
        for k in ["NCCL_IB_HCA", "UCX_NET_DEVICES"] {
            assert!(
                !r.env.contains_key(k),
                "rank {}: {k} in {:?}",
                r.rank,
                r.env
            );
        }
    }
}

/// Before: every rank got `NCCL_IB_HCA==cxiN` and `UCX_NET_DEVICES=cxiN:1`, which nothing on
/// Slingshot reads. After: `FI_CXI_DEVICE_NAME=cxiN`, the libfabric cxi provider's own filter,
/// and the reason for the rest in every output.
#[test]
fn cray_ex_ranks_get_their_cxi_device_for_libfabric() {
    let (_d, t) = cray_ex();
    let p = plan(&t, 4);
    no_verbs_variables(&p);
    for r in &p.ranks {
        let nic = r.nic.as_deref().unwrap();
        assert!(nic.starts_with("cxi"), "{nic}");
        assert_eq!(
            r.env.get("FI_CXI_DEVICE_NAME").map(String::as_str),
            Some(nic)
        );
        assert_eq!(r.env_notes.len(), 1, "{:?}", r.env_notes);
        assert!(r.env_notes[0].contains("NCCL_IB_HCA and UCX_NET_DEVICES left out"));
    }
    assert!(
        !p.notes.iter().any(|n| n.contains("RDMA port of")),
        "{:?}",
        p.notes
    );
    let env = render::place::env(&p, Some(0));
    let nic0 = p.ranks[0].nic.clone().unwrap();
    assert!(
        env.contains(&format!("export FI_CXI_DEVICE_NAME={nic0}\n")),
        "{env}"
    );
    assert!(
        env.lines()
            .any(|l| l.starts_with("# FI_CXI_DEVICE_NAME=") && l.contains("left out")),
        "{env}"
    );
    let slurm = render::place::slurm(&p);
    assert!(
        slurm.contains("# local rank 0: FI_CXI_DEVICE_NAME="),
        "{slurm}"
    );
    assert!(!slurm.contains(" NCCL_IB_HCA="), "{slurm}");
    let json = render::place::json(&p).unwrap();
    assert!(json.contains("\"env_notes\""), "{json}");
    let text = render::place::text(&p);
    assert!(text.contains("  env: FI_CXI_DEVICE_NAME="), "{text}");
}

/// Before: `NCCL_IB_HCA==hsi0`, `UCX_NET_DEVICES=hsi0:1` and a note that port 1 was assumed.
/// hwloc 2.8 names each Cassini by its netdev (`hsi<N>`), so the CXI device is unknown: no NIC
/// variable at all, with the reason.
#[test]
fn tioga_hwloc_exports_no_nic_variable_and_says_why() {
    let t = load(Path::new(
        "fixtures/platforms/hpe-cray-ex235a-tioga-4xmi250x-4cassini.hwloc2.xml",
    ));
    let p = plan(&t, 4);
    no_verbs_variables(&p);
    for r in &p.ranks {
        assert!(!r.env.contains_key("FI_CXI_DEVICE_NAME"), "{:?}", r.env);
        assert!(r.env.contains_key("ROCR_VISIBLE_DEVICES"));
        let nic = r.nic.as_deref().unwrap();
        assert!(
            r.env_notes[0].starts_with("FI_CXI_DEVICE_NAME left out")
                && r.env_notes[0].contains(nic),
            "{:?}",
            r.env_notes
        );
    }
    assert!(
        !p.notes.iter().any(|n| n.contains("RDMA port of")),
        "{:?}",
        p.notes
    );
    let env = render::place::env(&p, None);
    assert!(!env.contains("export NCCL_IB_HCA"), "{env}");
    assert!(env.contains("# FI_CXI_DEVICE_NAME left out"), "{env}");
}

/// RCCL's model of the MI300A node names each NIC by its CXI device (`<net name="cxi0">`).
#[test]
fn rccl_topology_names_the_cxi_devices() {
    let t = load(Path::new(
        "fixtures/platforms/rccl-topo_4p_942-mi300a-4apu-4cxi.xml",
    ));
    let p = plan(&t, 4);
    no_verbs_variables(&p);
    let mut got: Vec<&str> = p
        .ranks
        .iter()
        .map(|r| r.env["FI_CXI_DEVICE_NAME"].as_str())
        .collect();
    got.sort_unstable();
    assert_eq!(got, ["cxi0", "cxi1", "cxi2", "cxi3"]);
}
