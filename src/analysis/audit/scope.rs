//! What the input let the audit judge, for the report's headline: the input could not
//! identify its devices (operator text with no names or IDs, or a grep that kept only bridges:
//! verdict `unknown`), or it holds no GPU, accelerator or RDMA NIC (verdict `pass`, "nothing
//! to judge"). Facts: the topology's devices, their class codes, vendor IDs and RDMA devices.

use crate::model::{DeviceKind, OsDeviceKind, Topology};

/// Why nothing was judged, when nothing was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotJudged {
    /// The text cannot tell whether the node has GPUs or RDMA NICs: the reason.
    CannotTell(String),
    /// The input holds no GPU, accelerator or RDMA NIC: what it holds.
    NothingToJudge(String),
}

/// Decides [`NotJudged`] from the topology; `None` when there is a GPU, an accelerator or an
/// RDMA NIC to judge.
pub fn not_judged(topo: &Topology) -> Option<NotJudged> {
    let gpus = topo
        .devices
        .iter()
        .filter(|d| {
            (d.kind == DeviceKind::Gpu && !(d.vendor_id == Some(0x8086) && d.parent.is_none()))
                || d.kind == DeviceKind::Accelerator
        })
        .count();
    let rdma = topo
        .devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Nic)
        .filter(|d| d.os_devices.iter().any(|o| o.kind == OsDeviceKind::Rdma))
        .count();
    if gpus + rdma > 0 {
        return None;
    }
    if topo.source.kind == "lspci" {
        // A whole listing of a machine always has endpoints (USB, SATA, a BMC's VGA …) that
        // pciutils names; text without any is an excerpt or a bare tree.
        let named = topo.devices.iter().any(|d| d.vendor_id.is_some());
        let endpoint = topo
            .devices
            .iter()
            .any(|d| d.vendor_id.is_some() && d.class >> 16 != 0x06);
        if !named {
            return Some(NotJudged::CannotTell(format!(
                "the text names none of its {} device(s) (a bare `lspci -t` prints addresses only, no vendor, class or name): whether this node has GPUs or RDMA NICs cannot be told; `lspci -tv` or `lspci -nn` names them",
                topo.devices.len()
            )));
        }
        if !endpoint {
            return Some(NotJudged::CannotTell(format!(
                "the text lists only bridges ({} device(s), an excerpt such as `lspci | grep PLX` or `grep -i bridge`): whether this node has GPUs or RDMA NICs cannot be told; the whole `lspci -tv` or `lspci -vvv` shows them",
                topo.devices.len()
            )));
        }
    }
    let nics = topo
        .devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Nic)
        .count();
    Some(NotJudged::NothingToJudge(format!(
        "no GPU, accelerator or RDMA NIC in this input ({} PCI function(s), {nics} NIC(s) without an RDMA device)",
        topo.devices.len()
    )))
}
