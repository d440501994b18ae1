//! The sysfs reader: discovers the facts under a root (`/`, an extracted snapshot, a tarball
//! in memory) into a [`RawTopology`] that [`assemble`] turns into a [`Topology`]. Reads each
//! file once; tolerates dangling links, loops, truncated and non-UTF-8 files, permission errors
//! and devices that vanish mid-scan, and values the parsers refuse (each becomes a warning
//! naming the path and what was assumed).

use super::assemble::{RawTopology, assemble};
use super::fsroot::{EntryKind, FsRoot, join_link};
use crate::model::bdf::{Bdf, parse_host_bridge};
use crate::model::device::{Device, OsDevice, OsDeviceKind, RdmaPort};
use crate::model::fact::Fact;
use crate::model::topology::{MAX_CHAIN, MachineInfo, NumaNode, SourceInfo, Topology, Warning};
use crate::parse::{Refusal, attr, cpulist, ib};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

mod device;
use device::read_devices;

/// Options of a scan.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// PCI ID database to name devices with (`None`: no names).
    pub pci_ids: Option<PathBuf>,
}

/// Collects warnings during a scan.
#[derive(Default)]
struct Log {
    warnings: std::cell::RefCell<Vec<Warning>>,
}

impl Log {
    fn warn(&self, path: &Path, message: impl Into<String>) {
        self.warnings.borrow_mut().push(Warning {
            path: path.display().to_string(),
            message: message.into(),
        });
    }

    /// A parser's answer for the file at `path` (`None`: the file was absent or unreadable,
    /// already said): the value, or `None` and a warning naming the file and the refused
    /// value. An empty file is unknown without a warning, like an absent one: it is what a
    /// snapshot holds for an attribute the kernel would not read out (a down interface's
    /// `speed`), and there is no value to quote.
    fn value<T>(
        &self,
        path: &Path,
        bytes: Option<Vec<u8>>,
        parse: impl FnOnce(&[u8]) -> Result<T, Refusal>,
    ) -> Option<T> {
        match parse(&bytes?) {
            Ok(v) => Some(v),
            Err(r) if r.is_empty() => None,
            Err(r) => {
                self.warn(path, format!("{r}; value treated as unknown"));
                None
            }
        }
    }

    /// Free text (`operstate`, `fw_ver`, DMI names): empty is unknown without a warning; text
    /// that is not UTF-8 is refused with one.
    fn text(&self, path: &Path, bytes: Option<Vec<u8>>) -> Option<String> {
        self.value(path, bytes, |b| attr::text(b).map(str::to_string))
    }

    /// Reads and parses an optional file in one step.
    fn read_value<T>(
        &self,
        fs: &dyn FsRoot,
        path: &Path,
        parse: impl FnOnce(&[u8]) -> Result<T, Refusal>,
    ) -> Option<T> {
        self.value(path, read_opt(fs, self, path), parse)
    }

    /// Reads an optional free-text file in one step.
    fn read_text(&self, fs: &dyn FsRoot, path: &Path) -> Option<String> {
        self.text(path, read_opt(fs, self, path))
    }
}

/// Reads an optional attribute: `Ok(None)` when absent, a warning for other errors.
fn read_opt(fs: &dyn FsRoot, log: &Log, path: &Path) -> Option<Vec<u8>> {
    optional(log, path, fs.read(path))
}

/// The bytes of an optional attribute read at `path`: `None` when absent, and a warning for
/// any other error.
fn optional(log: &Log, path: &Path, read: io::Result<Vec<u8>>) -> Option<Vec<u8>> {
    match read {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            log.warn(
                path,
                format!("could not read ({e}); value treated as unknown"),
            );
            None
        }
    }
}

/// Scans the sysfs/procfs files under `fs` into a topology: [`discover`], then [`assemble`]
/// with the PCI ID database of `opts`.
pub fn scan(fs: &dyn FsRoot, source: SourceInfo, opts: &ScanOptions) -> io::Result<Topology> {
    Ok(assemble(discover(fs, source)?, opts.pci_ids.as_deref()))
}

