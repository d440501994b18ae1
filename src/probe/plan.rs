//! What the probe will run, decided before any fabric is opened: the jobs (with verbs, one
//! host baseline per RDMA NIC and one job per chosen GPU–NIC pair from [`pairs::select`]; with
//! libfabric, one baseline and one job per CUDA GPU), the cells of a job (direction × op; the
//! message sizes come from the options), the buffer size, the time window of a cell, and the
//! sysfs files to snapshot around the run.

use super::Unavailable;
use super::counters;
use super::fabric::verbs;
use super::memory::GpuRuntime;
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
    /// The memory of a GPU job (`cuda` or `hip`); host for baselines.
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

    /// The NIC as known before its fabric is opened: the verbs device, port and PCI address,
    /// or the libfabric provider (its domain is known only once opened).
    pub fn planned_nic(&self, provider: &str) -> NicRef {
        match &self.verbs {
            Some(n) => NicRef::verbs(&n.rdma, n.port, Some(n.bdf)),
            None => NicRef::ofi(provider, None),
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

/// The jobs to run. `Err` when verbs lists no device the topology knows as an RDMA NIC, or
/// GPU memory is asked for without a usable GPU runtime (`gpu`: CUDA's driver, or HIP with
/// `--memory hip`); GPUs the runtime does not see are noted.
pub fn jobs(
    topo: Option<&Topology>,
    opts: &ProbeOptions,
    cuda: &Result<&dyn GpuRuntime, String>,
    notes: &mut Vec<String>,
) -> Result<Vec<Job>, Unavailable> {
    let baseline = |verbs: Option<RdmaNic>| Job {
        verbs,
        gpu: None,
        expected_label: None,
        control: false,
        device_memory: MemoryKind::Host,
    };
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
            jobs.extend(nics.into_iter().map(|n| baseline(Some(n))));
            if opts.memory.is_device() {
                let c = cuda.as_ref().map_err(|e| Unavailable::device(e))?;
                for p in pairs::select(t, opts.pairs)
                    .into_iter()
                    .filter(|p| devs.contains(&p.nic.rdma))
                {
                    match c.ordinal_of(&p.gpu.to_string()) {
                        Some(o) => jobs.push(Job {
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
                            device_memory: opts.memory,
                        }),
                        None => notes.push(format!(
                            "GPU {} is not visible to {}; its pairs were not run",
                            p.gpu,
                            c.name()
                        )),
                    }
                }
            }
        }
        FabricKind::Ofi => {
            jobs.push(baseline(None));
            if opts.memory.is_device()
                && let Ok(c) = cuda
            {
                for o in 0..c.count() {
                    let bdf = c.pci_bus_id(o).ok().and_then(|s| s.parse().ok());
                    jobs.push(Job {
                        gpu: Some((o, GpuRef { bdf, cuda: Some(o) })),
                        device_memory: opts.memory,
                        ..baseline(None)
                    });
                }
            }
        }
    }
    Ok(jobs)
}

/// The timed window of each cell, and the number of cells: 80% of the run's duration shared
/// by the cells (the CUDA copy probes get the rest), each cell's warm-up (a fifth of the
/// window) and fill/verify overhead allowed for, clamped to 0.1–3 s.
pub fn cell_window(jobs: &[Job], opts: &ProbeOptions) -> (Duration, usize) {
    let total_cells: usize = jobs
        .iter()
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
            let mut devs: Vec<_> = jobs
                .iter()
                .filter_map(|j| j.verbs.as_ref().map(|n| n.bdf))
                .collect();
            devs.extend(jobs.iter().filter_map(|j| j.gpu.as_ref()?.1.bdf));
            let rdma: Vec<_> = jobs
                .iter()
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
        let job = Job {
            verbs: Some(nic),
            gpu: None,
            expected_label: None,
            control: false,
            device_memory: MemoryKind::Host,
        };
        assert_eq!(
            job.planned_nic("tcp").to_string(),
            "verbs:mlx5_0:1 (0000:17:00.0)"
        );
        assert_eq!(
            job.opened_nic(NicRef::verbs("mlx5_0", 1, None)),
            job.planned_nic("tcp")
        );
        let ofi = Job { verbs: None, ..job };
        assert_eq!(ofi.planned_nic("tcp").to_string(), "ofi:tcp");
        assert_eq!(
            ofi.opened_nic(NicRef::ofi("tcp", Some("lo"))).to_string(),
            "ofi:tcp:lo"
        );
    }
}
