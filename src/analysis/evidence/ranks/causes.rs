//! Why a rank is off, and which NIC an index names: the causes a process's own lines show
//! (`NCCL_IB_HCA` selecting nothing, every NIC disabled, a rerouted pair, the NIC list of the
//! process or its host), read by [`super::judge`] for each rank it cannot call `used`.

use super::*;
/// What a process's `NCCL_IB_HCA` did to its NIC list, read as its release reads the variable
/// (`parse::nccl_env`): HCAs it selected only as prefixes of a name it spells (`mlx5_1` taking
/// `mlx5_10`), and listed HCAs it would not select (then the variable shown is not the one the
/// process ran with).
pub(super) fn ib_hca_note(source: &str, p: &Proc) -> Option<String> {
    use crate::parse::nccl_env::{self, Grammar};
    let (value, whence) = p.env.get("NCCL_IB_HCA")?;
    let (list, _) = p.nic_list().filter(|(l, _)| l.transport != "Socket")?;
    let (lo, hi) = (p.version.lo, p.version.hi);
    let (g_lo, g_hi) = (Grammar::of(lo.0, lo.1), Grammar::of(hi.0, hi.1));
    let names: Vec<(String, Option<u32>)> = list
        .nics
        .iter()
        .flat_map(|n| {
            if n.members.is_empty() {
                vec![(n.name.clone(), n.port)]
            } else {
                n.members.iter().map(|m| (m.name.clone(), m.port)).collect()
            }
        })
        .collect();
    // The release decides the reading; where it is not narrow enough, only a value every
    // reader reads alike on these NICs.
    if g_lo != g_hi && !nccl_env::selection_by_release(value, &names).is_empty() {
        return None;
    }
    let l = nccl_env::parse_as(value, g_lo);
    let host = format!("{source}: {}:{}", p.host, p.pid);
    let refused: Vec<&str> = names
        .iter()
        .filter(|(n, port)| !l.selects(n, *port))
        .map(|(n, _)| n.as_str())
        .collect();
    if !refused.is_empty() {
        return Some(format!(
            "{host}: NCCL_IB_HCA={value} ({whence}) would not select {} as {} reads it, yet NCCL lists it: the process ran with another value",
            refused.join(", "),
            if g_lo == g_hi {
                g_lo.releases()
            } else {
                "every NCCL release"
            }
        ));
    }
    if l.exact || l.exclude {
        return None;
    }
    // An entry that spells one HCA's whole name (`mlx5_1`) and, as a prefix, also took others
    // (`mlx5_10`): the surprise; a deliberate prefix (`mlx5`) names no HCA whole.
    let by_prefix: Vec<&str> = names
        .iter()
        .filter(|(n, _)| {
            l.entries.iter().any(|e| {
                e.name != *n && n.starts_with(&e.name) && names.iter().any(|(m, _)| *m == e.name)
            })
        })
        .map(|(n, _)| n.as_str())
        .collect();
    (!by_prefix.is_empty()).then(|| {
        format!(
            "{host}: NCCL_IB_HCA={value} ({whence}) names are prefixes, so NCCL also took {} (write `={}` to select exactly the HCAs named)",
            by_prefix.join(", "),
            value
        )
    })
}

/// `[0]mlx5_0:1/IB` as the list prints it.
pub(super) fn nic_text(n: &crate::parse::nccl_log::NicEntry) -> String {
    if !n.members.is_empty() {
        let m: Vec<String> = n.members.iter().map(nic_text).collect();
        return format!("[{}]={{{}}}", n.index, m.join(", "));
    }
    let mut s = format!("[{}]{}", n.index, n.name);
    if let Some(p) = n.port {
        s.push_str(&format!(":{p}"));
    }
    if let Some(a) = &n.addr {
        s.push_str(&format!(":{a}"));
    }
    if let Some(l) = &n.link {
        s.push_str(&format!("/{l}"));
    }
    s
}

