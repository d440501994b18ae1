//! How a link is written for people: `16.0 GT/s x16`, `link down`, and the marks of a link
//! running below what both its ends support (`x8 of x16`, `Gen3 of Gen5`).
//!
//! Data: a device's [`LinkInfo`] (sysfs `current_link_speed`/`max_link_speed` and widths). It
//! lives in the model, not in a renderer, because analyses word their notes with it too.

use crate::model::LinkInfo;
use crate::model::pcie;

/// `8.0 GT/s` / `?`.
pub fn speed(gts: Option<f64>) -> String {
    match gts {
        Some(g) => format!("{g:.1} GT/s"),
        None => "? GT/s".into(),
    }
}

/// `Gen4` or `16.0 GT/s` when the rate is not a standard generation.
pub fn gen_name(gts: f64) -> String {
    match pcie::by_rate(gts).map(|g| g.generation) {
        Some(g) => format!("Gen{g}"),
        None => format!("{gts:.1} GT/s"),
    }
}

/// The link as `16.0 GT/s x16` (the negotiated state, else the capability when only that is
/// known); a negotiated width of 0 reads `link down` (with the capability when known). Whether
/// the link runs below what both its ends support is not this function's business: that is
/// [`crate::analysis::paths::link`]'s one rule, and [`marks`] words its verdict.
pub fn link(l: &LinkInfo) -> String {
    if l.current_width == Some(0) {
        return match (l.max_gts, l.max_width) {
            (Some(g), Some(w)) if w > 0 => format!("link down, max {} x{w}", speed(Some(g))),
            _ => "link down".into(),
        };
    }
    format!(
        "{} x{}",
        speed(l.current_gts.or(l.max_gts)),
        l.current_width
            .or(l.max_width)
            .map(|w| w.to_string())
            .unwrap_or_else(|| "?".into())
    )
}

/// The marks of a link running below what both its ends support: `x8 of x16`, `Gen3 of Gen5`
/// (`(negotiated, shared capability)` pairs, as [`crate::analysis::paths::LinkHealth`] gives
/// them), comma-separated.
pub fn marks(width: Option<(u32, u32)>, speed: Option<(f64, f64)>) -> String {
    let mut v = Vec::new();
    if let Some((c, m)) = width {
        v.push(format!("x{c} of x{m}"));
    }
    if let Some((c, m)) = speed {
        v.push(format!("{} of {}", gen_name(c), gen_name(m)));
    }
    v.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text() {
        let l = LinkInfo {
            current_gts: Some(8.0),
            current_width: Some(8),
            max_gts: Some(32.0),
            max_width: Some(16),
        };
        assert_eq!(link(&l), "8.0 GT/s x8");
        assert_eq!(
            marks(Some((8, 16)), Some((8.0, 32.0))),
            "x8 of x16, Gen3 of Gen5"
        );
        let down = LinkInfo {
            current_gts: None,
            current_width: Some(0),
            max_gts: Some(32.0),
            max_width: Some(16),
        };
        assert_eq!(link(&down), "link down, max 32.0 GT/s x16");
        let ok = LinkInfo {
            current_gts: Some(16.0),
            current_width: Some(16),
            max_gts: Some(16.0),
            max_width: Some(16),
        };
        assert_eq!(link(&ok), "16.0 GT/s x16");
    }
}
