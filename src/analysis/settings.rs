//! The NCCL settings that change a decision peerpath models, read as the NCCL release in use
//! reads them ([`crate::model::nccl_settings`] says where each value came from). Every rule
//! here is NCCL's own, from NVIDIA/nccl (docs/settings.md has each with its release range):
//!
//! - `NCCL_NET_GDR_LEVEL` (`ncclGetLevel`, `src/graph/paths.cc`): a path-type name matched
//!   exactly and case-sensitively (LOC NVL NVB PIX PXB PXN PHB SYS; C2C from 2.26, P2C from
//!   2.27), else a number in the old numbering (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and up SYS);
//!   anything else is ignored without a warning and the default stays. It replaces the default
//!   level completely; GDR is off where the distance is greater (`ncclTopoCheckGdr`).
//! - The default level: PXB up to 2.28; P2C from 2.29 when `NCCL_NET_GDR_C2C` is on.
//! - `NCCL_NET_GDR_C2C` (2.26 default 0, 2.27 on default 1): in 2.26 a PHB distance of a GPU
//!   that reaches its CPU over C2C counts as C2C; in 2.27–2.28 a P2C distance counts as C2C
//!   (so it passes even an explicit PXB); from 2.29 it only chooses the default level.
//! - `NCCL_P2P_LEVEL` (same grammar) replaces the P2P cut-off; `NCCL_P2P_DISABLE=1` is LOC.
//! - `NCCL_IB_DISABLE` not 0 turns NCCL's internal IB/RoCE transport off (NET/Socket unless a
//!   plugin carries the NIC); `NCCL_NET=Socket` picks the socket transport (no RDMA at all).
//! - `NCCL_NET_GDR_READ`, `NCCL_NET_PLUGIN`, `NCCL_TOPO_FILE` are reported as read; only the
//!   receive side (GDR writes) decides "GDR on" here, as NCCL's log line does.

use super::nccl::{NcclPath, NcclVersion};
use crate::model::Device;
use crate::model::nccl_settings::{NcclSetting, NcclSettings};

/// A setting NCCL reads, with the value it takes from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied<T> {
    /// The value NCCL uses.
    pub value: T,
    /// The entry it came from.
    pub setting: NcclSetting,
}

/// A value NCCL would not read as it was written, and what NCCL does instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Misread {
    /// The entry.
    pub setting: NcclSetting,
    /// What NCCL makes of it (ignores it, keeps its default, reads another variable).
    pub why: String,
    /// What the author most likely meant, written so NCCL reads it (`NCCL_NET_GDR_LEVEL=PHB`).
    pub meant: Option<String>,
}

/// The settings of one job as NCCL of one release reads them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Effective {
    /// The NCCL release whose reading this is.
    pub version: NcclVersion,
    /// `NCCL_NET_GDR_LEVEL` when set to a value NCCL reads.
    pub gdr_level: Option<Applied<NcclPath>>,
    /// `NCCL_NET_GDR_C2C` when set to a number.
    pub gdr_c2c: Option<Applied<bool>>,
    /// `NCCL_NET_GDR_READ` when set to a number.
    pub gdr_read: Option<Applied<bool>>,
    /// `NCCL_P2P_LEVEL` (or `NCCL_P2P_DISABLE=1`, read as LOC).
    pub p2p_level: Option<Applied<NcclPath>>,
    /// `NCCL_IB_DISABLE` set to a number other than 0.
    pub ib_disable: Option<NcclSetting>,
    /// `NCCL_NET` (a transport or plugin name).
    pub net: Option<NcclSetting>,
    /// `NCCL_NET_PLUGIN`.
    pub net_plugin: Option<NcclSetting>,
    /// `NCCL_TOPO_FILE`.
    pub topo_file: Option<NcclSetting>,
    /// Values NCCL would not read as written.
    pub misread: Vec<Misread>,
}

/// The path-type names `ncclGetLevel` accepts in a release, in its order.
fn level_names(v: NcclVersion) -> Vec<NcclPath> {
    use NcclPath::*;
    let mut n = vec![Loc, Nvl, Nvb];
    if v.at_least(26) {
        n.push(C2c);
    }
    n.extend([Pix, Pxb]);
    if v.at_least(28) {
        n.extend([P2c, Pxn]);
    } else if v.at_least(27) {
        n.extend([Pxn, P2c]);
    } else {
        n.push(Pxn);
    }
    n.extend([Phb, Sys]);
    n
}

