//! The scanner against the kernel's own files and against `lspci` and `lstopo` run on the same
//! real fixtures (hwloc's sysfs tarballs). Where the tools disagree with peerpath, the test says
//! why.

mod common;

use peerpath::model::{Bdf, Topology};
use peerpath::sources::{self, LoadOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn scan(p: &Path) -> Topology {
    sources::load(Some(p), &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e:#}", p.display()))
}

/// Devices and their parents as `lspci -PP -D` prints them (`0000:17:00.0/18:00.0/19:04.0 …`).
fn lspci_parents(root: &Path) -> Option<BTreeMap<Bdf, Option<Bdf>>> {
    let bus = root.join("sys/bus/pci");
    let arg = format!("sysfs.path={}", bus.display());
    let out = common::tool(
        "lspci",
        &["-A", "linux-sysfs", "-O", &arg, "-D", "-n", "-PP"],
        &[],
    )?;
    let mut m = BTreeMap::new();
    for line in out.lines() {
        let path = line.split_whitespace().next().unwrap();
        let parts: Vec<&str> = path.split('/').collect();
        let domain = &parts[0][..parts[0].len() - 8];
        let full = |p: &str| -> Bdf {
            if p.matches(':').count() == 2 {
                p.parse().unwrap()
            } else {
                format!("{domain}:{p}").parse().unwrap()
            }
        };
        let me = full(parts[parts.len() - 1]);
        let parent = if parts.len() >= 2 {
            Some(full(parts[parts.len() - 2]))
        } else {
            None
        };
        m.insert(me, parent);
    }
    Some(m)
}

/// PCI objects of `lstopo --whole-io --of xml`: busid → (parent busid, host bridge range).
fn lstopo_parents(root: &Path) -> Option<BTreeMap<Bdf, Option<Bdf>>> {
    let r = root.display().to_string();
    let xml = common::tool(
        "lstopo-no-graphics",
        &["--if", "fsroot", "-i", &r, "--whole-io", "--of", "xml", "-"],
        &[],
    )?;
    assert!(
        xml.contains("<topology"),
        "lstopo printed no topology for {r}"
    );
    // lstopo writes one element per line: `<object type=".." ... pci_busid="..">`, `</object>`.
    let attr = |line: &str, name: &str| -> Option<String> {
        let k = format!(" {name}=\"");
        let i = line.find(&k)? + k.len();
        Some(line[i..].split('"').next()?.to_string())
    };
    let mut stack: Vec<Option<Bdf>> = Vec::new();
    let mut out = BTreeMap::new();
    for line in xml.lines().map(str::trim) {
        if line.starts_with("<object ") {
            let ty = attr(line, "type").unwrap_or_default();
            let busid = attr(line, "pci_busid").and_then(|b| b.parse::<Bdf>().ok());
            if (ty == "PCIDev" || ty == "Bridge")
                && let Some(b) = busid
            {
                out.insert(b, stack.iter().rev().find_map(|b| *b));
            }
            if !line.ends_with("/>") {
                stack.push(busid);
            }
        } else if line.starts_with("</object>") {
            stack.pop();
        }
    }
    Some(out)
}

#[test]
fn tarball_and_extracted_tree_scan_identically() {
    for t in common::hwloc_tarballs() {
        let root = common::extracted(&t);
        let a = scan(&t);
        let b = scan(&root);
        assert_eq!(a.devices.len(), b.devices.len(), "{}", t.display());
        for (x, y) in a.devices.iter().zip(&b.devices) {
            let mut y = y.clone();
            y.sysfs_path = x.sysfs_path.clone();
            assert_eq!(x, &y, "{}: {}", t.display(), x.bdf);
        }
        assert_eq!(a.switches, b.switches);
        assert_eq!(a.host_bridges, b.host_bridges);
        assert_eq!(a.numa_nodes, b.numa_nodes);
    }
}

/// Revisions (read from config where the snapshot has no `revision` file) as `lspci -n` prints
/// them (`(rev xx)`; none printed means 0).
#[test]
fn revisions_agree_with_lspci() {
    for t in common::hwloc_tarballs() {
        let root = common::extracted(&t);
        let arg = format!("sysfs.path={}", root.join("sys/bus/pci").display());
        let Some(out) = common::tool("lspci", &["-A", "linux-sysfs", "-O", &arg, "-D", "-n"], &[])
        else {
            return;
        };
        let topo = scan(&t);
        let mut seen = 0;
        for line in out.lines() {
            let Some(bdf) = line
                .split_whitespace()
                .next()
                .and_then(|b| b.parse::<Bdf>().ok())
            else {
                continue;
            };
            let theirs = line.split("(rev ").nth(1).map_or(0, |r| {
                u8::from_str_radix(r.trim_end_matches(')'), 16).unwrap()
            });
            let Some(d) = topo.device(&bdf) else { continue };
            if let Some(ours) = d.revision {
                assert_eq!(ours, theirs, "{}: {bdf}", t.display());
                seen += 1;
            }
        }
        assert!(
            seen > 0 || out.is_empty(),
            "{}: no revision compared",
            t.display()
        );
    }
}

#[test]
fn devices_and_parents_agree_with_lspci() {
    for t in common::hwloc_tarballs() {
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("nvidiagpunumanodes") {
            continue; // lspci cannot read it: no config/vendor files (see fixtures README)
        }
        let root = common::extracted(&t);
        let Some(lspci) = lspci_parents(&root) else {
            return;
        };
        let topo = scan(&t);
        let ours: BTreeMap<Bdf, Option<Bdf>> = topo
            .devices
            .iter()
            .filter(|d| d.listed)
            .map(|d| (d.bdf, d.parent))
            .collect();
        assert_eq!(
            ours.keys().collect::<BTreeSet<_>>(),
            lspci.keys().collect::<BTreeSet<_>>(),
            "{name}: device sets differ"
        );
        for (bdf, parent) in &ours {
            let theirs = lspci[bdf];
            if *parent == theirs {
                continue;
            }
            // 0000:5f:03.0 exists in sys/devices but not in sys/bus/pci/devices: lspci cannot see
            // it and hangs its children under the bridge above; peerpath keeps the real parent.
            let p = parent.expect("peerpath parent");
            let unlisted = topo.device(&p).map(|d| !d.listed).unwrap_or(false);
            assert!(
                unlisted,
                "{name}: {bdf}: peerpath parent {parent:?}, lspci {theirs:?}"
            );
            assert_eq!(topo.device(&p).unwrap().parent, theirs, "{name}: {bdf}");
        }
    }
}

#[test]
fn devices_and_parents_agree_with_lstopo() {
    for t in common::hwloc_tarballs() {
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        let root = common::extracted(&t);
        let Some(lstopo) = lstopo_parents(&root) else {
            return;
        };
        let topo = scan(&t);
        assert!(
            !lstopo.is_empty() || name.starts_with("2pa"),
            "{name}: lstopo listed no PCI object"
        );
        for (bdf, parent) in &lstopo {
            let d = topo
                .device(bdf)
                .unwrap_or_else(|| panic!("{name}: lstopo has {bdf}, peerpath does not"));
            if d.parent == *parent {
                continue;
            }
            let p = d.parent.expect("peerpath parent");
            assert!(
                !topo.device(&p).unwrap().listed,
                "{name}: {bdf}: peerpath {:?}, lstopo {parent:?}",
                d.parent
            );
        }
        for d in topo.devices.iter().filter(|d| d.listed) {
            if lstopo.contains_key(&d.bdf) {
                continue;
            }
            // Debian's hwloc 2.9 drops 32-bit PCI domains ("Ignoring PCI device with non-16bit
            // domain"); nvidiagpunumanodes has no config files, which hwloc's linux backend needs
            // to place a device under a bridge.
            // hwloc also drops bridges whose config header gives no secondary bus (unconfigured,
            // like the C600 virtual root port 0000:00:11.0 with buses 00/00/00); the kernel lists
            // them, so peerpath keeps them.
            let unconfigured = d
                .config
                .as_ref()
                .and_then(|c| c.bridge_buses)
                .is_some_and(|(_, sec, _)| sec == 0);
            assert!(
                d.bdf.domain > 0xffff || unconfigured || name.starts_with("nvidiagpunumanodes"),
                "{name}: peerpath has {}, lstopo does not",
                d.bdf
            );
        }
    }
}

/// The scan reads identity and link facts from `config` where its header answers them; the
/// kernel's own files for the same facts must agree on every real and synthesized snapshot.
#[test]
fn attributes_match_the_files() {
    let synth = ["dgx-a100", "hgx-h100", "misplaced-nic", "vm-flat"]
        .map(|n| common::repo().join(format!("fixtures/synth/{n}.tar.gz")));
    for t in common::hwloc_tarballs().into_iter().chain(synth) {
        let root = common::extracted(&t);
        let topo = scan(&root);
        for d in &topo.devices {
            let dir = root.join(&d.sysfs_path);
            let read = |f: &str| {
                std::fs::read_to_string(dir.join(f))
                    .ok()
                    .map(|s| s.trim().to_string())
            };
            if let Some(n) = read("numa_node") {
                let n: i64 = n.parse().unwrap();
                assert_eq!(
                    d.numa_node,
                    if n < 0 { None } else { Some(n as u32) },
                    "{}",
                    d.bdf
                );
            }
            if let Some(w) = read("current_link_width") {
                assert_eq!(
                    d.link.unwrap().current_width,
                    Some(w.parse().unwrap()),
                    "{}",
                    d.bdf
                );
            }
            if let Some(c) = read("class") {
                assert_eq!(format!("0x{:06x}", d.class), c, "{}", d.bdf);
            }
            let hex = |v: Option<u16>| v.map(|v| format!("0x{v:04x}"));
            for (file, ours) in [
                ("vendor", hex(d.vendor_id)),
                ("device", hex(d.device_id)),
                ("subsystem_vendor", hex(d.subsystem_vendor_id)),
                ("subsystem_device", hex(d.subsystem_device_id)),
                ("revision", d.revision.map(|r| format!("0x{r:02x}"))),
            ] {
                if let Some(want) = read(file) {
                    assert_eq!(ours, Some(want), "{}: {} {file}", t.display(), d.bdf);
                }
            }
            if let (Some(w), Some(l)) = (read("max_link_width"), d.link) {
                assert_eq!(l.max_width, Some(w.parse().unwrap()), "{}", d.bdf);
            }
            let expected_hb = d
                .sysfs_path
                .split('/')
                .find(|c| peerpath::model::bdf::parse_host_bridge(c).is_some());
            if let Some(hb) = expected_hb {
                assert_eq!(d.host_bridge, hb, "{}", d.bdf);
            }
        }
    }
}

#[test]
fn plx_switches_grouped_on_the_ve_fixture() {
    let t = scan(&common::repo().join("fixtures/hwloc/32intel64-2p8co2t+8ve.tar.bz2"));
    let plx: Vec<_> = t
        .switches
        .iter()
        .filter(|s| t.device(&s.upstream).unwrap().vendor_id == Some(0x10b5))
        .collect();
    assert_eq!(plx.len(), 2);
    for s in plx {
        assert_eq!(s.downstream.len(), 5);
        assert_eq!(s.evidence, "tree"); // 64-byte config: grouped from the tree
        let under: Vec<_> = t
            .devices
            .iter()
            .filter(|d| d.switch.as_deref() == Some(s.id.as_str()))
            .collect();
        assert_eq!(under.len(), 5);
        assert_eq!(
            under
                .iter()
                .filter(|d| d.kind == peerpath::model::DeviceKind::Nic)
                .count(),
            1
        );
    }
    // 0000:5f:03.0 kept with a warning naming it.
    assert!(t.warnings.iter().any(|w| w.path.ends_with("0000:5f:03.0")));
    assert!(!t.device(&"0000:5f:03.0".parse().unwrap()).unwrap().listed);
}

#[test]
fn fakepcilocalities_has_one_hca_not_three() {
    let t = scan(&common::repo().join("fixtures/hwloc/fakepcilocalities.tar.bz2"));
    let hca: Bdf = "0000:43:00.0".parse().unwrap();
    assert_eq!(t.devices.iter().filter(|d| d.bdf == hca).count(), 1);
    let d = t.device(&hca).unwrap();
    assert_eq!(d.host_bridge, "pci0000:40");
    assert_eq!(d.numa_node, Some(1));
    assert_eq!(d.rdma_names().collect::<Vec<_>>(), vec!["qib0"]);
    // local_cpulist was removed from this fixture: local_cpus (the mask) is used.
    assert_eq!(d.local_cpus.as_ref().unwrap().len(), 10);
}

#[test]
fn degenerate_power9_snapshot_still_scans() {
    let t = scan(&common::repo().join("fixtures/hwloc/nvidiagpunumanodes.tar.bz2"));
    assert_eq!(t.of_kind(peerpath::model::DeviceKind::Gpu).count(), 6);
    assert!(t.devices.iter().all(|d| d.vendor_id.is_none()));
    assert_eq!(
        t.warnings
            .iter()
            .filter(|w| w.message.contains("host bridge assumed"))
            .count(),
        6
    );
}

#[test]
fn live_machine_scans_cleanly() {
    // This machine (and CI) is a VM with virtio devices only.
    let out = common::peerpath().args(["scan"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    if !s.contains("GPU ") {
        assert!(s.contains("No GPU or accelerator found"), "{s}");
    }
}
