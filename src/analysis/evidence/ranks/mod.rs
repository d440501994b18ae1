//! Per-rank GDR verdicts from one input's NCCL lines (and its nccl-tests `# Using devices`):
//! processes are grouped by `host:pid`; each rank's NET connections, the per-GPU and per-NIC GDR
//! lines, the ring summary, the echoed variables and the command line decide `used`, `off` (with
//! the cause) or `unknown`. A NIC index is named from the process's NIC list (or another process
//! on the same host); an index above the physical count is a virtual NIC (2.24+).

use super::model::*;
use super::version::{self, VersionInfo, bracket_is_bus_id};
use crate::analysis::nccl::NcclPath;
use crate::model::Bdf;
use crate::parse::joblog::JobOutput;
use crate::parse::nccl_log::topo::NodeId;
use crate::parse::nccl_log::{
    Comm, Entry, GpuGdr, GpuGdrForm, Header, NetChannel, NicGdr, NicList, Record, VirtualNic,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

mod causes;
mod gather;
mod scope;
mod verdict;
use causes::*;
use scope::ray_folded_note;

/// NCCL's busId integer (`busIdToInt64`: the hex digits of `DDDD:BB:DD.F`) as a PCI address.
pub fn bdf_of_bus_id(v: u64) -> Option<Bdf> {
    let function = (v & 0xf) as u8;
    let device = ((v >> 4) & 0xff) as u8;
    let bus = ((v >> 12) & 0xff) as u8;
    let domain = u32::try_from(v >> 20).ok()?;
    (device < 32 && function < 8).then_some(Bdf {
        domain,
        bus,
        device,
        function,
    })
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// One NCCL process of an input.
struct Proc<'a> {
    host: String,
    pid: u32,
    entries: Vec<&'a Entry>,
    /// The devices its headers name (lines of every form, read or not), each with its first line.
    devs: DevLines,
    version: VersionInfo,
    env: BTreeMap<String, (String, String)>,
}

impl Proc<'_> {
    fn first_line(&self) -> usize {
        self.entries
            .first()
            .map(|e| e.line)
            .or_else(|| self.devs.iter().map(|(_, l)| *l).min())
            .unwrap_or(0)
    }
    fn records(&self) -> impl DoubleEndedIterator<Item = (&Entry, &Record)> {
        self.entries.iter().map(|e| (*e, &e.record))
    }
    fn nic_list(&self) -> Option<(&NicList, bool)> {
        self.records().rev().find_map(|(e, r)| match r {
            Record::NicList(l) if l.transport != "Socket" || !l.nics.is_empty() => {
                Some((l, e.complete))
            }
            _ => None,
        })
    }
    fn virtual_nics(&self) -> Vec<&VirtualNic> {
        self.records()
            .filter_map(|(_, r)| match r {
                Record::VirtualNic(v) => Some(v),
                _ => None,
            })
            .collect()
    }
    fn nic_gdr(&self) -> Vec<(&NicGdr, usize)> {
        self.records()
            .filter_map(|(e, r)| match r {
                Record::NicGdr(n) => Some((n, e.line)),
                _ => None,
            })
            .collect()
    }
    fn no_device(&self) -> Option<usize> {
        self.records()
            .find_map(|(e, r)| matches!(r, Record::NoDevice { .. }).then_some(e.line))
    }
    fn network(&self) -> Option<&str> {
        self.records().rev().find_map(|(_, r)| match r {
            Record::UsingNetwork { name } => Some(name.as_str()),
            _ => None,
        })
    }
    /// Whether the process's network is NCCL's Socket transport, and the line that shows it:
    /// `Using network Socket`; the 2.4 `CUDA Dev d[n], Socket NIC distance`; or the IB
    /// transport finding nothing (`NET/IB : No device found`, `Failed to open libibverbs`) with
    /// no other network shown — NCCL tries a net plugin first, then IB, then Socket
    /// (`init.cc`/`net.cc` of every release), so an IB failure means no plugin took the job.
    fn socket_network(&self) -> Option<(usize, String)> {
        let mut no_ib = None;
        let mut other = false;
        for (e, r) in self.records() {
            match r {
                Record::UsingNetwork { name } if name == "Socket" => {
                    return Some((e.line, "`Using network Socket`".into()));
                }
                Record::UsingNetwork { .. } => other = true,
                // A plugin that loaded (`P2P plugin IBext_v8`, `Plugin Path : …`); not the
                // lines saying none did (`No plugin found …, using internal implementation`).
                Record::Plugin { text } if !plugin_absent(text) => other = true,
                Record::NicDistance(d) if d.net == "Socket" => {
                    return Some((
                        e.line,
                        format!(
                            "`CUDA Dev {}[{}], Socket NIC distance` (NCCL 2.4: the GPU's network is Socket)",
                            d.cuda_dev, d.nvml_dev
                        ),
                    ));
                }
                Record::NicDistance(_) => other = true,
                Record::NicList(l) if l.transport != "Socket" && !l.nics.is_empty() => other = true,
                Record::NoDevice { transport } if no_ib.is_none() => {
                    no_ib = Some((e.line, format!("`NET/{transport} : No device found.`")));
                }
                Record::IbDevices { count: 0 } if no_ib.is_none() => {
                    no_ib = Some((e.line, "`RCCL: Detected 0 IB devices`".into()));
                }
                Record::NoVerbs if no_ib.is_none() => {
                    no_ib = Some((
                        e.line,
                        "`Failed to open libibverbs` (no IB transport)".into(),
                    ));
                }
                _ => {}
            }
        }
        no_ib.filter(|_| !other)
    }
    /// A net plugin's line saying it turned GDR off for this process.
    fn plugin_gdr_off(&self) -> Option<(usize, &str)> {
        self.records().find_map(|(e, r)| match r {
            Record::PluginGdrOff { text } => Some((e.line, text.as_str())),
            _ => None,
        })
    }
    /// The NCCL release the process printed itself (`NCCL INFO NCCL version …`, 2.23+).
    fn own_version(&self) -> Option<(u32, u32, u32)> {
        self.records().find_map(|(_, r)| match r {
            Record::Version(v) => Some(v.number),
            _ => None,
        })
    }
}

