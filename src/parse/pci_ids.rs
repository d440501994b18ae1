//! The PCI ID database (`pci.ids`) parsed lazily: line starts are found with a SIMD byte
//! search, and only the lines of the vendors asked for are decoded (the rest is never copied or
//! checked for UTF-8). Bytes in, names out; `sources::naming` finds and opens the file.

use std::collections::{HashMap, HashSet};

/// Names of the wanted vendors and their devices.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// Vendor ID → name.
    pub vendors: HashMap<u16, String>,
    /// (vendor, device) → name.
    pub devices: HashMap<(u16, u16), String>,
}

/// Parses only the sections of `text` that belong to `wanted` vendors (every device of each).
/// Lines are `vvvv  Name`, `\tdddd  Name`, `\t\tssss ssss  Name`; vendors are listed in
/// ascending ID order, so reading stops after the last wanted vendor (and at the class section,
/// `C xx`). The same parse as [`parse_stream`], over bytes in memory.
pub fn parse_wanted(text: &[u8], wanted: &HashSet<u16>) -> Names {
    // Reading a slice cannot fail.
    parse_stream(text, wanted, None).unwrap_or_default()
}

/// Parses the `wanted` vendors' sections of a database read from `r`, naming only the
/// `(vendor, device)` pairs in `devices` (`None`: every device of a wanted vendor), through one
/// fixed 64 KiB buffer: the database is never held whole (each fresh page of a 1.3 MB buffer is a page fault, which costs more than the
/// parse), and reading stops after the last wanted vendor. A line longer than the buffer is
/// cut there.
pub fn parse_stream(
    mut r: impl std::io::Read,
    wanted: &HashSet<u16>,
    devices: Option<&HashSet<(u16, u16)>>,
) -> std::io::Result<Names> {
    let mut p = Parser::new(wanted, devices);
    let mut buf = vec![0u8; 64 << 10];
    let mut filled = 0;
    let mut eof = false;
    while !eof {
        let n = match r.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        filled += n;
        eof = n == 0;
        let mut start = 0;
        loop {
            let end = match memchr::memchr(b'\n', &buf[start..filled]) {
                Some(i) => start + i,
                // The last line of the file, or one that fills the whole buffer.
                None if eof || (start == 0 && filled == buf.len()) => filled,
                None => break,
            };
            if start >= filled && end == filled {
                break;
            }
            if !p.line(&buf[start..end]) {
                return Ok(p.out);
            }
            start = (end + 1).min(filled);
            if end == filled {
                break;
            }
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
    }
    Ok(p.out)
}

/// The line-by-line state of a parse: the vendor whose device lines are being read.
struct Parser<'w> {
    wanted: &'w HashSet<u16>,
    devices: Option<&'w HashSet<(u16, u16)>>,
    last: Option<u16>,
    current: Option<u16>,
    out: Names,
}

impl<'w> Parser<'w> {
    fn new(wanted: &'w HashSet<u16>, devices: Option<&'w HashSet<(u16, u16)>>) -> Self {
        Parser {
            wanted,
            devices,
            last: wanted.iter().max().copied(),
            current: None,
            out: Names::default(),
        }
    }

    /// Takes one line (without its newline); `false` once nothing further can be wanted.
    fn line(&mut self, line: &[u8]) -> bool {
        let Some(last) = self.last else {
            return false;
        };
        match line.first() {
            None | Some(b'#') => {}
            // Device lines matter only inside a wanted vendor; subsystem lines (two tabs) never.
            Some(b'\t') => {
                if let Some(v) = self.current
                    && line.len() > 6
                    && line[1] != b'\t'
                    && let Some(id) = hex4(&line[1..5])
                    && self.devices.is_none_or(|d| d.contains(&(v, id)))
                {
                    self.out.devices.insert((v, id), name_of(&line[5..]));
                }
            }
            Some(_) => {
                if line.starts_with(b"C ") {
                    return false;
                }
                self.current = None;
                if line.len() < 6 {
                    return true;
                }
                let Some(id) = hex4(&line[..4]) else {
                    return true;
                };
                if id > last {
                    return false;
                }
                if self.wanted.contains(&id) {
                    self.current = Some(id);
                    self.out.vendors.insert(id, name_of(&line[4..]));
                }
            }
        }
        true
    }
}

