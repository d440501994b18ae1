//! Port error counters from `ibdiagnet2.db_csv`'s `PM_INFO` (the counters as ibdiagnet read
//! them: standing since the last clear) and `PM_DELTA` (what they grew by during ibdiagnet's
//! own run, `--pm_pause_time`): a row per port keyed by `NodeGUID` and `PortNumber`, then one
//! column per counter (PortCounters, PortCountersExtended, PortExtendedSpeedsCounters).
//!
//! Kept: the **error** counters only, by name — columns whose name holds `Error`, `Discard`,
//! `Downed`, `Dropped`, `Overrun`, `Recovery`, `Integrity` or `Correctable` (e.g.
//! SymbolErrorCounter, LinkErrorRecoveryCounter, LinkDownedCounter, PortRcvErrors,
//! PortRcvRemotePhysicalErrors, PortRcvSwitchRelayErrors, PortXmitDiscards,
//! PortXmitConstraintErrors, PortRcvConstraintErrors, LocalLinkIntegrityErrors,
//! ExcessiveBufferOverrunErrors, VL15Dropped, PortFECUncorrectableBlockCounter,
//! PortFECCorrectableBlockCounter). Skipped: data, packet and wait counters (`PortXmitData`,
//! `PortRcvPkts`, `PortXmitWait`, …), which count traffic, not faults.
//!
//! Values are decimal or `0x…`; ibdiagnet writes `N/A`, `-1` or `0xfffffffffffffffe` for a
//! counter the port does not support: those are left out (unknown), never read as a number.

use super::ibdiag_rate::number;
use super::{MapError, at, guid};
use crate::model::fabric::{CounterSpan, PortCounters};
use std::collections::HashMap;

/// Words that make a column an error counter.
const ERROR_WORDS: [&str; 8] = [
    "Error",
    "Discard",
    "Downed",
    "Dropped",
    "Overrun",
    "Recovery",
    "Integrity",
    "Correctable",
];

/// ibdiagnet's value for a counter the port does not support.
const UNSUPPORTED: u64 = 0xffff_ffff_ffff_fffe;

/// Whether a PM column is an error counter this reader keeps.
pub(super) fn is_error_counter(col: &str) -> bool {
    ERROR_WORDS.iter().any(|w| col.contains(w))
}

/// One PM table's rows as counters: `header` and `rows` (line, cells) of the table, `index`
/// the map's node of each GUID. Rows naming a node NODES does not list are counted in the
/// returned number, not read.
pub(super) fn read(
    table: &str,
    header: &[String],
    rows: &[(usize, Vec<String>)],
    index: &HashMap<u64, usize>,
    name: &str,
) -> Result<(Vec<PortCounters>, usize), MapError> {
    let span = if table == "PM_DELTA" {
        CounterSpan::Delta
    } else {
        CounterSpan::SinceClear
    };
    let col = |names: &[&str]| {
        header
            .iter()
            .position(|h| names.iter().any(|n| h.eq_ignore_ascii_case(n)))
    };
    let (Some(gc), Some(pc)) = (
        col(&["NodeGUID", "NodeGuid"]),
        col(&["PortNumber", "PortNum"]),
    ) else {
        return Err(MapError::at(
            0,
            "",
            format!("{table} has no NodeGUID or PortNumber column"),
        ));
    };
    let counters: Vec<(usize, &str)> = header
        .iter()
        .enumerate()
        .filter(|(_, h)| is_error_counter(h))
        .map(|(i, h)| (i, h.as_str()))
        .collect();
    let mut out = Vec::new();
    let mut unknown_nodes = 0;
    for (n, r) in rows {
        let cell = |c: usize| r.get(c).map(String::as_str).unwrap_or("");
        let (Some(g), Some(port)) = (guid(cell(gc)), number(cell(pc))) else {
            return Err(MapError::at(
                *n,
                &r.join(","),
                format!("{table} row without a NodeGUID and PortNumber"),
            ));
        };
        let Some(&node) = index.get(&g) else {
            unknown_nodes += 1;
            continue;
        };
        let values = counters
            .iter()
            .filter_map(|&(c, h)| {
                let v = number(cell(c)).filter(|v| *v != UNSUPPORTED)?;
                Some((h.to_string(), v))
            })
            .collect();
        out.push(PortCounters {
            node,
            port: u32::try_from(port).unwrap_or(u32::MAX),
            span,
            values,
            evidence: at(name, *n),
        });
    }
    Ok((out, unknown_nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_counters_kept_traffic_skipped_unsupported_unknown() {
        let header: Vec<String> = "NodeGUID,PortGUID,PortNumber,LinkDownedCounter,SymbolErrorCounter,PortXmitData,PortXmitWait,PortFECUncorrectableBlockCounter,PortRcvErrors"
            .split(',')
            .map(String::from)
            .collect();
        let rows = vec![(
            7,
            "0xa,0xa,1,55,65535,123456,99,0xfffffffffffffffe,N/A"
                .split(',')
                .map(String::from)
                .collect(),
        )];
        let index = HashMap::from([(0xa, 0)]);
        let (c, unknown) = read("PM_DELTA", &header, &rows, &index, "db").unwrap();
        assert_eq!(unknown, 0);
        assert_eq!(c[0].span, CounterSpan::Delta);
        assert_eq!(
            c[0].values,
            vec![
                ("LinkDownedCounter".to_string(), 55),
                ("SymbolErrorCounter".to_string(), 65535)
            ]
        );
        assert_eq!(c[0].evidence, "db line 7");
        let (_, unknown) = read("PM_INFO", &header, &rows, &HashMap::new(), "db").unwrap();
        assert_eq!(unknown, 1);
        assert!(read("PM_INFO", &header[3..], &rows, &index, "db").is_err());
    }
}
