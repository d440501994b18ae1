//! The report's compact pair cells ([`PairCells`]): expanded, every cell of every row is the
//! matrix's cell (label and reason of the pair in matrix order, `X`/`PIX` for one function,
//! nothing for a pair the matrix does not classify) on every built-in layout, a scaling tree and
//! an ACS fault, and the group table is really used where host bridges differ.

use peerpath::analysis::classify::{Classifier, ClassifyOptions, Label, PairCells, classify_all};
use peerpath::analysis::testkit::TopoBuilder;
use peerpath::model::{Bdf, DataDirect, SourceInfo, Topology};
use peerpath::sources::sysfs::{self, ScanOptions};
use peerpath::synth::{self, Spec, WriteOptions, layouts};
use std::collections::HashMap;

fn topo(spec: &Spec) -> Topology {
    let root = synth::to_mem_root(spec, &WriteOptions::default()).unwrap();
    let src = SourceInfo {
        kind: "synth".into(),
        path: format!("synth:{}", spec.name),
        limitations: vec![],
    };
    sysfs::scan(&root, src, &ScanOptions { pci_ids: None }).unwrap()
}

/// Checks every cell of every row against the matrix; returns how many cells came from the
/// group table.
fn check(name: &str, t: &Topology) -> usize {
    let c = Classifier::new(t, &ClassifyOptions::default());
    let m = classify_all(t, &ClassifyOptions::default());
    let eps = c.endpoints();
    let n = eps.len();
    let cells: PairCells = c.pair_cells(&vec![true; n]);
    // The matrix's cells by endpoint names, both ways round, each pair in matrix order.
    let mut want: HashMap<(usize, usize), (Label, String)> = HashMap::new();
    for a in 0..n {
        for b in 0..n {
            if eps[a].bdf == eps[b].bdf {
                let l = if a == b { Label::X } else { Label::Pix };
                want.insert((a, b), (l, String::new()));
            } else if let Some(p) = m.pair(&eps[a].bdf, &eps[b].bdf) {
                want.insert((a, b), (p.label, p.reason.clone()));
            }
        }
    }
    let mut far = 0;
    for a in 0..n {
        let row = cells.row(a).unwrap_or_else(|| panic!("{name}: row {a}"));
        assert_eq!(row.len(), n, "{name}");
        for (b, &code) in row.iter().enumerate() {
            let got = cells.cells[code as usize].clone();
            assert_eq!(
                got.as_ref(),
                want.get(&(a, b)),
                "{name}: {} – {}",
                eps[a].name,
                eps[b].name
            );
            assert_eq!(got, c.cell(a, b), "{name}");
            far += usize::from(!cells.is_near(a, b));
        }
    }
    // A row not asked for is not held.
    let none = c.pair_cells(&vec![false; n]);
    assert!(none.near.iter().all(Option::is_none) && (n == 0 || none.row(0).is_none()));
    far
}

#[test]
fn expanded_cells_are_the_matrix_cells() {
    let mut far = HashMap::new();
    for (name, _) in layouts::LAYOUTS {
        if name.starts_with("scaling-") {
            continue;
        }
        let spec = layouts::by_name(name).unwrap();
        far.insert(name.to_string(), check(name, &topo(&spec)));
    }
    let spec = layouts::by_name("scaling-64").unwrap();
    far.insert("scaling-64".into(), check("scaling-64", &topo(&spec)));
    // ACS on a GPU's switch port redirects its pairs under that host bridge (reason words).
    let spec = layouts::apply_fault(layouts::hgx_h100(), "acs-redirect=0000:39:01.0").unwrap();
    check("hgx-h100 acs", &topo(&spec));
    // Where endpoints sit under several host bridges, the group table answers most cells.
    for name in ["dgx-a100", "hgx-h100"] {
        assert!(far[name] > 0, "{name}: no cell from the group table");
    }
    eprintln!("cells from the group table: {far:?}");
}

/// Endpoints under four host bridges on two NUMA nodes: an NVLink between two GPUs of
/// different host bridges (NV, not NODE/SYS) beside a plain GPU, a GPU whose NUMA node is not
/// its host bridge's, and a NIC whose Data Direct DMA function sits
/// next to a GPU under another host bridge, beside plain NICs of its own host bridge (the DMA
/// function's path, and the reason's words, differ from theirs).
#[test]
fn nvlink_and_data_direct_pairs_are_not_grouped() {
    let mut b = TopoBuilder::new(&["0-7", "8-15"]);
    b.bridge("0008:00:00.0", None, Some(0));
    b.switch(
        "0008:00:00.0",
        "0008:01:00.0",
        &["0008:02:00.0", "0008:02:01.0"],
        Some(0),
    );
    b.dev(
        "0008:03:00.0",
        Some("0008:02:00.0"),
        0x080100,
        (0x15b3, 0x2100),
        Some(0),
    );
    b.gpu("0008:04:00.0", Some("0008:02:01.0"), Some(0));
    for (k, bus) in ["01", "02", "03"].iter().enumerate() {
        let port = format!("0000:00:0{}.0", k + 1);
        b.bridge(&port, None, Some(0));
        b.nic(
            &format!("0000:{bus}:00.0"),
            Some(&port),
            Some(0),
            &[&format!("mlx5_{k}")],
        );
    }
    for d in 1..=3 {
        let numa = Some(if d == 3 { 0 } else { 1 });
        b.bridge(&format!("000{d}:00:00.0"), None, numa);
        b.gpu(
            &format!("000{d}:01:00.0"),
            Some(&format!("000{d}:00:00.0")),
            numa,
        );
        b.bridge(&format!("000{d}:00:01.0"), None, numa);
        b.nic(
            &format!("000{d}:02:00.0"),
            Some(&format!("000{d}:00:01.0")),
            numa,
            &[&format!("mlx5_{}", d + 4)],
        );
    }
    // A plain GPU beside the NVLink one, and one whose own NUMA node is not its host bridge's.
    b.bridge("0001:00:02.0", None, Some(1));
    b.gpu("0001:03:00.0", Some("0001:00:02.0"), Some(1));
    b.bridge("0003:00:02.0", None, Some(0));
    b.gpu("0003:03:00.0", Some("0003:00:02.0"), Some(1));
    b.nvlink("0001:01:00.0", Some("0002:01:00.0"), 4, Some(4));
    let mut t = b.build();
    let dd: Bdf = "0000:02:00.0".parse().unwrap();
    let i = t.device_index(&dd).unwrap();
    t.devices[i].data_direct = Some(DataDirect {
        dma: "0008:03:00.0".parse().unwrap(),
        evidence: "test".into(),
    });
    let far = check("nvlink + data direct", &t);
    assert!(far > 0);
    let c = Classifier::new(&t, &ClassifyOptions::default());
    let names: Vec<&str> = c.endpoints().iter().map(|e| e.name.as_str()).collect();
    let at = |bdf: &str| c.endpoint_index(&bdf.parse().unwrap()).unwrap();
    let cells = c.pair_cells(&vec![true; names.len()]);
    let cell = |a: &str, b: &str| {
        let code = cells.code(at(a), at(b)).unwrap();
        cells.cells[code as usize].clone().unwrap()
    };
    assert_eq!(cell("0001:01:00.0", "0002:01:00.0").0, Label::Nv(4));
    assert!(
        cell("0003:01:00.0", "0000:02:00.0")
            .1
            .contains("Data Direct")
    );
    assert!(
        !cell("0003:01:00.0", "0000:01:00.0")
            .1
            .contains("Data Direct")
    );
}
