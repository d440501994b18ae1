//! The evidence verdicts (`peerpath.evidence/1`): what the job's own output says per rank
//! (GDR used, off or unknown, why, over which NIC), per nccl-tests table (bus bandwidth against
//! what the NICs carry), per perftest run (GPU against host memory), and the completion errors
//! NCCL warned about. Built by [`super::analyze`]; written by `render::evidence`.

use super::version::VersionInfo;
use serde::Serialize;

/// Version tag of the evidence JSON document.
pub const EVIDENCE_SCHEMA: &str = "peerpath.evidence/1";

/// GPUDirect RDMA as the log shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Gdr {
    /// NET connections carry `/GDRDMA`, or NCCL's GDR check said Enabled.
    Used,
    /// NET connections without `/GDRDMA` on complete lines, a Socket transport, or NCCL's check
    /// said Disabled.
    Off,
    /// The log does not show it (no NET connection, lines cut, no GDR line).
    Unknown,
    /// The job ran on one host and the log shows it set up its connections without the
    /// network (or it was a communicator of one rank): no network traffic, so GDR does not
    /// apply — neither used nor off, and no problem.
    #[serde(rename = "not-applicable")]
    NotApplicable,
}

impl Gdr {
    /// `used`, `off`, `unknown`, `not-applicable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Gdr::Used => "used",
            Gdr::Off => "off",
            Gdr::Unknown => "unknown",
            Gdr::NotApplicable => "not-applicable",
        }
    }
}

/// Why GDR is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CauseKind {
    /// `GPU Direct RDMA Disabled for HCA n 'x' (no module)`: no peer-memory module.
    NoModule,
    /// `Disabled … (distance d > l)`: the GPU–NIC path is beyond the GDR level.
    Distance,
    /// NCCL's per-NIC check said Disabled (2.13+): no peer memory registration, no dma-buf.
    NicDisabled,
    /// No RDMA device: `NET/IB : No device found`, connections over `NET/Socket`.
    Socket,
    /// `NCCL_NET_GDR_LEVEL` set to LOC / 0.
    GdrLevelEnv,
    /// `NCCL_NET_GDR_READ=0` on a send connection.
    GdrReadEnv,
    /// `Connected all rings, use ring PXN … GDR 0`.
    RingSummary,
    /// NCCL's path print routes a GPU–NIC pair through the CPU although they share a switch.
    PathRerouted,
    /// A net plugin said it disabled GDR (aws-ofi-nccl: `Could not disable CUDA API usage for
    /// HMEM, disabling GDR`).
    PluginDisabled,
    /// Connections without `/GDRDMA` and no line that says why.
    NotShown,
}

/// A cause with its words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// The kind.
    pub kind: CauseKind,
    /// In words, quoting the log.
    pub text: String,
}

/// A NIC a rank's NET connections went over.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NicUse {
    /// The NET device index of the channel lines.
    pub index: u32,
    /// Its name from the process's `NET/… : Using` list or `Made virtual device` line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Index above the physical NIC count: a virtual NIC (NCCL ≥ 2.24).
    pub virtual_nic: bool,
    /// Net (`IB`, `Socket`, `IBext_v8`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
    /// Channel lines over it.
    pub connections: usize,
    /// How many of those show `/GDRDMA`, how many certainly do not, how many were cut.
    pub gdr: [usize; 3],
    /// What the log could not say about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Which GPU a rank drove, as far as the log and nccl-tests say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GpuIdent {
    /// PCI address from NCCL's busId (comm lines, ≤ 2.18.1 brackets, GDR lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bdf: Option<String>,
    /// PCI bus alone, as nccl-tests before 2025 prints it (`[0x07]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bus: Option<u8>,
    /// CUDA device index (header bracket, comm line, nccl-tests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_dev: Option<i64>,
    /// NVML index (2.18.3+ brackets): PCI bus order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvml_dev: Option<u32>,
}

/// The topology's view of a rank's GPU (with `-i`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// The GPU in the topology.
    pub gpu: String,
    /// How the rank was matched to it.
    pub matched_by: String,
    /// The NIC the topology pairs with this GPU (the audit's matching) and its path label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_nic: Option<String>,
    /// Its path label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_label: Option<String>,
    /// The path label from this GPU to the NIC the log shows it used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_label: Option<String>,
    /// Whether the used NIC is the predicted one (`None`: NIC not known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_nic: Option<bool>,
    /// Audit facts about this GPU's path (peer memory, ACS, IOMMU…), as sentences.
    pub audit: Vec<String>,
    /// The verdict joined to the topology, in one sentence.
    pub sentence: String,
}

