//! Audit findings as badges on the boxes of the devices (hops) they are about: error and
//! warning findings only, one badge per tag on a box, drawn on the box's first line when they fit
//! beside it, else on rows of their own below its lines.
//!
//! Data: the audit [`Report`]'s findings (id, severity, subject, summary). A subject is a PCI
//! address or an RDMA/net device name; a finding about a function that is not drawn (a VF, an
//! empty port) marks the nearest drawn box above it. The badge tag is [`CheckId::tag`].

use super::boxes::{self, Node};
use super::{Badge, FONT, PAD, Rect, SMALL, line_chars, selector_chars, text_width};
use crate::analysis::audit::{CheckId, Report, Severity, Subject};
use crate::model::{Bdf, Topology};
use std::collections::HashMap;

/// A badge before placement.
pub(super) struct BadgeSpec {
    /// Short tag (`ACS`).
    pub(super) tag: String,
    /// The finding's severity.
    pub(super) severity: Severity,
    /// Hover title: severity, finding id and summary.
    pub(super) title: String,
}

/// Badges by the id of the box they go on.
pub(super) type Badges = HashMap<String, Vec<BadgeSpec>>;

/// Width of a badge with tag `tag`, px.
fn badge_width(tag: &str) -> f32 {
    text_width(tag.chars().count(), SMALL) + 6.0
}

/// Width of a row of badges, each followed by its 3 px gap.
fn row_width(list: &[BadgeSpec]) -> f32 {
    list.iter().map(|b| badge_width(&b.tag) + 3.0).sum()
}

/// Width kept free on an endpoint box's first line for the HTML selector's class.
fn selector_width(endpoint: bool) -> f32 {
    if endpoint {
        text_width(5, SMALL) + 8.0
    } else {
        0.0
    }
}

/// The badges of every drawn box the audit's error and warning findings concern.
pub(super) fn collect(t: &Topology, audit: &Report, columns: &[Node]) -> Badges {
    let node_ids = boxes::ids_by_bdf(columns);
    let resolve = |subject: &Subject| -> Option<String> {
        let bdf: Option<Bdf> = subject.bdf().or_else(|| {
            let name = subject.rdma()?;
            t.devices
                .iter()
                .find(|d| d.rdma_names().any(|r| r == name) || d.net_names().any(|r| r == name))
                .map(|d| d.bdf)
        });
        let mut cur = bdf?;
        // A folded function (VF, empty port) marks the nearest drawn box above it.
        for _ in 0..64 {
            if let Some(id) = node_ids.get(&cur) {
                return Some(id.clone());
            }
            let d = t.device(&cur)?;
            cur = d.physfn.or(d.parent)?;
        }
        None
    };
    let mut out: Badges = HashMap::new();
    for f in &audit.findings {
        // A GPU–NIC path finding is about a pair: the rail line's label already shows it.
        if !matches!(f.severity, Severity::Error | Severity::Warning) || f.id == CheckId::GpuNicPath
        {
            continue;
        }
        if let Some(id) = resolve(&f.subject) {
            let tag = f.id.tag().to_string();
            let list = out.entry(id).or_default();
            if !list.iter().any(|b| b.tag == tag) {
                list.push(BadgeSpec {
                    tag,
                    severity: f.severity,
                    title: format!("{} {}: {}", f.severity.as_str(), f.id, f.summary),
                });
            }
        }
    }
    out
}

/// Badge rows: for each box whose badges do not fit beside its first line, how many rows of
/// its own they take (boxes whose badges fit are not listed).
pub(super) fn rows(columns: &[Node], col_w: &[f32], badges: &Badges) -> HashMap<String, usize> {
    fn widths(n: &Node, w: f32, out: &mut HashMap<String, (f32, usize, bool)>) {
        let first = n.lines.first().map(|l| l.0.chars().count()).unwrap_or(0);
        out.insert(n.id.clone(), (w, first, n.endpoint.is_some()));
        for c in &n.children {
            widths(c, w - 2.0 * PAD, out);
        }
    }
    let mut wmap = HashMap::new();
    for (c, w) in columns.iter().zip(col_w) {
        widths(c, *w, &mut wmap);
    }
    let mut rows = HashMap::new();
    for (id, list) in badges {
        let Some(&(w, first, ep)) = wmap.get(id) else {
            continue;
        };
        let chars = line_chars(w);
        let sel = selector_chars(ep);
        let used = text_width(first.min(chars.saturating_sub(sel)), FONT) + 5.0;
        if used + row_width(list) + selector_width(ep) + 6.0 > w {
            let avail = w - 10.0;
            let mut n = 1;
            let mut acc = 0.0;
            for b in list {
                let bw = badge_width(&b.tag) + 3.0;
                if acc + bw > avail && acc > 0.0 {
                    n += 1;
                    acc = 0.0;
                }
                acc += bw;
            }
            rows.insert(id.clone(), n);
        }
    }
    rows
}

/// Places the badges `list` of box `n` drawn at `rect`: beside its first line (whose text ends
/// at `first_used`) when the box has no badge `rows` and they fit, else from the left on the
/// rows below its lines; `top` is the box's text inset.
pub(super) fn place(
    list: &[BadgeSpec],
    n: &Node,
    rect: Rect,
    top: f32,
    first_used: f32,
    rows: usize,
) -> Vec<Badge> {
    let Rect { x, y, w, .. } = rect;
    let sel_w = selector_width(n.endpoint.is_some());
    let total = row_width(list);
    let mut bx;
    let mut by;
    if rows == 0 && first_used + total + sel_w + 6.0 <= x + w {
        bx = x + w - 4.0 - sel_w - total + 3.0;
        by = y + top + 1.0;
    } else {
        bx = x + 5.0;
        by = y + top + n.lines.len() as f32 * super::LINE + 1.0;
    }
    let mut out = Vec::new();
    for b in list {
        let bw = badge_width(&b.tag);
        if bx + bw > x + w - 4.0 {
            bx = x + 5.0;
            by += super::LINE;
        }
        out.push(Badge {
            rect: Rect {
                x: bx,
                y: by,
                w: bw,
                h: 12.0,
            },
            tag: b.tag.clone(),
            severity: b.severity,
            title: b.title.clone(),
        });
        bx += bw + 3.0;
    }
    out
}
