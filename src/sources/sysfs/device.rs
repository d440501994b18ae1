//! Reading each device of the sysfs bus: its directory held open, its config space, IDs,
//! locality, link, kind, BARs, AER counters, driver, IOMMU group and (ConnectX functions) VPD;
//! then what needs every device read (virtual functions per physical function, IOMMU group
//! types). The second phase of [`super::discover`].

use super::{Chains, DeviceReads, Located, Log, is_link_loop, optional};
use crate::model::bdf::Bdf;
use crate::model::device::{Device, LinkInfo, kind_from_class};
use crate::model::pci_config::PortType;
use crate::parse::{Refusal, aer, attr, config, cpulist, resource};
use crate::sources::fsroot::{FsRoot, OpenDir};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

/// Reads every located device's attributes, then what needs them all: the virtual functions
/// of each physical function and the type of each IOMMU group.
pub(super) fn read_devices(
    fs: &dyn FsRoot,
    log: &Log,
    bus: &Path,
    located: &Located,
    chains: &Chains,
) -> DeviceReads {
    let mut out = DeviceReads::default();
    let mut groups: BTreeMap<u32, Option<String>> = BTreeMap::new();
    for (bdf, (dir, listed)) in located {
        let (hb, chain) = &chains[bdf];
        let mut d = Device::new(*bdf, hb.clone(), dir.display().to_string());
        d.listed = *listed;
        d.parent = if chain.len() >= 2 {
            Some(chain[chain.len() - 2].0)
        } else {
            None
        };
        let Some(held) = open_device_dir(fs, log, bus, *bdf, dir, *listed) else {
            continue;
        };
        let at = DeviceDir {
            log,
            dir,
            held: held.as_ref(),
        };
        read_attributes(&at, &mut d);
        if let Some(g) = d.iommu_group {
            groups.entry(g).or_insert(None);
        }
        if wants_vpd(&d) {
            let kws = read_vpd(fs, log, &dir.join("vpd"));
            d.vpd = kws.iter().map(|(k, _)| k.clone()).collect();
            if !kws.is_empty() {
                out.vpd_uuids.insert(d.bdf, kws);
            }
        }
        out.by_path.insert(dir.clone(), out.devices.len());
        out.devices.push(d);
    }
    count_vfs(&mut out.devices);
    iommu_group_types(fs, log, &mut groups, &mut out.devices);
    out
}

/// The device directory `dir`, held open so each attribute is read relative to it; `None`
/// (warned) when it dangles, loops or cannot be read.
fn open_device_dir<'a>(
    fs: &'a dyn FsRoot,
    log: &Log,
    bus: &Path,
    bdf: Bdf,
    dir: &Path,
    listed: bool,
) -> Option<Box<dyn OpenDir + 'a>> {
    match fs.open_dir(dir) {
        Ok(l) => Some(l),
        Err(e) if listed && e.kind() == io::ErrorKind::NotFound && fs.kind(dir).is_none() => {
            log.warn(
                &bus.join(bdf.to_string()),
                format!(
                    "dangling or looping link to {}; device skipped",
                    dir.display()
                ),
            );
            None
        }
        Err(e) if is_link_loop(&e) => {
            log.warn(
                &bus.join(bdf.to_string()),
                format!(
                    "too many levels of symbolic links (more than {}) on the way to {}; device skipped",
                    crate::sources::fsroot::MAX_LINKS,
                    dir.display()
                ),
            );
            None
        }
        Err(e) => {
            log.warn(
                dir,
                format!(
                    "device directory unreadable ({e}); device vanished or access denied, skipped"
                ),
            );
            None
        }
    }
}

/// One device's directory, held open: each attribute is opened relative to it; one that is
/// absent is `NotFound` from that open (no listing of the directory is read).
struct DeviceDir<'a> {
    log: &'a Log,
    dir: &'a Path,
    held: &'a dyn OpenDir,
}

impl DeviceDir<'_> {
    /// The attribute's path, as warnings name it.
    fn path(&self, n: &str) -> PathBuf {
        self.dir.join(n)
    }

    /// The bytes of the optional attribute `n`.
    fn get(&self, n: &str) -> Option<Vec<u8>> {
        optional(self.log, &self.path(n), self.held.read(n))
    }

    /// The last component of the link `n` (`driver`, `iommu_group`, `physfn`).
    fn link_value(&self, n: &str) -> Option<Vec<u8>> {
        let t = self.held.read_link(n).ok()?;
        Some(t.file_name()?.as_encoded_bytes().to_vec())
    }

    /// The attribute `n`, parsed by `parse` (refusals warned).
    fn value<T>(&self, n: &str, parse: impl FnOnce(&[u8]) -> Result<T, Refusal>) -> Option<T> {
        self.log.value(&self.path(n), self.get(n), parse)
    }
}

