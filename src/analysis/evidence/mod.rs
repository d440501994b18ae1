//! `peerpath evidence`: what the job already printed — NCCL INFO/WARN logs, nccl-tests tables,
//! perftest runs, peerpath probe documents — read into per-rank GDR verdicts, bandwidth
//! verdicts against the node's NICs, and (with a topology) joined to the GPU–NIC pairing and the
//! audit's findings. The parsers are in [`crate::parse::joblog`]; the verdict types in
//! [`model`]; docs/evidence.md shows each published input and its verdict.

pub mod bandwidth;
pub mod model;
pub mod ranks;
pub mod version;

pub use model::*;

use crate::analysis::probe_report::measured::ProbeEvidence;
use crate::parse::joblog::{self, JobOutput};
use anyhow::{Context, Result, bail};

/// What one input file held.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// Job output (NCCL log, nccl-tests, perftest, in any mix).
    Job(Box<JobOutput>),
    /// A peerpath probe document (`peerpath.probe/2`).
    Probe(ProbeEvidence),
}

/// One input.
#[derive(Debug, Clone)]
pub struct Input {
    /// The path as given.
    pub source: String,
    /// What it held.
    pub loaded: Loaded,
}

impl Input {
    /// Detects the kind from content: a JSON document whose `schema` starts `peerpath.probe/`
    /// is a probe report (read by [`ProbeEvidence::parse`], which refuses older schemas); any
    /// other text is job output.
    pub fn from_bytes(source: &str, bytes: &[u8]) -> Result<Input> {
        let head = bytes.iter().position(|b| !b.is_ascii_whitespace());
        if head.is_some_and(|i| bytes[i] == b'{') {
            let text = std::str::from_utf8(bytes)
                .with_context(|| format!("{source}: JSON that is not UTF-8"))?;
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
                let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
                if schema.starts_with("peerpath.probe/") {
                    return Ok(Input {
                        source: source.to_string(),
                        loaded: Loaded::Probe(ProbeEvidence::parse(source, text)?),
                    });
                }
                bail!(
                    "{source}: a JSON document with schema {schema:?}: not a probe report (peerpath.probe/2) nor job output"
                );
            }
        }
        Ok(Input {
            source: source.to_string(),
            loaded: Loaded::Job(Box::new(joblog::parse(bytes))),
        })
    }

    /// Reads a file.
    pub fn load(path: &std::path::Path) -> Result<Input> {
        // One bounded read: a FIFO or device is refused by its type, a file over the cap
        // by its size, never waited on or read until memory runs out.
        let b = crate::sources::fsroot::input::read_input(
            path,
            crate::sources::fsroot::input::MAX_EVIDENCE_BYTES,
        )
        .with_context(|| format!("cannot read evidence {}", path.display()))?;
        Self::from_bytes(&path.display().to_string(), &b)
    }
}

/// `--nic-gbps N×SPEED`: N NICs (ports) of SPEED Gb/s each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NicSpec {
    /// Number of NICs.
    pub count: u32,
    /// Speed of each, Gb/s.
    pub gbps: f64,
}

impl std::str::FromStr for NicSpec {
    type Err = String;
    /// `8x200`, `8×400`, `4X100`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let (n, g) = t
            .split_once(['x', 'X', '×'])
            .ok_or_else(|| format!("{s:?} is not N×SPEED (e.g. 8x400)"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("{s:?}: NIC count {n:?} is not a number"))?;
        let gbps: f64 = g
            .trim()
            .trim_end_matches("Gb/s")
            .trim_end_matches('G')
            .parse()
            .map_err(|_| format!("{s:?}: speed {g:?} is not a number of Gb/s"))?;
        if count == 0 || !(gbps > 0.0 && gbps.is_finite()) {
            return Err(format!("{s:?}: count and speed must be positive"));
        }
        Ok(NicSpec { count, gbps })
    }
}

/// The node a job's verdicts are joined to (`-i SNAPSHOT`): what [`analyze`] asks of it. The
/// audit answers it (`analysis::audit::join::Topo`): the GPU–NIC pairing, the path labels and the
/// findings are the audit's, so the evidence never runs or reads an audit itself.
pub trait Node {
    /// Where the topology came from.
    fn source(&self) -> String;
    /// The NIC capacity bandwidth is judged against, or why the node does not show it.
    fn capacity(&self) -> Result<Capacity, String>;
    /// What the GPUs' NVLinks carry, in NCCL's model for release 2.`nccl_minor` (a run on one
    /// node is judged against it), or why the node does not show it.
    fn nvlink_capacity(&self, nccl_minor: u32) -> Result<NvlinkCapacity, String>;
    /// The port rate of an RDMA device, Gb/s.
    fn port_gbps(&self, rdma: &str) -> Option<f64>;
    /// The audit's errors and warnings on the GPU–NIC paths (ACS, IOMMU, link, MPS), in words,
    /// to explain a slow run.
    fn path_problems(&self) -> Vec<String>;
    /// One rank placed on the node: its GPU, the NIC the pairing gives it, and the audit's facts.
    fn join(&self, r: &RankVerdict) -> Option<Prediction>;
}

