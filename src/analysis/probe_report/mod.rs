//! The probe's report as a typed contract: what `peerpath probe --format json` writes and what
//! `audit --evidence` / `report --evidence` read back, owned here, below both the probe that
//! writes it and the audit that reads it, with one schema constant
//! ([`PROBE_SCHEMA`]). The GPU and the NIC of each cell are typed references ([`GpuRef`],
//! [`NicRef`]): PCI address, CUDA ordinal, RDMA device and port, libfabric provider and
//! domain, so no reader parses a display string. docs/probe.md describes the JSON.

pub mod cuda;
pub mod measured;
pub mod storage;
pub mod verdict;

use crate::analysis::classify::Label;
use crate::model::Bdf;
use anyhow::{Context, Result, bail};
use cuda::CudaReport;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::marker::PhantomData;
use verdict::Verdict;

/// Schema tag of the probe's JSON output. `/2` names the GPU and the NIC of each result as
/// objects (`/1` wrote them as display strings, which readers had to parse back; `/1`
/// documents are not read).
pub const PROBE_SCHEMA: &str = "peerpath.probe/2";

/// Which memory a buffer lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// Page-aligned host memory, pinned with `mlock` when the limit allows.
    Host,
    /// CUDA device memory from `cuMemAlloc` (never managed memory).
    Cuda,
    /// AMD GPU memory from HIP's `hipMalloc` (ROCm).
    Hip,
}

impl MemoryKind {
    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Host => "host",
            MemoryKind::Cuda => "cuda",
            MemoryKind::Hip => "hip",
        }
    }

    /// Whether this is GPU memory (CUDA or HIP), not host memory.
    pub fn is_device(self) -> bool {
        self != MemoryKind::Host
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The RDMA operation a cell measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// RDMA WRITE: the initiator's local buffer is read by its NIC and written into the target.
    Write,
    /// RDMA READ: the target's buffer is read by the NIC and written into the initiator's.
    Read,
}

impl Op {
    /// Name in JSON and text.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
        }
    }
}

/// How a registration was attempted and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegAttempt {
    /// `dmabuf` (`ibv_reg_dmabuf_mr` / libfabric dma-buf), `peer` (plain `ibv_reg_mr` on a
    /// device pointer, claimed by a peer-memory client such as nvidia-peermem), `hmem`
    /// (`fi_mr_regattr` with `FI_HMEM_CUDA`), or `host` (plain registration of host memory).
    pub method: String,
    /// Whether it worked.
    pub ok: bool,
    /// errno (positive) when it failed and one was reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<i32>,
    /// What the failure means (mapped from the errno), or why the method was not tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A file whose contents changed during the probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Path relative to the root (`sys/devices/…/aer_dev_correctable`).
    pub path: String,
    /// Before the probe.
    pub before: Option<String>,
    /// After the probe.
    pub after: Option<String>,
}

/// Which fabric library the probe uses (`--fabric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FabricKind {
    /// libibverbs (InfiniBand, RoCE).
    Verbs,
    /// libfabric (EFA, Slingshot, UET, tcp).
    Ofi,
}

/// The NIC a cell ran on: for verbs the RDMA device, port and PCI function (from the scanned
/// topology's `/sys/class/infiniband`); for libfabric the provider and the domain it opened
/// (`tcp` on `lo`), which name no PCI device.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NicRef {
    /// Fabric library.
    pub fabric: FabricKind,
    /// RDMA device (`mlx5_0`), verbs only.
    #[serde(default)]
    pub rdma: Option<String>,
    /// Port number on the RDMA device, verbs only.
    #[serde(default)]
    pub port: Option<u32>,
    /// PCI address of the NIC, when the fabric runs on a PCI device the topology names.
    #[serde(default)]
    pub bdf: Option<Bdf>,
    /// libfabric provider (`tcp`, `efa`, `cxi`), libfabric only.
    #[serde(default)]
    pub provider: Option<String>,
    /// libfabric domain (`lo`, `rdmap0s6-rdm`), once the provider was opened.
    #[serde(default)]
    pub domain: Option<String>,
    /// The probe across two nodes (`--peer`): the peer's control address (`HOST:PORT`) this
    /// rail's bytes went to; absent for the local probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// The rail's index: the position of its `--peer` on the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rail: Option<usize>,
}

