//! `audit --job`: the job's own environment against the topology — the NCCL/CUDA variables it
//! sets (`NCCL_IB_HCA` and `NCCL_SOCKET_IFNAME` in NCCL's grammar, [`crate::parse::nccl_env`];
//! `CUDA_VISIBLE_DEVICES`, `CUDA_DEVICE_ORDER`, `NCCL_NET_GDR_LEVEL`, `NCCL_P2P_LEVEL`,
//! `NCCL_IB_DISABLE`, `NCCL_NET`, `NCCL_TOPO_FILE`) and, run live inside the job or container,
//! what it can see ([`LiveFacts`], read by `probe::live`): RDMA devices, libibverbs, ports and
//! RoCE GIDs, `RLIMIT_MEMLOCK`, `/dev/shm`, the cgroup cpuset, peer memory. The audit reads no
//! file itself: the variables and live facts are handed in. Every finding's id starts `job-`.

use super::{CheckId, Ctx, Finding, Severity, Subject};
use crate::analysis::classify::topo_file::FileJudgement;
use crate::analysis::evidence::version::{self as nver, ANY};
use crate::analysis::nccl::NcclPath;
use crate::model::{DeviceKind, Fact, OsDeviceKind, Topology};
use crate::parse::nccl_env;

/// What a live job can see, read on the machine it runs on (never from a snapshot).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveFacts {
    /// `/dev/infiniband/uverbs*` entries.
    pub uverbs: Fact<Vec<String>>,
    /// libibverbs loaded with `dlopen`: the name that loaded, or the loader's error.
    pub ibverbs: Fact<Result<String, String>>,
    /// `RLIMIT_MEMLOCK` soft limit in bytes; `None` = unlimited.
    pub memlock: Fact<Option<u64>>,
    /// Size of `/dev/shm` in bytes (`statvfs`).
    pub shm_bytes: Fact<u64>,
    /// CPUs the process may run on (`/proc/self/status` `Cpus_allowed_list`: the cgroup
    /// cpuset and affinity together).
    pub cpus_allowed: Fact<Vec<u32>>,
    /// Network interfaces (`/sys/class/net`), for `NCCL_SOCKET_IFNAME`.
    pub netdevs: Fact<Vec<String>>,
    /// Per RDMA port on Ethernet: (device, port, non-zero GIDs, RoCE v2 GIDs).
    pub roce_gids: Fact<Vec<(String, u32, usize, usize)>>,
}

/// The job's environment: its variables and, when live, what it sees.
#[derive(Debug, Clone, Default)]
pub struct JobEnv {
    /// `NCCL_*`/`CUDA_*` variables (name, value).
    pub vars: Vec<(String, String)>,
    /// Live facts; `None` with a snapshot (`-i`), when nothing live is read.
    pub live: Option<LiveFacts>,
    /// `NCCL_TOPO_FILE`'s content read by the command (the audit reads no file): `Err` says
    /// why it could not be read.
    pub topo_file: Option<Result<Topology, String>>,
    /// `NCCL_TOPO_FILE` when a configuration file NCCL reads names it and the environment does
    /// not (`/etc/nccl.conf` on Azure's HPC images): its value and where (`/etc/nccl.conf line
    /// 1`), from the node's settings (`sources::nccl_conf`).
    pub topo_file_conf: Option<(String, String)>,
}

/// [`JobEnv::topo_file`]'s reason when the named file does not exist: NCCL then logs that it
/// could not open it and detects the topology itself (`ncclTopoGetXmlFromFile`).
pub const NO_SUCH_TOPO_FILE: &str = "the file does not exist";

impl JobEnv {
    /// The job's `NCCL_TOPO_FILE` as NCCL will read it: its path and the file read as a
    /// topology, or why it could not be read. `None` without the variable, or when the file
    /// does not exist (NCCL detects the topology itself, as without the variable).
    pub fn topo_file_input(&self) -> Option<(&str, Result<&Topology, &str>)> {
        let (path, _) = self.topo_file_named()?;
        match self.topo_file.as_ref()? {
            Ok(t) => Some((path, Ok(t))),
            Err(why) if why == NO_SUCH_TOPO_FILE => None,
            Err(why) => Some((path, Err(why.as_str()))),
        }
    }

    /// The topology file the job names, and where, as evidence (path, raw line): the
    /// environment first, as NCCL reads it, then a configuration file.
    pub fn topo_file_named(&self) -> Option<(&str, (String, String))> {
        if let Some(v) = self.var("NCCL_TOPO_FILE") {
            return Some((v, env_ev("NCCL_TOPO_FILE", v)));
        }
        self.topo_file_conf
            .as_ref()
            .map(|(v, at)| (v.as_str(), (at.clone(), format!("NCCL_TOPO_FILE={v}"))))
    }

