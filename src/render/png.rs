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
///
/// The picture is drawn in horizontal strips of about [`STRIP_BYTES`] by as many threads as
/// there are cores (at most [`MAX_DRAWERS`]); each thread also filters and deflates the strips
/// it drew ([`super::png_deflate`]), and the calling thread writes the pieces in order as one
/// zlib stream. Neither the whole pixmap nor a demultiplied copy of it is ever held, so memory
/// is the SVG parts plus a few strips. Compression is zlib level [`super::png_deflate::LEVEL`].
pub fn render_fitted(
    svg: &str,
    fonts: &[PathBuf],
    scale: f32,
) -> Result<(Vec<u8>, Option<String>)> {
    let pic = Prepared::new(svg, fonts, scale)?;
    let out = encode(&pic, strip_rows(pic.width))?;
    Ok((out, pic.note))
}

/// The PNG of a prepared picture, drawn and compressed in strips of `rows` rows.
fn encode(pic: &Prepared, rows: u32) -> Result<Vec<u8>> {
    use super::png_deflate::{Joiner, piece};
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, pic.width, pic.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().context("encoding the PNG")?;
        let mut joiner = Joiner::new();
        let mut first = true;
        let (width, height) = (pic.width as usize, pic.height);
        pic.draw_strips_of(
            rows,
            &|y0, pixels| piece(pixels, width, y0.saturating_add(rows) >= height),
            &mut |_, p| {
                joiner.add(&p);
                if std::mem::take(&mut first) {
                    w.write_chunk(png::chunk::IDAT, &Joiner::HEADER)
                        .context("encoding the PNG")?;
                }
                w.write_chunk(png::chunk::IDAT, &p.deflated)
                    .context("encoding the PNG")
            },
        )?;
        w.write_chunk(png::chunk::IDAT, &joiner.trailer())
            .context("encoding the PNG")?;
        w.finish().context("encoding the PNG")?;
    }
    Ok(out)
}

/// Rasterises an SVG document to a pixmap (the pixels [`render`] encodes, drawn strip by strip
/// the same way; tests read them).
pub fn rasterise(svg: &str, fonts: &[PathBuf], scale: f32) -> Result<resvg::tiny_skia::Pixmap> {
    let pic = Prepared::new(svg, fonts, scale)?;
    let mut all = resvg::tiny_skia::Pixmap::new(pic.width, pic.height)
        .with_context(|| format!("cannot allocate a {}x{} image", pic.width, pic.height))?;
    let width = pic.width as usize;
    pic.draw_strips_of(
        strip_rows(pic.width),
        &|_, pixels| Ok(pixels.to_vec()),
        &mut |y0, pixels| {
            let at = y0 as usize * width;
            all.pixels_mut()[at..at + pixels.len()].copy_from_slice(&pixels);
            Ok(())
        },
    )?;
    Ok(all)
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

/// Bytes of RGBA in one strip of the picture (32 MiB). resvg walks the whole tree for every
/// strip, so strips much smaller than this cost time (at 4,114 functions, 128-row strips took
/// 8.1 s to draw and encode, 2,674-row strips 2.4 s).
pub const STRIP_BYTES: usize = 32 << 20;

/// Rows drawn above and below each strip and then dropped, so that an outline crossing the
/// strip's edge is not clipped there (clipping re-derives an edge's slope, which moves its
/// anti-aliasing by a step).
pub const STRIP_MARGIN: u32 = 16;

/// Rows in one strip of a picture `width` pixels wide: [`STRIP_BYTES`] worth, at least 64.
pub fn strip_rows(width: u32) -> u32 {
    (STRIP_BYTES / (width.max(1) as usize * 4)).max(64) as u32
}

/// A picture ready to draw, and the pixel size it is drawn at.
struct Prepared<'a> {
    source: Source<'a>,
    fonts: Arc<resvg::usvg::fontdb::Database>,
    family: String,
    fit: f32,
    width: u32,
    height: u32,
    note: Option<String>,
}

/// What the strips are drawn from.
enum Source<'a> {
    /// The document's top-level elements with their bounds: each strip parses and draws those
    /// that can mark it ([`super::png_cull`]).
    Culled(super::png_cull::Parts<'a>),
    /// The whole document parsed once (one [`super::png_cull`] cannot bound): every strip
    /// draws all of it.
    Whole(Box<resvg::usvg::Tree>),
}

