//! What other tools' text beside the `lspci` output says: RDMA device names and port states
//! (`ibdev2netdev`, `ibstat`, `ibv_devinfo`, the `nvidia-smi topo -m` legend), AER errors the
//! kernel logged (`dmesg`), NUMA nodes (`numactl --hardware`) and the kernel command line.

use crate::model::aer::AerCounters;
use crate::model::bdf::Bdf;
use crate::model::device::{Device, DeviceKind, OsDevice, OsDeviceKind, RdmaPort};
use crate::model::fact::Fact;
use crate::model::topology::{MachineInfo, NumaNode, Warning};
use crate::parse::ib_text::IbDevice;
use std::collections::BTreeMap;

/// How the RDMA devices of a text were named.
pub(super) enum Naming {
    /// Every name read with its PCI address (`ibdev2netdev -v`), or no adapter to name.
    Read,
    /// Names read from a tool's text without addresses, matched to ConnectX physical
    /// functions in PCI address order.
    ByOrder(&'static str),
    /// No usable naming text: the kernel's default names.
    Default(usize),
}

/// Names the RDMA devices of ConnectX and Broadcom NetXtreme-E functions ([`FAMILIES`]). Devices the text names with a PCI address
/// (`ibdev2netdev -v`) go to that function; names without one (`ibstat`, `ibv_devinfo`, the
/// `nvidia-smi topo -m` legend) go to the remaining ConnectX functions in the order the
/// kernel registers (and names) them — physical functions in PCI address order, then virtual
/// functions (a VM guest's NIC) — when their counts agree; otherwise each remaining function
/// gets the name the kernel gives it in that order when nothing renames it (`mlx5_N`). Ports
/// and netdevs the text states are attached.
pub(super) fn name_rdma(
    devices: &mut [Device],
    ib: &[IbDevice],
    warnings: &mut Vec<Warning>,
    shown: &str,
) -> Naming {
    let attach = |d: &mut Device, x: Option<&IbDevice>, name: String| {
        let mut o = OsDevice::new(OsDeviceKind::Rdma, name);
        if let Some(x) = x {
            o.attrs
                .push(("text".into(), format!("`{}` line {}", x.from, x.line)));
            o.ports = x
                .ports
                .iter()
                .map(|p| RdmaPort {
                    port: p.port,
                    state: p.state.clone(),
                    phys_state: p.phys_state.clone(),
                    rate_gbps: p.rate_gbps,
                    rate_text: None,
                    link_layer: p.link_layer.clone(),
                })
                .collect();
            if let Some(n) = &x.netdev {
                d.os_devices
                    .push(OsDevice::new(OsDeviceKind::Net, n.clone()));
            }
        }
        d.os_devices.push(o);
    };
    let mut used = vec![false; ib.len()];
    for (k, x) in ib.iter().enumerate() {
        let Some(b) = x.pci.as_deref().and_then(|p| p.parse::<Bdf>().ok()) else {
            continue;
        };
        if let Some(d) = devices.iter_mut().find(|d| d.bdf == b) {
            attach(d, Some(x), x.name.clone());
            used[k] = true;
        }
    }
    let is_vf = |d: &Device| {
        VF_IDS.contains(&d.device_id.unwrap_or(0))
            || d.device_name
                .as_deref()
                .is_some_and(|x| x.contains("Virtual Function"))
    };
    // A LAG bond (`mlx5_bond_0`) is one RDMA device on the first port's function: the other
    // physical functions of that adapter are its slaves and have no RDMA device of their own.
    let mut slaves: Vec<usize> = Vec::new();
    for i in 0..devices.len() {
        if devices[i].rdma_names().any(is_bond) {
            slaves.extend(bond_slaves(devices, i, &is_vf));
        }
    }
    let mut how = Naming::Read;
    for fam in FAMILIES {
        let mut order: Vec<usize> = (0..devices.len())
            .filter(|&i| {
                let d = &devices[i];
                d.vendor_id == Some(fam.vendor)
                    && d.kind == DeviceKind::Nic
                    && (fam.devices)(d.device_id, d.device_name.as_deref().unwrap_or(""))
                    && d.driver.as_deref().is_none_or(|x| x == fam.driver)
                    && !d.os_devices.iter().any(|o| o.kind == OsDeviceKind::Rdma)
                    && !slaves.contains(&i)
            })
            .collect();
        if order.is_empty() {
            continue;
        }
        // Physical functions first, then virtual ones (created once their PF is up), each in
        // address order: the order the kernel registers (and names) their RDMA devices.
        order.sort_by_key(|&i| (is_vf(&devices[i]), devices[i].bdf));
        let mut rest: Vec<usize> = (0..ib.len())
            .filter(|&k| !used[k] && ib[k].name.starts_with(fam.prefix))
            .collect();
        rest.sort_by_key(|&k| crate::parse::ib_text::natural_key(&ib[k].name));
        if rest.len() == order.len() {
            let from = ib[rest[0]].from;
            for (&i, &k) in order.iter().zip(&rest) {
                attach(&mut devices[i], Some(&ib[k]), ib[k].name.clone());
                used[k] = true;
            }
            if matches!(how, Naming::Read) {
                how = Naming::ByOrder(from);
            }
            continue;
        }
        if rest.iter().any(|&k| is_bond(&ib[k].name))
            && let Some(plan) = by_index_with_bonds(devices, &order, ib, &rest, fam.prefix, &is_vf)
        {
            let from = ib[rest[0]].from;
            for (i, k) in plan {
                match k {
                    Some(k) => {
                        attach(&mut devices[i], Some(&ib[k]), ib[k].name.clone());
                        used[k] = true;
                    }
                    None => slaves.push(i),
                }
            }
            if matches!(how, Naming::Read) {
                how = Naming::ByOrder(from);
            }
            continue;
        }
        if !rest.is_empty() {
            warnings.push(Warning {
                path: shown.to_string(),
                message: format!(
                    "{} RDMA device(s) named {}* in the text ({}, first at line {}) but {} {} function(s) without a name: the names cannot be matched to functions (the text does not list every function), so the kernel's default names are used",
                    rest.len(),
                    fam.prefix,
                    ib[rest[0]].from,
                    ib[rest[0]].line,
                    order.len(),
                    fam.what
                ),
            });
        }
        for (n, &i) in order.iter().enumerate() {
            attach(&mut devices[i], None, format!("{}{n}", fam.prefix));
        }
        how = match how {
            Naming::Default(k) => Naming::Default(k + order.len()),
            _ => Naming::Default(order.len()),
        };
    }
    how
}

/// Whether an RDMA device name is a LAG bond's (`mlx5_bond_0`: the mlx5 driver's name for the
/// one RDMA device of two bonded ports).
fn is_bond(name: &str) -> bool {
    name.contains("_bond_")
}

/// The other physical functions of the adapter (same domain, bus and device number, same
/// vendor, NICs) of function `i`: with a bond on `i`, its slaves.
fn bond_slaves(devices: &[Device], i: usize, is_vf: &dyn Fn(&Device) -> bool) -> Vec<usize> {
    let b = devices[i].bdf;
    (0..devices.len())
        .filter(|&j| {
            let d = &devices[j];
            j != i
                && (d.bdf.domain, d.bdf.bus, d.bdf.device) == (b.domain, b.bus, b.device)
                && d.vendor_id == devices[i].vendor_id
                && d.kind == DeviceKind::Nic
                && !is_vf(d)
        })
        .collect()
}

/// Names without addresses, with bonds among them, matched by the kernel's numbering: the
/// kernel named every function `<prefix>N` in registration order (`order`) at boot; a bond
/// then replaced its ports' names by `<prefix>bond_M`, leaving a gap. So each plain name's N
/// is its function's place in `order`, and the gaps, grouped by adapter (two or more functions
/// of one slot each), are the bonds in name order, the bond on the group's first function and
/// none on the others (its slaves). `None` when the names do not fit that rule (a udev rename,
/// a function missing from the text): the caller then warns and uses default names.
fn by_index_with_bonds(
    devices: &[Device],
    order: &[usize],
    ib: &[IbDevice],
    rest: &[usize],
    prefix: &str,
    is_vf: &dyn Fn(&Device) -> bool,
) -> Option<Vec<(usize, Option<usize>)>> {
    let mut bonds: Vec<usize> = rest
        .iter()
        .copied()
        .filter(|&k| is_bond(&ib[k].name))
        .collect();
    bonds.sort_by_key(|&k| crate::parse::ib_text::natural_key(&ib[k].name));
    let mut taken: Vec<Option<usize>> = vec![None; order.len()];
    for &k in rest.iter().filter(|&&k| !is_bond(&ib[k].name)) {
        let n: usize = ib[k].name.strip_prefix(prefix)?.parse().ok()?;
        let slot = taken.get_mut(n)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(k);
    }
    let mut plan: Vec<(usize, Option<usize>)> = Vec::new();
    let mut gaps: Vec<Vec<usize>> = Vec::new();
    for (n, k) in taken.iter().enumerate() {
        let i = order[n];
        match k {
            Some(k) => plan.push((i, Some(*k))),
            None => {
                let b = devices[i].bdf;
                let same = gaps.last().is_some_and(|g| {
                    let f = devices[g[0]].bdf;
                    (f.domain, f.bus, f.device) == (b.domain, b.bus, b.device)
                });
                match gaps.last_mut() {
                    Some(g) if same => g.push(i),
                    _ => gaps.push(vec![i]),
                }
            }
        }
    }
    if gaps.len() != bonds.len() || gaps.iter().any(|g| g.len() < 2 || is_vf(&devices[g[0]])) {
        return None;
    }
    for (g, &k) in gaps.iter().zip(&bonds) {
        plan.push((g[0], Some(k)));
        plan.extend(g[1..].iter().map(|&i| (i, None)));
    }
    Some(plan)
}

/// An adapter family whose driver registers one RDMA device per function, named
/// `<prefix><N>` in registration order when nothing renames it.
struct Family {
    vendor: u16,
    /// Which functions, by device ID or (ID unknown) the printed name.
    devices: fn(Option<u16>, &str) -> bool,
    driver: &'static str,
    prefix: &'static str,
    what: &'static str,
}

/// ConnectX (mlx5_core + mlx5_ib: every function), Broadcom NetXtreme-E (bnxt_en + bnxt_re:
/// BCM573xx/574xx `16c0`–`16ff`, BCM575xx/576xx Thor/Thor2 `1750`–`17ff`) and HPE Cassini
/// (cxi_core: `cxi<N>`, the CXI devices libfabric's cxi provider opens).
const FAMILIES: [Family; 3] = [
    Family {
        vendor: 0x15b3,
        devices: |_, _| true,
        driver: "mlx5_core",
        prefix: "mlx5_",
        what: "ConnectX",
    },
    Family {
        vendor: 0x14e4,
        devices: |id, name| match id {
            Some(id) => (0x16c0..=0x16ff).contains(&id) || (0x1750..=0x17ff).contains(&id),
            None => {
                name.contains("NetXtreme-E") || name.contains("BCM575") || name.contains("BCM576")
            }
        },
        driver: "bnxt_en",
        prefix: "bnxt_re",
        what: "Broadcom NetXtreme-E",
    },
    Family {
        vendor: 0x17db,
        devices: |_, _| true,
        driver: "cxi_core",
        prefix: "cxi",
        what: "HPE Cassini",
    },
];

/// ConnectX virtual function device IDs (ConnectX-4 to ConnectX-8 and BlueField VFs).
const VF_IDS: [u16; 8] = [
    0x1014, 0x1016, 0x1018, 0x101a, 0x101c, 0x101e, 0x1022, 0x1024,
];

/// Added when RDMA device names were given by the kernel's order rule.
pub const RDMA_BY_ORDER: &str = "RDMA device names are not in lspci text: each ConnectX and Broadcom NetXtreme-E function is given the name the kernel gives it when nothing renames it (mlx5_N, bnxt_reN: physical functions in PCI address order, then virtual ones); udev or bonding renames (mlx5_ib0, mlx5_bond_0), RDMA devices of other vendors and port states are unknown; a LAG bond (two ports of one adapter as one RDMA device, mlx5_bond_N) cannot be seen, so each bonded port counts as a NIC of its own (`ibdev2netdev -v`, `ibv_devinfo` or `ibstat` beside the lspci text shows it)";

/// AER errors the kernel logged (`dmesg` in an `nvidia-bug-report.log` or beside lspci), in
/// drivers/pci/pcie/aer.c's forms: `<driver> DDDD:BB:DD.F: [AER: ]PCIe Bus Error:
/// severity=Corrected, type=Physical Layer, …` is one error of that severity on that device
/// (Corrected → correctable, Uncorrected (Non-Fatal) → nonfatal, Uncorrected (Fatal) → fatal),
/// and the `DDDD:BB:DD.F:    [ 0] RxErr  (First)` lines after it name its status bits. Errors
/// are counted per device, severity, type and bits, named with the first line.
pub(super) fn dmesg_aer(text: &str, devices: &mut [Device]) {
    // (device, slot, type, first line, bits)
    let mut events: Vec<(Bdf, usize, String, usize, Vec<String>)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if let Some((bdf, bit)) = aer_bit_line(l) {
            if let Some(e) = events.iter_mut().rev().find(|e| e.0 == bdf)
                && !e.4.contains(&bit)
            {
                e.4.push(bit);
            }
            continue;
        }
        let Some(at) = l.find("PCIe Bus Error: severity=") else {
            continue;
        };
        let Some(bdf) = l[..at]
            .split_whitespace()
            .filter_map(|t| t.trim_end_matches(':').parse::<Bdf>().ok())
            .next_back()
        else {
            continue;
        };
        let rest = &l[at + "PCIe Bus Error: severity=".len()..];
        let (sev, rest) = rest.split_once(", ").unwrap_or((rest, ""));
        let slot = if sev.starts_with("Corrected") {
            0
        } else if sev.contains("Fatal") && !sev.contains("Non-Fatal") {
            2
        } else {
            1
        };
        let ty = rest
            .strip_prefix("type=")
            .map(|t| t.split(',').next().unwrap_or(t).trim().to_string())
            .unwrap_or_default();
        events.push((bdf, slot, ty, i + 1, Vec::new()));
    }
    let mut seen: BTreeMap<(Bdf, usize, String), (u64, usize)> = BTreeMap::new();
    for (bdf, slot, ty, line, bits) in events {
        let what = if bits.is_empty() {
            ty
        } else {
            format!("{ty} {}", bits.join(" "))
        };
        let e = seen.entry((bdf, slot, what)).or_insert((0, line));
        e.0 += 1;
    }
    for ((bdf, slot, ty), (n, line)) in seen {
        let Some(d) = devices.iter_mut().find(|d| d.bdf == bdf) else {
            continue;
        };
        let c = match slot {
            0 => &mut d.aer_correctable,
            1 => &mut d.aer_nonfatal,
            _ => &mut d.aer_fatal,
        };
        c.get_or_insert_with(AerCounters::default)
            .counters
            .push((format!("dmesg: {ty} (first at line {line})"), n));
    }
}