/// Reads the sysfs/procfs files under `fs` into raw facts. Fails only when `fs` holds no
/// `sys/` at all or the PCI bus directory cannot be listed.
///
/// The phases of every discovery (docs/architecture.md, "Discover, phase by phase"):
/// enumerate the bus's devices and their parents ([`list_bus`], [`locate`], [`chain_all`]),
/// read each device's attributes ([`read_devices`]), attach the class devices below them
/// ([`attach_all`]), and annotate the node ([`node_facts`], [`pair_functions`]).
pub fn discover(fs: &dyn FsRoot, source: SourceInfo) -> io::Result<RawTopology> {
    let log = Log::default();
    let bus = Path::new("sys/bus/pci/devices");
    // 1. Enumerate: every listed device's directory and its chain of parents.
    let entries = list_bus(fs, &log, bus)?;
    let mut located = locate(fs, &log, bus, &entries);
    let chains = chain_all(&log, &mut located);
    // 2. Read each device's attributes.
    let mut read = read_devices(fs, &log, bus, &located, &chains);
    // 3. Attach class devices: RDMA, net, NVMe, GPUs, slots, KFD.
    let kfd = attach_all(fs, &log, &read.by_path, &mut read.devices);
    // 4. Annotate: NUMA nodes, CPUs, node-wide facts, paired functions.
    let numa_nodes = numa(fs, &log);
    let machine = node_facts(fs, &log, &source, &read.by_path, &read.devices);
    pair_functions(&log, &mut read.devices, &read.vpd_uuids);

    let mut raw = RawTopology::new(source, machine);
    raw.numa_nodes = numa_nodes;
    raw.devices = read.devices;
    raw.xgmi = kfd.xgmi;
    raw.xgmi_visible = kfd.visible;
    raw.warnings = log.warnings.into_inner();
    Ok(raw)
}

/// Each located device: its directory and whether `sys/bus/pci/devices` lists it (a bridge
/// met only on another device's path is not listed).
type Located = BTreeMap<Bdf, (PathBuf, bool)>;

/// Each device's host bridge and its chain of `(address, directory)` from the first bridge
/// below the host bridge down to the device itself.
type Chains = BTreeMap<Bdf, (String, Vec<(Bdf, PathBuf)>)>;

/// The entries of the PCI bus directory `bus`. A root without `sys/` is refused; a `sys/`
/// without a PCI bus is a system without PCI (warned, no devices).
fn list_bus(fs: &dyn FsRoot, log: &Log, bus: &Path) -> io::Result<Vec<super::fsroot::Entry>> {
    match fs.read_dir(bus) {
        Ok(e) => Ok(e),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if fs.kind(Path::new("sys")).is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{}: no sys/ directory; not a sysfs root", fs.describe()),
                ));
            }
            log.warn(
                bus,
                "absent: this system exposes no PCI bus; no devices scanned",
            );
            Ok(Vec::new())
        }
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", bus.display()))),
    }
}

