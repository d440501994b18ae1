//! `ibnetdiscover`'s topology file and its `-p` ports report, as rdma-core's
//! `infiniband-diags/ibnetdiscover.c` prints them:
//!
//! * a node block: `vendid=`, `devid=`, `sysimgguid=`, `switchguid=0x…(…)` / `caguid=0x…`,
//!   then `Switch\t<ports> "S-<guid16>"\t\t# "<desc>" enhanced port 0 lid <n> lmc <n>`
//!   (`Ca`/`Rt` for adapters and routers: `Ca\t<ports> "H-<guid16>"\t\t# "<desc>"`);
//! * its ports (`out_switch_port`, `out_ca_port`): `[p][ext e]\t"H-<guid16>"[rp](<rguid>) \t\t#
//!   "<rdesc>" lid <n> 4xNDR` for a switch, `[p](<guid>) \t"S-<guid16>"[rp]\t\t# lid <n> lmc <n>
//!   "<rdesc>" lid <n> 4xNDR` for an adapter; width and speed printed together
//!   (`dump_linkwidth_compat` + `dump_linkspeedext_compat`), ` s=… w=… v=…` after with `-f`;
//! * `-p` (`dump_ports_report`): `%2s %5d %2d 0x%016x %s %s` (type, LID, port, port GUID,
//!   width, speed) then ` - %2s %5d %2d 0x%016x ( '%s' - '%s' )` for the peer, or only the
//!   node's description for an unconnected port.
//!
//! ibdiagnet writes the same topology file (`ibdiagnet2.ibnetdiscover`) with a label in
//! parentheses after each port number: a switch port's `[1](1/1/1)` (ASIC/cage/port), an
//! adapter port's `[1](B134D0F0/0/0/1)(<port guid>)` (its PCI place, then its port GUID), a
//! SHARP port's `[65](65)`. Labels are skipped; an adapter port's GUID is its last
//! parenthesised word that is a GUID. A node GUID printed on two node lines is refused,
//! naming both lines: two nodes are never merged into one.

use super::{Builder, MapError, at, guid, ib_rate};
use crate::model::fabric::{FabricMap, LinkEnd, NodeKind, Producer};

fn kind_of_letter(c: char) -> Option<NodeKind> {
    match c {
        'S' => Some(NodeKind::Switch),
        'H' => Some(NodeKind::Ca),
        'R' => Some(NodeKind::Router),
        _ => None,
    }
}

/// `"S-005442ba00003080"` at the start of `s` → (kind, GUID, rest).
fn node_name(s: &str) -> Option<(NodeKind, u64, &str)> {
    let s = s.strip_prefix('"')?;
    let kind = kind_of_letter(s.chars().next()?)?;
    let s = s.get(1..)?.strip_prefix('-')?;
    let end = s.find('"')?;
    Some((kind, guid(&s[..end])?, &s[end + 1..]))
}

/// `[12]` at the start of `s` → (12, rest); a following `[ext N]` is skipped.
fn port_num(s: &str) -> Option<(u32, &str)> {
    let s = s.strip_prefix('[')?;
    let end = s.find(']')?;
    let n = s[..end].trim().parse().ok()?;
    let mut rest = &s[end + 1..];
    if let Some(r) = rest.strip_prefix("[ext ") {
        rest = &r[r.find(']')? + 1..];
    }
    Some((n, rest))
}

/// The parenthesised words after a port number — `(8f10403960985)` (a port GUID),
/// ibdiagnet's `(1/1/1)`, `(B134D0F0/0/0/1)(<guid>)`, `(65)` — skipped; → (the last one that
/// is a GUID, rest).
fn paren_guid(s: &str) -> (Option<u64>, &str) {
    let mut rest = s;
    let mut found = None;
    while let Some(r) = rest.trim_start().strip_prefix('(') {
        let Some(end) = r.find(')') else { break };
        let word = &r[..end];
        if !word.contains('/') {
            found = guid(word).or(found);
        }
        rest = &r[end + 1..];
    }
    (found, rest)
}

/// The quoted description in a header comment: `# "leaf01" enhanced port 0 …` → `leaf01`.
fn header_desc(comment: &str) -> Option<&str> {
    let s = comment.trim_start().strip_prefix('"')?;
    // The description may itself hold quotes; the header's own text follows the last one.
    let end = s
        .rfind("\" enhanced port")
        .or_else(|| s.rfind("\" base port"))
        .or_else(|| s.rfind('"'))?;
    Some(&s[..end])
}

