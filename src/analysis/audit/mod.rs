//! `peerpath audit`: every known cause of a silent GPUDirect RDMA fallback, checked over one
//! scanned [`Topology`] (live machine or snapshot — the audit never reads files itself).
//!
//! Each check family lives in its own file and returns [`Finding`]s; [`run`] puts them
//! together, folds in probe evidence and an expected-layout profile, and derives the verdict.
//! Sources of every fact: see `docs/audit.md` and shared/reference/gdr-probe-and-audit.md §2.

pub mod amd;
pub mod arrangement;
pub mod cassini;
pub mod check;
pub mod evidence;
pub mod finding;
pub mod gdr;
pub mod gds;
mod gpu_verdict;
pub mod iommu;
pub mod job;
pub mod join;
pub mod judged;
pub mod nccl_settings;
pub mod nextgen;
pub mod pcie;
pub mod placement;
pub mod platform;
pub mod profile;
pub mod rdma;
pub mod ready;
pub mod scope;
pub mod xid;

pub use check::CheckId;
pub use finding::{
    Evidence, Finding, PairRef, PathLabel, Severity, Subject, device_place, pci_path,
};
pub use ready::{GdrReadiness, GdrReason};

use crate::analysis::classify::{Classifier, ClassifyOptions};
use crate::analysis::pairing::NodeView;
use crate::analysis::paths::Paths;
use crate::model::{Bdf, Device, DeviceKind, OsDeviceKind, Topology};
use serde::{Deserialize, Serialize};

/// Version tag of the audit JSON document.
pub const AUDIT_SCHEMA: &str = "peerpath.audit/1";

/// A GPU and the NIC the placement matching gave it (see [`placement`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// GPU PCI address.
    pub gpu: Bdf,
    /// NIC PCI address.
    pub nic: Bdf,
    /// NIC RDMA device name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<String>,
    /// Path class as nvidia-smi names it (`PIX`, `PXB`, `PHB`, `NODE`, `SYS`, `unknown`).
    pub label: PathLabel,
    /// Why the classifier chose that label.
    pub reason: String,
    /// Bottleneck bandwidth of the path in GB/s, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck_gbytes: Option<f64>,
    /// Whether the label is PIX or PXB (GPUDirect RDMA is used by NCCL by default): the path
    /// fact, whatever the settings.
    pub local: bool,
    /// Whether NCCL uses GPUDirect RDMA on this pair under the job's effective settings (the
    /// classifier's one decision: distance against the GDR level, C2C, transport).
    #[serde(default)]
    pub gdr: bool,
    /// What would give this pair GPUDirect RDMA when it has none; `none` when it has it.
    #[serde(default)]
    pub remedy: RemedyClass,
}

/// What would give a GPU–NIC pair GPUDirect RDMA (the audit's remedy class, docs/audit.md
/// `#gpu-nic-path`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemedyClass {
    /// Nothing: NCCL uses GPUDirect RDMA on the pair.
    #[default]
    None,
    /// Another arrangement of this node's own adapters does better: move a NIC (an error).
    Misplaced,
    /// No arrangement does better: the node is built this way (a warning, remedied by what the
    /// platform's operators document, or information once the settings admit the path).
    Design,
    /// The path allows GPUDirect RDMA but a setting turns it off, or a setting NCCL does not
    /// read as written keeps it off (an error).
    Setting,
    /// The input cannot show what decides (a POWER CPU's NVLink to the GPU, an unknown label).
    Unknown,
}

impl RemedyClass {
    /// The word JSON and text use.
    pub fn as_str(self) -> &'static str {
        match self {
            RemedyClass::None => "none",
            RemedyClass::Misplaced => "misplaced",
            RemedyClass::Design => "design",
            RemedyClass::Setting => "setting",
            RemedyClass::Unknown => "unknown",
        }
    }
}

