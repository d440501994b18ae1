//! Text of `peerpath diff`: one line per physical change, naming its devices by PCI address
//! on both sides, with what follows from it (best-NIC labels, audit findings) on the same line;
//! `verbose` lists the folded label and finding changes under it. Data: a [`Diff`] from
//! [`crate::analysis::diff`]; nothing is compared here.

use crate::analysis::diff::{AerTotals, Both, Change, DevRef, Diff, LinkState, Move, Place, What};
use std::fmt::Write as _;

/// Text rendering: the two sources, one line per change, and a count.
pub fn render_text(d: &Diff, verbose: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "A: {}\nB: {}", d.a, d.b);
    if d.equal {
        s.push_str(
            "no differences (devices matched by structure: same places, links, labels, findings and facts)\n",
        );
        return s;
    }
    render_body(d, "", verbose, &mut s);
    let (labels, findings) = d.folded();
    let _ = write!(s, "{} change(s)", d.len());
    if labels + findings > 0 {
        let _ = write!(
            s,
            "; folded under them: {labels} pair label change(s), {findings} finding change(s)"
        );
        if !verbose {
            s.push_str(" (--verbose lists them)");
        }
    }
    s.push('\n');
    s
}

/// A device as an operator finds it: kind, name and address (`NIC mlx5_3 (0000:4c:00.0)`,
/// `switch sw3 port 0000:4a:01.0`).
pub fn dev(d: &DevRef) -> String {
    let sw = d.switch.as_deref().unwrap_or("?");
    match d.kind.as_str() {
        "gpu" | "accelerator" | "nvme" => match &d.name {
            Some(n) => format!("{n} ({})", d.bdf),
            None => format!("{} {} ({})", d.kind, d.ids, d.bdf),
        },
        "nic" => match &d.rdma {
            Some(r) => format!("NIC {r} ({})", d.bdf),
            None => format!("NIC {} ({})", d.ids, d.bdf),
        },
        "root-port" => format!("root port {}", d.bdf),
        "switch-downstream" => format!("switch {sw} port {}", d.bdf),
        "switch-upstream" => format!("switch {sw} upstream port {}", d.bdf),
        "bridge" => format!("bridge {} ({})", d.ids, d.bdf),
        _ => format!("device {} ({})", d.ids, d.bdf),
    }
}

/// The functions below a card that came or went with it (` with NIC mlx5_3 (…), …`), or
/// nothing when there are none.
fn with_below(below: &[DevRef]) -> String {
    if below.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = below.iter().map(dev).collect();
        format!(" with {}", names.join(", "))
    }
}

/// The same device on both sides: A's name, with what differs in B in brackets.
pub fn both(x: &Both) -> String {
    let mut notes = Vec::new();
    if x.a.bdf != x.b.bdf {
        notes.push(format!("B {}", x.b.bdf));
    }
    if x.a.rdma != x.b.rdma {
        notes.push(format!(
            "now {}",
            x.b.rdma.as_deref().unwrap_or("no RDMA device")
        ));
    } else if x.a.name != x.b.name && x.a.kind != "nic" {
        notes.push(format!("now {}", x.b.name.as_deref().unwrap_or("-")));
    }
    if x.a.serial.is_some() && x.a.serial == x.b.serial {
        notes.push(format!("serial {}", x.a.serial.as_deref().unwrap_or("")));
    }
    if notes.is_empty() {
        dev(&x.a)
    } else {
        format!("{} [{}]", dev(&x.a), notes.join(", "))
    }
}

/// A card's place; `only_here` words a port that exists on this side only (`new`, `gone`).
fn place(p: &Place, only_here: &str) -> String {
    let port = match &p.port {
        Some(d) => dev(d),
        None => format!("root bus of {}", p.host_bridge),
    };
    let mut notes = Vec::new();
    if p.port_only_here {
        notes.push(only_here.to_string());
    }
    if let Some(s) = &p.slot {
        notes.push(format!("slot {s}"));
    }
    notes.push(match p.numa {
        Some(n) => format!("NUMA {n}"),
        None => "NUMA unknown".into(),
    });
    if !p.with.is_empty() {
        notes.push(format!("with {}", p.with.join(", ")));
    }
    format!("{port} ({})", notes.join(", "))
}

fn link(l: &LinkState) -> String {
    if l.current == "down" || l.current == l.max {
        l.current.clone()
    } else {
        format!("{} (capable {})", l.current, l.max)
    }
}

