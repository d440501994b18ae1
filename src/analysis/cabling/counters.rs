//! The physical layer per GPU rail: the fabric's own port error counters
//! ([`FabricMap::counters`](crate::model::fabric::FabricMap::counters): ibdiagnet's `PM_INFO`,
//! standing since the last clear, and `PM_DELTA`, counted during its run) on each host
//! adapter port and the leaf port at the other end of its cable, with the GPU that rail serves
//! when a layout gives it.
//!
//! * **climbing** (error): an error counter that went up during the producer's run
//!   ([`CounterSpan::Delta`]) — any increase, as `ibqueryerrors` reports by default (threshold
//!   0, rdma-core `infiniband-diags/man/ibqueryerrors.8.in.rst`).
//! * **standing** (warning): a counter since the last clear at or above the threshold
//!   rdma-core ships for it (`infiniband-diags/etc/error_thresholds`: SymbolErrorCounter,
//!   LinkErrorRecoveryCounter, LinkDownedCounter, PortRcvErrors, LocalLinkIntegrityErrors,
//!   ExcessiveBufferOverrunErrors 10; PortRcvRemotePhysicalErrors, PortRcvSwitchRelayErrors,
//!   PortXmitDiscards, PortXmitConstraintErrors, PortRcvConstraintErrors, VL15Dropped 100): it
//!   may be old; clear the counters and read again to see whether it climbs.
//! * A counter at its width's maximum (IBA PortCounters widths, as libibmad's `fields.c`
//!   declares them: 16 bits for symbol and receive errors, 8 for link recoveries and downs, 4
//!   for local link integrity and buffer overruns) has stopped counting (the counters
//!   saturate, they do not wrap): it is said as "at least" that value.

use super::Rail;
use super::ctx::Ctx;
use crate::model::fabric::CounterSpan;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// An error counter: the producer's name (any case, `_` ignored), its width in bits, and the
/// threshold rdma-core's `error_thresholds` gives it.
const COUNTERS: &[(&str, u32, u64)] = &[
    ("symbolerrorcounter", 16, 10),
    ("linkerrorrecoverycounter", 8, 10),
    ("linkdownedcounter", 8, 10),
    ("portrcverrors", 16, 10),
    ("portrcvremotephysicalerrors", 16, 100),
    ("portrcvswitchrelayerrors", 16, 100),
    ("portxmitdiscards", 16, 100),
    ("portxmitconstrainterrors", 8, 100),
    ("portrcvconstrainterrors", 8, 100),
    ("locallinkintegrityerrors", 4, 10),
    ("excessivebufferoverrunerrors", 4, 10),
    ("vl15dropped", 16, 100),
];

/// One counter over its threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterReading {
    /// Which end: `adapter` or `leaf`.
    pub side: String,
    /// The counter as the producer names it.
    pub counter: String,
    /// Its value; with `saturated`, a floor.
    pub value: u64,
    /// At its width's maximum: the true count is at least `value`.
    pub saturated: bool,
    /// Since the last clear, or during the producer's run (climbing).
    pub span: CounterSpan,
    /// The threshold it was held to (0 for a delta: any increase).
    pub threshold: u64,
    /// The producer's file and line.
    pub evidence: String,
}

/// A host link whose counters are over their thresholds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortErrors {
    /// The host.
    pub host: String,
    /// Its adapter (map or layout name).
    pub adapter: String,
    /// The GPUs the rail serves (from a layout).
    pub gpus: Vec<String>,
    /// The rail.
    pub rail: Rail,
    /// The leaf.
    pub leaf: String,
    /// The leaf port.
    pub leaf_port: String,
    /// Some counter climbed during the producer's run (an error); else standing (a warning).
    pub climbing: bool,
    /// The counters over their thresholds.
    pub readings: Vec<CounterReading>,
}

fn spec(name: &str) -> Option<(u32, u64)> {
    let key: String = name
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    let key = key.strip_suffix("ext").unwrap_or(&key);
    COUNTERS
        .iter()
        .find(|(n, _, _)| *n == key)
        .map(|&(_, bits, th)| {
            (
                if name.to_ascii_lowercase().ends_with("ext") {
                    64
                } else {
                    bits
                },
                th,
            )
        })
}

