//! The cluster's network topology as a scheduler wants it (Slurm `topology/tree` and
//! `topology/block`, Kubernetes topology labels): GPU nodes grouped into scalable units (the
//! leaf level), the spines above them, one switch over all, and blocks (one per NVLink domain
//! where the inputs give domains, else one per scalable unit).
//!
//! Data: the fabric's map ([`FabricMap`]) and, when given, the node layouts
//! ([`NodeLayout`]), through the cabling context [`Ctx`] — its host ports, which hosts are GPU
//! nodes, the layout pairing — and the cabling rules ([`rules`]) for the faults. Only GPU-rail
//! adapters build the tree: an adapter a layout puts on no rail (storage, management) or one
//! named in [`SchedOptions::exclude_adapters`] is left out, and said. A host with a cable
//! missing stays with the unit whose leaves it reaches (the missing leaves named); a host
//! whose cables break its unit (crossed, wrong rail, on another unit's leaf, two adapters on
//! one leaf) is a fault, named, and left out with [`SchedOptions::exclude_faulty`].
//!
//! Unlike a plain switch tree (NVIDIA topograph puts each host under one of its rail leaves),
//! a scalable unit stands for all the rail leaves its hosts reach.

use crate::analysis::cabling::ctx::Ctx;
use crate::analysis::cabling::layout::NodeLayout;
use crate::analysis::cabling::units::{self, Unit};
use crate::analysis::cabling::{FindingKind, NotGpuNode, Severity, rules};
use crate::model::fabric::{FabricMap, NodeKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What to build.
#[derive(Debug, Clone, Default)]
pub struct SchedOptions {
    /// Leave faulty hosts (crossed, wrong rail, another unit's leaf, shared leaf) out.
    pub exclude_faulty: bool,
    /// Adapter names (`mlx5_8`) that are not GPU rails (storage, management), as the map
    /// names them: left out of the tree.
    pub exclude_adapters: Vec<String>,
    /// Each host's NVLink domain (NVML fabric cluster UUID and clique, `<uuid>.<clique>`), by
    /// host name as the map names it; empty: blocks are the scalable units.
    pub domains: BTreeMap<String, String>,
}

/// A switch as the map shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SwitchRef {
    /// Its description in the map (with its GUID where descriptions repeat).
    pub name: String,
    /// Its node GUID (`0x…`), when the map prints it.
    pub guid: Option<String>,
}

/// A host with a cable missing: it reaches fewer of its unit's leaves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Missing {
    /// The host.
    pub host: String,
    /// The unit's leaves it does not reach.
    pub leaves: Vec<String>,
}

/// One scalable unit: the leaf level of the tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchedUnit {
    /// Its switch name in the scheduler's files (`su01`).
    pub name: String,
    /// Its hosts, sorted (faulty hosts out with `exclude_faulty`).
    pub hosts: Vec<String>,
    /// The rail leaves its hosts reach.
    pub leaves: Vec<SwitchRef>,
    /// The leaves' indices into [`FabricMap::nodes`], in the order of `leaves`.
    #[serde(skip)]
    pub leaf_nodes: Vec<usize>,
    /// Hosts of the unit that reach only some of its leaves.
    pub missing: Vec<Missing>,
    /// Index into [`SchedTopo::spine_groups`], when there are several.
    pub spine_group: Option<usize>,
}

/// Units whose leaves reach the same spines: the level above the units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpineGroup {
    /// Its switch name (`sg1`).
    pub name: String,
    /// The spines (switches cabled to its units' leaves that are no rail leaf).
    pub spines: Vec<SwitchRef>,
    /// Indices into [`SchedTopo::units`].
    pub units: Vec<usize>,
}

/// A host whose cables break its unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fault {
    /// The host.
    pub host: String,
    /// What: crossed, wrong rail, other unit, shared leaf.
    pub kind: FindingKind,
    /// The adapters and leaves concerned, in words.
    pub detail: String,
    /// The map lines.
    pub evidence: Vec<String>,
    /// Left out of the files (`exclude_faulty`).
    pub excluded: bool,
}