impl NicRef {
    /// A verbs device and port, with its PCI address when known.
    pub fn verbs(rdma: &str, port: u32, bdf: Option<Bdf>) -> Self {
        NicRef {
            fabric: FabricKind::Verbs,
            rdma: Some(rdma.to_string()),
            port: Some(port),
            bdf,
            provider: None,
            domain: None,
            peer: None,
            rail: None,
        }
    }
    /// A fabric with no device to name: a GPU's cells on a node where the fabric found no RDMA
    /// NIC (they are `not_run`, saying why).
    pub fn no_device(fabric: FabricKind) -> Self {
        NicRef {
            fabric,
            rdma: None,
            port: None,
            bdf: None,
            provider: None,
            domain: None,
            peer: None,
            rail: None,
        }
    }
    /// A libfabric provider, with the domain it opened when known.
    pub fn ofi(provider: &str, domain: Option<&str>) -> Self {
        NicRef {
            fabric: FabricKind::Ofi,
            rdma: None,
            port: None,
            bdf: None,
            provider: Some(provider.to_string()),
            domain: domain.map(str::to_string),
            peer: None,
            rail: None,
        }
    }
}

/// The short form used in text output and progress: `verbs:mlx5_0:1 (0000:17:00.0)`,
/// `ofi:tcp:lo`. Display only; nothing parses it.
impl fmt::Display for NicRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fabric {
            FabricKind::Verbs if self.rdma.is_none() && self.bdf.is_none() => {
                f.write_str("verbs (no RDMA device)")
            }
            FabricKind::Verbs => {
                write!(f, "verbs:{}", self.rdma.as_deref().unwrap_or("?"))?;
                if let Some(p) = self.port {
                    write!(f, ":{p}")?;
                }
                if let Some(b) = self.bdf {
                    write!(f, " ({b})")?;
                }
                Ok(())
            }
            FabricKind::Ofi => {
                write!(f, "ofi:{}", self.provider.as_deref().unwrap_or("?"))?;
                if let Some(d) = &self.domain {
                    write!(f, ":{d}")?;
                }
                if let Some(p) = &self.peer {
                    write!(f, " rail {} → {p}", self.rail.unwrap_or(0))?;
                }
                Ok(())
            }
        }
    }
}

/// The GPU a cell ran on: its PCI address (from the topology for verbs pairs, from
/// `cuDeviceGetPCIBusId` otherwise) and its CUDA ordinal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GpuRef {
    /// PCI address, when known.
    #[serde(default)]
    pub bdf: Option<Bdf>,
    /// CUDA ordinal in this process (`CUDA_VISIBLE_DEVICES` and `CUDA_DEVICE_ORDER` apply).
    #[serde(default)]
    pub cuda: Option<usize>,
}

/// `0000:17:00.0`, or `cuda:<ordinal>` when the address is unknown. Display only.
impl fmt::Display for GpuRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.bdf, self.cuda) {
            (Some(b), _) => write!(f, "{b}"),
            (None, Some(o)) => write!(f, "cuda:{o}"),
            (None, None) => f.write_str("?"),
        }
    }
}

/// Direction of a cell relative to the memory under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// GPU memory is the source, host memory the destination.
    GpuToHost,
    /// Host memory is the source, GPU memory the destination.
    HostToGpu,
    /// Host to host: the baseline.
    HostToHost,
}

impl Direction {
    /// Name in JSON and text.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::GpuToHost => "gpu_to_host",
            Direction::HostToGpu => "host_to_gpu",
            Direction::HostToHost => "host_to_host",
        }
    }
}

