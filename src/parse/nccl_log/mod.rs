//! NCCL's debug output (`NCCL_DEBUG=INFO`/`WARN`/`TRACE`) as typed records, for every release
//! from 2.3 to 2.30 (and RCCL's, which prints NCCL's forms). Pure: lines in, records out, with
//! every NCCL line of a form this parser knows but could not read kept as a [`Refused`] saying
//! why.
//!
//! A line is `host:pid:tid [cudaDev] NCCL INFO message` (`debug.cc`; WARN adds `file:line
//! (func)` before `NCCL WARN`, TRACE a time and `func:line`; 2.26+ may put a `[%F %T] ` time
//! stamp first). Lines are found by that header wherever it sits, so launcher prefixes, another
//! tool's text before it and two NCCL lines run together on one physical line (interleaved
//! ranks) are all read; the text before the first header is handed back as a [`Fragment`] for
//! the other parsers. A message followed by another header on the same line, the last line of a
//! file without newline and the line before a gap marker are marked incomplete: a suffix they
//! lack (`/GDRDMA`) is unknown, not absent. A line cut before its host has an empty host; a
//! line printed with no `host:pid:tid` at all (`[0] NCCL INFO …`) gets an empty host and pid 0
//! (one process of its own). Releases before 2.3 printed `INFO` without `NCCL`; such a line is
//! read when its header starts it. Every message of a form not read is kept with its text
//! ([`NcclLog::unread`]). The forms of each message by version are listed in
//! shared/reference/evidence/README.md and in docs/evidence.md; [`records`] reads them.

pub mod records;
pub mod topo;

pub use records::*;

use super::text::{Line, command_env, is_gap_marker, ray_worker, shell_prompt, split_launcher};

/// Severity word after `NCCL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// `NCCL INFO`.
    Info,
    /// `NCCL WARN`.
    Warn,
    /// `NCCL TRACE` (and `NCCL CALL`).
    Trace,
}

/// The header of one NCCL line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Header {
    /// Host name as NCCL prints it (up to the first `.`).
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The bracket: the thread's current CUDA device (`cudaGetDevice`), an index under
    /// `CUDA_VISIBLE_DEVICES`.
    pub cuda_dev: i64,
    /// INFO, WARN or TRACE.
    pub level: Level,
    /// `file:line` (and `(func)`) of a WARN/TRACE line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// True when the host token was glued to text before it and was cut to a host name seen
    /// elsewhere for the same pid.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub host_repaired: bool,
    /// True when the line carries no `host:pid:tid` at all (`[0] NCCL INFO …`, a copy that
    /// dropped it): host is empty and pid 0, so such lines form one group of their own — or,
    /// behind a Ray worker tag seen before with a header, that worker's host and pid.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub headerless: bool,
}

impl Header {
    /// The header of a line that carries no `host:pid:tid` (the `headerless` field): an
    /// INFO line with `host` and `pid` given (empty and 0 unless a Ray worker tag names them)
    /// and the bracket's device (-1 when none).
    fn headerless(host: String, pid: u32, cuda_dev: i64, level: Level) -> Self {
        Header {
            host,
            pid,
            tid: 0,
            cuda_dev,
            level,
            source: None,
            host_repaired: false,
            headerless: true,
        }
    }
}

/// One NCCL message that was read.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Entry {
    /// 1-based line number.
    pub line: usize,
    /// The header; `None` for the `NCCL version` banner, which has none.
    pub header: Option<Header>,
    /// Whether the message certainly ended (see the module docs).
    pub complete: bool,
    /// What it says.
    pub record: Record,
}

/// An NCCL line of a known form that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Refused {
    /// 1-based line number.
    pub line: usize,
    /// The message (at most 160 characters).
    pub text: String,
    /// Why it was not understood.
    pub why: String,
}

/// Text of a line that is not NCCL's: the whole line, or what precedes the first NCCL header on
/// it (launcher tags removed). The nccl-tests and perftest parsers read these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// 1-based line number.
    pub no: usize,
    /// The text.
    pub text: &'a str,
    /// False when an NCCL header followed it on the same line, or the line may have been cut:
    /// a table row may continue on a later line.
    pub ended: bool,
}