/// Whether a `NET/Plugin` line says no plugin was loaded (`No plugin found (libnccl-net.so)`,
/// `Plugin load returned 2 : …`, `Could not find: libnccl-net.so.`, `Failed to find … symbol`,
/// `Using internal network plugin.`).
fn plugin_absent(text: &str) -> bool {
    [
        "No plugin",
        "not found",
        "Could not find",
        "Failed to find",
        "returned",
        "internal",
        "dlerror",
    ]
    .iter()
    .any(|w| text.contains(w))
}

/// The processes of an input, with each host's processes listed once and, per host and fact,
/// the first process that shows it remembered: [`from_host`] in the loop over ranks is a
/// look-up, not a pass over every process (10,000 ranks took 1.8 s, 20,000 ranks 9.4 s).
struct Procs<'a> {
    v: Vec<Proc<'a>>,
    by_host: HashMap<String, Vec<usize>>,
    first: RefCell<HashMap<(String, String), Option<usize>>>,
}

impl<'a> Procs<'a> {
    fn new(v: Vec<Proc<'a>>) -> Self {
        let mut by_host: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, p) in v.iter().enumerate() {
            by_host.entry(p.host.clone()).or_default().push(i);
        }
        Procs {
            v,
            by_host,
            first: RefCell::new(HashMap::new()),
        }
    }
}

impl<'a> Procs<'a> {
    /// The processes, in order, once every verdict is made.
    fn into_inner(self) -> Vec<Proc<'a>> {
        self.v
    }
}

