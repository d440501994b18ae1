//! PCI Vital Product Data (`/sys/bus/pci/devices/<bdf>/vpd`, readable by root only): the
//! resource list of PCI Local Bus Specification 3.0 §6.4 / PCIe Base Specification "VPD
//! Format". Large resources have bit 7 of the tag set and a 16-bit little-endian length
//! (0x82 identifier string, 0x90 read-only keywords `VPD-R`, 0x91 read-write keywords);
//! small resources carry their length in bits 2:0 (0x78/0x79 end tags). Keywords inside
//! `VPD-R` are two ASCII characters, a length byte and the data.
//!
//! ConnectX boards carry the same board UUID in keyword `V3` of every PCI function of the
//! adapter, the Data Direct DMA function included: rdma_topo pairs them on `V3`; the kernel's
//! `mlx5_data_direct` driver matches the DMA function's `VU` keyword with the VUID firmware
//! reports for the RDMA device (docs/nextgen.md).

use super::{Reason, Refusal};

/// The parts of a VPD image peerpath uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vpd {
    /// The identifier string (product name, tag 0x82), trimmed.
    pub name: Option<String>,
    /// Read-only keywords in order, values as text (non-ASCII bytes escaped; trailing NULs and
    /// spaces trimmed). The checksum keyword `RV` is left out.
    pub read_only: Vec<(String, String)>,
}

