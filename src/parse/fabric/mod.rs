//! The fabric's own map from the output of the tool that drew it: `ibnetdiscover` (default
//! topology file and `-p`), `iblinkinfo` (default and `-l`), ibdiagnet's `ibdiagnet2.db_csv`
//! and lldpd's `lldpctl -f json`. Each grammar follows the producer's own printing code
//! (infiniband-diags' `ibnetdiscover.c` and `iblinkinfo.c` in rdma-core, lldpd's JSON writer);
//! pure: bytes in, a [`FabricMap`] or a [`MapError`] naming the line out.

mod ibdiag_csv;
mod ibdiag_pm;
mod ibdiag_rate;
mod iblinkinfo;
mod ibnetdiscover;
mod lldp;

use crate::model::fabric::{
    FabricLink, FabricMap, FabricNode, LinkEnd, LinkRate, NodeKind, Producer, ib_lane_gbps,
};
use std::collections::HashMap;
use std::fmt;

pub use lldp::{parse as parse_lldpctl, parse_switch as parse_lldpctl_switch};

/// Why a map was refused: the line and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapError {
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
    /// The line as read, shortened to 80 characters.
    pub text: String,
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "line {}: {}: {:?}", self.line, self.reason, self.text)
        }
    }
}

impl std::error::Error for MapError {}

impl MapError {
    fn at(line: usize, text: &str, reason: impl Into<String>) -> Self {
        MapError {
            line,
            reason: reason.into(),
            text: text.chars().take(80).collect(),
        }
    }
}

/// Which producer wrote `text`, from the marks only that producer prints; `None` when none
/// is recognised.
pub fn detect(text: &str) -> Option<Producer> {
    let mut cut = text.len().min(64 * 1024);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let head: &str = &text[..cut];
    if ibdiagnet_other(head).is_some() {
        return None;
    }
    let trimmed = head.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return Some(Producer::Lldpctl);
    }
    if head.contains("START_NODES") || head.contains("START_LINKS") {
        return Some(Producer::IbdiagnetCsv);
    }
    if head.contains(")==>") {
        return Some(Producer::Iblinkinfo);
    }
    for l in head.lines() {
        let l = l.trim_start();
        if l.starts_with("switchguid=") || l.starts_with("caguid=") || is_node_line(l) {
            return Some(Producer::Ibnetdiscover);
        }
        if ibnetdiscover::is_ports_line(l) {
            return Some(Producer::IbnetdiscoverPorts);
        }
    }
    None
}

/// `Switch 65 "S-…"`, `Ca\t1 "H-…"`, `Rt 2 "R-…"`: a node line of the topology file, however
/// blanks are printed (ibnetdiscover prints a tab, older releases and ibdiagnet blanks).
fn is_node_line(l: &str) -> bool {
    let mut w = l.split_whitespace();
    matches!(w.next(), Some("Switch" | "Ca" | "Rt"))
        && w.next().is_some_and(|n| n.parse::<u32>().is_ok())
        && w.next()
            .is_some_and(|q| ["\"S-", "\"H-", "\"R-"].iter().any(|p| q.starts_with(p)))
}

/// ibdiagnet's other topology files, which this reader does not read: `ibdiagnet2.lst` (a
/// line per link, `{ CA Ports:… } { SW Ports:… } PHY=4x LOG=ACT SPD=…`) and
/// `ibdiagnet2.net_dump` / `.net_dump_ext` (a table per switch, `# : IB# : Sta : PhysSta`
/// or `Ty : # : #IB : GUID`): the one-line reason naming the files of the same run to give
/// instead; `None` for any other text.
pub fn ibdiagnet_other(text: &str) -> Option<&'static str> {
    let mut cut = text.len().min(16 * 1024);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    for l in text[..cut].lines().take(200) {
        let l = l.trim_start();
        if (l.starts_with("{ CA Ports:") || l.starts_with("{ SW Ports:")) && l.contains("PHY=") {
            return Some(
                "this is ibdiagnet's ibdiagnet2.lst, which peerpath does not read: give ibdiagnet2.db_csv (or ibdiagnet2.ibnetdiscover) from the same ibdiagnet run",
            );
        }
        if l.contains("IB# : Sta : PhysSta") || l.starts_with("Ty : # : #IB : GUID") {
            return Some(
                "this is ibdiagnet's ibdiagnet2.net_dump, which peerpath does not read: give ibdiagnet2.db_csv (or ibdiagnet2.ibnetdiscover) from the same ibdiagnet run",
            );
        }
    }
    None
}

