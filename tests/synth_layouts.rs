//! Each synthesized layout, written to disk (and as a tarball), scanned back by peerpath's own
//! scanner: devices, parents, kinds, switches, NUMA nodes, links and class devices must match
//! the spec, and the layout-specific facts (pairs, misplaced NIC, VM flattening, faults) hold.

use peerpath::model::bdf::Bdf;
use peerpath::model::device::DeviceKind;
use peerpath::model::topology::SourceInfo;
use peerpath::model::topology::Topology;
use peerpath::sources::sysfs::{self, ScanOptions};
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::verify::{VerifyOptions, differences};
use peerpath::synth::{self, Spec, WriteOptions, layouts};

/// Writes the spec's tree as a tarball and loads it the way `peerpath scan -i` does
/// (`sources::load`, content detection, in-memory snapshot). The directory writer is covered by
/// `directory_scans_like_memory` and the tool cross-checks.
fn scan_dir(spec: &Spec, opts: WriteOptions) -> (tempfile::TempDir, Topology) {
    let dir = tempfile::tempdir().unwrap();
    let tgz = dir.path().join("tree.tar.gz");
    synth::write_tarball(spec, &tgz, &opts).unwrap();
    let topo = sources::load(Some(&tgz), &LoadOptions::default()).unwrap();
    (dir, topo)
}

/// The same tree scanned straight from memory (no names, no disk).
fn scan_mem(spec: &Spec, opts: WriteOptions) -> Topology {
    let root = synth::to_mem_root(spec, &opts).unwrap();
    let src = SourceInfo {
        kind: "synth".into(),
        path: spec.name.clone(),
        limitations: vec![],
    };
    sysfs::scan(&root, src, &ScanOptions::default()).unwrap()
}

#[test]
fn directory_scans_like_memory() {
    let spec = layouts::misplaced_nic();
    let dir = tempfile::tempdir().unwrap();
    synth::write_tree(&spec, dir.path(), &WriteOptions::default()).unwrap();
    let t = sources::load(Some(dir.path()), &LoadOptions::default()).unwrap();
    assert_matches(&spec, &t, true);
    // Same scan options (no pci.ids names) for the directory and the in-memory tree.
    let src = SourceInfo {
        kind: "synth".into(),
        path: String::new(),
        limitations: vec![],
    };
    let t = sysfs::scan(
        &peerpath::sources::fsroot::DirRoot::new(dir.path()),
        src,
        &ScanOptions::default(),
    )
    .unwrap();
    let m = scan_mem(&spec, WriteOptions::default());
    let strip = |t: &Topology| {
        let mut v = serde_json::to_value(t).unwrap();
        v.as_object_mut().unwrap().remove("source");
        v
    };
    assert!(
        strip(&t) == strip(&m),
        "directory and in-memory scans differ"
    );
    // The bus entries are relative links into sys/devices, as the kernel writes them.
    let link = std::fs::read_link(dir.path().join("sys/bus/pci/devices/0000:e1:00.0")).unwrap();
    assert_eq!(
        link.to_str().unwrap(),
        "../../../devices/pci0000:e0/0000:e0:01.0/0000:e1:00.0"
    );
    let drv = std::fs::read_link(
        dir.path()
            .join("sys/devices/pci0000:e0/0000:e0:01.0/0000:e1:00.0/driver"),
    )
    .unwrap();
    assert_eq!(
        drv.to_str().unwrap(),
        "../../../../bus/pci/drivers/mlx5_core"
    );
    let ib = std::fs::read_link(dir.path().join("sys/class/infiniband/mlx5_3")).unwrap();
    assert_eq!(
        ib.to_str().unwrap(),
        "../../devices/pci0000:e0/0000:e0:01.0/0000:e1:00.0/infiniband/mlx5_3"
    );
    let port = dir.path().join("sys/class/infiniband/mlx5_3/ports/1");
    assert_eq!(
        std::fs::read_to_string(port.join("state")).unwrap(),
        "4: ACTIVE\n"
    );
    assert_eq!(
        std::fs::read_to_string(port.join("phys_state")).unwrap(),
        "5: LinkUp\n"
    );
    assert_eq!(
        std::fs::read_to_string(port.join("rate")).unwrap(),
        "400 Gb/sec (4X NDR)\n"
    );
    let dev = dir.path().join("sys/bus/pci/devices/0000:e1:00.0");
    assert_eq!(
        std::fs::read_to_string(dev.join("current_link_speed")).unwrap(),
        "32.0 GT/s PCIe\n"
    );
    assert_eq!(
        std::fs::read_to_string(dev.join("class")).unwrap(),
        "0x020700\n"
    );
    assert_eq!(std::fs::metadata(dev.join("config")).unwrap().len(), 4096);
    assert!(
        std::fs::read_to_string(dev.join("aer_dev_correctable"))
            .unwrap()
            .ends_with("TOTAL_ERR_COR 0\n")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sys/bus/pci/slots/13/address")).unwrap(),
        "0000:e1:00\n"
    );
    let gpu = dir.path().join("sys/bus/pci/devices/0000:4b:00.0");
    assert_eq!(
        std::fs::read_to_string(gpu.join("local_cpulist")).unwrap(),
        "0-55,112-167\n"
    );
    assert_eq!(
        std::fs::read_to_string(gpu.join("numa_node")).unwrap(),
        "0\n"
    );
}