impl Vpd {
    /// A read-only keyword's value (`V3`, `VU`, `SN`, `PN`).
    pub fn keyword(&self, k: &str) -> Option<&str> {
        self.read_only
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

const END_SMALL: u8 = 0x78;
const END_LARGE: u8 = 0x79;
const TAG_ID: u8 = 0x82;
const TAG_RO: u8 = 0x90;
const TAG_RW: u8 = 0x91;

fn text(b: &[u8]) -> String {
    let t = b
        .iter()
        .rposition(|&c| c != 0 && c != b' ')
        .map_or(&b[..0], |e| &b[..=e]);
    let t = t.trim_ascii_start();
    t.escape_ascii().to_string()
}

/// The identifier string's byte range and each read-only keyword's value range ([`spans`]).
pub type Spans = (
    Option<std::ops::Range<usize>>,
    Vec<(String, std::ops::Range<usize>)>,
);

/// Where each read-only keyword's value lies in a VPD image: `(keyword, value byte range)`, in
/// order (the checksum `RV` included), and the identifier string's range. Stops at an end tag
/// or at the first resource whose length runs past the data (the kernel exposes the whole VPD
/// window, often padded). `None` when the data holds neither an identifier string nor a
/// read-only resource. What [`parse`] reads and what a capture redacts.
pub fn spans(bytes: &[u8]) -> Option<Spans> {
    let mut name = None;
    let mut kws = Vec::new();
    let mut seen = false;
    let mut i = 0usize;
    // A VPD image holds a handful of resources; a bound keeps hostile input cheap.
    let mut guard = 0;
    while i < bytes.len() && guard < 64 {
        guard += 1;
        let tag = bytes[i];
        if tag == END_SMALL || tag == END_LARGE || tag == 0xff || tag == 0x00 {
            break;
        }
        let (off, len) = if tag & 0x80 != 0 {
            if i + 3 > bytes.len() {
                break;
            }
            (3, u16::from_le_bytes([bytes[i + 1], bytes[i + 2]]) as usize)
        } else {
            (1, (tag & 0x07) as usize)
        };
        let start = i + off;
        let Some(end) = start.checked_add(len).filter(|&e| e <= bytes.len()) else {
            break;
        };
        match tag {
            TAG_ID => {
                seen = true;
                name = Some(start..end);
            }
            TAG_RO | TAG_RW => {
                seen = true;
                let mut k = start;
                while k + 3 <= end {
                    let kw = &bytes[k..k + 2];
                    let v0 = k + 3;
                    let Some(v1) = v0.checked_add(bytes[k + 2] as usize).filter(|&e| e <= end)
                    else {
                        break;
                    };
                    if tag == TAG_RO && kw.iter().all(u8::is_ascii_alphanumeric) {
                        kws.push((String::from_utf8_lossy(kw).into_owned(), v0..v1));
                    }
                    k = v1;
                }
            }
            _ => {}
        }
        i = end;
    }
    seen.then_some((name, kws))
}

/// Parses a VPD image (see [`spans`]). Refuses data with neither an identifier string nor a
/// read-only resource.
pub fn parse(bytes: &[u8]) -> Result<Vpd, Refusal> {
    let Some((name, kws)) = spans(bytes) else {
        return Err(Refusal::of_len(bytes.len(), Reason::NotVpd));
    };
    let name = name.map(|r| text(&bytes[r])).filter(|n| !n.is_empty());
    let read_only = kws
        .into_iter()
        .filter(|(k, _)| k != "RV")
        .map(|(k, r)| (k, text(&bytes[r])))
        .collect();
    Ok(Vpd { name, read_only })
}

/// Builds a VPD image (identifier string, read-only keywords with a correct `RV` checksum, end
/// tag): what synthesized fixtures write as `vpd`.
pub fn build(name: &str, keywords: &[(&str, &str)]) -> Vec<u8> {
    let mut b = vec![TAG_ID];
    b.extend_from_slice(&(name.len() as u16).to_le_bytes());
    b.extend_from_slice(name.as_bytes());
    let mut ro = Vec::new();
    for (k, v) in keywords {
        ro.extend_from_slice(&k.as_bytes()[..2]);
        ro.push(v.len().min(255) as u8);
        ro.extend_from_slice(&v.as_bytes()[..v.len().min(255)]);
    }
    // RV: checksum byte making the sum of all bytes from the start through it zero.
    let ro_len = ro.len() + 4;
    let mut head = b.clone();
    head.push(TAG_RO);
    head.extend_from_slice(&(ro_len as u16).to_le_bytes());
    head.extend_from_slice(&ro);
    head.extend_from_slice(b"RV");
    head.push(1);
    let sum = head.iter().fold(0u8, |a, &x| a.wrapping_add(x));
    head.push(0u8.wrapping_sub(sum));
    b = head;
    b.push(END_SMALL);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_checksum() {
        let img = build(
            "NVIDIA ConnectX-8 C8180 HHHL SuperNIC",
            &[
                ("PN", "900-9X81E-00EX-ST0"),
                ("SN", "MT2423X00001"),
                ("V3", "7a1b2c3d4e5f60718293a4b5c6d7e8f9"),
            ],
        );
        let v = parse(&img).unwrap();
        assert_eq!(
            v.name.as_deref(),
            Some("NVIDIA ConnectX-8 C8180 HHHL SuperNIC")
        );
        assert_eq!(v.keyword("V3"), Some("7a1b2c3d4e5f60718293a4b5c6d7e8f9"));
        assert_eq!(v.keyword("SN"), Some("MT2423X00001"));
        assert_eq!(v.keyword("RV"), None);
        // The checksum covers everything through RV's byte.
        let rv_end = img.len() - 1;
        assert_eq!(img[..rv_end].iter().fold(0u8, |a, &x| a.wrapping_add(x)), 0);
        // Padding after the end tag (the kernel shows the whole window) is ignored.
        let mut padded = img.clone();
        padded.extend_from_slice(&[0xff; 64]);
        assert_eq!(parse(&padded).unwrap(), v);
    }

    #[test]
    fn truncated_and_hostile_input() {
        let img = build("X", &[("V3", "abcd")]);
        // Cut inside the read-only resource: the name is kept, the keywords are not.
        let v = parse(&img[..6]).unwrap();
        assert_eq!(v.name.as_deref(), Some("X"));
        assert!(v.read_only.is_empty());
        assert!(parse(b"").is_err());
        assert!(parse(&[0xff; 16]).is_err());
        assert!(parse(&[0x90, 0xff, 0xff, 1, 2]).is_err());
        // A keyword length past the resource stops the keyword walk.
        let v = parse(&[0x90, 0x05, 0x00, b'V', b'3', 0x40, b'a', b'b', 0x78]).unwrap();
        assert!(v.read_only.is_empty());
    }
}
