//! Columns and positions: how wide each NUMA column is, where a tall column is split into
//! continued columns, and where every box and its text lines land.
//!
//! Data: the box tree from [`super::boxes`] and the badges (and badge rows) from
//! [`super::badges`]; gutter widths between columns from [`super::routing`].

use super::badges::{self, Badges};
use super::boxes::{Node, depth};
use super::{
    BoxKind, FONT, GAP, LANE, LEAF_CHARS, LINE, LaidBox, MARGIN, PAD, Rect, SMALL, TextLine, fit,
    line_chars, selector_chars, text_width,
};
use std::collections::HashMap;

/// Height of a node with its badge rows.
pub(super) fn height(n: &Node, badge_rows: &HashMap<String, usize>) -> f32 {
    let extra = *badge_rows.get(&n.id).unwrap_or(&0) as f32 * LINE;
    if n.is_leaf() {
        return n.lines.len() as f32 * LINE + 6.0 + extra;
    }
    let head = n.lines.len() as f32 * LINE + 4.0 + extra;
    let kids: f32 = n
        .children
        .iter()
        .map(|c| height(c, badge_rows))
        .sum::<f32>()
        + GAP * n.children.len().saturating_sub(1) as f32;
    head + kids + PAD
}

/// Column widths: the deepest leaf decides; leaves are at least [`LEAF_CHARS`] wide.
pub(super) fn column_widths(columns: &[Node]) -> Vec<f32> {
    let leaf_w = text_width(LEAF_CHARS, FONT) + 10.0;
    columns
        .iter()
        .map(|c| leaf_w + 2.0 * PAD * depth(c) as f32)
        .collect()
}

/// A NUMA column much taller than the picture is wide is split into continued columns (at
/// host-bridge boundaries), so the whole node keeps a page-like shape. Returns the columns and
/// their widths.
pub(super) fn split_tall(
    columns: Vec<Node>,
    col_w: Vec<f32>,
    badge_rows: &HashMap<String, usize>,
) -> (Vec<Node>, Vec<f32>) {
    let hb_h = |n: &Node| height(n, badge_rows) + GAP;
    let all_hbs = || columns.iter().flat_map(|c| c.children.iter());
    let total: f32 = all_hbs().map(hb_h).sum();
    let tallest = all_hbs().map(hb_h).fold(0.0, f32::max);
    let avg_w = col_w.iter().sum::<f32>() / col_w.len().max(1) as f32 + 24.0 + LANE;
    let target = (total * avg_w / 1.3).sqrt().max(tallest).max(500.0);
    let mut split_cols: Vec<Node> = Vec::new();
    let mut split_w: Vec<f32> = Vec::new();
    for (c, w) in columns.into_iter().zip(col_w) {
        let sum: f32 = c.children.iter().map(hb_h).sum();
        let k = ((sum / target).ceil() as usize).clamp(1, c.children.len().max(1));
        let Node {
            id,
            lines,
            title,
            children,
            ..
        } = c;
        let per = sum / k as f32;
        let mut chunks: Vec<Vec<Node>> = vec![Vec::new()];
        let mut acc = 0.0;
        for h in children {
            let hh = hb_h(&h);
            if chunks.len() < k
                && acc + hh / 2.0 > per
                && chunks.last().is_some_and(|c| !c.is_empty())
            {
                chunks.push(Vec::new());
                acc = 0.0;
            }
            acc += hh;
            if let Some(last) = chunks.last_mut() {
                last.push(h);
            }
        }
        let short = lines
            .first()
            .map(|l| l.0.split(" · ").next().unwrap_or("").to_string())
            .unwrap_or_default();
        for (i, ch) in chunks.into_iter().enumerate() {
            let (cid, clines) = if i == 0 {
                (id.clone(), lines.clone())
            } else {
                (
                    format!("{id}-cont{i}"),
                    vec![(format!("{short} (cont.)"), true)],
                )
            };
            split_cols.push(Node {
                kind: BoxKind::Numa,
                id: cid,
                lines: clines,
                title: title.clone(),
                bdf: None,
                endpoint: None,
                children: ch,
            });
            split_w.push(w);
        }
    }
    (split_cols, split_w)
}

struct Placer<'a> {
    boxes: Vec<LaidBox>,
    badges: &'a Badges,
    badge_rows: &'a HashMap<String, usize>,
}

impl Placer<'_> {
    fn place(&mut self, n: &Node, x: f32, y: f32, w: f32, parent: Option<usize>) -> f32 {
        let h = height(n, self.badge_rows);
        let rect = Rect { x, y, w, h };
        let leaf = n.is_leaf();
        let chars = line_chars(w);
        let top = if leaf { 3.0 } else { 2.0 };
        let sel_chars = selector_chars(n.endpoint.is_some());
        let mut lines = Vec::new();
        for (i, (t, bold)) in n.lines.iter().enumerate() {
            let room = if i == 0 {
                chars - sel_chars.min(chars)
            } else {
                chars
            };
            lines.push(TextLine {
                x: x + 5.0,
                y: y + top + (i as f32 + 1.0) * LINE - 3.5,
                text: fit(t, room),
                size: FONT,
                bold: *bold,
            });
        }
        let rows = *self.badge_rows.get(&n.id).unwrap_or(&0);
        let badges = match self.badges.get(&n.id) {
            Some(list) => {
                let first_used = lines.first().map(|l| l.rect().right()).unwrap_or(x);
                badges::place(list, n, rect, top, first_used, rows)
            }
            None => Vec::new(),
        };
        let select_slot = n.endpoint.as_ref().map(|_| {
            let sw = text_width(4, SMALL) + 6.0;
            Rect {
                x: x + w - 4.0 - sw,
                y: y + top + 1.0,
                w: sw,
                h: 12.0,
            }
        });
        let me = self.boxes.len();
        self.boxes.push(LaidBox {
            id: n.id.clone(),
            kind: n.kind,
            rect,
            parent,
            lines,
            title: n.title.clone(),
            badges,
            bdf: n.bdf,
            endpoint: n.endpoint.clone(),
            select_slot,
            pair_labels: Vec::new(),
        });
        if !leaf {
            let extra = rows as f32 * LINE;
            let mut cy = y + n.lines.len() as f32 * LINE + 4.0 + extra;
            for c in &n.children {
                let ch = self.place(c, x + PAD, cy, w - 2.0 * PAD, Some(me));
                cy += ch + GAP;
            }
        }
        h
    }
}

/// Places the columns left to right from the top margin, each followed by its gutter. Returns
/// the boxes (parents before children) and each column's horizontal span.
pub(super) fn place_columns(
    columns: &[Node],
    col_w: &[f32],
    gutters: &[f32],
    badges: &Badges,
    badge_rows: &HashMap<String, usize>,
) -> (Vec<LaidBox>, Vec<(f32, f32)>) {
    let mut p = Placer {
        boxes: Vec::new(),
        badges,
        badge_rows,
    };
    let mut x = MARGIN;
    let mut spans = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        p.place(c, x, MARGIN, col_w[i], None);
        spans.push((x, x + col_w[i]));
        x += col_w[i] + gutters[i];
    }
    (p.boxes, spans)
}

/// Index of the column that box `i` lies in.
pub(super) fn column_of(boxes: &[LaidBox], i: usize) -> usize {
    let mut cur = i;
    while let Some(p) = boxes[cur].parent {
        cur = p;
    }
    boxes
        .iter()
        .take(cur)
        .filter(|b| b.parent.is_none())
        .count()
}
