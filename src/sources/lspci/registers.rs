//! The registers of an `lspci` block as the model's config space: a hex dump through the sysfs
//! decoder, else the Express capability, ACS, AER, ATS and SR-IOV lines, the bridge's bus
//! range and the BARs (`Region` lines), each unknown where the text does not print it whole.

use crate::model::aer::{AerBit, AerCounters};
use crate::model::bar::Bar;
use crate::model::device::LinkInfo;
use crate::model::pci_config::{
    AcsCap, ConfigSpace, ECAP_ACS, ECAP_AER, ECAP_ATS, ECAP_SRIOV, PcieCap, PortType, SriovCap, acs,
};
use crate::parse::lspci::{self, Block};

/// A size `[size=64G]` in bytes.
fn size_bytes(s: &str) -> Option<u64> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n.parse().ok()?;
    let mult = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `Region 1: Memory at 13000000000 (64-bit, prefetchable) [size=64G]`.
pub(super) fn bars(b: &Block) -> Vec<Bar> {
    b.header
        .iter()
        .filter_map(|r| {
            let idx = r.key.strip_prefix("Region ")?.parse::<u8>().ok()?;
            let size = r.value.split("[size=").nth(1)?.split(']').next()?;
            Some(Bar {
                index: idx,
                size: size_bytes(size)?,
                memory: r.value.starts_with("Memory"),
                prefetchable: r.value.contains(", prefetchable"),
                is_64bit: r.value.contains("64-bit"),
            })
        })
        .collect()
}

fn port_type(name: &str) -> Option<PortType> {
    let rest = name.strip_prefix("Express")?.trim_start();
    let rest = match rest.strip_prefix("(v") {
        Some(r) => r.split_once(')').map(|(_, r)| r.trim_start())?,
        None => rest,
    };
    let table: [(&str, u8); 9] = [
        ("Root Port", 4),
        ("Upstream Port", 5),
        ("Downstream Port", 6),
        ("Legacy Endpoint", 1),
        ("Endpoint", 0),
        ("Root Complex Integrated Endpoint", 9),
        ("Root Complex Event Collector", 10),
        ("PCI-Express to PCI/PCI-X Bridge", 7),
        ("PCI/PCI-X to PCI-Express Bridge", 8),
    ];
    table
        .iter()
        .find(|(p, _)| rest.starts_with(p))
        .map(|&(_, v)| PortType::from_bits(v))
}

/// ACS bits from an `ACSCap`/`ACSCtl` value: `None` unless all seven were printed whole.
pub(super) fn acs_bits(value: &str) -> Option<u16> {
    let f = lspci::flags(value);
    let mut bits = 0;
    for (bit, name) in acs::NAMES {
        if *f.get(name)? {
            bits |= bit;
        }
    }
    Some(bits)
}

/// The Express capability's registers as the model's [`PcieCap`], and the link as printed.
fn pcie_from_text(c: &lspci::Capability, port: PortType) -> (PcieCap, LinkInfo) {
    let devcap = c.register("DevCap").unwrap_or("");
    let devctl = c.register("DevCtl").unwrap_or("");
    let (cap_s, cap_w) = c
        .register("LnkCap")
        .map(lspci::link)
        .unwrap_or((None, None));
    let (sta_s, sta_w) = c
        .register("LnkSta")
        .map(lspci::link)
        .unwrap_or((None, None));
    let f = lspci::flags(devctl);
    let slot = c.name.contains("(Slot+)");
    let physical_slot = c
        .register("SltCap")
        .and_then(|v| v.split("PhysSlot #").nth(1))
        .and_then(|v| v.split(|ch: char| !ch.is_ascii_digit()).next())
        .and_then(|v| v.parse().ok());
    let cap = PcieCap {
        offset: c.offset,
        port_type: port,
        mps_supported: lspci::bytes_after(devcap, "MaxPayload").unwrap_or(0),
        mps: lspci::bytes_after(devctl, "MaxPayload").unwrap_or(0),
        mrrs: lspci::bytes_after(devctl, "MaxReadReq").unwrap_or(0),
        relaxed_ordering: f.get("RlxdOrd").copied().unwrap_or(false),
        no_snoop: f.get("NoSnoop").copied().unwrap_or(false),
        link_cap_gts: cap_s,
        link_cap_width: cap_w.filter(|w| *w > 0),
        link_sta_gts: sta_s,
        link_sta_width: sta_w.filter(|w| *w > 0),
        slot_implemented: slot,
        physical_slot: if slot { physical_slot } else { None },
    };
    let down = sta_w == Some(0) && cap_w.is_some_and(|w| w > 0);
    let link = LinkInfo {
        current_gts: if down { None } else { sta_s },
        current_width: sta_w,
        max_gts: cap_s,
        max_width: cap_w,
    };
    (cap, link)
}

