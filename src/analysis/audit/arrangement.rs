//! Whether another arrangement of this node's own adapters would give a GPU a NIC within
//! PXB: the rule that tells a **misplaced** adapter (fixable here: move a card) from a
//! **design** limit (no slot does better: no PCIe switch above the GPU, none of its switch's
//! ports free, no NIC to spare).
//!
//! A NIC anywhere under the top PCIe switch above a GPU (the highest switch of a switch maker
//! or a board, never an endpoint's internal bridge, [`is_internal_switch`])
//! is within PXB of every GPU under that switch: that switch tree is the GPU's *group*. A
//! group can take a NIC when one of its switches' downstream ports leads to no GPU and no rail
//! NIC (an empty port, or one holding a card that could swap places). A rail NIC can move
//! when no GPU has it within PXB (it serves nobody at that distance), or when its group holds
//! another rail NIC (the group keeps one). A GPU beyond PXB is misplaced exactly when its
//! group exists, can take a NIC, and some rail NIC can move; otherwise its path is the
//! design's.
//!
//! Facts: the switches of the topology (`Topology::switches`, their `parent_switch` and
//! downstream ports) and the children of each port; nothing else for the rule.
//!
//! Where a device sits and where a NIC belongs, in words ([`location`], [`target`]), are
//! here too (they also read slots, host bridges and NUMA nodes): the remedies of
//! `gpu-nic-path` and `profile-diff` read them.

use super::Ctx;
use crate::model::{Bdf, Device, DeviceKind, Switch, Topology};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Why no arrangement of this node's adapters gives a GPU a NIC within PXB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DesignWhy {
    /// No PCIe switch above the GPU (it sits on a root port, or only its own internal bridge
    /// is above it): no slot shares a switch with it.
    NoSwitch,
    /// Its switch tree has no downstream port a NIC could take.
    NoFreePort {
        /// The top switch's upstream port.
        switch: Bdf,
    },
    /// Every rail NIC already serves GPUs within PXB under a switch of its own.
    NoSpareNic {
        /// Rail NICs on the node.
        rails: usize,
        /// GPU switch groups on the node.
        groups: usize,
    },
}

impl DesignWhy {
    /// In words, for the finding.
    pub fn words(&self, gpu: &Bdf) -> String {
        match self {
            DesignWhy::NoSwitch => format!(
                "no PCIe switch above GPU {gpu} (only root ports or its own internal bridge), so no slot shares a switch with it"
            ),
            DesignWhy::NoFreePort { switch } => format!(
                "the PCIe switch above GPU {gpu} (upstream port {switch}) has no downstream port free for a NIC"
            ),
            DesignWhy::NoSpareNic { rails, groups } => format!(
                "each of the node's {rails} rail NIC(s) already serves the GPUs of its own switch, and the node has {groups} GPU switch group(s): moving one only moves the problem"
            ),
        }
    }
}

/// How one GPU beyond PXB could be helped by moving an adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Moving this rail NIC (index into `Ctx::nics`) under the GPU's switch does better.
    Misplaced {
        /// The NIC to move.
        nic: usize,
    },
    /// No arrangement does better.
    Design(DesignWhy),
    /// A NIC could move, but the input does not list empty switch ports (hwloc and NCCL XML
    /// keep only bridges with devices below), so whether the GPU's switch has a free slot is
    /// unknown.
    FreePortUnknown {
        /// The NIC that would move.
        nic: usize,
        /// The top switch's upstream port.
        switch: Bdf,
    },
}

/// The GPU groups and the NICs that could move, computed once per audit.
pub struct Arrangement {
    /// Per GPU (index into `Ctx::gpus`): the upstream port of its top switch.
    group: Vec<Option<Bdf>>,
    /// Groups that can take a NIC.
    receiving: Vec<Bdf>,
    /// Rail NICs that can move (indices into `Ctx::nics`), strays first.
    movable: Vec<usize>,
    /// Rail NIC count and GPU group count.
    rails: usize,
    groups: usize,
    /// The input lists empty switch ports (sysfs, a snapshot, peerpath's JSON of one).
    ports_visible: bool,
}

