//! The order the kernel registered its RDMA devices in: the order `nvidia-smi topo -m` numbers
//! NICs by and libibverbs (so NCCL) lists devices in. sysfs does not show it (a device's
//! attributes carry no index, and `uverbsN` numbers are reused lowest-first, so a bond created
//! after its ports' devices takes a low number); the kernel's RDMA netlink interface does: each
//! `ib_device` gets a cyclically allocated index at registration, which `rdma dev` prints before
//! the name. The live scan asks netlink ([`read_live`]); `peerpath capture` stores the answer as
//! `peerpath-rdma.json` (schema [`RDMA_SCHEMA`]) so a snapshot numbers NICs as the live machine
//! did ([`apply_stored`]). The indices land in [`crate::model::OsDevice::index`].

use super::fsroot::FsRoot;
use crate::model::device::OsDeviceKind;
use crate::model::topology::{Topology, Warning};
use crate::parse::nldev;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Name of the stored registration order at the top of a capture tarball.
pub const RDMA_NAME: &str = "peerpath-rdma.json";

/// Schema tag of [`RDMA_NAME`].
pub const RDMA_SCHEMA: &str = "peerpath.rdma/1";

/// One RDMA device as netlink lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RdmaIndex {
    /// The kernel's device index (`RDMA_NLDEV_ATTR_DEV_INDEX`).
    pub index: u32,
    /// The device name (`mlx5_0`).
    pub name: String,
}

/// The registration order as read from the kernel, stored in [`RDMA_NAME`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RdmaOrder {
    /// Always [`RDMA_SCHEMA`].
    pub schema: String,
    /// Whether netlink answered.
    pub read: bool,
    /// What happened, in words (`netlink: 9 RDMA devices`, or why not).
    pub message: String,
    /// The devices, in the kernel's index order.
    pub devices: Vec<RdmaIndex>,
}

/// Most datagrams read from one dump (a node has at most a few hundred RDMA devices).
const MAX_DATAGRAMS: usize = 256;

fn netlink_dump() -> Result<Vec<(u32, String)>, String> {
    use rustix::net::{
        AddressFamily, RecvFlags, SendFlags, SocketType, netlink, recv, send, socket,
        sockopt::{Timeout, set_socket_timeout},
    };
    let fd = socket(AddressFamily::NETLINK, SocketType::RAW, Some(netlink::RDMA))
        .map_err(|e| format!("no RDMA netlink socket ({e}): kernel without RDMA support"))?;
    let wait = Some(std::time::Duration::from_secs(2));
    set_socket_timeout(&fd, Timeout::Recv, wait).map_err(|e| format!("socket timeout: {e}"))?;
    send(&fd, &nldev::dump_request(1), SendFlags::empty())
        .map_err(|e| format!("netlink request: {e}"))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..MAX_DATAGRAMS {
        let (_, n) = recv(&fd, &mut buf[..], RecvFlags::empty())
            .map_err(|e| format!("netlink reply: {e}"))?;
        if n == 0 || nldev::parse_replies(&buf[..n.min(buf.len())], &mut out)? {
            return Ok(out);
        }
    }
    Err(format!("no end of dump after {MAX_DATAGRAMS} replies"))
}

/// Asks the running kernel for every RDMA device's index over netlink. Never fails: a kernel
/// without RDMA support, a refused socket or a malformed reply is said in `message`.
pub fn read_live() -> RdmaOrder {
    match netlink_dump() {
        Ok(mut d) => {
            d.sort();
            RdmaOrder {
                schema: RDMA_SCHEMA.into(),
                read: true,
                message: format!("netlink: {} RDMA device(s)", d.len()),
                devices: d
                    .into_iter()
                    .map(|(index, name)| RdmaIndex { index, name })
                    .collect(),
            }
        }
        Err(e) => RdmaOrder {
            schema: RDMA_SCHEMA.into(),
            read: false,
            message: format!("RDMA registration order not read: {e}"),
            devices: Vec::new(),
        },
    }
}