/// One rank (or one GPU, where the log names GPUs but not ranks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankVerdict {
    /// Input it came from.
    pub source: String,
    /// Host.
    pub host: String,
    /// Process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Rank in its communicator; `None` where the log names only the GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// `nranks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nranks: Option<u32>,
    /// `nNodes` (2.20+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nnodes: Option<u32>,
    /// `localRank`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    /// Its GPU.
    pub gpu: GpuIdent,
    /// The NCCL release of its process.
    pub version: String,
    /// GDR verdict.
    pub gdr: Gdr,
    /// What shows it.
    pub basis: String,
    /// Why off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// NICs its NET connections used.
    pub nics: Vec<NicUse>,
    /// Lines that show it (first few).
    pub lines: Vec<usize>,
    /// Joined to the topology (with `-i`); boxed, as most verdicts have none and a log holds
    /// up to 10^6 of them (issue 53).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<Box<Prediction>>,
}

/// One verdict seen on several hosts (with `-i`: identical hosts against one snapshot).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JoinedVerdict {
    /// GPU in the snapshot.
    pub gpu: String,
    /// GDR verdict.
    pub gdr: Gdr,
    /// Cause kind, when off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<CauseKind>,
    /// NIC used (name), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic: Option<String>,
    /// Hosts it was seen on.
    pub hosts: Vec<String>,
    /// Ranks (`host:rank`).
    pub ranks: Vec<String>,
    /// The sentence of the first rank.
    pub sentence: String,
}

/// What the node's NICs can carry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capacity {
    /// NICs (ports) counted.
    pub nics: u32,
    /// Total line rate, Gb/s.
    pub total_gbps: f64,
    /// The bus bandwidth NCCL's rule of thumb expects: 24 GB/s per 200 Gb/s of NIC
    /// (0.12 GB/s per Gb/s).
    pub expected_busbw: f64,
    /// Where it came from (`--nic-gbps 8x200`, or the snapshot's ports).
    pub source: String,
}

/// What the GPUs' NVLinks carry (with a topology): a run on one node is judged against it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvlinkCapacity {
    /// GPUs with NVLinks.
    pub gpus: u32,
    /// The fewest NVLinks of any of them.
    pub links: u32,
    /// NCCL's bandwidth of one link, GB/s (`ncclTopoNVLinkBw`, by NVLink generation and release).
    pub per_link: f64,
    /// The bus bandwidth expected: the fewest links × the per-link figure — NCCL's own model of
    /// the GPU's NVLink bandwidth (what its topology print shows, e.g. `NVL[240.0]` on A100),
    /// which a ring over NVLink reaches.
    pub expected_busbw: f64,
    /// Where it came from.
    pub source: String,
}

/// Bandwidth judgement against capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BwVerdict {
    /// At least 80 % of the expected bus bandwidth.
    Ok,
    /// Below 80 %.
    Low,
    /// Below 25 %.
    Broken,
    /// Not judged (no capacity, single node, no rows).
    Unknown,
}

impl BwVerdict {
    /// `ok`, `low`, `broken`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            BwVerdict::Ok => "ok",
            BwVerdict::Low => "low",
            BwVerdict::Broken => "broken",
            BwVerdict::Unknown => "unknown",
        }
    }
}

/// One nccl-tests run judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthVerdict {
    /// Input.
    pub source: String,
    /// Line where the run starts.
    pub line: usize,
    /// The test (`all_reduce_perf`), or `unknown`.
    pub test: String,
    /// Ranks and hosts of `# Using devices`.
    pub ranks: usize,
    /// Hosts.
    pub hosts: Vec<String>,
    /// Message sizes read (first, last) and row count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<(u64, u64, usize)>,
    /// Highest busbw of any row, GB/s, and its size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak: Option<(f64, u64)>,
    /// busbw at the largest size, GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub large: Option<(f64, u64)>,
    /// `# Avg bus bandwidth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg: Option<f64>,
    /// The figure judged, GB/s, and which it is (`large`, `peak`, `avg`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged: Option<(f64, String)>,
    /// Expected bus bandwidth, GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<f64>,
    /// judged / expected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// The verdict.
    pub verdict: BwVerdict,
    /// What it was judged against: `nics` (a run across nodes) or `nvlink` (one node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    /// busbw falls at large sizes: the largest size is below half the peak (both figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collapse: Option<Collapse>,
    /// In words.
    pub summary: String,
    /// With a snapshot and GDR shown on: what the audit says about the paths.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explanation: Vec<String>,
}

/// A fall of busbw at large sizes, with both figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Collapse {
    /// The highest busbw, GB/s, and its size in bytes.
    pub peak: (f64, u64),
    /// busbw at the largest size, GB/s, and that size.
    pub large: (f64, u64),
}

/// One perftest run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerftestVerdict {
    /// Input.
    pub source: String,
    /// Line where it starts.
    pub line: usize,
    /// Host (shell prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Tool and test.
    pub tool: String,
    /// `server`/`client`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// RDMA device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// `gpu`, `host`, `unknown`.
    pub memory: String,
    /// GPU details (`cuda 0 at 82:00 Tesla T4`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Message sizes (first, last, count).
    pub sizes: (u64, u64, usize),
    /// Average at the largest size, Gb/s.
    pub avg_gbps: f64,
    /// Highest peak, Gb/s.
    pub peak_gbps: f64,
    /// Port rate, Gb/s (snapshot or --nic-gbps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_gbps: Option<f64>,
    /// perftest's warnings.
    pub warnings: Vec<String>,
}

