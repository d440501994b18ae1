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

use crate::analysis::audit::{Report, Severity};
use crate::analysis::classify::{Label, Matrix};
use crate::model::{Bdf, Device, DeviceKind, OsDeviceKind, Topology};
use crate::parse::cpulist;
use crate::render::linkfmt;
use std::collections::{BTreeMap, HashMap};

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
        Label::Nv(_) => "#006837",
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
    /// matrix order (`X` for itself); what the HTML GPU selector recolours by.
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
}

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

/// What the picture is drawn from: the topology, its classification and its audit.
pub struct Inputs<'a> {
    /// The node.
    pub topo: &'a Topology,
    /// Every pair's class ([`crate::analysis::classify::classify_all`]).
    pub matrix: &'a Matrix,
    /// The audit ([`crate::analysis::audit::run`]): rail pairs and findings.
    pub audit: &'a Report,
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

/// A node of the box tree before placement.
struct Node {
    kind: BoxKind,
    id: String,
    /// Header lines (containers) or all lines (leaves): (text, bold).
    lines: Vec<(String, bool)>,
    title: String,
    bdf: Option<Bdf>,
    endpoint: Option<String>,
    children: Vec<Node>,
}

fn id_of(prefix: &str, s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{prefix}-{clean}")
}

/// Short link text: `Gen5 x16`; below capability `Gen5 x8 of x16`, `Gen3 of Gen5 x16`.
fn link_text(d: &Device) -> Option<String> {
    let l = d.link.as_ref()?;
    if !l.any() {
        return None;
    }
    let gen_of = |g: Option<f64>| g.map(linkfmt::gen_name).unwrap_or_else(|| "Gen?".into());
    let speed = if l.speed_degraded() {
        format!("{} of {}", gen_of(l.current_gts), gen_of(l.max_gts))
    } else {
        gen_of(l.current_gts.or(l.max_gts))
    };
    let w = |x: Option<u32>| x.map(|w| format!("x{w}")).unwrap_or_else(|| "x?".into());
    let width = if l.width_degraded() {
        format!("{} of {}", w(l.current_width), w(l.max_width))
    } else {
        w(l.current_width.or(l.max_width))
    };
    Some(format!("{speed} {width}"))
}

struct Builder<'a> {
    topo: &'a Topology,
    names: HashMap<Bdf, String>,
}

