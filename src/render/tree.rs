//! The lstopo-style tree of `peerpath scan`: NUMA nodes, host bridges, switches as one node with
//! their ports, endpoints with names, OS devices and the link on every hop.
//!
//! Links: each physical link is judged once, by the paths model's one rule
//! ([`crate::analysis::paths::link`]), and its mark (`DOWN: x8 of x16`) is printed on the
//! device below it (an endpoint, or a switch's upstream port); the root or downstream port
//! above it shows the same link plainly. A port with nothing under it shows its own link,
//! `link down` when its width reads 0 (an empty slot).

use crate::analysis::paths::{LinkHealth, Paths};
use crate::model::{Device, DeviceKind, Topology};
use std::fmt::Write;

/// Tree options.
#[derive(Debug, Clone, Copy, Default)]
pub struct TreeOptions {
    /// Show every function (uncore "system peripherals" under host bridges are folded by
    /// default) and every SR-IOV virtual function.
    pub all: bool,
}

fn label(k: DeviceKind) -> &'static str {
    match k {
        DeviceKind::Gpu => "GPU",
        DeviceKind::Accelerator => "Accelerator",
        DeviceKind::Nic => "NIC",
        DeviceKind::Nvme => "NVMe",
        DeviceKind::SwitchUpstream => "Switch",
        DeviceKind::SwitchDownstream => "Port",
        DeviceKind::RootPort => "RootPort",
        DeviceKind::Bridge => "Bridge",
        DeviceKind::Other => "PCI",
    }
}

/// ` [link (mark)]` of a device's upstream link, by the paths model's verdict on its edge; a
/// port with a device under it shows its link without a mark (the device below carries it).
fn link_part(p: &Paths, d: &Device) -> String {
    let Some(l) = d.link.as_ref() else {
        return String::new();
    };
    let Some(i) = p.index(&d.bdf) else {
        return String::new();
    };
    let health = match p.empty_port_link(i) {
        Some(h) => h,
        None if matches!(d.kind, DeviceKind::SwitchDownstream | DeviceKind::RootPort) => {
            LinkHealth::NoLink
        }
        None => p.edge(i).health,
    };
    format!(" [{}]", health.text(l))
}

fn describe(p: &Paths, d: &Device) -> String {
    let mut s = format!("{} {} \"{}\"", label(d.kind), d.bdf, d.display_name());
    if let Some(src) = d.name_source {
        s.push_str(&format!(" ({})", src.describe()));
    }
    let os: Vec<&str> = d
        .os_devices
        .iter()
        .filter(|o| {
            !matches!(
                o.kind,
                crate::model::OsDeviceKind::NvidiaGpu | crate::model::OsDeviceKind::AmdGpu
            )
        })
        .map(|o| o.name.as_str())
        .collect();
    if !os.is_empty() {
        s.push_str(&format!(" {}", os.join(" ")));
    }
    s.push_str(&link_part(p, d));
    if p.index(&d.bdf).and_then(|i| p.empty_port_link(i)).is_some() {
        s.push_str(" (empty)");
    }
    if let Some(slot) = &d.slot {
        s.push_str(&format!(" slot {slot}"));
    }
    if d.vf_count > 0 {
        s.push_str(&format!(" (+{} VFs)", d.vf_count));
    }
    if !d.listed {
        s.push_str(" (not in sys/bus/pci/devices)");
    }
    s
}

/// Renders the tree of a topology (builds its paths model: the links' verdicts come from it).
pub fn render(t: &Topology, opts: TreeOptions) -> String {
    render_with(&Paths::new(t), opts)
}

