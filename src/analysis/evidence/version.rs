//! Which NCCL release wrote a log: the `NCCL version` banner when there is one, else the range
//! of releases whose line forms match every line of the process (the table in
//! shared/reference/evidence/README.md), and the path names of the `distance` codes in that
//! range ([`crate::analysis::nccl::NcclPath::from_code`], the `PATH_*` numbering of each release).

use crate::analysis::nccl::{NcclPath, NcclVersion};
use crate::parse::nccl_log::{Comm, Entry, GpuGdr, GpuGdrForm, Level, NetChannel, Record};
use serde::Serialize;

/// A release `2.minor.patch` as an ordered pair.
pub type Release = (u32, u32);

/// The newest minor whose numbering is modelled; later ones number as it does.
const NEWEST_MINOR: u32 = NcclVersion::NEWEST.minor;

/// How the version was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionSource {
    /// The `NCCL version` banner.
    Banner,
    /// The forms of the process's lines.
    LineForms,
    /// Neither says anything.
    Unknown,
}

/// The NCCL release (or range of releases) of one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionInfo {
    /// `2.21.5`, `2.12–2.18.1`, or `unknown`.
    pub text: String,
    /// How it was found.
    pub source: VersionSource,
    /// Lowest release (minor, patch).
    pub lo: Release,
    /// Highest release (minor, patch).
    pub hi: Release,
    /// The line forms that narrowed the range, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forms: Vec<String>,
    /// Set when the banner and the line forms disagree, or forms contradict each other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict: Option<String>,
}

/// Every release the log parser knows (2.3 to newer than modelled).
pub const ANY: (Release, Release) = ((3, 0), (99, u32::MAX));

fn fmt_release(r: Release) -> String {
    if r.1 == 0 || r.1 == u32::MAX {
        format!("2.{}", r.0)
    } else {
        format!("2.{}.{}", r.0, r.1)
    }
}

/// `2.12–2.18.1`, `2.24+`, `≤ 2.11`.
pub fn range_text(lo: Release, hi: Release) -> String {
    match (lo == ANY.0, hi == ANY.1) {
        (true, true) => "any".into(),
        (true, false) => format!("≤ {}", fmt_release(hi)),
        (false, true) => format!("{}+", fmt_release(lo)),
        (false, false) if lo.0 == hi.0 && hi.1 == u32::MAX && lo.1 == 0 => fmt_release(lo),
        _ => format!("{}–{}", fmt_release(lo), fmt_release(hi)),
    }
}

/// Whether a bracket after a rank is a busId (hex, as ≤ 2.18.1 prints it) rather than an
/// nvmlDev: it has hex letters or is at least `0x1000` (bus ≥ 1); `None` when it cannot tell.
pub fn bracket_is_bus_id(b: &str) -> Option<bool> {
    if b.is_empty() || !b.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    if b.bytes().any(|c| c.is_ascii_alphabetic()) || b.len() >= 4 {
        return Some(true);
    }
    // Decimal and short: an nvmlDev (busIds of GPUs are never below 0x1000).
    Some(false)
}

/// The release range a record's form implies, with the form in words (the forms of NET
/// connection, per-GPU GDR and comm lines each in a function of their own).
fn form_range(e: &Entry) -> FormRange {
    match &e.record {
        Record::NetChannel(c) => channel_range(c),
        Record::NicDistance(_) => {
            form((4, 0), (4, MAXP), "`CUDA Dev d[n], NET NIC distance` (2.4)")
        }
        Record::GpuGdr(g) => gpu_gdr_range(e, g),
        Record::NicGdr(n) if n.no_module => form(
            (5, 0),
            (12, MAXP),
            "`… for HCA n 'name' (no module)` (2.5–2.12)",
        ),
        Record::NicGdr(_) => form(
            (13, 0),
            ANY.1,
            "`NET/x : GPU Direct RDMA Enabled|Disabled for HCA` (2.13+)",
        ),
        Record::RingsConnected { gdr: Some(_), .. } => form(
            (24, 0),
            ANY.1,
            "`Connected all rings, use ring PXN … GDR …` (2.24+)",
        ),
        Record::RingsConnected { gdr: None, .. } if e.complete => {
            form((8, 0), (23, MAXP), "`Connected all rings` alone (2.8–2.23)")
        }
        Record::Comm(c) => comm_range(e, c),
        Record::NicList(l) if l.nics.iter().any(|n| !n.members.is_empty()) => {
            form((20, 0), ANY.1, "merged NICs `[0]={…}` (2.20+)")
        }
        Record::NicList(l) if l.relaxed_ordering => {
            form((12, 0), ANY.1, "`[RO]` in the NIC list (2.12+)")
        }
        Record::NicList(l) if l.old_form => {
            form((4, 0), (11, MAXP), "` ; OOB` in the NIC list (2.4–2.11)")
        }
        Record::VirtualNic(v) if v.rail.is_some() => {
            form((30, 0), ANY.1, "virtual device with rail/plane (2.30+)")
        }
        Record::VirtualNic(_) => form((24, 0), ANY.1, "`Made virtual device` (2.24+)"),
        Record::TopoSystem { word, .. } if word == "maxWidth" => {
            form((5, 0), (13, MAXP), "`=== System : maxWidth` (2.5–2.13)")
        }
        Record::TopoSystem { .. } => form((14, 0), ANY.1, "`=== System : maxBw` (2.14+)"),
        Record::TopoNode(n) if n.node.system.is_some() => {
            form((21, 0), ANY.1, "node ids `GPU/0-84000` (2.21+)")
        }
        Record::TopoNode(_) => form((5, 0), (20, MAXP), "node ids `GPU/84000` (2.5–2.20)"),
        Record::TopoPaths(p) if p.paths.iter().any(|x| x.to.system.is_some()) => {
            form((21, 0), ANY.1, "path targets `GPU/0-84000` (2.21+)")
        }
        _ => None,
    }
}

