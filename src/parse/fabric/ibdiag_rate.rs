//! Port widths and speeds as `ibdiagnet2.db_csv`'s PORTS table prints them.
//!
//! * `LinkWidthActv` / `LinkWidthSup` / `LinkWidthEn`: the PortInfo width bit mask (IB
//!   specification, PortInfo `LinkWidthSupported`): 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x.
//! * `LinkSpeedActv` / `LinkSpeedSup` / `LinkSpeedEn` in ibdiagnet 2.x: not the wire's fields
//!   but one packed 32-bit value (the file's own comment before PORTS: "Byte1 is regular
//!   speeds, Byte2 is extended speeds, Byte3 is mlnx ext speeds, Byte4 is reserved"), the bits
//!   of ibutils2's `IBLinkSpeed` (ibdm `Fabric.h`): byte 1 SDR 0x1, DDR 0x2, QDR 0x4 (PortInfo
//!   `LinkSpeedActive`); byte 2 FDR 0x100, EDR 0x200, HDR 0x400, NDR 0x800
//!   (`LinkSpeedExtActive`); byte 3 FDR10 0x10000, EDR20 0x20000 (Mellanox
//!   `ExtendedPortInfo`); byte 4 XDR 0x1000000 (later ibutils2, `IB_LINK_SPEED_200`). A port
//!   that trained to an extended speed still sets a regular bit (Quantum-2 switch ports at NDR
//!   read 2052 = NDR | QDR): the extended byte wins.
//! * Older files carry `LinkSpeedExtActv` beside a plain PortInfo `LinkSpeedActv` (1/2/4): the
//!   extended value (1 FDR, 2 EDR, 4 HDR, 8 NDR, 32 XDR as earlier releases of this reader took
//!   it) wins when non-zero.

use crate::model::fabric::ib_lane_gbps;

/// Bits of the packed speed field, slowest to fastest within each byte.
const SPEED_BITS: [(u32, &str); 10] = [
    (0x1, "SDR"),
    (0x2, "DDR"),
    (0x4, "QDR"),
    (0x100, "FDR"),
    (0x200, "EDR"),
    (0x400, "HDR"),
    (0x800, "NDR"),
    (0x1_0000, "FDR10"),
    (0x2_0000, "EDR20"),
    (0x100_0000, "XDR"),
];

/// A number as db_csv prints it: decimal, or hex with `0x`.
pub(super) fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Lanes of each width bit.
fn width_bits(mask: u64) -> impl Iterator<Item = u32> {
    [(1, 1), (2, 4), (4, 8), (8, 12), (16, 2)]
        .into_iter()
        .filter(move |(b, _)| mask & b != 0)
        .map(|(_, l)| l)
}

/// `LinkWidthActv` → lanes (one bit set; several: the widest, which cannot happen on a
/// working port).
pub(super) fn width_lanes(code: &str) -> Option<u32> {
    width_bits(number(code)?).max()
}

/// The speed generations a packed field names.
fn speeds(v: u64) -> Vec<&'static str> {
    SPEED_BITS
        .iter()
        .filter(|(b, _)| v & u64::from(*b) != 0)
        .map(|(_, g)| *g)
        .collect()
}

/// The active generation of a packed `LinkSpeedActv`: byte 4, then byte 2 (extended), then
/// byte 3 (Mellanox), then byte 1 (regular); within a byte the fastest bit set.
pub(super) fn packed_active(v: u64) -> Option<&'static str> {
    for mask in [0xff00_0000u64, 0xff00, 0xff_0000, 0xff] {
        if v & mask != 0 {
            return speeds(v & mask).into_iter().last();
        }
    }
    None
}

/// The active generation of an older file's `LinkSpeedExtActv` (PortInfo
/// `LinkSpeedExtActive`); 0 or unknown: `None`, so the regular field decides.
pub(super) fn ext_active(v: u64) -> Option<&'static str> {
    Some(match v {
        1 => "FDR",
        2 => "EDR",
        4 => "HDR",
        8 => "NDR",
        32 => "XDR",
        _ => return None,
    })
}

/// What one port prints of its width and speed: active and supported, the raw fields kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct PortRate {
    /// Active lanes.
    pub lanes: Option<u32>,
    /// Active generation.
    pub generation: Option<&'static str>,
    /// `LinkWidthSup` mask.
    pub width_sup: Option<u64>,
    /// `LinkSpeedSup` packed mask.
    pub speed_sup: Option<u64>,
    /// `LinkWidthActv=… LinkSpeedActv=…` as printed.
    pub raw: String,
}

impl PortRate {
    /// Data rate in Gb/s, where lanes and generation are both known.
    pub fn gbps(&self) -> Option<f64> {
        Some(f64::from(self.lanes?) * ib_lane_gbps(self.generation?)?)
    }
}

/// The fastest rate both ports support: the fastest speed in both `LinkSpeedSup` masks times
/// the widest width in both `LinkWidthSup` masks, with its words (`4xNDR`); `None` unless
/// both ports print both masks and they share a width and a speed.
pub(super) fn common_supported(a: &PortRate, b: &PortRate) -> Option<(f64, String)> {
    let (wa, wb, sa, sb) = (a.width_sup?, b.width_sup?, a.speed_sup?, b.speed_sup?);
    let lanes = width_bits(wa & wb).max()?;
    let (g, lane) = speeds(sa & sb)
        .into_iter()
        .filter_map(|g| Some((g, ib_lane_gbps(g)?)))
        .max_by(|x, y| x.1.total_cmp(&y.1))?;
    Some((
        f64::from(lanes) * lane,
        format!("{lanes}x{g}: LinkWidthSup {wa}/{wb}, LinkSpeedSup 0x{sa:x}/0x{sb:x} (both ends)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_speeds_as_ibdiagnet_2_10_writes_them() {
        // NDR host port 2048, NDR switch port 2052 (NDR | QDR): the extended byte wins.
        assert_eq!(packed_active(2048), Some("NDR"));
        assert_eq!(packed_active(2052), Some("NDR"));
        assert_eq!(packed_active(1028), Some("HDR"));
        assert_eq!(packed_active(4), Some("QDR"));
        assert_eq!(packed_active(0x1_0004), Some("FDR10"));
        assert_eq!(packed_active(0x100_0000), Some("XDR"));
        assert_eq!(packed_active(0), None);
        assert_eq!(width_lanes("2"), Some(4));
        assert_eq!(width_lanes("16"), Some(2));
        assert_eq!(width_lanes("x"), None);
    }

    #[test]
    fn supported_is_what_both_ends_share() {
        let p = |w, s| PortRate {
            width_sup: Some(w),
            speed_sup: Some(s),
            ..PortRate::default()
        };
        // Both NDR-capable (0xf07: SDR…QDR, FDR…NDR), 1x/2x/4x: 4xNDR.
        let (g, raw) = common_supported(&p(19, 0xf07), &p(19, 0xf07)).unwrap();
        assert_eq!(g, 400.0);
        assert!(raw.starts_with("4xNDR"), "{raw}");
        // One end HDR-only: 4xHDR.
        assert_eq!(
            common_supported(&p(19, 0xf07), &p(3, 0x707)).unwrap().0,
            200.0
        );
        // One end does not print its masks: unknown.
        assert_eq!(common_supported(&p(19, 0xf07), &PortRate::default()), None);
    }
}