/// One measured (or skipped) cell: a `results[]` entry. Written by the probe's run
/// ([`super::run`]); `gpu`, `nic`, `memory`, `direction`, `op`, `message_bytes` and `verdict`
/// are required when reading, the rest default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// The GPU; null for host-only cells.
    #[serde(default, deserialize_with = "gpu_field")]
    pub gpu: Option<GpuRef>,
    /// The NIC.
    #[serde(deserialize_with = "nic_field")]
    pub nic: NicRef,
    /// Memory of the non-host side (`host` for baseline cells).
    pub memory: MemoryKind,
    /// Direction.
    pub direction: Direction,
    /// RDMA operation.
    pub op: Op,
    /// Bytes per operation.
    pub message_bytes: usize,
    /// Bytes moved in the timed window (completed operations × message size).
    #[serde(default)]
    pub bytes: u64,
    /// Length of the timed window, first post to last completion.
    #[serde(default)]
    pub seconds: f64,
    /// `bytes / seconds / 10^9`.
    #[serde(default)]
    pub gbytes_per_s: f64,
    /// Whether every destination slot held the source pattern afterwards.
    #[serde(default)]
    pub verified: bool,
    /// Operations allowed in flight in the cell's timed loop (`--depth`, bounded by how many
    /// messages fit the buffers and by the fabric); 0 when the cell did not run, and in
    /// documents written before it was recorded.
    #[serde(default)]
    pub ops_in_flight: usize,
    /// Verdict.
    pub verdict: Verdict,
    /// Classification label the verdict is compared with (nvidia-smi vocabulary).
    #[serde(default, deserialize_with = "label_field")]
    pub expected_label: Option<Label>,
    /// Why this verdict, in words (ratios, errors, errno meanings).
    #[serde(default)]
    pub reason: String,
    /// Whether the verdict contradicts the label.
    #[serde(default)]
    pub contradicts: bool,
    /// Whether the pair is the control (worse) pair of its GPU.
    #[serde(default)]
    pub control: bool,
    /// Registration attempts for the GPU buffer (empty for host cells).
    #[serde(default)]
    pub registration: Vec<RegAttempt>,
}

impl CellResult {
    /// A cell with nothing measured (it did not run, or broke before its timed window), with
    /// its verdict and reason: no bytes, no time, not verified, no label compared, not the
    /// control pair, no registration. The probe's job rows and a remote rail's rows start
    /// here and set what they know besides.
    pub fn unmeasured(
        gpu: Option<GpuRef>,
        nic: &NicRef,
        memory: MemoryKind,
        (direction, op): (Direction, Op),
        message_bytes: usize,
        verdict: Verdict,
        reason: String,
    ) -> Self {
        CellResult {
            gpu,
            nic: nic.clone(),
            memory,
            direction,
            op,
            message_bytes,
            bytes: 0,
            seconds: 0.0,
            gbytes_per_s: 0.0,
            verified: false,
            ops_in_flight: 0,
            verdict,
            expected_label: None,
            reason,
            contradicts: false,
            control: false,
            registration: Vec::new(),
        }
    }
}

/// The whole report (`schema: peerpath.probe/2`), from [`super::run::run`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Always [`PROBE_SCHEMA`].
    pub schema: String,
    /// `verbs` or `ofi:<provider>` (a caption; the typed fabric is in each result's `nic`).
    #[serde(default)]
    pub fabric: String,
    /// One entry per cell.
    pub results: Vec<CellResult>,
    /// CUDA copy probes (or why they did not run).
    #[serde(default)]
    pub cuda: CudaReport,
    /// Sysfs files that changed during the run (AER, link state, port counters).
    #[serde(default)]
    pub counter_changes: Vec<Change>,
    /// Notes: buffers not pinned, counters not read, …
    #[serde(default)]
    pub notes: Vec<String>,
    /// Whether Ctrl-C stopped the run early.
    #[serde(default)]
    pub interrupted: bool,
    /// Seconds the whole run took by the probe's monotonic clock, from before the fabric
    /// library is loaded to the report: setup, every cell's warm-up, timed window, drain and
    /// byte-for-byte verification, and the CUDA probes. Each cell's `seconds` is its timed
    /// window only. 0 in documents that predate the field.
    #[serde(default)]
    pub wall_seconds: f64,
}

