//! The finding: what the audit reports, with the evidence it read and the remedy it suggests.

use serde::{Deserialize, Serialize};

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
    pub gpu: String,
    /// NIC PCI address.
    pub nic: String,
    /// NIC RDMA device name (`mlx5_0`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<String>,
}

/// One audit finding (`peerpath.audit/1` `findings[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable check id (`acs-redirect`, `link-degraded`, …; see docs/audit.md).
    pub id: String,
    /// Severity.
    pub severity: Severity,
    /// What it is about: a PCI address, an RDMA device name, or `node`.
    pub subject: String,
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
        id: &str,
        severity: Severity,
        subject: impl Into<String>,
        summary: impl Into<String>,
        remedy: impl Into<String>,
    ) -> Self {
        Finding {
            id: id.to_string(),
            severity,
            subject: subject.into(),
            summary: summary.into(),
            evidence: Vec::new(),
            remedy: remedy.into(),
            pairs: Vec::new(),
            measured: None,
        }
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

/// The sysfs path of a PCI function's attribute, as on the live machine.
pub fn pci_path(bdf: &crate::model::Bdf, attr: &str) -> String {
    format!("/sys/bus/pci/devices/{bdf}/{attr}")
}
