//! Pure parsers of kernel and tool file formats: bytes in, typed values out. No file I/O here;
//! the sources read files and hand the bytes to these functions.
//!
//! A parser that can refuse a value says why with a [`Refusal`] (the value as read and what it
//! is not), so the source can turn it into a warning naming the file; a parser never drops a
//! value silently. Where a format has its own spelling of "unknown" (`numa_node` -1, a link
//! width of 0 on a link that is down, hwloc's infinite `0xf...f` set) the parser answers
//! `Ok(None)`: that is a fact, not a refusal, and no warning follows.

pub mod aer;
pub mod attr;
pub mod config;
pub mod cpulist;
pub mod cufile;
pub mod fabric;
pub mod hwloc;
pub mod ib;
pub mod ib_text;
pub mod joblog;
pub mod kfd;
pub mod kmsg;
pub mod lspci;
pub mod mounts;
pub mod nccl_conf;
pub mod nccl_env;
pub mod nccl_log;
pub mod nccl_tests;
pub mod nldev;
pub mod nvsmi_fabric;
pub mod pci_ids;
pub mod perftest;
pub mod rdma_topo;
pub mod resource;
pub mod text;
pub mod vpd;

use crate::model::cpulist::CpuListError;
use std::fmt;

/// What a refused value is not (or what is wrong with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Bytes that are not UTF-8 text.
    NotUtf8,
    /// Nothing but whitespace.
    Empty,
    /// Not a hexadecimal number (`0x10de`).
    NotHex,
    /// A hexadecimal number wider than the field (16 or 32 bits).
    TooWide(u8),
    /// Not a decimal integer.
    NotInteger,
    /// Not a decimal number.
    NotNumber,
    /// An integer outside what the field can hold.
    OutOfRange,
    /// Not a link speed (`16.0 GT/s PCIe`).
    NotLinkSpeed,
    /// Not a lane count between 1 and 32.
    NotLaneCount,
    /// Not a cpulist (`0-7,16-23`).
    NotCpuList,
    /// A CPU number above [`crate::model::cpulist::MAX_CPU`].
    CpuTooLarge,
    /// Not a CPU mask (`ffff0000,0000ffff`).
    NotCpuMask,
    /// Not a row of distances (`10 21`).
    NotDistances,
    /// Not an InfiniBand port state (`4: ACTIVE`).
    NotPortState,
    /// Not an InfiniBand rate (`400 Gb/sec (4X NDR)`).
    NotRate,
    /// No AER counter line (`RxErr 0`).
    NoCounters,
    /// Not a `resource` line (`start end flags`, hexadecimal, end ≥ start).
    NotResourceLine,
    /// Config space shorter than the 64-byte header.
    ShortConfig,
    /// Config space whose header reads all ones: the device is gone.
    DeviceGone,
    /// Not a PCI address (`0000:17:00.0`).
    NotPciAddress,
    /// Not hwloc's `pci_type` (`CCCC [VVVV:DDDD] [SSSS:ssss] RR`, optional prog-if).
    NotPciType,
    /// Not hwloc's `bridge_pci` bus range (`DDDD:[BB-SS]`).
    NotBusRange,
    /// A link bandwidth that no standard PCIe speed and width give.
    NoStandardLink,
    /// Not PCI Vital Product Data (resource tags with lengths inside the data).
    NotVpd,
    /// Not the JSON `rdma_topo topology -j` prints (a list of complexes).
    NotRdmaTopo,
    /// Not a line of `/proc/self/mountinfo` or `/proc/mounts`.
    NotMountLine,
    /// Not a KFD topology `properties` line (`name value`, decimal).
    NotKfdProperty,
}

impl Reason {
    /// The reason in words, as it follows the quoted value.
    pub fn text(self) -> &'static str {
        match self {
            Reason::NotUtf8 => "is not UTF-8 text",
            Reason::Empty => "is empty",
            Reason::NotHex => "is not a hexadecimal number",
            Reason::TooWide(16) => "does not fit in 16 bits",
            Reason::TooWide(_) => "does not fit in 32 bits",
            Reason::NotInteger => "is not a decimal integer",
            Reason::NotNumber => "is not a number",
            Reason::OutOfRange => "is out of range",
            Reason::NotLinkSpeed => "is not a link speed",
            Reason::NotLaneCount => "is not a lane count (1 to 32)",
            Reason::NotCpuList => CpuListError::NotCpuList.text(),
            Reason::CpuTooLarge => CpuListError::CpuTooLarge.text(),
            Reason::NotCpuMask => "is not a CPU mask",
            Reason::NotDistances => "is not a row of distances",
            Reason::NotPortState => "is not a port state (N: NAME)",
            Reason::NotRate => "is not a rate (N Gb/sec)",
            Reason::NoCounters => "has no counter line",
            Reason::NotResourceLine => "is not a resource line (start end flags)",
            Reason::ShortConfig => "are shorter than the 64-byte config header",
            Reason::DeviceGone => "read all ones (device gone)",
            Reason::NotPciAddress => "is not a PCI address",
            Reason::NotPciType => "is not CCCC [VVVV:DDDD] [SSSS:ssss] RR [PP]",
            Reason::NotBusRange => "is not DDDD:[BB-SS]",
            Reason::NoStandardLink => "matches no standard PCIe speed and width",
            Reason::NotRdmaTopo => "is not rdma_topo topology JSON (a list of complexes)",
            Reason::NotVpd => "are not PCI VPD (no identifier or read-only resource)",
            Reason::NotMountLine => "is not a mount table line",
            Reason::NotKfdProperty => "is not a KFD property line (name value)",
        }
    }
}