/// The top non-internal switch above each switch (its upstream port), walking `parent_switch`
/// once per switch: whether a switch is an endpoint's internal bridge is decided once each
/// ([`is_internal_switch`] walks the switch's subtree).
struct Tops<'t> {
    topo: &'t crate::model::Topology,
    internal: HashMap<&'t str, bool>,
}

impl<'t> Tops<'t> {
    fn new(topo: &'t crate::model::Topology) -> Self {
        let internal = topo
            .switches
            .iter()
            .map(|s| (s.id.as_str(), is_internal_switch(topo, s)))
            .collect();
        Tops { topo, internal }
    }

    fn internal(&self, s: &Switch) -> bool {
        self.internal.get(s.id.as_str()).copied().unwrap_or(false)
    }

    /// The top non-internal switch at or above switch `start`.
    fn top(&self, start: Option<&str>) -> Option<&'t Switch> {
        let mut cur = start.and_then(|id| self.topo.switch(id));
        let mut top = None;
        // A malformed input could loop: at most one step per switch.
        for _ in 0..=self.topo.switches.len() {
            let Some(s) = cur else { break };
            if !self.internal(s) {
                top = Some(s);
            }
            cur = s
                .parent_switch
                .as_deref()
                .and_then(|id| self.topo.switch(id));
        }
        top
    }
}

impl Arrangement {
    /// Builds the groups over the audit's GPUs and rail NICs (`rail[k]` for `Ctx::nics[k]`);
    /// `local[gi][k]`: GPU `gi` has NIC `k` within PXB.
    pub fn new(ctx: &Ctx, rail: &[bool], local: &[Vec<bool>]) -> Self {
        let topo = ctx.topo;
        let tops = Tops::new(topo);
        let group: Vec<Option<Bdf>> = ctx
            .gpus
            .iter()
            .map(|g| tops.top(g.switch.as_deref()).map(|s| s.upstream))
            .collect();
        let nic_group: Vec<Option<Bdf>> = ctx
            .nics
            .iter()
            .map(|n| tops.top(n.switch.as_deref()).map(|s| s.upstream))
            .collect();
        let groups: BTreeSet<Bdf> = group.iter().flatten().copied().collect();
        // Ports of each group's switches whose subtree holds no GPU and no rail NIC.
        let rail_bdfs: HashSet<Bdf> = ctx
            .nics
            .iter()
            .zip(rail)
            .filter(|(_, r)| **r)
            .map(|(n, _)| n.bdf)
            .collect();
        let blocks = |p: &Bdf| -> bool {
            let mut stack = vec![*p];
            let mut seen = 0usize;
            while let Some(b) = stack.pop() {
                seen += 1;
                if seen > topo.devices.len() {
                    break;
                }
                for c in topo.children(&b) {
                    if c.kind == DeviceKind::Gpu || rail_bdfs.contains(&c.bdf) {
                        return true;
                    }
                    stack.push(c.bdf);
                }
            }
            false
        };
        let mut receiving: BTreeSet<Bdf> = BTreeSet::new();
        for s in topo.switches.iter().filter(|s| !tops.internal(s)) {
            if let Some(up) = tops.top(Some(&s.id)).map(|t| t.upstream)
                && groups.contains(&up)
                && !receiving.contains(&up)
                && s.downstream.iter().any(|p| !blocks(p))
            {
                receiving.insert(up);
            }
        }
        let mut strays = Vec::new();
        let mut excess = Vec::new();
        for k in (0..ctx.nics.len()).filter(|&k| rail[k]) {
            if !local.iter().any(|row| row[k]) {
                strays.push(k);
            } else if let Some(gk) = nic_group[k]
                && (0..ctx.nics.len()).any(|j| j != k && rail[j] && nic_group[j] == Some(gk))
                // Keep the first NIC of a group; the others can move.
                && (0..k).any(|j| rail[j] && nic_group[j] == Some(gk))
            {
                excess.push(k);
            }
        }
        strays.extend(excess);
        Arrangement {
            group,
            receiving: receiving.into_iter().collect(),
            movable: strays,
            rails: rail.iter().filter(|r| **r).count(),
            groups: groups.len(),
            ports_visible: ctx.has_device_files(),
        }
    }

