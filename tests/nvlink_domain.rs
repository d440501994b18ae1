//! Which NVLink domain each node's GPUs are in (issue 52): NVML's fabric registration as the
//! real files show it (the H200 VM's `nvidia-smi -q` text and XML, all `N/A`; published GB200
//! excerpts), a capture that predates the record, and a synthesized NVL72 fleet whose trays
//! fall into one domain per rack.

mod common;

use peerpath::analysis::nvdomain::{self, HostDomain, Membership};
use peerpath::model::nvfabric::FabricState;
use peerpath::parse::nvsmi_fabric;
use peerpath::sources::{self, LoadOptions};
use std::path::{Path, PathBuf};

fn fixture(p: &str) -> PathBuf {
    common::repo().join("fixtures").join(p)
}

fn load(p: &Path) -> peerpath::model::Topology {
    sources::load(
        Some(p),
        &LoadOptions {
            skip_names: true,
            ..Default::default()
        },
    )
    .unwrap()
}

/// The real H200 capture predates the record: its GPU's domain is unknown, "not captured";
/// with the machine's own `nvidia-smi -q` (text, then XML) beside it, the all-`N/A` Fabric
/// section is a fact: no NVLink domain, with the file and line.
#[test]
fn h200_nvidia_smi_q_beside_the_capture_says_no_domain() {
    let (_g, root) = common::extract(&fixture("real/h200-vm.tar.gz"));
    match nvdomain::host_domain(&load(&root)) {
        HostDomain::Unknown { reason } => assert!(reason.contains("not captured"), "{reason}"),
        other => panic!("{other:?}"),
    }
    for (src, name, line) in [
        ("h200-vm.nvidia-smi-q.txt", "nvidia-smi-q.txt", "line 241"),
        ("h200-vm.nvidia-smi-q.xml", "nvidia-smi-q.xml", "line 298"),
    ] {
        let beside = root.join(name);
        std::fs::copy(fixture("real").join(src), &beside).unwrap();
        let t = load(&root);
        let gpu = t
            .devices
            .iter()
            .find(|d| d.bdf.to_string() == "0000:00:06.0")
            .unwrap();
        let f = gpu.nvlink_fabric.as_ref().unwrap().known().unwrap();
        assert_eq!(f.state, FabricState::NotAvailable, "{name}");
        match nvdomain::host_domain(&t) {
            HostDomain::NoDomain { reason } => {
                assert!(reason.contains(name) && reason.contains(line), "{reason}")
            }
            other => panic!("{name}: {other:?}"),
        }
        std::fs::remove_file(&beside).unwrap();
    }
}

