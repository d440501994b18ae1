//! The one rule that says whether a PCIe link is healthy: **a link is degraded only when it
//! runs below what both of its ends support.** The tree's `DOWN` marks, the DOT and picture
//! colours, the classifier's hop notes and the audit's `link-degraded` check all read it.
//!
//! Data: the two descriptions the kernel gives of one link, the device's own attributes
//! (`current_link_speed`/`current_link_width`/`max_link_speed`/`max_link_width`, or LNKSTA and
//! LNKCAP of its config space: the upstream end) and those of the root or switch downstream
//! port above it (the same files on the port: the downstream end). The negotiated state is the
//! device's reading, else the port's (both read the same LNKSTA of one link); each end's
//! capability is its own `max_link_*`. A Gen4 NVMe drive in a Gen5 slot at Gen4, or a Gen2 BMC
//! bridge under a Gen3 root port at Gen2, runs at what both ends support: healthy.

use crate::model::{DeviceKind, LinkInfo, linkfmt};

/// Tolerance for comparing link rates read as text (`16.0 GT/s`).
const GTS_EPS: f64 = 0.01;

/// What one link's state says, by the rule in the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LinkHealth {
    /// The device has no link of its own: a root-complex integrated endpoint, an SR-IOV
    /// virtual function (it uses its physical function's link), a link inside a chip (switch
    /// downstream port to upstream port, root port into its root complex), or a function
    /// directly on a host bridge.
    #[default]
    NoLink,
    /// The negotiated state or the capability of one end is not known: nothing is claimed.
    Unknown,
    /// Trained at the capability both ends share.
    Full,
    /// The link is down: negotiated width 0 (an empty slot, or a device that fell off its
    /// link). Known, not unknown.
    Down,
    /// Trained below the capability both ends share: `(negotiated, shared capability)` for
    /// the width and for the speed in GT/s, each `None` where that one is fine.
    Degraded {
        /// Lanes negotiated and lanes both ends support, when fewer were negotiated.
        width: Option<(u32, u32)>,
        /// GT/s negotiated and GT/s both ends support, when slower (never for a GPU, see
        /// [`LinkHealth::IdleSpeed`]).
        speed: Option<(f64, f64)>,
    },
    /// A GPU's link at full width but below the speed both ends support: GPUs lower their
    /// link speed when idle by design (NVIDIA and AMD power management), so this is not a
    /// fault until it stays low under load (`peerpath probe` measures that).
    IdleSpeed {
        /// GT/s negotiated and GT/s both ends support.
        speed: (f64, f64),
    },
}

impl LinkHealth {
    /// Down or degraded: the marks a reader must see (`DOWN`, red).
    pub fn is_fault(&self) -> bool {
        matches!(self, LinkHealth::Down | LinkHealth::Degraded { .. })
    }

    /// The one spelling of the verdict next to a link's text: `DOWN: x8 of x16, Gen3 of Gen5`
    /// for a degraded link, `idle: Gen1 of Gen5` for a GPU's idle speed, `None` otherwise (a
    /// link that is down says so in its own text, [`crate::model::linkfmt::link`]).
    pub fn mark(&self) -> Option<String> {
        match *self {
            LinkHealth::Degraded { width, speed } => {
                Some(format!("DOWN: {}", linkfmt::marks(width, speed)))
            }
            LinkHealth::IdleSpeed { speed } => {
                Some(format!("idle: {}", linkfmt::marks(None, Some(speed))))
            }
            _ => None,
        }
    }

    /// The link's text with its mark: `32.0 GT/s x8 (DOWN: x8 of x16)`, `link down, max 32.0
    /// GT/s x16`, `16.0 GT/s x4`.
    pub fn text(&self, l: &LinkInfo) -> String {
        match self.mark() {
            Some(m) => format!("{} ({m})", linkfmt::link(l)),
            None => linkfmt::link(l),
        }
    }
}

/// The capability both ends share: the smaller of the two when both are known, else unknown.
fn shared<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y < x { y } else { x }),
        _ => None,
    }
}

/// Judges one link by the rule in the module doc. `own` is the device's own link attributes
/// (its upstream end), `port` the attributes of the root or downstream port above it (`None`
/// when the device hangs under no port); `kind` is the device's kind (a GPU's speed below
/// capability is [`LinkHealth::IdleSpeed`]).
pub fn judge(kind: DeviceKind, own: Option<&LinkInfo>, port: Option<&LinkInfo>) -> LinkHealth {
    let (o, p) = (
        own.copied().unwrap_or_default(),
        port.copied().unwrap_or_default(),
    );
    if !o.any() && !p.any() {
        return LinkHealth::NoLink;
    }
    let cur_w = o.current_width.or(p.current_width);
    let cur_s = o.current_gts.or(p.current_gts);
    if cur_w == Some(0) {
        return LinkHealth::Down;
    }
    let cap_w = shared(o.max_width, p.max_width);
    let cap_s = shared(o.max_gts, p.max_gts);
    // With one end's capability unknown, a link at the other end's capability is still full:
    // the shared capability is never above either end's (a text that printed only the device,
    // not its port).
    let one_w = o.max_width.or(p.max_width);
    let one_s = o.max_gts.or(p.max_gts);
    let width = match (cur_w, cap_w, one_w) {
        (Some(c), Some(m), _) if c < m => Some((c, m)),
        (Some(_), Some(_), _) => None,
        (Some(c), None, Some(m)) if c >= m => None,
        _ => return LinkHealth::Unknown,
    };
    let speed = match (cur_s, cap_s, one_s) {
        (Some(c), Some(m), _) if c + GTS_EPS < m => Some((c, m)),
        (Some(_), Some(_), _) => None,
        (Some(c), None, Some(m)) if c + GTS_EPS >= m => None,
        // Below the one known end: a GPU's idle power saving or its partner's limit, neither
        // a fault; for any other device the partner decides.
        (Some(c), None, Some(m)) if kind == DeviceKind::Gpu && width.is_none() => {
            return LinkHealth::IdleSpeed { speed: (c, m) };
        }
        _ if width.is_some() => None,
        _ => return LinkHealth::Unknown,
    };
    match (width, speed) {
        (None, None) => LinkHealth::Full,
        (None, Some(s)) if kind == DeviceKind::Gpu => LinkHealth::IdleSpeed { speed: s },
        (w, s) => LinkHealth::Degraded {
            width: w,
            speed: if kind == DeviceKind::Gpu { None } else { s },
        },
    }
}