/// The directory of each bus entry that names a PCI address: the link's target, or the
/// entry itself when it is a directory. Anything else is warned and skipped.
fn locate(fs: &dyn FsRoot, log: &Log, bus: &Path, entries: &[super::fsroot::Entry]) -> Located {
    let mut located = Located::new();
    for e in entries {
        let Ok(bdf) = e.name.parse::<Bdf>() else {
            log.warn(&bus.join(&e.name), "entry is not a PCI address; skipped");
            continue;
        };
        let link = bus.join(&e.name);
        let dir = match e.kind {
            EntryKind::Symlink => {
                let target = match fs.read_link(&link) {
                    Ok(t) => join_link(&link, &t),
                    Err(err) => {
                        log.warn(&link, format!("unreadable link ({err}); device skipped"));
                        continue;
                    }
                };
                // Kernel links point straight at the device directory; its listing (read below
                // anyway) proves it exists. Anything odd goes through full resolution.
                target
            }
            EntryKind::Dir => link.clone(),
            _ => {
                log.warn(&link, "neither a link nor a directory; device skipped");
                continue;
            }
        };
        // The kernel names a device's directory by its address: a link to another address's
        // directory (its own child's, say) would alias two devices and loop their parents.
        if let Some(other) = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<Bdf>().ok())
            && other != bdf
        {
            log.warn(
                &link,
                format!(
                    "links to {}, the directory of {other}, not of {bdf}; device skipped",
                    dir.display()
                ),
            );
            continue;
        }
        located.insert(bdf, (dir, true));
    }
    located
}

/// A host bridge's name (when the path has one) and the `(address, path prefix)` of each
/// bridge below it on a device's canonical path.
type PathChain = (Option<String>, Vec<(Bdf, PathBuf)>);

/// The host bridge (`pci0000:00`) and the bridges on the canonical path `dir`, each with its
/// path prefix; `Err` says why the device is skipped (a path too deep or naming an address
/// twice).
fn path_chain(dir: &Path) -> Result<PathChain, String> {
    let mut hb: Option<String> = None;
    let mut chain: Vec<(Bdf, PathBuf)> = Vec::new();
    let mut prefix = PathBuf::new();
    for c in dir.components() {
        prefix.push(c);
        let s = c.as_os_str().to_string_lossy();
        if hb.is_none() && parse_host_bridge(&s).is_some() {
            hb = Some(s.to_string());
            continue;
        }
        if hb.is_some()
            && let Ok(b) = s.parse::<Bdf>()
        {
            // Bounded before anything is copied: each element holds its path prefix.
            if chain.len() >= MAX_CHAIN {
                return Err(format!(
                    "more than {} bridges below its host bridge; device skipped (no PCIe hierarchy is that deep)",
                    MAX_CHAIN - 1
                ));
            }
            if chain.iter().any(|(x, _)| *x == b) {
                return Err(format!(
                    "the path names {b} twice (a link into its own subtree); device skipped"
                ));
            }
            chain.push((b, prefix.clone()));
        }
    }
    Ok((hb, chain))
}

/// Chains: host bridge and parents of every located device, from the canonical path
/// components. Devices whose path is refused leave `located`; bridges met on a path but not
/// listed on the bus join it (unlisted), so their children keep their real parent.
fn chain_all(log: &Log, located: &mut Located) -> Chains {
    let mut chains = Chains::new();
    let mut unlisted: BTreeMap<Bdf, PathBuf> = BTreeMap::new();
    // Where each unlisted bridge was first met: (device whose chain holds it, position).
    let mut met_in: HashMap<Bdf, (Bdf, usize)> = HashMap::new();
    let mut skipped: Vec<Bdf> = Vec::new();
    for (bdf, (dir, _)) in located.iter() {
        let (hb, mut chain) = match path_chain(dir) {
            Ok(c) => c,
            Err(why) => {
                log.warn(dir, why);
                skipped.push(*bdf);
                continue;
            }
        };
        let hb = match hb {
            Some(h) => h,
            None => {
                log.warn(
                    dir,
                    format!(
                        "no sys/devices/pci* path for {bdf}; host bridge assumed from its address, parent unknown"
                    ),
                );
                crate::model::bdf::host_bridge_name(bdf.domain, bdf.bus)
            }
        };
        if chain.last().map(|(b, _)| b) != Some(bdf) {
            chain.push((*bdf, dir.clone()));
        }
        if chain.iter().filter(|(x, _)| x == bdf).count() > 1 {
            log.warn(
                dir,
                format!("the path names {bdf} twice (a link into its own subtree); device skipped"),
            );
            skipped.push(*bdf);
            continue;
        }
        for (pos, (b, p)) in chain[..chain.len() - 1].iter().enumerate() {
            if !located.contains_key(b) && !unlisted.contains_key(b) {
                log.warn(
                    p,
                    format!(
                        "bridge {b} is in sys/devices but has no sys/bus/pci/devices entry (lspci and lstopo skip it); kept so its children keep their real parent"
                    ),
                );
                unlisted.insert(*b, p.clone());
                met_in.insert(*b, (*bdf, pos));
            }
        }
        chains.insert(*bdf, (hb, chain));
    }
    for b in skipped {
        located.remove(&b);
    }
    for (b, p) in &unlisted {
        // Its own chain is a prefix of the chain it was met in.
        let (hb, chain) = met_in
            .get(b)
            .and_then(|(owner, pos)| {
                chains
                    .get(owner)
                    .map(|(hb, ch)| (hb.clone(), ch[..=*pos].to_vec()))
            })
            .unwrap_or_else(|| {
                (
                    crate::model::bdf::host_bridge_name(b.domain, b.bus),
                    vec![(*b, p.clone())],
                )
            });
        located.insert(*b, (p.clone(), false));
        chains.insert(*b, (hb, chain));
    }
    chains
}

