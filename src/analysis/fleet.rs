//! `peerpath fleet`: many nodes (snapshots or JSON reports) grouped by a topology fingerprint,
//! with the outliers and what makes each one differ from the majority.
//!
//! The fingerprint ([`fingerprint`]) is a 64-bit FNV-1a hash of a node's role-level layout
//! ([`NodeView`]: every device by role with its kind, IDs, links and place, every pair label,
//! every audit finding by id, severity and subject role). It does not depend on PCI addresses,
//! so identical nodes whose buses are numbered differently share it. Node facts (driver
//! versions) are not hashed: they show in the outliers' diffs but do not split groups.
//!
//! Streaming: [`Fleet::add`] takes one node at a time and keeps only its name, fingerprint and,
//! per distinct fingerprint, one representative view; memory grows with the number of groups,
//! not with the size of the nodes.

use super::diff::{self, Diff, NodeView};
use crate::model::Topology;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::Hasher;

/// Version tag of the fleet JSON document.
pub const FLEET_SCHEMA: &str = "peerpath.fleet/1";

/// The role-level layout's fingerprint: FNV-1a 64 over a canonical text of the view (devices,
/// labels and findings in sorted order; the source path and node facts left out).
pub fn fingerprint(v: &NodeView) -> u64 {
    let mut h = fnv::FnvHasher::default();
    let mut feed = |s: &str| {
        h.write(s.as_bytes());
        h.write_u8(0);
    };
    feed("devices");
    for (r, d) in &v.devices {
        for s in [r, &d.kind, &d.ids, &d.link, &d.max_link, &d.place] {
            feed(s);
        }
    }
    feed("labels");
    for (p, l) in &v.labels {
        feed(p);
        feed(l);
    }
    feed("findings");
    for f in &v.findings {
        feed(&f.id);
        feed(&f.severity);
        feed(&f.subject);
    }
    h.finish()
}

/// One node as the fleet keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeEntry {
    /// Name (the input file name without its extensions).
    pub name: String,
    /// Fingerprint as 16 hex digits.
    pub fingerprint: String,
    /// Index of its group (internal).
    #[serde(skip)]
    group: usize,
}

/// A group of nodes sharing one fingerprint.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// Fingerprint as 16 hex digits.
    pub fingerprint: String,
    /// Number of nodes.
    pub count: usize,
    /// The first node seen with this fingerprint (its view is the group's representative).
    pub representative: String,
    /// Whether this is a majority group (see [`Summary::outliers`]).
    pub majority: bool,
    #[serde(skip)]
    view: NodeView,
}

/// An input that could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    /// Input path.
    pub input: String,
    /// Why.
    pub error: String,
}

/// Accumulates nodes one at a time.
#[derive(Default)]
pub struct Fleet {
    by_fp: HashMap<u64, usize>,
    groups: Vec<Group>,
    nodes: Vec<NodeEntry>,
    unreadable: Vec<Unreadable>,
}

/// An outlier node and its difference from the nearest majority group.
#[derive(Debug, Clone, Serialize)]
pub struct Outlier {
    /// Node name.
    pub name: String,
    /// Its fingerprint.
    pub fingerprint: String,
    /// Nodes sharing that fingerprint.
    pub group_size: usize,
    /// The majority group compared with (its fingerprint).
    pub against: String,
    /// Representative of that group.
    pub against_node: String,
    /// The differences (A = the majority's representative, B = this node).
    pub diff: Diff,
}

/// The fleet result (`peerpath.fleet/1`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Always [`FLEET_SCHEMA`].
    pub schema: String,
    /// Nodes read.
    pub nodes: usize,
    /// Groups, largest first.
    pub groups: Vec<Group>,
    /// Nodes outside every majority group, each with its diff.
    pub outliers: Vec<Outlier>,
    /// Every node and its fingerprint, in input order.
    pub members: Vec<NodeEntry>,
    /// Inputs that could not be read.
    pub unreadable: Vec<Unreadable>,
}

