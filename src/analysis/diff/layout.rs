//! The node as `diff` compares it ([`NodeLayout`]): every PCI function with the structural
//! features the matcher weighs (kind, IDs, the port and slot above it, NUMA node, the GPUs
//! nearest to it, serial numbers when the source kept them) and the facts the changes report
//! (link, ACS, AER, IOMMU group type, RDMA/netdev names); every classified endpoint pair's
//! `nvidia-smi topo -m` label; the audit findings with their subjects resolved to devices; a
//! few node facts.
//!
//! Data: the [`Topology`] (sysfs, snapshot, XML or JSON source), its paths model and one
//! [`Classifier`] (labels from the summaries, no words), and one [`audit::run_with`] over that
//! classifier. Nothing here compares two nodes.

use crate::analysis::audit::{self, AuditOptions, CheckId, Severity, Subject};
use crate::analysis::classify::{Classifier, ClassifyOptions, Label};
use crate::model::{Bdf, DeviceKind, Fact, LinkInfo, OsDeviceKind, Topology};
use std::collections::{BTreeMap, HashMap};

/// One PCI function as `diff` sees it. Every field is read from the [`Topology`] device of the
/// same address, its paths model entry or its classifier endpoint (named per field).
#[derive(Debug, Clone, PartialEq)]
pub struct DevRec {
    /// Address (`sys/bus/pci/devices` entry).
    pub bdf: Bdf,
    /// Kind (class code, refined by the tree).
    pub kind: DeviceKind,
    /// `vendor`/`device`.
    pub ids: Option<(u16, u16)>,
    /// `subsystem_vendor`/`subsystem_device`.
    pub subsys: Option<(u16, u16)>,
    /// Matrix name (`GPU3`, `NIC3`) when the classifier made it an endpoint.
    pub endpoint: Option<String>,
    /// RDMA device names (`/sys/class/infiniband`).
    pub rdma: Vec<String>,
    /// Netdev names (`/sys/class/net`).
    pub net: Vec<String>,
    /// A serial the source kept: the GPU UUID of the NVIDIA `information` file or NVML, when
    /// neither redacted nor masked by the driver.
    pub serial: Option<String>,
    /// NUMA node (paths model: own, else nearest bridge's, else host bridge's).
    pub numa: Option<u32>,
    /// Its PCIe link attributes.
    pub link: Option<LinkInfo>,
    /// Index of the port or bridge above it.
    pub parent: Option<usize>,
    /// Kinds of the ports above it, top first (`root-port/switch-upstream/switch-downstream`).
    pub place: String,
    /// Host bridge (`pci0000:d7`).
    pub host_bridge: String,
    /// Switch id of a switch port (`sw3`).
    pub switch: Option<String>,
    /// Physical slot name of a card (`sys/bus/pci/slots/<name>/address` naming its bus and
    /// device).
    pub slot: Option<String>,
    /// ACS controls that redirect peer-to-peer traffic (`ReqRedir+ CmpltRedir+`), ports only.
    pub acs: Option<String>,
    /// IOMMU group default-domain type (`identity`, `DMA`).
    pub iommu_type: Option<String>,
    /// AER totals: correctable, non-fatal, fatal (`aer_dev_*`), `None` when not read.
    pub aer: [Option<u64>; 3],
    /// An SR-IOV virtual function (`physfn` link).
    pub vf: bool,
    /// The GPUs (device indices) in the smallest subtree that holds this device and a GPU,
    /// below the host bridge; empty when no GPU shares a port with it.
    pub near_gpus: Vec<usize>,
    /// Position among the functions of its kind in address order.
    pub ordinal: usize,
}

impl DevRec {
    /// `vvvv:dddd`, or `?`.
    pub fn ids_text(&self) -> String {
        match self.ids {
            Some((v, d)) => format!("{v:04x}:{d:04x}"),
            None => "?".into(),
        }
    }
}

/// A finding's subject resolved to this node's devices.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SubjectRec {
    /// The node.
    Node,
    /// A device (by index), including a NIC named by its RDMA device.
    Device(usize),
    /// Port `n` of the RDMA device of a device.
    Port(usize, u32),
    /// Rail `k` of a profile.
    Rail(usize),
    /// A subject that names nothing in the topology (kept as its text).
    Other(String),
}

