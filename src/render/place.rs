//! Placement plan renderers: text (with the reasons), launcher environment (`export` lines),
//! JSON, a Slurm `srun` script, and the plan `peerpath launch --dry-run` prints. Data: a [`Placement`] from [`crate::analysis::place`].

use super::escape::{one_line, shell_word};
use crate::analysis::place::{Placement, RankPlan};
use std::fmt::Write;

/// The rank's NIC, `-` when it has none.
fn nic(r: &RankPlan) -> &str {
    r.nic.as_deref().unwrap_or("-")
}

/// The rank's GPU–NIC path class, `-` when it has no NIC.
fn path(r: &RankPlan) -> &str {
    r.path.as_deref().unwrap_or("-")
}

/// The rank's NUMA node, `?` when unknown.
fn numa(r: &RankPlan) -> String {
    r.numa_node
        .map(|n| n.to_string())
        .unwrap_or_else(|| "?".into())
}

/// The runtime whose device index a rank's GPU index is: `hip` when the rank's environment
/// selects it through ROCr (an AMD GPU), else `cuda`.
fn runtime(r: &RankPlan) -> &'static str {
    if r.env.contains_key("ROCR_VISIBLE_DEVICES") {
        "hip"
    } else {
        "cuda"
    }
}

/// Human text: one block per rank with its reasons, then the notes.
pub fn text(p: &Placement) -> String {
    let mut s = String::new();
    for r in &p.ranks {
        let _ = writeln!(
            s,
            "rank {}: GPU {} ({} {}) -> NIC {} [{}] -> NUMA {} cpus {}",
            r.rank,
            r.gpu,
            runtime(r),
            r.cuda_index,
            nic(r),
            path(r),
            numa(r),
            if r.cpus.is_empty() { "-" } else { &r.cpus }
        );
        for w in &r.why {
            let _ = writeln!(s, "  {w}");
        }
        for w in &r.env_notes {
            let _ = writeln!(s, "  env: {w}");
        }
    }
    if !p.notes.is_empty() {
        let _ = writeln!(s, "notes:");
        for n in &p.notes {
            let _ = writeln!(s, "  - {n}");
        }
    }
    s
}

fn bind_line(r: &RankPlan) -> String {
    r.bind
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Launcher environment: `export KEY=value` lines (values quoted for a POSIX shell), so that
/// `eval "$(peerpath place … --format env --rank N)"` reaches the program the shell starts.
/// With `rank` only that local rank's block; without, one block per rank (evaluating all of
/// them leaves the last rank's values: pick one with `--rank`). `PEERPATH_BIND` is the numactl
/// prefix; `peerpath launch` binds without numactl.
pub fn env(p: &Placement, rank: Option<usize>) -> String {
    let mut s = String::new();
    match rank {
        Some(n) => {
            let _ = writeln!(
                s,
                "# peerpath placement: local rank {n} of {}",
                p.ranks.len()
            );
        }
        None => {
            let _ = writeln!(
                s,
                "# peerpath placement, {} local rank(s): one block per rank; evaluate one with --rank N",
                p.ranks.len()
            );
        }
    }
    for ps in p
        .platform_settings
        .iter()
        .filter(|ps| rank.is_none_or(|n| ps.ranks.contains(&n)))
    {
        let note = format!(
            "documented for this platform ({}) by {} ({}), not chosen by peerpath",
            ps.platform, ps.documented_by, ps.source
        );
        let _ = writeln!(s, "# {}", one_line(&note));
        let _ = writeln!(s, "export {}={}", ps.name, shell_word(&ps.value));
    }
    for r in p.ranks.iter().filter(|r| rank.is_none_or(|n| r.rank == n)) {
        let head = format!(
            "local_rank={} gpu={} nic={} path={} numa={}",
            r.rank,
            r.gpu,
            nic(r),
            path(r),
            numa(r)
        );
        let gap = if rank.is_some() { "" } else { "\n" };
        let _ = writeln!(s, "{gap}# {}", one_line(&head));
        for w in &r.env_notes {
            let _ = writeln!(s, "# {}", one_line(w));
        }
        for (k, v) in &r.env {
            let _ = writeln!(s, "export {k}={}", shell_word(v));
        }
        if !r.bind.is_empty() {
            let _ = writeln!(s, "export PEERPATH_BIND={}", shell_word(&bind_line(r)));
        }
    }
    s
}

/// What `peerpath launch --dry-run` prints for one rank: a comment naming the rank and where
/// it came from, the `KEY=value` lines it sets, the binding it would apply and the command.
pub fn launch_plan(
    p: &Placement,
    r: &RankPlan,
    source: &str,
    bind: Option<&str>,
    cmd: &[String],
) -> String {
    let mut s = String::new();
    let head = format!(
        "peerpath launch: local rank {} of {} (from {source}): GPU {} ({} {}) -> NIC {} [{}] -> NUMA {}",
        r.rank,
        p.ranks.len(),
        r.gpu,
        runtime(r),
        r.cuda_index,
        nic(r),
        path(r),
        numa(r)
    );
    let _ = writeln!(s, "# {}", one_line(&head));
    for w in &r.env_notes {
        let _ = writeln!(s, "# {}", one_line(w));
    }
    for (k, v) in &r.env {
        let _ = writeln!(s, "{k}={}", shell_word(v));
    }
    match bind {
        Some(b) => {
            let _ = writeln!(s, "# bind: {}", one_line(b));
        }
        None => {
            let _ = writeln!(s, "# bind: none");
        }
    }
    let exec = cmd
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ");
    let _ = writeln!(s, "# exec: {}", one_line(&exec));
    s
}

/// JSON (`peerpath.placement/1`).
pub fn json(p: &Placement) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(p)? + "\n")
}