/// Options of [`analyze`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--nic-gbps`.
    pub nic: Option<NicSpec>,
}

/// Reads every input into one report; `topo` joins it to a topology. Phases: what the
/// bandwidth is judged against (NIC capacity, NVLink), each input read into ranks, bandwidth
/// and perftest verdicts, then the ranks joined to the topology.
pub fn analyze(inputs: &[Input], topo: Option<&dyn Node>, opts: &Options) -> EvidenceReport {
    let mut notes = Vec::new();
    let capacity = nic_capacity(topo, opts, &mut notes);
    let nvlink = topo.and_then(|t| t.nvlink_capacity(newest_minor(inputs)).ok());
    let mut a = Analysis {
        topo,
        opts,
        report: EvidenceReport {
            schema: EVIDENCE_SCHEMA.to_string(),
            topology: topo.map(|t| t.source()),
            inputs: Vec::new(),
            capacity: capacity.clone(),
            nvlink: nvlink.clone(),
            ranks: Vec::new(),
            joined: Vec::new(),
            bandwidth: Vec::new(),
            perftest: Vec::new(),
            comparisons: Vec::new(),
            errors: Vec::new(),
            probe: Vec::new(),
            notes: Vec::new(),
        },
        notes,
        capacity,
        nvlink,
    };
    for input in inputs {
        match &input.loaded {
            Loaded::Probe(p) => a.probe(&input.source, p),
            Loaded::Job(job) => a.job(&input.source, job),
        }
    }
    a.report.comparisons = bandwidth::compare(&a.report.perftest);
    a.join_topology();
    let mut report = a.report;
    let mut notes = a.notes;
    if report.ranks.iter().any(|r| r.gdr == Gdr::Unknown) {
        notes.push("`unknown` means the log does not show GDR for that rank (no NET connection line, or the lines were cut): it is never read as off".into());
    }
    report.notes = notes;
    report
}

/// The NICs the bandwidth is judged against: `--nic-gbps`, else the topology's (a note when it
/// cannot tell).
fn nic_capacity(
    topo: Option<&dyn Node>,
    opts: &Options,
    notes: &mut Vec<String>,
) -> Option<Capacity> {
    match (opts.nic, topo) {
        (Some(n), _) => Some(Capacity {
            nics: n.count,
            total_gbps: f64::from(n.count) * n.gbps,
            expected_busbw: f64::from(n.count) * n.gbps * GBPS_TO_BUSBW,
            source: format!("--nic-gbps {}x{}", n.count, n.gbps),
        }),
        (None, Some(t)) => match t.capacity() {
            Ok(c) => Some(c),
            Err(e) => {
                notes.push(format!(
                    "NIC capacity unknown: {e}; give --nic-gbps N×SPEED to judge bandwidth"
                ));
                None
            }
        },
        (None, None) => None,
    }
}

/// NCCL's per-link NVLink figure depends on the release: the newest minor the inputs name.
fn newest_minor(inputs: &[Input]) -> u32 {
    inputs
        .iter()
        .filter_map(|i| match &i.loaded {
            Loaded::Job(j) => Some(j),
            Loaded::Probe(_) => None,
        })
        .flat_map(|j| {
            j.nccl
                .entries
                .iter()
                .filter_map(|e| match &e.record {
                    crate::parse::nccl_log::Record::Version(v) => Some(v.number.1),
                    _ => None,
                })
                .chain(
                    j.tests
                        .runs
                        .iter()
                        .filter_map(|r| r.nccl_library.map(|v| v.1)),
                )
        })
        .max()
        .unwrap_or(crate::analysis::nccl::NcclVersion::NEWEST.minor)
}

/// The report being built by [`analyze`], and what every input is judged against.
struct Analysis<'t> {
    topo: Option<&'t dyn Node>,
    opts: &'t Options,
    report: EvidenceReport,
    notes: Vec<String>,
    capacity: Option<Capacity>,
    nvlink: Option<NvlinkCapacity>,
}

