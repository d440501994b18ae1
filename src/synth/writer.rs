//! Turns a [`Spec`] into a sorted list of entries (directories, files, relative symlinks) and
//! writes them to a directory or a `.tar.gz`.

use super::config::{self, BridgeBuses, ConfigContext};
use super::{Function, Spec, SpecError, WriteOptions};
use crate::model::bdf::Bdf;
use crate::parse::cpulist;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::host_files::*;

/// One node of a synthesized tree, keyed by its path relative to the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory.
    Dir,
    /// A regular file with its content.
    File(Vec<u8>),
    /// A symbolic link with its (relative) target.
    Link(String),
}

/// Accumulates entries, creating parent directories on the way.
#[derive(Default)]
pub(super) struct Tree {
    pub(super) nodes: BTreeMap<PathBuf, Entry>,
}

impl Tree {
    pub(super) fn dir(&mut self, p: &Path) {
        let mut acc = PathBuf::new();
        for c in p.components() {
            acc.push(c);
            self.nodes.entry(acc.clone()).or_insert(Entry::Dir);
        }
    }
    pub(super) fn file(&mut self, p: impl AsRef<Path>, content: impl Into<Vec<u8>>) {
        let p = p.as_ref();
        if let Some(d) = p.parent() {
            self.dir(d);
        }
        self.nodes
            .insert(p.to_path_buf(), Entry::File(content.into()));
    }
    /// A symlink at `link` pointing at `target` (both relative to the root), written relative
    /// to the link's directory as the kernel does (`../../../devices/…`).
    pub(super) fn link(&mut self, link: impl AsRef<Path>, target: impl AsRef<Path>) {
        let link = link.as_ref();
        if let Some(d) = link.parent() {
            self.dir(d);
        }
        let rel = relative(link.parent().unwrap_or(Path::new("")), target.as_ref());
        self.nodes.insert(link.to_path_buf(), Entry::Link(rel));
    }
}

/// Relative path from directory `from` to `to`, both relative to the same root.
pub(super) fn relative(from: &Path, to: &Path) -> String {
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// Kernel cpumask text (`%*pb`): 32-bit hex words, most significant first, comma-separated,
/// the first word only as wide as the remaining bits need.
pub(crate) fn cpumask(cpus: &[u32], nbits: u32) -> String {
    let nbits = nbits.max(1);
    let nwords = nbits.div_ceil(32) as usize;
    let mut words = vec![0u32; nwords];
    for &c in cpus {
        if c < nbits {
            words[(c / 32) as usize] |= 1 << (c % 32);
        }
    }
    let mut out = String::new();
    for i in (0..nwords).rev() {
        if i == nwords - 1 {
            let rem = nbits - 32 * (nwords as u32 - 1);
            let digits = rem.div_ceil(4) as usize;
            let _ = write!(out, "{:0width$x}", words[i], width = digits);
        } else {
            let _ = write!(out, ",{:08x}", words[i]);
        }
    }
    out
}

pub(super) fn speed_text(gts: f64) -> String {
    if config::speed_code(gts) == 0 {
        "Unknown".to_string()
    } else {
        format!("{gts:.1} GT/s PCIe")
    }
}

pub(super) const AER_COR: [&str; 8] = [
    "RxErr",
    "BadTLP",
    "BadDLLP",
    "Rollover",
    "Timeout",
    "NonFatalErr",
    "CorrIntErr",
    "HeaderOF",
];
pub(super) const AER_UNCOR: [&str; 18] = [
    "Undefined",
    "DLP",
    "SDES",
    "TLP",
    "FCP",
    "CmpltTO",
    "CmpltAbrt",
    "UnxCmplt",
    "RxOF",
    "MalfTLP",
    "ECRC",
    "UnsupReq",
    "ACSViol",
    "UncorrIntErr",
    "BlockedTLP",
    "AtomicOpBlocked",
    "TLPBlockedErr",
    "PoisonTLPBlocked",
];

pub(super) fn aer_file(names: &[&str], counts: &BTreeMap<String, u64>, total: &str) -> String {
    let mut s = String::new();
    let mut sum = 0u64;
    for n in names {
        let v = counts.get(*n).copied().unwrap_or(0);
        sum += v;
        let _ = writeln!(s, "{n} {v}");
    }
    // Names the kernel list does not have are kept (older kernels used other names).
    for (n, v) in counts {
        if !names.contains(&n.as_str()) {
            sum += v;
            let _ = writeln!(s, "{n} {v}");
        }
    }
    let _ = writeln!(s, "{total} {sum}");
    s
}

pub(super) fn ib_state_name(n: u32) -> &'static str {
    match n {
        0 => "NOP",
        1 => "DOWN",
        2 => "INIT",
        3 => "ARMED",
        4 => "ACTIVE",
        5 => "ACTIVE_DEFER",
        _ => "UNKNOWN",
    }
}

