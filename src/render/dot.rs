//! Graphviz DOT of the topology, for anyone who wants to draw it their own way
//! (`dot -Tsvg`).
//!
//! Data: the topology's NUMA nodes, host bridges, PCI devices (bridges and ports folded into
//! their switches), PCIe links (current/max speed and width from sysfs) and NVLinks. Written by
//! hand (the format is small); every identifier and label is quoted and escaped.

use crate::analysis::paths::{LinkHealth, Paths};
use crate::model::{Bdf, Device, DeviceKind, Topology};
use std::collections::BTreeSet;
use std::fmt::Write;

/// Quotes a DOT string (escapes `"` and `\`, turns newlines into `\n`).
pub fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn shown(d: &Device) -> bool {
    !d.is_vf()
        && matches!(
            d.kind,
            DeviceKind::Gpu | DeviceKind::Accelerator | DeviceKind::Nic | DeviceKind::Nvme
        )
}

/// Node id of a device in the drawing: its switch when it is a switch port, else itself.
fn node_id(t: &Topology, d: &Device) -> String {
    match t.switch_of_port(&d.bdf) {
        Some(s)
            if matches!(
                d.kind,
                DeviceKind::SwitchUpstream | DeviceKind::SwitchDownstream
            ) =>
        {
            s.id.clone()
        }
        _ => d.bdf.to_string(),
    }
}

/// Renders the DOT text: NUMA nodes as clusters holding their host bridges; switches as boxes;
/// GPUs/NICs/NVMe as labelled nodes; PCIe edges labelled with the link; NVLinks as bold
/// undirected-looking edges.
pub fn render(p: &Paths) -> String {
    let t = p.topo();
    let mut s = String::new();
    let _ = writeln!(s, "digraph peerpath {{");
    let _ = writeln!(
        s,
        "  graph [rankdir=TB, fontname=\"Helvetica\", label={}];",
        quote(&format!("peerpath: {}", t.source.path))
    );
    let _ = writeln!(s, "  node [fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(s, "  edge [fontname=\"Helvetica\", fontsize=8];");
    // Keep only devices on a path to a shown endpoint.
    let keep: BTreeSet<Bdf> =
        p.upward_closure(t.devices.iter().filter(|d| shown(d)).map(|d| &d.bdf));
    let kept = |d: &Device| keep.contains(&d.bdf);
    // A host bridge node, drawn only when a kept device hangs below it.
    let host_bridge = |s: &mut String, indent: &str, name: &str, label: &str| {
        if t.devices.iter().any(|d| d.host_bridge == name && kept(d)) {
            let _ = writeln!(
                s,
                "{indent}{} [shape=house, label={}];",
                quote(name),
                quote(label)
            );
        }
    };
    for n in &t.numa_nodes {
        let _ = writeln!(
            s,
            "  subgraph {} {{",
            quote(&format!("cluster_numa{}", n.id))
        );
        let _ = writeln!(
            s,
            "    label={};",
            quote(&format!("NUMA {} (CPUs {})", n.id, n.cpus))
        );
        for hb in t.host_bridges.iter().filter(|h| h.numa_node == Some(n.id)) {
            host_bridge(&mut s, "    ", &hb.name, &hb.name);
        }
        let _ = writeln!(s, "  }}");
    }
    for hb in t.host_bridges.iter().filter(|h| h.numa_node.is_none()) {
        host_bridge(&mut s, "  ", &hb.name, &format!("{} (NUMA ?)", hb.name));
    }
    for sw in &t.switches {
        if keep.contains(&sw.upstream) {
            let up = t.device(&sw.upstream);
            let name = up.map(|d| d.display_name()).unwrap_or_default();
            let _ = writeln!(
                s,
                "  {} [shape=box, style=rounded, label={}];",
                quote(&sw.id),
                quote(&format!("{} switch\n{}\n{}", sw.id, sw.upstream, name))
            );
        }
    }
    for d in t.devices.iter().filter(|d| kept(d)) {
        let id = node_id(t, d);
        if id != d.bdf.to_string() {
            continue; // folded into its switch
        }
        let (shape, color) = match d.kind {
            DeviceKind::Gpu | DeviceKind::Accelerator => ("box3d", "palegreen"),
            DeviceKind::Nic => ("component", "lightblue"),
            DeviceKind::Nvme => ("cylinder", "lightyellow"),
            _ => ("ellipse", "white"),
        };
        let mut label = format!("{} {}\n{}", d.kind.as_str(), d.bdf, d.display_name());
        let os: Vec<&str> = d.rdma_names().chain(d.net_names()).collect();
        if !os.is_empty() {
            label.push_str(&format!("\n{}", os.join(" ")));
        }
        let _ = writeln!(
            s,
            "  {} [shape={shape}, style=filled, fillcolor={color}, label={}];",
            quote(&id),
            quote(&label)
        );
    }
    let mut edges: BTreeSet<(String, String, String, bool)> = BTreeSet::new();
    for d in t.devices.iter().filter(|d| kept(d)) {
        let me = node_id(t, d);
        let up = match d.parent.and_then(|p| t.device(&p)) {
            Some(p) => node_id(t, p),
            None => d.host_bridge.clone(),
        };
        if up == me {
            continue; // inside one switch
        }
        // The link into `d` is described by `d`'s own link attributes (upstream side) and
        // judged once, on the device below it, by the paths model's rule; a port's edge shows
        // its link plainly (the device under it carries the verdict).
        let health = match p.index(&d.bdf) {
            Some(_) if matches!(d.kind, DeviceKind::RootPort | DeviceKind::SwitchDownstream) => {
                LinkHealth::NoLink
            }
            Some(i) => p.edge(i).health,
            None => LinkHealth::NoLink,
        };
        let label = d.link.map(|l| health.text(&l)).unwrap_or_default();
        edges.insert((up, me, label, health.is_fault()));
    }
    for (a, b, label, degraded) in edges {
        let color = if degraded {
            ", color=red, fontcolor=red"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  {} -> {} [label={}{color}];",
            quote(&a),
            quote(&b),
            quote(&label)
        );
    }
    for l in &t.nvlinks {
        let b =
            l.b.map(|b| b.to_string())
                .unwrap_or_else(|| "nvswitch".to_string());
        if l.b.is_none() {
            let _ = writeln!(
                s,
                "  \"nvswitch\" [shape=doubleoctagon, label=\"NVSwitch fabric\"];"
            );
        }
        let _ = writeln!(
            s,
            "  {} -> {} [dir=both, style=bold, color=darkgreen, label={}];",
            quote(&l.a.to_string()),
            quote(&b),
            quote(&format!("NV{}", l.count))
        );
    }
    let _ = writeln!(s, "}}");
    s
}
