//! Box geometry of the node picture (`peerpath report`), computed once and shared by the SVG
//! writer ([`super::svg`]), the HTML report ([`super::html`]) and the tests.
//!
//! Columns are NUMA nodes (with their socket, from `/proc/cpuinfo`); inside each column, host
//! bridges, root ports, switches and switch ports are nested boxes; GPUs, accelerators, NICs,
//! NVMe and other functions are leaf boxes with their name, address, RDMA/net/NVMe names and
//! link. SR-IOV virtual functions are folded into their physical function (`+N VFs`), uncore
//! functions on a root bus and empty ports into a count on their container, as the tree
//! renderer does. GPU–NIC rail pairs are connectors routed through a gutter right of each
//! column, labelled with the pair's class. Audit findings (error and warning) are badges on the
//! box of the device they are about.
//!
//! Text is set in a monospace font (DejaVu Sans Mono: every glyph advances 0.602 em), so text
//! widths are known here without a font, and long texts are cut to fit their box (the full text
//! is in the hover title).
//!
//! [`build`] runs the stages in order, one file each: `boxes` (the nested box tree), `badges`
//! (audit findings on boxes), `placement` (column widths, split columns, box positions),
//! `routing` (the rail lines through the gutters), `legend` and `header`. The rail pairs
//! themselves are chosen by [`crate::analysis::pairing`]; nothing here decides which NIC a GPU
//! goes to.

use crate::analysis::audit::{Report, Severity};
use crate::analysis::classify::{Classifier, Label};
use crate::analysis::pairing;
use crate::model::{Bdf, Topology};

mod badges;
mod boxes;
mod header;
mod legend;
mod placement;
mod routing;

/// Font size of body text, px.
pub const FONT: f32 = 11.0;
/// Font size of badges and pair labels, px.
pub const SMALL: f32 = 9.0;
/// Advance of one monospace glyph as a fraction of the font size (DejaVu Sans Mono: 1233/2048).
pub const ADVANCE: f32 = 0.602;
/// Line height of body text, px.
pub const LINE: f32 = 14.0;
/// Inner padding of a container box, px.
pub const PAD: f32 = 6.0;
/// Vertical gap between sibling boxes, px.
pub const GAP: f32 = 6.0;
/// Width of a leaf box in characters of body text.
pub const LEAF_CHARS: usize = 30;
/// Distance between connector lanes in a column's gutter, px.
pub const LANE: f32 = 36.0;
/// Outer margin of the picture, px.
pub const MARGIN: f32 = 12.0;

/// Width of `n` characters at font size `size`.
pub fn text_width(n: usize, size: f32) -> f32 {
    n as f32 * size * ADVANCE
}

/// Characters of body text that fit on a line of a box `w` px wide (the box's text lines in
/// [`placement`], the badge rows below them in [`badges`]).
fn line_chars(w: f32) -> usize {
    ((w - 10.0) / text_width(1, FONT)).floor().max(1.0) as usize
}

/// Characters an endpoint box keeps free on its first line for the HTML selector's class.
fn selector_chars(endpoint: bool) -> usize {
    if endpoint { 5 } else { 0 }
}

/// An axis-aligned rectangle, px.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left.
    pub x: f32,
    /// Top.
    pub y: f32,
    /// Width.
    pub w: f32,
    /// Height.
    pub h: f32,
}

impl Rect {
    /// Right edge.
    pub fn right(&self) -> f32 {
        self.x + self.w
    }
    /// Bottom edge.
    pub fn bottom(&self) -> f32 {
        self.y + self.h
    }
    /// Whether `o` lies inside this rectangle (edges included).
    pub fn contains(&self, o: &Rect) -> bool {
        o.x >= self.x - 0.01
            && o.y >= self.y - 0.01
            && o.right() <= self.right() + 0.01
            && o.bottom() <= self.bottom() + 0.01
    }
    /// Whether the two rectangles share interior area.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x < o.right() - 0.01
            && o.x < self.right() - 0.01
            && self.y < o.bottom() - 0.01
            && o.y < self.bottom() - 0.01
    }
}

/// What a box stands for; decides its fill colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoxKind {
    /// A NUMA node column.
    Numa,
    /// A host bridge (root complex).
    HostBridge,
    /// A root port.
    RootPort,
    /// A PCIe switch (its upstream port and, nested, its downstream ports).
    Switch,
    /// A downstream port of a switch.
    Port,
    /// Any other bridge with devices below.
    Bridge,
    /// A GPU.
    Gpu,
    /// An accelerator.
    Accelerator,
    /// A NIC.
    Nic,
    /// An NVMe controller.
    Nvme,
    /// Any other function.
    Other,
}

