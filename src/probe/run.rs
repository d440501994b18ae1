//! The transfer loop, written once over [`Fabric`] and [`Buffer`]: for each cell (pair,
//! memory, direction, op, message size) fill the source with a seeded pattern and poison the
//! destination, warm up, run a fixed wall-clock window with up to N operations in flight,
//! drain, and verify every slot of the destination. Then verdicts, counters, the report.

use super::counters::{self, Change};
use super::cuda::{self, CudaReport};
use super::fabric::ofi::OfiFabric;
use super::fabric::verbs::{self, VerbsFabric};
use super::fabric::{Completion, Fabric, Op, OpenError, Posted, RegAttempt, Transfer};
use super::host::{CpuPin, HostBuffer};
use super::memory::{self, Buffer, MemoryKind};
use super::pairs::{self, PairMode};
use super::verdict::{self, CellFacts, Verdict};
use super::{PROBE_SCHEMA, Unavailable, interrupted};
use crate::model::Topology;
use serde::Serialize;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Which fabric library to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FabricKind {
    /// libibverbs (InfiniBand, RoCE).
    Verbs,
    /// libfabric (EFA, Slingshot, UET, tcp).
    Ofi,
}

/// A fault to inject in a test build (honoured only with debug assertions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Flip one byte of the destination after the transfers complete.
    Corrupt,
    /// Move only half of each message.
    Truncate,
}

impl Fault {
    /// The fault named by `PEERPATH_PROBE_FAULT` (`corrupt`, `truncate`) in a debug build;
    /// always `None` in a release build.
    pub fn from_env() -> Option<Fault> {
        if !cfg!(debug_assertions) {
            return None;
        }
        match std::env::var("PEERPATH_PROBE_FAULT").ok()?.as_str() {
            "corrupt" => Some(Fault::Corrupt),
            "truncate" => Some(Fault::Truncate),
            _ => None,
        }
    }
}

/// Options of a probe run.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Fabric library.
    pub fabric: FabricKind,
    /// libfabric provider (`tcp`, `efa`, `cxi`, `verbs`…), for `FabricKind::Ofi`.
    pub provider: String,
    /// Memory under test.
    pub memory: MemoryKind,
    /// Pair selection (verbs).
    pub pairs: PairMode,
    /// Bound on the whole run.
    pub duration: Duration,
    /// Message sizes.
    pub sizes: Vec<usize>,
    /// Root to re-read counters from (`None`: no snapshots, e.g. the topology is a file).
    pub counters_root: Option<std::path::PathBuf>,
    /// Show progress bars.
    pub progress: bool,
    /// Injected fault (tests).
    pub fault: Option<Fault>,
}

/// Direction of a cell relative to the memory under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// GPU memory is the source, host memory the destination.
    GpuToHost,
    /// Host memory is the source, GPU memory the destination.
    HostToGpu,
    /// Host to host: the baseline.
    HostToHost,
}

/// One measured (or skipped) cell: the `results[]` entry of `peerpath.probe/1`.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    /// GPU PCI address or `cuda:<ordinal>`; null for host-only cells.
    pub gpu: Option<String>,
    /// NIC: `verbs:mlx5_0:1 (0000:17:00.0)` or `ofi:tcp:lo`.
    pub nic: String,
    /// Memory of the non-host side (`host` for baseline cells).
    pub memory: MemoryKind,
    /// Direction.
    pub direction: Direction,
    /// RDMA operation.
    pub op: Op,
    /// Bytes per operation.
    pub message_bytes: usize,
    /// Bytes moved in the timed window (completed operations × message size).
    pub bytes: u64,
    /// Length of the timed window, first post to last completion.
    pub seconds: f64,
    /// `bytes / seconds / 10^9`.
    pub gbytes_per_s: f64,
    /// Whether every destination slot held the source pattern afterwards.
    pub verified: bool,
    /// Verdict.
    pub verdict: Verdict,
    /// Classification label the verdict is compared with.
    pub expected_label: Option<String>,
    /// Why this verdict, in words (ratios, errors, errno meanings).
    pub reason: String,
    /// Whether the verdict contradicts the label.
    pub contradicts: bool,
    /// Whether the pair is the control (worse) pair of its GPU.
    pub control: bool,
    /// Registration attempts for the GPU buffer (empty for host cells).
    pub registration: Vec<RegAttempt>,
}