    /// How GPU `gi` (beyond PXB of every rail NIC) could be helped.
    pub fn placement(&self, gi: usize) -> Placement {
        let Some(up) = self.group[gi] else {
            return Placement::Design(DesignWhy::NoSwitch);
        };
        if !self.receiving.contains(&up) {
            return match self.movable.first() {
                Some(&nic) if !self.ports_visible => Placement::FreePortUnknown { nic, switch: up },
                _ => Placement::Design(DesignWhy::NoFreePort { switch: up }),
            };
        }
        match self.movable.first() {
            Some(&nic) => Placement::Misplaced { nic },
            None => Placement::Design(DesignWhy::NoSpareNic {
                rails: self.rails,
                groups: self.groups,
            }),
        }
    }

    /// Whether rail NIC `k` is one that could move.
    pub fn can_move(&self, k: usize) -> bool {
        self.movable.contains(&k)
    }
}

/// Where a device sits: slot, root port, host bridge, NUMA node.
pub fn location(ctx: &Ctx, d: &Device) -> String {
    let topo = ctx.topo;
    let chain = ctx.paths().ancestors(&d.bdf);
    let slot = chain
        .iter()
        .filter_map(|b| topo.device(b).and_then(|x| x.slot.clone()))
        .next();
    let root = chain.last().filter(|b| **b != d.bdf);
    let mut parts = Vec::new();
    if let Some(s) = slot {
        parts.push(format!("slot {s}"));
    }
    if let Some(r) = root {
        parts.push(format!("root port {r}"));
    }
    parts.push(format!("host bridge {}", d.host_bridge));
    parts.push(match topo.numa_of(d) {
        Some(n) => format!("NUMA node {n}"),
        None => "NUMA node unknown".to_string(),
    });
    parts.join(", ")
}

/// PCIe switch vendors (Broadcom/PLX, LSI, Microchip/PMC-Sierra, ASMedia, Pericom, IDT): a
/// switch of theirs is board or card switching, never one endpoint's own bridge.
pub const SWITCH_VENDORS: [u16; 7] = [0x10b5, 0x1000, 0x11f8, 0x1b21, 0x12d8, 0x111d, 0x1d0f];

/// Whether a switch is an endpoint's internal bridge rather than a place for another card: its
/// upstream port is made by the vendor of a GPU, accelerator or NIC below it (an AMD Instinct's
/// or Hygon DCU's own PCIe switch, a ConnectX-8's switch), and that vendor is not a PCIe switch
/// maker ([`SWITCH_VENDORS`]). Its "free" downstream ports are on the card, not slots.
pub fn is_internal_switch(topo: &Topology, sw: &Switch) -> bool {
    let Some(v) = topo.device(&sw.upstream).and_then(|d| d.vendor_id) else {
        return false;
    };
    if SWITCH_VENDORS.contains(&v) {
        return false;
    }
    let mut stack: Vec<Bdf> = sw.downstream.clone();
    while let Some(b) = stack.pop() {
        for c in topo.children(&b) {
            let endpoint = c.kind.is_compute() || c.kind == DeviceKind::Nic;
            if endpoint && c.vendor_id == Some(v) {
                return true;
            }
            stack.push(c.bdf);
        }
    }
    false
}