/// The AER totals that differ: `correctable 0 → 7`.
fn aer(a: &AerTotals, b: &AerTotals) -> String {
    let v = |x: Option<u64>| x.map_or("not read".into(), |x| x.to_string());
    [
        ("correctable", a.correctable, b.correctable),
        ("non-fatal", a.nonfatal, b.nonfatal),
        ("fatal", a.fatal, b.fatal),
    ]
    .iter()
    .filter(|(_, x, y)| x != y)
    .map(|(n, x, y)| format!("{n} {} → {}", v(*x), v(*y)))
    .collect::<Vec<_>>()
    .join(", ")
}

/// `of GPU2 (0000:3a:00.0)`, or `on 34 device(s): …, … (+31 more)`.
fn some(devices: &[Both]) -> String {
    if let [one] = devices {
        return format!("of {}", both(one));
    }
    let shown: Vec<String> = devices.iter().take(3).map(both).collect();
    format!(
        "on {} device(s): {}{}",
        devices.len(),
        shown.join(", "),
        if devices.len() > 3 {
            format!(", … (+{} more)", devices.len() - 3)
        } else {
            String::new()
        }
    )
}

fn opt(x: &Option<String>, none: &str) -> String {
    x.clone().unwrap_or_else(|| none.to_string())
}

/// The line of one change, without its consequences.
fn what(w: &What) -> String {
    match w {
        What::Moved(m) => {
            let Move {
                device,
                functions,
                from,
                to,
                link: l,
                left,
            } = m.as_ref();
            let mut s = format!(
                "~ {} moved from {} to {}",
                dev(&device.a),
                place(from, "gone in B"),
                place(to, "new")
            );
            let mut now = Vec::new();
            if device.a.rdma != device.b.rdma
                && let Some(r) = &device.b.rdma
            {
                now.push(r.clone());
            }
            if device.a.name != device.b.name
                && device.a.kind != "nic"
                && let Some(n) = &device.b.name
            {
                now.push(n.clone());
            }
            if device.a.bdf != device.b.bdf {
                now.push(format!("at {}", device.b.bdf));
            }
            if !now.is_empty() {
                let _ = write!(s, ", now {}", now.join(" "));
            }
            if *functions > 0 {
                let _ = write!(s, " (with {functions} more function(s) of the card)");
            }
            if let Some((x, y)) = l {
                let _ = write!(s, "; its link {} → {}", link(x), link(y));
            }
            if let (Some(lf), Some(p)) = (left, &from.port)
                && !from.port_only_here
            {
                let state = if lf.current == "down" {
                    "link down".to_string()
                } else {
                    format!("link now {}", link(lf))
                };
                let _ = write!(s, "; {} left empty, {state}", dev(p));
            }
            s
        }
        What::Added {
            device,
            place: p,
            below,
        } => format!(
            "+ {} under {}{}",
            dev(device),
            place(p, "new"),
            with_below(below)
        ),
        What::Removed {
            device,
            place: p,
            below,
        } => format!(
            "- {} (was under {}){}",
            dev(device),
            place(p, "gone in B"),
            with_below(below)
        ),
        What::Replaced { device } => format!(
            "~ {} replaced: IDs {} → {}",
            both(device),
            device.a.ids,
            device.b.ids
        ),
        What::Link { device, port, a, b } => format!(
            "~ link of {}{}: {} → {}",
            both(device),
            port.as_ref()
                .map(|p| format!(" ↔ {}", both(p)))
                .unwrap_or_default(),
            link(a),
            link(b)
        ),
        What::Acs { port, a, b, below } => format!(
            "~ ACS on {}{}: {} → {}",
            both(port),
            if below.is_empty() {
                String::new()
            } else {
                format!(" (above {})", below.join(", "))
            },
            opt(a, "no P2P redirect"),
            b.as_ref()
                .map(|c| format!("{c} (P2P redirected upstream)"))
                .unwrap_or_else(|| "no P2P redirect".into())
        ),
        What::Aer { device, a, b } => {
            format!("~ AER counters of {}: {}", both(device), aer(a, b))
        }
        What::Iommu { devices, a, b } => format!(
            "~ IOMMU group type {} → {} {}",
            opt(a, "unknown"),
            opt(b, "unknown"),
            some(devices)
        ),
        What::Numa { devices, a, b } => {
            let n = |x: &Option<u32>| x.map_or("unknown".into(), |x| x.to_string());
            format!("~ NUMA node {} → {} {}", n(a), n(b), some(devices))
        }
        What::Renamed { renames } => format!(
            "~ renamed by the kernel (same device, new name): {}",
            renames
                .iter()
                .map(|r| {
                    let at = if r.device.a.bdf == r.device.b.bdf {
                        r.device.b.bdf.to_string()
                    } else {
                        format!("{} → {}", r.device.a.bdf, r.device.b.bdf)
                    };
                    format!("{} → {} ({at})", r.a.join("/"), r.b.join("/"))
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        What::Fact { fact, a, b } => format!("~ fact {fact}: {a} → {b}"),
        What::Labels { a, b } => format!("~ pair label {a} → {b}"),
        What::Finding { appeared } => {
            if *appeared {
                "+ finding".into()
            } else {
                "- finding".into()
            }
        }
    }
}

/// One change's line: the change, then its best-NIC consequences and its findings.
fn line(c: &Change) -> String {
    let mut s = what(&c.what);
    match &c.what {
        What::Finding { .. } => {
            for f in c.findings_appeared.iter().chain(&c.findings_vanished) {
                let _ = write!(
                    s,
                    " {} ({}) on {}: {}",
                    f.id, f.severity, f.subject, f.summary
                );
            }
            return s;
        }
        What::Labels { .. } => {
            let shown: Vec<&str> = c.labels.iter().take(3).map(|l| l.pair_b.as_str()).collect();
            let _ = write!(
                s,
                " on {} pair(s) no listed change explains: {}{}",
                c.labels.len(),
                shown.join(", "),
                if c.labels.len() > 3 {
                    format!(", … (+{} more)", c.labels.len() - 3)
                } else {
                    String::new()
                }
            );
            return s;
        }
        _ => {}
    }
    if !c.best_nic.is_empty() {
        let parts: Vec<String> = c
            .best_nic
            .iter()
            .map(|b| format!("{}'s best NIC {} → {}", b.gpu, b.a.0, b.b.0))
            .collect();
        let _ = write!(s, ": {}", parts.join(", "));
    }
    let mut f: Vec<String> = c
        .findings_appeared
        .iter()
        .map(|f| format!("+{} {} on {}", f.id, f.severity, f.subject))
        .collect();
    f.extend(
        c.findings_vanished
            .iter()
            .map(|f| format!("-{} {} on {}", f.id, f.severity, f.subject)),
    );
    if !f.is_empty() {
        let _ = write!(s, " [audit: {}]", f.join(", "));
    }
    s
}

/// The change lines of a diff, each prefixed with `indent` (shared with the fleet view);
/// `verbose` adds the folded label and finding changes under each.
pub fn render_body(d: &Diff, indent: &str, verbose: bool, s: &mut String) {
    for c in &d.changes {
        let _ = writeln!(s, "{indent}{}", line(c));
        if !verbose || matches!(c.what, What::Finding { .. }) {
            continue;
        }
        for l in &c.labels {
            let pair = if l.pair_a == l.pair_b || l.pair_b == "-" {
                l.pair_a.clone()
            } else if l.pair_a == "-" {
                l.pair_b.clone()
            } else {
                format!("{} (B: {})", l.pair_a, l.pair_b)
            };
            let _ = writeln!(s, "{indent}    label {pair}: {} → {}", l.a, l.b);
        }
        for f in &c.findings_appeared {
            let _ = writeln!(
                s,
                "{indent}    + finding {} ({}) on {}: {}",
                f.id, f.severity, f.subject, f.summary
            );
        }
        for f in &c.findings_vanished {
            let _ = writeln!(
                s,
                "{indent}    - finding {} ({}) on {}: {}",
                f.id, f.severity, f.subject, f.summary
            );
        }
    }
}

/// Text of a diff between inputs of several hosts: each pair of hosts as [`render_text`]
/// writes one diff, then the hosts that have no counterpart.
pub fn render_hosts_text(h: &crate::analysis::diff::HostsDiff, verbose: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} host pair(s) compared ({} vs {}), each host its own node",
        h.pairs.len(),
        h.a,
        h.b
    );
    for d in &h.pairs {
        s.push('\n');
        s.push_str(&render_text(d, verbose));
    }
    for (side, input, hosts) in [("A", &h.a, &h.only_a), ("B", &h.b, &h.only_b)] {
        for n in hosts {
            let _ = writeln!(
                s,
                "only in {side} ({input}): host {n} (no host of the other side has its host_hash)"
            );
        }
    }
    s
}
