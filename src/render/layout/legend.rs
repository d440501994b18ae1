//! The legend below the columns: box colours by kind, line colours by path class, badge
//! colours by severity, and the badge tags and line meaning in words.
//!
//! Data: none of the node's; the colours are [`BoxKind::fill`], [`label_colour`] and
//! [`severity_colour`].

use super::{
    BoxKind, FONT, LINE, LegendItem, MARGIN, Rect, TextLine, label_colour, severity_colour,
    text_width,
};
use crate::analysis::audit::Severity;
use crate::analysis::classify::Label;

/// The legend's frame, title and entries.
pub(super) struct Legend {
    /// Frame.
    pub(super) rect: Rect,
    /// Title.
    pub(super) title: TextLine,
    /// Entries.
    pub(super) items: Vec<LegendItem>,
}

/// An entry at `x` on the row whose top is `row_y`: a swatch `w` px wide (0: none) and its text
/// `text_dx` px right of `x`.
fn item(
    x: f32,
    row_y: f32,
    w: f32,
    text_dx: f32,
    colour: &str,
    line: bool,
    text: &str,
) -> LegendItem {
    let h = if w > 0.0 { 11.0 } else { 0.0 };
    LegendItem {
        swatch: Rect {
            x,
            y: row_y + 2.0,
            w,
            h,
        },
        colour: colour.to_string(),
        line,
        text: TextLine {
            x: x + text_dx,
            y: row_y + 11.0,
            text: text.to_string(),
            size: FONT,
            bold: false,
        },
    }
}

/// Lays out the legend below content ending at `content_bottom`.
pub(super) fn build(content_bottom: f32) -> Legend {
    let ly = content_bottom + 14.0;
    let lx = MARGIN;
    let title = TextLine {
        x: lx + 6.0,
        y: ly + 14.0,
        text: "Legend".into(),
        size: FONT,
        bold: true,
    };
    let kinds = [
        (BoxKind::Gpu, "GPU"),
        (BoxKind::Accelerator, "accelerator"),
        (BoxKind::Nic, "NIC"),
        (BoxKind::Nvme, "NVMe"),
        (BoxKind::Other, "other function"),
        (BoxKind::Switch, "PCIe switch"),
        (BoxKind::Port, "switch port"),
        (BoxKind::RootPort, "root port"),
        (BoxKind::HostBridge, "host bridge"),
        (BoxKind::Numa, "NUMA node"),
    ];
    let labels = [
        (Label::Pix, "PIX  one PCIe switch"),
        (Label::Pxb, "PXB  several switches"),
        (Label::Phb, "PHB  through the host bridge"),
        (Label::Node, "NODE between host bridges"),
        (Label::Sys, "SYS  across sockets"),
        (Label::Unknown, "?    unknown"),
    ];
    let sev = [
        (Severity::Error, "audit error on this hop"),
        (Severity::Warning, "audit warning on this hop"),
    ];
    let tag_help = [
        "ACS redirect · LINK degraded",
        "AER errors · PORT down · MPS",
        "line: GPU–NIC rail pair,",
        "label: its nvidia-smi class",
    ];
    let row = |i: usize| ly + 22.0 + i as f32 * (LINE + 2.0);
    let col1 = lx + 6.0;
    let col2 = col1 + 150.0;
    let col3 = col2 + 250.0;
    let mut items = Vec::new();
    for (r, (k, text)) in kinds.iter().enumerate() {
        items.push(item(col1, row(r), 18.0, 24.0, k.fill(), false, text));
    }
    for (r, (l, text)) in labels.iter().enumerate() {
        items.push(item(col2, row(r), 28.0, 34.0, label_colour(*l), true, text));
    }
    for (r, (s, text)) in sev.iter().enumerate() {
        items.push(item(
            col3,
            row(r),
            28.0,
            34.0,
            severity_colour(*s),
            false,
            text,
        ));
    }
    for (r, text) in tag_help.iter().enumerate() {
        items.push(item(col3, row(r + 2), 0.0, 0.0, "none", false, text));
    }
    let legend_w = col3 - lx + text_width(30, FONT) + 12.0;
    Legend {
        rect: Rect {
            x: lx,
            y: ly,
            w: legend_w,
            h: row(kinds.len()) - ly + 4.0,
        },
        title,
        items,
    }
}