/// Every line of `text` as a fragment of its own, whole (no NCCL header or launcher tag taken
/// off): the input the nccl-tests and perftest parsers' tests give them.
#[cfg(test)]
pub(crate) fn whole_line_fragments(text: &str) -> Vec<Fragment<'_>> {
    super::text::lines(text)
        .into_iter()
        .map(|l| Fragment {
            no: l.no,
            text: l.text,
            ended: l.ended,
        })
        .collect()
}

/// A shell command line in the output (a prompt, or `NCCL_…=… cmd`), with the NCCL/CUDA
/// variables it sets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CommandLine {
    /// 1-based line number.
    pub line: usize,
    /// Host from the shell prompt, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The command (after the prompt).
    pub command: String,
    /// `NCCL_*`, `CUDA_*` assignments on it.
    pub env: Vec<(String, String)>,
}

/// Everything NCCL printed in one input.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct NcclLog {
    /// Messages read, in input order.
    pub entries: Vec<Entry>,
    /// NCCL lines of known forms that could not be read.
    pub refused: Vec<Refused>,
    /// NCCL lines of forms this parser does not read (they say nothing about GDR or NICs).
    pub unread: Vec<Unread>,
    /// Command lines seen.
    pub commands: Vec<CommandLine>,
    /// Gap markers (`[... text missing here …]`): text left out of the copy.
    pub gaps: Vec<usize>,
    /// Lines that are only the end of a connection line another output cut (`/GDRDMA` alone),
    /// with the line of the connection they end: that connection is read as cut (its GDR
    /// unknown), never as complete without `/GDRDMA`.
    pub cut_ends: Vec<(usize, usize)>,
    /// The lines RCCL's version banner prints after `RCCL version : …` (`HIP version  : `,
    /// `ROCm version : `, `Hostname     : `, `Librccl path : `; `init.cc` showVersion prints
    /// them in the same message): read as part of the banner, with no bearing on GDR.
    pub banner_lines: Vec<usize>,
    /// Lines that continue the connection line before them (a copy wrapped it: `… NCCL INFO
    /// Channel 00/0 :` then `0[0] -> 8[0] [send] via NET/IB/0/GDRDMA`), with the line of its
    /// start: read as one line of the process that printed the start.
    pub continued: Vec<(usize, usize)>,
    /// Connection lines without `host:pid:tid` in a log whose other lines have one: a copy
    /// dropped or wrapped away their header, and nothing ties them to a process, so they are
    /// not judged (a log made only of such lines is read as one group without a process).
    pub unattributed: Vec<usize>,
}

/// An NCCL line of a form the parser does not read: still a line its process printed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unread {
    /// 1-based line number.
    pub line: usize,
    /// Who printed it.
    pub header: Header,
    /// The message (at most 160 characters).
    pub text: String,
    /// The known form it takes, skipped knowingly ([`records::skipped_form`]); `None` for a
    /// form peerpath does not know (then also counted as not understood).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<&'static str>,
}

/// One NCCL header found in a line: byte offsets of where it starts and where its message
/// starts, and the header.
struct Found {
    start: usize,
    msg: usize,
    header: Header,
}

/// Characters NCCL never leaves in a host name (`getHostName` cuts at `.`; `debug.cc` turns `/`
/// and `%` into `-`); a colon separates pid and tid.
fn host_char(c: char) -> bool {
    !(c.is_whitespace() || matches!(c, '.' | '/' | '%' | ':' | ']' | '[' | '(' | ')'))
}

/// How far before `NCCL INFO` a header is looked for, in bytes.
const WINDOW: usize = 1024;

/// Finds every NCCL header in a line.
fn find_headers(line: &str) -> Vec<Found> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(rel) = line[from..].find("NCCL ") {
        let at = from + rel;
        from = at + 5;
        let after = &line[at + 5..];
        let (level, word) = if after.starts_with("INFO") {
            (Level::Info, 4)
        } else if after.starts_with("WARN") {
            (Level::Warn, 4)
        } else if after.starts_with("TRACE") {
            (Level::Trace, 5)
        } else if after.starts_with("CALL") {
            (Level::Trace, 4)
        } else {
            continue;
        };
        let Some(h) = header_before(line, at, level) else {
            continue;
        };
        let mut msg = at + 5 + word;
        if line[msg..].starts_with(' ') {
            msg += 1;
        }
        out.push(Found {
            start: h.0,
            msg,
            header: h.1,
        });
    }
    out
}

