//! `peerpath diff A B`: what differs between two nodes (or one node at two times), matched by
//! role and never by PCI address, since identical nodes number their buses differently.
//!
//! Roles ([`NodeView`]): endpoints take the names [`classify::endpoints`] gives them (`GPU0` in
//! PCI bus order as nvidia-smi numbers them, `NIC3` for the fourth NIC in RDMA-name order, i.e.
//! its rail); a bridge or port is named by its kind, depth and the GPUs below it (else the NICs
//! and other endpoints below it), e.g. `switch-downstream@2[GPU3]`; any other function by kind,
//! IDs and ordinal (`other:8086:0998#0`). From those roles the view keeps each device's IDs,
//! link, NUMA node and place (NUMA node plus the kinds of the ports above it), the
//! `nvidia-smi topo -m` label of every endpoint pair, the audit findings (id, severity, subject
//! role) and a few node facts (driver versions, peer-memory module, IOMMU, CPU).

use super::audit::{self, AuditOptions};
use super::classify::{Classifier, ClassifyOptions};
use crate::model::{Bdf, Device, Topology};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Version tag of the diff JSON document.
pub const DIFF_SCHEMA: &str = "peerpath.diff/1";

/// One device at role level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleDevice {
    /// Device kind (`gpu`, `nic`, `switch-downstream`, …).
    pub kind: String,
    /// `vvvv:dddd`, or `?` when the source did not hold the IDs.
    pub ids: String,
    /// Negotiated link (`16GT/s x16`), `?` when unknown, `-` when the device has none.
    pub link: String,
    /// Capable link, same form.
    pub max_link: String,
    /// NUMA node (`0`), `?` when unknown.
    pub numa: String,
    /// The kinds of the ports above it, top first (`root-port/switch-upstream/switch-downstream`),
    /// `-` for a function on a root bus.
    pub place: String,
}

/// One audit finding at role level.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RoleFinding {
    /// Check id (`link-degraded`).
    pub id: String,
    /// Severity (`error`, `warning`, `unknown`, `info`).
    pub severity: String,
    /// Subject as a role (`NIC4`, `switch-downstream@2[GPU2]`, `node`, or an RDMA name).
    pub subject: String,
}

/// A node reduced to its role-level layout: what [`diff`] compares and what the fleet view
/// fingerprints. Built from a [`Topology`] by [`NodeView::of`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeView {
    /// Where the topology came from.
    pub source: String,
    /// Devices by role name.
    pub devices: BTreeMap<String, RoleDevice>,
    /// Pair labels: `"GPU0 NIC3"` → `PIX`, every classified endpoint pair once.
    pub labels: BTreeMap<String, String>,
    /// Audit findings.
    pub findings: BTreeSet<RoleFinding>,
    /// Node facts by name (`nvidia_driver`, `nvidia_peermem`, `iommu_units`, …).
    pub facts: BTreeMap<String, String>,
}

fn link_text(gts: Option<f64>, width: Option<u32>) -> String {
    match (gts, width) {
        (None, None) => "?".into(),
        (g, w) => format!(
            "{}GT/s x{}",
            g.map(|g| format!("{g}")).unwrap_or_else(|| "?".into()),
            w.map(|w| w.to_string()).unwrap_or_else(|| "?".into())
        ),
    }
}

fn ids(d: &Device) -> String {
    match (d.vendor_id, d.device_id) {
        (Some(v), Some(i)) => format!("{v:04x}:{i:04x}"),
        (Some(v), None) => format!("{v:04x}:?"),
        _ => "?".into(),
    }
}

