//! What the probe will run, decided before any fabric is opened: the jobs (with verbs, one
//! host baseline per RDMA NIC and one job per chosen GPU–NIC pair from [`pairs::select`]; with
//! libfabric, one baseline and one job per CUDA GPU), the cells of a job (direction × op; the
//! message sizes come from the options), the buffer size, the time window of a cell, and the
//! sysfs files to snapshot around the run.
//!
//! A GPU node without a usable RDMA fabric (no RDMA device, no kernel RDMA, libibverbs absent)
//! still gets its GPUs measured when `--memory cuda` finds a CUDA driver: the copy probes need no
//! NIC (docs/probe.md §9). Its NIC jobs are then planned [`Job::blocked`], and their cells are
//! reported `not_run` with the fabric's reason.

use super::Unavailable;
use super::counters;
use super::memory::CudaGpus;
use super::pairs::{self, RdmaNic};
use super::run::ProbeOptions;
use crate::analysis::classify::Label;
use crate::analysis::probe_report::{Direction, FabricKind, GpuRef, MemoryKind, NicRef, Op};
use crate::model::Topology;
use std::time::Duration;

/// One unit of work: a fabric to open, and the GPU to test on it (none: the host baseline).
#[derive(Debug, Clone)]
pub struct Job {
    /// For verbs: the RDMA device, port, rate and PCI address (from the topology).
    pub verbs: Option<RdmaNic>,
    /// The GPU: its CUDA ordinal (to allocate on) and how the report names it.
    pub gpu: Option<(usize, GpuRef)>,
    /// The classifier's label for the pair, which the verdict is compared with.
    pub expected_label: Option<Label>,
    /// Whether this is the control (worse) pair of its GPU.
    pub control: bool,
    /// Why this job cannot run (its fabric is unavailable on this node): its cells are reported
    /// `not_run` with this reason, and nothing is opened for it. `None`: it runs.
    pub blocked: Option<String>,
    /// The memory of a GPU job (`cuda`, or `hip` on AMD GPUs); host for baselines.
    pub device_memory: MemoryKind,
}

impl Job {
    /// The memory under test: the GPU runtime's (CUDA or HIP) for GPU jobs, host for
    /// baselines.
    pub fn memory(&self) -> MemoryKind {
        if self.gpu.is_some() {
            self.device_memory
        } else {
            MemoryKind::Host
        }
    }

    /// The job's cells, in order.
    pub fn cells(&self) -> Vec<(Direction, Op)> {
        cell_plan(self.memory())
    }

    /// The NIC as known before its fabric is opened: the verbs device, port and PCI address
    /// (none for a blocked GPU job on a node without an RDMA NIC), or the libfabric provider
    /// (its domain is known only once opened).
    pub fn planned_nic(&self, fabric: FabricKind, provider: &str) -> NicRef {
        match (&self.verbs, fabric) {
            (Some(n), _) => NicRef::verbs(&n.rdma, n.port, Some(n.bdf)),
            (None, FabricKind::Verbs) => NicRef::no_device(FabricKind::Verbs),
            (None, FabricKind::Ofi) => NicRef::ofi(provider, None),
        }
    }

    /// The NIC as the opened fabric names it, with the PCI address from the topology.
    pub fn opened_nic(&self, mut opened: NicRef) -> NicRef {
        if let Some(n) = &self.verbs {
            opened.bdf = Some(n.bdf);
        }
        opened
    }
}

/// Cells of one NIC/GPU combination to run, in order.
pub fn cell_plan(memory: MemoryKind) -> Vec<(Direction, Op)> {
    match memory {
        MemoryKind::Host => vec![
            (Direction::HostToHost, Op::Write),
            (Direction::HostToHost, Op::Read),
        ],
        MemoryKind::Cuda | MemoryKind::Hip => vec![
            (Direction::GpuToHost, Op::Write),
            (Direction::GpuToHost, Op::Read),
            (Direction::HostToGpu, Op::Write),
            (Direction::HostToGpu, Op::Read),
        ],
    }
}

/// Buffer size per side: room for `depth` slots of the largest message as long as that stays
/// within 32 MiB, and never less than 4 slots of it or 1 MiB (so the default sizes and depth,
/// 64 KiB and 8 MiB at 16, keep 32 MiB: 16 slots of 64 KiB, 4 of 8 MiB).
pub fn buffer_len(sizes: &[usize], depth: usize) -> usize {
    let largest = sizes.iter().copied().max().unwrap_or(1 << 20);
    largest
        .saturating_mul(depth)
        .min(32 << 20)
        .max(largest.saturating_mul(4))
        .max(1 << 20)
}