fn assert_matches(spec: &Spec, topo: &Topology, privileged: bool) {
    let d = differences(spec, topo, VerifyOptions { privileged });
    assert!(
        d.is_empty(),
        "{} differences for {}:\n{}",
        d.len(),
        spec.name,
        d.join("\n")
    );
    let unexpected: Vec<_> = topo.warnings.iter().take(5).collect();
    assert!(
        unexpected.is_empty(),
        "scanner warnings on {}: {unexpected:?}",
        spec.name
    );
}

#[test]
fn vf_config_is_not_device_gone() {
    let spec = layouts::many_vfs(4);
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let vf = t.devices.iter().find(|d| d.physfn.is_some()).unwrap();
    assert!(
        vf.config.is_some(),
        "VF config facts (PCIe capability, ext caps) must still be decoded"
    );
}

fn bdf(s: &str) -> Bdf {
    s.parse().unwrap()
}

/// The switch (by id) a device hangs under.
fn switch_of(t: &Topology, b: Bdf) -> Option<String> {
    t.device(&b).and_then(|d| d.switch.clone())
}

#[test]
fn hgx_h100_scans_as_specified() {
    let spec = layouts::hgx_h100();
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    assert_eq!(t.of_kind(DeviceKind::Gpu).count(), 8);
    assert_eq!(t.of_kind(DeviceKind::Nvme).count(), 2);
    assert_eq!(t.switches.len(), 8);
    for i in 0..8 {
        let g = layouts::hgx_gpu(i);
        let n = layouts::hgx_nic(i);
        let gd = t.device(&g).unwrap();
        assert_eq!(gd.device_id, Some(0x2330));
        assert_eq!(gd.class, 0x030200);
        let nd = t.device(&n).unwrap();
        assert_eq!(
            nd.rdma_names().collect::<Vec<_>>(),
            vec![format!("mlx5_{i}")]
        );
        assert!(switch_of(&t, g).is_some());
        assert_eq!(
            switch_of(&t, g),
            switch_of(&t, n),
            "GPU{i} and mlx5_{i} share a switch"
        );
        assert_eq!(t.numa_of(gd), Some((i / 4) as u32));
        let l = gd.link.unwrap();
        assert_eq!((l.current_gts, l.current_width), (Some(32.0), Some(16)));
        let port = &t.device(&n).unwrap().os_devices[0].ports[0];
        assert_eq!(port.state.as_ref().unwrap().1, "ACTIVE");
        assert_eq!(port.rate_gbps, Some(400.0));
        assert_eq!(gd.iommu_group_type.as_deref(), Some("identity"));
        assert_eq!(
            gd.os_devices
                .iter()
                .filter(|o| o.name == g.to_string())
                .count(),
            1,
            "NVIDIA gpus/ entry"
        );
    }
    // Distinct switches per pair, none nested.
    let ids: std::collections::BTreeSet<_> =
        (0..8).map(|i| switch_of(&t, layouts::hgx_gpu(i))).collect();
    assert_eq!(ids.len(), 8);
    assert!(t.switches.iter().all(|s| s.parent_switch.is_none()));
    assert!(t.machine.nvidia_peermem_version.is_some());
    assert!(t.machine.hypervisor.is_empty());
}