/// Reads `host:pid:tid [dev] [source ]` backwards from the `NCCL` word at `at`; returns where the
/// host starts and the header.
fn header_before(line: &str, at: usize, level: Level) -> Option<(usize, Header)> {
    // A header is short (host name ≤ 255, pid, tid, `[dev]`, a WARN's `file:line (func)`): look
    // back a bounded window, so a line of many `NCCL` words stays linear.
    let mut from = at.saturating_sub(WINDOW);
    while !line.is_char_boundary(from) {
        from += 1;
    }
    let (base, before) = (from, line[from..at].trim_end());
    // The bracket: the last `[int]` before the word, with only `file:line (func)` (WARN) or
    // `time func:line` (TRACE) between.
    let open = before.rfind('[')?;
    let close = open + before[open..].find(']')?;
    let dev: i64 = before[open + 1..close].trim().parse().ok()?;
    let between = before[close + 1..].trim();
    if level == Level::Info && !between.is_empty() {
        return None;
    }
    let head = before[..open].trim_end_matches(' ');
    if head.len() == before[..open].len() && !head.is_empty() {
        return None; // `host:pid:tid` and `[dev]` are separated by a space
    }
    let (rest, tid) = head.rsplit_once(':')?;
    let (rest, pid) = rest.rsplit_once(':')?;
    let (tid, pid) = (tid.parse().ok()?, pid.parse().ok()?);
    // A host followed by spaces (`NAME :70918:…`, a name replaced by hand) is still the host;
    // a line cut before its host (`:22901:22901 [0] …`) has an empty one.
    let rest = rest.trim_end_matches(' ');
    let host_start = rest
        .char_indices()
        .rev()
        .take_while(|&(_, c)| host_char(c))
        .last()
        .map_or(rest.len(), |(i, _)| i);
    // No host name starts with `-`: such a character belongs to the text before it.
    let host_start =
        host_start + rest[host_start..].len() - rest[host_start..].trim_start_matches('-').len();
    let host = rest[host_start..].to_string();
    Some((
        base + host_start,
        Header {
            host,
            pid,
            tid,
            cuda_dev: dev,
            level,
            source: (!between.is_empty()).then(|| between.to_string()),
            host_repaired: false,
            headerless: false,
        },
    ))
}

/// A line whose NCCL word starts the text after the launcher tags, with no `host:pid:tid`
/// before it (`[0] NCCL INFO …`: a copy that dropped the header, the bracket left as a tag).
fn headerless(tag: &str, rest: &str) -> Option<Found> {
    let t = rest.trim_start();
    let start = rest.len() - t.len();
    let (level, word) = if t.starts_with("NCCL INFO") {
        (Level::Info, 9)
    } else if t.starts_with("NCCL WARN") {
        (Level::Warn, 9)
    } else {
        return None;
    };
    let mut msg = start + word;
    if rest[msg..].starts_with(' ') {
        msg += 1;
    }
    // The device bracket, when the tag is one (`[0]`).
    let cuda_dev = tag
        .trim()
        .rsplit('[')
        .next()
        .and_then(|x| x.strip_suffix(']'))
        .and_then(|x| x.parse().ok())
        .unwrap_or(-1);
    Some(Found {
        start,
        msg,
        header: Header::headerless(String::new(), 0, cuda_dev, level),
    })
}

/// Messages quoted with neither `host:pid:tid` nor `NCCL INFO` (a summary of a log: `NET/OFI
/// Selected provider is cxi, fabric is cxi (found 4 nics)`, `Using network Libfabric`), read
/// only in an input where no line has an NCCL header, and only when the line (launcher tags
/// taken off) starts with a network message NCCL or its net plugins print: one group without a
/// process, like `[0] NCCL INFO …` lines.
fn message_only(text: &str) -> Option<Found> {
    const STARTS: [&str; 6] = [
        "NET/OFI ",
        "NET/IB : ",
        "NET/IB: ",
        "NET/Socket : ",
        "NET/Plugin",
        "Using network ",
    ];
    let t = split_launcher(text).1.trim_start();
    if !STARTS.iter().any(|s| t.starts_with(s)) {
        return None;
    }
    let start = text.len() - t.len();
    Some(Found {
        start,
        msg: start,
        header: Header::headerless(String::new(), 0, -1, Level::Info),
    })
}

