//! HPE Slingshot (Cassini) nodes: what `place` exports for a rank's NIC, and the link state
//! `audit` (`nic-port-down`) reads for a Cassini NIC.
//!
//! Inputs: the synthesized HPE Cray EX A100 node (`peerpath fixture cray-ex-a100`: CXI devices
//! `cxi<N>` under `/sys/class/cxi`, Ethernet netdevs `hsn<N>`), LLNL Tioga's hwloc XML (real:
//! hwloc 2.8 names each Cassini `hsi<N>`, its netdev) and RCCL's `topo_4p_942.xml` (real: NCCL
//! XML naming the CXI devices `cxi<N>`), and synthesized sysfs trees for the link state
//! (fixtures/platforms/README.md cites the driver's attribute definitions).

mod common;

use common::{load_spec, place_plan as plan};
use peerpath::analysis::audit;
use peerpath::analysis::place::Placement;
use peerpath::model::Topology;
use peerpath::render;
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{self, WriteOptions, layouts};
use std::path::Path;

fn load(path: &Path) -> Topology {
    sources::load(Some(path), &LoadOptions::default()).unwrap()
}

fn cray_ex() -> (tempfile::TempDir, Topology) {
    load_spec(&layouts::cray_ex_a100())
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

/// The `nic-port-down` findings of a topology.
fn port_findings(t: &Topology) -> Vec<audit::Finding> {
    audit::run(t, &audit::AuditOptions::default())
        .findings
        .into_iter()
        .filter(|f| f.id == audit::CheckId::NicPortDown)
        .collect()
}

/// The synthesized Cray EX A100 node as a sysfs directory, after `edit` (SYNTHESIZED: the
/// attribute names and values follow shs-cxi-driver and the kernel's netdev ABI; see
/// fixtures/platforms/README.md, "Synthesized Cassini link states").
fn cray_ex_tree(edit: impl FnOnce(&Path)) -> (tempfile::TempDir, Topology) {
    let dir = tempfile::tempdir().unwrap();
    synth::write_tree(
        &layouts::cray_ex_a100(),
        dir.path(),
        &WriteOptions::default(),
    )
    .unwrap();
    edit(dir.path());
    let t = load(dir.path());
    (dir, t)
}

/// The PCI function directory of a Cassini's CXI device in a sysfs tree.
fn function_dir(root: &Path, cxi: &str) -> std::path::PathBuf {
    let link = root.join("sys/class/cxi").join(cxi).join("device");
    std::fs::canonicalize(link).unwrap()
}

/// Before: `port state of cxiN unknown: no ports read` for every Cassini. After: the driver's
/// `properties/link` (1) and the netdev's `operstate` (up) are read, and an up link is no
/// finding.
#[test]
fn cassini_links_up_are_judged_not_unknown() {
    let (_d, t) = cray_ex_tree(|_| {});
    let f = port_findings(&t);
    assert!(f.is_empty(), "{f:#?}");
    let cxi = t
        .devices
        .iter()
        .flat_map(|d| d.os_devices.iter())
        .filter(|o| o.name.starts_with("cxi"))
        .collect::<Vec<_>>();
    assert_eq!(cxi.len(), 4);
    assert!(cxi.iter().all(|o| o.cxi_link == Some(true)), "{cxi:?}");
}

/// A Cassini whose driver says the PHY is not running (`properties/link` 0) and whose netdev
/// is down: a fact, an error on a NIC paired with a GPU, with both paths and raw values.
#[test]
fn cassini_link_down_is_a_fact_with_its_evidence() {
    let (_d, t) = cray_ex_tree(|root| {
        let fd = function_dir(root, "cxi0");
        std::fs::write(fd.join("properties/link"), "0\n").unwrap();
        let hsn = std::fs::read_dir(fd.join("net"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        std::fs::write(hsn.path().join("operstate"), "down\n").unwrap();
    });
    let f = port_findings(&t);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].subject.to_string(), "cxi0");
    assert_eq!(f[0].severity, audit::Severity::Error, "{:#?}", f[0]);
    assert!(f[0].summary.contains("link is down"), "{}", f[0].summary);
    assert!(f[0].summary.contains("libfabric"), "{}", f[0].summary);
    let ev: Vec<(&str, &str)> = f[0]
        .evidence
        .iter()
        .map(|e| (e.path.as_str(), e.value.as_str()))
        .collect();
    assert!(
        ev.iter()
            .any(|(p, v)| p.ends_with("/properties/link") && *v == "0"),
        "{ev:?}"
    );
    assert!(
        ev.iter()
            .any(|(p, v)| p.starts_with("/sys/class/net/hsn") && *v == "down"),
        "{ev:?}"
    );
}

/// `operstate` `unknown` defers to the carrier, as libfabric's `netdev_link` does: carrier 0 is
/// a link down even where the driver's file was not captured.
#[test]
fn cassini_unknown_operstate_reads_the_carrier() {
    let (_d, t) = cray_ex_tree(|root| {
        let fd = function_dir(root, "cxi1");
        std::fs::remove_file(fd.join("properties/link")).unwrap();
        let hsn = std::fs::read_dir(fd.join("net"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        std::fs::write(hsn.path().join("operstate"), "unknown\n").unwrap();
        std::fs::write(hsn.path().join("carrier"), "0\n").unwrap();
    });
    let f = port_findings(&t);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].subject.to_string(), "cxi1");
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.path.ends_with("/carrier") && e.value == "0"),
        "{:#?}",
        f[0]
    );
}

/// hwloc XML carries no link state: each Cassini stays unknown, and the finding says why.
#[test]
fn cassini_link_unknown_in_hwloc_says_why() {
    let t = load(Path::new(
        "fixtures/platforms/hpe-cray-ex235a-tioga-4xmi250x-4cassini.hwloc2.xml",
    ));
    let f = port_findings(&t);
    assert_eq!(f.len(), 4, "{f:#?}");
    for x in &f {
        assert_eq!(x.severity, audit::Severity::Unknown);
        assert!(
            x.summary.contains("has no InfiniBand ports") && x.summary.contains("hwloc"),
            "{}",
            x.summary
        );
    }
}

/// RCCL's NCCL XML gives each Cassini a port with the plugin's speed number
/// (`speed="200000000"`) and no state: the link stays unknown with the reason, and that number
/// is not judged as an InfiniBand rate (before this test: "PCIe link … cannot carry the port rate
/// 200000 Gb/s" on every Cassini).
#[test]
fn cassini_in_nccl_xml_is_unknown_not_a_bogus_rate() {
    let t = load(Path::new(
        "fixtures/platforms/rccl-topo_4p_942-mi300a-4apu-4cxi.xml",
    ));
    let f = port_findings(&t);
    assert_eq!(f.len(), 4, "{f:#?}");
    for x in &f {
        assert_eq!(x.severity, audit::Severity::Unknown, "{x:#?}");
        assert!(x.summary.contains("nccl-xml"), "{}", x.summary);
    }
}