impl<'a> Prepared<'a> {
    /// Loads the fonts, splits the SVG into top-level elements with their bounds (or, when it
    /// cannot, parses it whole, shaping every text into outlines), and fits the scale to
    /// [`MAX_PIXELS`].
    fn new(svg: &'a str, fonts: &[PathBuf], scale: f32) -> Result<Self> {
        if !(scale.is_finite() && scale > 0.0 && scale <= 8.0) {
            bail!("scale {scale} out of range (0, 8]");
        }
        let (db, glyphs) = load_fonts(fonts)?;
        let family = db
            .faces()
            .next()
            .and_then(|f| f.families.first().map(|(n, _)| n.clone()))
            .unwrap_or_else(|| "DejaVu Sans Mono".into());
        let fonts = Arc::new(db);
        let parts = glyphs.and_then(|g| {
            super::png_cull::Parts::split(svg, resvg::usvg::Options::default().font_size, g)
        });
        let (source, size) = match parts {
            Some(parts) => {
                // The document's size, from its `<svg>` element alone.
                let head = parts.between(f32::INFINITY, f32::NEG_INFINITY);
                let size = parse(&head, &fonts, &family)?.size();
                (Source::Culled(parts), size)
            }
            None => {
                let tree = parse(svg, &fonts, &family)?;
                let size = tree.size();
                (Source::Whole(Box::new(tree)), size)
            }
        };
        let (fit, shrunk) = fit_scale(size.width(), size.height(), scale);
        let note = shrunk.then(|| {
            format!(
                "the picture is {:.0}x{:.0} units: at scale {scale} it would exceed {} Mi pixels; drawn at scale {fit:.3} (use .svg for full detail)",
                size.width(),
                size.height(),
                MAX_PIXELS >> 20
            )
        });
        Ok(Prepared {
            source,
            fonts,
            family,
            fit,
            width: ((size.width() * fit).ceil() as u32).max(1),
            height: ((size.height() * fit).ceil() as u32).max(1),
            note,
        })
    }

    /// Rows `y0 ..` (at most `rows`) of the picture, drawn with [`STRIP_MARGIN`] rows either
    /// side: the pixmap, and the range of its pixels that are the strip's own.
    fn draw_strip(
        &self,
        y0: u32,
        rows: u32,
    ) -> Result<(resvg::tiny_skia::Pixmap, std::ops::Range<usize>)> {
        let top = y0.saturating_sub(STRIP_MARGIN);
        let end = (y0 + rows).min(self.height);
        let bottom = end.saturating_add(STRIP_MARGIN).min(self.height);
        let mut pm = resvg::tiny_skia::Pixmap::new(self.width, bottom - top)
            .with_context(|| format!("cannot allocate a {}x{} strip", self.width, bottom - top))?;
        let at = resvg::tiny_skia::Transform::from_scale(self.fit, self.fit)
            .post_translate(0.0, -(top as f32));
        match &self.source {
            Source::Whole(tree) => resvg::render(tree, at, &mut pm.as_mut()),
            Source::Culled(parts) => {
                let svg = parts.between(top as f32 / self.fit, bottom as f32 / self.fit);
                let tree = parse(&svg, &self.fonts, &self.family)?;
                resvg::render(&tree, at, &mut pm.as_mut());
            }
        }
        let w = self.width as usize;
        Ok((pm, (y0 - top) as usize * w..(end - top) as usize * w))
    }

    /// Draws the picture in strips of `rows` rows, top to bottom: up to [`MAX_DRAWERS`]
    /// threads draw strips (strip `i` by drawer `i` mod their number) and run `work` on each
    /// strip's own premultiplied pixels with its first row, while the caller's thread runs
    /// `sink` on the results in order. Each drawer holds at most one finished result, so at
    /// most drawers strips are drawn or waiting at once.
    fn draw_strips_of<T: Send>(
        &self,
        rows: u32,
        work: &(impl Fn(u32, &[resvg::tiny_skia::PremultipliedColorU8]) -> Result<T> + Sync),
        sink: &mut impl FnMut(u32, T) -> Result<()>,
    ) -> Result<()> {
        let starts: Vec<u32> = (0..self.height).step_by(rows as usize).collect();
        let drawers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_DRAWERS)
            .min(starts.len());
        std::thread::scope(|s| {
            let mut inbox = Vec::with_capacity(drawers);
            for d in 0..drawers {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Result<T>>(0);
                inbox.push(rx);
                let starts = &starts;
                s.spawn(move || {
                    for &y0 in starts.iter().skip(d).step_by(drawers) {
                        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            let (pm, own) = self.draw_strip(y0, rows)?;
                            work(y0, &pm.pixels()[own])
                        }))
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("the rasteriser failed")));
                        // The caller stopped (an error): nothing more to draw.
                        if tx.send(done).is_err() {
                            break;
                        }
                    }
                });
            }
            for (i, &y0) in starts.iter().enumerate() {
                let done = inbox[i % drawers]
                    .recv()
                    .map_err(|_| anyhow::anyhow!("the rasteriser stopped"))??;
                sink(y0, done)?;
            }
            Ok(())
        })
    }
}