/// The peer's description and the width+speed word of a port comment:
/// `# "leaf01" lid 1 4xHDR` or `# lid 10 lmc 0 "leaf01" lid 1 4xHDR s=… w=… v=…`.
fn port_comment(comment: &str) -> Option<(&str, &str)> {
    let open = comment.find('"')?;
    let close = comment.rfind("\" lid ")?;
    if close <= open {
        return None;
    }
    let desc = &comment[open + 1..close];
    let mut words = comment[close + 6..].split_whitespace();
    let _lid = words.next()?;
    Some((desc, words.next().unwrap_or("")))
}

/// `4xNDR` → (`4x`, `NDR`); `??` or `???` stay as printed.
fn split_width_speed(w: &str) -> (&str, &str) {
    match w.find(['x', 'X']) {
        Some(i) => (&w[..=i], &w[i + 1..]),
        None => (w, ""),
    }
}

/// Parses the default topology file.
pub(super) fn parse_topology(text: &str, name: &str) -> Result<FabricMap, MapError> {
    let mut b = Builder::new(Producer::Ibnetdiscover);
    let mut current: Option<(usize, NodeKind)> = None;
    // Each node's node line (0: none yet): a second one is refused.
    let mut headers: Vec<usize> = Vec::new();
    let mut any = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let (head, comment) = match l.find('#') {
            Some(p) => (l[..p].trim_end(), &l[p + 1..]),
            None => (l, ""),
        };
        let first = head.split_whitespace().next().unwrap_or("");
        match first {
            "Switch" | "Ca" | "Rt" => {
                // `%s\t%d %s`: the type, the port count, the quoted name (blanks vary).
                let after_type = head[first.len()..].trim_start();
                let rest = after_type
                    .split_once(char::is_whitespace)
                    .map_or("", |(_, r)| r.trim());
                let Some((kind, g, _)) = node_name(rest) else {
                    return Err(MapError::at(n, raw, "node line without \"X-<guid>\" name"));
                };
                let desc = header_desc(comment);
                let idx = b.node(&format!("{g:016x}"), kind, Some(g), desc);
                if headers.len() <= idx {
                    headers.resize(idx + 1, 0);
                }
                if headers[idx] != 0 {
                    return Err(MapError::at(
                        n,
                        raw,
                        format!(
                            "node GUID {g:016x} printed for two nodes: line {} ({:?}) and line {n} ({:?}); a map that names two nodes alike cannot be read",
                            headers[idx],
                            b.map.nodes[idx].desc,
                            desc.unwrap_or("")
                        ),
                    ));
                }
                headers[idx] = n;
                if let Some(ports) = after_type
                    .split_whitespace()
                    .next()
                    .and_then(|p| p.parse().ok())
                {
                    b.set_ports(idx, ports);
                }
                current = Some((idx, kind));
                any = true;
            }
            _ if head.starts_with('[') => {
                let Some((node, kind)) = current else {
                    return Err(MapError::at(n, raw, "port line before any node line"));
                };
                let Some((port, rest)) = port_num(head) else {
                    return Err(MapError::at(n, raw, "port line without [port]"));
                };
                // A switch's port labels (ibdiagnet's `(1/1/1)`, `(65)`) name no port GUID.
                let (own_guid, rest) = paren_guid(rest);
                let own_guid = own_guid.filter(|_| kind != NodeKind::Switch);
                let Some((rkind, rguid, rest)) = node_name(rest.trim_start()) else {
                    return Err(MapError::at(n, raw, "port line without peer \"X-<guid>\""));
                };
                let Some((rport, rest)) = port_num(rest) else {
                    return Err(MapError::at(n, raw, "peer without [port]"));
                };
                let (rport_guid, _) = paren_guid(rest);
                let rport_guid = rport_guid.filter(|_| rkind != NodeKind::Switch);
                let Some((rdesc, ws)) = port_comment(comment) else {
                    return Err(MapError::at(n, raw, "port comment without \"desc\" lid N"));
                };
                let (w, s) = split_width_speed(ws);
                let peer = b.node(&format!("{rguid:016x}"), rkind, Some(rguid), Some(rdesc));
                b.link(
                    LinkEnd {
                        node,
                        port,
                        port_guid: own_guid,
                    },
                    LinkEnd {
                        node: peer,
                        port: rport,
                        port_guid: rport_guid,
                    },
                    None,
                    Some(ib_rate(w, s, ws.to_string())),
                    at(name, n),
                );
            }
            // vendid=, devid=, sysimgguid=, switchguid=, caguid=, rtguid=, `Chassis N`,
            // `Non-Chassis Nodes`, `Hostname:` (grouping) carry nothing the map needs.
            _ => {}
        }
    }
    if !any {
        return Err(MapError::at(
            0,
            "",
            "no Switch/Ca line: not ibnetdiscover's topology file",
        ));
    }
    Ok(b.finish())
}

