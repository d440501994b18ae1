//! nccl-tests output (`all_reduce_perf`, `all_gather_perf`, …; `src/util.cu` of NVIDIA/nccl-tests):
//! the parameter line (`# nThread 1 nGpus 8 minBytes … maxBytes …`), the `# Using devices` lines
//! (`#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x]|[%04x:%02x:%02x] %s`; older
//! releases without `Group`), each result table (`size count type redop root` then, per
//! out-of-place and in-place, `time algbw busbw #wrong` and optionally the per-iteration columns
//! `i_min i_max i_p99 i_cv%`), the footer `# Avg bus bandwidth : %g` and `# Collective test
//! concluded: NAME`.
//!
//! Tolerant of what job logs are: several runs in one input (each header or parameter line
//! starts a new one), rows whose first half was printed before NCCL lines interrupted them and
//! whose second half follows later (see [`super::nccl_log::Fragment`]), tables without their
//! header (columns then inferred from the count), and cut rows (kept as refused, never read
//! half). Pure: fragments in, runs out.

use super::nccl_log::Fragment;
use super::text::{is_gap_marker, is_uint, shell_prompt};
use serde::Serialize;

/// One `#  Rank …` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankDevice {
    /// Rank.
    pub rank: u32,
    /// Process id.
    pub pid: Option<u32>,
    /// Host name.
    pub host: String,
    /// CUDA device index.
    pub device: u32,
    /// The bracket as printed: `0x07` (PCI bus only, before 2025) or `0000:07:00` (domain, bus,
    /// device).
    pub bus: String,
    /// Device name (`NVIDIA A100-SXM4-80GB`).
    pub name: String,
}

/// One result row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// 1-based line number (of its first part).
    pub line: usize,
    /// Message size in bytes.
    pub size: u64,
    /// Element count.
    pub count: u64,
    /// Data type.
    pub dtype: String,
    /// Reduction (`sum`, `none`).
    pub redop: String,
    /// Root (`-1` for rootless collectives); `None` in tables without the column.
    pub root: Option<i64>,
    /// Out-of-place time (µs), algbw, busbw (GB/s); `None` when not run (trace replay).
    pub out_of_place: Option<Measure>,
    /// In-place time (µs), algbw, busbw (GB/s).
    pub in_place: Option<Measure>,
}

/// One half of a row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measure {
    /// Time in µs.
    pub time_us: f64,
    /// Algorithm bandwidth, GB/s.
    pub algbw: f64,
    /// Bus bandwidth, GB/s.
    pub busbw: f64,
    /// `#wrong`; `None` for `N/A`.
    pub wrong: Option<f64>,
}

impl Row {
    /// The better busbw of the two halves.
    pub fn busbw(&self) -> Option<f64> {
        [self.out_of_place, self.in_place]
            .iter()
            .flatten()
            .map(|m| m.busbw)
            .reduce(f64::max)
    }
}

/// One run of an nccl-tests binary.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TestRun {
    /// 1-based line where it starts.
    pub line: usize,
    /// The test (`all_reduce_perf`), from the command line or the closing line; `None` when the
    /// input shows neither.
    pub test: Option<String>,
    /// The command line that started it, when shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `minBytes`, `maxBytes` of the parameter line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_range: Option<(u64, u64)>,
    /// `nGpus` per process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus_per_process: Option<u32>,
    /// The `# Using devices` lines.
    pub devices: Vec<RankDevice>,
    /// Result rows.
    pub rows: Vec<Row>,
    /// `# Avg bus bandwidth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_busbw: Option<f64>,
    /// `# Out of bounds values : N OK|FAILED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_bounds: Option<u64>,
    /// Whether the table header was seen (else columns were inferred).
    pub header_seen: bool,
    /// The `# Using devices` block may be incomplete: a device line was cut, or text is missing
    /// after it (so the hosts listed may not be all of them).
    pub devices_cut: bool,
    /// `# nccl-tests version 2.17.8 nccl-headers=22803 nccl-library=22803` (nccl-tests 2.14+):
    /// the NCCL release the test ran with (`NCCL_VERSION_CODE`, major·10000 + minor·100 +
    /// patch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl_library: Option<(u32, u32, u32)>,
}

/// A line that looked like part of a table but could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedRow {
    /// 1-based line number.
    pub line: usize,
    /// The text (at most 160 characters).
    pub text: String,
    /// Why.
    pub why: String,
}