impl Pair {
    /// The reference used in findings.
    pub fn to_ref(&self) -> PairRef {
        PairRef {
            gpu: self.gpu,
            nic: self.nic,
            rdma: self.rdma.clone(),
        }
    }
}

/// What every check reads: the topology with its paths model and classification (built once
/// for the whole audit), the GPUs and RDMA NICs in it, and the GPU–NIC pairs.
pub struct Ctx<'a> {
    /// The scanned node.
    pub topo: &'a Topology,
    /// The classification over the node's paths model.
    pub cl: &'a Classifier<'a>,
    /// The GPU/NIC tables the one pairing is chosen from (GPU–NIC pairs only: `cand.gg` is
    /// empty, see [`NodeView::gpu_nic`]; on a large node only the pairs under one host bridge,
    /// see [`NodeView::near`]; a check that needs GPU pairs or every pair builds the full view).
    pub view: NodeView,
    /// GPUs (kind `gpu`, SR-IOV VFs excluded, Intel integrated graphics on the root bus
    /// excluded), in address order.
    pub gpus: Vec<&'a Device>,
    /// NICs with at least one RDMA device (VFs excluded), in address order.
    pub nics: Vec<&'a Device>,
    /// NICs without an RDMA device (management Ethernet, or RDMA class not captured).
    pub plain_nics: Vec<&'a Device>,
    /// GPU → NIC matching (empty when there are no GPUs or no RDMA NICs).
    pub pairs: Vec<Pair>,
    /// Hypervisor evidence was found: sysfs topology may be synthetic.
    pub virtualized: bool,
    /// The NVIDIA ConnectX–GPU platform rdma_topo would see (Data Direct, inline, NUMA).
    pub platform: Option<crate::analysis::nvcx::Platform>,
}

impl<'a> Ctx<'a> {
    /// Selects GPUs and NICs from the classified topology; pairs are left empty (see
    /// [`placement::pair`]).
    pub fn new(cl: &'a Classifier<'a>) -> Self {
        let topo = cl.topo();
        // Intel integrated graphics (0000:00:02.0, no port above it) is no GPUDirect endpoint;
        // matching it to a NIC would only produce false PHB findings.
        let gpus: Vec<&Device> = topo
            .of_kind(DeviceKind::Gpu)
            .filter(|d| !(d.vendor_id == Some(0x8086) && d.parent.is_none()))
            .collect();
        let (nics, plain_nics): (Vec<&Device>, Vec<&Device>) = topo
            .of_kind(DeviceKind::Nic)
            .partition(|d| d.os_devices.iter().any(|o| o.kind == OsDeviceKind::Rdma));
        let view = NodeView::near(cl);
        Ctx {
            topo,
            cl,
            view,
            gpus,
            nics,
            plain_nics,
            pairs: Vec::new(),
            virtualized: !topo.machine.hypervisor.is_empty(),
            platform: crate::analysis::nvcx::detect(cl.paths()),
        }
    }