/// AER status bits as counters: each set, unmasked UESta bit (fatal where UESvrt marks it so)
/// and each set, unmasked CESta bit counts 1, named with its register; `None` when no such bit
/// is set (the kernel clears the bits of errors it handled, so clear bits prove nothing).
fn aer_from_text(c: &lspci::Capability) -> Option<[AerCounters; 3]> {
    let uesta = lspci::flags(c.register("UESta")?);
    let cesta = lspci::flags(c.register("CESta")?);
    let uemsk = lspci::flags(c.register("UEMsk").unwrap_or(""));
    let uesvrt = lspci::flags(c.register("UESvrt").unwrap_or(""));
    let cemsk = lspci::flags(c.register("CEMsk").unwrap_or(""));
    let mut out: [AerCounters; 3] = Default::default();
    // A masked error sends no error message, so the kernel's counters would not count it: a
    // masked bit is left out, as a clear one.
    let mut add = |slot: usize, reg: &str, name: &str, on: bool, masked: bool| {
        let a = &mut out[slot];
        if on && !masked {
            a.counters.push((format!("{name} ({reg} bit set)"), 1));
        } else {
            a.zero_counters += 1;
        }
    };
    let mut names: Vec<(&str, bool)> = cesta.iter().map(|(k, v)| (*k, *v)).collect();
    names.sort();
    for (n, on) in names {
        add(0, "CESta", n, on, cemsk.get(n) == Some(&true));
    }
    let mut names: Vec<(&str, bool)> = uesta.iter().map(|(k, v)| (*k, *v)).collect();
    names.sort();
    for (n, on) in names {
        let fatal = uesvrt.get(n) == Some(&true);
        add(
            if fatal { 2 } else { 1 },
            "UESta",
            n,
            on,
            uemsk.get(n) == Some(&true),
        );
    }
    // The kernel's AER driver clears the status bits of errors it handled: clear bits do not
    // say no error happened, so only set bits are a fact.
    out.iter().any(|a| !a.counters.is_empty()).then_some(out)
}

/// Every AER status bit the capability shows set (`CESta`, `UESta`), with whether its mask
/// register (`CEMsk`, `UEMsk`) masks it.
fn aer_set_bits(c: &lspci::Capability) -> Vec<AerBit> {
    let mut out = Vec::new();
    for (sta, msk) in [("CESta", "CEMsk"), ("UESta", "UEMsk")] {
        let Some(v) = c.register(sta) else { continue };
        let mask = lspci::flags(c.register(msk).unwrap_or(""));
        let mut set: Vec<&str> = lspci::flags(v)
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| n)
            .collect();
        set.sort();
        out.extend(set.into_iter().map(|n| AerBit {
            register: sta.to_string(),
            name: n.to_string(),
            masked: mask.get(n) == Some(&true),
            line: c.line,
        }));
    }
    out
}

/// Everything the text says about one device's config space: the decoded space, its link,
/// and why more is not known.
pub(super) struct FromText {
    /// The decoded space.
    pub config: Option<ConfigSpace>,
    /// The link.
    pub link: Option<LinkInfo>,
    /// Why more is not known.
    pub note: Option<String>,
    /// AER errors (correctable, nonfatal, fatal) from the status bits.
    pub aer: Option<[AerCounters; 3]>,
    /// Every AER status bit shown set, masked or not.
    pub aer_bits: Vec<AerBit>,
}