/// Reads one device's attributes into `d`, in the order the kernel's files answer them:
/// config space, IDs and class, locality, link, kind, BARs, AER, driver and IOMMU group.
fn read_attributes(at: &DeviceDir, d: &mut Device) {
    let header = read_config(at, d);
    // Only a virtual function has a `physfn` link, and its header reads 0xffff for vendor
    // and device (PCIe SR-IOV spec, 3.4.1.1): a header with real IDs is no virtual
    // function, and the link is looked for only where config did not say.
    let physfn = if header.is_some() {
        None
    } else {
        at.link_value("physfn")
    };
    let class = read_ids(at, d, header);
    d.numa_node = at.value("numa_node", attr::numa_node).flatten();
    d.local_cpus = match at.get("local_cpulist") {
        Some(b) => at
            .log
            .value(&at.path("local_cpulist"), Some(b), cpulist::parse_list),
        None => at.value("local_cpus", cpulist::parse_mask),
    };
    let (link, no_own_link) = read_link(at, d);
    let integrated = matches!(
        d.port_type(),
        Some(PortType::RcIntegratedEndpoint | PortType::RcEventCollector)
    );
    d.link = if link.any() && !no_own_link && !integrated {
        Some(link)
    } else {
        None
    };
    settle_kind(at, d, class);
    read_bars_and_aer(at, d);
    d.driver = at
        .link_value("driver")
        .and_then(|b| String::from_utf8(b).ok());
    d.iommu_group = at.log.value(
        &at.path("iommu_group"),
        at.link_value("iommu_group"),
        attr::uint,
    );
    d.physfn = at.log.value(&at.path("physfn"), physfn, |b| {
        attr::pci_address(attr::text(b)?)
    });
    if d.physfn.is_some() {
        // A virtual function has no link of its own: its traffic uses its physical
        // function's (the kernel reads reserved registers for it).
        d.link = None;
    }
}

/// The size of PCIe's extended configuration space: the longest `config` sysfs shows.
const CONFIG_SPACE_BYTES: usize = 4096;

