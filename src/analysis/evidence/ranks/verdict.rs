//! The second phase of [`super::judge`]: each subject's verdict. What the subject's own lines
//! show is gathered once ([`Shown`]); the GDR verdict is the first of a flat list of checks,
//! strongest evidence first, that has something to say: its NET connections, NCCL's path print,
//! the per-GPU GDR check, a one-host job, the process's network or plugin, the per-NIC check,
//! the ring summary.

use super::gather::{Conn, GpuLine};
use super::*;

/// What every subject is judged against: the processes, the lines tied to subjects, and the
/// look-ups from a subject to its lines (built once, never a pass over every process per
/// subject).
pub(super) struct Context<'p, 'a> {
    pub source: &'p str,
    pub procs: &'p Procs<'a>,
    pub conns: &'p [Conn<'a>],
    pub gpu_lines: &'p [GpuLine<'a>],
    /// Each entry's line to its process.
    pub proc_of_line: &'p HashMap<usize, usize>,
    /// (host, pid) to the first process.
    pub proc_of_pid: HashMap<(&'p str, u32), usize>,
    conns_of: Vec<Vec<usize>>,
    gpu_of: Vec<Vec<usize>>,
    rerouted_of: HashMap<(&'p str, u64), Vec<&'p Rerouted>>,
}

/// The process that printed `line`, when it is on `host`.
pub(super) fn proc_at(
    procs: &Procs,
    proc_of_line: &HashMap<usize, usize>,
    host: &str,
    line: usize,
) -> Option<usize> {
    proc_of_line
        .get(&line)
        .copied()
        .filter(|&pi| procs[pi].host == host)
}

impl<'p, 'a> Context<'p, 'a> {
    /// Groups each subject's connections, GDR lines and rerouted pairs once.
    pub fn new(
        source: &'p str,
        procs: &'p Procs<'a>,
        subjects: usize,
        conns: &'p [Conn<'a>],
        gpu_lines: &'p [GpuLine<'a>],
        rerouted: &'p [Rerouted],
        proc_of_line: &'p HashMap<usize, usize>,
    ) -> Self {
        let mut proc_of_pid: HashMap<(&str, u32), usize> = HashMap::new();
        for (pi, p) in procs.iter().enumerate() {
            proc_of_pid.entry((p.host.as_str(), p.pid)).or_insert(pi);
        }
        let mut conns_of: Vec<Vec<usize>> = vec![Vec::new(); subjects];
        for (k, c) in conns.iter().enumerate() {
            conns_of[c.0].push(k);
        }
        let mut gpu_of: Vec<Vec<usize>> = vec![Vec::new(); subjects];
        for (k, g) in gpu_lines.iter().enumerate() {
            gpu_of[g.0].push(k);
        }
        let mut rerouted_of: HashMap<(&str, u64), Vec<&Rerouted>> = HashMap::new();
        for r in rerouted {
            rerouted_of
                .entry((r.host.as_str(), r.gpu))
                .or_default()
                .push(r);
        }
        Context {
            source,
            procs,
            conns,
            gpu_lines,
            proc_of_line,
            proc_of_pid,
            conns_of,
            gpu_of,
            rerouted_of,
        }
    }

    /// The verdict on subject `si`.
    pub fn rank(&self, si: usize, s: &Subject) -> RankVerdict {
        let procs = self.procs;
        let me = s.proc_idx.or_else(|| {
            s.pid
                .and_then(|pid| self.proc_of_pid.get(&(s.host.as_str(), pid)).copied())
        });
        let my_conns: Vec<&Conn> = self.conns_of[si].iter().map(|&k| &self.conns[k]).collect();
        let my_gpu: Vec<&GpuLine> = self.gpu_of[si]
            .iter()
            .map(|&k| &self.gpu_lines[k])
            .collect();
        let my_reroute: Vec<&Rerouted> = s
            .bus_id
            .and_then(|b| self.rerouted_of.get(&(s.host.as_str(), b)))
            .cloned()
            .unwrap_or_default();
        let reroute_proc = my_reroute
            .first()
            .and_then(|r| proc_at(procs, self.proc_of_line, &r.host, r.line));
        let version = me
            .or_else(|| my_gpu.first().map(|g| g.3))
            .or(reroute_proc)
            .map(|m| &procs[m].version);
        let vtext = version
            .as_ref()
            .map_or("unknown".to_string(), |v| v.text.clone());
        let (lo, hi) = version.as_ref().map_or(version::ANY, |v| (v.lo, v.hi));
        let env_of = |k: &str| -> Option<(String, String)> {
            let pi = me.or_else(|| my_gpu.first().map(|g| g.3))?;
            from_host(procs, pi, &format!("env {k}"), |p| p.env.get(k).cloned()).map(|(v, _)| v)
        };
        let nics = nics_used(procs, me, &my_conns, hi);
        let own = OwnLines {
            conns: &my_conns,
            gpu: &my_gpu,
            reroute: &my_reroute,
        };
        let shown = Shown::gather(procs, me, s, own, &env_of);
        let (gdr, basis) = shown.gdr();
        let cause = (gdr == Gdr::Off).then(|| {
            off_cause(
                procs,
                me,
                s,
                &my_conns,
                &my_gpu,
                &my_reroute,
                shown.socket || shown.socket_net.is_some(),
                shown.socket_net.as_ref(),
                shown.plugin_off,
                shown.rings,
                lo,
                hi,
                &env_of,
            )
        });
        RankVerdict {
            source: self.source.to_string(),
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
        }
    }
}

