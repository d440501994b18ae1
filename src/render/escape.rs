//! One escaping rule per sink a name from the input can land in. Interface, RDMA device, slot
//! and host names, file paths and DMI strings are read from the node (or from a snapshot, a
//! log, an NCCL XML someone sent): they are data, and each sink has a grammar in which some
//! characters are code. Every renderer writing to a sink calls that sink's function here and
//! never formats such a name raw:
//!
//! - a POSIX shell word (`place --format env|slurm`, `launch --dry-run`): [`shell_word`];
//! - the text of a `#` comment in a shell script, gres.conf or YAML, and a health-check line
//!   (`audit --format health`): [`one_line`] — a newline there would start a live line;
//! - a Prometheus label value: [`prom_label`] (the text exposition format's three escapes);
//! - a string inside the HTML report's `<script>`: [`script_json`];
//! - XML/HTML text and attributes (the SVG picture, the HTML report): [`xml_text`];
//! - a YAML double-quoted scalar (DRA ResourceSlices): [`yaml_str`];
//! - a gres.conf value given on the command line: [`gres_value`] (refused, not escaped);
//! - a host name in the scheduler topology exports (Slurm `Nodes=` hostlists, topology.yaml,
//!   `kubectl label` node names): checked by [`crate::analysis::schedtopo::name_ok`] when the
//!   tree is built (refused and said, never rewritten), the map's switch descriptions only in
//!   comments through [`one_line`];
//! - text on a terminal: [`for_terminal`] and [`json_for_terminal`] (in [`super::terminal`]).
//!
//! Kubernetes names (NFD labels, DRA names) are not escaped but checked, and refused with the
//! rule they break: [`super::nfd::check_label`], [`super::dra`].

use std::borrow::Cow;
use std::fmt::Write;

pub use super::terminal::{for_terminal, json_for_terminal};

/// `s` as one POSIX shell word: left bare when it is made only of characters no shell treats
/// specially (letters, digits, `=:,._-/+@%`), else in single quotes, each `'` written `'\''`.
/// Inside single quotes nothing is special (`$(`, backticks, `\`, newlines are literal:
/// POSIX.1-2017 XCU 2.2.2), so the word is data whatever it holds. A NUL byte cannot be held
/// by a shell word at all; shells drop it, they never run it.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"=:,._-/+@%".contains(&c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `s` on one line: every control character (C0 including newline, carriage return and tab,
/// DEL, C1) written as `\x0a`, and every character a terminal acts on
/// ([`super::terminal::is_unsafe`]: bidirectional controls, line separators) as `\u{202e}`.
/// For the text of a `#` comment (shell, gres.conf — whose parser reads a line to its end —
/// YAML) and for a health-check line, where a newline from a name would start a second, live
/// line. Borrowed when nothing needed escaping.
pub fn one_line(s: &str) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() || super::terminal::is_unsafe(c);
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !bad(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// `v` when it can stand as a gres.conf value (`NodeName=`, `Type=`), else an error saying
/// why: Slurm's config parser (`src/common/parse_config.c`) splits a line at whitespace, ends
/// it at an unescaped `#`, drops a `\` (its escape character) and joins the next line after
/// a trailing one, and reads `"` as a quote, so a value holding any of those (or `'`), or a
/// control character, would change what the line declares. Such a value is refused, never
/// rewritten.
pub fn gres_value<'a>(what: &str, v: &'a str) -> anyhow::Result<&'a str> {
    if v.is_empty() {
        anyhow::bail!("{what} is empty: gres.conf needs a value");
    }
    if let Some(c) = v
        .chars()
        .find(|&c| c.is_whitespace() || c.is_control() || matches!(c, '#' | '"' | '\\' | '\''))
    {
        anyhow::bail!(
            "{what} {} holds {:?}: gres.conf would read it as another word, a comment or a quote",
            for_terminal(&format!("{v:?}")),
            c
        );
    }
    Ok(v)
}