/// A status-bit line of an AER report (`mlx5_core 0000:21:00.0:    [ 0] RxErr   (First)`,
/// aer.c `__aer_print_error`): the device and the bit's name.
fn aer_bit_line(l: &str) -> Option<(Bdf, String)> {
    let (before, after) = l.split_once(":    [")?;
    let bdf = before
        .split_whitespace()
        .filter_map(|t| t.trim_end_matches(':').parse::<Bdf>().ok())
        .next_back()?;
    let (n, rest) = after.split_once(']')?;
    n.trim().parse::<u8>().ok()?;
    let name = rest.split_whitespace().next()?;
    name.chars()
        .all(|c| c.is_ascii_alphanumeric())
        .then(|| (bdf, name.to_string()))
}

/// NUMA nodes from `numactl --hardware` text beside the lspci output (`node 0 cpus: 0 1 2`).
pub(super) fn numactl_nodes(text: &str) -> Vec<NumaNode> {
    let mut out = Vec::new();
    for l in text.lines() {
        let Some(rest) = l.trim().strip_prefix("node ") else {
            continue;
        };
        let Some((id, cpus)) = rest.split_once(" cpus:") else {
            continue;
        };
        let Ok(id) = id.trim().parse::<u32>() else {
            continue;
        };
        let list: Option<Vec<u32>> = cpus.split_whitespace().map(|c| c.parse().ok()).collect();
        if let Some(list) = list
            && !out.iter().any(|n: &NumaNode| n.id == id)
        {
            out.push(NumaNode {
                id,
                cpus: crate::model::cpulist::format_list(&list),
                distances: Vec::new(),
            });
        }
    }
    out
}

