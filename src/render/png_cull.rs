//! Culling for the PNG's strips ([`super::png`]): which top-level elements of the picture's SVG
//! can mark which rows, so that each strip parses and draws only those. Parsing the whole
//! picture once kept every label's glyph outlines in memory (about 550 MB at 16,388 functions)
//! and made every strip walk every shape.
//!
//! Bounds are read from the SVG's own attributes, for the elements and attributes
//! [`super::svg`] writes (`g`, `rect`, `circle`, `line`, `polyline`, `text`, `title`), and are
//! conservative: a shape is widened by twice its stroke width and one unit, a text by its fonts'
//! glyph box (the `head` table's yMin/yMax, which bound every glyph of the font). A document with
//! anything else (another element or attribute, a transform, a unit on a number, a DTD, a
//! `viewBox` other than `0 0 width height`) is not culled at all: [`Parts::split`] says so, and
//! every strip draws the whole picture.

use std::ops::Range;

/// How far a font's glyphs reach above and below the baseline, in em.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GlyphBox {
    /// Highest point of any glyph above the baseline (em).
    pub above: f32,
    /// Lowest point of any glyph below the baseline (em, positive downwards).
    pub below: f32,
}

impl GlyphBox {
    /// The glyph box of a TrueType/OpenType font file, from its `head` table (unitsPerEm at
    /// offset 18, yMin at 38, yMax at 42: OpenType specification, "head — Font Header Table");
    /// `None` for a font collection or a file without a readable `head` table.
    pub fn of_font(data: &[u8]) -> Option<GlyphBox> {
        let u16_at = |at: usize| -> Option<u16> {
            Some(u16::from_be_bytes(data.get(at..at + 2)?.try_into().ok()?))
        };
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
        };
        let version = u32_at(0)?;
        // 0x00010000 (TrueType outlines) or 'OTTO' (CFF); 'ttcf' collections are refused.
        if version != 0x0001_0000 && version != u32::from_be_bytes(*b"OTTO") {
            return None;
        }
        let tables = u16_at(4)? as usize;
        let head = (0..tables).find_map(|i| {
            let rec = 12 + 16 * i;
            (data.get(rec..rec + 4)? == b"head").then_some(u32_at(rec + 8)? as usize)
        })?;
        let upem = f32::from(u16_at(head + 18)?);
        let y_min = f32::from(u16_at(head + 38)? as i16);
        let y_max = f32::from(u16_at(head + 42)? as i16);
        (upem > 0.0).then(|| GlyphBox {
            above: y_max.max(0.0) / upem,
            below: (-y_min).max(0.0) / upem,
        })
    }

    /// The box that holds both.
    pub fn union(self, o: GlyphBox) -> GlyphBox {
        GlyphBox {
            above: self.above.max(o.above),
            below: self.below.max(o.below),
        }
    }
}

/// The top-level elements of an SVG document with the rows (in SVG units) each can mark.
pub struct Parts<'a> {
    text: &'a str,
    /// Everything before the first top-level element (declaration, the `<svg>` start tag).
    head: Range<usize>,
    items: Vec<Item>,
}

/// One top-level element: its source text and the rows it can mark.
struct Item {
    range: Range<usize>,
    span: Span,
}

/// Rows `top ..= bottom` in SVG units; empty when `top > bottom`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    top: f32,
    bottom: f32,
}

impl Span {
    const EMPTY: Span = Span {
        top: f32::INFINITY,
        bottom: f32::NEG_INFINITY,
    };

    fn of(a: f32, b: f32, pad: f32) -> Span {
        Span {
            top: a.min(b) - pad,
            bottom: a.max(b) + pad,
        }
    }

    fn union(self, o: Span) -> Span {
        Span {
            top: self.top.min(o.top),
            bottom: self.bottom.max(o.bottom),
        }
    }
}

/// Attributes whose values the bounds either read or do not depend on.
const KNOWN_ATTRIBUTES: [&str; 26] = [
    "id",
    "class",
    "fill",
    "stroke",
    "stroke-width",
    "stroke-linejoin",
    "stroke-linecap",
    "fill-opacity",
    "stroke-opacity",
    "opacity",
    "font-size",
    "font-weight",
    "font-family",
    "x",
    "y",
    "width",
    "height",
    "rx",
    "ry",
    "cx",
    "cy",
    "r",
    "x1",
    "y1",
    "x2",
    "y2",
];

/// Properties inherited from the enclosing elements that widen a shape.
#[derive(Clone, Copy)]
struct Inherited {
    font_size: f32,
    stroke_width: f32,
}

