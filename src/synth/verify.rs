//! Compares a scanned [`Topology`] with the [`Spec`] it was written from, so tests (and other
//! modules' fixtures) can check that a reader saw exactly what the spec says.

use super::{Function, Role, Spec};
use crate::model::device::{Device, DeviceKind, OsDeviceKind, kind_from_class};
use crate::model::topology::Topology;
use std::collections::BTreeSet;

/// What the reader could see: with `privileged == false` (64-byte config), port types, ACS and
/// other capabilities are unknown and switches come from the tree heuristic.
#[derive(Debug, Clone, Copy)]
pub struct VerifyOptions {
    /// The tree was written with full config space.
    pub privileged: bool,
}

/// The kind the scanner should give a spec function.
pub fn expected_kind(role: Role, class: u32, vendor: u16, device: u16) -> DeviceKind {
    match role {
        Role::RootPort => DeviceKind::RootPort,
        Role::SwitchUpstream => DeviceKind::SwitchUpstream,
        Role::SwitchDownstream => DeviceKind::SwitchDownstream,
        Role::PcieToPci => DeviceKind::Bridge,
        Role::Endpoint | Role::RcIntegrated => kind_from_class(class, Some(vendor), Some(device)),
    }
}

/// Every difference between `spec` and `topo`, as human-readable lines (empty: they agree on
/// devices, parents, kinds, ids, NUMA nodes, links, drivers, IOMMU groups, SR-IOV, slots, class
/// devices, switches, NUMA nodes and node-wide facts).
pub fn differences(spec: &Spec, topo: &Topology, opts: VerifyOptions) -> Vec<String> {
    let mut out = Vec::new();
    device_set(spec, topo, &mut out);
    for f in &spec.functions {
        let Some(d) = topo.device(&f.bdf) else {
            continue;
        };
        place_and_identity(spec, f, d, &mut out);
        bindings(spec, f, d, &mut out);
        class_devices(f, d, &mut out);
        rdma_ports(f, d, &mut out);
        if opts.privileged && f.pcie {
            let b = f.bdf;
            let cfg_acs = d.config.as_ref().and_then(|c| c.acs).map(|a| a.control);
            if cfg_acs != f.acs_control {
                out.push(format!(
                    "{b}: ACS control {cfg_acs:?}, spec {:?}",
                    f.acs_control
                ));
            }
        }
        slot_names(spec, topo, f, &mut out);
    }
    switches(spec, topo, opts, &mut out);
    numa_nodes(spec, topo, &mut out);
    node_facts(spec, topo, &mut out);
    out
}

/// Functions in the spec and not scanned, and scanned and not in the spec.
fn device_set(spec: &Spec, topo: &Topology, out: &mut Vec<String>) {
    let want: BTreeSet<_> = spec.functions.iter().map(|f| f.bdf).collect();
    let got: BTreeSet<_> = topo.devices.iter().map(|d| d.bdf).collect();
    for b in want.difference(&got) {
        out.push(format!("{b}: in the spec, not scanned"));
    }
    for b in got.difference(&want) {
        out.push(format!("{b}: scanned, not in the spec"));
    }
}

/// Parent, kind, ids and class, NUMA node and link of one function.
fn place_and_identity(spec: &Spec, f: &Function, d: &Device, out: &mut Vec<String>) {
    let b = f.bdf;
    if d.parent != f.parent {
        out.push(format!("{b}: parent {:?}, spec {:?}", d.parent, f.parent));
    }
    let kind = expected_kind(f.role, f.class, f.vendor, f.device);
    if d.kind != kind {
        out.push(format!("{b}: kind {:?}, spec {kind:?}", d.kind));
    }
    if (d.vendor_id, d.device_id, d.class) != (Some(f.vendor), Some(f.device), f.class) {
        out.push(format!(
            "{b}: ids {:?}:{:?} class {:06x}, spec {:04x}:{:04x} {:06x}",
            d.vendor_id, d.device_id, d.class, f.vendor, f.device, f.class
        ));
    }
    let numa = u32::try_from(spec.numa_of(f)).ok();
    if d.numa_node != numa {
        out.push(format!("{b}: numa_node {:?}, spec {numa:?}", d.numa_node));
    }
    match (&d.link, f.link.filter(|_| f.pcie)) {
        (Some(l), Some(s)) => {
            // A link that is down (width 0) reads its current speed as `Unknown`.
            let speed = (s.width > 0 || s.speed > 0.0).then_some(s.speed);
            if (l.current_gts, l.current_width, l.max_gts, l.max_width)
                != (speed, Some(s.width), Some(s.max_speed), Some(s.max_width))
            {
                out.push(format!("{b}: link {l:?}, spec {s:?}"));
            }
        }
        (None, None) => {}
        (l, s) => out.push(format!("{b}: link {l:?}, spec {s:?}")),
    }
}

