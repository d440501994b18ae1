//! CPU sets as the kernel, `taskset -c`, `numactl -C` and nvidia-smi write them: the cpulist
//! text form (`0-7,16-23`) of `local_cpulist`, `cpulist` and peerpath's own JSON. The grammar is
//! owned here, by the model, because the model's JSON carries CPU sets in this form; the byte
//! parsers of `parse::cpulist` read kernel files through it.

use std::fmt;

/// Largest CPU number accepted: the kernel's largest `NR_CPUS` is 8192 (x86 `MAXSMP`,
/// powerpc); twice that leaves room and bounds every CPU set peerpath holds to 16,384
/// entries, whatever the input says.
pub const MAX_CPU: u32 = (1 << 14) - 1;

/// Why a text is not a cpulist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuListError {
    /// Not the `0-3,8` form (a non-digit, an empty element, a descending range).
    NotCpuList,
    /// A CPU number above [`MAX_CPU`].
    CpuTooLarge,
}

impl CpuListError {
    /// The reason in words, as it follows the quoted value.
    pub fn text(self) -> &'static str {
        match self {
            CpuListError::NotCpuList => "is not a cpulist",
            CpuListError::CpuTooLarge => "names a CPU above 16383 (more than any kernel supports)",
        }
    }
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl std::error::Error for CpuListError {}

/// Parses cpulist text (`0-3,8,10-11`; the `0-31:2/4` stride syntax `cpuset` allows is not used
/// by sysfs and is refused). Returns sorted, de-duplicated CPU numbers; an empty list (a
/// memory-only NUMA node) is a list, not a refusal. Linear in the input: ranges fill a bit set
/// of at most [`MAX_CPU`] + 1 bits, so repeated or overlapping ranges cost nothing more.
pub fn parse_str(s: &str) -> Result<Vec<u32>, CpuListError> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let bad = || CpuListError::NotCpuList;
    let cpu = |t: &str| -> Result<u32, CpuListError> {
        let t = t.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        match t.parse::<u32>() {
            Ok(v) if v <= MAX_CPU => Ok(v),
            _ => Err(CpuListError::CpuTooLarge),
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
    fn text_form() {
        assert_eq!(parse_str("0-3,8\n").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_str(" ").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_str("3-1"), Err(CpuListError::NotCpuList));
        assert_eq!(parse_str("0-16384"), Err(CpuListError::CpuTooLarge));
        assert_eq!(format_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_list(&[]), "");
        let cpus = parse_str("0-7,16-23,40").unwrap();
        assert_eq!(parse_str(&format_list(&cpus)).unwrap(), cpus);
    }
}