impl ProbeReport {
    /// Whether any cell contradicted its label or failed.
    pub fn any_contradiction(&self) -> bool {
        self.results.iter().any(|r| {
            r.contradicts
                || matches!(
                    r.verdict,
                    Verdict::TransferFailed | Verdict::RegistrationFailed
                )
        })
    }

    /// Reads a `peerpath probe --format json` document. `source` names it in errors. Refuses
    /// another schema (including `peerpath.probe/1`, whose string `nic` is no longer read), a
    /// document from a probe that could not run (it carries `error`), and results whose `gpu`
    /// or `nic` is not an object.
    pub fn from_json(source: &str, json: &str) -> Result<Self> {
        #[derive(Deserialize)]
        struct Head {
            schema: Option<String>,
            error: Option<String>,
        }
        let head: Head =
            serde_json::from_str(json).with_context(|| format!("{source}: not a JSON object"))?;
        let schema = head.schema.unwrap_or_default();
        if schema != PROBE_SCHEMA {
            let old = if schema == "peerpath.probe/1" {
                "; peerpath.probe/1 documents (NIC and GPU as strings) are no longer read: re-run the probe"
            } else {
                ""
            };
            bail!(
                "{source}: schema is {schema:?}, expected {PROBE_SCHEMA:?} (a `peerpath probe --format json` result){old}"
            );
        }
        if let Some(e) = head.error {
            bail!("{source}: the probe could not run ({e}); it holds no results");
        }
        serde_json::from_str(json).with_context(|| format!("{source}: not a probe report"))
    }
}

/// What `peerpath probe --format json` writes when the probe cannot run at all (exit 3).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeFailure {
    /// Always [`PROBE_SCHEMA`].
    pub schema: &'static str,
    /// Why, with the package that brings what is missing.
    pub error: String,
    /// Always empty.
    pub results: [CellResult; 0],
}

impl ProbeFailure {
    /// The document for `error`.
    pub fn new(error: &str) -> Self {
        ProbeFailure {
            schema: PROBE_SCHEMA,
            error: error.to_string(),
            results: [],
        }
    }
}

/// Reads an object field, refusing a string (what `/1` wrote) with a message that says so.
struct ObjectOrNull<T>(&'static str, PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectOrNull<T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} object or null", self.0)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Err(E::custom(format!(
            "{} is the string {s:?}, as peerpath.probe/1 wrote it; {PROBE_SCHEMA} names it by an object (docs/probe.md)",
            self.0
        )))
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(m)).map(Some)
    }
}

fn gpu_field<'de, D: Deserializer<'de>>(d: D) -> Result<Option<GpuRef>, D::Error> {
    d.deserialize_any(ObjectOrNull::<GpuRef>("gpu", PhantomData))
}

fn nic_field<'de, D: Deserializer<'de>>(d: D) -> Result<NicRef, D::Error> {
    d.deserialize_any(ObjectOrNull::<NicRef>("nic", PhantomData))?
        .ok_or_else(|| de::Error::custom("nic is null; every result names its NIC"))
}