impl Builder<'_> {
    /// Non-VF children.
    fn kids(&self, d: &Device) -> Vec<&Device> {
        self.topo
            .children(&d.bdf)
            .into_iter()
            .filter(|c| !c.is_vf())
            .collect()
    }

    fn leaf(&self, d: &Device) -> Node {
        let kind = match d.kind {
            DeviceKind::Gpu => BoxKind::Gpu,
            DeviceKind::Accelerator => BoxKind::Accelerator,
            DeviceKind::Nic => BoxKind::Nic,
            DeviceKind::Nvme => BoxKind::Nvme,
            _ => BoxKind::Other,
        };
        let endpoint = self.names.get(&d.bdf).cloned();
        let head = match &endpoint {
            Some(n) => n.clone(),
            None => match d.kind {
                DeviceKind::Gpu => "GPU".into(),
                DeviceKind::Accelerator => "ACC".into(),
                DeviceKind::Nic => "NIC".into(),
                DeviceKind::Nvme => "NVMe".into(),
                DeviceKind::RootPort => "RootPort".into(),
                DeviceKind::SwitchDownstream => "Port".into(),
                DeviceKind::SwitchUpstream => "Switch".into(),
                DeviceKind::Bridge => "Bridge".into(),
                DeviceKind::Other => "PCI".into(),
            },
        };
        let mut lines = vec![
            (format!("{head} {}", d.bdf), true),
            (
                d.device_name.clone().unwrap_or_else(|| d.display_name()),
                false,
            ),
        ];
        let os: Vec<&str> = d
            .os_devices
            .iter()
            .filter(|o| o.kind != OsDeviceKind::NvidiaGpu)
            .map(|o| o.name.as_str())
            .collect();
        if !os.is_empty() {
            lines.push((os.join(" "), false));
        }
        let mut last = Vec::new();
        if let Some(l) = link_text(d) {
            last.push(l);
        }
        if let Some(s) = &d.slot {
            last.push(format!("slot {s}"));
        }
        if d.vf_count > 0 {
            last.push(format!("+{} VFs", d.vf_count));
        }
        if !last.is_empty() {
            lines.push((last.join("  "), false));
        }
        let full = d.display_name();
        let mut title = lines
            .iter()
            .enumerate()
            .map(|(i, (t, _))| if i == 1 { full.as_str() } else { t.as_str() })
            .collect::<Vec<_>>()
            .join("\n");
        title.push_str(&format!(
            "\ndriver {}, NUMA node {}\n/{}",
            d.driver.as_deref().unwrap_or("none"),
            d.numa_node
                .map(|n| n.to_string())
                .unwrap_or_else(|| "unknown".into()),
            d.sysfs_path.trim_start_matches('/')
        ));
        Node {
            kind,
            id: id_of("dev", &d.bdf.to_string()),
            lines,
            title,
            bdf: Some(d.bdf),
            endpoint,
            children: Vec::new(),
        }
    }

    /// Children of a container, with empty ports folded into a count.
    fn place_children(&self, kids: Vec<&Device>, notes: &mut Vec<String>) -> Vec<Node> {
        let mut out = Vec::new();
        let mut empty_ports = 0;
        for k in kids {
            if matches!(
                k.kind,
                DeviceKind::RootPort | DeviceKind::SwitchDownstream | DeviceKind::Bridge
            ) && self.kids(k).is_empty()
            {
                empty_ports += 1;
                continue;
            }
            out.push(self.device(k));
        }
        if empty_ports > 0 {
            notes.push(format!(
                "+{empty_ports} empty port{}",
                if empty_ports == 1 { "" } else { "s" }
            ));
        }
        out
    }

    fn device(&self, d: &Device) -> Node {
        match d.kind {
            DeviceKind::SwitchUpstream => {
                let sw = self.topo.switch_of_port(&d.bdf);
                let swid = sw.map(|s| s.id.clone()).unwrap_or_else(|| "switch".into());
                let mut notes = Vec::new();
                let mut children = Vec::new();
                let mut empty = 0;
                let mut others = Vec::new();
                for c in self.kids(d) {
                    if c.kind == DeviceKind::SwitchDownstream {
                        let below = self.kids(c);
                        if below.is_empty() {
                            empty += 1;
                            continue;
                        }
                        let mut pnotes = Vec::new();
                        let pk = self.place_children(below, &mut pnotes);
                        let mut head = format!("Port {}", c.bdf);
                        if let Some(l) = link_text(c) {
                            head.push_str(&format!(" {l}"));
                        }
                        if let Some(s) = &c.slot {
                            head.push_str(&format!(" slot {s}"));
                        }
                        let mut lines = vec![(head, false)];
                        if !pnotes.is_empty() {
                            lines.push((pnotes.join(", "), false));
                        }
                        children.push(Node {
                            kind: BoxKind::Port,
                            id: id_of("dev", &c.bdf.to_string()),
                            title: lines
                                .iter()
                                .map(|l| l.0.clone())
                                .collect::<Vec<_>>()
                                .join("\n"),
                            lines,
                            bdf: Some(c.bdf),
                            endpoint: None,
                            children: pk,
                        });
                    } else {
                        others.push(c);
                    }
                }
                children.extend(self.place_children(others, &mut notes));
                if empty > 0 {
                    notes.push(format!(
                        "+{empty} empty port{}",
                        if empty == 1 { "" } else { "s" }
                    ));
                }
                let mut head = format!("Switch {swid} {}", d.bdf);
                if let Some(l) = link_text(d) {
                    head.push_str(&format!(" {l}"));
                }
                let mut lines = vec![(head.clone(), true), (d.display_name(), false)];
                if !notes.is_empty() {
                    lines.push((notes.join(", "), false));
                }
                Node {
                    kind: BoxKind::Switch,
                    id: id_of("dev", &d.bdf.to_string()),
                    title: lines
                        .iter()
                        .map(|l| l.0.clone())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    lines,
                    bdf: Some(d.bdf),
                    endpoint: None,
                    children,
                }
            }
            DeviceKind::RootPort | DeviceKind::SwitchDownstream | DeviceKind::Bridge => {
                let below = self.kids(d);
                if below.is_empty() {
                    return self.leaf(d);
                }
                let mut notes = Vec::new();
                let children = self.place_children(below, &mut notes);
                let (kind, word) = match d.kind {
                    DeviceKind::RootPort => (BoxKind::RootPort, "RootPort"),
                    DeviceKind::SwitchDownstream => (BoxKind::Port, "Port"),
                    _ => (BoxKind::Bridge, "Bridge"),
                };
                let mut head = format!("{word} {}", d.bdf);
                if let Some(l) = link_text(d) {
                    head.push_str(&format!(" {l}"));
                }
                if let Some(s) = &d.slot {
                    head.push_str(&format!(" slot {s}"));
                }
                let mut lines = vec![(head, false)];
                if !notes.is_empty() {
                    lines.push((notes.join(", "), false));
                }
                Node {
                    kind,
                    id: id_of("dev", &d.bdf.to_string()),
                    title: lines
                        .iter()
                        .map(|l| l.0.clone())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    lines,
                    bdf: Some(d.bdf),
                    endpoint: None,
                    children,
                }
            }
            _ => self.leaf(d),
        }
    }

    /// A host bridge box, or `None` when only folded functions hang under it.
    fn host_bridge(&self, name: &str) -> Option<Node> {
        let mut folded = 0;
        let mut kids = Vec::new();
        for d in self.topo.roots_of(name) {
            if d.is_vf() {
                continue;
            }
            if d.kind == DeviceKind::Other && self.kids(d).is_empty() {
                folded += 1;
                continue;
            }
            kids.push(d);
        }
        let mut notes = Vec::new();
        let children = self.place_children(kids, &mut notes);
        if children.is_empty() {
            return None;
        }
        if folded > 0 {
            notes.push(format!(
                "+{folded} uncore function{}",
                if folded == 1 { "" } else { "s" }
            ));
        }
        let mut lines = vec![(format!("HostBridge {name}"), true)];
        if !notes.is_empty() {
            lines.push((notes.join(", "), false));
        }
        Some(Node {
            kind: BoxKind::HostBridge,
            id: id_of("hb", name),
            title: lines
                .iter()
                .map(|l| l.0.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            lines,
            bdf: None,
            endpoint: None,
            children,
        })
    }
}

