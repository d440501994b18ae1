//! PCI configuration space (`/sys/bus/pci/devices/<bdf>/config`) decoded from its bytes into
//! the model's [`ConfigSpace`] (`model::pci_config`): the header, the PCI Express capability
//! and the extended capability list (ACS, AER, SR-IOV, ATS).
//!
//! An unprivileged reader gets only the first 64 bytes; everything above 0x40 is then
//! *unknown* (never "absent" or "disabled"). Register layouts follow the PCI Express Base
//! Specification as mirrored in Linux `include/uapi/linux/pci_regs.h`.

use super::{Reason, Refusal};
use crate::model::pci_config::{
    AcsCap, CAP_ID_EXP, CAP_ID_SSVID, ConfigSpace, ECAP_ACS, ECAP_AER, ECAP_ATS, ECAP_SRIOV,
    HeaderIds, PcieCap, PortType, SriovCap,
};

fn rd8(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}
fn rd16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(off)?, *b.get(off + 1)?]))
}
fn rd32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes([
        *b.get(off)?,
        *b.get(off + 1)?,
        *b.get(off + 2)?,
        *b.get(off + 3)?,
    ]))
}

/// Link speed encoding (LNKCAP/LNKSTA bits 3:0) to GT/s ([`crate::model::pcie::by_code`]).
pub fn speed_code_gts(code: u8) -> Option<f64> {
    crate::model::pcie::by_code(code).map(|g| g.gts)
}

/// The sysfs identity of a device from its config bytes, or `None` where the header does not
/// give it: fewer than 64 bytes, a device that reads all ones, or a virtual function (its
/// vendor and device read 0xffff; the kernel takes them from the physical function).
pub fn header_ids(bytes: &[u8]) -> Option<HeaderIds> {
    if bytes.len() < 64 {
        return None;
    }
    let vendor_id = rd16(bytes, 0)?;
    let device_id = rd16(bytes, 2)?;
    if vendor_id == 0xffff || device_id == 0xffff {
        return None;
    }
    let rev_class = rd32(bytes, 8)?;
    let subsystem = match rd8(bytes, 0x0e)? & 0x7f {
        0 => Some((rd16(bytes, 0x2c)?, rd16(bytes, 0x2e)?)),
        1 if bytes.len() >= 256 => match capabilities(bytes).find(|&(id, _)| id == CAP_ID_SSVID) {
            Some((_, at)) => Some((rd16(bytes, at + 4)?, rd16(bytes, at + 6)?)),
            None => Some((0, 0)),
        },
        2 if bytes.len() >= 0x44 => Some((rd16(bytes, 0x40)?, rd16(bytes, 0x42)?)),
        _ => None,
    };
    Some(HeaderIds {
        vendor_id,
        device_id,
        revision: (rev_class & 0xff) as u8,
        class: rev_class >> 8,
        subsystem,
    })
}

/// The standard capability list, as (ID, offset) pairs: only where the status register says
/// there is one and the first 256 bytes were read; walked with a visit bound, so a looping or
/// out-of-range list ends the walk instead of hanging.
fn capabilities(bytes: &[u8]) -> impl Iterator<Item = (u8, usize)> + '_ {
    let listed = bytes.len() >= 256 && rd16(bytes, 0x06).is_some_and(|s| s & 0x10 != 0);
    let mut ptr = if listed {
        rd8(bytes, 0x34).map_or(0, |p| (p & 0xfc) as usize)
    } else {
        0
    };
    let mut visits = 0;
    std::iter::from_fn(move || {
        if !(0x40..256).contains(&ptr) || visits >= 48 {
            return None;
        }
        visits += 1;
        let at = ptr;
        let id = rd8(bytes, at)?;
        ptr = rd8(bytes, at + 1).map_or(0, |p| (p & 0xfc) as usize);
        Some((id, at))
    })
}

/// Decodes config space. Refuses fewer than the 64 header bytes ([`Reason::ShortConfig`]) and
/// a header that reads all ones ([`Reason::DeviceGone`]). Capability lists are walked with a
/// visit bound, so a looping or out-of-range list ends the walk instead of hanging.
pub fn parse(bytes: &[u8]) -> Result<ConfigSpace, Refusal> {
    if bytes.len() < 64 {
        return Err(Refusal::of_len(bytes.len(), Reason::ShortConfig));
    }
    // A removed device reads all ones. An SR-IOV virtual function reads vendor and device
    // 0xffff too (the IDs live in the PF's SR-IOV capability), but its class and header are
    // real, so only an all-ones header means "gone".
    if rd16(bytes, 0) == Some(0xffff) && rd32(bytes, 8) == Some(0xffff_ffff) {
        return Err(Refusal::of_len(bytes.len(), Reason::DeviceGone));
    }
    decode(bytes).ok_or_else(|| Refusal::of_len(bytes.len(), Reason::ShortConfig))
}