/// Names back to IDs, for text that printed names only (`lspci` without `-nn`): every vendor,
/// every device, every class and subclass of the database.
#[derive(Debug, Default, Clone)]
pub struct Reverse {
    /// Vendor name → ID (the first vendor of a name wins).
    pub vendors: HashMap<String, u16>,
    /// (vendor, device name) → device ID (the first device of a name wins).
    pub devices: HashMap<(u16, String), u16>,
    /// Class or subclass name → `0xCCSS` (a base class as `0xCC00`; subclass names win).
    pub classes: HashMap<String, u16>,
}

/// Reads the whole database into [`Reverse`] maps. Lines that are not entries are skipped.
pub fn reverse(text: &[u8]) -> Reverse {
    let mut r = Reverse::default();
    let mut vendor: Option<u16> = None;
    let mut class: Option<u8> = None;
    let mut base_names: Vec<(String, u16)> = Vec::new();
    for line in text.split(|&c| c == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match line.first() {
            None | Some(b'#') => {}
            Some(b'\t') if line.get(1) == Some(&b'\t') => {}
            Some(b'\t') => {
                if let Some(v) = vendor
                    && let Some(id) = line.get(1..5).and_then(hex4)
                {
                    r.devices.entry((v, name_of(&line[5..]))).or_insert(id);
                } else if let Some(c) = class
                    && let Some(sub) = line
                        .get(1..3)
                        .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())
                {
                    r.classes
                        .insert(name_of(&line[3..]), (u16::from(c) << 8) | u16::from(sub));
                }
            }
            Some(_) => {
                vendor = None;
                if let Some(rest) = line.strip_prefix(b"C ") {
                    class = rest
                        .get(..2)
                        .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
                    if let Some(c) = class {
                        base_names.push((name_of(&rest[2..]), u16::from(c) << 8));
                    }
                } else if let Some(id) = line.get(..4).and_then(hex4) {
                    class = None;
                    vendor = Some(id);
                    r.vendors.entry(name_of(&line[4..])).or_insert(id);
                } else {
                    class = None;
                }
            }
        }
    }
    for (n, c) in base_names {
        r.classes.entry(n).or_insert(c);
    }
    r
}

fn hex4(b: &[u8]) -> Option<u16> {
    let mut v = 0u16;
    for &c in b.get(..4)? {
        v = (v << 4) | u16::from((c as char).to_digit(16)? as u8);
    }
    Some(v)
}

fn name_of(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_subset() {
        let db = b"# c\n10b5  PLX Technology, Inc.\n\t9797  PEX 9797 PCIe Gen3 Switch\n15b3  Mellanox Technologies\n\t1013  MT27700 Family [ConnectX-4]\n\t\t15b3 0003  sub\nC 02  Network controller\n\t00  Ethernet\n";
        let n = parse_wanted(&db[..], &HashSet::from([0x15b3]));
        // A CRLF file, a last line without newline, a vendor line that is not hex.
        let crlf = b"zzzz  Not hex\n15b3  Mellanox\r\n\t1013  CX4";
        let m = parse_wanted(&crlf[..], &HashSet::from([0x15b3]));
        assert_eq!(m.vendors[&0x15b3], "Mellanox");
        assert_eq!(m.devices[&(0x15b3, 0x1013)], "CX4");
        // The stream parse, fed a byte at a time, finds the same names.
        struct Drip<'a>(&'a [u8]);
        impl std::io::Read for Drip<'_> {
            fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(1).min(b.len());
                b[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        for text in [&db[..], &crlf[..]] {
            let want = HashSet::from([0x15b3, 0x10b5]);
            let a = parse_wanted(text, &want);
            let b = parse_stream(Drip(text), &want, None).unwrap();
            assert_eq!((a.vendors, a.devices), (b.vendors, b.devices));
        }
        assert_eq!(n.vendors.len(), 1);
        assert_eq!(n.devices[&(0x15b3, 0x1013)], "MT27700 Family [ConnectX-4]");
        assert!(!n.devices.contains_key(&(0x10b5, 0x9797)));
        let r = reverse(&db[..]);
        assert_eq!(r.vendors["Mellanox Technologies"], 0x15b3);
        assert_eq!(
            r.devices[&(0x15b3, "MT27700 Family [ConnectX-4]".to_string())],
            0x1013
        );
        assert_eq!(r.classes["Network controller"], 0x0200);
        assert_eq!(r.classes["Ethernet"], 0x0200);
    }
}