    /// The paths model.
    pub fn paths(&self) -> &Paths<'a> {
        self.cl.paths()
    }

    /// The devices between two endpoints on the PCIe path their traffic takes (from the paths
    /// model; a NIC with a Data Direct DMA function is measured from that function).
    pub fn path_devices(&self, a: &Bdf, b: &Bdf) -> PathDevices {
        let p = self.paths();
        let (Some(ia), Some(ib)) = (
            p.index(a).map(|i| p.data_path(i)),
            p.index(b).map(|i| p.data_path(i)),
        ) else {
            return PathDevices {
                a_up: Vec::new(),
                b_up: Vec::new(),
                lca: None,
            };
        };
        let bt = p.between(ia, ib);
        let bdfs = |v: &[u32]| v.iter().map(|&i| p.device(i).bdf).collect();
        PathDevices {
            a_up: bdfs(bt.a_up),
            b_up: bdfs(bt.b_up),
            lca: bt.lca.map(|i| p.device(i).bdf),
        }
    }

    /// NVIDIA GPUs only (the peer-memory, driver and BAR1 checks are NVIDIA-specific).
    pub fn nvidia_gpus(&self) -> impl Iterator<Item = &&'a Device> {
        self.gpus.iter().filter(|d| d.vendor_id == Some(0x10de))
    }

    /// Name of a device for messages: `0000:18:00.0 (mlx5_0)` for RDMA NICs.
    pub fn name(&self, bdf: &Bdf) -> String {
        match self.topo.device(bdf).and_then(|d| d.rdma_names().next()) {
            Some(r) => format!("{bdf} ({r})"),
            None => bdf.to_string(),
        }
    }

    /// How findings name a device: its address with its first RDMA device
    /// (`0000:18:00.0 (mlx5_0)`, as [`Ctx::name`] writes it) for RDMA NICs, else its address.
    pub fn named(&self, bdf: &Bdf) -> Subject {
        match self.topo.device(bdf).and_then(|d| d.rdma_names().next()) {
            Some(r) => Subject::Nic {
                bdf: *bdf,
                rdma: r.to_string(),
            },
            None => Subject::Device(*bdf),
        }
    }

    /// The severity of a host-configuration fault (ACS, IOMMU translation and groups, Data
    /// Direct): an error on bare metal, a warning in a VM, whose hypervisor may present a
    /// synthetic topology and own the setting.
    pub fn config_fault_severity(&self) -> Severity {
        if self.virtualized {
            Severity::Warning
        } else {
            Severity::Error
        }
    }

    /// Whether the input carries the kernel's per-device facts (config space, IOMMU groups):
    /// sysfs, a snapshot, or peerpath's JSON of one; NCCL and hwloc XML do not.
    pub fn has_device_files(&self) -> bool {
        matches!(
            self.topo.source.kind.as_str(),
            "sysfs" | "snapshot" | "json"
        )
    }

    /// Whether the input carries devices' config space (ACS, port types): the kernel's files
    /// ([`Self::has_device_files`]) or `lspci` text, whose registers lspci decoded from them.
    pub fn has_config_space(&self) -> bool {
        self.has_device_files() || self.topo.source.kind == "lspci"
    }

    /// Pairs that involve a device (as GPU or NIC).
    pub fn pairs_of(&self, bdf: &Bdf) -> impl Iterator<Item = &Pair> {
        let b = *bdf;
        self.pairs.iter().filter(move |p| p.gpu == b || p.nic == b)
    }
}

/// Why a device's config space cannot answer a question that needs `need` bytes (256 for the
/// PCIe capability, 4096 for extended capabilities such as ACS), or `None` when it can: the
/// input's own reason ([`Device::config_note`]) where it gave one.
pub fn config_unknown(d: &Device, need: usize) -> Option<String> {
    if let Some(note) = &d.config_note
        && d.config.as_ref().is_none_or(|c| c.len < need)
    {
        return Some(note.clone());
    }
    match &d.config {
        None => Some("config space not read (file absent or unreadable)".into()),
        Some(c) if c.len < need => Some(format!(
            "config space readable only as root ({} of 4096 bytes)",
            c.len
        )),
        Some(_) => None,
    }
}

/// The devices between two endpoints: each endpoint's ancestors strictly below their lowest
/// common ancestor, and that ancestor (`None` when they meet only at a host bridge or above).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathDevices {
    /// Ancestors of the first endpoint, nearest first, below the common ancestor.
    pub a_up: Vec<Bdf>,
    /// Ancestors of the second endpoint, nearest first, below the common ancestor.
    pub b_up: Vec<Bdf>,
    /// Lowest common ancestor device.
    pub lca: Option<Bdf>,
}

impl PathDevices {
    /// The bridges traversed (both sides), without the endpoints or the common ancestor.
    pub fn bridges(&self) -> impl Iterator<Item = &Bdf> {
        self.a_up.iter().chain(self.b_up.iter())
    }
}

