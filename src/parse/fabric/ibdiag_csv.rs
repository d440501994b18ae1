//! ibdiagnet's `ibdiagnet2.db_csv`: tables between `START_<NAME>` and `END_<NAME>` lines, each
//! a header row of column names then comma-separated rows (text quoted with `"`). Read here:
//! `NODES` (`NodeDesc`, `NumPorts`, `NodeType` 1 adapter / 2 switch / 3 router, `NodeGUID`),
//! `PORTS` (`NodeGuid`, `PortNum`, `PortGuid`, `LinkWidthActv`/`LinkWidthSup`,
//! `LinkSpeedActv`/`LinkSpeedSup`: packed in ibdiagnet 2.x, see `ibdiag_rate`; an older
//! `LinkSpeedExtActv` column is read where present), `LINKS` (`NodeGuid1`, `PortNum1`,
//! `NodeGuid2`, `PortNum2`) and the error counters of `PM_INFO` and `PM_DELTA` (see
//! `ibdiag_pm`). Columns are found by name in the header, so other columns and other tables
//! are ignored; a missing table or column leaves its facts unknown, said in a limitation.
//! Nodes are keyed by GUID: switches that share one description (Quantum-2 leaves with no
//! node-name map all read `Quantum-2 Mellanox Technologies`) stay apart.

use super::ibdiag_pm;
use super::ibdiag_rate::{
    PortRate, common_supported, ext_active, number, packed_active, width_lanes,
};
use super::{Builder, MapError, at, guid};
use crate::model::fabric::{FabricMap, LinkEnd, LinkRate, NodeKind, Producer};
use std::collections::HashMap;

/// Splits one CSV row: commas outside `"…"`, quotes removed.
fn row(l: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in l.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// One table: header and rows with their line numbers.
struct Table {
    header: Vec<String>,
    rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    fn col(&self, name: &str) -> Option<usize> {
        self.header
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
    }
}

fn tables(text: &str) -> Result<HashMap<String, Table>, MapError> {
    let mut out = HashMap::new();
    let mut current: Option<(String, Table)> = None;
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if let Some(name) = l.strip_prefix("START_") {
            current = Some((
                name.to_string(),
                Table {
                    header: Vec::new(),
                    rows: Vec::new(),
                },
            ));
            continue;
        }
        if let Some(name) = l.strip_prefix("END_") {
            match current.take() {
                Some((open, t)) if open == name => {
                    out.insert(open, t);
                }
                _ => return Err(MapError::at(i + 1, raw, "END_ without its START_")),
            }
            continue;
        }
        if let Some((_, t)) = current.as_mut()
            && !l.is_empty()
        {
            if t.header.is_empty() {
                t.header = row(l);
            } else {
                t.rows.push((i + 1, row(l)));
            }
        }
    }
    if let Some((name, _)) = current {
        return Err(MapError::at(
            0,
            "",
            format!("START_{name} without END_{name}"),
        ));
    }
    Ok(out)
}

/// Reads NODES into the builder; returns each GUID's node.
fn read_nodes(b: &mut Builder, nodes: &Table) -> Result<HashMap<u64, usize>, MapError> {
    let need = |c: &str| {
        nodes
            .col(c)
            .ok_or_else(|| MapError::at(0, "", format!("NODES has no {c} column")))
    };
    let (nd, nt, ng) = (need("NodeDesc")?, need("NodeType")?, need("NodeGUID")?);
    let np = nodes.col("NumPorts");
    let mut index: HashMap<u64, usize> = HashMap::new();
    // Each GUID's row: a NODES table lists a node once (ibdiagnet's DumpNodesCSV).
    let mut row_of: HashMap<u64, (usize, String)> = HashMap::new();
    for (n, r) in &nodes.rows {
        let cell = |c: usize| r.get(c).map(String::as_str).unwrap_or("");
        let Some(g) = guid(cell(ng)) else {
            return Err(MapError::at(*n, &r.join(","), "NodeGUID is not hex"));
        };
        let kind = match cell(nt).trim() {
            "1" => NodeKind::Ca,
            "2" => NodeKind::Switch,
            "3" => NodeKind::Router,
            _ => return Err(MapError::at(*n, &r.join(","), "NodeType is not 1, 2 or 3")),
        };
        if let Some((first, desc)) = row_of.get(&g) {
            return Err(MapError::at(
                *n,
                &r.join(","),
                format!(
                    "node GUID {g:016x} listed for two nodes: line {first} ({desc:?}) and line {n} ({:?}); a map that names two nodes alike cannot be read",
                    cell(nd)
                ),
            ));
        }
        row_of.insert(g, (*n, cell(nd).to_string()));
        let i = b.node(&format!("{g:016x}"), kind, Some(g), Some(cell(nd)));
        if let Some(ports) = np.and_then(|c| number(cell(c))) {
            b.set_ports(i, u32::try_from(ports).unwrap_or(u32::MAX));
        }
        index.insert(g, i);
    }
    Ok(index)
}

