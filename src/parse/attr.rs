//! Single-value sysfs attributes: `vendor`, `class`, `numa_node`, `current_link_speed`, …

use super::{Reason, Refusal};

/// Trims a sysfs attribute: UTF-8, surrounding whitespace and the trailing newline removed.
/// Refuses non-UTF-8 ([`Reason::NotUtf8`]) and blank ([`Reason::Empty`]) content.
pub fn text(bytes: &[u8]) -> Result<&str, Refusal> {
    let s = std::str::from_utf8(bytes)
        .map_err(|_| Refusal::of(bytes, Reason::NotUtf8))?
        .trim();
    if s.is_empty() {
        Err(Refusal::of(bytes, Reason::Empty))
    } else {
        Ok(s)
    }
}

/// A `0x`-prefixed (or bare) hexadecimal attribute such as `vendor` (`0x10de`) or `class`
/// (`0x030200`), at most 32 bits.
pub fn hex_u32(bytes: &[u8]) -> Result<u32, Refusal> {
    let s = text(bytes)?;
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Refusal::of(bytes, Reason::NotHex));
    }
    if digits.trim_start_matches('0').len() > 8 {
        return Err(Refusal::of(bytes, Reason::TooWide(32)));
    }
    u32::from_str_radix(
        digits
            .get(digits.len().saturating_sub(8)..)
            .unwrap_or(digits),
        16,
    )
    .map_err(|_| Refusal::of(bytes, Reason::NotHex))
}

/// A 16-bit hexadecimal attribute: `vendor`, `device`, `subsystem_vendor`, `subsystem_device`.
pub fn hex_u16(bytes: &[u8]) -> Result<u16, Refusal> {
    u16::try_from(hex_u32(bytes)?).map_err(|_| Refusal::of(bytes, Reason::TooWide(16)))
}

/// An 8-bit hexadecimal attribute: `revision`.
pub fn hex_u8(bytes: &[u8]) -> Result<u8, Refusal> {
    u8::try_from(hex_u32(bytes)?).map_err(|_| Refusal::of(bytes, Reason::OutOfRange))
}

/// A decimal integer attribute such as `current_link_width` (`16`) or `numa_node` (`-1`).
pub fn int(bytes: &[u8]) -> Result<i64, Refusal> {
    text(bytes)?
        .parse()
        .map_err(|_| Refusal::of(bytes, Reason::NotInteger))
}

/// An unsigned decimal integer of at most 32 bits (an IOMMU group number).
pub fn uint(bytes: &[u8]) -> Result<u32, Refusal> {
    u32::try_from(int(bytes)?).map_err(|_| Refusal::of(bytes, Reason::OutOfRange))
}

/// `numa_node`: `-1` (or any negative value) is the kernel's way of saying the firmware gave
/// no proximity: `Ok(None)`, unknown, not a refusal.
pub fn numa_node(bytes: &[u8]) -> Result<Option<u32>, Refusal> {
    let v = int(bytes)?;
    if v < 0 {
        return Ok(None);
    }
    u32::try_from(v)
        .map(Some)
        .map_err(|_| Refusal::of(bytes, Reason::OutOfRange))
}

/// `current_link_speed` / `max_link_speed`: `"8 GT/s"` (kernel ≤ 5.6), `"16.0 GT/s PCIe"`
/// (≥ 5.7), `"2.5 GT/s"`. Returns GT/s. The kernel writes `"Unknown"` when the Link Speed
/// field holds no generation (a device powered off or a link that never trained); that is
/// refused like any other text that is not a speed, so the scan says which device it was.
pub fn link_speed_gts(bytes: &[u8]) -> Result<f64, Refusal> {
    let s = text(bytes)?;
    let v = s
        .split_whitespace()
        .next()
        .and_then(|n| n.parse::<f64>().ok());
    match v {
        Some(v) if v.is_finite() && v > 0.0 && s.contains("GT/s") => Ok(v),
        _ => Err(Refusal::of(bytes, Reason::NotLinkSpeed)),
    }
}

/// `current_link_width` / `max_link_width`: a lane count. `0` is what a link that is down
/// reports (every empty slot's root port): `Ok(None)`, no refusal. Other values outside 1..=32
/// are refused.
pub fn link_width(bytes: &[u8]) -> Result<Option<u32>, Refusal> {
    match int(bytes)? {
        0 => Ok(None),
        v @ 1..=32 => Ok(Some(v as u32)),
        _ => Err(Refusal::of(bytes, Reason::NotLaneCount)),
    }
}

/// A network interface's `speed` in Mb/s. Drivers write `-1` when the speed is unknown (no
/// carrier): `Ok(None)`.
pub fn net_speed_mbps(bytes: &[u8]) -> Result<Option<u64>, Refusal> {
    let v = int(bytes)?;
    Ok(u64::try_from(v).ok())
}

/// A sysfs flag written as `%d` of a truth value: `0` or `1` (a netdev's `carrier`, a Cassini's
/// `properties/link`). Anything else is refused ([`Reason::OutOfRange`] for other integers).
pub fn flag01(bytes: &[u8]) -> Result<bool, Refusal> {
    match int(bytes)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Refusal::of(bytes, Reason::OutOfRange)),
    }
}