/// Counts of findings by severity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Error findings.
    pub error: usize,
    /// Warning findings.
    pub warning: usize,
    /// Unknown findings (facts not readable).
    pub unknown: usize,
    /// Info findings.
    pub info: usize,
}

/// The audit result (`peerpath.audit/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`AUDIT_SCHEMA`].
    pub schema: String,
    /// `pass` when no finding is an error, else `fail`. Unknown findings do not pass anything:
    /// they are counted in `counts.unknown` and listed.
    pub verdict: String,
    /// Why nothing was judged, when nothing was ([`scope::not_judged`]): with verdict
    /// `unknown`, what the input lacks to identify its devices; with `pass`, "nothing to judge"
    /// (no GPU, accelerator or RDMA NIC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
    /// Counts by severity.
    pub counts: Counts,
    /// Where the topology came from (`--input`).
    pub source: String,
    /// The host audited when the input names hosts ([`crate::model::HostScope::line`]: every
    /// host and the one shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The expected-layout profile applied, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The GPU → NIC matching the path checks judged.
    pub pairs: Vec<Pair>,
    /// Findings, worst first.
    pub findings: Vec<Finding>,
    /// The node's GPUDirect RDMA mechanism as `gdr-peer-module` decided it; not in the JSON
    /// (the finding says it in words), `Unknown` in a report read back from JSON.
    #[serde(skip)]
    pub peer_memory: gdr::PeerMemory,
}

impl Report {
    /// Whether any finding is an error.
    pub fn failed(&self) -> bool {
        self.counts.error > 0
    }

    /// Whether the input could not identify its devices, so nothing was judged (verdict
    /// `unknown`; `peerpath audit` exits 3).
    pub fn undecided(&self) -> bool {
        self.verdict == "unknown"
    }

    /// The audit's GPUDirect RDMA readiness verdict, the one every export reads (see
    /// [`ready::gdr_readiness`] for the rule).
    pub fn gdr_ready(&self) -> GdrReadiness {
        ready::gdr_readiness(self)
    }
}

/// Options of an audit run.
#[derive(Debug, Clone, Default)]
pub struct AuditOptions {
    /// Expected layout to diff against.
    pub profile: Option<profile::Profile>,
    /// Probe results to fold in (`--evidence`).
    pub evidence: Option<crate::analysis::probe_report::measured::ProbeEvidence>,
    /// Verdicts read from the job's own output (`--evidence LOG`), folded in as findings.
    pub job_evidence: Option<crate::analysis::evidence::EvidenceReport>,
    /// The job's environment (`--job`).
    pub job: Option<job::JobEnv>,
}

/// Runs every check over a topology and returns the report.
pub fn run(topo: &Topology, opts: &AuditOptions) -> Report {
    let t = job_topology(topo, opts.job.as_ref());
    run_with(&Classifier::new(&t, &ClassifyOptions::default()), opts)
}

/// The topology the audit classifies: the job's environment (`--job`) is what NCCL reads
/// first, so a topology loaded without it gets it layered on and every verdict reads the job's
/// settings; else `topo` itself.
pub fn job_topology<'t>(
    topo: &'t Topology,
    job: Option<&job::JobEnv>,
) -> std::borrow::Cow<'t, Topology> {
    match job.filter(|j| {
        !topo.machine.nccl.environment_read && j.vars.iter().any(|(k, _)| k.starts_with("NCCL_"))
    }) {
        Some(j) => {
            let mut t = topo.clone();
            t.machine.nccl.layer_environment(&j.vars);
            std::borrow::Cow::Owned(t)
        }
        None => std::borrow::Cow::Borrowed(topo),
    }
}

