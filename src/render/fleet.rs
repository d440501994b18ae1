//! Text of `peerpath fleet`: the groups by topology fingerprint, then each outlier with its
//! differences. Data: a [`Summary`] from [`crate::analysis::fleet`]; the outliers' difference
//! lines are written by [`super::diff::render_body`].

use crate::analysis::fleet::Summary;
use std::fmt::Write as _;

/// Text rendering: groups, then each outlier with its differences.
pub fn render_text(s: &Summary) -> String {
    let mut o = String::new();
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
    if !s.outliers.is_empty() {
        o.push_str("\noutliers (compared with the nearest majority group's representative):\n");
        for x in &s.outliers {
            let _ = writeln!(
                o,
                "{}  fingerprint {} ({} node(s)) vs {} ({}): {} difference(s)",
                x.name,
                x.fingerprint,
                x.group_size,
                x.against,
                x.against_node,
                x.diff.len()
            );
            super::diff::render_body(&x.diff, "    ", &mut o);
        }
    }
    for u in &s.unreadable {
        let _ = writeln!(o, "unreadable: {}: {}", u.input, u.error);
    }
    o
}
