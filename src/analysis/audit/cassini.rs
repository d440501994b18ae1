//! `nic-port-down` for an HPE Cassini (Slingshot) NIC, whose CXI device has no InfiniBand ports.
//!
//! Facts (read by the scanner into the model): the driver's link state, `properties/link` of the
//! NIC's PCI function (shs-cxi-driver `drivers/net/ethernet/hpe/ss1/cass_sysfs.c`, `link_show`:
//! `1` when the PHY state is `CASS_PHY_RUNNING`, else `0`), and the `operstate` (and, where that
//! is `unknown`, `carrier`) of the Cassini's Ethernet netdev, which is what libfabric's cxi
//! provider reads before it offers the device (ofiwg/libfabric `prov/cxi/src/cxip_if.c`:
//! `netdev_link` takes `up` as up, `unknown` as the carrier says, anything else as down, and
//! `cxip_get_if` refuses a device whose link is down: "Interface cxiN link down").

use super::{CheckId, Ctx, Finding, Severity, Subject, pci_path};
use crate::model::{Device, OsDevice, OsDeviceKind};

/// A netdev's link as libfabric's cxi provider judges it (`netdev_link`): `up` (by prefix, as
/// `strncmp`) is up; `unknown` defers to the carrier; any other state is down. `None` when the
/// state (or the carrier it needs) was not read.
fn netdev_link(nd: &OsDevice) -> Option<bool> {
    let state = nd.operstate.as_deref()?;
    if state.starts_with("up") {
        Some(true)
    } else if state.starts_with("unknown") {
        nd.carrier
    } else {
        Some(false)
    }
}

/// What was read about one Cassini's link: `(path, raw value, up?)` per fact.
fn link_facts(n: &Device, od: &OsDevice) -> Vec<(String, String, bool)> {
    let mut facts = Vec::new();
    if let Some(up) = od.cxi_link {
        facts.push((
            pci_path(&n.bdf, "properties/link"),
            u8::from(up).to_string(),
            up,
        ));
    }
    for nd in n.os_devices.iter().filter(|o| o.kind == OsDeviceKind::Net) {
        let Some(up) = netdev_link(nd) else { continue };
        let state = nd.operstate.clone().unwrap_or_default();
        facts.push((format!("/sys/class/net/{}/operstate", nd.name), state, up));
        if let Some(c) = nd
            .carrier
            .filter(|_| nd.operstate.as_deref() == Some("unknown"))
        {
            facts.push((
                format!("/sys/class/net/{}/carrier", nd.name),
                u8::from(c).to_string(),
                up,
            ));
        }
    }
    facts
}

/// The link of Cassini NIC `n` (CXI device or the name the input gives it, `od`): down (an
/// error on a NIC paired with a GPU, else a warning), up (no finding), or unknown with why.
pub fn link(ctx: &Ctx, n: &Device, od: &OsDevice, paired: bool) -> Option<Finding> {
    let facts = link_facts(n, od);
    let subject = Subject::RdmaDevice(od.name.clone());
    if facts.is_empty() {
        let f = Finding::new(
            CheckId::NicPortDown,
            Severity::Unknown,
            subject,
            format!(
                "link state of Cassini NIC {} ({}) unknown: a Cassini has no InfiniBand ports; its link is the driver's properties/link and its netdev's operstate, and this input ({}) has neither",
                od.name, n.bdf, ctx.topo.source.kind
            ),
            "audit the live machine, or a snapshot captured by this peerpath (it keeps properties/link and the netdev's operstate)",
        )
        .with(pci_path(&n.bdf, "properties/link"), "(not read)");
        return Some(f);
    }
    let down: Vec<&(String, String, bool)> = facts.iter().filter(|f| !f.2).collect();
    if down.is_empty() {
        return None;
    }
    let netdev_down = down.iter().any(|f| f.0.starts_with("/sys/class/net/"));
    let what: Vec<String> = down.iter().map(|f| format!("{} {}", f.0, f.1)).collect();
    let f = Finding::new(
        CheckId::NicPortDown,
        if paired {
            Severity::Error
        } else {
            Severity::Warning
        },
        subject,
        format!(
            "Cassini NIC {} ({}) link is down: {}{}{}",
            od.name,
            n.bdf,
            what.join("; "),
            if netdev_down {
                " (libfabric's cxi provider does not open a CXI device whose netdev link is down: NCCL's aws-ofi-nccl and MPI over libfabric do not see this NIC)"
            } else {
                ""
            },
            if paired {
                ""
            } else {
                " (NIC not paired with a GPU)"
            }
        ),
        "check the cable and the Slingshot switch port (the fabric manager shows the port), then the NIC's link in the kernel log (CXI_EVENT_LINK_DOWN)",
    );
    let f = facts
        .iter()
        .fold(f, |f, (path, raw, _)| f.with(path.clone(), raw.clone()));
    Some(f.with_pairs(ctx.pairs_of(&n.bdf).map(|x| x.to_ref())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nd(state: &str, carrier: Option<bool>) -> OsDevice {
        let mut d = OsDevice::new(OsDeviceKind::Net, "hsn0");
        d.operstate = Some(state.into());
        d.carrier = carrier;
        d
    }

    /// libfabric's rule (cxip_if.c `netdev_link`), state by state.
    #[test]
    fn netdev_link_as_libfabric_reads_it() {
        assert_eq!(netdev_link(&nd("up", None)), Some(true));
        assert_eq!(netdev_link(&nd("down", None)), Some(false));
        assert_eq!(netdev_link(&nd("lowerlayerdown", None)), Some(false));
        assert_eq!(netdev_link(&nd("dormant", None)), Some(false));
        assert_eq!(netdev_link(&nd("unknown", Some(true))), Some(true));
        assert_eq!(netdev_link(&nd("unknown", Some(false))), Some(false));
        assert_eq!(netdev_link(&nd("unknown", None)), None);
        assert_eq!(netdev_link(&OsDevice::new(OsDeviceKind::Net, "hsn0")), None);
    }
}
