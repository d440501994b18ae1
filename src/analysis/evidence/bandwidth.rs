//! Bandwidth verdicts: each nccl-tests run's bus bandwidth against what the node's NICs carry
//! (NCCL's rule of thumb, [`super::GBPS_TO_BUSBW`]: flagged below 80 %, broken below
//! 25 %, a fall at large sizes named a collapse), and each perftest GPU-memory run against a
//! host-memory run on the same device (flagged below 80 %).

use super::model::*;
use crate::parse::nccl_tests::TestRun;
use crate::parse::perftest::{PerfMemory, PerfRun};

/// Below this fraction of the expected bus bandwidth a run is `low`.
pub const LOW: f64 = 0.80;
/// Below this fraction it is `broken`.
pub const BROKEN: f64 = 0.25;

/// The smallest message size whose bus bandwidth is judged: below it latency, not the links,
/// sets the figure (nccl-tests tables climb until well past this size), so a table that ends
/// sooner — often a copy cut short — says nothing about the network.
pub const LARGE: u64 = 64 << 20;

/// What the run's own input says about its network (NET connections seen, hosts).
pub struct RunContext {
    /// The input has NCCL NET connections (so traffic crossed a NIC).
    pub net_seen: bool,
    /// Some rank's GDR verdict in the input is `used`.
    pub gdr_used: bool,
}

/// What a run is judged against: the NICs for a run across nodes, the GPUs' NVLinks for a run
/// on one node.
pub struct Against<'a> {
    /// NIC capacity.
    pub nics: Option<&'a Capacity>,
    /// NVLink capacity (with a topology).
    pub nvlink: Option<&'a NvlinkCapacity>,
}

/// Judges one nccl-tests run: the figure judged (busbw at the largest size, else the average),
/// the capacity it is judged against (NVLink on one host, else the NICs), then the verdict.
pub fn judge_run(
    source: &str,
    run: &TestRun,
    against: &Against,
    ctx: &RunContext,
) -> BandwidthVerdict {
    let mut hosts: Vec<String> = run.devices.iter().map(|d| d.host.clone()).collect();
    hosts.sort();
    hosts.dedup();
    let rows = &run.rows;
    let Shape {
        sizes,
        peak,
        large,
        collapse,
    } = shape(rows);
    let judged = judged_figure(run, large);
    let test = run.test.clone().unwrap_or_else(|| match rows.first() {
        Some(r) if r.redop != "none" => format!("unknown (a reduction: redop {})", r.redop),
        _ => "unknown".into(),
    });
    let single_node = hosts.len() == 1 && !ctx.net_seen && !run.devices_cut;
    let mut v = BandwidthVerdict {
        source: source.to_string(),
        line: run.line,
        test,
        ranks: run.devices.len(),
        hosts: hosts.clone(),
        sizes,
        peak,
        large,
        avg: run.avg_busbw,
        judged: judged.clone().ok(),
        expected: None,
        fraction: None,
        verdict: BwVerdict::Unknown,
        collapse,
        against: None,
        summary: String::new(),
        explanation: Vec::new(),
    };
    let collapse_words = collapse
        .map(|c| {
            format!(
                "; collapse at large sizes: peak {:.1} GB/s at {}, {:.1} GB/s at {}",
                c.peak.0,
                bytes(c.peak.1),
                c.large.0,
                bytes(c.large.1)
            )
        })
        .unwrap_or_default();
    let (value, what) = match judged {
        Ok(j) => j,
        Err(why) => {
            v.summary = format!("{why}{collapse_words}");
            return v;
        }
    };
    let (expected, from, kind) = match expected_capacity(against, single_node) {
        Ok(e) => e,
        Err(Missing::Nvlink) => {
            v.summary = format!(
                "{value:.1} GB/s ({what}) on one host ({}) with no NET connection in the log: intra-node bandwidth (NVLink/PCIe), not judged against the NICs{collapse_words}",
                hosts[0],
            );
            return v;
        }
        Err(Missing::Nics) => {
            v.summary = format!(
                "{value:.1} GB/s ({what}); not judged: no NIC capacity (give -i SNAPSHOT, or --nic-gbps N×SPEED){collapse_words}",
            );
            return v;
        }
    };
    rate(
        &mut v,
        run,
        ctx,
        (value, &what),
        (expected, &from, kind),
        &collapse_words,
    );
    v
}

