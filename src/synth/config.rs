//! Builds the bytes of a synthesized `config` file: the type-0/type-1 header, the PCI Express
//! capability at 0x40 and the extended capabilities from 0x100 (AER, ACS, SR-IOV), with the
//! register layouts of the PCI Express Base Specification (as in Linux `pci_regs.h`).

use super::{Function, Link, Role};

/// Offset of the PCI Express capability in every synthesized config space.
pub const PCIE_CAP_OFFSET: usize = 0x40;
/// Offset of the VPD capability of functions with VPD (after the PCIe capability's 0x3c bytes).
pub const VPD_CAP_OFFSET: usize = 0x80;
/// Where a bridge's subsystem ID capability (SSVID, ID 0x0d) sits, chained last.
pub const SSVID_CAP_OFFSET: usize = 0x88;
/// ACS Capability register value written on ports with ACS: SV|TB|RR|CR|UF|DT (0x5f).
pub const ACS_CAPABILITY: u16 = 0x5f;

/// Bus numbers of a bridge (primary, secondary, subordinate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BridgeBuses {
    /// Bus the bridge sits on.
    pub primary: u8,
    /// Bus directly below it.
    pub secondary: u8,
    /// Highest bus below it.
    pub subordinate: u8,
}

/// What the config builder needs beyond the function itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConfigContext {
    /// Bridge bus numbers (bridges only).
    pub buses: Option<BridgeBuses>,
    /// Another function shares this device number (header type bit 7).
    pub multifunction: bool,
    /// SR-IOV NumVFs (VFs that name this function as PF).
    pub num_vfs: u16,
    /// Routing-ID offset of the first VF and the stride between VFs.
    pub vf_offset_stride: (u16, u16),
    /// The function is an SR-IOV VF: its Vendor and Device ID registers read 0xFFFF (SR-IOV
    /// spec; the kernel's `config` file shows the raw registers, VFIO emulates them and lspci
    /// takes the IDs from the `vendor`/`device` files).
    pub is_vf: bool,
}

fn w8(b: &mut [u8], off: usize, v: u8) {
    b[off] = v;
}
fn w16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
fn w32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Link speed in GT/s to the LNKCAP/LNKSTA encoding (1 = 2.5 … 6 = 64); 0 if not a PCIe speed.
pub fn speed_code(gts: f64) -> u8 {
    // The encoding is the generation number (Gen1..Gen6 fit the synthesized registers).
    crate::model::pcie::by_rate(gts)
        .map(|g| g.generation)
        .filter(|g| *g <= 6)
        .unwrap_or(0)
}

/// Payload/read-request size in bytes to the 3-bit encoding (128 << code).
fn size_code(bytes: u32) -> u16 {
    let mut c = 0u16;
    while c < 5 && (128u32 << c) < bytes {
        c += 1;
    }
    c
}