/// Parses a map written by `producer` (see [`detect`]); `name` is the file name used in
/// each link's evidence. lldpctl's output is one host's: parse it with [`parse_lldpctl`],
/// which needs the host's name.
pub fn parse(text: &str, producer: Producer, name: &str) -> Result<FabricMap, MapError> {
    match producer {
        Producer::Ibnetdiscover => ibnetdiscover::parse_topology(text, name),
        Producer::IbnetdiscoverPorts => ibnetdiscover::parse_ports(text, name),
        Producer::Iblinkinfo => iblinkinfo::parse(text, name),
        Producer::IbdiagnetCsv => ibdiag_csv::parse(text, name),
        Producer::Lldpctl => Err(MapError::at(
            0,
            "",
            "lldpctl output is one host's: name the host (parse_lldpctl)",
        )),
    }
}

/// Builds a map: nodes by key, each cable once however many times it is printed.
pub(crate) struct Builder {
    map: FabricMap,
    by_key: HashMap<String, usize>,
    seen: HashMap<(usize, u32), usize>,
}

impl Builder {
    pub(crate) fn new(producer: Producer) -> Self {
        Builder {
            map: FabricMap {
                producer,
                nodes: Vec::new(),
                links: Vec::new(),
                counters: Vec::new(),
                limitations: Vec::new(),
            },
            by_key: HashMap::new(),
            seen: HashMap::new(),
        }
    }

    /// The node with `key`, added when new; a description or GUID learnt later fills a blank.
    pub(crate) fn node(
        &mut self,
        key: &str,
        kind: NodeKind,
        guid: Option<u64>,
        desc: Option<&str>,
    ) -> usize {
        if let Some(&i) = self.by_key.get(key) {
            let n = &mut self.map.nodes[i];
            if n.desc.is_empty()
                && let Some(d) = desc
            {
                n.desc = d.to_string();
            }
            if n.guid.is_none() {
                n.guid = guid;
            }
            return i;
        }
        let i = self.map.nodes.len();
        self.map.nodes.push(FabricNode {
            kind,
            guid,
            desc: desc.unwrap_or_default().to_string(),
            key: key.to_string(),
            ports: None,
        });
        self.by_key.insert(key.to_string(), i);
        i
    }

    /// Adds a cable unless either end already has one (the same cable printed from its other
    /// end); a port GUID printed only on the second sighting is kept.
    pub(crate) fn link(
        &mut self,
        a: LinkEnd,
        b: LinkEnd,
        names: Option<(String, String)>,
        rate: Option<LinkRate>,
        evidence: String,
    ) {
        let new = FabricLink {
            a,
            b,
            port_names: names,
            rate,
            evidence,
            loopback: a.node == b.node,
        };
        let found = self
            .seen
            .get(&(a.node, a.port))
            .or_else(|| self.seen.get(&(b.node, b.port)))
            .copied();
        if let Some(i) = found
            && !self.same_cable(i, a, b)
        {
            // One port printed cabled to two different peers: both kept, and said.
            let first = self.map.links[i].evidence.clone();
            self.map.limitations.push(format!(
                "a port is printed cabled to two different peers ({first} and {}): both links kept",
                new.evidence
            ));
            self.push_link(new);
            return;
        }
        if let Some(i) = found {
            let l = &mut self.map.links[i];
            for end in [&mut l.a, &mut l.b] {
                for new in [a, b] {
                    if end.node == new.node && end.port == new.port && end.port_guid.is_none() {
                        end.port_guid = new.port_guid;
                    }
                }
            }
            match (&mut l.rate, new.rate) {
                (None, r) => l.rate = r,
                // A note printed from one end only (a faster supported rate) is kept.
                (Some(old), Some(new))
                    if new.supported_gbps.unwrap_or(0.0) > old.supported_gbps.unwrap_or(0.0) =>
                {
                    old.supported_gbps = new.supported_gbps;
                    old.supported_raw = new.supported_raw;
                }
                _ => {}
            }
            return;
        }
        self.push_link(new);
    }