impl<'a> Parts<'a> {
    /// Splits `svg` into its top-level elements with their bounds, or `None` when the document
    /// holds something whose bounds are not read here (see the module's doc). `font_size` is
    /// the size of a text with none (usvg's default), `glyphs` the loaded fonts' glyph box.
    pub fn split(svg: &'a str, font_size: f32, glyphs: GlyphBox) -> Option<Parts<'a>> {
        if svg.contains("<!DOCTYPE") {
            return None;
        }
        let doc = resvg::usvg::roxmltree::Document::parse(svg).ok()?;
        let root = doc.root_element();
        let inh = root_properties(root, font_size)?;
        let mut items = Vec::new();
        for child in root.children() {
            if child.is_element() {
                let span = bounds(child, inh, glyphs)?;
                items.push(Item {
                    range: child.range(),
                    span,
                });
            } else if child.is_text() && !child.text().unwrap_or("").trim().is_empty() {
                return None;
            }
        }
        let first = items.first().map_or(root.range().end, |i| i.range.start);
        Some(Parts {
            text: svg,
            head: 0..first,
            items,
        })
    }

    /// A document of the same size holding the elements that can mark rows `top ..= bottom`
    /// (SVG units), in their order.
    pub fn between(&self, top: f32, bottom: f32) -> String {
        let mut out = String::from(&self.text[self.head.clone()]);
        for it in &self.items {
            if it.span.bottom >= top && it.span.top <= bottom {
                out.push_str(&self.text[it.range.clone()]);
                out.push('\n');
            }
        }
        out.push_str("</svg>\n");
        out
    }

    /// How many top-level elements the document has.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the document has no top-level element.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

use resvg::usvg::roxmltree::Node;

/// The root `<svg>`'s inherited properties, when its attributes are all understood and its
/// `viewBox` maps units one to one onto its width and height.
fn root_properties(root: Node, font_size: f32) -> Option<Inherited> {
    if root.tag_name().name() != "svg" {
        return None;
    }
    let mut inh = Inherited {
        font_size,
        stroke_width: 1.0,
    };
    for a in root.attributes() {
        if !matches!(a.name(), "width" | "height" | "viewBox" | "version") {
            known(a.name(), a.namespace())?;
        }
    }
    let (w, h) = (
        number(root.attribute("width")?)?,
        number(root.attribute("height")?)?,
    );
    if let Some(vb) = root.attribute("viewBox") {
        let v: Vec<f32> = numbers(vb)?;
        if v != [0.0, 0.0, w, h] {
            return None;
        }
    }
    inherit(root, &mut inh)?;
    Some(inh)
}

/// Whether an attribute is one whose value the bounds read or do not depend on.
fn known(name: &str, namespace: Option<&str>) -> Option<()> {
    let plain =
        namespace.is_none() && (KNOWN_ATTRIBUTES.contains(&name) || name.starts_with("data-"));
    let xml_space = namespace == Some("http://www.w3.org/XML/1998/namespace") && name == "space";
    (plain || xml_space).then_some(())
}

/// Updates the inherited properties with the element's own.
fn inherit(n: Node, inh: &mut Inherited) -> Option<()> {
    if let Some(v) = n.attribute("font-size") {
        inh.font_size = number(v)?;
    }
    if let Some(v) = n.attribute("stroke-width") {
        inh.stroke_width = number(v)?.abs();
    }
    Some(())
}

/// The rows an element can mark, or `None` when it holds something not understood here.
fn bounds(n: Node, mut inh: Inherited, glyphs: GlyphBox) -> Option<Span> {
    let name = n.tag_name().name();
    if n.tag_name().namespace() != Some("http://www.w3.org/2000/svg") {
        return None;
    }
    let points = matches!(name, "polyline" | "polygon");
    for a in n.attributes() {
        if !(points && a.name() == "points") {
            known(a.name(), a.namespace())?;
        }
    }
    inherit(n, &mut inh)?;
    let pad = 2.0 * inh.stroke_width + 1.0;
    let num = |a: &str| n.attribute(a).map_or(Some(0.0), number);
    let span = match name {
        "title" | "desc" => Span::EMPTY,
        "g" => {
            let mut s = Span::EMPTY;
            for c in n.children() {
                if c.is_element() {
                    s = s.union(bounds(c, inh, glyphs)?);
                }
            }
            s
        }
        "rect" => {
            let y = num("y")?;
            Span::of(y, y + num("height")?, pad)
        }
        "circle" => {
            let (cy, r) = (num("cy")?, num("r")?.abs());
            Span::of(cy - r, cy + r, pad)
        }
        "line" => Span::of(num("y1")?, num("y2")?, pad),
        "polyline" | "polygon" => {
            let v = numbers(n.attribute("points").unwrap_or(""))?;
            let ys = v.iter().skip(1).step_by(2);
            let top = ys.clone().copied().fold(f32::INFINITY, f32::min);
            let bottom = ys.copied().fold(f32::NEG_INFINITY, f32::max);
            if v.is_empty() {
                Span::EMPTY
            } else {
                Span::of(top, bottom, pad)
            }
        }
        "text" => {
            if n.children().any(|c| !c.is_text()) {
                return None;
            }
            let ys = n.attribute("y").map_or(Some(vec![0.0]), numbers)?;
            let top = ys.iter().copied().fold(f32::INFINITY, f32::min);
            let bottom = ys.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let size = inh.font_size.abs();
            Span {
                top: top - glyphs.above * size - pad,
                bottom: bottom + glyphs.below * size + pad,
            }
        }
        _ => return None,
    };
    Some(span)
}

/// A plain number (no unit, no percentage), finite.
fn number(s: &str) -> Option<f32> {
    s.trim().parse::<f32>().ok().filter(|v| v.is_finite())
}

/// A list of plain numbers separated by commas or whitespace.
fn numbers(s: &str) -> Option<Vec<f32>> {
    s.split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
        .map(number)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOX: GlyphBox = GlyphBox {
        above: 1.0,
        below: 0.5,
    };

    fn doc(body: &str) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="400" viewBox="0 0 100 400" font-family="DejaVu Sans Mono">
{body}
</svg>
"#
        )
    }

