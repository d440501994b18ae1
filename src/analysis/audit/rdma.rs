//! `nic-port-down`: RDMA ports that are not ACTIVE / LinkUp, run below what the port supports,
//! or whose PCIe link cannot carry the port rate.
//!
//! Facts: `/sys/class/infiniband/<dev>/ports/<p>/{state,phys_state,rate}` (read by the
//! scanner into [`crate::model::RdmaPort`]; an HPE Cassini's link instead in
//! [`super::cassini`]), the netdev's supported link modes
//! ([`crate::model::OsDevice::link_modes_max_mbps`], live only), the NIC's PCI device id and
//! its link (reference §2.6). A port below its adapter family's top rate is a fault only when
//! the port itself supports more: a 25 Gb/s ConnectX-6 Lx SKU at 25 Gb/s is not degraded;
//! where the supported modes are unknown (snapshots, XML, InfiniBand) the finding is info.

use super::{CheckId, Ctx, Finding, Severity, Subject, pci_path};
use crate::model::bandwidth::pcie_link_gbytes;
use crate::model::{Device, RdmaPort};

/// Highest port rate (Gb/s) of an NVIDIA/Mellanox adapter family, by PCI device id.
pub fn family_max_gbps(vendor: Option<u16>, device: Option<u16>) -> Option<(f64, &'static str)> {
    if vendor != Some(0x15b3) {
        return None;
    }
    Some(match device? {
        0x1013 => (100.0, "ConnectX-4"),
        0x1015 => (50.0, "ConnectX-4 Lx"),
        0x1017 => (100.0, "ConnectX-5"),
        0x1019 => (100.0, "ConnectX-5 Ex"),
        0x101b => (200.0, "ConnectX-6"),
        0x101d => (200.0, "ConnectX-6 Dx"),
        0x101f => (50.0, "ConnectX-6 Lx"),
        0x1021 => (400.0, "ConnectX-7"),
        0x1023 => (800.0, "ConnectX-8"),
        0xa2d6 => (200.0, "BlueField-2"),
        0xa2dc => (400.0, "BlueField-3"),
        _ => return None,
    })
}

/// Runs the check over every RDMA NIC. A port that is down is an error on a NIC the placement
/// gave to a GPU, a warning on any other NIC (a spare or storage port).
pub fn nic_port_down(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for n in &ctx.nics {
        let paired = ctx.pairs_of(&n.bdf).next().is_some();
        let family = family_max_gbps(n.vendor_id, n.device_id);
        for od in n
            .os_devices
            .iter()
            .filter(|o| o.kind == crate::model::OsDeviceKind::Rdma)
        {
            let base = format!("/sys/class/infiniband/{}/ports", od.name);
            // A Cassini (Slingshot) has no InfiniBand ports: its link is read elsewhere, and
            // the ports an NCCL XML gives it carry no state and the plugin's speed number
            // (RCCL's topo_4p_942.xml: `speed="200000000"`), not an IB rate.
            if n.is_cassini() {
                out.extend(super::cassini::link(ctx, n, od, paired));
                continue;
            }
            if od.ports.is_empty() {
                out.push(no_ports(ctx, &od.name, &base));
                continue;
            }
            for p in &od.ports {
                let port = Port {
                    ctx,
                    n,
                    p,
                    subject: Subject::RdmaPort {
                        device: od.name.clone(),
                        port: p.port,
                    },
                    pb: format!("{base}/{}", p.port),
                };
                if let Some(f) = port.state(paired) {
                    out.push(f);
                    continue;
                }
                let Some(rate) = p.rate_gbps else { continue };
                let rate_raw = p
                    .rate_text
                    .clone()
                    .unwrap_or_else(|| format!("{rate} Gb/sec"));
                out.extend(port.speed(family, rate, &rate_raw));
                out.extend(port.pcie(rate, rate_raw));
            }
        }
    }
    out
}

/// An RDMA device whose ports were not read.
fn no_ports(ctx: &Ctx, name: &str, base: &str) -> Finding {
    Finding::new(
        CheckId::NicPortDown,
        Severity::Unknown,
        Subject::RdmaDevice(name.to_string()),
        if ctx.topo.source.kind == "lspci" {
            format!("port state of {name} unknown: no `ibstat`/`ibv_devinfo` text names its ports")
        } else {
            format!("port state of {name} unknown: no ports read")
        },
        "audit the live machine, or capture /sys/class/infiniband/*/ports in the snapshot (for pasted text: add `ibstat` output)",
    )
    .with(base.to_string(), "(no ports)")
}

/// A port state as sysfs writes it (`4: ACTIVE`), or `(absent)`.
fn fmt_state(s: &Option<(u32, String)>) -> String {
    s.as_ref()
        .map(|(n, t)| format!("{n}: {t}"))
        .unwrap_or_else(|| "(absent)".into())
}

