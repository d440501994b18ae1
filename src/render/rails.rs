//! Text of `peerpath rails`: the NVLink domains, the fabric ports leaving them, the
//! rail-optimised verdict with its problems, and the cabling plant. Data: a [`Rails`] report from
//! [`crate::analysis::rails::build`].

use crate::analysis::rails::{Plant, Rails};
use std::fmt::Write as _;

/// Renders the rails report as text.
pub fn render_text(r: &Rails) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Scale-up domains (NVLink):");
    if !r.nvlink_visible {
        let _ = writeln!(
            s,
            "  NVLink state not visible to this scan (no NVML): each GPU shown alone"
        );
    }
    for (i, d) in r.domains.iter().enumerate() {
        let _ = writeln!(
            s,
            "  domain {i}: {}{}",
            d.gpus.join(" "),
            if d.nvlink { "" } else { " (no NVLink)" }
        );
    }
    let _ = writeln!(s, "\nFabric ports leaving the domain (one node):");
    let _ = writeln!(
        s,
        "  {:<5} {:<6} {:<14} {:<12} {:<14} {:<5} {:<5} {:<8} link",
        "rail", "gpu", "gpu bdf", "nic", "nic bdf", "port", "path", "speed"
    );
    // Rows in rail order: ports, GPUs without a rail in their rail's place, ports on no rail
    // last.
    let mut rows: Vec<(Option<usize>, String)> = r
        .ports
        .iter()
        .map(|p| {
            (
                p.rail,
                format!(
                    "  {:<5} {:<6} {:<14} {:<12} {:<14} {:<5} {:<5} {:<8} {}",
                    p.rail.map_or("none".to_string(), |r| r.to_string()),
                    if p.gpus.is_empty() {
                        "-".to_string()
                    } else {
                        p.gpus.join(",")
                    },
                    p.gpu_bdf.as_deref().unwrap_or("-"),
                    p.nic,
                    p.nic_bdf,
                    p.port.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
                    p.path,
                    p.speed,
                    p.link_layer.as_deref().unwrap_or("?")
                ),
            )
        })
        .collect();
    rows.extend(r.missing.iter().map(|m| {
        (
            m.rail,
            format!(
                "  {:<5} {:<6} {:<14} no NIC within PXB: no port on this rail",
                m.rail.map_or("-".to_string(), |r| r.to_string()),
                m.gpu,
                m.gpu_bdf
            ),
        )
    }));
    rows.sort_by_key(|(rail, _)| (rail.is_none(), *rail));
    for (_, row) in rows {
        let _ = writeln!(s, "{row}");
    }
    if !r.other_nics.is_empty() {
        let _ = writeln!(s, "  not on a rail: {}", r.other_nics.join(", "));
    }
    if r.rail_optimised {
        let _ = writeln!(
            s,
            "\nRail-optimised: yes (one NIC per GPU, each within PXB, none shared)"
        );
    } else {
        let _ = writeln!(s, "\nRail-optimised: NO");
        for p in &r.problems {
            let _ = writeln!(s, "  - {p}");
        }
    }
    let pl = |p: &Plant| {
        format!(
            "{} leaf ports, {} node transceivers + {} switch transceivers, {} fibre runs",
            p.switch_ports, p.node_transceivers, p.switch_transceivers, p.fibres
        )
    };
    let _ = writeln!(s, "\nPlant per node: {}", pl(&r.plant_per_node));
    if r.nodes > 1 {
        let _ = writeln!(s, "For {} nodes, by rail (one leaf per rail):", r.nodes);
        for g in &r.by_rail {
            if g.ports == 0 {
                let _ = writeln!(
                    s,
                    "  rail {:<3} leaf {:<3} no port from these nodes (its GPU has no NIC within PXB)",
                    g.rail, g.rail
                );
            } else {
                let _ = writeln!(
                    s,
                    "  rail {:<3} leaf {:<3} {} x {}",
                    g.rail, g.rail, g.ports, g.speed
                );
            }
        }
        if r.off_rail_ports > 0 {
            let _ = writeln!(
                s,
                "  no rail   leaf ?   {} port(s) within PXB of no GPU: the topology cannot tell their leaf",
                r.off_rail_ports * r.nodes
            );
        }
        let _ = writeln!(s, "Total: {}", pl(&r.plant_total));
    }
    s
}