pub(super) fn ib_phys_state_name(n: u32) -> &'static str {
    match n {
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "Phy Test",
        _ => "<unknown>",
    }
}

pub(super) fn rid(b: Bdf) -> u32 {
    (u32::from(b.bus) << 8) | (u32::from(b.device) << 3) | u32::from(b.function)
}

/// Checks the spec and returns each function's sysfs directory and bridge bus numbers.
pub(super) struct Layout {
    dirs: HashMap<Bdf, PathBuf>,
    buses: HashMap<Bdf, BridgeBuses>,
    vfs: HashMap<Bdf, Vec<Bdf>>,
}

pub(super) fn layout(spec: &Spec) -> Result<Layout, SpecError> {
    let mut index: HashMap<Bdf, &Function> = HashMap::new();
    for f in &spec.functions {
        if index.insert(f.bdf, f).is_some() {
            return Err(SpecError::Duplicate(f.bdf));
        }
    }
    let mut vfs: HashMap<Bdf, Vec<Bdf>> = HashMap::new();
    for f in &spec.functions {
        if let Some(p) = f.parent {
            let Some(pf) = index.get(&p) else {
                return Err(SpecError::Missing(f.bdf, "parent", p));
            };
            if !pf.role.is_bridge() {
                return Err(SpecError::Invalid(
                    f.bdf,
                    format!("parent {p} is not a bridge"),
                ));
            }
            if p.domain != f.bdf.domain {
                return Err(SpecError::Invalid(
                    f.bdf,
                    format!("parent {p} is in another domain"),
                ));
            }
        }
        if let Some(pf) = f.physfn {
            let Some(pff) = index.get(&pf) else {
                return Err(SpecError::Missing(f.bdf, "physfn", pf));
            };
            if pff.parent != f.parent {
                return Err(SpecError::Invalid(
                    f.bdf,
                    format!("a VF must have the same parent as its PF {pf}"),
                ));
            }
            vfs.entry(pf).or_default().push(f.bdf);
        }
    }
    for v in vfs.values_mut() {
        v.sort();
    }
    // Directories, top-down with memo and loop guard.
    let mut dirs: HashMap<Bdf, PathBuf> = HashMap::new();
    for f in &spec.functions {
        let mut chain = vec![f.bdf];
        let mut cur = f;
        while let Some(p) = cur.parent {
            if chain.len() > 256 || chain.contains(&p) {
                return Err(SpecError::Loop(f.bdf));
            }
            chain.push(p);
            cur = index[&p];
        }
        let root = cur.bdf;
        if !spec
            .host_bridges
            .iter()
            .any(|h| h.domain == root.domain && h.bus == root.bus)
        {
            return Err(SpecError::NoHostBridge(f.bdf, root.domain, root.bus));
        }
        let mut path = PathBuf::from(format!(
            "sys/devices/pci{:04x}:{:02x}",
            root.domain, root.bus
        ));
        for b in chain.iter().rev() {
            path.push(b.to_string());
        }
        dirs.insert(f.bdf, path);
    }
    // Bridge bus numbers: secondary = lowest child bus, subordinate = highest bus below.
    let mut children: HashMap<Bdf, Vec<Bdf>> = HashMap::new();
    for f in &spec.functions {
        if let Some(p) = f.parent {
            children.entry(p).or_default().push(f.bdf);
        }
    }
    fn sub(
        b: Bdf,
        children: &HashMap<Bdf, Vec<Bdf>>,
        index: &HashMap<Bdf, &Function>,
        depth: u32,
    ) -> u8 {
        let own = index.get(&b).and_then(|f| f.secondary_bus).unwrap_or(0);
        let mut m = own.max(b.bus);
        if depth > 256 {
            return m;
        }
        for c in children.get(&b).into_iter().flatten() {
            m = m.max(c.bus).max(sub(*c, children, index, depth + 1));
        }
        m
    }
    let mut buses = HashMap::new();
    for f in spec.functions.iter().filter(|f| f.role.is_bridge()) {
        let kids = children.get(&f.bdf);
        let secondary = match kids.and_then(|k| k.iter().map(|c| c.bus).min()) {
            Some(s) => s,
            None => f.secondary_bus.ok_or_else(|| {
                SpecError::Invalid(f.bdf, "bridge has no children and no secondary_bus".into())
            })?,
        };
        let subordinate = sub(f.bdf, &children, &index, 0).max(secondary);
        if secondary <= f.bdf.bus {
            return Err(SpecError::Invalid(
                f.bdf,
                format!("secondary bus {secondary:02x} must be above the bridge's own bus"),
            ));
        }
        buses.insert(
            f.bdf,
            BridgeBuses {
                primary: f.bdf.bus,
                secondary,
                subordinate,
            },
        );
    }
    // Sibling bridges must not overlap, or lspci/hwloc would misplace devices.
    let mut ranges: Vec<(u32, u8, u8, Bdf)> = buses
        .iter()
        .map(|(b, r)| (b.domain, r.secondary, r.subordinate, *b))
        .collect();
    ranges.sort();
    for w in ranges.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if a.0 == b.0 && b.1 <= a.2 {
            let nested = dirs[&b.3].starts_with(&dirs[&a.3]);
            if !nested {
                return Err(SpecError::Invalid(
                    b.3,
                    format!("bus range overlaps bridge {}", a.3),
                ));
            }
        }
    }
    Ok(Layout { dirs, buses, vfs })
}

