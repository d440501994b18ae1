//! NCCL's topology and path prints (`NCCL_DEBUG_SUBSYS=GRAPH`, `ncclTopoPrint`,
//! `ncclTopoPrintPaths`): node ids `GPU/84000`, `NIC/E000` (hex, ≤ 2.20) or `GPU/0-84000` (system
//! id, then local id, 2.21+); a tree of `+ LINK[bw] - NODE (info)` lines indented by depth; and
//! path lines `NODE :NODE (hops/bw/TYPE) NODE (…) …`.

use serde::Serialize;

/// Node kinds of NCCL's topology graph.
const KINDS: [&str; 6] = ["GPU", "PCI", "NVS", "CPU", "NIC", "NET"];

/// A topology node id: `GPU/84000` or `GPU/0-84000`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct NodeId {
    /// `GPU`, `PCI`, `NVS`, `CPU`, `NIC`, `NET`.
    pub kind: String,
    /// The system id before `-` (2.21+); `None` in the older form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<u64>,
    /// The local id (hex): a busId for GPU, PCI and NIC nodes, an index for NET, CPU, NVS.
    pub id: u64,
}

impl NodeId {
    /// Reads `GPU/84000`, `GPU/0-84000`, `NET/5`.
    pub fn parse(s: &str) -> Option<NodeId> {
        let (kind, id) = s.split_once('/')?;
        if !KINDS.contains(&kind) {
            return None;
        }
        let (system, local) = match id.split_once('-') {
            Some((sys, l)) => (Some(u64::from_str_radix(sys, 16).ok()?), l),
            None => (None, id),
        };
        Some(NodeId {
            kind: kind.to_string(),
            system,
            id: u64::from_str_radix(local, 16).ok()?,
        })
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.system {
            Some(s) => write!(f, "{}/{:x}-{:x}", self.kind, s, self.id),
            None => write!(f, "{}/{:x}", self.kind, self.id),
        }
    }
}

/// One line of the topology tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopoNodeLine {
    /// Leading spaces: the depth in the tree (children are indented further).
    pub indent: usize,
    /// The link to the parent (`PCI`, `NVL`, `NET`, `SYS`, `C2C`) and its bandwidth, for `+` lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<(String, f64)>,
    /// The node.
    pub node: NodeId,
    /// The text in parentheses after it, if any (`(4)`, `(5/0/25.000000)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<String>,
}

/// One path of a path line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathEntry {
    /// Destination node.
    pub to: NodeId,
    /// Hop count.
    pub hops: u32,
    /// Bandwidth, GB/s.
    pub bw: f64,
    /// NCCL path type name (`PIX`, `PHB`, …).
    pub path: String,
}

/// A path line: every path from one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopoPaths {
    /// Source node.
    pub from: NodeId,
    /// Paths read (a cut line keeps those before the cut).
    pub paths: Vec<PathEntry>,
}

/// One line of NCCL's topology print, as [`parse_line`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum TopoLine {
    /// `=== System : maxBw 24.0 totalBw 24.0 ===`: the word after the colon and the two figures.
    System {
        /// The first word (`maxBw`, or `maxWidth` before 2.12).
        word: String,
        /// The first figure.
        max: f64,
        /// The second figure.
        total: f64,
    },
    /// A node of the tree.
    Node(TopoNodeLine),
    /// A path line.
    Paths(TopoPaths),
    /// A line of the print that cannot be read, and why.
    Refused(String),
}

/// Reads a topology or path print line; `None` when the message is neither.
pub fn parse_line(msg: &str) -> Option<TopoLine> {
    let t = msg.trim();
    if let Some(r) = t.strip_prefix("=== System :") {
        if let Some(w) = r
            .split_whitespace()
            .find(|w| crate::parse::text::non_finite(w))
        {
            return Some(TopoLine::Refused(format!("{w:?} is not a finite number")));
        }
        let nums: Vec<f64> = r
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        let word = r.split_whitespace().next().unwrap_or("").to_string();
        return Some(match nums.as_slice() {
            [max, total, ..] => TopoLine::System {
                word,
                max: *max,
                total: *total,
            },
            _ => TopoLine::Refused("system line without two numbers".into()),
        });
    }
    let indent = msg.len() - msg.trim_start().len();
    if let Some(r) = t.strip_prefix("+ ") {
        // `+ PCI[24.0] - GPU/84000 (4)`
        let (link, node) = r.split_once(" - ")?;
        let (lt, bw) = link.split_once('[')?;
        let bw = bw.strip_suffix(']')?;
        if crate::parse::text::non_finite(bw) {
            return Some(TopoLine::Refused(format!(
                "link bandwidth {bw:?} is not a finite number"
            )));
        }
        let bw: f64 = bw.parse().ok()?;
        let (id, info) = split_info(node);
        let node = NodeId::parse(id)?;
        return Some(TopoLine::Node(TopoNodeLine {
            indent,
            link: Some((lt.to_string(), bw)),
            node,
            info,
        }));
    }
    let first = t.split_whitespace().next()?;
    let from = NodeId::parse(first)?;
    let rest = t[first.len()..].trim_start();
    if let Some(paths) = rest.strip_prefix(':') {
        let mut out = Vec::new();
        let mut it = paths.split_whitespace();
        while let (Some(to), Some(p)) = (it.next(), it.next()) {
            let Some(to) = NodeId::parse(to) else { break };
            let p = p.trim_start_matches('(').trim_end_matches(')');
            let f: Vec<&str> = p.split('/').collect();
            let (Some(h), Some(bw), Some(path)) = (
                f.first().and_then(|h| h.parse().ok()),
                f.get(1).and_then(|b| b.parse().ok()),
                f.get(2)
                    .filter(|s| s.len() == 3 && s.chars().all(|c| c.is_ascii_uppercase())),
            ) else {
                break; // cut inside this entry
            };
            out.push(PathEntry {
                to,
                hops: h,
                bw,
                path: path.to_string(),
            });
        }
        return Some(TopoLine::Paths(TopoPaths { from, paths: out }));
    }
    // A root node line: `CPU/1 (1/1/2)`.
    let (_, info) = split_info(t);
    Some(TopoLine::Node(TopoNodeLine {
        indent,
        link: None,
        node: from,
        info,
    }))
}

/// `GPU/84000 (4)` → (`GPU/84000`, `4`).
fn split_info(s: &str) -> (&str, Option<String>) {
    match s.split_once(" (") {
        Some((id, info)) => (
            id.trim(),
            Some(info.trim_end_matches(')').trim().to_string()),
        ),
        None => (s.trim(), None),
    }
}
