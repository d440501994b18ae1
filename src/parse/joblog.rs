//! One captured job output (a file of `NCCL_DEBUG=INFO` lines, nccl-tests tables and perftest
//! runs, in any mix) read by all three evidence parsers in one pass over its lines: NCCL
//! headers are found first ([`super::nccl_log`]); the text that is not NCCL's goes to
//! [`super::nccl_tests`] and [`super::perftest`]. Pure: text in, typed records out.

use super::nccl_log::{self, NcclLog};
use super::nccl_tests::{self, NcclTests};
use super::perftest::{self, Perftest};
use super::text;
use serde::Serialize;

/// What one input holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobOutput {
    /// Lines read.
    pub lines: usize,
    /// NCCL's messages.
    pub nccl: NcclLog,
    /// nccl-tests runs.
    pub tests: NcclTests,
    /// perftest runs.
    pub perftest: Perftest,
}

impl JobOutput {
    /// The kinds of evidence found (`nccl-log`, `nccl-tests`, `perftest`), in that order.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k = Vec::new();
        if !self.nccl.entries.is_empty() || self.nccl.other > 0 || !self.nccl.refused.is_empty() {
            k.push("nccl-log");
        }
        if !self.tests.runs.is_empty() {
            k.push("nccl-tests");
        }
        if !self.perftest.runs.is_empty() {
            k.push("perftest");
        }
        k
    }
}

/// Reads a job output. Bytes that are not UTF-8 are replaced (U+FFFD) before parsing.
pub fn parse(bytes: &[u8]) -> JobOutput {
    let s = String::from_utf8_lossy(bytes);
    let lines = text::lines(&s);
    let mut fragments = Vec::new();
    let nccl = nccl_log::parse(&lines, &mut fragments);
    let tests = nccl_tests::parse(&fragments);
    let perftest = perftest::parse(&fragments);
    JobOutput {
        lines: lines.len(),
        nccl,
        tests,
        perftest,
    }
}
