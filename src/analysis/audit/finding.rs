//! The finding: what the audit reports, with the evidence it read and the remedy it suggests.

use super::check::CheckId;
use crate::model::Bdf;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// How bad a finding is. Ordered from worst to least: `Error` fails the audit (exit 1),
/// `Warning` is a risk or inefficiency, `Unknown` means a fact could not be read (never a pass,
/// never a fail), `Info` is a fact worth knowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// GPUDirect RDMA cannot work, will hang, or loses bandwidth for certain; fails the audit.
    Error,
    /// A risk or an inefficiency; does not fail the audit.
    Warning,
    /// A fact the check needs could not be read; the reason is in the summary.
    Unknown,
    /// A fact worth knowing.
    Info,
}

impl Severity {
    /// The name used in JSON and text output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Unknown => "unknown",
            Severity::Info => "info",
        }
    }
}

/// One file the check read (sysfs/procfs path as on the live machine) and its raw value (or the
/// decoded register, for config space).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The path, e.g. `/sys/bus/pci/devices/0000:17:00.0/current_link_width`.
    pub path: String,
    /// The value read, e.g. `8`.
    pub value: String,
}

impl Evidence {
    /// Evidence from a path and a value.
    pub fn new(path: impl Into<String>, value: impl Into<String>) -> Self {
        Evidence {
            path: path.into(),
            value: value.into(),
        }
    }
}

/// A GPU–NIC pair a finding concerns (GPU address, NIC address and its RDMA name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairRef {
    /// GPU PCI address.
    pub gpu: Bdf,
    /// NIC PCI address.
    pub nic: Bdf,
    /// NIC RDMA device name (`mlx5_0`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<String>,
}

/// What a finding is about. Serialised as the text the JSON has always carried (`node`,
/// `0000:17:00.0`, `0000:17:00.0 (mlx5_0)`, `mlx5_0`, `mlx5_0/1`, `rail 3`) and ordered as that
/// text, so findings sort as before.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Subject {
    /// The whole node (kernel modules, drivers, hypervisor, or a summary over many devices).
    Node,
    /// A PCI function (GPU, NIC, or a port on a path): `0000:17:00.0`.
    Device(Bdf),
    /// A NIC named with its first RDMA device, as profile findings name compute NICs:
    /// `0000:18:00.0 (mlx5_0)`.
    Nic {
        /// PCI address.
        bdf: Bdf,
        /// RDMA device name.
        rdma: String,
    },
    /// An RDMA device (`mlx5_0`).
    RdmaDevice(String),
    /// One port of an RDMA device (`mlx5_0/1`).
    RdmaPort {
        /// RDMA device name.
        device: String,
        /// Port number (`/sys/class/infiniband/<dev>/ports/<port>`).
        port: u32,
    },
    /// Rail `k` of an expected-layout profile (GPU k's compute NIC): `rail 3`.
    Rail(usize),
}

impl Subject {
    /// The PCI function it names, when it names one.
    pub fn bdf(&self) -> Option<Bdf> {
        match self {
            Subject::Device(b) | Subject::Nic { bdf: b, .. } => Some(*b),
            _ => None,
        }
    }

    /// The RDMA device it names, when it names one.
    pub fn rdma(&self) -> Option<&str> {
        match self {
            Subject::Nic { rdma, .. } | Subject::RdmaDevice(rdma) => Some(rdma),
            Subject::RdmaPort { device, .. } => Some(device),
            _ => None,
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Node => f.write_str("node"),
            Subject::Device(b) => write!(f, "{b}"),
            Subject::Nic { bdf, rdma } => write!(f, "{bdf} ({rdma})"),
            Subject::RdmaDevice(d) => f.write_str(d),
            Subject::RdmaPort { device, port } => write!(f, "{device}/{port}"),
            Subject::Rail(k) => write!(f, "rail {k}"),
        }
    }
}