/// What every step of [`build_entries`] reads: the spec, the options, the tree's directories and
/// bus numbers, and the CPUs of each NUMA node.
struct Ctx<'a> {
    spec: &'a Spec,
    opts: &'a WriteOptions,
    lay: Layout,
    ncpus: u32,
    numa_cpus: HashMap<u32, Vec<u32>>,
    all_cpus: Vec<u32>,
    /// Slots (domain, bus, device) holding a function other than 0: multifunction devices.
    slots_by_device: BTreeSet<(u32, u8, u8)>,
}

/// What the per-function steps collect for the files written after them: each driver's
/// functions, and each IOMMU group's type and functions.
#[derive(Default)]
struct Bindings {
    groups: BTreeMap<u32, (Option<String>, Vec<Bdf>)>,
    drivers: BTreeMap<String, Vec<Bdf>>,
}

/// Builds every entry of the tree for `spec`, sorted by path: the PCI roots, every function's
/// directory, the drivers and IOMMU groups, the loopback, then the node's and KFD's files.
pub fn build_entries(spec: &Spec, opts: &WriteOptions) -> Result<Vec<(PathBuf, Entry)>, SpecError> {
    let cx = context(spec, opts)?;
    let mut t = Tree::default();
    let mut bind = Bindings::default();
    pci_roots(&mut t, spec);
    for f in &spec.functions {
        function_files(&mut t, &cx, &mut bind, f);
    }
    driver_dirs(&mut t, &cx, &bind.drivers);
    iommu_groups(&mut t, &cx, &bind.groups);
    loopback(&mut t);
    node_files(&mut t, spec, &cx.numa_cpus);
    kfd_files(&mut t, spec, &cx.lay.dirs);
    Ok(t.nodes.into_iter().collect())
}