impl<'a> std::ops::Deref for Procs<'a> {
    type Target = [Proc<'a>];
    fn deref(&self) -> &[Proc<'a>] {
        &self.v
    }
}

/// Where a per-host fact came from when the rank's own process does not show it: the first
/// process of its host (in order of appearance) that does. `want` names the fact (`f` must give
/// the same answer for the same `want`): the answer is remembered per host.
fn from_host<'p, T>(
    procs: &'p Procs<'_>,
    me: usize,
    want: &str,
    f: impl Fn(&'p Proc) -> Option<T>,
) -> Option<(T, Option<u32>)> {
    if let Some(v) = f(&procs[me]) {
        return Some((v, None));
    }
    let host = &procs[me].host;
    let key = (host.clone(), want.to_string());
    let cached = procs.first.borrow().get(&key).copied();
    let at = match cached {
        Some(at) => at,
        None => {
            // `me` has none, so the host's first process with one is never `me`.
            let at = procs
                .by_host
                .get(host)
                .and_then(|l| l.iter().copied().find(|&i| f(&procs[i]).is_some()));
            procs.first.borrow_mut().insert(key, at);
            at
        }
    };
    let p = &procs[at?];
    f(p).map(|v| (v, Some(p.pid)))
}

/// The devices a process's headers name, by device, each with its first line: a sorted vector
/// (a process names one or a few; a `BTreeMap` took a node of 11 slots for each of 10^6
/// processes, issue 53).
#[derive(Default)]
struct DevLines(Vec<(i64, usize)>);

impl DevLines {
    /// Records `line` for `dev` unless an earlier line named it.
    fn first(&mut self, dev: i64, line: usize) {
        if let Err(at) = self.0.binary_search_by_key(&dev, |&(d, _)| d) {
            self.0.insert(at, (dev, line));
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// (device, first line), by device.
    fn iter(&self) -> std::slice::Iter<'_, (i64, usize)> {
        self.0.iter()
    }
}

/// The lines that show a subject, in order, each once: a sorted vector (a subject has a few;
/// a `BTreeSet` took a node of 11 slots for each of 10^6 ranks, issue 53).
#[derive(Default)]
struct LineSet(Vec<usize>);

impl LineSet {
    /// Adds `line` unless it is there.
    fn insert(&mut self, line: usize) {
        if let Err(at) = self.0.binary_search(&line) {
            self.0.insert(at, line);
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn iter(&self) -> std::slice::Iter<'_, usize> {
        self.0.iter()
    }
}

/// A rank or GPU being judged.
#[derive(Default)]
struct Subject {
    host: String,
    proc_idx: Option<usize>,
    pid: Option<u32>,
    rank: Option<u32>,
    nranks: Option<u32>,
    nnodes: Option<u32>,
    local_rank: Option<u32>,
    bus_id: Option<u64>,
    bus: Option<u8>,
    cuda_dev: Option<i64>,
    nvml_dev: Option<u32>,
    lines: LineSet,
    /// The log says its job ran on one host ([`scope`]).
    one_host: Option<scope::OneHost>,
}

/// The subjects of one input, indexed by (host, rank) and (host, busId): lookups stay cheap on
/// logs of thousands of ranks.
#[derive(Default)]
struct Subjects {
    v: Vec<Subject>,
    by_rank: HashMap<(String, u32), Vec<usize>>,
    by_bus: HashMap<(String, u64), usize>,
}

impl Subjects {
    /// The subject of `rank` on `host` (same pid, or a pid not known on one side), created
    /// when new.
    fn rank(&mut self, host: &str, pid: Option<u32>, rank: u32) -> usize {
        let key = (host.to_string(), rank);
        if let Some(c) = self.by_rank.get(&key) {
            for &i in c {
                let s = &self.v[i];
                if pid.is_none() || s.pid.is_none() || pid == s.pid {
                    return i;
                }
            }
        }
        self.v.push(Subject {
            host: host.to_string(),
            pid,
            rank: Some(rank),
            ..Default::default()
        });
        let i = self.v.len() - 1;
        self.by_rank.entry(key).or_default().push(i);
        i
    }

    /// The subject of the GPU with `bus` on `host` (first one with it), created when new; a GPU
    /// of unknown bus is always a new subject.
    fn bus(&mut self, host: &str, bus: Option<u64>) -> usize {
        if let Some(b) = bus
            && let Some(&i) = self.by_bus.get(&(host.to_string(), b))
        {
            return i;
        }
        self.v.push(Subject {
            host: host.to_string(),
            bus_id: bus,
            ..Default::default()
        });
        let i = self.v.len() - 1;
        if let Some(b) = bus {
            self.by_bus.insert((host.to_string(), b), i);
        }
        i
    }

