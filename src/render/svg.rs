//! The node picture as SVG, written directly from the [`Layout`] (no geometry is computed
//! here). Every box is a `<g>` with a `<title>` (hover details) and `data-*` attributes the HTML
//! report's script reads: `data-ep` (endpoint name) and, in the standalone SVG only, `data-labels`
//! (`GPU0:PIX GPU1:SYS …`, the class of the pair with each GPU/accelerator) on endpoint boxes
//! (up to [`super::layout::MAX_PAIR_LABELS`] classes in all; above it a comment says they were
//! left out), `data-from`, `data-to`,
//! `data-label` on rail-pair connectors.

use super::layout::{
    Badge, Connector, LaidBox, Layout, Rect, SMALL, TextLine, label_colour, severity_colour,
};
use crate::analysis::classify::Label;
use std::fmt::Write;

/// Font families of the picture: the PNG renderer loads DejaVu Sans Mono; browsers fall back to
/// another monospace font of the same 0.6 em advance.
pub const FONT_FAMILY: &str = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace";

/// Escapes text for XML content and attribute values ([`super::escape::xml_text`]).
pub fn esc(s: &str) -> String {
    super::escape::xml_text(s)
}

fn n(v: f32) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

fn text(out: &mut String, t: &TextLine, fill: &str, class: &str) {
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="{}"{}{} fill="{fill}">{}</text>"#,
        n(t.x),
        n(t.y),
        n(t.size),
        if t.bold { r#" font-weight="bold""# } else { "" },
        if class.is_empty() {
            String::new()
        } else {
            format!(r#" class="{class}""#)
        },
        esc(&t.text)
    );
}

fn rect(out: &mut String, r: &Rect, fill: &str, stroke: &str, extra: &str) {
    let _ = writeln!(
        out,
        r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{stroke}"{extra}/>"#,
        n(r.x),
        n(r.y),
        n(r.w),
        n(r.h)
    );
}

/// A bold line in the small font (badge tags, rail-line labels).
fn small_bold(x: f32, y: f32, s: &str) -> TextLine {
    TextLine {
        x,
        y,
        text: s.to_string(),
        size: SMALL,
        bold: true,
    }
}

/// Text colour that reads on a label colour.
pub fn ink_on(l: Label) -> &'static str {
    match l {
        Label::Phb | Label::Pxb => "#000000",
        _ => "#ffffff",
    }
}

/// Writes the picture as a standalone SVG document.
pub fn render(l: &Layout) -> String {
    render_with(l, true)
}

/// Writes the picture for the HTML report: as [`render`], but endpoint boxes carry no
/// `data-labels` (the page holds every pair's class once, packed, and its script looks the
/// classes up from `data-ep` / `data-bdf`; per-box lists grow with boxes × GPUs).
pub fn render_for_page(l: &Layout) -> String {
    render_with(l, false)
}

fn render_with(l: &Layout, pair_labels: bool) -> String {
    let mut o = String::new();
    opening(&mut o, l, pair_labels);
    for b in &l.boxes {
        laid_box(&mut o, l, b, pair_labels);
    }
    for c in &l.connectors {
        connector(&mut o, c);
    }
    legend(&mut o, l);
    o.push_str("</svg>\n");
    o
}

/// The `<svg>` element, the note on left-out pair labels, the background and the header lines.
fn opening(o: &mut String, l: &Layout, pair_labels: bool) {
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT_FAMILY}" id="peerpath-picture">"#,
        w = n(l.width),
        h = n(l.height)
    );
    if let (true, Some(why)) = (pair_labels, &l.pair_labels_left_out) {
        let _ = writeln!(o, "<!-- {} -->", why.replace("--", "- -"));
    }
    rect(
        o,
        &Rect {
            x: 0.0,
            y: 0.0,
            w: l.width,
            h: l.height,
        },
        "#ffffff",
        "none",
        "",
    );
    for t in &l.header {
        text(o, t, "#111111", "");
    }
}

