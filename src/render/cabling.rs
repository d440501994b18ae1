//! Text of `peerpath rails --fabric`: the leaves by rail as the fabric forms them, each cabling
//! finding in words with its evidence, the verdict, and what the inputs could not show. Data: a
//! [`Cabling`] report from [`crate::analysis::cabling::judge`].

use crate::analysis::cabling::{Cabling, CablingFinding, FindingKind};
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn gbps(g: f64) -> String {
    format!("{}G", g.round() as u64)
}

fn who(f: &CablingFinding) -> String {
    let host = f.host.as_deref().unwrap_or("?");
    let gpus = if f.gpus.is_empty() {
        String::new()
    } else {
        format!(" ({})", f.gpus.join(", "))
    };
    format!("{host} {}{gpus}", f.adapters.join(" + "))
}

/// One finding in words (one line, evidence after).
pub fn finding_line(f: &CablingFinding) -> String {
    let leaf = f.leaf.as_deref().unwrap_or("?");
    let ports = f.leaf_ports.join(", ");
    match f.kind {
        FindingKind::WrongRail => format!(
            "WRONG RAIL   {} is rail {} but is cabled to {leaf} port {ports}, a rail-{} leaf; it should reach {}",
            who(f),
            f.rail.map_or("?".into(), |r| r.to_string()),
            f.leaf_rail.map_or("?".into(), |r| r.to_string()),
            if f.should_reach.is_empty() {
                "a leaf of its rail (the map has none)".to_string()
            } else {
                f.should_reach.join(" or ")
            }
        ),
        FindingKind::SharedLeaf => format!(
            "SHARED LEAF  {} are cabled to one leaf, {leaf} (ports {ports}): two rails of one host on one leaf",
            who(f)
        ),
        FindingKind::MixedLeaf => format!(
            "MIXED LEAF   {leaf} carries no single rail: {}",
            f.rails_on_leaf
                .iter()
                .map(|(r, n)| format!("rail {r} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        FindingKind::SlowLink => format!(
            "SLOW LINK    {} on {leaf} port {ports} runs {} ({}) where its peers run {}",
            who(f),
            f.rate.as_deref().unwrap_or("?"),
            f.gbps.map_or("?".into(), gbps),
            f.peers_gbps.map_or("?".into(), gbps)
        ),
        FindingKind::Absent => format!(
            "ABSENT       {}{} is cabled in the node layout but not in the fabric's map",
            who(f),
            f.rail.map_or(String::new(), |r| format!(", rail {r},"))
        ),
    }
}

/// Renders the cabling report as text; `map` names the map file.
pub fn render_text(c: &Cabling, map: &str) -> String {
    let mut s = String::new();
    let how: Vec<String> = c
        .matched_by
        .iter()
        .map(|(k, n)| format!("{n} by {k}"))
        .collect();
    let _ = writeln!(
        s,
        "Fabric map: {map} ({}): {} hosts, {} host adapter ports matched to the node layout{}",
        c.producer,
        c.hosts,
        c.adapters_matched,
        if how.is_empty() {
            String::new()
        } else {
            format!(" ({})", how.join(", "))
        }
    );
    // Leaves by rail.
    let mut by_rail: BTreeMap<Option<usize>, Vec<&str>> = BTreeMap::new();
    for l in &c.leaves {
        by_rail.entry(l.rail).or_default().push(&l.name);
    }
    let _ = writeln!(
        s,
        "\nLeaves by rail (the rail most of a leaf's adapters are on):"
    );
    for (r, ls) in &by_rail {
        let shown: Vec<&str> = ls.iter().take(6).copied().collect();
        let more = if ls.len() > 6 {
            format!(" … ({} leaves)", ls.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  {:<8} {}{more}",
            r.map_or("mixed".to_string(), |r| format!("rail {r}")),
            shown.join(" ")
        );
    }
    if c.findings.is_empty() {
        let _ = writeln!(
            s,
            "\nCabling: {}",
            if c.ok {
                "every matched adapter reaches a leaf of its own rail, one leaf per rail per host, no slow link, none absent"
            } else {
                "not judged (no adapter matched)"
            }
        );
    } else {
        let _ = writeln!(s, "\nCabling errors ({}):", c.findings.len());
        for f in &c.findings {
            let _ = writeln!(s, "  {}", finding_line(f));
            for e in &f.evidence {
                let _ = writeln!(s, "               evidence: {e}");
            }
        }
    }
    if c.unmatched_total > 0 {
        let _ = writeln!(
            s,
            "\nAdapters in the map no node layout names: {} (not judged){}",
            c.unmatched_total,
            if c.unmatched.is_empty() {
                String::new()
            } else {
                format!(": {}", c.unmatched.join(", "))
            }
        );
    }
    if !c.limitations.is_empty() {
        let _ = writeln!(s, "\nWhat the inputs could not show:");
        for l in &c.limitations {
            let _ = writeln!(s, "  - {l}");
        }
    }
    s
}