/// Renders the tree over an existing paths model.
pub fn render_with(p: &Paths, opts: TreeOptions) -> String {
    let t = p.topo();
    let mut out = String::new();
    let m = &t.machine;
    let _ = write!(out, "Machine ({} {})", t.source.kind, t.source.path);
    if let Some(model) = &m.cpu_model {
        let _ = write!(out, " — {model}");
    }
    if let Some(s) = m.sockets {
        let _ = write!(out, ", {s} socket{}", if s == 1 { "" } else { "s" });
    }
    let _ = writeln!(
        out,
        ", {} NUMA node{}",
        t.numa_nodes.len(),
        if t.numa_nodes.len() == 1 { "" } else { "s" }
    );
    if !m.hypervisor.is_empty() {
        let _ = writeln!(
            out,
            "  Virtual machine ({}): topology below may be synthetic",
            m.hypervisor[0].1
        );
    }
    if let Some(h) = &t.host_scope {
        let _ = writeln!(out, "  Host: {}", h.line());
    }
    for l in &t.source.limitations {
        let _ = writeln!(out, "  Note: {l}");
    }
    let mut placed = std::collections::HashSet::new();
    for n in &t.numa_nodes {
        let hbs: Vec<_> = t
            .host_bridges
            .iter()
            .filter(|h| h.numa_node == Some(n.id))
            .collect();
        let _ = writeln!(
            out,
            "  NUMANode {} (cpus {})",
            n.id,
            if n.cpus.is_empty() { "none" } else { &n.cpus }
        );
        for hb in hbs {
            placed.insert(hb.name.clone());
            host_bridge(p, &hb.name, 2, opts, &mut out);
        }
    }
    let rest: Vec<_> = t
        .host_bridges
        .iter()
        .filter(|h| !placed.contains(&h.name))
        .collect();
    if !rest.is_empty() {
        let _ = writeln!(out, "  NUMA node unknown");
        for hb in rest {
            host_bridge(p, &hb.name, 2, opts, &mut out);
        }
    }
    summary(t, &mut out);
    out
}

fn host_bridge(p: &Paths, name: &str, depth: usize, opts: TreeOptions, out: &mut String) {
    let t = p.topo();
    let pad = "  ".repeat(depth);
    let _ = writeln!(out, "{pad}HostBridge {name}");
    let roots = t.roots_of(name);
    let mut folded = 0;
    for d in roots {
        if !opts.all && d.kind == DeviceKind::Other && t.children(&d.bdf).is_empty() {
            folded += 1;
            continue;
        }
        device(p, d, depth + 1, opts, out);
    }
    if folded > 0 {
        let _ = writeln!(
            out,
            "{pad}  ({folded} other function{} on the root bus folded; --all shows them)",
            if folded == 1 { "" } else { "s" }
        );
    }
}

fn device(p: &Paths, d: &Device, depth: usize, opts: TreeOptions, out: &mut String) {
    let t = p.topo();
    if d.is_vf() && !opts.all {
        return;
    }
    let pad = "  ".repeat(depth);
    if d.kind == DeviceKind::SwitchUpstream {
        let sw = t.switch_of_port(&d.bdf);
        let ports = sw.map(|s| s.downstream.len()).unwrap_or(0);
        let _ = writeln!(
            out,
            "{pad}Switch {} \"{}\" upstream {}{} ({ports} downstream port{})",
            sw.map(|s| s.id.as_str()).unwrap_or("?"),
            d.display_name(),
            d.bdf,
            link_part(p, d),
            if ports == 1 { "" } else { "s" }
        );
        for c in t.children(&d.bdf) {
            if c.kind == DeviceKind::SwitchDownstream {
                let kids = t.children(&c.bdf);
                let link = link_part(p, c);
                if kids.is_empty() {
                    let _ = writeln!(out, "{pad}  Port {}{link} (empty)", c.bdf);
                } else {
                    let _ = writeln!(out, "{pad}  Port {}{link}", c.bdf);
                    for k in kids {
                        device(p, k, depth + 2, opts, out);
                    }
                }
            } else {
                device(p, c, depth + 1, opts, out);
            }
        }
        return;
    }
    let _ = writeln!(out, "{pad}{}", describe(p, d));
    for c in t.children(&d.bdf) {
        device(p, c, depth + 1, opts, out);
    }
}

