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
    /// Lines no parser understood (not blank, not a gap marker): line number and text (at most
    /// 160 characters), the first [`UNRECOGNISED_KEPT`] of them. NCCL lines of forms not read,
    /// another tool's output, prose.
    pub unrecognised: Vec<(usize, String)>,
    /// How many lines no parser understood, those kept in `unrecognised` included (a log of a
    /// million such lines is a count, not a million copies).
    pub unrecognised_count: usize,
    /// Lines that end in Ray's ` [repeated Nx across cluster]` ([`text::ray_dedup`]): line
    /// number and N, the lines of other workers it stands for. The suffix is taken off before
    /// any parser reads the line.
    pub ray_folded: Vec<(usize, u32)>,
}

/// Lines not understood kept with their text; the rest are counted.
pub const UNRECOGNISED_KEPT: usize = 50;

impl JobOutput {
    /// The kinds of evidence found (`nccl-log`, `nccl-tests`, `perftest`), in that order.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k = Vec::new();
        if !self.nccl.entries.is_empty()
            || !self.nccl.unread.is_empty()
            || !self.nccl.refused.is_empty()
        {
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
    let mut ray_folded = Vec::new();
    let lines: Vec<text::Line> = text::lines(&s)
        .into_iter()
        .map(|l| {
            let (t, n) = text::ray_dedup(l.text);
            if let Some(n) = n {
                ray_folded.push((l.no, n));
            }
            text::Line { text: t, ..l }
        })
        .collect();
    let mut fragments = Vec::new();
    let nccl = nccl_log::parse(&lines, &mut fragments);
    let tests = nccl_tests::parse(&fragments);
    let perftest = perftest::parse(&fragments);
    let (unrecognised, unrecognised_count) = unrecognised(&lines, &nccl, &tests, &perftest);
    JobOutput {
        lines: lines.len(),
        nccl,
        tests,
        perftest,
        unrecognised,
        unrecognised_count,
        ray_folded,
    }
}

/// The lines none of the three parsers read: every line is read by one of them, is an NCCL
/// line of a known form skipped knowingly, is counted here, blank, or a gap marker — nothing is
/// dropped silently, and what is counted here is a form peerpath does not know. A line counts as read when any part
/// of it was (an NCCL message after another tool's prefix, a row split by NCCL lines).
fn unrecognised(
    lines: &[text::Line],
    nccl: &NcclLog,
    tests: &NcclTests,
    perftest: &Perftest,
) -> (Vec<(usize, String)>, usize) {
    let mut read = vec![false; lines.len() + 2];
    let mut mark = |n: usize| {
        if let Some(x) = read.get_mut(n) {
            *x = true;
        }
    };
    nccl.entries.iter().for_each(|e| mark(e.line));
    nccl.refused.iter().for_each(|r| mark(r.line));
    nccl.commands.iter().for_each(|c| mark(c.line));
    nccl.gaps.iter().for_each(|&g| mark(g));
    nccl.cut_ends.iter().for_each(|&(l, _)| mark(l));
    nccl.banner_lines.iter().for_each(|&l| mark(l));
    nccl.continued.iter().for_each(|&(l, _)| mark(l));
    nccl.unattributed.iter().for_each(|&l| mark(l));
    // NCCL lines of known forms skipped knowingly; those of unknown forms stay counted.
    nccl.unread
        .iter()
        .filter(|u| u.form.is_some())
        .for_each(|u| mark(u.line));
    tests.lines.iter().for_each(|&l| mark(l));
    tests.refused.iter().for_each(|r| mark(r.line));
    for r in &perftest.runs {
        (r.line..=r.end_line).for_each(&mut mark);
    }
    perftest.refused.iter().for_each(|(l, _)| mark(*l));
    let mut kept = Vec::new();
    let mut count = 0;
    for l in lines
        .iter()
        .filter(|l| !read[l.no] && !l.text.trim().is_empty())
    {
        count += 1;
        if kept.len() < UNRECOGNISED_KEPT {
            kept.push((l.no, l.text.trim().chars().take(160).collect()));
        }
    }
    (kept, count)
}