/// Names a NIC index from the process's (or its host's) NIC list and virtual devices.
pub(super) fn name_nic(procs: &Procs, me: usize, n: &mut NicUse, hi: version::Release) {
    let list = from_host(procs, me, "nic list", |p| p.nic_list());
    let virt = from_host(procs, me, "virtual nics", |p| {
        let v = p.virtual_nics();
        (!v.is_empty()).then_some(v)
    });
    if n.net.as_deref() == Some("Socket") {
        if let Some(((l, _), _)) = &list
            && l.transport == "Socket"
        {
            n.name = l
                .nics
                .iter()
                .find(|e| e.index == n.index)
                .map(|e| e.name.clone());
        }
        return;
    }
    let Some(((l, complete), other)) = list.filter(|((l, _), _)| l.transport != "Socket") else {
        n.note = Some("no `NET/… : Using` line in the log: the NIC's name is not shown".into());
        return;
    };
    let physical = l.nics.len() as u32;
    if let Some(e) = l.nics.iter().find(|e| e.index == n.index) {
        n.name = Some(if e.members.is_empty() {
            e.name.clone()
        } else {
            e.members
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join("+")
        });
        if let Some(pid) = other {
            n.note = Some(format!(
                "named from the NIC list of pid {pid} on the same host"
            ));
        }
        return;
    }
    if !complete {
        n.note = Some(format!(
            "the NIC list was cut after {physical} entries: index {} is not shown",
            n.index
        ));
        return;
    }
    if n.index >= physical {
        if let Some((v, _)) = &virt
            && let Some(v) = v.iter().find(|v| v.index == n.index)
        {
            n.name = Some(v.name.clone());
            n.virtual_nic = true;
            return;
        }
        if hi >= (24, 0) {
            n.virtual_nic = true;
            n.note = Some(format!(
                "index {} is above the {physical} physical NICs listed: a virtual NIC (NCCL ≥ 2.24 merges NICs); its `Made virtual device` line is not in the log",
                n.index
            ));
        } else {
            n.note = Some(format!(
                "index {} is above the {physical} NICs listed, and this release (< 2.24) makes no virtual NICs: the list seen is not the one this connection used",
                n.index
            ));
        }
    }
}

