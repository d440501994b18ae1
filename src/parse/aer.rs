//! AER counters: `aer_dev_correctable`, `aer_dev_nonfatal`, `aer_dev_fatal` (kernel ≥ 4.19).
//! Each line is `"<name> <count>"`; names differ by kernel (`RxErr` / `Receiver Error`), so
//! lines are split on the last whitespace and kept by name.

use super::{Reason, Refusal};
use crate::model::aer::AerCounters;

/// Parses one AER counter file. Refuses content that is not UTF-8 or has no counter line.
pub fn parse(bytes: &[u8]) -> Result<AerCounters, Refusal> {
    let s = std::str::from_utf8(bytes).map_err(|_| Refusal::of(bytes, Reason::NotUtf8))?;
    let mut out = AerCounters::default();
    for line in s.lines() {
        let line = line.trim();
        let Some((name, val)) = line.rsplit_once(char::is_whitespace) else {
            continue;
        };
        let Ok(v) = val.parse::<u64>() else { continue };
        let name = name.trim();
        if name.starts_with("TOTAL_ERR") {
            out.total = Some(v);
        } else if v == 0 {
            out.zero_counters += 1;
        } else {
            out.counters.push((name.to_string(), v));
        }
    }
    out.counters.shrink_to_fit();
    if out.counters.is_empty() && out.total.is_none() && out.zero_counters == 0 {
        Err(Refusal::of(bytes, Reason::NoCounters))
    } else {
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_styles() {
        let a = parse(b"RxErr 0\nBadTLP 3\nBadDLLP 0\nTOTAL_ERR_COR 3\n").unwrap();
        assert_eq!(a.total, Some(3));
        assert_eq!(
            a.nonzero().collect::<Vec<_>>(),
            vec![&("BadTLP".to_string(), 3)]
        );
        let b = parse(b"Receiver Error 2\nBad TLP 0\nRELAY_NUM Rollover 0\n").unwrap();
        assert_eq!(b.counters, vec![("Receiver Error".to_string(), 2)]);
        assert_eq!(b.zero_counters, 2);
        assert_eq!(b.total_or_sum(), 2);
        assert_eq!(parse(b"garbage").unwrap_err().reason, Reason::NoCounters);
        assert_eq!(parse(b"\x00\xff").unwrap_err().reason, Reason::NotUtf8);
    }
}
