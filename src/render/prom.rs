//! A node_exporter textfile-collector file (`peerpath.prom`) in the Prometheus text exposition
//! format.
//!
//! Data: GPU–NIC path labels from the classification ([`NodeView`]), rail assignment from
//! [`Rails`], current/max link speed and width of every PCI function on a GPU's or NIC's path
//! to its host bridge (sysfs `current_link_*`/`max_link_*`), the audit's finding counts and GDR
//! verdict when the caller ran it ([`PromInputs::audit`], [`Report::gdr_ready`]), and the run
//! time.
//! Conventions (shared/reference/ecosystem.md §1.9): `HELP`/`TYPE` per metric, gauges only,
//! no sample timestamps, enum values as labels with value 1, a trailing newline. Label names
//! follow dcgm-exporter where they overlap (`gpu`, `pci_bus_id`).

use super::escape::prom_label;
use crate::analysis::audit::Report;
use crate::analysis::paths::Paths;
use crate::analysis::place::NodeView;
use crate::analysis::rails::Rails;
use crate::model::{Bdf, DeviceKind, Topology};
use std::collections::BTreeSet;
use std::fmt::Write;

/// What the prom export needs beyond the topology.
#[derive(Debug, Clone, Default)]
pub struct PromInputs<'a> {
    /// Unix time of this run (`peerpath_last_run_timestamp_seconds`).
    pub now_unix: u64,
    /// The audit of this topology: `peerpath_findings` (counts by severity) and
    /// `peerpath_gdr_ready` come from it. `None`: no audit ran, and both are left out rather
    /// than written as zeros.
    pub audit: Option<&'a Report>,
    /// The topology fingerprint (`peerpath fleet`'s,
    /// [`crate::analysis::fleet::fingerprint`]): the `fingerprint` label of `peerpath_info`,
    /// so Prometheus can group nodes by layout (`count by (fingerprint) (peerpath_info)`).
    /// `None` leaves the label out.
    pub fingerprint: Option<u64>,
}

struct Out {
    s: String,
}