/// Builds the full config space of `f` (4096 bytes with a PCIe capability, 256 without).
pub fn build(f: &Function, ctx: &ConfigContext) -> Vec<u8> {
    let size = if f.pcie { 4096 } else { 256 };
    let mut b = vec![0u8; size];
    if ctx.is_vf {
        w16(&mut b, 0x00, 0xffff);
        w16(&mut b, 0x02, 0xffff);
    } else {
        w16(&mut b, 0x00, f.vendor);
        w16(&mut b, 0x02, f.device);
    }
    // Command: memory space + bus master (+ I/O space for bridges).
    w16(
        &mut b,
        0x04,
        if f.role.is_bridge() { 0x0407 } else { 0x0406 },
    );
    // Status: capabilities list when there is one.
    let has_caps = f.pcie;
    w16(&mut b, 0x06, if has_caps { 0x0010 } else { 0x0000 });
    w8(&mut b, 0x08, f.revision);
    w8(&mut b, 0x09, (f.class & 0xff) as u8);
    w8(&mut b, 0x0a, ((f.class >> 8) & 0xff) as u8);
    w8(&mut b, 0x0b, ((f.class >> 16) & 0xff) as u8);
    w8(&mut b, 0x0c, 0x10); // cache line size: 64 bytes
    let header = if f.role.is_bridge() { 1u8 } else { 0u8 };
    w8(
        &mut b,
        0x0e,
        header | if ctx.multifunction { 0x80 } else { 0 },
    );
    if f.role.is_bridge() {
        if let Some(bb) = ctx.buses {
            w8(&mut b, 0x18, bb.primary);
            w8(&mut b, 0x19, bb.secondary);
            w8(&mut b, 0x1a, bb.subordinate);
        }
        // I/O base > limit (window closed); memory and prefetchable windows closed too.
        w8(&mut b, 0x1c, 0xf1);
        w8(&mut b, 0x1d, 0x01);
        w16(&mut b, 0x20, 0xfff0);
        w16(&mut b, 0x22, 0x0000);
        w16(&mut b, 0x24, 0xfff1);
        w16(&mut b, 0x26, 0x0001);
    } else {
        for bar in &f.bars {
            let i = bar.index as usize;
            if i > 5 || (bar.mem64 && i > 4) {
                continue;
            }
            let off = 0x10 + 4 * i;
            let mut lo = (bar.start & 0xffff_fff0) as u32;
            if bar.mem64 {
                lo |= 0x4;
            }
            if bar.prefetchable {
                lo |= 0x8;
            }
            w32(&mut b, off, lo);
            if bar.mem64 {
                w32(&mut b, off + 4, (bar.start >> 32) as u32);
            }
        }
        w16(&mut b, 0x2c, f.subsystem_vendor);
        w16(&mut b, 0x2e, f.subsystem_device);
        w8(&mut b, 0x3d, 0x01); // interrupt pin INTA
    }
    w8(&mut b, 0x3c, 0xff);
    if !has_caps {
        return b;
    }
    w8(&mut b, 0x34, PCIE_CAP_OFFSET as u8);
    pcie_cap(&mut b, f);
    if f.vpd.is_some() {
        // The VPD capability (ID 0x03) chained after the PCIe capability: lspci then reads the
        // `vpd` file and shows it under "Vital Product Data".
        w8(&mut b, PCIE_CAP_OFFSET + 1, VPD_CAP_OFFSET as u8);
        w8(&mut b, VPD_CAP_OFFSET, 0x03);
        w8(&mut b, VPD_CAP_OFFSET + 1, 0x00);
    }
    if f.role.is_bridge() && (f.subsystem_vendor, f.subsystem_device) != (0, 0) {
        // A type-1 header has no subsystem registers: a bridge names its subsystem in an SSVID
        // capability (QEMU's root ports carry one), which is where the kernel reads
        // `subsystem_vendor` and `subsystem_device` from.
        let last = if f.vpd.is_some() {
            VPD_CAP_OFFSET
        } else {
            PCIE_CAP_OFFSET
        };
        w8(&mut b, last + 1, SSVID_CAP_OFFSET as u8);
        w8(
            &mut b,
            SSVID_CAP_OFFSET,
            crate::model::pci_config::CAP_ID_SSVID,
        );
        w8(&mut b, SSVID_CAP_OFFSET + 1, 0x00);
        w16(&mut b, SSVID_CAP_OFFSET + 4, f.subsystem_vendor);
        w16(&mut b, SSVID_CAP_OFFSET + 6, f.subsystem_device);
    }
    extended_caps(&mut b, f, ctx);
    b
}