/// The whole report (`schema: peerpath.probe/1`).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    /// Always [`PROBE_SCHEMA`].
    pub schema: String,
    /// `verbs` or `ofi:<provider>`.
    pub fabric: String,
    /// One entry per cell.
    pub results: Vec<CellResult>,
    /// CUDA copy probes (or why they did not run).
    pub cuda: CudaReport,
    /// Sysfs files that changed during the run (AER, link state, port counters).
    pub counter_changes: Vec<Change>,
    /// Notes: buffers not pinned, counters not read, …
    pub notes: Vec<String>,
    /// Whether Ctrl-C stopped the run early.
    pub interrupted: bool,
}

impl ProbeReport {
    /// Whether any cell contradicted its label or failed.
    pub fn any_contradiction(&self) -> bool {
        self.results.iter().any(|r| {
            r.contradicts
                || matches!(
                    r.verdict,
                    Verdict::TransferFailed | Verdict::RegistrationFailed
                )
        })
    }
}

/// Buffer size per side: room for 4 slots of the largest message, at least 1 MiB.
fn buffer_len(sizes: &[usize]) -> usize {
    sizes
        .iter()
        .copied()
        .max()
        .unwrap_or(1 << 20)
        .saturating_mul(4)
        .max(1 << 20)
}

struct CellOutcome {
    bytes: u64,
    seconds: f64,
    verified: bool,
    error: Option<String>,
}

/// Runs one cell. `src`/`dst` are `(buffer, registration handle)`.
#[allow(clippy::too_many_arguments)]
fn run_cell(
    fab: &mut dyn Fabric,
    op: Op,
    src: (&mut dyn Buffer, usize),
    dst: (&mut dyn Buffer, usize),
    msg: usize,
    window: Duration,
    seed: u64,
    fault: Option<Fault>,
) -> CellOutcome {
    let (sbuf, sh) = src;
    let (dbuf, dh) = dst;
    let fail = |e: String| CellOutcome {
        bytes: 0,
        seconds: 0.0,
        verified: false,
        error: Some(e),
    };
    let slots = (sbuf.len().min(dbuf.len()) / msg)
        .min(fab.max_outstanding())
        .min(16);
    if slots == 0 {
        return fail(format!("message of {msg} bytes does not fit the buffers"));
    }
    if let Err(e) = memory::fill(sbuf, seed).and_then(|_| memory::fill(dbuf, !seed)) {
        return fail(format!("could not fill buffers: {e}"));
    }
    // WRITE: the initiator's local buffer is the source; READ: the local buffer is the
    // destination and the target's buffer the source.
    let (local, remote) = match op {
        Op::Write => (sh, dh),
        Op::Read => (dh, sh),
    };
    let len = if fault == Some(Fault::Truncate) {
        (msg / 2).max(1)
    } else {
        msg
    };
    let mut used = vec![false; slots];
    let mut phase = |window: Duration, used: &mut [bool]| -> Result<(u64, f64), String> {
        let t0 = Instant::now();
        let mut busy = vec![false; slots];
        let mut inflight = 0usize;
        let mut done = 0u64;
        let mut last = t0;
        let mut comps: Vec<Completion> = Vec::new();
        let mut next = 0usize;
        let mut last_progress = Instant::now();
        loop {
            let posting = t0.elapsed() < window && !interrupted();
            if posting {
                while inflight < slots {
                    let s = next % slots;
                    if busy[s] {
                        break;
                    }
                    match fab.post(&Transfer {
                        op,
                        local,
                        local_off: s * msg,
                        remote,
                        remote_off: s * msg,
                        len,
                        wr_id: s as u64,
                    })? {
                        Posted::Yes => {
                            busy[s] = true;
                            used[s] = true;
                            inflight += 1;
                            next += 1;
                        }
                        Posted::Busy => break,
                    }
                }
            } else if inflight == 0 {
                break;
            }
            comps.clear();
            fab.poll(&mut comps)?;
            for c in &comps {
                c.status.clone()?;
                let s = c.wr_id as usize;
                if s < slots && busy[s] {
                    busy[s] = false;
                    inflight -= 1;
                    done += 1;
                    last = Instant::now();
                    last_progress = last;
                }
            }
            if comps.is_empty() && last_progress.elapsed() > Duration::from_secs(10) {
                return Err(format!(
                    "transfer stalled: {inflight} operations without completion for 10 s"
                ));
            }
        }
        Ok((done * msg as u64, (last - t0).as_secs_f64()))
    };
    if let Err(e) = phase(window / 5, &mut used) {
        return fail(e);
    }
    let (bytes, seconds) = match phase(window, &mut used) {
        Ok(x) => x,
        Err(e) => return fail(e),
    };
    if fault == Some(Fault::Corrupt) {
        let mut b = [0u8];
        if dbuf.read_at(msg / 2, &mut b).is_ok() {
            let _ = dbuf.write_at(msg / 2, &[b[0] ^ 0x5a]);
        }
    }
    let mut verified = true;
    let mut error = None;
    for (s, _) in used.iter().enumerate().filter(|(_, u)| **u) {
        match memory::verify(dbuf, s * msg, msg, seed, s * msg) {
            Ok(None) => {}
            Ok(Some(at)) => {
                verified = false;
                error = Some(format!(
                    "slot {s}: first wrong byte at offset {at} of {msg}"
                ));
                break;
            }
            Err(e) => {
                verified = false;
                error = Some(format!("could not read the destination back: {e}"));
                break;
            }
        }
    }
    CellOutcome {
        bytes,
        seconds,
        verified,
        error,
    }
}

