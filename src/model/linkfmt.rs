//! How a link is written for people: `16.0 GT/s x16`, with the mark of a link running below its
//! capability (`x8 of x16`, `Gen3 of Gen5`).
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

/// The link as `16.0 GT/s x16`, plus ` (x8 of x16)` / ` (Gen3 of Gen5)` marks where it runs
/// below its capability.
pub fn link(l: &LinkInfo) -> String {
    let mut s = format!(
        "{} x{}",
        speed(l.current_gts.or(l.max_gts)),
        l.current_width
            .or(l.max_width)
            .map(|w| w.to_string())
            .unwrap_or_else(|| "?".into())
    );
    let marks = degradation_marks(l);
    if !marks.is_empty() {
        s.push_str(&format!(" (DOWN: {})", marks.join(", ")));
    }
    s
}

/// The marks alone: `["x8 of x16", "Gen3 of Gen5"]`.
pub fn degradation_marks(l: &LinkInfo) -> Vec<String> {
    let mut v = Vec::new();
    if l.width_degraded() {
        v.push(format!(
            "x{} of x{}",
            l.current_width.unwrap_or(0),
            l.max_width.unwrap_or(0)
        ));
    }
    if l.speed_degraded() {
        v.push(format!(
            "{} of {}",
            gen_name(l.current_gts.unwrap_or(0.0)),
            gen_name(l.max_gts.unwrap_or(0.0))
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks() {
        let l = LinkInfo {
            current_gts: Some(8.0),
            current_width: Some(8),
            max_gts: Some(32.0),
            max_width: Some(16),
        };
        assert_eq!(link(&l), "8.0 GT/s x8 (DOWN: x8 of x16, Gen3 of Gen5)");
        let ok = LinkInfo {
            current_gts: Some(16.0),
            current_width: Some(16),
            max_gts: Some(16.0),
            max_width: Some(16),
        };
        assert_eq!(link(&ok), "16.0 GT/s x16");
    }
}