/// One port's facts: its GUID and what it prints of its width and speed.
type PortFacts = HashMap<(u64, u32), (Option<u64>, PortRate)>;

/// Reads PORTS: each port's GUID, active width and speed, supported masks.
fn read_ports(b: &mut Builder, p: Option<&Table>) -> PortFacts {
    let mut facts = PortFacts::new();
    let Some(p) = p else {
        b.limitation("no PORTS table: link widths, speeds and supported rates unknown");
        return facts;
    };
    let (Some(pg), Some(pn)) = (p.col("NodeGuid"), p.col("PortNum")) else {
        b.limitation("PORTS has no NodeGuid or PortNum column: link widths and speeds unknown");
        return facts;
    };
    let c = |n: &str| p.col(n);
    let (pgc, w, ws, s, ss, e) = (
        c("PortGuid"),
        c("LinkWidthActv"),
        c("LinkWidthSup"),
        c("LinkSpeedActv"),
        c("LinkSpeedSup"),
        c("LinkSpeedExtActv"),
    );
    // An older file's `LinkSpeedSup` is PortInfo's own field (regular speeds only, beside a
    // `LinkSpeedExtActv` column): it cannot say what extended speed a port supports.
    let ss = if e.is_some() { None } else { ss };
    if ws.is_none() || ss.is_none() {
        b.limitation("PORTS has no LinkWidthSup or packed LinkSpeedSup column (ibdiagnet 2.x): what both ends of a link support is unknown");
    }
    for (_, r) in &p.rows {
        let cell = |c: Option<usize>| c.and_then(|c| r.get(c)).map(String::as_str);
        let (Some(g), Some(port)) = (
            cell(Some(pg)).and_then(guid),
            cell(Some(pn)).and_then(|x| x.trim().parse::<u32>().ok()),
        ) else {
            continue;
        };
        let ext = cell(e).and_then(number).and_then(ext_active);
        let rate = PortRate {
            lanes: cell(w).and_then(width_lanes),
            generation: ext.or_else(|| cell(s).and_then(number).and_then(packed_active)),
            width_sup: cell(ws).and_then(number),
            speed_sup: cell(ss).and_then(number),
            raw: format!(
                "LinkWidthActv={} LinkSpeedActv={}{}",
                cell(w).unwrap_or("-").trim(),
                cell(s).unwrap_or("-").trim(),
                cell(e)
                    .map(|x| format!(" LinkSpeedExtActv={}", x.trim()))
                    .unwrap_or_default()
            ),
        };
        facts.insert((g, port), (cell(pgc).and_then(guid), rate));
    }
    facts
}

/// The link's rate from both ports' active values (the slower where they differ, both kept
/// in the words) and what both ends support.
fn link_rate(a: Option<&PortRate>, b: Option<&PortRate>) -> Option<LinkRate> {
    fn known(p: Option<&PortRate>) -> Option<&PortRate> {
        p.filter(|p| p.lanes.is_some() || p.generation.is_some())
    }
    let one = match (known(a), known(b)) {
        (Some(x), Some(y)) => {
            if y.gbps().unwrap_or(f64::MAX) < x.gbps().unwrap_or(f64::MAX) {
                y
            } else {
                x
            }
        }
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => return None,
    };
    let words = format!(
        "{}x{}",
        one.lanes.map_or("?".to_string(), |l| l.to_string()),
        one.generation.unwrap_or("?")
    );
    let ends: Vec<&str> = [a, b]
        .into_iter()
        .flatten()
        .map(|p| p.raw.as_str())
        .collect();
    // Both ends' masks saying less than the link runs at contradict it: unknown, not a rate.
    let sup = a
        .zip(b)
        .and_then(|(a, b)| common_supported(a, b))
        .filter(|(g, _)| one.gbps().is_none_or(|active| *g >= active));
    Some(LinkRate {
        lanes: one.lanes,
        generation: one.generation.map(str::to_string),
        gbps: one.gbps(),
        raw: format!("{words} ({})", ends.join(" / ")),
        supported_gbps: sup.as_ref().map(|s| s.0),
        supported_raw: sup.map(|s| s.1),
    })
}