/// A host-memory baseline on a verbs NIC (`None`: the libfabric provider's).
fn host_job(verbs: Option<RdmaNic>) -> Job {
    Job {
        verbs,
        gpu: None,
        expected_label: None,
        control: false,
        blocked: None,
        device_memory: MemoryKind::Host,
    }
}

/// GPU memory (`memory`: CUDA or HIP) of device `o` on the libfabric provider's NIC (or,
/// blocked, on none).
fn cuda_job(c: &dyn CudaGpus, o: usize, memory: MemoryKind) -> Job {
    let bdf = c.pci_bus_id(o).ok().and_then(|s| s.parse().ok());
    Job {
        gpu: Some((o, GpuRef { bdf, cuda: Some(o) })),
        device_memory: memory,
        ..host_job(None)
    }
}

/// A chosen GPU–NIC pair, its GPU being device `o` of the runtime of `memory`.
fn pair_job(p: pairs::Pair, o: usize, memory: MemoryKind) -> Job {
    Job {
        verbs: Some(p.nic),
        gpu: Some((
            o,
            GpuRef {
                bdf: Some(p.gpu),
                cuda: Some(o),
            },
        )),
        expected_label: Some(p.expected_label),
        control: p.control,
        blocked: None,
        device_memory: memory,
    }
}

/// The chosen pairs' jobs, for the pairs whose GPU CUDA sees (the others are noted) and whose
/// NIC `keep` accepts.
fn pair_jobs(
    t: &Topology,
    opts: &ProbeOptions,
    c: &dyn CudaGpus,
    keep: impl Fn(&RdmaNic) -> bool,
    notes: &mut Vec<String>,
) -> Vec<Job> {
    let mut out = Vec::new();
    for p in pairs::select(t, opts.pairs)
        .into_iter()
        .filter(|p| keep(&p.nic))
    {
        match c.ordinal_of(&p.gpu.to_string()) {
            Some(o) => out.push(pair_job(p, o, opts.memory)),
            None => notes.push(format!(
                "GPU {} is not visible to {}; its pairs were not run",
                p.gpu,
                c.name()
            )),
        }
    }
    out
}

/// The jobs to run. `devices`: the RDMA devices libibverbs lists, or why it lists none (ignored
/// with libfabric); `cuda`: the CUDA driver, or why it is not usable. `Err` when nothing can
/// run: verbs lists no device the topology knows as an RDMA NIC and there are no GPUs to
/// measure instead (host memory asked for, or no CUDA driver). With GPU memory asked for and
/// CUDA usable, such a node gets its NIC jobs planned [`Job::blocked`] (see the module doc).
/// GPUs CUDA does not see are noted.
pub fn jobs(
    topo: Option<&Topology>,
    opts: &ProbeOptions,
    devices: &Result<Vec<String>, Unavailable>,
    cuda: Result<&dyn CudaGpus, &str>,
    notes: &mut Vec<String>,
) -> Result<Vec<Job>, Unavailable> {
    let mut jobs = Vec::new();
    match opts.fabric {
        FabricKind::Verbs => {
            let Some(t) = topo else {
                return Err(Unavailable::device(
                    "no topology to choose GPU–NIC pairs from",
                ));
            };
            let usable = devices.clone().and_then(|devs| {
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
                Ok((devs, nics))
            });
            let (devs, nics) = match usable {
                Ok(x) => x,
                Err(u) => return blocked_jobs(t, opts, u, cuda, notes),
            };
            // Host baseline once per NIC.
            jobs.extend(nics.into_iter().map(|n| host_job(Some(n))));
            if opts.memory.is_device() {
                let c = cuda.map_err(Unavailable::device)?;
                jobs.extend(pair_jobs(t, opts, c, |n| devs.contains(&n.rdma), notes));
            }
        }
        FabricKind::Ofi => {
            jobs.push(host_job(None));
            if opts.memory.is_device()
                && let Ok(c) = cuda
            {
                jobs.extend((0..c.count()).map(|o| cuda_job(c, o, opts.memory)));
            }
        }
    }
    Ok(jobs)
}

/// The jobs of a node whose verbs fabric cannot run (`why`): with GPU memory asked for and a
/// usable CUDA driver, every job the topology would have had — each RDMA NIC's host baseline and
/// each chosen GPU–NIC pair, or, with no RDMA NIC at all, one job per CUDA GPU — blocked with
/// `why`, so the report lists their cells `not_run` and the CUDA probes still run; otherwise
/// `Err(why)`, as nothing could run.
fn blocked_jobs(
    t: &Topology,
    opts: &ProbeOptions,
    why: Unavailable,
    cuda: Result<&dyn CudaGpus, &str>,
    notes: &mut Vec<String>,
) -> Result<Vec<Job>, Unavailable> {
    let c = match cuda {
        Ok(c) if opts.memory == MemoryKind::Cuda => c,
        _ => return Err(why),
    };
    notes.push(format!(
        "no GPU–NIC cell could run: {why}; the CUDA probes need no NIC and ran"
    ));
    let mut jobs: Vec<Job> = pairs::rdma_nics(t)
        .into_iter()
        .map(|n| host_job(Some(n)))
        .collect();
    jobs.extend(pair_jobs(t, opts, c, |_| true, notes));
    if jobs.is_empty() {
        jobs.extend((0..c.count()).map(|o| cuda_job(c, o, opts.memory)));
    }
    for j in &mut jobs {
        j.blocked = Some(why.message.clone());
    }
    Ok(jobs)
}