/// Cells of one NIC/GPU combination to run, in order.
fn cell_plan(memory: MemoryKind) -> Vec<(Direction, Op)> {
    match memory {
        MemoryKind::Host => vec![
            (Direction::HostToHost, Op::Write),
            (Direction::HostToHost, Op::Read),
        ],
        MemoryKind::Cuda => vec![
            (Direction::GpuToHost, Op::Write),
            (Direction::GpuToHost, Op::Read),
            (Direction::HostToGpu, Op::Write),
            (Direction::HostToGpu, Op::Read),
        ],
    }
}

/// One unit of work: a fabric to open, and the GPU (CUDA ordinal + label) to test on it.
struct Job {
    /// For verbs: (rdma device, port, rate Gb/s, PCI address).
    verbs: Option<pairs::RdmaNic>,
    gpu: Option<(usize, String)>,
    expected_label: Option<String>,
    control: bool,
}

/// Progress reporting (indicatif on a terminal only).
struct Progress(indicatif::ProgressBar);

impl Progress {
    fn new(show: bool, len: u64) -> Self {
        let pb = if show {
            indicatif::ProgressBar::new(len)
        } else {
            indicatif::ProgressBar::hidden()
        };
        if let Ok(s) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} cells  {msg}")
        {
            pb.set_style(s);
        }
        Progress(pb)
    }
}