/// Reads LINKS.
fn read_links(
    b: &mut Builder,
    links: &Table,
    index: &HashMap<u64, usize>,
    facts: &PortFacts,
    name: &str,
) -> Result<(), MapError> {
    let need = |c: &str| {
        links
            .col(c)
            .ok_or_else(|| MapError::at(0, "", format!("LINKS has no {c} column")))
    };
    let (g1, p1, g2, p2) = (
        need("NodeGuid1")?,
        need("PortNum1")?,
        need("NodeGuid2")?,
        need("PortNum2")?,
    );
    for (n, r) in &links.rows {
        let cell = |c: usize| r.get(c).map(String::as_str).unwrap_or("");
        let end = |g: usize, p: usize| -> Option<(u64, u32)> {
            Some((guid(cell(g))?, cell(p).trim().parse().ok()?))
        };
        let (Some((ga, pa)), Some((gb, pb))) = (end(g1, p1), end(g2, p2)) else {
            return Err(MapError::at(
                *n,
                &r.join(","),
                "link GUID or port unreadable",
            ));
        };
        let (Some(&ia), Some(&ib)) = (index.get(&ga), index.get(&gb)) else {
            return Err(MapError::at(
                *n,
                &r.join(","),
                "link names a node NODES does not list",
            ));
        };
        let (fa, fb) = (facts.get(&(ga, pa)), facts.get(&(gb, pb)));
        let rate = link_rate(fa.map(|f| &f.1), fb.map(|f| &f.1));
        let end = |node, port, f: Option<&(Option<u64>, PortRate)>| LinkEnd {
            node,
            port,
            port_guid: f.and_then(|f| f.0),
        };
        b.link(end(ia, pa, fa), end(ib, pb, fb), None, rate, at(name, *n));
    }
    Ok(())
}

/// Reads PM_INFO and PM_DELTA into the map's counters.
fn read_counters(
    b: &mut Builder,
    t: &HashMap<String, Table>,
    index: &HashMap<u64, usize>,
    name: &str,
) -> Result<(), MapError> {
    for table in ["PM_INFO", "PM_DELTA"] {
        let Some(pm) = t.get(table) else {
            b.limitation(&format!(
                "no {table} table: port error counters {} unknown",
                if table == "PM_INFO" {
                    "since the last clear"
                } else {
                    "during the run"
                }
            ));
            continue;
        };
        let (rows, unknown) = ibdiag_pm::read(table, &pm.header, &pm.rows, index, name)?;
        if unknown > 0 {
            b.limitation(&format!(
                "{table}: {unknown} rows name a node NODES does not list; not read"
            ));
        }
        b.counters(rows);
    }
    Ok(())
}