/// Judges the link below a port that has no device under it: width 0 is a link that is down
/// (the empty slot); a link that is up with nothing visible below is [`LinkHealth::Unknown`].
pub fn judge_empty_port(port: Option<&LinkInfo>) -> LinkHealth {
    match port {
        Some(l) if l.current_width == Some(0) => LinkHealth::Down,
        Some(l) if l.any() => LinkHealth::Unknown,
        _ => LinkHealth::NoLink,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(cur: (f64, u32), max: (f64, u32)) -> LinkInfo {
        LinkInfo {
            current_gts: Some(cur.0),
            current_width: Some(cur.1),
            max_gts: Some(max.0),
            max_width: Some(max.1),
        }
    }

    #[test]
    fn below_what_one_end_supports_is_healthy() {
        // Gen4 x4 NVMe in a Gen5 x4 slot, running Gen4: the port reads Gen4 of Gen5.
        let nvme = l((16.0, 4), (16.0, 4));
        let port = l((16.0, 4), (32.0, 4));
        assert_eq!(
            judge(DeviceKind::Nvme, Some(&nvme), Some(&port)),
            LinkHealth::Full
        );
        // Gen2 x1 BMC bridge under a Gen3 x1 root port.
        let bmc = l((5.0, 1), (5.0, 1));
        let rp = l((5.0, 1), (8.0, 1));
        assert_eq!(
            judge(DeviceKind::Bridge, Some(&bmc), Some(&rp)),
            LinkHealth::Full
        );
    }

    #[test]
    fn below_what_both_support_is_degraded() {
        let gpu = l((32.0, 8), (32.0, 16));
        let dsp = l((32.0, 8), (32.0, 16));
        assert_eq!(
            judge(DeviceKind::Gpu, Some(&gpu), Some(&dsp)),
            LinkHealth::Degraded {
                width: Some((8, 16)),
                speed: None
            }
        );
        let nic = l((16.0, 16), (32.0, 16));
        assert_eq!(
            judge(DeviceKind::Nic, Some(&nic), Some(&dsp)),
            LinkHealth::Degraded {
                width: None,
                speed: Some((16.0, 32.0))
            }
        );
        assert!(judge(DeviceKind::Nic, Some(&nic), Some(&dsp)).is_fault());
    }

    #[test]
    fn idle_gpu_speed_is_not_a_fault() {
        let gpu = l((2.5, 16), (32.0, 16));
        let dsp = l((2.5, 16), (32.0, 16));
        let h = judge(DeviceKind::Gpu, Some(&gpu), Some(&dsp));
        assert_eq!(h, LinkHealth::IdleSpeed { speed: (2.5, 32.0) });
        assert!(!h.is_fault());
    }

    #[test]
    fn one_end_unknown_claims_only_what_one_end_decides() {
        let nic = l((16.0, 8), (32.0, 16));
        assert_eq!(
            judge(DeviceKind::Nic, Some(&nic), None),
            LinkHealth::Unknown
        );
        assert_eq!(judge(DeviceKind::Nic, None, None), LinkHealth::NoLink);
        // At one end's capability the link is full whatever the other end supports; a GPU
        // below its own speed at full width is idle (or partner-limited), never a fault.
        let full = l((32.0, 16), (32.0, 16));
        assert_eq!(judge(DeviceKind::Nic, Some(&full), None), LinkHealth::Full);
        let idle = l((2.5, 16), (16.0, 16));
        assert_eq!(
            judge(DeviceKind::Gpu, Some(&idle), None),
            LinkHealth::IdleSpeed { speed: (2.5, 16.0) }
        );
        let slow_nic = l((16.0, 16), (32.0, 16));
        assert_eq!(
            judge(DeviceKind::Nic, Some(&slow_nic), None),
            LinkHealth::Unknown
        );
    }

    #[test]
    fn width_zero_is_down_and_empty_ports() {
        let down = LinkInfo {
            current_gts: None,
            current_width: Some(0),
            max_gts: Some(32.0),
            max_width: Some(16),
        };
        assert_eq!(judge_empty_port(Some(&down)), LinkHealth::Down);
        assert_eq!(judge(DeviceKind::Nic, None, Some(&down)), LinkHealth::Down);
        assert_eq!(judge_empty_port(None), LinkHealth::NoLink);
    }
}