/// Where a NIC belongs to be PIX/PXB with a GPU: the nearest PCIe switch above the GPU that is
/// not an endpoint's internal bridge, naming a free downstream port (one with nothing below
/// it) of that switch or of a switch above it (internal bridges' ports are never proposed).
pub fn target(ctx: &Ctx, gpu: &Device) -> String {
    let topo = ctx.topo;
    let mut cur = gpu.switch.as_deref().and_then(|id| topo.switch(id));
    let mut internal = Vec::new();
    while let Some(s) = cur.filter(|s| is_internal_switch(topo, s)) {
        internal.push(s.id.clone());
        cur = s.parent_switch.as_deref().and_then(|id| topo.switch(id));
    }
    let own = if internal.is_empty() {
        String::new()
    } else {
        format!(
            " (above its own internal bridge {}, whose ports are no slots)",
            internal.join(", ")
        )
    };
    let Some(sw) = cur else {
        return format!(
            "GPU {}{own} sits on a root port with no PCIe switch above it, so no slot makes the pair PIX/PXB; the closest is a root port of host bridge {} (PHB) or, failing that, of NUMA node {} (NODE)",
            gpu.bdf,
            gpu.host_bridge,
            topo.numa_of(gpu)
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into())
        );
    };
    let mut free = Vec::new();
    let mut up = Some(sw);
    while let Some(s) = up {
        if !is_internal_switch(topo, s) {
            for p in &s.downstream {
                if topo.children(p).is_empty() {
                    let slot = topo.device(p).and_then(|d| d.slot.clone());
                    free.push(match slot {
                        Some(sl) => format!("{p} (slot {sl}, switch {})", s.id),
                        None => format!("{p} (switch {})", s.id),
                    });
                }
            }
        }
        up = s.parent_switch.as_deref().and_then(|id| topo.switch(id));
    }
    let root = ctx.paths().ancestors(&gpu.bdf).last().copied();
    let mut s = format!(
        "behind PCIe switch {} (upstream port {}{}) with GPU {}{own}",
        sw.id,
        sw.upstream,
        root.map(|r| format!(", root port {r}")).unwrap_or_default(),
        gpu.bdf
    );
    if free.is_empty() {
        s.push_str(
            ": no free downstream port there (free one, or move a non-GPU device out of that switch)",
        );
    } else {
        s.push_str(&format!(": free downstream port {}", free.join(", ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::Classifier;
    use crate::analysis::testkit::TopoBuilder;

    /// One switch (upstream 0000:11:00.0) under root port 0000:10:01.0 holding a GPU on
    /// 0000:12:00.0 and, when `free`, an empty downstream port 0000:12:01.0; a NIC on its own
    /// root port 0000:20:01.0 of the same NUMA node.
    fn node(free: bool, kind: &str) -> crate::model::Topology {
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        let mut dsps = vec!["0000:12:00.0"];
        if free {
            dsps.push("0000:12:01.0");
        }
        b.switch("0000:10:01.0", "0000:11:00.0", &dsps, Some(0));
        b.ids("0000:11:00.0", (0x10b5, 0xc030));
        b.gpu("0000:13:00.0", Some("0000:12:00.0"), Some(0));
        b.bridge("0000:20:01.0", None, Some(0));
        b.nic("0000:21:00.0", Some("0000:20:01.0"), Some(0), &["mlx5_0"]);
        let mut t = b.build();
        t.source.kind = kind.into();
        t
    }

    fn placement(t: &crate::model::Topology) -> Placement {
        let cl = Classifier::new(t, &Default::default());
        let ctx = Ctx::new(&cl);
        let local = vec![vec![false; ctx.nics.len()]; ctx.gpus.len()];
        Arrangement::new(&ctx, &vec![true; ctx.nics.len()], &local).placement(0)
    }

    #[test]
    fn a_free_port_and_a_stray_nic_make_a_misplacement() {
        assert_eq!(
            placement(&node(true, "sysfs")),
            Placement::Misplaced { nic: 0 }
        );
        // No free port: the design, as sysfs shows every port.
        assert!(matches!(
            placement(&node(false, "sysfs")),
            Placement::Design(DesignWhy::NoFreePort { .. })
        ));
        // An XML lists no empty port: unknown, not a design verdict.
        assert!(matches!(
            placement(&node(false, "hwloc-xml")),
            Placement::FreePortUnknown { nic: 0, .. }
        ));
    }

    #[test]
    fn a_gpu_on_a_root_port_is_the_design() {
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.gpu("0000:11:00.0", Some("0000:10:01.0"), Some(0));
        b.bridge("0000:10:02.0", None, Some(0));
        b.nic("0000:12:00.0", Some("0000:10:02.0"), Some(0), &["mlx5_0"]);
        let mut t = b.build();
        t.source.kind = "sysfs".into();
        assert_eq!(placement(&t), Placement::Design(DesignWhy::NoSwitch));
    }
}