impl Fleet {
    /// An empty fleet.
    pub fn new() -> Self {
        Fleet::default()
    }

    /// Adds one node (its view is computed here and dropped unless it starts a new group).
    pub fn add(&mut self, name: &str, t: &Topology) {
        self.add_view(name, NodeView::of(t));
    }

    /// Adds one node's view.
    pub fn add_view(&mut self, name: &str, v: NodeView) {
        let fp = fingerprint(&v);
        let g = match self.by_fp.get(&fp) {
            Some(&g) => {
                self.groups[g].count += 1;
                g
            }
            None => {
                let g = self.groups.len();
                self.groups.push(Group {
                    fingerprint: format!("{fp:016x}"),
                    count: 1,
                    representative: name.to_string(),
                    majority: false,
                    view: v,
                });
                self.by_fp.insert(fp, g);
                g
            }
        };
        self.nodes.push(NodeEntry {
            name: name.to_string(),
            fingerprint: format!("{fp:016x}"),
            group: g,
        });
    }

    /// Records an input that could not be read.
    pub fn add_error(&mut self, input: &str, error: String) {
        self.unreadable.push(Unreadable {
            input: input.to_string(),
            error,
        });
    }

    /// Number of distinct fingerprints so far.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Finishes: marks majority groups, diffs every outlier against its nearest majority group.
    ///
    /// A group is a majority group when it is the largest, or when it holds more than
    /// `min_share` of the nodes (default 0.1 in the CLI: a fleet of two hardware generations
    /// has two majorities). Every node of another group is an outlier; it is compared with the
    /// majority group whose representative differs from it the least.
    pub fn finish(mut self, min_share: f64) -> Summary {
        let total = self.nodes.len();
        let largest = self.groups.iter().map(|g| g.count).max().unwrap_or(0);
        for g in &mut self.groups {
            g.majority =
                g.count == largest || (total > 0 && g.count as f64 > min_share * total as f64);
        }
        let majors: Vec<usize> = (0..self.groups.len())
            .filter(|&i| self.groups[i].majority)
            .collect();
        let mut group_diff: HashMap<usize, (usize, Diff)> = HashMap::new();
        for (i, g) in self.groups.iter().enumerate() {
            if g.majority {
                continue;
            }
            let best = majors
                .iter()
                .map(|&m| (m, diff::diff(&self.groups[m].view, &g.view)))
                .min_by_key(|(_, d)| d.len());
            if let Some(b) = best {
                group_diff.insert(i, b);
            }
        }
        let mut outliers = Vec::new();
        for n in &self.nodes {
            if let Some((m, d)) = group_diff.get(&n.group) {
                let mut d = d.clone();
                d.b = n.name.clone();
                d.a = self.groups[*m].representative.clone();
                outliers.push(Outlier {
                    name: n.name.clone(),
                    fingerprint: n.fingerprint.clone(),
                    group_size: self.groups[n.group].count,
                    against: self.groups[*m].fingerprint.clone(),
                    against_node: self.groups[*m].representative.clone(),
                    diff: d,
                });
            }
        }
        let mut groups = self.groups;
        groups.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(a.fingerprint.cmp(&b.fingerprint))
        });
        Summary {
            schema: FLEET_SCHEMA.into(),
            nodes: total,
            groups,
            outliers,
            members: self.nodes,
            unreadable: self.unreadable,
        }
    }
}

/// A node's name from its input path: the file name without `.tar.gz`, `.tar.bz2`, `.tgz`,
/// `.tar`, `.json` or `.xml`.
pub fn node_name(path: &std::path::Path) -> String {
    let n = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    for ext in [
        ".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".json", ".xml",
    ] {
        if let Some(s) = n.strip_suffix(ext)
            && !s.is_empty()
        {
            return s.to_string();
        }
    }
    n
}