/// The cause of an `off` verdict.
#[allow(clippy::too_many_arguments)]
pub(super) fn off_cause(
    procs: &Procs,
    me: Option<usize>,
    s: &Subject,
    conns: &[&(usize, &NetChannel, &Entry)],
    gpu: &[&(usize, &GpuGdr, &Entry, usize)],
    reroute: &[&Rerouted],
    socket: bool,
    socket_net: Option<&(usize, String)>,
    plugin_off: Option<(usize, &str)>,
    rings: Option<(u32, usize)>,
    lo: version::Release,
    hi: version::Release,
    env_of: &dyn Fn(&str) -> Option<(String, String)>,
) -> Cause {
    let pi = me.or_else(|| gpu.first().map(|g| g.3));
    if socket {
        let nodev = pi.and_then(|m| from_host(procs, m, "no device", |p| p.no_device()));
        let text = match (nodev, socket_net) {
            (Some((line, _)), _) => format!(
                "no RDMA device: `NET/IB : No device found.` (line {line}), so NCCL fell back to NET/Socket"
            ),
            (None, Some((line, why))) => format!(
                "NCCL's network is Socket: {why} (line {line}) — no RDMA device or verbs library was usable"
            ),
            (None, None) => "connections over NET/Socket: NCCL used no RDMA device (the `No device found` line is not in this copy)".into(),
        };
        return Cause {
            kind: CauseKind::Socket,
            text,
        };
    }
    if let Some((line, text)) = plugin_off {
        return Cause {
            kind: CauseKind::PluginDisabled,
            text: format!(
                "the net plugin disabled GDR: `NET/OFI {text}` (line {line}) — its provider cannot register GPU memory (libfabric FI_HMEM / CUDA API use), so data is staged through host memory"
            ),
        };
    }
    if let Some((v, w)) = env_of("NCCL_NET_GDR_LEVEL")
        && (v.eq_ignore_ascii_case("LOC") || v.trim() == "0")
    {
        return Cause {
            kind: CauseKind::GdrLevelEnv,
            text: format!(
                "disabled by NCCL_NET_GDR_LEVEL={v} ({w}): level LOC admits no GPU–NIC path"
            ),
        };
    }
    if let Some(g) = gpu.iter().find(|g| !g.1.enabled) {
        let (d, l) = (g.1.distance, g.1.level);
        let name = |c: Option<u32>| c.map_or("?".to_string(), |c| version::decode(c, lo, hi));
        let text = match (d, l) {
            (Some(d), Some(l)) => format!(
                "`GPU Direct RDMA Disabled … (distance {d} > {l})` (line {}): the GPU–NIC path {} is beyond the GDR level {} (numbering of NCCL {})",
                g.2.line,
                name(Some(d)),
                name(Some(l)),
                version::range_text(lo, hi)
            ),
            _ => format!(
                "`GPU Direct RDMA Disabled for GPU {} / HCA {}` (line {}), distance not shown",
                g.1.gpu, g.1.hca, g.2.line
            ),
        };
        return Cause {
            kind: CauseKind::Distance,
            text,
        };
    }
    if let Some(r) = reroute.first() {
        return Cause {
            kind: CauseKind::PathRerouted,
            text: r.text.clone(),
        };
    }
    let used: BTreeSet<u32> = conns.iter().filter_map(|c| c.1.dev).collect();
    let nic_lines = pi.and_then(|m| {
        from_host(procs, m, "nic gdr", |p| {
            let v = p.nic_gdr();
            (!v.is_empty()).then_some(v)
        })
    });
    if let Some((lines, _)) = &nic_lines {
        if let Some((n, line)) = lines.iter().find(|(n, _)| n.no_module) {
            let hcas: Vec<String> = lines
                .iter()
                .filter(|(n, _)| n.no_module)
                .map(|(n, _)| format!("{} '{}'", n.hca, n.name))
                .collect();
            return Cause {
                kind: CauseKind::NoModule,
                text: format!(
                    "no peer-memory module: `NET/{} : GPU Direct RDMA Disabled for HCA {} '{}' (no module)` (line {line}; printed for HCA {}) — nvidia-peermem (or nv_peer_mem) is not loaded, so every NIC of the node is without GDR",
                    n.transport,
                    n.hca,
                    n.name,
                    hcas.join(", ")
                ),
            };
        }
        if let Some((n, line)) = lines
            .iter()
            .find(|(n, _)| !n.enabled && (used.is_empty() || used.contains(&n.hca)))
        {
            let forced = env_of("NCCL_NET_GDR_LEVEL");
            let text = match forced {
                Some((v, w)) => format!(
                    "NCCL's per-NIC check: `GPU Direct RDMA Disabled for HCA {} '{}'` (line {line}) although NCCL_NET_GDR_LEVEL={v} ({w}) asks for it — neither nvidia-peermem registered with the HCA nor dma-buf usable",
                    n.hca, n.name
                ),
                None => format!(
                    "NCCL's per-NIC check: `GPU Direct RDMA Disabled for HCA {} '{}'` (line {line}) — neither nvidia-peermem registered with the HCA nor dma-buf usable",
                    n.hca, n.name
                ),
            };
            return Cause {
                kind: CauseKind::NicDisabled,
                text,
            };
        }
    }
    if conns.iter().any(|c| c.1.send && c.1.gdr == Some(false))
        && conns.iter().all(|c| !c.1.send || c.1.gdr == Some(false))
        && conns.iter().any(|c| !c.1.send && c.1.gdr == Some(true))
        && let Some((v, w)) = env_of("NCCL_NET_GDR_READ")
        && v.trim() == "0"
    {
        return Cause {
            kind: CauseKind::GdrReadEnv,
            text: format!("sends without GDR because NCCL_NET_GDR_READ=0 ({w}); receives use it"),
        };
    }
    if let Some((0, line)) = rings.filter(|_| conns.is_empty()) {
        return Cause {
            kind: CauseKind::RingSummary,
            text: format!(
                "the ring summary says `GDR 0` (line {line}): at least one rank's ring connection is without GDR"
            ),
        };
    }
    let _ = s;
    Cause {
        kind: CauseKind::NotShown,
        text: "NET connections without /GDRDMA, and no line in this log says why (no per-GPU or per-NIC GDR line, no NCCL_NET_GDR_LEVEL): usually no peer memory (nvidia-peermem not loaded, no dma-buf) — NCCL_DEBUG_SUBSYS=INIT,NET shows the per-NIC check".into(),
    }
}