/// One audit finding of the node.
#[derive(Debug, Clone, PartialEq)]
pub struct FindingRec {
    /// Check id.
    pub id: CheckId,
    /// Severity.
    pub severity: Severity,
    /// Subject.
    pub subject: SubjectRec,
    /// The subject as the audit wrote it (`0000:4c:00.0`, `mlx5_3`).
    pub subject_text: String,
    /// The finding's one line.
    pub summary: String,
    /// Devices of the GPU–NIC pairs it concerns.
    pub pairs: Vec<usize>,
}

/// A node reduced to what `diff` compares and what `fleet` explains its outliers with. Built
/// by [`NodeLayout::of`].
#[derive(Debug, Clone)]
pub struct NodeLayout {
    /// Where the topology came from.
    pub source: String,
    /// Every PCI function, in topology order.
    pub devices: Vec<DevRec>,
    /// Every classified endpoint pair: device indices (lower endpoint first in matrix order)
    /// and the `nvidia-smi topo -m` label.
    pub labels: Vec<(usize, usize, Label)>,
    /// Audit findings.
    pub findings: Vec<FindingRec>,
    /// Node facts by name (`nvidia_driver`, `nvidia_peermem`, `iommu_units`, …).
    pub facts: BTreeMap<String, String>,
}

/// A GPU UUID that names a card: not redacted by `capture`, not masked by the driver.
fn usable_serial(v: &str) -> Option<String> {
    let v = v.trim();
    let body = v.strip_prefix("GPU-")?;
    let masked = body.chars().all(|c| c == '?' || c == '-');
    (!masked && !v.contains("redacted")).then(|| v.to_string())
}

impl NodeLayout {
    /// Builds the layout of a topology: one classifier, one audit.
    pub fn of(t: &Topology) -> NodeLayout {
        let cl = Classifier::new(t, &ClassifyOptions::default());
        let report = audit::run_with(&cl, &AuditOptions::default());
        Self::with(&cl, &report)
    }