/// The kernel command line where the text holds it (a `/proc/cmdline` section, or a line that
/// starts `BOOT_IMAGE=`); unknown otherwise.
pub(super) fn cmdline(text: &str) -> Fact<String> {
    // The line after a `/proc/cmdline` heading (nvidia-bug-report: `*** /proc/cmdline`, then
    // its `*** ls:` line), else any `BOOT_IMAGE=` line.
    let mut lines = text.lines().map(str::trim);
    let after_heading = std::iter::from_fn(|| {
        lines
            .by_ref()
            .find(|l| l.trim_start_matches("*** ") == "/proc/cmdline")?;
        lines
            .by_ref()
            .find(|l| !l.is_empty() && !l.starts_with("***"))
    })
    .next();
    let found = after_heading.or_else(|| {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with("BOOT_IMAGE="))
    });
    match found {
        Some(l) => Fact::Known(l.to_string()),
        None => {
            Fact::Unknown("the text holds no kernel command line (no `/proc/cmdline` line)".into())
        }
    }
}

/// Loaded modules from an `lsmod` table in the text (`Module  Size  Used by`, then one module a
/// line until a blank line; sosreport's `sos_commands/kernel/lsmod`) and the NVIDIA driver from
/// a copy of `/proc/driver/nvidia/version` (`NVRM version: …`, nvidia-bug-report.log). `lsmod`
/// lists no versions: a loaded peer module is recorded as loaded, its version unknown.
pub(super) fn modules(text: &str, m: &mut MachineInfo) {
    // nvidia-bug-report appends /proc/modules (`name size refs deps state address`): the same
    // module names without the lsmod heading.
    for f in appended_files(text)
        .into_iter()
        .filter(|f| f.path == "/proc/modules")
    {
        m.modules_visible = true;
        let said = || {
            format!(
                "loaded (/proc/modules at line {}; no version there)",
                f.line
            )
        };
        for l in &f.lines {
            match l.split_whitespace().next() {
                Some("nvidia_peermem") => m.nvidia_peermem_version = Some(said()),
                Some("nv_peer_mem") => m.nv_peer_mem_loaded = true,
                Some("ib_core") => m.ib_core_loaded = true,
                Some("nvidia") => m.nvidia_module_version = Some(said()),
                _ => {}
            }
        }
    }
    let mut in_table = None;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("NVRM version:")
            && m.nvidia_driver.is_none()
        {
            m.nvidia_driver = Some(format!("NVRM version:{v}"));
        }
        if t.starts_with("Module") && t.contains("Size") && t.contains("Used by") {
            in_table = Some(i + 1);
            m.modules_visible = true;
            continue;
        }
        let Some(at) = in_table else { continue };
        if t.is_empty() {
            in_table = None;
            continue;
        }
        let said = || format!("loaded (lsmod table at line {at}; lsmod lists no version)");
        match t.split_whitespace().next() {
            Some("nvidia_peermem") => m.nvidia_peermem_version = Some(said()),
            Some("nv_peer_mem") => m.nv_peer_mem_loaded = true,
            Some("ib_core") => m.ib_core_loaded = true,
            Some("nvidia") => m.nvidia_module_version = Some(said()),
            _ => {}
        }
    }
}