/// [`parse`] past its checks: at least 64 bytes of a present device.
fn decode(bytes: &[u8]) -> Option<ConfigSpace> {
    let vendor_id = rd16(bytes, 0)?;
    let device_id = rd16(bytes, 2)?;
    let class = rd32(bytes, 8)? >> 8;
    let ht = rd8(bytes, 0x0e)?;
    let header_type = ht & 0x7f;
    let bridge_buses = if header_type == 1 {
        Some((rd8(bytes, 0x18)?, rd8(bytes, 0x19)?, rd8(bytes, 0x1a)?))
    } else {
        None
    };
    let mut cs = ConfigSpace::from_header(
        bytes.len(),
        vendor_id,
        device_id,
        class,
        header_type,
        ht & 0x80 != 0,
        bridge_buses,
    );
    for (id, at) in capabilities(bytes) {
        if id == CAP_ID_EXP {
            cs.pcie = parse_pcie(bytes, at);
        }
    }
    if bytes.len() >= 4096 {
        let mut ptr = 0x100usize;
        let mut visits = 0;
        while ptr >= 0x100 && ptr + 4 <= bytes.len() && visits < 96 {
            visits += 1;
            let hdr = rd32(bytes, ptr)?;
            if hdr == 0 || hdr == 0xffff_ffff {
                break;
            }
            let id = (hdr & 0xffff) as u16;
            cs.ext_caps.push(id);
            match id {
                ECAP_ACS => {
                    if let (Some(c), Some(k)) = (rd16(bytes, ptr + 4), rd16(bytes, ptr + 6)) {
                        cs.acs = Some(AcsCap {
                            offset: ptr as u16,
                            capability: c,
                            control: k,
                        });
                    }
                }
                ECAP_AER => cs.aer_offset = Some(ptr as u16),
                ECAP_ATS => cs.ats = rd16(bytes, ptr + 6).map(|c| c & 0x8000 != 0),
                ECAP_SRIOV => {
                    if let (Some(t), Some(n)) = (rd16(bytes, ptr + 0x0e), rd16(bytes, ptr + 0x10)) {
                        cs.sriov = Some(SriovCap {
                            offset: ptr as u16,
                            total_vfs: t,
                            num_vfs: n,
                            first_vf_offset: rd16(bytes, ptr + 0x14).unwrap_or(0),
                            vf_stride: rd16(bytes, ptr + 0x16).unwrap_or(0),
                        });
                    }
                }
                _ => {}
            }
            let next = (hdr >> 20) as usize & 0xffc;
            if next <= ptr {
                break; // lists only go forward; a backward pointer is a loop
            }
            ptr = next;
        }
    }
    Some(cs)
}