    /// Whether link `i` joins the same two ports as `a`–`b` (either way round).
    fn same_cable(&self, i: usize, a: LinkEnd, b: LinkEnd) -> bool {
        let l = &self.map.links[i];
        let k = |e: LinkEnd| (e.node, e.port);
        (k(l.a), k(l.b)) == (k(a), k(b)) || (k(l.a), k(l.b)) == (k(b), k(a))
    }

    /// Appends a cable and marks both its ports as seen (the first cable a port is on wins).
    fn push_link(&mut self, link: FabricLink) {
        let i = self.map.links.len();
        self.seen.entry((link.a.node, link.a.port)).or_insert(i);
        self.seen.entry((link.b.node, link.b.port)).or_insert(i);
        self.map.links.push(link);
    }

    /// Records how many ports node `i` has.
    pub(crate) fn set_ports(&mut self, i: usize, ports: u32) {
        self.map.nodes[i].ports = Some(ports);
    }

    /// Adds port counter rows.
    pub(crate) fn counters(&mut self, rows: Vec<crate::model::fabric::PortCounters>) {
        self.map.counters.extend(rows);
    }

    pub(crate) fn limitation(&mut self, s: &str) {
        self.map.limitations.push(s.to_string());
    }

    pub(crate) fn finish(self) -> FabricMap {
        self.map
    }
}

/// `0x0002c903000e0b72` or `0002c903000e0b72` → the GUID.
pub(crate) fn guid(s: &str) -> Option<u64> {
    let h = s.trim();
    let h = h
        .strip_prefix("0x")
        .or_else(|| h.strip_prefix("0X"))
        .unwrap_or(h);
    if h.is_empty() || h.len() > 16 {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// `ibnetdiscover`'s width and speed words (`4x` and `NDR`, printed together as `4xNDR` by the
/// topology file and apart by `-p`): `??`/`???` (unknown) give no lanes or generation.
pub(crate) fn ib_rate(width: &str, speed: &str, raw: String) -> LinkRate {
    let lanes = width
        .strip_suffix(['x', 'X'])
        .and_then(|n| n.parse::<u32>().ok());
    let generation = ib_lane_gbps(speed).map(|_| speed.to_string());
    LinkRate {
        lanes,
        gbps: lanes.zip(ib_lane_gbps(speed)).map(|(l, g)| l as f64 * g),
        generation,
        raw,
        supported_gbps: None,
        supported_raw: None,
    }
}

/// Evidence of one line: `FILE line N`.
pub(crate) fn at(name: &str, line: usize) -> String {
    format!("{name} line {line}")
}

/// One map from several of one producer (lldpctl: one per host): nodes joined by key (a
/// switch seen by many hosts is one node), each cable once.
pub fn merge(maps: Vec<FabricMap>) -> Option<FabricMap> {
    let producer = maps.first()?.producer;
    let mut b = Builder::new(producer);
    for m in maps {
        let idx: Vec<usize> = m
            .nodes
            .iter()
            .map(|n| b.node(&n.key, n.kind, n.guid, Some(&n.desc)))
            .collect();
        for l in m.links {
            let map_end = |e: LinkEnd| LinkEnd {
                node: idx[e.node],
                ..e
            };
            b.link(map_end(l.a), map_end(l.b), l.port_names, l.rate, l.evidence);
        }
        for lim in m.limitations {
            if !b.map.limitations.contains(&lim) {
                b.map.limitations.push(lim);
            }
        }
    }
    Some(b.finish())
}