/// Driver, IOMMU group and its type, PF and VF count of one function.
fn bindings(spec: &Spec, f: &Function, d: &Device, out: &mut Vec<String>) {
    let b = f.bdf;
    if d.driver != f.driver {
        out.push(format!("{b}: driver {:?}, spec {:?}", d.driver, f.driver));
    }
    if d.iommu_group != f.iommu_group {
        out.push(format!(
            "{b}: iommu_group {:?}, spec {:?}",
            d.iommu_group, f.iommu_group
        ));
    }
    if f.iommu_group.is_some() {
        let ty = f
            .iommu_type
            .clone()
            .or_else(|| spec.node.iommu_default_type.clone())
            .or(Some("identity".into()));
        // The group's type is the first member's; compare only when members agree.
        let members_agree = spec
            .functions
            .iter()
            .filter(|g| g.iommu_group == f.iommu_group)
            .all(|g| g.iommu_type == f.iommu_type);
        if members_agree && d.iommu_group_type != ty {
            out.push(format!(
                "{b}: iommu type {:?}, spec {ty:?}",
                d.iommu_group_type
            ));
        }
    }
    if d.physfn != f.physfn {
        out.push(format!("{b}: physfn {:?}, spec {:?}", d.physfn, f.physfn));
    }
    let vfs = spec
        .functions
        .iter()
        .filter(|v| v.physfn == Some(b))
        .count() as u32;
    if d.vf_count != vfs {
        out.push(format!("{b}: {} VFs, spec {vfs}", d.vf_count));
    }
}