fn parse_pcie(b: &[u8], off: usize) -> Option<PcieCap> {
    let flags = rd16(b, off + 2)?;
    let devcap = rd32(b, off + 4)?;
    let devctl = rd16(b, off + 8)?;
    let lnkcap = rd32(b, off + 0x0c).unwrap_or(0);
    let lnksta = rd16(b, off + 0x12).unwrap_or(0);
    let sltcap = rd32(b, off + 0x14).unwrap_or(0);
    let width = |w: u32| if (1..=32).contains(&w) { Some(w) } else { None };
    let slot_implemented = flags & 0x0100 != 0;
    Some(PcieCap {
        offset: off as u16,
        port_type: PortType::from_bits(((flags >> 4) & 0xf) as u8),
        mps_supported: 128 << (devcap & 0x7).min(5),
        mps: 128 << ((devctl >> 5) & 0x7).min(5),
        mrrs: 128 << ((devctl >> 12) & 0x7).min(5),
        relaxed_ordering: devctl & 0x0010 != 0,
        no_snoop: devctl & 0x0800 != 0,
        link_cap_gts: speed_code_gts((lnkcap & 0xf) as u8),
        link_cap_width: width((lnkcap >> 4) & 0x3f),
        link_sta_gts: speed_code_gts((lnksta & 0xf) as u8),
        link_sta_width: width(((lnksta >> 4) & 0x3f) as u32),
        slot_implemented,
        physical_slot: if slot_implemented {
            Some(sltcap >> 19)
        } else {
            None
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a 4096-byte type-1 config space with a PCIe capability at 0x40 and ACS at 0x100.
    fn bridge(port_type: u8, acs_ctl: u16) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        b[0..2].copy_from_slice(&0x10b5u16.to_le_bytes());
        b[2..4].copy_from_slice(&0x9797u16.to_le_bytes());
        b[6] = 0x10; // capabilities list
        b[0x09..0x0c].copy_from_slice(&[0x00, 0x04, 0x06]);
        b[0x0e] = 0x01;
        b[0x18..0x1b].copy_from_slice(&[0x17, 0x18, 0x1f]);
        b[0x34] = 0x40;
        b[0x40] = CAP_ID_EXP;
        b[0x41] = 0;
        b[0x42..0x44].copy_from_slice(&(((port_type as u16) << 4) | 0x0102).to_le_bytes());
        b[0x44..0x48].copy_from_slice(&2u32.to_le_bytes()); // MPS supported 512
        b[0x48..0x4a].copy_from_slice(&((1u16 << 5) | (2 << 12) | 0x10).to_le_bytes());
        b[0x4c..0x50].copy_from_slice(&(4u32 | (16 << 4)).to_le_bytes());
        b[0x52..0x54].copy_from_slice(&(3u16 | (8 << 4)).to_le_bytes());
        // ext caps: AER at 0x100 -> ACS at 0x148
        b[0x100..0x104].copy_from_slice(&(0x0001u32 | (1 << 16) | (0x148 << 20)).to_le_bytes());
        b[0x148..0x14c].copy_from_slice(&(0x000du32 | (1 << 16)).to_le_bytes());
        b[0x14c..0x14e].copy_from_slice(&0x005fu16.to_le_bytes());
        b[0x14e..0x150].copy_from_slice(&acs_ctl.to_le_bytes());
        b
    }

    #[test]
    fn header_ids_follow_the_header_type() {
        let mut b = bridge(6, 0x1d);
        b[0x08] = 0xa1;
        // A bridge without SSVID: 0/0, as the kernel leaves them; past 64 bytes only.
        let h = header_ids(&b).unwrap();
        assert_eq!(
            (h.vendor_id, h.device_id, h.revision, h.class),
            (0x10b5, 0x9797, 0xa1, 0x060400)
        );
        assert_eq!(h.subsystem, Some((0, 0)));
        assert_eq!(header_ids(&b[..64]).unwrap().subsystem, None);
        // With an SSVID capability chained after the PCIe one.
        b[0x41] = 0x80;
        b[0x80..0x88].copy_from_slice(&[CAP_ID_SSVID, 0, 0, 0, 0x3c, 0x10, 0x34, 0x12]);
        assert_eq!(header_ids(&b).unwrap().subsystem, Some((0x103c, 0x1234)));
        // A type-0 header holds them at +0x2c within the first 64 bytes.
        let mut e = vec![0u8; 64];
        e[0..4].copy_from_slice(&[0xde, 0x10, 0x30, 0x23]);
        e[0x2c..0x30].copy_from_slice(&[0xde, 0x10, 0x7b, 0x16]);
        assert_eq!(header_ids(&e).unwrap().subsystem, Some((0x10de, 0x167b)));
        // A virtual function (0xffff IDs) and a short file give nothing.
        e[0..4].copy_from_slice(&[0xff; 4]);
        assert!(header_ids(&e).is_none());
        assert!(header_ids(&b[..63]).is_none());
    }

    #[test]
    fn decodes_bridge() {
        let cs = parse(&bridge(6, 0x1d)).unwrap();
        assert_eq!(cs.vendor_id, 0x10b5);
        assert_eq!(cs.class, 0x060400);
        assert_eq!(cs.bridge_buses, Some((0x17, 0x18, 0x1f)));
        let p = cs.pcie.unwrap();
        assert_eq!(p.port_type, PortType::SwitchDownstream);
        assert_eq!((p.mps, p.mrrs, p.mps_supported), (256, 512, 512));
        assert!(p.relaxed_ordering);
        assert_eq!((p.link_cap_gts, p.link_cap_width), (Some(16.0), Some(16)));
        assert_eq!((p.link_sta_gts, p.link_sta_width), (Some(8.0), Some(8)));
        assert_eq!(p.physical_slot, Some(0));
        let a = cs.acs.unwrap();
        assert!(a.redirects_p2p());
        assert_eq!(
            a.enabled_names(),
            vec!["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
        );
        assert_eq!(cs.ext_caps, vec![ECAP_AER, ECAP_ACS]);
    }

    #[test]
    fn short_config_is_unknown_not_absent() {
        let b = bridge(6, 0x1d);
        let cs = parse(&b[..64]).unwrap();
        assert!(cs.pcie.is_none() && cs.acs.is_none());
        assert!(!cs.has_capabilities());
        assert_eq!(
            parse(&b[..63]).unwrap_err().to_string(),
            "63 bytes are shorter than the 64-byte config header"
        );
    }

    #[test]
    fn looping_lists_terminate() {
        let mut b = bridge(4, 0);
        b[0x41] = 0x40; // standard list points at itself
        b[0x102..0x104].copy_from_slice(&((0x100u16 << 4) | 1).to_le_bytes()); // ext next = 0x100
        let cs = parse(&b).unwrap();
        assert!(cs.pcie.is_some());
        assert_eq!(cs.ext_caps, vec![ECAP_AER]);
    }

    #[test]
    fn gone_device() {
        assert_eq!(
            parse(&[0xff; 64]).unwrap_err().to_string(),
            "64 bytes read all ones (device gone)"
        );
    }

    #[test]
    fn virtual_function_header_is_not_gone() {
        let mut b = bridge(0, 0);
        b[0..4].copy_from_slice(&[0xff; 4]);
        b[0x0e] = 0;
        let cs = parse(&b).expect("a VF's config is readable");
        assert_eq!(cs.vendor_id, 0xffff);
        assert_eq!(cs.class, 0x060400);
    }
}
