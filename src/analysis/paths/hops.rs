//! The hop walk of a pair's path, written once: [`walk`] visits every hop from the first device
//! to the second in order, and both the worded hop list of `explain`/`matrix --format json` and
//! the allocation-free [`bottleneck`] are folds over it, so they cannot disagree.

use super::{DevIx, Paths};

/// How the path between two devices runs, as the label rules decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Over NVLinks: `count` links, through the NVSwitch fabric when `fabric`.
    NvLink {
        /// Links counted.
        count: u32,
        /// Through the NVSwitch fabric rather than directly.
        fabric: bool,
    },
    /// Over xGMI between two AMD GPUs of one hive: `count` direct links (0: reached over other
    /// GPUs of the hive, or the count is not reported).
    Xgmi {
        /// Direct links counted.
        count: u32,
    },
    /// Two functions of one adapter.
    SameAdapter,
    /// Over PCIe: up to the common ancestor, or through the host bridges with this crossing
    /// between them.
    Pcie(Crossing),
}

/// What lies between two host bridges on a PCIe path that shares no bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crossing {
    /// Nothing worth a hop (same host bridge, or host bridges of one NUMA node).
    Direct,
    /// The SMP interconnect between these NUMA nodes.
    Smp(u32, u32),
    /// NUMA nodes unknown: on-CPU link or SMP interconnect.
    Unknown,
}

/// One hop of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A PCI function; `link_from` is the device whose link above is crossed to reach it
    /// (`None` for the first hop).
    Device {
        /// The device.
        dev: DevIx,
        /// Whose upstream link enters this hop.
        link_from: Option<DevIx>,
    },
    /// The first device's host bridge, entered over `link_from`'s link.
    HostBridge {
        /// Interned host bridge.
        hb: u32,
        /// The topmost device below it on this side.
        link_from: DevIx,
    },
    /// The SMP interconnect between two NUMA nodes.
    Smp(u32, u32),
    /// An interconnect between host bridges whose NUMA nodes are unknown.
    UnknownInterconnect,
    /// The second device's host bridge.
    OtherHostBridge {
        /// Interned host bridge.
        hb: u32,
    },
    /// The NVSwitch fabric, `count` links in.
    NvSwitch {
        /// Links.
        count: u32,
    },
    /// The second GPU, reached over `count` NVLinks.
    NvPeer {
        /// The GPU.
        dev: DevIx,
        /// Links.
        count: u32,
    },
    /// The second GPU, reached over xGMI (`count` direct links; 0 when not direct or not
    /// reported).
    XgmiPeer {
        /// The GPU.
        dev: DevIx,
        /// Links.
        count: u32,
    },
    /// Another function of the first device's adapter.
    SameAdapter {
        /// The other function.
        dev: DevIx,
    },
    /// A hop that is a Data Direct pairing, not a PCIe link: from a NIC function to the DMA
    /// function that carries its traffic, or from that DMA function to the NIC function.
    Paired {
        /// The device reached.
        dev: DevIx,
        /// The device it is paired with (the previous hop).
        with: DevIx,
    },
}

/// The bandwidth figures a walk needs beyond the per-link table: NCCL's per-link NVLink figure
/// and inter-CPU figure, both depending on the NCCL version and the machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// GB/s per NVLink.
    pub nvlink_per_link: f64,
    /// GB/s of the SMP interconnect, when the CPU is known.
    pub inter_cpu: Option<f64>,
    /// GB/s per xGMI link (RCCL's figure for the GPU generation).
    pub xgmi_per_link: f64,
}

/// Visits every hop of the path from `a` to `b` in order. A NIC function with a Data Direct
/// DMA function is left and reached through that DMA function ([`Paths::data_path`]): its
/// traffic takes the DMA function's PCIe path, and the pairing is a hop of its own.
pub fn walk(p: &Paths, a: DevIx, b: DevIx, shape: Shape, mut f: impl FnMut(Step)) {
    f(Step::Device {
        dev: a,
        link_from: None,
    });
    let (da, db) = (p.data_path(a), p.data_path(b));
    if matches!(shape, Shape::NvLink { .. } | Shape::Xgmi { .. }) || (da == a && db == b) {
        walk_between(p, a, b, shape, &mut f);
        return;
    }
    if da != a {
        f(Step::Paired { dev: da, with: a });
    }
    if da != db {
        walk_between(p, da, db, shape, &mut f);
    }
    if db != b {
        f(Step::Paired { dev: b, with: db });
    }
}