/// Sets the index of every RDMA device of the topology the order names; when the order was
/// not read but the topology has RDMA devices, a warning says that NIC numbers are rebuilt.
pub fn apply(topo: &mut Topology, o: &RdmaOrder) {
    let mut rdma = 0;
    for d in &mut topo.devices {
        for od in d
            .os_devices
            .iter_mut()
            .filter(|od| od.kind == OsDeviceKind::Rdma)
        {
            rdma += 1;
            if let Some(x) = o.devices.iter().find(|x| x.name == od.name) {
                od.index = Some(x.index);
            }
        }
    }
    if rdma > 0 && !o.read {
        topo.warnings.push(Warning {
            path: "netlink:rdma".into(),
            message: format!(
                "{}; NIC numbers are rebuilt from PCI addresses and may differ from nvidia-smi's",
                o.message
            ),
        });
    }
}

/// Reads [`RDMA_NAME`] from a capture root, if present, and applies it. A present but
/// unreadable file is an error (the capture is damaged), never silently ignored.
pub fn apply_stored(fs: &dyn FsRoot, topo: &mut Topology) -> anyhow::Result<()> {
    let p = Path::new(RDMA_NAME);
    if fs.kind(p).is_none() {
        return Ok(());
    }
    let b = super::fsroot::read_whole(fs, p, 1 << 20)
        .map_err(|e| anyhow::anyhow!("{}: {RDMA_NAME}: {e}", fs.describe()))?;
    let o: RdmaOrder = serde_json::from_slice(&b)
        .map_err(|e| anyhow::anyhow!("{}: {RDMA_NAME} is not {RDMA_SCHEMA}: {e}", fs.describe()))?;
    if o.schema != RDMA_SCHEMA {
        anyhow::bail!(
            "{}: {RDMA_NAME} has schema {:?}, expected {RDMA_SCHEMA:?}",
            fs.describe(),
            o.schema
        );
    }
    apply(topo, &o);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fsroot::{MemNode, MemRoot};

    #[test]
    fn stored_order_sets_indices_and_bad_files_are_errors() {
        let mut b = crate::analysis::testkit::TopoBuilder::new(&["0-3"]);
        b.nic("0000:01:00.0", None, Some(0), &["mlx5_0"]);
        b.nic("0000:02:00.0", None, Some(0), &["mlx5_bond_0"]);
        let mut t = b.build();
        let o = RdmaOrder {
            schema: RDMA_SCHEMA.into(),
            read: true,
            message: "netlink: 2 RDMA device(s)".into(),
            devices: vec![
                RdmaIndex {
                    index: 0,
                    name: "mlx5_0".into(),
                },
                RdmaIndex {
                    index: 9,
                    name: "mlx5_bond_0".into(),
                },
            ],
        };
        let mut m = MemRoot::new("t");
        m.insert(
            RDMA_NAME.into(),
            MemNode::File(serde_json::to_vec(&o).unwrap()),
        );
        apply_stored(&m, &mut t).unwrap();
        let ix: Vec<Option<u32>> = t
            .devices
            .iter()
            .flat_map(|d| d.os_devices.iter().map(|o| o.index))
            .collect();
        assert_eq!(ix, [Some(0), Some(9)]);
        let mut bad = MemRoot::new("t");
        bad.insert(RDMA_NAME.into(), MemNode::File(b"{".to_vec()));
        assert!(apply_stored(&bad, &mut t).is_err());
        let failed = RdmaOrder {
            read: false,
            devices: vec![],
            message: "RDMA registration order not read: x".into(),
            ..o
        };
        let before = t.warnings.len();
        apply(&mut t, &failed);
        assert_eq!(t.warnings.len(), before + 1);
    }

    /// On a kernel without RDMA (the CI machines) the live read says why, without panicking.
    #[test]
    fn live_read_never_panics() {
        let o = read_live();
        assert_eq!(o.schema, RDMA_SCHEMA);
        assert!(!o.message.is_empty());
    }
}