impl std::str::FromStr for Subject {
    type Err = std::convert::Infallible;
    /// Reads the text back (for `peerpath.audit/1` documents): `node`, a PCI address,
    /// `<address> (<rdma>)`, `rail <k>`, `<rdma>/<port>`; anything else is an RDMA device name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "node" {
            return Ok(Subject::Node);
        }
        if let Ok(b) = s.parse::<Bdf>() {
            return Ok(Subject::Device(b));
        }
        if let Some(k) = s.strip_prefix("rail ").and_then(|k| k.parse().ok()) {
            return Ok(Subject::Rail(k));
        }
        if let Some((b, r)) = s.split_once(" (")
            && let (Ok(bdf), Some(rdma)) = (b.parse::<Bdf>(), r.strip_suffix(')'))
        {
            return Ok(Subject::Nic {
                bdf,
                rdma: rdma.to_string(),
            });
        }
        if let Some((d, p)) = s.rsplit_once('/')
            && let Ok(port) = p.parse()
        {
            return Ok(Subject::RdmaPort {
                device: d.to_string(),
                port,
            });
        }
        Ok(Subject::RdmaDevice(s.to_string()))
    }
}

impl Ord for Subject {
    /// As the text (findings sort by subject text, as before the enum).
    fn cmp(&self, other: &Self) -> Ordering {
        self.to_string().cmp(&other.to_string())
    }
}

impl PartialOrd for Subject {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl From<Subject> for String {
    fn from(s: Subject) -> String {
        s.to_string()
    }
}

impl From<String> for Subject {
    fn from(s: String) -> Subject {
        let Ok(v) = s.parse();
        v
    }
}

impl From<Bdf> for Subject {
    fn from(b: Bdf) -> Self {
        Subject::Device(b)
    }
}

/// One audit finding (`peerpath.audit/1` `findings[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable check id (`acs-redirect`, `link-degraded`, …; see docs/audit.md).
    pub id: CheckId,
    /// Severity.
    pub severity: Severity,
    /// What it is about: a PCI function, an RDMA device or port, a rail, or the node.
    pub subject: Subject,
    /// One line saying what is wrong (or unknown, and why).
    pub summary: String,
    /// Every file read for this finding and its raw value.
    pub evidence: Vec<Evidence>,
    /// What to change; peerpath never changes anything itself.
    pub remedy: String,
    /// The GPU–NIC pairs this finding concerns, when it is about paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairRef>,
    /// Set when a probe measurement (`--evidence`) changed this finding: what was measured and
    /// how it changed the inferred severity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<String>,
}

impl Finding {
    /// A finding with no evidence, pairs or measurement yet.
    pub fn new(
        id: impl Into<CheckId>,
        severity: Severity,
        subject: impl Into<Subject>,
        summary: impl Into<String>,
        remedy: impl Into<String>,
    ) -> Self {
        Finding {
            id: id.into(),
            severity,
            subject: subject.into(),
            summary: summary.into(),
            evidence: Vec::new(),
            remedy: remedy.into(),
            pairs: Vec::new(),
            measured: None,
        }
    }

    /// Keeps the remedy only for an error: at any other severity (the same fact read as
    /// harmless, or unknown) the remedy is `none`.
    pub fn remedy_only_if_error(mut self) -> Self {
        if self.severity != Severity::Error {
            self.remedy = "none".to_string();
        }
        self
    }

    /// Adds one piece of evidence.
    pub fn with(mut self, path: impl Into<String>, value: impl Into<String>) -> Self {
        self.evidence.push(Evidence::new(path, value));
        self
    }

    /// Adds evidence items.
    pub fn with_all(mut self, ev: impl IntoIterator<Item = Evidence>) -> Self {
        self.evidence.extend(ev);
        self
    }

    /// Adds the pairs it concerns.
    pub fn with_pairs(mut self, pairs: impl IntoIterator<Item = PairRef>) -> Self {
        self.pairs.extend(pairs);
        self
    }
}