impl Out {
    fn metric(&mut self, name: &str, help: &str) {
        let _ = writeln!(self.s, "# HELP {name} {help}");
        let _ = writeln!(self.s, "# TYPE {name} gauge");
    }
    fn sample(&mut self, name: &str, labels: &[(&str, String)], value: f64) {
        let mut l = String::new();
        if !labels.is_empty() {
            let parts: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", prom_label(v)))
                .collect();
            l = format!("{{{}}}", parts.join(","));
        }
        let _ = writeln!(self.s, "{name}{l} {}", fmt_value(value));
    }
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Renders the textfile: each metric family in file order.
pub fn render(p: &Paths, view: &NodeView, r: &Rails, i: &PromInputs) -> String {
    let t = p.topo();
    let mut o = Out { s: String::new() };
    info_metric(&mut o, t, i);
    gpu_nic_paths(&mut o, view, r);
    gpu_nvme_paths(&mut o, view);
    link_metrics(&mut o, p);
    layout_metrics(&mut o, t, r);
    audit_metrics(&mut o, i.audit);
    last_run(&mut o, i.now_unix);
    o.s
}

/// `peerpath_info`: the source kind, the version and the fingerprint.
fn info_metric(o: &mut Out, t: &Topology, i: &PromInputs) {
    o.metric(
        "peerpath_info",
        "Where this topology came from and its layout fingerprint (value 1).",
    );
    let mut info = vec![
        ("source", t.source.kind.clone()),
        ("version", env!("CARGO_PKG_VERSION").to_string()),
    ];
    if let Some(f) = i.fingerprint {
        info.push(("fingerprint", format!("{f:016x}")));
    }
    o.sample("peerpath_info", &info, 1.0);
}

/// `peerpath_gpu_nic_path`: one series per GPU–NIC pair with its label and whether it is the rail.
fn gpu_nic_paths(o: &mut Out, view: &NodeView, r: &Rails) {
    o.metric(
        "peerpath_gpu_nic_path",
        "Path label between a GPU and a NIC (one series per pair, value 1; rail=\"true\" marks the NIC assigned to the GPU).",
    );
    let rail_of: BTreeSet<(String, String)> = r
        .ports
        .iter()
        .flat_map(|p| p.gpus.iter().map(move |g| (g.clone(), p.nic_bdf.clone())))
        .collect();
    for (g, gpu) in view.gpus.iter().enumerate() {
        for (k, nic) in view.nics.iter().enumerate() {
            let Some(p) = &view.cand.gn[g][k] else {
                continue;
            };
            let rail = rail_of.contains(&(gpu.name.clone(), nic.bdf.to_string()));
            o.sample(
                "peerpath_gpu_nic_path",
                &[
                    ("gpu", g.to_string()),
                    ("pci_bus_id", gpu.bdf.to_string()),
                    ("nic", crate::analysis::place::nic_name(nic)),
                    ("nic_pci_bus_id", nic.bdf.to_string()),
                    (
                        "path",
                        if p.label == crate::analysis::classify::Label::Unknown {
                            "unknown".to_string()
                        } else {
                            p.label.to_string()
                        },
                    ),
                    ("rail", rail.to_string()),
                ],
                1.0,
            );
        }
    }
}

/// `peerpath_gpu_nvme_path`: one series per GPU–data-NVMe pair (only when there are drives).
fn gpu_nvme_paths(o: &mut Out, view: &NodeView) {
    if !view.gpu_nvme.is_empty() {
        o.metric(
            "peerpath_gpu_nvme_path",
            "Path label between a GPU and a data NVMe drive (GPUDirect Storage; one series per pair, value 1; nearest=\"true\" marks the GPU's nearest drive).",
        );
        for (g, c, nearest) in &view.gpu_nvme {
            o.sample(
                "peerpath_gpu_nvme_path",
                &[
                    ("gpu", g.to_string()),
                    ("pci_bus_id", c.gpu.to_string()),
                    ("nvme", c.nvme.clone().unwrap_or_default()),
                    ("nvme_pci_bus_id", c.drive.to_string()),
                    (
                        "path",
                        if c.label == crate::analysis::classify::Label::Unknown {
                            "unknown".to_string()
                        } else {
                            c.label.to_string()
                        },
                    ),
                    ("nearest", nearest.to_string()),
                ],
                1.0,
            );
        }
    }
}

/// `peerpath_pcie_link_width_lanes` and `peerpath_pcie_link_speed_gts` of every function on a
/// GPU's or NIC's path up to its host bridge.
fn link_metrics(o: &mut Out, p: &Paths) {
    let t = p.topo();
    // Every function on a GPU's or NIC's path up to its host bridge.
    let hops: BTreeSet<Bdf> = p.upward_closure(
        t.devices
            .iter()
            .filter(|d| !d.is_vf() && matches!(d.kind, DeviceKind::Gpu | DeviceKind::Nic))
            .map(|d| &d.bdf),
    );
    o.metric(
        "peerpath_pcie_link_width_lanes",
        "PCIe link width of a function on a GPU/NIC path (kind=current|max).",
    );
    for b in &hops {
        let Some(d) = t.device(b) else { continue };
        let Some(l) = d.link else { continue };
        for (kind, v) in [("current", l.current_width), ("max", l.max_width)] {
            if let Some(v) = v {
                o.sample(
                    "peerpath_pcie_link_width_lanes",
                    &[
                        ("pci_bus_id", b.to_string()),
                        ("device", d.kind.as_str().to_string()),
                        ("kind", kind.to_string()),
                    ],
                    v as f64,
                );
            }
        }
    }
    o.metric(
        "peerpath_pcie_link_speed_gts",
        "PCIe link speed in GT/s of a function on a GPU/NIC path (kind=current|max).",
    );
    for b in &hops {
        let Some(d) = t.device(b) else { continue };
        let Some(l) = d.link else { continue };
        for (kind, v) in [("current", l.current_gts), ("max", l.max_gts)] {
            if let Some(v) = v {
                o.sample(
                    "peerpath_pcie_link_speed_gts",
                    &[
                        ("pci_bus_id", b.to_string()),
                        ("device", d.kind.as_str().to_string()),
                        ("kind", kind.to_string()),
                    ],
                    v,
                );
            }
        }
    }
}

/// `peerpath_rail_optimised`, and the NVLink domain and xGMI hive/link counts where visible.
fn layout_metrics(o: &mut Out, t: &Topology, r: &Rails) {
    o.metric(
        "peerpath_rail_optimised",
        "1 if every GPU has its own NIC within PXB (one NIC per GPU).",
    );
    o.sample(
        "peerpath_rail_optimised",
        &[],
        if r.rail_optimised { 1.0 } else { 0.0 },
    );
    if t.nvlink_visible {
        o.metric(
            "peerpath_nvlink_domains",
            "Number of NVLink domains with more than one GPU.",
        );
        o.sample(
            "peerpath_nvlink_domains",
            &[],
            r.domains.iter().filter(|d| d.nvlink).count() as f64,
        );
    }
    if t.devices.iter().any(crate::model::amd::is_amd_gpu) && t.xgmi_visible {
        o.metric(
            "peerpath_xgmi_hives",
            "Number of xGMI (Infinity Fabric) hives of AMD GPUs (KFD hive_id groups).",
        );
        o.sample("peerpath_xgmi_hives", &[], super::nfd::xgmi_hives(t) as f64);
        o.metric("peerpath_xgmi_links", "GPU pairs joined directly by xGMI.");
        o.sample(
            "peerpath_xgmi_links",
            &[],
            t.xgmi.iter().filter(|l| l.direct != Some(false)).count() as f64,
        );
    }
}

/// `peerpath_gdr_ready` and `peerpath_findings`, only when the audit ran.
fn audit_metrics(o: &mut Out, audit: Option<&Report>) {
    if let Some(g) = audit.and_then(|a| a.gdr_ready().ready) {
        o.metric("peerpath_gdr_ready", "1 if GPUDirect RDMA prerequisites are met for every rail pair (left out when unknown).");
        o.sample("peerpath_gdr_ready", &[], if g { 1.0 } else { 0.0 });
    }
    if let Some(a) = audit {
        o.metric("peerpath_findings", "Audit findings by severity.");
        let c = &a.counts;
        // Severities with findings only, in name order.
        for (sev, n) in [
            ("error", c.error),
            ("info", c.info),
            ("unknown", c.unknown),
            ("warning", c.warning),
        ] {
            if n > 0 {
                o.sample(
                    "peerpath_findings",
                    &[("severity", sev.to_string())],
                    n as f64,
                );
            }
        }
    }
}

/// `peerpath_last_run_timestamp_seconds`.
fn last_run(o: &mut Out, now_unix: u64) {
    o.metric(
        "peerpath_last_run_timestamp_seconds",
        "Unix time of the peerpath run that wrote this file.",
    );
    o.sample("peerpath_last_run_timestamp_seconds", &[], now_unix as f64);
}
