//! NCCL's vocabulary and version-dependent rules: path types with their numeric codes per
//! NCCL version, the default P2P and GPUDirect RDMA cut-off levels. Source: the NCCL tree as
//! summarised in shared/reference/classification.md §2 (`graph.h`, `paths.cc`, `topo.cc`).

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// An NCCL release the rules are evaluated for (`2.19`, `2.30.7`). Only the major and minor
/// numbers matter: no rule in the modelled range changed within a minor series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NcclVersion {
    /// Major version (always 2).
    pub major: u32,
    /// Minor version (7 ..= [`NcclVersion::NEWEST`]'s).
    pub minor: u32,
}

impl NcclVersion {
    /// The newest rule set modelled (NCCL 2.30, classification.md's reference tree).
    pub const NEWEST: NcclVersion = NcclVersion {
        major: 2,
        minor: 30,
    };
    /// The oldest rule set modelled (NCCL 2.7: first version with the NVB path type table).
    pub const OLDEST: NcclVersion = NcclVersion { major: 2, minor: 7 };

    /// `minor >= m` (for `2.m`).
    pub fn at_least(&self, m: u32) -> bool {
        self.minor >= m
    }
}

impl Default for NcclVersion {
    fn default() -> Self {
        Self::NEWEST
    }
}

impl fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for NcclVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a string is not a modelled NCCL version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NcclVersionError(String);

impl FromStr for NcclVersion {
    type Err = NcclVersionError;
    /// Accepts `2.19`, `2.19.3`, `v2.19.3-1`. Versions newer than the newest modelled one are
    /// accepted and evaluated with the newest rules; versions before 2.7 are refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().trim_start_matches('v');
        let t = t.split('-').next().unwrap_or("");
        let mut it = t.split('.');
        let num = |x: Option<&str>| x.and_then(|v| v.parse::<u32>().ok());
        let (Some(major), Some(minor)) = (num(it.next()), num(it.next())) else {
            return Err(NcclVersionError(format!(
                "not an NCCL version (expected 2.MINOR[.PATCH]): {s:?}"
            )));
        };
        if let Some(p) = it.next()
            && p.parse::<u32>().is_err()
        {
            return Err(NcclVersionError(format!(
                "not an NCCL version (bad patch number): {s:?}"
            )));
        }
        if major != 2 {
            return Err(NcclVersionError(format!(
                "NCCL {major}.{minor}: only NCCL 2.x rules are modelled"
            )));
        }
        if minor < Self::OLDEST.minor {
            return Err(NcclVersionError(format!(
                "NCCL 2.{minor}: rules before {} are not modelled",
                Self::OLDEST
            )));
        }
        Ok(NcclVersion {
            major,
            minor: minor.min(Self::NEWEST.minor),
        })
    }
}

/// NCCL path type between two topology nodes (`PATH_*` in `graph.h`). Declared best to worst in
/// the 2.28+ order; the numeric codes differ by version ([`NcclPath::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NcclPath {
    /// Same node.
    Loc,
    /// NVLink only (direct or through the NVSwitch node).
    Nvl,
    /// RCCL's name for the same path type over xGMI (RCCL keeps NCCL's `PATH_NVL` slot and
    /// prints it `XGMI`, `topoPathTypeStr` in ROCm/rccl `src/graph/topo.cc`): two AMD GPUs of
    /// one xGMI hive, directly or over several xGMI hops (RCCL's NVB rule is commented out).
    Xgmi,
    /// NVLink through exactly one intermediate GPU.
    Nvb,
    /// NVLink-C2C to the CPU (Grace).
    C2c,
    /// At most one PCI switch node.
    Pix,
    /// Several PCI switch nodes, no CPU.
    Pxb,
    /// GPU –NVLink→ peer GPU –PCIe→ NIC (GPU→NET direction only, 2.12+).
    Pxn,
    /// GPU –C2C→ CPU –PCIe→ NIC (2.27+).
    P2c,
    /// Through a CPU node (one NUMA node) by PCI: nvidia-smi PHB and NODE.
    Phb,
    /// Across the inter-CPU (inter-NUMA) link.
    Sys,
    /// Only over the network.
    Net,
    /// Disconnected.
    Dis,
}

