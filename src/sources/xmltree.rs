//! A small element tree read with `quick-xml`'s streaming reader: element names, attributes,
//! text and children, nothing else (no namespaces, no DTD). Shared by the hwloc and NCCL XML
//! sources, whose documents are a few hundred kilobytes at most.

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};

/// Deepest nesting accepted; deeper input is treated as corrupt rather than followed.
const MAX_DEPTH: usize = 256;

/// One element of the tree.
#[derive(Debug, Clone, Default)]
pub struct Element {
    /// Tag name (`object`, `pci`, …).
    pub name: String,
    /// Attributes in document order, values unescaped.
    pub attrs: Vec<(String, String)>,
    /// Text content directly inside this element, concatenated.
    pub text: String,
    /// Child element indexes into [`Doc::elements`].
    pub children: Vec<usize>,
    /// Parent element index (`None` for the root).
    pub parent: Option<usize>,
    /// 1-based line of the start tag, for messages.
    pub line: usize,
}

impl Element {
    /// Value of an attribute.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A parsed document: elements in document order, the root first.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    /// Every element; index 0 is the root element.
    pub elements: Vec<Element>,
}

impl Doc {
    /// The root element.
    pub fn root(&self) -> Option<&Element> {
        self.elements.first()
    }
    /// Children of element `i` with the given tag name.
    pub fn children_named<'a>(
        &'a self,
        i: usize,
        name: &'a str,
    ) -> impl Iterator<Item = usize> + 'a {
        self.elements[i]
            .children
            .iter()
            .copied()
            .filter(move |&c| self.elements[c].name == name)
    }
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum XmlError {
    /// The XML itself is malformed.
    #[error("line {line}: malformed XML: {message}")]
    Syntax {
        /// Line of the error.
        line: usize,
        /// What quick-xml said.
        message: String,
    },
    /// The document has no root element.
    #[error("no root element")]
    Empty,
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("line {0}: elements nested deeper than {MAX_DEPTH}")]
    TooDeep(usize),
}

/// Line numbers of byte positions, counted once: positions asked in increasing order (as the
/// reader advances) cost only the bytes since the last one, so a whole document is counted in
/// one pass instead of from its start for every element.
struct Lines<'t> {
    text: &'t [u8],
    pos: usize,
    line: usize,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Self {
        Lines {
            text: text.as_bytes(),
            pos: 0,
            line: 1,
        }
    }

    /// 1-based line of byte `pos`.
    fn at(&mut self, pos: u64) -> usize {
        let end = (pos as usize).min(self.text.len());
        if end < self.pos {
            // Backwards (an error position before the last element): count from the start.
            self.pos = 0;
            self.line = 1;
        }
        self.line += self.text[self.pos..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.pos = end;
        self.line
    }
}

fn element_from(e: &BytesStart<'_>, line: usize) -> Result<Element, XmlError> {
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(|err| XmlError::Syntax {
            line,
            message: err.to_string(),
        })?;
        let key = a.key.as_ref().to_string();
        let value = a
            .normalized_value(XmlVersion::Implicit1_0)
            .map_err(|err| XmlError::Syntax {
                line,
                message: err.to_string(),
            })?
            .into_owned();
        attrs.push((key, value));
    }
    Ok(Element {
        name: e.name().as_ref().to_string(),
        attrs,
        line,
        ..Element::default()
    })
}

/// Parses a whole document into a tree. Comments, declarations, the DOCTYPE and processing
/// instructions are skipped.
pub fn parse(text: &str) -> Result<Doc, XmlError> {
    let mut reader = quick_xml::Reader::from_str(text);
    let mut lines = Lines::new(text);
    let mut doc = Doc::default();
    let mut stack: Vec<usize> = Vec::new();
    let mut root_closed = false;
    loop {
        let pos = reader.buffer_position();
        let ev = reader.read_event().map_err(|e| XmlError::Syntax {
            line: lines.at(reader.error_position()),
            message: e.to_string(),
        })?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                if root_closed || (stack.is_empty() && !doc.elements.is_empty()) {
                    return Err(XmlError::Syntax {
                        line: lines.at(pos),
                        message: "content after the root element".into(),
                    });
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(XmlError::TooDeep(lines.at(pos)));
                }
                let mut el = element_from(e, lines.at(pos))?;
                let idx = doc.elements.len();
                el.parent = stack.last().copied();
                if let Some(&p) = stack.last() {
                    doc.elements[p].children.push(idx);
                }
                doc.elements.push(el);
                if matches!(ev, Event::Start(_)) {
                    stack.push(idx);
                } else if stack.is_empty() {
                    root_closed = true;
                }
            }
            Event::End(_) => {
                stack.pop();
                if stack.is_empty() {
                    root_closed = true;
                }
            }
            Event::Text(t) => {
                if let Some(&top) = stack.last() {
                    doc.elements[top].text.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some(&top) = stack.last() {
                    doc.elements[top].text.push_str(&t);
                }
            }
            Event::GeneralRef(r) => {
                if let Some(&top) = stack.last() {
                    if let Ok(Some(c)) = r.resolve_char_ref() {
                        doc.elements[top].text.push(c);
                    } else {
                        let s = match r.xml10_content().as_ref() {
                            "amp" => "&",
                            "lt" => "<",
                            "gt" => ">",
                            "quot" => "\"",
                            "apos" => "'",
                            _ => "",
                        };
                        doc.elements[top].text.push_str(s);
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if doc.elements.is_empty() {
        return Err(XmlError::Empty);
    }
    if !stack.is_empty() {
        return Err(XmlError::Syntax {
            line: lines.at(text.len() as u64),
            message: format!(
                "end of input inside <{}>",
                doc.elements[stack[stack.len() - 1]].name
            ),
        });
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_and_attrs() {
        let d =
            parse("<?xml version=\"1.0\"?>\n<!-- c -->\n<a x=\"1 &amp; 2\"><b/><c>t&lt;u</c></a>")
                .unwrap();
        let r = d.root().unwrap();
        assert_eq!(r.name, "a");
        assert_eq!(r.attr("x"), Some("1 & 2"));
        assert_eq!(r.children.len(), 2);
        assert_eq!(d.elements[2].text, "t<u");
        assert_eq!(d.elements[2].line, 3);
        assert_eq!(d.children_named(0, "b").count(), 1);
    }

    #[test]
    fn errors_not_panics() {
        assert!(parse("").is_err());
        assert!(parse("<a><b></a>").is_err());
        assert!(parse("<a>").is_err());
        assert!(parse("<a/><b/>").is_err());
        assert!(parse("<a x=1/>").is_err());
        let deep = "<a>".repeat(300) + &"</a>".repeat(300);
        assert!(matches!(parse(&deep), Err(XmlError::TooDeep(_))));
    }
}