pub(super) fn bus_line(b: &Block) -> Option<(u8, u8, u8)> {
    let v = b.header("Bus")?;
    let get = |k: &str| {
        v.split(", ")
            .find_map(|p| p.strip_prefix(k))
            .and_then(|h| u8::from_str_radix(h, 16).ok())
    };
    Some((get("primary=")?, get("secondary=")?, get("subordinate=")?))
}

/// What the text says of a device's config space: a hex dump of 64 bytes or more through the
/// sysfs decoder, else the registers `lspci -vvv` printed ([`from_registers`]), a grep
/// fragment's ([`from_fragment`]), or only the header the IDs and class give (lspci without
/// root, or without `-vv`).
pub(super) fn config_from_block(b: &Block, vendor: u16, device: u16, class: u32) -> FromText {
    if let Some(t) = from_hex_dump(b) {
        return t;
    }
    let header_type = if bus_line(b).is_some() || class >> 8 == 0x0604 {
        1
    } else {
        0
    };
    let cs = ConfigSpace::from_header(64, vendor, device, class, header_type, false, bus_line(b));
    if b.fragment {
        return from_fragment(b, cs);
    }
    if b.access_denied {
        return FromText {
            config: Some(cs),
            link: None,
            note: Some("lspci ran without root: `Capabilities: <access denied>`".into()),
            aer: None,
            aer_bits: Vec::new(),
        };
    }
    if !b.detailed {
        let how = if b.header.is_empty() && b.caps.is_empty() {
            "plain `lspci` listing"
        } else {
            "printed with `lspci -v` (capability names only)"
        };
        return FromText {
            config: (!b.header.is_empty()).then_some(cs),
            link: None,
            note: Some(format!(
                "{how}: no capability registers; `sudo lspci -vvv` prints them"
            )),
            aer: None,
            aer_bits: Vec::new(),
        };
    }
    from_registers(b, cs)
}

/// A hex dump of 64 bytes or more (`lspci -x`, `-xxx`, `-xxxx`) decoded as sysfs's config
/// file is, with a note on what its length leaves out; `None` without a readable dump.
fn from_hex_dump(b: &Block) -> Option<FromText> {
    if b.hex.len() < 64 {
        return None;
    }
    let c = crate::parse::config::parse(&b.hex).ok()?;
    let link = c.pcie.as_ref().map(|p| {
        let down = p.link_sta_width.is_none() && p.link_cap_width.is_some();
        LinkInfo {
            current_gts: if down { None } else { p.link_sta_gts },
            current_width: if down { Some(0) } else { p.link_sta_width },
            max_gts: p.link_cap_gts,
            max_width: p.link_cap_width,
        }
    });
    let note = match c.len {
        _ if b.access_denied => Some("lspci ran without root: `Capabilities: <access denied>`, its hex dump stops at 64 bytes".into()),
        n if n < 256 => Some(format!("hex dump of {n} bytes (`lspci -x`): capabilities not dumped; `lspci -xxxx` as root dumps them")),
        n if n < 4096 => Some(format!("hex dump of {n} bytes (`lspci -xxx`): no extended config space (ACS, AER); `lspci -xxxx` as root dumps it")),
        _ => None,
    };
    Some(FromText {
        aer: None,
        aer_bits: Vec::new(),
        link,
        note,
        config: Some(c),
    })
}

/// What the registers of a `lspci -vvv` block are being read into.
struct Registers {
    cs: ConfigSpace,
    link: Option<LinkInfo>,
    /// An ACS capability without a whole `ACSCtl` line.
    acs_cut: bool,
    notes: Vec<String>,
    aer: Option<[AerCounters; 3]>,
    aer_bits: Vec<AerBit>,
}