/// A report of [`run_with`] with the job's own output folded in (`audit --evidence LOG`): the
/// `evidence-*` findings over the report's own pairs ([`evidence::fold_job`]), then sorted and
/// counted again. The evidence is joined to that same report (`join::Topo::with_report`), so a
/// command runs the audit once.
pub fn add_job_evidence(
    topo: &Topology,
    report: Report,
    ev: &crate::analysis::evidence::EvidenceReport,
) -> Report {
    let Report {
        profile,
        pairs,
        mut findings,
        peer_memory,
        ..
    } = report;
    evidence::fold_job(&pairs, ev, &mut findings);
    finish(topo, pairs, profile, findings, peer_memory)
}

/// [`run`] over a classification a command already built (one paths model per command).
pub fn run_with(cl: &Classifier, opts: &AuditOptions) -> Report {
    let topo = cl.topo();
    let mut ctx = Ctx::new(cl);
    let mut findings = Vec::new();
    ctx.pairs = placement::pair(&ctx, &mut findings);
    nextgen::unsettle_unseen_pairs(&nextgen::unseen_paths(&ctx), &mut ctx.pairs);
    let peer_memory = amd::mechanism(&ctx).unwrap_or_else(|| gdr::peer_memory(&ctx));
    findings.extend(nccl_settings::check(&ctx));
    findings.extend(gdr::peer_module(&ctx));
    findings.extend(gdr::driver_mismatch(&ctx));
    findings.extend(gdr::gpu_excluded(&ctx));
    findings.extend(xid::gpu_xid(&ctx));
    findings.extend(pcie::acs_redirect(&ctx));
    findings.extend(iommu::iommu_translation(&ctx));
    findings.extend(pcie::link_degraded(&ctx));
    findings.extend(pcie::aer_errors(&ctx));
    findings.extend(pcie::bar1_small(&ctx));
    findings.extend(pcie::mps_mrrs(&ctx));
    findings.extend(rdma::nic_port_down(&ctx));
    findings.extend(nextgen::iommu_group(&ctx));
    findings.extend(nextgen::data_direct(&ctx));
    findings.extend(nextgen::c2c_link(&ctx));
    findings.extend(platform::virtualized(&ctx));
    findings.extend(platform::numa_unknown(&ctx));
    findings.extend(platform::input_limits(&ctx));
    findings.extend(gds::gds_kernel(&ctx));
    findings.extend(gds::gds_config(&ctx));
    findings.extend(gds::gds_path(&ctx));
    findings.extend(gds::gds_drive_placement(&ctx));
    findings.extend(gds::gds_mounts(&ctx));
    findings.extend(amd::driver(&ctx));
    findings.extend(amd::peer_memory(&ctx));
    findings.extend(amd::atomics(&ctx));
    findings.extend(amd::large_bar(&ctx));
    findings.extend(amd::xgmi(&ctx));
    findings.extend(amd::apu_gdr_level(&ctx));
    findings.extend(amd::partition(&ctx));
    if let Some(p) = &opts.profile {
        findings.extend(profile::diff(&ctx, p));
    }
    if let Some(ev) = &opts.evidence {
        evidence::fold(&ctx, ev, &mut findings);
    }
    if let Some(ev) = &opts.job_evidence {
        evidence::fold_job(&ctx.pairs, ev, &mut findings);
    }
    if let Some(j) = &opts.job {
        findings.extend(job::check(&ctx, j));
    }
    nextgen::withdraw_unseen_paths(&ctx, &mut findings);
    if topo.source.kind == "lspci" {
        text_evidence(topo, &mut findings);
    }
    finish(
        topo,
        ctx.pairs,
        opts.profile.as_ref().map(|p| p.name.clone()),
        findings,
        peer_memory,
    )
}