/// A release range, and the form that implies it in words.
type FormRange = Option<(Release, Release, &'static str)>;

/// The last patch of a minor release.
const MAXP: u32 = u32::MAX;

/// A range `lo`–`hi` implied by the form `w`.
fn form(lo: Release, hi: Release, w: &'static str) -> FormRange {
    Some((lo, hi, w))
}

/// A NET connection line: ring or channel, its brackets, its connIndex.
fn channel_range(c: &NetChannel) -> FormRange {
    match c {
        // ≤ 2.2: no source was published and the releases modelled start at 2.3.
        _ if c.ring && c.channel.is_none() => None,
        // A connection quoted from its ranks on (no `Channel NN[/M] : `): whether a connIndex
        // was there is not shown, so it dates nothing by that.
        _ if c.channel.is_none() => match bracket_is_bus_id(&c.from_bracket) {
            Some(false) => form(
                (18, 3),
                ANY.1,
                "connection quoted with nvmlDev brackets (2.18.3+)",
            ),
            Some(true) => form(
                (5, 0),
                (18, 1),
                "connection quoted with busId brackets (2.5–2.18.1)",
            ),
            None => None,
        },
        _ if c.ring && c.from_bracket.is_empty() => form(
            (3, 0),
            (4, MAXP),
            "`Ring %02d : rank -> rank` without brackets (2.3–2.4)",
        ),
        _ if c.ring => form(
            (5, 0),
            (6, MAXP),
            "`Ring %02d : rank[busId] -> …` (2.5–2.6)",
        ),
        _ => match (c.conn_index, bracket_is_bus_id(&c.from_bracket)) {
            (None, _) => form(
                (7, 0),
                (11, MAXP),
                "channel line without /connIndex (2.7–2.11)",
            ),
            (Some(_), Some(true)) => form(
                (12, 0),
                (18, 1),
                "channel line with /connIndex and busId brackets (2.12–2.18.1)",
            ),
            (Some(_), Some(false)) => form(
                (18, 3),
                ANY.1,
                "channel line with nvmlDev brackets (2.18.3+)",
            ),
            (Some(_), None) => None,
        }
        .or_else(|| {
            c.gdr_pci
                .then_some(((26, 0), ANY.1, "(PCI) after /GDRDMA (2.26+)"))
        }),
    }
}

/// A per-GPU GDR line, by its form.
fn gpu_gdr_range(e: &Entry, g: &GpuGdr) -> FormRange {
    match g.form {
        GpuGdrForm::Net24 => form(
            (3, 0),
            (4, MAXP),
            "`NET/IB : GPU Direct RDMA … for GPU cudaDev[nvmlDev]` (2.3–2.4)",
        ),
        GpuGdrForm::Net25 => form((5, 0), (5, MAXP), "`NET/IB : GPU Direct RDMA … <` (2.5)"),
        GpuGdrForm::Mode => form(
            (26, 0),
            (28, MAXP),
            "per-GPU GDR line with `mode` (2.26–2.28)",
        ),
        GpuGdrForm::Ids if e.header.as_ref().is_some_and(|h| h.level == Level::Info) => form(
            (29, 0),
            (29, MAXP),
            "per-GPU GDR line `GPU/x-y (rank n)` at INFO (2.29)",
        ),
        GpuGdrForm::Ids => form(
            (29, 0),
            ANY.1,
            "per-GPU GDR line `GPU/x-y (rank n)` (2.29+)",
        ),
        GpuGdrForm::Classic => {
            let hca_is_id = g.hca.len() > 4;
            match (bracket_is_bus_id(&g.gpu), hca_is_id) {
                (Some(true), false) => form(
                    (6, 0),
                    (20, MAXP),
                    "per-GPU GDR line `GPU <busId> / HCA <index>` (2.6–2.20)",
                ),
                (Some(true), true) => form(
                    (21, 0),
                    (23, MAXP),
                    "per-GPU GDR line `GPU <busId> / HCA <net id>` (2.21–2.23)",
                ),
                (Some(false), _) => form(
                    (24, 0),
                    (25, MAXP),
                    "per-GPU GDR line `GPU <rank> / HCA …` (2.24–2.25)",
                ),
                (None, _) => form(
                    (6, 0),
                    (25, MAXP),
                    "per-GPU GDR line `(distance … <= …), read` (2.6–2.25)",
                ),
            }
        }
    }
}

/// A comm line: which fields it carries.
fn comm_range(e: &Entry, c: &Comm) -> FormRange {
    match c {
        _ if c.func.is_some() && c.bus_id.is_some() => {
            form((21, 0), ANY.1, "`ncclCommInitRank comm …` (2.21+)")
        }
        _ if c.nvml_dev.is_some() && c.bus_id.is_none() && e.complete => form(
            (4, 0),
            (4, MAXP),
            "comm line with nvmlDev and no busId (2.4)",
        ),
        _ if c.nvml_dev.is_some() => form((18, 3), ANY.1, "comm line with nvmlDev (2.18.3+)"),
        _ if c.nnodes.is_some() => form((20, 0), ANY.1, "comm line with nNodes (2.20+)"),
        _ if c.bus_id.is_some()
            && c.comm_id.is_some()
            && c.phase.as_deref() == Some("Init COMPLETE") =>
        {
            form(
                (16, 0),
                (18, 1),
                "comm line with commId and no nvmlDev (2.16–2.18.1)",
            )
        }
        _ if c.bus_id.is_some()
            && c.comm_id.is_none()
            && c.phase.as_deref() == Some("Init COMPLETE") =>
        {
            form(
                (5, 0),
                (15, MAXP),
                "comm line with busId, without commId (2.5–2.15)",
            )
        }
        _ => None,
    }
}

/// Infers the release of one process from its banner (if any) and its entries.
pub fn infer(banner: Option<(u32, u32, u32)>, entries: &[&Entry]) -> VersionInfo {
    let (mut lo, mut hi) = ANY;
    let mut forms: Vec<String> = Vec::new();
    let mut conflict = None;
    for e in entries {
        let Some((flo, fhi, words)) = form_range(e) else {
            continue;
        };
        let (nlo, nhi) = (lo.max(flo), hi.min(fhi));
        if nlo > nhi {
            conflict.get_or_insert_with(|| {
                format!(
                    "line {}: {words} contradicts the other forms ({})",
                    e.line,
                    range_text(lo, hi)
                )
            });
            continue;
        }
        if (nlo, nhi) != (lo, hi) && !forms.iter().any(|f| f == words) {
            forms.push(words.to_string());
        }
        (lo, hi) = (nlo, nhi);
    }
    if let Some((2, m, p)) = banner {
        let ok = (m, p) >= lo && (m, p) <= hi;
        return VersionInfo {
            text: format!("2.{m}.{p}"),
            source: VersionSource::Banner,
            lo: (m, p),
            hi: (m, p),
            forms,
            conflict: (!ok).then(|| {
                format!(
                    "the banner says 2.{m}.{p} but the line forms say {}",
                    range_text(lo, hi)
                )
            }),
        };
    }
    let source = if (lo, hi) == ANY {
        VersionSource::Unknown
    } else {
        VersionSource::LineForms
    };
    VersionInfo {
        text: if source == VersionSource::Unknown {
            "unknown".into()
        } else {
            range_text(lo, hi)
        },
        source,
        lo,
        hi,
        forms,
        conflict,
    }
}

/// The minors (numbering tables) a release range spans, clamped to what is modelled.
pub fn minors(lo: Release, hi: Release) -> impl Iterator<Item = u32> {
    let a = lo.0.clamp(6, NEWEST_MINOR);
    let b = hi.0.clamp(6, NEWEST_MINOR);
    a..=b
}

fn ver(minor: u32) -> NcclVersion {
    NcclVersion { major: 2, minor }
}

/// Narrows a range with an echoed `NCCL_NET_GDR_LEVEL=NAME` and the level code a GDR line
/// compared with: only releases where NAME has that code remain. Returns the narrowed range
/// (unchanged when nothing fits, which means the echo and the line disagree).
pub fn narrow_by_level(lo: Release, hi: Release, name: NcclPath, code: u32) -> (Release, Release) {
    let fit: Vec<u32> = minors(lo, hi)
        .filter(|&m| name.code(ver(m)) == Some(code))
        .collect();
    match (fit.first(), fit.last()) {
        (Some(&a), Some(&b)) => {
            let nlo = if a == lo.0 { lo } else { (a, 0) };
            let nhi = if b == hi.0.min(NEWEST_MINOR) {
                hi
            } else {
                (b, u32::MAX)
            };
            (nlo, nhi)
        }
        _ => (lo, hi),
    }
}

/// A path type code decoded over a release range: one name when every numbering in the range
/// agrees, else each name with its releases (`PHB in 2.8–2.11, PXN in 2.12–2.25`).
pub fn decode(code: u32, lo: Release, hi: Release) -> String {
    let mut groups: Vec<(String, u32, u32)> = Vec::new();
    for m in minors(lo, hi) {
        let name =
            NcclPath::from_code(code, ver(m)).map_or("?".to_string(), |p| p.as_str().to_string());
        match groups.last_mut() {
            Some(g) if g.0 == name => g.2 = m,
            _ => groups.push((name, m, m)),
        }
    }
    if groups.len() == 1 {
        return groups.remove(0).0;
    }
    groups
        .iter()
        .map(|(n, a, b)| {
            if a == b {
                format!("{n} in 2.{a}")
            } else {
                format!("{n} in 2.{a}–2.{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The path type an `NCCL_NET_GDR_LEVEL`/`NCCL_P2P_LEVEL` value means: a name, or a number
/// whose meaning depends on the release (decoded over the range).
pub fn level_value(value: &str, lo: Release, hi: Release) -> Option<String> {
    let v = value.trim();
    if let Some(p) = NcclPath::from_name(v) {
        return Some(p.as_str().to_string());
    }
    v.parse::<u32>().ok().map(|c| decode(c, lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_by_era() {
        // 2.6–2.7: PHB 4, SYS 5 (DeepLearningExamples#383).
        assert_eq!(decode(5, (6, 0), (7, u32::MAX)), "SYS");
        assert_eq!(decode(4, (6, 0), (7, u32::MAX)), "PHB");
        // 2.12–2.18.1: PHB 6, SYS 7 (nccl-tests#350).
        assert_eq!(decode(6, (12, 0), (18, 1)), "PHB");
        assert_eq!(decode(7, (12, 0), (18, 1)), "SYS");
        assert_eq!(
            decode(5, (6, 0), (25, u32::MAX)),
            "SYS in 2.6–2.7, PHB in 2.8–2.11, PXN in 2.12–2.25"
        );
        assert_eq!(
            decode(6, (26, 0), (30, 0)),
            "PXN in 2.26–2.27, P2C in 2.28–2.30"
        );
    }

    #[test]
    fn narrowing_by_an_echoed_level() {
        // `NCCL_NET_GDR_LEVEL set by environment to PHB` and `(distance 5 > 4)`: only 2.6–2.7
        // number PHB 4.
        let (lo, hi) = narrow_by_level((6, 0), (23, u32::MAX), NcclPath::Phb, 4);
        assert_eq!((lo, hi), ((6, 0), (7, u32::MAX)));
        assert_eq!(range_text(lo, hi), "2.6–2.7");
        assert_eq!(level_value("4", (7, 6), (7, 6)).as_deref(), Some("PHB"));
        assert_eq!(level_value("sys", (7, 6), (7, 6)).as_deref(), Some("SYS"));
    }

    #[test]
    fn brackets() {
        assert_eq!(bracket_is_bus_id("1a000"), Some(true));
        assert_eq!(bracket_is_bus_id("81000"), Some(true));
        assert_eq!(bracket_is_bus_id("5"), Some(false));
        assert_eq!(bracket_is_bus_id("12"), Some(false));
        assert_eq!(bracket_is_bus_id("x"), None);
    }
}
