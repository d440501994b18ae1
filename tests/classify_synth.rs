//! Classification of the synthesized layouts (`peerpath::synth`), written as sysfs trees and
//! read back by the scanner: the whole path from files to labels.

use peerpath::analysis::classify::{ClassifyOptions, Label, Matrix, classify_all};
use peerpath::analysis::nccl::NcclPath;
use peerpath::sources::{LoadOptions, load};
use peerpath::synth::{self, WriteOptions, layouts};

fn matrix_of(spec: &synth::Spec, unprivileged: bool) -> Matrix {
    let dir = tempfile::tempdir().unwrap();
    synth::write_tree(spec, dir.path(), &WriteOptions { unprivileged }).unwrap();
    let t = load(Some(dir.path()), &LoadOptions::default()).unwrap();
    classify_all(&t, &ClassifyOptions::default())
}

fn label(m: &Matrix, a: &str, b: &str) -> Label {
    let x = m.endpoint(a).unwrap_or_else(|| panic!("{a}")).bdf;
    let y = m.endpoint(b).unwrap_or_else(|| panic!("{b}")).bdf;
    m.pair(&x, &y).unwrap().label
}

#[test]
fn synth_dgx_a100_published_cells() {
    for unprivileged in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        synth::write_tree(
            &layouts::dgx_a100(),
            dir.path(),
            &WriteOptions { unprivileged },
        )
        .unwrap();
        let t = load(Some(dir.path()), &LoadOptions::default()).unwrap();
        let m = classify_all(&t, &ClassifyOptions::default());
        for g in 0..8 {
            let gb = m.endpoint(&format!("GPU{g}")).unwrap().bdf;
            for n in 0..8 {
                let nb = m.endpoint(&format!("NIC{n}")).unwrap().bdf;
                // Published: PXB to both NICs of the GPU's top-level switch, SYS elsewhere.
                // synth::dgx_a100 hangs the GPU and its NIC on one leaf switch, without the HGX
                // baseboard switch (10de:13b8) above the GPU that the real machine has
                // (hgx-a100-icelake-bcm-5bond.xml), so §1.5 gives PIX for that one cell while
                // the published matrix says PXB. The in-code layout of classify_layouts.rs has
                // the baseboard level and reproduces PXB.
                let same_leaf = t.device(&gb).unwrap().switch == t.device(&nb).unwrap().switch;
                let want = if n / 2 != g / 2 {
                    Label::Sys
                } else if same_leaf {
                    Label::Pix
                } else {
                    Label::Pxb
                };
                assert_eq!(
                    m.pair(&gb, &nb).unwrap().label,
                    want,
                    "GPU{g}-NIC{n} ({unprivileged})"
                );
            }
            for n in 8..10 {
                assert_eq!(
                    label(&m, &format!("GPU{g}"), &format!("NIC{n}")),
                    Label::Sys
                );
            }
        }
        assert_eq!(label(&m, "NIC8", "NIC9"), Label::Pix);
        assert_eq!(label(&m, "NIC0", "NIC1"), Label::Pxb);
        assert_eq!(label(&m, "NIC0", "NIC2"), Label::Sys);
        // GPU0 (NUMA 3) and GPU2 (NUMA 1) share a socket but not a NUMA node: SYS (no NVML
        // in a synthesized tree, so GPU pairs get PCIe labels).
        assert_eq!(label(&m, "GPU0", "GPU2"), Label::Sys);
        let g0 = m.endpoint("GPU0").unwrap().bdf;
        let n1 = m.endpoint("NIC1").unwrap().bdf;
        let p = m.pair(&g0, &n1).unwrap();
        assert_eq!(p.nccl.path, NcclPath::Pxb);
        assert!(p.nccl.gdr);
    }
}

#[test]
fn synth_hgx_h100_pix_pairs_and_misplaced_nic() {
    let m = matrix_of(&layouts::hgx_h100(), false);
    for g in 0..8 {
        for n in 0..8 {
            let l = label(&m, &format!("GPU{g}"), &format!("NIC{n}"));
            if g == n {
                assert_eq!(l, Label::Pix, "GPU{g}-NIC{n}");
            } else if g / 4 == n / 4 {
                assert_eq!(l, Label::Node, "GPU{g}-NIC{n}");
            } else {
                assert_eq!(l, Label::Sys, "GPU{g}-NIC{n}");
            }
        }
    }
    let g3 = m.endpoint("GPU3").unwrap().bdf;
    let n3 = m.endpoint("NIC3").unwrap().bdf;
    assert!(m.pair(&g3, &n3).unwrap().nccl.gdr);
    let mis = matrix_of(&layouts::misplaced_nic(), false);
    let p = mis.pair(&g3, &n3);
    let l = match p {
        Some(p) => p.label,
        None => {
            let x = mis
                .endpoints
                .iter()
                .find(|e| e.rdma.iter().any(|r| r == "mlx5_3"))
                .unwrap()
                .bdf;
            mis.pair(&g3, &x).unwrap().label
        }
    };
    assert_eq!(l, Label::Sys);
}