impl BoxKind {
    /// Fill colour (`#rrggbb`).
    pub fn fill(self) -> &'static str {
        match self {
            BoxKind::Numa => "#f3f3f3",
            BoxKind::HostBridge => "#e3e8ee",
            BoxKind::RootPort => "#d3dde8",
            BoxKind::Switch => "#f1e4c8",
            BoxKind::Port => "#faf3e3",
            BoxKind::Bridge => "#e6e0d6",
            BoxKind::Gpu => "#c9e3f7",
            BoxKind::Accelerator => "#dcd3ee",
            BoxKind::Nic => "#f9d9c7",
            BoxKind::Nvme => "#d9eed9",
            BoxKind::Other => "#ffffff",
        }
    }
    /// Name used in the legend and as the SVG class.
    pub fn name(self) -> &'static str {
        match self {
            BoxKind::Numa => "numa",
            BoxKind::HostBridge => "host-bridge",
            BoxKind::RootPort => "root-port",
            BoxKind::Switch => "switch",
            BoxKind::Port => "port",
            BoxKind::Bridge => "bridge",
            BoxKind::Gpu => "gpu",
            BoxKind::Accelerator => "accelerator",
            BoxKind::Nic => "nic",
            BoxKind::Nvme => "nvme",
            BoxKind::Other => "other",
        }
    }
    /// Whether boxes of this kind hold other boxes.
    pub fn is_container(self) -> bool {
        matches!(
            self,
            BoxKind::Numa
                | BoxKind::HostBridge
                | BoxKind::RootPort
                | BoxKind::Switch
                | BoxKind::Port
                | BoxKind::Bridge
        )
    }
}

/// Colour of a path class (legend order: NV#, PIX best … SYS worst; unknown grey).
pub fn label_colour(l: Label) -> &'static str {
    match l {
        Label::X => "#2b2b2b",
        Label::Nv(_) | Label::Xgmi => "#006837",
        Label::Pix => "#1a9850",
        Label::Pxb => "#66bd63",
        Label::Phb => "#e0b000",
        Label::Node => "#f46d43",
        Label::Sys => "#d73027",
        Label::Unknown => "#8c8c8c",
    }
}

/// Colour of an audit badge by severity.
pub fn severity_colour(s: Severity) -> &'static str {
    match s {
        Severity::Error => "#c0142b",
        Severity::Warning => "#e07b00",
        Severity::Unknown => "#7a7a7a",
        Severity::Info => "#3465a4",
    }
}

/// One line of text, positioned (baseline-left).
#[derive(Debug, Clone, PartialEq)]
pub struct TextLine {
    /// Left of the text.
    pub x: f32,
    /// Baseline.
    pub y: f32,
    /// The text (already cut to fit).
    pub text: String,
    /// Font size, px.
    pub size: f32,
    /// Bold.
    pub bold: bool,
}

impl TextLine {
    /// The box the text occupies by the layout's metrics (ascent 0.8 em, descent 0.25 em).
    pub fn rect(&self) -> Rect {
        Rect {
            x: self.x,
            y: self.y - self.size * 0.8,
            w: text_width(self.text.chars().count(), self.size),
            h: self.size * 1.05,
        }
    }
}

/// An audit finding marked on a box.
#[derive(Debug, Clone, PartialEq)]
pub struct Badge {
    /// Where it is drawn.
    pub rect: Rect,
    /// Short tag (`ACS`, `LINK`, `AER`).
    pub tag: String,
    /// The finding's severity.
    pub severity: Severity,
    /// Finding id and summary, for the hover title.
    pub title: String,
}

/// A drawn box.
#[derive(Debug, Clone, PartialEq)]
pub struct LaidBox {
    /// Unique id, also the SVG element id (`dev-0000-18-00-0`, `hb-pci0000-15`, `numa-0`).
    pub id: String,
    /// What it stands for.
    pub kind: BoxKind,
    /// Where.
    pub rect: Rect,
    /// Index of the enclosing box in [`Layout::boxes`].
    pub parent: Option<usize>,
    /// Its text lines.
    pub lines: Vec<TextLine>,
    /// Hover text: the full, uncut description.
    pub title: String,
    /// Findings marked on it.
    pub badges: Vec<Badge>,
    /// The PCI function it draws, if any.
    pub bdf: Option<Bdf>,
    /// Endpoint name in the matrix (`GPU0`, `NIC3`), if it is one.
    pub endpoint: Option<String>,
    /// Where the class of the pair (selected GPU, this endpoint) is written by the HTML
    /// selector (endpoint boxes only).
    pub select_slot: Option<Rect>,
    /// Class of the pair (compute endpoint, this endpoint) for every GPU/accelerator, in
    /// matrix order (`X` for itself): the standalone SVG's `data-labels`, filled only when
    /// [`Inputs::pair_labels`] asks and at most [`MAX_PAIR_LABELS`] in all (the HTML page
    /// reads its own packed pair data).
    pub pair_labels: Vec<(String, Label)>,
}

