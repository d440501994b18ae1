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
mod scope;
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
    devs: BTreeMap<i64, usize>,
    version: VersionInfo,
    env: BTreeMap<String, (String, String)>,
}

impl Proc<'_> {
    fn first_line(&self) -> usize {
        self.entries
            .first()
            .map(|e| e.line)
            .or_else(|| self.devs.values().min().copied())
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
    lines: BTreeSet<usize>,
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

/// Judges every rank of one input.
pub fn judge(source: &str, job: &JobOutput) -> InputRanks {
    let log = &job.nccl;
    // Processes in order of first appearance.
    let mut procs: Vec<Proc> = Vec::new();
    let mut index: BTreeMap<(String, u32), usize> = BTreeMap::new();
    let mut proc_of = |h: &Header, line: usize| {
        let i = *index.entry((h.host.clone(), h.pid)).or_insert_with(|| {
            procs.push(Proc {
                host: h.host.clone(),
                pid: h.pid,
                entries: Vec::new(),
                devs: BTreeMap::new(),
                version: version::infer(None, &[]),
                env: BTreeMap::new(),
            });
            procs.len() - 1
        });
        if !h.headerless {
            procs[i].devs.entry(h.cuda_dev).or_insert(line);
        }
        i
    };
    let mut owned: Vec<(usize, &Entry)> = Vec::new();
    for e in &log.entries {
        let Some(h) = &e.header else { continue };
        owned.push((proc_of(h, e.line), e));
    }
    // Lines of forms not read still show a process ran NCCL on that device.
    for u in &log.unread {
        proc_of(&u.header, u.line);
    }
    for (i, e) in owned {
        procs[i].entries.push(e);
    }
    // Banners (no header): all equal → every process; else the nearest one before each.
    let banners: Vec<(usize, (u32, u32, u32))> = log
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Version(v) if e.header.is_none() => Some((e.line, v.number)),
            _ => None,
        })
        .collect();
    // nccl-tests 2.14+ names the library it ran with: a banner when NCCL printed none.
    let library = job.tests.runs.iter().find_map(|r| r.nccl_library);
    let all_same = banners.windows(2).all(|w| w[0].1 == w[1].1);
    for p in &mut procs {
        let banner = if all_same {
            banners.first().map(|b| b.1)
        } else {
            banners
                .iter()
                .rfind(|b| b.0 <= p.first_line())
                .or(banners.first())
                .map(|b| b.1)
        };
        let mut v = version::infer(p.own_version().or(banner).or(library), &p.entries);
        // Environment: echoed by NCCL, else the command line of the run.
        for e in &p.entries {
            if let Record::Env { name, value } = &e.record {
                p.env.insert(
                    name.clone(),
                    (value.clone(), format!("echoed by NCCL, line {}", e.line)),
                );
            }
        }
        if let Some(cmd) = log.commands.iter().rfind(|c| c.line < p.first_line()) {
            for (k, val) in &cmd.env {
                p.env
                    .entry(k.clone())
                    .or_insert_with(|| (val.clone(), format!("command line, line {}", cmd.line)));
            }
        }
        // An echoed GDR level name and the level code of a GDR line narrow the range.
        if v.source == version::VersionSource::LineForms
            && let Some((val, _)) = p.env.get("NCCL_NET_GDR_LEVEL")
            && let Some(name) = NcclPath::from_name(val)
            && let Some(level) = p.entries.iter().find_map(|e| match &e.record {
                Record::GpuGdr(g) => g.level,
                _ => None,
            })
        {
            let (lo, hi) = version::narrow_by_level(v.lo, v.hi, name, level);
            if (lo, hi) != (v.lo, v.hi) {
                v.lo = lo;
                v.hi = hi;
                v.text = version::range_text(lo, hi);
                v.forms.push(format!(
                    "NCCL_NET_GDR_LEVEL={val} compared as level {level} (numbering of {})",
                    v.text
                ));
            }
        }
        p.version = v;
    }

    let mut subj = Subjects::default();
    // Comm lines: rank, busId, devices; the shape line by comm pointer.
    let mut comm_rank: BTreeMap<(usize, String), usize> = BTreeMap::new();
    for (pi, p) in procs.iter().enumerate() {
        for e in &p.entries {
            let Record::Comm(c) = &e.record else { continue };
            let Comm {
                rank: Some(rank), ..
            } = c
            else {
                continue;
            };
            let bus_id = c.bus_id.as_deref().and_then(hex);
            let i = subj.rank(&p.host, Some(p.pid), *rank);
            let s = &mut subj.v[i];
            s.proc_idx = Some(pi);
            s.pid = Some(p.pid);
            s.nranks = c.nranks.or(s.nranks);
            s.nnodes = c.nnodes.or(s.nnodes);
            s.local_rank = c.local_rank.or(s.local_rank);
            s.bus_id = bus_id.or(s.bus_id);
            s.cuda_dev = c.cuda_dev.map(i64::from).or(s.cuda_dev);
            s.nvml_dev = c.nvml_dev.or(s.nvml_dev);
            s.lines.insert(e.line);
            if s.one_host.is_none() {
                s.one_host = scope::from_comm(c, e.line);
            }
            comm_rank.insert((pi, c.comm.clone()), i);
        }
    }
    // Channel lines: the local rank of each NET connection.
    let mut conns: Vec<(usize, &NetChannel, &Entry)> = Vec::new();
    for (pi, p) in procs.iter().enumerate() {
        for e in &p.entries {
            let Record::NetChannel(c) = &e.record else {
                continue;
            };
            let (rank, bracket) = if c.send {
                (c.from_rank, &c.from_bracket)
            } else {
                (c.to_rank, &c.to_bracket)
            };
            let i = own_rank(&mut subj, pi, p, e, rank, bracket);
            conns.push((i, c, e));
        }
    }
    // Lines that name the printing process's own rank: connections within the node (printed by
    // the sender), `rank %d nranks %d` (2.3), `Init timings … rank %d nranks %d` (2.22+).
    for (pi, p) in procs.iter().enumerate() {
        for e in &p.entries {
            match &e.record {
                Record::PeerChannel(c) => {
                    own_rank(&mut subj, pi, p, e, c.from_rank, &c.from_bracket);
                }
                Record::RankOf { rank, nranks } => {
                    let i = own_rank(&mut subj, pi, p, e, *rank, "");
                    subj.v[i].nranks = subj.v[i].nranks.or(*nranks);
                }
                Record::Trees {
                    rank,
                    nranks,
                    bus_id,
                } => {
                    let i = own_rank(&mut subj, pi, p, e, *rank, "");
                    let s = &mut subj.v[i];
                    s.nranks = s.nranks.or(*nranks);
                    s.bus_id = s.bus_id.or(bus_id.as_deref().and_then(hex));
                }
                _ => {}
            }
        }
    }
    // nccl-tests devices.
    for run in &job.tests.runs {
        let alone = scope::from_tests(run, !job.nccl.gaps.is_empty());
        for d in &run.devices {
            let i = subj.rank(&d.host, d.pid, d.rank);
            let s = &mut subj.v[i];
            if s.one_host.is_none() {
                s.one_host = alone.clone();
            }
            s.pid = s.pid.or(d.pid);
            s.cuda_dev = s.cuda_dev.or(Some(i64::from(d.device)));
            if let Some(b) = d.bus.strip_prefix("0x") {
                s.bus = u8::from_str_radix(b, 16).ok();
            } else if let Ok(bdf) = format!("{}.0", d.bus).parse::<Bdf>() {
                s.bus_id = s.bus_id.or(Some(
                    (u64::from(bdf.domain) << 20)
                        | (u64::from(bdf.bus) << 12)
                        | (u64::from(bdf.device) << 4),
                ));
            }
            s.lines.insert(run.line);
        }
    }
    scope::every_rank_on_one_host(&mut subj.v);
    subj.index_buses();
    // Per-GPU GDR lines: about a GPU (busId) or a rank (2.24–2.25), from any process of a host.
    let mut gpu_lines: Vec<(usize, &GpuGdr, &Entry, usize)> = Vec::new();
    for (pi, p) in procs.iter().enumerate() {
        for e in &p.entries {
            let Record::GpuGdr(g) = &e.record else {
                continue;
            };
            let gpu_is_rank = matches!(g.form, GpuGdrForm::Mode)
                || (g.form == GpuGdrForm::Classic && bracket_is_bus_id(&g.gpu) == Some(false));
            let i = match (g.form, gpu_is_rank) {
                (GpuGdrForm::Net24, _) => {
                    let (cuda, nvml) = match g.gpu.split_once('[') {
                        Some((c, n)) => (c.parse().ok(), n.trim_end_matches(']').parse().ok()),
                        None => (g.gpu.parse().ok(), None),
                    };
                    subj.device(&p.host, p.pid, cuda, nvml)
                }
                (GpuGdrForm::Ids, _) => {
                    let bus = hex(&g.gpu);
                    let i = match g.rank {
                        Some(k) => subj.rank(&p.host, Some(p.pid), k),
                        None => subj.bus(&p.host, bus),
                    };
                    if let Some(b) = bus
                        && subj.v[i].bus_id.is_none()
                    {
                        subj.set_bus(i, b);
                    }
                    i
                }
                (_, true) => match g.gpu.parse() {
                    Ok(k) => subj.rank(&p.host, Some(p.pid), k),
                    Err(_) => subj.bus(&p.host, None),
                },
                _ => subj.bus(&p.host, hex(&g.gpu)),
            };
            if subj.v[i].lines.len() < 6 {
                subj.v[i].lines.insert(e.line);
            }
            gpu_lines.push((i, g, e, pi));
        }
    }
    // 2.4's `CUDA Dev d[n], NET NIC distance`: the GPUs a process drives.
    for p in &procs {
        for e in &p.entries {
            if let Record::NicDistance(d) = &e.record {
                let i = subj.device(
                    &p.host,
                    p.pid,
                    Some(i64::from(d.cuda_dev)),
                    Some(d.nvml_dev),
                );
                if subj.v[i].lines.len() < 6 {
                    subj.v[i].lines.insert(e.line);
                }
            }
        }
    }
    let procs = Procs::new(procs);
    // Each entry's line to its process, and (host, pid) to the first process: look-ups in the
    // loops over subjects below, never a pass over every process per subject.
    let mut proc_of_line: HashMap<usize, usize> = HashMap::new();
    let mut proc_of_pid: HashMap<(&str, u32), usize> = HashMap::new();
    for (pi, p) in procs.iter().enumerate() {
        for e in &p.entries {
            proc_of_line.entry(e.line).or_insert(pi);
        }
        proc_of_pid.entry((p.host.as_str(), p.pid)).or_insert(pi);
    }
    let proc_at = |host: &str, line: usize| {
        proc_of_line
            .get(&line)
            .copied()
            .filter(|&pi| procs[pi].host == host)
    };
    // NCCL's path print rerouting a GPU–NIC pair that shares a switch.
    let rerouted = rerouted_pairs(&procs);
    for r in &rerouted {
        let i = subj.bus(&r.host, Some(r.gpu));
        subj.v[i].lines.insert(r.line);
    }
    // A process no line above ties to a rank or GPU still ran NCCL: one subject per device its
    // header names, judged on what the process printed (its network, its plugin), else unknown.
    let mut covered: BTreeSet<usize> = subj.v.iter().filter_map(|s| s.proc_idx).collect();
    covered.extend(gpu_lines.iter().map(|g| g.3));
    covered.extend(rerouted.iter().filter_map(|r| proc_at(&r.host, r.line)));
    let mut with_pid: HashSet<(String, u32)> = subj
        .v
        .iter()
        .filter_map(|s| Some((s.host.clone(), s.pid?)))
        .collect();
    // A process driving several GPUs (one thread each) whose lines name the rank of some of
    // them only: its other GPUs are subjects of their own too.
    for (pi, p) in procs.iter().enumerate() {
        if p.devs.len() < 2 || !covered.contains(&pi) {
            continue;
        }
        let named: BTreeSet<i64> = subj
            .v
            .iter()
            .filter(|s| s.host == p.host && s.pid == Some(p.pid))
            .filter_map(|s| s.cuda_dev)
            .collect();
        for (&d, &line) in p.devs.iter().filter(|(d, _)| !named.contains(d)) {
            let i = subj.device(&p.host, p.pid, Some(d), None);
            subj.v[i].proc_idx = Some(pi);
            subj.v[i].lines.insert(line);
        }
    }
    for (pi, p) in procs.iter().enumerate() {
        if covered.contains(&pi) || with_pid.contains(&(p.host.clone(), p.pid)) {
            continue;
        }
        if !p.devs.is_empty() {
            with_pid.insert((p.host.clone(), p.pid));
        }
        for (&d, &line) in &p.devs {
            let i = subj.device(&p.host, p.pid, Some(d), None);
            subj.v[i].proc_idx = Some(pi);
            subj.v[i].lines.insert(line);
        }
    }
    let subjects = subj.v;
    // Each subject's connections and GDR lines, grouped once.
    let mut conns_of: Vec<Vec<usize>> = vec![Vec::new(); subjects.len()];
    for (k, c) in conns.iter().enumerate() {
        conns_of[c.0].push(k);
    }
    let mut gpu_of: Vec<Vec<usize>> = vec![Vec::new(); subjects.len()];
    for (k, g) in gpu_lines.iter().enumerate() {
        gpu_of[g.0].push(k);
    }

    let mut rerouted_of: HashMap<(&str, u64), Vec<&Rerouted>> = HashMap::new();
    for r in &rerouted {
        rerouted_of
            .entry((r.host.as_str(), r.gpu))
            .or_default()
            .push(r);
    }
    let mut ranks = Vec::new();
    for (si, s) in subjects.iter().enumerate() {
        let me = s.proc_idx.or_else(|| {
            s.pid
                .and_then(|pid| proc_of_pid.get(&(s.host.as_str(), pid)).copied())
        });
        let my_conns: Vec<&(usize, &NetChannel, &Entry)> =
            conns_of[si].iter().map(|&k| &conns[k]).collect();
        let my_gpu: Vec<&(usize, &GpuGdr, &Entry, usize)> =
            gpu_of[si].iter().map(|&k| &gpu_lines[k]).collect();
        let my_reroute: Vec<&Rerouted> = s
            .bus_id
            .and_then(|b| rerouted_of.get(&(s.host.as_str(), b)))
            .cloned()
            .unwrap_or_default();
        let reroute_proc = my_reroute.first().and_then(|r| proc_at(&r.host, r.line));
        let version = me
            .or_else(|| my_gpu.first().map(|g| g.3))
            .or(reroute_proc)
            .map(|m| procs[m].version.clone());
        let vtext = version
            .as_ref()
            .map_or("unknown".to_string(), |v| v.text.clone());
        let (lo, hi) = version.as_ref().map_or(version::ANY, |v| (v.lo, v.hi));
        let env_of = |k: &str| -> Option<(String, String)> {
            let pi = me.or_else(|| my_gpu.first().map(|g| g.3))?;
            from_host(&procs, pi, &format!("env {k}"), |p| p.env.get(k).cloned()).map(|(v, _)| v)
        };
        // NICs used.
        let mut nics: BTreeMap<(Option<String>, u32), NicUse> = BTreeMap::new();
        for (_, c, _) in &my_conns {
            let Some(dev) = c.dev else { continue };
            let n = nics.entry((c.net.clone(), dev)).or_insert_with(|| NicUse {
                index: dev,
                name: None,
                virtual_nic: false,
                net: c.net.clone(),
                connections: 0,
                gdr: [0; 3],
                note: None,
            });
            n.connections += 1;
            match c.gdr {
                Some(true) => n.gdr[0] += 1,
                Some(false) => n.gdr[1] += 1,
                None => n.gdr[2] += 1,
            }
        }
        let mut nics: Vec<NicUse> = nics.into_values().collect();
        if let Some(m) = me {
            for n in &mut nics {
                name_nic(&procs, m, n, hi);
            }
        }
        let cut = my_conns.iter().filter(|c| c.1.gdr.is_none()).count();
        let with = my_conns.iter().filter(|c| c.1.gdr == Some(true)).count();
        let without = my_conns.iter().filter(|c| c.1.gdr == Some(false)).count();
        let socket = my_conns
            .iter()
            .any(|c| c.1.net.as_deref() == Some("Socket"));
        let rings: Option<(u32, usize)> = me.and_then(|m| {
            procs[m].records().rev().find_map(|(e, r)| match r {
                Record::RingsConnected { gdr: Some(g), .. } => Some((*g, e.line)),
                _ => None,
            })
        });
        let socket_net = me.and_then(|m| procs[m].socket_network());
        let plugin_off = me.and_then(|m| procs[m].plugin_gdr_off());
        let all_disabled = me.and_then(|m| all_nics_disabled(&procs, m));
        let own_ring_flag = ["NCCL_LOCAL_REGISTER", "NCCL_GRAPH_REGISTER"]
            .iter()
            .all(|k| env_of(k).is_some_and(|(v, _)| v.trim() == "0"));
        let (gdr, basis) = if socket {
            (
                Gdr::Off,
                format!("{} NET connection(s) over NET/Socket", my_conns.len()),
            )
        } else if with > 0 && without == 0 {
            (
                Gdr::Used,
                format!(
                    "{with} NET connection(s) with /GDRDMA{}",
                    if cut > 0 {
                        format!(" ({cut} more cut short)")
                    } else {
                        String::new()
                    }
                ),
            )
        } else if without > 0 {
            let mixed = if with > 0 {
                format!(", {with} with")
            } else {
                String::new()
            };
            (
                Gdr::Off,
                format!("{without} NET connection(s) without /GDRDMA on complete lines{mixed}"),
            )
        } else if cut > 0 {
            (
                Gdr::Unknown,
                format!("{cut} NET connection line(s), each cut before /GDRDMA could show"),
            )
        } else if !my_reroute.is_empty() {
            (
                Gdr::Off,
                "NCCL's path print routes this GPU's NIC traffic through the CPU".to_string(),
            )
        } else if !my_gpu.is_empty() {
            let en = my_gpu.iter().filter(|g| g.1.enabled).count();
            let dis = my_gpu.len() - en;
            if dis == 0 {
                (
                    Gdr::Used,
                    format!(
                        "NCCL's per-GPU GDR check said Enabled ({en} line(s)); no channel line shows the connection"
                    ),
                )
            } else if en == 0 {
                (
                    Gdr::Off,
                    format!("NCCL's per-GPU GDR check said Disabled ({dis} line(s))"),
                )
            } else {
                (
                    Gdr::Off,
                    format!(
                        "NCCL's per-GPU GDR check said Disabled for some NICs ({dis}) and Enabled for others ({en})"
                    ),
                )
            }
        } else if let Some(one) = &s.one_host {
            // No NET connection of its own on a one-host job: whatever network NCCL loaded,
            // none carried this rank's traffic when its connections show none.
            let local = me.and_then(|m| scope::connected_locally(&procs[m]));
            match (one.single_rank, local) {
                (true, _) => (
                    Gdr::NotApplicable,
                    format!("{}: no peer, so no network traffic", one.why),
                ),
                (false, Some(line)) => (
                    Gdr::NotApplicable,
                    format!(
                        "{}; its connections were set up without the network (line {line}), no NET connection",
                        one.why
                    ),
                ),
                (false, None) => (
                    Gdr::Unknown,
                    format!(
                        "{}, but the log shows none of its connections: GDR applies only if NCCL was made to use the network within the host",
                        one.why
                    ),
                ),
            }
        } else if let Some((line, why)) = &socket_net {
            (
                Gdr::Off,
                format!("the process uses NCCL's Socket network: {why} (line {line})"),
            )
        } else if let Some((line, text)) = plugin_off {
            (
                Gdr::Off,
                format!("the net plugin turned GDR off: `NET/OFI {text}` (line {line})"),
            )
        } else if let Some(d) = &all_disabled {
            (
                Gdr::Off,
                format!(
                    "NCCL's per-NIC check said Disabled for every NIC of the process ({}; lines {})",
                    d.0.join(", "),
                    d.1.iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        } else if let Some((1, line)) = rings.filter(|_| s.nnodes.is_some_and(|n| n > 1)) {
            (
                Gdr::Used,
                format!(
                    "ring summary `GDR 1` (line {line}) on {} nodes: every rank's ring NET connections use GDR",
                    s.nnodes.unwrap_or(0)
                ),
            )
        } else if let Some((0, line)) = rings.filter(|_| own_ring_flag) {
            (
                Gdr::Off,
                format!(
                    "ring summary `GDR 0` (line {line}) with NCCL_LOCAL_REGISTER=0 and NCCL_GRAPH_REGISTER=0: this rank's own ring NET connections are without GDR"
                ),
            )
        } else if let Some((0, line)) = rings {
            (
                Gdr::Unknown,
                format!(
                    "no NET connection or GDR line of its own; the ring summary `GDR 0` (line {line}) says some rank of the communicator has a ring NET connection without GDR — NCCL ≥ 2.24 combines every rank's flag, so not necessarily this one"
                ),
            )
        } else {
            (
                Gdr::Unknown,
                "the log shows no NET connection and no GDR line for it".to_string(),
            )
        };
        let cause = (gdr == Gdr::Off).then(|| {
            off_cause(
                &procs,
                me,
                s,
                &my_conns,
                &my_gpu,
                &my_reroute,
                socket || socket_net.is_some(),
                socket_net.as_ref(),
                plugin_off,
                rings,
                lo,
                hi,
                &env_of,
            )
        });
        ranks.push(RankVerdict {
            source: source.to_string(),
            host: s.host.clone(),
            // Lines quoted without `host:pid:tid` are read as one group with pid 0, which no
            // process has: not shown.
            pid: s.pid.filter(|&p| p != 0 || !s.host.is_empty()),
            rank: s.rank,
            nranks: s.nranks,
            nnodes: s.nnodes,
            local_rank: s.local_rank,
            gpu: GpuIdent {
                bdf: s.bus_id.and_then(bdf_of_bus_id).map(|b| b.to_string()),
                bus: s.bus,
                cuda_dev: s.cuda_dev,
                nvml_dev: s.nvml_dev,
            },
            version: vtext,
            gdr,
            basis,
            cause,
            nics,
            lines: s.lines.iter().copied().take(6).collect(),
            topology: None,
        });
    }
    ranks.sort_by(|a, b| {
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

    // Completion errors.
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

    let processes = procs
        .iter()
        .map(|p| ProcessSummary {
            host: p.host.clone(),
            pid: p.pid,
            headerless: p.pid == 0 && p.host.is_empty(),
            version: p.version.clone(),
            network: p.network().map(str::to_string),
            ofi_provider: p.records().rev().find_map(|(e, r)| match r {
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
            }),
            ib_devices: p.records().find_map(|(e, r)| match r {
                Record::IbDevices { count } => Some((*count, e.line)),
                _ => None,
            }),
            nics: p
                .nic_list()
                .map(|(l, _)| l.nics.iter().map(nic_text).collect())
                .unwrap_or_default(),
            env: p
                .env
                .iter()
                .map(|(k, (v, w))| (k.clone(), v.clone(), w.clone()))
                .collect(),
        })
        .collect();
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
    InputRanks {
        ranks,
        processes,
        errors,
        notes,
    }
}