fn summary(t: &Topology, out: &mut String) {
    let count = |k| t.of_kind(k).count();
    let rdma = t
        .devices
        .iter()
        .filter(|d| d.rdma_names().next().is_some())
        .count();
    let _ = writeln!(
        out,
        "Found: {} GPU{}, {} accelerator{}, {} NIC{} ({} with RDMA), {} NVMe, {} PCIe switch{}",
        count(DeviceKind::Gpu),
        if count(DeviceKind::Gpu) == 1 { "" } else { "s" },
        count(DeviceKind::Accelerator),
        if count(DeviceKind::Accelerator) == 1 {
            ""
        } else {
            "s"
        },
        count(DeviceKind::Nic),
        if count(DeviceKind::Nic) == 1 { "" } else { "s" },
        rdma,
        count(DeviceKind::Nvme),
        t.switches.len(),
        if t.switches.len() == 1 { "" } else { "es" }
    );
    partitions(t, out);
    nvlink_domain(t, out);
    let cannot_tell = match crate::analysis::audit::scope::not_judged(t) {
        Some(crate::analysis::audit::scope::NotJudged::CannotTell(why)) => Some(why),
        _ => None,
    };
    if let Some(why) = &cannot_tell {
        let _ = writeln!(out, "Whether this node has a GPU cannot be told: {why}.");
    } else if count(DeviceKind::Gpu) + count(DeviceKind::Accelerator) == 0 {
        let _ = writeln!(
            out,
            "No GPU or accelerator found: there is no GPUDirect path to judge on this node."
        );
    }
    if rdma == 0 && cannot_tell.is_none() {
        let _ = writeln!(
            out,
            "No RDMA-capable NIC found ({}).",
            match t.source.kind.as_str() {
                "sysfs" | "snapshot" => "no /sys/class/infiniband device",
                _ => "this input lists no RDMA device",
            }
        );
    }
    if !t.warnings.is_empty() {
        let _ = writeln!(
            out,
            "{} warning{} (listed in --format json):",
            t.warnings.len(),
            if t.warnings.len() == 1 { "" } else { "s" }
        );
        for w in t.warnings.iter().take(5) {
            let _ = writeln!(out, "  {}: {}", w.path, w.message);
        }
        if t.warnings.len() > 5 {
            let _ = writeln!(out, "  … and {} more", t.warnings.len() - 5);
        }
    }
}

/// One line per AMD GPU partitioned beyond SPX/NPS1 (the device's `amd` facts: its
/// `current_*_partition` files, or hwloc's RSMI devices counted), so a CPX node's "4 GPUs" is
/// never read as 4 GPUs to RCCL.
fn partitions(t: &Topology, out: &mut String) {
    for d in &t.devices {
        let Some(a) = &d.amd else { continue };
        let c = a.compute_partition.as_deref();
        let m = a.memory_partition.as_deref();
        let n = if a.kfd_nodes.is_empty() {
            a.partition_count.unwrap_or(1)
        } else {
            a.kfd_nodes.len() as u32
        };
        if c.is_none_or(|c| c == "SPX") && m.is_none_or(|m| m == "NPS1") && n <= 1 {
            continue;
        }
        let _ = writeln!(
            out,
            "Partitioned: AMD GPU {} in {}{}: {n} compute partition(s), each a GPU to RCCL and ROCm",
            d.bdf,
            c.unwrap_or("a compute mode not named for this device"),
            m.map(|m| format!("/{m}")).unwrap_or_default(),
        );
    }
}

/// One line for a host with NVIDIA GPUs: the NVLink domain they are in
/// ([`crate::analysis::nvdomain::host_domain`]), none (a fact), their disagreement, or why it
/// cannot be told.
fn nvlink_domain(t: &Topology, out: &mut String) {
    use crate::analysis::nvdomain::{HostDomain, host_domain, nvidia_gpu_count};
    if nvidia_gpu_count(t) == 0 {
        return;
    }
    let _ = match host_domain(t) {
        HostDomain::Domain { id, gpus, evidence } => writeln!(
            out,
            "NVLink domain: {id} ({gpus} GPU{}; {evidence})",
            if gpus == 1 { "" } else { "s" }
        ),
        HostDomain::NoDomain { reason } => writeln!(out, "NVLink domain: none ({reason})"),
        HostDomain::Disagree { groups } => writeln!(
            out,
            "NVLink domain: the GPUs disagree: {}",
            groups
                .iter()
                .map(|(d, gs)| format!(
                    "{d}: {}",
                    gs.iter()
                        .map(|b| b.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        HostDomain::Unknown { reason } => writeln!(out, "NVLink domain: unknown ({reason})"),
    };
}
