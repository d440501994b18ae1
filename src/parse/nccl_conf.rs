//! NCCL's configuration files (`/etc/nccl.conf`, `~/.nccl.conf`, `NCCL_CONF_FILE`) read as
//! NCCL's `setEnvFile` reads them (NVIDIA/nccl `src/misc/param.cc`, v2.3 … v2.30.7): each line
//! is split at its first `=`; the name is everything before it and the value everything after,
//! each exactly as written (no trimming, no quotes, no `export`, no inline comments); a line
//! without `=` is skipped; name and value are cut to 1023 bytes. From 2.26.2 a line starting
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

/// Every `NAME=value` line of a file, in file order, with what NCCL would keep of it. Lines
/// starting with `#` are left out (comments from NCCL 2.26.2; before, a variable no one reads).
/// Bytes that are not UTF-8 are replaced (NCCL keeps them, but no NCCL name contains them).
pub fn parse(bytes: &[u8]) -> Vec<ConfLine> {
    let mut out = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        if raw.first() == Some(&b'#') {
            continue;
        }
        let Some(eq) = raw.iter().position(|&b| b == b'=') else {
            continue;
        };
        let cut =
            |s: &[u8]| String::from_utf8_lossy(&s[..s.len().min(NCCL_FIELD_MAX)]).into_owned();
        out.push(ConfLine {
            line: (i + 1).min(u32::MAX as usize) as u32,
            name: cut(&raw[..eq]),
            value: cut(&raw[eq + 1..]),
        });
    }
    out
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
}
