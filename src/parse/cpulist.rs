//! CPU sets: `local_cpulist` / `cpulist` (`0-7,16-23`) and `local_cpus` masks
//! (`ffff0000,0000ffff`, 32-bit words, most significant first).

/// Largest CPU number accepted; larger values are treated as corrupt input rather than
/// allocated.
pub const MAX_CPU: u32 = 1 << 20;

/// Parses a cpulist (`0-3,8,10-11`, also `0-31:2/4` stride syntax as `cpuset` allows is not
/// used by sysfs and is rejected). Returns sorted, de-duplicated CPU numbers.
pub fn parse_list(bytes: &[u8]) -> Option<Vec<u32>> {
    let s = std::str::from_utf8(bytes).ok()?.trim();
    let mut out = Vec::new();
    if s.is_empty() {
        return Some(out);
    }
    for part in s.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            let a: u32 = a.parse().ok()?;
            let b: u32 = b.parse().ok()?;
            if a > b || b > MAX_CPU {
                return None;
            }
            out.extend(a..=b);
        } else {
            let a: u32 = part.parse().ok()?;
            if a > MAX_CPU {
                return None;
            }
            out.push(a);
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// Parses a `local_cpus` mask: comma-separated 32-bit hex words, most significant first. Also
/// reads the same form as hwloc and NCCL write it: a `0x` prefix on a word, and an empty word
/// standing for zero (`0x00000001,,0x00000002`); sysfs writes neither.
pub fn parse_mask(bytes: &[u8]) -> Option<Vec<u32>> {
    let s = std::str::from_utf8(bytes).ok()?.trim();
    if s.is_empty() {
        return None;
    }
    let words: Vec<&str> = s.split(',').collect();
    if words.len() as u32 * 32 > MAX_CPU {
        return None;
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
        if w.len() > 8 {
            return None;
        }
        let v = u32::from_str_radix(w, 16).ok()?;
        for bit in 0..32 {
            if v & (1 << bit) != 0 {
                out.push(i as u32 * 32 + bit);
            }
        }
    }
    Some(out)
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
        assert!(parse_list(b"3-1").is_none());
        assert!(parse_list(b"0-4294967295").is_none());
        assert!(parse_list(b"a").is_none());
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
        assert!(parse_mask(b"zz").is_none());
        assert!(parse_mask(b"").is_none());
        assert_eq!(parse_mask(b"0x00000001,,0x00000002").unwrap(), vec![1, 64]);
    }
}
