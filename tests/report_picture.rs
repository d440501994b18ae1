//! The node picture (`peerpath report`) of the synthesized HGX H100, DGX A100, misplaced-NIC and
//! VM layouts and of a real hwloc snapshot: every device has a box in the layout, boxes nest
//! without overlapping, text (as the real font shapes it) stays inside its box and the canvas,
//! and the rendered PNG shows each box's fill colour inside it and each pair's class colour on
//! its label. Faults show as badges on the hop where they are.
//!
//! With `PEERPATH_WRITE_DOCS=1` the PNGs are also written to `docs/img/` (the reviewable
//! artefacts committed with the code).

use peerpath::analysis::audit::{self, AuditOptions, Report, Severity};
use peerpath::analysis::classify::{Classifier, ClassifyOptions, Label, Matrix, classify_all};
use peerpath::model::topology::SourceInfo;
use peerpath::model::{Bdf, DeviceKind, Topology};
use peerpath::render::layout::{self, BoxKind, Inputs, Layout, Rect};
use peerpath::render::{png, svg};
use peerpath::sources::sysfs::{self, ScanOptions};
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{self, Spec, WriteOptions, layouts};
use resvg::tiny_skia::Pixmap;
use resvg::usvg;
use std::path::{Path, PathBuf};

fn pci_ids() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/share/misc/pci.ids");
    p.is_file().then_some(p)
}

fn scan(spec: &Spec) -> Topology {
    let root = synth::to_mem_root(spec, &WriteOptions::default()).unwrap();
    let src = SourceInfo {
        kind: "synth".into(),
        path: format!("synth:{}", spec.name),
        limitations: vec![],
    };
    sysfs::scan(&root, src, &ScanOptions { pci_ids: pci_ids() }).unwrap()
}

struct Drawn {
    topo: Topology,
    matrix: Matrix,
    audit: Report,
    layout: Layout,
    svg: String,
}

fn draw(topo: Topology) -> Drawn {
    let matrix = classify_all(&topo, &ClassifyOptions::default());
    let audit = audit::run(&topo, &AuditOptions::default());
    let classifier = Classifier::new(&topo, &ClassifyOptions::default());
    let layout = layout::build(&Inputs {
        topo: &topo,
        classifier: &classifier,
        audit: &audit,
        pair_labels: true,
    });
    drop(classifier);
    let svg = svg::render(&layout);
    Drawn {
        topo,
        matrix,
        audit,
        layout,
        svg,
    }
}

fn fonts() -> Vec<PathBuf> {
    png::find_fonts(None).expect("DejaVu Sans Mono (package fonts-dejavu-core) is needed")
}

