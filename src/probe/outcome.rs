//! What becomes of each cell of a job: a result row for a cell that ran, judged by
//! [`super::verdict`] against the host baseline measured on the same NIC; rows for the cells a
//! job could not run (fabric not opened, a buffer not allocated or not registered,
//! interrupted); and the finished [`ProbeReport`].

use super::cuda;
use super::interrupted;
use super::plan::Job;
use super::run::{CellOutcome, ProbeOptions};
use crate::analysis::probe_report::cuda::CudaReport;
use crate::analysis::probe_report::verdict::{self, CellFacts, Verdict};
use crate::analysis::probe_report::{
    CellResult, Change, Direction, FabricKind, MemoryKind, NicRef, Op, PROBE_SCHEMA, ProbeReport,
    RegAttempt,
};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Host-memory bandwidth per (NIC, op, message size), GB/s: what GPU cells are compared with.
#[derive(Debug, Default)]
pub struct Baselines(HashMap<(NicRef, Op, usize), f64>);

/// What judging a job's cells needs besides the measurement: the NIC's line rate and how the
/// GPU-side buffer was registered.
pub struct JobFacts<'a> {
    /// Line rate of the port, GB/s, when the fabric reports one.
    pub line_rate: Option<f64>,
    /// The method that worked (`dmabuf`, `peer`, `hmem`, `host`).
    pub method: &'a str,
    /// Attempts to report with each cell (empty for host-memory jobs).
    pub attempts: &'a [RegAttempt],
    /// `Buffer::is_device_memory` of the buffer.
    pub device_memory: Option<bool>,
}

/// The result rows of one job.
pub struct JobRows<'a> {
    job: &'a Job,
    sizes: &'a [usize],
}

impl<'a> JobRows<'a> {
    /// Rows for `job`'s cells at each of `sizes`.
    pub fn new(job: &'a Job, sizes: &'a [usize]) -> Self {
        JobRows { job, sizes }
    }

    /// A row with nothing measured.
    pub fn row(
        &self,
        nic: &NicRef,
        (direction, op): (Direction, Op),
        size: usize,
        verdict: Verdict,
        reason: String,
        registration: Vec<RegAttempt>,
    ) -> CellResult {
        CellResult {
            expected_label: self.job.expected_label,
            control: self.job.control,
            registration,
            ..CellResult::unmeasured(
                self.job.gpu.as_ref().map(|(_, g)| g.clone()),
                nic,
                self.job.memory(),
                (direction, op),
                size,
                verdict,
                reason,
            )
        }
    }

    /// One row per cell of the job, all with `verdict` and `reason`: the job stopped before
    /// its cells ran. `judged`: the verdict says something about the pair, so it is compared
    /// with the label (a GPU buffer no method registered); otherwise it never contradicts.
    pub fn skip_all(
        &self,
        nic: &NicRef,
        verdict: Verdict,
        reason: &str,
        registration: &[RegAttempt],
        judged: bool,
    ) -> Vec<CellResult> {
        let contradicts =
            judged && verdict::contradicts(verdict, verdict::expectation(self.job.expected_label));
        let mut out = Vec::new();
        for cell in self.job.cells() {
            for &size in self.sizes {
                let mut r = self.row(
                    nic,
                    cell,
                    size,
                    verdict,
                    reason.to_string(),
                    registration.to_vec(),
                );
                r.contradicts = contradicts;
                out.push(r);
            }
        }
        out
    }

    /// The row of a cell that ran: host cells judge the NIC's host path and become the
    /// baseline; GPU cells are judged against that baseline and the line rate.
    pub fn judged(
        &self,
        nic: &NicRef,
        cell: (Direction, Op),
        size: usize,
        out: &CellOutcome,
        reg: &JobFacts<'_>,
        baselines: &mut Baselines,
    ) -> CellResult {
        let op = cell.1;
        let memory = self.job.memory();
        let gbps = if out.seconds > 0.0 {
            out.bytes as f64 / out.seconds / 1e9
        } else {
            0.0
        };
        let key = (nic.clone(), op, size);
        let (v, mut reason) = if let Some(e) = &out.error {
            (Verdict::TransferFailed, e.clone())
        } else if memory == MemoryKind::Host {
            let (v, r) = verdict::judge_host(out.verified, gbps, reg.line_rate);
            if v != Verdict::TransferFailed {
                baselines.0.insert(key, gbps);
            }
            (v, r)
        } else {
            verdict::judge_gpu(&CellFacts {
                verified: out.verified,
                gbytes_per_s: gbps,
                baseline_gbytes_per_s: baselines.0.get(&key).copied(),
                line_rate_gbytes_per_s: reg.line_rate,
                gdr_evidence: reg.device_memory == Some(true)
                    && matches!(reg.method, "dmabuf" | "peer" | "hmem"),
            })
        };
        if memory.is_device() {
            reason = format!("{reason}; registered by {}", reg.method);
        }
        let mut r = self.row(nic, cell, size, v, reason, reg.attempts.to_vec());
        r.bytes = out.bytes;
        r.seconds = out.seconds;
        r.gbytes_per_s = gbps;
        r.verified = out.verified;
        r.ops_in_flight = out.depth;
        r.contradicts = verdict::contradicts(v, verdict::expectation(self.job.expected_label));
        r
    }
}