/// A NUMA node's `distance` row: whitespace-separated decimal distances (`10 21`).
pub fn distances(bytes: &[u8]) -> Result<Vec<u32>, Refusal> {
    let s = text(bytes)?;
    s.split_whitespace()
        .map(|t| t.parse::<u32>())
        .collect::<Result<Vec<u32>, _>>()
        .map_err(|_| Refusal::of(bytes, Reason::NotDistances))
}

/// A PCI address (`0000:17:00.0`, as sysfs names devices and hwloc's `pci_busid` and NCCL's
/// `busid` write them).
pub fn pci_address(s: &str) -> Result<crate::model::Bdf, Refusal> {
    s.parse()
        .map_err(|_| Refusal::of(s.as_bytes(), Reason::NotPciAddress))
}

/// The PCIe generation for a transfer rate in GT/s (from [`crate::model::pcie::GENERATIONS`]).
pub fn pcie_gen(gts: f64) -> Option<u8> {
    crate::model::pcie::by_rate(gts).map(|g| g.generation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why<T: std::fmt::Debug>(r: Result<T, Refusal>) -> Reason {
        r.unwrap_err().reason
    }

    #[test]
    fn flags() {
        assert_eq!(flag01(b"1\n"), Ok(true));
        assert_eq!(flag01(b"0\n"), Ok(false));
        assert_eq!(why(flag01(b"2\n")), Reason::OutOfRange);
        assert_eq!(why(flag01(b"up\n")), Reason::NotInteger);
    }

    #[test]
    fn speeds() {
        assert_eq!(link_speed_gts(b"8 GT/s\n"), Ok(8.0));
        assert_eq!(link_speed_gts(b"16.0 GT/s PCIe\n"), Ok(16.0));
        assert_eq!(link_speed_gts(b"2.5 GT/s PCIe"), Ok(2.5));
        assert_eq!(
            link_speed_gts(b"Unknown\n").unwrap_err().to_string(),
            "\"Unknown\" is not a link speed"
        );
        assert_eq!(why(link_speed_gts(b"Unknown speed")), Reason::NotLinkSpeed);
        assert_eq!(why(link_speed_gts(b"")), Reason::Empty);
        assert_eq!(why(link_speed_gts(b"\xff\xfe")), Reason::NotUtf8);
        assert_eq!(why(link_speed_gts(b"NaN GT/s")), Reason::NotLinkSpeed);
        assert_eq!(pcie_gen(16.0), Some(4));
        assert_eq!(pcie_gen(3.0), None);
    }

    #[test]
    fn ints() {
        assert_eq!(numa_node(b"-1\n"), Ok(None));
        assert_eq!(numa_node(b"1\n"), Ok(Some(1)));
        assert_eq!(why(numa_node(b"99999999999\n")), Reason::OutOfRange);
        assert_eq!(why(numa_node(b"one\n")), Reason::NotInteger);
        assert_eq!(link_width(b"16\n"), Ok(Some(16)));
        assert_eq!(link_width(b"0\n"), Ok(None));
        assert_eq!(why(link_width(b"63\n")), Reason::NotLaneCount);
        assert_eq!(why(link_width(b"x16\n")), Reason::NotInteger);
        assert_eq!(uint(b"17"), Ok(17));
        assert_eq!(why(uint(b"-3")), Reason::OutOfRange);
        assert_eq!(net_speed_mbps(b"-1\n"), Ok(None));
        assert_eq!(net_speed_mbps(b"100000\n"), Ok(Some(100000)));
        assert_eq!(why(net_speed_mbps(b"fast\n")), Reason::NotInteger);
    }

    #[test]
    fn hex() {
        assert_eq!(hex_u32(b"0x10de\n"), Ok(0x10de));
        assert_eq!(hex_u32(b"0x030200\n"), Ok(0x030200));
        assert_eq!(hex_u32(b"10de"), Ok(0x10de));
        assert_eq!(why(hex_u32(b"0x\n")), Reason::NotHex);
        assert_eq!(why(hex_u32(b"0x+1\n")), Reason::NotHex);
        assert_eq!(why(hex_u32(b"0x123456789\n")), Reason::TooWide(32));
        assert_eq!(hex_u16(b"0x15b3\n"), Ok(0x15b3));
        assert_eq!(why(hex_u16(b"0x10000\n")), Reason::TooWide(16));
        assert_eq!(hex_u8(b"0xa1\n"), Ok(0xa1));
        assert_eq!(why(hex_u8(b"0x100\n")), Reason::OutOfRange);
        assert_eq!(why(hex_u32(b"  \n")), Reason::Empty);
    }

    #[test]
    fn addresses() {
        assert_eq!(
            pci_address("0000:17:00.0").unwrap().to_string(),
            "0000:17:00.0"
        );
        assert_eq!(
            pci_address("nope").unwrap_err().to_string(),
            "\"nope\" is not a PCI address"
        );
    }

    #[test]
    fn distance_rows() {
        assert_eq!(distances(b"10 21\n"), Ok(vec![10, 21]));
        assert_eq!(why(distances(b"10 x\n")), Reason::NotDistances);
    }
}