impl Analysis<'_> {
    /// A `peerpath probe` document: its measured pairs.
    fn probe(&mut self, source: &str, p: &ProbeEvidence) {
        self.report.inputs.push(InputSummary {
            source: source.to_string(),
            kinds: vec!["peerpath-probe".into()],
            lines: 0,
            nccl_read: 0,
            nccl_other: 0,
            gaps: 0,
            processes: Vec::new(),
            refused: Vec::new(),
            unrecognised_lines: Unrecognised::default(),
        });
        for m in &p.measured {
            self.report.probe.push(format!(
                "{} ↔ {}: {} ({})",
                m.gpu,
                m.nic,
                m.verdict.as_str(),
                m.reason
            ));
        }
        if !p.unmapped.is_empty() {
            self.notes.push(format!(
                "{}: {} probe result(s) name no PCI GPU/NIC pair",
                source,
                p.unmapped.len()
            ));
        }
    }

    /// A job's output: its ranks, its nccl-tests and perftest runs, what was refused.
    fn job(&mut self, source: &str, job: &JobOutput) {
        let r = ranks::judge(source, job);
        self.nccl_tests(source, job, &r);
        for run in &job.perftest.runs {
            let port = run
                .device
                .as_deref()
                .and_then(|d| self.topo.and_then(|t| t.port_gbps(d)))
                .or(self.opts.nic.map(|n| n.gbps));
            self.report
                .perftest
                .push(bandwidth::perftest_verdict(source, run, port));
        }
        let kinds: Vec<String> = job.kinds().into_iter().map(str::to_string).collect();
        if kinds.is_empty() {
            self.notes.push(format!(
                "{}: no NCCL line, nccl-tests table or perftest run found in {} line(s) (a prose summary or another tool's output: nothing is read from it)",
                source, job.lines
            ));
        }
        self.report.inputs.push(InputSummary {
            source: source.to_string(),
            kinds,
            lines: job.lines,
            nccl_read: job.nccl.entries.len(),
            nccl_other: job.nccl.unread.iter().filter(|u| u.form.is_some()).count()
                + job.nccl.banner_lines.len(),
            gaps: job.nccl.gaps.len(),
            processes: r.processes,
            refused: refused_lines(job),
            unrecognised_lines: Unrecognised {
                count: job.unrecognised_count,
                lines: job
                    .unrecognised
                    .iter()
                    .take(UNRECOGNISED_SHOWN)
                    .map(|(line, text)| TextLine {
                        line: *line,
                        text: text.clone(),
                    })
                    .collect(),
            },
        });
        if self.report.ranks.is_empty() {
            // Moved, not copied: 10^6 verdicts are not held twice (issue 53).
            self.report.ranks = r.ranks;
        } else {
            self.report.ranks.extend(r.ranks);
        }
        self.report.errors.extend(r.errors);
        self.notes.extend(r.notes);
    }

    /// Each nccl-tests run with a table: its bandwidth verdict, explained by the snapshot's
    /// path problems and the job's completion errors when low.
    fn nccl_tests(&mut self, source: &str, job: &JobOutput, r: &ranks::InputRanks) {
        let net_seen = job
            .nccl
            .entries
            .iter()
            .any(|e| matches!(e.record, crate::parse::nccl_log::Record::NetChannel(_)));
        let gdr_used = r.ranks.iter().any(|x| x.gdr == Gdr::Used);
        let ctx = bandwidth::RunContext { net_seen, gdr_used };
        // A run that printed only its devices (cut before its table) ties ranks to
        // GPUs but has no bandwidth to judge.
        for run in job
            .tests
            .runs
            .iter()
            .filter(|r| !r.rows.is_empty() || r.avg_busbw.is_some())
        {
            let against = bandwidth::Against {
                nics: self.capacity.as_ref(),
                nvlink: self.nvlink.as_ref(),
            };
            let mut v = bandwidth::judge_run(source, run, &against, &ctx);
            if let Some(t) = self.topo
                && gdr_used
                && (matches!(v.verdict, BwVerdict::Low | BwVerdict::Broken) || v.collapse.is_some())
            {
                let probs = t.path_problems();
                if probs.is_empty() {
                    v.explanation.push("the audit of the snapshot finds nothing on the GPU–NIC paths that explains it".into());
                }
                v.explanation.extend(probs);
            }
            for e in &r.errors {
                if e.vendor_err == Some(81) || e.status == Some(4) {
                    v.explanation.push(format!(
                        "{} ×{} (line {}): {}",
                        e.status_name, e.count, e.line, e.meaning
                    ));
                }
            }
            self.report.bandwidth.push(v);
        }
    }

    /// Each rank placed on a GPU of the topology, and the ranks grouped by GPU.
    fn join_topology(&mut self) {
        let Some(t) = self.topo else { return };
        let report = &mut self.report;
        for r in &mut report.ranks {
            r.topology = t.join(r).map(Box::new);
        }
        let unmatched = report.ranks.iter().filter(|r| r.topology.is_none()).count();
        if unmatched > 0 {
            self.notes.push(format!(
                "{unmatched} rank(s) could not be placed on a GPU of the snapshot (the log shows neither their busId, nor an nccl-tests bus, nor an NVML index)"
            ));
        }
        report.joined = group(&report.ranks);
    }
}