/// The layout of the tree and the CPUs of each NUMA node (an empty list for a node without CPUs).
fn context<'a>(spec: &'a Spec, opts: &'a WriteOptions) -> Result<Ctx<'a>, SpecError> {
    let lay = layout(spec)?;
    let ncpus = spec.machine.logical_cpus();
    let numa_cpus: HashMap<u32, Vec<u32>> = spec
        .numa_nodes
        .iter()
        .map(|n| {
            let cpus = if n.cpus.trim().is_empty() {
                Vec::new()
            } else {
                cpulist::parse_list(n.cpus.as_bytes()).unwrap_or_default()
            };
            (n.id, cpus)
        })
        .collect();
    let all_cpus: Vec<u32> = (0..ncpus).collect();
    let slots_by_device: BTreeSet<(u32, u8, u8)> = spec
        .functions
        .iter()
        .filter(|f| f.physfn.is_none() && f.bdf.function != 0)
        .map(|f| (f.bdf.domain, f.bdf.bus, f.bdf.device))
        .collect();
    Ok(Ctx {
        spec,
        opts,
        lay,
        ncpus,
        numa_cpus,
        all_cpus,
        slots_by_device,
    })
}

/// `sys/bus/pci/{devices,drivers}` and one `sys/devices/pciDDDD:BB` per host bridge.
fn pci_roots(t: &mut Tree, spec: &Spec) {
    t.dir(Path::new("sys/bus/pci/devices"));
    t.dir(Path::new("sys/bus/pci/drivers"));
    for hb in &spec.host_bridges {
        t.dir(&PathBuf::from(format!(
            "sys/devices/pci{:04x}:{:02x}",
            hb.domain, hb.bus
        )));
    }
}

/// One function's directory and everything under or about it, in the order the kernel's files
/// are listed: identity, locality, link, resources, config, AER, bindings, class devices, VPD,
/// the NVIDIA driver's files, and its `sys/bus/pci/devices` link.
fn function_files(t: &mut Tree, cx: &Ctx, bind: &mut Bindings, f: &Function) {
    let dir = &cx.lay.dirs[&f.bdf];
    t.dir(dir);
    identity_files(t, dir, f);
    locality_files(t, cx, dir, f);
    link_files(t, cx, dir, f);
    t.file(dir.join("resource"), resource_text(f));
    config_file(t, cx, dir, f);
    if let Some(aer) = &f.aer {
        aer_files(t, dir, aer);
    }
    binding_links(t, cx, bind, dir, f);
    for r in &f.rdma {
        rdma_device(t, dir, f, r);
    }
    for n in &f.netdevs {
        let nd = dir.join("net").join(&n.name);
        netdev_files(t, &nd, n);
        t.link(nd.join("device"), dir);
        t.link(PathBuf::from("sys/class/net").join(&n.name), &nd);
    }
    for n in &f.nvme {
        nvme_device(t, dir, n);
    }
    // `vpd` is readable by root only: the unprivileged view has none.
    if let (Some(v), false) = (&f.vpd, cx.opts.unprivileged) {
        let kw: Vec<(&str, &str)> = v
            .keywords
            .iter()
            .map(|(k, x)| (k.as_str(), x.as_str()))
            .collect();
        t.file(dir.join("vpd"), crate::parse::vpd::build(&v.name, &kw));
    }
    nvidia_proc_files(t, cx.spec, f);
    t.link(
        PathBuf::from("sys/bus/pci/devices").join(f.bdf.to_string()),
        dir,
    );
}

/// IDs, class, revision, `enable`, `irq` and `modalias`.
fn identity_files(t: &mut Tree, dir: &Path, f: &Function) {
    let a = |n: &str| dir.join(n);
    t.file(a("vendor"), format!("0x{:04x}\n", f.vendor));
    t.file(a("device"), format!("0x{:04x}\n", f.device));
    t.file(
        a("subsystem_vendor"),
        format!("0x{:04x}\n", f.subsystem_vendor),
    );
    t.file(
        a("subsystem_device"),
        format!("0x{:04x}\n", f.subsystem_device),
    );
    t.file(a("class"), format!("0x{:06x}\n", f.class));
    t.file(a("revision"), format!("0x{:02x}\n", f.revision));
    t.file(a("enable"), "1\n");
    t.file(a("irq"), "0\n");
    t.file(
        a("modalias"),
        format!(
            "pci:v{:08X}d{:08X}sv{:08X}sd{:08X}bc{:02X}sc{:02X}i{:02X}\n",
            f.vendor,
            f.device,
            f.subsystem_vendor,
            f.subsystem_device,
            f.class >> 16,
            (f.class >> 8) & 0xff,
            f.class & 0xff
        ),
    );
}