/// What reading the devices gives the later phases.
#[derive(Default)]
struct DeviceReads {
    /// The devices read, in address order.
    devices: Vec<Device>,
    /// Each device's directory → its index in `devices` (class devices attach through it).
    by_path: HashMap<PathBuf, usize>,
    /// The VPD keywords that pair Data Direct functions with their NIC functions.
    vpd_uuids: super::datadirect::VpdUuids,
}

/// Class devices attached to the PCI functions they sit on (RDMA, net, NVMe), the NVIDIA
/// GPUs' driver files, the slots, and the KFD topology of AMD GPUs.
fn attach_all(
    fs: &dyn FsRoot,
    log: &Log,
    by_path: &HashMap<PathBuf, usize>,
    devices: &mut [Device],
) -> super::kfd::KfdScan {
    attach_class(fs, log, "infiniband", OsDeviceKind::Rdma, by_path, devices);
    // HPE Slingshot (Cassini) adapters are RDMA devices of the cxi driver (libfabric's cxi
    // provider, NCCL through aws-ofi-nccl), listed in their own class.
    attach_class(fs, log, "cxi", OsDeviceKind::Rdma, by_path, devices);
    attach_class(fs, log, "net", OsDeviceKind::Net, by_path, devices);
    attach_class(fs, log, "nvme", OsDeviceKind::Nvme, by_path, devices);
    nvidia_gpus(fs, log, devices);
    slots(fs, log, devices);
    let mut kfd = super::kfd::read(fs, devices);
    log.warnings
        .borrow_mut()
        .extend(std::mem::take(&mut kfd.warnings));
    kfd
}

/// CPUs, storage and NCCL's configuration of the node.
fn node_facts(
    fs: &dyn FsRoot,
    log: &Log,
    source: &SourceInfo,
    by_path: &HashMap<PathBuf, usize>,
    devices: &[Device],
) -> MachineInfo {
    let mut machine = machine_info(fs, log);
    let (storage, storage_warnings) = super::storage::read(fs, by_path, devices);
    machine.storage = storage;
    machine.nccl = super::nccl_conf::read_node(fs, source.kind == "snapshot");
    log.warnings.borrow_mut().extend(storage_warnings);
    machine
}

/// Grace GPUs (C2C) and Data Direct DMA functions paired with their NIC functions.
fn pair_functions(log: &Log, devices: &mut [Device], vpd_uuids: &super::datadirect::VpdUuids) {
    super::c2c::infer(devices);
    for w in super::datadirect::pair_by_vpd(devices, vpd_uuids) {
        log.warnings.borrow_mut().push(w);
    }
}

