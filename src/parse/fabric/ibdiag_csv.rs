//! ibdiagnet's `ibdiagnet2.db_csv`: tables between `START_<NAME>` and `END_<NAME>` lines, each
//! a header row of column names then comma-separated rows (text quoted with `"`). Read here:
//! `NODES` (`NodeDesc`, `NodeType` 1 adapter / 2 switch / 3 router, `NodeGUID`), `PORTS`
//! (`NodeGuid`, `PortNum`, `PortGuid`, `LinkWidthActv`, `LinkSpeedActv`, `LinkSpeedExtActv`:
//! the PortInfo encodings) and `LINKS` (`NodeGuid1`, `PortNum1`, `NodeGuid2`, `PortNum2`).
//! Columns are found by name in the header, so other columns and other tables are ignored.

use super::{Builder, MapError, at, guid};
use crate::model::fabric::{FabricMap, LinkEnd, LinkRate, NodeKind, Producer, ib_lane_gbps};
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

fn width_lanes(code: &str) -> Option<u32> {
    match code.trim().parse::<u32>().ok()? {
        1 => Some(1),
        2 => Some(4),
        4 => Some(8),
        8 => Some(12),
        16 => Some(2),
        _ => None,
    }
}

fn generation(speed: &str, ext: Option<&str>) -> Option<&'static str> {
    let e = ext.and_then(|e| e.trim().parse::<u32>().ok()).unwrap_or(0);
    Some(match e {
        1 => "FDR",
        2 => "EDR",
        4 => "HDR",
        8 => "NDR",
        32 => "XDR",
        _ => match speed.trim().parse::<u32>().ok()? {
            1 => "SDR",
            2 => "DDR",
            4 => "QDR",
            _ => return None,
        },
    })
}

/// Parses the NODES, PORTS and LINKS tables.
pub(super) fn parse(text: &str, name: &str) -> Result<FabricMap, MapError> {
    let t = tables(text)?;
    let (Some(nodes), Some(links)) = (t.get("NODES"), t.get("LINKS")) else {
        return Err(MapError::at(0, "", "no NODES or no LINKS table"));
    };
    let need = |t: &Table, c: &str, table: &str| {
        t.col(c)
            .ok_or_else(|| MapError::at(0, "", format!("{table} has no {c} column")))
    };
    let (nd, nt, ng) = (
        need(nodes, "NodeDesc", "NODES")?,
        need(nodes, "NodeType", "NODES")?,
        need(nodes, "NodeGUID", "NODES")?,
    );
    let mut b = Builder::new(Producer::IbdiagnetCsv);
    let mut index: HashMap<u64, usize> = HashMap::new();
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
        let i = b.node(&format!("{g:016x}"), kind, Some(g), Some(cell(nd)));
        index.insert(g, i);
    }
    // Port facts by (node GUID, port).
    let mut port_facts: HashMap<(u64, u32), (Option<u64>, Option<LinkRate>)> = HashMap::new();
    if let Some(p) = t.get("PORTS")
        && let (Some(pg), Some(pn)) = (p.col("NodeGuid"), p.col("PortNum"))
    {
        let (pgc, w, s, e) = (
            p.col("PortGuid"),
            p.col("LinkWidthActv"),
            p.col("LinkSpeedActv"),
            p.col("LinkSpeedExtActv"),
        );
        for (_, r) in &p.rows {
            let cell = |c: Option<usize>| c.and_then(|c| r.get(c)).map(String::as_str);
            let (Some(g), Some(port)) = (
                cell(Some(pg)).and_then(guid),
                cell(Some(pn)).and_then(|x| x.trim().parse::<u32>().ok()),
            ) else {
                continue;
            };
            let lanes = cell(w).and_then(width_lanes);
            let generation = cell(s).and_then(|s| generation(s, cell(e)));
            let rate = (lanes.is_some() || generation.is_some()).then(|| LinkRate {
                lanes,
                gbps: lanes
                    .zip(generation.and_then(ib_lane_gbps))
                    .map(|(l, g)| l as f64 * g),
                generation: generation.map(str::to_string),
                raw: format!(
                    "LinkWidthActv={} LinkSpeedActv={} LinkSpeedExtActv={}",
                    cell(w).unwrap_or("-"),
                    cell(s).unwrap_or("-"),
                    cell(e).unwrap_or("-")
                ),
                supported_gbps: None,
                supported_raw: None,
            });
            port_facts.insert((g, port), (cell(pgc).and_then(guid), rate));
        }
    } else {
        b.limitation("no PORTS table: link widths and speeds unknown");
    }
    let (g1, p1, g2, p2) = (
        need(links, "NodeGuid1", "LINKS")?,
        need(links, "PortNum1", "LINKS")?,
        need(links, "NodeGuid2", "LINKS")?,
        need(links, "PortNum2", "LINKS")?,
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
        let fa = port_facts.get(&(ga, pa)).cloned().unwrap_or((None, None));
        let fb = port_facts.get(&(gb, pb)).cloned().unwrap_or((None, None));
        b.link(
            LinkEnd {
                node: ia,
                port: pa,
                port_guid: fa.0,
            },
            LinkEnd {
                node: ib,
                port: pb,
                port_guid: fb.0,
            },
            None,
            fa.1.or(fb.1),
            at(name, *n),
        );
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_read_by_column_name() {
        let t = "# This database file was automatically generated by IBDIAG\n\nSTART_NODES\nNodeDesc,NumPorts,NodeType,ClassVersion,BaseVersion,SystemImageGUID,NodeGUID,PortGUID\n\"leaf-r0-1\",64,2,1,1,0xfc6a1c0300a1b2c3,0xfc6a1c0300a1b2c3,0xfc6a1c0300a1b2c3\n\"gpu001 mlx5_0\",1,1,1,1,0xa088c20300112233,0xa088c20300112233,0xa088c20300112233\nEND_NODES\n\nSTART_PORTS\nNodeGuid,PortGuid,PortNum,LinkWidthActv,LinkSpeedActv,LinkSpeedExtActv\n0xa088c20300112233,0xa088c20300112233,1,2,4,8\nEND_PORTS\n\nSTART_LINKS\nNodeGuid1,PortNum1,NodeGuid2,PortNum2\n0xfc6a1c0300a1b2c3,1,0xa088c20300112233,1\nEND_LINKS\n";
        let m = parse(t, "d").unwrap();
        assert_eq!(m.nodes[1].desc, "gpu001 mlx5_0");
        assert_eq!(m.links.len(), 1);
        assert_eq!(m.links[0].rate.as_ref().unwrap().gbps, Some(400.0));
        assert_eq!(m.links[0].b.port_guid, Some(0xa088c20300112233));
        assert!(parse("START_NODES\nNodeDesc\n", "d").is_err());
        assert!(parse("START_LINKS\nNodeGuid1\nEND_LINKS\n", "d").is_err());
    }
}