/// Every run in an input.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NcclTests {
    /// The runs, in input order.
    pub runs: Vec<TestRun>,
    /// Rows that could not be read.
    pub refused: Vec<RefusedRow>,
    /// Lines read as nccl-tests output (parameter, device, header, row, footer and command
    /// lines, and `#` lines inside a run).
    #[serde(skip)]
    pub lines: Vec<usize>,
}

/// `NCCL_VERSION_CODE` (`22803`) as a release.
fn version_code(s: &str) -> Option<(u32, u32, u32)> {
    let c: u32 = s.trim().parse().ok()?;
    (c >= 20000).then_some((c / 10000, (c / 100) % 100, c % 100))
}

/// The text after `#` of an nccl-tests comment line; also the same lines printed without their
/// `#` (a copy whose Markdown ate it: ` nThread 1 …`, `  Rank  0 Group …`, the table header).
fn comment(t: &str) -> Option<&str> {
    if let Some(r) = t.strip_prefix('#') {
        return Some(r);
    }
    let starts = [
        "nThread ",
        "Using devices",
        "Avg bus bandwidth",
        "Out of bounds values",
        "Collective test",
        "nccl-tests version",
    ];
    let header = (t.contains("size") && t.contains("count") && t.contains("busbw"))
        || t.contains("out-of-place")
        || (t.contains("(B)") && t.contains("(elements)"));
    (starts.iter().any(|p| t.starts_with(p)) || header || rank_device(t).is_some()).then_some(t)
}

/// Columns of the current table, from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// Has a `redop` column: every table of nccl-tests 2.11+; before, only the reductions'
    /// (`size count type redop`), while broadcast and reduce printed `size count type root`
    /// and the gathers `size count type` (`src/common.cu` of each release).
    redop: bool,
    /// Has a `root` column.
    root: bool,
    /// Columns per half (4, or 8 with per-iteration timing).
    half: usize,
}

/// The test name in a command or closing line (`./build/all_gather_perf -b 8` → `all_gather_perf`).
fn test_name(s: &str) -> Option<String> {
    s.split_whitespace()
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .find(|w| w.ends_with("_perf") || w.ends_with("_perf_mpi"))
        .map(str::to_string)
}

/// The run that a device line or a table header at line `no` belongs to: the open run while it
/// has no rows yet; after rows, a new run whose parameter line is missing (the finished one goes
/// to `runs`); a new run too when none is open.
fn run_at<'r>(cur: &'r mut Option<TestRun>, runs: &mut Vec<TestRun>, no: usize) -> &'r mut TestRun {
    let fresh = || TestRun {
        line: no,
        ..Default::default()
    };
    let run = cur.get_or_insert_with(fresh);
    if !run.rows.is_empty() {
        runs.push(std::mem::replace(run, fresh()));
    }
    run
}

/// Parses the fragments of an input (what is not NCCL's): each line dispatched to the form it
/// has ([`Reader::line`]): a command, a `#` line ([`Reader::comment`]), a row or part of one.
pub fn parse(fragments: &[Fragment]) -> NcclTests {
    let mut r = Reader::default();
    for f in fragments {
        r.line(f);
    }
    if let Some((no, text)) = r.pending.take() {
        r.out.refused.push(RefusedRow {
            line: no,
            text,
            why: "row cut at the end of the input".into(),
        });
    }
    r.finish();
    r.out
}

/// The state of [`parse`] across lines.
#[derive(Default)]
struct Reader {
    out: NcclTests,
    /// The run being read.
    cur: Option<TestRun>,
    /// The columns of its table.
    layout: Option<Layout>,
    /// The first half of a row a copy wrapped: its line and text.
    pending: Option<(usize, String)>,
    /// The last command that ran a test: its text and the test's name.
    last_command: Option<(String, Option<String>)>,
    /// `# nccl-tests version …` (its `nccl-library=`), before the run's parameter line.
    library: Option<(u32, u32, u32)>,
    /// `# Collective test starting: …`, before the run's parameter line.
    starting: Option<String>,
}

impl Reader {
    /// Ends the run being read (kept when it has rows, devices or an average).
    fn finish(&mut self) {
        if let Some(r) = self.cur.take()
            && (!r.rows.is_empty() || !r.devices.is_empty() || r.avg_busbw.is_some())
        {
            self.out.runs.push(r);
        }
    }