/// One RDMA port of a NIC, as the steps of [`nic_port_down`] judge it.
struct Port<'c, 'a> {
    ctx: &'c Ctx<'a>,
    n: &'a Device,
    p: &'a RdmaPort,
    subject: Subject,
    /// `/sys/class/infiniband/<dev>/ports/<p>`.
    pb: String,
}

impl Port<'_, '_> {
    /// The port not up (an error on a paired NIC, else a warning), or its state unread.
    fn state(&self, paired: bool) -> Option<Finding> {
        let (n, p, subject, pb) = (self.n, self.p, &self.subject, &self.pb);
        let active = p.state.as_ref().map(|(n, _)| *n == 4 || *n == 5);
        let linkup = p.phys_state.as_ref().map(|(n, _)| *n == 5);
        if active == Some(false) || linkup == Some(false) {
            let down_sev = if paired {
                Severity::Error
            } else {
                Severity::Warning
            };
            return Some(
                Finding::new(
                    CheckId::NicPortDown,
                    down_sev,
                    subject.clone(),
                    format!(
                        "RDMA port {subject} ({}) is not up: state {}, phys_state {}{}",
                        n.bdf,
                        fmt_state(&p.state),
                        fmt_state(&p.phys_state),
                        if paired { "" } else { " (NIC not paired with a GPU)" }
                    ),
                    "check the cable and the switch port; for InfiniBand a port stuck in INIT needs a subnet manager (opensm / UFM); `ibstat` shows the same state",
                )
                .with(format!("{pb}/state"), fmt_state(&p.state))
                .with(format!("{pb}/phys_state"), fmt_state(&p.phys_state))
                .with_pairs(self.ctx.pairs_of(&n.bdf).map(|x| x.to_ref())),
            );
        }
        if active.is_none() || linkup.is_none() {
            return Some(
                Finding::new(
                    CheckId::NicPortDown,
                    Severity::Unknown,
                    subject.clone(),
                    format!("state of RDMA port {subject} unknown: state/phys_state not read"),
                    "audit the live machine",
                )
                .with(format!("{pb}/state"), fmt_state(&p.state))
                .with(format!("{pb}/phys_state"), fmt_state(&p.phys_state)),
            );
        }
        None
    }