    /// Builds the layout from an existing classification and its audit report.
    pub fn with(cl: &Classifier, report: &audit::Report) -> NodeLayout {
        let t = cl.topo();
        let paths = cl.paths();
        let n = t.devices.len();
        let eps = cl.endpoints();
        let ep_name: HashMap<Bdf, &str> = eps.iter().map(|e| (e.bdf, e.name.as_str())).collect();
        let gpus: Vec<u32> = (0..n as u32)
            .filter(|&i| t.devices[i as usize].kind == DeviceKind::Gpu)
            .collect();
        let mut ordinal_of: HashMap<(DeviceKind, bool), usize> = HashMap::new();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| t.devices[i].bdf);
        let mut ordinal = vec![0; n];
        for &i in &order {
            let d = &t.devices[i];
            let k = ordinal_of.entry((d.kind, d.is_vf())).or_insert(0);
            ordinal[i] = *k;
            *k += 1;
        }
        let mut devices = Vec::with_capacity(n);
        for (i, d) in t.devices.iter().enumerate() {
            let ix = i as u32;
            let chain = paths.chain(ix);
            let parent = d.parent.and_then(|p| t.device_index(&p));
            let place = chain
                .iter()
                .skip(1)
                .rev()
                .map(|&a| paths.device(a).kind.as_str())
                .collect::<Vec<_>>()
                .join("/");
            // The GPUs sharing the deepest common ancestor with this device.
            let mut near_gpus = Vec::new();
            let mut best = 0usize;
            for &g in &gpus {
                if g == ix {
                    continue;
                }
                let Some(m) = paths.meet(ix, g) else { continue };
                let shared = chain.len() - m.ia;
                if shared > best {
                    best = shared;
                    near_gpus.clear();
                }
                if shared == best {
                    near_gpus.push(g as usize);
                }
            }
            let serial = d
                .os_devices
                .iter()
                .filter(|o| o.kind == OsDeviceKind::NvidiaGpu)
                .flat_map(|o| o.attrs.iter())
                .filter(|(k, _)| k.eq_ignore_ascii_case("GPU UUID") || k == "uuid")
                .find_map(|(_, v)| usable_serial(v));
            let aer = [&d.aer_correctable, &d.aer_nonfatal, &d.aer_fatal]
                .map(|c| c.as_ref().map(|c| c.total_or_sum()));
            devices.push(DevRec {
                bdf: d.bdf,
                kind: d.kind,
                ids: d.vendor_id.zip(d.device_id),
                subsys: d.subsystem_vendor_id.zip(d.subsystem_device_id),
                endpoint: ep_name.get(&d.bdf).map(|s| s.to_string()),
                rdma: d.rdma_names().map(str::to_string).collect(),
                net: d.net_names().map(str::to_string).collect(),
                serial,
                numa: paths.numa(ix),
                link: d.link.filter(|l| l.any()),
                parent,
                place,
                host_bridge: d.host_bridge.clone(),
                switch: paths.switch_name(ix).map(str::to_string),
                slot: d.slot.clone(),
                acs: paths.acs_redirect(ix).map(str::to_string),
                iommu_type: d.iommu_group_type.clone(),
                aer,
                vf: d.is_vf(),
                near_gpus,
                ordinal: ordinal[i],
            });
        }
        let ep_dev: Vec<usize> = eps
            .iter()
            .map(|e| t.device_index(&e.bdf).unwrap_or(usize::MAX))
            .collect();
        let labels = cl
            .summary_all()
            .into_iter()
            .filter(|(i, j, _)| ep_dev[*i] != usize::MAX && ep_dev[*j] != usize::MAX)
            .map(|(i, j, p)| (ep_dev[i], ep_dev[j], p.label))
            .collect();
        let by_rdma: HashMap<&str, usize> = devices
            .iter()
            .enumerate()
            .flat_map(|(i, d)| d.rdma.iter().map(move |r| (r.as_str(), i)))
            .collect();
        let findings = report
            .findings
            .iter()
            // What an input format cannot show describes the file, not the node.
            .filter(|f| f.id != audit::CheckId::InputLimits)
            .map(|f| {
                let dev = |b: &Bdf| t.device_index(b);
                let subject = match &f.subject {
                    Subject::Node => Some(SubjectRec::Node),
                    Subject::Device(b) | Subject::Nic { bdf: b, .. } => {
                        dev(b).map(SubjectRec::Device)
                    }
                    Subject::RdmaDevice(r) => {
                        by_rdma.get(r.as_str()).map(|&i| SubjectRec::Device(i))
                    }
                    Subject::RdmaPort { device, port } => by_rdma
                        .get(device.as_str())
                        .map(|&i| SubjectRec::Port(i, *port)),
                    Subject::Rail(k) => Some(SubjectRec::Rail(*k)),
                }
                .unwrap_or_else(|| SubjectRec::Other(f.subject.to_string()));
                FindingRec {
                    id: f.id,
                    severity: f.severity,
                    subject,
                    subject_text: f.subject.to_string(),
                    summary: f.summary.clone(),
                    pairs: f
                        .pairs
                        .iter()
                        .flat_map(|p| [dev(&p.gpu), dev(&p.nic)])
                        .flatten()
                        .collect(),
                }
            })
            .collect();
        NodeLayout {
            source: t.source.path.clone(),
            devices,
            labels,
            findings,
            facts: facts(t),
        }
    }
}

/// Node facts compared by name (read by the scan from `/proc/cpuinfo`, `/sys/module`,
/// `/sys/kernel/mm/memory_peers`, `/sys/class/iommu`, the hypervisor evidence).
fn facts(t: &Topology) -> BTreeMap<String, String> {
    let mi = &t.machine;
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "(absent)".into());
    let mut f = BTreeMap::new();
    f.insert("cpu_model".into(), opt(&mi.cpu_model));
    f.insert(
        "sockets".into(),
        mi.sockets.map_or("?".into(), |s| s.to_string()),
    );
    f.insert("numa_nodes".into(), t.numa_nodes.len().to_string());
    f.insert("nvidia_driver".into(), opt(&mi.nvidia_driver));
    f.insert("nvidia_peermem".into(), opt(&mi.nvidia_peermem_version));
    f.insert("nv_peer_mem".into(), mi.nv_peer_mem_loaded.to_string());
    f.insert("ib_core".into(), mi.ib_core_loaded.to_string());
    f.insert(
        "memory_peers".into(),
        mi.memory_peers
            .iter()
            .map(|(n, v)| format!("{n}={}", v.as_deref().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(","),
    );
    f.insert(
        "iommu_units".into(),
        match &mi.iommu_units {
            Fact::Known(v) => v.len().to_string(),
            Fact::Unknown(_) => "?".into(),
        },
    );
    f.insert("hypervisor".into(), (!mi.hypervisor.is_empty()).to_string());
    f
}