impl NcclPath {
    /// The name NCCL prints (`topoPathTypeStr`).
    pub fn as_str(self) -> &'static str {
        match self {
            NcclPath::Loc => "LOC",
            NcclPath::Nvl => "NVL",
            NcclPath::Xgmi => "XGMI",
            NcclPath::Nvb => "NVB",
            NcclPath::C2c => "C2C",
            NcclPath::Pix => "PIX",
            NcclPath::Pxb => "PXB",
            NcclPath::Pxn => "PXN",
            NcclPath::P2c => "P2C",
            NcclPath::Phb => "PHB",
            NcclPath::Sys => "SYS",
            NcclPath::Net => "NET",
            NcclPath::Dis => "DIS",
        }
    }

    /// The numeric `PATH_*` value in a given NCCL version (classification.md §2.1), `None` where
    /// the type did not exist yet. Needed to decode log lines such as `(distance 7 > 4)`.
    pub fn code(self, v: NcclVersion) -> Option<u32> {
        use NcclPath::*;
        let m = v.minor;
        if m <= 7 {
            // 2.6–2.7 (`topo.h` of v2.6.4, v2.7.8): no NVB yet, so every later type is one lower.
            return match self {
                Loc => Some(0),
                Nvl | Xgmi => Some(1),
                Pix => Some(2),
                Pxb => Some(3),
                Phb => Some(4),
                Sys => Some(5),
                Net => Some(6),
                Nvb | C2c | Pxn | P2c | Dis => None,
            };
        }
        match self {
            Loc => Some(0),
            Nvl | Xgmi => Some(1),
            Nvb => Some(2),
            C2c => (m >= 26).then_some(3),
            Pix => Some(if m >= 26 { 4 } else { 3 }),
            Pxb => Some(if m >= 26 { 5 } else { 4 }),
            Pxn => match m {
                ..=11 => None,
                12..=25 => Some(5),
                26 | 27 => Some(6),
                _ => Some(7),
            },
            P2c => match m {
                ..=26 => None,
                27 => Some(7),
                _ => Some(6),
            },
            Phb => Some(match m {
                ..=11 => 5,
                12..=25 => 6,
                26 => 7,
                _ => 8,
            }),
            Sys => Some(match m {
                ..=11 => 6,
                12..=25 => 7,
                26 => 8,
                _ => 9,
            }),
            Net => match m {
                ..=17 => None,
                18..=25 => Some(8),
                26 => Some(9),
                _ => Some(10),
            },
            Dis => match m {
                ..=11 => None,
                12..=17 => Some(7),
                18..=25 => Some(9),
                26 => Some(10),
                _ => Some(11),
            },
        }
    }

    /// Every NCCL path type, in the 2.28+ order (for decoding a code back into a name). RCCL's
    /// [`NcclPath::Xgmi`] shares NVL's code and is not listed.
    pub const ALL: [NcclPath; 12] = [
        NcclPath::Loc,
        NcclPath::Nvl,
        NcclPath::Nvb,
        NcclPath::C2c,
        NcclPath::Pix,
        NcclPath::Pxb,
        NcclPath::Pxn,
        NcclPath::P2c,
        NcclPath::Phb,
        NcclPath::Sys,
        NcclPath::Net,
        NcclPath::Dis,
    ];

    /// The path type a numeric code means in version `v` (the inverse of [`NcclPath::code`]),
    /// e.g. `distance 5` of a 2.7 log is SYS, of a 2.19 log PXN.
    pub fn from_code(code: u32, v: NcclVersion) -> Option<NcclPath> {
        Self::ALL.into_iter().find(|p| p.code(v) == Some(code))
    }

    /// Reads a path type name as NCCL's `NCCL_*_LEVEL` variables accept it (`PHB`, `sys`).
    pub fn from_name(s: &str) -> Option<NcclPath> {
        let u = s.trim().to_ascii_uppercase();
        if u == "XGMI" {
            return Some(NcclPath::Xgmi);
        }
        Self::ALL.into_iter().find(|p| p.as_str() == u)
    }

    /// Rank used for "worse than" comparisons in version `v`: the numeric code where the type
    /// exists, else its place in the newest order (so comparisons never panic).
    pub fn rank(self, v: NcclVersion) -> u32 {
        use NcclPath::*;
        match self.code(v) {
            Some(c) => c * 2,
            None => match self {
                // Not in this version: place between neighbours of the 2.28 order.
                C2c => Nvb.rank(v) + 1,
                Pxn | P2c => Pxb.rank(v) + 1,
                Net => Sys.rank(v) + 1,
                Dis => Sys.rank(v) + 1,
                _ => 0,
            },
        }
    }

    /// Whether `self` is at most `other` (no worse) under version `v`'s numbering.
    pub fn le(self, other: NcclPath, v: NcclVersion) -> bool {
        self.rank(v) <= other.rank(v)
    }
}