/// The timed window of each cell, and the number of cells: 80% of the run's duration shared
/// by the cells (the CUDA copy probes get the rest), each cell's warm-up (a fifth of the
/// window) and fill/verify overhead allowed for, clamped to 0.1–3 s.
pub fn cell_window(jobs: &[Job], opts: &ProbeOptions) -> (Duration, usize) {
    let total_cells: usize = jobs
        .iter()
        .filter(|j| j.blocked.is_none())
        .map(|j| j.cells().len() * opts.sizes.len())
        .sum();
    let cell_budget = opts.duration.mul_f64(0.8);
    let window = (cell_budget / total_cells.max(1) as u32)
        .mul_f64(0.7)
        .clamp(Duration::from_millis(100), Duration::from_secs(3));
    (window, total_cells)
}

/// The sysfs files to snapshot before and after the run: AER and link files of every GPU and
/// NIC of a verbs job (and their ancestors) and their RDMA ports. None for libfabric (no PCI
/// device is on the path) or a topology not read from the live machine; the note says why.
pub fn counter_watch(
    topo: Option<&Topology>,
    opts: &ProbeOptions,
    jobs: &[Job],
    notes: &mut Vec<String>,
) -> Vec<String> {
    match (topo, &opts.counters_root, opts.fabric) {
        (Some(t), Some(_), FabricKind::Verbs) => {
            let run = || jobs.iter().filter(|j| j.blocked.is_none());
            let mut devs: Vec<_> = run()
                .filter_map(|j| j.verbs.as_ref().map(|n| n.bdf))
                .collect();
            devs.extend(run().filter_map(|j| j.gpu.as_ref()?.1.bdf));
            let rdma: Vec<_> = run()
                .filter_map(|j| j.verbs.as_ref().map(|n| (n.rdma.clone(), n.port)))
                .collect();
            counters::files_for(&crate::analysis::paths::Paths::new(t), &devs, &rdma)
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_both_directions_and_ops() {
        assert_eq!(cell_plan(MemoryKind::Host).len(), 2);
        let p = cell_plan(MemoryKind::Cuda);
        assert!(
            p.contains(&(Direction::GpuToHost, Op::Read))
                && p.contains(&(Direction::HostToGpu, Op::Write))
        );
        assert_eq!(buffer_len(&[65536, 8 << 20], 16), 32 << 20);
        assert_eq!(buffer_len(&[1 << 20], 16), 16 << 20);
        assert_eq!(buffer_len(&[65536], 64), 4 << 20);
        assert_eq!(buffer_len(&[65536], 1), 1 << 20);
        assert_eq!(buffer_len(&[64 << 20], 1), 256 << 20);
    }

    #[test]
    fn nics_are_named_before_and_after_opening() {
        let nic = RdmaNic {
            bdf: "0000:17:00.0".parse().unwrap(),
            rdma: "mlx5_0".into(),
            port: 1,
            rate_gbps: Some(400.0),
        };
        let job = host_job(Some(nic));
        let (v, o) = (FabricKind::Verbs, FabricKind::Ofi);
        assert_eq!(
            job.planned_nic(v, "tcp").to_string(),
            "verbs:mlx5_0:1 (0000:17:00.0)"
        );
        assert_eq!(
            job.opened_nic(NicRef::verbs("mlx5_0", 1, None)),
            job.planned_nic(v, "tcp")
        );
        let ofi = Job { verbs: None, ..job };
        assert_eq!(ofi.planned_nic(o, "tcp").to_string(), "ofi:tcp");
        assert_eq!(
            ofi.opened_nic(NicRef::ofi("tcp", Some("lo"))).to_string(),
            "ofi:tcp:lo"
        );
        assert_eq!(
            ofi.planned_nic(v, "tcp").to_string(),
            "verbs (no RDMA device)"
        );
    }

    /// CUDA as the plan sees it: devices at fixed addresses.
    struct FakeCuda(Vec<String>);

    impl CudaGpus for FakeCuda {
        fn count(&self) -> usize {
            self.0.len()
        }
        fn pci_bus_id(&self, ordinal: usize) -> Result<String, String> {
            self.0
                .get(ordinal)
                .cloned()
                .ok_or_else(|| "no such device".into())
        }
    }

    fn options(memory: MemoryKind) -> ProbeOptions {
        ProbeOptions {
            fabric: FabricKind::Verbs,
            provider: "tcp".into(),
            memory,
            pairs: pairs::PairMode::Best,
            duration: Duration::from_secs(10),
            sizes: vec![65536],
            depth: 16,
            counters_root: None,
            progress: false,
            fault: None,
        }
    }

    fn load(path: &str) -> Topology {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        crate::sources::load(Some(&p), &Default::default()).unwrap()
    }

    /// The real H200 VM (issue 29): libibverbs lists no RDMA device. With GPU memory asked for
    /// and a CUDA driver, the plan keeps the GPU — one job, blocked with the fabric's reason,
    /// whose cells the report lists `not_run` — so the run goes on to the CUDA probes; it used
    /// to stop with exit 3 before measuring anything. Without CUDA, or for host memory, nothing
    /// can run and the fabric's reason is the error, as before.
    #[test]
    fn a_gpu_node_without_rdma_keeps_its_gpus() {
        let t = load("fixtures/real/h200-vm.tar.gz");
        let none = Err(Unavailable::device(
            "libibverbs lists no RDMA device (is the NIC driver, e.g. mlx5_ib, loaded?)",
        ));
        let cuda = FakeCuda(vec!["0000:00:06.0".into()]);
        let mut notes = Vec::new();
        let opts = options(MemoryKind::Cuda);
        let jobs = jobs(Some(&t), &opts, &none, Ok(&cuda), &mut notes).unwrap();
        assert_eq!(jobs.len(), 1);
        let j = &jobs[0];
        assert_eq!(
            j.gpu.as_ref().unwrap().1.bdf,
            Some("0000:00:06.0".parse().unwrap())
        );
        assert!(j.blocked.as_deref().unwrap().contains("no RDMA device"));
        assert_eq!(
            j.planned_nic(FabricKind::Verbs, "tcp"),
            NicRef::no_device(FabricKind::Verbs)
        );
        assert!(
            notes[0].contains("the CUDA probes need no NIC"),
            "{notes:?}"
        );
        assert_eq!(cell_window(&jobs, &opts).1, 0, "blocked cells take no time");

        let e = jobs_err(&t, &options(MemoryKind::Host), &none, Ok(&cuda));
        assert!(e.contains("no RDMA device"), "{e}");
        let e = jobs_err(&t, &opts, &none, Err("libcuda.so.1 could not be loaded"));
        assert!(e.contains("no RDMA device"), "{e}");
    }

    fn jobs_err(
        t: &Topology,
        opts: &ProbeOptions,
        devices: &Result<Vec<String>, Unavailable>,
        cuda: Result<&dyn CudaGpus, &str>,
    ) -> String {
        jobs(Some(t), opts, devices, cuda, &mut Vec::new())
            .map(|_| ())
            .unwrap_err()
            .message
    }

    /// On a node with RDMA NICs whose verbs devices are missing (driver not loaded), every
    /// baseline and chosen pair is kept and blocked, named by the topology's NIC.
    #[test]
    fn rdma_nics_without_verbs_devices_are_blocked_not_dropped() {
        let t = load("fixtures/synth/hgx-h100.tar.gz");
        let cuda = FakeCuda(
            t.of_kind(crate::model::DeviceKind::Gpu)
                .map(|d| d.bdf.to_string())
                .collect(),
        );
        let none = Err(Unavailable::device("the kernel has no RDMA support"));
        let opts = options(MemoryKind::Cuda);
        let jobs = jobs(Some(&t), &opts, &none, Ok(&cuda), &mut Vec::new()).unwrap();
        let nics = pairs::rdma_nics(&t).len();
        let chosen = pairs::select(&t, opts.pairs).len();
        assert!(nics > 0 && chosen > 0);
        assert_eq!(jobs.len(), nics + chosen);
        assert!(
            jobs.iter()
                .all(|j| j.blocked.is_some() && j.verbs.is_some())
        );
        // With the devices listed, nothing is blocked.
        let devs = Ok(pairs::rdma_nics(&t).into_iter().map(|n| n.rdma).collect());
        let jobs2 = jobs_ok(&t, &opts, &devs, &cuda);
        assert!(jobs2.iter().all(|j| j.blocked.is_none()));
        assert_eq!(jobs2.len(), nics + chosen);
    }

    fn jobs_ok(
        t: &Topology,
        opts: &ProbeOptions,
        devices: &Result<Vec<String>, Unavailable>,
        cuda: &FakeCuda,
    ) -> Vec<Job> {
        jobs(Some(t), opts, devices, Ok(cuda), &mut Vec::new()).unwrap()
    }
}
