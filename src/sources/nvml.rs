//! NVML enrichment of a live scan: GPU index, UUID and NVLink state from
//! `libnvidia-ml.so.1`, opened at run time by `nvml-wrapper` (dlopen; nothing is linked). On a
//! machine without the library or without a working driver, nothing changes except a status
//! message saying that NVLink was not visible and why; GPU pairs then stay PCIe-only.
//!
//! The NVML calls are kept apart from the folding ([`apply`]), which is pure and unit-tested on
//! constructed observations.

pub mod fabric;

use super::assemble::NvLinkTally;
use crate::model::bdf::Bdf;
use crate::model::device::{OsDevice, OsDeviceKind};
use crate::model::topology::{Topology, Warning};

/// NVIDIA's PCI vendor ID.
const NVIDIA: u16 = 0x10de;
/// Highest NVLink index probed per GPU (NVML's `NVML_NVLINK_MAX_LINKS` is 18 as of NVML 12).
const MAX_LINKS: u32 = 18;

/// What a link's far end is, as NVML reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remote {
    /// `nvmlDeviceGetNvLinkRemotePciInfo` bus ID.
    Pci(Bdf),
    /// The remote PCI info was unreadable or empty (NVSwitches hidden in a VM); the reason.
    Unreadable(String),
}

/// One NVLink of a GPU (`nvmlDeviceGetNvLinkState`, `…Version`, `…RemotePciInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmlLink {
    /// Link index.
    pub link: u32,
    /// Whether NVML says the link is active.
    pub active: bool,
    /// NVLink version, when NVML gave it.
    pub version: Option<u32>,
    /// The far end.
    pub remote: Remote,
}

/// One GPU as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmlGpu {
    /// NVML index (`nvmlDeviceGetHandleByIndex`).
    pub index: u32,
    /// `nvmlDeviceGetUUID`.
    pub uuid: Option<String>,
    /// `nvmlDeviceGetPciInfo` bus ID.
    pub bdf: Option<Bdf>,
    /// Its NVLinks (probed until NVML reports an error for a link index).
    pub links: Vec<NvmlLink>,
    /// `nvmlDeviceGetP2PStatus` towards each other GPU: (other's NVML index, read, write,
    /// nvlink) statuses as NVML names them (`Ok`, `ChipsetNotSupported`, …).
    pub p2p: Vec<(u32, String, String, String)>,
}

/// A GPU's C2C field values (`nvmlDeviceGetFieldValues`): `NVML_FI_DEV_C2C_LINK_COUNT`, and
/// `NVML_FI_DEV_C2C_LINK_GET_STATUS` / `…_GET_MAX_BW` of link 0 (the field call peerpath makes
/// carries no scope id, so the other links' status is not read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmlC2c {
    /// C2C links the GPU has.
    pub count: u32,
    /// Link 0's status (1 = up).
    pub link0_status: Option<u32>,
    /// Link 0's maximum bandwidth in MB/s.
    pub link0_max_mbytes: Option<u32>,
}

/// Reads the C2C field values of a GPU; `None` when NVML does not support them (no C2C) or the
/// count is 0.
fn query_c2c(d: &nvml_wrapper::Device) -> Option<NvmlC2c> {
    use nvml_wrapper::enums::device::SampleValue as V;
    use nvml_wrapper::structs::device::FieldId;
    use nvml_wrapper::sys_exports::field_id as f;
    let vals = d
        .field_values_for(&[
            FieldId(f::NVML_FI_DEV_C2C_LINK_COUNT),
            FieldId(f::NVML_FI_DEV_C2C_LINK_GET_STATUS),
            FieldId(f::NVML_FI_DEV_C2C_LINK_GET_MAX_BW),
        ])
        .ok()?;
    let num = |i: usize| -> Option<u32> {
        match vals.get(i)?.as_ref().ok()?.value.as_ref().ok()? {
            V::U32(x) => Some(*x),
            V::U64(x) => u32::try_from(*x).ok(),
            V::I64(x) => u32::try_from(*x).ok(),
            V::F64(_) => None,
        }
    };
    let count = num(0).filter(|&c| c > 0)?;
    Some(NvmlC2c {
        count,
        link0_status: num(1),
        link0_max_mbytes: num(2),
    })
}

