//! What `peerpath launch` decides before it binds and execs: which local rank this process is
//! (from the launcher's environment), how many local ranks share the node, and whether the
//! topology it planned on describes this machine's CPUs.
//!
//! Data: environment variables set by the launchers (Slurm's `srun`, PyTorch's `torchrun`,
//! Open MPI's `mpirun`, MPICH/Intel MPI's Hydra), passed in as a lookup function so the rules
//! can be tested without touching the process environment; CPU layouts from two
//! [`Topology`] values (NUMA node cpulists from `/sys/devices/system/node/node*/cpulist`,
//! `(cpu, core, socket)` triples from `/proc/cpuinfo`).

use crate::model::Topology;
use anyhow::{Context, Result, bail};

/// Launcher variables holding the local rank, in the order they are consulted, each with the
/// variable holding the number of local ranks and the launcher's name.
pub const LAUNCHERS: [(&str, &str, &str); 4] = [
    ("SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE", "srun"),
    ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "torchrun"),
    (
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "Open MPI",
    ),
    ("MPI_LOCALRANKID", "MPI_LOCALNRANKS", "MPICH/Intel MPI"),
];

/// The local rank and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRank {
    /// The rank (0-based).
    pub rank: usize,
    /// `--rank` or the variable it was read from.
    pub source: String,
    /// The launcher's size variable that goes with it (none for `--rank`).
    pub size_var: Option<&'static str>,
}

fn parse_count(var: &str, v: &str) -> Result<usize> {
    v.trim()
        .parse()
        .with_context(|| format!("{var}={v:?} is not a non-negative integer"))
}

/// The local rank: `explicit` (`--rank`) when given, else the first launcher variable set.
pub fn local_rank(
    explicit: Option<usize>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LocalRank> {
    if let Some(r) = explicit {
        return Ok(LocalRank {
            rank: r,
            source: "--rank".into(),
            size_var: None,
        });
    }
    for (var, size, _) in LAUNCHERS {
        if let Some(v) = env(var) {
            return Ok(LocalRank {
                rank: parse_count(var, &v)?,
                source: var.into(),
                size_var: Some(size),
            });
        }
    }
    bail!(
        "no local rank: none of {} is set (run under srun, torchrun or mpirun) and no --rank N was given",
        LAUNCHERS.map(|l| l.0).join(", ")
    )
}

/// Slurm's per-node task counts (`SLURM_STEP_TASKS_PER_NODE` / `SLURM_TASKS_PER_NODE`:
/// `4(x2),3` = 4, 4, 3), in node order.
pub fn expand_tasks_per_node(s: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (n, times) = match part.split_once("(x") {
            Some((n, rest)) => (
                n,
                rest.strip_suffix(')')
                    .with_context(|| format!("tasks per node {s:?}: no ')' in {part:?}"))?,
            ),
            None => (part, "1"),
        };
        let n = parse_count("tasks per node", n)?;
        let times = parse_count("tasks per node", times)?;
        if times > 1 << 20 {
            bail!("tasks per node {s:?}: repeat count {times} is implausible");
        }
        out.extend(std::iter::repeat_n(n, times));
    }
    Ok(out)
}

/// The number of local ranks the launcher started on this node, when it says: the size
/// variable of the launcher that gave the rank (for Slurm the entry of `SLURM_NODEID` in the
/// per-node task counts).
pub fn local_size(rank: &LocalRank, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<usize>> {
    let Some(var) = rank.size_var else {
        return Ok(None);
    };
    if var == "SLURM_STEP_TASKS_PER_NODE" {
        let Some((v, name)) = env(var)
            .map(|v| (v, var))
            .or_else(|| env("SLURM_TASKS_PER_NODE").map(|v| (v, "SLURM_TASKS_PER_NODE")))
        else {
            return Ok(None);
        };
        let counts = expand_tasks_per_node(&v).with_context(|| format!("{name}={v:?}"))?;
        let node = match env("SLURM_NODEID") {
            Some(n) => parse_count("SLURM_NODEID", &n)?,
            None => 0,
        };
        return counts
            .get(node)
            .copied()
            .map(Some)
            .with_context(|| format!("{name}={v:?} has no entry for SLURM_NODEID={node}"));
    }
    env(var).map(|v| parse_count(var, &v)).transpose()
}

/// Checks that `planned` describes the same CPUs as `live` (this machine): the same NUMA nodes
/// with the same cpulists, and the same `(cpu, core, socket)` triples when both know them.
/// `Err` says what differs, so binding to CPU numbers that mean something else elsewhere is
/// refused.
pub fn same_cpus(planned: &Topology, live: &Topology) -> Result<(), String> {
    let nodes = |t: &Topology| -> Vec<(u32, String)> {
        let mut v: Vec<(u32, String)> = t
            .numa_nodes
            .iter()
            .map(|n| (n.id, n.cpus.clone()))
            .collect();
        v.sort();
        v
    };
    let (a, b) = (nodes(planned), nodes(live));
    if a != b {
        let show = |v: &[(u32, String)]| {
            v.iter()
                .map(|(id, c)| format!("node{id}: {c}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        return Err(format!(
            "its NUMA nodes and CPUs ({}) are not this machine's ({})",
            show(&a),
            show(&b)
        ));
    }
    let (mut x, mut y) = (
        planned.machine.cpu_cores.clone(),
        live.machine.cpu_cores.clone(),
    );
    x.sort_unstable();
    y.sort_unstable();
    if !x.is_empty() && !y.is_empty() && x != y {
        return Err("its CPU cores and sockets (/proc/cpuinfo) are not this machine's".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn rank_from_each_launcher_in_order() {
        for (var, _, _) in LAUNCHERS {
            let r = local_rank(None, &env(&[(var, "5")])).unwrap();
            assert_eq!((r.rank, r.source.as_str()), (5, var));
        }
        // SLURM_LOCALID wins over LOCAL_RANK (srun running torchrun-style scripts).
        let r = local_rank(None, &env(&[("LOCAL_RANK", "1"), ("SLURM_LOCALID", "2")])).unwrap();
        assert_eq!(r.rank, 2);
        assert_eq!(
            local_rank(Some(3), &env(&[("SLURM_LOCALID", "2")]))
                .unwrap()
                .rank,
            3
        );
        assert!(local_rank(None, &env(&[])).is_err());
        let e = local_rank(None, &env(&[("LOCAL_RANK", "x")])).unwrap_err();
        assert!(format!("{e:#}").contains("LOCAL_RANK"));
    }

    #[test]
    fn local_sizes() {
        assert_eq!(expand_tasks_per_node("4(x2),3").unwrap(), vec![4, 4, 3]);
        assert_eq!(expand_tasks_per_node("8").unwrap(), vec![8]);
        assert!(expand_tasks_per_node("4(x2").is_err());
        let e = env(&[
            ("SLURM_LOCALID", "0"),
            ("SLURM_STEP_TASKS_PER_NODE", "8(x2),2"),
            ("SLURM_NODEID", "2"),
        ]);
        let r = local_rank(None, &e).unwrap();
        assert_eq!(local_size(&r, &e).unwrap(), Some(2));
        let e = env(&[("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "4")]);
        assert_eq!(
            local_size(&local_rank(None, &e).unwrap(), &e).unwrap(),
            Some(4)
        );
        let e = env(&[("MPI_LOCALRANKID", "0")]);
        assert_eq!(
            local_size(&local_rank(None, &e).unwrap(), &e).unwrap(),
            None
        );
    }
}