/// `numa_node`, `local_cpulist` and `local_cpus` (every CPU when the node has none or is -1).
fn locality_files(t: &mut Tree, cx: &Ctx, dir: &Path, f: &Function) {
    let numa = cx.spec.numa_of(f);
    t.file(dir.join("numa_node"), format!("{numa}\n"));
    let local: &[u32] = match u32::try_from(numa).ok().and_then(|n| cx.numa_cpus.get(&n)) {
        Some(c) if !c.is_empty() => c,
        _ => &cx.all_cpus,
    };
    t.file(
        dir.join("local_cpulist"),
        format!("{}\n", crate::model::cpulist::format_list(local)),
    );
    t.file(
        dir.join("local_cpus"),
        format!("{}\n", cpumask(local, cx.ncpus)),
    );
}

/// The PCIe link's speed and width (PCIe functions with a link), and a bridge's bus numbers.
fn link_files(t: &mut Tree, cx: &Ctx, dir: &Path, f: &Function) {
    let a = |n: &str| dir.join(n);
    if let (true, Some(l)) = (f.pcie, f.link) {
        t.file(
            a("current_link_speed"),
            format!("{}\n", speed_text(l.speed)),
        );
        t.file(a("current_link_width"), format!("{}\n", l.width));
        t.file(
            a("max_link_speed"),
            format!("{}\n", speed_text(l.max_speed)),
        );
        t.file(a("max_link_width"), format!("{}\n", l.max_width));
    }
    if let Some(bb) = cx.lay.buses.get(&f.bdf) {
        t.file(a("secondary_bus_number"), format!("{}\n", bb.secondary));
        t.file(a("subordinate_bus_number"), format!("{}\n", bb.subordinate));
    }
}

/// `resource`: 13 lines for endpoints, 17 for bridges (windows), kernel format.
fn resource_text(f: &Function) -> String {
    let nres = if f.role.is_bridge() { 17 } else { 13 };
    let mut res = String::new();
    for i in 0..nres {
        match f
            .bars
            .iter()
            .find(|b| usize::from(b.index) == i && !f.role.is_bridge())
        {
            Some(bar) => {
                let mut flags: u64 = 0x0004_0200;
                if bar.mem64 {
                    flags |= 0x0010_0004;
                }
                if bar.prefetchable {
                    flags |= 0x2008;
                }
                let end = bar.start + bar.size.max(1) - 1;
                let _ = writeln!(res, "0x{:016x} 0x{:016x} 0x{:016x}", bar.start, end, flags);
            }
            None => res.push_str("0x0000000000000000 0x0000000000000000 0x0000000000000000\n"),
        }
    }
    res
}

/// `config`: the configuration space (64 bytes in the unprivileged view).
fn config_file(t: &mut Tree, cx: &Ctx, dir: &Path, f: &Function) {
    let vfs = cx.lay.vfs.get(&f.bdf);
    let offset_stride = match vfs.map(|v| v.as_slice()) {
        Some([first, second, ..]) => (
            (rid(*first).wrapping_sub(rid(f.bdf))) as u16,
            (rid(*second).wrapping_sub(rid(*first))) as u16,
        ),
        Some([first]) => ((rid(*first).wrapping_sub(rid(f.bdf))) as u16, 1),
        _ => (0, 0),
    };
    let ctx = ConfigContext {
        buses: cx.lay.buses.get(&f.bdf).copied(),
        multifunction: f.physfn.is_none()
            && cx
                .slots_by_device
                .contains(&(f.bdf.domain, f.bdf.bus, f.bdf.device)),
        num_vfs: vfs.map_or(0, |v| v.len() as u16),
        vf_offset_stride: offset_stride,
        is_vf: f.physfn.is_some(),
    };
    let mut cfg = config::build(f, &ctx);
    if cx.opts.unprivileged {
        cfg.truncate(64);
    }
    t.file(dir.join("config"), cfg);
}