/// An adapter of a GPU node left out of the tree: not a GPU rail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotRail {
    /// Its host.
    pub host: String,
    /// The adapter as the map names it.
    pub adapter: String,
    /// The leaf it is cabled to.
    pub leaf: String,
    /// Why: the layout puts it on no rail, or `exclude_adapters` names it.
    pub why: String,
}

/// What the blocks stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockBasis {
    /// One block per NVLink domain.
    NvlinkDomain,
    /// One block per scalable unit.
    ScalableUnit,
}

/// One `topology/block` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    /// Its name (`nvl01`, or the unit's name).
    pub name: String,
    /// What it stands for: the domain id, or the unit's leaves in words.
    pub stands_for: String,
    /// Its hosts, sorted.
    pub hosts: Vec<String>,
}

/// The scheduler's topology.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchedTopo {
    /// The tool that wrote the map.
    pub producer: String,
    /// Scalable units, by first host.
    pub units: Vec<SchedUnit>,
    /// Spine groups, when units reach different spines (empty: the top switch is over the
    /// units, with [`SchedTopo::top_spines`]).
    pub spine_groups: Vec<SpineGroup>,
    /// The top switch's name (`fabric`).
    pub top: String,
    /// The spines every unit reaches, when they all reach the same ones.
    pub top_spines: Vec<SwitchRef>,
    /// Blocks, in unit order.
    pub blocks: Vec<Block>,
    /// What the blocks stand for.
    pub block_basis: BlockBasis,
    /// `BlockSizes`: the base (the smallest block) and power-of-two multiples of it.
    pub block_sizes: Vec<usize>,
    /// Hosts with an NVLink domain whose domain spans several units (the domain level does
    /// not nest under the units).
    pub domains_span_units: Vec<String>,
    /// Hosts of the map that are not GPU nodes.
    pub not_gpu_nodes: Vec<NotGpuNode>,
    /// GPU nodes' adapters that are not GPU rails.
    pub not_rail: Vec<NotRail>,
    /// Adapters whose description is the firmware's default: no host name.
    pub unnamed_adapters: usize,
    /// SHARP aggregation nodes.
    pub aggregation_nodes: usize,
    /// Faulty hosts.
    pub faults: Vec<Fault>,
    /// Hosts left out because their name cannot stand in a scheduler's files
    /// ([`name_ok`]), as the map wrote them.
    pub refused_names: Vec<String>,
    /// Hosts left out because the map names them by a placeholder, not a host's name
    /// ([`placeholder_host`]: `localhost`, as rdma-ndd writes a node description before the
    /// host has its name), as the map wrote them.
    pub placeholder_names: Vec<String>,
    /// Hosts in the files.
    pub hosts: usize,
    /// What the inputs could not show.
    pub limitations: Vec<String>,
}

/// Builds the scheduler's topology from the map (and the layouts, when given).
pub fn build(map: &FabricMap, layouts: &[NodeLayout], o: &SchedOptions) -> SchedTopo {
    let cx = Ctx::build(map, layouts);
    let (sets, not_rail) = rail_sets(&cx, o);
    let (grouped, _) = units::group(
        sets.clone(),
        |h| cx.hosts[h].name.clone(),
        |n| cx.name(n).to_string(),
    );
    let faults = faults(&cx, o.exclude_faulty);
    let out: BTreeSet<&str> = faults
        .iter()
        .filter(|f| f.excluded)
        .map(|f| f.host.as_str())
        .collect();
    let merged = merge_units(grouped, &cx);
    let mut units: Vec<SchedUnit> = merged
        .into_iter()
        .map(|(u, missing)| SchedUnit {
            name: String::new(),
            hosts: u
                .hosts
                .into_iter()
                .filter(|h| !out.contains(h.as_str()))
                .collect(),
            leaves: u.leaf_nodes.iter().map(|&n| switch_ref(&cx, n)).collect(),
            leaf_nodes: u.leaf_nodes,
            missing,
            spine_group: None,
        })
        .collect();
    let mut refused_names = Vec::new();
    let mut placeholder_names = Vec::new();
    for u in &mut units {
        for h in std::mem::take(&mut u.hosts) {
            if !name_ok(&h) {
                refused_names.push(h);
            } else if placeholder_host(&h) {
                placeholder_names.push(h);
            } else {
                u.hosts.push(h);
            }
        }
    }
    units.retain(|u| !u.hosts.is_empty());
    let width = units.len().to_string().len().max(2);
    for (i, u) in units.iter_mut().enumerate() {
        u.name = format!("su{:0width$}", i + 1);
    }
    let (spine_groups, top_spines) = spines(&cx, &mut units, &sets);
    let (blocks, block_basis, domains_span_units) = blocks(&units, &o.domains);
    let block_sizes = block_sizes(&blocks);
    let hosts = units.iter().map(|u| u.hosts.len()).sum();
    let mut limitations = cx.limitations();
    if layouts.is_empty() && o.exclude_adapters.is_empty() {
        limitations.push("map alone: every adapter of a GPU node is taken as a GPU rail (a storage adapter on this fabric cannot be told apart without -i); name storage adapters with --exclude-adapter".into());
    }
    SchedTopo {
        producer: map.producer.tool().to_string(),
        units,
        spine_groups,
        top: "fabric".to_string(),
        top_spines,
        blocks,
        block_basis,
        block_sizes,
        domains_span_units,
        not_gpu_nodes: cx.not_gpu_nodes(),
        not_rail,
        unnamed_adapters: cx.unnamed,
        aggregation_nodes: cx.aggregation,
        faults,
        refused_names,
        placeholder_names,
        hosts,
        limitations,
    }
}