/// [`walk`] after its first hop: from `a` (already visited) to `b`.
fn walk_between(p: &Paths, a: DevIx, b: DevIx, shape: Shape, f: &mut impl FnMut(Step)) {
    match shape {
        Shape::NvLink { count, fabric } => {
            if fabric {
                f(Step::NvSwitch { count });
            }
            f(Step::NvPeer { dev: b, count });
        }
        Shape::Xgmi { count } => f(Step::XgmiPeer { dev: b, count }),
        Shape::SameAdapter => f(Step::SameAdapter { dev: b }),
        Shape::Pcie(crossing) => {
            let (ca, cb) = (p.chain(a), p.chain(b));
            match p.meet(a, b) {
                Some(m) => {
                    for i in 1..=m.ia {
                        f(Step::Device {
                            dev: ca[i],
                            link_from: Some(ca[i - 1]),
                        });
                    }
                    for j in (0..m.ib).rev() {
                        f(Step::Device {
                            dev: cb[j],
                            link_from: Some(cb[j]),
                        });
                    }
                }
                None => {
                    for i in 1..ca.len() {
                        f(Step::Device {
                            dev: ca[i],
                            link_from: Some(ca[i - 1]),
                        });
                    }
                    let (hba, hbb) = (p.host_bridge(a), p.host_bridge(b));
                    f(Step::HostBridge {
                        hb: hba,
                        link_from: p.top(a),
                    });
                    if hba != hbb {
                        match crossing {
                            Crossing::Smp(x, y) => f(Step::Smp(x, y)),
                            Crossing::Unknown => f(Step::UnknownInterconnect),
                            Crossing::Direct => {}
                        }
                        f(Step::OtherHostBridge { hb: hbb });
                    }
                    for j in (0..cb.len()).rev() {
                        f(Step::Device {
                            dev: cb[j],
                            link_from: Some(cb[j]),
                        });
                    }
                }
            }
        }
    }
}

/// Bandwidth of the link a hop is entered over, in GB/s (NCCL's model figures); `None` when
/// unknown or when the hop is not entered over a link.
pub fn step_gbytes(p: &Paths, step: Step, rates: &Rates) -> Option<f64> {
    match step {
        Step::Device {
            link_from: Some(c), ..
        }
        | Step::HostBridge { link_from: c, .. } => p.edge(c).gbytes_per_s,
        Step::Smp(..) => rates.inter_cpu,
        Step::NvSwitch { count } | Step::NvPeer { count, .. } => {
            Some(rates.nvlink_per_link * count as f64)
        }
        Step::XgmiPeer { count, .. } if count > 0 => Some(rates.xgmi_per_link * count as f64),
        _ => None,
    }
}

/// The bandwidth of a path's bottleneck (the lowest [`step_gbytes`] of [`walk`]'s hops, as the
/// worded classification finds it with its hop index), from the chains' running minima
/// ([`Paths::chain_min`]) instead of a walk over every hop: the same links in the same order
/// (up `a`'s chain, the SMP interconnect, down `b`'s chain; a Data Direct NIC's DMA function
/// in its place), so the same value, at a cost that does not grow with the path. What every
/// pair of a matrix needs (`matrix --format json` writes one per pair).
pub fn bottleneck_gbytes(
    p: &Paths,
    a: DevIx,
    b: DevIx,
    shape: Shape,
    rates: &Rates,
) -> Option<f64> {
    let (da, db) = (p.data_path(a), p.data_path(b));
    let direct = matches!(shape, Shape::NvLink { .. } | Shape::Xgmi { .. }) || (da == a && db == b);
    let (a, b) = if direct { (a, b) } else { (da, db) };
    if !direct && a == b {
        return None;
    }
    match shape {
        Shape::NvLink { count, .. } => Some(rates.nvlink_per_link * count as f64),
        Shape::Xgmi { count } => (count > 0).then_some(rates.xgmi_per_link * count as f64),
        Shape::SameAdapter => None,
        Shape::Pcie(crossing) => match p.meet(a, b) {
            Some(m) => super::lower(p.chain_min(a, m.ia), p.chain_min(b, m.ib)),
            None => {
                let (la, lb) = (p.chain(a).len(), p.chain(b).len());
                let up = if la == 0 {
                    p.edge(a).gbytes_per_s
                } else {
                    p.chain_min(a, la)
                };
                let smp = match crossing {
                    Crossing::Smp(..) if p.host_bridge(a) != p.host_bridge(b) => rates.inter_cpu,
                    _ => None,
                };
                super::lower(super::lower(up, smp), p.chain_min(b, lb))
            }
        },
    }
}