/// `aer_dev_{correctable,nonfatal,fatal}`.
fn aer_files(t: &mut Tree, dir: &Path, aer: &super::Aer) {
    t.file(
        dir.join("aer_dev_correctable"),
        aer_file(&AER_COR, &aer.correctable, "TOTAL_ERR_COR"),
    );
    t.file(
        dir.join("aer_dev_nonfatal"),
        aer_file(&AER_UNCOR, &aer.nonfatal, "TOTAL_ERR_NONFATAL"),
    );
    t.file(
        dir.join("aer_dev_fatal"),
        aer_file(&AER_UNCOR, &aer.fatal, "TOTAL_ERR_FATAL"),
    );
}

/// The function's driver and IOMMU group links (collected for [`driver_dirs`] and
/// [`iommu_groups`]), its PF/VF links and SR-IOV counts, and its slot's address.
fn binding_links(t: &mut Tree, cx: &Ctx, bind: &mut Bindings, dir: &Path, f: &Function) {
    let a = |n: &str| dir.join(n);
    if let Some(d) = &f.driver {
        let ddir = PathBuf::from("sys/bus/pci/drivers").join(d);
        t.link(a("driver"), &ddir);
        bind.drivers.entry(d.clone()).or_default().push(f.bdf);
    }
    if let Some(g) = f.iommu_group {
        t.link(a("iommu_group"), format!("sys/kernel/iommu_groups/{g}"));
        let e = bind.groups.entry(g).or_insert((None, Vec::new()));
        if e.0.is_none() {
            e.0 = f.iommu_type.clone();
        }
        e.1.push(f.bdf);
    }
    if let Some(pf) = f.physfn {
        t.link(a("physfn"), &cx.lay.dirs[&pf]);
    }
    let vfs = cx.lay.vfs.get(&f.bdf);
    if let Some(v) = vfs {
        for (i, vf) in v.iter().enumerate() {
            t.link(a(&format!("virtfn{i}")), &cx.lay.dirs[vf]);
        }
    }
    if f.total_vfs > 0 {
        t.file(a("sriov_totalvfs"), format!("{}\n", f.total_vfs));
        t.file(a("sriov_numvfs"), format!("{}\n", vfs.map_or(0, Vec::len)));
    }
    if let (Some(s), Some(bb)) = (&f.slot, cx.lay.buses.get(&f.bdf)) {
        let sd = PathBuf::from("sys/bus/pci/slots").join(&s.name);
        t.file(
            sd.join("address"),
            format!("{:04x}:{:02x}:00\n", f.bdf.domain, bb.secondary),
        );
    }
}

/// An RDMA device: `infiniband/<name>` with its ports and class link, or an HPE Cassini's CXI
/// device, which is in its own class (`cxi_core`), not infiniband.
fn rdma_device(t: &mut Tree, dir: &Path, f: &Function, r: &super::Rdma) {
    if f.vendor == 0x17db && r.name.starts_with("cxi") {
        let cd = dir.join("cxi").join(&r.name);
        t.link(cd.join("device"), dir);
        // The driver's link state of the function (shs-cxi-driver cass_sysfs.c `link_show`:
        // `1` when the PHY is RUNNING); the layouts' Cassini links are up.
        t.file(dir.join("properties").join("link"), "1\n");
        t.link(PathBuf::from("sys/class/cxi").join(&r.name), &cd);
        return;
    }
    let rd = dir.join("infiniband").join(&r.name);
    t.file(rd.join("fw_ver"), format!("{}\n", r.fw_ver));
    t.file(rd.join("hca_type"), format!("{}\n", r.hca_type));
    t.file(rd.join("board_id"), format!("{}\n", r.board_id));
    t.file(rd.join("node_type"), "1: CA\n");
    t.link(rd.join("device"), dir);
    for p in &r.ports {
        let pd = rd.join("ports").join(p.port.to_string());
        t.file(
            pd.join("state"),
            format!("{}: {}\n", p.state, ib_state_name(p.state)),
        );
        t.file(
            pd.join("phys_state"),
            format!("{}: {}\n", p.phys_state, ib_phys_state_name(p.phys_state)),
        );
        t.file(pd.join("rate"), format!("{}\n", p.rate));
        t.file(pd.join("link_layer"), format!("{}\n", p.link_layer));
    }
    t.link(PathBuf::from("sys/class/infiniband").join(&r.name), &rd);
}