fn pcie_cap(b: &mut [u8], f: &Function) {
    let o = PCIE_CAP_OFFSET;
    let is_port = matches!(f.role, Role::RootPort | Role::SwitchDownstream);
    let slot = is_port && f.slot.is_some();
    w8(b, o, crate::model::pci_config::CAP_ID_EXP);
    w8(b, o + 1, 0x00);
    let flags = 0x0002u16 | ((f.role.port_type() as u16) << 4) | if slot { 0x0100 } else { 0 };
    w16(b, o + 2, flags);
    // DEVCAP: MPS supported, extended tag (bit 5), role-based error reporting (bit 15),
    // FLR (bit 28) on endpoints.
    let mut devcap = size_code(f.mps_supported) as u32 | (1 << 5) | (1 << 15);
    if matches!(f.role, Role::Endpoint) {
        devcap |= 1 << 28;
    }
    w32(b, o + 4, devcap);
    // DEVCTL: error reporting enables (bits 0-3), RO (bit 4), MPS (7:5), ext tag (bit 8),
    // no-snoop (bit 11), MRRS (14:12).
    let mut devctl =
        0x000f | (size_code(f.mps) << 5) | (1 << 8) | (1 << 11) | (size_code(f.mrrs) << 12);
    if f.relaxed_ordering {
        devctl |= 1 << 4;
    }
    w16(b, o + 8, devctl);
    let link = f.link.unwrap_or(Link {
        speed: 0.0,
        width: 0,
        max_speed: 0.0,
        max_width: 0,
    });
    let port_number = u32::from(f.bdf.device);
    let mut lnkcap =
        speed_code(link.max_speed) as u32 | ((link.max_width & 0x3f) << 4) | (port_number << 24);
    if is_port {
        lnkcap |= 1 << 20; // data link layer link active reporting capable
    }
    if f.link.is_some() {
        w32(b, o + 0x0c, lnkcap);
        let mut lnksta =
            speed_code(link.speed) as u16 | (((link.width & 0x3f) as u16) << 4) | (1 << 12);
        if is_port && link.width > 0 {
            lnksta |= 1 << 13; // data link layer link active
        }
        w16(b, o + 0x10, 0x0040); // LNKCTL: common clock
        w16(b, o + 0x12, lnksta);
    }
    if slot {
        let n = f.slot.as_ref().map_or(0, |s| s.number) & 0x1fff;
        // SLTCAP: physical slot number (31:19), hot-plug surprise/capable off.
        w32(b, o + 0x14, n << 19);
        w16(b, o + 0x1a, 0x0040); // SLTSTA: presence detect
    }
    // DEVCAP2: completion timeout ranges, ARI forwarding on ports; LNKCAP2: supported speeds.
    w32(b, o + 0x24, 0x0000_001f | if is_port { 1 << 5 } else { 0 });
    if f.link.is_some() {
        let max = speed_code(link.max_speed);
        let mut vec = 0u32;
        for c in 1..=max {
            vec |= 1 << c;
        }
        w32(b, o + 0x2c, vec);
        w16(b, o + 0x30, max as u16); // LNKCTL2 target speed
    }
}