/// What a run's rows show.
struct Shape {
    /// First size, last size, rows.
    sizes: Option<(u64, u64, usize)>,
    /// The highest busbw and its size.
    peak: Option<(f64, u64)>,
    /// The busbw at the largest size.
    large: Option<(f64, u64)>,
    /// Under half the peak at a larger size, with three rows or more.
    collapse: Option<Collapse>,
}

/// The sizes, peak, busbw at the largest size and collapse of a run's rows.
fn shape(rows: &[crate::parse::nccl_tests::Row]) -> Shape {
    let sizes = (!rows.is_empty()).then(|| {
        (
            rows.first().map_or(0, |r| r.size),
            rows.last().map_or(0, |r| r.size),
            rows.len(),
        )
    });
    let peak = rows
        .iter()
        .filter_map(|r| r.busbw().map(|b| (b, r.size)))
        .reduce(|a, b| if b.0 > a.0 { b } else { a });
    let large = rows
        .iter()
        .max_by_key(|r| r.size)
        .and_then(|r| r.busbw().map(|b| (b, r.size)));
    let collapse = match (peak, large) {
        (Some(p), Some(l)) if rows.len() >= 3 && l.1 > p.1 && l.0 < 0.5 * p.0 => {
            Some(Collapse { peak: p, large: l })
        }
        _ => None,
    };
    Shape {
        sizes,
        peak,
        large,
        collapse,
    }
}

/// The figure a run is judged on and how it was read (busbw at the largest size when that is
/// large enough, else the `# Avg bus bandwidth` over large enough sizes), or why none is.
fn judged_figure(run: &TestRun, large: Option<(f64, u64)>) -> Result<(f64, String), String> {
    match (large, run.avg_busbw) {
        (Some(l), _) if l.1 >= LARGE => {
            Ok((l.0, format!("busbw at the largest size, {}", bytes(l.1))))
        }
        (Some(l), _) => Err(format!(
            "{:.1} GB/s at the largest size shown, {} — below {}, where latency rather than the links sets busbw: not judged",
            l.0,
            bytes(l.1),
            bytes(LARGE)
        )),
        (None, Some(a)) => match run.bytes_range {
            Some((lo, hi)) if hi >= LARGE => Ok((
                a,
                format!(
                    "`# Avg bus bandwidth` over {}–{} (no rows in the input)",
                    bytes(lo),
                    bytes(hi)
                ),
            )),
            Some((_, hi)) => Err(format!(
                "`# Avg bus bandwidth` {a:.1} GB/s over sizes up to {}: not judged",
                bytes(hi)
            )),
            None => Ok((
                a,
                "`# Avg bus bandwidth` (no rows in the input)".to_string(),
            )),
        },
        (None, None) => Err("no result row and no average in the input: nothing to judge".into()),
    }
}

/// The capacity a run cannot be judged against for want of it.
enum Missing {
    Nvlink,
    Nics,
}

/// The capacity a run is judged against: NVLink for a run on one node, NICs otherwise; its
/// expected busbw, where it came from, and its kind (`nvlink`, `nics`).
fn expected_capacity(
    against: &Against,
    single_node: bool,
) -> Result<(f64, String, &'static str), Missing> {
    if single_node {
        match against.nvlink {
            Some(n) => Ok((n.expected_busbw, n.source.clone(), "nvlink")),
            None => Err(Missing::Nvlink),
        }
    } else {
        match against.nics {
            Some(c) => Ok((c.expected_busbw, c.source.clone(), "nics")),
            None => Err(Missing::Nics),
        }
    }
}

/// The verdict: the judged figure `(value, what)` as a fraction of `(expected, from, kind)`,
/// and its summary and explanation.
fn rate(
    v: &mut BandwidthVerdict,
    run: &TestRun,
    ctx: &RunContext,
    (value, what): (f64, &str),
    (expected, from, kind): (f64, &str, &str),
    collapse_words: &str,
) {
    let frac = value / expected;
    v.expected = Some(expected);
    v.fraction = Some(frac);
    v.against = Some(kind.to_string());
    v.verdict = if frac < BROKEN {
        BwVerdict::Broken
    } else if frac < LOW {
        BwVerdict::Low
    } else {
        BwVerdict::Ok
    };
    let hosts_note = if v.hosts.is_empty() && kind == "nics" {
        " (hosts not shown: judged against one node's NICs)".to_string()
    } else if run.devices_cut {
        " (the device list is cut: more hosts may have taken part)".to_string()
    } else {
        String::new()
    };
    v.summary = format!(
        "{value:.1} GB/s ({what}) of {expected:.0} GB/s expected from {from} ({:.0} %): {}{collapse_words}{hosts_note}",
        frac * 100.0,
        match v.verdict {
            BwVerdict::Ok => "ok",
            BwVerdict::Low => "low (below 80 %)",
            BwVerdict::Broken => "broken (below 25 %)",
            BwVerdict::Unknown => "unknown",
        },
    );
    if ctx.gdr_used && (v.verdict != BwVerdict::Ok || v.collapse.is_some()) {
        v.explanation.push(
            "GDR is on in this job's log, yet the bandwidth is low: look at the PCIe path (ACS redirect, IOMMU translation, ATS, a degraded link) rather than the GDR mechanism".into(),
        );
    }
}