fn hex(c: &str) -> (u8, u8, u8) {
    let v = u32::from_str_radix(c.trim_start_matches('#'), 16).unwrap();
    ((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

fn pixel(p: &Pixmap, x: f32, y: f32) -> (u8, u8, u8) {
    let px = p
        .pixel(x as u32, y as u32)
        .unwrap_or_else(|| panic!("({x},{y}) off the image"));
    let c = px.demultiply();
    (c.red(), c.green(), c.blue())
}

fn close(a: (u8, u8, u8), b: (u8, u8, u8)) -> bool {
    a.0.abs_diff(b.0) <= 3 && a.1.abs_diff(b.1) <= 3 && a.2.abs_diff(b.2) <= 3
}

fn is_ancestor(l: &Layout, anc: usize, mut i: usize) -> bool {
    while let Some(p) = l.boxes[i].parent {
        if p == anc {
            return true;
        }
        i = p;
    }
    false
}

fn inside(outer: &Rect, r: &Rect, slack: f32) -> bool {
    r.x >= outer.x - slack
        && r.y >= outer.y - slack
        && r.right() <= outer.right() + slack
        && r.bottom() <= outer.bottom() + slack
}

/// Everything that must hold for any picture; returns the rendered pixmap (scale 1).
fn check_picture(d: &Drawn, name: &str) -> Pixmap {
    let l = &d.layout;
    let canvas = Rect {
        x: 0.0,
        y: 0.0,
        w: l.width,
        h: l.height,
    };
    // A box for every endpoint, switch and non-empty port; VFs folded into their PF.
    for dev in &d.topo.devices {
        let b = l.box_of(&dev.bdf);
        if dev.is_vf() {
            assert!(b.is_none(), "{name}: VF {} drawn", dev.bdf);
            continue;
        }
        let must = matches!(
            dev.kind,
            DeviceKind::Gpu
                | DeviceKind::Accelerator
                | DeviceKind::Nic
                | DeviceKind::Nvme
                | DeviceKind::SwitchUpstream
        ) || (dev.kind.is_bridge()
            && d.topo.children(&dev.bdf).iter().any(|c| !c.is_vf()));
        if must {
            let b = b.unwrap_or_else(|| panic!("{name}: no box for {} ({:?})", dev.bdf, dev.kind));
            if dev.vf_count > 0 {
                assert!(
                    b.lines
                        .iter()
                        .any(|t| t.text.contains(&format!("+{} VFs", dev.vf_count))),
                    "{name}: {} does not say +{} VFs",
                    dev.bdf,
                    dev.vf_count
                );
            }
        }
    }
    // Every endpoint of the matrix is drawn with its name.
    for e in &d.matrix.endpoints {
        let b = l
            .box_of(&e.bdf)
            .unwrap_or_else(|| panic!("{name}: no box for {}", e.name));
        assert_eq!(b.endpoint.as_deref(), Some(e.name.as_str()));
        assert!(
            b.lines[0].text.starts_with(&e.name),
            "{name}: {}",
            b.lines[0].text
        );
    }
    // Boxes nest: inside the parent, and two boxes overlap only when one holds the other.
    for (i, b) in l.boxes.iter().enumerate() {
        assert!(
            inside(&canvas, &b.rect, 0.0),
            "{name}: {} off the canvas",
            b.id
        );
        if let Some(p) = b.parent {
            assert!(
                l.boxes[p].rect.contains(&b.rect),
                "{name}: {} sticks out of {}",
                b.id,
                l.boxes[p].id
            );
        }
        for (j, o) in l.boxes.iter().enumerate().skip(i + 1) {
            if b.rect.overlaps(&o.rect) {
                assert!(
                    is_ancestor(l, i, j) || is_ancestor(l, j, i),
                    "{name}: {} and {} overlap",
                    b.id,
                    o.id
                );
            }
        }
        for t in &b.lines {
            assert!(
                inside(&b.rect, &t.rect(), 0.0),
                "{name}: {:?} outside {}",
                t.text,
                b.id
            );
        }
        for g in &b.badges {
            assert!(
                inside(&b.rect, &g.rect, 0.0),
                "{name}: badge {} outside {}",
                g.tag,
                b.id
            );
            for t in &b.lines {
                assert!(
                    !t.rect().overlaps(&g.rect),
                    "{name}: badge {} over {:?}",
                    g.tag,
                    t.text
                );
            }
        }
    }
    // Pair labels do not cover each other and stay on the canvas.
    for (i, c) in l.connectors.iter().enumerate() {
        assert!(inside(&canvas, &c.label_rect, 0.0));
        for p in &c.points {
            assert!(p.0 >= 0.0 && p.0 <= l.width && p.1 >= 0.0 && p.1 <= l.height);
        }
        for o in l.connectors.iter().skip(i + 1) {
            assert!(
                !c.label_rect.overlaps(&o.label_rect),
                "{name}: labels of {}–{} and {}–{} overlap",
                c.from,
                c.to,
                o.from,
                o.to
            );
        }
        // Labels do not sit on a box's text.
        for b in &l.boxes {
            for t in &b.lines {
                assert!(
                    !t.rect().overlaps(&c.label_rect),
                    "{name}: label of {}–{} covers {:?}",
                    c.from,
                    c.to,
                    t.text
                );
            }
        }
    }
    for t in l.all_text() {
        assert!(
            inside(&canvas, &t.rect(), 0.0),
            "{name}: {:?} off the canvas",
            t.text
        );
    }

    // The real font: every shaped text inside the canvas, and a box's texts inside the box.
    let fonts = fonts();
    let mut db = usvg::fontdb::Database::new();
    for f in &fonts {
        db.load_font_data(std::fs::read(f).unwrap());
    }
    db.set_monospace_family("DejaVu Sans Mono");
    let opts = usvg::Options {
        font_family: "DejaVu Sans Mono".into(),
        fontdb: std::sync::Arc::new(db),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(&d.svg, &opts).unwrap();
    let mut n_text = 0;
    fn walk(
        g: &usvg::Group,
        owner: Option<Rect>,
        l: &Layout,
        canvas: &Rect,
        n: &mut usize,
        name: &str,
    ) {
        for node in g.children() {
            match node {
                usvg::Node::Group(sub) => {
                    let own = l
                        .boxes
                        .iter()
                        .find(|b| !sub.id().is_empty() && b.id == sub.id())
                        .map(|b| b.rect)
                        .or(owner);
                    walk(sub, own, l, canvas, n, name);
                }
                usvg::Node::Text(t) => {
                    *n += 1;
                    let bb = t.abs_bounding_box();
                    let r = Rect {
                        x: bb.x(),
                        y: bb.y(),
                        w: bb.width(),
                        h: bb.height(),
                    };
                    assert!(
                        inside(canvas, &r, 0.5),
                        "{name}: text at {r:?} off the canvas"
                    );
                    if let Some(o) = owner {
                        assert!(
                            inside(&o, &r, 0.5),
                            "{name}: text at {r:?} outside its box {o:?}"
                        );
                    }
                }
                _ => {}
            }
        }
    }
    walk(tree.root(), None, l, &canvas, &mut n_text, name);
    let expected = l.all_text().count()
        + l.connectors.len()
        + l.boxes.iter().map(|b| b.badges.len()).sum::<usize>();
    assert!(
        n_text >= expected,
        "{name}: {n_text} texts shaped, {expected} laid out (font missing glyphs?)"
    );

    // Pixels: each box's fill inside it (bottom-left corner, clear of text and children), each
    // pair label's class colour, each badge's severity colour.
    let pm = png::rasterise(&d.svg, &fonts, 1.0).unwrap();
    for b in &l.boxes {
        let got = pixel(&pm, b.rect.x + 3.0, b.rect.bottom() - 3.0);
        assert!(
            close(got, hex(b.kind.fill())),
            "{name}: {} shows {got:?}, fill {}",
            b.id,
            b.kind.fill()
        );
        for g in &b.badges {
            let got = pixel(&pm, g.rect.x + 1.5, g.rect.y + g.rect.h / 2.0);
            assert!(
                close(got, hex(layout::severity_colour(g.severity))),
                "{name}: badge {}",
                g.tag
            );
        }
    }
    for c in &l.connectors {
        let got = pixel(
            &pm,
            c.label_rect.x + 2.0,
            c.label_rect.y + c.label_rect.h / 2.0,
        );
        assert!(
            close(got, hex(layout::label_colour(c.label))),
            "{name}: label of {}–{} shows {got:?}",
            c.from,
            c.to
        );
    }
    if std::env::var_os("PEERPATH_WRITE_DOCS").is_some() {
        let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/img");
        std::fs::create_dir_all(&out).unwrap();
        let bytes = png::render(&d.svg, &fonts, 1.5).unwrap();
        std::fs::write(out.join(format!("report-{name}.png")), bytes).unwrap();
    }
    pm
}

fn connector<'a>(l: &'a Layout, from: &str) -> &'a layout::Connector {
    l.connectors
        .iter()
        .find(|c| c.from == from)
        .unwrap_or_else(|| panic!("no rail pair from {from}"))
}

#[test]
fn hgx_h100_picture() {
    let d = draw(scan(&layouts::hgx_h100()));
    check_picture(&d, "hgx-h100");
    let l = &d.layout;
    // Two NUMA nodes (tall ones continue in a second column), 8 GPUs each paired with its own
    // NIC through one switch: PIX.
    let numa: Vec<&str> = l
        .boxes
        .iter()
        .filter(|b| b.kind == BoxKind::Numa && !b.id.contains("cont"))
        .map(|b| b.id.as_str())
        .collect();
    assert_eq!(numa, ["numa-0", "numa-1"]);
    assert_eq!(l.connectors.len(), 8);
    for i in 0..8 {
        let c = connector(l, &format!("GPU{i}"));
        assert_eq!(c.to, format!("NIC{i}"));
        assert_eq!(c.label, Label::Pix);
    }
    assert_eq!(
        l.boxes.iter().filter(|b| b.kind == BoxKind::Switch).count(),
        8
    );
    // One page.
    assert!(
        l.width <= 2400.0 && l.height <= 2400.0,
        "{}x{}",
        l.width,
        l.height
    );
}

#[test]
fn dgx_a100_picture() {
    let d = draw(scan(&layouts::dgx_a100()));
    check_picture(&d, "dgx-a100");
    let l = &d.layout;
    let gpus = l.boxes.iter().filter(|b| b.kind == BoxKind::Gpu).count();
    let nics = l.boxes.iter().filter(|b| b.kind == BoxKind::Nic).count();
    assert_eq!(gpus, 8);
    assert!(nics >= 10, "{nics} NIC boxes");
    assert_eq!(l.connectors.len(), 8);
    assert!(
        l.connectors
            .iter()
            .all(|c| c.label == Label::Pxb || c.label == Label::Pix)
    );
    assert!(
        l.width <= 2400.0 && l.height <= 2400.0,
        "{}x{}",
        l.width,
        l.height
    );
}

#[test]
fn misplaced_nic_picture() {
    let d = draw(scan(&layouts::misplaced_nic()));
    check_picture(&d, "misplaced-nic");
    let l = &d.layout;
    let c = connector(l, "GPU3");
    // The one pairing gives GPU3 the nearest NIC it can get: GPU0's, on another host bridge
    // of the same socket (its own NIC sits on the other socket, unpaired).
    assert_eq!(c.label, Label::Node, "GPU3 shares a NODE NIC");
    // The connector leaves the GPU's column and enters the NIC box from its left side.
    let g = l
        .boxes
        .iter()
        .find(|b| b.endpoint.as_deref() == Some("GPU3"))
        .unwrap();
    let n = l
        .boxes
        .iter()
        .find(|b| b.endpoint.as_deref() == Some(c.to.as_str()))
        .unwrap();
    let ends = (c.points[0], *c.points.last().unwrap());
    let touches =
        |r: &Rect, p: (f32, f32)| (p.0 - r.x).abs() < 0.1 || (p.0 - r.right()).abs() < 0.1;
    assert!(touches(&g.rect, ends.0) || touches(&g.rect, ends.1));
    assert!(touches(&n.rect, ends.0) || touches(&n.rect, ends.1));
    assert!(
        l.connectors
            .iter()
            .filter(|c| c.label == Label::Pix)
            .count()
            >= 7
    );
}

#[test]
fn vm_picture() {
    let d = draw(scan(&layouts::vm_flat()));
    check_picture(&d, "vm-flat");
    let l = &d.layout;
    assert!(
        l.header.iter().any(|t| t.text.contains("virtual machine")),
        "the VM is said in the header"
    );
    assert_eq!(l.connectors.len(), 1);
}

#[test]
fn hwloc_snapshot_picture() {
    // Relative to the package root (the test's working directory): the path is printed in the
    // picture's title.
    let path = Path::new("fixtures/hwloc/32intel64-2p8co2t+8ve.tar.bz2");
    let t = sources::load(
        Some(path),
        &LoadOptions {
            pci_ids: pci_ids(),
            ..Default::default()
        },
    )
    .unwrap();
    let d = draw(t);
    check_picture(&d, "hwloc-32intel64-8ve");
    let l = &d.layout;
    assert_eq!(
        l.boxes
            .iter()
            .filter(|b| b.kind == BoxKind::Accelerator)
            .count(),
        8
    );
    // Without RDMA NICs or GPUs, each accelerator is drawn to its nearest NIC.
    assert_eq!(l.connectors.len(), 8);
    assert!(l.pairs_source.contains("nearest"));
}

#[test]
fn faults_are_marked_on_their_hop() {
    let spec = layouts::hgx_h100();
    let port = layouts::hgx_nic_port(2);
    let spec = layouts::with_acs_redirect(spec, port).unwrap();
    let nic = layouts::hgx_nic(5);
    let spec = layouts::with_link_width(spec, nic, 8).unwrap();
    let switch: Bdf = "0000:ba:00.0".parse().unwrap(); // upstream port of GPU6/NIC6's switch
    let spec = layouts::with_aer(spec, switch, 12, 0, 0).unwrap();
    let d = draw(scan(&spec));
    check_picture(&d, "hgx-h100-faults");
    let l = &d.layout;
    let acs = l.box_of(&port).unwrap();
    let b = acs
        .badges
        .iter()
        .find(|b| b.tag == "ACS")
        .expect("ACS badge on the port");
    assert_eq!(b.severity, Severity::Error);
    let link = l.box_of(&nic).unwrap();
    assert!(
        link.badges.iter().any(|b| b.tag == "LINK"),
        "LINK badge on NIC5: {:?}",
        link.badges
    );
    assert!(
        link.lines.iter().any(|t| t.text.contains("x8 of x16")),
        "{:?}",
        link.lines
    );
    let aer = l.box_of(&switch).unwrap();
    assert_eq!(aer.kind, BoxKind::Switch);
    let b = aer
        .badges
        .iter()
        .find(|b| b.tag == "AER")
        .expect("AER badge on the switch");
    assert_eq!(b.severity, Severity::Warning, "correctable errors only");
    // Nothing else is marked on the clean pairs.
    let clean: Bdf = layouts::hgx_gpu(0);
    assert!(l.box_of(&clean).unwrap().badges.is_empty());
    assert!(
        d.audit
            .findings
            .iter()
            .any(|f| f.id == peerpath::analysis::audit::CheckId::AcsRedirect)
    );
}

#[test]
fn vfs_are_collapsed() {
    let d = draw(scan(&layouts::many_vfs(64)));
    check_picture(&d, "many-vfs-64");
    let vfs = d.topo.devices.iter().filter(|x| x.is_vf()).count();
    assert_eq!(vfs, 64);
    let nic_boxes = d
        .layout
        .boxes
        .iter()
        .filter(|b| b.kind == BoxKind::Nic)
        .count();
    assert_eq!(nic_boxes, 1);
}

#[test]
fn missing_font_is_a_clear_error() {
    let e = png::find_fonts(Some(Path::new("/nonexistent/font.ttf"))).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/font.ttf"));
}

/// The PNG file decodes to exactly the pixels `rasterise` draws, for a picture drawn in several
/// strips: each strip is filtered and deflated on its own thread and the pieces are joined into
/// one zlib stream (issue 54), so a piece filtered against another strip's row, a piece out of
/// order, a wrong checksum or a missing flush shows here as a decode error or changed pixels.
#[test]
fn hgx_h100_png_file_holds_the_drawn_pixels() {
    let d = draw(scan(&layouts::hgx_h100()));
    let fonts = fonts();
    let scale = 4.0;
    let drawn = png::rasterise(&d.svg, &fonts, scale).unwrap();
    assert!(
        drawn.height() > 2 * png::strip_rows(drawn.width()),
        "{}x{} is drawn in fewer than 3 strips",
        drawn.width(),
        drawn.height()
    );
    let bytes = png::render(&d.svg, &fonts, scale).unwrap();
    let mut dec = ::png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; dec.output_buffer_size().unwrap()];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (drawn.width(), drawn.height()));
    let want: Vec<u8> = drawn
        .pixels()
        .iter()
        .flat_map(|p| {
            let c = p.demultiply();
            [c.red(), c.green(), c.blue(), c.alpha()]
        })
        .collect();
    let differ = buf
        .chunks_exact(4)
        .zip(want.chunks_exact(4))
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(
        differ, 0,
        "{differ} pixels of the PNG differ from the drawn ones"
    );
}