/// A GB200 node's published Fabric section: completed, Success, clique 2 → the domain
/// `dc6e40c4-d722-4357-9ba6-5291dd461278.2`; a registration completed with `Insufficient
/// Resources` (clique 0, zero UUID) is unknown, naming the status, never a domain.
#[test]
fn published_fabric_sections() {
    let text = std::fs::read_to_string(fixture(
        "nvfabric/gb200-dra-driver-626.nvidia-smi-q-fabric.txt",
    ))
    .unwrap();
    let s = nvsmi_fabric::sections(&text, "gb200");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].gpu, None);
    match nvdomain::membership(&s[0].fabric) {
        Membership::Domain { id } => {
            assert_eq!(id.to_string(), "dc6e40c4-d722-4357-9ba6-5291dd461278.2")
        }
        other => panic!("{other:?}"),
    }
    let text = std::fs::read_to_string(fixture(
        "nvfabric/azhpc-506-insufficient-resources.nvidia-smi-q-fabric.txt",
    ))
    .unwrap();
    let s = nvsmi_fabric::sections(&text, "azure");
    assert_eq!(s.len(), 1);
    match nvdomain::membership(&s[0].fabric) {
        Membership::Unknown { reason } => {
            assert!(reason.contains("Insufficient Resources"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

/// Two synthesized NVL72 racks (36 tray captures): every tray in its rack's domain, one
/// domain per rack of 18 hosts, none unknown or disagreeing.
#[test]
fn synthesized_nvl72_fleet_gives_one_domain_per_rack() {
    use peerpath::synth::nvl72;
    let dir = tempfile::tempdir().unwrap();
    let paths = nvl72::write_fleet(dir.path(), 2).unwrap();
    assert_eq!(paths.len(), 36);
    let topos: Vec<(String, peerpath::model::Topology)> = paths
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            (name.trim_end_matches(".tar.gz").to_string(), load(p))
        })
        .collect();
    let map = nvdomain::domains(topos.iter().map(|(h, t)| (h.as_str(), t)));
    let blocks = map.blocks();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    for (r, (id, hosts)) in blocks.iter().enumerate() {
        assert_eq!(id.cluster_uuid, nvl72::rack_uuid(r + 1));
        assert_eq!(id.clique_id, nvl72::DEFAULT_CLIQUE);
        assert_eq!(hosts.len(), nvl72::TRAYS_PER_RACK);
        assert!(
            hosts
                .iter()
                .all(|h| h.starts_with(&format!("nvl72-r{:02}-", r + 1)))
        );
    }
    assert_eq!(map.unknown().count(), 0);
    assert_eq!(map.disagreeing().count(), 0);
    assert_eq!(
        map.domain_of("nvl72-r02-t18").map(|d| d.to_string()),
        Some(format!("{}.32766", nvl72::rack_uuid(2)))
    );
}

/// A tray whose GPUs are in different domains is named as disagreeing, never put in a block;
/// a GPU whose registration is in progress makes its host unknown.
#[test]
fn disagreeing_and_unfinished_hosts_are_named() {
    use peerpath::model::Fact;
    use peerpath::synth::nvl72;
    let mut t = load_tray(1);
    let other = nvl72::rack_uuid(9);
    let gpu = t
        .devices
        .iter_mut()
        .find(|d| d.nvlink_fabric.is_some())
        .unwrap();
    let mut f = gpu.nvlink_fabric.clone().unwrap().known().unwrap().clone();
    f.cluster_uuid = Some(other);
    gpu.nvlink_fabric = Some(Fact::Known(f.clone()));
    let good = load_tray(2);
    let map = nvdomain::domains([("bad", &t), ("good", &good)]);
    let bad: Vec<_> = map.disagreeing().collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].0, "bad");
    assert_eq!(bad[0].1.len(), 2, "{:?}", bad[0].1);
    assert_eq!(map.blocks().len(), 1);
    // Registration in progress on one GPU: unknown, naming the state.
    let mut t = load_tray(1);
    let gpu = t
        .devices
        .iter_mut()
        .find(|d| d.nvlink_fabric.is_some())
        .unwrap();
    f.state = FabricState::InProgress;
    gpu.nvlink_fabric = Some(Fact::Known(f));
    match nvdomain::host_domain(&t) {
        HostDomain::Unknown { reason } => assert!(reason.contains("IN_PROGRESS"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// One synthesized tray of rack `rack`, loaded from its capture.
fn load_tray(rack: usize) -> peerpath::model::Topology {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tray.tar.gz");
    let mut f = std::fs::File::create(&p).unwrap();
    peerpath::synth::nvl72::write_tray(rack, 1, &mut f).unwrap();
    drop(f);
    load(&p)
}

/// `peerpath fixture nvl72-fleet-1` writes 18 captures and `scan` prints each one's domain.
#[test]
fn fixture_command_writes_a_rack_and_scan_shows_its_domain() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::peerpath()
        .args(["fixture", "nvl72-fleet-1", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 18);
    let scan = common::peerpath()
        .args(["scan", "-i"])
        .arg(dir.path().join("nvl72-r01-t05.tar.gz"))
        .output()
        .unwrap();
    let text = String::from_utf8(scan.stdout).unwrap();
    assert!(
        text.contains("NVLink domain: 5e17c0de-0000-4000-8000-000000000001.32766 (4 GPUs;"),
        "{text}"
    );
}