/// The HCAs of a process when NCCL's per-NIC check (2.13+, or the ≤ 2.12 `(no module)` line)
/// said Disabled for every one it lists — every NIC of its `Using` list when the log has one —
/// with their names and lines: then no NET connection of the process can use GDR.
pub(super) fn all_nics_disabled(procs: &Procs, me: usize) -> Option<(Vec<String>, Vec<usize>)> {
    let (lines, _) = from_host(procs, me, "nic gdr", |p| {
        let v = p.nic_gdr();
        (!v.is_empty()).then_some(v)
    })?;
    if lines.iter().any(|(n, _)| n.enabled) {
        return None;
    }
    if let Some(((list, _), _)) = from_host(procs, me, "nic list", |p| p.nic_list())
        && list.transport != "Socket"
        && !list
            .nics
            .iter()
            .all(|e| lines.iter().any(|(n, _)| n.hca == e.index))
    {
        return None;
    }
    Some((
        lines
            .iter()
            .map(|(n, _)| format!("HCA {} '{}'", n.hca, n.name))
            .collect(),
        lines.iter().map(|(_, l)| *l).collect(),
    ))
}

/// A GPU–NET pair NCCL's path print routes through the CPU although its topology print puts
/// both under one PCI switch.
pub(super) struct Rerouted {
    pub(super) host: String,
    pub(super) gpu: u64,
    pub(super) line: usize,
    pub(super) text: String,
}

/// Finds [`Rerouted`] pairs: topology trees (indentation) per process, path lines per host.
pub(super) fn rerouted_pairs(procs: &[Proc]) -> Vec<Rerouted> {
    // (host) → parent PCI switch of each GPU and of each NET (through its NIC), with the pid.
    let mut parent: BTreeMap<(String, String, u64), (NodeId, u32)> = BTreeMap::new();
    for p in procs {
        let mut stack: Vec<(usize, NodeId)> = Vec::new();
        for e in &p.entries {
            let Record::TopoNode(n) = &e.record else {
                continue;
            };
            while stack.last().is_some_and(|(ind, _)| *ind >= n.indent) {
                stack.pop();
            }
            let key = (n.node.kind.clone(), n.node.id);
            match n.node.kind.as_str() {
                "GPU" | "NIC" => {
                    if let Some((_, par)) = stack.last().filter(|(_, par)| par.kind == "PCI") {
                        parent.insert((p.host.clone(), key.0.clone(), key.1), (par.clone(), p.pid));
                    }
                }
                "NET" => {
                    if let Some((_, nic)) = stack.last().filter(|(_, x)| x.kind == "NIC")
                        && let Some(sw) =
                            parent.get(&(p.host.clone(), "NIC".into(), nic.id)).cloned()
                    {
                        parent.insert((p.host.clone(), "NET".into(), n.node.id), sw);
                    }
                }
                _ => {}
            }
            stack.push((n.indent, n.node.clone()));
        }
    }
    let mut out: Vec<Rerouted> = Vec::new();
    for p in procs {
        for e in &p.entries {
            let Record::TopoPaths(tp) = &e.record else {
                continue;
            };
            for path in &tp.paths {
                let (gpu, net) = match (tp.from.kind.as_str(), path.to.kind.as_str()) {
                    ("NET", "GPU") => (&path.to, &tp.from),
                    ("GPU", "NET") => (&tp.from, &path.to),
                    _ => continue,
                };
                if !matches!(path.path.as_str(), "PHB" | "SYS" | "P2C") {
                    continue;
                }
                let (Some((gs, gpid)), Some((ns, npid))) = (
                    parent.get(&(p.host.clone(), "GPU".into(), gpu.id)),
                    parent.get(&(p.host.clone(), "NET".into(), net.id)),
                ) else {
                    continue;
                };
                if gs.id != ns.id
                    || out.iter().any(|r| {
                        r.host == p.host
                            && r.gpu == gpu.id
                            && r.text.contains(&format!("NET/{:x} ", net.id))
                    })
                {
                    continue;
                }
                let other = if *gpid != p.pid || *npid != p.pid {
                    format!(
                        " (the topology print is from pid {gpid}, the path print from pid {}: two runs, possibly two NCCL versions)",
                        p.pid
                    )
                } else {
                    String::new()
                };
                out.push(Rerouted {
                    host: p.host.clone(),
                    gpu: gpu.id,
                    line: e.line,
                    text: format!(
                        "NCCL's path print (line {}) gives NET/{:x} ↔ GPU {:x} as {} ({} hops), yet its topology print puts both under switch PCI/{:x}: NCCL routes this pair through the CPU because it decided GPUDirect RDMA is not possible for it (paths.cc: no GDR → path via the local CPU){other}",
                        e.line, net.id, gpu.id, path.path, path.hops, gs.id
                    ),
                });
            }
        }
    }
    out
}