/// An NVMe controller: `nvme/<name>` with its model, class link, namespaces and partitions.
fn nvme_device(t: &mut Tree, dir: &Path, n: &super::Nvme) {
    let nd = dir.join("nvme").join(&n.name);
    t.file(nd.join("model"), format!("{}\n", n.model));
    t.link(nd.join("device"), dir);
    t.link(PathBuf::from("sys/class/nvme").join(&n.name), &nd);
    for ns in &n.namespaces {
        let d = nd.join(&ns.name);
        block_dev(t, &d, ns, false);
        for p in &ns.partitions {
            block_dev(t, &d.join(&p.name), p, true);
        }
    }
}

/// An NVIDIA GPU's `proc/driver/nvidia/gpus/<bdf>/{numa_status,information}`.
fn nvidia_proc_files(t: &mut Tree, spec: &Spec, f: &Function) {
    if let (Some(n), true) = (f.gpu_memory_numa, f.nvidia_model.is_some()) {
        let gd = PathBuf::from("proc/driver/nvidia/gpus").join(f.bdf.to_string());
        t.file(
            gd.join("numa_status"),
            format!("Node: {n}\nStatus: online\n"),
        );
    }
    if let Some(model) = &f.nvidia_model {
        let gd = PathBuf::from("proc/driver/nvidia/gpus").join(f.bdf.to_string());
        let minor = spec
            .functions
            .iter()
            .filter(|g| g.nvidia_model.is_some() && g.bdf < f.bdf)
            .count();
        t.file(
            gd.join("information"),
            format!(
                "Model: \t\t {model}\nIRQ:   \t\t 0\nGPU UUID: \t GPU-????????-????-????-????-????????????\nVideo BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t {}\nDevice Minor: \t {minor}\nGPU Excluded:\t No\n",
                f.bdf
            ),
        );
    }
}

/// `sys/bus/pci/drivers/<driver>/<bdf>` for every bound function.
fn driver_dirs(t: &mut Tree, cx: &Ctx, drivers: &BTreeMap<String, Vec<Bdf>>) {
    for (d, devs) in drivers {
        let dd = PathBuf::from("sys/bus/pci/drivers").join(d);
        t.dir(&dd);
        for b in devs {
            t.link(dd.join(b.to_string()), &cx.lay.dirs[b]);
        }
    }
}

/// `sys/kernel/iommu_groups/<g>`: its type (the first member's, else the node default, else
/// identity), reserved regions and device links.
fn iommu_groups(t: &mut Tree, cx: &Ctx, groups: &BTreeMap<u32, (Option<String>, Vec<Bdf>)>) {
    for (g, (ty, devs)) in groups {
        let gd = PathBuf::from(format!("sys/kernel/iommu_groups/{g}"));
        let ty = ty
            .clone()
            .or_else(|| cx.spec.node.iommu_default_type.clone())
            .unwrap_or_else(|| "identity".into());
        t.file(gd.join("type"), format!("{ty}\n"));
        t.file(
            gd.join("reserved_regions"),
            "0x00000000fee00000 0x00000000feefffff msi\n",
        );
        for b in devs {
            t.link(gd.join("devices").join(b.to_string()), &cx.lay.dirs[b]);
        }
    }
}

