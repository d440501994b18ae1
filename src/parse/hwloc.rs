//! Attribute values of hwloc's XML (`lstopo --of xml`, formats 1.x, 2.0 and 3.0; see
//! `shared/reference/hwloc.md` §c): bitmaps (`cpuset`, `nodeset`), `pci_type`, `bridge_pci`,
//! `pci_link_speed` and `osdev_type`. Strings in, typed values out.

use super::{Reason, Refusal, cpulist};
use crate::model::pcie::GENERATIONS;

/// Parses an hwloc bitmap (`0x00ffffff`, `0xffffffff,,0x0000000f` with empty words = 0, 32-bit
/// words most significant first) into sorted bit numbers. An infinite set (`0xf...f`, hwloc's
/// "every index") is `Ok(None)`: no finite list of CPUs, but not malformed either.
pub fn parse_bitmap(s: &str) -> Result<Option<Vec<u32>>, Refusal> {
    let s = s.trim();
    if s.contains("...") {
        return Ok(None);
    }
    cpulist::parse_mask(s.as_bytes()).map(Some)
}

/// The fields of `pci_type`: class (with prog-if in the low byte when given), vendor, device,
/// subsystem vendor, subsystem device, revision, and whether the prog-if was present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PciType {
    /// `0xCCSSPP`; `PP` is 0 when the document has no prog-if (format 2.0).
    pub class: u32,
    /// Whether the prog-if byte was in the document.
    pub has_prog_if: bool,
    /// Vendor ID.
    pub vendor: u16,
    /// Device ID.
    pub device: u16,
    /// Subsystem vendor ID.
    pub subvendor: u16,
    /// Subsystem device ID.
    pub subdevice: u16,
    /// Revision.
    pub revision: u8,
}

/// Parses `pci_type`: `"0604 [8086:2030] [8086:0000] 04"` (2.0) or with a trailing prog-if
/// `"0302 [10de:1db8] [10de:131d] a1 00"` (3.0).
pub fn parse_pci_type(s: &str) -> Result<PciType, Refusal> {
    pci_type_fields(s).ok_or_else(|| Refusal::of(s.as_bytes(), Reason::NotPciType))
}

fn pci_type_fields(s: &str) -> Option<PciType> {
    let t: Vec<&str> = s.split_whitespace().collect();
    if t.len() != 4 && t.len() != 5 {
        return None;
    }
    let pair = |x: &str| -> Option<(u16, u16)> {
        let inner = x.strip_prefix('[')?.strip_suffix(']')?;
        let (a, b) = inner.split_once(':')?;
        Some((
            u16::from_str_radix(a, 16).ok()?,
            u16::from_str_radix(b, 16).ok()?,
        ))
    };
    let class = u16::from_str_radix(t[0], 16).ok()?;
    let (vendor, device) = pair(t[1])?;
    let (subvendor, subdevice) = pair(t[2])?;
    let revision = u8::from_str_radix(t[3], 16).ok()?;
    let prog_if = match t.get(4) {
        Some(p) => Some(u8::from_str_radix(p, 16).ok()?),
        None => None,
    };
    Some(PciType {
        class: (class as u32) << 8 | prog_if.unwrap_or(0) as u32,
        has_prog_if: prog_if.is_some(),
        vendor,
        device,
        subvendor,
        subdevice,
        revision,
    })
}

/// Link widths in use on real devices, widest first (x12 and x32 exist in the specification
/// but not on shipping devices, so x32 at Gen3 is never preferred to x16 at Gen4).
pub const WIDTHS: [u32; 5] = [16, 8, 4, 2, 1];

/// The per-lane data rates (Gb/s) hwloc may have written for a generation: the generation's own
/// line coding, and 128b/130b where some hwloc versions applied it to other generations. hwloc
/// 2.x parses sysfs `current_link_speed` with `"2.5 "` → 8b/10b, `"5 "` → 8b/10b and anything
/// else × 128/130; kernels since 4.19 write `5.0 GT/s PCIe`, which misses the `"5 "` test, so Gen2
/// reads 5 × 128/130 (x1: 0.615385 GB/s). hwloc before the FLIT table (1.11–2.9, and every
/// version reading sysfs strings) counts Gen6 and Gen7 at 128/130 too.
pub fn hwloc_lane_gbits(g: &crate::model::pcie::Generation) -> Vec<f64> {
    use crate::model::pcie::Encoding;
    let mut v = vec![g.encoding.data_gbits(g.gts)];
    // "2.5 GT/s" always matches hwloc's "2.5 " test: Gen1 is only ever 8b/10b.
    if g.encoding != Encoding::B128b130b && g.generation != 1 {
        v.push(Encoding::B128b130b.data_gbits(g.gts));
    }
    v
}

