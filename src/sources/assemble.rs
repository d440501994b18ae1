//! The one assembly step every source ends with. A source discovers raw facts (devices with
//! their parents, NUMA nodes, machine facts, NVLinks, warnings) into a [`RawTopology`];
//! [`assemble`] then infers the structure (bridge roles, switches, host bridges), builds the
//! index and graph, tallies the NVLinks and names the devices, in that order, once for every
//! source. hwloc's discovery phases and NCCL's sysfs → XML → graph are the models: discovery
//! never classifies, assembly never reads a file except the PCI ID database.

use super::tree;
use crate::model::bdf::Bdf;
use crate::model::device::Device;
use crate::model::topology::{
    HostBridge, MachineInfo, NumaNode, NvLink, SourceInfo, Topology, Warning,
};
use std::collections::BTreeMap;
use std::path::Path;

/// How the PCI structure is to be found.
#[derive(Debug, Clone, PartialEq)]
pub enum Structure {
    /// From the PCI tree: bridge roles from config space or the tree's shape, switches from
    /// upstream ports and their downstream ports, host bridges from the devices
    /// ([`tree::infer_structure`]; sysfs, hwloc XML).
    Infer,
    /// A tree that keeps only switch upstream ports (NCCL XML, which records each device's
    /// sysfs grandparent): each `SwitchUpstream` device is a switch without downstream ports,
    /// with this evidence; the host bridges are the source's own.
    UpstreamOnly {
        /// Host bridges the source synthesized.
        host_bridges: Vec<HostBridge>,
        /// [`crate::model::Switch::evidence`] of every switch.
        evidence: &'static str,
    },
}

/// NVLinks as a source observed them, tallied into [`NvLink`]s: GPU pairs and, per GPU, its
/// links into an NVSwitch fabric. A version is kept from the first observation that knows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NvLinkTally {
    pairs: BTreeMap<(Bdf, Bdf), (u32, Option<u32>)>,
    fabric: BTreeMap<Bdf, (u32, Option<u32>)>,
}

impl NvLinkTally {
    /// `count` links between GPUs `a` and `b` (either order). Both GPUs of a pair report the
    /// same links, so repeated observations of a pair keep the larger count.
    pub fn pair(&mut self, a: Bdf, b: Bdf, count: u32, version: Option<u32>) {
        let key = if a < b { (a, b) } else { (b, a) };
        let e = self.pairs.entry(key).or_insert((0, version));
        e.0 = e.0.max(count);
        e.1 = e.1.or(version);
    }

    /// `count` links from `gpu` into the NVSwitch fabric; observations add up.
    pub fn fabric(&mut self, gpu: Bdf, count: u32, version: Option<u32>) {
        let e = self.fabric.entry(gpu).or_insert((0, version));
        e.0 += count;
        e.1 = e.1.or(version);
    }

    /// Whether nothing was observed.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.fabric.is_empty()
    }

    /// The links: pairs (`b` set) and fabric links (`b = None`), ordered by `(a, b)`.
    pub fn into_links(self) -> Vec<NvLink> {
        let mut out: Vec<NvLink> = self
            .pairs
            .into_iter()
            .map(|((a, b), (count, version))| NvLink {
                a,
                b: Some(b),
                count,
                version,
            })
            .collect();
        out.extend(self.fabric.into_iter().map(|(a, (count, version))| NvLink {
            a,
            b: None,
            count,
            version,
        }));
        out.sort_by_key(|l| (l.a, l.b));
        out
    }
}

/// What a source discovered, before assembly. Devices carry their parent (`None` directly
/// under a host bridge), host bridge name, IDs, class and the facts read about them; names a
/// source carried itself (hwloc's `PCIVendor`/`PCIDevice` infos) are kept where the PCI ID
/// database has none.
#[derive(Debug, Clone)]
pub struct RawTopology {
    /// PCI functions, in any order (assembly sorts them by address).
    pub devices: Vec<Device>,
    /// NUMA nodes, in any order (assembly keeps the order given).
    pub numa_nodes: Vec<NumaNode>,
    /// The source, as the topology will name it.
    pub source: SourceInfo,
    /// Node-wide facts, as discovered.
    pub machine: MachineInfo,
    /// How to find the PCI structure.
    pub structure: Structure,
    /// NVLinks observed.
    pub nvlinks: NvLinkTally,
    /// Whether NVLink state was visible at all (an empty tally then means "no NVLinks").
    pub nvlink_visible: bool,
    /// xGMI pairs observed (each GPU of a pair may report it; assembly folds them).
    pub xgmi: Vec<crate::model::amd::XgmiLink>,
    /// Whether xGMI state was visible at all (an empty list then means "no xGMI").
    pub xgmi_visible: bool,
    /// What discovery had to assume or skip.
    pub warnings: Vec<Warning>,
    /// The host described, when the input holds several or names its one host.
    pub host_scope: Option<crate::model::HostScope>,
}

impl RawTopology {
    /// An empty discovery of `source`, structure to be inferred.
    pub fn new(source: SourceInfo, machine: MachineInfo) -> Self {
        RawTopology {
            devices: Vec::new(),
            numa_nodes: Vec::new(),
            source,
            machine,
            structure: Structure::Infer,
            nvlinks: NvLinkTally::default(),
            nvlink_visible: false,
            xgmi: Vec::new(),
            xgmi_visible: false,
            warnings: Vec::new(),
            host_scope: None,
        }
    }
}

