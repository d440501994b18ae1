//! Placement advisor: which GPUs a job of N local ranks should use, which NIC and which CPU
//! cores each rank gets, and why.
//!
//! Data: the GPU and NIC endpoints and their pair labels come from
//! [`crate::analysis::classify`] (sysfs tree, NVLinks); CPU cores from [`CoreMap`]
//! (`/proc/cpuinfo`, NUMA cpulists). The choice itself ([`choose_gpus`], [`assign_nics`],
//! [`assign_cores`]) works on plain tables so that it can be tested without a topology.
//!
//! Rules, in order:
//! - GPUs: fewest NVLink domains, then fewest NUMA nodes, then the best worst GPU–GPU label,
//!   then the best sum of GPU–GPU labels, then the best NIC each GPU could get, then the lowest
//!   CUDA indices.
//! - NICs: a min-cost assignment (Kuhn–Munkres) where each rank's cost is, lexicographically,
//!   its path label to the NIC, then the bandwidth it would get (the path bottleneck divided by
//!   the ranks sharing that NIC), then how many ranks already share it. A NIC is therefore
//!   shared only when every unshared NIC has a worse path label; with fewer NICs than ranks,
//!   sharing is spread evenly.
//! - CPU cores: whole cores (all SMT siblings together) from the NUMA node of the rank's GPU
//!   (its NIC's node when the GPU's is unknown), split evenly among the ranks on that node; no
//!   core is given twice.

use super::classify::{Classifier, ClassifyOptions};
use super::cores::CoreMap;
use super::pairing::near::{FAR_RANK, NEAR_FROM_PAIRS};
use near::NearPairs;

mod near;
mod ranks;
mod slingshot;
pub use super::pairing::{
    Candidates, GpuCand, NicCand, NodeView, PairCand, PathRank, UNKNOWN_RANK, assign_nics,
    nic_name, nvlink_domains, pair_rank,
};
use crate::model::{Bdf, Topology};
use ranks::plan_chosen;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Version tag of the placement JSON document.
pub const PLACEMENT_SCHEMA: &str = "peerpath.placement/1";

/// Score of a GPU set (lower is better), in rule order: NVLink domains, NUMA nodes, worst
/// GPU–GPU label rank, sum of GPU–GPU label ranks, sum of each GPU's best NIC rank. (The
/// lowest CUDA indices, the last rule, is the order sets are tried in.)
type SetScore = (usize, usize, PathRank, u64, u64);

/// What scoring a GPU set reads: the tables, each GPU's NVLink domain and its best NIC rank
/// (computed once, not per set).
struct Scorer<'a> {
    c: &'a Candidates,
    domain_of: Vec<usize>,
    best_nic: Vec<u64>,
    /// On a near view: where GPU pairs are read instead of `c.gg`.
    near: Option<NearPairs<'a>>,
    /// The NVLink domains' members (index: `domain_of`).
    domains: Vec<Vec<usize>>,
    /// The least of `best_nic` (a bound on any GPU's).
    min_best_nic: u64,
}

impl<'a> Scorer<'a> {
    fn new(
        c: &'a Candidates,
        domains: Vec<Vec<usize>>,
        domain_of: Vec<usize>,
        near: Option<NearPairs<'a>>,
    ) -> Self {
        let best_nic: Vec<u64> = match &near {
            None => {
                c.gn.iter()
                    .map(|row| row.iter().map(pair_rank).min().unwrap_or(UNKNOWN_RANK) as u64)
                    .collect()
            }
            Some(n) => (0..c.gpus.len()).map(|g| n.best_nic(g) as u64).collect(),
        };
        Scorer {
            c,
            domain_of,
            min_best_nic: best_nic.iter().copied().min().unwrap_or(0),
            best_nic,
            near,
            domains,
        }
    }

    /// Rank of the GPU–GPU relation of `i` and `j`, read as the lower index's row.
    fn gg_rank(&self, i: usize, j: usize) -> PathRank {
        match &self.near {
            None => pair_rank(&self.c.gg[i.min(j)][i.max(j)]),
            Some(n) => n.rank(i.min(j), i.max(j)),
        }
    }

