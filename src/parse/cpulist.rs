//! CPU sets: `local_cpulist` / `cpulist` (`0-7,16-23`) and `local_cpus` masks
//! (`ffff0000,0000ffff`, 32-bit words, most significant first).

use super::{Reason, Refusal};

/// Largest CPU number accepted; larger values are treated as corrupt input rather than
/// allocated.
pub const MAX_CPU: u32 = 1 << 20;

/// Parses a cpulist (`0-3,8,10-11`; the `0-31:2/4` stride syntax `cpuset` allows is not used
/// by sysfs and is refused). Returns sorted, de-duplicated CPU numbers; an empty list (a
/// memory-only NUMA node) is a list, not a refusal.
pub fn parse_list(bytes: &[u8]) -> Result<Vec<u32>, Refusal> {
    let s = std::str::from_utf8(bytes)
        .map_err(|_| Refusal::of(bytes, Reason::NotUtf8))?
        .trim();
    let mut out = Vec::new();
    if s.is_empty() {
        return Ok(out);
    }
    let bad = || Refusal::of(bytes, Reason::NotCpuList);
    let cpu = |t: &str| -> Result<u32, Refusal> {
        let v: u32 = t.parse().map_err(|_| bad())?;
        if v > MAX_CPU {
            Err(Refusal::of(bytes, Reason::CpuTooLarge))
        } else {
            Ok(v)
        }
    };
    for part in s.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            let (a, b) = (cpu(a)?, cpu(b)?);
            if a > b {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            out.push(cpu(part)?);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
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
    if words.len() as u32 * 32 > MAX_CPU {
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

/// Formats CPU numbers as a compact cpulist (`0-7,16-23`), the form `taskset -c`, `numactl
/// -C` and nvidia-smi's "CPU Affinity" column use.
pub fn format_list(cpus: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
            parse_mask(",".repeat(40000).as_bytes()).unwrap_err().reason,
            Reason::CpuTooLarge
        );
        assert_eq!(parse_mask(b"0x00000001,,0x00000002").unwrap(), vec![1, 64]);
    }
}