/// Runs the probe. `Err(Unavailable)` when the fabric library, provider or devices are absent
/// (exit 3); setup failures of individual pairs become `not_run`/`transfer_failed` cells.
pub fn run(topo: Option<&Topology>, opts: &ProbeOptions) -> Result<ProbeReport, Unavailable> {
    let started = Instant::now();
    let mut notes = Vec::new();
    let mut results = Vec::new();

    // The fabric library first (the more fundamental absence), then CUDA (GPU memory needs it;
    // the copy probes run either way and say why not).
    match opts.fabric {
        FabricKind::Verbs => {
            verbs::list_devices()?;
        }
        FabricKind::Ofi => {
            super::fabric::ofi::runtime_version()?;
        }
    }
    let cuda_handle = match cuda::open() {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(format!("CUDA driver present but not usable: {e}")),
        Err(u) => Err(u.message),
    };
    if opts.memory == MemoryKind::Cuda
        && let Err(e) = &cuda_handle
    {
        return Err(Unavailable::device(&format!("--memory cuda: {e}")));
    }

    // Jobs.
    let mut jobs = Vec::new();
    match opts.fabric {
        FabricKind::Verbs => {
            let devs = verbs::list_devices()?;
            let Some(t) = topo else {
                return Err(Unavailable::device(
                    "no topology to choose GPU–NIC pairs from",
                ));
            };
            let nics: Vec<_> = pairs::rdma_nics(t)
                .into_iter()
                .filter(|n| devs.contains(&n.rdma))
                .collect();
            if nics.is_empty() {
                return Err(Unavailable::device(&format!(
                    "libibverbs lists {} but none is an RDMA NIC in the scanned topology",
                    devs.join(", ")
                )));
            }
            // Host baseline once per NIC.
            for n in &nics {
                jobs.push(Job {
                    verbs: Some(n.clone()),
                    gpu: None,
                    expected_label: None,
                    control: false,
                });
            }
            if opts.memory == MemoryKind::Cuda {
                let c = cuda_handle.as_ref().map_err(|e| Unavailable::device(e))?;
                for p in pairs::select(t, opts.pairs)
                    .into_iter()
                    .filter(|p| devs.contains(&p.nic.rdma))
                {
                    let bdf = p.gpu.to_string();
                    match c.ordinal_of(&bdf) {
                        Some(o) => jobs.push(Job {
                            verbs: Some(p.nic),
                            gpu: Some((o, bdf)),
                            expected_label: Some(p.expected_label),
                            control: p.control,
                        }),
                        None => notes.push(format!(
                            "GPU {bdf} is not visible to CUDA; its pairs were not run"
                        )),
                    }
                }
            }
        }
        FabricKind::Ofi => {
            jobs.push(Job {
                verbs: None,
                gpu: None,
                expected_label: None,
                control: false,
            });
            if opts.memory == MemoryKind::Cuda
                && let Ok(c) = &cuda_handle
            {
                for o in 0..c.count() {
                    let name = c.pci_bus_id(o).unwrap_or_else(|_| format!("cuda:{o}"));
                    jobs.push(Job {
                        verbs: None,
                        gpu: Some((o, name)),
                        expected_label: None,
                        control: false,
                    });
                }
            }
        }
    }

    // Time budget: CUDA probes get a tenth; cells share the rest.
    let cells_per_job = |j: &Job| {
        cell_plan(if j.gpu.is_some() {
            MemoryKind::Cuda
        } else {
            MemoryKind::Host
        })
        .len()
            * opts.sizes.len()
    };
    let total_cells: usize = jobs.iter().map(cells_per_job).sum();
    let cell_budget = opts.duration.mul_f64(0.8);
    // Each cell runs a warm-up of window/5 plus the window, plus fill/verify overhead.
    let window = (cell_budget / total_cells.max(1) as u32)
        .mul_f64(0.7)
        .clamp(Duration::from_millis(100), Duration::from_secs(3));
    let progress = Progress::new(opts.progress, total_cells as u64);

    // Counter snapshots.
    let watch = match (topo, &opts.counters_root, opts.fabric) {
        (Some(t), Some(_), FabricKind::Verbs) => {
            let mut devs: Vec<_> = jobs
                .iter()
                .filter_map(|j| j.verbs.as_ref().map(|n| n.bdf))
                .collect();
            devs.extend(jobs.iter().filter_map(|j| {
                j.gpu
                    .as_ref()
                    .and_then(|(_, b)| b.parse::<crate::model::Bdf>().ok())
            }));
            let rdma: Vec<_> = jobs
                .iter()
                .filter_map(|j| j.verbs.as_ref().map(|n| (n.rdma.clone(), n.port)))
                .collect();
            counters::files_for(t, &devs, &rdma)
        }
        (_, _, FabricKind::Ofi) => {
            notes.push("libfabric loopback: no PCI device is on the path, so no AER/link/port counters were snapshotted".into());
            Vec::new()
        }
        _ => {
            notes.push(
                "counters not snapshotted: the topology was not read from the live machine".into(),
            );
            Vec::new()
        }
    };
    let before = opts
        .counters_root
        .as_ref()
        .map(|r| counters::snapshot(r, &watch));

    let mut baselines: HashMap<(String, Op, usize), f64> = HashMap::new();
    let mut seed = 0x5eed_u64;
    let blen = buffer_len(&opts.sizes);
    for job in &jobs {
        if interrupted() {
            break;
        }
        let memory = if job.gpu.is_some() {
            MemoryKind::Cuda
        } else {
            MemoryKind::Host
        };
        let plan = cell_plan(memory);
        let gpu_label = job.gpu.as_ref().map(|(_, b)| b.clone());
        let mk =
            |nic: &str, dir, op, size, verdict, reason: String, reg: Vec<RegAttempt>| CellResult {
                gpu: gpu_label.clone(),
                nic: nic.to_string(),
                memory,
                direction: dir,
                op,
                message_bytes: size,
                bytes: 0,
                seconds: 0.0,
                gbytes_per_s: 0.0,
                verified: false,
                verdict,
                expected_label: job.expected_label.clone(),
                reason,
                contradicts: false,
                control: job.control,
                registration: reg,
            };
        let opened: Result<Box<dyn Fabric>, OpenError> = match &job.verbs {
            Some(n) => VerbsFabric::open(&n.rdma, n.port.min(255) as u8, n.rate_gbps)
                .map(|f| Box::new(f) as Box<dyn Fabric>),
            None => OfiFabric::open(&opts.provider, memory).map(|f| Box::new(f) as Box<dyn Fabric>),
        };
        let nic_fallback = match &job.verbs {
            Some(n) => format!("verbs:{}:{} ({})", n.rdma, n.port, n.bdf),
            None => format!("ofi:{}", opts.provider),
        };
        // Providers may have replaced our SIGINT handler while initialising.
        super::install_interrupt_handler();
        let mut fab = match opened {
            Ok(f) => f,
            Err(OpenError::Unavailable(u)) if jobs.len() == 1 || job.verbs.is_none() => {
                return Err(u);
            }
            Err(e) => {
                for &(dir, op) in &plan {
                    for &size in &opts.sizes {
                        results.push(mk(
                            &nic_fallback,
                            dir,
                            op,
                            size,
                            Verdict::NotRun,
                            format!("could not open the fabric: {e}"),
                            Vec::new(),
                        ));
                        progress.0.inc(1);
                    }
                }
                continue;
            }
        };
        let nic = match &job.verbs {
            Some(n) => format!("{} ({})", fab.name(), n.bdf),
            None => fab.name(),
        };
        progress.0.set_message(match &gpu_label {
            Some(g) => format!("{g} ↔ {nic}"),
            None => nic.clone(),
        });
        let line = fab.line_rate_gbytes();
        // Host buffers on the NIC's NUMA node, polling next to it.
        let cpus = job
            .verbs
            .as_ref()
            .and_then(|n| topo?.device(&n.bdf)?.local_cpus.clone());
        let _pin = cpus.map(|c| {
            let (pin, why) = CpuPin::new(&c);
            if let Some(w) = why {
                notes.push(format!("{nic}: {w}"));
            }
            pin
        });

        // Buffers: the host peer (and for host-only jobs, a second host buffer).
        let mut host_a = match HostBuffer::new(blen) {
            Ok(b) => b,
            Err(e) => {
                notes.push(format!("host buffer: {e}"));
                continue;
            }
        };
        notes.extend(host_a.notes());
        let ha = match fab.register(&mut host_a) {
            Ok(r) => r,
            Err(att) => {
                for &(dir, op) in &plan {
                    for &size in &opts.sizes {
                        let why = att
                            .iter()
                            .filter_map(|a| a.detail.clone())
                            .collect::<Vec<_>>()
                            .join("; ");
                        results.push(mk(
                            &nic,
                            dir,
                            op,
                            size,
                            Verdict::RegistrationFailed,
                            format!("host buffer registration failed: {why}"),
                            att.clone(),
                        ));
                        progress.0.inc(1);
                    }
                }
                continue;
            }
        };
        let cuda_dev = job.gpu.as_ref().zip(cuda_handle.as_ref().ok());
        let mut other: Box<dyn Buffer + '_> = match cuda_dev {
            Some(((o, _), c)) => match c.alloc(*o, blen) {
                Ok(b) => Box::new(b),
                Err(e) => {
                    fab.deregister(ha.handle);
                    for &(dir, op) in &plan {
                        for &size in &opts.sizes {
                            results.push(mk(
                                &nic,
                                dir,
                                op,
                                size,
                                Verdict::NotRun,
                                format!("cuMemAlloc failed: {e}"),
                                Vec::new(),
                            ));
                            progress.0.inc(1);
                        }
                    }
                    continue;
                }
            },
            None => match HostBuffer::new(blen) {
                Ok(b) => Box::new(b),
                Err(e) => {
                    notes.push(format!("host buffer: {e}"));
                    fab.deregister(ha.handle);
                    continue;
                }
            },
        };
        let reg = fab.register(other.as_mut());
        let (oh, attempts, method) = match reg {
            Ok(r) => (
                r.handle,
                if memory == MemoryKind::Cuda {
                    r.attempts
                } else {
                    Vec::new()
                },
                r.method,
            ),
            Err(att) => {
                let why = att
                    .iter()
                    .filter_map(|a| a.detail.clone())
                    .collect::<Vec<_>>()
                    .join("; ");
                for &(dir, op) in &plan {
                    for &size in &opts.sizes {
                        let mut r = mk(
                            &nic,
                            dir,
                            op,
                            size,
                            Verdict::RegistrationFailed,
                            format!("no registration method worked: {why}"),
                            att.clone(),
                        );
                        r.contradicts = verdict::contradicts(
                            Verdict::RegistrationFailed,
                            verdict::expectation(job.expected_label.as_deref()),
                        );
                        results.push(r);
                        progress.0.inc(1);
                    }
                }
                fab.deregister(ha.handle);
                continue;
            }
        };
        let device_memory = other.is_device_memory();
        for &(dir, op) in &plan {
            for &size in &opts.sizes {
                if interrupted() {
                    results.push(mk(
                        &nic,
                        dir,
                        op,
                        size,
                        Verdict::NotRun,
                        "interrupted (Ctrl-C)".into(),
                        attempts.clone(),
                    ));
                    continue;
                }
                seed = seed.wrapping_add(1);
                let (src, dst): ((&mut dyn Buffer, usize), (&mut dyn Buffer, usize)) = match dir {
                    Direction::GpuToHost | Direction::HostToHost => {
                        ((other.as_mut(), oh), (&mut host_a, ha.handle))
                    }
                    Direction::HostToGpu => ((&mut host_a, ha.handle), (other.as_mut(), oh)),
                };
                let out = run_cell(fab.as_mut(), op, src, dst, size, window, seed, opts.fault);
                let gbps = if out.seconds > 0.0 {
                    out.bytes as f64 / out.seconds / 1e9
                } else {
                    0.0
                };
                let (v, mut reason) = if let Some(e) = &out.error {
                    (Verdict::TransferFailed, e.clone())
                } else if memory == MemoryKind::Host {
                    let (v, r) = verdict::judge_host(out.verified, gbps, line);
                    if v != Verdict::TransferFailed {
                        baselines.insert((nic_key(&job.verbs, &nic), op, size), gbps);
                    }
                    (v, r)
                } else {
                    verdict::judge_gpu(&CellFacts {
                        verified: out.verified,
                        gbytes_per_s: gbps,
                        baseline_gbytes_per_s: baselines
                            .get(&(nic_key(&job.verbs, &nic), op, size))
                            .copied(),
                        line_rate_gbytes_per_s: line,
                        gdr_evidence: device_memory == Some(true)
                            && matches!(method.as_str(), "dmabuf" | "peer" | "hmem"),
                    })
                };
                if memory == MemoryKind::Cuda {
                    reason = format!("{reason}; registered by {method}");
                }
                let mut r = mk(&nic, dir, op, size, v, reason, attempts.clone());
                r.bytes = out.bytes;
                r.seconds = out.seconds;
                r.gbytes_per_s = gbps;
                r.verified = out.verified;
                r.contradicts =
                    verdict::contradicts(v, verdict::expectation(job.expected_label.as_deref()));
                results.push(r);
                progress.0.inc(1);
            }
        }
        fab.deregister(oh);
        fab.deregister(ha.handle);
        drop(fab);
    }
    progress.0.finish_and_clear();

    if let (Some(b), Some(root)) = (before, &opts.counters_root) {
        let after = counters::snapshot(root, &watch);
        let counter_changes = counters::diff(&b, &after);
        return Ok(finish(
            opts,
            results,
            counter_changes,
            notes,
            started,
            cuda_handle,
        ));
    }
    Ok(finish(
        opts,
        results,
        Vec::new(),
        notes,
        started,
        cuda_handle,
    ))
}