    /// One line, by its form.
    fn line(&mut self, f: &Fragment) {
        let t = f.text.trim();
        if t.is_empty() {
            return;
        }
        if is_gap_marker(t) {
            if let Some(run) = self
                .cur
                .as_mut()
                .filter(|r| r.rows.is_empty() && !r.devices.is_empty())
            {
                run.devices_cut = true;
            }
            return;
        }
        let cmd_text = shell_prompt(t).map_or(t, |(_, c)| c);
        if let Some(name) = test_name(cmd_text)
            && !t.starts_with('#')
        {
            self.last_command = Some((cmd_text.chars().take(400).collect(), Some(name)));
            self.out.lines.push(f.no);
            return;
        }
        if let Some(r) = comment(t) {
            self.comment(f, r.trim());
            return;
        }
        self.row(f, t);
    }

    /// A `#` line: every one inside a run is the run's; outside one, only the forms read here.
    fn comment(&mut self, f: &Fragment, r: &str) {
        self.out.lines.push(f.no);
        let known = self.cur.is_some()
            || [
                "nThread",
                "nccl-tests version",
                "Collective test",
                "Using devices",
            ]
            .iter()
            .any(|p| r.starts_with(p))
            || rank_device(r).is_some()
            || is_table_header(r);
        if !known {
            self.out.lines.pop();
        }
        if let Some(v) = r.strip_prefix("nccl-tests version") {
            self.library = v
                .split_whitespace()
                .find_map(|w| w.strip_prefix("nccl-library="))
                .and_then(version_code);
            return;
        }
        if let Some(v) = r.strip_prefix("Collective test starting:") {
            self.starting = Some(v.trim().to_string());
            return;
        }
        // A header line after a pending half row means that row was cut.
        if let Some((no, text)) = self.pending.take() {
            self.out.refused.push(RefusedRow {
                line: no,
                text,
                why: "row cut: its second half never came".into(),
            });
        }
        if r.starts_with("nThread") {
            self.parameters(f.no, r);
        } else if let Some(d) = rank_device(r) {
            let cut = !f.ended || d.bus.is_empty();
            let run = run_at(&mut self.cur, &mut self.out.runs, f.no);
            run.devices_cut |= cut;
            if !run
                .devices
                .iter()
                .any(|x| x.rank == d.rank && x.host == d.host)
            {
                run.devices.push(d);
            }
        } else if is_table_header(r) {
            self.table_header(f.no, r);
        } else if let Some(v) = r.strip_prefix("Avg bus bandwidth") {
            let v = v.trim_start_matches([' ', ':']);
            if let Some(run) = self.cur.as_mut() {
                let w = v.split_whitespace().next().unwrap_or("");
                run.avg_busbw = super::text::finite(w);
                if super::text::non_finite(w) {
                    self.out.refused.push(RefusedRow {
                        line: f.no,
                        text: r.chars().take(160).collect(),
                        why: format!("{w:?} is not a finite bandwidth"),
                    });
                }
            }
        } else if let Some(v) = r.strip_prefix("Out of bounds values") {
            let v = v.trim_start_matches([' ', ':']);
            if let Some(run) = self.cur.as_mut() {
                run.out_of_bounds = v.split_whitespace().next().and_then(|x| x.parse().ok());
            }
        } else if let Some(v) = r.strip_prefix("Collective test concluded:") {
            if let Some(run) = self.cur.as_mut() {
                run.test = Some(v.trim().to_string());
            }
            self.finish();
            self.layout = None;
        }
    }

    /// `# nThread … minBytes … maxBytes … nGpus …`: a new run.
    fn parameters(&mut self, no: usize, r: &str) {
        self.finish();
        let mut run = TestRun {
            line: no,
            ..Default::default()
        };
        if let Some((c, n)) = self.last_command.take() {
            run.command = Some(c);
            run.test = n;
        }
        if let Some(t) = self.starting.take() {
            run.test.get_or_insert(t);
        }
        run.nccl_library = self.library.take();
        let toks: Vec<&str> = r.split_whitespace().collect();
        let num = |k: &str| {
            toks.windows(2)
                .find(|w| w[0] == k)
                .and_then(|w| w[1].parse::<u64>().ok())
        };
        if let (Some(a), Some(b)) = (num("minBytes"), num("maxBytes")) {
            run.bytes_range = Some((a, b));
        }
        run.gpus_per_process = num("nGpus").map(|n| n as u32);
        self.cur = Some(run);
        self.layout = None;
    }