impl NodeView {
    /// Builds the role-level view of a topology (classifies every pair and runs the audit).
    pub fn of(t: &Topology) -> NodeView {
        let cl = Classifier::new(t, &ClassifyOptions::default());
        let paths = cl.paths();
        let eps = cl.endpoints();
        let ep_name: HashMap<Bdf, &str> = eps.iter().map(|e| (e.bdf, e.name.as_str())).collect();
        // Endpoints below each device (itself included for endpoints).
        let mut below: HashMap<Bdf, Vec<&str>> = HashMap::new();
        for e in eps {
            for a in paths.ancestors(&e.bdf) {
                below.entry(a).or_default().push(e.name.as_str());
            }
        }
        let mut ordinal: HashMap<String, usize> = HashMap::new();
        let mut role: HashMap<Bdf, String> = HashMap::new();
        for d in &t.devices {
            let name = if let Some(n) = ep_name.get(&d.bdf) {
                (*n).to_string()
            } else {
                let under = below.get(&d.bdf).cloned().unwrap_or_default();
                let gpus: Vec<&str> = under
                    .iter()
                    .copied()
                    .filter(|n| n.starts_with("GPU"))
                    .collect();
                let shown = if gpus.is_empty() { under } else { gpus };
                if d.kind.is_bridge() && !shown.is_empty() {
                    let depth = paths.ancestors(&d.bdf).len().saturating_sub(1);
                    let mut shown = shown;
                    shown.sort_by_key(|a| natural(a));
                    format!("{}@{depth}[{}]", d.kind.as_str(), shown.join(","))
                } else {
                    let vf = if d.is_vf() { "vf-" } else { "" };
                    let key = format!("{vf}{}:{}", d.kind.as_str(), ids(d));
                    let n = ordinal.entry(key.clone()).or_insert(0);
                    let s = format!("{key}#{n}");
                    *n += 1;
                    s
                }
            };
            role.insert(d.bdf, name);
        }
        let mut devices = BTreeMap::new();
        for d in &t.devices {
            let chain = paths.ancestors(&d.bdf);
            let numa = match t.numa_of(d) {
                Some(n) => n.to_string(),
                None => "?".into(),
            };
            let above: Vec<&str> = chain
                .iter()
                .skip(1)
                .rev()
                .filter_map(|a| t.device(a).map(|ad| ad.kind.as_str()))
                .collect();
            let place = if above.is_empty() {
                "-".to_string()
            } else {
                above.join("/")
            };
            let (link, max_link) = match &d.link {
                Some(l) => (
                    link_text(l.current_gts, l.current_width),
                    link_text(l.max_gts, l.max_width),
                ),
                None => ("-".into(), "-".into()),
            };
            devices.insert(
                role[&d.bdf].clone(),
                RoleDevice {
                    kind: d.kind.as_str().to_string(),
                    ids: ids(d),
                    link,
                    max_link,
                    numa,
                    place,
                },
            );
        }
        let mut labels = BTreeMap::new();
        for (i, j, p) in cl.summary_all() {
            let (a, b) = (&eps[i].name, &eps[j].name);
            let (a, b) = if natural(a) <= natural(b) {
                (a, b)
            } else {
                (b, a)
            };
            labels.insert(format!("{a} {b}"), p.label.to_string());
        }
        let report = audit::run(t, &AuditOptions::default());
        let findings = report
            .findings
            .iter()
            .map(|f| RoleFinding {
                id: f.id.to_string(),
                severity: f.severity.as_str().to_string(),
                subject: match &f.subject {
                    audit::Subject::Device(b) => role.get(b).cloned(),
                    _ => None,
                }
                .unwrap_or_else(|| f.subject.to_string()),
            })
            .collect();
        let mi = &t.machine;
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "(absent)".into());
        let mut facts = BTreeMap::new();
        facts.insert("cpu_model".into(), opt(&mi.cpu_model));
        facts.insert(
            "sockets".into(),
            mi.sockets.map(|s| s.to_string()).unwrap_or("?".into()),
        );
        facts.insert("numa_nodes".into(), t.numa_nodes.len().to_string());
        facts.insert("nvidia_driver".into(), opt(&mi.nvidia_driver));
        facts.insert("nvidia_peermem".into(), opt(&mi.nvidia_peermem_version));
        facts.insert("nv_peer_mem".into(), mi.nv_peer_mem_loaded.to_string());
        facts.insert("ib_core".into(), mi.ib_core_loaded.to_string());
        facts.insert(
            "memory_peers".into(),
            mi.memory_peers
                .iter()
                .map(|(n, v)| format!("{n}={}", v.as_deref().unwrap_or("?")))
                .collect::<Vec<_>>()
                .join(","),
        );
        facts.insert(
            "iommu_units".into(),
            match &mi.iommu_units {
                crate::model::Fact::Known(v) => v.len().to_string(),
                crate::model::Fact::Unknown(_) => "?".into(),
            },
        );
        facts.insert("hypervisor".into(), (!mi.hypervisor.is_empty()).to_string());
        NodeView {
            source: t.source.path.clone(),
            devices,
            labels,
            findings,
            facts,
        }
    }
}

/// Sort key that puts `GPU2` before `GPU10`.
fn natural(s: &str) -> (String, u64, String) {
    let head: String = s.chars().take_while(|c| !c.is_ascii_digit()).collect();
    let rest = &s[head.len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let tail = rest[digits.len()..].to_string();
    (head, digits.parse().unwrap_or(0), tail)
}

/// A device that sits elsewhere in B than in A.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    /// Role.
    pub role: String,
    /// Place in A.
    pub from: String,
    /// Place in B.
    pub to: String,
}

/// One field of one device that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    /// Role.
    pub role: String,
    /// `link`, `max_link`, `ids`, `kind` or `numa` (a NUMA node that became or stopped being
    /// unknown; a change between two known nodes is a move).
    pub field: String,
    /// Value in A.
    pub a: String,
    /// Value in B.
    pub b: String,
}

