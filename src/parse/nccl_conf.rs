//! NCCL's configuration files (`/etc/nccl.conf`, `~/.nccl.conf`, `NCCL_CONF_FILE`) read as
//! NCCL's `setEnvFile` reads them (NVIDIA/nccl `src/misc/param.cc`, v2.3 … v2.30.7): each line
//! is split at its first `=`; the name is everything before it and the value everything after,
//! each exactly as written (no trimming, no quotes, no `export`, no inline comments); a line
//! without `=` is skipped; name and value are cut to 1023 bytes; a NUL byte ends a line
//! (`strlen`, `strncpy`) and a line over 4,095 bytes is read in pieces (`fgets`, issue 53). From 2.26.2 a line starting
//! with `#` is a comment (before, it set a variable named `#…`, which nothing reads); up to
//! 2.30.2 a CRLF line keeps its `\r` in the value. Facts and sources:
//! `docs/settings.md` (NCCL's grammar, by release).

/// One `NAME=value` line of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfLine {
    /// 1-based line number.
    pub line: u32,
    /// The name exactly as NCCL takes it (bytes before the first `=`, at most 1023).
    pub name: String,
    /// The value exactly as NCCL takes it (bytes after the first `=`, at most 1023, a CR kept).
    pub value: String,
}

/// The longest name or value NCCL keeps (`char envVar[1024]`).
pub const NCCL_FIELD_MAX: usize = 1023;

/// The most bytes NCCL's `fgets(line, 4096, …)` gives it at once: a longer line is read as
/// several lines of at most this many bytes, each split and set on its own.
pub const NCCL_LINE_MAX: usize = 4095;

/// Every `NAME=value` line of a file, in file order, with what NCCL would keep of it. As
/// `setEnvFile` reads: `fgets` pieces of at most [`NCCL_LINE_MAX`] bytes (a longer line is
/// several pieces, each read as a line, numbered with the line it starts in); each piece seen to
/// its first NUL byte (`strlen`, `strncpy`: `X=LOC<NUL>PHB` sets `LOC`); a piece starting with
/// `#` left out (comments from NCCL 2.26.2; before, a variable no one reads). Bytes that are not
/// UTF-8 are replaced (NCCL keeps them, but no NCCL name contains them).
pub fn parse(bytes: &[u8]) -> Vec<ConfLine> {
    let mut out = Vec::new();
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        for piece in line.chunks(NCCL_LINE_MAX) {
            if let Some(l) = parse_piece(piece, (i + 1).min(u32::MAX as usize) as u32) {
                out.push(l);
            }
        }
    }
    out
}

/// One `fgets` piece as NCCL reads it: up to its first NUL, its newline dropped.
fn parse_piece(piece: &[u8], line: u32) -> Option<ConfLine> {
    let seen = piece.split(|&b| b == 0).next().unwrap_or(piece);
    let raw = seen.strip_suffix(b"\n").unwrap_or(seen);
    if raw.first() == Some(&b'#') {
        return None;
    }
    let eq = raw.iter().position(|&b| b == b'=')?;
    let cut = |s: &[u8]| String::from_utf8_lossy(&s[..s.len().min(NCCL_FIELD_MAX)]).into_owned();
    Some(ConfLine {
        line,
        name: cut(&raw[..eq]),
        value: cut(&raw[eq + 1..]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_at_the_first_equals_sign_without_trimming() {
        let t = b"NCCL_NET_GDR_LEVEL=PHB\n\n# NCCL_X=1\nNCCL_CROSS_NIC = 1\nnoequals\nNCCL_IB_HCA==mlx5_0,mlx5_1\r\nNCCL_TOPO_FILE=/opt/a=b.xml";
        let l = parse(t);
        assert_eq!(l.len(), 4, "{l:?}");
        assert_eq!(
            (l[0].line, l[0].name.as_str(), l[0].value.as_str()),
            (1, "NCCL_NET_GDR_LEVEL", "PHB")
        );
        // Spaces stay: NCCL sets a variable named "NCCL_CROSS_NIC " to " 1".
        assert_eq!((l[1].line, l[1].name.as_str()), (4, "NCCL_CROSS_NIC "));
        assert_eq!(l[1].value, " 1");
        // The first `=` splits; a CR stays in the value.
        assert_eq!(l[2].name, "NCCL_IB_HCA");
        assert_eq!(l[2].value, "=mlx5_0,mlx5_1\r");
        assert_eq!(l[3].value, "/opt/a=b.xml");
    }

    #[test]
    fn long_fields_are_cut_as_nccl_cuts_them() {
        let mut t = vec![b'N'; 2000];
        t.push(b'=');
        t.extend(std::iter::repeat_n(b'v', 3000));
        let l = parse(&t);
        assert_eq!(l[0].name.len(), NCCL_FIELD_MAX);
        assert_eq!(l[0].value.len(), NCCL_FIELD_MAX);
        assert!(parse(b"").is_empty());
        assert!(parse(&[0xff, b'=', 0xfe]).len() == 1);
    }

    /// Issue 53: NCCL copies the value with `strncpy`, so it stops at a NUL byte: `LOC<NUL>…`
    /// is `LOC` (GDR off). peerpath read `LOC\0PHB`, "not a level", and said NCCL ignores it.
    #[test]
    fn a_nul_byte_ends_the_line_as_strlen_and_strncpy_end_it() {
        let l = parse(b"NCCL_NET_GDR_LEVEL=LOC\0PHB\nNCCL_IB_HCA\0=mlx5_0\n\0NCCL_X=1\n");
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!(
            (l[0].name.as_str(), l[0].value.as_str()),
            ("NCCL_NET_GDR_LEVEL", "LOC")
        );
    }

    /// Issue 53: `fgets(line, 4096, …)` reads a longer line in pieces of 4,095 bytes, each set
    /// on its own: the piece after 4,095 bytes of padding sets `NCCL_NET_GDR_LEVEL`.
    #[test]
    fn a_line_over_4095_bytes_is_read_in_pieces_as_fgets_reads_it() {
        let mut t = vec![b'x'; NCCL_LINE_MAX];
        t.extend_from_slice(b"NCCL_NET_GDR_LEVEL=LOC\nNCCL_CROSS_NIC=1\n");
        let l = parse(&t);
        assert_eq!(l.len(), 2, "{l:?}");
        assert_eq!(
            (l[0].line, l[0].name.as_str(), l[0].value.as_str()),
            (1, "NCCL_NET_GDR_LEVEL", "LOC")
        );
        assert_eq!((l[1].line, l[1].name.as_str()), (2, "NCCL_CROSS_NIC"));
        // 4,094 bytes and the newline fit one piece: one line, no piece after it.
        let mut t = vec![b'x'; NCCL_LINE_MAX - 5];
        t.extend_from_slice(b"A=B\n");
        assert_eq!(parse(&t).len(), 1);
        // A piece starting with `#` is a comment, as NCCL's `line[0] == '#'` test sees it.
        let mut t = vec![b'x'; NCCL_LINE_MAX];
        t.extend_from_slice(b"#NCCL_X=1\n");
        assert!(parse(&t).is_empty());
    }
}
