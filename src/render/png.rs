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

/// Rasterises an SVG document at `scale` (1.0 = one pixel per SVG unit) to PNG bytes, with the
/// given font files as the only fonts.
pub fn render(svg: &str, fonts: &[PathBuf], scale: f32) -> Result<Vec<u8>> {
    let pixmap = rasterise(svg, fonts, scale)?;
    pixmap.encode_png().context("encoding the PNG")
}

/// Rasterises an SVG document to a pixmap (what [`render`] encodes; tests read its pixels).
pub fn rasterise(svg: &str, fonts: &[PathBuf], scale: f32) -> Result<resvg::tiny_skia::Pixmap> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 8.0) {
        bail!("scale {scale} out of range (0, 8]");
    }
    let mut db = resvg::usvg::fontdb::Database::new();
    for f in fonts {
        let data = std::fs::read(f).with_context(|| format!("cannot read font {}", f.display()))?;
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
    let w = (size.width() * scale).ceil() as u32;
    let h = (size.height() * scale).ceil() as u32;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w, h)
        .with_context(|| format!("cannot allocate a {w}x{h} image"))?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    Ok(pixmap)
}
