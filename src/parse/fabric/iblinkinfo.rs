//! `iblinkinfo`'s output as rdma-core's `infiniband-diags/iblinkinfo.c` prints it:
//!
//! * default: a header per node (`Switch: 0x<port guid> <desc>:` or `CA: <desc>:`), then a line
//!   per port: `<lid> <port>[<ext>] ==(<width> <speed> <state>/<phys>)==>  <peer lid> <peer
//!   port>[<ext>] "<peer desc>" ( <could-be note> )`, an adapter's line led by its port GUID;
//! * `-l`: every line whole: `0x<port guid> "<desc, %30s>" <lid> <port>[..] ==(…)==>  0x<peer
//!   port guid> <peer lid> <peer port>[..] "<peer desc>" ( … )`.
//!
//! The width is `mad_dump_linkwidth` (`4X`), the speed the per-lane signalling rate
//! (`106.25 Gbps` is NDR, `53.125 Gbps` HDR; `10.0 Gbps (FDR10)`). A down port prints no
//! width and no peer; `Port not available` has no peer either. Nodes are keyed by LID, which
//! both forms print for both ends (a switch's ports share its LID). `-l` prints no node
//! type: a node with more than one cabled port is taken as a switch.

use super::{Builder, MapError, at, guid};
use crate::model::fabric::{FabricMap, LinkEnd, LinkRate, NodeKind, Producer, ib_lane_gbps};
use std::collections::HashMap;

/// The generation whose lane signalling rate `iblinkinfo` prints (`mad_dump_linkspeed`,
/// `ibnd_dump_agg_linkspeedext`).
fn generation_of_lane(s: &str) -> Option<&'static str> {
    Some(match s {
        "2.5" => "SDR",
        "5.0" => "DDR",
        "10.0" => "QDR",
        "14.0625" => "FDR",
        "25.78125" => "EDR",
        "53.125" => "HDR",
        "106.25" => "NDR",
        "212.5" => "XDR",
        _ => return None,
    })
}

/// `lid port[ext]` at the end of `s` → (lid, port, the text before).
fn lid_port(s: &str) -> Option<(u32, u32, &str)> {
    let s = s.trim_end();
    let s = if s.ends_with(']') {
        &s[..s.rfind('[')?]
    } else {
        s
    };
    let s = s.trim_end();
    let (before, port) = s.rsplit_once(char::is_whitespace)?;
    let before = before.trim_end();
    let (before, lid) = before
        .rsplit_once(char::is_whitespace)
        .unwrap_or(("", before));
    Some((lid.parse().ok()?, port.parse().ok()?, before))
}

/// The words inside the last `( … )` of a port line: `get_max_msg`'s width and speed notes
/// (`Could be 4X`, `Could be 14.0625 Gbps`, `Could be FDR10 (…)`), empty when there are none.
fn note(after_desc: &str) -> &str {
    let t = after_desc.trim();
    t.strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or("")
        .trim()
}

/// What both ends support, from the note `iblinkinfo` prints after a cabled port
/// (`print_port` always calls infiniband-diags' `get_max_msg` for a port with a peer, and
/// prints its two messages as `(%s %s)`). `get_max_msg` writes `Could be <width>` when the
/// widest width in both ends' `LinkWidthSupported` is not the active width, and `Could be
/// <speed>` when the fastest speed both ends support (`LinkSpeedExtSupported` where both
/// support extended speeds, Mellanox FDR10, else `LinkSpeedSupported`) is not the active one.
/// So an empty note is the tool's own statement that the link runs at the widest width and
/// fastest speed both ends support: the supported rate is the link's own. A note gives the
/// rate it names, the active width or speed standing where it names only the other.
fn supported(
    note: &str,
    lanes: Option<u32>,
    generation: Option<&'static str>,
) -> (Option<f64>, Option<String>) {
    let mut lanes = lanes;
    let mut generation = generation;
    let mut rest = note;
    while let Some(i) = rest.find("Could be ") {
        rest = &rest[i + 9..];
        let word = rest.split_whitespace().next().unwrap_or("");
        if let Some(w) = word.strip_suffix(['X', 'x'])
            && let Ok(l) = w.parse::<u32>()
        {
            lanes = Some(l);
        } else if word == "FDR10" {
            generation = Some("FDR10");
        } else if let Some(g) = generation_of_lane(word) {
            generation = Some(g);
        } else {
            // A note this reader cannot read: what both ends support is unknown.
            return (None, Some(note.to_string()));
        }
    }
    let gbps = lanes
        .zip(generation.and_then(ib_lane_gbps))
        .map(|(l, g)| f64::from(l) * g);
    let raw = if note.is_empty() {
        "no \"Could be\" note: the widest width and fastest speed both ends support".to_string()
    } else {
        note.to_string()
    };
    (gbps, gbps.map(|_| raw))
}

