//! Node-level facts: `virtualized` (hypervisor evidence: the sysfs topology may be synthetic,
//! the probe decides), `numa-unknown` (a GPU or RDMA NIC without a NUMA node on a
//! multi-node machine: NODE and SYS cannot be told apart) and `input-limits` (what the input
//! format could not show, from `SourceInfo::limitations`, and which host of a multi-host
//! input was audited).
//!
//! Facts: `MachineInfo.hypervisor` (the cpuinfo `hypervisor` flag, `/sys/hypervisor/type`,
//! DMI vendor/product), `Device.numa_node` (`numa_node`, -1 = unknown) and the NUMA node list
//! (reference §2.5, §2.11).

use super::{CheckId, Ctx, Finding, Severity, Subject, pci_path};

/// `virtualized`: a warning naming every piece of hypervisor evidence.
pub fn virtualized(ctx: &Ctx) -> Vec<Finding> {
    let h = &ctx.topo.machine.hypervisor;
    if h.is_empty() {
        return Vec::new();
    }
    let f = Finding::new(
        CheckId::Virtualized,
        Severity::Warning,
        Subject::Node,
        "hypervisor detected: the PCIe topology seen here may be synthetic, so path and ACS findings are advisory; the probe decides",
        "run `peerpath probe` and audit with `--evidence` to judge each GPU–NIC pair by measurement; on the host, enable ATS on the NIC and ACS Direct Translated P2P",
    );
    vec![f.with_all(h.iter().map(|(p, v)| {
        let p = if p.starts_with('/') {
            p.clone()
        } else {
            format!("/{p}")
        };
        super::Evidence::new(p, v.clone())
    }))]
}

/// `numa-unknown`: a warning per GPU or RDMA NIC whose NUMA node is unknown on a machine with
/// more than one NUMA node (on a single-node machine the answer is the one node).
pub fn numa_unknown(ctx: &Ctx) -> Vec<Finding> {
    let topo = ctx.topo;
    let multi = topo.numa_nodes.len() > 1 || topo.machine.sockets.is_some_and(|s| s > 1);
    if !multi {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut unshown = Vec::new();
    for d in ctx.gpus.iter().chain(ctx.nics.iter()) {
        if d.numa_node.is_some() {
            continue;
        }
        // lspci prints `NUMA node` (on `Flags` at -v, a line of its own from -vv) unless the
        // kernel says -1; a device the text names without its verbose block (only in the tree,
        // a plain listing) does not show it: unknown, not a fault.
        if topo.source.kind == "lspci" && d.config.is_none() {
            unshown.push(super::Evidence::new(
                pci_path(&d.bdf, "numa_node"),
                "(not in the text: no `lspci -v` block for it)",
            ));
            continue;
        }
        let hb = topo.numa_of(d);
        out.push(
            Finding::new(
                CheckId::NumaUnknown,
                Severity::Warning,
                Subject::Device(d.bdf),
                format!(
                    "NUMA node of {} {} unknown on a {}-node machine{}",
                    d.kind.as_str(),
                    ctx.name(&d.bdf),
                    topo.numa_nodes.len().max(topo.machine.sockets.unwrap_or(0) as usize),
                    match hb {
                        Some(n) => format!(" (its host bridge's devices say node {n})"),
                        None => ": NODE vs SYS paths cannot be told apart".to_string(),
                    }
                ),
                "enable the ACPI SRAT/_PXM proximity information in the BIOS (often 'NUMA' or 'Sub-NUMA clustering' settings); pin jobs by the device's local_cpulist meanwhile",
            )
            .with(pci_path(&d.bdf, "numa_node"), "-1 (or absent)"),
        );
    }
    if !unshown.is_empty() {
        out.push(
            Finding::new(
                CheckId::NumaUnknown,
                Severity::Unknown,
                Subject::Node,
                format!(
                    "NUMA node of {} GPU/NIC device(s) not in the text: they are named without their `lspci -v` block (only in the tree, or a plain listing)",
                    unshown.len()
                ),
                "add `lspci -vvv` for them (or `cat /sys/bus/pci/devices/BDF/numa_node`), or audit the live machine",
            )
            .with_all(unshown),
        );
    }
    out
}

/// `input-limits`: one info finding per limitation of the input's format
/// ([`crate::model::SourceInfo::limitations`]: an NCCL XML has no host bridges, so PHB and
/// NODE cannot be told apart; no config space, drivers or modules…), and one naming the hosts
/// when the input holds several (the others were not audited).
pub fn input_limits(ctx: &Ctx) -> Vec<Finding> {
    let src = &ctx.topo.source;
    let mut out: Vec<Finding> = src
        .limitations
        .iter()
        .map(|l| {
            Finding::new(
                CheckId::InputLimits,
                Severity::Info,
                Subject::Node,
                format!("this input ({}) cannot show: {l}", src.kind),
                "audit the live machine, or a snapshot taken with `peerpath capture`, for the facts this format does not hold",
            )
            .with(src.path.clone(), src.kind.clone())
        })
        .collect();
    if let Some(h) = ctx.topo.host_scope.as_ref().filter(|h| h.hosts.len() > 1) {
        let others: Vec<String> = (0..h.hosts.len())
            .filter(|&i| i != h.selected)
            .map(|i| format!("--host {i}"))
            .collect();
        out.push(
            Finding::new(
                CheckId::InputLimits,
                Severity::Info,
                Subject::Node,
                format!("{}: only the host shown was audited", h.line()),
                format!("audit the other host(s) too: {}", others.join(", ")),
            )
            .with(src.path.clone(), format!("host_hash {}", h.host().name)),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::analysis::classify::Classifier;

    #[test]
    fn vm_is_flagged_with_evidence() {
        let mut m = machine();
        m.hypervisor
            .push(("proc/cpuinfo".into(), "flags: hypervisor".into()));
        let t = topo(hgx(2), m);
        let f = virtualized(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence[0].path, "/proc/cpuinfo");
        assert!(virtualized(&Ctx::new(&Classifier::new(&clean(), &Default::default()))).is_empty());
    }

    #[test]
    fn numa_not_in_the_text_is_unknown_not_a_warning() {
        // A NIC named only in an `lspci -t` tree: no block, no config, no NUMA line.
        let mut d = hgx(2);
        edit(&mut d, "0000:14:00.0", |n| {
            n.numa_node = None;
            n.config = None;
        });
        let mut t = topo(d, machine());
        t.source.kind = "lspci".into();
        let f = numa_unknown(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Unknown);
    }

    #[test]
    fn numa_minus_one() {
        let mut d = hgx(2);
        edit(&mut d, "0000:14:00.0", |n| n.numa_node = None);
        let t = topo(d, machine());
        let f = numa_unknown(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].subject, Subject::Device(b("0000:14:00.0")));
        assert!(
            numa_unknown(&Ctx::new(&Classifier::new(&clean(), &Default::default()))).is_empty()
        );
    }
}