    /// The GPU the greedy adds to `set` (scored `base`; `member` marks it): the lowest score,
    /// the lowest index on a tie. On a near view only the GPUs under a member's host bridge
    /// or in a member's NVLink domain are scored when the best of them beats
    /// [`Self::far_bound`]; any other GPU is NVLink-free and NODE or worse to every member, so
    /// it scores at least that bound. Otherwise every GPU is scored.
    fn next(&self, set: &[usize], member: &[bool], base: SetScore) -> Option<(usize, SetScore)> {
        if let Some(n) = &self.near {
            let mut best: Option<(SetScore, usize)> = None;
            let mut seen_blocks: Vec<usize> = Vec::new();
            let mut seen_domains: Vec<usize> = Vec::new();
            for &m in set {
                let (b, d) = (n.at[m].0, self.domain_of[m]);
                let mut near: Vec<&[usize]> = Vec::new();
                if !seen_blocks.contains(&b) {
                    seen_blocks.push(b);
                    near.push(&n.blocks[b]);
                }
                if !seen_domains.contains(&d) {
                    seen_domains.push(d);
                    near.push(&self.domains[d]);
                }
                for &g in near.into_iter().flatten() {
                    if !member[g] {
                        let s = self.score_with(set, base, g);
                        if best.is_none_or(|b| (s, g) < b) {
                            best = Some((s, g));
                        }
                    }
                }
            }
            if let Some((s, g)) = best
                && s < self.far_bound(set, base)
            {
                return Some((g, s));
            }
        }
        (0..self.c.gpus.len())
            .filter(|&g| !member[g])
            .map(|g| (g, self.score_with(set, base, g)))
            .min_by_key(|&(_, s)| s)
    }

    /// A lower bound, component by component (so also in lexicographic order), on the score of
    /// `set` plus a GPU outside every member's host bridge and NVLink domain: a new domain,
    /// perhaps no new NUMA node, each new pair at least NODE, the least best-NIC rank.
    fn far_bound(&self, set: &[usize], base: SetScore) -> SetScore {
        let (nd, nn, worst, sum, nic) = base;
        let far = FAR_RANK as PathRank;
        (
            nd + 1,
            nn,
            worst.max(far),
            sum + u64::from(far) * set.len() as u64,
            nic + self.min_best_nic,
        )
    }

    /// The score of a sorted set.
    fn score(&self, set: &[usize]) -> SetScore {
        let domains: BTreeSet<usize> = set.iter().map(|&g| self.domain_of[g]).collect();
        let numa: BTreeSet<Option<u32>> = set.iter().map(|&g| self.c.gpus[g].numa_node).collect();
        let mut worst = 0;
        let mut sum = 0u64;
        for (a, &i) in set.iter().enumerate() {
            for &j in &set[a + 1..] {
                let r = self.gg_rank(i, j);
                worst = worst.max(r);
                sum += r as u64;
            }
        }
        let nic_sum: u64 = set.iter().map(|&g| self.best_nic[g]).sum();
        (domains.len(), numa.len(), worst, sum, nic_sum)
    }

    /// The score of `set` plus GPU `g` (not in it), from the score of `set` alone: what `g`
    /// adds is its domain and NUMA node when new, its labels to the members and its best NIC.
    fn score_with(&self, set: &[usize], base: SetScore, g: usize) -> SetScore {
        let (mut nd, mut nn, mut worst, mut sum, nic_sum) = base;
        if !set.iter().any(|&m| self.domain_of[m] == self.domain_of[g]) {
            nd += 1;
        }
        let numa = self.c.gpus[g].numa_node;
        if !set.iter().any(|&m| self.c.gpus[m].numa_node == numa) {
            nn += 1;
        }
        for &m in set {
            let r = self.gg_rank(g, m);
            worst = worst.max(r);
            sum += r as u64;
        }
        (nd, nn, worst, sum, nic_sum + self.best_nic[g])
    }
}