/// The names of one function's RDMA, net and NVMe class devices.
fn class_devices(f: &Function, d: &Device, out: &mut Vec<String>) {
    let b = f.bdf;
    let names = |k: OsDeviceKind| -> Vec<String> {
        let mut v: Vec<String> = d
            .os_devices
            .iter()
            .filter(|o| o.kind == k)
            .map(|o| o.name.clone())
            .collect();
        v.sort();
        v
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let rdma = sorted(f.rdma.iter().map(|r| r.name.clone()).collect());
    let net = sorted(f.netdevs.iter().map(|n| n.name.clone()).collect());
    let nvme = sorted(f.nvme.iter().map(|n| n.name.clone()).collect());
    if names(OsDeviceKind::Rdma) != rdma {
        out.push(format!(
            "{b}: rdma {:?}, spec {rdma:?}",
            names(OsDeviceKind::Rdma)
        ));
    }
    if names(OsDeviceKind::Net) != net {
        out.push(format!(
            "{b}: net {:?}, spec {net:?}",
            names(OsDeviceKind::Net)
        ));
    }
    if names(OsDeviceKind::Nvme) != nvme {
        out.push(format!(
            "{b}: nvme {:?}, spec {nvme:?}",
            names(OsDeviceKind::Nvme)
        ));
    }
}

/// Each RDMA port's state, physical state, rate and link layer.
fn rdma_ports(f: &Function, d: &Device, out: &mut Vec<String>) {
    let b = f.bdf;
    for r in &f.rdma {
        let Some(o) = d
            .os_devices
            .iter()
            .find(|o| o.kind == OsDeviceKind::Rdma && o.name == r.name)
        else {
            continue;
        };
        for p in &r.ports {
            let Some(q) = o.ports.iter().find(|q| q.port == p.port) else {
                out.push(format!("{b}: {} port {} missing", r.name, p.port));
                continue;
            };
            if q.state.as_ref().map(|s| s.0) != Some(p.state)
                || q.phys_state.as_ref().map(|s| s.0) != Some(p.phys_state)
                || q.rate_text.as_deref() != Some(p.rate.as_str())
                || q.link_layer.as_deref() != Some(p.link_layer.as_str())
            {
                out.push(format!(
                    "{b}: {} port {}: {q:?}, spec {p:?}",
                    r.name, p.port
                ));
            }
        }
    }
}

/// Slot: the scanner names the function(s) at the slot's address (below the port).
fn slot_names(spec: &Spec, topo: &Topology, f: &Function, out: &mut Vec<String>) {
    let b = f.bdf;
    if let Some(s) = &f.slot {
        for c in spec.children(b).filter(|c| c.physfn.is_none()) {
            if topo.device(&c.bdf).and_then(|cd| cd.slot.as_deref()) != Some(s.name.as_str()) {
                out.push(format!(
                    "{}: slot {:?}, spec {:?} (port {b})",
                    c.bdf,
                    topo.device(&c.bdf).and_then(|cd| cd.slot.clone()),
                    s.name
                ));
            }
        }
    }
}

/// Switches: every upstream port with its downstream-port children, and the evidence they were
/// found by.
fn switches(spec: &Spec, topo: &Topology, opts: VerifyOptions, out: &mut Vec<String>) {
    let evidence = if opts.privileged { "config" } else { "tree" };
    let usps: Vec<_> = spec
        .functions
        .iter()
        .filter(|f| f.role == Role::SwitchUpstream)
        .collect();
    if usps.len() != topo.switches.len() {
        out.push(format!(
            "{} switches scanned, spec has {}",
            topo.switches.len(),
            usps.len()
        ));
    }
    for u in usps {
        let Some(s) = topo.switches.iter().find(|s| s.upstream == u.bdf) else {
            out.push(format!("switch with upstream port {} not found", u.bdf));
            continue;
        };
        let mut want: Vec<_> = spec
            .children(u.bdf)
            .filter(|c| c.role == Role::SwitchDownstream)
            .map(|c| c.bdf)
            .collect();
        want.sort();
        let mut got = s.downstream.clone();
        got.sort();
        if got != want {
            out.push(format!(
                "switch {}: downstream {got:?}, spec {want:?}",
                u.bdf
            ));
        }
        if s.evidence != evidence {
            out.push(format!(
                "switch {}: evidence {}, expected {evidence}",
                u.bdf, s.evidence
            ));
        }
    }
}

/// NUMA nodes: ids, CPU lists and distances.
fn numa_nodes(spec: &Spec, topo: &Topology, out: &mut Vec<String>) {
    // NUMA nodes.
    let want: Vec<(u32, String, Vec<u32>)> = spec
        .numa_nodes
        .iter()
        .map(|n| {
            let cpus = crate::parse::cpulist::parse_list(n.cpus.as_bytes()).unwrap_or_default();
            (
                n.id,
                crate::model::cpulist::format_list(&cpus),
                n.distances.clone(),
            )
        })
        .collect();
    let got: Vec<(u32, String, Vec<u32>)> = topo
        .numa_nodes
        .iter()
        .map(|n| (n.id, n.cpus.clone(), n.distances.clone()))
        .collect();
    if want != got {
        out.push(format!("NUMA nodes {got:?}, spec {want:?}"));
    }
}

/// Node-wide facts: sockets and CPUs, the hypervisor flag, nvidia_peermem, memory peers.
fn node_facts(spec: &Spec, topo: &Topology, out: &mut Vec<String>) {
    let m = &topo.machine;
    if m.sockets != Some(spec.machine.sockets)
        || m.logical_cpus != Some(spec.machine.logical_cpus())
    {
        out.push(format!(
            "sockets {:?} cpus {:?}, spec {} and {}",
            m.sockets,
            m.logical_cpus,
            spec.machine.sockets,
            spec.machine.logical_cpus()
        ));
    }
    if spec.machine.hypervisor != m.hypervisor.iter().any(|(p, _)| p == "proc/cpuinfo") {
        out.push(format!(
            "hypervisor evidence {:?}, spec hypervisor flag {}",
            m.hypervisor, spec.machine.hypervisor
        ));
    }
    let peermem = spec
        .node
        .modules
        .iter()
        .find(|x| x.name == "nvidia_peermem");
    let peermem_want = peermem.map(|x| {
        x.version
            .clone()
            .unwrap_or_else(|| "loaded (no version file)".into())
    });
    if m.nvidia_peermem_version != peermem_want {
        out.push(format!(
            "nvidia_peermem {:?}, spec {peermem_want:?}",
            m.nvidia_peermem_version
        ));
    }
    let peers: Vec<(String, Option<String>)> = spec
        .node
        .memory_peers
        .iter()
        .map(|p| (p.name.clone(), p.version.clone()))
        .collect();
    if m.memory_peers != peers {
        out.push(format!("memory_peers {:?}, spec {peers:?}", m.memory_peers));
    }
}
