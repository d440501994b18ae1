//! Pair classification on the real hwloc sysfs fixtures.

use peerpath::analysis::classify::{ClassifyOptions, Label, classify_all};
use peerpath::sources::{LoadOptions, load};
use std::path::Path;

fn fixture(name: &str) -> peerpath::model::Topology {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hwloc")
        .join(name);
    load(Some(&p), &LoadOptions::default()).expect("fixture loads")
}

/// 32intel64-2p8co2t+8ve: switch sw0 (pci0000:17) holds a ConnectX-4 and four Vector Engines,
/// switch sw1 (pci0000:3a) the same; the X722 dual port sits under pci0000:5d. All on NUMA 0.
#[test]
fn ve_fixture_full_matrix() {
    let t = fixture("32intel64-2p8co2t+8ve.tar.bz2");
    let m = classify_all(&t, &ClassifyOptions::default());
    let names: Vec<(&str, String)> = m
        .endpoints
        .iter()
        .map(|e| (e.name.as_str(), e.bdf.to_string()))
        .collect();
    let want = [
        ("ACC0", "0000:1b:00.0"),
        ("ACC1", "0000:1c:00.0"),
        ("ACC2", "0000:1d:00.0"),
        ("ACC3", "0000:1e:00.0"),
        ("ACC4", "0000:3d:00.0"),
        ("ACC5", "0000:3f:00.0"),
        ("ACC6", "0000:40:00.0"),
        ("ACC7", "0000:41:00.0"),
        ("NIC0", "0000:1a:00.0"),
        ("NIC1", "0000:3e:00.0"),
        ("NIC2", "0000:60:00.0"),
        ("NIC3", "0000:60:00.1"),
    ];
    assert_eq!(
        names,
        want.iter()
            .map(|(n, b)| (*n, b.to_string()))
            .collect::<Vec<_>>()
    );
    // Switch group of each endpoint: 0 = sw0, 1 = sw1, 2 = the X722 under pci0000:5d.
    let group = |n: &str| match n {
        "ACC0" | "ACC1" | "ACC2" | "ACC3" | "NIC0" => 0,
        "ACC4" | "ACC5" | "ACC6" | "ACC7" | "NIC1" => 1,
        _ => 2,
    };
    let mut checked = 0;
    for (i, ea) in m.endpoints.iter().enumerate() {
        for eb in &m.endpoints[i + 1..] {
            let p = m
                .pair(&ea.bdf, &eb.bdf)
                .unwrap_or_else(|| panic!("pair {} {}", ea.name, eb.name));
            let expect = if group(&ea.name) == group(&eb.name) {
                Label::Pix
            } else {
                Label::Node
            };
            assert_eq!(p.label, expect, "{}–{}: {}", ea.name, eb.name, p.reason);
            checked += 1;
        }
    }
    assert_eq!(checked, 66);
    assert_eq!(m.pairs.len(), 66);
    // The X722 ports are PIX because they are two functions of one adapter, and their path
    // is limited by the Gen1 x1 link. The X722 can do Gen3, but the downstream port above it
    // only Gen1 (max_link_speed 2.5 GT/s): the link runs at what both ends support, so it is
    // the bottleneck without being marked as running below capability.
    let x = m
        .pair(
            &"0000:60:00.0".parse().unwrap(),
            &"0000:60:00.1".parse().unwrap(),
        )
        .unwrap();
    assert!(x.reason.contains("adapter"), "{}", x.reason);
    let ve_x722 = m
        .pair(
            &"0000:1b:00.0".parse().unwrap(),
            &"0000:60:00.0".parse().unwrap(),
        )
        .unwrap();
    assert_eq!(ve_x722.bottleneck_gbytes_per_s, Some(0.1875));
    let bh = &ve_x722.hops[ve_x722.bottleneck_hop.unwrap()];
    assert_eq!(bh.note.as_deref(), Some("bottleneck"), "{bh:?}");
    // NCCL: PIX within a switch, PHB (its NODE) across host bridges.
    let acc = m
        .pair(
            &"0000:1b:00.0".parse().unwrap(),
            &"0000:1a:00.0".parse().unwrap(),
        )
        .unwrap();
    assert_eq!(acc.nccl.path.as_str(), "PIX");
    let cross = m
        .pair(
            &"0000:1b:00.0".parse().unwrap(),
            &"0000:3e:00.0".parse().unwrap(),
        )
        .unwrap();
    assert_eq!(cross.nccl.path.as_str(), "PHB");
    assert_eq!(cross.bottleneck_gbytes_per_s, Some(12.0));
}
