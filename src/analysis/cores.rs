//! Physical cores and their SMT threads, numbered the way Slurm numbers them.
//!
//! Data: `Topology.machine.cpu_cores` — `(cpu, core id, physical id)` triples from
//! `/proc/cpuinfo` — grouped into cores; NUMA membership from `Topology.numa_nodes[].cpus`
//! (`/sys/devices/system/node/node<N>/cpulist`). When `/proc/cpuinfo` was not captured the map
//! falls back to the NUMA cpulists with one thread per "core" and says so ([`CoreSource`]):
//! SMT siblings are then unknown, and Slurm core ids cannot be derived.
//!
//! Slurm's `Cores=` in gres.conf takes *abstract* core indices: core 0 is the first core of the
//! first socket, counting cores (not hardware threads) socket by socket, in the order hwloc
//! sorts them (by the lowest OS CPU number of each package, then of each core). That is what
//! [`Core::slurm_id`] holds (shared/reference/ecosystem.md §1.1).

use crate::model::Topology;
use crate::parse::cpulist;
use std::collections::BTreeMap;

/// Where the core grouping came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreSource {
    /// `/proc/cpuinfo` `core id` / `physical id`: SMT siblings known.
    Cpuinfo,
    /// Only NUMA cpulists were available: every CPU is treated as its own core and SMT
    /// siblings are unknown.
    NumaCpulist,
}

/// One physical core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Core {
    /// `physical id` (socket) from `/proc/cpuinfo`; `None` in the cpulist fallback.
    pub package: Option<u32>,
    /// `core id` from `/proc/cpuinfo` (unique only within a package).
    pub core_id: Option<u32>,
    /// OS CPU numbers of its hardware threads, sorted.
    pub threads: Vec<u32>,
    /// Slurm's abstract core index (see the module doc); `None` in the cpulist fallback.
    pub slurm_id: Option<u32>,
    /// NUMA node holding its first thread, from the NUMA cpulists.
    pub numa_node: Option<u32>,
}

/// All cores of the machine, in Slurm order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreMap {
    /// Cores sorted by package then first thread.
    pub cores: Vec<Core>,
    /// How the grouping was obtained.
    pub source: CoreSource,
}

impl CoreMap {
    /// Builds the map from a topology (see the module doc for the data used).
    pub fn from_topology(t: &Topology) -> CoreMap {
        let numa_of_cpu: BTreeMap<u32, u32> = t
            .numa_nodes
            .iter()
            .flat_map(|n| {
                cpulist::parse_list(n.cpus.as_bytes())
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |c| (c, n.id))
            })
            .collect();
        if t.machine.cpu_cores.is_empty() {
            let cores = numa_of_cpu
                .iter()
                .map(|(&c, &n)| Core {
                    package: None,
                    core_id: None,
                    threads: vec![c],
                    slurm_id: None,
                    numa_node: Some(n),
                })
                .collect();
            return CoreMap {
                cores,
                source: CoreSource::NumaCpulist,
            };
        }
        let mut by_core: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
        for &(cpu, core, pkg) in &t.machine.cpu_cores {
            by_core.entry((pkg, core)).or_default().push(cpu);
        }
        // Package order: by lowest CPU in the package (hwloc sorts objects by cpuset).
        let mut pkg_first: BTreeMap<u32, u32> = BTreeMap::new();
        for (&(pkg, _), threads) in &by_core {
            let m = threads.iter().copied().min().unwrap_or(u32::MAX);
            let e = pkg_first.entry(pkg).or_insert(m);
            *e = (*e).min(m);
        }
        let mut cores: Vec<Core> = by_core
            .into_iter()
            .map(|((pkg, core), mut threads)| {
                threads.sort_unstable();
                threads.dedup();
                let numa_node = threads.first().and_then(|c| numa_of_cpu.get(c).copied());
                Core {
                    package: Some(pkg),
                    core_id: Some(core),
                    threads,
                    slurm_id: None,
                    numa_node,
                }
            })
            .collect();
        cores.sort_by_key(|c| {
            let pkg = c.package.unwrap_or(0);
            (
                pkg_first.get(&pkg).copied().unwrap_or(u32::MAX),
                pkg,
                c.threads.first().copied().unwrap_or(u32::MAX),
            )
        });
        for (i, c) in cores.iter_mut().enumerate() {
            c.slurm_id = Some(i as u32);
        }
        CoreMap {
            cores,
            source: CoreSource::Cpuinfo,
        }
    }

    /// Whether SMT siblings (and so Slurm core ids) are known.
    pub fn smt_known(&self) -> bool {
        self.source == CoreSource::Cpuinfo
    }

    /// Slurm core ids of the cores with at least one thread in `cpus`; `None` when core ids
    /// cannot be derived (cpulist fallback).
    pub fn slurm_ids_for(&self, cpus: &[u32]) -> Option<Vec<u32>> {
        if !self.smt_known() {
            return None;
        }
        let mut ids: Vec<u32> = self
            .cores
            .iter()
            .filter(|c| c.threads.iter().any(|t| cpus.binary_search(t).is_ok()))
            .filter_map(|c| c.slurm_id)
            .collect();
        ids.sort_unstable();
        Some(ids)
    }

    /// Indices into `cores` of the cores whose threads all lie in `cpus` (sorted).
    pub fn cores_within(&self, cpus: &[u32]) -> Vec<usize> {
        self.cores
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                !c.threads.is_empty() && c.threads.iter().all(|t| cpus.binary_search(t).is_ok())
            })
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MachineInfo, NumaNode, SourceInfo};

    fn topo(cores: Vec<(u32, u32, u32)>, numa: &[(u32, &str)]) -> Topology {
        let machine = MachineInfo {
            cpu_cores: cores,
            ..Default::default()
        };
        let numa_nodes = numa
            .iter()
            .map(|(id, cpus)| NumaNode {
                id: *id,
                cpus: cpus.to_string(),
                distances: vec![],
            })
            .collect();
        let src = SourceInfo {
            kind: "test".into(),
            path: "-".into(),
            limitations: vec![],
        };
        Topology::new(src, machine, numa_nodes, vec![], vec![], vec![], vec![])
    }

    #[test]
    fn slurm_ids_count_cores_socket_by_socket() {
        // 2 sockets × 2 cores × 2 threads, Linux numbering: threads of a core are n and n+4.
        let mut c = Vec::new();
        for cpu in 0..8u32 {
            let pkg = (cpu % 4) / 2;
            let core = cpu % 2;
            c.push((cpu, core, pkg));
        }
        let t = topo(c, &[(0, "0-1,4-5"), (1, "2-3,6-7")]);
        let m = CoreMap::from_topology(&t);
        assert!(m.smt_known());
        let threads: Vec<Vec<u32>> = m.cores.iter().map(|c| c.threads.clone()).collect();
        assert_eq!(
            threads,
            vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
        );
        assert_eq!(m.slurm_ids_for(&[2, 3, 6, 7]), Some(vec![2, 3]));
        // A device local to one thread of core 1 still maps to Slurm core 1.
        assert_eq!(m.slurm_ids_for(&[5]), Some(vec![1]));
        assert_eq!(m.cores[3].numa_node, Some(1));
        assert_eq!(m.cores_within(&[0, 1, 4]), vec![0]);
    }

    #[test]
    fn fallback_has_no_slurm_ids() {
        let t = topo(vec![], &[(0, "0-3")]);
        let m = CoreMap::from_topology(&t);
        assert_eq!(m.source, CoreSource::NumaCpulist);
        assert_eq!(m.cores.len(), 4);
        assert_eq!(m.slurm_ids_for(&[0]), None);
    }
}