/// Host links with error counters over their thresholds, in host order.
pub fn port_errors(cx: &Ctx<'_>) -> Vec<PortErrors> {
    if cx.map.counters.is_empty() {
        return Vec::new();
    }
    let mut at: HashMap<(usize, u32), (usize, &str)> = HashMap::new();
    for (pi, p) in cx.ports.iter().enumerate() {
        at.insert((p.ca.node, p.ca.port), (pi, "adapter"));
        at.insert((p.sw.node, p.sw.port), (pi, "leaf"));
    }
    let mut per: BTreeMap<usize, Vec<CounterReading>> = BTreeMap::new();
    for c in &cx.map.counters {
        let Some(&(pi, side)) = at.get(&(c.node, c.port)) else {
            continue;
        };
        for (name, v) in &c.values {
            let Some((bits, th)) = spec(name) else {
                continue;
            };
            let threshold = if c.span == CounterSpan::Delta { 1 } else { th };
            if *v < threshold {
                continue;
            }
            per.entry(pi).or_default().push(CounterReading {
                side: side.to_string(),
                counter: name.clone(),
                value: *v,
                saturated: bits < 64 && *v >= (1u64 << bits) - 1,
                span: c.span,
                threshold: threshold - u64::from(c.span == CounterSpan::Delta),
                evidence: c.evidence.clone(),
            });
        }
    }
    let mut out: Vec<PortErrors> = per
        .into_iter()
        .map(|(pi, readings)| {
            let p = &cx.ports[pi];
            PortErrors {
                host: cx.host(p).name.clone(),
                adapter: cx.adapter_name(p),
                gpus: cx.gpus(p),
                rail: cx.port_rail(p),
                leaf: cx.name(p.sw.node).to_string(),
                leaf_port: cx.leaf_port(p),
                climbing: readings.iter().any(|r| r.span == CounterSpan::Delta),
                readings,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.host, &a.adapter).cmp(&(&b.host, &b.adapter)));
    out
}

/// The counters that climbed between two maps of one fabric (both read since the last
/// clear, `before` first): for each port of `after` that `before` also read (same node key and
/// port), each counter's rise, as [`CounterSpan::Delta`] rows in `after`'s node numbering. A
/// counter lower in `after` was cleared between the two: its value in `after` is the rise (at
/// least). A counter saturated in `before` cannot show a rise: left out.
pub fn between(
    before: &crate::model::fabric::FabricMap,
    after: &crate::model::fabric::FabricMap,
) -> Vec<crate::model::fabric::PortCounters> {
    let mut old: HashMap<(&str, u32), &crate::model::fabric::PortCounters> = HashMap::new();
    for c in before
        .counters
        .iter()
        .filter(|c| c.span == CounterSpan::SinceClear)
    {
        old.insert((before.nodes[c.node].key.as_str(), c.port), c);
    }
    let mut out = Vec::new();
    for c in after
        .counters
        .iter()
        .filter(|c| c.span == CounterSpan::SinceClear)
    {
        let Some(b) = old.get(&(after.nodes[c.node].key.as_str(), c.port)) else {
            continue;
        };
        let values: Vec<(String, u64)> = c
            .values
            .iter()
            .filter_map(|(name, v)| {
                let v0 = b.values.iter().find(|(n, _)| n == name)?.1;
                let saturated =
                    spec(name).is_some_and(|(bits, _)| bits < 64 && v0 >= (1u64 << bits) - 1);
                if saturated {
                    return None;
                }
                let rise = if *v >= v0 { v - v0 } else { *v };
                (rise > 0).then(|| (name.clone(), rise))
            })
            .collect();
        if !values.is_empty() {
            out.push(crate::model::fabric::PortCounters {
                node: c.node,
                port: c.port,
                span: CounterSpan::Delta,
                values,
                evidence: format!("{} (before: {})", c.evidence, b.evidence),
            });
        }
    }
    out
}