#[test]
fn dgx_a100_reproduces_the_published_pairs() {
    let spec = layouts::dgx_a100();
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    assert_eq!(t.numa_nodes.len(), 8);
    assert_eq!(t.switches.len(), 12);
    assert_eq!(
        t.switches
            .iter()
            .filter(|s| s.parent_switch.is_some())
            .count(),
        8,
        "two second-level switches under each top-level one"
    );
    // Published NUMA affinity of GPU0..7: 3,3,1,1,7,7,5,5.
    let numa: Vec<_> = (0..8)
        .map(|i| t.device(&layouts::dgx_gpu(i)).and_then(|d| d.numa_node))
        .collect();
    assert_eq!(numa, [3, 3, 1, 1, 7, 7, 5, 5].map(Some).to_vec());
    // PXB: GPU i shares a top-level switch with NICs 2*(i/2) and 2*(i/2)+1, and no other NIC.
    let top = |b: Bdf| -> Option<String> {
        let mut s = switch_of(&t, b)?;
        while let Some(p) = t.switch(&s).and_then(|x| x.parent_switch.clone()) {
            s = p;
        }
        Some(s)
    };
    for g in 0..8 {
        for n in 0..8 {
            let same = top(layouts::dgx_gpu(g)) == top(layouts::dgx_nic(n));
            assert_eq!(same, g / 2 == n / 2, "GPU{g}-NIC{n}");
        }
    }
    // Storage NIC: two functions of one adapter (PIX to each other), mlx5_8/9.
    let s0 = t.device(&bdf("0000:c1:00.0")).unwrap();
    let s1 = t.device(&bdf("0000:c1:00.1")).unwrap();
    assert_eq!(s0.bdf.adapter(), s1.bdf.adapter());
    assert_eq!(s0.parent, s1.parent);
    assert_eq!(s1.rdma_names().collect::<Vec<_>>(), vec!["mlx5_9"]);
    assert_eq!(
        s1.os_devices[0].ports[0].link_layer.as_deref(),
        Some("Ethernet")
    );
}

#[test]
fn misplaced_nic_is_on_the_other_socket() {
    let spec = layouts::misplaced_nic();
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    let gpu3 = t.device(&layouts::hgx_gpu(3)).unwrap();
    let nic3 = t.device(&layouts::MISPLACED_NIC).unwrap();
    assert_eq!(nic3.rdma_names().collect::<Vec<_>>(), vec!["mlx5_3"]);
    assert_eq!(t.numa_of(gpu3), Some(0));
    assert_eq!(t.numa_of(nic3), Some(1));
    assert!(nic3.switch.is_none());
    assert_ne!(gpu3.host_bridge, nic3.host_bridge);
    let sw = t.switch(gpu3.switch.as_deref().unwrap()).unwrap();
    assert_eq!(
        sw.downstream.len(),
        2,
        "GPU3's switch keeps the GPU port and the NIC's empty port"
    );
    let empty = layouts::hgx_nic_port(3);
    assert!(sw.downstream.contains(&empty));
    assert!(t.children(&empty).is_empty(), "the NIC's port is empty");
    assert_eq!(
        t.device(&empty)
            .unwrap()
            .link
            .as_ref()
            .unwrap()
            .current_width,
        Some(0)
    );
}

#[test]
fn vm_flat_is_flat_and_numa_unknown() {
    let spec = layouts::vm_flat();
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    assert!(t.switches.is_empty());
    assert!(t.devices.iter().all(|d| d.numa_node.is_none()));
    assert!(
        t.devices
            .iter()
            .all(|d| d.config.as_ref().is_none_or(|c| c.acs.is_none()))
    );
    let gpu = t.of_kind(DeviceKind::Gpu).next().unwrap();
    let nic = t.of_kind(DeviceKind::Nic).next().unwrap();
    assert_eq!(
        gpu.host_bridge, nic.host_bridge,
        "both on the guest's single root complex (PHB)"
    );
    assert_ne!(gpu.parent, nic.parent);
    for p in [gpu.parent.unwrap(), nic.parent.unwrap()] {
        assert_eq!(t.device(&p).unwrap().kind, DeviceKind::RootPort);
        assert_eq!(t.device(&p).unwrap().vendor_id, Some(0x1b36));
    }
    assert!(
        t.machine
            .hypervisor
            .iter()
            .any(|(p, _)| p == "proc/cpuinfo")
    );
    assert_eq!(t.machine.dmi_sys_vendor.as_deref(), Some("QEMU"));
    assert_eq!(t.machine.iommu_units.known(), Some(&vec![]));
}