/// Turns hwloc's `pci_link_speed` (GB/s, `lane rate × width / 8` after line coding) back into
/// a speed and width. Several links give the same bandwidth (Gen3 x16 = Gen4 x8 = Gen5 x4);
/// the assumption is the widest standard width, i.e. the lowest generation, so the bandwidth is
/// preserved. Every line coding hwloc 1.11–2.12 applied is accepted ([`hwloc_lane_gbits`]):
/// 0.615385 GB/s is Gen2 x1 read from a `5.0 GT/s PCIe` string. `None` for 0 or less (unknown)
/// or a value no standard link gives within 0.5 % (hand-edited files).
pub fn link_from_gbytes(gb: f64) -> Option<(f64, u32)> {
    if !gb.is_finite() || gb <= 0.0 {
        return None;
    }
    for w in WIDTHS {
        for g in &GENERATIONS {
            for lane in hwloc_lane_gbits(g) {
                let bw = lane * w as f64 / 8.0;
                if ((bw - gb) / gb).abs() < 0.005 {
                    return Some((g.gts, w));
                }
            }
        }
    }
    None
}

/// Parses `pci_link_speed` (GB/s): `Ok(None)` for 0 (hwloc's "unknown"), the speed and width
/// of [`link_from_gbytes`] otherwise; refuses text that is not a number and bandwidths no
/// standard link gives.
pub fn parse_link_speed(s: &str) -> Result<Option<(f64, u32)>, Refusal> {
    let gb: f64 = s
        .trim()
        .parse()
        .map_err(|_| Refusal::of(s.as_bytes(), Reason::NotNumber))?;
    if gb.is_nan() {
        return Err(Refusal::of(s.as_bytes(), Reason::NotNumber));
    }
    if gb <= 0.0 {
        return Ok(None);
    }
    link_from_gbytes(gb)
        .map(Some)
        .ok_or_else(|| Refusal::of_shown(format!("{} GB/s", s.trim()), Reason::NoStandardLink))
}

/// `bridge_pci="DDDD:[BB-SS]"` → (domain, secondary, subordinate).
pub fn parse_bus_range(s: &str) -> Result<(u32, u8, u8), Refusal> {
    let fields = || -> Option<(u32, u8, u8)> {
        let (d, rest) = s.split_once(':')?;
        let inner = rest.strip_prefix('[')?.strip_suffix(']')?;
        let (a, b) = inner.split_once('-')?;
        Some((
            u32::from_str_radix(d, 16).ok()?,
            u8::from_str_radix(a, 16).ok()?,
            u8::from_str_radix(b, 16).ok()?,
        ))
    };
    fields().ok_or_else(|| Refusal::of(s.as_bytes(), Reason::NotBusRange))
}

/// Kinds of OS device an `osdev_type` says, reduced to what peerpath models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsType {
    /// Block device (disk, NVMe namespace).
    Block,
    /// GPU (DRM card, or a CUDA/NVML device in 1.x/2.0).
    Gpu,
    /// Network interface.
    Net,
    /// OpenFabrics (RDMA) device.
    OpenFabrics,
    /// Co-processor (CUDA, OpenCL, …).
    CoProc,
    /// Anything else (DMA channels, DAX, memory, unknown values).
    Other,
}