fn label_field<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Label>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|s| s.parse::<Label>().map_err(de::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(gpu: Option<GpuRef>, nic: NicRef) -> CellResult {
        CellResult {
            gpu,
            nic,
            memory: MemoryKind::Cuda,
            direction: Direction::GpuToHost,
            op: Op::Read,
            message_bytes: 65536,
            bytes: 1 << 30,
            seconds: 1.0,
            gbytes_per_s: 1.07,
            verified: true,
            ops_in_flight: 0,
            verdict: Verdict::Degraded,
            expected_label: Some(Label::Pxb),
            reason: "0.70 of host baseline".into(),
            contradicts: true,
            control: false,
            registration: vec![RegAttempt::ok("dmabuf")],
        }
    }

    #[test]
    fn report_round_trips_with_typed_refs() {
        let gpu = GpuRef {
            bdf: Some("0000:13:00.0".parse().unwrap()),
            cuda: Some(0),
        };
        let r = ProbeReport {
            schema: PROBE_SCHEMA.into(),
            fabric: "verbs".into(),
            results: vec![
                cell(
                    Some(gpu.clone()),
                    NicRef::verbs("mlx5_0", 1, Some("0000:14:00.0".parse().unwrap())),
                ),
                cell(None, NicRef::ofi("tcp", Some("lo"))),
            ],
            cuda: CudaReport::unavailable("no driver"),
            counter_changes: vec![],
            notes: vec!["n".into()],
            interrupted: false,
            wall_seconds: 0.0,
        };
        let j = serde_json::to_string_pretty(&r).unwrap();
        assert!(j.contains("\"rdma\": \"mlx5_0\"") && j.contains("\"bdf\": \"0000:14:00.0\""));
        assert_eq!(ProbeReport::from_json("p.json", &j).unwrap(), r);
        assert_eq!(
            r.results[0].nic.to_string(),
            "verbs:mlx5_0:1 (0000:14:00.0)"
        );
        assert_eq!(r.results[1].nic.to_string(), "ofi:tcp:lo");
        assert_eq!(gpu.to_string(), "0000:13:00.0");
        assert_eq!(
            GpuRef {
                bdf: None,
                cuda: Some(2)
            }
            .to_string(),
            "cuda:2"
        );
    }

    #[test]
    fn old_documents_and_string_refs_are_refused_clearly() {
        let v1 = r#"{"schema":"peerpath.probe/1","results":[{"gpu":"0000:13:00.0",
            "nic":"verbs:mlx5_0:1 (0000:14:00.0)","memory":"cuda","verdict":"confirmed"}]}"#;
        let e = format!("{:#}", ProbeReport::from_json("old.json", v1).unwrap_err());
        assert!(
            e.contains("peerpath.probe/1 documents") && e.contains("re-run"),
            "{e}"
        );
        // A /2 document with a /1-style string NIC.
        let s = r#"{"schema":"peerpath.probe/2","results":[{"gpu":null,
            "nic":"verbs:mlx5_0:1 (0000:14:00.0)","memory":"host","direction":"host_to_host",
            "op":"write","message_bytes":4096,"verdict":"confirmed"}]}"#;
        let e = format!("{:#}", ProbeReport::from_json("s.json", s).unwrap_err());
        assert!(
            e.contains("nic is the string") && e.contains("object"),
            "{e}"
        );
        let s = s.replace(r#""gpu":null"#, r#""gpu":"0000:13:00.0""#);
        let s = s.replace(
            r#""nic":"verbs:mlx5_0:1 (0000:14:00.0)""#,
            r#""nic":{"fabric":"verbs","rdma":"mlx5_0"}"#,
        );
        let e = format!("{:#}", ProbeReport::from_json("g.json", &s).unwrap_err());
        assert!(e.contains("gpu is the string"), "{e}");
        let e = format!(
            "{:#}",
            ProbeReport::from_json(
                "f.json",
                r#"{"schema":"peerpath.probe/2","error":"no RDMA device","results":[]}"#
            )
            .unwrap_err()
        );
        assert!(e.contains("could not run (no RDMA device)"), "{e}");
        assert!(ProbeReport::from_json("x", "[1]").is_err());
        let doc = serde_json::to_string(&ProbeFailure::new("gone")).unwrap();
        assert_eq!(
            doc,
            format!(r#"{{"schema":"{PROBE_SCHEMA}","error":"gone","results":[]}}"#)
        );
    }
}