/// Largest number of GPU subsets scored exhaustively; beyond it the choice is greedy.
const MAX_SUBSETS: u64 = 200_000;

fn binomial(n: u64, k: u64) -> u64 {
    let k = k.min(n - k.min(n));
    let mut r: u64 = 1;
    for i in 0..k {
        r = r.saturating_mul(n - i) / (i + 1);
        if r > MAX_SUBSETS {
            return u64::MAX;
        }
    }
    r
}

/// Chooses `n` GPUs (indices into `c.gpus`, sorted) by the rules in the module doc, and says
/// why in one line. `None` when fewer than `n` GPUs exist.
pub fn choose_gpus(c: &Candidates, n: usize) -> Option<(Vec<usize>, String)> {
    choose_gpus_in(c, n, None)
}

/// [`choose_gpus`], on a near view reading GPU pairs and best NICs from `near` instead of the
/// tables `c.gg` and `c.gn` (which it leaves empty): the same choice (see [`Scorer::next`]).
fn choose_gpus_in(
    c: &Candidates,
    n: usize,
    near: Option<NearPairs>,
) -> Option<(Vec<usize>, String)> {
    let total = c.gpus.len();
    if n == 0 || n > total {
        return None;
    }
    let domains = match &near {
        None => nvlink_domains(c),
        Some(p) => p.near.nvlink_domains(p.cl),
    };
    let mut domain_of = vec![0; total];
    for (d, members) in domains.iter().enumerate() {
        for &g in members {
            domain_of[g] = d;
        }
    }
    let nvl_domains = domains.iter().filter(|d| d.len() > 1).count();
    let scorer = Scorer::new(c, domains, domain_of, near);
    let best = if binomial(total as u64, n as u64) <= MAX_SUBSETS {
        // Every set in lexicographic order; the first with the lowest score wins.
        let mut best: Option<(SetScore, Vec<usize>)> = None;
        let mut set: Vec<usize> = (0..n).collect();
        loop {
            let s = scorer.score(&set);
            if best.as_ref().is_none_or(|(b, _)| s < *b) {
                best = Some((s, set.clone()));
            }
            // Next combination in lexicographic order.
            let mut i = n;
            while i > 0 && set[i - 1] == total - n + i - 1 {
                i -= 1;
            }
            if i == 0 {
                break;
            }
            set[i - 1] += 1;
            for j in i..n {
                set[j] = set[j - 1] + 1;
            }
        }
        best.map(|(_, s)| s)?
    } else {
        // Greedy: grow from each GPU, adding the GPU that gives the lowest score (the lowest
        // index on a tie, which is also the lexicographically first set), and keep the best
        // final set (score, then the set itself). Each candidate is scored incrementally.
        let mut best: Option<(SetScore, Vec<usize>)> = None;
        let mut member = vec![false; total];
        for start in 0..total {
            let mut set = vec![start];
            member.iter_mut().for_each(|m| *m = false);
            member[start] = true;
            let mut score = scorer.score(&set);
            while set.len() < n {
                let (next, s) = scorer.next(&set, &member, score)?;
                set.push(next);
                set.sort_unstable();
                member[next] = true;
                score = s;
            }
            if best.as_ref().is_none_or(|(bs, b)| (score, &set) < (*bs, b)) {
                best = Some((score, set));
            }
        }
        best.map(|(_, s)| s)?
    };
    let (nd, nn, worst, _, _) = scorer.score(&best);
    let worst_label = best
        .iter()
        .enumerate()
        .flat_map(|(a, &i)| best[a + 1..].iter().map(move |&j| (i, j)))
        .filter_map(|(i, j)| match &scorer.near {
            None => c.gg[i][j].clone(),
            Some(p) => p.near.gpu_pair(p.cl, i, j),
        })
        .find(|p| p.rank() == worst)
        .map(|p| p.label);
    let names: Vec<&str> = best.iter().map(|&g| c.gpus[g].name.as_str()).collect();
    let mut why = if n == total && n == 1 {
        format!("the node's only GPU ({})", names.join(", "))
    } else if n == total {
        format!("all {n} GPUs requested ({})", names.join(", "))
    } else {
        format!("chose {} of {total} GPUs", names.join(", "))
    };
    if nvl_domains > 0 {
        why.push_str(&format!(
            "; {} {} domain{}",
            nd,
            c.fabric,
            if nd == 1 { "" } else { "s" }
        ));
    } else if c.nvlink_visible {
        why.push_str(&format!("; no {} between GPUs", c.fabric));
    } else {
        why.push_str(&format!(
            "; {} not visible, so chosen on PCIe and NUMA only",
            c.fabric
        ));
    }
    why.push_str(&format!(
        "; {} NUMA node{}",
        nn,
        if nn == 1 { "" } else { "s" }
    ));
    if let Some(w) = worst_label {
        why.push_str(&format!("; worst GPU–GPU path {w}"));
    }
    Some((best, why))
}