/// A line of NCCL 2.2 or older (binary releases; no source was published before 2.3):
/// `host:pid:tid [dev] INFO message`, without the `NCCL` word (horovod#492's log). Taken only
/// as the whole line's header, with a host, so that another program's `INFO` text is not.
fn before_2_3(rest: &str) -> Option<Found> {
    let at = rest.find("] INFO ")? + 2;
    let (start, header) = header_before(rest, at, Level::Info)?;
    if header.host.is_empty() || !rest[..start].trim().is_empty() {
        return None;
    }
    Some(Found {
        start,
        msg: at + 5,
        header,
    })
}

/// Parses the NCCL part of an input. `fragments` receives the non-NCCL text of every line (see
/// [`Fragment`]), in order. Two passes: every line's headers found first (so a glued host can
/// be cut by the hosts seen anywhere), then each line read ([`Reader::line`]).
pub fn parse<'a>(lines: &[Line<'a>], fragments: &mut Vec<Fragment<'a>>) -> NcclLog {
    let mut r = Reader {
        log: NcclLog::default(),
        fragments,
        clean_hosts: Default::default(),
        ray_hosts: Default::default(),
        pending: None,
        wrapped: None,
    };
    let mut found_per_line = r.find_all_headers(lines);
    for (l, found) in lines.iter().zip(found_per_line.iter_mut()) {
        r.line(l, found);
    }
    let mut log = r.log;
    set_apart_unattributed(&mut log);
    log
}