#[test]
fn synth_vm_flat_is_phb() {
    let m = matrix_of(&layouts::vm_flat(), false);
    let p = &m.pairs[0];
    assert_eq!(p.label, Label::Phb, "{}", p.reason);
    assert_eq!(p.nccl.path, NcclPath::Phb);
    assert!(!p.nccl.gdr);
    assert!(
        m.notes.iter().any(|n| n.contains("virtual machine")),
        "{:?}",
        m.notes
    );
}

#[test]
fn synth_faults_acs_redirect_and_narrow_link() {
    let spec = layouts::with_acs_redirect(layouts::hgx_h100(), layouts::hgx_gpu_port(0)).unwrap();
    let spec = layouts::with_link_width(spec, layouts::hgx_nic(0), 8).unwrap();
    let m = matrix_of(&spec, false);
    let p = m.pair(&layouts::hgx_gpu(0), &layouts::hgx_nic(0)).unwrap();
    assert_eq!(p.label, Label::Pix);
    assert!(
        p.reason.contains("ACS") && p.reason.contains("effective PHB"),
        "{}",
        p.reason
    );
    assert!(p.nccl.rules.iter().any(|r| r.contains("does not read ACS")));
    let port = layouts::hgx_gpu_port(0).to_string();
    let h = p.hops.iter().find(|h| h.node == port).unwrap();
    assert!(h.note.as_deref().unwrap().contains("ReqRedir"), "{h:?}");
    // Gen5 x8 of x16: 24 GB/s, the bottleneck, marked as below capability.
    assert_eq!(p.bottleneck_gbytes_per_s, Some(24.0));
    let b = &p.hops[p.bottleneck_hop.unwrap()];
    assert!(
        b.note
            .as_deref()
            .unwrap()
            .contains("below what both ends support"),
        "{b:?}"
    );
    // The untouched pair 1 has neither.
    let q = m.pair(&layouts::hgx_gpu(1), &layouts::hgx_nic(1)).unwrap();
    assert!(!q.reason.contains("ACS"));
    assert_eq!(q.bottleneck_gbytes_per_s, Some(48.0));
}

/// The alloc-free summary's bottleneck (the chains' running minima,
/// `hops::bottleneck_gbytes`) equals the worded classification's (a walk over every hop) for
/// every pair of every layout: Data Direct DMA functions (gb300-tray), xGMI (mi300x, mi300a),
/// emulated VM links (vm-flat), cascaded Broadcom levels (dgx-a100, hgx-b300), a narrowed link
/// (the fault below), one host bridge per GPU (cray-ex, polaris).
#[test]
fn summary_bottleneck_is_the_walks_on_every_layout() {
    let mut specs: Vec<(String, synth::Spec)> = layouts::LAYOUTS
        .iter()
        .filter(|(n, _)| !n.starts_with("scaling"))
        .map(|(n, _)| (n.to_string(), layouts::by_name(n).unwrap()))
        .collect();
    specs.push(("scaling-64".into(), layouts::by_name("scaling-64").unwrap()));
    let narrowed = layouts::with_link_width(layouts::hgx_h100(), layouts::hgx_nic(0), 8).unwrap();
    specs.push(("hgx-h100 link-width".into(), narrowed));
    let mut known = 0;
    for (name, spec) in &specs {
        let root = synth::to_mem_root(spec, &WriteOptions::default()).unwrap();
        let t = peerpath::sources::sysfs::scan(
            &root,
            peerpath::model::topology::SourceInfo {
                kind: "synth".into(),
                path: name.clone(),
                limitations: vec![],
            },
            &peerpath::sources::sysfs::ScanOptions::default(),
        )
        .unwrap();
        let c = peerpath::analysis::classify::Classifier::new(&t, &ClassifyOptions::default());
        let m = c.matrix();
        let s = c.summary_all();
        assert_eq!(s.len(), m.pairs.len(), "{name}");
        for ((_, _, s), p) in s.iter().zip(&m.pairs) {
            assert_eq!(
                s.bottleneck_gbytes_per_s, p.bottleneck_gbytes_per_s,
                "{name}: {} {}",
                p.a, p.b
            );
            known += usize::from(s.bottleneck_gbytes_per_s.is_some());
        }
    }
    // The comparison saw real figures, not only unknowns.
    assert!(known > 1000, "{known} pairs with a known bottleneck");
}