/// The NICs a subject's NET connections used, with their GDR counts, named from its process.
fn nics_used(
    procs: &Procs,
    me: Option<usize>,
    conns: &[&Conn],
    hi: version::Release,
) -> Vec<NicUse> {
    let mut nics: BTreeMap<(Option<String>, u32), NicUse> = BTreeMap::new();
    for (_, c, _) in conns {
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
            name_nic(procs, m, n, hi);
        }
    }
    nics
}

/// A subject's own lines: its NET connections, its GPU's GDR lines and the reroutes of its bus.
#[derive(Clone, Copy)]
struct OwnLines<'x, 'p, 'a> {
    conns: &'x [&'x Conn<'a>],
    gpu: &'x [&'x GpuLine<'a>],
    reroute: &'x [&'p Rerouted],
}

/// What a subject's own lines and its process show, gathered once for the checks below.
struct Shown<'x, 'p, 'a> {
    procs: &'p Procs<'a>,
    me: Option<usize>,
    s: &'x Subject,
    own: OwnLines<'x, 'p, 'a>,
    /// A NET connection over NET/Socket.
    socket: bool,
    /// The last ring summary's GDR flag and its line.
    rings: Option<(u32, usize)>,
    socket_net: Option<(usize, String)>,
    plugin_off: Option<(usize, &'p str)>,
    all_disabled: Option<(Vec<String>, Vec<usize>)>,
    /// NCCL_LOCAL_REGISTER=0 and NCCL_GRAPH_REGISTER=0: the ring flag is this rank's own.
    own_ring_flag: bool,
}

impl<'x, 'p, 'a> Shown<'x, 'p, 'a> {
    /// What subject `s` (of process `me`) shows: its own lines, and its process's network,
    /// plugin, per-NIC check, ring summary and registration variables.
    fn gather(
        procs: &'p Procs<'a>,
        me: Option<usize>,
        s: &'x Subject,
        own: OwnLines<'x, 'p, 'a>,
        env_of: &dyn Fn(&str) -> Option<(String, String)>,
    ) -> Self {
        Shown {
            procs,
            me,
            s,
            own,
            socket: own
                .conns
                .iter()
                .any(|c| c.1.net.as_deref() == Some("Socket")),
            rings: me.and_then(|m| {
                procs[m].records().rev().find_map(|(e, r)| match r {
                    Record::RingsConnected { gdr: Some(g), .. } => Some((*g, e.line)),
                    _ => None,
                })
            }),
            socket_net: me.and_then(|m| procs[m].socket_network()),
            plugin_off: me.and_then(|m| procs[m].plugin_gdr_off()),
            all_disabled: me.and_then(|m| all_nics_disabled(procs, m)),
            own_ring_flag: ["NCCL_LOCAL_REGISTER", "NCCL_GRAPH_REGISTER"]
                .iter()
                .all(|k| env_of(k).is_some_and(|(v, _)| v.trim() == "0")),
        }
    }

    /// GDR used, off or unknown, and why: the first check with something to say.
    fn gdr(&self) -> (Gdr, String) {
        self.connections()
            .or_else(|| self.rerouted())
            .or_else(|| self.gpu_check())
            .or_else(|| self.one_host())
            .or_else(|| self.process())
            .or_else(|| self.ring_summary())
            .unwrap_or_else(|| {
                (
                    Gdr::Unknown,
                    "the log shows no NET connection and no GDR line for it".to_string(),
                )
            })
    }