/// `128 MiB`, `8 GiB`, `65536 B`.
pub fn bytes(b: u64) -> String {
    const U: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (u, n) in U {
        if b >= n && b.is_multiple_of(n) {
            return format!("{} {u}", b / n);
        }
    }
    format!("{b} B")
}

/// One perftest run as a verdict.
pub fn perftest_verdict(source: &str, r: &PerfRun, port: Option<f64>) -> PerftestVerdict {
    let (memory, gpu) = match &r.memory {
        PerfMemory::Host { .. } => ("host".to_string(), None),
        PerfMemory::Cuda {
            device,
            pci,
            name,
            dmabuf,
        } => {
            let mut g = String::from("cuda");
            if let Some(d) = device {
                g.push_str(&format!(" {d}"));
            }
            if let Some(p) = pci {
                g.push_str(&format!(" at {p}"));
            }
            if let Some(n) = name {
                g.push_str(&format!(" {n}"));
            }
            if *dmabuf {
                g.push_str(" (dma-buf)");
            }
            ("gpu".to_string(), Some(g))
        }
        PerfMemory::Unknown => ("unknown".to_string(), None),
    };
    let tool = match (&r.tool, &r.test) {
        (Some(t), Some(x)) => format!("{t} ({x} BW Test)"),
        (Some(t), None) => t.clone(),
        (None, Some(x)) => format!("{x} BW Test"),
        (None, None) => "perftest".into(),
    };
    PerftestVerdict {
        source: source.to_string(),
        line: r.line,
        host: r.host.clone(),
        tool,
        role: r.role.clone(),
        device: r.device.clone(),
        memory,
        gpu,
        sizes: (
            r.rows.first().map_or(0, |x| x.bytes),
            r.rows.last().map_or(0, |x| x.bytes),
            r.rows.len(),
        ),
        avg_gbps: r.large_avg_gbps().unwrap_or(0.0),
        peak_gbps: r.peak_gbps().unwrap_or(0.0),
        port_gbps: port,
        warnings: r.warnings.clone(),
    }
}