    #[test]
    fn elements_are_kept_for_every_row_they_can_mark() {
        let svg = doc(concat!(
            r##"<rect x="0" y="0" width="100" height="400" fill="#fff"/>"##,
            "\n",
            r##"<g id="a"><title>t</title><rect x="1" y="100" width="10" height="50" stroke="#555" stroke-width="2"/><text x="2" y="120" font-size="10">A</text></g>"##,
            "\n",
            r#"<polyline points="0,300 50,390" fill="none" stroke-width="3"/>"#,
            "\n",
            r#"<text x="1" y="200" font-size="20">B</text>"#
        ));
        let p = Parts::split(&svg, 12.0, BOX).expect("only known elements");
        assert_eq!(p.len(), 4);
        let spans: Vec<Span> = p.items.iter().map(|i| i.span).collect();
        assert_eq!(spans[0], Span::of(0.0, 400.0, 3.0));
        // The rect widened by twice its stroke and a unit: 95 ..= 155.
        assert_eq!(spans[1], Span::of(100.0, 150.0, 5.0));
        assert_eq!(spans[2], Span::of(300.0, 390.0, 7.0));
        // A 20-unit text at baseline 200: glyphs from 180 to 210, one stroke (1) and a unit.
        assert_eq!(spans[3], Span::of(180.0, 210.0, 3.0));
        let strip = p.between(211.0, 250.0);
        assert!(
            strip.contains(">B</text>") && !strip.contains("polyline"),
            "{strip}"
        );
        assert!(!p.between(156.0, 176.0).contains("<g id"));
        assert!(p.between(155.0, 176.0).contains("<g id"));
        // The document's head and end are kept: a strip is a whole document.
        assert!(strip.starts_with("<svg ") && strip.ends_with("</svg>\n"));
    }

    #[test]
    fn documents_with_anything_not_understood_are_not_culled() {
        for body in [
            r#"<rect y="1" height="2" transform="translate(0,50)"/>"#,
            r#"<use href="x"/>"#,
            r#"<rect y="1px" height="2"/>"#,
            r#"<text y="10" font-size="10"><tspan dy="40">x</tspan></text>"#,
            r#"<text y="10" font-size="10" dominant-baseline="hanging">x</text>"#,
            r#"<g style="font-size:90px"><text y="10">x</text></g>"#,
            r#"<style>rect { stroke-width: 40 }</style>"#,
        ] {
            assert!(Parts::split(&doc(body), 12.0, BOX).is_none(), "{body}");
        }
        let scaled = r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="400" viewBox="0 0 50 200"><rect/></svg>"#;
        assert!(Parts::split(scaled, 12.0, BOX).is_none());
    }

    #[test]
    fn a_fonts_glyph_box_is_read_from_its_head_table() {
        let fonts = super::super::png::find_fonts(None)
            .expect("DejaVu Sans Mono (fonts-dejavu-core) is needed");
        let data = std::fs::read(&fonts[0]).unwrap();
        // DejaVu Sans Mono 2.37: unitsPerEm 2048, yMin -767, yMax 2106.
        let g = GlyphBox::of_font(&data).unwrap();
        assert!((g.above - 2106.0 / 2048.0).abs() < 1e-6, "{g:?}");
        assert!((g.below - 767.0 / 2048.0).abs() < 1e-6, "{g:?}");
        assert_eq!(GlyphBox::of_font(b"ttcf\0\x01\0\0"), None);
        assert_eq!(GlyphBox::of_font(&data[..40]), None);
    }
}
