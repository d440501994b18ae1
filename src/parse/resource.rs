//! `/sys/bus/pci/devices/<bdf>/resource`: one line per resource, `start end flags` in
//! `0x%016llx` form. Lines 0–5 are the BARs, 6 the expansion ROM, then bridge windows.

use super::{Reason, Refusal};
use crate::model::bar::Bar;

/// IORESOURCE_MEM.
pub const IORESOURCE_MEM: u64 = 0x200;
/// IORESOURCE_PREFETCH.
pub const IORESOURCE_PREFETCH: u64 = 0x2000;
/// IORESOURCE_MEM_64.
pub const IORESOURCE_MEM_64: u64 = 0x0010_0000;

/// Parses the BAR lines (0–5) of a `resource` file; unassigned (all-zero) lines are skipped,
/// malformed lines are skipped too and returned as refusals, one per line.
pub fn parse(bytes: &[u8]) -> (Vec<Bar>, Vec<Refusal>) {
    let mut bars = Vec::new();
    let mut bad = Vec::new();
    let Ok(s) = std::str::from_utf8(bytes) else {
        return (bars, vec![Refusal::of(bytes, Reason::NotUtf8)]);
    };
    for (i, line) in s.lines().take(6).enumerate() {
        let f: Vec<Option<u64>> = line
            .split_whitespace()
            .map(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok())
            .collect();
        let (Some(Some(start)), Some(Some(end)), Some(Some(flags))) =
            (f.first(), f.get(1), f.get(2))
        else {
            bad.push(Refusal::of(line.as_bytes(), Reason::NotResourceLine));
            continue;
        };
        if *start == 0 && *end == 0 {
            continue;
        }
        if end < start {
            bad.push(Refusal::of(line.as_bytes(), Reason::NotResourceLine));
            continue;
        }
        bars.push(Bar {
            index: i as u8,
            size: end - start + 1,
            memory: flags & IORESOURCE_MEM != 0,
            prefetchable: flags & IORESOURCE_PREFETCH != 0,
            is_64bit: flags & IORESOURCE_MEM_64 != 0,
        });
    }
    (bars, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_bars() {
        let s = b"0x00000000fa000000 0x00000000faffffff 0x0000000000040200\n\
0x000038bfe0000000 0x000038bfefffffff 0x000000000014220c\n\
0x0000000000000000 0x0000000000000000 0x0000000000000000\n\
0x000038bff0000000 0x000038bff1ffffff 0x000000000014220c\n";
        let (bars, bad) = parse(s);
        assert!(bad.is_empty());
        assert_eq!(bars.len(), 3);
        assert_eq!(bars[1].index, 1);
        assert_eq!(bars[1].size, 256 << 20);
        assert!(bars[1].prefetchable && bars[1].is_64bit);
        assert_eq!(bars[0].size, 16 << 20);
    }

    #[test]
    fn garbage() {
        let (bars, bad) = parse(b"zz\n0x10 0x01 0x200\n");
        assert!(bars.is_empty());
        assert_eq!(bad.len(), 2);
        assert_eq!(
            bad[0].to_string(),
            "\"zz\" is not a resource line (start end flags)"
        );
        assert_eq!(bad[1].reason, Reason::NotResourceLine);
        let (_, bad) = parse(b"\xff\n");
        assert_eq!(bad[0].reason, Reason::NotUtf8);
    }
}
