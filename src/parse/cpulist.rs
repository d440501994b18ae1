//! CPU sets: `local_cpulist` / `cpulist` (`0-7,16-23`) and `local_cpus` masks
//! (`ffff0000,0000ffff`, 32-bit words, most significant first).

use super::{Reason, Refusal};
use crate::model::cpulist::{self, CpuListError, MAX_CPU};

/// Parses a cpulist file (`0-3,8,10-11`; the `0-31:2/4` stride syntax `cpuset` allows is not
/// used by sysfs and is refused) through the model's grammar ([`cpulist::parse_str`]): sorted,
/// de-duplicated CPU numbers; an empty list (a memory-only NUMA node) is a list, not a refusal.
pub fn parse_list(bytes: &[u8]) -> Result<Vec<u32>, Refusal> {
    let s = std::str::from_utf8(bytes).map_err(|_| Refusal::of(bytes, Reason::NotUtf8))?;
    cpulist::parse_str(s).map_err(|e| {
        Refusal::of(
            bytes,
            match e {
                CpuListError::NotCpuList => Reason::NotCpuList,
                CpuListError::CpuTooLarge => Reason::CpuTooLarge,
            },
        )
    })
}

/// Parses a `local_cpus` mask: comma-separated 32-bit hex words, most significant first. Also
/// reads the same form as hwloc and NCCL write it: a `0x` prefix on a word, and an empty word
/// standing for zero (`0x00000001,,0x00000002`); sysfs writes neither.
pub fn parse_mask(bytes: &[u8]) -> Result<Vec<u32>, Refusal> {
    let s = std::str::from_utf8(bytes)
        .map_err(|_| Refusal::of(bytes, Reason::NotUtf8))?
        .trim();
    if s.is_empty() {
        return Err(Refusal::of(bytes, Reason::Empty));
    }
    let words: Vec<&str> = s.split(',').collect();
    if words.len() as u64 * 32 > MAX_CPU as u64 + 1 {
        return Err(Refusal::of(bytes, Reason::CpuTooLarge));
    }
    let mut out = Vec::new();
    for (i, w) in words.iter().rev().enumerate() {
        let w = w.trim();
        let w = w
            .strip_prefix("0x")
            .or_else(|| w.strip_prefix("0X"))
            .unwrap_or(w);
        if w.is_empty() {
            continue;
        }
        let v = (w.len() <= 8 && w.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(w, 16).ok())
            .flatten()
            .ok_or_else(|| Refusal::of(bytes, Reason::NotCpuMask))?;
        for bit in 0..32 {
            if v & (1 << bit) != 0 {
                out.push(i as u32 * 32 + bit);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cpulist::format_list;

    #[test]
    fn lists() {
        assert_eq!(parse_list(b"0-3,8\n").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_list(b"\n").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_list(b"3-1").unwrap_err().reason, Reason::NotCpuList);
        assert_eq!(
            parse_list(b"0-4294967295").unwrap_err().reason,
            Reason::CpuTooLarge
        );
        assert_eq!(
            parse_list(b"0-16384").unwrap_err().reason,
            Reason::CpuTooLarge
        );
        assert_eq!(parse_list(b"0-16383").unwrap().len(), 16384);
        // A megabyte of overlapping full ranges is linear and bounded, not 10^11 entries.
        let huge = "0-16383,".repeat(1 << 17);
        let t = std::time::Instant::now();
        assert_eq!(
            parse_list(huge.trim_end_matches(',').as_bytes())
                .unwrap()
                .len(),
            16384
        );
        assert!(t.elapsed().as_secs() < 5);
        assert_eq!(parse_list(b"62-66,1").unwrap(), vec![1, 62, 63, 64, 65, 66]);
        assert_eq!(parse_list(b"+3").unwrap_err().reason, Reason::NotCpuList);
        assert_eq!(parse_list(b"0-").unwrap_err().reason, Reason::NotCpuList);
        assert_eq!(
            parse_list(b"a").unwrap_err().to_string(),
            "\"a\" is not a cpulist"
        );
        assert_eq!(parse_list(b"\xff").unwrap_err().reason, Reason::NotUtf8);
        assert_eq!(format_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_list(&[]), "");
    }

    #[test]
    fn masks() {
        assert_eq!(
            parse_mask(b"00000000,0000000f\n").unwrap(),
            vec![0, 1, 2, 3]
        );
        assert_eq!(parse_mask(b"00000001,00000000").unwrap(), vec![32]);
        assert_eq!(parse_mask(b"ff00").unwrap(), (8..16).collect::<Vec<_>>());
        assert_eq!(parse_mask(b"zz").unwrap_err().reason, Reason::NotCpuMask);
        assert_eq!(
            parse_mask(b"1ffffffff").unwrap_err().reason,
            Reason::NotCpuMask
        );
        assert_eq!(parse_mask(b"").unwrap_err().reason, Reason::Empty);
        assert_eq!(
            parse_mask(",".repeat(512).as_bytes()).unwrap_err().reason,
            Reason::CpuTooLarge
        );
        assert_eq!(parse_mask(b"0x00000001,,0x00000002").unwrap(), vec![1, 64]);
    }
}