/// A pair whose label differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelChange {
    /// The pair (`GPU3 NIC3`).
    pub pair: String,
    /// Label in A (`-` when the pair is not in A).
    pub a: String,
    /// Label in B.
    pub b: String,
}

/// A node fact that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactChange {
    /// Fact name.
    pub fact: String,
    /// Value in A.
    pub a: String,
    /// Value in B.
    pub b: String,
}

/// The differences between two nodes (`peerpath.diff/1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    /// Always [`DIFF_SCHEMA`].
    pub schema: String,
    /// Source of A.
    pub a: String,
    /// Source of B.
    pub b: String,
    /// Whether nothing below differs.
    pub equal: bool,
    /// Roles present in B only.
    pub added: Vec<String>,
    /// Roles present in A only.
    pub removed: Vec<String>,
    /// Same role, other place.
    pub moved: Vec<Moved>,
    /// Link speed/width, ID or kind changes.
    pub changed: Vec<Changed>,
    /// Pair labels that differ.
    pub labels: Vec<LabelChange>,
    /// Findings in B and not in A.
    pub findings_appeared: Vec<RoleFinding>,
    /// Findings in A and not in B.
    pub findings_vanished: Vec<RoleFinding>,
    /// Node facts that differ.
    pub facts: Vec<FactChange>,
}

impl Diff {
    /// Number of differences listed.
    pub fn len(&self) -> usize {
        self.added.len()
            + self.removed.len()
            + self.moved.len()
            + self.changed.len()
            + self.labels.len()
            + self.findings_appeared.len()
            + self.findings_vanished.len()
            + self.facts.len()
    }
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Compares two views role by role.
pub fn diff(a: &NodeView, b: &NodeView) -> Diff {
    let mut d = Diff {
        schema: DIFF_SCHEMA.into(),
        a: a.source.clone(),
        b: b.source.clone(),
        equal: true,
        added: vec![],
        removed: vec![],
        moved: vec![],
        changed: vec![],
        labels: vec![],
        findings_appeared: vec![],
        findings_vanished: vec![],
        facts: vec![],
    };
    for (r, da) in &a.devices {
        match b.devices.get(r) {
            None => d.removed.push(r.clone()),
            Some(db) => {
                let numa_known = da.numa != "?" && db.numa != "?";
                if da.place != db.place || (numa_known && da.numa != db.numa) {
                    d.moved.push(Moved {
                        role: r.clone(),
                        from: format!("numa{} {}", da.numa, da.place),
                        to: format!("numa{} {}", db.numa, db.place),
                    });
                } else if da.numa != db.numa {
                    d.changed.push(Changed {
                        role: r.clone(),
                        field: "numa".into(),
                        a: da.numa.clone(),
                        b: db.numa.clone(),
                    });
                }
                for (field, x, y) in [
                    ("kind", &da.kind, &db.kind),
                    ("ids", &da.ids, &db.ids),
                    ("link", &da.link, &db.link),
                    ("max_link", &da.max_link, &db.max_link),
                ] {
                    if x != y {
                        d.changed.push(Changed {
                            role: r.clone(),
                            field: field.into(),
                            a: x.clone(),
                            b: y.clone(),
                        });
                    }
                }
            }
        }
    }
    d.added = b
        .devices
        .keys()
        .filter(|r| !a.devices.contains_key(*r))
        .cloned()
        .collect();
    let pairs: BTreeSet<&String> = a.labels.keys().chain(b.labels.keys()).collect();
    for p in pairs {
        let (x, y) = (a.labels.get(p), b.labels.get(p));
        if x != y {
            d.labels.push(LabelChange {
                pair: p.clone(),
                a: x.cloned().unwrap_or_else(|| "-".into()),
                b: y.cloned().unwrap_or_else(|| "-".into()),
            });
        }
    }
    d.findings_appeared = b.findings.difference(&a.findings).cloned().collect();
    d.findings_vanished = a.findings.difference(&b.findings).cloned().collect();
    let facts: BTreeSet<&String> = a.facts.keys().chain(b.facts.keys()).collect();
    for f in facts {
        let (x, y) = (a.facts.get(f), b.facts.get(f));
        if x != y {
            d.facts.push(FactChange {
                fact: f.clone(),
                a: x.cloned().unwrap_or_else(|| "-".into()),
                b: y.cloned().unwrap_or_else(|| "-".into()),
            });
        }
    }
    d.equal = d.is_empty();
    d
}

/// Compares two topologies (builds both views, then [`diff`]).
pub fn diff_topologies(a: &Topology, b: &Topology) -> Diff {
    diff(&NodeView::of(a), &NodeView::of(b))
}