fn attach_class(
    fs: &dyn FsRoot,
    log: &Log,
    class: &str,
    kind: OsDeviceKind,
    by_path: &HashMap<PathBuf, usize>,
    devices: &mut [Device],
) {
    let dir = PathBuf::from("sys/class").join(class);
    let Ok(entries) = fs.read_dir(&dir) else {
        return;
    };
    for e in entries {
        let link = dir.join(&e.name);
        let target = match e.kind {
            EntryKind::Symlink => match fs.read_link(&link) {
                Ok(t) => join_link(&link, &t),
                Err(_) => continue,
            },
            _ => link.clone(),
        };
        // The owning PCI function is the longest device path that prefixes the target.
        let mut owner = None;
        let mut p = target.as_path();
        while let Some(parent) = p.parent() {
            if let Some(&i) = by_path.get(parent) {
                owner = Some((i, parent));
                break;
            }
            p = parent;
        }
        let Some((i, function_dir)) = owner else {
            continue; // virtual (lo, bridges) or not PCI
        };
        let mut od = OsDevice::new(kind, e.name.clone());
        match kind {
            // A Cassini's CXI device has no ports directory: its link state is an attribute
            // of its PCI function (shs-cxi-driver cass_sysfs.c: `properties/link`).
            OsDeviceKind::Rdma if class == "cxi" => {
                od.cxi_link = log.read_value(
                    fs,
                    &function_dir.join("properties").join("link"),
                    attr::flag01,
                );
            }
            OsDeviceKind::Rdma => {
                let ports_dir = target.join("ports");
                if let Ok(ports) = fs.read_dir(&ports_dir) {
                    for p in ports {
                        let Ok(n) = p.name.parse::<u32>() else {
                            continue;
                        };
                        let pd = ports_dir.join(&p.name);
                        let rate_raw = read_opt(fs, log, &pd.join("rate"));
                        od.ports.push(RdmaPort {
                            port: n,
                            state: log.read_value(fs, &pd.join("state"), ib::numbered_state),
                            phys_state: log.read_value(
                                fs,
                                &pd.join("phys_state"),
                                ib::numbered_state,
                            ),
                            rate_gbps: log.value(&pd.join("rate"), rate_raw.clone(), ib::rate_gbps),
                            rate_text: rate_raw
                                .as_deref()
                                .and_then(|b| attr::text(b).ok())
                                .map(str::to_string),
                            link_layer: log.read_text(fs, &pd.join("link_layer")),
                        });
                        // GID 0: on InfiniBand the subnet prefix and the port GUID, which
                        // the fabric's map prints (analysis::cabling matches on it).
                        if let Some(g) = log.read_text(fs, &pd.join("gids").join("0")) {
                            od.attrs.push((format!("ports/{n}/gids/0"), g));
                        }
                    }
                }
                // node_guid and node_desc: how the fabric's own map (ibnetdiscover,
                // iblinkinfo, ibdiagnet) names this adapter.
                for a in [
                    "fw_ver",
                    "hca_type",
                    "board_id",
                    "node_type",
                    "node_guid",
                    "node_desc",
                ] {
                    if let Some(v) = log.read_text(fs, &target.join(a)) {
                        od.attrs.push((a.to_string(), v));
                    }
                }
            }
            OsDeviceKind::Net => {
                od.operstate = log.read_text(fs, &target.join("operstate"));
                // Where the driver leaves operstate `unknown`, the carrier says (libfabric's
                // cxi provider reads the pair so: prov/cxi/src/cxip_if.c `netdev_link`).
                if od.operstate.as_deref() == Some("unknown") {
                    od.carrier = log.read_value(fs, &target.join("carrier"), attr::flag01);
                }
                od.speed_mbps = log
                    .read_value(fs, &target.join("speed"), attr::net_speed_mbps)
                    .flatten();
            }
            OsDeviceKind::Nvme => {
                if let Some(v) = log.read_text(fs, &target.join("model")) {
                    od.attrs.push(("model".into(), v));
                }
            }
            _ => {}
        }
        devices[i].os_devices.push(od);
    }
}