/// Outcome of [`enrich`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmlStatus {
    /// Whether loading NVML was tried (there were NVIDIA PCI devices).
    pub attempted: bool,
    /// Whether NVML loaded and answered.
    pub loaded: bool,
    /// What happened, in words (why NVLink was not visible, or what was read).
    pub message: String,
    /// GPUs read.
    pub gpus: usize,
}

impl NvmlStatus {
    /// The warning to record in the topology when NVML was tried and failed.
    pub fn warning(&self) -> Option<Warning> {
        (self.attempted && !self.loaded).then(|| Warning {
            path: "libnvidia-ml.so.1".into(),
            message: self.message.clone(),
        })
    }
}

/// Plain-words reason for an NVML error.
fn explain(e: &nvml_wrapper::error::NvmlError) -> String {
    use nvml_wrapper::error::NvmlError as E;
    match e {
        E::LibloadingError(l) => format!("the NVML library could not be loaded ({l}); install the NVIDIA driver's libnvidia-ml.so.1"),
        E::FailedToLoadSymbol(s) => format!("the NVML library lacks a needed function ({s}); the driver is older than NVML API 13 expects"),
        E::LibRmVersionMismatch => "driver/library version mismatch: the loaded nvidia kernel module and libnvidia-ml.so.1 come from different driver versions (reload the module or reboot)".into(),
        E::DriverNotLoaded => "the NVIDIA kernel driver is not loaded".into(),
        E::NoPermission => "no permission to query NVML".into(),
        other => format!("NVML error: {other}"),
    }
}

/// What NVML answered: the GPUs, their C2C field values and their NVLink fabric
/// registrations, or why it could not.
type Answer = Result<(Vec<NvmlGpu>, C2cFacts, FabricFacts), String>;

/// Each GPU's NVLink fabric registration (by bus ID), from [`fabric::read_live`].
type FabricFacts = Vec<(Bdf, crate::model::Fact<crate::model::nvfabric::GpuFabric>)>;

/// NVML asked on a thread of its own while the sysfs scan runs ([`start`]).
pub struct Pending(std::thread::JoinHandle<Answer>);

/// Starts asking NVML on a thread of its own when the NVIDIA driver is bound to a PCI device
/// (`sys/bus/pci/drivers/nvidia` lists one), so that NVML's start — `nvmlInit` opens every GPU,
/// tens of milliseconds, what `nvidia-smi topo -m` pays too — overlaps the sysfs scan instead
/// of following it. `None` otherwise: [`enrich_with`] then asks NVML after the scan, if the
/// scan finds an NVIDIA device at all. Nothing about the answer depends on the scan, and only
/// the scan decides whether the answer is used, so the topology is the same either way.
pub fn start(fs: &dyn super::fsroot::FsRoot) -> Option<Pending> {
    let bound = fs
        .read_dir(std::path::Path::new("sys/bus/pci/drivers/nvidia"))
        .ok()?
        .iter()
        .any(|e| e.name.parse::<Bdf>().is_ok());
    bound.then(|| Pending(std::thread::spawn(ask)))
}

/// [`query`], a panic inside NVML turned into an error.
fn ask() -> Answer {
    std::panic::catch_unwind(query).unwrap_or_else(|_| Err("NVML query panicked".to_string()))
}

/// Loads NVML on the live machine and folds what it says into `topo`: per GPU its NVML index
/// and UUID (as attributes of its `NvidiaGpu` OS device), NVLinks into `topo.nvlinks` (links to
/// NVSwitches fold into one fabric link per GPU), P2P status, and `nvlink_visible = true`.
/// Without NVIDIA PCI devices NVML is not loaded at all. Never panics.
pub fn enrich(topo: &mut Topology) -> NvmlStatus {
    enrich_with(topo, None)
}