/// What `--format json` writes: the cells, then the CUDA copy probes in the time left (or why
/// they did not run), the counter changes and the notes.
pub fn finish(
    opts: &ProbeOptions,
    results: Vec<CellResult>,
    counter_changes: Vec<Change>,
    mut notes: Vec<String>,
    started: Instant,
    cuda_handle: Result<cuda::Cuda, String>,
) -> ProbeReport {
    let left = opts.duration.saturating_sub(started.elapsed());
    let cuda_report = match cuda_handle {
        Err(e) => CudaReport::unavailable(&e),
        Ok(c) => {
            drop(c);
            if interrupted() {
                CudaReport::unavailable("interrupted (Ctrl-C)")
            } else {
                cuda::probes(left.max(Duration::from_millis(500)))
            }
        }
    };
    notes.sort();
    notes.dedup();
    ProbeReport {
        schema: PROBE_SCHEMA.to_string(),
        fabric: match opts.fabric {
            FabricKind::Verbs => "verbs".into(),
            FabricKind::Ofi => format!("ofi:{}", opts.provider),
        },
        results,
        cuda: cuda_report,
        counter_changes,
        notes,
        interrupted: interrupted(),
        wall_seconds: started.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::Label;
    use crate::analysis::probe_report::GpuRef;

    fn job(gpu: bool, label: Option<Label>) -> Job {
        Job {
            verbs: None,
            gpu: gpu.then_some({
                (
                    0,
                    GpuRef {
                        bdf: None,
                        cuda: Some(0),
                    },
                )
            }),
            expected_label: label,
            control: false,
            blocked: None,
            device_memory: MemoryKind::Cuda,
        }
    }

    fn outcome(gbytes: f64) -> CellOutcome {
        CellOutcome {
            bytes: (gbytes * 1e9) as u64,
            seconds: 1.0,
            verified: true,
            error: None,
            depth: 16,
        }
    }

    #[test]
    fn gpu_cells_are_judged_against_the_baseline_of_their_nic() {
        let nic = NicRef::ofi("tcp", Some("lo"));
        let sizes = [65536];
        let (host, gpu) = (job(false, None), job(true, Some(Label::Pix)));
        let mut b = Baselines::default();
        let none = JobFacts {
            line_rate: None,
            method: "host",
            attempts: &[],
            device_memory: None,
        };
        let cell = (Direction::HostToHost, Op::Write);
        let r =
            JobRows::new(&host, &sizes).judged(&nic, cell, 65536, &outcome(10.0), &none, &mut b);
        assert_eq!(r.verdict, Verdict::Confirmed);
        let dev = JobFacts {
            line_rate: None,
            method: "dmabuf",
            attempts: &[],
            device_memory: Some(true),
        };
        let cell = (Direction::GpuToHost, Op::Write);
        let rows = JobRows::new(&gpu, &sizes);
        let r = rows.judged(&nic, cell, 65536, &outcome(4.0), &dev, &mut b);
        assert_eq!(r.verdict, Verdict::BadPath);
        assert!(r.contradicts, "PIX measured bad");
        assert!(r.reason.ends_with("registered by dmabuf"), "{}", r.reason);
        // Another NIC has no baseline.
        let other = NicRef::ofi("tcp", Some("eth0"));
        let r = rows.judged(&other, cell, 65536, &outcome(4.0), &dev, &mut b);
        assert_eq!(r.verdict, Verdict::NotRun);
    }

    #[test]
    fn skipped_jobs_yield_a_row_per_cell() {
        let nic = NicRef::ofi("tcp", None);
        let gpu = job(true, Some(Label::Pxb));
        let rows = JobRows::new(&gpu, &[4096, 65536]);
        let all = rows.skip_all(&nic, Verdict::RegistrationFailed, "no method", &[], true);
        assert_eq!(all.len(), 8);
        assert!(all.iter().all(|r| r.contradicts && r.reason == "no method"));
        let all = rows.skip_all(&nic, Verdict::RegistrationFailed, "host", &[], false);
        assert!(all.iter().all(|r| !r.contradicts));
    }
}