/// A POSIX `sh` script for `srun`: save it, make it executable and run `srun … ./script
/// python train.py`. It picks the rank's environment by `$SLURM_LOCALID`, binds with `numactl`
/// (CPUs and memory), or `taskset` when numactl is missing (CPUs only, said on stderr), or not
/// at all when neither exists (said on stderr), and execs the command after it.
pub fn slurm(p: &Placement) -> String {
    let mut s = String::from("#!/bin/sh\n");
    let _ = writeln!(
        s,
        "# peerpath placement for {} local rank(s) under srun. Save as peerpath-place.sh, chmod +x, run:",
        p.ranks.len()
    );
    let _ = writeln!(
        s,
        "#   srun --ntasks-per-node={} ./peerpath-place.sh python train.py",
        p.ranks.len()
    );
    s.push_str(
        "# (where peerpath is installed on the nodes: srun peerpath launch -- python train.py)\n",
    );
    for r in &p.ranks {
        for w in &r.env_notes {
            let _ = writeln!(s, "# local rank {}: {}", r.rank, one_line(w));
        }
    }
    s.push_str("case \"${SLURM_LOCALID:?not run under srun}\" in\n");
    for r in &p.ranks {
        let _ = write!(s, "{}) export", r.rank);
        for (k, v) in &r.env {
            let _ = write!(s, " {k}={}", shell_word(v));
        }
        let _ = writeln!(
            s,
            "; CPUS={}; MEM={};;",
            shell_word(&r.cpus),
            r.numa_node.map(|n| n.to_string()).unwrap_or_default()
        );
    }
    s.push_str(
        "*) echo \"peerpath: no placement for local rank $SLURM_LOCALID\" >&2; exit 1;;\nesac\n",
    );
    s.push_str(concat!(
        "if [ -z \"$CPUS\" ]; then\n",
        "  echo \"peerpath: no CPUs planned for local rank $SLURM_LOCALID: not bound\" >&2; exec \"$@\"\n",
        "elif command -v numactl >/dev/null 2>&1 && [ -n \"$MEM\" ]; then\n",
        "  exec numactl --physcpubind=\"$CPUS\" --membind=\"$MEM\" \"$@\"\n",
        "elif command -v taskset >/dev/null 2>&1; then\n",
        "  echo \"peerpath: numactl missing or NUMA node unknown: CPUs bound with taskset, memory not bound\" >&2\n",
        "  exec taskset -c \"$CPUS\" \"$@\"\n",
        "else\n",
        "  echo \"peerpath: neither numactl nor taskset found: not bound\" >&2; exec \"$@\"\n",
        "fi\n",
    ));
    s
}