/// A GPU–NIC rail pair, drawn as a polyline with its class label.
#[derive(Debug, Clone, PartialEq)]
pub struct Connector {
    /// Compute endpoint name (`GPU0`, `ACC1`).
    pub from: String,
    /// NIC endpoint name.
    pub to: String,
    /// The pair's class.
    pub label: Label,
    /// Polyline points, px.
    pub points: Vec<(f32, f32)>,
    /// Where the label is drawn.
    pub label_rect: Rect,
    /// Hover text: class, reason, bottleneck.
    pub title: String,
}

/// One legend entry: a swatch and its meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendItem {
    /// Swatch rectangle.
    pub swatch: Rect,
    /// Swatch fill colour.
    pub colour: String,
    /// Whether the swatch is a line (path class) rather than a filled box.
    pub line: bool,
    /// Text next to it.
    pub text: TextLine,
}

/// The whole picture.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Canvas width, px.
    pub width: f32,
    /// Canvas height, px.
    pub height: f32,
    /// Title and notes at the top.
    pub header: Vec<TextLine>,
    /// Boxes, parents before children.
    pub boxes: Vec<LaidBox>,
    /// Rail pairs.
    pub connectors: Vec<Connector>,
    /// Where the rail pairs come from, in words.
    pub pairs_source: String,
    /// Legend frame.
    pub legend_rect: Rect,
    /// Legend title and entries.
    pub legend_title: TextLine,
    /// Legend entries.
    pub legend: Vec<LegendItem>,
    /// Why the boxes carry no [`LaidBox::pair_labels`] although they were asked for: more
    /// than [`MAX_PAIR_LABELS`] of them (the standalone SVG says so in a comment).
    pub pair_labels_left_out: Option<String>,
}

/// Most `(GPU, endpoint box)` classes the boxes carry for the standalone SVG's `data-labels`
/// (512 × 512, the pair matrix the HTML report still draws whole): above it the list would be
/// most of the file (21 MB of a 24 MB SVG at 4,114 functions) and grows with GPUs × endpoints.
pub const MAX_PAIR_LABELS: usize = 512 * 512;

impl Layout {
    /// The box drawing a PCI function.
    pub fn box_of(&self, bdf: &Bdf) -> Option<&LaidBox> {
        self.boxes.iter().find(|b| b.bdf.as_ref() == Some(bdf))
    }
    /// Every text line of the picture (header, boxes, badges excluded, legend).
    pub fn all_text(&self) -> impl Iterator<Item = &TextLine> {
        self.header
            .iter()
            .chain(self.boxes.iter().flat_map(|b| b.lines.iter()))
            .chain(std::iter::once(&self.legend_title))
            .chain(self.legend.iter().map(|l| &l.text))
    }
}

/// What the picture is drawn from: the topology, its classifier and its audit.
pub struct Inputs<'a> {
    /// The node.
    pub topo: &'a Topology,
    /// The node's pair classification ([`Classifier`]): endpoints, notes, the rail pairs'
    /// classes and, with `pair_labels`, every box's class from each GPU.
    pub classifier: &'a Classifier<'a>,
    /// The audit ([`crate::analysis::audit::run`]): rail pairs and findings.
    pub audit: &'a Report,
    /// Fill [`LaidBox::pair_labels`] (the standalone SVG's `data-labels`): endpoint boxes ×
    /// GPUs classes, which only the standalone SVG writes.
    pub pair_labels: bool,
}

/// Cuts `s` to at most `n` characters, ending with `…` when cut.
pub fn fit(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        return s.to_string();
    }
    if n == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(n - 1).collect();
    out.push('…');
    out
}