/// `strtol(str, NULL, 0)` over a value whose first character is a digit: decimal, `0x` hex or
/// `0` octal, stopping at the first character that is not a digit of the base.
fn c_strtol(s: &str) -> u64 {
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    u64::from_str_radix(&digits[..end], radix).unwrap_or(if end == 0 { 0 } else { u64::MAX })
}

/// A level value as `ncclGetLevel` of release `v` reads it; `None` when it does not.
pub fn read_level(value: &str, v: NcclVersion) -> Option<NcclPath> {
    if let Some(p) = level_names(v).into_iter().find(|p| p.as_str() == value) {
        return Some(p);
    }
    if value.starts_with(|c: char| c.is_ascii_digit()) {
        use NcclPath::*;
        return Some(match c_strtol(value) {
            0 => Loc,
            1 => Pix,
            2 => Pxb,
            3 => Phb,
            _ => Sys,
        });
    }
    None
}

/// An integer parameter as NCCL's `ncclLoadParam` reads it (`strtoll(str, &end, 0)`: leading
/// blanks skipped, a sign, trailing text ignored); `None` when no number starts the value.
pub fn read_int(value: &str) -> Option<i64> {
    let t = value.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if !t.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let n = c_strtol(t).min(i64::MAX as u64) as i64;
    Some(if neg { -n } else { n })
}

