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

/// Groups hosts by their set of leaves: `sets[h]` is host h's leaf nodes (`None`: left out);
/// `host` and `leaf` give names. Returns the units and each host's unit.
pub(crate) fn group(
    sets: Vec<Option<Vec<usize>>>,
    host: impl Fn(usize) -> String,
    leaf: impl Fn(usize) -> String,
) -> (Vec<Unit>, Vec<Option<usize>>) {
    let mut by_set: HashMap<Vec<usize>, Vec<usize>> = HashMap::new();
    let n = sets.len();
    for (h, set) in sets.into_iter().enumerate() {
        let Some(mut leaves) = set else { continue };
        leaves.sort_unstable();
        leaves.dedup();
        by_set.entry(leaves).or_default().push(h);
    }
    let mut units: Vec<(Vec<usize>, Unit)> = by_set
        .into_iter()
        .map(|(nodes, hosts)| {
            let mut named: Vec<(String, usize)> = hosts.iter().map(|&h| (host(h), h)).collect();
            named.sort_unstable();
            let mut leaves: Vec<(String, usize)> = nodes.iter().map(|&l| (leaf(l), l)).collect();
            leaves.sort();
            let idx = named.iter().map(|x| x.1).collect();
            let unit = Unit {
                hosts: named.into_iter().map(|x| x.0).collect(),
                leaf_nodes: leaves.iter().map(|l| l.1).collect(),
                leaves: leaves.into_iter().map(|l| l.0).collect(),
            };
            (idx, unit)
        })
        .collect();
    units.sort_by(|a, b| a.1.hosts.first().cmp(&b.1.hosts.first()));
    let mut unit_of = vec![None; n];
    for (ui, (idx, _)) in units.iter().enumerate() {
        for &h in idx {
            unit_of[h] = Some(ui);
        }
    }
    (units.into_iter().map(|x| x.1).collect(), unit_of)
}