/// `1 GPU`, `2 GPUs`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Splits `s` into lines of at most `n` characters at spaces (a word longer than a line is
/// cut with `…`).
pub fn wrap(s: &str, n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for w in s.split(' ') {
        let len = cur.chars().count();
        if len > 0 && len + 1 + w.chars().count() > n {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    out.push(cur);
    out.into_iter().map(|l| fit(&l, n)).collect()
}

/// Computes the picture of a node.
pub fn build(inp: &Inputs) -> Layout {
    let c = inp.classifier;
    let columns = boxes::columns(inp.topo, c.endpoints());
    let badges = badges::collect(inp.topo, inp.audit, &columns);
    let col_w = placement::column_widths(&columns);
    let badge_rows = badges::rows(&columns, &col_w, &badges);
    let (columns, col_w) = placement::split_tall(columns, col_w, &badge_rows);

    let matched: Vec<_> = inp.audit.pairs.iter().map(|p| (p.gpu, p.nic)).collect();
    // Only the pairs the rail lines can be drawn from are classified in words: the audit's
    // matching, else every compute–NIC pair (what the nearest-NIC fallback compares).
    let eps = c.endpoints();
    let rail_matrix = if matched.is_empty() {
        let of = |pick: fn(&crate::analysis::classify::Endpoint) -> bool| -> Vec<usize> {
            (0..eps.len()).filter(|&k| pick(&eps[k])).collect()
        };
        let (computes, nics) = (
            of(|e| e.kind.is_compute()),
            of(|e| e.kind == crate::model::DeviceKind::Nic),
        );
        c.matrix_of(
            computes
                .iter()
                .flat_map(|&g| nics.iter().map(move |&n| (g, n))),
        )
    } else {
        c.matrix_of(
            matched
                .iter()
                .filter_map(|(g, n)| Some((c.endpoint_index(g)?, c.endpoint_index(n)?))),
        )
    };
    let rail = pairing::rail_pairs(&rail_matrix, &matched);
    let pairs_source = routing::source_text(rail.source);
    let header_lines = header::lines(inp, &rail_matrix.notes, &pairs_source);

    // Gutters are sized after routing, so place twice: once to know the box centres, then with
    // the final gutter widths.
    let place =
        |gutters: &[f32]| placement::place_columns(&columns, &col_w, gutters, &badges, &badge_rows);
    let (boxes0, _) = place(&vec![20.0; columns.len()]);
    let routes = routing::route(&boxes0, &rail.pairs, columns.len());
    let gutters = routes.gutters();
    let (mut boxes, spans) = place(&gutters);
    let mut pair_labels_left_out = None;
    if inp.pair_labels {
        let computes = eps.iter().filter(|e| e.kind.is_compute()).count();
        let with_ep = boxes.iter().filter(|b| b.endpoint.is_some()).count();
        if computes * with_ep <= MAX_PAIR_LABELS {
            boxes::fill_pair_labels(&mut boxes, c);
        } else {
            pair_labels_left_out = Some(format!(
                "data-labels left out: {with_ep} endpoint boxes x {computes} GPUs/accelerators is more than {MAX_PAIR_LABELS} classes; `peerpath matrix` prints every pair"
            ));
        }
    }
    let connectors = routing::connectors(&routes, &boxes, &spans, &rail_matrix);

    let content_right = spans
        .last()
        .map(|s| s.1 + gutters.last().copied().unwrap_or(0.0))
        .unwrap_or(MARGIN);
    let content_bottom = boxes.iter().map(|b| b.rect.bottom()).fold(MARGIN, f32::max);
    let legend = legend::build(content_bottom);

    // Header text, wrapped to the final width; everything else moves down below it.
    let width = content_right.max(legend.rect.right()).max(560.0) + MARGIN;
    let (header, hy) = header::wrap_to(header_lines, width);
    let mut l = Layout {
        width,
        height: 0.0,
        header,
        boxes,
        connectors,
        pairs_source,
        legend_rect: legend.rect,
        legend_title: legend.title,
        legend: legend.items,
        pair_labels_left_out,
    };
    header::move_below(&mut l, hy + 6.0 - MARGIN);
    l.height = l.legend_rect.bottom() + MARGIN;
    l
}

#[cfg(test)]
mod tests {
    use super::routing::take_lane;
    use super::*;

    #[test]
    fn fit_cuts_with_an_ellipsis() {
        assert_eq!(fit("Gen5 x16", 8), "Gen5 x16");
        assert_eq!(fit("Gen5 x16 slot 10", 8), "Gen5 x1…");
        assert_eq!(fit("abc", 0), "");
    }

    #[test]
    fn wrap_breaks_at_spaces() {
        assert_eq!(wrap("one two three four", 9), ["one two", "three", "four"]);
        assert_eq!(wrap("averyveryverylongword x", 6), ["avery…", "x"]);
        assert_eq!(wrap("", 5), [""]);
    }

    #[test]
    fn lanes_are_shared_only_by_disjoint_spans() {
        let mut lanes = Vec::new();
        assert_eq!(take_lane(&mut lanes, 0.0, 10.0), 0);
        assert_eq!(take_lane(&mut lanes, 5.0, 15.0), 1);
        assert_eq!(take_lane(&mut lanes, 11.0, 20.0), 0);
        assert_eq!(take_lane(&mut lanes, 0.0, 30.0), 2);
    }

    #[test]
    fn rect_relations() {
        let outer = Rect {
            x: 0.0,
            y: 0.0,
            w: 10.0,
            h: 10.0,
        };
        let inner = Rect {
            x: 2.0,
            y: 2.0,
            w: 3.0,
            h: 3.0,
        };
        let beside = Rect {
            x: 10.0,
            y: 0.0,
            w: 3.0,
            h: 3.0,
        };
        assert!(outer.contains(&inner) && !inner.contains(&outer));
        assert!(outer.overlaps(&inner));
        assert!(!outer.overlaps(&beside), "touching edges do not overlap");
    }
}
