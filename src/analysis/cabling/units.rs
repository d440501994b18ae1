//! Scalable units: hosts grouped by the set of leaves they reach. In a rail-optimised fabric a
//! scalable unit's hosts all reach the same leaves (one per rail); a host with another set
//! stands apart (a cable on another unit's leaf, a leaf missing). This is also the grouping a
//! Slurm topology (`topology.conf` switches, or blocks) is written from.
//!
//! Data: the fabric's map ([`FabricMap`]); hosts are named by their adapters' descriptions
//! (`<host> <adapter>`), firmware-default descriptions, SHARP aggregation nodes and hosts
//! that are not GPU nodes (a fabric manager, a host with half the common adapter count or
//! fewer) left out, as [`super::ctx::Ctx`] tells them apart.

use crate::model::fabric::FabricMap;
use serde::Serialize;
use std::collections::HashMap;

/// One scalable unit: hosts that reach exactly the same leaves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unit {
    /// Its hosts, sorted by name.
    pub hosts: Vec<String>,
    /// The leaves they reach, by display name (the description, with the GUID where another
    /// switch has the same description), sorted.
    pub leaves: Vec<String>,
    /// The leaves' indices into [`FabricMap::nodes`], in the order of `leaves`.
    #[serde(skip)]
    pub leaf_nodes: Vec<usize>,
}

/// The scalable units of a map, judged from the map alone: GPU nodes grouped by the set of
/// leaves they reach, sorted by first host.
pub fn units(map: &FabricMap) -> Vec<Unit> {
    super::ctx::Ctx::build(map, &[]).units
}

/// Groups `(host, leaf node)` pairs by each host's set of leaves; `name` gives a leaf's
/// display name.
pub(crate) fn group<'h>(
    pairs: impl IntoIterator<Item = (&'h str, usize)>,
    name: impl Fn(usize) -> String,
) -> Vec<Unit> {
    let mut per_host: HashMap<&str, Vec<usize>> = HashMap::new();
    for (h, leaf) in pairs {
        per_host.entry(h).or_default().push(leaf);
    }
    let mut by_set: HashMap<Vec<usize>, Vec<&str>> = HashMap::new();
    for (h, mut leaves) in per_host {
        leaves.sort_unstable();
        leaves.dedup();
        by_set.entry(leaves).or_default().push(h);
    }
    let mut out: Vec<Unit> = by_set
        .into_iter()
        .map(|(nodes, mut hosts)| {
            hosts.sort_unstable();
            let mut leaves: Vec<(String, usize)> = nodes.iter().map(|&n| (name(n), n)).collect();
            leaves.sort();
            Unit {
                hosts: hosts.into_iter().map(str::to_string).collect(),
                leaf_nodes: leaves.iter().map(|l| l.1).collect(),
                leaves: leaves.into_iter().map(|l| l.0).collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| a.hosts.first().cmp(&b.hosts.first()));
    out
}