/// The loopback interface `lo` and its class link.
fn loopback(t: &mut Tree) {
    let lo = PathBuf::from("sys/devices/virtual/net/lo");
    netdev_files(
        t,
        &lo,
        &super::Netdev {
            name: "lo".into(),
            operstate: "unknown".into(),
            speed_mbps: None,
            mtu: 65536,
        },
    );
    t.link("sys/class/net/lo", &lo);
}

/// One node of a tree as the synthesizer writes it to a directory or a `.tar.gz`: what
/// [`Entry`] holds, and FIFOs (which the hostile corpus puts where files should be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A directory.
    Dir,
    /// A regular file with its content.
    File(Vec<u8>),
    /// A symbolic link with its target, verbatim.
    Link(String),
    /// A named pipe (FIFO).
    Fifo,
}

impl From<Entry> for Node {
    fn from(e: Entry) -> Self {
        match e {
            Entry::Dir => Node::Dir,
            Entry::File(b) => Node::File(b),
            Entry::Link(t) => Node::Link(t),
        }
    }
}

/// The entries of a synthesized tree as nodes to write, in the same order.
pub(super) fn nodes(entries: Vec<(PathBuf, Entry)>) -> Vec<(PathBuf, Node)> {
    entries.into_iter().map(|(p, e)| (p, e.into())).collect()
}

/// Writes nodes under `root` on disk, in their order (parents first). A link replaces what
/// stands at its path, so a tree can be written again over itself.
pub(super) fn write_dir(nodes: &[(PathBuf, Node)], root: &Path) -> io::Result<()> {
    // Through the output layer's directory writer: no link placed inside `root` is followed.
    let mut w = crate::output::DirWriter::new(root)?;
    for (p, node) in nodes {
        match node {
            Node::Dir => w.dir(p)?,
            Node::File(b) => w.file(p, b)?,
            Node::Link(t) => w.link(p, t)?,
            Node::Fifo => w.fifo(p)?,
        }
    }
    Ok(())
}

/// Writes nodes as a `.tar.gz` under top folder `top` (deterministic headers: fixed modes,
/// time 0; FIFOs as FIFO entries), compressed at `level`.
pub(super) fn write_tar_gz(
    nodes: &[(PathBuf, Node)],
    top: &str,
    out: &mut dyn io::Write,
    level: flate2::Compression,
) -> io::Result<()> {
    let gz = flate2::write::GzEncoder::new(out, level);
    let mut b = tar::Builder::new(gz);
    b.mode(tar::HeaderMode::Deterministic);
    let mut top_hdr = tar::Header::new_gnu();
    top_hdr.set_entry_type(tar::EntryType::Directory);
    top_hdr.set_mode(0o755);
    top_hdr.set_mtime(0);
    top_hdr.set_size(0);
    b.append_data(&mut top_hdr, format!("{top}/"), io::empty())?;
    for (p, node) in nodes {
        let name = Path::new(top).join(p);
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        match node {
            Node::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                b.append_data(&mut h, &name, io::empty())?;
            }
            Node::File(data) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(data.len() as u64);
                b.append_data(&mut h, &name, data.as_slice())?;
            }
            Node::Link(t) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                b.append_link(&mut h, &name, t)?;
            }
            Node::Fifo => {
                h.set_entry_type(tar::EntryType::Fifo);
                h.set_mode(0o644);
                h.set_size(0);
                b.append_data(&mut h, &name, io::empty())?;
            }
        }
    }
    b.into_inner()?.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_links() {
        assert_eq!(cpumask(&[0, 1], 2), "3");
        assert_eq!(cpumask(&[0, 32], 64), "00000001,00000001");
        assert_eq!(cpumask(&[40], 48), "0100,00000000");
        assert_eq!(
            relative(
                Path::new("sys/bus/pci/devices"),
                Path::new("sys/devices/pci0000:17/0000:17:00.0")
            ),
            "../../../devices/pci0000:17/0000:17:00.0"
        );
        assert_eq!(
            relative(Path::new("sys/devices/a/b"), Path::new("sys/devices/a/c")),
            "../c"
        );
    }
}
