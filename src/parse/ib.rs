//! `/sys/class/infiniband/<dev>/ports/<p>/{state,phys_state,rate,link_layer}` formats
//! (`drivers/infiniband/core/sysfs.c`).

/// Parses `state` / `phys_state`: `"4: ACTIVE"` → `(4, "ACTIVE")`.
pub fn numbered_state(bytes: &[u8]) -> Option<(u32, String)> {
    let s = crate::parse::attr::text(bytes)?;
    let (n, name) = s.split_once(':')?;
    Some((n.trim().parse().ok()?, name.trim().to_string()))
}

/// Parses `rate`: `"400 Gb/sec (4X NDR)"` → 400.0 Gb/s. Also `"2.5 Gb/sec (1X SDR)"`.
pub fn rate_gbps(bytes: &[u8]) -> Option<f64> {
    let s = crate::parse::attr::text(bytes)?;
    let v: f64 = s.split_whitespace().next()?.parse().ok()?;
    if v.is_finite() && v >= 0.0 && s.contains("Gb/sec") {
        Some(v)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        assert_eq!(numbered_state(b"4: ACTIVE\n"), Some((4, "ACTIVE".into())));
        assert_eq!(numbered_state(b"5: LinkUp\n"), Some((5, "LinkUp".into())));
        assert_eq!(numbered_state(b"ACTIVE"), None);
        assert_eq!(rate_gbps(b"400 Gb/sec (4X NDR)\n"), Some(400.0));
        assert_eq!(rate_gbps(b"2.5 Gb/sec (1X SDR)\n"), Some(2.5));
        assert_eq!(rate_gbps(b"fast"), None);
    }
}