fn nvidia_gpus(fs: &dyn FsRoot, log: &Log, devices: &mut [Device]) {
    let dir = Path::new("proc/driver/nvidia/gpus");
    let Ok(entries) = fs.read_dir(dir) else {
        return;
    };
    for e in entries {
        let Ok(bdf) = e.name.parse::<Bdf>() else {
            continue;
        };
        let Some(d) = devices.iter_mut().find(|d| d.bdf == bdf) else {
            log.warn(
                &dir.join(&e.name),
                "NVIDIA driver lists a GPU that sysfs does not have",
            );
            continue;
        };
        // The NVIDIA driver claims it: a display-class function it lists is a GPU even when the
        // snapshot lost its vendor file.
        if d.class >> 16 == 0x03 && d.vendor_id.is_none() {
            d.kind = crate::model::DeviceKind::Gpu;
        }
        let mut od = OsDevice::new(OsDeviceKind::NvidiaGpu, e.name.clone());
        if let Some(b) = read_opt(fs, log, &dir.join(&e.name).join("numa_status")) {
            // GPU memory exposed as a NUMA node (POWER9/Grace coherent GPUs): `Node: 255`.
            if let Ok(s) = std::str::from_utf8(&b)
                && let Some(n) = s.lines().find_map(|l| l.strip_prefix("Node:"))
            {
                od.attrs
                    .push(("memory_numa_node".into(), n.trim().to_string()));
            }
        }
        if let Some(b) = read_opt(fs, log, &dir.join(&e.name).join("information"))
            && let Ok(s) = std::str::from_utf8(&b)
        {
            for line in s.lines() {
                if let Some((k, v)) = line.split_once(':') {
                    od.attrs.push((k.trim().to_string(), v.trim().to_string()));
                }
            }
        }
        d.os_devices.push(od);
    }
}

fn slots(fs: &dyn FsRoot, log: &Log, devices: &mut [Device]) {
    let dir = Path::new("sys/bus/pci/slots");
    let Ok(entries) = fs.read_dir(dir) else {
        return;
    };
    for e in entries {
        let Some(addr) = log.read_text(fs, &dir.join(&e.name).join("address")) else {
            continue;
        };
        for d in devices.iter_mut() {
            if d.bdf.adapter() == addr {
                d.slot = Some(e.name.clone());
            }
        }
    }
}

fn numa(fs: &dyn FsRoot, log: &Log) -> Vec<NumaNode> {
    let dir = Path::new("sys/devices/system/node");
    let Ok(entries) = fs.read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries {
        let Some(id) = e
            .name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let nd = dir.join(&e.name);
        let cpus = log
            .read_value(fs, &nd.join("cpulist"), cpulist::parse_list)
            .unwrap_or_default();
        let distances = log
            .read_value(fs, &nd.join("distance"), attr::distances)
            .unwrap_or_default();
        out.push(NumaNode {
            id,
            cpus: crate::model::cpulist::format_list(&cpus),
            distances,
        });
    }
    out.sort_by_key(|n| n.id);
    out
}

fn text_of(fs: &dyn FsRoot, log: &Log, p: &str) -> Option<String> {
    log.read_text(fs, Path::new(p))
}

