//! The KFD topology's `properties` files (`/sys/class/kfd/kfd/topology/nodes/<N>/properties`,
//! `io_links/<M>/properties`, `mem_banks/<M>/properties`): one `name value` pair per line, the
//! value a decimal integer (`sysfs_show_32bit_prop`/`sysfs_show_64bit_prop` in Linux
//! `drivers/gpu/drm/amd/amdkfd/kfd_topology.c`, which print `"%s %u\n"` / `"%s %llu\n"`).

use super::{LineRefusals, Reason, Refusal};

/// The pairs of one `properties` file, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KfdProperties(pub Vec<(String, u64)>);

impl KfdProperties {
    /// The value of `name`, when the file has it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// The value of `name` when it fits in 32 bits.
    pub fn get_u32(&self, name: &str) -> Option<u32> {
        self.get(name).and_then(|v| u32::try_from(v).ok())
    }
}

/// Parses a `properties` file. Lines that are not `name value` with a decimal value are
/// returned as refusals beside the pairs that parsed (one bad line does not hide the others);
/// a file that is not UTF-8 or holds no pair at all is refused.
pub fn properties(b: &[u8]) -> Result<(KfdProperties, LineRefusals), Refusal> {
    let s = std::str::from_utf8(b).map_err(|_| Refusal::of(b, Reason::NotUtf8))?;
    if s.trim().is_empty() {
        return Err(Refusal::of(b, Reason::Empty));
    }
    let mut out = Vec::new();
    let mut bad = LineRefusals::default();
    for (n, line) in s.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let n = n + 1;
        let mut it = line.split_whitespace();
        let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) else {
            bad.push(n, || Refusal::of(line.as_bytes(), Reason::NotKfdProperty));
            continue;
        };
        match v.parse::<u64>() {
            Ok(n) => out.push((k.to_string(), n)),
            // `drm_render_minor` of a CPU node is -1 printed through `%d` on older kernels:
            // a known "none", not a refusal.
            Err(_) if v.parse::<i64>().is_ok_and(|n| n < 0) => {}
            Err(_) => bad.push(n, || Refusal::of(line.as_bytes(), Reason::NotKfdProperty)),
        }
    }
    if out.is_empty() {
        return Err(Refusal::of(b, Reason::NotKfdProperty));
    }
    Ok((KfdProperties(out), bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_and_link_files() {
        let (p, bad) = properties(
            b"cpu_cores_count 0\nsimd_count 1216\nlocation_id 3072\ndomain 0\nhive_id 1746513466383426046\ndrm_render_minor 128\n",
        )
        .unwrap();
        assert!(bad.is_empty());
        assert_eq!(p.get("location_id"), Some(3072));
        assert_eq!(p.get("hive_id"), Some(1746513466383426046));
        assert_eq!(p.get_u32("hive_id"), None, "64-bit value");
        assert_eq!(p.get("missing"), None);
        let (p, bad) = properties(b"type 11\nnode_to 3\nweight x\nflags 2147483649\n").unwrap();
        assert_eq!(p.get("flags"), Some(0x8000_0001));
        assert_eq!(bad.count, 1);
        assert_eq!(bad.first[0].0, 3);
        assert_eq!(
            bad.first[0].1.to_string(),
            "\"weight x\" is not a KFD property line (name value)"
        );
        let (p, bad) = properties(b"drm_render_minor -1\ncpu_cores_count 64\n").unwrap();
        assert!(bad.is_empty() && p.get("drm_render_minor").is_none());
        assert!(properties(b"").unwrap_err().is_empty());
        assert!(properties(b"\xff\xfe").is_err());
        assert!(properties(b"garbage\n").is_err());
    }
}