/// Config space first: its header holds what the kernel shows as `vendor`, `device`,
/// `class`, `revision` and the subsystem IDs, and (256 bytes or more, as root) the link
/// registers behind the four link attributes, so those files are read only where config does
/// not answer (a short or missing config, a virtual function). Returns the header's IDs.
fn read_config(at: &DeviceDir, d: &mut Device) -> Option<crate::model::pci_config::HeaderIds> {
    let mut header: Option<crate::model::pci_config::HeaderIds> = None;
    match at.held.read_limited("config", CONFIG_SPACE_BYTES + 1) {
        // PCIe's extended configuration space is 4096 bytes: a longer file is not a config
        // space, and no part of it is judged.
        Ok(b) if b.len() > CONFIG_SPACE_BYTES => at.log.warn(
            &at.path("config"),
            format!(
                "more than {CONFIG_SPACE_BYTES} bytes (PCIe's extended configuration space): \
                 not a config space; config facts unknown"
            ),
        ),
        Ok(b) => {
            header = config::header_ids(&b);
            match config::parse(&b) {
                Ok(c) => d.config = Some(c),
                Err(r) => at
                    .log
                    .warn(&at.path("config"), format!("{r}; config facts unknown")),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => at.log.warn(
            &at.path("config"),
            format!("unreadable ({e}); config facts unknown"),
        ),
    }
    header
}

/// Vendor, device, revision and subsystem IDs from the config header, else from their
/// files; returns the class read the same way.
fn read_ids(
    at: &DeviceDir,
    d: &mut Device,
    header: Option<crate::model::pci_config::HeaderIds>,
) -> Option<u32> {
    let id = |n: &str| at.value(n, attr::hex_u16);
    let class = match header {
        Some(h) => Some(h.class),
        None => at.value("class", attr::hex_u32),
    };
    match header {
        Some(h) => {
            d.vendor_id = Some(h.vendor_id);
            d.device_id = Some(h.device_id);
            d.revision = Some(h.revision);
        }
        None => {
            d.vendor_id = id("vendor");
            d.device_id = id("device");
            d.revision = at.value("revision", attr::hex_u8);
        }
    }
    match header.and_then(|h| h.subsystem) {
        Some((v, dev)) => {
            d.subsystem_vendor_id = Some(v);
            d.subsystem_device_id = Some(dev);
        }
        None => {
            d.subsystem_vendor_id = id("subsystem_vendor");
            d.subsystem_device_id = id("subsystem_device");
        }
    }
    class
}

/// The device's link, from the PCIe capability where config has it, else from the four
/// link attributes; and whether the device has no link of its own (a capable width of 0).
fn read_link(at: &DeviceDir, d: &Device) -> (LinkInfo, bool) {
    let pcie = d.config.as_ref().and_then(|c| c.pcie.as_ref());
    // Widths: `Some(None)` is a read 0. A negotiated width of 0 is a link that is down
    // (known: width 0, and the kernel writes `Unknown` for its speed); a capable width of 0
    // means LNKCAP is not implemented: no link of its own (root-complex integrated
    // endpoints; virtual functions are dropped below by `physfn`). From config, the same
    // registers the kernel formats into those files.
    let width = |n: &str| at.value(n, attr::link_width);
    // The kernel makes the four link attributes together (one attribute group, PCI Express
    // devices only); snapshots keep a speed with its width (hwloc's copies only the
    // `current_` pair): where neither width file is there, the speeds are not looked for.
    let (cur_w, max_w, has_link_files) = match pcie {
        Some(p) => (Some(p.link_sta_width), Some(p.link_cap_width), false),
        None => {
            let (c, m) = (width("current_link_width"), width("max_link_width"));
            (c, m, c.is_some() || m.is_some())
        }
    };
    // Down only on a port or device whose capability is a real lane count: a 0 beside a
    // refused or absent `max_link_width` says nothing.
    let link_down = cur_w == Some(None) && matches!(max_w, Some(Some(_)));
    let no_own_link = max_w == Some(None);
    let speed = |n: &str| {
        let b = at.get(n);
        if (link_down || no_own_link)
            && b.as_deref().map(|b| b.trim_ascii()) == Some(b"Unknown".as_slice())
        {
            return None;
        }
        at.log.value(&at.path(n), b, attr::link_speed_gts)
    };
    let link = match pcie {
        Some(p) => LinkInfo {
            current_gts: if link_down { None } else { p.link_sta_gts },
            current_width: if link_down { Some(0) } else { p.link_sta_width },
            max_gts: p.link_cap_gts,
            max_width: p.link_cap_width,
        },
        None if !has_link_files => LinkInfo::default(),
        None => LinkInfo {
            current_gts: speed("current_link_speed"),
            current_width: if link_down { Some(0) } else { cur_w.flatten() },
            max_gts: speed("max_link_speed"),
            max_width: max_w.flatten(),
        },
    };
    (link, no_own_link)
}

/// The class (read, else config's) and the device kind it gives; config IDs fill a vendor
/// the files did not give, only when they are real (a VF reads 0xffff there).
fn settle_kind(at: &DeviceDir, d: &mut Device, class: Option<u32>) {
    let class = class.or(d.config.as_ref().map(|c| c.class));
    if d.vendor_id.is_none() {
        // Config IDs only when they are real (a VF reads 0xffff there).
        d.vendor_id = d
            .config
            .as_ref()
            .map(|c| c.vendor_id)
            .filter(|&v| v != 0xffff);
        d.device_id = d.device_id.or(d
            .config
            .as_ref()
            .map(|c| c.device_id)
            .filter(|&v| v != 0xffff));
    }
    match class {
        Some(c) => d.class = c,
        None => at.log.warn(
            &at.path("class"),
            "absent or unreadable; device kind unknown (other)",
        ),
    }
    d.kind = kind_from_class(d.class, d.vendor_id, d.device_id);
}

/// The BARs (`resource`) and the AER counters (`aer_dev_*`).
fn read_bars_and_aer(at: &DeviceDir, d: &mut Device) {
    if let Some(b) = at.get("resource") {
        let (bars, bad) = resource::parse(&b);
        d.bars = bars;
        if let Some(first) = bad.first() {
            at.log.warn(
                &at.path("resource"),
                format!("{} malformed line(s) ignored (first: {first})", bad.len()),
            );
        }
    }
    // The kernel makes the AER counters only for a device with the AER capability: where
    // the extended config space was read and has none, there is nothing to look for.
    let ext = d.config.as_ref().filter(|c| c.has_extended());
    // The three counters are one attribute group: where the first is absent, so are the
    // others.
    if ext.is_none_or(|c| c.aer_offset.is_some())
        && let Some(b) = at.get("aer_dev_correctable")
    {
        d.aer_correctable = at
            .log
            .value(&at.path("aer_dev_correctable"), Some(b), aer::parse);
        d.aer_nonfatal = at.value("aer_dev_nonfatal", aer::parse);
        d.aer_fatal = at.value("aer_dev_fatal", aer::parse);
    }
}

/// Virtual functions per physical function, from each VF's `physfn` link (the kernel
/// links both ways: `virtfnN` in the PF, `physfn` in each VF).
fn count_vfs(devices: &mut [Device]) {
    let mut vfs: HashMap<Bdf, u32> = HashMap::new();
    for d in devices.iter() {
        if let Some(pf) = d.physfn {
            *vfs.entry(pf).or_default() += 1;
        }
    }
    for d in devices.iter_mut() {
        d.vf_count = vfs.get(&d.bdf).copied().unwrap_or(0);
    }
}

/// IOMMU group types, one read per group.
fn iommu_group_types(
    fs: &dyn FsRoot,
    log: &Log,
    groups: &mut BTreeMap<u32, Option<String>>,
    devices: &mut [Device],
) {
    for (g, ty) in groups.iter_mut() {
        let p = PathBuf::from(format!("sys/kernel/iommu_groups/{g}/type"));
        *ty = log.read_text(fs, &p);
    }
    for d in devices.iter_mut() {
        if let Some(g) = d.iommu_group {
            d.iommu_group_type = groups.get(&g).cloned().flatten();
        }
    }
}

/// VPD is read only where it pairs functions, as rdma_topo does: ConnectX NIC functions and
/// Data Direct DMA functions (reading the VPD of arbitrary devices can stall on broken parts).
fn wants_vpd(d: &Device) -> bool {
    use crate::model::parts::{Part, part_of};
    d.physfn.is_none() && matches!(part_of(d), Some(Part::CxNic | Part::DataDirectDma))
}

/// The largest VPD image: a VPD address is 15 bits (PCI Local Bus 3.0, I.3; the kernel's
/// `PCI_VPD_MAX_SIZE`), so the kernel's `vpd` file never holds more.
pub const MAX_VPD_BYTES: usize = 32 << 10;

/// The VPD keywords that pair ConnectX functions (`V3`, `VU`), from `vpd`. The file is
/// readable by root only: permission denied is the normal unprivileged answer and is said once
/// per DMA function by the pairing, not here. Serial numbers are not kept.
/// A file over [`MAX_VPD_BYTES`] is not a VPD image: VPD unknown, with the cap's words (never
/// parsed from its first 32 KiB).
fn read_vpd(fs: &dyn FsRoot, log: &Log, path: &Path) -> Vec<(String, String)> {
    let bytes = match fs.read_limited(path, MAX_VPD_BYTES + 1) {
        Ok(b) if b.len() > MAX_VPD_BYTES => {
            log.warn(
                path,
                "more than the 32 KiB a PCI VPD can hold (its addresses are 15 bits): not a VPD image; not read, VPD unknown",
            );
            return Vec::new();
        }
        Ok(b) => b,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::PermissionDenied | io::ErrorKind::NotFound
            ) =>
        {
            return Vec::new();
        }
        Err(e) => {
            log.warn(path, format!("could not read ({e}); VPD unknown"));
            return Vec::new();
        }
    };
    if bytes.is_empty() {
        return Vec::new();
    }
    match crate::parse::vpd::parse(&bytes) {
        Ok(v) => v
            .read_only
            .into_iter()
            .filter(|(k, _)| crate::sources::datadirect::UUID_KEYWORDS.contains(&k.as_str()))
            .collect(),
        Err(r) => {
            log.warn(path, format!("{r}; VPD unknown"));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fsroot::{MemNode, MemRoot};

    /// A `vpd` over the 32 KiB a VPD can hold is not a VPD image: unknown with the cap's words.
    /// Before, its first 32 KiB were parsed and the keywords that pair ConnectX functions kept.
    #[test]
    fn vpd_over_its_cap_is_unknown_never_read_from_a_cut() {
        let image = crate::parse::vpd::build("ConnectX-7", &[("V3", "abc123"), ("VU", "u1")]);
        let read = |bytes: Vec<u8>| {
            let mut m = MemRoot::new("t");
            m.insert("vpd".into(), MemNode::File(bytes));
            let log = Log::default();
            let kws = read_vpd(&m, &log, Path::new("vpd"));
            (kws, log.warnings.into_inner())
        };
        let (kws, warnings) = read(image.clone());
        assert_eq!(kws.len(), 2, "{kws:?}");
        assert!(warnings.is_empty(), "{warnings:?}");
        // The kernel's own size, padded after the end tag: still a VPD image.
        let mut exact = image.clone();
        exact.resize(MAX_VPD_BYTES, 0xff);
        assert_eq!(read(exact).0.len(), 2);
        let mut over = image;
        over.resize(MAX_VPD_BYTES + 8 * 1024, 0xff);
        let (kws, warnings) = read(over);
        assert!(kws.is_empty(), "keywords kept from a cut: {kws:?}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].message.contains("32 KiB") && warnings[0].message.contains("VPD unknown"),
            "{warnings:?}"
        );
    }
}