#[test]
fn virtio_vm_has_no_gdr_endpoints() {
    let spec = layouts::virtio_vm();
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    assert_eq!(t.of_kind(DeviceKind::Gpu).count(), 0);
    assert!(t.devices.iter().all(|d| d.rdma_names().next().is_none()));
    assert!(
        t.devices
            .iter()
            .filter(|d| d.vendor_id == Some(0x1af4))
            .all(|d| d.link.is_none())
    );
    assert_eq!(
        t.devices
            .iter()
            .filter(|d| d.vendor_id == Some(0x1af4))
            .count(),
        5
    );
}

#[test]
fn scaling_and_many_vfs() {
    let spec = layouts::scaling(500);
    assert!(
        (500..=540).contains(&spec.functions.len()),
        "{}",
        spec.functions.len()
    );
    assert!(spec.host_bridges.len() >= 2, "spans PCI domains");
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    let spec = layouts::many_vfs(300);
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    let pf = t.device(&layouts::MANY_VFS_PF).unwrap();
    assert_eq!(pf.vf_count, 300);
    let sriov = pf.config.as_ref().unwrap().sriov.unwrap();
    assert_eq!((sriov.total_vfs, sriov.num_vfs), (300, 300));
    assert!(
        t.devices
            .iter()
            .any(|d| d.bdf.bus == 0x19 && d.physfn == Some(layouts::MANY_VFS_PF)),
        "VFs spill onto the next bus"
    );
}

#[test]
fn big_scaling_spec_is_consistent() {
    // Writing 16k devices is for benchmarks; here only the spec's shape is checked (cheap).
    let spec = layouts::scaling(16_384);
    assert!(spec.functions.len() >= 16_384 && spec.functions.len() < 16_384 + 34);
    let entries = synth::build_entries(&spec, &WriteOptions::default()).unwrap();
    assert!(entries.len() > 16_384 * 10);
}

#[test]
fn unprivileged_config_falls_back_to_the_tree() {
    for spec in [
        layouts::hgx_h100(),
        layouts::dgx_a100(),
        layouts::misplaced_nic(),
    ] {
        let (_d, full) = scan_dir(&spec, WriteOptions::default());
        let (_d2, t) = scan_dir(&spec, WriteOptions { unprivileged: true });
        assert_matches(&spec, &t, false);
        assert!(t.devices.iter().all(|d| {
            d.config
                .as_ref()
                .is_some_and(|c| c.len == 64 && c.pcie.is_none())
        }));
        let shape = |t: &Topology| -> Vec<(Bdf, Vec<Bdf>, Option<String>)> {
            t.switches
                .iter()
                .map(|s| (s.upstream, s.downstream.clone(), s.parent_switch.clone()))
                .collect()
        };
        assert_eq!(
            shape(&full),
            shape(&t),
            "{}: same switches from config and from the tree",
            spec.name
        );
        assert!(t.switches.iter().all(|s| s.evidence == "tree"));
        assert!(full.switches.iter().all(|s| s.evidence == "config"));
    }
}

#[test]
fn tarball_scans_like_the_directory() {
    let spec = layouts::dgx_a100();
    let dir = tempfile::tempdir().unwrap();
    let tgz = dir.path().join("dgx.tar.gz");
    synth::write_tarball(&spec, &tgz, &WriteOptions::default()).unwrap();
    let t = sources::load(Some(&tgz), &LoadOptions::default()).unwrap();
    assert_matches(&spec, &t, true);
    let size = std::fs::metadata(&tgz).unwrap().len();
    assert!(size < 200_000, "tarball is {size} bytes");
}