fn machine_info(fs: &dyn FsRoot, log: &Log) -> MachineInfo {
    let mut m = MachineInfo::default();
    // 16 MiB: a machine of thousands of CPUs writes more than the 1 MiB of an attribute.
    let cpuinfo = Path::new("proc/cpuinfo");
    if let Some(b) = optional(
        log,
        cpuinfo,
        super::fsroot::read_whole(fs, cpuinfo, 16 << 20),
    ) {
        let s = String::from_utf8_lossy(&b);
        let mut sockets = std::collections::BTreeSet::new();
        let mut logical = 0;
        let (mut cpu, mut core, mut phys) = (None::<u32>, None::<u32>, None::<u32>);
        let flush = |cpu: &mut Option<u32>,
                     core: &mut Option<u32>,
                     phys: &mut Option<u32>,
                     m: &mut MachineInfo| {
            if let Some(c) = cpu.take() {
                m.cpu_cores
                    .push((c, core.take().unwrap_or(c), phys.take().unwrap_or(0)));
            }
        };
        for line in s.lines() {
            let Some((k, v)) = line.split_once(':') else {
                flush(&mut cpu, &mut core, &mut phys, &mut m);
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "processor" => {
                    flush(&mut cpu, &mut core, &mut phys, &mut m);
                    logical += 1;
                    cpu = v.parse().ok();
                }
                "vendor_id" if m.cpu_vendor.is_none() => m.cpu_vendor = Some(v.to_string()),
                // aarch64 kernels name the implementer instead (0x41: Arm Ltd; Grace is a
                // Neoverse V2, part 0xd4f).
                "CPU implementer" if m.cpu_vendor.is_none() => {
                    m.cpu_vendor = Some(format!("CPU implementer {v} (arm64)"))
                }
                "CPU part" if m.cpu_model.is_none() => m.cpu_model = Some(format!("CPU part {v}")),
                "model name" | "cpu" if m.cpu_model.is_none() => m.cpu_model = Some(v.to_string()),
                "cpu family" if m.cpu_family.is_none() => m.cpu_family = v.parse().ok(),
                "model" if m.cpu_model_number.is_none() => m.cpu_model_number = v.parse().ok(),
                "physical id" => {
                    phys = v.parse().ok();
                    sockets.insert(v.to_string());
                }
                "core id" => core = v.parse().ok(),
                "flags"
                    if m.hypervisor.is_empty()
                        && v.split_whitespace().any(|f| f == "hypervisor") =>
                {
                    m.hypervisor
                        .push(("proc/cpuinfo".into(), "flags: hypervisor".into()));
                }
                _ => {}
            }
        }
        flush(&mut cpu, &mut core, &mut phys, &mut m);
        m.logical_cpus = if logical > 0 { Some(logical) } else { None };
        m.sockets = if sockets.is_empty() {
            None
        } else {
            Some(sockets.len() as u32)
        };
    }
    if let Some(t) = text_of(fs, log, "sys/hypervisor/type") {
        m.hypervisor.push(("sys/hypervisor/type".into(), t));
    }
    m.dmi_sys_vendor = text_of(fs, log, "sys/class/dmi/id/sys_vendor");
    m.dmi_product_name = text_of(fs, log, "sys/class/dmi/id/product_name");
    const VM_NAMES: [&str; 8] = [
        "QEMU",
        "KVM",
        "VMware",
        "VirtualBox",
        "Xen",
        "Microsoft Corporation",
        "Amazon EC2",
        "Google",
    ];
    for (p, v) in [
        ("sys/class/dmi/id/sys_vendor", &m.dmi_sys_vendor),
        ("sys/class/dmi/id/product_name", &m.dmi_product_name),
    ] {
        if let Some(v) = v
            && VM_NAMES.iter().any(|n| v.contains(n))
        {
            m.hypervisor.push((p.to_string(), v.clone()));
        }
    }
    m.kernel_cmdline = match fs.read(Path::new("proc/cmdline")) {
        Ok(b) => Fact::Known(String::from_utf8_lossy(&b).trim().to_string()),
        Err(e) => Fact::Unknown(format!("proc/cmdline: {e}")),
    };
    m.iommu_units = match fs.read_dir(Path::new("sys/class/iommu")) {
        Ok(v) => Fact::Known(v.into_iter().map(|e| e.name).collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if fs.kind(Path::new("sys/class")).is_some() {
                Fact::Known(Vec::new())
            } else {
                Fact::Unknown("sys/class not captured".into())
            }
        }
        Err(e) => Fact::Unknown(format!("sys/class/iommu: {e}")),
    };
    m.nvidia_driver = read_opt(fs, log, Path::new("proc/driver/nvidia/version")).and_then(|b| {
        String::from_utf8_lossy(&b)
            .lines()
            .next()
            .map(|l| l.trim().to_string())
    });
    m.nvidia_module_version = text_of(fs, log, "sys/module/nvidia/version");
    m.nvidia_peermem_version =
        text_of(fs, log, "sys/module/nvidia_peermem/version").or_else(|| {
            fs.kind(Path::new("sys/module/nvidia_peermem"))
                .map(|_| "loaded (no version file)".to_string())
        });
    m.nv_peer_mem_loaded = fs.kind(Path::new("sys/module/nv_peer_mem")).is_some();
    m.ib_core_loaded = fs.kind(Path::new("sys/module/ib_core")).is_some();
    m.modules_visible = fs.kind(Path::new("sys/module")).is_some();
    m.mm_visible = fs.kind(Path::new("sys/kernel/mm")).is_some();
    if let Ok(peers) = fs.read_dir(Path::new("sys/kernel/mm/memory_peers")) {
        for p in peers {
            let v = text_of(
                fs,
                log,
                &format!("sys/kernel/mm/memory_peers/{}/version", p.name),
            );
            m.memory_peers.push((p.name, v));
        }
    }
    m
}

