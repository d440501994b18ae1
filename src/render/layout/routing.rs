//! The rail lines: each GPU–NIC rail pair is a polyline from the right side of one box, through
//! a lane of the gutter right of its column, to the other box, labelled with the pair's class.
//! Lanes are shared only by lines whose vertical spans do not overlap; several lines on one box
//! attach at points spread over its side.
//!
//! Data: the rail pairs [`crate::analysis::pairing::rail_pairs`] chose, the boxes as
//! [`super::placement`] placed them, and each pair's class, reason and bottleneck from the
//! classification [`Matrix`].

use super::placement::column_of;
use super::{Connector, LANE, LaidBox, Rect, SMALL, text_width};
use crate::analysis::classify::{Label, Matrix};
use crate::analysis::pairing::{RailPair, RailPairSource};
use std::collections::HashMap;

/// Where the rail pairs come from, in words (a header line of the picture).
pub(super) fn source_text(s: RailPairSource) -> String {
    match s {
        RailPairSource::Audit => "rail pairs: the audit's GPU→NIC matching",
        RailPairSource::Nearest => {
            "rail pairs: each GPU/accelerator to its nearest NIC (no GPU–RDMA NIC matching)"
        }
    }
    .to_string()
}

/// Interval lanes: the lowest lane whose intervals do not overlap `(lo, hi)`.
pub(super) fn take_lane(lanes: &mut Vec<Vec<(f32, f32)>>, lo: f32, hi: f32) -> usize {
    for (i, l) in lanes.iter_mut().enumerate() {
        if l.iter().all(|&(a, b)| hi < a || lo > b) {
            l.push((lo, hi));
            return i;
        }
    }
    lanes.push(vec![(lo, hi)]);
    lanes.len() - 1
}

/// One rail line's route: from box `a` (the one in the left or same column) to box `b`.
struct Route {
    a: usize,
    b: usize,
    gutter: usize,
    lane: usize,
    ya: f32,
    yb: f32,
}

/// A rail pair whose boxes are both drawn: names and box indices.
struct Drawn<'a> {
    pair: &'a RailPair,
    compute: usize,
    nic: usize,
}

/// The routes of all rail lines, before the gutters are sized.
pub(super) struct Routes<'a> {
    routes: Vec<Route>,
    drawn: Vec<Drawn<'a>>,
    /// Lanes taken in each column's gutter.
    lanes: Vec<usize>,
}

impl Routes<'_> {
    /// Width of each column's gutter: room for its lanes.
    pub(super) fn gutters(&self) -> Vec<f32> {
        self.lanes.iter().map(|&n| 24.0 + LANE * n as f32).collect()
    }
}

/// Routes the rail pairs over boxes placed once (`boxes` with any gutters: only their vertical
/// positions and columns matter) in a picture of `columns` columns.
pub(super) fn route<'a>(boxes: &[LaidBox], pairs: &'a [RailPair], columns: usize) -> Routes<'a> {
    let find = |name: &str| {
        boxes
            .iter()
            .position(|b| b.endpoint.as_deref() == Some(name))
    };
    let mut lanes: Vec<Vec<Vec<(f32, f32)>>> = vec![Vec::new(); columns];
    let mut routes = Vec::new();
    // Attachment points spread over the box side when several connectors share a box.
    let mut uses: HashMap<usize, usize> = HashMap::new();
    let mut drawn = Vec::new();
    for p in pairs {
        if let (Some(gi), Some(ni)) = (find(&p.compute), find(&p.nic)) {
            *uses.entry(gi).or_default() += 1;
            *uses.entry(ni).or_default() += 1;
            drawn.push(Drawn {
                pair: p,
                compute: gi,
                nic: ni,
            });
        }
    }
    let mut seen: HashMap<usize, usize> = HashMap::new();
    let mut attach = |i: usize| -> f32 {
        let k = seen.entry(i).or_default();
        *k += 1;
        let n = uses.get(&i).copied().unwrap_or(1);
        let r = boxes[i].rect;
        r.y + r.h * (*k as f32) / (n as f32 + 1.0)
    };
    for d in &drawn {
        let (gi, ni) = (d.compute, d.nic);
        let (ca, cb) = (column_of(boxes, gi), column_of(boxes, ni));
        let (a, b) = if ca <= cb { (gi, ni) } else { (ni, gi) };
        let ya = attach(a);
        let yb = attach(b);
        let gutter = column_of(boxes, a);
        let lo = ya.min(yb) - 9.0;
        let hi = ya.max(yb) + 9.0;
        let lane = take_lane(&mut lanes[gutter], lo, hi);
        routes.push(Route {
            a,
            b,
            gutter,
            lane,
            ya,
            yb,
        });
    }
    Routes {
        routes,
        drawn,
        lanes: lanes.iter().map(Vec::len).collect(),
    }
}

/// The rail lines over the final boxes, whose columns span `spans`, with their class labels and
/// hover titles (class, reason, bottleneck).
pub(super) fn connectors(
    r: &Routes,
    boxes: &[LaidBox],
    spans: &[(f32, f32)],
    m: &Matrix,
) -> Vec<Connector> {
    let mut out = Vec::new();
    for (r, d) in r.routes.iter().zip(&r.drawn) {
        let ra = boxes[r.a].rect;
        let rb = boxes[r.b].rect;
        let lx = spans[r.gutter].1 + 8.0 + LANE / 2.0 + LANE * r.lane as f32;
        let same = column_of(boxes, r.a) == column_of(boxes, r.b);
        let end_x = if same { rb.right() } else { rb.x };
        let points = vec![(ra.right(), r.ya), (lx, r.ya), (lx, r.yb), (end_x, r.yb)];
        let pc = match (boxes[d.compute].bdf, boxes[d.nic].bdf) {
            (Some(a), Some(b)) => m.pair(&a, &b),
            _ => None,
        };
        let label = pc.map(|p| p.label).unwrap_or(Label::Unknown);
        let lw = text_width(label.to_string().chars().count().max(3), SMALL) + 8.0;
        let my = (r.ya + r.yb) / 2.0;
        let (g, n) = (&d.pair.compute, &d.pair.nic);
        let mut title = format!("{g} ↔ {n}: {label}");
        if let Some(p) = pc {
            title.push_str(&format!("\n{}", p.reason));
            if let (Some(bw), Some(h)) = (p.bottleneck_gbytes_per_s, p.bottleneck_hop) {
                let hop = p.hops.get(h).map(|x| x.node.as_str()).unwrap_or("?");
                title.push_str(&format!("\nbottleneck {bw:.1} GB/s at {hop}"));
            }
        }
        out.push(Connector {
            from: g.clone(),
            to: n.clone(),
            label,
            points,
            label_rect: Rect {
                x: lx - lw / 2.0,
                y: my - 7.0,
                w: lw,
                h: 14.0,
            },
            title,
        });
    }
    out
}