impl fmt::Display for NcclPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for NcclPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// CPU vendor class as NCCL buckets it (`ncclTopoCpuType`, from CPU node 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuClass {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD` (x86).
    Amd,
    /// Zhaoxin (`CentaurHauls`, `  Shanghai  `).
    Zhaoxin,
    /// Arm (aarch64).
    Arm,
    /// IBM POWER.
    Power,
    /// Another x86 vendor.
    OtherX86,
}

impl CpuClass {
    /// From `/proc/cpuinfo` `vendor_id` (x86) or the CPU implementer / model name (Arm, POWER).
    pub fn from_vendor(vendor: &str) -> CpuClass {
        let v = vendor.trim();
        match v {
            "GenuineIntel" => CpuClass::Intel,
            "AuthenticAMD" => CpuClass::Amd,
            "CentaurHauls" | "Shanghai" => CpuClass::Zhaoxin,
            _ if v.contains("POWER") || v.contains("IBM") => CpuClass::Power,
            _ if v.to_ascii_lowercase().contains("arm") || v.starts_with("0x") => CpuClass::Arm,
            _ => CpuClass::OtherX86,
        }
    }
}

/// NCCL's default GPU–GPU P2P cut-off (`ncclTopoCheckP2p`, classification.md §2.6) and the rule
/// text that chose it. `cpu` is `None` when the CPU vendor is unknown; `gpus` is the number of
/// GPUs in the topology (NCCL counts the communicator's GPUs: all of them is assumed).
pub fn p2p_cutoff(v: NcclVersion, cpu: Option<CpuClass>, gpus: usize) -> (NcclPath, String) {
    if v.at_least(23) {
        match cpu {
            Some(CpuClass::Amd) if gpus <= 2 => (
                NcclPath::Sys,
                format!("NCCL {v}: AMD x86 CPU with {gpus} GPU(s) (≤ 2) → P2P cut-off SYS"),
            ),
            Some(CpuClass::Amd) => (
                NcclPath::Pxb,
                format!(
                    "NCCL {v}: default P2P cut-off PXB (AMD exception needs ≤ 2 GPUs; {gpus} present)"
                ),
            ),
            None if gpus <= 2 => (
                NcclPath::Pxb,
                format!(
                    "NCCL {v}: default P2P cut-off PXB (CPU vendor unknown: the AMD ≤ 2 GPU exception, cut-off SYS, could not be checked)"
                ),
            ),
            _ => (NcclPath::Pxb, format!("NCCL {v}: default P2P cut-off PXB")),
        }
    } else {
        match cpu {
            Some(CpuClass::Intel) | Some(CpuClass::Arm) | Some(CpuClass::Zhaoxin) => (
                NcclPath::Pxb,
                format!("NCCL {v} (≤ 2.22): P2P cut-off PXB on Intel, ARM and Zhaoxin CPUs"),
            ),
            Some(_) => (
                NcclPath::Sys,
                format!("NCCL {v} (≤ 2.22): default P2P cut-off SYS (AMD, POWER and other CPUs)"),
            ),
            None => (
                NcclPath::Sys,
                format!(
                    "NCCL {v} (≤ 2.22): default P2P cut-off SYS (CPU vendor unknown: PXB if it is Intel, ARM or Zhaoxin)"
                ),
            ),
        }
    }
}

/// The cut-off of [`p2p_cutoff`] without its words (no allocation).
pub fn p2p_cutoff_level(v: NcclVersion, cpu: Option<CpuClass>, gpus: usize) -> NcclPath {
    if v.at_least(23) {
        match cpu {
            Some(CpuClass::Amd) if gpus <= 2 => NcclPath::Sys,
            _ => NcclPath::Pxb,
        }
    } else {
        match cpu {
            Some(CpuClass::Intel) | Some(CpuClass::Arm) | Some(CpuClass::Zhaoxin) => NcclPath::Pxb,
            _ => NcclPath::Sys,
        }
    }
}

