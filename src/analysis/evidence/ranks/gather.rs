//! The first phase of [`super::judge`]: who printed what. The input's lines are grouped into
//! processes (by `host:pid`), each process given its NCCL release and environment, and each
//! line form that names a rank or a GPU (comm, channel, own-rank, nccl-tests devices, per-GPU
//! GDR, 2.4 NIC distance) turned into the subjects to judge, one step per form.

use super::*;

/// The processes of the log in order of first appearance: their entries, and the devices their
/// headers name (lines of forms not read still show a process ran NCCL on that device).
pub(super) fn processes(log: &crate::parse::nccl_log::NcclLog) -> Vec<Proc<'_>> {
    let mut procs: Vec<Proc> = Vec::new();
    let mut index: BTreeMap<(String, u32), usize> = BTreeMap::new();
    let mut proc_of = |h: &Header, line: usize| {
        let i = *index.entry((h.host.clone(), h.pid)).or_insert_with(|| {
            procs.push(Proc {
                host: h.host.clone(),
                pid: h.pid,
                entries: Vec::new(),
                devs: DevLines::default(),
                version: version::infer(None, &[]),
                env: BTreeMap::new(),
            });
            procs.len() - 1
        });
        if !h.headerless {
            procs[i].devs.first(h.cuda_dev, line);
        }
        i
    };
    let mut owned: Vec<(usize, &Entry)> = Vec::new();
    for e in &log.entries {
        let Some(h) = &e.header else { continue };
        owned.push((proc_of(h, e.line), e));
    }
    for u in &log.unread {
        proc_of(&u.header, u.line);
    }
    for (i, e) in owned {
        procs[i].entries.push(e);
    }
    procs
}

/// Each process's NCCL release and environment. Banners (no header): all equal → every
/// process; else the nearest one before each; nccl-tests 2.14+ names the library it ran with,
/// a banner when NCCL printed none.
pub(super) fn versions_and_env(procs: &mut [Proc], job: &JobOutput) {
    let log = &job.nccl;
    let banners: Vec<(usize, (u32, u32, u32))> = log
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Version(v) if e.header.is_none() => Some((e.line, v.number)),
            _ => None,
        })
        .collect();
    let library = job.tests.runs.iter().find_map(|r| r.nccl_library);
    let all_same = banners.windows(2).all(|w| w[0].1 == w[1].1);
    for p in procs {
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
        environment(p, log);
        narrow_by_gdr_level(p, &mut v);
        p.version = v;
    }
}

/// A process's environment: echoed by NCCL, else the command line of the run.
fn environment(p: &mut Proc, log: &crate::parse::nccl_log::NcclLog) {
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
}

/// An echoed GDR level name and the level code of a GDR line narrow a release range read from
/// line forms.
fn narrow_by_gdr_level(p: &Proc, v: &mut VersionInfo) {
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
}

/// Comm lines: rank, busId, devices.
pub(super) fn comm_ranks(subj: &mut Subjects, procs: &[Proc]) {
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
        }
    }
}

/// A NET connection and the subject it belongs to.
pub(super) type Conn<'a> = (usize, &'a NetChannel, &'a Entry);

/// Channel lines: the local rank of each NET connection.
pub(super) fn channel_ranks<'a>(subj: &mut Subjects, procs: &[Proc<'a>]) -> Vec<Conn<'a>> {
    let mut conns: Vec<Conn> = Vec::new();
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
            let i = own_rank(subj, pi, p, e, rank, bracket);
            conns.push((i, c, e));
        }
    }
    conns
}

/// Lines that name the printing process's own rank: connections within the node (printed by
/// the sender), `rank %d nranks %d` (2.3), `Init timings … rank %d nranks %d` (2.22+).
pub(super) fn own_rank_lines(subj: &mut Subjects, procs: &[Proc]) {
    for (pi, p) in procs.iter().enumerate() {
        for e in &p.entries {
            match &e.record {
                Record::PeerChannel(c) => {
                    own_rank(subj, pi, p, e, c.from_rank, &c.from_bracket);
                }
                Record::RankOf { rank, nranks } => {
                    let i = own_rank(subj, pi, p, e, *rank, "");
                    subj.v[i].nranks = subj.v[i].nranks.or(*nranks);
                }
                Record::Trees {
                    rank,
                    nranks,
                    bus_id,
                } => {
                    let i = own_rank(subj, pi, p, e, *rank, "");
                    let s = &mut subj.v[i];
                    s.nranks = s.nranks.or(*nranks);
                    s.bus_id = s.bus_id.or(bus_id.as_deref().and_then(hex));
                }
                _ => {}
            }
        }
    }
}

/// nccl-tests devices (`# Using devices`).
pub(super) fn tests_devices(subj: &mut Subjects, job: &JobOutput) {
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
}

/// A per-GPU GDR line, its subject and the process that printed it.
pub(super) type GpuLine<'a> = (usize, &'a GpuGdr, &'a Entry, usize);

/// Per-GPU GDR lines: about a GPU (busId) or a rank (2.24–2.25), from any process of a host.
pub(super) fn gpu_gdr_lines<'a>(subj: &mut Subjects, procs: &[Proc<'a>]) -> Vec<GpuLine<'a>> {
    let mut gpu_lines: Vec<GpuLine> = Vec::new();
    for (pi, p) in procs.iter().enumerate() {
        for e in &p.entries {
            let Record::GpuGdr(g) = &e.record else {
                continue;
            };
            let i = gpu_gdr_subject(subj, p, g);
            if subj.v[i].lines.len() < 6 {
                subj.v[i].lines.insert(e.line);
            }
            gpu_lines.push((i, g, e, pi));
        }
    }
    gpu_lines
}

/// The subject a per-GPU GDR line of process `p` is about, by the line's form.
fn gpu_gdr_subject(subj: &mut Subjects, p: &Proc, g: &GpuGdr) -> usize {
    let gpu_is_rank = matches!(g.form, GpuGdrForm::Mode)
        || (g.form == GpuGdrForm::Classic && bracket_is_bus_id(&g.gpu) == Some(false));
    match (g.form, gpu_is_rank) {
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
    }
}

/// 2.4's `CUDA Dev d[n], NET NIC distance`: the GPUs a process drives.
pub(super) fn nic_distance_devices(subj: &mut Subjects, procs: &[Proc]) {
    for p in procs {
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
}

/// A process no line above ties to a rank or GPU still ran NCCL: one subject per device its
/// header names, judged on what the process printed (its network, its plugin), else unknown.
/// And a process driving several GPUs (one thread each) whose lines name the rank of some of
/// them only: its other GPUs are subjects of their own too. `covered`: the processes tied.
pub(super) fn device_subjects(subj: &mut Subjects, procs: &[Proc], covered: &BTreeSet<usize>) {
    let mut with_pid: HashSet<(String, u32)> = subj
        .v
        .iter()
        .filter_map(|s| Some((s.host.clone(), s.pid?)))
        .collect();
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
        for &(d, line) in p.devs.iter().filter(|(d, _)| !named.contains(d)) {
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
        for &(d, line) in p.devs.iter() {
            let i = subj.device(&p.host, p.pid, Some(d), None);
            subj.v[i].proc_idx = Some(pi);
            subj.v[i].lines.insert(line);
        }
    }
}