/// Whether a host name can stand in the scheduler's files as it is: a host name's own
/// characters (`[A-Za-z0-9._-]`, starting and ending alphanumeric, at most 253). Slurm's
/// config parser splits a line at whitespace and ends it at `#`, its hostlists read `[`, `]`
/// and `,` as ranges and separators, YAML and shells read quotes and `$`: a name with any of
/// those is left out of every file (and said), never rewritten into another host's name.
pub fn name_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 253
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Whether a host name from the map is a placeholder rather than a host's own name:
/// `localhost` (any case, or `localhost.<domain>`, `localhost4`, `localhost6`). An adapter's
/// node description is `<host name> <device>` as rdma-ndd (rdma-core) writes it from the
/// host's name at that moment: one set before the host had its name says `localhost`, and a
/// scheduler given it would name a node that does not exist, and merge every such host into it.
pub fn placeholder_host(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    matches!(l.as_str(), "localhost" | "localhost4" | "localhost6") || l.starts_with("localhost.")
}

fn switch_ref(cx: &Ctx<'_>, node: usize) -> SwitchRef {
    SwitchRef {
        name: cx.name(node).to_string(),
        guid: cx.map.nodes[node].guid.map(|g| format!("{g:#018x}")),
    }
}

/// Each host's set of rail leaves (`None`: not a GPU node), and the adapters left out.
fn rail_sets(cx: &Ctx<'_>, o: &SchedOptions) -> (Vec<Option<Vec<usize>>>, Vec<NotRail>) {
    let mut not_rail = Vec::new();
    let sets = cx
        .hosts
        .iter()
        .map(|h| {
            h.not_gpu.is_none().then(|| {
                let mut set = Vec::new();
                for &pi in &h.ports {
                    let p = &cx.ports[pi];
                    let why = if o.exclude_adapters.iter().any(|a| a == p.name) {
                        Some("named by --exclude-adapter".to_string())
                    } else {
                        cx.adapter(p)
                            .filter(|a| a.rail.is_none())
                            .map(|a| format!("the node layout puts {} on no GPU rail", a.name))
                    };
                    match why {
                        Some(why) => not_rail.push(NotRail {
                            host: h.name.clone(),
                            adapter: p.name.to_string(),
                            leaf: cx.name(p.sw.node).to_string(),
                            why,
                        }),
                        None => set.push(p.sw.node),
                    }
                }
                set
            })
        })
        .map(|s| s.filter(|v: &Vec<usize>| !v.is_empty()))
        .collect();
    (sets, not_rail)
}