/// Depth of the deepest leaf below (a leaf is 0).
fn depth(n: &Node) -> usize {
    n.children.iter().map(|c| depth(c) + 1).max().unwrap_or(0)
}

/// Badges that fit on one line of width `w` starting at the right: returns their widths.
fn badge_width(tag: &str) -> f32 {
    text_width(tag.chars().count(), SMALL) + 6.0
}

/// Height of a node laid out at width `w`.
fn height(n: &Node, badge_rows: &HashMap<String, usize>) -> f32 {
    let extra = *badge_rows.get(&n.id).unwrap_or(&0) as f32 * LINE;
    if n.children.is_empty() && !n.kind.is_container() {
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

struct Placer<'a> {
    boxes: Vec<LaidBox>,
    badges: &'a HashMap<String, Vec<(String, Severity, String)>>,
    badge_rows: &'a HashMap<String, usize>,
}

impl Placer<'_> {
    fn place(&mut self, n: &Node, x: f32, y: f32, w: f32, parent: Option<usize>) -> f32 {
        let h = height(n, self.badge_rows);
        let rect = Rect { x, y, w, h };
        let leaf = n.children.is_empty() && !n.kind.is_container();
        let chars = ((w - 10.0) / text_width(1, FONT)).floor().max(1.0) as usize;
        let top = if leaf { 3.0 } else { 2.0 };
        let sel_chars = if n.endpoint.is_some() { 5 } else { 0 };
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
        // Badges: on the first line's right when they fit, else on rows of their own.
        let mut badges = Vec::new();
        if let Some(list) = self.badges.get(&n.id) {
            let first_used = lines.first().map(|l| l.rect().right()).unwrap_or(x);
            let sel_w = if n.endpoint.is_some() {
                text_width(5, SMALL) + 8.0
            } else {
                0.0
            };
            let total: f32 = list.iter().map(|b| badge_width(&b.0) + 3.0).sum();
            let rows = *self.badge_rows.get(&n.id).unwrap_or(&0);
            let mut bx;
            let mut by;
            if rows == 0 && first_used + total + sel_w + 6.0 <= x + w {
                bx = x + w - 4.0 - sel_w - total + 3.0;
                by = y + top + 1.0;
            } else {
                bx = x + 5.0;
                by = y + top + n.lines.len() as f32 * LINE + 1.0;
            }
            for (tag, sev, title) in list {
                let bw = badge_width(tag);
                if bx + bw > x + w - 4.0 {
                    bx = x + 5.0;
                    by += LINE;
                }
                badges.push(Badge {
                    rect: Rect {
                        x: bx,
                        y: by,
                        w: bw,
                        h: 12.0,
                    },
                    tag: tag.clone(),
                    severity: *sev,
                    title: title.clone(),
                });
                bx += bw + 3.0;
            }
        }
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
            let extra = *self.badge_rows.get(&n.id).unwrap_or(&0) as f32 * LINE;
            let mut cy = y + n.lines.len() as f32 * LINE + 4.0 + extra;
            for c in &n.children {
                let ch = self.place(c, x + PAD, cy, w - 2.0 * PAD, Some(me));
                cy += ch + GAP;
            }
        }
        h
    }
}