/// Parses the NODES, PORTS, LINKS, PM_INFO and PM_DELTA tables.
pub(super) fn parse(text: &str, name: &str) -> Result<FabricMap, MapError> {
    let t = tables(text)?;
    let Some(nodes) = t.get("NODES") else {
        return Err(MapError::at(0, "", "no NODES table"));
    };
    let mut b = Builder::new(Producer::IbdiagnetCsv);
    let index = read_nodes(&mut b, nodes)?;
    let facts = read_ports(&mut b, t.get("PORTS"));
    match t.get("LINKS") {
        Some(links) => read_links(&mut b, links, &index, &facts, name)?,
        // Some ibdiagnet runs write no LINKS table: nodes and counters stand, cables do not.
        None => b.limitation(
            "no LINKS table: which port is cabled to which is unknown; give ibdiagnet2.ibnetdiscover of the same ibdiagnet run for the cabling",
        ),
    }
    read_counters(&mut b, &t, &index, name)?;
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_read_by_column_name() {
        let t = "# This database file was automatically generated by IBDIAG\n\nSTART_NODES\nNodeDesc,NumPorts,NodeType,ClassVersion,BaseVersion,SystemImageGUID,NodeGUID,PortGUID\n\"leaf-r0-1\",64,2,1,1,0xfc6a1c0300a1b2c3,0xfc6a1c0300a1b2c3,0xfc6a1c0300a1b2c3\n\"gpu001 mlx5_0\",1,1,1,1,0xa088c20300112233,0xa088c20300112233,0xa088c20300112233\nEND_NODES\n\nSTART_PORTS\nNodeGuid,PortGuid,PortNum,LinkWidthActv,LinkSpeedActv,LinkSpeedExtActv,LinkWidthSup,LinkSpeedSup\n0xa088c20300112233,0xa088c20300112233,1,2,4,8,3,7\n0xfc6a1c0300a1b2c3,0xfc6a1c0300a1b2c3,1,2,4,8,3,7\nEND_PORTS\n\nSTART_LINKS\nNodeGuid1,PortNum1,NodeGuid2,PortNum2\n0xfc6a1c0300a1b2c3,1,0xa088c20300112233,1\nEND_LINKS\n";
        let m = parse(t, "d").unwrap();
        assert_eq!(m.nodes[1].desc, "gpu001 mlx5_0");
        assert_eq!(m.links.len(), 1);
        assert_eq!(m.links[0].rate.as_ref().unwrap().gbps, Some(400.0));
        assert_eq!(m.links[0].rate.as_ref().unwrap().supported_gbps, None);
        assert_eq!(m.links[0].b.port_guid, Some(0xa088c20300112233));
        assert!(parse("START_NODES\nNodeDesc\n", "d").is_err());
        assert!(parse("START_LINKS\nNodeGuid1\nEND_LINKS\n", "d").is_err());
        // No LINKS table: the nodes stand, the cables are unknown and said.
        let no_links = &t[..t.find("START_LINKS").unwrap()];
        let m = parse(no_links, "d").unwrap();
        assert_eq!((m.nodes.len(), m.links.len()), (2, 0));
        assert!(m.limitations.iter().any(|l| l.contains("no LINKS table")));
    }

    /// ibdiagnet 2.10's form (written here from the format facts, SYNTHESIZED): no
    /// `LinkSpeedExtActv`, packed speeds; two leaves with one description. Before the packed
    /// reading every rate here was unknown and the two leaves' rates never compared.
    #[test]
    fn ibdiagnet_2_10_packed_speeds_and_supported_rate() {
        let t = "START_NODES\nNodeDesc,NumPorts,NodeType,ClassVersion,BaseVersion,SystemImageGUID,NodeGUID,PortGUID,DeviceID,PartitionCap,revision,VendorID,LocalPortNum\n\
\"Quantum-2 Mellanox Technologies\",65,2,1,1,0x1,0x0000000000000001,0x1,54002,8,160,713,0\n\
\"Quantum-2 Mellanox Technologies\",65,2,1,1,0x2,0x0000000000000002,0x2,54002,8,160,713,0\n\
\"host-1 mlx5_8\",1,1,1,1,0xa,0x000000000000000a,0xa,4129,128,0,713,1\n\
\"host-1 mlx5_9\",1,1,1,1,0xb,0x000000000000000b,0xb,4129,128,0,713,1\nEND_NODES\n\
START_PORTS\nNodeGuid,PortGuid,PortNum,LinkWidthActv,LinkWidthSup,LinkSpeedActv,LinkSpeedSup\n\
0x1,0x1,1,2,19,2052,3847\n0xa,0xa,1,2,19,2048,3847\n\
0x2,0x2,1,2,19,1028,3847\n0xb,0xb,1,2,19,1024,3847\nEND_PORTS\n\
START_LINKS\nNodeGuid1,PortNum1,NodeGuid2,PortNum2\n0x1,1,0xa,1\n0x2,1,0xb,1\nEND_LINKS\n";
        let m = parse(t, "db").unwrap();
        assert_eq!(m.nodes.len(), 4, "leaves sharing a description stay apart");
        assert_eq!(m.nodes[0].ports, Some(65));
        let r0 = m.links[0].rate.as_ref().unwrap();
        assert_eq!(
            (r0.generation.as_deref(), r0.gbps),
            (Some("NDR"), Some(400.0))
        );
        let r1 = m.links[1].rate.as_ref().unwrap();
        assert_eq!((r1.gbps, r1.supported_gbps), (Some(200.0), Some(400.0)));
        assert!(r1.raw.starts_with("4xHDR"), "{}", r1.raw);
        assert!(
            m.limitations.iter().any(|l| l.contains("no PM_INFO")),
            "{:?}",
            m.limitations
        );
    }

    /// Issue 53: two NODES rows naming one GUID were merged into one node, the second's cables
    /// hung on the first; refused, naming both rows.
    #[test]
    fn a_guid_listed_for_two_nodes_is_refused_naming_both() {
        let t = "START_NODES\nNodeDesc,NumPorts,NodeType,NodeGUID\n\"leaf-1\",64,2,0xfc6a1c0300a1b2c3\n\"leaf-2\",64,2,0xfc6a1c0300a1b2c3\nEND_NODES\n\nSTART_LINKS\nNodeGuid1,PortNum1,NodeGuid2,PortNum2\nEND_LINKS\n";
        let e = parse(t, "d").unwrap_err().to_string();
        assert!(
            e.contains("fc6a1c0300a1b2c3")
                && e.contains("line 3")
                && e.contains("leaf-1")
                && e.contains("leaf-2"),
            "{e}"
        );
    }
}
