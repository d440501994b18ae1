//! What the map covers, said once: the rails it holds (of the layout's, when given: "4 of the
//! layout's 8 rails: one plane of two"), how many leaves most GPU nodes reach, the units that
//! reach fewer, the captured hosts the map does not show. An adapter is **absent** (error) only
//! on a rail the map holds: a rail the map does not cover is said here, not per adapter.
//!
//! Data: the [`Ctx`] (map ports, their layout pairs, the units) and the layouts.

use super::ctx::Ctx;
use super::{CablingFinding, FindingKind, Rail, Severity};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A scalable unit reaching fewer leaves than most GPU nodes do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShortUnit {
    /// Its first host (by name).
    pub first: String,
    /// Its last host.
    pub last: String,
    /// How many hosts.
    pub hosts: usize,
    /// How many leaves they reach.
    pub leaves: usize,
    /// The adapters its first host has in the map (map names).
    pub adapters: Vec<String>,
}

/// One way of naming the rails: the adapter names (map rails) leaves carry in the units that
/// use them, where units share no name with units of another naming (one scalable unit's
/// hosts call their adapters `mlx5_0…`, another's `HCA-1…`: the same rails, named twice).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Naming {
    /// The rail names, sorted.
    pub rails: Vec<Rail>,
    /// How many scalable units name their leaves' rails from this set.
    pub units: usize,
}

/// The map's coverage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Rails the map's leaves carry (leaf rails, each once).
    pub rails: Vec<Rail>,
    /// Leaves most GPU nodes reach (one per rail in a rail-optimised plane).
    pub leaves_per_host: Option<usize>,
    /// Layout rails the map holds (paired adapters' rails), when a layout is given.
    pub layout_rails_held: Vec<usize>,
    /// How many rails the layout has (0 without a layout).
    pub layout_rails: usize,
    /// Units reaching fewer leaves than most.
    pub short_units: Vec<ShortUnit>,
    /// Captured hosts the map does not show.
    pub hosts_not_in_map: Vec<String>,
    /// Disjoint sets of rail names, where units name their rails differently (two or more;
    /// empty where every unit draws from one set): `rails` then counts names, not rails.
    pub namings: Vec<Naming>,
}

/// The coverage of the map.
pub fn coverage(cx: &Ctx<'_>) -> Coverage {
    let rails: BTreeSet<Rail> = cx.leaves.iter().filter_map(|l| l.rail()).collect();
    let mut per_host: BTreeMap<usize, usize> = BTreeMap::new();
    for u in &cx.units {
        *per_host.entry(u.leaves.len()).or_default() += u.hosts.len();
    }
    let leaves_per_host = per_host
        .iter()
        .max_by_key(|&(n, c)| (*c, *n))
        .map(|(&n, _)| n);
    let short_units = cx
        .units
        .iter()
        .filter(|u| leaves_per_host.is_some_and(|n| u.leaves.len() < n))
        .map(|u| ShortUnit {
            first: u.hosts.first().cloned().unwrap_or_default(),
            last: u.hosts.last().cloned().unwrap_or_default(),
            hosts: u.hosts.len(),
            leaves: u.leaves.len(),
            adapters: first_host_adapters(cx, u.hosts.first()),
        })
        .collect();
    let layout_rails: BTreeSet<usize> = cx
        .layouts
        .iter()
        .flat_map(|l| l.adapters.iter().filter_map(|a| a.rail))
        .collect();
    let held: BTreeSet<usize> = cx
        .paired()
        .filter_map(|p| cx.adapter(p).and_then(|a| a.rail))
        .collect();
    let in_map: HashSet<&str> = cx.hosts.iter().map(|h| h.name.as_str()).collect();
    let hosts_not_in_map = cx
        .layouts
        .iter()
        .filter_map(|l| l.host.as_deref())
        .filter(|h| !in_map.contains(h))
        .map(str::to_string)
        .collect();
    let namings = namings(cx);
    Coverage {
        namings,
        rails: rails.into_iter().collect(),
        leaves_per_host,
        layout_rails_held: held.into_iter().collect(),
        layout_rails: layout_rails.len(),
        short_units,
        hosts_not_in_map,
    }
}

/// The disjoint sets of map rail names the units' leaves carry (units whose name sets share a
/// name are one naming), with how many units use each; empty when there is one naming or the
/// leaves carry layout rails.
fn namings(cx: &Ctx<'_>) -> Vec<Naming> {
    let mut sets: Vec<(BTreeSet<String>, usize)> = Vec::new();
    for u in &cx.units {
        let names: BTreeSet<String> = u
            .leaf_nodes
            .iter()
            .filter_map(|&n| cx.leaves.get(*cx.leaf_of.get(n)?))
            .filter_map(|l| match l.rail() {
                Some(Rail::Name(n)) => Some(n),
                _ => None,
            })
            .collect();
        if names.is_empty() {
            continue;
        }
        // Join every set this unit's names meet.
        let (mut joined, mut units) = (names, 1);
        sets.retain(|(s, n)| {
            if s.is_disjoint(&joined) {
                return true;
            }
            joined.extend(s.iter().cloned());
            units += n;
            false
        });
        sets.push((joined, units));
    }
    if sets.len() < 2 {
        return Vec::new();
    }
    let mut out: Vec<Naming> = sets
        .into_iter()
        .map(|(s, units)| Naming {
            rails: s.into_iter().map(Rail::Name).collect(),
            units,
        })
        .collect();
    out.sort_by(|a, b| b.units.cmp(&a.units).then_with(|| a.rails.cmp(&b.rails)));
    out
}

fn first_host_adapters(cx: &Ctx<'_>, host: Option<&String>) -> Vec<String> {
    let Some(h) = host.and_then(|n| cx.hosts.iter().find(|h| &h.name == n)) else {
        return Vec::new();
    };
    let mut v: Vec<String> = h
        .ports
        .iter()
        .map(|&p| cx.ports[p].name.to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Adapters a GPU node's layout cables, on a rail the map holds, that the map does not show
/// for it (judged for hosts with at least one adapter paired; a port captured not ACTIVE is
/// not expected).
pub fn absent(cx: &Ctx<'_>, cov: &Coverage) -> Vec<CablingFinding> {
    let held: HashSet<usize> = cov.layout_rails_held.iter().copied().collect();
    let mut out = Vec::new();
    for h in cx.gpu_hosts() {
        let Some(li) = h.layout else { continue };
        let seen: HashSet<usize> = h
            .ports
            .iter()
            .filter_map(|&p| cx.ports[p].pair.map(|x| x.adapter))
            .collect();
        if seen.is_empty() {
            continue;
        }
        let l = &cx.layouts[li];
        for (ai, a) in l.adapters.iter().enumerate() {
            let Some(r) = a.rail else { continue };
            if !held.contains(&r) || seen.contains(&ai) || a.active == Some(false) {
                continue;
            }
            let mut f = CablingFinding::new(FindingKind::Absent, Severity::Error);
            f.host = Some(h.name.clone());
            f.adapters = vec![a.name.clone()];
            f.gpus = a.gpus.clone();
            f.rail = Some(Rail::Index(r));
            f.evidence = vec![match (l.host.is_some(), a.active) {
                (true, Some(true)) => format!(
                    "{}: {} port {} state ACTIVE",
                    l.source,
                    a.name,
                    a.port.map_or("?".into(), |p| p.to_string())
                ),
                (true, _) => format!("{}: {} cabled (port state not captured)", l.source, a.name),
                (false, _) => format!(
                    "{}: the layout every host shares cables {}",
                    l.source, a.name
                ),
            }];
            out.push(f);
        }
    }
    out
}