/// RCCL's default GPU–GPU P2P cut-off (`ncclTopoCheckP2p` in ROCm/rccl `src/graph/paths.cc`,
/// the same in the October 2024 tree and in ROCm/rocm-systems' `projects/rccl`): `PATH_SYS`,
/// lowered to PXB on Intel, Arm and Zhaoxin CPUs; RCCL never took NCCL 2.23's AMD-CPU
/// exception. With its rule text.
pub fn rccl_p2p_cutoff(v: NcclVersion, cpu: Option<CpuClass>) -> (NcclPath, String) {
    match cpu {
        Some(CpuClass::Intel) | Some(CpuClass::Arm) | Some(CpuClass::Zhaoxin) => (
            NcclPath::Pxb,
            format!("RCCL {v}: P2P cut-off PXB on Intel, ARM and Zhaoxin CPUs"),
        ),
        Some(_) => (
            NcclPath::Sys,
            format!("RCCL {v}: default P2P cut-off SYS (AMD and other CPUs)"),
        ),
        None => (
            NcclPath::Sys,
            format!(
                "RCCL {v}: default P2P cut-off SYS (CPU vendor unknown: PXB if it is Intel, ARM or Zhaoxin)"
            ),
        ),
    }
}

/// The level of [`rccl_p2p_cutoff`] without its words.
pub fn rccl_p2p_cutoff_level(cpu: Option<CpuClass>) -> NcclPath {
    match cpu {
        Some(CpuClass::Intel) | Some(CpuClass::Arm) | Some(CpuClass::Zhaoxin) => NcclPath::Pxb,
        _ => NcclPath::Sys,
    }
}

/// Whether RCCL buckets the CPU as "Rome" (`NCCL_TOPO_CPU_TYPE_ROME`, renamed
/// `NCCL_TOPO_CPU_MODEL_AMD_ROME`; `ncclTopoAddCpu` in ROCm/rccl `src/graph/topo.cc`: "Treat
/// Milan also as Rome"): an AMD x86 CPU with RCCL's `familyid` 143 and `modelid` ≥ 49 (Zen 2,
/// cpuinfo family 23) or `familyid` 175 (cpuinfo family 25: Milan, Genoa, MI300A's Zen 4).
/// RCCL's XML writes the family as `(extended << 4) | base` (143 = 0x8F, 175 = 0xAF); /proc/cpuinfo
/// and hwloc give the summed family (23, 25): both spellings are accepted.
pub fn rccl_rome_class(vendor: Option<&str>, family: Option<u32>, model: Option<u32>) -> bool {
    if vendor.map(str::trim) != Some("AuthenticAMD") {
        return false;
    }
    match (family, model) {
        (Some(143 | 23), Some(m)) => m >= 49,
        (Some(175 | 25), _) => true,
        _ => false,
    }
}

/// The level of [`gdr_level`] without its words.
pub fn gdr_level_path(v: NcclVersion) -> NcclPath {
    if v.at_least(27) {
        NcclPath::P2c
    } else {
        NcclPath::Pxb
    }
}

