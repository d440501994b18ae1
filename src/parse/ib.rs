//! `/sys/class/infiniband/<dev>/ports/<p>/{state,phys_state,rate,link_layer}` formats
//! (`drivers/infiniband/core/sysfs.c`).

use super::{Reason, Refusal, attr};

/// Parses `state` / `phys_state`: `"4: ACTIVE"` → `(4, "ACTIVE")`.
pub fn numbered_state(bytes: &[u8]) -> Result<(u32, String), Refusal> {
    let s = attr::text(bytes)?;
    s.split_once(':')
        .and_then(|(n, name)| Some((n.trim().parse().ok()?, name.trim().to_string())))
        .ok_or_else(|| Refusal::of(bytes, Reason::NotPortState))
}

/// Parses `rate`: `"400 Gb/sec (4X NDR)"` → 400.0 Gb/s. Also `"2.5 Gb/sec (1X SDR)"`.
pub fn rate_gbps(bytes: &[u8]) -> Result<f64, Refusal> {
    let s = attr::text(bytes)?;
    match s.split_whitespace().next().map(str::parse::<f64>) {
        Some(Ok(v)) if v.is_finite() && v >= 0.0 && s.contains("Gb/sec") => Ok(v),
        _ => Err(Refusal::of(bytes, Reason::NotRate)),
    }
}

/// The name of a port state number (`enum ib_port_state`), as the kernel writes it after the
/// number in `state`: 1 `DOWN`, 2 `INIT`, 3 `ARMED`, 4 `ACTIVE`, 5 `ACTIVE_DEFER`, else `NOP`.
pub fn port_state_name(n: u32) -> &'static str {
    match n {
        1 => "DOWN",
        2 => "INIT",
        3 => "ARMED",
        4 => "ACTIVE",
        5 => "ACTIVE_DEFER",
        _ => "NOP",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        assert_eq!(numbered_state(b"4: ACTIVE\n"), Ok((4, "ACTIVE".into())));
        assert_eq!(numbered_state(b"5: LinkUp\n"), Ok((5, "LinkUp".into())));
        assert_eq!(
            numbered_state(b"ACTIVE").unwrap_err().to_string(),
            "\"ACTIVE\" is not a port state (N: NAME)"
        );
        assert_eq!(
            numbered_state(b"x: DOWN").unwrap_err().reason,
            Reason::NotPortState
        );
        assert_eq!(rate_gbps(b"400 Gb/sec (4X NDR)\n"), Ok(400.0));
        assert_eq!(rate_gbps(b"2.5 Gb/sec (1X SDR)\n"), Ok(2.5));
        assert_eq!(rate_gbps(b"fast").unwrap_err().reason, Reason::NotRate);
        assert_eq!(rate_gbps(b"").unwrap_err().reason, Reason::Empty);
        assert_eq!(port_state_name(4), "ACTIVE");
        assert_eq!(port_state_name(9), "NOP");
    }
}