/// The state of [`parse`] across lines.
struct Reader<'a, 'f> {
    log: NcclLog,
    fragments: &'f mut Vec<Fragment<'a>>,
    /// Hosts seen at the very start of a line (after launcher tags), by pid: used to cut a host
    /// token glued to the text before it (`…NET/IB/3swat1-04:2017630:…`). A set: a job whose
    /// nodes all run their ranks as the same pids (containers) has one pid on 10^5 hosts, and a
    /// list searched per line made its 10^6-rank log quadratic (12,500 nodes took 63 s).
    clean_hosts: std::collections::HashMap<u32, std::collections::HashSet<String>>,
    /// The host first printed behind each Ray worker tag (pid, ip): Ray's tag names one
    /// process, so a later spelling of its host (a name redacted two ways) is that process's.
    ray_hosts: std::collections::HashMap<(u32, Option<&'a str>), String>,
    /// A header whose message was printed later (≤ 2.3 wrote the header and the message with
    /// two `fprintf` calls, so another process's line could come between): the header and the
    /// line it was left on.
    pending: Option<(Header, usize)>,
    /// The last message of the line before when it is the start of a connection line that a
    /// copy wrapped (see [`NcclLog::continued`]): its line, header and text.
    wrapped: Option<(usize, Header, String)>,
}

impl<'a> Reader<'a, '_> {
    /// The headers of every line (offsets into the whole line), by every form; in a log with
    /// none, the messages that stand alone.
    fn find_all_headers(&mut self, lines: &[Line<'a>]) -> Vec<Vec<Found>> {
        let mut found_per_line: Vec<Vec<Found>> = Vec::with_capacity(lines.len());
        for l in lines {
            let (tag, rest) = split_launcher(l.text);
            let mut found = find_headers(rest);
            if let Some(worker) = ray_worker(tag) {
                one_ray_host(&mut self.ray_hosts, worker, &mut found);
            }
            if found.is_empty() {
                found.extend(headerless(tag, rest));
            }
            if found.is_empty() {
                found.extend(before_2_3(rest));
            }
            let off = l.text.len() - rest.len();
            for f in &found {
                if rest[..f.start].trim().is_empty() && !f.header.host.is_empty() {
                    let hosts = self.clean_hosts.entry(f.header.pid).or_default();
                    if !hosts.contains(&f.header.host) {
                        hosts.insert(f.header.host.clone());
                    }
                }
            }
            found_per_line.push(
                found
                    .into_iter()
                    .map(|mut f| {
                        f.start += off;
                        f.msg += off;
                        f
                    })
                    .collect(),
            );
        }
        if found_per_line.iter().all(Vec::is_empty) {
            for (l, found) in lines.iter().zip(found_per_line.iter_mut()) {
                found.extend(message_only(l.text));
            }
        }
        found_per_line
    }

    /// One line: a line without header is tried as each form that continues an earlier line
    /// or stands alone; then the text before the first header, then each header's message.
    fn line(&mut self, l: &Line<'a>, found: &mut [Found]) {
        let prev_wrapped = self.wrapped.take();
        if self.pending.as_ref().is_some_and(|(_, at)| l.no > at + 2) {
            self.pending = None;
        }
        if found.is_empty() && self.headerless_line(l, prev_wrapped) {
            return;
        }
        if is_gap_marker(split_launcher(l.text).1) {
            self.log.gaps.push(l.no);
            return;
        }
        if found.is_empty() {
            let (tag, rest) = split_launcher(l.text);
            if records::is_cut_connection_end(rest)
                && let Some(at) = cut_connection(&mut self.log.entries, tag, l.no)
            {
                self.log.cut_ends.push((l.no, at));
                return;
            }
        }
        self.repair_glued_hosts(found);
        self.text_before(l, found);
        self.messages(l, found);
    }

    /// A line without header read as the message of a pending header, the end of a wrapped
    /// connection, a bare connection line, or a banner's continuation; whether it was.
    fn headerless_line(
        &mut self,
        l: &Line<'a>,
        prev_wrapped: Option<(usize, Header, String)>,
    ) -> bool {
        let log = &mut self.log;
        if let Some((h, _)) = &self.pending
            && let Parsed::Record(record) =
                records::parse_message(split_launcher(l.text).1, l.ended)
        {
            log.entries.push(Entry {
                line: l.no,
                header: Some(h.clone()),
                complete: l.ended,
                record,
            });
            self.pending = None;
            return true;
        }
        if let Some((at, h, start)) = prev_wrapped.filter(|w| w.0 + 1 == l.no)
            && let Some(record) = continue_connection(&start, split_launcher(l.text).1, l.ended)
        {
            // The start was kept as a line of a known form (a ring order, `Channel NN/MM :`);
            // it is read now, with its end.
            log.unread.retain(|u| u.line != at);
            log.refused.retain(|r| r.line != at);
            log.entries.push(Entry {
                line: at,
                header: Some(h),
                complete: l.ended,
                record,
            });
            log.continued.push((l.no, at));
            return true;
        }
        if let Some(record) = records::bare_net_channel(split_launcher(l.text).1, l.ended) {
            // Behind a Ray worker tag seen before with a header, the line is that worker's.
            let (host, pid) = ray_worker(split_launcher(l.text).0)
                .and_then(|w| Some((self.ray_hosts.get(&w)?.clone(), w.0)))
                .unwrap_or_default();
            log.entries.push(Entry {
                line: l.no,
                header: Some(Header::headerless(host, pid, -1, Level::Info)),
                complete: l.ended,
                record,
            });
            return true;
        }
        if banner_continues(log, l.no, split_launcher(l.text).1) {
            log.banner_lines.push(l.no);
            return true;
        }
        false
    }

    /// Repairs glued hosts: keeps the longest known host of that pid the token ends with. The
    /// token's suffixes are looked up, longest first (a host token is short; the hosts of a
    /// pid may be 10^5).
    fn repair_glued_hosts(&self, found: &mut [Found]) {
        for f in found.iter_mut() {
            let Some(known) = self.clean_hosts.get(&f.header.pid) else {
                continue;
            };
            if known.contains(&f.header.host) {
                continue;
            }
            let host = &f.header.host;
            if let Some(k) = host
                .char_indices()
                .map(|(i, _)| &host[i..])
                .find(|k| !k.is_empty() && known.contains(*k))
            {
                let k = k.to_string();
                f.start += f.header.host.len() - k.len();
                f.header.host = k;
                f.header.host_repaired = true;
            }
        }
    }

    /// The text before the first header (the whole line without one): a banner, a command
    /// line, and always a fragment.
    fn text_before(&mut self, l: &Line<'a>, found: &[Found]) {
        let (tag, rest) = split_launcher(l.text);
        let first = found.first().map_or(l.text.len(), |f| f.start);
        let pre = &l.text[tag.len().min(first)..first];
        if !pre.trim().is_empty() || found.is_empty() {
            let pre_is_rest = found.is_empty();
            let text = if pre_is_rest { rest } else { pre };
            if let Some(v) = banner_version(text) {
                self.log.entries.push(Entry {
                    line: l.no,
                    header: None,
                    complete: l.ended,
                    record: v,
                });
            } else if let Some(cmd) = command_line(l.no, text) {
                self.log.commands.push(cmd);
            }
            self.fragments.push(Fragment {
                no: l.no,
                text,
                ended: pre_is_rest && l.ended,
            });
        }
    }

    /// Each header's message: a record, a warning, a line of another form, or refused.
    fn messages(&mut self, l: &Line<'a>, found: &[Found]) {
        let log = &mut self.log;
        for (i, f) in found.iter().enumerate() {
            // A header glued onto the previous one's level word (`NCCL INFOer_name>:920:920 [1]
            // NCCL INFO …`, found by fuzzing) starts before that one's message: its message is
            // then empty, never a reversed slice.
            let end = found
                .get(i + 1)
                .map_or(l.text.len(), |n| n.start)
                .max(f.msg);
            let complete = i + 1 == found.len() && l.ended;
            let msg = &l.text[f.msg..end];
            if msg.trim().is_empty() && i + 1 < found.len() && f.header.level == Level::Info {
                self.pending = Some((f.header.clone(), l.no));
                continue;
            }
            match records::parse_message(msg, complete) {
                Parsed::Record(record) => log.entries.push(Entry {
                    line: l.no,
                    header: Some(f.header.clone()),
                    complete,
                    record,
                }),
                Parsed::Other if f.header.level == Level::Warn => log.entries.push(Entry {
                    line: l.no,
                    header: Some(f.header.clone()),
                    complete,
                    record: Record::Warn {
                        text: msg.trim().chars().take(300).collect(),
                    },
                }),
                Parsed::Other => log.unread.push(Unread {
                    line: l.no,
                    header: f.header.clone(),
                    text: msg.trim().chars().take(160).collect(),
                    form: records::skipped_form(msg),
                }),
                Parsed::Refused(why) => log.refused.push(Refused {
                    line: l.no,
                    text: msg.chars().take(160).collect(),
                    why,
                }),
            }
            if i + 1 == found.len() && l.ended && records::connection_start(msg) {
                self.wrapped = Some((l.no, f.header.clone(), msg.to_string()));
            }
        }
    }
}

/// A wrapped connection line's end (`rest`, a line without header) read with its start (the
/// message of the line before): the connection, when together they are one.
fn continue_connection(start: &str, rest: &str, ended: bool) -> Option<Record> {
    let joined = format!("{} {}", start.trim_end(), rest.trim());
    match records::parse_message(&joined, ended) {
        Parsed::Record(r @ (Record::NetChannel(_) | Record::PeerChannel(_))) => Some(r),
        _ => None,
    }
}

/// Connection lines read without any `host:pid:tid` (quoted from their ranks on, or `[0] NCCL
/// INFO Channel …`) are a group of their own only in a log of such lines; beside lines that
/// name their process they are set apart as [`NcclLog::unattributed`], never a process
/// "pid 0".
fn set_apart_unattributed(log: &mut NcclLog) {
    let named = |h: &Header| !h.headerless;
    let any_named = log
        .entries
        .iter()
        .any(|e| e.header.as_ref().is_some_and(named))
        || log.unread.iter().any(|u| named(&u.header));
    if !any_named {
        return;
    }
    let nameless = |e: &Entry| {
        matches!(e.record, Record::NetChannel(_))
            && e.header
                .as_ref()
                .is_some_and(|h| h.headerless && h.pid == 0 && h.host.is_empty())
    };
    log.unattributed = log
        .entries
        .iter()
        .filter(|e| nameless(e))
        .map(|e| e.line)
        .collect();
    log.entries.retain(|e| !nameless(e));
}

/// Whether line `no` (launcher tags taken off: `t`) is one of the lines of RCCL's version
/// banner after `RCCL version : …` (see [`NcclLog::banner_lines`]): right after that line or
/// another such line.
fn banner_continues(log: &NcclLog, no: usize, t: &str) -> bool {
    const WORDS: [&str; 5] = [
        "HIP version",
        "ROCm version",
        "CUDA version",
        "Hostname",
        "Librccl path",
    ];
    let Some((word, _)) = t.split_once(':') else {
        return false;
    };
    if !WORDS.contains(&word.trim_end()) {
        return false;
    }
    let after_banner = log
        .entries
        .last()
        .is_some_and(|e| matches!(e.record, Record::Version(_)) && e.line + 1 == no);
    after_banner || log.banner_lines.last().is_some_and(|&b| b + 1 == no)
}

/// Gives the headers of a line behind Ray's tag of `worker` (pid, ip) whose pid is the worker's
/// the host first seen behind that tag (marked repaired when it differs).
fn one_ray_host<'a>(
    seen: &mut std::collections::HashMap<(u32, Option<&'a str>), String>,
    worker: (u32, Option<&'a str>),
    found: &mut [Found],
) {
    for f in found
        .iter_mut()
        .filter(|f| f.header.pid == worker.0 && !f.header.host.is_empty())
    {
        let first = seen.entry(worker).or_insert_with(|| f.header.host.clone());
        if *first != f.header.host {
            f.header.host = first.clone();
            f.header.host_repaired = true;
        }
    }
}

/// How many lines back the start of a cut connection line is looked for.
const CUT_WINDOW: usize = 64;

/// The connection line whose end (`/GDRDMA`, …) came on line `no`: the latest one before it,
/// within [`CUT_WINDOW`] lines, read as ended without a suffix, from the process a Ray tag
/// names (`(Worker pid=2981, …)`) when the end carries one. It is marked cut, its GDR unknown;
/// returns its line.
fn cut_connection(entries: &mut [Entry], tag: &str, no: usize) -> Option<usize> {
    let pid = super::text::ray_pid(tag);
    let e = entries.iter_mut().rev().find(|e| {
        e.line + CUT_WINDOW >= no
            && matches!(&e.record, Record::NetChannel(c) if c.gdr == Some(false))
            && pid.is_none_or(|p| e.header.as_ref().is_some_and(|h| h.pid == p))
    })?;
    if let Record::NetChannel(c) = &mut e.record {
        c.gdr = None;
    }
    e.complete = false;
    Some(e.line)
}

/// `NCCL version 2.21.5+cuda12.4` (printed without a header by most versions); RCCL's
/// `RCCL version 2.20.5+hip6.2 …` and `RCCL version : 2.21.5-HEAD:…` (its releases follow
/// NCCL's numbering and line forms).
fn banner_version(text: &str) -> Option<Record> {
    let t = text.trim();
    let v = t
        .strip_prefix("NCCL version ")
        .or_else(|| t.strip_prefix("RCCL version "))?;
    records::version_record(v.trim_start_matches([':', ' ']))
}

/// A shell command that sets NCCL/CUDA variables or runs a known launcher or test.
fn command_line(no: usize, text: &str) -> Option<CommandLine> {
    let (host, cmd) = match shell_prompt(text) {
        Some((h, c)) => (Some(h.to_string()), c),
        None => (None, text.trim()),
    };
    let env = command_env(cmd);
    let runs = [
        "mpirun",
        "srun",
        "torchrun",
        "_perf",
        "ib_write_bw",
        "ib_read_bw",
        "ib_send_bw",
    ]
    .iter()
    .any(|k| cmd.contains(k));
    if env.is_empty() && !(host.is_some() && runs) {
        return None;
    }
    if !runs && !cmd.contains(char::is_whitespace) {
        return None;
    }
    Some(CommandLine {
        line: no,
        host,
        command: cmd.chars().take(400).collect(),
        env,
    })
}

#[cfg(test)]
mod tests;