/// NCCL's default `NCCL_NET_GDR_LEVEL` (classification.md §2.7) and the rule text. On x86 PCIe
/// machines P2C and PXB admit the same paths (PIX, PXB).
pub fn gdr_level(v: NcclVersion) -> (NcclPath, String) {
    if v.at_least(27) {
        (
            NcclPath::P2c,
            format!(
                "NCCL {v}: default NCCL_NET_GDR_LEVEL P2C (NCCL_NET_GDR_C2C=1), i.e. PIX/PXB on PCIe-only paths"
            ),
        )
    } else {
        (
            NcclPath::Pxb,
            format!("NCCL {v}: default NCCL_NET_GDR_LEVEL PXB"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> NcclVersion {
        s.parse().unwrap()
    }

    #[test]
    fn parses_versions() {
        assert_eq!(
            v("2.19"),
            NcclVersion {
                major: 2,
                minor: 19
            }
        );
        assert_eq!(v("2.30.7"), NcclVersion::NEWEST);
        assert_eq!(
            v("v2.18.3-1"),
            NcclVersion {
                major: 2,
                minor: 18
            }
        );
        assert_eq!(v("2.99"), NcclVersion::NEWEST);
        assert!("2.6".parse::<NcclVersion>().is_err());
        assert!("3.0".parse::<NcclVersion>().is_err());
        assert!("two".parse::<NcclVersion>().is_err());
        assert!("2".parse::<NcclVersion>().is_err());
        assert!("2.19.x".parse::<NcclVersion>().is_err());
    }

    #[test]
    fn codes_follow_the_version_table() {
        // The log line "distance 7 > 4" of NCCL 2.19 is SYS > PXB.
        assert_eq!(NcclPath::Sys.code(v("2.19")), Some(7));
        assert_eq!(NcclPath::Pxb.code(v("2.19")), Some(4));
        assert_eq!(NcclPath::Phb.code(v("2.11")), Some(5));
        assert_eq!(NcclPath::Pxn.code(v("2.11")), None);
        assert_eq!(NcclPath::Dis.code(v("2.12")), Some(7));
        assert_eq!(NcclPath::C2c.code(v("2.26")), Some(3));
        assert_eq!(NcclPath::P2c.code(v("2.27")), Some(7));
        assert_eq!(NcclPath::Pxn.code(v("2.27")), Some(6));
        assert_eq!(NcclPath::P2c.code(v("2.28")), Some(6));
        assert_eq!(NcclPath::Pxn.code(v("2.28")), Some(7));
        assert_eq!(NcclPath::Net.code(v("2.30")), Some(10));
        assert_eq!(NcclPath::Dis.code(v("2.30")), Some(11));
        assert!(NcclPath::Pxb.le(NcclPath::P2c, v("2.30")));
        assert!(!NcclPath::Phb.le(NcclPath::P2c, v("2.30")));
        assert!(NcclPath::Pxb.le(NcclPath::Pxb, v("2.19")));
        assert!(!NcclPath::Sys.le(NcclPath::Pxb, v("2.19")));
    }

    #[test]
    fn codes_of_2_6_and_2_7_have_no_nvb() {
        // v2.6.4 / v2.7.8 topo.h: LOC 0 NVL 1 PIX 2 PXB 3 PHB 4 SYS 5 NET 6.
        let old = NcclVersion { major: 2, minor: 6 };
        assert_eq!(NcclPath::Phb.code(v("2.7")), Some(4));
        assert_eq!(NcclPath::Sys.code(old), Some(5));
        assert_eq!(NcclPath::Nvb.code(v("2.7")), None);
        assert_eq!(NcclPath::from_code(5, v("2.7")), Some(NcclPath::Sys));
        assert_eq!(NcclPath::from_code(5, v("2.8")), Some(NcclPath::Phb));
        assert_eq!(NcclPath::from_code(5, v("2.19")), Some(NcclPath::Pxn));
        assert_eq!(NcclPath::from_code(6, v("2.28")), Some(NcclPath::P2c));
        assert_eq!(NcclPath::from_name("phb"), Some(NcclPath::Phb));
        for m in 6..=30 {
            let ver = NcclVersion { major: 2, minor: m };
            for p in NcclPath::ALL {
                // 2.12–2.17 define PATH_DIS equal to PATH_SYS: the code reads as SYS.
                if let Some(c) = p.code(ver) {
                    let back = NcclPath::from_code(c, ver).unwrap();
                    assert!(
                        back == p || (p == NcclPath::Dis && back == NcclPath::Sys),
                        "2.{m} {p}"
                    );
                }
            }
        }
    }

    #[test]
    fn p2p_cutoffs() {
        assert_eq!(
            p2p_cutoff(v("2.30"), Some(CpuClass::Amd), 2).0,
            NcclPath::Sys
        );
        assert_eq!(
            p2p_cutoff(v("2.30"), Some(CpuClass::Amd), 4).0,
            NcclPath::Pxb
        );
        assert_eq!(
            p2p_cutoff(v("2.30"), Some(CpuClass::Intel), 2).0,
            NcclPath::Pxb
        );
        assert_eq!(
            p2p_cutoff(v("2.22"), Some(CpuClass::Amd), 8).0,
            NcclPath::Sys
        );
        assert_eq!(
            p2p_cutoff(v("2.22"), Some(CpuClass::Intel), 8).0,
            NcclPath::Pxb
        );
        assert_eq!(gdr_level(v("2.26")).0, NcclPath::Pxb);
        for ver in ["2.12", "2.22", "2.23", "2.26", "2.27", "2.30"] {
            assert_eq!(gdr_level_path(v(ver)), gdr_level(v(ver)).0);
            for cpu in [
                None,
                Some(CpuClass::Amd),
                Some(CpuClass::Intel),
                Some(CpuClass::Power),
            ] {
                for gpus in [1, 2, 8] {
                    assert_eq!(
                        p2p_cutoff_level(v(ver), cpu, gpus),
                        p2p_cutoff(v(ver), cpu, gpus).0
                    );
                }
            }
        }
        assert_eq!(gdr_level(v("2.28")).0, NcclPath::P2c);
    }
}