/// The lines each reader refused (NCCL, nccl-tests, perftest), in line order.
fn refused_lines(job: &JobOutput) -> Vec<RefusedLine> {
    let mut refused: Vec<RefusedLine> = job
        .nccl
        .refused
        .iter()
        .map(|x| RefusedLine {
            line: x.line,
            text: x.text.clone(),
            why: x.why.clone(),
        })
        .collect();
    refused.extend(job.tests.refused.iter().map(|x| RefusedLine {
        line: x.line,
        text: x.text.clone(),
        why: format!("nccl-tests: {}", x.why),
    }));
    refused.extend(job.perftest.refused.iter().map(|(l, t)| RefusedLine {
        line: *l,
        text: t.clone(),
        why: "perftest: row cut".into(),
    }));
    refused.sort_by_key(|x| x.line);
    refused
}

/// NCCL's rule of thumb (sjeaugey, NVIDIA/nccl-tests#119): 24 GB/s of bus bandwidth per
/// 200 Gb/s of NIC, 12 per 100 — 0.12 GB/s per Gb/s.
pub const GBPS_TO_BUSBW: f64 = 24.0 / 200.0;

/// Groups joined verdicts by GPU, verdict, cause and NIC across hosts.
pub fn group(ranks: &[RankVerdict]) -> Vec<JoinedVerdict> {
    let mut out: Vec<JoinedVerdict> = Vec::new();
    for r in ranks {
        let Some(t) = &r.topology else { continue };
        let cause = r.cause.as_ref().map(|c| c.kind);
        let nic = r.nics.iter().find_map(|n| n.name.clone());
        let who = match r.rank {
            Some(k) => format!("{}:{k}", r.host),
            None => r.host.clone(),
        };
        match out
            .iter_mut()
            .find(|j| j.gpu == t.gpu && j.gdr == r.gdr && j.cause == cause && j.nic == nic)
        {
            Some(j) => {
                if !j.hosts.contains(&r.host) {
                    j.hosts.push(r.host.clone());
                }
                j.ranks.push(who);
            }
            None => out.push(JoinedVerdict {
                gpu: t.gpu.clone(),
                gdr: r.gdr,
                cause,
                nic,
                hosts: vec![r.host.clone()],
                ranks: vec![who],
                sentence: t.sentence.clone(),
            }),
        }
    }
    out.sort_by(|a, b| (a.gdr, &a.gpu).cmp(&(b.gdr, &b.gpu)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nic_specs() {
        assert_eq!(
            "8x400".parse::<NicSpec>(),
            Ok(NicSpec {
                count: 8,
                gbps: 400.0
            })
        );
        assert_eq!(
            "4×200".parse::<NicSpec>(),
            Ok(NicSpec {
                count: 4,
                gbps: 200.0
            })
        );
        assert_eq!(
            "2X100G".parse::<NicSpec>(),
            Ok(NicSpec {
                count: 2,
                gbps: 100.0
            })
        );
        assert!("8".parse::<NicSpec>().is_err());
        assert!("0x400".parse::<NicSpec>().is_err());
        assert!("8xfast".parse::<NicSpec>().is_err());
    }

    #[test]
    fn kinds_are_detected_from_content() {
        let i = Input::from_bytes("a.log", b"h:1:2 [0] NCCL INFO Using network IB\n").unwrap();
        assert!(matches!(i.loaded, Loaded::Job(_)));
        let e = Input::from_bytes("a.json", br#"{"schema":"peerpath.audit/1"}"#).unwrap_err();
        assert!(e.to_string().contains("not a probe report"), "{e}");
        let e = Input::from_bytes("p.json", br#"{"schema":"peerpath.probe/1","results":[]}"#)
            .unwrap_err();
        assert!(format!("{e:#}").contains("peerpath.probe/1"), "{e:#}");
    }
}