/// [`enrich`], taking NVML's answer from `pending` ([`start`]) when NVML was already asked.
pub fn enrich_with(topo: &mut Topology, pending: Option<Pending>) -> NvmlStatus {
    let answer = |p: Option<Pending>| match p {
        Some(Pending(h)) => h
            .join()
            .unwrap_or_else(|_| Err("NVML query panicked".to_string())),
        None => ask(),
    };
    if !topo.devices.iter().any(|d| d.vendor_id == Some(NVIDIA)) {
        // Asked for nothing: the answer is not used (and the thread is not left running).
        if let Some(Pending(h)) = pending {
            let _ = h.join();
        }
        return NvmlStatus {
            attempted: false,
            loaded: false,
            message: "no NVIDIA PCI device found; NVML not loaded, NVLink not visible".into(),
            gpus: 0,
        };
    }
    match answer(pending) {
        Ok((gpus, c2c, fabrics)) => {
            let warnings = apply(topo, &gpus);
            apply_c2c(topo, &c2c);
            fabric::apply(topo, &fabrics);
            fabric::mark_unread(topo, "NVML listed no GPU at this address");
            topo.warnings.extend(warnings);
            topo.nvlink_visible = true;
            NvmlStatus {
                attempted: true,
                loaded: true,
                message: format!(
                    "NVML loaded: {} GPU(s), {} NVLink connection(s)",
                    gpus.len(),
                    topo.nvlinks.len()
                ),
                gpus: gpus.len(),
            }
        }
        Err(why) => {
            fabric::mark_unread(topo, &format!("NVML not loaded: {why}"));
            NvmlStatus {
                attempted: true,
                loaded: false,
                message: format!(
                    "NVLink was not visible: {why}; GPU pairs are judged on PCIe only"
                ),
                gpus: 0,
            }
        }
    }
}

/// C2C field values per GPU (by bus ID), from [`query`].
type C2cFacts = Vec<(Bdf, NvmlC2c)>;

/// Asks NVML about every GPU.
fn query() -> Answer {
    use nvml_wrapper::Nvml;
    use nvml_wrapper::enum_wrappers::device::P2pCapabilitiesIndex as P;
    let nvml = Nvml::init().map_err(|e| explain(&e))?;
    let n = nvml.device_count().map_err(|e| explain(&e))?;
    let mut handles = Vec::new();
    let mut out = Vec::new();
    let mut c2c = Vec::new();
    let mut fabrics = Vec::new();
    for i in 0..n {
        let d = nvml.device_by_index(i).map_err(|e| explain(&e))?;
        let bdf = d
            .pci_info()
            .ok()
            .and_then(|p| p.bus_id.trim_end_matches('\0').parse::<Bdf>().ok());
        let mut links = Vec::new();
        for l in 0..MAX_LINKS {
            let w = d.link_wrapper_for(l);
            let active = match w.is_active() {
                Ok(a) => a,
                Err(_) => break, // past the last link, or NVLink not supported
            };
            if !active {
                links.push(NvmlLink {
                    link: l,
                    active,
                    version: None,
                    remote: Remote::Unreadable("inactive".into()),
                });
                continue;
            }
            let version = w.version().ok();
            let remote = match w.remote_pci_info() {
                Ok(p) => match p.bus_id.trim_end_matches('\0').parse::<Bdf>() {
                    Ok(b) => Remote::Pci(b),
                    Err(_) => Remote::Unreadable(format!("remote bus id {:?}", p.bus_id)),
                },
                Err(e) => Remote::Unreadable(explain(&e)),
            };
            links.push(NvmlLink {
                link: l,
                active,
                version,
                remote,
            });
        }
        out.push(NvmlGpu {
            index: i,
            uuid: d.uuid().ok(),
            bdf,
            links,
            p2p: Vec::new(),
        });
        if let (Some(b), Some(c)) = (bdf, query_c2c(&d)) {
            c2c.push((b, c));
        }
        if let Some(b) = bdf {
            fabrics.push((b, fabric::read_live(&d)));
        }
        handles.push(d);
    }
    let name = |r: Result<nvml_wrapper::enum_wrappers::device::P2pStatus, _>| match r {
        Ok(s) => format!("{s:?}"),
        Err(e) => format!("unknown ({})", explain(&e)),
    };
    for (i, a) in handles.iter().enumerate() {
        for (j, b) in handles.iter().enumerate() {
            if i == j {
                continue;
            }
            let p = (
                j as u32,
                name(a.p2p_status(b, P::Read)),
                name(a.p2p_status(b, P::Write)),
                name(a.p2p_status(b, P::NvLink)),
            );
            out[i].p2p.push(p);
        }
    }
    Ok((out, c2c, fabrics))
}