/// GPUs in `nvidia-smi -q` text (nvidia-bug-report.log's `nvidia-smi --query`): each
/// `GPU 00000000:04:00.0` block's `Product Name` (the driver's name for the GPU, used where
/// the PCI ID database has none) and, for a GPU whose link the lspci text did not show, its
/// `GPU Link Info` (`PCIe Generation` and `Link Width`, `Max` and `Current`); and its
/// `Fabric` section, the GPU's NVLink fabric registration ([`crate::sources::nvml::fabric`]).
pub(super) fn nvidia_smi_q(text: &str, devices: &mut [Device]) {
    crate::sources::nvml::fabric::apply_nvsmi_text(devices, text);
    let mut cur: Option<(usize, usize)> = None; // (device index, header line)
    let mut section = "";
    let mut speed = (None, None);
    let mut width = (None, None);
    type Pair = (Option<u32>, Option<u32>);
    fn finish(cur: Option<(usize, usize)>, speed: Pair, width: Pair, devices: &mut [Device]) {
        let Some((i, _)) = cur else { return };
        let d = &mut devices[i];
        let gts = |g: Option<u32>| {
            g.and_then(|g| u8::try_from(g).ok())
                .and_then(crate::model::pcie::by_code)
                .map(|x| x.gts)
        };
        if d.link.is_none()
            && let ((Some(_), Some(_)), (Some(_), Some(_))) = (speed, width)
        {
            d.link = Some(crate::model::device::LinkInfo {
                current_gts: gts(speed.1),
                current_width: width.1,
                max_gts: gts(speed.0),
                max_width: width.0,
            });
        }
    }
    for (n, l) in text.lines().enumerate() {
        if let Some(b) = l
            .strip_prefix("GPU ")
            .and_then(|r| r.trim().parse::<Bdf>().ok())
        {
            finish(cur, speed, width, devices);
            cur = devices.iter().position(|d| d.bdf == b).map(|i| (i, n + 1));
            if let Some((i, line)) = cur {
                let mut o = OsDevice::new(OsDeviceKind::NvidiaGpu, "nvidia-smi -q");
                o.attrs
                    .push(("text".into(), format!("`nvidia-smi -q` line {line}")));
                devices[i].os_devices.push(o);
            }
            (speed, width, section) = ((None, None), (None, None), "");
            continue;
        }
        let Some((i, _)) = cur else { continue };
        if !l.starts_with(' ') && !l.trim().is_empty() {
            finish(cur, speed, width, devices);
            cur = None;
            continue;
        }
        let t = l.trim();
        if t == "PCIe Generation" || t == "Link Width" {
            section = if t == "Link Width" { "width" } else { "gen" };
            continue;
        }
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let num = || v.trim_end_matches('x').parse::<u32>().ok();
        match (k, section) {
            ("Product Name", _) => {
                if let Some(o) = devices[i]
                    .os_devices
                    .iter_mut()
                    .rev()
                    .find(|o| o.kind == OsDeviceKind::NvidiaGpu)
                {
                    o.attrs.push(("Model".into(), v.to_string()));
                }
            }
            ("Max", "gen") => speed.0 = num(),
            ("Current", "gen") => speed.1 = num(),
            ("Max", "width") => width.0 = num(),
            ("Current", "width") => {
                width.1 = num();
                section = "";
            }
            _ => {}
        }
    }
    finish(cur, speed, width, devices);
}