/// A path label as the audit writes it (`pairs[].label`, summaries): nvidia-smi's names, and
/// `unknown` (not `?`) for [`Label::Unknown`].
///
/// [`Label::Unknown`]: crate::analysis::classify::Label::Unknown
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathLabel(pub crate::analysis::classify::Label);

impl fmt::Display for PathLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            crate::analysis::classify::Label::Unknown => f.write_str("unknown"),
            l => write!(f, "{l}"),
        }
    }
}

impl Serialize for PathLabel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PathLabel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "unknown" {
            return Ok(PathLabel(crate::analysis::classify::Label::Unknown));
        }
        s.parse().map(PathLabel).map_err(serde::de::Error::custom)
    }
}

/// The sysfs path of a PCI function's attribute, as on the live machine.
pub fn pci_path(bdf: &crate::model::Bdf, attr: &str) -> String {
    format!("/sys/bus/pci/devices/{bdf}/{attr}")
}

/// Where a device was read, as finding evidence. From sysfs: `/sys/bus/pci/devices/BDF` and
/// the canonical path it links to. From an XML input, whose devices carry their element's place
/// instead of a sysfs path (`nccl-xml:line 8`, `hwloc-xml:line 8 (object gp_index 4)`, set by
/// `sources::nccl_xml`/`hwloc_xml`): the address and `FILE line 8`, the input's own path. From
/// an input with no place for it (peerpath JSON without one): the address alone.
pub fn device_place(topo: &crate::model::Topology, d: &crate::model::Device) -> Evidence {
    let xml = ["nccl-xml:", "hwloc-xml:", "lspci:"]
        .iter()
        .find_map(|p| d.sysfs_path.strip_prefix(p));
    match xml {
        Some(at) => Evidence::new(d.bdf.to_string(), format!("{} {at}", topo.source.path)),
        None if d.sysfs_path.is_empty() => Evidence::new(
            d.bdf.to_string(),
            format!("{} (no sysfs path in this input)", topo.source.path),
        ),
        None => Evidence::new(
            pci_path(&d.bdf, "").trim_end_matches('/').to_string(),
            format!("-> /{}", d.sysfs_path),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::Label;

    #[test]
    fn subject_text_round_trips() {
        let b: Bdf = "0000:18:00.0".parse().unwrap();
        for (s, text) in [
            (Subject::Node, "node"),
            (Subject::Device(b), "0000:18:00.0"),
            (
                Subject::Nic {
                    bdf: b,
                    rdma: "mlx5_0".into(),
                },
                "0000:18:00.0 (mlx5_0)",
            ),
            (Subject::RdmaDevice("mlx5_bond_0".into()), "mlx5_bond_0"),
            (
                Subject::RdmaPort {
                    device: "mlx5_bond_0".into(),
                    port: 1,
                },
                "mlx5_bond_0/1",
            ),
            (Subject::Rail(3), "rail 3"),
        ] {
            assert_eq!(s.to_string(), text);
            assert_eq!(text.parse::<Subject>(), Ok(s.clone()));
            let j = serde_json::to_string(&s).unwrap();
            assert_eq!(j, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<Subject>(&j).unwrap(), s);
        }
        // Ordered as the text: `0000:…` < `mlx5_0` < `node` < `rail 3`.
        let mut v = [
            Subject::Rail(3),
            Subject::Node,
            Subject::RdmaDevice("mlx5_0".into()),
            Subject::Device(b),
        ];
        v.sort();
        let t: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        assert_eq!(t, ["0000:18:00.0", "mlx5_0", "node", "rail 3"]);
    }

    #[test]
    fn path_label_says_unknown_not_question_mark() {
        for (l, text) in [
            (Label::Pix, "PIX"),
            (Label::Sys, "SYS"),
            (Label::Unknown, "unknown"),
        ] {
            let p = PathLabel(l);
            assert_eq!(p.to_string(), text);
            let j = serde_json::to_string(&p).unwrap();
            assert_eq!(j, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<PathLabel>(&j).unwrap(), p);
        }
    }
}