/// The C2C link NVML's field values describe: the link count is known; whether every link is
/// up is known only for a single-link GPU (link 0's status).
pub fn c2c_link(c: &NvmlC2c) -> crate::model::C2cLink {
    let up = c.link0_status == Some(1);
    crate::model::C2cLink {
        links_up: (c.count == 1).then_some(u32::from(up)),
        links_total: Some(c.count),
        link_mbytes_per_s: c.link0_max_mbytes.filter(|_| up),
        source: format!(
            "NVML field values: C2C_LINK_COUNT = {}, link 0 status = {}, link 0 max bandwidth = {} MB/s (status of links 1.. not read)",
            c.count,
            c.link0_status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "unknown".into()),
            c.link0_max_mbytes
                .map(|s| s.to_string())
                .unwrap_or_else(|| "unknown".into()),
        ),
    }
}

/// Sets each GPU's C2C link from NVML's field values (over any link the scan inferred).
pub fn apply_c2c(topo: &mut Topology, c2c: &[(Bdf, NvmlC2c)]) {
    for (b, c) in c2c {
        if let Some(d) = topo.devices.iter_mut().find(|d| d.bdf == *b) {
            d.c2c = Some(c2c_link(c));
        }
    }
}

/// Folds NVML observations into the topology; returns the warnings it had to make.
///
/// - Each GPU is matched to its PCI function by BDF; its `NvidiaGpu` OS device (created as
///   `nvml<index>` when the scan had none) gets `nvml_index`, `uuid`, `p2p <peer bdf>` and one
///   `nvlink <n>` attribute per link (state, version, remote address) as evidence.
/// - Active links whose remote is another NVML GPU (matched on domain, bus and device) count
///   towards that pair; both GPUs report the same links, so the larger of the two counts is kept.
/// - Active links to anything else that is an NVIDIA bridge-class function (NVSwitch, class
///   0x0680), to an address the scan does not have, or with an unreadable remote (NVSwitches
///   hidden in a VM, as NCCL assumes) add to that GPU's fabric link (`b = None`).
/// - Links to an IBM NPU (POWER CPU) cannot be represented and are reported.
///
/// `topo.nvlinks` is replaced.
pub fn apply(topo: &mut Topology, gpus: &[NvmlGpu]) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let same_adapter =
        |a: &Bdf, b: &Bdf| a.domain == b.domain && a.bus == b.bus && a.device == b.device;
    let gpu_of = |b: &Bdf| {
        gpus.iter()
            .find(|g| g.bdf.as_ref().is_some_and(|x| same_adapter(x, b)))
    };
    let mut tally = NvLinkTally::default();
    for g in gpus {
        let Some(me) = g.bdf else {
            warnings.push(Warning {
                path: format!("nvml{}", g.index),
                message: "NVML gave no PCI bus ID for this GPU; its NVLinks are not kept".into(),
            });
            continue;
        };
        // Identity on the PCI function.
        match topo.devices.iter_mut().find(|d| d.bdf == me) {
            Some(d) => {
                let pos = d
                    .os_devices
                    .iter()
                    .position(|o| o.kind == OsDeviceKind::NvidiaGpu);
                let od = match pos {
                    Some(p) => &mut d.os_devices[p],
                    None => {
                        d.os_devices.push(OsDevice::new(
                            OsDeviceKind::NvidiaGpu,
                            format!("nvml{}", g.index),
                        ));
                        let last = d.os_devices.len() - 1;
                        &mut d.os_devices[last]
                    }
                };
                od.attrs.push(("nvml_index".into(), g.index.to_string()));
                if let Some(u) = &g.uuid {
                    od.attrs.push(("uuid".into(), u.clone()));
                }
                for (j, r, w, n) in &g.p2p {
                    let peer = gpus
                        .iter()
                        .find(|x| x.index == *j)
                        .and_then(|x| x.bdf)
                        .map(|b| b.to_string())
                        .unwrap_or_else(|| format!("nvml{j}"));
                    od.attrs.push((
                        format!("p2p {peer}"),
                        format!("read={r} write={w} nvlink={n}"),
                    ));
                }
                // Evidence for the folded NVLinks: each link as NVML reported it.
                for l in &g.links {
                    let remote = match &l.remote {
                        Remote::Pci(b) => b.to_string(),
                        Remote::Unreadable(why) => format!("unreadable ({why})"),
                    };
                    let version = l
                        .version
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| "unknown".into());
                    od.attrs.push((
                        format!("nvlink {}", l.link),
                        if l.active {
                            format!("active version={version} remote={remote}")
                        } else {
                            "inactive".to_string()
                        },
                    ));
                }
            }
            None => warnings.push(Warning {
                path: format!("nvml{}", g.index),
                message: format!("NVML GPU at {me} is not in the PCI scan; identity not attached"),
            }),
        }
        for l in g.links.iter().filter(|l| l.active) {
            match &l.remote {
                Remote::Pci(r) => {
                    if let Some(peer) = gpu_of(r) {
                        let Some(pb) = peer.bdf else { continue };
                        if same_adapter(&pb, &me) {
                            continue;
                        }
                        // Count this GPU's links to the peer; the tally merges by max.
                        let n = g
                            .links
                            .iter()
                            .filter(|x| {
                                x.active
                                    && matches!(&x.remote, Remote::Pci(y) if same_adapter(y, r))
                            })
                            .count() as u32;
                        tally.pair(me, pb, n, l.version);
                        continue;
                    }
                    let target = topo.devices.iter().find(|d| same_adapter(&d.bdf, r));
                    match target {
                        Some(t) if t.vendor_id == Some(0x1014) => {
                            warnings.push(Warning {
                                path: format!("nvml{} link {}", g.index, l.link),
                                message: format!("NVLink to IBM NPU {r} (GPU-to-CPU NVLink) cannot be represented; not kept"),
                            });
                        }
                        Some(t) if !(t.vendor_id == Some(NVIDIA) && t.class >> 8 == 0x0680) => {
                            warnings.push(Warning {
                                path: format!("nvml{} link {}", g.index, l.link),
                                message: format!(
                                    "NVLink remote {r} is neither a GPU nor an NVSwitch (class 0x{:06x}); counted as NVSwitch fabric",
                                    t.class
                                ),
                            });
                            tally.fabric(me, 1, l.version);
                        }
                        _ => tally.fabric(me, 1, l.version),
                    }
                }
                Remote::Unreadable(_) => tally.fabric(me, 1, l.version),
            }
        }
    }
    topo.nvlinks = tally.into_links();
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::{Device, DeviceKind};
    use crate::model::topology::{MachineInfo, NvLink, SourceInfo};

    fn b(s: &str) -> Bdf {
        s.parse().unwrap()
    }

    fn topo(devs: &[(&str, u32, u16)]) -> Topology {
        let devices = devs
            .iter()
            .map(|(a, class, vendor)| {
                let mut d = Device::new(b(a), "pci0000:00".into(), String::new());
                d.class = *class;
                d.vendor_id = Some(*vendor);
                d.kind = crate::model::device::kind_from_class(*class, Some(*vendor), d.device_id);
                d
            })
            .collect();
        let src = SourceInfo {
            kind: "sysfs".into(),
            path: "/".into(),
            limitations: vec![],
        };
        Topology::new(
            src,
            MachineInfo::default(),
            vec![],
            vec![],
            devices,
            vec![],
            vec![],
        )
    }

    fn gpu(index: u32, bdf: &str, links: Vec<Remote>) -> NvmlGpu {
        NvmlGpu {
            index,
            uuid: Some(format!("GPU-{index}")),
            bdf: Some(b(bdf)),
            links: links
                .into_iter()
                .enumerate()
                .map(|(i, remote)| NvmlLink {
                    link: i as u32,
                    active: true,
                    version: Some(4),
                    remote,
                })
                .collect(),
            p2p: vec![],
        }
    }

    #[test]
    fn nvswitch_links_fold_into_one_fabric_link_per_gpu() {
        let mut t = topo(&[
            ("0000:18:00.0", 0x030200, 0x10de),
            ("0000:2a:00.0", 0x030200, 0x10de),
            ("0000:c3:00.0", 0x068000, 0x10de),
            ("0000:c4:00.0", 0x068000, 0x10de),
        ]);
        let sw = |s: &str| Remote::Pci(b(s));
        let g0 = gpu(
            0,
            "0000:18:00.0",
            (0..18)
                .map(|i| {
                    if i % 2 == 0 {
                        sw("0000:c3:00.0")
                    } else {
                        sw("0000:c4:00.0")
                    }
                })
                .collect(),
        );
        let mut g1 = gpu(
            1,
            "0000:2a:00.0",
            (0..18)
                .map(|_| Remote::Unreadable("hidden".into()))
                .collect(),
        );
        g1.links[17].active = false;
        let w = apply(&mut t, &[g0, g1]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(t.nvlinks.len(), 2);
        assert_eq!(
            t.nvlinks[0],
            NvLink {
                a: b("0000:18:00.0"),
                b: None,
                count: 18,
                version: Some(4)
            }
        );
        assert_eq!(t.nvlinks[1].count, 17);
        let d = t.device(&b("0000:18:00.0")).unwrap();
        let od = d
            .os_devices
            .iter()
            .find(|o| o.kind == OsDeviceKind::NvidiaGpu)
            .unwrap();
        assert_eq!(od.name, "nvml0");
        assert!(od.attrs.contains(&("uuid".into(), "GPU-0".into())));
        assert!(od.attrs.contains(&(
            "nvlink 1".into(),
            "active version=4 remote=0000:c4:00.0".into()
        )));
    }

    #[test]
    fn direct_gpu_pairs_are_counted_once() {
        let mut t = topo(&[
            ("0000:18:00.0", 0x030200, 0x10de),
            ("0000:2a:00.0", 0x030200, 0x10de),
            ("0000:40:00.0", 0x030200, 0x10de),
        ]);
        let p = |s: &str| Remote::Pci(b(s));
        // NVML reports remote GPUs with function 0 of the adapter; 4 links 0-1, 2 links 0-2.
        let g0 = gpu(
            0,
            "0000:18:00.0",
            vec![
                p("0000:2a:00.0"),
                p("0000:2a:00.0"),
                p("0000:2a:00.0"),
                p("0000:2a:00.0"),
                p("0000:40:00.0"),
                p("0000:40:00.0"),
            ],
        );
        let g1 = gpu(
            1,
            "0000:2a:00.0",
            vec![
                p("0000:18:00.0"),
                p("0000:18:00.0"),
                p("0000:18:00.0"),
                p("0000:18:00.0"),
            ],
        );
        let mut g2 = gpu(
            2,
            "0000:40:00.0",
            vec![p("0000:18:00.0"), p("0000:18:00.0")],
        );
        g2.p2p.push((0, "Ok".into(), "Ok".into(), "Ok".into()));
        let w = apply(&mut t, &[g0, g1, g2]);
        assert!(w.is_empty(), "{w:?}");
        let got: Vec<(Bdf, Option<Bdf>, u32)> =
            t.nvlinks.iter().map(|l| (l.a, l.b, l.count)).collect();
        assert_eq!(
            got,
            vec![
                (b("0000:18:00.0"), Some(b("0000:2a:00.0")), 4),
                (b("0000:18:00.0"), Some(b("0000:40:00.0")), 2)
            ]
        );
        let d = t.device(&b("0000:40:00.0")).unwrap();
        assert!(
            d.os_devices[0]
                .attrs
                .iter()
                .any(|(k, v)| k == "p2p 0000:18:00.0" && v.contains("read=Ok"))
        );
        assert_eq!(t.devices[0].kind, DeviceKind::Gpu);
    }

    #[test]
    fn unknown_gpus_and_cpu_links_are_reported() {
        let mut t = topo(&[
            ("0000:18:00.0", 0x030200, 0x10de),
            ("0000:04:00.0", 0x068000, 0x1014),
        ]);
        let g0 = gpu(0, "0000:18:00.0", vec![Remote::Pci(b("0000:04:00.0"))]);
        let g9 = gpu(9, "0000:99:00.0", vec![]);
        let mut nobdf = gpu(3, "0000:01:00.0", vec![]);
        nobdf.bdf = None;
        let w = apply(&mut t, &[g0, g9, nobdf]);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(t.nvlinks.is_empty());
    }

    #[test]
    fn c2c_field_values_fold_into_the_gpu() {
        let mut t = topo(&[("0008:06:00.0", 0x030200, 0x10de)]);
        let g = b("0008:06:00.0");
        let one = NvmlC2c {
            count: 1,
            link0_status: Some(1),
            link0_max_mbytes: Some(45000),
        };
        apply_c2c(&mut t, &[(g, one)]);
        let c = t.device(&g).unwrap().c2c.clone().unwrap();
        assert_eq!((c.links_up, c.links_total), (Some(1), Some(1)));
        assert_eq!(c.gbytes_per_s(), Some(45.0));
        // Several links: only link 0's status was read, so "all up" is not claimed.
        let many = c2c_link(&NvmlC2c {
            count: 10,
            link0_status: Some(1),
            link0_max_mbytes: Some(45000),
        });
        assert_eq!((many.links_up, many.links_total), (None, Some(10)));
        assert!(many.source.contains("links 1.. not read"));
    }

    #[test]
    fn no_nvidia_means_no_nvml_and_no_warning() {
        let mut t = topo(&[("0000:18:00.0", 0x020000, 0x15b3)]);
        let s = enrich(&mut t);
        assert!(!s.attempted && !s.loaded);
        assert!(s.warning().is_none());
        assert!(!t.nvlink_visible);
    }

    #[test]
    fn without_the_library_the_status_says_why() {
        // This machine has no libnvidia-ml.so.1; where it has, the test checks the loaded path.
        let mut t = topo(&[("0000:18:00.0", 0x030200, 0x10de)]);
        let s = enrich(&mut t);
        assert!(s.attempted);
        if s.loaded {
            assert!(t.nvlink_visible);
        } else {
            assert!(
                s.message.starts_with("NVLink was not visible: "),
                "{}",
                s.message
            );
            assert!(s.warning().is_some());
            assert!(!t.nvlink_visible);
            assert!(t.nvlinks.is_empty());
        }
    }
}