#[test]
fn faults_show_up_in_the_scan() {
    let gpu0 = layouts::hgx_gpu(0);
    let dsp = layouts::hgx_gpu_port(0);
    let nic1 = layouts::hgx_nic(1);
    let mut spec = layouts::hgx_h100();
    spec = layouts::with_acs_redirect(spec, dsp).unwrap();
    spec = layouts::with_link_width(spec, gpu0, 8).unwrap();
    spec = layouts::with_aer(spec, nic1, 7, 2, 1).unwrap();
    spec = layouts::with_iommu_type(spec, nic1, "DMA").unwrap();
    spec = layouts::without_peer_module(spec);
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    let acs = t
        .device(&dsp)
        .unwrap()
        .config
        .as_ref()
        .unwrap()
        .acs
        .unwrap();
    assert!(acs.redirects_p2p());
    assert_eq!(
        acs.enabled_names(),
        vec!["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
    );
    let l = t.device(&gpu0).unwrap().link.unwrap();
    assert_eq!((l.current_width, l.max_width), (Some(8), Some(16)));
    let paths = peerpath::analysis::paths::Paths::new(&t);
    assert_eq!(
        paths.edge(paths.index(&gpu0).unwrap()).health,
        peerpath::analysis::paths::LinkHealth::Degraded {
            width: Some((8, 16)),
            speed: None
        }
    );
    assert_eq!(
        t.device(&dsp).unwrap().link.unwrap().current_width,
        Some(8),
        "the port end of the link too"
    );
    let n = t.device(&nic1).unwrap();
    assert_eq!(n.aer_correctable.as_ref().unwrap().total, Some(7));
    assert_eq!(n.aer_nonfatal.as_ref().unwrap().total, Some(2));
    assert_eq!(n.aer_fatal.as_ref().unwrap().total, Some(1));
    assert_eq!(n.iommu_group_type.as_deref(), Some("DMA"));
    assert_eq!(
        t.device(&gpu0).unwrap().iommu_group_type.as_deref(),
        Some("identity")
    );
    assert!(t.machine.nvidia_peermem_version.is_none());
    assert!(t.machine.memory_peers.is_empty());

    let vm = layouts::as_vm(layouts::hgx_h100());
    let (_d, t) = scan_dir(&vm, WriteOptions::default());
    assert_matches(&vm, &t, true);
    assert!(
        t.devices
            .iter()
            .all(|d| d.numa_node.is_none() && d.iommu_group.is_none())
    );
    assert_eq!(t.machine.dmi_sys_vendor.as_deref(), Some("QEMU"));

    // Bad faults are errors, not panics.
    assert!(layouts::with_acs_redirect(layouts::hgx_h100(), gpu0).is_err());
    assert!(layouts::with_link_width(layouts::hgx_h100(), gpu0, 32).is_err());
    assert!(layouts::apply_fault(layouts::hgx_h100(), "acs-redirect=0000:ff:00.0").is_err());
    assert!(layouts::apply_fault(layouts::hgx_h100(), "frobnicate").is_err());
    assert!(layouts::apply_fault(layouts::hgx_h100(), "link-width=0000:18:00.0,8").is_ok());
}

#[test]
fn verify_catches_a_mismatch() {
    // The checker must be able to fail: scan one layout, compare with a changed spec.
    let spec = layouts::vm_flat();
    let (_d, t) = scan_dir(&spec, WriteOptions::default());
    let mut other = spec.clone();
    other.functions[1].role = synth::Role::SwitchDownstream;
    let nic = other
        .functions
        .iter_mut()
        .find(|f| !f.rdma.is_empty())
        .unwrap();
    nic.rdma[0].name = "mlx5_9".into();
    let d = differences(&other, &t, VerifyOptions { privileged: true });
    assert!(d.iter().any(|l| l.contains("kind")), "{d:?}");
    assert!(d.iter().any(|l| l.contains("mlx5_9")), "{d:?}");
}

#[test]
fn spec_round_trips_through_toml_and_json() {
    let spec = layouts::misplaced_nic();
    let toml_text = toml::to_string(&spec).unwrap();
    assert_eq!(Spec::from_text(&toml_text).unwrap(), spec);
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(Spec::from_text(&json).unwrap(), spec);
    assert!(Spec::from_text("functions = 3").is_err());
}

#[test]
fn invalid_specs_are_errors() {
    let mut s = layouts::vm_flat();
    s.functions[3].parent = Some(bdf("0000:00:09.0"));
    let dir = tempfile::tempdir().unwrap();
    let e = synth::write_tree(&s, dir.path(), &WriteOptions::default()).unwrap_err();
    assert!(e.to_string().contains("not in the spec"), "{e}");
    let mut s = layouts::vm_flat();
    let dup = s.functions[2].clone();
    s.functions.push(dup);
    assert!(synth::write_tree(&s, dir.path(), &WriteOptions::default()).is_err());
    let mut s = layouts::vm_flat();
    s.host_bridges.clear();
    assert!(synth::write_tree(&s, dir.path(), &WriteOptions::default()).is_err());
}

#[test]
#[ignore = "slow in debug builds (16k functions); run with --ignored or in release"]
fn scaling_16k_scans_from_memory() {
    let spec = layouts::scaling(16_384);
    let t = scan_mem(&spec, WriteOptions::default());
    assert_matches(&spec, &t, true);
    assert_eq!(t.switches.len(), spec.functions.len() / 34);
}