/// Whether `l` is a line of the `-p` ports report (`CA    12  1 0x… 4x NDR …`).
pub(super) fn is_ports_line(l: &str) -> bool {
    let mut w = l.split_whitespace();
    matches!(w.next(), Some("CA" | "SW" | "RT"))
        && w.next().is_some_and(|x| x.parse::<u32>().is_ok())
        && w.next().is_some_and(|x| x.parse::<u32>().is_ok())
        && w.next().is_some_and(|x| x.starts_with("0x"))
}

fn ports_kind(s: &str) -> Option<NodeKind> {
    match s {
        "CA" => Some(NodeKind::Ca),
        "SW" => Some(NodeKind::Switch),
        "RT" => Some(NodeKind::Router),
        _ => None,
    }
}

/// Parses the `-p` ports report. It prints port GUIDs, not node GUIDs: a switch's ports share
/// its port-0 GUID (one node), an adapter port is a node of its own.
pub(super) fn parse_ports(text: &str, name: &str) -> Result<FabricMap, MapError> {
    let mut b = Builder::new(Producer::IbnetdiscoverPorts);
    b.limitation("ibnetdiscover -p prints port GUIDs, not node GUIDs: each adapter port is matched by its port GUID or description");
    let mut any = false;
    let mut seen = Sightings::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if !is_ports_line(l) {
            return Err(MapError::at(n, raw, "not a line of ibnetdiscover -p"));
        }
        any = true;
        let w: Vec<&str> = l.split_whitespace().collect();
        let Some(kind) = ports_kind(w[0]) else {
            return Err(MapError::at(n, raw, "unknown node type"));
        };
        let port: u32 = w[2].parse().unwrap_or(0);
        let Some(pg) = guid(w[3]) else {
            return Err(MapError::at(n, raw, "port GUID is not hex"));
        };
        // Unconnected: the node description follows the rate (quoted, or bare in older
        // releases); the node is kept, with nothing to link.
        let Some(dash) = w.iter().position(|x| *x == "-") else {
            if w.len() > 6 {
                let desc = unconnected_desc(l, w[5]);
                sighted(&mut seen, pg, kind, desc, n, raw)?;
                b.node(&format!("{pg:016x}"), kind, None, Some(desc));
            }
            continue;
        };
        if dash < 6 || w.len() < dash + 5 {
            return Err(MapError::at(n, raw, "peer fields missing after ' - '"));
        }
        let (width, speed) = (w[4], w[5]);
        let (Some(rkind), Ok(rport), Some(rpg)) = (
            ports_kind(w[dash + 1]),
            w[dash + 3].parse::<u32>(),
            guid(w[dash + 4]),
        ) else {
            return Err(MapError::at(n, raw, "peer type, port or GUID unreadable"));
        };
        let Some((desc, rdesc)) = quoted_pair(l) else {
            return Err(MapError::at(n, raw, "no ( 'desc' - 'peer desc' )"));
        };
        sighted(&mut seen, pg, kind, desc, n, raw)?;
        sighted(&mut seen, rpg, rkind, rdesc, n, raw)?;
        let a = b.node(&format!("{pg:016x}"), kind, None, Some(desc));
        let c = b.node(&format!("{rpg:016x}"), rkind, None, Some(rdesc));
        b.link(
            LinkEnd {
                node: a,
                port,
                port_guid: Some(pg),
            },
            LinkEnd {
                node: c,
                port: rport,
                port_guid: Some(rpg),
            },
            None,
            Some(ib_rate(width, speed, format!("{width} {speed}"))),
            at(name, n),
        );
    }
    if !any {
        return Err(MapError::at(
            0,
            "",
            "no port line: not ibnetdiscover -p output",
        ));
    }
    Ok(b.finish())
}