/// Gives each rank whole cores from its NUMA node (see the module doc). `numa[i]` is rank i's
/// node (`None`: unknown), `fallback_cpus[i]` the CPUs to use when the node is unknown (the
/// GPU's `local_cpulist`). `per_rank` caps the cores per rank (default: an even share).
/// Returns, per rank, indices into `map.cores`.
pub fn assign_cores(
    map: &CoreMap,
    numa: &[Option<u32>],
    fallback_cpus: &[Vec<u32>],
    per_rank: Option<usize>,
) -> Vec<Vec<usize>> {
    let n = numa.len();
    let mut used = vec![false; map.cores.len()];
    let mut out = vec![Vec::new(); n];
    // Pool of each rank: the cores of its NUMA node, or those within its fallback CPUs.
    let pool_of = |i: usize| -> Vec<usize> {
        match numa[i] {
            Some(node) => (0..map.cores.len())
                .filter(|&c| map.cores[c].numa_node == Some(node))
                .collect(),
            None => map.cores_within(fallback_cpus.get(i).map(|v| v.as_slice()).unwrap_or(&[])),
        }
    };
    let pools: Vec<Vec<usize>> = (0..n).map(pool_of).collect();
    // Ranks sharing an identical pool split it evenly.
    let mut sharers: BTreeMap<Vec<usize>, Vec<usize>> = BTreeMap::new();
    for (i, p) in pools.iter().enumerate() {
        sharers.entry(p.clone()).or_default().push(i);
    }
    for (pool, ranks) in sharers {
        let share = pool.len() / ranks.len().max(1);
        let take = per_rank.map(|p| p.min(share)).unwrap_or(share);
        let mut it = pool.iter().copied().filter(|&c| !used[c]);
        for &rnk in &ranks {
            for _ in 0..take {
                if let Some(c) = it.next() {
                    out[rnk].push(c);
                }
            }
        }
        for r in &ranks {
            for &c in &out[*r] {
                used[c] = true;
            }
        }
    }
    out
}

/// One rank of a placement plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankPlan {
    /// Local rank.
    pub rank: usize,
    /// GPU PCI address.
    pub gpu: String,
    /// Index of the GPU in PCI bus order (`CUDA_DEVICE_ORDER=PCI_BUS_ID`).
    pub cuda_index: usize,
    /// RDMA device name of the NIC (or its netdev when it has no RDMA device).
    pub nic: Option<String>,
    /// NIC PCI address.
    pub nic_bdf: Option<String>,
    /// RDMA port used (`UCX_NET_DEVICES=<nic>:<port>`), when the scan captured the device's
    /// ports.
    pub nic_port: Option<u32>,
    /// The NIC's netdev, when it has one.
    pub netdev: Option<String>,
    /// GPU–NIC path label (`PIX`, `PXB`, `NODE`, …).
    pub path: Option<String>,
    /// Bottleneck of the GPU–NIC path in GB/s, when known.
    pub bottleneck_gbps: Option<f64>,
    /// Other ranks given the same NIC.
    pub nic_shared_with: Vec<usize>,
    /// NUMA node the rank is bound to.
    pub numa_node: Option<u32>,
    /// CPUs given to the rank (all SMT siblings of its cores), as a cpulist.
    pub cpus: String,
    /// Number of whole cores given.
    pub cores: usize,
    /// Environment for the rank (variable → value).
    pub env: BTreeMap<String, String>,
    /// What the environment leaves out for this rank's NIC and why (a Slingshot NIC: see
    /// `slingshot.rs`); every output of the plan shows these lines. Absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_notes: Vec<String>,
    /// Binding command prefix (`numactl …` argv).
    pub bind: Vec<String>,
    /// One line per choice: GPU, NIC, CPUs (and drive, with [`add_storage`]).
    pub why: Vec<String>,
    /// The rank's nearest data NVMe drive for GPUDirect Storage ([`add_storage`]); absent
    /// when storage was not asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drive: Option<crate::analysis::storage::DriveChoice>,
}

