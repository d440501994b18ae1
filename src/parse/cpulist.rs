//! CPU sets: `local_cpulist` / `cpulist` (`0-7,16-23`) and `local_cpus` masks
//! (`ffff0000,0000ffff`, 32-bit words, most significant first).

use super::{Reason, Refusal};

/// Largest CPU number accepted: the kernel's largest `NR_CPUS` is 8192 (x86 `MAXSMP`,
/// powerpc); twice that leaves room and bounds every CPU set peerpath holds to 16,384
/// entries, whatever the input says.
pub const MAX_CPU: u32 = (1 << 14) - 1;

/// Parses a cpulist (`0-3,8,10-11`; the `0-31:2/4` stride syntax `cpuset` allows is not used
/// by sysfs and is refused). Returns sorted, de-duplicated CPU numbers; an empty list (a
/// memory-only NUMA node) is a list, not a refusal. Linear in the input: ranges fill a bit set
/// of at most [`MAX_CPU`] + 1 bits, so repeated or overlapping ranges cost nothing more.
pub fn parse_list(bytes: &[u8]) -> Result<Vec<u32>, Refusal> {
    let s = std::str::from_utf8(bytes)
        .map_err(|_| Refusal::of(bytes, Reason::NotUtf8))?
        .trim();
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let bad = || Refusal::of(bytes, Reason::NotCpuList);
    let cpu = |t: &str| -> Result<u32, Refusal> {
        let t = t.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        match t.parse::<u32>() {
            Ok(v) if v <= MAX_CPU => Ok(v),
            _ => Err(Refusal::of(bytes, Reason::CpuTooLarge)),
        }
    };
    let mut bits: Vec<u64> = Vec::new();
    let mut set = |a: u32, b: u32| {
        let need = (b as usize / 64) + 1;
        if bits.len() < need {
            bits.resize(need, 0);
        }
        let (mut i, end) = (a as usize, b as usize + 1);
        while i < end {
            let (w, bit) = (i / 64, i % 64);
            let n = (64 - bit).min(end - i);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            bits[w] |= mask;
            i += n;
        }
    };
    for part in s.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            let (a, b) = (cpu(a)?, cpu(b)?);
            if a > b {
                return Err(bad());
            }
            set(a, b);
        } else {
            let c = cpu(part)?;
            set(c, c);
        }
    }
    let mut out = Vec::new();
    for (w, &word) in bits.iter().enumerate() {
        let mut x = word;
        while x != 0 {
            let bit = x.trailing_zeros();
            out.push(w as u32 * 64 + bit);
            x &= x - 1;
        }
    }
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
