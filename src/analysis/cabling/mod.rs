//! Rail cabling: the rails as the fabric forms them (which leaf each host adapter's cable
//! lands on) against the rails as the nodes need them (GPU k ↔ its NIC, rail k) — judged from
//! the map alone when there is no node layout.
//!
//! Data: the fabric's own map ([`crate::model::fabric::FabricMap`], read by `parse::fabric` from
//! `ibnetdiscover`, `iblinkinfo`, `ibdiagnet2.db_csv` or `lldpctl`) and, when given, one
//! [`NodeLayout`] per node, or one layout standing for every host of the map, built by
//! [`NodeLayout::from_rails`] from the rails report and the topology's RDMA devices.
//!
//! The judgment reads as the audit's checks do: [`ctx::Ctx`] is built once (the map's host
//! ports, which hosts are GPU nodes, each leaf's rail, the scalable units, the layout pairing)
//! and a flat list of named rules ([`rules`], [`speed`], [`counters`], [`coverage`]) each
//! returns findings with their evidence. How each rule decides is written beside it and in
//! docs/fleet.md.

pub mod counters;
pub mod coverage;
pub mod ctx;
pub mod layout;
pub mod rules;
pub mod speed;
pub mod units;

#[cfg(test)]
mod tests;

pub use counters::{CounterReading, PortErrors};
pub use coverage::{Coverage, ShortUnit};
pub use layout::{Adapter, NodeLayout};
pub use units::{Unit, units};

use crate::model::fabric::FabricMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// Version tag of the cabling JSON document. `/2`: judged from the map alone when there is no
/// layout, so `hosts` counts the GPU nodes judged (not only those a layout names); `rail` and
/// `leaves[].rail` are a number (the layout's rail) or a string (the adapter name a map-alone
/// rail is known by); findings carry a `severity`; `rails_judged`, `units`, `coverage`, `port_errors`,
/// `not_gpu_nodes`, `unnamed_adapters`, `aggregation_nodes` added.
pub const CABLING_SCHEMA: &str = "peerpath.cabling/2";

/// A rail: the layout's rail number (GPU k's NIC is rail k), or — judged from the map alone —
/// the adapter name (`mlx5_3`, `HCA-4`) most hosts of a leaf put on it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(untagged)]
pub enum Rail {
    /// The layout's rail number.
    Index(usize),
    /// The map's adapter name that stands for the rail.
    Name(String),
}

impl std::fmt::Display for Rail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rail::Index(k) => write!(f, "{k}"),
            Rail::Name(n) => f.write_str(n),
        }
    }
}

/// How much a finding weighs: errors fail the command (exit 1), warnings are said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A fault: the command exits 1.
    Error,
    /// Said, not a failure: the map cannot tell a fault from the hardware's own limit, or the
    /// cable is no host link.
    Warning,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Two adapters of one host each on the other's rail leaf.
    Crossed,
    /// An adapter cabled to a leaf of another rail.
    WrongRail,
    /// Two adapters of one host on one leaf.
    SharedLeaf,
    /// A leaf where no rail holds a majority.
    MixedLeaf,
    /// A host reaching a leaf of another scalable unit.
    OtherUnit,
    /// A link trained below what both its ends support, as the map shows.
    Degraded,
    /// A link slower than its peers where the map cannot say what its ends support.
    SlowLink,
    /// A switch port cabled to a port of the same switch.
    Loopback,
    /// An adapter that sees no switch.
    NoSwitch,
    /// An adapter the layout cables, on a rail the map holds, that the map does not show.
    Absent,
}

/// One cabling finding, every value typed; the renderer words it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CablingFinding {
    /// What it is.
    pub kind: FindingKind,
    /// How much it weighs.
    pub severity: Severity,
    /// The host, when the finding is about one.
    pub host: Option<String>,
    /// The adapters concerned (`mlx5_2`, `HCA-5`), as the map or the layout names them.
    pub adapters: Vec<String>,
    /// The GPUs they serve (from a layout).
    pub gpus: Vec<String>,
    /// The adapter's rail (wrong rail, absent, crossed: the first adapter's).
    pub rail: Option<Rail>,
    /// The leaf concerned (description, with the GUID where descriptions repeat).
    pub leaf: Option<String>,
    /// Each adapter's leaf, in the order of `adapters` (crossed: both leaves).
    pub leaves: Vec<String>,
    /// The leaf port(s) concerned, in the order of `adapters`.
    pub leaf_ports: Vec<String>,
    /// The rail the leaf carries (wrong rail, crossed: the first adapter's leaf).
    pub leaf_rail: Option<Rail>,
    /// Leaves of the adapter's own rail it should reach (wrong rail, other unit).
    pub should_reach: Vec<String>,
    /// Rails on the leaf and how many adapters of each (mixed leaf).
    pub rails_on_leaf: Vec<(Rail, usize)>,
    /// The link's rate as printed (degraded, slow link).
    pub rate: Option<String>,
    /// The link's rate in Gb/s (degraded, slow link).
    pub gbps: Option<f64>,
    /// The most common rate among its peers, in Gb/s (slow link).
    pub peers_gbps: Option<f64>,
    /// The fastest rate both ends support, in Gb/s (degraded).
    pub supported_gbps: Option<f64>,
    /// Evidence: map file and line, capture values, the producer's own words.
    pub evidence: Vec<String>,
}