/// Evidence of a topology read from `lspci` text names the text, not sysfs: each
/// `/sys/bus/pci/devices/BDF/ATTR` path becomes `FILE line N: BDF REGISTER`, the line of the
/// device's block (or tree entry) and the register lspci prints for that attribute.
fn text_evidence(topo: &Topology, findings: &mut [Finding]) {
    for f in findings.iter_mut() {
        for e in &mut f.evidence {
            // Evidence the source named by the text's own line (hypervisor devices) is
            // printed as a root path by checks made for sysfs: the text's name again.
            if let Some(p) = e.path.strip_prefix('/')
                && p.starts_with(topo.source.path.as_str())
            {
                e.path = p.to_string();
                continue;
            }
            if let Some(rest) = e.path.strip_prefix("/sys/class/infiniband/") {
                let (name, attr) = rest.split_once('/').unwrap_or((rest, ""));
                let said = topo
                    .devices
                    .iter()
                    .flat_map(|d| &d.os_devices)
                    .find(|o| o.name == name)
                    .and_then(|o| o.attrs.iter().find(|(k, _)| k == "text"));
                e.path = match said {
                    Some((_, at)) => format!("{} {at}: {name} {attr}", topo.source.path),
                    None => format!(
                        "{}: {name} {attr} (not in the text: the kernel's default name)",
                        topo.source.path
                    ),
                };
                continue;
            }
            let Some(rest) = e.path.strip_prefix("/sys/bus/pci/devices/") else {
                continue;
            };
            let (bdf, attr) = rest.split_once('/').unwrap_or((rest, ""));
            let Some(d) = bdf.parse::<Bdf>().ok().and_then(|b| topo.device(&b)) else {
                continue;
            };
            let Some(line) = d.sysfs_path.strip_prefix("lspci:") else {
                continue;
            };
            let what = match attr {
                "config" => "capabilities",
                "current_link_width" | "current_link_speed" => "LnkSta",
                "max_link_width" | "max_link_speed" => "LnkCap",
                "aer_dev_correctable" => "AER CESta",
                "aer_dev_nonfatal" | "aer_dev_fatal" => "AER UESta",
                "numa_node" => "NUMA node",
                "iommu_group" => "IOMMU group",
                "resource" => "Region",
                "driver" => "Kernel driver in use",
                other => other,
            };
            e.path = format!("{} {line}: {bdf} {what}", topo.source.path)
                .trim_end()
                .to_string();
        }
    }
}

/// Sorts findings (worst first, then by id and subject) and derives counts and verdict.
pub fn finish(
    topo: &Topology,
    pairs: Vec<Pair>,
    profile: Option<String>,
    mut findings: Vec<Finding>,
    peer_memory: gdr::PeerMemory,
) -> Report {
    let scope = scope::not_judged(topo);
    if let Some(scope::NotJudged::CannotTell(why)) = &scope {
        findings.push(
            Finding::new(
                CheckId::InputLimits,
                Severity::Unknown,
                Subject::Node,
                format!("nothing judged: {why}"),
                "give the whole `lspci -tv` and `sudo lspci -vvv` (or a sosreport, or `peerpath capture`)",
            )
            .with(topo.source.path.clone(), topo.source.kind.clone()),
        );
    }
    // By severity, then id and subject as their text (stable: equal keys keep check order).
    findings.sort_by_cached_key(|f| (f.severity, f.id.as_str(), f.subject.to_string()));
    let mut counts = Counts::default();
    for f in &findings {
        match f.severity {
            Severity::Error => counts.error += 1,
            Severity::Warning => counts.warning += 1,
            Severity::Unknown => counts.unknown += 1,
            Severity::Info => counts.info += 1,
        }
    }
    Report {
        schema: AUDIT_SCHEMA.to_string(),
        verdict: match (&scope, counts.error) {
            (_, n) if n > 0 => "fail",
            (Some(scope::NotJudged::CannotTell(_)), _) => "unknown",
            _ => "pass",
        }
        .to_string(),
        not_judged: scope.map(|s| match s {
            scope::NotJudged::CannotTell(w) | scope::NotJudged::NothingToJudge(w) => w,
        }),
        counts,
        source: topo.source.path.clone(),
        host: topo.host_scope.as_ref().map(|h| h.line()),
        profile,
        pairs,
        findings,
        peer_memory,
    }
}

#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