/// The config space a `lspci -vvv` block prints: the Express capability, then each extended
/// capability; the length read is what lspci as root reads, less where the text is cut.
fn from_registers(b: &Block, cs: ConfigSpace) -> FromText {
    let mut r = Registers {
        cs,
        link: None,
        acs_cut: false,
        notes: Vec::new(),
        aer: None,
        aer_bits: Vec::new(),
    };
    let express = b.caps.iter().find(|c| c.name.starts_with("Express"));
    if let Some(e) = express {
        express_cap(e, &mut r);
    }
    for c in &b.caps {
        if c.offset >= 0x100 {
            extended_cap(c, &mut r);
        }
    }
    let mut cs = r.cs;
    // lspci as root reads the whole config space of a PCI Express device; a block the poster
    // elided may have lost any capability, so its extended ones stay unknown.
    cs.len = if express.is_some() { 4096 } else { 256 };
    if b.elided && cs.acs.is_none() {
        r.notes.push(
            "the poster elided lines of this block (a dotted line): its extended capabilities (ACS) may be missing".into(),
        );
        cs.len = 256;
    }
    if r.acs_cut {
        cs.len = 256;
    }
    FromText {
        config: Some(cs),
        link: r.link,
        note: (!r.notes.is_empty()).then(|| r.notes.join("; ")),
        aer: r.aer,
        aer_bits: r.aer_bits,
    }
}

/// The Express capability: the port type, and the link where the device has its own.
fn express_cap(e: &lspci::Capability, r: &mut Registers) {
    match port_type(&e.name) {
        Some(pt) => {
            let (p, l) = pcie_from_text(e, pt);
            if e.register("LnkSta").is_none() || e.register("LnkCap").is_none() {
                r.notes
                    .push("LnkCap/LnkSta not in the text (cut or elided)".to_string());
            }
            let integrated = matches!(
                pt,
                PortType::RcIntegratedEndpoint | PortType::RcEventCollector
            );
            if l.any() && !integrated {
                r.link = Some(l);
            }
            r.cs.pcie = Some(p);
        }
        None => r
            .notes
            .push("its Express capability names no port type lspci prints".into()),
    }
}

/// One extended capability (offset 0x100 or above): ACS, AER, ATS and SR-IOV are read, every
/// one is listed by its ID (0 for one peerpath does not read).
fn extended_cap(c: &lspci::Capability, r: &mut Registers) {
    let id = if c.name.starts_with("Access Control Services") {
        ECAP_ACS
    } else if c.name.starts_with("Advanced Error Reporting") {
        ECAP_AER
    } else if c.name.starts_with("Address Translation Service") {
        ECAP_ATS
    } else if c.name.starts_with("Single Root I/O Virtualization") {
        ECAP_SRIOV
    } else {
        0
    };
    r.cs.ext_caps.push(id);
    match id {
        ECAP_ACS => match (
            c.register("ACSCap").and_then(acs_bits),
            c.register("ACSCtl").and_then(acs_bits),
        ) {
            (cap, Some(ctl)) => {
                r.cs.acs = Some(AcsCap {
                    offset: c.offset,
                    capability: cap.unwrap_or(0),
                    control: ctl,
                })
            }
            _ => {
                r.acs_cut = true;
                r.notes
                    .push("its ACS capability has no whole ACSCtl line (the text is cut)".into())
            }
        },
        ECAP_AER => {
            r.cs.aer_offset = Some(c.offset);
            r.aer = aer_from_text(c);
            r.aer_bits = aer_set_bits(c);
        }
        ECAP_ATS => {
            r.cs.ats = c
                .register("ATSCtl")
                .and_then(|v| lspci::flags(v).get("Enable").copied())
        }
        ECAP_SRIOV => {
            if let Some(s) = sriov_from_text(c) {
                r.cs.sriov = Some(s);
            }
        }
        _ => {}
    }
}

/// The SR-IOV capability's VF counts, offset and stride; `None` without its VF counts.
fn sriov_from_text(c: &lspci::Capability) -> Option<SriovCap> {
    let num = |v: Option<&str>, k: &str| {
        v.and_then(|v| v.split(", ").find_map(|p| p.strip_prefix(k)))
            .and_then(|n| n.trim().parse().ok())
    };
    let vfs = c.register("Initial VFs");
    let off = c.register("VF offset");
    let (Some(t), Some(n)) = (num(vfs, "Total VFs: "), num(vfs, "Number of VFs: ")) else {
        return None;
    };
    Some(SriovCap {
        offset: c.offset,
        total_vfs: t,
        num_vfs: n,
        first_vf_offset: off
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0),
        vf_stride: num(off, "stride: ").unwrap_or(0),
    })
}