/// The width and speed between `==(` and `)==>` (`4X 106.25 Gbps Active/ LinkUp`, `4X 10.0
/// Gbps (FDR10) …`) with what both ends support from the port's note; `None` for a port that
/// prints no width (down).
fn link_rate(mid: &str, note: &str) -> Option<LinkRate> {
    let words: Vec<&str> = mid.split_whitespace().collect();
    match words.as_slice() {
        [w, s, "Gbps", rest @ ..] if w.ends_with(['X', 'x']) => {
            let generation = if rest.first() == Some(&"(FDR10)") {
                Some("FDR10")
            } else {
                generation_of_lane(s)
            };
            let lanes = w[..w.len() - 1].parse::<u32>().ok();
            let (supported_gbps, supported_raw) = supported(note, lanes, generation);
            Some(LinkRate {
                lanes,
                gbps: lanes
                    .zip(generation.and_then(ib_lane_gbps))
                    .map(|(l, g)| l as f64 * g),
                generation: generation.map(str::to_string),
                raw: format!("{w} {s} Gbps"),
                supported_gbps,
                supported_raw,
            })
        }
        _ => None,
    }
}

/// Parses either form.
/// Records that `key` belongs to the node whose header is at `(line, desc)`; the same key
/// under another header is two nodes named alike: refused, naming both header lines.
fn twice<K: std::hash::Hash + Eq + Copy>(
    seen: &mut HashMap<K, (usize, String)>,
    key: K,
    (line, desc): (usize, &str),
    raw: &str,
    what: &str,
    shown: impl Fn(K) -> String,
) -> Result<(), MapError> {
    match seen.get(&key) {
        Some((first, d)) if *first != line => Err(MapError::at(
            line,
            raw,
            format!(
                "{what} {} printed for two nodes: header line {first} ({d:?}) and header line {line} ({desc:?}); a map that names two nodes alike cannot be read",
                shown(key)
            ),
        )),
        Some(_) => Ok(()),
        None => {
            seen.insert(key, (line, desc.to_string()));
            Ok(())
        }
    }
}

/// Reads `iblinkinfo` output (default form and `-l`): node headers and port lines, each line
/// dispatched to its form; then the nodes with more than one cabled port made switches.
pub(super) fn parse(text: &str, name: &str) -> Result<FabricMap, MapError> {
    let mut r = Reader {
        b: Builder::new(Producer::Iblinkinfo),
        name,
        header: None,
        any: false,
        header_line: 0,
        guid_header: HashMap::new(),
        lid_header: HashMap::new(),
    };
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(rest) = l.strip_prefix("Switch: ") {
            r.switch_header(n, raw, rest)?;
        } else if let Some(rest) = l
            .strip_prefix("CA: ")
            .or_else(|| l.strip_prefix("Router: "))
        {
            let kind = if l.starts_with("CA") {
                NodeKind::Ca
            } else {
                NodeKind::Router
            };
            r.header_line = n;
            r.header = Some((
                kind,
                None,
                rest.strip_suffix(':').unwrap_or(rest).to_string(),
            ));
        } else {
            r.port_line(n, raw, l)?;
        }
    }
    if !r.any {
        return Err(MapError::at(0, "", "no port line: not iblinkinfo output"));
    }
    Ok(switches_by_ports(r.b.finish()))
}