/// A whole placement plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Placement {
    /// Always [`PLACEMENT_SCHEMA`].
    pub schema: String,
    /// Ranks in local-rank order.
    pub ranks: Vec<RankPlan>,
    /// Node-wide facts and caveats (NIC sharing, unknown SMT, no RDMA NIC).
    pub notes: Vec<String>,
    /// Settings the node's platform operators document for GPUDirect RDMA that this job does
    /// not set and that would give ranks GDR their design denies by default
    /// ([`crate::analysis::design`]): marked as the platform's, not peerpath's choice.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platform_settings: Vec<PlatformSetting>,
}

/// A documented platform setting `place` passes on (see [`Placement::platform_settings`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlatformSetting {
    /// Variable name.
    pub name: String,
    /// Value.
    pub value: String,
    /// The platform recognised.
    pub platform: String,
    /// Who documents it.
    pub documented_by: String,
    /// Where.
    pub source: String,
    /// Local ranks it gives GPUDirect RDMA.
    pub ranks: Vec<usize>,
}

/// The documented GDR-level settings of the node's design that would admit the paths of ranks
/// NCCL now stages through host memory, when the job sets no GDR level itself.
fn platform_settings(
    t: &Topology,
    ranks: &[RankPlan],
    far: &[(usize, crate::analysis::nccl::NcclPath)],
) -> Vec<PlatformSetting> {
    if far.is_empty() {
        return Vec::new();
    }
    let v = crate::analysis::nccl::NcclVersion::NEWEST;
    let settings = crate::analysis::settings::Effective::of(&t.machine.nccl, v);
    if settings.gdr_level.is_some() {
        return Vec::new();
    }
    let paths = crate::analysis::paths::Paths::new(t);
    let Some(d) = crate::analysis::design::recognise(&paths) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for doc in &d.settings {
        let (Some(level), Some((name, value))) = (doc.gdr_level(), doc.setting.split_once('='))
        else {
            continue;
        };
        // NCCL's own comparison (the ranks here have no C2C path: those are P2C, admitted).
        let admitted: Vec<usize> = far
            .iter()
            .filter(|(_, p)| settings.gdr_allows(*p, level, false))
            .map(|(r, _)| ranks[*r].rank)
            .collect();
        if !admitted.is_empty() {
            out.push(PlatformSetting {
                name: name.to_string(),
                value: value.to_string(),
                platform: d.name.clone(),
                documented_by: format!("{} ({})", doc.who, doc.note),
                source: doc.source.to_string(),
                ranks: admitted,
            });
        }
    }
    out
}