/// Parses `osdev_type`: an enum in formats 1.x and 2.0 (`bitmask == false`: 0 block, 1 GPU,
/// 2 network, 3 OpenFabrics, 5 co-processor), a bitmask in 3.0 (`bitmask == true`: 1 storage,
/// 4 GPU, 8 co-processor, 16 network, 32 OpenFabrics; the most specific bit wins).
pub fn parse_osdev_type(raw: &str, bitmask: bool) -> Result<OsType, Refusal> {
    let v: u32 = raw
        .trim()
        .parse()
        .map_err(|_| Refusal::of(raw.as_bytes(), Reason::NotInteger))?;
    Ok(if bitmask {
        if v & 32 != 0 {
            OsType::OpenFabrics
        } else if v & 16 != 0 {
            OsType::Net
        } else if v & 8 != 0 {
            OsType::CoProc
        } else if v & 4 != 0 {
            OsType::Gpu
        } else if v & 1 != 0 {
            OsType::Block
        } else {
            OsType::Other
        }
    } else {
        match v {
            0 => OsType::Block,
            1 => OsType::Gpu,
            2 => OsType::Net,
            3 => OsType::OpenFabrics,
            5 => OsType::CoProc,
            _ => OsType::Other,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bandwidth::pcie_link_gbytes;

    #[test]
    fn bitmaps() {
        assert_eq!(parse_bitmap("0x00000003"), Ok(Some(vec![0, 1])));
        assert_eq!(
            parse_bitmap("0x00000001,,0x00000002"),
            Ok(Some(vec![1, 64]))
        );
        assert_eq!(parse_bitmap("0x80000000,0x0"), Ok(Some(vec![63])));
        assert_eq!(parse_bitmap("0xf...f"), Ok(None));
        assert_eq!(parse_bitmap("zz").unwrap_err().reason, Reason::NotCpuMask);
    }

    #[test]
    fn pci_types() {
        let t = parse_pci_type("0604 [8086:2030] [8086:0000] 04").unwrap();
        assert_eq!(
            (t.class, t.vendor, t.device, t.revision, t.has_prog_if),
            (0x060400, 0x8086, 0x2030, 4, false)
        );
        let t = parse_pci_type("0302 [10de:1db8] [10de:131d] a1 00").unwrap();
        assert_eq!(
            (t.class, t.subdevice, t.has_prog_if),
            (0x030200, 0x131d, true)
        );
        let t = parse_pci_type("0108 [8086:0953] [8086:3702] 01 02").unwrap();
        assert_eq!(t.class, 0x010802);
        assert_eq!(
            parse_pci_type("0604 [8086:2030]").unwrap_err().to_string(),
            "\"0604 [8086:2030]\" is not CCCC [VVVV:DDDD] [SSSS:ssss] RR [PP]"
        );
        assert!(parse_pci_type("0604 8086:2030 [8086:0000] 04").is_err());
    }

    #[test]
    fn bus_ranges() {
        assert_eq!(parse_bus_range("0000:[17-1f]"), Ok((0, 0x17, 0x1f)));
        assert_eq!(
            parse_bus_range("0000:17").unwrap_err().reason,
            Reason::NotBusRange
        );
    }

    #[test]
    fn links_back_from_gbytes() {
        assert_eq!(link_from_gbytes(15.753846), Some((8.0, 16)));
        assert_eq!(link_from_gbytes(31.507692), Some((16.0, 16)));
        assert_eq!(link_from_gbytes(7.876923), Some((8.0, 8)));
        assert_eq!(link_from_gbytes(0.25), Some((2.5, 1)));
        assert_eq!(link_from_gbytes(0.0), None);
        // hwloc 2.x on kernels writing "5.0 GT/s PCIe": Gen2 at 128/130.
        assert_eq!(link_from_gbytes(0.615385), Some((5.0, 1)));
        assert_eq!(link_from_gbytes(9.846154), Some((5.0, 16)));
        // Gen2 the way hwloc reads config space or "5 GT/s": 8b/10b (x1 = Gen1 x2: widest).
        assert_eq!(link_from_gbytes(0.5), Some((2.5, 2)));
        assert_eq!(link_from_gbytes(8.0), Some((5.0, 16)));
        // Gen6 x16 at 128/130 (hwloc without the FLIT table) and with FLIT.
        assert_eq!(link_from_gbytes(126.030769), Some((64.0, 16)));
        assert_eq!(link_from_gbytes(121.0), Some((64.0, 16)));
        // 0.3 GB/s: no standard link.
        assert_eq!(link_from_gbytes(0.3), None);
        // Round trip of every standard link keeps the bandwidth.
        for g in &GENERATIONS {
            for w in WIDTHS {
                let bw = pcie_link_gbytes(Some(g.gts), Some(w)).unwrap();
                let (g2, w2) = link_from_gbytes(bw).unwrap();
                let bw2 = pcie_link_gbytes(Some(g2), Some(w2)).unwrap();
                assert!((bw - bw2).abs() < 1e-9, "{} x{w}", g.gts);
            }
        }
        assert_eq!(parse_link_speed("15.753846"), Ok(Some((8.0, 16))));
        assert_eq!(parse_link_speed("0.000000"), Ok(None));
        assert_eq!(
            parse_link_speed("0.3").unwrap_err().to_string(),
            "0.3 GB/s matches no standard PCIe speed and width"
        );
        assert_eq!(
            parse_link_speed("fast").unwrap_err().reason,
            Reason::NotNumber
        );
    }

    #[test]
    fn osdev_types() {
        assert_eq!(parse_osdev_type("3", false), Ok(OsType::OpenFabrics));
        assert_eq!(parse_osdev_type("48", true), Ok(OsType::OpenFabrics));
        assert_eq!(parse_osdev_type("16", true), Ok(OsType::Net));
        assert_eq!(parse_osdev_type("12", true), Ok(OsType::CoProc));
        assert_eq!(parse_osdev_type("0", false), Ok(OsType::Block));
        assert_eq!(parse_osdev_type("1", true), Ok(OsType::Block));
        assert_eq!(
            parse_osdev_type("x", true).unwrap_err().reason,
            Reason::NotInteger
        );
    }
}
