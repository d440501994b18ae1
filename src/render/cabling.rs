//! Text of `peerpath rails --fabric-map`: the leaves by rail as the fabric forms them, each cabling
//! finding in words with its evidence, the verdict, and what the inputs could not show. Data: a
//! [`Cabling`] report from [`crate::analysis::cabling::judge`].

use crate::analysis::cabling::rules::RENUMBERED;
use crate::analysis::cabling::{Cabling, CablingFinding, FindingKind, Rail, Severity};
use crate::model::fabric::CounterSpan;
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn gbps(g: f64) -> String {
    if (g - g.round()).abs() < 0.05 {
        format!("{}G", g.round() as u64)
    } else {
        format!("{g:.2}G")
    }
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

fn rail(r: &Option<Rail>) -> String {
    r.as_ref().map_or("?".into(), |r| r.to_string())
}

/// Map-alone rails (adapter names) may be the host's own numbering: said with the finding.
fn by_name(f: &CablingFinding) -> &'static str {
    if matches!(f.rail, Some(Rail::Name(_))) {
        RENUMBERED
    } else {
        "crossed cables"
    }
}

/// One finding in words (one line, evidence after).
pub fn finding_line(f: &CablingFinding) -> String {
    let leaf = f.leaf.as_deref().unwrap_or("?");
    let ports = f.leaf_ports.join(", ");
    let at = |i: usize| {
        format!(
            "{} on {} port {}",
            f.adapters.get(i).map_or("?", String::as_str),
            f.leaves.get(i).map_or("?", String::as_str),
            f.leaf_ports.get(i).map_or("?", String::as_str)
        )
    };
    match f.kind {
        FindingKind::Crossed => format!(
            "CROSSED      {}: {} (a rail-{} leaf) and {} (a rail-{} leaf): {}",
            f.host.as_deref().unwrap_or("?"),
            at(0),
            rail(&f.leaf_rail),
            at(1),
            rail(&f.rail),
            by_name(f)
        ),
        FindingKind::WrongRail => format!(
            "WRONG RAIL   {} is rail {} but is cabled to {leaf} port {ports}, a rail-{} leaf; it should reach {}{}",
            who(f),
            rail(&f.rail),
            rail(&f.leaf_rail),
            if f.should_reach.is_empty() {
                "a leaf of its rail (the map has none)".to_string()
            } else {
                f.should_reach.join(" or ")
            },
            if matches!(f.rail, Some(Rail::Name(_))) {
                format!(" ({RENUMBERED})")
            } else {
                String::new()
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
        FindingKind::OtherUnit => format!(
            "OTHER UNIT   {} reaches {leaf} port {ports}, a leaf of another scalable unit{}",
            who(f),
            if f.should_reach.is_empty() {
                String::new()
            } else {
                format!(
                    "; its unit's leaf it does not reach: {}",
                    f.should_reach.join(", ")
                )
            }
        ),
        FindingKind::Degraded => format!(
            "DEGRADED     {} on {leaf} port {ports} runs {} ({}) where both ends support {}",
            who(f),
            f.rate.as_deref().unwrap_or("?"),
            f.gbps.map_or("?".into(), gbps),
            f.supported_gbps.map_or("?".into(), gbps)
        ),
        FindingKind::SlowLink => format!(
            "SLOW LINK    {} on {leaf} port {ports} runs {} ({}) where its peers run {} (the map cannot say what its ends support: it may be their own maximum)",
            who(f),
            f.rate.as_deref().unwrap_or("?"),
            f.gbps.map_or("?".into(), gbps),
            f.peers_gbps.map_or("?".into(), gbps)
        ),
        FindingKind::Loopback => format!(
            "LOOPBACK     {leaf} port {} is cabled to its own port {}{}: not a host link, not counted in rates",
            f.leaf_ports.first().map_or("?", String::as_str),
            f.leaf_ports.get(1).map_or("?", String::as_str),
            f.rate
                .as_deref()
                .map_or(String::new(), |r| format!(" ({r})"))
        ),
        FindingKind::NoSwitch => format!(
            "NO SWITCH    {} sees no switch: the map shows no cable on it",
            who(f)
        ),
        FindingKind::Absent => format!(
            "ABSENT       {}, rail {}, is cabled in the node layout but not in the fabric's map (which holds that rail)",
            who(f),
            rail(&f.rail)
        ),
    }
}

/// The map's coverage, said once.
fn coverage_lines(c: &Cabling) -> Vec<String> {
    let cov = &c.coverage;
    let mut v = Vec::new();
    if !cov.rails.is_empty() {
        let names: Vec<String> = cov.rails.iter().map(ToString::to_string).collect();
        v.push(format!(
            "leaves carry {} {}: {}{}",
            names.len(),
            if cov.namings.is_empty() {
                "rail(s)"
            } else {
                "rail names (names, not necessarily rails)"
            },
            names.join(", "),
            cov.leaves_per_host.map_or(String::new(), |n| format!(
                "; most GPU nodes reach {n} leaves"
            ))
        ));
    }
    if !cov.namings.is_empty() {
        let sets: Vec<String> = cov
            .namings
            .iter()
            .map(|n| {
                let names: Vec<String> = n.rails.iter().map(ToString::to_string).collect();
                format!("{} ({} unit(s))", names.join(", "), n.units)
            })
            .collect();
        v.push(format!(
            "scalable units name their adapters {} ways that share no name: {}; these are the same rails named differently, or other rails in other units: the map alone cannot tell (give `-i` with captures to pair adapters with GPUs)",
            cov.namings.len(),
            sets.join(" · ")
        ));
    }
    if cov.layout_rails > 0 {
        let held = cov.layout_rails_held.len();
        let plane = if held > 0 && held < cov.layout_rails && cov.layout_rails.is_multiple_of(held)
        {
            format!(": one plane of {}", cov.layout_rails / held)
        } else {
            String::new()
        };
        v.push(format!(
            "the map holds {held} of the layout's {} rails{plane}{}",
            cov.layout_rails,
            if held < cov.layout_rails {
                " (the others are not judged: no ABSENT for them)"
            } else {
                ""
            }
        ));
    }
    for u in &cov.short_units {
        v.push(format!(
            "hosts {} … {} ({}) reach {} leaves ({}) where most reach {}",
            u.first,
            u.last,
            u.hosts,
            u.leaves,
            u.adapters.join(", "),
            cov.leaves_per_host.unwrap_or(0)
        ));
    }
    if !cov.hosts_not_in_map.is_empty() {
        v.push(format!(
            "{} captured host(s) not in the map: {}",
            cov.hosts_not_in_map.len(),
            cov.hosts_not_in_map.join(", ")
        ));
    }
    v
}

fn header(c: &Cabling, map: &str) -> String {
    let how: Vec<String> = c
        .matched_by
        .iter()
        .map(|(k, n)| format!("{n} by {k}"))
        .collect();
    let mut s = format!(
        "Fabric map: {map} ({}): {} GPU nodes judged in {} scalable unit(s), {} leaves",
        c.producer,
        c.hosts,
        c.units.len(),
        c.leaves.len()
    );
    if c.adapters_matched > 0 || !c.matched_by.is_empty() {
        let _ = write!(
            s,
            "; {} adapter ports paired with the node layout ({})",
            c.adapters_matched,
            how.join(", ")
        );
    }
    s.push('\n');
    if c.unnamed_adapters > 0 {
        let _ = writeln!(
            s,
            "  {} adapter(s) carry the firmware's default description (no host): counted, not judged",
            c.unnamed_adapters
        );
    }
    if c.aggregation_nodes > 0 {
        let _ = writeln!(
            s,
            "  {} SHARP aggregation node(s): switch functions, not hosts",
            c.aggregation_nodes
        );
    }
    for n in &c.not_gpu_nodes {
        let _ = writeln!(
            s,
            "  {} ({} adapter(s)): not a GPU node ({}), not held to the GPU layout",
            n.host, n.adapters, n.why
        );
    }
    s
}

fn leaves_by_rail(c: &Cabling, s: &mut String) {
    let mut by_rail: BTreeMap<Option<&Rail>, Vec<&str>> = BTreeMap::new();
    for l in &c.leaves {
        by_rail.entry(l.rail.as_ref()).or_default().push(&l.name);
    }
    if !c.rails_judged {
        let names: Vec<&str> = c.leaves.iter().take(8).map(|l| l.name.as_str()).collect();
        let _ = writeln!(s, "\nLeaves ({}): {}", c.leaves.len(), names.join(" · "));
        return;
    }
    let _ = writeln!(
        s,
        "\nLeaves by rail (the rail most of a leaf's adapters are on):"
    );
    for (r, ls) in &by_rail {
        let shown: Vec<&str> = ls.iter().take(4).copied().collect();
        let more = if ls.len() > 4 {
            format!(" … ({} leaves)", ls.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  {:<10} {}{more}",
            r.map_or("mixed".to_string(), |r| format!("rail {r}")),
            shown.join(" · ")
        );
    }
}

fn port_errors(c: &Cabling, s: &mut String) {
    if c.port_errors.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nPhysical layer ({} host link(s) with error counters over their thresholds):",
        c.port_errors.len()
    );
    for p in &c.port_errors {
        let gpus = if p.gpus.is_empty() {
            String::new()
        } else {
            format!(" ({})", p.gpus.join(", "))
        };
        let _ = writeln!(
            s,
            "  {}  {} {}{gpus}, rail {}, on {} port {}: {}",
            if p.climbing { "CLIMBING" } else { "STANDING" },
            p.host,
            p.adapter,
            p.rail,
            p.leaf,
            p.leaf_port,
            p.readings
                .iter()
                .map(|r| format!(
                    "{} {}{} {}",
                    r.side,
                    r.counter,
                    if r.span == CounterSpan::Delta {
                        " rose by"
                    } else {
                        ""
                    },
                    if r.saturated {
                        format!("at least {} (saturated)", group(r.value))
                    } else {
                        group(r.value)
                    }
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        if let Some(r) = p.readings.first() {
            let _ = writeln!(s, "               evidence: {}", r.evidence);
        }
    }
    if c.port_errors.iter().any(|p| !p.climbing) {
        let _ = writeln!(
            s,
            "  (STANDING: since the counters were last cleared; clear them and read again to see whether they climb)"
        );
    }
}

/// 65535 → `65,535`.
fn group(v: u64) -> String {
    let d = v.to_string();
    let mut out = String::new();
    for (i, ch) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Renders the cabling report as text; `map` names the map file.
pub fn render_text(c: &Cabling, map: &str) -> String {
    let mut s = header(c, map);
    let cov = coverage_lines(c);
    if !cov.is_empty() {
        let _ = writeln!(s, "\nCoverage:");
        for l in cov {
            let _ = writeln!(s, "  {l}");
        }
    }
    leaves_by_rail(c, &mut s);
    let (errors, warnings): (Vec<&CablingFinding>, Vec<&CablingFinding>) = c
        .findings
        .iter()
        .partition(|f| f.severity == Severity::Error);
    for (title, fs) in [("Cabling errors", errors), ("Warnings", warnings)] {
        if fs.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n{title} ({}):", fs.len());
        for f in fs {
            let _ = writeln!(s, "  {}", finding_line(f));
            for e in &f.evidence {
                let _ = writeln!(s, "               evidence: {e}");
            }
        }
    }
    if c.findings.iter().all(|f| f.severity != Severity::Error) {
        let _ = writeln!(
            s,
            "\nCabling: {}",
            if c.ok && !c.rails_judged {
                "rails not judged (the fabric is not rail-optimised as far as the map shows); no degraded link, none absent"
            } else if c.ok {
                "every judged adapter reaches a leaf of its own rail, one leaf per rail per host, no degraded link, none absent"
            } else {
                "not judged (no GPU node in the map)"
            }
        );
    }
    port_errors(c, &mut s);
    if c.unmatched_total > 0 {
        let _ = writeln!(
            s,
            "\nAdapters the node layout does not pair: {} (judged from the map alone, no GPU named){}",
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

/// A crossed pair drawn as its two cables: each adapter to its leaf, and the leaf it should
/// reach.
fn per_adapter(f: &CablingFinding) -> Vec<CablingFinding> {
    (0..f.adapters.len())
        .map(|i| {
            let mut g = f.clone();
            g.adapters = vec![f.adapters[i].clone()];
            g.gpus = if f.gpus.len() == f.adapters.len() {
                vec![f.gpus[i].clone()]
            } else {
                Vec::new()
            };
            g.leaf = f.leaves.get(i).cloned();
            g.should_reach = f.should_reach.get(i).cloned().into_iter().collect();
            g
        })
        .collect()
}

/// Width of one rail's column in the drawing.
const COL: usize = 150;

/// SVG text and attribute values: the one XML rule ([`super::escape::xml_text`]), so a host
/// or switch name holding a control character cannot make the picture ill-formed.
fn xml(s: &str) -> String {
    super::escape::xml_text(s)
}

/// The cabling drawn: a column per rail with its leaves on top (the first four, and every leaf a
/// finding names), and below, each host with a wrong-rail or shared-leaf finding, a red line
/// from each of its adapters to the leaf its cable reaches and a dashed green line to the leaf
/// it should reach. An SVG fragment (no XML prolog), for the HTML report.
pub fn render_svg(c: &Cabling) -> String {
    let p = plan(c);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="cabling" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="monospace" font-size="11">"#,
        w = p.width,
        h = p.height
    );
    let pos = leaf_columns(&mut s, &p);
    for (hi, (host, fs)) in p.hosts.iter().enumerate() {
        host_row(&mut s, p.host_y0 + hi as i64 * 70, host, fs, &pos);
    }
    if !p.hosts.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="6" y="{}" fill="#555">red: where the adapter's cable goes · dashed green: the leaf of its rail it should reach</text>"##,
            p.height - 6
        );
    }
    s.push_str("</svg>\n");
    s
}

/// What the cabling picture shows and where: its rail columns, the leaves shown in each (and how
/// many left out), the hosts drawn with their findings, and the picture's size.
struct Plan<'a> {
    /// The rails, in order: one column each, then a "mixed" column for leaves of no one rail.
    rails: Vec<&'a Rail>,
    /// Leaves shown per column, in order, and whether a finding names them.
    shown: Vec<Column<'a>>,
    /// Leaves left out per column.
    hidden: Vec<usize>,
    /// The hosts drawn (at most 12), each with its wrong-rail, shared-leaf or crossed findings.
    hosts: Vec<(&'a str, Vec<CablingFinding>)>,
    width: i64,
    height: i64,
    /// The y of the first host row.
    host_y0: i64,
}

/// The leaves shown in one column of the picture, each with whether a finding names it.
type Column<'a> = Vec<(&'a str, bool)>;

/// The baseline of the `i`-th leaf of a column.
fn leaf_y(i: usize) -> i64 {
    40 + i as i64 * 26
}

/// Lays the picture out: rails, the leaves shown, the hosts with findings, the size.
fn plan(c: &Cabling) -> Plan<'_> {
    let rails = picture_rails(c);
    let (shown, hidden) = shown_leaves(c, &rails);
    let rows = shown.iter().map(Vec::len).max().unwrap_or(0) + 1;
    let hosts = hosts_with_findings(c);
    let cols = rails.len() + usize::from(!shown[rails.len()].is_empty());
    let width = (cols.max(1) * COL) as i64;
    let host_y0 = leaf_y(rows) + 50;
    let height = host_y0 + hosts.len() as i64 * 70 + 20;
    Plan {
        rails,
        shown,
        hidden,
        hosts,
        width,
        height,
        host_y0,
    }
}

/// The rails of the map's leaves, sorted and once each.
fn picture_rails(c: &Cabling) -> Vec<&Rail> {
    let mut r: Vec<&Rail> = c.leaves.iter().filter_map(|l| l.rail.as_ref()).collect();
    r.sort_unstable();
    r.dedup();
    r
}

/// The leaves shown per column (the first four, and every leaf a finding names, flagged) and
/// how many are left out.
fn shown_leaves<'a>(c: &'a Cabling, rails: &[&Rail]) -> (Vec<Column<'a>>, Vec<usize>) {
    let col_of = |rail: Option<&Rail>| match rail {
        Some(r) => rails.iter().position(|&x| x == r).unwrap_or(rails.len()),
        None => rails.len(),
    };
    let named: std::collections::BTreeSet<&str> = c
        .findings
        .iter()
        .flat_map(|f| f.leaf.iter().chain(&f.leaves).chain(f.should_reach.iter()))
        .map(String::as_str)
        .collect();
    // Leaves shown per column, in order.
    let mut shown: Vec<Vec<(&str, bool)>> = vec![Vec::new(); rails.len() + 1];
    let mut hidden: Vec<usize> = vec![0; rails.len() + 1];
    for l in &c.leaves {
        let col = col_of(l.rail.as_ref());
        let named_here = named.contains(l.name.as_str());
        if shown[col].len() < 4 || named_here {
            shown[col].push((&l.name, named_here));
        } else {
            hidden[col] += 1;
        }
    }
    (shown, hidden)
}

/// The hosts with a wrong-rail, shared-leaf or crossed finding (a crossed pair split per
/// adapter), in name order, at most 12.
fn hosts_with_findings(c: &Cabling) -> Vec<(&str, Vec<CablingFinding>)> {
    let mut m: BTreeMap<&str, Vec<CablingFinding>> = BTreeMap::new();
    for f in &c.findings {
        if let Some(h) = f.host.as_deref() {
            match f.kind {
                FindingKind::WrongRail | FindingKind::SharedLeaf => {
                    m.entry(h).or_default().push(f.clone())
                }
                FindingKind::Crossed => m.entry(h).or_default().extend(per_adapter(f)),
                _ => {}
            }
        }
    }
    m.into_iter().take(12).collect()
}

/// Draws each column's head and leaves; returns where each leaf's lines end.
fn leaf_columns<'a>(s: &mut String, p: &Plan<'a>) -> BTreeMap<&'a str, (i64, i64)> {
    let mut pos: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for (col, leaves) in p.shown.iter().enumerate() {
        if col == p.rails.len() && leaves.is_empty() {
            continue;
        }
        let x = (col * COL) as i64 + 6;
        let head = if col < p.rails.len() {
            format!("rail {}", p.rails[col])
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
        if p.hidden[col] > 0 {
            let _ = writeln!(
                s,
                r##"<text x="{x}" y="{}" fill="#555">… {} more</text>"##,
                leaf_y(leaves.len()),
                p.hidden[col]
            );
        }
    }
    pos
}

/// One host's row: its name, a box per adapter finding, a red line to the leaf its cable
/// reaches and dashed green lines to the leaves it should reach.
fn host_row(
    s: &mut String,
    y: i64,
    host: &str,
    fs: &[CablingFinding],
    pos: &BTreeMap<&str, (i64, i64)>,
) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::cabling::{CounterReading, PortErrors, judge};
    use crate::model::fabric::{FabricMap, Producer};

    fn reading(counter: &str, value: u64, saturated: bool, span: CounterSpan) -> CounterReading {
        CounterReading {
            side: "adapter".into(),
            counter: counter.into(),
            value,
            saturated,
            span,
            threshold: 10,
            evidence: "db_csv line 9".into(),
        }
    }

    /// A crossed host whose name (from the map) holds ESC, `<` and a bidi control: the SVG
    /// shows them as text and stays well-formed XML.
    #[test]
    fn svg_escapes_names_from_the_map() {
        use crate::synth::fabric::{Pod, PodFault, ibnetdiscover};
        let text = ibnetdiscover(
            &Pod::new(4),
            &[PodFault::SwapRails {
                host: 1,
                a: 2,
                b: 5,
            }],
        )
        .replace("gpu0002", "gpu\u{1b}[2J<0002\u{202e}");
        let map = crate::parse::fabric::parse(&text, Producer::Ibnetdiscover, "pod").unwrap();
        let c = judge(&map, &[]);
        assert!(!c.findings.is_empty(), "{c:#?}");
        let svg = render_svg(&c);
        assert!(svg.contains("gpu\\x1b[2J&lt;0002\\u{202e}"), "{svg}");
        assert!(
            !svg.contains('\u{1b}') && !svg.contains('\u{202e}'),
            "{svg}"
        );
    }

    /// A saturated counter is said "at least 65,535", a delta "rose by", climbing and standing
    /// told apart.
    #[test]
    fn port_errors_in_words() {
        let map = FabricMap {
            producer: Producer::IbdiagnetCsv,
            nodes: Vec::new(),
            links: Vec::new(),
            counters: Vec::new(),
            limitations: Vec::new(),
        };
        let mut c = judge(&map, &[]);
        let port = |host: &str, climbing, readings| PortErrors {
            host: host.into(),
            adapter: "mlx5_3".into(),
            gpus: vec!["GPU3".into()],
            rail: Rail::Index(3),
            leaf: "leaf-3".into(),
            leaf_port: "27".into(),
            climbing,
            readings,
        };
        c.port_errors = vec![
            port(
                "h26",
                false,
                vec![
                    reading("SymbolErrorCounter", 65535, true, CounterSpan::SinceClear),
                    reading("LinkDownedCounter", 55, false, CounterSpan::SinceClear),
                ],
            ),
            port(
                "h09",
                true,
                vec![reading(
                    "SymbolErrorCounter",
                    1200,
                    false,
                    CounterSpan::Delta,
                )],
            ),
        ];
        let text = render_text(&c, "db_csv");
        assert!(
            text.contains("STANDING  h26 mlx5_3 (GPU3), rail 3, on leaf-3 port 27: adapter SymbolErrorCounter at least 65,535 (saturated); adapter LinkDownedCounter 55"),
            "{text}"
        );
        assert!(
            text.contains("CLIMBING  h09 mlx5_3 (GPU3), rail 3, on leaf-3 port 27: adapter SymbolErrorCounter rose by 1,200"),
            "{text}"
        );
    }
}
