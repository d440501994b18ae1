//! Whether a rank's job ran on one host, as its own log says: NCCL's `nNodes 1` (2.20+ comm
//! shape line, `init.cc`), a communicator of one rank (`nranks 1`), one made by
//! `ncclCommInitAll` (every rank in one process), or nccl-tests' `# Using devices`, which lists
//! every rank of the run, all on one host. Such a job sends nothing over
//! the network when its connections were set up without it: GDR does not apply. Also what
//! Ray's log deduplication leaves out of a copy (which workers a folded line stands for).

use super::{Proc, Subject};
use crate::parse::nccl_log::{Comm, Record};
use crate::parse::nccl_tests::TestRun;
use std::collections::BTreeMap;

/// A rank's job ran on one host: why the log says so, and whether it was a single rank (no
/// peer at all, so no connection can be expected).
#[derive(Debug, Clone)]
pub(super) struct OneHost {
    /// No peer: a communicator or nccl-tests run of one rank.
    pub single_rank: bool,
    /// The words and line that show it.
    pub why: String,
}

/// From a comm line: `nranks 1`, `nNodes 1`, or the function `ncclCommInitAll` (2.21+ print
/// the function before `comm`; RCCL `[Rank N] ncclCommInitAll_impl`).
pub(super) fn from_comm(c: &Comm, line: usize) -> Option<OneHost> {
    if c.nranks == Some(1) {
        return Some(OneHost {
            single_rank: true,
            why: format!("a communicator of one rank (`nranks 1`, line {line})"),
        });
    }
    if c.nnodes == Some(1) {
        return Some(OneHost {
            single_rank: false,
            why: format!("NCCL says `nNodes 1` (line {line})"),
        });
    }
    c.func
        .as_deref()
        .is_some_and(|f| f.contains("ncclCommInitAll"))
        .then(|| OneHost {
            single_rank: false,
            why: format!("`ncclCommInitAll` made it (line {line}): every rank in one process"),
        })
}

/// From an nccl-tests run whose `# Using devices` lists ranks 0..n-1, every one on the same
/// host. Not when the input has a gap marker: a list cut short could hide other hosts.
pub(super) fn from_tests(run: &TestRun, gaps: bool) -> Option<OneHost> {
    let d = &run.devices;
    let host = &d.first()?.host;
    if gaps
        || host.is_empty()
        || d.iter().any(|x| &x.host != host)
        || !d.iter().enumerate().all(|(k, x)| x.rank as usize == k)
    {
        return None;
    }
    Some(OneHost {
        single_rank: d.len() == 1,
        why: format!(
            "nccl-tests' `# Using devices` lists every rank ({}) on {host} (line {})",
            d.len(),
            run.line
        ),
    })
}

/// Every rank of a communicator of N ranks (0..N-1, each from its own `rank r nranks N` line)
/// printed on one host: that job ran on one host. Subjects without a one-host reason of their
/// own get this one. Ranks of several communicators of the same size on different hosts never
/// qualify (the ranks' hosts differ).
pub(super) fn every_rank_on_one_host(subjects: &mut [Subject]) {
    let mut by_size: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, s) in subjects.iter().enumerate() {
        if let (Some(n), Some(_)) = (s.nranks, s.rank) {
            by_size.entry(n).or_default().push(i);
        }
    }
    for (n, idx) in by_size {
        let host = &subjects[idx[0]].host;
        let mut ranks: Vec<u32> = idx.iter().filter_map(|&i| subjects[i].rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let all = ranks.len() == n as usize && ranks.last() == Some(&(n - 1));
        if n < 2 || !all || host.is_empty() || idx.iter().any(|&i| &subjects[i].host != host) {
            continue;
        }
        let why = format!(
            "every rank of the communicator (0 to {}) printed its rank on {host}",
            n - 1
        );
        for &i in &idx {
            subjects[i].one_host.get_or_insert_with(|| OneHost {
                single_rank: false,
                why: why.clone(),
            });
        }
    }
}

/// A line of the process that shows its connections being set up or done without the network:
/// a P2P/SHM channel line or `Connected all rings`.
pub(super) fn connected_locally(p: &Proc) -> Option<usize> {
    p.records().find_map(|(e, r)| {
        matches!(r, Record::PeerChannel(_) | Record::RingsConnected { .. }).then_some(e.line)
    })
}

/// The note for lines that end in Ray's `[repeated Nx across cluster]` (line, N).
pub(super) fn ray_folded_note(source: &str, folded: &[(usize, u32)]) -> String {
    let n: u64 = folded.iter().map(|&(_, k)| u64::from(k)).sum();
    let first: Vec<String> = folded.iter().take(5).map(|(l, _)| l.to_string()).collect();
    format!(
        "{source}: {} line(s) end in Ray's `[repeated Nx across cluster]` (lines {}{}): each is read as the one line it is; the {n} line(s) of other workers Ray folded into them are not in the copy — which processes printed them, and the numbers they held (ranks, NIC indexes, /GDRDMA), are unknown",
        folded.len(),
        first.join(", "),
        if folded.len() > 5 { ", …" } else { "" }
    )
}
