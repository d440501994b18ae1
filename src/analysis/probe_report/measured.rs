//! A probe report read as evidence (`audit --evidence`, `evidence`): per GPU–NIC pair measured on
//! GPU memory, the worst verdict of its cells, matched later to the audit's pairs by the typed
//! references the probe writes.

use super::verdict::Verdict;
use super::{MemoryKind, NicRef, ProbeReport};
use crate::model::Bdf;
use anyhow::{Context, Result};

/// One GPU–NIC pair as the probe measured it on GPU memory: the worst verdict of its cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// GPU PCI address.
    pub gpu: Bdf,
    /// The NIC as the probe names it (PCI address and/or RDMA device).
    pub nic: NicRef,
    /// The worst verdict, in [`Verdict::WORST_TO_BEST`] order (never `not_run`).
    pub verdict: Verdict,
    /// Why, from the worst cell.
    pub reason: String,
}

/// The measured pairs of one probe report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeEvidence {
    /// Where it was read from.
    pub source: String,
    /// One entry per measured (GPU, NIC), in the order first seen.
    pub measured: Vec<Measured>,
    /// GPU-memory results that name no PCI GPU, or a NIC with neither PCI address nor RDMA
    /// device (`cuda:0`, `ofi:tcp:lo`), as `gpu nic`: they cannot be matched to a pair.
    pub unmapped: Vec<String>,
}

impl ProbeEvidence {
    /// Reads a probe document ([`ProbeReport::from_json`]: wrong schema, a failed probe, or
    /// string-valued GPU/NIC references are refused) and keeps its evidence.
    pub fn parse(source: &str, json: &str) -> Result<Self> {
        Ok(Self::from_report(
            source,
            &ProbeReport::from_json(source, json)?,
        ))
    }

    /// The evidence in a report: results on host memory only (the baseline) and `not_run`
    /// results are skipped; for each (GPU, NIC) the worst verdict is kept.
    pub fn from_report(source: &str, report: &ProbeReport) -> Self {
        let mut out = ProbeEvidence {
            source: source.to_string(),
            ..Default::default()
        };
        for r in &report.results {
            let (Some(gpu), Some(rank)) = (&r.gpu, r.verdict.rank()) else {
                continue; // host-only baseline cell, or no evidence
            };
            if r.memory == MemoryKind::Host {
                continue;
            }
            let Some(g) = gpu
                .bdf
                .filter(|_| r.nic.bdf.is_some() || r.nic.rdma.is_some())
            else {
                out.unmapped.push(format!("{gpu} {}", r.nic));
                continue;
            };
            match out
                .measured
                .iter_mut()
                .find(|m| m.gpu == g && m.nic == r.nic)
            {
                Some(m) if m.verdict.rank().is_some_and(|old| rank < old) => {
                    m.verdict = r.verdict;
                    m.reason = r.reason.clone();
                }
                Some(_) => {}
                None => out.measured.push(Measured {
                    gpu: g,
                    nic: r.nic.clone(),
                    verdict: r.verdict,
                    reason: r.reason.clone(),
                }),
            }
        }
        out
    }

    /// Reads and parses a probe result file.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let s = crate::sources::fsroot::input::read_input_text(
            path,
            crate::sources::fsroot::input::MAX_SIDE_FILE_BYTES,
        )
        .with_context(|| format!("cannot read evidence {}", path.display()))?;
        Self::parse(&path.display().to_string(), &s)
    }
}