    /// The table's header: its columns.
    fn table_header(&mut self, no: usize, r: &str) {
        let cols: Vec<&str> = r.split_whitespace().collect();
        let root = cols.contains(&"root");
        let busbw = cols.iter().filter(|c| **c == "busbw").count().max(1);
        let after_head = cols.len()
            - cols.iter().position(|c| *c == "redop").map_or(3, |p| p + 1)
            - usize::from(root);
        self.layout = Some(Layout {
            redop: cols.contains(&"redop"),
            root,
            half: (after_head / busbw).clamp(4, 8),
        });
        let run = run_at(&mut self.cur, &mut self.out.runs, no);
        if let Some((c, n)) = self.last_command.take() {
            run.command = Some(c);
            run.test = n;
        }
        run.header_seen = true;
    }

    /// A row, or part of one. A launcher that tags every write (`[0]`) puts its tag inside
    /// the row, between the pieces nccl-tests prints (NVIDIA/nccl#1453): taken out.
    fn row(&mut self, f: &Fragment, t: &str) {
        let untagged = strip_inner_tags(t);
        let t = untagged.as_ref();
        let text = match self.pending.take() {
            Some((no, head)) if continues_row(t) => (no, format!("{head} {t}")),
            Some((no, head)) => {
                self.out.refused.push(RefusedRow {
                    line: no,
                    text: head,
                    why: "row cut: the next line does not continue it".into(),
                });
                (f.no, t.to_string())
            }
            None => (f.no, t.to_string()),
        };
        if !starts_row(&text.1) {
            return;
        }
        let out = &mut self.out;
        match read_row(text.0, &text.1, self.layout) {
            RowRead::Row(row) => {
                out.lines.push(f.no);
                if text.0 != f.no {
                    out.lines.push(text.0);
                }
                let run = self.cur.get_or_insert_with(|| TestRun {
                    line: f.no,
                    ..Default::default()
                });
                if let Some((c, n)) = self.last_command.take() {
                    run.command.get_or_insert(c);
                    if run.test.is_none() {
                        run.test = n;
                    }
                }
                if run.rows.last().is_some_and(|p| p.size >= row.size) && !run.rows.is_empty() {
                    // Sizes restart: another run of the same table shape.
                    let mut next = TestRun {
                        line: text.0,
                        header_seen: run.header_seen,
                        ..Default::default()
                    };
                    std::mem::swap(run, &mut next);
                    out.runs.push(next);
                }
                run.rows.push(row);
            }
            RowRead::Partial => {
                out.lines.push(f.no);
                if f.ended {
                    out.refused.push(RefusedRow {
                        line: text.0,
                        text: text.1.chars().take(160).collect(),
                        why: "row cut: fewer columns than the table has".into(),
                    });
                } else {
                    self.pending = Some((text.0, text.1));
                }
            }
            // Five numbers and no type: another tool's table (perftest), not ours.
            RowRead::NotOurs => {}
            RowRead::Bad(why) => out.refused.push(RefusedRow {
                line: text.0,
                text: text.1.chars().take(160).collect(),
                why,
            }),
        }
    }
}

/// Whether a `#` line is a table's header (`size count … busbw`).
fn is_table_header(r: &str) -> bool {
    r.contains("size") && r.contains("count") && r.contains("busbw")
}

/// `Rank  0 Group  0 Pid 2017630 on   swat1-04 device  0 [0x07] NVIDIA A100-SXM4-80GB`.
fn rank_device(r: &str) -> Option<RankDevice> {
    let r = r.trim_start().strip_prefix("Rank")?;
    let toks: Vec<&str> = r.split_whitespace().collect();
    let rank = toks.first()?.parse().ok()?;
    let get = |k: &str| toks.windows(2).find(|w| w[0] == k).map(|w| w[1]);
    let host = get("on")?.to_string();
    let device = get("device")?.parse().ok()?;
    let (bus, name) = match r.split_once('[') {
        Some((_, b)) => match b.split_once(']') {
            Some((b, n)) => (b.to_string(), n.trim().to_string()),
            // A bracket never closed was cut: its bus number is not known.
            None => (String::new(), String::new()),
        },
        None => (String::new(), String::new()),
    };
    Some(RankDevice {
        rank,
        pid: get("Pid").and_then(|p| p.parse().ok()),
        host,
        device,
        bus,
        name,
    })
}