/// The cabling rules' faults that break a host's unit; excluded when asked.
fn faults(cx: &Ctx<'_>, exclude: bool) -> Vec<Fault> {
    let mut found = rules::wrong_rail(cx);
    found.extend(rules::shared_leaf(cx));
    found.extend(rules::other_unit(cx));
    let mut out: Vec<Fault> = found
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .filter_map(|f| {
            let host = f.host.clone()?;
            let words = match f.kind {
                FindingKind::Crossed => "crossed",
                FindingKind::WrongRail => "on a leaf of another rail",
                FindingKind::SharedLeaf => "two adapters on one leaf",
                _ => "on another unit's leaf",
            };
            let on: Vec<String> = f
                .adapters
                .iter()
                .zip(&f.leaves)
                .map(|(a, l)| format!("{a} on {l}"))
                .collect();
            Some(Fault {
                host,
                kind: f.kind,
                detail: format!("{words}: {}", on.join(", ")),
                evidence: f.evidence,
                excluded: exclude,
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.host, a.kind).cmp(&(&b.host, b.kind)));
    out
}

/// Units of a host or a few whose leaves are for the most part those of a larger unit join
/// it: a cable missing (a subset) or one on another unit's leaf (a fault the rules name).
/// Returns each unit with the hosts that miss some of its leaves.
fn merge_units(mut grouped: Vec<Unit>, cx: &Ctx<'_>) -> Vec<(Unit, Vec<Missing>)> {
    let mut order: Vec<usize> = (0..grouped.len()).collect();
    order.sort_by(|&a, &b| {
        grouped[b]
            .hosts
            .len()
            .cmp(&grouped[a].hosts.len())
            .then(a.cmp(&b))
    });
    // Kept units by leaf: a group is compared only with units sharing a leaf with it.
    let mut kept_at: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut into: Vec<Option<usize>> = vec![None; grouped.len()];
    for &g in &order {
        let mut shared: BTreeMap<usize, usize> = BTreeMap::new();
        for n in &grouped[g].leaf_nodes {
            for &k in kept_at.get(n).map_or(&[][..], Vec::as_slice) {
                *shared.entry(k).or_default() += 1;
            }
        }
        let best = shared
            .into_iter()
            .max_by_key(|&(k, s)| (s, std::cmp::Reverse(k)));
        match best {
            Some((k, shared))
                if 2 * shared > grouped[g].leaf_nodes.len()
                    && grouped[g].hosts.len() < grouped[k].hosts.len() =>
            {
                into[g] = Some(k);
            }
            _ => {
                for &n in &grouped[g].leaf_nodes {
                    kept_at.entry(n).or_default().push(g);
                }
            }
        }
    }
    let mut missing: Vec<Vec<Missing>> = vec![Vec::new(); grouped.len()];
    for g in 0..grouped.len() {
        let Some(k) = into[g] else { continue };
        let hosts = std::mem::take(&mut grouped[g].hosts);
        let mine: BTreeSet<usize> = grouped[g].leaf_nodes.iter().copied().collect();
        let lacks: Vec<String> = grouped[k]
            .leaf_nodes
            .iter()
            .filter(|n| !mine.contains(n))
            .map(|&n| cx.name(n).to_string())
            .collect();
        if !lacks.is_empty() {
            missing[k].extend(hosts.iter().map(|h| Missing {
                host: h.clone(),
                leaves: lacks.clone(),
            }));
        }
        grouped[k].hosts.extend(hosts);
    }
    let mut out: Vec<(Unit, Vec<Missing>)> = grouped
        .into_iter()
        .zip(missing)
        .enumerate()
        .filter(|(g, _)| into[*g].is_none())
        .map(|(_, (mut u, m))| {
            u.hosts.sort();
            (u, m)
        })
        .collect();
    out.sort_by(|a, b| a.0.hosts.first().cmp(&b.0.hosts.first()));
    out
}

/// Spines: the switches cabled to a unit's leaves that are no rail leaf. Units reaching the
/// same spines form a group; one group only: its spines are the top's.
fn spines(
    cx: &Ctx<'_>,
    units: &mut [SchedUnit],
    sets: &[Option<Vec<usize>>],
) -> (Vec<SpineGroup>, Vec<SwitchRef>) {
    let map = cx.map;
    let mut rail_leaf = vec![false; map.nodes.len()];
    for n in sets.iter().flatten().flatten() {
        rail_leaf[*n] = true;
    }
    let mut up: Vec<Vec<usize>> = vec![Vec::new(); map.nodes.len()];
    for l in &map.links {
        let (a, b) = (l.a.node, l.b.node);
        if a == b || l.loopback {
            continue;
        }
        if map.nodes[a].kind == NodeKind::Switch && map.nodes[b].kind == NodeKind::Switch {
            up[a].push(b);
            up[b].push(a);
        }
    }
    let mut groups: BTreeMap<Vec<usize>, Vec<usize>> = BTreeMap::new();
    for (ui, u) in units.iter().enumerate() {
        let mut sp: BTreeSet<usize> = BTreeSet::new();
        for &n in &u.leaf_nodes {
            sp.extend(up[n].iter().copied().filter(|&s| !rail_leaf[s]));
        }
        groups.entry(sp.into_iter().collect()).or_default().push(ui);
    }
    let refs = |sp: &[usize]| {
        let mut v: Vec<SwitchRef> = sp.iter().map(|&s| switch_ref(cx, s)).collect();
        v.sort();
        v
    };
    if groups.len() <= 1 {
        let top = groups.keys().next().map(|k| refs(k)).unwrap_or_default();
        return (Vec::new(), top);
    }
    let mut out: Vec<SpineGroup> = groups
        .into_iter()
        .map(|(sp, us)| SpineGroup {
            name: String::new(),
            spines: refs(&sp),
            units: us,
        })
        .collect();
    out.sort_by_key(|g| g.units[0]);
    for (gi, g) in out.iter_mut().enumerate() {
        g.name = format!("sg{}", gi + 1);
        for &u in &g.units {
            units[u].spine_group = Some(gi);
        }
    }
    (out, Vec::new())
}

/// Blocks: one per NVLink domain where every host in the tree has one, else one per unit.
/// Also the hosts whose domain spans several units.
fn blocks(
    units: &[SchedUnit],
    domains: &BTreeMap<String, String>,
) -> (Vec<Block>, BlockBasis, Vec<String>) {
    let all = units.iter().flat_map(|u| u.hosts.iter());
    let have = !domains.is_empty() && all.clone().all(|h| domains.contains_key(h));
    if !have {
        let b = units
            .iter()
            .map(|u| Block {
                name: u.name.clone(),
                stands_for: format!("scalable unit {}", u.name),
                hosts: u.hosts.clone(),
            })
            .collect();
        return (b, BlockBasis::ScalableUnit, Vec::new());
    }
    // Domains in the order of their first host in unit order, so a unit's domains are
    // adjacent (Slurm aggregates adjacent blocks).
    let mut order: Vec<&str> = Vec::new();
    let mut hosts: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut unit_of: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    for (ui, u) in units.iter().enumerate() {
        for h in &u.hosts {
            let d = domains[h].as_str();
            if !hosts.contains_key(d) {
                order.push(d);
            }
            hosts.entry(d).or_default().push(h.clone());
            unit_of.entry(d).or_default().insert(ui);
        }
    }
    let width = order.len().to_string().len().max(2);
    let blocks = order
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut hs = hosts[d].clone();
            hs.sort();
            Block {
                name: format!("nvl{:0width$}", i + 1),
                stands_for: format!("NVLink domain {d}"),
                hosts: hs,
            }
        })
        .collect();
    let span = order
        .iter()
        .filter(|d| unit_of[*d].len() > 1)
        .flat_map(|d| hosts[d].iter().cloned())
        .collect();
    (blocks, BlockBasis::NvlinkDomain, span)
}

/// `BlockSizes` as Slurm's `topology/block` reads it (`block_record.c`): the first is the base
/// block size, no block may have fewer nodes, and each further size is the base times a
/// power of two (at most 2^15); Slurm stops at the first level holding all the blocks. Here:
/// the smallest block, then doubled until one level holds every block.
pub fn block_sizes(blocks: &[Block]) -> Vec<usize> {
    let Some(base) = blocks.iter().map(|b| b.hosts.len()).min() else {
        return Vec::new();
    };
    let mut out = vec![base];
    let mut k = 1usize;
    while k < blocks.len() && out.len() <= 15 {
        k *= 2;
        out.push(base * k);
    }
    out
}
