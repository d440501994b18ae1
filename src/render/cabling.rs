//! Text of `peerpath rails --fabric-map`: the leaves by rail as the fabric forms them, each cabling
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

/// Width of one rail's column in the drawing.
const COL: usize = 150;

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The cabling drawn: a column per rail with its leaves on top (the first four, and every leaf a
/// finding names), and below, each host with a wrong-rail or shared-leaf finding, a red line
/// from each of its adapters to the leaf its cable reaches and a dashed green line to the leaf
/// it should reach. An SVG fragment (no XML prolog), for the HTML report.
pub fn render_svg(c: &Cabling) -> String {
    let rails: Vec<usize> = {
        let mut r: Vec<usize> = c.leaves.iter().filter_map(|l| l.rail).collect();
        r.sort_unstable();
        r.dedup();
        r
    };
    let col_of = |rail: Option<usize>| match rail {
        Some(r) => rails.iter().position(|&x| x == r).unwrap_or(rails.len()),
        None => rails.len(),
    };
    let named: std::collections::BTreeSet<&str> = c
        .findings
        .iter()
        .flat_map(|f| f.leaf.iter().chain(f.should_reach.iter()))
        .map(String::as_str)
        .collect();
    // Leaves shown per column, in order.
    let mut shown: Vec<Vec<(&str, bool)>> = vec![Vec::new(); rails.len() + 1];
    let mut hidden: Vec<usize> = vec![0; rails.len() + 1];
    for l in &c.leaves {
        let col = col_of(l.rail);
        let named_here = named.contains(l.name.as_str());
        if shown[col].len() < 4 || named_here {
            shown[col].push((&l.name, named_here));
        } else {
            hidden[col] += 1;
        }
    }
    let rows = shown.iter().map(Vec::len).max().unwrap_or(0) + 1;
    let hosts: Vec<(&str, Vec<&CablingFinding>)> = {
        let mut m: BTreeMap<&str, Vec<&CablingFinding>> = BTreeMap::new();
        for f in &c.findings {
            if matches!(f.kind, FindingKind::WrongRail | FindingKind::SharedLeaf)
                && let Some(h) = f.host.as_deref()
            {
                m.entry(h).or_default().push(f);
            }
        }
        m.into_iter().take(12).collect()
    };
    let cols = rails.len() + usize::from(!shown[rails.len()].is_empty());
    let width = (cols.max(1) * COL) as i64;
    let leaf_y = |i: usize| 40 + i as i64 * 26;
    let host_y0 = leaf_y(rows) + 50;
    let height = host_y0 + hosts.len() as i64 * 70 + 20;
    let mut pos: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="cabling" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">"#
    );
    for (col, leaves) in shown.iter().enumerate() {
        if col == rails.len() && leaves.is_empty() {
            continue;
        }
        let x = (col * COL) as i64 + 6;
        let head = if col < rails.len() {
            format!("rail {}", rails[col])
        } else {
            "mixed".to_string()
        };
        let _ = writeln!(
            s,
            r#"<text x="{x}" y="20" font-weight="bold">{}</text>"#,
            xml(&head)
        );
        for (i, (name, flagged)) in leaves.iter().enumerate() {
            let y = leaf_y(i);
            let fill = if *flagged { "#fde2e1" } else { "#eef2f7" };
            let _ = writeln!(
                s,
                r##"<rect x="{x}" y="{}" width="{}" height="20" rx="3" fill="{fill}" stroke="#567"><title>{}</title></rect><text x="{}" y="{}">{}</text>"##,
                y - 14,
                COL - 14,
                xml(name),
                x + 4,
                y,
                xml(name)
            );
            pos.insert(name, (x + (COL as i64 - 14) / 2, y + 6));
        }
        if hidden[col] > 0 {
            let _ = writeln!(
                s,
                r##"<text x="{x}" y="{}" fill="#555">… {} more</text>"##,
                leaf_y(leaves.len()),
                hidden[col]
            );
        }
    }
    for (hi, (host, fs)) in hosts.iter().enumerate() {
        let y = host_y0 + hi as i64 * 70;
        let _ = writeln!(
            s,
            r##"<text x="6" y="{y}" font-weight="bold">{}</text>"##,
            xml(host)
        );
        for (k, f) in fs.iter().enumerate() {
            let ax = 110 + k as i64 * 170;
            let label = format!(
                "{}{}",
                f.adapters.join("+"),
                if f.gpus.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", f.gpus.join(","))
                }
            );
            let _ = writeln!(
                s,
                r##"<rect x="{ax}" y="{}" width="160" height="22" rx="3" fill="#fff" stroke="#b00"><title>{}</title></rect><text x="{}" y="{}">{}</text>"##,
                y - 15,
                xml(&finding_line(f)),
                ax + 4,
                y,
                xml(&label)
            );
            let from = (ax + 80, y - 15);
            if let Some(&(lx, ly)) = f.leaf.as_deref().and_then(|l| pos.get(l)) {
                let _ = writeln!(
                    s,
                    r##"<line x1="{}" y1="{}" x2="{lx}" y2="{ly}" stroke="#c00" stroke-width="2"><title>{}</title></line>"##,
                    from.0,
                    from.1,
                    xml(&finding_line(f))
                );
            }
            for r in &f.should_reach {
                if let Some(&(lx, ly)) = pos.get(r.as_str()) {
                    let _ = writeln!(
                        s,
                        r##"<line x1="{}" y1="{}" x2="{lx}" y2="{ly}" stroke="#080" stroke-width="1.5" stroke-dasharray="5,4"><title>should reach {}</title></line>"##,
                        from.0,
                        from.1,
                        xml(r)
                    );
                }
            }
        }
    }
    if !hosts.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="6" y="{}" fill="#555">red: where the adapter's cable goes · dashed green: the leaf of its rail it should reach</text>"##,
            height - 6
        );
    }
    s.push_str("</svg>\n");
    s
}