/// Each port GUID's first sighting in a `-p` report: line, node type, description.
type Sightings = std::collections::HashMap<u64, (usize, NodeKind, String)>;

/// Checks that a port GUID printed again names the same node (its type and description: a
/// switch's ports share its GUID, and every line prints the node's own description); two
/// nodes printing one GUID are refused, naming both lines, never merged.
fn sighted(
    seen: &mut Sightings,
    g: u64,
    kind: NodeKind,
    desc: &str,
    n: usize,
    raw: &str,
) -> Result<(), MapError> {
    let desc = desc.trim();
    match seen.get(&g) {
        Some((first, k, d)) if *k != kind || d != desc => Err(MapError::at(
            n,
            raw,
            format!(
                "port GUID {g:016x} printed for two nodes: line {first} ({k:?} {d:?}) and line {n} ({kind:?} {desc:?}); a map that names two nodes alike cannot be read"
            ),
        )),
        Some(_) => Ok(()),
        None => {
            seen.insert(g, (n, kind, desc.to_string()));
            Ok(())
        }
    }
}

/// The description after an unconnected port's speed word `speed`: `'leaf01 '` (quotes
/// removed, blanks inside kept) or a bare `Infiniscale-IV Mellanox Technologies`.
fn unconnected_desc<'a>(l: &'a str, speed: &str) -> &'a str {
    // The speed word is the sixth field; the description starts after it.
    let after = l
        .match_indices(speed)
        .map(|(i, _)| &l[i + speed.len()..])
        .find(|r| r.starts_with(char::is_whitespace))
        .unwrap_or("")
        .trim();
    after
        .strip_prefix('\'')
        .and_then(|d| d.strip_suffix('\''))
        .unwrap_or(after)
}

