//! Placement plan renderers: text (with the reasons), launcher environment, JSON, and a Slurm
//! `srun` wrapper. Data: a [`Placement`] from [`crate::analysis::place`].

use crate::analysis::place::{Placement, RankPlan};
use std::fmt::Write;

/// Quotes a word for a POSIX shell when it needs it (single quotes, `'` escaped).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"=:,._-/+@%".contains(&c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

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

/// Human text: one block per rank with its reasons, then the notes.
pub fn text(p: &Placement) -> String {
    let mut s = String::new();
    for r in &p.ranks {
        let _ = writeln!(
            s,
            "rank {}: GPU {} (cuda {}) -> NIC {} [{}] -> NUMA {} cpus {}",
            r.rank,
            r.gpu,
            r.cuda_index,
            nic(r),
            path(r),
            numa(r),
            if r.cpus.is_empty() { "-" } else { &r.cpus }
        );
        for w in &r.why {
            let _ = writeln!(s, "  {w}");
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
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Launcher environment: per local rank, a block of `KEY=value` lines a shell can `source`
/// (values quoted), with the binding as `PEERPATH_BIND`.
pub fn env(p: &Placement) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# peerpath placement, {} local rank(s); source the block of your local rank",
        p.ranks.len()
    );
    for r in &p.ranks {
        let _ = writeln!(
            s,
            "\n# local_rank={} gpu={} nic={} path={} numa={}",
            r.rank,
            r.gpu,
            nic(r),
            path(r),
            numa(r)
        );
        for (k, v) in &r.env {
            let _ = writeln!(s, "{k}={}", shell_quote(v));
        }
        if !r.bind.is_empty() {
            let _ = writeln!(s, "PEERPATH_BIND={}", shell_quote(&bind_line(r)));
        }
    }
    s
}

/// JSON (`peerpath.placement/1`).
pub fn json(p: &Placement) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(p)? + "\n")
}

/// A `bash -c` wrapper for `srun`: picks the rank's environment by `$SLURM_LOCALID`, binds with
/// `numactl` (or `taskset` when numactl is missing; memory binding is then lost) and execs the
/// command given after it: `srun … <this line> ./train.py …`.
pub fn slurm(p: &Placement) -> String {
    let mut script = String::from("case \"${SLURM_LOCALID:?not run under srun}\" in ");
    for r in &p.ranks {
        let _ = write!(script, "{}) export", r.rank);
        for (k, v) in &r.env {
            let _ = write!(script, " {k}={}", shell_quote(v));
        }
        script.push_str("; ");
        if r.bind.is_empty() {
            script.push_str("exec \"$@\";; ");
        } else {
            let taskset = format!("taskset -c {}", shell_quote(&r.cpus));
            let _ = write!(
                script,
                "if command -v {0} >/dev/null 2>&1; then exec {1} \"$@\"; else exec {taskset} \"$@\"; fi;; ",
                shell_quote(&r.bind[0]),
                bind_line(r)
            );
        }
    }
    script.push_str(
        "*) echo \"peerpath: no placement for local rank $SLURM_LOCALID\" >&2; exit 1;; esac",
    );
    format!("bash -c {} peerpath-place\n", shell_quote(&script))
}
