//! Text of `peerpath diff`: one line per difference, grouped. Data: a [`Diff`] from
//! [`crate::analysis::diff`]; nothing is compared here.

use crate::analysis::diff::Diff;
use std::fmt::Write as _;

/// Text rendering: one line per difference, grouped, or `no differences`.
pub fn render_text(d: &Diff) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "A: {}\nB: {}", d.a, d.b);
    if d.equal {
        s.push_str("no differences (same role-level layout, labels, findings and facts)\n");
        return s;
    }
    render_body(d, "", &mut s);
    let _ = writeln!(s, "{} difference(s)", d.len());
    s
}

/// The difference lines of a diff, each prefixed with `indent` (shared with the fleet view).
pub fn render_body(d: &Diff, indent: &str, s: &mut String) {
    for r in &d.added {
        let _ = writeln!(s, "{indent}+ device {r}");
    }
    for r in &d.removed {
        let _ = writeln!(s, "{indent}- device {r}");
    }
    for m in &d.moved {
        let _ = writeln!(s, "{indent}~ moved {}: {} -> {}", m.role, m.from, m.to);
    }
    let changes: Vec<(String, &str, &str, &str)> = d
        .changed
        .iter()
        .map(|c| (c.field.clone(), c.a.as_str(), c.b.as_str(), c.role.as_str()))
        .chain(d.labels.iter().map(|l| {
            (
                "label".to_string(),
                l.a.as_str(),
                l.b.as_str(),
                l.pair.as_str(),
            )
        }))
        .collect();
    // The same change on many roles (every label turning `?` in a VM) prints as one line.
    type Key<'a> = (String, &'a str, &'a str);
    let mut groups: Vec<(Key, Vec<&str>)> = Vec::new();
    for (f, a, b, who) in changes {
        match groups.iter_mut().find(|(k, _)| *k == (f.clone(), a, b)) {
            Some((_, v)) => v.push(who),
            None => groups.push(((f, a, b), vec![who])),
        }
    }
    for ((f, a, b), who) in groups {
        if who.len() <= 3 {
            for w in who {
                let _ = writeln!(s, "{indent}~ {f} {w}: {a} -> {b}");
            }
        } else {
            let _ = writeln!(
                s,
                "{indent}~ {f} {a} -> {b} on {} {}: {}, … (+{} more)",
                who.len(),
                if f == "label" { "pairs" } else { "roles" },
                who[..3].join(", "),
                who.len() - 3
            );
        }
    }
    for f in &d.findings_appeared {
        let _ = writeln!(
            s,
            "{indent}+ finding {} ({}) on {}",
            f.id, f.severity, f.subject
        );
    }
    for f in &d.findings_vanished {
        let _ = writeln!(
            s,
            "{indent}- finding {} ({}) on {}",
            f.id, f.severity, f.subject
        );
    }
    for f in &d.facts {
        let _ = writeln!(s, "{indent}~ fact {}: {} -> {}", f.fact, f.a, f.b);
    }
}