/// The state of [`parse`] across lines.
struct Reader<'n> {
    b: Builder,
    /// The map's name, for each link's evidence.
    name: &'n str,
    /// The node a default-form port line belongs to: kind, GUID (switches), description.
    header: Option<(NodeKind, Option<u64>, String)>,
    /// A port line was read.
    any: bool,
    /// iblinkinfo prints each node's header once: each switch GUID's header line, and each
    /// LID's (a node's ports share it, or each adapter port has its own) header line.
    header_line: usize,
    guid_header: HashMap<u64, (usize, String)>,
    lid_header: HashMap<u32, (usize, String)>,
}

/// A port line's peer: LID, port, port GUID, description, and the note after it.
struct Peer<'l> {
    lid: u32,
    port: u32,
    guid: Option<u64>,
    desc: &'l str,
    note: &'l str,
}

impl Reader<'_> {
    /// `Switch: <guid> <description>:`, refused when the GUID was printed for another node.
    fn switch_header(&mut self, n: usize, raw: &str, rest: &str) -> Result<(), MapError> {
        let (g, desc) = rest.split_once(' ').unwrap_or((rest, ""));
        let desc = desc.strip_suffix(':').unwrap_or(desc);
        if let Some(g) = guid(g) {
            twice(
                &mut self.guid_header,
                g,
                (n, desc),
                raw,
                "switch GUID",
                |g| format!("{g:016x}"),
            )?;
        }
        self.header_line = n;
        self.header = Some((
            NodeKind::Switch,
            guid(g),
            desc.strip_suffix(':').unwrap_or(desc).to_string(),
        ));
        Ok(())
    }

    /// A port line, `<lid> <port>[..] ==(<rate> <state>)==> <lid> <port>[..] "<desc>" (<note>)`:
    /// a cable, unless the port is down or its peer not available.
    fn port_line(&mut self, n: usize, raw: &str, l: &str) -> Result<(), MapError> {
        // The closing `)==>` is the first one after `==(`: a line holding `)==>` before its
        // `==(` (damaged or hostile) is not a port line, and must not be sliced backwards.
        let open = l.find("==(");
        let close = open.and_then(|o| l[o + 3..].find(")==>").map(|c| o + 3 + c));
        let (Some(open), Some(close)) = (open, close) else {
            return Err(MapError::at(
                n,
                raw,
                "neither a node header nor a port line (==(…)==>)",
            ));
        };
        self.any = true;
        let (left, mid, right) = (&l[..open], &l[open + 3..close], l[close + 4..].trim());
        let Some((lid, port, before)) = lid_port(left) else {
            return Err(MapError::at(n, raw, "no <lid> <port>[..] before ==("));
        };
        // Before the LID: the port GUID (adapters, and every line of -l), and in -l the
        // node's quoted description first.
        let before = before.trim();
        let (own_desc, own_guid) = if let Some(q) = before.strip_prefix("0x") {
            match q.split_once(char::is_whitespace) {
                Some((g, d)) => (Some(d.trim().trim_matches('"').trim().to_string()), guid(g)),
                None => (None, guid(q)),
            }
        } else {
            (None, None)
        };
        let line_mode = own_desc.is_some();
        // A down port, or a port whose peer is not available: no cable to record.
        if right.starts_with('[') || right.starts_with("\"Port not available\"") {
            return Ok(());
        }
        let peer = peer(n, raw, right)?;
        let rate = link_rate(mid, peer.note);
        let (kind, node_guid, desc) = match (&self.header, line_mode) {
            (Some((k, g, d)), false) => (*k, *g, d.clone()),
            (_, true) => (NodeKind::Ca, None, own_desc.clone().unwrap_or_default()),
            (None, false) => {
                return Err(MapError::at(
                    n,
                    raw,
                    "port line before any Switch:/CA: header",
                ));
            }
        };
        if !line_mode {
            twice(
                &mut self.lid_header,
                lid,
                (self.header_line, &desc),
                raw,
                "LID",
                |l| l.to_string(),
            )?;
        }
        let b = &mut self.b;
        let me = b.node(&format!("lid:{lid}"), kind, node_guid, Some(&desc));
        // The peer's kind is not printed: an adapter until it shows a second cabled port or
        // a Switch: header of its own (Builder keeps the kind first given; fixed below).
        let peer_node = b.node(
            &format!("lid:{}", peer.lid),
            NodeKind::Ca,
            None,
            Some(peer.desc),
        );
        b.link(
            LinkEnd {
                node: me,
                port,
                port_guid: if kind == NodeKind::Switch {
                    None
                } else {
                    own_guid
                },
            },
            LinkEnd {
                node: peer_node,
                port: peer.port,
                port_guid: peer.guid,
            },
            None,
            rate,
            at(self.name, n),
        );
        Ok(())
    }
}

