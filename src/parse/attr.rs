//! Single-value sysfs attributes: `vendor`, `class`, `numa_node`, `current_link_speed`, …

/// Trims a sysfs attribute: UTF-8, surrounding whitespace and the trailing newline removed.
/// Returns `None` for non-UTF-8 or empty content.
pub fn text(bytes: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(bytes).ok()?.trim();
    if s.is_empty() { None } else { Some(s) }
}

/// A `0x`-prefixed (or bare) hexadecimal attribute such as `vendor` (`0x10de`) or `class`
/// (`0x030200`).
pub fn hex_u32(bytes: &[u8]) -> Option<u32> {
    let s = text(bytes)?;
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if s.is_empty() || s.len() > 8 {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

/// A decimal integer attribute such as `current_link_width` (`16`) or `numa_node` (`-1`).
pub fn int(bytes: &[u8]) -> Option<i64> {
    text(bytes)?.parse().ok()
}

/// `numa_node`: `-1` (or any negative value) means the firmware gave no proximity: unknown.
pub fn numa_node(bytes: &[u8]) -> Option<u32> {
    let v = int(bytes)?;
    if (0..=u32::MAX as i64).contains(&v) {
        Some(v as u32)
    } else {
        None
    }
}

/// `current_link_speed` / `max_link_speed`: `"8 GT/s"` (kernel ≤ 5.6), `"16.0 GT/s PCIe"`
/// (≥ 5.7), `"2.5 GT/s"`, or `"Unknown"`. Returns GT/s; `None` for Unknown or garbage.
pub fn link_speed_gts(bytes: &[u8]) -> Option<f64> {
    let s = text(bytes)?;
    let num = s.split_whitespace().next()?;
    let v: f64 = num.parse().ok()?;
    if v.is_finite() && v > 0.0 && s.contains("GT/s") {
        Some(v)
    } else {
        None
    }
}

/// `current_link_width` / `max_link_width`: a lane count. `0` and values above 32 are not
/// real widths (a link that is down reports 0) and read as unknown.
pub fn link_width(bytes: &[u8]) -> Option<u32> {
    let v = int(bytes)?;
    if (1..=32).contains(&v) {
        Some(v as u32)
    } else {
        None
    }
}

/// The PCIe generation for a transfer rate in GT/s.
pub fn pcie_gen(gts: f64) -> Option<u8> {
    let table = [
        (2.5, 1),
        (5.0, 2),
        (8.0, 3),
        (16.0, 4),
        (32.0, 5),
        (64.0, 6),
        (128.0, 7),
    ];
    table
        .iter()
        .find(|(r, _)| (gts - r).abs() < 0.01)
        .map(|&(_, g)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds() {
        assert_eq!(link_speed_gts(b"8 GT/s\n"), Some(8.0));
        assert_eq!(link_speed_gts(b"16.0 GT/s PCIe\n"), Some(16.0));
        assert_eq!(link_speed_gts(b"2.5 GT/s PCIe"), Some(2.5));
        assert_eq!(link_speed_gts(b"Unknown\n"), None);
        assert_eq!(link_speed_gts(b"Unknown speed"), None);
        assert_eq!(link_speed_gts(b""), None);
        assert_eq!(link_speed_gts(b"\xff\xfe"), None);
        assert_eq!(link_speed_gts(b"NaN GT/s"), None);
        assert_eq!(pcie_gen(16.0), Some(4));
        assert_eq!(pcie_gen(3.0), None);
    }

    #[test]
    fn ints() {
        assert_eq!(numa_node(b"-1\n"), None);
        assert_eq!(numa_node(b"1\n"), Some(1));
        assert_eq!(link_width(b"16\n"), Some(16));
        assert_eq!(link_width(b"0\n"), None);
        assert_eq!(hex_u32(b"0x10de\n"), Some(0x10de));
        assert_eq!(hex_u32(b"0x030200\n"), Some(0x030200));
        assert_eq!(hex_u32(b"0x\n"), None);
        assert_eq!(hex_u32(b"0x123456789\n"), None);
    }
}