fn extended_caps(b: &mut [u8], f: &Function, ctx: &ConfigContext) {
    // (id, version, size) in list order; offsets assigned sequentially from 0x100.
    let mut caps: Vec<(u16, u8, usize)> = Vec::new();
    if f.aer.is_some() {
        caps.push((crate::model::pci_config::ECAP_AER, 2, 0x48));
    }
    if f.acs_control.is_some() {
        caps.push((crate::model::pci_config::ECAP_ACS, 1, 0x08));
    }
    if f.ats {
        caps.push((crate::model::pci_config::ECAP_ATS, 1, 0x08));
    }
    if f.total_vfs > 0 {
        caps.push((crate::model::pci_config::ECAP_SRIOV, 1, 0x40));
    }
    let mut off = 0x100usize;
    let offsets: Vec<usize> = caps
        .iter()
        .map(|&(_, _, size)| {
            let o = off;
            off = (off + size + 0xf) & !0xf;
            o
        })
        .collect();
    for (i, &(id, ver, _)) in caps.iter().enumerate() {
        let o = offsets[i];
        let next = offsets.get(i + 1).copied().unwrap_or(0) as u32;
        w32(b, o, u32::from(id) | (u32::from(ver) << 16) | (next << 20));
        match id {
            crate::model::pci_config::ECAP_AER => {
                w32(b, o + 0x0c, 0x0046_2030); // uncorrectable severity (kernel default)
                w32(b, o + 0x14, 0x0000_2000); // correctable mask: advisory non-fatal
                w32(b, o + 0x18, 0x0000_00a0); // ECRC generation/check capable
            }
            crate::model::pci_config::ECAP_ACS => {
                w16(b, o + 4, ACS_CAPABILITY);
                w16(b, o + 6, f.acs_control.unwrap_or(0));
            }
            crate::model::pci_config::ECAP_ATS => {
                w16(b, o + 4, 0x0020); // ATS capability: page aligned request
                w16(b, o + 6, 0x8000); // ATS control: enabled
            }
            crate::model::pci_config::ECAP_SRIOV => {
                w32(b, o + 0x04, 0x0000_0002); // ARI capable hierarchy preserved
                w16(b, o + 0x08, if ctx.num_vfs > 0 { 0x0019 } else { 0x0010 }); // VF enable + MSE, ARI
                w16(b, o + 0x0c, f.total_vfs);
                w16(b, o + 0x0e, f.total_vfs);
                w16(b, o + 0x10, ctx.num_vfs);
                w16(b, o + 0x14, ctx.vf_offset_stride.0);
                w16(b, o + 0x16, ctx.vf_offset_stride.1);
                w16(b, o + 0x1a, f.vf_device);
                w32(b, o + 0x1c, 0x0000_0553); // supported page sizes
                w32(b, o + 0x20, 0x0000_0001); // system page size 4K
                w32(b, o + 0x24, 0x0000_000c); // VF BAR0: 64-bit prefetchable
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pci_config::PortType;
    use crate::parse::config as pc;
    use crate::synth::Slot;

    #[test]
    fn round_trips_through_the_parser() {
        let f = Function {
            bdf: "0000:18:02.0".parse().unwrap(),
            role: Role::SwitchDownstream,
            vendor: 0x1000,
            device: 0xc030,
            class: 0x060400,
            link: Some(Link {
                speed: 16.0,
                width: 8,
                max_speed: 32.0,
                max_width: 16,
            }),
            acs_control: Some(
                crate::model::pci_config::acs::RR | crate::model::pci_config::acs::CR,
            ),
            aer: Some(Default::default()),
            slot: Some(Slot {
                name: "3".into(),
                number: 3,
            }),
            mps: 256,
            mrrs: 4096,
            ..Default::default()
        };
        let ctx = ConfigContext {
            buses: Some(BridgeBuses {
                primary: 0x18,
                secondary: 0x19,
                subordinate: 0x1a,
            }),
            ..Default::default()
        };
        let b = build(&f, &ctx);
        assert_eq!(b.len(), 4096);
        let cs = pc::parse(&b).unwrap();
        assert_eq!(
            (cs.vendor_id, cs.device_id, cs.class, cs.header_type),
            (0x1000, 0xc030, 0x060400, 1)
        );
        assert_eq!(cs.bridge_buses, Some((0x18, 0x19, 0x1a)));
        let p = cs.pcie.unwrap();
        assert_eq!(p.port_type, PortType::SwitchDownstream);
        assert_eq!((p.mps, p.mrrs), (256, 4096));
        assert_eq!((p.link_sta_gts, p.link_sta_width), (Some(16.0), Some(8)));
        assert_eq!((p.link_cap_gts, p.link_cap_width), (Some(32.0), Some(16)));
        assert_eq!(p.physical_slot, Some(3));
        assert_eq!(
            cs.acs.unwrap().control,
            crate::model::pci_config::acs::RR | crate::model::pci_config::acs::CR
        );
        assert_eq!(cs.acs.unwrap().capability, ACS_CAPABILITY);
        assert_eq!(
            cs.ext_caps,
            vec![
                crate::model::pci_config::ECAP_AER,
                crate::model::pci_config::ECAP_ACS
            ]
        );
        // Unprivileged view: header only.
        let short = pc::parse(&b[..64]).unwrap();
        assert!(short.pcie.is_none());
        assert_eq!(short.bridge_buses, Some((0x18, 0x19, 0x1a)));
    }

    #[test]
    fn sriov_counts() {
        let f = Function {
            bdf: "0000:18:00.0".parse().unwrap(),
            vendor: 0x15b3,
            device: 0x1021,
            class: 0x020700,
            total_vfs: 16,
            vf_device: 0x101e,
            link: Some(Link::full(32.0, 16)),
            ..Default::default()
        };
        let ctx = ConfigContext {
            num_vfs: 4,
            vf_offset_stride: (1, 1),
            ..Default::default()
        };
        let cs = pc::parse(&build(&f, &ctx)).unwrap();
        let s = cs.sriov.unwrap();
        assert_eq!((s.total_vfs, s.num_vfs), (16, 4));
        assert_eq!(speed_code(2.5), 1);
        assert_eq!(speed_code(3.0), 0);
    }
}