/// Assembles discovered facts into a [`Topology`]: structure, index and graph, NVLinks, then
/// names from the PCI ID database at `pci_ids` (`None`: no names from a database) and, for
/// devices it does not name, from their driver's record. Warnings
/// keep the order discovery, structure, naming.
pub fn assemble(raw: RawTopology, pci_ids: Option<&Path>) -> Topology {
    let RawTopology {
        source,
        machine,
        numa_nodes,
        devices,
        structure,
        nvlinks,
        nvlink_visible,
        xgmi,
        xgmi_visible,
        mut warnings,
        host_scope,
    } = raw;
    let (devices, hbs, switches) = match structure {
        Structure::Infer => tree::infer_structure(devices, &numa_nodes, &mut warnings),
        Structure::UpstreamOnly {
            host_bridges,
            evidence,
        } => {
            let (devices, switches) =
                tree::upstream_only_structure(devices, evidence, &mut warnings);
            (devices, host_bridges, switches)
        }
    };
    let mut topo = Topology::new(
        source, machine, numa_nodes, hbs, devices, switches, warnings,
    );
    topo.nvlinks = nvlinks.into_links();
    topo.nvlink_visible = nvlink_visible;
    topo.xgmi = crate::model::amd::fold_xgmi(xgmi);
    topo.xgmi_visible = xgmi_visible;
    topo.host_scope = host_scope;
    if let Some(p) = pci_ids {
        super::naming::name_devices(p, &mut topo);
    }
    super::naming::name_from_driver(&mut topo);
    topo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DeviceKind;

    fn b(s: &str) -> Bdf {
        s.parse().unwrap()
    }

    fn device(bdf: &str, parent: Option<&str>, class: u32) -> Device {
        let mut d = Device::new(bdf.parse().unwrap(), "pci0000:00".into(), String::new());
        d.parent = parent.map(|p| p.parse().unwrap());
        d.class = class;
        d.vendor_id = Some(0x10de);
        d.kind = crate::model::device::kind_from_class(class, d.vendor_id, d.device_id);
        d
    }

    #[test]
    fn tally_keeps_pairs_once_and_adds_fabric_links() {
        let mut t = NvLinkTally::default();
        t.pair(b("0000:2a:00.0"), b("0000:18:00.0"), 4, None);
        t.pair(b("0000:18:00.0"), b("0000:2a:00.0"), 3, Some(4));
        t.fabric(b("0000:40:00.0"), 1, Some(4));
        t.fabric(b("0000:40:00.0"), 1, None);
        assert!(!t.is_empty());
        assert_eq!(
            t.into_links(),
            vec![
                NvLink {
                    a: b("0000:18:00.0"),
                    b: Some(b("0000:2a:00.0")),
                    count: 4,
                    version: Some(4)
                },
                NvLink {
                    a: b("0000:40:00.0"),
                    b: None,
                    count: 2,
                    version: Some(4)
                }
            ]
        );
    }

    #[test]
    fn assembly_infers_indexes_and_tallies() {
        let src = SourceInfo {
            kind: "test".into(),
            path: "t".into(),
            limitations: vec![],
        };
        let mut raw = RawTopology::new(src, MachineInfo::default());
        raw.devices = vec![
            device("0000:01:00.0", Some("0000:00:01.0"), 0x030200),
            device("0000:00:01.0", None, 0x060400),
        ];
        raw.devices[0].vendor_name = Some("carried".into());
        raw.nvlinks.fabric(b("0000:01:00.0"), 18, Some(4));
        raw.nvlink_visible = true;
        let t = assemble(raw, None);
        assert_eq!(t.devices[0].kind, DeviceKind::RootPort);
        assert_eq!(t.host_bridges.len(), 1);
        assert_eq!(t.device_index(&b("0000:01:00.0")), Some(1));
        assert_eq!(t.nvlinks[0].count, 18);
        assert!(t.nvlink_visible);
        // Without a database the names a source carried stay.
        assert_eq!(
            t.device(&b("0000:01:00.0")).unwrap().vendor_name.as_deref(),
            Some("carried")
        );
    }

    #[test]
    fn upstream_only_structure_keeps_given_host_bridges() {
        let src = SourceInfo {
            kind: "test".into(),
            path: "t".into(),
            limitations: vec![],
        };
        let mut raw = RawTopology::new(src, MachineInfo::default());
        let mut up = device("0000:17:00.0", None, 0x060400);
        up.kind = DeviceKind::SwitchUpstream;
        raw.devices = vec![device("0000:19:00.0", Some("0000:17:00.0"), 0x030200), up];
        raw.structure = Structure::UpstreamOnly {
            host_bridges: vec![HostBridge {
                name: "pci0000:00".into(),
                domain: 0,
                bus: 0,
                numa_node: Some(0),
                cpus: None,
            }],
            evidence: "test",
        };
        let t = assemble(raw, None);
        assert_eq!(t.switches.len(), 1);
        assert_eq!(t.switches[0].evidence, "test");
        assert!(t.switches[0].downstream.is_empty());
        assert_eq!(
            t.device(&b("0000:19:00.0")).unwrap().switch.as_deref(),
            Some("sw0")
        );
        assert_eq!(t.host_bridges[0].numa_node, Some(0));
    }
}