/// One box: its `<g>` with id, kind and `data-*` attributes, title, frame, lines, badges and the
/// selector's slot.
fn laid_box(o: &mut String, l: &Layout, b: &LaidBox, pair_labels: bool) {
    let mut attrs = format!(r#" id="{}" class="box {}""#, esc(&b.id), b.kind.name());
    if let Some(ep) = &b.endpoint {
        let _ = write!(attrs, r#" data-ep="{}""#, esc(ep));
        if pair_labels && l.pair_labels_left_out.is_none() {
            let labels: Vec<String> = b
                .pair_labels
                .iter()
                .map(|(g, lab)| format!("{g}:{lab}"))
                .collect();
            let _ = write!(attrs, r#" data-labels="{}""#, esc(&labels.join(" ")));
        }
    }
    if let Some(bdf) = &b.bdf {
        let _ = write!(attrs, r#" data-bdf="{bdf}""#);
    }
    let _ = writeln!(o, "<g{attrs}>");
    let _ = writeln!(o, "<title>{}</title>", esc(&b.title));
    let radius = if b.kind.is_container() { 4 } else { 3 };
    rect(
        o,
        &b.rect,
        b.kind.fill(),
        "#555555",
        &format!(r#" rx="{radius}" stroke-width="1" class="frame""#),
    );
    for t in &b.lines {
        text(o, t, "#111111", "");
    }
    for badge in &b.badges {
        badge_element(o, badge);
    }
    if let Some(s) = &b.select_slot {
        // Filled in by the HTML report's GPU selector; empty in a plain picture.
        rect(o, s, "none", "none", r#" rx="2" class="sel-bg""#);
        let _ = writeln!(
            o,
            r##"<text x="{}" y="{}" font-size="{}" font-weight="bold" fill="#ffffff" class="sel-text"></text>"##,
            n(s.x + 3.0),
            n(s.y + 9.5),
            n(SMALL)
        );
    }
    o.push_str("</g>\n");
}

/// A finding's badge on a box: coloured by severity, its tag, its title on hover.
fn badge_element(o: &mut String, badge: &Badge) {
    let _ = writeln!(
        o,
        r#"<g class="badge"><title>{}</title>"#,
        esc(&badge.title)
    );
    rect(
        o,
        &badge.rect,
        severity_colour(badge.severity),
        "none",
        r#" rx="2""#,
    );
    let tag = small_bold(badge.rect.x + 3.0, badge.rect.y + 9.5, &badge.tag);
    text(o, &tag, "#ffffff", "");
    o.push_str("</g>\n");
}

/// A rail-pair connector: polyline, end dots and the label chip, coloured by class.
fn connector(o: &mut String, c: &Connector) {
    let colour = label_colour(c.label);
    let pts: Vec<String> = c
        .points
        .iter()
        .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
        .collect();
    let _ = writeln!(
        o,
        r#"<g class="conn" data-from="{}" data-to="{}" data-label="{}"><title>{}</title>"#,
        esc(&c.from),
        esc(&c.to),
        esc(&c.label.to_string()),
        esc(&c.title)
    );
    let _ = writeln!(
        o,
        r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2.5" stroke-linejoin="round"/>"#,
        pts.join(" ")
    );
    for end in [c.points.first(), c.points.last()].into_iter().flatten() {
        let _ = writeln!(
            o,
            r#"<circle cx="{}" cy="{}" r="3" fill="{colour}"/>"#,
            n(end.0),
            n(end.1)
        );
    }
    rect(
        o,
        &c.label_rect,
        colour,
        "#333333",
        r#" rx="3" stroke-width="0.5""#,
    );
    let label = small_bold(
        c.label_rect.x + 4.0,
        c.label_rect.y + 10.5,
        &c.label.to_string(),
    );
    text(o, &label, ink_on(c.label), "");
    o.push_str("</g>\n");
}

/// The legend box with its swatches.
fn legend(o: &mut String, l: &Layout) {
    let _ = writeln!(o, r#"<g id="legend">"#);
    rect(o, &l.legend_rect, "#fbfbfb", "#999999", r#" rx="4""#);
    text(o, &l.legend_title, "#111111", "");
    for item in &l.legend {
        if item.colour != "none" {
            if item.line {
                let y = item.swatch.y + item.swatch.h / 2.0;
                let _ = writeln!(
                    o,
                    r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="4"/>"#,
                    n(item.swatch.x),
                    n(y),
                    n(item.swatch.right()),
                    n(y),
                    item.colour
                );
            } else {
                rect(o, &item.swatch, &item.colour, "#555555", r#" rx="2""#);
            }
        }
        text(o, &item.text, "#111111", "");
    }
    o.push_str("</g>\n");
}