impl CablingFinding {
    /// An empty finding of `kind` at `severity`.
    pub fn new(kind: FindingKind, severity: Severity) -> Self {
        CablingFinding {
            kind,
            severity,
            host: None,
            adapters: Vec::new(),
            gpus: Vec::new(),
            rail: None,
            leaf: None,
            leaves: Vec::new(),
            leaf_ports: Vec::new(),
            leaf_rail: None,
            should_reach: Vec::new(),
            rails_on_leaf: Vec::new(),
            rate: None,
            gbps: None,
            peers_gbps: None,
            supported_gbps: None,
            evidence: Vec::new(),
        }
    }
}

/// A leaf as the fabric forms it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leaf {
    /// Its description in the map, with its GUID where another switch has the same description.
    pub name: String,
    /// Its node GUID, when the map prints it (`0x…`).
    pub guid: Option<String>,
    /// The rail most of its GPU nodes' adapters are on (more than half); `None` when mixed.
    pub rail: Option<Rail>,
    /// GPU nodes' adapters cabled to it.
    pub adapters: usize,
    /// Rails on it and how many adapters of each.
    pub rails: Vec<(Rail, usize)>,
}

/// A host of the map that is not held to the GPU layout, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotGpuNode {
    /// The host as the map names it.
    pub host: String,
    /// Its adapters in the map.
    pub adapters: usize,
    /// Why: `fabric manager (UFM) by name`, `2 adapters where GPU nodes have 4`.
    pub why: String,
}

/// The cabling report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cabling {
    /// Always [`CABLING_SCHEMA`].
    pub schema: String,
    /// The tool that wrote the map.
    pub producer: String,
    /// GPU nodes found in the map and judged.
    pub hosts: usize,
    /// Host adapter ports of the map paired with a layout's adapter.
    pub adapters_matched: usize,
    /// How adapters were paired: by `guid`, `description`, `interface`, `leaf rail`.
    pub matched_by: BTreeMap<String, usize>,
    /// GPU nodes' adapters no layout pairs (first 20), by description; judged from the map alone.
    pub unmatched: Vec<String>,
    /// How many such adapters in all (0 without a layout).
    pub unmatched_total: usize,
    /// Adapters whose description is the firmware's default (no host): counted, never judged.
    pub unnamed_adapters: usize,
    /// SHARP aggregation nodes (`Mellanox Technologies Aggregation Node`): not hosts.
    pub aggregation_nodes: usize,
    /// Hosts not held to the GPU layout.
    pub not_gpu_nodes: Vec<NotGpuNode>,
    /// Leaves (switches with a host adapter cabled), one entry per switch.
    pub leaves: Vec<Leaf>,
    /// Whether rails were judged (GPU nodes with two adapters or more, most leaves carrying
    /// one rail); `false`: the fabric is not rail-optimised as far as the map shows.
    pub rails_judged: bool,
    /// Scalable units: GPU nodes grouped by the set of leaves they reach.
    pub units: Vec<Unit>,
    /// What the map covers, said once.
    pub coverage: Coverage,
    /// Findings: crossed and wrong rails first, then leaves, units, speed, loops, absent.
    pub findings: Vec<CablingFinding>,
    /// The physical layer per host link: error counters over their thresholds.
    pub port_errors: Vec<PortErrors>,
    /// What the inputs could not show.
    pub limitations: Vec<String>,
    /// No error finding, no counter climbing, and at least one GPU node judged.
    pub ok: bool,
}

/// Judges the map, against the layouts when given: one layout with no host stands for every
/// host of the map; layouts with hosts are matched by name or GUID; with none, from the map
/// alone.
pub fn judge(map: &FabricMap, layouts: &[NodeLayout]) -> Cabling {
    let cx = ctx::Ctx::build(map, layouts);
    let mut findings = Vec::new();
    findings.extend(rules::wrong_rail(&cx));
    findings.extend(rules::shared_leaf(&cx));
    findings.extend(rules::mixed_leaf(&cx));
    findings.extend(rules::other_unit(&cx));
    findings.extend(speed::link_speed(&cx));
    findings.extend(rules::loopback(&cx));
    findings.extend(rules::no_switch(&cx));
    let coverage = coverage::coverage(&cx);
    findings.extend(coverage::absent(&cx, &coverage));
    findings.sort_by(|a, b| {
        (a.kind, &a.host, &a.adapters, &a.leaf).cmp(&(b.kind, &b.host, &b.adapters, &b.leaf))
    });
    let port_errors = counters::port_errors(&cx);
    let hosts = cx.gpu_hosts().count();
    let ok = hosts > 0
        && !findings.iter().any(|f| f.severity == Severity::Error)
        && !port_errors.iter().any(|p| p.climbing);
    Cabling {
        schema: CABLING_SCHEMA.to_string(),
        producer: map.producer.tool().to_string(),
        hosts,
        adapters_matched: cx.paired().count(),
        matched_by: cx.matched_by(),
        unmatched: cx.unpaired_descs(20),
        unmatched_total: cx.unpaired_total(),
        unnamed_adapters: cx.unnamed,
        aggregation_nodes: cx.aggregation,
        not_gpu_nodes: cx.not_gpu_nodes(),
        leaves: cx.leaf_report(),
        rails_judged: cx.rails_judged,
        units: cx.units.clone(),
        coverage,
        findings,
        port_errors,
        limitations: cx.limitations(),
        ok,
    }
}
