//! Text of `peerpath fleet`: the groups by topology fingerprint, then each outlier group with
//! its members and its changes against the nearest majority group. Data: a [`Summary`] from
//! [`crate::analysis::fleet`]; the change lines are written by [`super::diff::render_body`].

use crate::analysis::fleet::Summary;
use std::fmt::Write as _;

/// Text rendering: groups, then each outlier group with its changes.
pub fn render_text(s: &Summary, verbose: bool) -> String {
    let mut o = String::new();
    if s.interrupted {
        let _ = writeln!(
            o,
            "interrupted: partial report over the {} of {} input(s) read before Ctrl-C",
            s.nodes + s.unreadable.len(),
            s.inputs
        );
    }
    let majors = s.groups.iter().filter(|g| g.majority).count();
    let _ = writeln!(
        o,
        "{} node(s), {} group(s) by topology fingerprint, {} majority group(s), {} outlier(s){}",
        s.nodes,
        s.groups.len(),
        majors,
        s.outliers.len(),
        if s.unreadable.is_empty() {
            String::new()
        } else {
            format!(", {} unreadable input(s)", s.unreadable.len())
        }
    );
    if s.from_manifest > 0 {
        let _ = writeln!(
            o,
            "  fingerprints: {} recorded by `capture` (each group's first capture scanned and matched), {} scanned",
            s.from_manifest,
            s.nodes - s.from_manifest
        );
    }
    for n in &s.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    for g in &s.groups {
        let _ = writeln!(
            o,
            "  {}  {:>6} node(s)  {}  e.g. {}",
            g.fingerprint,
            g.count,
            if g.majority { "majority" } else { "outlier " },
            g.representative
        );
    }
    let outlier_groups: Vec<_> = s.groups.iter().filter(|g| !g.majority).collect();
    if !outlier_groups.is_empty() {
        o.push_str(
            "\noutlier groups (addresses are those of the group's first node and of the majority's):\n",
        );
    }
    for g in outlier_groups {
        let members: Vec<&str> = s
            .outliers
            .iter()
            .filter(|n| n.fingerprint == g.fingerprint)
            .map(|n| n.name.as_str())
            .collect();
        let shown = members
            .iter()
            .take(8)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        let more = if members.len() > 8 {
            format!(", … (+{} more)", members.len() - 8)
        } else {
            String::new()
        };
        match (&g.against, &g.diff) {
            (Some(a), Some(d)) => {
                let _ = writeln!(
                    o,
                    "{} ({} node(s): {shown}{more}) vs {} ({}): {} change(s)",
                    g.fingerprint,
                    g.count,
                    a.fingerprint,
                    a.representative,
                    d.len()
                );
                if d.is_empty() {
                    let _ = writeln!(
                        o,
                        "    no change the diff compares (the fingerprint differs in a feature it does not list: see docs/fleet.md)"
                    );
                }
                super::diff::render_body(d, "    ", verbose, &mut o);
            }
            _ => {
                let _ = writeln!(o, "{} ({} node(s): {shown}{more})", g.fingerprint, g.count);
            }
        }
    }
    for u in &s.unreadable {
        let _ = writeln!(o, "unreadable: {}: {}", u.input, u.error);
    }
    o
}