/// Pairs each GPU-memory run with a host-memory run on the same device: same host and device
/// first, then same device (hosts not shown on one side), then another machine's run on a
/// device of the same name (indicative only, never flagged).
pub fn compare(runs: &[PerftestVerdict]) -> Vec<GpuHostComparison> {
    let mut out = Vec::new();
    for g in runs.iter().filter(|r| r.memory == "gpu") {
        let Some(dev) = &g.device else { continue };
        let hosts = runs
            .iter()
            .filter(|h| h.memory == "host" && h.device.as_ref() == Some(dev));
        let best = |it: &mut dyn Iterator<Item = &PerftestVerdict>| {
            it.max_by(|a, b| a.avg_gbps.total_cmp(&b.avg_gbps)).cloned()
        };
        let same = best(
            &mut hosts
                .clone()
                .filter(|h| h.host.is_some() && h.host == g.host),
        );
        let unknown = best(
            &mut hosts
                .clone()
                .filter(|h| h.host.is_none() || g.host.is_none()),
        );
        let other = best(&mut hosts.clone());
        let (h, machine, flag_ok) = match (same, unknown, other) {
            (Some(h), _, _) => (h, "same machine".to_string(), true),
            (None, Some(h), _) => (
                h,
                "machines not shown (compared by device name)".to_string(),
                true,
            ),
            (None, None, Some(h)) => {
                let m = format!(
                    "different machines ({} vs {}): indicative only",
                    g.host.as_deref().unwrap_or("?"),
                    h.host.as_deref().unwrap_or("?")
                );
                (h, m, false)
            }
            _ => continue,
        };
        if h.avg_gbps <= 0.0 {
            continue;
        }
        let fraction = g.avg_gbps / h.avg_gbps;
        let flagged = flag_ok && fraction < LOW;
        let mut summary = format!(
            "{dev}: GPU memory {:.2} Gb/s (line {}) vs host memory {:.2} Gb/s (line {}): {:.0} % — {machine}",
            g.avg_gbps,
            g.line,
            h.avg_gbps,
            h.line,
            fraction * 100.0
        );
        if flagged {
            summary.push_str("; GPU under 80 % of host: the GPU's PCIe path to the NIC (or peer memory) limits it");
        }
        if g.warnings.iter().any(|w| w.contains("relaxed ordering")) {
            summary.push_str("; perftest warned: CPU is not PCIe relaxed ordering compliant (try --disable_pcie_relaxed on both sides)");
        }
        out.push(GpuHostComparison {
            device: dev.clone(),
            gpu_line: g.line,
            host_line: h.line,
            gpu_gbps: g.avg_gbps,
            host_gbps: h.avg_gbps,
            fraction,
            flagged,
            summary,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVIDIA/nccl#1435's all_gather on GPUs 0 and 1 of one host (rows up to 112 MiB), with the
    /// device lines of a one-host run: judged against the GPUs' NVLinks, never the NICs.
    fn one_host_run() -> TestRun {
        let s = "# nThread 1 nGpus 2 minBytes 16777216 maxBytes 1073741824 step: 16777216(bytes) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x07] NVIDIA A100-SXM4-80GB\n#  Rank  1 Group  0 Pid 1 on h device  1 [0x0b] NVIDIA A100-SXM4-80GB\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n    16777216       4194304  bfloat16    none      -1    108.8  154.20   77.10      0    98.19  170.86   85.43      0\n    67108864      16777216  bfloat16    none      -1    292.3  229.59  114.79      0    256.5  261.63  130.82      0\n   117440512      29360128  bfloat16    none      -1    490.8  239.27  119.64      0    418.7  280.48  140.24      0\n";
        let lines = crate::parse::nccl_log::whole_line_fragments(s);
        crate::parse::nccl_tests::parse(&lines).runs.remove(0)
    }

    /// `judge_run` against these NICs and NVLinks.
    fn judge(
        run: &TestRun,
        nics: &Capacity,
        nvlink: Option<&NvlinkCapacity>,
        ctx: &RunContext,
    ) -> BandwidthVerdict {
        let against = Against {
            nics: Some(nics),
            nvlink,
        };
        judge_run("x", run, &against, ctx)
    }

    #[test]
    fn a_one_host_run_is_judged_against_nvlink_when_the_topology_gives_it() {
        let run = one_host_run();
        let ctx = RunContext {
            net_seen: false,
            gdr_used: false,
        };
        let nics = Capacity {
            nics: 8,
            total_gbps: 1600.0,
            expected_busbw: 192.0,
            source: "test".into(),
        };
        // A100 NV12: 12 × 20 GB/s.
        let nvlink = NvlinkCapacity {
            gpus: 8,
            links: 12,
            per_link: 20.0,
            expected_busbw: 240.0,
            source: "test".into(),
        };
        let v = judge(&run, &nics, Some(&nvlink), &ctx);
        assert_eq!(v.against.as_deref(), Some("nvlink"));
        assert_eq!(v.judged.as_ref().unwrap().0, 140.24);
        assert_eq!(v.verdict, BwVerdict::Low, "{}", v.summary);
        // Without NVLink figures the same run is not judged, and never against the NICs.
        let v = judge(&run, &nics, None, &ctx);
        assert_eq!((v.verdict, v.against), (BwVerdict::Unknown, None));
    }

    #[test]
    fn a_table_that_stops_below_64_mib_is_not_judged() {
        let mut run = one_host_run();
        run.rows.truncate(1);
        run.devices.clear();
        let nics = Capacity {
            nics: 1,
            total_gbps: 200.0,
            expected_busbw: 24.0,
            source: "test".into(),
        };
        let ctx = RunContext {
            net_seen: true,
            gdr_used: true,
        };
        let v = judge(&run, &nics, None, &ctx);
        assert_eq!(v.verdict, BwVerdict::Unknown);
        assert!(v.summary.contains("below 64 MiB"), "{}", v.summary);
    }

    #[test]
    fn sizes_in_words() {
        assert_eq!(bytes(1 << 30), "1 GiB");
        assert_eq!(bytes(16777216), "16 MiB");
        assert_eq!(bytes(1000), "1000 B");
    }
}
