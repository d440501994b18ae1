//! Properties of the classifier on random PCIe trees: labels are symmetric, the diagonal is X,
//! PIX/PXB exactly when the two share a bridge below the host bridge, NODE/SYS follow the NUMA
//! nodes, and the alloc-free summary agrees with the full classification.

use peerpath::analysis::classify::{Classifier, ClassifyOptions, Label};
use peerpath::analysis::paths::Paths;
use peerpath::analysis::testkit::TopoBuilder;
use peerpath::model::Topology;
use proptest::prelude::*;

/// Builds a random tree from a list of choices: each host bridge gets a root port, then a
/// random mix of switches (possibly cascaded), plain bridges and endpoints.
fn build(choices: &[(u8, u8, u8)], numa_known: bool) -> Topology {
    let mut t = TopoBuilder::new(&["0-7", "8-15"]).cpu("AuthenticAMD", 25, 1);
    let mut bus: u32 = 0;
    let next_bus = |bus: &mut u32| {
        *bus += 1;
        *bus
    };
    // Attachment points: (address of a port that can take a child, numa).
    let mut ports: Vec<(String, Option<u32>)> = Vec::new();
    // Host bridges: (root bus, numa, root ports made so far).
    let mut hbs: Vec<(u32, Option<u32>, u32)> = Vec::new();
    for (i, &(what, pick, numa)) in choices.iter().enumerate() {
        let numa = if numa_known {
            Some((numa % 2) as u32)
        } else {
            None
        };
        if what % 6 == 5 && !hbs.is_empty() {
            // Another root port on an existing host bridge.
            let k = pick as usize % hbs.len();
            let (root, hnuma, n) = hbs[k];
            if n < 30 {
                hbs[k].2 += 1;
                let rp = format!("0000:{root:02x}:{:02x}.0", n + 1);
                t.bridge(&rp, None, hnuma);
                ports.push((rp, hnuma));
            }
            continue;
        }
        if ports.is_empty() || what % 6 == 0 {
            // New host bridge with one root port.
            let root = next_bus(&mut bus) * 2;
            if root > 250 {
                break;
            }
            bus = root;
            let rp = format!("0000:{root:02x}:01.0");
            t.bridge(&rp, None, numa);
            ports.push((rp, numa));
            hbs.push((root, numa, 1));
            continue;
        }
        let (parent, pnuma) = ports[pick as usize % ports.len()].clone();
        // A port takes one child; remove it (a switch adds new ports).
        ports.retain(|(p, _)| *p != parent);
        let b = next_bus(&mut bus);
        if b > 250 {
            break;
        }
        match what % 6 {
            1 => {
                // Switch with 2..4 downstream ports.
                let usp = format!("0000:{b:02x}:00.0");
                let d = next_bus(&mut bus);
                let dsps: Vec<String> = (0..2 + (pick as u32 % 3))
                    .map(|k| format!("0000:{d:02x}:{k:02x}.0"))
                    .collect();
                let refs: Vec<&str> = dsps.iter().map(|s| s.as_str()).collect();
                t.switch(&parent, &usp, &refs, pnuma);
                ports.extend(dsps.into_iter().map(|p| (p, pnuma)));
            }
            2 => {
                t.gpu(&format!("0000:{b:02x}:00.0"), Some(&parent), pnuma);
            }
            3 => {
                let name = format!("mlx5_{i}");
                let f0 = format!("0000:{b:02x}:00.0");
                t.nic(&f0, Some(&parent), pnuma, &[&name]);
                if pick % 2 == 0 {
                    let name1 = format!("mlx5_{i}_1");
                    t.nic(
                        &format!("0000:{b:02x}:00.1"),
                        Some(&parent),
                        pnuma,
                        &[&name1],
                    );
                }
            }
            _ => {
                t.nvme(&format!("0000:{b:02x}:00.0"), Some(&parent), pnuma);
            }
        }
    }
    t.build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn labels_are_consistent(choices in prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 1..60),
                             numa_known in any::<bool>()) {
        let t = build(&choices, numa_known);
        let c = Classifier::new(&t, &ClassifyOptions::default());
        let n = c.endpoints().len();
        let table = c.label_table();
        for i in 0..n {
            prop_assert_eq!(table[i * n + i], Label::X);
            for j in 0..n {
                prop_assert_eq!(table[i * n + j], table[j * n + i]);
                if i == j {
                    continue;
                }
                let (a, b) = (&c.endpoints()[i], &c.endpoints()[j]);
                let (da, db) = (t.device(&a.bdf).unwrap(), t.device(&b.bdf).unwrap());
                let paths = Paths::new(&t);
                let (aa, ab) = (paths.ancestors(&a.bdf), paths.ancestors(&b.bdf));
                let common = aa.iter().any(|x| ab.contains(x));
                let l = table[i * n + j];
                let same_adapter = a.bdf.adapter() == b.bdf.adapter();
                if same_adapter {
                    prop_assert_eq!(l, Label::Pix);
                } else if common {
                    // Independent count: bridges strictly between each endpoint and the lowest
                    // common ancestor (included), a switch's ports counted as one.
                    let lca = *aa.iter().find(|x| ab.contains(x)).unwrap();
                    let mut units = std::collections::HashSet::new();
                    for chain in [&aa, &ab] {
                        for x in chain.iter().skip(1) {
                            let key = match t.switch_of_port(x) {
                                Some(sw) => sw.id.clone(),
                                None => x.to_string(),
                            };
                            units.insert(key);
                            if *x == lca {
                                break;
                            }
                        }
                    }
                    let want = if units.len() <= 1 { Label::Pix } else { Label::Pxb };
                    prop_assert_eq!(l, want, "{} {} {:?}", a.bdf, b.bdf, units);
                } else if da.host_bridge == db.host_bridge {
                    prop_assert_eq!(l, Label::Phb);
                } else if !numa_known {
                    prop_assert_eq!(l, Label::Unknown);
                } else if a.numa_node == b.numa_node {
                    prop_assert_eq!(l, Label::Node);
                } else {
                    prop_assert_eq!(l, Label::Sys);
                }
            }
        }
        let m = c.matrix();
        let s = c.summary_all();
        prop_assert_eq!(s.len(), m.pairs.len());
        for ((_, _, s), p) in s.iter().zip(&m.pairs) {
            prop_assert_eq!(s.label, p.label);
            prop_assert_eq!(s.nccl_path, p.nccl.path);
            prop_assert_eq!(s.bottleneck_gbytes_per_s, p.bottleneck_gbytes_per_s);
            // The hop list starts and ends at the pair.
            prop_assert_eq!(&p.hops[0].node, &p.a.to_string());
            prop_assert_eq!(&p.hops[p.hops.len() - 1].node, &p.b.to_string());
        }
    }
}