impl Effective {
    /// Reads the settings that matter here from the entries NCCL uses ([`NcclSettings::get`]),
    /// for release `v`, and lists every value NCCL would not read as written.
    pub fn of(s: &NcclSettings, v: NcclVersion) -> Self {
        let mut e = Effective {
            version: v,
            ..Default::default()
        };
        // Names NCCL never matches: a blank around the `=`, a lower-case name.
        for x in &s.entries {
            let t = x.name.trim();
            if t != x.name && s.get(t).is_none() {
                e.misread.push(Misread {
                    setting: x.clone(),
                    why: format!(
                        "NCCL takes the name with its blanks ({:?}), a variable it never reads; `{t}` stays unset",
                        x.name
                    ),
                    meant: Some(format!("{t}={}", x.value.trim())),
                });
            }
        }
        let level = |name: &str, e: &mut Effective| -> Option<Applied<NcclPath>> {
            let x = s.get(name)?;
            match read_level(&x.value, v) {
                Some(p) => {
                    if x.value.ends_with('\r') {
                        e.misread.push(Misread {
                            setting: x.clone(),
                            why: "the value ends in a carriage return (a file saved with CRLF)"
                                .into(),
                            meant: None,
                        });
                    }
                    Some(Applied {
                        value: p,
                        setting: x.clone(),
                    })
                }
                None => {
                    let meant = read_level(x.value.trim().to_ascii_uppercase().as_str(), v)
                        .map(|p| format!("{name}={p}"));
                    e.misread.push(Misread {
                        setting: x.clone(),
                        why: format!(
                            "not a level NCCL {v} reads (names are matched exactly and case-sensitively: {}; or a number 0–4): NCCL ignores it without a warning and keeps its default",
                            level_names(v)
                                .iter()
                                .map(|p| p.as_str())
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                        meant,
                    });
                    None
                }
            }
        };
        e.gdr_level = level("NCCL_NET_GDR_LEVEL", &mut e);
        e.p2p_level = level("NCCL_P2P_LEVEL", &mut e);
        if let Some(x) = s.get("NCCL_P2P_DISABLE")
            && x.value == "1"
        {
            e.p2p_level = Some(Applied {
                value: NcclPath::Loc,
                setting: x.clone(),
            });
        }
        if let Some(x) = s.get("NCCL_IB_GDR_LEVEL") {
            e.misread.push(Misread {
                setting: x.clone(),
                why: "NCCL_IB_GDR_LEVEL was renamed NCCL_NET_GDR_LEVEL in NCCL 2.4.0; no release since 2.4.2 reads it".into(),
                meant: Some(format!("NCCL_NET_GDR_LEVEL={}", x.value.trim())),
            });
        }
        let flag = |name: &str, e: &mut Effective| -> Option<Applied<bool>> {
            let x = s.get(name)?;
            match read_int(&x.value) {
                Some(n) => Some(Applied {
                    value: n != 0,
                    setting: x.clone(),
                }),
                None => {
                    e.misread.push(Misread {
                        setting: x.clone(),
                        why: "not a number: NCCL logs \"Invalid value\" and keeps its default"
                            .into(),
                        meant: None,
                    });
                    None
                }
            }
        };
        e.gdr_c2c = flag("NCCL_NET_GDR_C2C", &mut e);
        e.gdr_read = flag("NCCL_NET_GDR_READ", &mut e);
        e.ib_disable = flag("NCCL_IB_DISABLE", &mut e)
            .filter(|a| a.value)
            .map(|a| a.setting);
        e.net = s.get("NCCL_NET").cloned();
        e.net_plugin = s.get("NCCL_NET_PLUGIN").cloned();
        e.topo_file = s.get("NCCL_TOPO_FILE").cloned();
        e
    }

    /// Whether GDR over C2C is on (`NCCL_NET_GDR_C2C`, default 1 from 2.27, 0 in 2.26).
    pub fn c2c_on(&self) -> bool {
        self.gdr_c2c
            .as_ref()
            .map(|a| a.value)
            .unwrap_or(self.version.at_least(27))
    }

    /// NCCL's default GDR level in this release with these settings.
    pub fn default_gdr_level(&self) -> NcclPath {
        if self.version.at_least(29) && self.c2c_on() {
            NcclPath::P2c
        } else {
            NcclPath::Pxb
        }
    }

    /// The GDR level NCCL uses: the setting's, else `fallback` (the library's default, or
    /// RCCL's relaxation on Rome-class CPUs).
    pub fn gdr_level_or(&self, fallback: NcclPath) -> NcclPath {
        self.gdr_level.as_ref().map(|a| a.value).unwrap_or(fallback)
    }

    /// Whether NCCL allows GPUDirect RDMA at `distance` under `level` (`ncclTopoCheckGdr`'s
    /// `distance > netGdrLevel`, after the C2C remaps of 2.26–2.28). `gpu_c2c`: the GPU reaches
    /// its CPU over C2C.
    pub fn gdr_allows(&self, distance: NcclPath, level: NcclPath, gpu_c2c: bool) -> bool {
        let v = self.version;
        let mut d = distance;
        if self.c2c_on() {
            if v.minor == 26 && d == NcclPath::Phb && gpu_c2c {
                d = NcclPath::C2c;
            }
            if (27..=28).contains(&v.minor) && d == NcclPath::P2c {
                d = NcclPath::C2c;
            }
        }
        d.le(level, v)
    }

    /// The setting that keeps NCCL from driving this NIC over RDMA at all: `NCCL_NET=Socket`,
    /// or `NCCL_IB_DISABLE` for a NIC NCCL's internal IB transport drives (not an AWS EFA or
    /// an HPE Slingshot adapter, which aws-ofi-nccl carries).
    pub fn transport_off(&self, nic: &Device) -> Option<&NcclSetting> {
        if let Some(n) = &self.net
            && n.value.trim().eq_ignore_ascii_case("socket")
        {
            return Some(n);
        }
        let plugin_nic = matches!(nic.vendor_id, Some(0x1d0f) | Some(0x17db));
        self.ib_disable.as_ref().filter(|_| !plugin_nic)
    }

    /// The words for where the GDR level came from: `NCCL_NET_GDR_LEVEL=PHB (from …)` or the
    /// release's default.
    pub fn gdr_level_words(&self, fallback: NcclPath, fallback_words: &str) -> String {
        match &self.gdr_level {
            Some(a) if a.setting.value == a.value.as_str() => a.setting.described(),
            Some(a) => format!("{}, read as {}", a.setting.described(), a.value),
            None => format!("{fallback} is {fallback_words}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::nccl_settings::SettingSource;

    fn v(s: &str) -> NcclVersion {
        s.parse().unwrap()
    }

    fn env(pairs: &[(&str, &str)]) -> NcclSettings {
        NcclSettings {
            entries: pairs
                .iter()
                .map(|(n, x)| NcclSetting {
                    name: n.to_string(),
                    value: x.to_string(),
                    source: SettingSource::Environment,
                })
                .collect(),
            files: vec![],
            environment_read: true,
        }
    }

    #[test]
    fn levels_as_ncclgetlevel_reads_them() {
        assert_eq!(read_level("PHB", v("2.30")), Some(NcclPath::Phb));
        assert_eq!(read_level("phb", v("2.30")), None);
        assert_eq!(read_level("PHB ", v("2.30")), None);
        assert_eq!(read_level("P2C", v("2.26")), None);
        assert_eq!(read_level("P2C", v("2.27")), Some(NcclPath::P2c));
        assert_eq!(read_level("C2C", v("2.25")), None);
        assert_eq!(read_level("3", v("2.30")), Some(NcclPath::Phb));
        assert_eq!(read_level("3abc", v("2.19")), Some(NcclPath::Phb));
        assert_eq!(read_level("0", v("2.30")), Some(NcclPath::Loc));
        assert_eq!(read_level("7", v("2.30")), Some(NcclPath::Sys));
        assert_eq!(read_level("NET", v("2.30")), None);
        assert_eq!(read_int(" 1"), Some(1));
        assert_eq!(read_int("0x10"), Some(16));
        assert_eq!(read_int("-2"), Some(-2));
        assert_eq!(read_int("yes"), None);
    }

    #[test]
    fn effective_levels_and_misreads() {
        let e = Effective::of(&env(&[("NCCL_NET_GDR_LEVEL", "PHB")]), v("2.30"));
        assert_eq!(e.gdr_level.as_ref().unwrap().value, NcclPath::Phb);
        assert!(e.gdr_allows(NcclPath::Phb, e.gdr_level_or(NcclPath::P2c), false));
        assert!(!e.gdr_allows(NcclPath::Sys, e.gdr_level_or(NcclPath::P2c), false));
        let e = Effective::of(&env(&[("NCCL_NET_GDR_LEVEL", "phb")]), v("2.30"));
        assert!(e.gdr_level.is_none());
        assert_eq!(e.misread.len(), 1);
        assert_eq!(
            e.misread[0].meant.as_deref(),
            Some("NCCL_NET_GDR_LEVEL=PHB")
        );
        let e = Effective::of(&env(&[("NCCL_NET_GDR_LEVEL ", "PHB")]), v("2.30"));
        assert!(e.gdr_level.is_none());
        assert_eq!(e.misread.len(), 1, "{:?}", e.misread);
        let e = Effective::of(
            &env(&[("NCCL_P2P_DISABLE", "1"), ("NCCL_IB_DISABLE", "1")]),
            v("2.30"),
        );
        assert_eq!(e.p2p_level.unwrap().value, NcclPath::Loc);
        assert!(e.ib_disable.is_some());
        let e = Effective::of(&env(&[("NCCL_IB_DISABLE", "0")]), v("2.30"));
        assert!(e.ib_disable.is_none());
        // NCCL_IB_DISABLE stops NCCL's IB transport, not the plugin that carries an EFA or a
        // Slingshot adapter; NCCL_NET=Socket stops every NIC.
        let nic = |vendor| {
            let mut d = Device::new(
                "0000:01:00.0".parse().unwrap(),
                "pci0000:00".into(),
                String::new(),
            );
            d.vendor_id = Some(vendor);
            d
        };
        let e = Effective::of(&env(&[("NCCL_IB_DISABLE", "1")]), v("2.30"));
        assert!(e.transport_off(&nic(0x15b3)).is_some());
        assert!(e.transport_off(&nic(0x1d0f)).is_none());
        assert!(e.transport_off(&nic(0x17db)).is_none());
        let e = Effective::of(&env(&[("NCCL_NET", "socket")]), v("2.30"));
        assert!(e.transport_off(&nic(0x1d0f)).is_some());
    }

    #[test]
    fn c2c_by_release() {
        // 2.30: default P2C with C2C on; off makes it PXB and P2C pairs lose GDR.
        let on = Effective::of(&env(&[]), v("2.30"));
        assert_eq!(on.default_gdr_level(), NcclPath::P2c);
        assert!(on.gdr_allows(NcclPath::P2c, on.default_gdr_level(), true));
        let off = Effective::of(&env(&[("NCCL_NET_GDR_C2C", "0")]), v("2.30"));
        assert_eq!(off.default_gdr_level(), NcclPath::Pxb);
        assert!(!off.gdr_allows(NcclPath::P2c, off.default_gdr_level(), true));
        // 2.28: PXB default, but P2C counts as C2C, even under an explicit PXB.
        let e = Effective::of(&env(&[("NCCL_NET_GDR_LEVEL", "PXB")]), v("2.28"));
        assert!(e.gdr_allows(NcclPath::P2c, e.gdr_level_or(NcclPath::Pxb), true));
        // 2.29: an explicit PXB blocks P2C.
        let e = Effective::of(&env(&[("NCCL_NET_GDR_LEVEL", "PXB")]), v("2.29"));
        assert!(!e.gdr_allows(NcclPath::P2c, e.gdr_level_or(NcclPath::P2c), true));
        // 2.26: off by default; on, a PHB distance over C2C passes.
        let e = Effective::of(&env(&[]), v("2.26"));
        assert!(!e.gdr_allows(NcclPath::Phb, NcclPath::Pxb, true));
        let e = Effective::of(&env(&[("NCCL_NET_GDR_C2C", "1")]), v("2.26"));
        assert!(e.gdr_allows(NcclPath::Phb, NcclPath::Pxb, true));
        assert!(!e.gdr_allows(NcclPath::Phb, NcclPath::Pxb, false));
    }
}