/// Options of a placement run.
#[derive(Debug, Clone, Default)]
pub struct PlaceOptions {
    /// Number of local ranks (= GPUs) to place.
    pub ranks: usize,
    /// Cores per rank (default: an even share of the rank's NUMA node).
    pub cores_per_rank: Option<usize>,
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Plans a job of `o.ranks` local ranks on the node (see the module doc for the rules).
///
/// On a node of more than [`NEAR_FROM_PAIRS`] GPU–NIC pairs the view is near
/// ([`NodeView::place_from`]): no GPU × GPU or GPU × NIC table is built; GPU pairs are read
/// per host bridge and on demand ([`Scorer::next`]), and the chosen GPUs' rows of the GPU × NIC
/// table are classified whole, so the NIC matching is the dense one over them. The plan is the
/// one the full view gives.
pub fn plan(t: &Topology, o: &PlaceOptions) -> anyhow::Result<Placement> {
    let cl = Classifier::new(t, &ClassifyOptions::default());
    plan_near_from(t, &cl, o, NEAR_FROM_PAIRS)
}

/// [`plan`] with the near view from `from_pairs` GPU–NIC pairs (tests: 0 makes any node's
/// view near).
fn plan_near_from(
    t: &Topology,
    cl: &Classifier,
    o: &PlaceOptions,
    from_pairs: usize,
) -> anyhow::Result<Placement> {
    let view = NodeView::place_from(cl, from_pairs);
    let Some(near) = &view.near else {
        return plan_with(t, &view, o);
    };
    check_ranks(t, &view, o)?;
    let pairs = NearPairs::new(cl, near, view.gpus.len())
        .ok_or_else(|| anyhow::anyhow!("a GPU of the near view has no host bridge"))?;
    let (chosen, gpu_why) = choose_gpus_in(&view.cand, o.ranks, Some(pairs))
        .ok_or_else(|| anyhow::anyhow!("cannot choose {} GPUs", o.ranks))?;
    // The chosen GPUs' rows of the dense GPU × NIC table; the matching reads only those.
    let mut c = view.cand.clone();
    c.gn = vec![Vec::new(); c.gpus.len()];
    for &g in &chosen {
        c.gn[g] = near.full_row(cl, g);
    }
    let nic_of = assign_nics(&c, &chosen);
    plan_chosen(t, &view, &c, o, chosen, gpu_why, nic_of)
}

/// The errors of a plan that cannot be made: no GPU, or not as many GPUs as ranks.
fn check_ranks(t: &Topology, view: &NodeView, o: &PlaceOptions) -> anyhow::Result<()> {
    if view.gpus.is_empty() {
        anyhow::bail!(
            "no GPU in this topology ({}): nothing to place",
            t.source.path
        );
    }
    if o.ranks == 0 || o.ranks > view.gpus.len() {
        anyhow::bail!(
            "asked for {} rank{} but the node has {} GPU{} (one rank per GPU)",
            o.ranks,
            plural(o.ranks),
            view.gpus.len(),
            plural(view.gpus.len())
        );
    }
    Ok(())
}

/// [`plan`] over an already built [`NodeView`] (the full one: its tables are read).
pub fn plan_with(t: &Topology, view: &NodeView, o: &PlaceOptions) -> anyhow::Result<Placement> {
    let c = &view.cand;
    check_ranks(t, view, o)?;
    let (chosen, gpu_why) =
        choose_gpus(c, o.ranks).ok_or_else(|| anyhow::anyhow!("cannot choose {} GPUs", o.ranks))?;
    let nic_of = assign_nics(c, &chosen);
    plan_chosen(t, view, c, o, chosen, gpu_why, nic_of)
}

/// [`plan`], then [`add_storage`] when `storage` is asked for or [`storage_by_default`]: what
/// `place` and `launch` compute.
pub fn plan_for(t: &Topology, o: &PlaceOptions, storage: bool) -> anyhow::Result<Placement> {
    let mut p = plan(t, o)?;
    if storage || storage_by_default(t) {
        add_storage(t, &mut p);
    }
    Ok(p)
}

/// Whether placements on this node carry storage by default: GPUDirect Storage is configured
/// (nvidia-fs loaded or `/etc/cufile.json` present).
pub fn storage_by_default(t: &Topology) -> bool {
    let s = &t.machine.storage;
    s.nvidia_fs.is_some() || s.cufile.is_some()
}

/// Gives each rank its GPU's nearest data drive for GPUDirect Storage, chosen as its NIC is
/// ([`crate::analysis::storage::assign_drives`]: best path label, then the drive fewest ranks
/// share, then address): the `drive` of each rank, `PEERPATH_GDS_DRIVE` (the controller,
/// `nvme0`) and `PEERPATH_GDS_DIR` (the first data mount on it) in its environment, a why line,
/// and a note when the node has no data drive.
pub fn add_storage(t: &Topology, p: &mut Placement) {
    let cl = crate::analysis::classify::Classifier::new(t, &Default::default());
    let gpus: Vec<Bdf> = p.ranks.iter().filter_map(|r| r.gpu.parse().ok()).collect();
    let choice = crate::analysis::storage::assign_drives(&cl, &gpus);
    if choice.iter().all(Option::is_none) {
        p.notes.push(
            "no data NVMe drive (none holds a mounted file system besides / and /boot): ranks get no drive"
                .into(),
        );
        return;
    }
    for (r, c) in p.ranks.iter_mut().zip(choice) {
        let Some(c) = c else {
            r.why.push("Drive: none reachable from this GPU".into());
            continue;
        };
        let name = c.nvme.clone().unwrap_or_else(|| c.drive.to_string());
        r.env.insert("PEERPATH_GDS_DRIVE".into(), name.clone());
        let dir = c
            .mounts
            .iter()
            .find(|m| !crate::analysis::storage::is_system_mount(m));
        if let Some(d) = dir {
            r.env.insert("PEERPATH_GDS_DIR".into(), d.clone());
        }
        r.why.push(format!(
            "Drive: {name} ({}){}: {} to the GPU, its nearest data drive (GPUDirect Storage reads; ties go to the drive fewest ranks share)",
            c.drive,
            dir.map(|d| format!(" holding {d}")).unwrap_or_default(),
            c.label
        ));
        r.drive = Some(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::Label;

    fn p(label: &str, bw: f64) -> Option<PairCand> {
        let label: Label = label.parse().unwrap();
        Some(PairCand {
            label,
            bottleneck_gbps: Some(bw),
            tie: 0,
            gdr: label.within_pxb(),
            nccl_path: crate::analysis::nccl::NcclPath::Pxb,
        })
    }

    /// 4 GPUs on two NUMA nodes, NVLink pairs (0,1) and (2,3); NIC k is PIX to GPU k, NODE to
    /// the other GPU of its node, SYS across.
    fn four() -> Candidates {
        let gpus = (0..4)
            .map(|i| GpuCand {
                name: format!("GPU{i}"),
                numa_node: Some(i / 2),
            })
            .collect();
        let nics = (0..4)
            .map(|i| NicCand {
                name: format!("mlx5_{i}"),
                numa_node: Some(i / 2),
                speed_gbps: None,
                rail: true,
            })
            .collect();
        let mut gg = vec![vec![None; 4]; 4];
        let mut gn = vec![vec![None; 4]; 4];
        for i in 0..4usize {
            for j in 0..4usize {
                if i != j {
                    gg[i][j] = if i / 2 == j / 2 {
                        p("NV4", 100.0)
                    } else {
                        p("SYS", 10.0)
                    };
                }
                gn[i][j] = if i == j {
                    p("PIX", 24.0)
                } else if i / 2 == j / 2 {
                    p("NODE", 20.0)
                } else {
                    p("SYS", 10.0)
                };
            }
        }
        Candidates {
            gpus,
            nics,
            gg,
            gn,
            nvlink_visible: true,
            fabric: "NVLink",
        }
    }

    #[test]
    fn two_gpus_stay_in_one_nvlink_domain() {
        let c = four();
        let (g, why) = choose_gpus(&c, 2).unwrap();
        assert_eq!(g, vec![0, 1]);
        assert!(why.contains("1 NVLink domain"), "{why}");
        assert_eq!(nvlink_domains(&c), vec![vec![0, 1], vec![2, 3]]);
        assert!(choose_gpus(&c, 5).is_none());
    }

    #[test]
    fn each_gpu_gets_its_pix_nic() {
        let c = four();
        assert_eq!(
            assign_nics(&c, &[0, 1, 2, 3]),
            vec![Some(0), Some(1), Some(2), Some(3)]
        );
    }

    #[test]
    fn misplaced_nic_is_routed_around() {
        // NIC 1 moved to NUMA 1: SYS from GPU1, PIX to GPU3 as well.
        let mut c = four();
        for g in 0..4 {
            c.gn[g][1] = if g >= 2 {
                p("NODE", 20.0)
            } else {
                p("SYS", 10.0)
            };
        }
        let a = assign_nics(&c, &[0, 1, 2, 3]);
        // GPU1 shares NIC 0 (NODE) rather than taking NIC 1 over SYS.
        assert_eq!(a[1], Some(0));
        assert_eq!(a[0], Some(0));
        assert_eq!(a[2], Some(2));
        assert_eq!(a[3], Some(3));
    }

    #[test]
    fn fewer_nics_than_ranks_spreads() {
        let mut c = four();
        c.nics.truncate(2);
        for row in &mut c.gn {
            row.truncate(2);
        }
        let a = assign_nics(&c, &[0, 1, 2, 3]);
        let mut load = [0; 2];
        for x in a.iter().flatten() {
            load[*x] += 1;
        }
        assert_eq!(load, [2, 2], "{a:?}");
    }

    /// The greedy choice by its definition: every candidate set scored from scratch, the set
    /// itself as the last key.
    fn greedy_by_definition(c: &Candidates, n: usize) -> Vec<usize> {
        let mut domain_of = vec![0; c.gpus.len()];
        let domains = nvlink_domains(c);
        for (d, members) in domains.iter().enumerate() {
            for &g in members {
                domain_of[g] = d;
            }
        }
        let sc = Scorer::new(c, domains, domain_of, None);
        let key = |set: &[usize]| (sc.score(set), set.to_vec());
        let mut best: Option<(SetScore, Vec<usize>)> = None;
        for start in 0..c.gpus.len() {
            let mut set = vec![start];
            while set.len() < n {
                let next = (0..c.gpus.len())
                    .filter(|g| !set.contains(g))
                    .min_by_key(|&g| {
                        let mut s = set.clone();
                        s.push(g);
                        s.sort_unstable();
                        key(&s)
                    })
                    .unwrap();
                set.push(next);
                set.sort_unstable();
            }
            if best.as_ref().is_none_or(|b| key(&set) < (b.0, b.1.clone())) {
                best = Some((sc.score(&set), set));
            }
        }
        best.unwrap().1
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// 24 GPUs, 8 ranks: too many sets to try them all (735,471 > MAX_SUBSETS), so the
        /// choice is greedy; scoring each candidate incrementally picks what scoring it from
        /// scratch picks.
        #[test]
        fn incremental_greedy_is_the_greedy(
            labels in proptest::collection::vec(0usize..7, 24 * 24 + 24 * 4),
            numa in proptest::collection::vec(0u32..3, 24),
        ) {
            let names = ["NV12", "NV4", "PIX", "PXB", "NODE", "SYS", "?"];
            let rel = |i: usize| p(names[labels[i]], 10.0).filter(|_| labels[i] != 6);
            let c = Candidates {
                gpus: (0..24)
                    .map(|i| GpuCand { name: format!("GPU{i}"), numa_node: Some(numa[i]) })
                    .collect(),
                nics: (0..4)
                    .map(|i| NicCand { name: format!("mlx5_{i}"), numa_node: None, speed_gbps: None, rail: true })
                    .collect(),
                gg: (0..24)
                    .map(|i| (0..24).map(|j| if i == j { None } else { rel(i * 24 + j) }).collect())
                    .collect(),
                gn: (0..24)
                    .map(|i| (0..4).map(|k| rel(24 * 24 + i * 4 + k)).collect())
                    .collect(),
                nvlink_visible: true,
            fabric: "NVLink",
            };
            proptest::prop_assert!(binomial(24, 8) > MAX_SUBSETS);
            let (chosen, _) = choose_gpus(&c, 8).unwrap();
            proptest::prop_assert_eq!(chosen, greedy_by_definition(&c, 8));
        }
    }
}