/// Parses an SVG document with `fonts` as the only fonts, `family` the default one.
fn parse(
    svg: &str,
    fonts: &Arc<resvg::usvg::fontdb::Database>,
    family: &str,
) -> Result<resvg::usvg::Tree> {
    let opts = resvg::usvg::Options {
        font_family: family.to_string(),
        fontdb: fonts.clone(),
        ..Default::default()
    };
    resvg::usvg::Tree::from_str(svg, &opts).context("parsing the SVG")
}

/// Loads the font files into a font database (through the input layer: a FIFO or device named
/// as the font is refused, not read), with the first face's family as the sans-serif and
/// monospace family, and the box their glyphs fit in (`None` when a file's is not known).
fn load_fonts(
    fonts: &[PathBuf],
) -> Result<(
    resvg::usvg::fontdb::Database,
    Option<super::png_cull::GlyphBox>,
)> {
    let mut db = resvg::usvg::fontdb::Database::new();
    let mut glyphs = Some(super::png_cull::GlyphBox {
        above: 0.0,
        below: 0.0,
    });
    for f in fonts {
        let data = crate::sources::fsroot::input::read_input(
            f,
            crate::sources::fsroot::input::MAX_SIDE_FILE_BYTES,
        )
        .with_context(|| format!("cannot read font {}", f.display()))?;
        glyphs = glyphs
            .zip(super::png_cull::GlyphBox::of_font(&data))
            .map(|(a, b)| a.union(b));
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
    db.set_sans_serif_family(family);
    Ok((db, glyphs))
}

/// Most threads drawing strips at once (each holds one strip of [`STRIP_BYTES`] while drawing
/// and compressing it, then waits, holding only the compressed piece, for it to be written).
pub const MAX_DRAWERS: usize = 4;

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

    /// A small picture with text, frames and a slanted line crossing many strip edges.
    const SVG: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="220" height="300" viewBox="0 0 220 300">
<rect x="0" y="0" width="220" height="300" fill="#ffffff"/>
<rect x="10.5" y="7.3" width="150" height="211.7" fill="#e8f0ff" stroke="#555555" rx="4"/>
<text x="14" y="30" font-size="11" fill="#111111">GPU0 0000:18:00.0 NODE</text>
<text x="14" y="47.6" font-size="13" font-weight="bold" fill="#111111">mlx5_0 PIX ↔ SYS</text>
<polyline points="5,5 210,290 30,280" fill="none" stroke="#c03030" stroke-width="1.5"/>
<circle cx="180" cy="150" r="23.3" fill="#30a030"/>
</svg>"##;

    #[test]
    fn strips_are_the_whole_picture() {
        let fonts = find_fonts(None).expect("DejaVu Sans Mono (fonts-dejavu-core) is needed");
        let pic = Prepared::new(SVG, &fonts, 1.3).unwrap();
        assert!(
            matches!(pic.source, Source::Culled(_)),
            "the picture is culled"
        );
        assert_eq!((pic.width, pic.height), (286, 390));
        let mut whole = resvg::tiny_skia::Pixmap::new(pic.width, pic.height).unwrap();
        resvg::render(
            &parse(SVG, &pic.fonts, &pic.family).unwrap(),
            resvg::tiny_skia::Transform::from_scale(pic.fit, pic.fit),
            &mut whole.as_mut(),
        );
        // 37-row strips: 11 of them, the last short; text and the line cross their edges.
        let mut got = Vec::new();
        let mut firsts = Vec::new();
        pic.draw_strips_of(37, &|_, px| Ok(px.to_vec()), &mut |y0, px| {
            firsts.push(y0);
            got.extend_from_slice(&px);
            Ok(())
        })
        .unwrap();
        assert_eq!(firsts, (0..390).step_by(37).collect::<Vec<_>>());
        assert_eq!(got.len(), whole.pixels().len());
        // Outlines clipped at a strip's margin get their slope re-derived, which can move an
        // edge pixel's anti-aliasing by a step; a misplaced or misordered strip moves whole
        // rows (thousands of pixels, full-contrast deltas).
        let deltas: Vec<u8> = got
            .iter()
            .zip(whole.pixels())
            .filter(|(a, b)| a != b)
            .map(|(a, b)| {
                [
                    a.red().abs_diff(b.red()),
                    a.green().abs_diff(b.green()),
                    a.blue().abs_diff(b.blue()),
                    a.alpha().abs_diff(b.alpha()),
                ]
                .into_iter()
                .max()
                .unwrap_or(0)
            })
            .collect();
        let worst = deltas.iter().max().copied().unwrap_or(0);
        eprintln!("{} pixels differ, by at most {worst}", deltas.len());
        assert!(
            deltas.len() <= got.len() / 500 && worst <= 64,
            "{} pixels differ from a single draw, by up to {worst}",
            deltas.len()
        );
    }

    /// A PNG's decoded pixels and its header, as any PNG reader (the `png` crate) sees them.
    fn decode(bytes: Vec<u8>) -> (Vec<u8>, png::OutputInfo) {
        let mut dec = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .unwrap();
        let mut buf = vec![0; dec.output_buffer_size().unwrap()];
        let info = dec.next_frame(&mut buf).unwrap();
        (buf, info)
    }

    #[test]
    fn the_png_decodes_to_the_drawn_pixels() {
        let fonts = find_fonts(None).expect("DejaVu Sans Mono (fonts-dejavu-core) is needed");
        let bytes = render(SVG, &fonts, 1.3).unwrap();
        let drawn = rasterise(SVG, &fonts, 1.3).unwrap();
        let (buf, info) = decode(bytes);
        assert_eq!((info.width, info.height), (286, 390));
        assert_eq!(info.color_type, png::ColorType::Rgba);
        let want: Vec<u8> = drawn
            .pixels()
            .iter()
            .flat_map(|p| {
                let c = p.demultiply();
                [c.red(), c.green(), c.blue(), c.alpha()]
            })
            .collect();
        assert!(buf == want, "decoded PNG differs from the drawn pixels");
    }

    /// A PNG written in many strips (each compressed on its own and joined into one zlib
    /// stream) decodes to exactly the pixels drawn in those strips.
    #[test]
    fn a_png_of_many_strips_decodes_to_the_drawn_pixels() {
        let fonts = find_fonts(None).expect("DejaVu Sans Mono (fonts-dejavu-core) is needed");
        let pic = Prepared::new(SVG, &fonts, 1.3).unwrap();
        let bytes = encode(&pic, 37).unwrap();
        let mut drawn = Vec::new();
        pic.draw_strips_of(37, &|_, px| Ok(px.to_vec()), &mut |_, px| {
            drawn.extend(px.iter().flat_map(|p| {
                let c = p.demultiply();
                [c.red(), c.green(), c.blue(), c.alpha()]
            }));
            Ok(())
        })
        .unwrap();
        let (buf, info) = decode(bytes);
        assert_eq!((info.width, info.height), (286, 390));
        assert!(buf == drawn, "decoded PNG differs from the drawn strips");
    }

    /// Shapes whose own coordinates lie outside a strip (and its margin) but which reach into
    /// it: a text's glyphs above its baseline, a thick stroke's half, a rectangle spanning
    /// several strips, a polyline whose points are all outside the strip.
    const CROSSING: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="300" viewBox="0 0 200 300">
<rect x="0" y="0" width="200" height="300" fill="#ffffff"/>
<text x="4" y="74" font-size="48" fill="#111111">MW</text>
<line x1="100" y1="120" x2="190" y2="120" stroke="#3030c0" stroke-width="50"/>
<rect x="150" y="10" width="30" height="250" fill="#e8f0ff" stroke="#555555" stroke-width="3"/>
<polyline points="10,5 190,295" fill="none" stroke="#c03030" stroke-width="6"/>
<text x="4" y="280" font-size="12" fill="#111111">GPU0</text>
</svg>"##;

    #[test]
    fn culled_strips_keep_shapes_that_cross_their_edges() {
        let fonts = find_fonts(None).expect("DejaVu Sans Mono (fonts-dejavu-core) is needed");
        let pic = Prepared::new(CROSSING, &fonts, 1.0).unwrap();
        let Source::Culled(parts) = &pic.source else {
            panic!("the picture is culled");
        };
        // Strips of 50 rows, drawn with 16 rows of margin. The text "MW"'s baseline (74) is
        // below the first strip's rows 0 ..= 66, its capitals (35 units high) reach rows 39-49;
        // the line's centre (120) is below the second strip's rows 34 ..= 116, its stroke
        // reaches rows 95-99; the polyline has no point in the middle strips.
        assert!(!parts.between(0.0, 66.0).contains("GPU0"));
        assert!(parts.between(0.0, 66.0).contains("MW"));
        let mut whole = resvg::tiny_skia::Pixmap::new(pic.width, pic.height).unwrap();
        resvg::render(
            &parse(CROSSING, &pic.fonts, &pic.family).unwrap(),
            resvg::tiny_skia::Transform::identity(),
            &mut whole.as_mut(),
        );
        let mut got = Vec::new();
        pic.draw_strips_of(50, &|_, px| Ok(px.to_vec()), &mut |_, px| {
            got.extend_from_slice(&px);
            Ok(())
        })
        .unwrap();
        let differ = got
            .iter()
            .zip(whole.pixels())
            .filter(|(a, b)| a != b)
            .count();
        // Margins clip edges (a step of anti-aliasing on a few pixels); a dropped shape leaves
        // hundreds of pixels of background.
        assert!(differ <= 60, "{differ} pixels differ from a single draw");
    }
}