    /// Its NET connections: over Socket, with or without /GDRDMA, or cut short.
    fn connections(&self) -> Option<(Gdr, String)> {
        let conns = self.own.conns;
        let cut = conns.iter().filter(|c| c.1.gdr.is_none()).count();
        let with = conns.iter().filter(|c| c.1.gdr == Some(true)).count();
        let without = conns.iter().filter(|c| c.1.gdr == Some(false)).count();
        if self.socket {
            Some((
                Gdr::Off,
                format!("{} NET connection(s) over NET/Socket", conns.len()),
            ))
        } else if with > 0 && without == 0 {
            Some((
                Gdr::Used,
                format!(
                    "{with} NET connection(s) with /GDRDMA{}",
                    if cut > 0 {
                        format!(" ({cut} more cut short)")
                    } else {
                        String::new()
                    }
                ),
            ))
        } else if without > 0 {
            let mixed = if with > 0 {
                format!(", {with} with")
            } else {
                String::new()
            };
            Some((
                Gdr::Off,
                format!("{without} NET connection(s) without /GDRDMA on complete lines{mixed}"),
            ))
        } else if cut > 0 {
            Some((
                Gdr::Unknown,
                format!("{cut} NET connection line(s), each cut before /GDRDMA could show"),
            ))
        } else {
            None
        }
    }

    /// NCCL's path print routing its NIC traffic through the CPU.
    fn rerouted(&self) -> Option<(Gdr, String)> {
        (!self.own.reroute.is_empty()).then(|| {
            (
                Gdr::Off,
                "NCCL's path print routes this GPU's NIC traffic through the CPU".to_string(),
            )
        })
    }

    /// NCCL's per-GPU GDR check.
    fn gpu_check(&self) -> Option<(Gdr, String)> {
        if self.own.gpu.is_empty() {
            return None;
        }
        let en = self.own.gpu.iter().filter(|g| g.1.enabled).count();
        let dis = self.own.gpu.len() - en;
        Some(if dis == 0 {
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
        })
    }

    /// No NET connection of its own on a one-host job: whatever network NCCL loaded, none
    /// carried this rank's traffic when its connections show none.
    fn one_host(&self) -> Option<(Gdr, String)> {
        let one = self.s.one_host.as_ref()?;
        let local = self
            .me
            .and_then(|m| scope::connected_locally(&self.procs[m]));
        Some(match (one.single_rank, local) {
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
        })
    }

    /// The process's network (Socket), its net plugin, or NCCL's per-NIC check.
    fn process(&self) -> Option<(Gdr, String)> {
        if let Some((line, why)) = &self.socket_net {
            Some((
                Gdr::Off,
                format!("the process uses NCCL's Socket network: {why} (line {line})"),
            ))
        } else if let Some((line, text)) = self.plugin_off {
            Some((
                Gdr::Off,
                format!("the net plugin turned GDR off: `NET/OFI {text}` (line {line})"),
            ))
        } else {
            self.all_disabled.as_ref().map(|d| {
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
            })
        }
    }

    /// The ring summary's `GDR` flag.
    fn ring_summary(&self) -> Option<(Gdr, String)> {
        let s = self.s;
        if let Some((1, line)) = self.rings.filter(|_| s.nnodes.is_some_and(|n| n > 1)) {
            Some((
                Gdr::Used,
                format!(
                    "ring summary `GDR 1` (line {line}) on {} nodes: every rank's ring NET connections use GDR",
                    s.nnodes.unwrap_or(0)
                ),
            ))
        } else if let Some((0, line)) = self.rings.filter(|_| self.own_ring_flag) {
            Some((
                Gdr::Off,
                format!(
                    "ring summary `GDR 0` (line {line}) with NCCL_LOCAL_REGISTER=0 and NCCL_GRAPH_REGISTER=0: this rank's own ring NET connections are without GDR"
                ),
            ))
        } else if let Some((0, line)) = self.rings {
            Some((
                Gdr::Unknown,
                format!(
                    "no NET connection or GDR line of its own; the ring summary `GDR 0` (line {line}) says some rank of the communicator has a ring NET connection without GDR — NCCL ≥ 2.24 combines every rank's flag, so not necessarily this one"
                ),
            ))
        } else {
            None
        }
    }
}