/// Short tag of an audit finding id for a badge.
fn tag_of(id: &str) -> String {
    match id {
        "acs-redirect" => "ACS".into(),
        "link-degraded" => "LINK".into(),
        "aer-errors" => "AER".into(),
        "bar1-small" => "BAR1".into(),
        "mps-mrrs" => "MPS".into(),
        "nic-port-down" => "PORT".into(),
        "iommu-translation" => "IOMMU".into(),
        "driver-mismatch" => "DRV".into(),
        "gdr-peer-module" => "PEER".into(),
        other => other
            .split('-')
            .next()
            .unwrap_or(other)
            .to_uppercase()
            .chars()
            .take(5)
            .collect(),
    }
}

/// Interval lanes: the lowest lane whose intervals do not overlap `(lo, hi)`.
fn take_lane(lanes: &mut Vec<Vec<(f32, f32)>>, lo: f32, hi: f32) -> usize {
    for (i, l) in lanes.iter_mut().enumerate() {
        if l.iter().all(|&(a, b)| hi < a || lo > b) {
            l.push((lo, hi));
            return i;
        }
    }
    lanes.push(vec![(lo, hi)]);
    lanes.len() - 1
}

/// Computes the picture of a node.
pub fn build(inp: &Inputs) -> Layout {
    let t = inp.topo;
    let names: HashMap<Bdf, String> = inp
        .matrix
        .endpoints
        .iter()
        .map(|e| (e.bdf, e.name.clone()))
        .collect();
    let b = Builder { topo: t, names };

    // Columns: NUMA nodes with drawn host bridges, then "NUMA unknown".
    let mut groups: BTreeMap<Option<u32>, Vec<Node>> = BTreeMap::new();
    let mut empty_hbs: BTreeMap<Option<u32>, usize> = BTreeMap::new();
    for hb in &t.host_bridges {
        match b.host_bridge(&hb.name) {
            Some(n) => groups.entry(hb.numa_node).or_default().push(n),
            None => *empty_hbs.entry(hb.numa_node).or_default() += 1,
        }
    }
    // Devices whose host bridge is not listed (partial sources): their own column.
    let listed: std::collections::HashSet<&str> =
        t.host_bridges.iter().map(|h| h.name.as_str()).collect();
    let mut orphan_hbs: Vec<&str> = t
        .devices
        .iter()
        .filter(|d| d.parent.is_none() && !listed.contains(d.host_bridge.as_str()))
        .map(|d| d.host_bridge.as_str())
        .collect();
    orphan_hbs.sort();
    orphan_hbs.dedup();
    for name in orphan_hbs {
        if let Some(n) = b.host_bridge(name) {
            groups.entry(None).or_default().push(n);
        }
    }
    let socket_of = |cpus: &str| -> Option<u32> {
        let first = *cpulist::parse_list(cpus.as_bytes()).ok()?.first()?;
        t.machine
            .cpu_cores
            .iter()
            .find(|(c, _, _)| *c == first)
            .map(|(_, _, p)| *p)
    };
    // Numa-nodes ordered None last.
    let mut order: Vec<Option<u32>> = groups.keys().copied().collect();
    order.sort_by_key(|k| (k.is_none(), *k));
    let mut columns: Vec<Node> = Vec::new();
    for key in &order {
        let hbs = groups.remove(key).unwrap_or_default();
        let mut lines = Vec::new();
        match key {
            Some(id) => {
                let cpus = t
                    .numa_nodes
                    .iter()
                    .find(|n| n.id == *id)
                    .map(|n| n.cpus.clone())
                    .unwrap_or_default();
                let sock = socket_of(&cpus)
                    .map(|s| format!(" · socket {s}"))
                    .unwrap_or_default();
                lines.push((format!("NUMA node {id}{sock}"), true));
                lines.push((
                    format!(
                        "cpus {}",
                        if cpus.is_empty() {
                            "none"
                        } else {
                            cpus.as_str()
                        }
                    ),
                    false,
                ));
            }
            None => {
                lines.push(("NUMA node unknown".to_string(), true));
                lines.push(("host bridges report no NUMA node".to_string(), false));
            }
        }
        if let Some(n) = empty_hbs.get(key) {
            lines.push((
                format!(
                    "+{n} host bridge{} with uncore functions only",
                    if *n == 1 { "" } else { "s" }
                ),
                false,
            ));
        }
        columns.push(Node {
            kind: BoxKind::Numa,
            id: match key {
                Some(id) => format!("numa-{id}"),
                None => "numa-unknown".into(),
            },
            title: lines
                .iter()
                .map(|l| l.0.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            lines,
            bdf: None,
            endpoint: None,
            children: hbs,
        });
    }

    // Audit findings that concern a drawn box (error and warning only).
    let mut by_id_badges: HashMap<String, Vec<(String, Severity, String)>> = HashMap::new();
    let mut node_ids: HashMap<Bdf, String> = HashMap::new();
    fn collect(n: &Node, m: &mut HashMap<Bdf, String>) {
        if let Some(b) = n.bdf {
            m.insert(b, n.id.clone());
        }
        for c in &n.children {
            collect(c, m);
        }
    }
    for c in &columns {
        collect(c, &mut node_ids);
    }
    let resolve = |subject: &str| -> Option<String> {
        let bdf: Option<Bdf> = subject.parse().ok().or_else(|| {
            t.devices
                .iter()
                .find(|d| {
                    d.rdma_names().any(|r| r == subject) || d.net_names().any(|r| r == subject)
                })
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
    for f in &inp.audit.findings {
        if !matches!(f.severity, Severity::Error | Severity::Warning) || f.id == "gpu-nic-path" {
            continue;
        }
        if let Some(id) = resolve(&f.subject) {
            let tag = tag_of(&f.id);
            let list = by_id_badges.entry(id).or_default();
            if !list.iter().any(|(t2, _, _)| *t2 == tag) {
                list.push((
                    tag,
                    f.severity,
                    format!("{} {}: {}", f.severity.as_str(), f.id, f.summary),
                ));
            }
        }
    }

    // Column widths: the deepest leaf decides; leaves are at least LEAF_CHARS wide.
    let leaf_w = text_width(LEAF_CHARS, FONT) + 10.0;
    let col_w: Vec<f32> = columns
        .iter()
        .map(|c| leaf_w + 2.0 * PAD * depth(c) as f32)
        .collect();
    // Badge rows: a box whose badges do not fit beside its first line gets rows of its own.
    let mut badge_rows: HashMap<String, usize> = HashMap::new();
    fn widths(n: &Node, w: f32, out: &mut HashMap<String, (f32, usize, bool)>) {
        let first = n.lines.first().map(|l| l.0.chars().count()).unwrap_or(0);
        out.insert(n.id.clone(), (w, first, n.endpoint.is_some()));
        for c in &n.children {
            widths(c, w - 2.0 * PAD, out);
        }
    }
    let mut wmap = HashMap::new();
    for (c, w) in columns.iter().zip(&col_w) {
        widths(c, *w, &mut wmap);
    }
    for (id, list) in &by_id_badges {
        let Some(&(w, first, ep)) = wmap.get(id) else {
            continue;
        };
        let chars = ((w - 10.0) / text_width(1, FONT)).floor().max(1.0) as usize;
        let sel = if ep { 5 } else { 0 };
        let used = text_width(first.min(chars.saturating_sub(sel)), FONT) + 5.0;
        let sel_w = if ep { text_width(5, SMALL) + 8.0 } else { 0.0 };
        let total: f32 = list.iter().map(|b| badge_width(&b.0) + 3.0).sum();
        if used + total + sel_w + 6.0 > w {
            let avail = w - 10.0;
            let mut rows = 1;
            let mut acc = 0.0;
            for b in list {
                let bw = badge_width(&b.0) + 3.0;
                if acc + bw > avail && acc > 0.0 {
                    rows += 1;
                    acc = 0.0;
                }
                acc += bw;
            }
            badge_rows.insert(id.clone(), rows);
        }
    }

    // A NUMA column much taller than the picture is wide is split into continued columns (at
    // host-bridge boundaries), so the whole node keeps a page-like shape.
    let hb_h = |n: &Node| height(n, &badge_rows) + GAP;
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
    let columns = split_cols;
    let col_w = split_w;

    // Header.
    let mut header = Vec::new();
    let m = &t.machine;
    let mut title = format!("peerpath report — {}", t.source.path);
    if let Some(model) = &m.cpu_model {
        title.push_str(&format!(" — {model}"));
    }
    let count = |k| t.of_kind(k).filter(|d: &&Device| !d.is_vf()).count();
    let mut sub = format!(
        "{}, {}, {}, {} NVMe, {}, {}",
        plural(count(DeviceKind::Gpu), "GPU", "GPUs"),
        plural(
            count(DeviceKind::Accelerator),
            "accelerator",
            "accelerators"
        ),
        plural(count(DeviceKind::Nic), "NIC", "NICs"),
        count(DeviceKind::Nvme),
        plural(t.switches.len(), "switch", "switches"),
        plural(t.numa_nodes.len(), "NUMA node", "NUMA nodes")
    );
    if !m.hypervisor.is_empty() {
        sub.push_str(&format!(
            " — virtual machine ({}): the PCI tree may be synthetic",
            m.hypervisor[0].1
        ));
    }
    let mut notes: Vec<String> = t.source.limitations.clone();
    notes.extend(inp.matrix.notes.iter().cloned());

    // Rail pairs: the audit's GPU→NIC matching, else each compute endpoint's nearest NIC.
    let mut pairs: Vec<(String, String)> = Vec::new();
    let ep_by_bdf: HashMap<Bdf, &str> = inp
        .matrix
        .endpoints
        .iter()
        .map(|e| (e.bdf, e.name.as_str()))
        .collect();
    let pairs_source;
    if !inp.audit.pairs.is_empty() {
        pairs_source = "rail pairs: the audit's GPU→NIC matching".to_string();
        for p in &inp.audit.pairs {
            if let (Some(g), Some(n)) = (ep_by_bdf.get(&p.gpu), ep_by_bdf.get(&p.nic)) {
                pairs.push((g.to_string(), n.to_string()));
            }
        }
    } else {
        pairs_source =
            "rail pairs: each GPU/accelerator to its nearest NIC (no GPU–RDMA NIC matching)"
                .to_string();
        let nics: Vec<_> = inp
            .matrix
            .endpoints
            .iter()
            .filter(|e| e.kind == DeviceKind::Nic)
            .collect();
        for e in inp.matrix.endpoints.iter().filter(|e| e.kind.is_compute()) {
            let best = nics
                .iter()
                .filter_map(|n| {
                    inp.matrix
                        .pair(&e.bdf, &n.bdf)
                        .map(|p| (p.label.rank(), *n))
                })
                .min_by_key(|(r, _)| *r);
            if let Some((_, n)) = best {
                pairs.push((e.name.clone(), n.name.clone()));
            }
        }
    }

    let header_lines: Vec<(String, bool, f32)> = std::iter::once((title, true, FONT + 2.0))
        .chain(std::iter::once((sub, false, FONT)))
        .chain(notes.iter().map(|n| (format!("Note: {n}"), false, FONT)))
        .chain(std::iter::once((pairs_source.clone(), false, FONT)))
        .collect();
    // Boxes are placed from the top margin and moved below the header once the header is
    // wrapped to the picture's final width.
    let header_h = 0.0;

    // Place the columns; gutters are sized after routing, so place twice: once to know the
    // box centres, then with the final gutter widths.
    let place_all = |gutters: &[f32]| -> (Vec<LaidBox>, Vec<(f32, f32)>) {
        let mut p = Placer {
            boxes: Vec::new(),
            badges: &by_id_badges,
            badge_rows: &badge_rows,
        };
        let mut x = MARGIN;
        let mut spans = Vec::new();
        for (i, c) in columns.iter().enumerate() {
            p.place(c, x, MARGIN + header_h, col_w[i], None);
            spans.push((x, x + col_w[i]));
            x += col_w[i] + gutters[i];
        }
        (p.boxes, spans)
    };
    let gutter0 = vec![20.0; columns.len()];
    let (boxes0, spans0) = place_all(&gutter0);
    let col_of = |boxes: &[LaidBox], i: usize| -> usize {
        let mut cur = i;
        while let Some(p) = boxes[cur].parent {
            cur = p;
        }
        boxes
            .iter()
            .take(cur)
            .filter(|b| b.parent.is_none())
            .count()
    };
    // Route: lane assignment per gutter.
    struct Route {
        a: usize,
        b: usize,
        gutter: usize,
        lane: usize,
        ya: f32,
        yb: f32,
    }
    let find = |boxes: &[LaidBox], name: &str| {
        boxes
            .iter()
            .position(|b| b.endpoint.as_deref() == Some(name))
    };
    let mut lanes: Vec<Vec<Vec<(f32, f32)>>> = vec![Vec::new(); columns.len()];
    let mut routes = Vec::new();
    // Attachment points spread over the box side when several connectors share a box.
    let mut uses: HashMap<usize, usize> = HashMap::new();
    let mut resolved = Vec::new();
    for (g, n) in &pairs {
        if let (Some(gi), Some(ni)) = (find(&boxes0, g), find(&boxes0, n)) {
            *uses.entry(gi).or_default() += 1;
            *uses.entry(ni).or_default() += 1;
            resolved.push((g.clone(), n.clone(), gi, ni));
        }
    }
    let mut seen: HashMap<usize, usize> = HashMap::new();
    let mut attach = |i: usize, boxes: &[LaidBox]| -> f32 {
        let k = seen.entry(i).or_default();
        *k += 1;
        let n = uses.get(&i).copied().unwrap_or(1);
        let r = boxes[i].rect;
        r.y + r.h * (*k as f32) / (n as f32 + 1.0)
    };
    for (_, _, gi, ni) in &resolved {
        let (ca, cb) = (col_of(&boxes0, *gi), col_of(&boxes0, *ni));
        let (a, b) = if ca <= cb { (*gi, *ni) } else { (*ni, *gi) };
        let ya = attach(a, &boxes0);
        let yb = attach(b, &boxes0);
        let gutter = col_of(&boxes0, a);
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
    let _ = spans0;
    let gutters: Vec<f32> = lanes.iter().map(|l| 24.0 + LANE * l.len() as f32).collect();
    let (mut boxes, spans) = place_all(&gutters);
    let computes: Vec<_> = inp
        .matrix
        .endpoints
        .iter()
        .filter(|e| e.kind.is_compute())
        .collect();
    for b in boxes.iter_mut() {
        let (Some(_), Some(bdf)) = (&b.endpoint, b.bdf) else {
            continue;
        };
        for c in &computes {
            let l = if c.bdf == bdf {
                Label::X
            } else {
                match inp.matrix.pair(&c.bdf, &bdf) {
                    Some(p) => p.label,
                    None => continue, // not a classified pair (accelerator–NVMe)
                }
            };
            b.pair_labels.push((c.name.clone(), l));
        }
    }
    let mut connectors = Vec::new();
    for (r, (g, n, gi, ni)) in routes.iter().zip(&resolved) {
        let ra = boxes[r.a].rect;
        let rb = boxes[r.b].rect;
        let lx = spans[r.gutter].1 + 8.0 + LANE / 2.0 + LANE * r.lane as f32;
        let same = col_of(&boxes, r.a) == col_of(&boxes, r.b);
        let end_x = if same { rb.right() } else { rb.x };
        let points = vec![(ra.right(), r.ya), (lx, r.ya), (lx, r.yb), (end_x, r.yb)];
        let pc = match (boxes[*gi].bdf, boxes[*ni].bdf) {
            (Some(a), Some(b)) => inp.matrix.pair(&a, &b),
            _ => None,
        };
        let label = pc.map(|p| p.label).unwrap_or(Label::Unknown);
        let lw = text_width(label.to_string().chars().count().max(3), SMALL) + 8.0;
        let my = (r.ya + r.yb) / 2.0;
        let mut title = format!("{g} ↔ {n}: {label}");
        if let Some(p) = pc {
            title.push_str(&format!("\n{}", p.reason));
            if let (Some(bw), Some(h)) = (p.bottleneck_gbytes_per_s, p.bottleneck_hop) {
                let hop = p.hops.get(h).map(|x| x.node.as_str()).unwrap_or("?");
                title.push_str(&format!("\nbottleneck {bw:.1} GB/s at {hop}"));
            }
        }
        connectors.push(Connector {
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

    // Canvas so far.
    let content_right = spans
        .last()
        .map(|s| s.1 + gutters.last().copied().unwrap_or(0.0))
        .unwrap_or(MARGIN);
    let content_bottom = boxes
        .iter()
        .map(|b| b.rect.bottom())
        .fold(MARGIN + header_h, f32::max);

    // Legend below the columns.
    let ly = content_bottom + 14.0;
    let lx = MARGIN;
    let legend_title = TextLine {
        x: lx + 6.0,
        y: ly + 14.0,
        text: "Legend".into(),
        size: FONT,
        bold: true,
    };
    let mut legend = Vec::new();
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
    let row = |i: usize| ly + 22.0 + i as f32 * (LINE + 2.0);
    let col1 = lx + 6.0;
    let col2 = col1 + 150.0;
    let col3 = col2 + 250.0;
    for (r, (k, text)) in kinds.iter().enumerate() {
        legend.push(LegendItem {
            swatch: Rect {
                x: col1,
                y: row(r) + 2.0,
                w: 18.0,
                h: 11.0,
            },
            colour: k.fill().to_string(),
            line: false,
            text: TextLine {
                x: col1 + 24.0,
                y: row(r) + 11.0,
                text: text.to_string(),
                size: FONT,
                bold: false,
            },
        });
    }
    for (i, (l, text)) in labels.iter().enumerate() {
        legend.push(LegendItem {
            swatch: Rect {
                x: col2,
                y: row(i) + 2.0,
                w: 28.0,
                h: 11.0,
            },
            colour: label_colour(*l).to_string(),
            line: true,
            text: TextLine {
                x: col2 + 34.0,
                y: row(i) + 11.0,
                text: text.to_string(),
                size: FONT,
                bold: false,
            },
        });
    }
    let sev = [
        (Severity::Error, "audit error on this hop"),
        (Severity::Warning, "audit warning on this hop"),
    ];
    for (i, (s, text)) in sev.iter().enumerate() {
        legend.push(LegendItem {
            swatch: Rect {
                x: col3,
                y: row(i) + 2.0,
                w: 28.0,
                h: 11.0,
            },
            colour: severity_colour(*s).to_string(),
            line: false,
            text: TextLine {
                x: col3 + 34.0,
                y: row(i) + 11.0,
                text: text.to_string(),
                size: FONT,
                bold: false,
            },
        });
    }
    let tag_help = [
        "ACS redirect · LINK degraded",
        "AER errors · PORT down · MPS",
        "line: GPU–NIC rail pair,",
        "label: its nvidia-smi class",
    ];
    for (i, text) in tag_help.iter().enumerate() {
        legend.push(LegendItem {
            swatch: Rect {
                x: col3,
                y: row(i + 2) + 2.0,
                w: 0.0,
                h: 0.0,
            },
            colour: "none".into(),
            line: false,
            text: TextLine {
                x: col3,
                y: row(i + 2) + 11.0,
                text: text.to_string(),
                size: FONT,
                bold: false,
            },
        });
    }
    let legend_w = col3 - lx + text_width(30, FONT) + 12.0;
    let legend_rect = Rect {
        x: lx,
        y: ly,
        w: legend_w,
        h: row(kinds.len()) - ly + 4.0,
    };

    // Header text, wrapped to the final width; everything else moves down below it.
    let width = content_right.max(legend_rect.right()).max(560.0) + MARGIN;
    let mut hy = MARGIN;
    for (text, bold, size) in header_lines {
        let room = ((width - 2.0 * MARGIN) / text_width(1, size)).floor() as usize;
        for (k, part) in wrap(&text, room).into_iter().enumerate() {
            hy += LINE + 2.0;
            header.push(TextLine {
                x: if k == 0 { MARGIN } else { MARGIN + 16.0 },
                y: hy - 3.0,
                text: if k == 0 {
                    part
                } else {
                    fit(&part, room.saturating_sub(3))
                },
                size,
                bold,
            });
        }
    }
    let dy = hy + 6.0 - MARGIN;
    let down = |r: &mut Rect| r.y += dy;
    for b in boxes.iter_mut() {
        down(&mut b.rect);
        for t in b.lines.iter_mut() {
            t.y += dy;
        }
        for g in b.badges.iter_mut() {
            down(&mut g.rect);
        }
        if let Some(r) = b.select_slot.as_mut() {
            down(r);
        }
    }
    for c in connectors.iter_mut() {
        for p in c.points.iter_mut() {
            p.1 += dy;
        }
        down(&mut c.label_rect);
    }
    let mut legend_rect = legend_rect;
    let mut legend_title = legend_title;
    down(&mut legend_rect);
    legend_title.y += dy;
    for item in legend.iter_mut() {
        down(&mut item.swatch);
        item.text.y += dy;
    }
    let height = legend_rect.bottom() + MARGIN;
    Layout {
        width,
        height,
        header,
        boxes,
        connectors,
        pairs_source,
        legend_rect,
        legend_title,
        legend,
    }
}

#[cfg(test)]
mod tests {
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