/// Whether an error is a chain of links too long or looping (`ELOOP` from the kernel, or the
/// in-memory resolver's own "too many levels"), not a device gone or access denied.
fn is_link_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP) || e.to_string().contains("too many levels")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::LinkInfo;
    use crate::sources::fsroot::{MemNode, MemRoot};

    fn dev(m: &mut MemRoot, bdf: &str, class: &str, link: [&str; 4]) {
        let dir = format!("sys/devices/pci0000:00/{bdf}");
        m.insert(
            format!("sys/bus/pci/devices/{bdf}").into(),
            MemNode::Symlink(format!("../../../devices/pci0000:00/{bdf}").into()),
        );
        m.insert(
            format!("{dir}/class").into(),
            MemNode::File(format!("{class}\n").into_bytes()),
        );
        for (f, v) in [
            "current_link_speed",
            "current_link_width",
            "max_link_speed",
            "max_link_width",
        ]
        .iter()
        .zip(link)
        {
            m.insert(
                format!("{dir}/{f}").into(),
                MemNode::File(format!("{v}\n").into_bytes()),
            );
        }
    }

    /// What the kernel writes for a root-complex integrated endpoint (no link registers) and
    /// for an empty slot's root port (link down): no link, and width 0 known; no warning.
    #[test]
    fn link_down_and_no_link_of_its_own() {
        let mut m = MemRoot::new("t");
        dev(
            &mut m,
            "0000:00:00.0",
            "0x088000",
            ["Unknown", "0", "Unknown", "0"],
        );
        dev(
            &mut m,
            "0000:00:01.0",
            "0x060400",
            ["Unknown", "0", "32.0 GT/s PCIe", "16"],
        );
        let src = SourceInfo {
            kind: "snapshot".into(),
            path: "t".into(),
            limitations: vec![],
        };
        let raw = discover(&m, src).unwrap();
        assert!(raw.warnings.is_empty(), "{:?}", raw.warnings);
        let link = |b: &str| {
            let b: Bdf = b.parse().unwrap();
            raw.devices.iter().find(|d| d.bdf == b).unwrap().link
        };
        assert_eq!(link("0000:00:00.0"), None);
        assert_eq!(
            link("0000:00:01.0"),
            Some(LinkInfo {
                current_gts: None,
                current_width: Some(0),
                max_gts: Some(32.0),
                max_width: Some(16),
            })
        );
    }
}