/// `s` as XML/HTML text or an attribute value (the SVG picture, the HTML report): `&`, `<`,
/// `>`, `"`, `'` as entities, and every character XML 1.0 forbids (C0 controls but tab,
/// newline and carriage return — not even as `&#27;`) or that reorders what is shown (DEL, C1,
/// bidi controls: [`super::terminal::is_unsafe`]) written as visible text, `\x1b` /
/// `\u{202e}`: a name holding ESC made the SVG ill-formed, so no viewer showed it.
pub fn xml_text(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\t' | '\n' | '\r' => o.push(c),
            c if (c as u32) < 0x20
                || super::terminal::is_unsafe(c)
                || matches!(c, '\u{fffe}' | '\u{ffff}') =>
            {
                if (c as u32) < 0x80 {
                    let _ = write!(o, "\\x{:02x}", c as u32);
                } else {
                    let _ = write!(o, "\\u{{{:x}}}", c as u32);
                }
            }
            c => o.push(c),
        }
    }
    o
}

/// A Prometheus label value, escaped as the text exposition format says (`\` as `\\`, `"` as
/// `\"`, newline as `\n`; everything else is UTF-8 as it is). Without the quotes.
pub fn prom_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `s` as a JSON string literal that can sit inside an HTML `<script>` element: `<`, `>` and
/// `&` written `\u003c`, `\u003e`, `\u0026` (so no `</script`, `<!--` or `-->` can appear:
/// HTML ends or re-enters the script on those, whatever JS thinks), and U+2028/U+2029 as
/// `\u2028`/`\u2029` (line terminators to pre-2019 JavaScript). The JSON means the same string.
pub fn script_json(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` as a YAML double-quoted scalar: JSON's escapes (a subset of YAML's), and every
/// character YAML does not allow raw in a stream (YAML 1.2 §5.1 `c-printable`: DEL, C1 but
/// NEL, U+FFFE/U+FFFF) or reads as a line break in YAML 1.1 (U+2028/U+2029), and the byte-order
/// mark, written `\uXXXX` — a C1 control from a name would otherwise make the file unreadable.
pub fn yaml_str(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '\u{7f}'..='\u{84}'
            | '\u{86}'..='\u{9f}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{feff}'
            | '\u{fffe}'
            | '\u{ffff}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_data() {
        assert_eq!(shell_word("mlx5_0:1"), "mlx5_0:1");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a'b\n$(x)"), "'a'\\''b\n$(x)'");
    }

    #[test]
    fn one_line_keeps_one_line() {
        assert!(matches!(one_line("mlx5_0 ok"), Cow::Borrowed(_)));
        assert_eq!(
            one_line("a\nb\r\t\u{0}\u{1b}\u{9b}\u{202e}\u{2066}c"),
            "a\\x0ab\\x0d\\x09\\x00\\x1b\\u{9b}\\u{202e}\\u{2066}c"
        );
    }

    #[test]
    fn gres_values_that_change_the_line_are_refused() {
        assert_eq!(
            gres_value("--node-name", "gpu[01-08]").unwrap(),
            "gpu[01-08]"
        );
        for bad in ["a b", "a\nName=gpu File=/dev/null", "a#", "a\"", "a\\", ""] {
            assert!(gres_value("--node-name", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn yaml_strings_hold_only_printable_characters() {
        let s = "m\n- x: \u{1b}\u{9b}\u{2028}\"#";
        let y = yaml_str(s);
        assert_eq!(y, "\"m\\n- x: \\u001b\\u009b\\u2028\\\"#\"");
        // JSON's reading of it is the same string (YAML's double-quoted escapes are a superset).
        assert_eq!(serde_json::from_str::<String>(&y).unwrap(), s);
    }

    #[test]
    fn xml_text_is_well_formed() {
        assert_eq!(
            xml_text("<a href='x'>&\u{1b}[2J\u{0}\u{9b}\u{202e}\n"),
            "&lt;a href=&#39;x&#39;&gt;&amp;\\x1b[2J\\x00\\u{9b}\\u{202e}\n"
        );
    }

    #[test]
    fn prom_labels() {
        assert_eq!(prom_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn script_json_cannot_end_or_comment_the_script() {
        let s = "<!--<script></script>&\u{2028}\u{2029}";
        let j = script_json(s);
        assert!(!j.contains('<') && !j.contains('>') && !j.contains('&'));
        assert!(!j.contains('\u{2028}') && !j.contains('\u{2029}'));
        let back: String = serde_json::from_str(&j).unwrap();
        assert_eq!(back, s);
    }
}