/// `( 'leaf01' - 'node01 mlx5_0' )` at the end of a ports line → both descriptions.
fn quoted_pair(l: &str) -> Option<(&str, &str)> {
    let open = l.find("( '")?;
    let inner = l[open + 3..].trim_end().strip_suffix("' )")?;
    let mid = inner.find("' - '")?;
    Some((&inner[..mid], &inner[mid + 5..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOPO: &str = "#\n# Topology file: generated on Tue Jan  2 10:00:00 2024\n#\n\
vendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0xfc6a1c0300a1b2c3\n\
switchguid=0xfc6a1c0300a1b2c3(fc6a1c0300a1b2c3)\n\
Switch\t64 \"S-fc6a1c0300a1b2c3\"\t\t# \"leaf-r0-1\" enhanced port 0 lid 1 lmc 0\n\
[1]\t\"H-a088c20300112233\"[1](a088c20300112233) \t\t# \"gpu001 mlx5_0\" lid 10 4xNDR\n\
[2]\t\"H-a088c20300112244\"[1](a088c20300112244) \t\t# \"gpu002 mlx5_0\" lid 11 2xNDR\n\
\nvendid=0x2c9\ndevid=0x1021\nsysimgguid=0xa088c20300112233\ncaguid=0xa088c20300112233\n\
Ca\t1 \"H-a088c20300112233\"\t\t# \"gpu001 mlx5_0\"\n\
[1](a088c20300112233) \t\"S-fc6a1c0300a1b2c3\"[1]\t\t# lid 10 lmc 0 \"leaf-r0-1\" lid 1 4xNDR\n";

    #[test]
    fn topology_both_ends_once() {
        let m = parse_topology(TOPO, "t").unwrap();
        assert_eq!(m.nodes.len(), 3);
        assert_eq!(m.links.len(), 2, "the cable printed from both ends is one");
        let l = &m.links[0];
        assert_eq!(m.nodes[l.a.node].desc, "leaf-r0-1");
        assert_eq!(m.nodes[l.b.node].desc, "gpu001 mlx5_0");
        assert_eq!(l.b.port_guid, Some(0xa088c20300112233));
        let r = l.rate.as_ref().unwrap();
        assert_eq!((r.lanes, r.gbps), (Some(4), Some(400.0)));
        assert_eq!(m.links[1].rate.as_ref().unwrap().gbps, Some(200.0));
        assert_eq!(l.evidence, "t line 9");
    }

    #[test]
    fn ports_report() {
        let p = "SW     1  1 0xfc6a1c0300a1b2c3 4x NDR - CA    10  1 0xa088c20300112233 ( 'leaf-r0-1' - 'gpu001 mlx5_0' )\n\
CA    10  1 0xa088c20300112233 4x NDR - SW     1  1 0xfc6a1c0300a1b2c3 ( 'gpu001 mlx5_0' - 'leaf-r0-1' )\n\
SW     1  3 0xfc6a1c0300a1b2c3 4x ???                                    'leaf-r0-1'\n";
        assert!(is_ports_line(p.lines().next().unwrap()));
        let m = parse_ports(p, "p").unwrap();
        assert_eq!((m.nodes.len(), m.links.len()), (2, 1));
        assert_eq!(m.nodes[1].desc, "gpu001 mlx5_0");
    }

    #[test]
    fn refusals_name_the_line() {
        let e = parse_topology("Switch\t64 S-nothing\n", "t").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse_topology("[1]\t\"H-a0\"[1]\n", "t").unwrap_err();
        assert!(e.reason.contains("before any node"), "{e}");
        assert!(parse_topology("hello\n", "t").is_err());
        assert!(parse_ports("CA 1 1 0x1 4x NDR - CA\n", "p").is_err());
    }

    /// ibdiagnet's labels (format facts of ibdiagnet 2.10's `ibdiagnet2.ibnetdiscover`): before
    /// they were read the first `[1](1/1/1)` was refused ("port line without peer").
    #[test]
    fn ibdiagnet_port_labels() {
        let t = "Switch\t65 \"S-fc6a1c0300a1b2c3\"\t\t# \"Quantum-2 Mellanox Technologies\" enhanced port 0 lid 1 lmc 0\n\
[1](1/1/1)\t\"H-a088c20300112233\"[1](a088c20300112233) \t\t# \"gpu001 mlx5_0\" lid 10 4xNDR\n\
[65](65)\t\"H-a088c20300aa0000\"[1](a088c20300aa0000) \t\t# \"Mellanox Technologies Aggregation Node\" lid 11 4xNDR\n\
\nCa\t1 \"H-a088c20300112233\"\t\t# \"gpu001 mlx5_0\"\n\
[1](B134D0F0/0/0/1)(a088c20300112233) \t\"S-fc6a1c0300a1b2c3\"[1](1/1/1)\t\t# lid 10 lmc 0 \"Quantum-2 Mellanox Technologies\" lid 1 4xNDR\n";
        let m = parse_topology(t, "d").unwrap();
        assert_eq!((m.nodes.len(), m.links.len()), (3, 2));
        assert_eq!(
            m.links[0].a.port_guid, None,
            "a switch port's label is no GUID"
        );
        assert_eq!(m.links[0].b.port_guid, Some(0xa088c20300112233));
        assert_eq!(m.links[1].a.port, 65);
        assert_eq!(m.nodes[0].ports, Some(65));
    }

    #[test]
    fn two_node_lines_one_guid_refused() {
        let t = format!("{TOPO}\nCa\t1 \"H-a088c20300112233\"\t\t# \"other mlx5_0\"\n");
        let e = parse_topology(&t, "t").unwrap_err();
        assert!(
            e.reason.contains("line 16") && e.reason.contains("line 19"),
            "{e}"
        );
    }

    /// Issue 53: two switches printing one port GUID in `-p` were merged into one node, the
    /// second's cables hung on the first; refused, naming both lines.
    #[test]
    fn ports_report_guid_printed_for_two_nodes_is_refused() {
        let p = "SW     1  1 0xfc6a1c0300a1b2c3 4x NDR - CA    10  1 0xa088c20300112233 ( 'leaf-r0-1' - 'gpu001 mlx5_0' )\n\
SW     2  1 0xfc6a1c0300a1b2c3 4x NDR - CA    11  1 0xa088c20300112244 ( 'leaf-r1-1' - 'gpu001 mlx5_1' )\n";
        let e = parse_ports(p, "p").unwrap_err().to_string();
        assert!(
            e.contains("fc6a1c0300a1b2c3")
                && e.contains("line 1")
                && e.contains("leaf-r0-1")
                && e.contains("leaf-r1-1"),
            "{e}"
        );
    }
}