    /// The subject of the GPU a process drives as CUDA device `cuda` (NVML device `nvml`), as
    /// the 2.3–2.4 lines name it: a subject of that process with the same device, else a new one.
    fn device(&mut self, host: &str, pid: u32, cuda: Option<i64>, nvml: Option<u32>) -> usize {
        if let Some(i) = self.v.iter().position(|s| {
            s.host == host
                && s.pid.is_none_or(|p| p == pid)
                && ((nvml.is_some() && s.nvml_dev == nvml)
                    || (nvml.is_none() && cuda.is_some() && s.cuda_dev == cuda))
        }) {
            return i;
        }
        self.v.push(Subject {
            host: host.to_string(),
            pid: Some(pid),
            cuda_dev: cuda,
            nvml_dev: nvml,
            ..Default::default()
        });
        self.v.len() - 1
    }

    /// Sets a subject's busId and indexes it (a busId already taken keeps its first subject).
    fn set_bus(&mut self, i: usize, b: u64) {
        self.v[i].bus_id = Some(b);
        self.by_bus.entry((self.v[i].host.clone(), b)).or_insert(i);
    }

    /// Indexes the busIds set so far.
    fn index_buses(&mut self) {
        for (i, s) in self.v.iter().enumerate() {
            if let Some(b) = s.bus_id {
                self.by_bus.entry((s.host.clone(), b)).or_insert(i);
            }
        }
    }
}

/// The per-input results of [`judge`].
pub struct InputRanks {
    /// Verdicts.
    pub ranks: Vec<RankVerdict>,
    /// Processes.
    pub processes: Vec<ProcessSummary>,
    /// Completion errors.
    pub errors: Vec<CompletionSummary>,
    /// What the input could not show.
    pub notes: Vec<String>,
}

/// The name of an `ibv_wc_status` (verbs.h) and what the NCCL issues say it usually means.
fn wc_status(status: Option<u32>, vendor: Option<u32>) -> (String, String) {
    let name = match status {
        Some(1) => "IBV_WC_LOC_LEN_ERR",
        Some(2) => "IBV_WC_LOC_QP_OP_ERR",
        Some(4) => "IBV_WC_LOC_PROT_ERR",
        Some(5) => "IBV_WC_WR_FLUSH_ERR",
        Some(10) => "IBV_WC_REM_ACCESS_ERR",
        Some(12) => "IBV_WC_RETRY_EXC_ERR",
        Some(13) => "IBV_WC_RNR_RETRY_EXC_ERR",
        Some(_) => "ibv_wc_status",
        None => "unknown status",
    };
    let meaning = match (status, vendor) {
        (Some(4), Some(81)) => "local protection error, vendor err 0x51: the ACS signature (NVIDIA/nccl#707) — peer-to-peer requests redirected to the root complex; check ACS on the switch ports between GPU and NIC and the IOMMU".to_string(),
        (Some(4), _) => "local protection error: a registration the HCA cannot use (ACS/IOMMU redirect, or peer memory not registered)".to_string(),
        (Some(5), _) => "work request flushed: the queue pair went to error state after an earlier failure (often on the peer); look for the first error".to_string(),
        (Some(12), _) => "transport retry counter exceeded: the peer did not answer (link, switch, or the peer's PCIe path)".to_string(),
        (Some(10), _) => "remote access error: the peer's registration was refused".to_string(),
        _ => "a failed RDMA work request".to_string(),
    };
    (name.to_string(), meaning)
}

/// The subject of `rank`, named by a line process `pi` printed about its own rank; the
/// bracket printed with it (busId 2.5–2.18.1, nvmlDev 2.18.3+) and the header's device fill in
/// its GPU.
fn own_rank(
    subj: &mut Subjects,
    pi: usize,
    p: &Proc,
    e: &Entry,
    rank: u32,
    bracket: &str,
) -> usize {
    let bus_form = bracket_is_bus_id(bracket)
        .filter(|_| p.version.hi <= (18, 1) || p.version.source == version::VersionSource::Unknown);
    let i = subj.rank(&p.host, Some(p.pid), rank);
    let s = &mut subj.v[i];
    s.proc_idx = Some(pi);
    s.pid = Some(p.pid);
    match bus_form {
        Some(true) => s.bus_id = s.bus_id.or(hex(bracket)),
        Some(false) if p.version.lo >= (18, 3) => s.nvml_dev = s.nvml_dev.or(bracket.parse().ok()),
        _ => {}
    }
    if let Some(h) = e.header.as_ref().filter(|h| h.cuda_dev >= 0) {
        s.cuda_dev = s.cuda_dev.or(Some(h.cuda_dev));
    }
    if s.lines.len() < 6 {
        s.lines.insert(e.line);
    }
    i
}

/// Sorts `v` as `sort_by` does (stably), moving the elements in place: the order is found on
/// indices and applied by following its cycles, where `sort_by` would take a buffer of half the
/// elements (150 MB of verdicts at 10^6 ranks, issue 53).
fn sort_in_place<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> std::cmp::Ordering) {
    // order[i]: the index of the element that belongs at i.
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| cmp(&v[a], &v[b]));
    for start in 0..v.len() {
        let mut at = start;
        while order[at] != at {
            let from = order[at];
            order[at] = at;
            if from == start {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

/// Judges every rank of one input, phase by phase: who printed what ([`gather`]: processes,
/// then the subjects each line form names), then each subject's verdict ([`verdict`]), then the
/// input's completion errors, processes and notes.
pub fn judge(source: &str, job: &JobOutput) -> InputRanks {
    let log = &job.nccl;
    let mut procs = gather::processes(log);
    gather::versions_and_env(&mut procs, job);
    let mut subj = Subjects::default();
    gather::comm_ranks(&mut subj, &procs);
    let conns = gather::channel_ranks(&mut subj, &procs);
    gather::own_rank_lines(&mut subj, &procs);
    gather::tests_devices(&mut subj, job);
    scope::every_rank_on_one_host(&mut subj.v);
    subj.index_buses();
    let gpu_lines = gather::gpu_gdr_lines(&mut subj, &procs);
    gather::nic_distance_devices(&mut subj, &procs);
    let procs = Procs::new(procs);
    // Each entry's line to its process: a look-up in the loops over subjects below, never a
    // pass over every process per subject.
    let mut proc_of_line: HashMap<usize, usize> = HashMap::new();
    for (pi, p) in procs.iter().enumerate() {
        for e in &p.entries {
            proc_of_line.entry(e.line).or_insert(pi);
        }
    }
    // NCCL's path print rerouting a GPU–NIC pair that shares a switch.
    let rerouted = rerouted_pairs(&procs);
    for r in &rerouted {
        let i = subj.bus(&r.host, Some(r.gpu));
        subj.v[i].lines.insert(r.line);
    }
    let mut covered: BTreeSet<usize> = subj.v.iter().filter_map(|s| s.proc_idx).collect();
    covered.extend(gpu_lines.iter().map(|g| g.3));
    covered.extend(
        rerouted
            .iter()
            .filter_map(|r| verdict::proc_at(&procs, &proc_of_line, &r.host, r.line)),
    );
    gather::device_subjects(&mut subj, &procs, &covered);
    // The subjects' indexes and the covered processes are not needed for the verdicts: freed
    // before them, not held to the end (10^6 host names and vectors, issue 53).
    drop(covered);
    let subjects = std::mem::take(&mut subj.v);
    drop(subj);
    let ctx = verdict::Context::new(
        source,
        &procs,
        subjects.len(),
        &conns,
        &gpu_lines,
        &rerouted,
        &proc_of_line,
    );
    let mut ranks: Vec<RankVerdict> = subjects
        .iter()
        .enumerate()
        .map(|(si, s)| ctx.rank(si, s))
        .collect();
    sort_in_place(&mut ranks, |a, b| {
        (
            a.host.as_str(),
            a.rank.is_none(),
            a.rank,
            a.gpu.bdf.as_deref(),
        )
            .cmp(&(
                b.host.as_str(),
                b.rank.is_none(),
                b.rank,
                b.gpu.bdf.as_deref(),
            ))
    });
    drop(ctx);
    let errors = completion_errors(source, log);
    let notes = notes(source, job, &procs);
    InputRanks {
        ranks,
        // Each process's host and release moved into its summary, not copied (issue 53).
        processes: procs
            .into_inner()
            .into_iter()
            .map(process_summary)
            .collect(),
        errors,
        notes,
    }
}

/// Completion errors, one per (status, vendor error), with their hosts and first line.
fn completion_errors(
    source: &str,
    log: &crate::parse::nccl_log::NcclLog,
) -> Vec<CompletionSummary> {
    let mut errors: Vec<CompletionSummary> = Vec::new();
    for e in &log.entries {
        let Record::Completion(c) = &e.record else {
            continue;
        };
        let host = e.header.as_ref().map_or(String::new(), |h| h.host.clone());
        match errors
            .iter_mut()
            .find(|x| x.status == c.status && x.vendor_err == c.vendor_err)
        {
            Some(x) => {
                x.count += 1;
                if !x.hosts.contains(&host) {
                    x.hosts.push(host);
                }
            }
            None => {
                let (status_name, meaning) = wc_status(c.status, c.vendor_err);
                errors.push(CompletionSummary {
                    source: source.to_string(),
                    status: c.status,
                    status_name,
                    vendor_err: c.vendor_err,
                    count: 1,
                    hosts: vec![host],
                    line: e.line,
                    meaning,
                });
            }
        }
    }
    errors
}

/// What one process showed: its release, network, OFI provider, IB devices, NICs, environment.
fn process_summary(p: Proc) -> ProcessSummary {
    let network = p.network().map(str::to_string);
    let ofi_provider = p.records().rev().find_map(|(e, r)| match r {
        Record::OfiProvider {
            provider,
            fabric,
            nics,
        } => {
            let mut s = provider.clone();
            if let Some(f) = fabric {
                s.push_str(&format!(", fabric {f}"));
            }
            if let Some(n) = nics {
                s.push_str(&format!(", {n} NIC(s)"));
            }
            Some(format!("{s} (line {})", e.line))
        }
        _ => None,
    });
    let ib_devices = p.records().find_map(|(e, r)| match r {
        Record::IbDevices { count } => Some((*count, e.line)),
        _ => None,
    });
    let nics = p
        .nic_list()
        .map(|(l, _)| l.nics.iter().map(nic_text).collect())
        .unwrap_or_default();
    let env = p
        .env
        .iter()
        .map(|(k, (v, w))| (k.clone(), v.clone(), w.clone()))
        .collect();
    ProcessSummary {
        pid: p.pid,
        headerless: p.pid == 0 && p.host.is_empty(),
        network,
        ofi_provider,
        ib_devices,
        nics,
        env,
        host: p.host,
        version: p.version,
    }
}

/// What the input could not show: each process's HCA notes, NET lines without a header, lines
/// Ray folded, gap markers.
fn notes(source: &str, job: &JobOutput, procs: &Procs) -> Vec<String> {
    let log = &job.nccl;
    let mut notes = Vec::new();
    for p in procs.iter() {
        notes.extend(ib_hca_note(source, p));
    }
    if !log.unattributed.is_empty() {
        let first: Vec<String> = log
            .unattributed
            .iter()
            .take(5)
            .map(usize::to_string)
            .collect();
        notes.push(format!(
            "{source}: {} NET connection line(s) without `host:pid:tid` among lines that have one (lines {}{}): a copy dropped or wrapped away their header, nothing ties them to a process, so they are not judged",
            log.unattributed.len(),
            first.join(", "),
            if log.unattributed.len() > 5 { ", …" } else { "" }
        ));
    }
    if !job.ray_folded.is_empty() {
        notes.push(ray_folded_note(source, &job.ray_folded));
    }
    if !log.gaps.is_empty() {
        notes.push(format!(
            "{source}: {} gap marker(s) — text is missing from this copy; lines before a gap may be cut, and ranks that only appear in the missing text are not shown",
            log.gaps.len()
        ));
    }
    notes
}

#[cfg(test)]
mod sort_tests {
    /// `sort_in_place` leaves the elements in `sort_by`'s order, equal keys in input order
    /// (each element tagged with its input position to tell equal keys apart).
    #[test]
    fn sort_in_place_is_sort_by() {
        for n in [0usize, 1, 2, 3, 7, 100, 1_000] {
            let v: Vec<(u64, usize)> = (0..n).map(|i| ((i as u64 * 7919) % 13, i)).collect();
            let mut want = v.clone();
            want.sort_by_key(|a| a.0);
            let mut got = v;
            crate::analysis::evidence::ranks::sort_in_place(&mut got, |a, b| a.0.cmp(&b.0));
            assert_eq!(got, want, "n = {n}");
        }
    }
}