/// Why a parser refused a value: the value as read, ready to quote, and the [`Reason`].
/// Displays as `"Unknown" is not a link speed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The value as shown in messages: quoted text (trimmed, escaped, at most
    /// [`Refusal::SHOWN`] characters), or a description of binary content (`3 bytes`).
    pub shown: String,
    /// What is wrong with it.
    pub reason: Reason,
}

impl Refusal {
    /// Characters of a refused value kept in messages.
    pub const SHOWN: usize = 40;

    /// A refusal of text (or bytes meant as text): quoted, trimmed, shortened, with control
    /// characters and non-UTF-8 bytes escaped.
    pub fn of(raw: &[u8], reason: Reason) -> Self {
        let shown = match std::str::from_utf8(raw) {
            Ok(s) => {
                let s = s.trim();
                let mut out: String = s.chars().take(Self::SHOWN).collect();
                if out.len() < s.len() {
                    out.push('…');
                }
                format!("{out:?}")
            }
            Err(_) => {
                let t = raw.trim_ascii();
                let cut = &t[..t.len().min(Self::SHOWN)];
                let more = if cut.len() < t.len() { "…" } else { "" };
                format!("\"{}{more}\"", cut.escape_ascii())
            }
        };
        Refusal { shown, reason }
    }

    /// A refusal of binary content, shown by its length (`3 bytes`).
    pub fn of_len(len: usize, reason: Reason) -> Self {
        Self::of_shown(format!("{len} bytes"), reason)
    }

    /// A refusal of a value that parsed but means nothing here, shown as given (`0.4 GB/s`).
    pub fn of_shown(shown: impl Into<String>, reason: Reason) -> Self {
        Refusal {
            shown: shown.into(),
            reason,
        }
    }

    /// Whether the value was empty (callers reading free text treat that as unknown).
    pub fn is_empty(&self) -> bool {
        self.reason == Reason::Empty
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.shown, self.reason.text())
    }
}

impl std::error::Error for Refusal {}

/// Refused lines of one file kept with their reason; the rest are counted only, so that a file
/// of a million bad lines costs a count, not a million messages (issue 41).
pub const MAX_LINE_REFUSALS: usize = 20;

/// The lines of one file a parser refused: the first [`MAX_LINE_REFUSALS`] with their line
/// number (from 1) and reason, and how many there were in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineRefusals {
    /// The first refused lines, in file order.
    pub first: Vec<(usize, Refusal)>,
    /// Every refused line, those in `first` included.
    pub count: usize,
}

impl LineRefusals {
    /// Counts a refused line, keeping it while fewer than [`MAX_LINE_REFUSALS`] are kept (the
    /// refusal is only built then).
    pub fn push(&mut self, line: usize, r: impl FnOnce() -> Refusal) {
        self.count += 1;
        if self.first.len() < MAX_LINE_REFUSALS {
            self.first.push((line, r()));
        }
    }

    /// Refused lines counted but not kept.
    pub fn more(&self) -> usize {
        self.count - self.first.len()
    }

    /// Whether no line was refused.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_values() {
        let r = Refusal::of(b"Unknown\n", Reason::NotLinkSpeed);
        assert_eq!(r.to_string(), "\"Unknown\" is not a link speed");
        let r = Refusal::of(b"\xff\xfe\n", Reason::NotUtf8);
        assert_eq!(r.to_string(), "\"\\xff\\xfe\" is not UTF-8 text");
        let long = "9".repeat(100);
        let r = Refusal::of(long.as_bytes(), Reason::OutOfRange);
        assert_eq!(r.shown, format!("\"{}…\"", "9".repeat(40)));
        let r = Refusal::of(b"a\tb", Reason::NotHex);
        assert_eq!(r.shown, "\"a\\tb\"");
        assert_eq!(
            Refusal::of_len(3, Reason::ShortConfig).to_string(),
            "3 bytes are shorter than the 64-byte config header"
        );
        assert!(Refusal::of(b"", Reason::Empty).is_empty());
    }
}