fn nic_key(verbs: &Option<pairs::RdmaNic>, nic: &str) -> String {
    match verbs {
        Some(n) => format!("{}:{}", n.rdma, n.port),
        None => nic.to_string(),
    }
}

fn finish(
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::fabric::Registered;

    /// A fabric that copies with memcpy at post time and completes on the next poll.
    struct MemFabric {
        regs: Vec<(u64, usize)>,
        done: Vec<Completion>,
        fail: bool,
    }

    impl Fabric for MemFabric {
        fn name(&self) -> String {
            "mem".into()
        }
        fn line_rate_gbytes(&self) -> Option<f64> {
            None
        }
        fn max_outstanding(&self) -> usize {
            4
        }
        fn register(&mut self, buf: &mut dyn Buffer) -> Result<Registered, Vec<RegAttempt>> {
            self.regs.push((buf.addr(), buf.len()));
            Ok(Registered {
                handle: self.regs.len() - 1,
                method: "host".into(),
                attempts: vec![],
            })
        }
        fn deregister(&mut self, _: usize) {}
        fn post(&mut self, t: &Transfer) -> Result<Posted, String> {
            let (l, r) = (self.regs[t.local], self.regs[t.remote]);
            let (src, dst) = match t.op {
                Op::Write => (l.0 + t.local_off as u64, r.0 + t.remote_off as u64),
                Op::Read => (r.0 + t.remote_off as u64, l.0 + t.local_off as u64),
            };
            // SAFETY: both ranges lie inside registered host buffers the test owns.
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, t.len) };
            let status = if self.fail {
                Err("simulated error completion".into())
            } else {
                Ok(())
            };
            self.done.push(Completion {
                wr_id: t.wr_id,
                status,
            });
            Ok(Posted::Yes)
        }
        fn poll(&mut self, out: &mut Vec<Completion>) -> Result<(), String> {
            out.append(&mut self.done);
            Ok(())
        }
    }

    fn cell(op: Op, fault: Option<Fault>, fail: bool) -> CellOutcome {
        let mut f = MemFabric {
            regs: vec![],
            done: vec![],
            fail,
        };
        let mut a = HostBuffer::new(1 << 20).unwrap();
        let mut b = HostBuffer::new(1 << 20).unwrap();
        let ha = f.register(&mut a).unwrap().handle;
        let hb = f.register(&mut b).unwrap().handle;
        run_cell(
            &mut f,
            op,
            (&mut a, ha),
            (&mut b, hb),
            65536,
            Duration::from_millis(20),
            42,
            fault,
        )
    }

    #[test]
    fn loop_moves_and_verifies_both_ops() {
        for op in [Op::Write, Op::Read] {
            let o = cell(op, None, false);
            assert!(o.verified, "{:?}", o.error);
            assert!(o.error.is_none());
            assert!(o.bytes >= 65536 && o.bytes.is_multiple_of(65536));
        }
    }

    #[test]
    fn loop_detects_truncation_corruption_and_error_completions() {
        for fault in [Fault::Truncate, Fault::Corrupt] {
            let o = cell(Op::Write, Some(fault), false);
            assert!(!o.verified, "{fault:?} not detected");
            assert!(
                o.error
                    .unwrap()
                    .contains("first wrong byte at offset 32768")
            );
        }
        let o = cell(Op::Read, None, true);
        assert!(!o.verified);
        assert!(o.error.unwrap().contains("simulated error completion"));
    }

    #[test]
    fn plans_cover_both_directions_and_ops() {
        assert_eq!(cell_plan(MemoryKind::Host).len(), 2);
        let p = cell_plan(MemoryKind::Cuda);
        assert!(
            p.contains(&(Direction::GpuToHost, Op::Read))
                && p.contains(&(Direction::HostToGpu, Op::Write))
        );
        assert_eq!(buffer_len(&[65536, 8 << 20]), 32 << 20);
    }
}