/// A file nvidia-bug-report.sh appended (its `append`/`report_file`: a separator line, a blank
/// line, `*** PATH`, `*** ls: …` with the file's metadata, then the file's lines up to a blank
/// line). Grammar from the script's own source (driver 570-era `nvidia-bug-report.sh`,
/// `$Change: 37062940 $`); files it could not read (`*** PATH does not exist`, `… is not
/// readable`) give none.
pub(super) struct Appended<'a> {
    /// 1-based line of the `*** PATH` heading.
    pub line: usize,
    /// The path as printed (globs expanded by the script's shell).
    pub path: &'a str,
    /// The file's lines.
    pub lines: Vec<&'a str>,
}

/// Every appended file of a bug report ([`Appended`]), in text order.
pub(super) fn appended_files(text: &str) -> Vec<Appended<'_>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_end();
        let heading = t.strip_prefix("*** /").filter(|p| {
            !p.contains(' ') && lines.get(i + 1).is_some_and(|n| n.starts_with("*** ls:"))
        });
        let Some(rest) = heading else {
            i += 1;
            continue;
        };
        let path = &t[4..4 + 1 + rest.len()];
        let mut body = Vec::new();
        let mut j = i + 2;
        while j < lines.len() {
            let l = lines[j].trim_end();
            if l.is_empty() || l.starts_with("____") {
                break;
            }
            body.push(l);
            j += 1;
        }
        out.push(Appended {
            line: i + 1,
            path,
            lines: body,
        });
        i = j;
    }
    out
}

/// The NUMA nodes of PCI functions from the `/sys/bus/pci/devices/BDF/numa_node` files a bug
/// report appends for each NVIDIA GPU (its "NUMA information" section), where the lspci block
/// printed none; `-1` (no node) stays unknown. Returns (address, node, heading line) of each
/// one taken.
pub(super) fn sysfs_numa(text: &str, devices: &mut [Device]) -> Vec<(Bdf, u32, usize)> {
    let mut taken = Vec::new();
    for f in appended_files(text) {
        let Some(bdf) = f
            .path
            .strip_prefix("/sys/bus/pci/devices/")
            .and_then(|r| r.strip_suffix("/numa_node"))
            .and_then(|b| b.parse::<Bdf>().ok())
        else {
            continue;
        };
        let Some(n) = f.lines.first().and_then(|v| v.trim().parse::<u32>().ok()) else {
            continue;
        };
        if let Some(d) = devices.iter_mut().find(|d| d.bdf == bdf)
            && d.numa_node.is_none()
        {
            d.numa_node = Some(n);
            taken.push((bdf, n, f.line));
        }
    }
    taken
}