/// The peer after `==>`: `<lid> <port>[..] "<description>" (<note>)`.
fn peer<'l>(n: usize, raw: &str, right: &'l str) -> Result<Peer<'l>, MapError> {
    let Some(q) = right.find('"') else {
        return Err(MapError::at(n, raw, "peer without \"description\""));
    };
    let Some(qe) = right.rfind("\" (") else {
        return Err(MapError::at(n, raw, "peer description not closed by \" ("));
    };
    if qe <= q {
        return Err(MapError::at(n, raw, "peer description not closed"));
    }
    let desc = &right[q + 1..qe];
    let Some((lid, port, before)) = lid_port(&right[..q]) else {
        return Err(MapError::at(n, raw, "no peer <lid> <port>[..]"));
    };
    Ok(Peer {
        lid,
        port,
        guid: guid(before.trim()),
        desc,
        note: note(&right[qe + 1..]),
    })
}

/// Nodes with more than one cabled port are switches (a host adapter has one cable per node in
/// every map this reads; a dual-port adapter cabled twice is named by its header).
fn switches_by_ports(mut m: FabricMap) -> FabricMap {
    let mut ports: HashMap<usize, usize> = HashMap::new();
    for l in &m.links {
        *ports.entry(l.a.node).or_default() += 1;
        *ports.entry(l.b.node).or_default() += 1;
    }
    for (i, node) in m.nodes.iter_mut().enumerate() {
        if node.kind == NodeKind::Ca && ports.get(&i).copied().unwrap_or(0) > 1 {
            node.kind = NodeKind::Switch;
        }
    }
    m.limitations.push(
        "iblinkinfo names nodes by LID and prints no node GUID for an adapter: adapters are matched by description or port GUID".into(),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_form() {
        let t = "Switch: 0xfc6a1c0300a1b2c3 leaf-r0-1:\n           1    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>      10    1[  ] \"gpu001 mlx5_0\" ( )\n           1    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )\n           1    3[  ] ==( 2X        106.25 Gbps Active/  LinkUp)==>      11    1[  ] \"gpu002 mlx5_0\" ( Could be 4X 106.25 Gbps)\nCA: gpu001 mlx5_0:\n      0xa088c20300112233     10    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>       1    1[  ] \"leaf-r0-1\" ( )\n";
        let m = parse(t, "l").unwrap();
        assert_eq!(m.links.len(), 2);
        assert_eq!(m.nodes[0].kind, NodeKind::Switch);
        assert_eq!(m.nodes[0].guid, Some(0xfc6a1c0300a1b2c3));
        assert_eq!(m.nodes[1].desc, "gpu001 mlx5_0");
        assert_eq!(m.links[0].b.port_guid, Some(0xa088c20300112233));
        assert_eq!(m.links[0].rate.as_ref().unwrap().gbps, Some(400.0));
        assert_eq!(m.links[1].rate.as_ref().unwrap().gbps, Some(200.0));
    }

    #[test]
    fn arrow_before_its_opening_is_refused_not_sliced() {
        // Found by `cargo bench --bench fuzz -- fabric_map` (issue 56's split kept it): a port
        // line with `)==>` before `==(` made the reader slice backwards and panic.
        let t = "CA: gpu001 mlx5_0:\n      0xa088c20300112233     10 )==>   1[  ] ==( 4X 106.25 Gbps Active/  LinkUp  1 \"leaf\" ( )\n";
        let e = parse(t, "l").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn line_form() {
        let t = "0x0002c90200404ad8 \"SwitchX -  Mellanox Technologies\"      4    3[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x0002c903000e0b72     15    1[  ] \"exe0002 HCA-1\" ( )\n0x0002c90200404ad8 \"SwitchX -  Mellanox Technologies\"      4   17[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x0011220300334455      5    1[  ] \"exe0001 HCA-1\" ( )\n";
        let m = parse(t, "l").unwrap();
        assert_eq!(m.links.len(), 2);
        assert_eq!(m.nodes[0].kind, NodeKind::Switch);
        assert_eq!(m.nodes[1].kind, NodeKind::Ca);
        assert_eq!(m.links[0].b.port_guid, Some(0x0002c903000e0b72));
        assert_eq!(m.links[0].rate.as_ref().unwrap().gbps, Some(100.0));
    }

    #[test]
    fn refusals() {
        assert!(parse("hello\n", "l").is_err());
        let e = parse(
            "      1    1[  ] ==( 4X 2.5 Gbps Active/  LinkUp)==>  2 1[ ] \"x\" ( )\n",
            "l",
        )
        .unwrap_err();
        assert!(e.reason.contains("before any"), "{e}");
    }

    /// `get_max_msg`'s notes (infiniband-diags `ibdiag_common.c`): before they were read no
    /// link carried a supported rate.
    #[test]
    fn could_be_notes() {
        assert_eq!(
            supported("Could be 14.0625 Gbps", Some(4), Some("FDR10")),
            (Some(56.0), Some("Could be 14.0625 Gbps".into()))
        );
        assert_eq!(
            supported("Could be 4X", Some(2), Some("NDR")).0,
            Some(400.0)
        );
        assert_eq!(
            supported("Could be 4X Could be 106.25 Gbps", Some(2), Some("HDR")).0,
            Some(400.0)
        );
        assert_eq!(supported("", Some(4), Some("QDR")).0, Some(40.0));
        assert_eq!(
            supported("Could be something", Some(4), Some("QDR")).0,
            None
        );
        assert_eq!(note(" ( Could be 14.0625 Gbps)"), "Could be 14.0625 Gbps");
        assert_eq!(note(" ( )"), "");
    }

    /// Issue 53: two switch headers printing one GUID (or one LID) were merged or kept as two
    /// nodes alike, never named; refused, naming both header lines.
    #[test]
    fn a_guid_or_lid_printed_for_two_nodes_is_refused() {
        let sw = |g: &str, d: &str, lid: u32, peer: u32| {
            format!(
                "Switch: 0x{g} {d}:\n           {lid}    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>      {peer}    1[  ] \"gpu{peer} mlx5_0\" ( )\n"
            )
        };
        let t = sw("fc6a1c0300a1b2c3", "leaf-1", 1, 10) + &sw("fc6a1c0300a1b2c3", "leaf-2", 2, 11);
        let e = parse(&t, "l").unwrap_err().to_string();
        assert!(
            e.contains("switch GUID fc6a1c0300a1b2c3")
                && e.contains("header line 1")
                && e.contains("leaf-2"),
            "{e}"
        );
        let t = sw("fc6a1c0300a1b2c3", "leaf-1", 1, 10) + &sw("fc6a1c0300a1b2c4", "leaf-2", 1, 11);
        let e = parse(&t, "l").unwrap_err().to_string();
        assert!(
            e.contains("LID 1 printed for two nodes") && e.contains("header line 3"),
            "{e}"
        );
        // Distinct GUIDs and LIDs read.
        let t = sw("fc6a1c0300a1b2c3", "leaf-1", 1, 10) + &sw("fc6a1c0300a1b2c4", "leaf-2", 2, 11);
        assert_eq!(parse(&t, "l").unwrap().links.len(), 2);
    }
}
