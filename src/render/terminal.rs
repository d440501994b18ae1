//! What reaches a terminal: names read from input (interface and RDMA device names, slot
//! names, DMI strings, file paths in warnings) may hold control characters, and a terminal
//! acts on them (`ESC ]0;…` retitles the window, `ESC [2J` clears it, `\r` overwrites a line,
//! U+202E reverses the text after it). Every text the binary prints passes through here once:
//! [`for_terminal`] for text meant for people (always), [`json_for_terminal`] for JSON shown on
//! a terminal (escaped the JSON way, so the document stays valid and means the same).
//! JSON written to a pipe or file is left as serde wrote it (C0 controls are already escaped).

use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw: C0 controls but tab and newline, DEL, C1
/// controls, the bidirectional overrides and isolates, zero-width and line/paragraph
/// separators, and the byte-order mark.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{061c}' | '\u{feff}')
}

/// `s` with every unsafe character ([`is_unsafe`]) written as a visible escape: `\x1b` for a
/// C0 control or DEL, `\u{202e}` for the others. Borrowed when nothing needed escaping.
pub fn for_terminal(s: &str) -> Cow<'_, str> {
    escape(s, |c, out| {
        use std::fmt::Write;
        if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    })
}

/// JSON text with every unsafe character written as a JSON escape (`\u009b`). Only valid on a
/// whole JSON document (unsafe characters can only sit inside its strings).
pub fn json_for_terminal(s: &str) -> Cow<'_, str> {
    escape(s, |c, out| {
        use std::fmt::Write;
        let mut buf = [0u16; 2];
        for u in c.encode_utf16(&mut buf) {
            let _ = write!(out, "\\u{:04x}", u);
        }
    })
}

fn escape(s: &str, mut esc: impl FnMut(char, &mut String)) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe(c) {
            esc(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_acts_on() {
        assert!(matches!(for_terminal("GPU0\tNIC0\n"), Cow::Borrowed(_)));
        assert_eq!(
            for_terminal("ib0\u{1b}]0;pwned\u{7}\r\u{9b}2J\u{202e}x"),
            "ib0\\x1b]0;pwned\\x07\\x0d\\u{9b}2J\\u{202e}x"
        );
        let doc = "{\"name\": \"ib0\u{9b}31m\u{2066}\"}";
        let safe = json_for_terminal(doc);
        assert_eq!(safe, "{\"name\": \"ib0\\u009b31m\\u2066\"}");
        let v: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(v["name"], "ib0\u{9b}31m\u{2066}");
        // Printable text in any script is untouched.
        assert_eq!(for_terminal("Ünïcødé 名前 ✓"), "Ünïcødé 名前 ✓");
    }
}