/// What a `lspci -vvv -s BDF | grep …` fragment shows of its device: the link from `LnkCap`
/// and `LnkSta`, ACS from `ACSCtl` (with `ACSCap` where kept); everything the grep dropped is
/// unknown, and the note says so.
fn from_fragment(b: &Block, mut cs: ConfigSpace) -> FromText {
    let reg = |k: &str| b.header(k);
    let (cap_s, cap_w) = reg("LnkCap").map(lspci::link).unwrap_or((None, None));
    let (sta_s, sta_w) = reg("LnkSta").map(lspci::link).unwrap_or((None, None));
    let shown = cap_s.is_some() || cap_w.is_some() || sta_s.is_some() || sta_w.is_some();
    let link = shown.then_some(LinkInfo {
        current_gts: sta_s,
        current_width: sta_w,
        max_gts: cap_s,
        max_width: cap_w,
    });
    if let Some(ctl) = reg("ACSCtl").and_then(acs_bits) {
        cs.acs = Some(AcsCap {
            offset: 0,
            capability: reg("ACSCap").and_then(acs_bits).unwrap_or(0),
            control: ctl,
        });
    }
    let kept: Vec<&str> = b.header.iter().map(|r| r.key.as_str()).collect();
    FromText {
        config: Some(cs),
        link,
        note: Some(format!(
            "only the lines a `grep` of `lspci -vvv -s` kept (line {}: {}): the rest of its registers are unknown",
            b.line,
            kept.join(", ")
        )),
        aer: None,
        aer_bits: Vec::new(),
    }
}

/// A physical function's SR-IOV layout, `(First VF offset, VF stride, NumVFs)`, from its
/// decoded config space (the `VF offset: 1, stride: 1` and `Number of VFs` registers, or a hex
/// dump's SR-IOV capability); `None` without one or with a zero stride and several VFs.
pub(super) fn sriov_layout(c: &ConfigSpace) -> Option<(u16, u16, u16)> {
    let s = c.sriov?;
    (s.num_vfs > 0 && s.first_vf_offset > 0 && (s.vf_stride > 0 || s.num_vfs == 1)).then_some((
        s.first_vf_offset,
        s.vf_stride,
        s.num_vfs,
    ))
}

/// The board-UUID keywords (`V3`, `VU`; [`crate::sources::datadirect::UUID_KEYWORDS`]) of the
/// `Vital Product Data` capability `lspci -vv` prints as root: `Read-only fields:` followed by
/// `[V3] Vendor specific: VALUE` lines (joined into one register value by the parser). The
/// value runs to the next `[XX]` keyword. Empty when the text holds no VPD (no root, `-xxxx`
/// or `-t` only, a paste cut before it).
pub(super) fn vpd_uuids(b: &Block) -> Vec<(String, String)> {
    let Some(cap) = b
        .caps
        .iter()
        .find(|c| c.name.starts_with("Vital Product Data"))
    else {
        return Vec::new();
    };
    let fields: String = cap
        .registers
        .iter()
        .filter(|r| r.key.starts_with("Read-only fields") || r.key.starts_with("Read/write fields"))
        .map(|r| r.value.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    for k in crate::sources::datadirect::UUID_KEYWORDS {
        let tag = format!("[{k}] ");
        let Some(at) = fields.find(&tag) else {
            continue;
        };
        let rest = &fields[at + tag.len()..];
        // `Vendor specific: VALUE` (lspci names V-keywords so); the value to the next `[XX]`.
        let Some((_, v)) = rest.split_once(": ") else {
            continue;
        };
        let end = v
            .match_indices(" [")
            .map(|(i, _)| i)
            .find(|&i| v.as_bytes().get(i + 4) == Some(&b']'))
            .unwrap_or(v.len());
        let v = v[..end].trim();
        if !v.is_empty() {
            out.push((k.to_string(), v.to_string()));
        }
    }
    out
}