/// A GPU-memory run against a host-memory run on the same device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuHostComparison {
    /// Device.
    pub device: String,
    /// GPU run (input line).
    pub gpu_line: usize,
    /// Host run (input line).
    pub host_line: usize,
    /// Gb/s on GPU memory.
    pub gpu_gbps: f64,
    /// Gb/s on host memory.
    pub host_gbps: f64,
    /// gpu / host.
    pub fraction: f64,
    /// Below 80 % on the same machine (or machines not shown).
    pub flagged: bool,
    /// In words, with perftest's warnings and whether the runs share a machine.
    pub summary: String,
}

/// Completion errors NCCL warned about, grouped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionSummary {
    /// Input.
    pub source: String,
    /// `ibv_wc_status` number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u32>,
    /// Its name.
    pub status_name: String,
    /// Vendor error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor_err: Option<u32>,
    /// How many lines.
    pub count: usize,
    /// Hosts.
    pub hosts: Vec<String>,
    /// First line.
    pub line: usize,
    /// What it usually means.
    pub meaning: String,
}

/// What one input held.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputSummary {
    /// The path as given.
    pub source: String,
    /// `nccl-log`, `nccl-tests`, `perftest`, `peerpath-probe`.
    pub kinds: Vec<String>,
    /// Lines read.
    pub lines: usize,
    /// NCCL messages read / of other forms.
    pub nccl_read: usize,
    /// NCCL lines of known forms skipped knowingly (no bearing on GDR or NICs); NCCL lines of
    /// forms peerpath does not know are counted in `unrecognised_lines`.
    pub nccl_other: usize,
    /// Gap markers (text missing from the copy).
    pub gaps: usize,
    /// Processes (`host:pid`) and their NCCL release.
    pub processes: Vec<ProcessSummary>,
    /// Lines of known forms that could not be read, and why.
    pub refused: Vec<RefusedLine>,
    /// Lines no parser understood: how many, and the first [`UNRECOGNISED_SHOWN`] of them.
    pub unrecognised_lines: Unrecognised,
}

/// How many lines of an input are shown in [`InputSummary::unrecognised_lines`].
pub const UNRECOGNISED_SHOWN: usize = 50;

/// The lines of an input no parser understood (NCCL messages of forms peerpath does not read,
/// another tool's output, prose): counted, and a bounded sample shown — never dropped silently.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Unrecognised {
    /// All of them.
    pub count: usize,
    /// The first [`UNRECOGNISED_SHOWN`], in input order.
    pub lines: Vec<TextLine>,
}

/// One line of an input, as it reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextLine {
    /// 1-based line number.
    pub line: usize,
    /// Its text (at most 160 characters).
    pub text: String,
}

/// One NCCL process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessSummary {
    /// Host.
    pub host: String,
    /// pid.
    pub pid: u32,
    /// True for the lines quoted without `host:pid:tid` (host empty, pid 0): a group of lines,
    /// not a process.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub headerless: bool,
    /// Its NCCL release.
    pub version: VersionInfo,
    /// `Using network …`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The net plugin's libfabric provider (`NET/OFI Selected provider is …`), in words with its
    /// line: `cxi, fabric cxi, 4 NIC(s) (line 3)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ofi_provider: Option<String>,
    /// RCCL's `RCCL: Detected N IB devices` (count, line): 0 is a fact to report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ib_devices: Option<(u32, usize)>,
    /// NIC list (`[0]mlx5_0:1/IB`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<String>,
    /// NCCL variables it ran with: (name, value, where it shows).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String, String)>,
}

/// A refused line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedLine {
    /// Line.
    pub line: usize,
    /// Text.
    pub text: String,
    /// Why.
    pub why: String,
}

/// Everything `peerpath evidence` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceReport {
    /// Always [`EVIDENCE_SCHEMA`].
    pub schema: String,
    /// The snapshot joined, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// Inputs.
    pub inputs: Vec<InputSummary>,
    /// NIC capacity the bandwidth was judged against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
    /// NVLink capacity a run on one node was judged against (with a topology).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink: Option<NvlinkCapacity>,
    /// Per rank (or GPU).
    pub ranks: Vec<RankVerdict>,
    /// With a snapshot: verdicts grouped by GPU across hosts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub joined: Vec<JoinedVerdict>,
    /// nccl-tests runs.
    pub bandwidth: Vec<BandwidthVerdict>,
    /// perftest runs.
    pub perftest: Vec<PerftestVerdict>,
    /// GPU vs host perftest comparisons.
    pub comparisons: Vec<GpuHostComparison>,
    /// Completion errors.
    pub errors: Vec<CompletionSummary>,
    /// Probe documents given as evidence: their measured pairs, as `gpu nic: verdict`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub probe: Vec<String>,
    /// What the inputs could not show.
    pub notes: Vec<String>,
}
