//! The node picture as PNG: the SVG of [`super::svg`] rasterised in-process by resvg, with the
//! font loaded explicitly from a file (no system font lookup, so the output does not depend on
//! fontconfig): `--font FILE`, else DejaVu Sans Mono from the usual distribution paths
//! (Debian/Ubuntu package `fonts-dejavu-core`).

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where DejaVu Sans Mono (regular, bold) is installed on common distributions.
pub const FONT_CANDIDATES: [(&str, &str); 4] = [
    (
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf",
    ),
    (
        "/usr/share/fonts/TTF/DejaVuSansMono.ttf",
        "/usr/share/fonts/TTF/DejaVuSansMono-Bold.ttf",
    ),
    (
        "/usr/share/fonts/dejavu-sans-mono-fonts/DejaVuSansMono.ttf",
        "/usr/share/fonts/dejavu-sans-mono-fonts/DejaVuSansMono-Bold.ttf",
    ),
    (
        "/usr/share/fonts/dejavu/DejaVuSansMono.ttf",
        "/usr/share/fonts/dejavu/DejaVuSansMono-Bold.ttf",
    ),
];

/// The font files to load: the one given, else the first DejaVu Sans Mono found (with its bold
/// face when present). Errors name the package that provides the font.
pub fn find_fonts(given: Option<&Path>) -> Result<Vec<PathBuf>> {
    if let Some(p) = given {
        if !p.is_file() {
            bail!("font file {} not found", p.display());
        }
        return Ok(vec![p.to_path_buf()]);
    }
    for (regular, bold) in FONT_CANDIDATES {
        let r = Path::new(regular);
        if r.is_file() {
            let mut v = vec![r.to_path_buf()];
            if Path::new(bold).is_file() {
                v.push(PathBuf::from(bold));
            }
            return Ok(v);
        }
    }
    bail!(
        "PNG output needs the DejaVu Sans Mono font, not found in {}: install the package \
         fonts-dejavu-core (Debian/Ubuntu; dejavu-sans-mono-fonts on Fedora, ttf-dejavu on Arch) \
         or pass --font FILE.ttf",
        FONT_CANDIDATES
            .iter()
            .map(|c| c.0)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Most pixels one picture may have (64 Mi pixels, 256 MiB of RGBA): a larger picture is
/// drawn at the largest scale that fits, with a note saying so.
pub const MAX_PIXELS: u64 = 64 << 20;

/// Rasterises an SVG document at `scale` (1.0 = one pixel per SVG unit) to PNG bytes, with the
/// given font files as the only fonts.
pub fn render(svg: &str, fonts: &[PathBuf], scale: f32) -> Result<Vec<u8>> {
    render_fitted(svg, fonts, scale).map(|(b, _)| b)
}

/// [`render`], and the note when the picture was scaled down to fit [`MAX_PIXELS`].
pub fn render_fitted(
    svg: &str,
    fonts: &[PathBuf],
    scale: f32,
) -> Result<(Vec<u8>, Option<String>)> {
    let (pixmap, note) = rasterise_fitted(svg, fonts, scale)?;
    Ok((pixmap.encode_png().context("encoding the PNG")?, note))
}

/// Rasterises an SVG document to a pixmap (what [`render`] encodes; tests read its pixels).
pub fn rasterise(svg: &str, fonts: &[PathBuf], scale: f32) -> Result<resvg::tiny_skia::Pixmap> {
    rasterise_fitted(svg, fonts, scale).map(|(p, _)| p)
}

/// The scale at which a `width` × `height` picture fits [`MAX_PIXELS`] (`scale` itself when it
/// does), and whether it had to shrink.
pub fn fit_scale(width: f32, height: f32, scale: f32) -> (f32, bool) {
    let px = (width * scale).ceil() as f64 * (height * scale).ceil() as f64;
    if px <= MAX_PIXELS as f64 {
        return (scale, false);
    }
    let mut s = scale * (MAX_PIXELS as f64 / px).sqrt() as f32;
    // Rounding up of each side may still overshoot by a row: step down until it fits.
    while (width * s).ceil() as f64 * (height * s).ceil() as f64 > MAX_PIXELS as f64 {
        s *= 0.999;
    }
    (s, true)
}

fn rasterise_fitted(
    svg: &str,
    fonts: &[PathBuf],
    scale: f32,
) -> Result<(resvg::tiny_skia::Pixmap, Option<String>)> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 8.0) {
        bail!("scale {scale} out of range (0, 8]");
    }
    let mut db = resvg::usvg::fontdb::Database::new();
    for f in fonts {
        // Through the input layer: a FIFO or device named as the font is refused, not read.
        let data = crate::sources::fsroot::input::read_input(
            f,
            crate::sources::fsroot::input::MAX_SIDE_FILE_BYTES,
        )
        .with_context(|| format!("cannot read font {}", f.display()))?;
        db.load_font_data(data);
    }
    if db.is_empty() {
        bail!("no usable font face in {fonts:?}");
    }
    let family = db
        .faces()
        .next()
        .and_then(|f| f.families.first().map(|(n, _)| n.clone()))
        .unwrap_or_else(|| "DejaVu Sans Mono".into());
    db.set_monospace_family(family.clone());
    db.set_sans_serif_family(family.clone());
    let opts = resvg::usvg::Options {
        font_family: family,
        fontdb: Arc::new(db),
        ..Default::default()
    };
    let tree = resvg::usvg::Tree::from_str(svg, &opts).context("parsing the SVG")?;
    let size = tree.size();
    let (fit, shrunk) = fit_scale(size.width(), size.height(), scale);
    let note = shrunk.then(|| {
        format!(
            "the picture is {:.0}x{:.0} units: at scale {scale} it would exceed {} Mi pixels; drawn at scale {fit:.3} (use .svg for full detail)",
            size.width(),
            size.height(),
            MAX_PIXELS >> 20
        )
    });
    let w = (size.width() * fit).ceil() as u32;
    let h = (size.height() * fit).ceil() as u32;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w.max(1), h.max(1))
        .with_context(|| format!("cannot allocate a {w}x{h} image"))?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(fit, fit),
        &mut pixmap.as_mut(),
    );
    Ok((pixmap, note))
}

#[cfg(test)]
mod fit_tests {
    use super::*;

    #[test]
    fn pictures_fit_the_pixel_cap() {
        assert_eq!(fit_scale(1000.0, 800.0, 2.0), (2.0, false));
        let (s, shrunk) = fit_scale(2000.0, 400_000.0, 1.0);
        assert!(shrunk);
        let px = (2000.0 * s).ceil() as u64 * (400_000.0 * s).ceil() as u64;
        assert!(px <= MAX_PIXELS && px > MAX_PIXELS / 2, "{s} {px}");
    }
}
