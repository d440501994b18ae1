//! Kubernetes DRA standard device attributes per GPU and NIC, as JSON (YAML readers accept it:
//! JSON is YAML 1.2).
//!
//! Data: each device's PCI address, its host bridge (`pciDDDD:BB`, the first component of its
//! sysfs path — what `deviceattribute.GetPCIeRootAttributeByPCIBusID` derives), and its
//! `numa_node` (left out when the kernel reports -1, as the attribute's definition requires).
//! Attribute names and value shapes: shared/reference/ecosystem.md §1.5; values are written the
//! way a ResourceSlice's `spec.devices[].attributes` holds them (`{"string": …}`, `{"int": …}`).
//!
//! Besides the devices, `pcieRoots` says how coarse `pcieRoot` is on this node: which switches
//! and endpoints share each root, so a `matchAttribute: resource.kubernetes.io/pcieRoot`
//! constraint can be judged (on AMD EPYC one root can hold several switches).

use crate::model::{Device, DeviceKind, Topology};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Version tag of the DRA document.
pub const DRA_SCHEMA: &str = "peerpath.dra/1";
/// `resource.kubernetes.io/pcieRoot`.
pub const ATTR_PCIE_ROOT: &str = "resource.kubernetes.io/pcieRoot";
/// `resource.kubernetes.io/pciBusID`.
pub const ATTR_PCI_BUS_ID: &str = "resource.kubernetes.io/pciBusID";
/// `resource.kubernetes.io/numaNode`.
pub const ATTR_NUMA_NODE: &str = "resource.kubernetes.io/numaNode";

/// One device with its DRA attributes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DraDevice {
    /// A DNS-label device name (`gpu-0000-18-00-0`).
    pub name: String,
    /// `gpu` or `nic`.
    pub kind: String,
    /// RDMA / netdev names, for people.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub os_names: Vec<String>,
    /// Attribute name → ResourceSlice-style typed value.
    pub attributes: BTreeMap<String, Value>,
}

/// Devices sharing one `pcieRoot` value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RootGroup {
    /// The `pcieRoot` value.
    pub pcie_root: String,
    /// PCIe switches under this root (ids from the scan).
    pub switches: Vec<String>,
    /// Device names under this root.
    pub devices: Vec<String>,
}

/// The whole DRA document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DraDoc {
    /// Always [`DRA_SCHEMA`].
    pub schema: String,
    /// GPUs then NICs, each in address order.
    pub devices: Vec<DraDevice>,
    /// How devices group by `pcieRoot`.
    pub pcie_roots: Vec<RootGroup>,
}

/// DNS-label form of a device name: `<kind>-dddd-bb-dd-f`.
pub fn device_name(kind: &str, d: &Device) -> String {
    format!("{kind}-{}", d.bdf.to_string().replace([':', '.'], "-"))
}

/// Builds the DRA document (GPUs and NICs; SR-IOV VFs left out).
pub fn build(t: &Topology) -> DraDoc {
    let mut devices = Vec::new();
    let mut roots: BTreeMap<String, RootGroup> = BTreeMap::new();
    for (kind, k) in [("gpu", DeviceKind::Gpu), ("nic", DeviceKind::Nic)] {
        for d in t.of_kind(k) {
            let name = device_name(kind, d);
            let mut attributes = BTreeMap::new();
            attributes.insert(
                ATTR_PCIE_ROOT.to_string(),
                json!({ "string": d.host_bridge }),
            );
            attributes.insert(
                ATTR_PCI_BUS_ID.to_string(),
                json!({ "string": d.bdf.to_string() }),
            );
            if let Some(n) = d.numa_node {
                attributes.insert(ATTR_NUMA_NODE.to_string(), json!({ "int": n }));
            }
            let g = roots
                .entry(d.host_bridge.clone())
                .or_insert_with(|| RootGroup {
                    pcie_root: d.host_bridge.clone(),
                    switches: Vec::new(),
                    devices: Vec::new(),
                });
            g.devices.push(name.clone());
            devices.push(DraDevice {
                name,
                kind: kind.to_string(),
                os_names: d
                    .rdma_names()
                    .chain(d.net_names())
                    .map(str::to_string)
                    .collect(),
                attributes,
            });
        }
    }
    for s in &t.switches {
        if let Some(hb) = t.device(&s.upstream).map(|d| d.host_bridge.clone())
            && let Some(g) = roots.get_mut(&hb)
        {
            g.switches.push(s.id.clone());
        }
    }
    DraDoc {
        schema: DRA_SCHEMA.to_string(),
        devices,
        pcie_roots: roots.into_values().collect(),
    }
}

/// Renders the DRA document as pretty JSON.
pub fn render(t: &Topology) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&build(t))? + "\n")
}