/// `-1[0]    1626.5 …` → `-1    1626.5 …`: every `[N]` (a launcher's rank tag) removed.
fn strip_inner_tags(t: &str) -> std::borrow::Cow<'_, str> {
    if !t.contains('[') {
        return std::borrow::Cow::Borrowed(t);
    }
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(i) = rest.find('[') {
        let after = &rest[i + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(']') {
            out.push_str(&rest[..i]);
            out.push(' ');
            rest = &after[digits + 1..];
        } else {
            out.push_str(&rest[..=i]);
            rest = after;
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Whether text starts like a row: a size then an element count.
fn starts_row(t: &str) -> bool {
    let mut it = t.split_whitespace();
    matches!((it.next(), it.next()), (Some(a), Some(b)) if is_uint(a) && is_uint(b))
}

/// Whether a line can be the rest of a row: numbers, `N/A`, `-1`.
fn continues_row(t: &str) -> bool {
    !t.is_empty()
        && t.split_whitespace()
            .all(|w| w == "N/A" || w.parse::<f64>().is_ok())
}

enum RowRead {
    Row(Row),
    Partial,
    NotOurs,
    Bad(String),
}

fn read_row(no: usize, t: &str, layout: Option<Layout>) -> RowRead {
    let toks: Vec<&str> = t.split_whitespace().collect();
    if toks.len() < 4 {
        return RowRead::Partial;
    }
    let (Ok(size), Ok(count)) = (toks[0].parse::<u64>(), toks[1].parse::<u64>()) else {
        return RowRead::Bad("size and count are not integers".into());
    };
    // The type is a word; so is the redop where the table has one.
    let redop_col = layout.is_none_or(|l| l.redop);
    if toks[2].parse::<f64>().is_ok() || (redop_col && toks[3].parse::<f64>().is_ok()) {
        return RowRead::NotOurs;
    }
    if let Some(w) = toks.iter().find(|w| super::text::non_finite(w)) {
        return RowRead::Bad(format!("{w:?} is not a finite number"));
    }
    let (redop, rest) = if redop_col {
        (toks[3], &toks[4..])
    } else {
        ("none", &toks[3..])
    };
    // Columns after redop: [root] + 2 halves of 4 (or 8 with per-iteration timing), maybe a
    // timestamp (two tokens) after.
    let candidates: Vec<Layout> = match layout {
        Some(l) => vec![l],
        None => vec![
            Layout {
                redop: true,
                root: true,
                half: 4,
            },
            Layout {
                redop: true,
                root: false,
                half: 4,
            },
            Layout {
                redop: true,
                root: true,
                half: 8,
            },
        ],
    };
    let mut best_partial = false;
    for l in candidates {
        let need = usize::from(l.root) + 2 * l.half;
        if rest.len() < need {
            best_partial = true;
            continue;
        }
        let extra = rest.len() - need;
        if layout.is_none() && extra != 0 {
            continue;
        }
        let root = if l.root {
            match rest[0].parse::<i64>() {
                Ok(r) => Some(r),
                Err(_) => continue,
            }
        } else {
            None
        };
        let body = &rest[usize::from(l.root)..];
        let half = |h: &[&str]| -> Result<Option<Measure>, ()> {
            let num = |s: &str| super::text::finite(s).ok_or(());
            Ok(Some(Measure {
                time_us: num(h[0])?,
                algbw: num(h[1])?,
                busbw: num(h[2])?,
                wrong: if h[3] == "N/A" {
                    None
                } else {
                    Some(num(h[3])?)
                },
            }))
        };
        let (Ok(oop), Ok(ip)) = (half(&body[..l.half]), half(&body[l.half..2 * l.half])) else {
            continue;
        };
        return RowRead::Row(Row {
            line: no,
            size,
            count,
            dtype: toks[2].to_string(),
            redop: redop.to_string(),
            root,
            out_of_place: oop,
            in_place: ip,
        });
    }
    if best_partial {
        RowRead::Partial
    } else {
        RowRead::Bad(format!(
            "{} columns after redop fit no table layout",
            rest.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::nccl_log::whole_line_fragments;

    const HEAD: &str = "#                                                              out-of-place                       in-place\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";

    #[test]
    fn a_table_with_header_and_footer() {
        let s = format!(
            "{HEAD}  8589934592    2147483648     float     sum      -1    86026   99.85  187.22    N/A    86106   99.76  187.05    N/A\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 56.3994\n"
        );
        let t = parse(&whole_line_fragments(&s));
        assert_eq!(t.runs.len(), 1, "{t:#?}");
        let r = &t.runs[0];
        assert!(r.header_seen);
        assert_eq!(r.rows[0].size, 8589934592);
        assert_eq!(r.rows[0].root, Some(-1));
        assert_eq!(r.rows[0].busbw(), Some(187.22));
        assert_eq!(r.rows[0].in_place.unwrap().wrong, None);
        assert_eq!(r.avg_busbw, Some(56.3994));
        assert_eq!(r.out_of_bounds, Some(0));
    }

    #[test]
    fn devices_old_and_new_bracket_forms() {
        let d = rank_device(
            "  Rank  3 Group  0 Pid 2017630 on   swat1-04 device  3 [0x4c] NVIDIA A100-SXM4-80GB",
        )
        .unwrap();
        assert_eq!(
            (d.rank, d.host.as_str(), d.device, d.bus.as_str()),
            (3, "swat1-04", 3, "0x4c")
        );
        let d = rank_device("  Rank  1 Pid 120890 on 10-90-43-152 device  1 [0x8d] A100-SXM4-40GB")
            .unwrap();
        assert_eq!((d.rank, d.pid, d.bus.as_str()), (1, Some(120890), "0x8d"));
        let d =
            rank_device("  Rank  0 Group  0 Pid  99 on node device  0 [0000:19:00] NVIDIA H100")
                .unwrap();
        assert_eq!(d.bus, "0000:19:00");
        // Cut: `device  4` and nothing after.
        let d = rank_device("  Rank  4 Group  0 Pid 3621220 on pod01 device  4").unwrap();
        assert_eq!((d.bus.as_str(), d.name.as_str()), ("", ""));
        assert!(rank_device("  Rank 11 Group  0 Pid 1161920 on   swat1-05 dev").is_none());
    }

    #[test]
    fn a_row_split_by_nccl_lines_is_joined() {
        let v = vec![
            Fragment {
                no: 1,
                text: "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
                ended: true,
            },
            Fragment {
                no: 2,
                text: "     1048576        262144     float     sum      -1",
                ended: false,
            },
            Fragment {
                no: 5,
                text: "    45.23   23.18   43.47      0    44.91   23.35   43.78      0",
                ended: true,
            },
        ];
        let t = parse(&v);
        assert_eq!(t.runs[0].rows.len(), 1, "{t:#?}");
        assert_eq!(t.runs[0].rows[0].line, 2);
        assert_eq!(t.runs[0].rows[0].busbw(), Some(43.78));
        assert!(t.refused.is_empty());
    }

    #[test]
    fn cut_rows_are_refused_not_read() {
        let s = "     1048576        262144     float     sum      -1    45.23   23.18\n[... text missing here ...]\n";
        let t = parse(&whole_line_fragments(s));
        assert!(t.runs.is_empty());
        assert_eq!(t.refused.len(), 1, "{t:#?}");
    }

    #[test]
    fn old_tables_without_root_and_per_iteration_tables() {
        let s = "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n     8388608       2097152   float     sum    145.2   57.78  108.34  5e-07    144.8   57.93  108.62  5e-07\n";
        let t = parse(&whole_line_fragments(s));
        let r = &t.runs[0].rows[0];
        assert_eq!((r.root, r.busbw()), (None, Some(108.62)));
        let s = "#       size         count      type   redop    root     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%\n  1048576  262144  float  sum  -1  45.2  23.1  43.4  0  40.1  50.2  49.9  3.10  44.9  23.3  43.7  0  40.0  50.0  49.8  3.00\n";
        let t = parse(&whole_line_fragments(s));
        assert_eq!(t.runs[0].rows[0].busbw(), Some(43.7));
    }

    #[test]
    fn several_runs_and_restarting_sizes() {
        let row = |size: u64, bw: f64| {
            format!(
                "  {size}  {}  float  sum  -1  10.0  1.0  {bw}  N/A  10.0  1.0  {bw}  N/A\n",
                size / 4
            )
        };
        let s = format!(
            "{HEAD}{}{}# Avg bus bandwidth : 1.5\n{HEAD}{}{}",
            row(8, 1.0),
            row(16, 2.0),
            row(8, 3.0),
            row(16, 4.0)
        );
        let t = parse(&whole_line_fragments(&s));
        assert_eq!(t.runs.len(), 2);
        assert_eq!(t.runs[1].rows[1].busbw(), Some(4.0));
        let s = format!(
            "{}{}{}{}",
            row(8, 1.0),
            row(16, 2.0),
            row(8, 3.0),
            row(16, 4.0)
        );
        let t = parse(&whole_line_fragments(&s));
        assert_eq!(
            t.runs.len(),
            2,
            "restart of sizes without a header starts a run"
        );
        assert!(!t.runs[0].header_seen);
    }

    /// nccl-tests before 2.11 printed `root` without `redop` for broadcast and reduce
    /// (`src/common.cu`: `size count type root`), so the fourth column is a number
    /// (NVIDIA/nccl-tests#82).
    #[test]
    fn old_broadcast_tables_have_root_and_no_redop() {
        let s = "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n           8             2   float       0    45.82    0.00    0.00    N/A    38.17    0.00    0.00    N/A\n";
        let t = parse(&whole_line_fragments(s));
        assert_eq!(t.runs.len(), 1, "{t:#?}");
        let r = &t.runs[0].rows[0];
        assert_eq!((r.size, r.root, r.redop.as_str()), (8, Some(0), "none"));
        assert_eq!(r.in_place.unwrap().time_us, 38.17);
    }

    /// A copy whose Markdown ate the `#` (NVIDIA/nccl-tests#249): the same lines without it.
    #[test]
    fn headers_without_their_hash() {
        let s = " nThread 1 nGpus 1 minBytes 8 maxBytes 16777216 step: 2(factor) warmup iters: 5 iters: 5 agg iters: 1 validation: 1 graph: 0\n Using devices\n  Rank  0 Group  0 Pid    127 on worker-0 device  0 [0x00] NVIDIA A10G\n       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n    16777216       4194304     float     sum      -1    108.8  154.20   77.10      0    98.19  170.86   85.43      0\n";
        let t = parse(&whole_line_fragments(s));
        assert_eq!(t.runs.len(), 1, "{t:#?}");
        let run = &t.runs[0];
        assert_eq!(run.bytes_range, Some((8, 16777216)));
        assert_eq!(run.devices[0].host, "worker-0");
        assert!(run.header_seen);
        assert_eq!(run.rows.len(), 1);
        assert_eq!(t.lines, [1, 2, 3, 4, 5, 6]);
    }

    /// nccl-tests 2.14+ names the library it ran with (`nccl-library=22803` is 2.28.3) and the
    /// test before its parameter line (NVIDIA/nccl#2169).
    #[test]
    fn the_library_version_and_the_test_name_before_the_run() {
        let s = "# nccl-tests version 2.17.8 nccl-headers=22803 nccl-library=22803\n# Collective test starting: alltoall_perf\n# nThread 1 nGpus 1 minBytes 524288000 maxBytes 549453824 step: 1048576(bytes) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n#  Rank  0 Group  0 Pid 2992107 on    Node1 device  0 [0000:4e:00] NVIDIA H100 80GB HBM3\n";
        let t = parse(&whole_line_fragments(s));
        let run = &t.runs[0];
        assert_eq!(run.nccl_library, Some((2, 28, 3)));
        assert_eq!(run.test.as_deref(), Some("alltoall_perf"));
        assert_eq!(run.devices[0].bus, "0000:4e:00");
    }

    /// Issue 41: `1e999` (infinity to Rust's parser), `inf` and `NaN` are refused with their
    /// line, never read as a bandwidth that passes.
    #[test]
    fn non_finite_figures_are_refused_with_the_line() {
        let t = format!(
            "{HEAD}     1048576        262144     float     sum      -1   1e999   10.00   18.75      0    100.0   10.00   18.75      0\n# Avg bus bandwidth    : 1e999\n"
        );
        let got = parse(&whole_line_fragments(&t));
        assert!(
            got.runs
                .iter()
                .all(|r| r.avg_busbw.is_none() && r.rows.is_empty()),
            "{got:#?}"
        );
        assert_eq!(got.refused.len(), 2, "{got:#?}");
        assert!(
            got.refused
                .iter()
                .all(|r| r.why.contains("\"1e999\" is not a finite")),
            "{got:#?}"
        );
        assert_eq!(got.refused[1].line, 5);
    }
}