    fn var(&self, k: &str) -> Option<&str> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

fn env_ev(k: &str, v: &str) -> (String, String) {
    (format!("env {k}"), v.to_string())
}

/// Every RDMA device/port of the node: (name, port).
fn hcas(ctx: &Ctx) -> Vec<(String, Option<u32>)> {
    let mut out = Vec::new();
    for d in ctx.topo.of_kind(DeviceKind::Nic).filter(|d| !d.is_vf()) {
        for o in d.os_devices.iter().filter(|o| o.kind == OsDeviceKind::Rdma) {
            if o.ports.is_empty() {
                out.push((o.name.clone(), None));
            }
            for p in &o.ports {
                out.push((o.name.clone(), Some(p.port)));
            }
        }
    }
    out.sort_by(|a, b| {
        crate::analysis::classify::endpoints::natural_cmp(&a.0, &b.0).then(a.1.cmp(&b.1))
    });
    out
}

/// Runs every job check.
pub fn check(ctx: &Ctx, env: &JobEnv) -> Vec<Finding> {
    let mut f = Vec::new();
    f.extend(ib_hca(ctx, env));
    f.extend(socket_ifname(ctx, env));
    f.extend(cuda_visible(ctx, env));
    f.extend(levels(ctx, env));
    f.extend(net(env));
    f.extend(topo_file(ctx, env));
    f.extend(live_checks(ctx, env));
    f
}

/// `job-ib-hca`.
fn ib_hca(ctx: &Ctx, env: &JobEnv) -> Vec<Finding> {
    let id = CheckId::JobIbHca;
    let Some(v) = env.var("NCCL_IB_HCA") else {
        return Vec::new();
    };
    let l = nccl_env::parse(v);
    let devs = hcas(ctx);
    if devs.is_empty() {
        return vec![
            Finding::new(
                id,
                Severity::Unknown,
                Subject::Node,
                format!("NCCL_IB_HCA={v}: the topology has no RDMA device to check it against"),
                "audit the machine the job runs on (RDMA devices under /sys/class/infiniband)",
            )
            .with("env NCCL_IB_HCA", v),
        ];
    }
    let mut out = vec![hca_selection(v, &l, &devs)];
    hca_by_release(v, &devs, &mut out);
    hca_unmatched(v, &l, &devs, &mut out);
    hca_prefix_surprises(v, &l, &devs, &mut out);
    hca_local_excluded(ctx, v, &l, &devs, &mut out);
    out
}

/// The HCAs NCCL_IB_HCA selects: none (an error: NET/Socket), or which.
fn hca_selection(v: &str, l: &nccl_env::IfList, devs: &[(String, Option<u32>)]) -> Finding {
    let id = CheckId::JobIbHca;
    let selected: Vec<String> = {
        let mut s: Vec<String> = devs
            .iter()
            .filter(|(n, p)| l.selects(n, *p))
            .map(|(n, p)| match p {
                Some(p) if devs.iter().filter(|d| d.0 == *n).count() > 1 => format!("{n}:{p}"),
                _ => n.clone(),
            })
            .collect();
        s.dedup();
        s
    };
    let mode = match (l.exclude, l.exact) {
        (false, false) => "names are prefixes",
        (false, true) => "`=`: exact names",
        (true, false) => "`^`: exclude, names are prefixes",
        (true, true) => "`^=`: exclude exact names",
    };
    if selected.is_empty() {
        Finding::new(id, Severity::Error, Subject::Node, format!("NCCL_IB_HCA={v} selects no HCA of the {} on this node ({mode}): NCCL finds no IB device and falls back to NET/Socket", devs.len()), format!("name HCAs that exist ({}), or unset NCCL_IB_HCA", devs.iter().map(|d| d.0.as_str()).collect::<Vec<_>>().join(", ")))
            .with("env NCCL_IB_HCA", v)
    } else {
        Finding::new(
            id,
            Severity::Info,
            Subject::Node,
            format!(
                "NCCL_IB_HCA={v} selects {} HCA(s) ({mode}): {}",
                selected.len(),
                selected.join(", ")
            ),
            "none",
        )
        .with("env NCCL_IB_HCA", v)
    }
}

/// NCCL releases that read the list differently.
fn hca_by_release(v: &str, devs: &[(String, Option<u32>)], out: &mut Vec<Finding>) {
    let id = CheckId::JobIbHca;
    let by_release = nccl_env::selection_by_release(v, devs);
    if !by_release.is_empty() {
        let words: Vec<String> = by_release
            .iter()
            .map(|(g, sel)| {
                let s = if sel.is_empty() {
                    "none".to_string()
                } else {
                    sel.join(", ")
                };
                format!("{} select {s}", g.releases())
            })
            .collect();
        let summary = format!(
            "NCCL_IB_HCA={v} is read differently by NCCL releases: {}",
            words.join("; ")
        );
        let remedy = "write the list so every release reads it alike (`=name:port`, no empty port; `=` needs NCCL ≥ 2.5)";
        out.push(
            Finding::new(id, Severity::Warning, Subject::Node, summary, remedy)
                .with("env NCCL_IB_HCA", v),
        );
    }
}

/// Entries that match no HCA on this node.
fn hca_unmatched(
    v: &str,
    l: &nccl_env::IfList,
    devs: &[(String, Option<u32>)],
    out: &mut Vec<Finding>,
) {
    let id = CheckId::JobIbHca;
    for e in l.unmatched(devs) {
        let port = e.port.map(|p| format!(" port {p}")).unwrap_or_default();
        let (sev, why) = if l.exclude {
            (Severity::Warning, "excludes nothing")
        } else {
            (Severity::Error, "selects nothing")
        };
        let summary = format!(
            "NCCL_IB_HCA={v}: entry `{}`{port} matches no HCA on this node and {why}",
            e.name
        );
        out.push(
            Finding::new(
                id,
                sev,
                Subject::Node,
                summary,
                "correct the name (HCAs here: see `peerpath matrix`), or drop the entry",
            )
            .with("env NCCL_IB_HCA", v),
        );
    }
}

/// Without `=`, an entry that is a prefix of other HCAs' names.
fn hca_prefix_surprises(
    v: &str,
    l: &nccl_env::IfList,
    devs: &[(String, Option<u32>)],
    out: &mut Vec<Finding>,
) {
    let id = CheckId::JobIbHca;
    let names: Vec<String> = {
        let mut n: Vec<String> = devs.iter().map(|d| d.0.clone()).collect();
        n.dedup();
        n
    };
    if !l.exclude {
        for (entry, more) in l.prefix_surprises(&names) {
            out.push(
                Finding::new(
                    id,
                    Severity::Warning,
                    Subject::Node,
                    format!(
                        "NCCL_IB_HCA={v}: without `=`, `{entry}` is a prefix and also selects {}",
                        more.join(", ")
                    ),
                    format!(
                        "write NCCL_IB_HCA='={}' to select exactly the HCAs named",
                        v.trim_start_matches('=')
                    ),
                )
                .with("env NCCL_IB_HCA", v),
            );
        }
    }
}

/// A GPU's local (PIX/PXB) NIC the list excludes: its traffic goes to a farther NIC.
fn hca_local_excluded(
    ctx: &Ctx,
    v: &str,
    l: &nccl_env::IfList,
    devs: &[(String, Option<u32>)],
    out: &mut Vec<Finding>,
) {
    let id = CheckId::JobIbHca;
    for p in ctx.pairs.iter().filter(|p| p.local) {
        // A dual-port adapter has one RDMA device per port: the NIC is excluded only when
        // none of its devices is selected.
        let Some(d) = ctx.topo.device(&p.nic) else {
            continue;
        };
        let mine: Vec<&str> = d.rdma_names().collect();
        if mine.is_empty() {
            continue;
        }
        let kept = devs
            .iter()
            .filter(|(n, _)| mine.contains(&n.as_str()))
            .any(|(n, port)| l.selects(n, *port));
        if !kept {
            let names = mine.join(", ");
            out.push(
                Finding::new(id, Severity::Warning, Subject::Device(p.gpu), format!("NCCL_IB_HCA={v} excludes {names}, the {} NIC of GPU {}: its traffic goes to a farther NIC", p.label, p.gpu), format!("include {} in NCCL_IB_HCA", mine[0]))
                    .with("env NCCL_IB_HCA", v)
                    .with_pairs([p.to_ref()]),
            );
        }
    }
}

/// `job-socket-ifname`.
fn socket_ifname(ctx: &Ctx, env: &JobEnv) -> Vec<Finding> {
    let id = CheckId::JobSocketIfname;
    let Some(v) = env.var("NCCL_SOCKET_IFNAME") else {
        return Vec::new();
    };
    let l = nccl_env::parse(v);
    let (names, whence): (Vec<String>, &str) =
        match env.live.as_ref().and_then(|x| x.netdevs.known()) {
            Some(n) => (n.clone(), "/sys/class/net"),
            None => {
                let mut n: Vec<String> = ctx
                    .topo
                    .devices
                    .iter()
                    .flat_map(|d| d.net_names().map(str::to_string))
                    .collect();
                n.sort();
                (n, "the snapshot's PCI netdevs")
            }
        };
    let sel: Vec<&String> = names.iter().filter(|n| l.selects(n, None)).collect();
    let (e, k) = env_ev("NCCL_SOCKET_IFNAME", v);
    if sel.is_empty() {
        let (sev, note) = if env.live.is_some() {
            (
                Severity::Error,
                "NCCL's bootstrap finds no interface and fails",
            )
        } else {
            (
                Severity::Unknown,
                "bonds, VLANs and lo are not in a snapshot, so this is not certain",
            )
        };
        return vec![
            Finding::new(
                id,
                sev,
                Subject::Node,
                format!(
                    "NCCL_SOCKET_IFNAME={v} selects none of {} interface(s) in {whence}: {note}",
                    names.len()
                ),
                "name an interface that exists (ip -br link), or unset it",
            )
            .with(e, k),
        ];
    }
    vec![
        Finding::new(
            id,
            Severity::Info,
            Subject::Node,
            format!(
                "NCCL_SOCKET_IFNAME={v} selects {} (from {whence})",
                sel.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "none",
        )
        .with(e, k),
    ]
}

/// `job-cuda-visible`.
fn cuda_visible(ctx: &Ctx, env: &JobEnv) -> Vec<Finding> {
    let id = CheckId::JobCudaVisible;
    let mut out = Vec::new();
    let n = ctx.gpus.len();
    let order = env.var("CUDA_DEVICE_ORDER");
    if let Some(v) = env.var("CUDA_VISIBLE_DEVICES") {
        let (e, k) = env_ev("CUDA_VISIBLE_DEVICES", v);
        let items: Vec<&str> = v.split(',').map(str::trim).collect();
        if v.trim().is_empty() || v.trim() == "NoDevFiles" {
            out.push(
                Finding::new(
                    id,
                    Severity::Error,
                    Subject::Node,
                    format!("CUDA_VISIBLE_DEVICES={v:?} hides every GPU"),
                    "set it to the GPUs the job should use (or unset it)",
                )
                .with(e, k),
            );
            return out;
        }
        let mut seen = Vec::new();
        for (i, it) in items.iter().enumerate() {
            if let Ok(ix) = it.parse::<usize>() {
                if ix >= n {
                    let after = items.len() - i - 1;
                    let dropped = if after > 0 {
                        format!(
                            "; CUDA stops at the first invalid entry, so the {after} after it are dropped too"
                        )
                    } else {
                        String::new()
                    };
                    out.push(Finding::new(id, Severity::Error, Subject::Node, format!("CUDA_VISIBLE_DEVICES={v}: index {ix} is not a GPU of the {n} on this node{dropped}"), format!("use indices 0..{}", n.saturating_sub(1))).with(e.clone(), k.clone()));
                    break;
                }
                if seen.contains(&ix) {
                    out.push(Finding::new(id, Severity::Error, Subject::Node, format!("CUDA_VISIBLE_DEVICES={v}: index {ix} appears twice (CUDA refuses duplicates and stops there)"), "list each GPU once").with(e.clone(), k.clone()));
                    break;
                }
                seen.push(ix);
            } else if it.starts_with("GPU-") || it.starts_with("MIG-") {
                let what = if it.starts_with("MIG-") {
                    "a MIG instance"
                } else {
                    "a GPU UUID"
                };
                out.push(Finding::new(id, Severity::Unknown, Subject::Node, format!("CUDA_VISIBLE_DEVICES={v}: `{it}` is {what}; UUIDs are not in the topology, so which GPU it is cannot be checked here"), "compare with `nvidia-smi -L` on the node").with(e.clone(), k.clone()));
            } else {
                out.push(Finding::new(id, Severity::Error, Subject::Node, format!("CUDA_VISIBLE_DEVICES={v}: `{it}` is neither an index, a GPU-UUID nor a MIG-UUID; CUDA stops parsing there"), "fix the entry").with(e.clone(), k.clone()));
                break;
            }
        }
        if !seen.is_empty() && order != Some("PCI_BUS_ID") {
            let mixed = {
                let mut ids: Vec<Option<u16>> = ctx.gpus.iter().map(|d| d.device_id).collect();
                ids.sort();
                ids.dedup();
                ids.len() > 1
            };
            let (sev, words) = if mixed {
                (
                    Severity::Warning,
                    "this node mixes GPU models, so CUDA's default FASTEST_FIRST order differs from PCI bus order and the indices do not name the GPUs nvidia-smi and peerpath number",
                )
            } else {
                (
                    Severity::Info,
                    "with identical GPUs CUDA's default FASTEST_FIRST order is PCI bus order, so the indices match nvidia-smi",
                )
            };
            out.push(
                Finding::new(
                    id,
                    sev,
                    Subject::Node,
                    format!(
                        "CUDA_VISIBLE_DEVICES={v} with CUDA_DEVICE_ORDER={}: {words}",
                        order.unwrap_or("(unset)")
                    ),
                    "set CUDA_DEVICE_ORDER=PCI_BUS_ID",
                )
                .with(e, k),
            );
        }
    }
    out
}

/// `job-nccl-levels`: `NCCL_NET_GDR_LEVEL` and `NCCL_P2P_LEVEL` as the job sets them, read by
/// the one reading every verdict uses ([`crate::analysis::settings`]: NCCL's `ncclGetLevel`):
/// what each pair gets is the classifier's GDR decision (`Pair::gdr`), never a second rule.
fn levels(ctx: &Ctx, env: &JobEnv) -> Vec<Finding> {
    let id = CheckId::JobNcclLevels;
    let st = ctx.cl.settings();
    let mut out = Vec::new();
    for var in ["NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL"] {
        let Some(v) = env.var(var) else { continue };
        let (e, k) = env_ev(var, v);
        let applied = if var == "NCCL_NET_GDR_LEVEL" {
            st.gdr_level.as_ref()
        } else {
            st.p2p_level.as_ref()
        }
        .filter(|a| a.setting.name == var && a.setting.value == v);
        let Some(level) = applied.map(|a| a.value) else {
            out.push(Finding::new(id, Severity::Error, Subject::Node, format!("{var}={v} is not a level NCCL {} reads ({}): NCCL ignores it without a warning and keeps its default", st.version, "names LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS, exact and case-sensitive, or a number 0–4"), "write the level's name exactly (PXB, PHB, SYS …)").with(e, k));
            continue;
        };
        if v.starts_with(|c: char| c.is_ascii_digit()) {
            out.push(Finding::new(id, Severity::Warning, Subject::Node, format!("{var}={v}: NCCL ≥ 2.6 reads a number in its old numbering (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and up SYS), here {level}; NCCL 2.4–2.5 compared it with the path-type code ({})", nver::decode(v.trim().parse().unwrap_or(0), (6, 0), ANY.1)), format!("write the level's name ({var}={level}), which every release reads the same")).with(e.clone(), k.clone()));
        }
        if var == "NCCL_NET_GDR_LEVEL" {
            if level == NcclPath::Loc {
                out.push(
                    Finding::new(
                        id,
                        Severity::Error,
                        Subject::Node,
                        format!("{var}={v}: GPUDirect RDMA is disabled for every GPU"),
                        format!("unset {var} (NCCL's default admits PIX/PXB pairs)"),
                    )
                    .with(e, k),
                );
                continue;
            }
            let allowed = ctx.pairs.iter().filter(|p| p.gdr).count();
            let cut: Vec<String> = ctx
                .pairs
                .iter()
                .filter(|p| p.local && !p.gdr)
                .map(|p| format!("{} ({})", p.gpu, p.label))
                .collect();
            let widened: Vec<String> = ctx
                .pairs
                .iter()
                .filter(|p| !p.local && p.gdr)
                .map(|p| format!("{} ({})", p.gpu, p.label))
                .collect();
            let sev = if cut.is_empty() {
                Severity::Info
            } else {
                Severity::Warning
            };
            let mut s = format!(
                "{var}={v}: NCCL uses GPUDirect RDMA on {allowed} of {} GPU–NIC pair(s)",
                ctx.pairs.len()
            );
            if !widened.is_empty() {
                s.push_str(&format!(
                    "; beyond PXB, admitted by this level: {}",
                    widened.join(", ")
                ));
            }
            if !cut.is_empty() {
                s.push_str(&format!(
                    "; GDR turned off for pairs NCCL would otherwise use it on: {}",
                    cut.join(", ")
                ));
            }
            out.push(
                Finding::new(
                    id,
                    sev,
                    Subject::Node,
                    s,
                    if cut.is_empty() {
                        "none".to_string()
                    } else {
                        format!("raise or unset {var}")
                    },
                )
                .with(e, k),
            );
        } else {
            let sev = if level == NcclPath::Loc {
                Severity::Warning
            } else {
                Severity::Info
            };
            let words = if level == NcclPath::Loc {
                "P2P between GPUs is disabled (traffic goes through host memory or the network)"
            } else {
                "P2P allowed up to this level"
            };
            out.push(
                Finding::new(
                    id,
                    sev,
                    Subject::Node,
                    format!("{var}={v}: {words}"),
                    if level == NcclPath::Loc {
                        format!("unset {var} unless P2P is known broken")
                    } else {
                        "none".into()
                    },
                )
                .with(e, k),
            );
        }
    }
    out
}

/// `job-net`: `NCCL_IB_DISABLE`, `NCCL_NET`.
fn net(env: &JobEnv) -> Vec<Finding> {
    let id = CheckId::JobNet;
    let mut out = Vec::new();
    if let Some(v) = env.var("NCCL_IB_DISABLE")
        && v.trim() != "0"
    {
        let (e, k) = env_ev("NCCL_IB_DISABLE", v);
        out.push(Finding::new(id, Severity::Error, Subject::Node, format!("NCCL_IB_DISABLE={v}: the IB/RoCE transport is off, so NCCL uses NET/Socket (no RDMA, no GDR)"), "unset NCCL_IB_DISABLE").with(e, k));
    }
    if let Some(v) = env.var("NCCL_NET") {
        let (e, k) = env_ev("NCCL_NET", v);
        let t = v.trim();
        let (sev, words) = if t.eq_ignore_ascii_case("Socket") {
            (
                Severity::Error,
                "forces NET/Socket: no RDMA, no GDR".to_string(),
            )
        } else if t == "IB" {
            (Severity::Info, "the internal IB/RoCE transport".to_string())
        } else {
            (
                Severity::Info,
                format!(
                    "requires a net plugin named {t:?} (NCCL_NET_PLUGIN / libnccl-net.so); NCCL fails if none provides it"
                ),
            )
        };
        out.push(
            Finding::new(
                id,
                sev,
                Subject::Node,
                format!("NCCL_NET={v}: {words}"),
                "unset NCCL_NET",
            )
            .remedy_only_if_error()
            .with(e, k),
        );
    }
    out
}

/// `job-topo-file`.
fn topo_file(ctx: &Ctx, env: &JobEnv) -> Vec<Finding> {
    let id = CheckId::JobTopoFile;
    let Some((v, (e, k))) = env.topo_file_named() else {
        return Vec::new();
    };
    match &env.topo_file {
        None => vec![
            Finding::new(
                id,
                Severity::Unknown,
                Subject::Node,
                format!("NCCL_TOPO_FILE={v}: not read"),
                "run the audit where the file is",
            )
            .with(e, k),
        ],
        Some(Err(why)) if why == NO_SUCH_TOPO_FILE => vec![
            Finding::new(
                id,
                Severity::Error,
                Subject::Node,
                format!("NCCL_TOPO_FILE={v}: {why}; NCCL warns and detects the topology itself"),
                "point it at a readable NCCL topology XML, or unset it",
            )
            .with(e, k),
        ],
        Some(Err(why)) => vec![
            Finding::new(
                id,
                Severity::Unknown,
                Subject::Node,
                format!("NCCL_TOPO_FILE={v}: could not be read here ({why}): the tree NCCL judges the GPU–NIC pairs on is unknown, and so is whether it uses GPUDirect RDMA on them"),
                "run the audit where the job's file is readable as NCCL topology XML (NCCL reads it as the job's user)",
            )
            .with(e, k),
        ],
        Some(Ok(t)) => {
            let mine: Vec<_> = ctx.gpus.iter().map(|d| d.bdf).collect();
            let theirs: Vec<_> = t.of_kind(DeviceKind::Gpu).map(|d| d.bdf).collect();
            let missing: Vec<String> = mine
                .iter()
                .filter(|b| !theirs.contains(b))
                .map(|b| b.to_string())
                .collect();
            let extra: Vec<String> = theirs
                .iter()
                .filter(|b| !mine.contains(b))
                .map(|b| b.to_string())
                .collect();
            let mut out = if missing.is_empty() && extra.is_empty() {
                vec![Finding::new(id, Severity::Info, Subject::Node, format!("NCCL_TOPO_FILE={v}: readable as NCCL XML, the same {} GPU(s) as this node{}", mine.len(), file_pairs_words(ctx)), "none").with(e.clone(), k.clone())]
            } else {
                vec![Finding::new(id, Severity::Warning, Subject::Node, format!("NCCL_TOPO_FILE={v} describes other GPUs: not in the file {:?}, only in the file {:?} — NCCL will place ranks by a topology that is not this node's{}", missing, extra, file_pairs_words(ctx)), "use the file made for this machine type (or unset it)").with(e.clone(), k.clone())]
            };
            out.extend(file_across_cpus(ctx, v, &e, &k));
            out
        }
    }
}

/// The job's file over the node's GPU–NIC pairs, in words: how many it decides (NCCL's tree
/// for them is the file's) and how many of those differ from the node's own tree.
fn file_pairs_words(ctx: &Ctx) -> String {
    if ctx.cl.topo_file().is_none() {
        return String::new();
    }
    let (mut decided, mut differ) = (0usize, 0usize);
    for g in &ctx.gpus {
        for n in &ctx.nics {
            if let Some(FileJudgement::Decided { file, tree, .. }) =
                ctx.cl.topo_file_pair(&g.bdf, &n.bdf)
            {
                decided += 1;
                differ += usize::from(file != tree);
            }
        }
    }
    format!(
        "; GPU–NIC pairs judged on the file's tree, as NCCL will: it decides {decided} of {} ({differ} differ from the node's own tree)",
        ctx.gpus.len() * ctx.nics.len()
    )
}

/// A GPU–NIC pair the job's file puts within PXB (NCCL takes the NIC as local and uses
/// GPUDirect RDMA on it) that the node's own tree has on different CPUs (SYS): the file does
/// not describe this node.
fn file_across_cpus(ctx: &Ctx, v: &str, e: &str, k: &str) -> Vec<Finding> {
    let version = ctx.cl.options().nccl_version;
    let mut out = Vec::new();
    for g in &ctx.gpus {
        for n in &ctx.nics {
            let Some(FileJudgement::Decided {
                file, words, tree, ..
            }) = ctx.cl.topo_file_pair(&g.bdf, &n.bdf)
            else {
                continue;
            };
            if !(file.le(NcclPath::Pxb, version) && tree == NcclPath::Sys) {
                continue;
            }
            let mut f = Finding::new(
                CheckId::JobTopoFile,
                Severity::Warning,
                Subject::Device(g.bdf),
                format!(
                    "NCCL_TOPO_FILE={v} has {} and {} at {file} ({words}), but the node's own tree has them on different CPUs ({tree}): NCCL takes that NIC as local to the GPU and runs GPUDirect RDMA across the CPUs' link",
                    ctx.name(&g.bdf),
                    ctx.name(&n.bdf)
                ),
                "use the topology file made for this machine type (its bus ids and NUMA nodes), or unset NCCL_TOPO_FILE",
            )
            .with(e, k);
            for d in [*g, *n] {
                f.evidence.push(super::device_place(ctx.topo, d));
            }
            out.push(f);
        }
    }
    out
}

/// The live checks: `job-rdma-devices`, `job-memlock`, `job-shm`, `job-cpuset`, `job-peer-memory`.
fn live_checks(ctx: &Ctx, env: &JobEnv) -> Vec<Finding> {
    let ids = [
        CheckId::JobRdmaDevices,
        CheckId::JobMemlock,
        CheckId::JobShm,
        CheckId::JobCpuset,
        CheckId::JobPeerMemory,
    ];
    let Some(live) = &env.live else {
        return ids
            .iter()
            .map(|id| Finding::new(*id, Severity::Unknown, Subject::Node, "not read: a snapshot was given (-i); live checks read only the machine the audit runs on", "run `peerpath audit --job` inside the job or container, without -i"))
            .collect();
    };
    let mut out = Vec::new();
    rdma_devices(ctx, live, &mut out);
    memlock(live, &mut out);
    shm(live, &mut out);
    cpuset(ctx, live, &mut out);
    peer_memory(ctx, &mut out);
    out
}

/// `job-rdma-devices`: uverbs devices, libibverbs, an ACTIVE port, RoCE GIDs.
fn rdma_devices(ctx: &Ctx, live: &LiveFacts, out: &mut Vec<Finding>) {
    let id = CheckId::JobRdmaDevices;
    let rdma_nics = !ctx.nics.is_empty();
    match &live.uverbs {
        Fact::Known(u) if u.is_empty() => out.push(Finding::new(id, if rdma_nics { Severity::Error } else { Severity::Warning }, Subject::Node, "no /dev/infiniband/uverbs* device is visible: libibverbs opens no HCA, NCCL falls back to NET/Socket", "give the container the RDMA devices (device plugin, --device=/dev/infiniband)").with("/dev/infiniband", "(no uverbs*)")),
        Fact::Known(u) => out.push(Finding::new(id, Severity::Info, Subject::Node, format!("{} uverbs device(s) visible: {}", u.len(), u.join(", ")), "none").with("/dev/infiniband", u.join(" "))),
        Fact::Unknown(r) => out.push(Finding::new(id, Severity::Unknown, Subject::Node, format!("/dev/infiniband not readable: {r}"), "run inside the job")),
    }
    match &live.ibverbs {
        Fact::Known(Ok(n)) => out.push(Finding::new(
            id,
            Severity::Info,
            Subject::Node,
            format!("libibverbs loads ({n})"),
            "none",
        )),
        Fact::Known(Err(e)) => out.push(Finding::new(
            id,
            Severity::Error,
            Subject::Node,
            format!("libibverbs does not load: {e} — NCCL's IB transport cannot start"),
            "install rdma-core (libibverbs1 and the provider, e.g. libmlx5) in the image",
        )),
        Fact::Unknown(r) => out.push(Finding::new(
            id,
            Severity::Unknown,
            Subject::Node,
            format!("libibverbs not tried: {r}"),
            "none",
        )),
    }
    let ports: Vec<(String, u32, bool)> = ctx
        .nics
        .iter()
        .flat_map(|d| d.os_devices.iter().filter(|o| o.kind == OsDeviceKind::Rdma))
        .flat_map(|o| {
            o.ports.iter().map(move |p| {
                (
                    o.name.clone(),
                    p.port,
                    p.state.as_ref().is_some_and(|s| s.0 == 4),
                )
            })
        })
        .collect();
    if !ports.is_empty() && !ports.iter().any(|p| p.2) {
        out.push(Finding::new(
            id,
            Severity::Error,
            Subject::Node,
            format!("none of the {} RDMA port(s) is ACTIVE", ports.len()),
            "bring a port up (cable, switch, subnet manager)",
        ));
    }
    if let Fact::Known(g) = &live.roce_gids {
        for (dev, port, nonzero, v2) in g {
            if *nonzero == 0 {
                out.push(Finding::new(id, Severity::Error, Subject::RdmaPort { device: dev.clone(), port: *port }, format!("{dev}/{port} (Ethernet) has no GID: RoCE cannot address the port (no IP address on its netdev?)"), "give the port's netdev an IP address; check NCCL_IB_GID_INDEX").with(format!("/sys/class/infiniband/{dev}/ports/{port}/gids"), "all zero"));
            } else if *v2 == 0 {
                out.push(
                    Finding::new(
                        id,
                        Severity::Warning,
                        Subject::RdmaPort {
                            device: dev.clone(),
                            port: *port,
                        },
                        format!("{dev}/{port}: {nonzero} GID(s), none RoCE v2"),
                        "check the netdev's IP and NCCL_IB_ROCE_VERSION_NUM",
                    )
                    .with(
                        format!("/sys/class/infiniband/{dev}/ports/{port}/gid_attrs/types"),
                        "no RoCE v2",
                    ),
                );
            }
        }
    }
}

/// `job-memlock`: RLIMIT_MEMLOCK.
fn memlock(live: &LiveFacts, out: &mut Vec<Finding>) {
    let id = CheckId::JobMemlock;
    match &live.memlock {
        Fact::Known(None) => out.push(Finding::new(id, Severity::Info, Subject::Node, "RLIMIT_MEMLOCK is unlimited", "none").with("getrlimit(RLIMIT_MEMLOCK)", "unlimited")),
        Fact::Known(Some(b)) if *b < 64 << 20 => out.push(Finding::new(id, Severity::Error, Subject::Node, format!("RLIMIT_MEMLOCK is {} KiB: ibv_reg_mr of NCCL's buffers fails (`NET/IB : Unable to register memory`)", b / 1024), "run with `ulimit -l unlimited` (docker --ulimit memlock=-1, Slurm PropagateResourceLimits)").with("getrlimit(RLIMIT_MEMLOCK)", format!("{b}"))),
        Fact::Known(Some(b)) => out.push(Finding::new(id, Severity::Warning, Subject::Node, format!("RLIMIT_MEMLOCK is {} MiB: large registrations may fail", b >> 20), "run with `ulimit -l unlimited`").with("getrlimit(RLIMIT_MEMLOCK)", format!("{b}"))),
        Fact::Unknown(r) => out.push(Finding::new(id, Severity::Unknown, Subject::Node, format!("RLIMIT_MEMLOCK not read: {r}"), "none")),
    }
}

/// `job-shm`: the size of /dev/shm.
fn shm(live: &LiveFacts, out: &mut Vec<Finding>) {
    let id = CheckId::JobShm;
    match &live.shm_bytes {
        Fact::Known(b) if *b < 512 << 20 => out.push(Finding::new(id, Severity::Warning, Subject::Node, format!("/dev/shm is {} MiB: NCCL's SHM transport and proxy buffers can run out (`Error while creating shared memory segment`)", b >> 20), "give the container a larger /dev/shm (docker --shm-size=1g, or --ipc=host)").with("/dev/shm", format!("{b} bytes"))),
        Fact::Known(b) => out.push(Finding::new(id, Severity::Info, Subject::Node, format!("/dev/shm is {} MiB", b >> 20), "none").with("/dev/shm", format!("{b} bytes"))),
        Fact::Unknown(r) => out.push(Finding::new(id, Severity::Unknown, Subject::Node, format!("/dev/shm not read: {r}"), "none")),
    }
}

/// `job-cpuset`: the cgroup cpuset against the cores `place` gives each GPU.
fn cpuset(ctx: &Ctx, live: &LiveFacts, out: &mut Vec<Finding>) {
    let id = CheckId::JobCpuset;
    match &live.cpus_allowed {
        Fact::Known(allowed) => {
            // place reads GPU pairs too (NVLink domains): the full view, built only here.
            let view = crate::analysis::pairing::NodeView::from_classifier(ctx.cl);
            let plan = crate::analysis::place::plan_with(
                ctx.topo,
                &view,
                &crate::analysis::place::PlaceOptions {
                    ranks: ctx.gpus.len().max(1),
                    cores_per_rank: None,
                },
            );
            match plan {
                Ok(p) => {
                    let mut outside = Vec::new();
                    for r in &p.ranks {
                        let cpus = crate::parse::cpulist::parse_list(r.cpus.as_bytes())
                            .unwrap_or_default();
                        if !cpus.is_empty() && !cpus.iter().any(|c| allowed.contains(c)) {
                            outside.push(format!("GPU {} (cores {})", r.gpu, r.cpus));
                        }
                    }
                    let list = crate::model::cpulist::format_list(allowed);
                    if outside.is_empty() {
                        out.push(Finding::new(id, Severity::Info, Subject::Node, format!("the job may run on CPUs {list}: every GPU has cores of its own NUMA node in it"), "none").with("/proc/self/status Cpus_allowed_list", list));
                    } else {
                        out.push(Finding::new(id, Severity::Warning, Subject::Node, format!("the job may run on CPUs {list} only: none of the cores `peerpath place` gives {} (ranks there run far from their GPU and NIC)", outside.join(", ")), "widen the cgroup cpuset, or place the job's ranks on the GPUs near its CPUs").with("/proc/self/status Cpus_allowed_list", list));
                    }
                }
                Err(e) => out.push(Finding::new(
                    id,
                    Severity::Unknown,
                    Subject::Node,
                    format!("no placement to compare the cpuset with: {e}"),
                    "none",
                )),
            }
        }
        Fact::Unknown(r) => out.push(Finding::new(
            id,
            Severity::Unknown,
            Subject::Node,
            format!("cpuset not read: {r}"),
            "none",
        )),
    }
}

/// `job-peer-memory`: peer memory, as the live topology shows it.
fn peer_memory(ctx: &Ctx, out: &mut Vec<Finding>) {
    let id = CheckId::JobPeerMemory;
    use super::gdr::PeerMemory as P;
    let (sev, words) = match super::gdr::peer_memory(ctx) {
        P::Registered => (
            Severity::Info,
            "a peer-memory client is registered (nvidia-peermem)",
        ),
        P::Loaded => (Severity::Info, "nvidia-peermem is loaded"),
        P::DmaBufOnly => (
            Severity::Info,
            "no peer module; dma-buf through the open kernel module (NCCL ≥ 2.13 with a dma-buf capable NIC driver)",
        ),
        P::LoadedNotRegistered => (
            Severity::Warning,
            "nvidia-peermem is loaded but not registered: NCCL ≤ 2.22.3 disables GDR",
        ),
        P::Missing => (
            Severity::Error,
            "no peer memory and no dma-buf: NCCL stages every NIC transfer through host memory",
        ),
        P::NoDriver => (Severity::Error, "no NVIDIA kernel driver is visible"),
        P::NotApplicable => (
            Severity::Info,
            "not applicable (no NVIDIA GPU or no RDMA NIC visible)",
        ),
        P::Unknown => (Severity::Unknown, "/sys/module is not visible from here"),
    };
    out.push(
        Finding::new(
            id,
            sev,
            Subject::Node,
            format!("GPUDirect RDMA mechanism seen from the job: {words}"),
            "load nvidia-peermem on the host, or use the open kernel module for dma-buf",
        )
        .remedy_only_if_error(),
    );
}