    /// The port below what it supports (the netdev's fastest link mode, live only), or below
    /// its adapter family's top rate where what it supports is unknown (info).
    fn speed(
        &self,
        family: Option<(f64, &'static str)>,
        rate: f64,
        rate_raw: &str,
    ) -> Option<Finding> {
        let (ctx, n, subject, pb) = (self.ctx, self.n, &self.subject, &self.pb);
        // The port's own ceiling: the netdev's fastest supported link mode (live only).
        let netdev_max = n
            .os_devices
            .iter()
            .filter(|o| o.kind == crate::model::OsDeviceKind::Net)
            .filter_map(|o| o.link_modes_max_mbps.map(|m| (o.name.as_str(), m)))
            .max_by_key(|(_, m)| *m);
        match (netdev_max, family) {
            (Some((ifname, sup)), _) if rate + 0.5 < sup as f64 / 1000.0 => {
                let sup_g = sup as f64 / 1000.0;
                Some(
                    Finding::new(
                        CheckId::NicPortDown,
                        Severity::Warning,
                        subject.clone(),
                        format!("RDMA port {subject} runs at {rate} Gb/s; the port supports {sup_g} Gb/s ({ifname}'s link modes)"),
                        "check the cable, transceiver and switch port speed (`ethtool` shows the supported and advertised modes); ignore for a split cable by design",
                    )
                    .with(format!("{pb}/rate"), rate_raw.to_string())
                    .with(format!("ethtool {ifname} (supported link modes)"), format!("up to {sup} Mb/s")),
                )
            }
            (Some(_), _) => None,
            (None, Some((max, fam))) if rate + 0.5 < max => {
                let why = if ctx.topo.source.kind == "sysfs" && ctx.topo.source.path == "/" {
                    "the driver reports no speed modes (InfiniBand ports and IPoIB have none)"
                } else {
                    "supported link modes are read on the live machine only"
                };
                Some(
                    Finding::new(
                        CheckId::NicPortDown,
                        Severity::Info,
                        subject.clone(),
                        format!("RDMA port {subject} runs at {rate} Gb/s; {fam} adapters reach {max} Gb/s, but what this port supports is unknown ({why}): a lower-speed SKU or a split cable is no fault"),
                        "compare with the adapter's SKU (`ethtool <netdev>` supported link modes, or the part number in `lspci -vv`); if it should run faster, check the cable, transceiver and switch port",
                    )
                    .with(format!("{pb}/rate"), rate_raw.to_string())
                    .with(pci_path(&n.bdf, "device"), format!("0x{:04x}", n.device_id.unwrap_or(0))),
                )
            }
            _ => None,
        }
    }

    /// PCIe capacity of the NIC's link (capability shared by both ends) below the port rate;
    /// a Data Direct NIC moves its data over its DMA function's link.
    fn pcie(&self, rate: f64, rate_raw: String) -> Option<Finding> {
        let (ctx, subject, pb) = (self.ctx, &self.subject, &self.pb);
        let n = self
            .n
            .data_direct
            .as_ref()
            .and_then(|dd| ctx.topo.device(&dd.dma))
            .unwrap_or(self.n);
        let parent = n
            .parent
            .and_then(|p| ctx.topo.device(&p))
            .and_then(|d| d.link);
        let l = n.link.unwrap_or_default();
        let gts = match (l.max_gts, parent.and_then(|x| x.max_gts)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let w = match (l.max_width, parent.and_then(|x| x.max_width)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let gbps = pcie_link_gbytes(gts, w)? * 8.0;
        (gbps < rate).then(|| {
            Finding::new(
                CheckId::NicPortDown,
                Severity::Warning,
                subject.clone(),
                format!(
                    "PCIe link of {} ({} GT/s x{}, {gbps:.0} Gb/s) cannot carry the port rate {rate} Gb/s",
                    n.bdf,
                    gts.unwrap_or(0.0),
                    w.unwrap_or(0)
                ),
                "move the adapter to a slot of the adapter's full PCIe generation and width",
            )
            .with(format!("{pb}/rate"), rate_raw)
            .with(pci_path(&n.bdf, "max_link_speed"), format!("{:.1} GT/s PCIe", gts.unwrap_or(0.0)))
            .with(pci_path(&n.bdf, "max_link_width"), w.unwrap_or(0).to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::analysis::classify::Classifier;

    #[test]
    fn clean_ports_have_no_findings() {
        assert!(
            nic_port_down(&Ctx::new(&Classifier::new(&clean(), &Default::default()))).is_empty()
        );
    }

    #[test]
    fn down_port_and_low_rate() {
        let mut d = hgx(2);
        edit(&mut d, "0000:14:00.0", |n| {
            n.os_devices[0].ports[0].state = Some((1, "DOWN".into()));
            n.os_devices[0].ports[0].phys_state = Some((3, "Disabled".into()));
        });
        edit(&mut d, "0000:34:00.0", |n| {
            n.os_devices[0].ports[0].rate_gbps = Some(200.0);
            n.os_devices[0].ports[0].rate_text = Some("200 Gb/sec (2X NDR)".into());
        });
        let t = topo(d, machine());
        let f = nic_port_down(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 2, "{f:?}");
        let down = f
            .iter()
            .find(|x| x.subject.to_string() == "mlx5_0/1")
            .unwrap();
        assert_eq!(down.severity, Severity::Warning); // no pairs in a bare Ctx
        assert_eq!(
            down.evidence[0].path,
            "/sys/class/infiniband/mlx5_0/ports/1/state"
        );
        assert_eq!(down.evidence[0].value, "1: DOWN");
        let slow = f
            .iter()
            .find(|x| x.subject.to_string() == "mlx5_1/1")
            .unwrap();
        // Below the family's top rate, but what the port supports is unknown: info.
        assert_eq!(slow.severity, Severity::Info);
        assert!(slow.summary.contains("ConnectX-7"));
        assert!(slow.summary.contains("lower-speed SKU"), "{}", slow.summary);
    }

    /// The port's own supported link modes decide: a 200 Gb/s port that supports 400 is
    /// degraded (warning), one whose fastest mode is 200 is a lower-speed SKU (no finding).
    #[test]
    fn supported_link_modes_decide_the_sku() {
        let run = |sup: u64| {
            let mut d = hgx(2);
            edit(&mut d, "0000:34:00.0", |n| {
                n.os_devices[0].ports[0].rate_gbps = Some(200.0);
                n.os_devices[0].ports[0].rate_text = Some("200 Gb/sec (2X NDR)".into());
                let mut nd = crate::model::OsDevice::new(crate::model::OsDeviceKind::Net, "eth1");
                nd.link_modes_max_mbps = Some(sup);
                n.os_devices.push(nd);
            });
            let t = topo(d, machine());
            nic_port_down(&Ctx::new(&Classifier::new(&t, &Default::default())))
        };
        let f = run(400_000);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].summary.contains("the port supports 400 Gb/s"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].evidence[1].path, "ethtool eth1 (supported link modes)");
        assert!(
            run(200_000).is_empty(),
            "a 200 Gb/s SKU at 200 Gb/s is no fault"
        );
    }

    #[test]
    fn pcie_below_port_rate() {
        let mut d = hgx(2);
        edit(&mut d, "0000:14:00.0", |n| {
            let l = n.link.as_mut().unwrap();
            l.max_gts = Some(16.0);
            l.current_gts = Some(16.0);
        });
        let t = topo(d, machine());
        let f = nic_port_down(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].summary.contains("cannot carry"), "{}", f[0].summary);
    }
}
