//! Text and JSON for `peerpath evidence` (an [`EvidenceReport`]): a verdict line, then per
//! input what was read, the GDR verdict of each rank with its cause and NIC, the bandwidth and
//! perftest verdicts, completion errors, and what the inputs could not show.

use crate::analysis::evidence::{
    BwVerdict, EvidenceReport, Gdr, InputSummary, NicUse, PerftestVerdict, ProcessSummary,
    RankVerdict,
};
use std::fmt::Write;

/// The one-line verdict: PROBLEMS, NOTHING READ (see [`nothing_read`]), NOTHING JUDGED (see
/// [`nothing_judged`]) or NO PROBLEM SHOWN, counts of ranks by GDR verdict and of bandwidth verdicts, and what was not read (lines
/// refused, lines not understood) whenever a line was refused or nothing was read.
pub fn verdict_line(r: &EvidenceReport) -> String {
    let n = |g: Gdr| r.ranks.iter().filter(|x| x.gdr == g).count();
    let bw = |v: BwVerdict| r.bandwidth.iter().filter(|x| x.verdict == v).count();
    let flagged = r.comparisons.iter().filter(|c| c.flagged).count();
    let nothing = nothing_read(r);
    let empty = inputs_read_nothing(r);
    // Some inputs read, others not: said in the headline, never "no problem shown".
    let some_empty = !nothing && !empty.is_empty();
    let mut s = format!(
        "{}: GDR used on {}, off on {}, unknown on {} rank(s)/GPU(s); bandwidth ok {}, low {}, broken {}, not judged {}",
        if failed(r) {
            "PROBLEMS".to_string()
        } else if nothing {
            "NOTHING READ".to_string()
        } else if some_empty {
            format!(
                "NOTHING READ from {} of {} inputs",
                empty.len(),
                r.inputs.len()
            )
        } else if nothing_judged(r) {
            format!("NOTHING JUDGED ({})", what_was_read(r))
        } else {
            "NO PROBLEM SHOWN".to_string()
        },
        n(Gdr::Used),
        n(Gdr::Off),
        n(Gdr::Unknown),
        bw(BwVerdict::Ok),
        bw(BwVerdict::Low),
        bw(BwVerdict::Broken),
        bw(BwVerdict::Unknown)
    );
    let na = n(Gdr::NotApplicable);
    if na > 0 {
        // After the counts, so the headline of every other report is unchanged.
        let _ = write!(
            s,
            "; GDR not applicable on {na} (one host, no network traffic)"
        );
    }
    if !r.perftest.is_empty() {
        let _ = write!(
            s,
            "; perftest {} run(s), {flagged} GPU-vs-host flagged",
            r.perftest.len()
        );
    }
    if !r.errors.is_empty() {
        let _ = write!(s, "; {} completion error kind(s)", r.errors.len());
    }
    let refused: usize = r.inputs.iter().map(|i| i.refused.len()).sum();
    let not_understood: usize = r.inputs.iter().map(|i| i.unrecognised_lines.count).sum();
    if refused > 0 || nothing || some_empty {
        let mut parts = Vec::new();
        if some_empty {
            parts.push(format!(
                "no NCCL line, nccl-tests table or perftest run found in {}",
                empty.join(", ")
            ));
        }
        if refused > 0 {
            let first = r
                .inputs
                .iter()
                .flat_map(|i| &i.refused)
                .next()
                .map(|x| format!(" (line {}: {})", x.line, x.why))
                .unwrap_or_default();
            parts.push(format!("{refused} line(s) refused{first}"));
        }
        if nothing && not_understood > 0 {
            parts.push(format!("{not_understood} line(s) not understood"));
        }
        if nothing && r.inputs.iter().all(|i| i.kinds.is_empty()) {
            parts.push("no NCCL line, nccl-tests table or perftest run found".into());
        }
        let _ = write!(s, "; not read: {}", parts.join(", "));
    }
    s
}

/// Whether nothing at all was read: no NCCL process (a `host:pid` header, or the lines quoted
/// without one), rank, GPU or connection, no nccl-tests run, perftest run, completion error or
/// probe result — a prose summary, another tool's output, an empty file. `evidence` exits
/// [`EXIT_NOTHING_READ`] then, not 0. A log whose processes were read but whose GDR the lines do
/// not show was read: see [`nothing_judged`].
pub fn nothing_read(r: &EvidenceReport) -> bool {
    r.inputs.iter().all(|i| i.processes.is_empty())
        && r.ranks.is_empty()
        && r.bandwidth.is_empty()
        && r.perftest.is_empty()
        && r.errors.is_empty()
        && r.probe.is_empty()
}

/// Whether something was read but nothing judged: processes, ranks or NICs read, yet no rank's
/// GDR shown used or off (nor not applicable), and no nccl-tests or perftest run, completion
/// error or probe result (an init-only log, a job that failed before its channels were set up,
/// an nccl-tests header without its table). The headline says so and what was read; the exit
/// code stays 0, as unknowns do in `audit`: nothing wrong was shown, and nothing was missed by
/// the reader either.
pub fn nothing_judged(r: &EvidenceReport) -> bool {
    !nothing_read(r)
        && r.ranks.iter().all(|x| x.gdr == Gdr::Unknown)
        && r.bandwidth.is_empty()
        && r.perftest.is_empty()
        && r.errors.is_empty()
        && r.probe.is_empty()
}

/// What the inputs showed, in words, for the NOTHING JUDGED headline: processes, ranks or
/// GPUs, and that none shows GDR.
fn what_was_read(r: &EvidenceReport) -> String {
    let all = || r.inputs.iter().flat_map(|i| &i.processes);
    let procs = all().filter(|p| !p.headerless).count();
    let mut what = Vec::new();
    if procs > 0 {
        what.push(format!("{procs} process(es)"));
    }
    if all().any(|p| p.headerless) {
        what.push("NCCL lines without `host:pid:tid`".to_string());
    }
    if !r.ranks.is_empty() || what.is_empty() {
        what.push(format!("{} rank(s)/GPU(s)", r.ranks.len()));
    }
    format!(
        "{} read; no NET connection or GDR line shows GDR",
        what.join(" and ")
    )
}

/// The job-output inputs in which nothing was recognised (no NCCL line, nccl-tests table or
/// perftest run: prose, another tool's output, an empty file), by the name given.
pub fn inputs_read_nothing(r: &EvidenceReport) -> Vec<&str> {
    r.inputs
        .iter()
        .filter(|i| i.kinds.is_empty())
        .map(|i| i.source.as_str())
        .collect()
}

/// `peerpath evidence`'s exit code when nothing was read ([`nothing_read`]), or nothing from
/// one of the inputs ([`inputs_read_nothing`]): neither "nothing wrong" (0) nor a problem (1)
/// nor an unreadable input (2).
pub const EXIT_NOTHING_READ: u8 = 3;

/// The exit code of `peerpath evidence`: 1 a problem shown ([`failed`]), 3 nothing read
/// ([`nothing_read`]) or nothing from one of the inputs ([`inputs_read_nothing`]), else 0.
pub fn exit_code(r: &EvidenceReport) -> u8 {
    if failed(r) {
        1
    } else if nothing_read(r) || !inputs_read_nothing(r).is_empty() {
        EXIT_NOTHING_READ
    } else {
        0
    }
}

/// Whether the report shows a problem: a rank without GDR, bandwidth low or broken or
/// collapsing at large sizes, a flagged GPU-vs-host comparison, or completion errors.
pub fn failed(r: &EvidenceReport) -> bool {
    r.ranks.iter().any(|x| x.gdr == Gdr::Off)
        || r.bandwidth.iter().any(|b| {
            matches!(b.verdict, BwVerdict::Low | BwVerdict::Broken) || b.collapse.is_some()
        })
        || r.comparisons.iter().any(|c| c.flagged)
        || !r.errors.is_empty()
}

fn nic_words(n: &NicUse) -> String {
    let mut s = format!("NET/{}/{}", n.net.as_deref().unwrap_or("?"), n.index);
    if let Some(name) = &n.name {
        let _ = write!(s, " {name}");
    }
    if n.virtual_nic {
        s.push_str(" (virtual)");
    }
    let [w, wo, cut] = n.gdr;
    let _ = write!(s, ": {} connection(s)", n.connections);
    let mut parts = Vec::new();
    if w > 0 {
        parts.push(format!("{w} /GDRDMA"));
    }
    if wo > 0 {
        parts.push(format!("{wo} without"));
    }
    if cut > 0 {
        parts.push(format!("{cut} cut"));
    }
    if !parts.is_empty() {
        let _ = write!(s, " ({})", parts.join(", "));
    }
    if let Some(note) = &n.note {
        let _ = write!(s, " — {note}");
    }
    s
}

fn who(r: &RankVerdict) -> String {
    let mut s = r.host.clone();
    match r.rank {
        Some(k) => {
            let _ = write!(s, " rank {k}");
            if let Some(n) = r.nranks {
                let _ = write!(s, "/{n}");
            }
        }
        None => s.push_str(" (rank not shown)"),
    }
    if let Some(p) = r.pid {
        let _ = write!(s, " pid {p}");
    }
    let g = &r.gpu;
    if let Some(b) = &g.bdf {
        let _ = write!(s, " GPU {b}");
    } else if let Some(b) = g.bus {
        let _ = write!(s, " GPU on bus {b:02x}");
    }
    if let Some(d) = g.cuda_dev {
        let _ = write!(s, " cudaDev {d}");
    }
    if let Some(d) = g.nvml_dev {
        let _ = write!(s, " nvmlDev {d}");
    }
    s
}

/// Renders the report as text: the verdict line and what it was judged against, each input's
/// section, then the GPU-vs-host comparisons, the ranks joined to the topology and the notes.
pub fn text(r: &EvidenceReport) -> String {
    let mut out = String::new();
    write_text(&mut out, r);
    out
}

/// Writes [`text`]'s report to `out` piece by piece, so that a report of 10^6 ranks is never
/// held whole as one string (issue 53); the same text, byte for byte.
pub fn write_text<W: Write>(out: &mut W, r: &EvidenceReport) {
    let _ = writeln!(out, "{}", verdict_line(r));
    if let Some(t) = &r.topology {
        let _ = writeln!(out, "topology: {t}");
    }
    if let Some(c) = &r.capacity {
        let _ = writeln!(
            out,
            "NIC capacity: {} NIC port(s), {:.0} Gb/s → {:.1} GB/s bus bandwidth expected (24 GB/s per 200 Gb/s) — {}",
            c.nics, c.total_gbps, c.expected_busbw, c.source
        );
    }
    if let Some(n) = &r.nvlink {
        let _ = writeln!(
            out,
            "NVLink capacity: {:.1} GB/s bus bandwidth expected on one node — {}",
            n.expected_busbw, n.source
        );
    }
    for i in &r.inputs {
        input(out, r, i);
    }
    if !r.comparisons.is_empty() {
        let _ = writeln!(out, "\nGPU vs HOST (perftest)");
        for c in &r.comparisons {
            let _ = writeln!(
                out,
                "  {}{}",
                if c.flagged { "FLAG " } else { "" },
                c.summary
            );
        }
    }
    if !r.joined.is_empty() {
        let _ = writeln!(out, "\nJOINED TO THE TOPOLOGY (by GPU, across hosts)");
        for j in &r.joined {
            let _ = writeln!(
                out,
                "  GPU {} — GDR {}{} on {} ({}): {}",
                j.gpu,
                j.gdr.as_str(),
                j.nic
                    .as_deref()
                    .map(|n| format!(" via {n}"))
                    .unwrap_or_default(),
                j.hosts.join(", "),
                j.ranks.join(" "),
                j.sentence
            );
        }
    }
    if !r.notes.is_empty() {
        let _ = writeln!(out, "\nNOTES");
        for n in &r.notes {
            let _ = writeln!(out, "  {n}");
        }
    }
}

/// One input's section: what was read, its processes, what was not read, then its ranks,
/// bandwidth, perftest, completion-error and probe lines.
fn input<W: Write>(out: &mut W, r: &EvidenceReport, i: &InputSummary) {
    let kinds = if i.kinds.is_empty() {
        "nothing recognised".to_string()
    } else {
        i.kinds.join(", ")
    };
    let _ = writeln!(out, "\nINPUT {} [{kinds}]", i.source);
    if i.kinds.iter().any(|k| k == "nccl-log") {
        let _ = writeln!(
            out,
            "  {} line(s); {} NCCL message(s) read, {} of forms with no bearing on GDR/NICs, {} refused, {} gap marker(s)",
            i.lines,
            i.nccl_read,
            i.nccl_other,
            i.refused.len(),
            i.gaps
        );
    }
    for p in &i.processes {
        process(out, p);
    }
    not_read(out, i);
    ranks(out, r, i);
    for b in r.bandwidth.iter().filter(|b| b.source == i.source) {
        let hosts = if b.hosts.is_empty() {
            "hosts not shown".to_string()
        } else {
            b.hosts.join(", ")
        };
        let _ = writeln!(
            out,
            "  bandwidth (line {}) {} — {} rank(s), {hosts}: {} [{}]",
            b.line,
            b.test,
            b.ranks,
            b.summary,
            b.verdict.as_str()
        );
        for e in &b.explanation {
            let _ = writeln!(out, "      {e}");
        }
    }
    for p in r.perftest.iter().filter(|p| p.source == i.source) {
        perftest(out, p);
    }
    for e in r.errors.iter().filter(|e| e.source == i.source) {
        let _ = writeln!(
            out,
            "  completion error (line {}) {}{} ×{} on {}: {}",
            e.line,
            e.status_name,
            e.vendor_err
                .map(|v| format!(", vendor err {v}"))
                .unwrap_or_default(),
            e.count,
            e.hosts.join(", "),
            e.meaning
        );
    }
    for p in r
        .probe
        .iter()
        .filter(|_| i.kinds.iter().any(|k| k == "peerpath-probe"))
    {
        let _ = writeln!(out, "  probe {p}");
    }
}

/// A process: its NCCL release and how it was told, network, OFI provider, IB devices, NICs,
/// environment.
fn process<W: Write>(out: &mut W, p: &ProcessSummary) {
    let mut line = if p.headerless {
        format!(
            "  lines without `host:pid:tid` (no process named)  NCCL {}",
            p.version.text
        )
    } else {
        format!("  process {}:{}  NCCL {}", p.host, p.pid, p.version.text)
    };
    match p.version.source {
        crate::analysis::evidence::version::VersionSource::Banner => line.push_str(" (banner)"),
        crate::analysis::evidence::version::VersionSource::LineForms => {
            let _ = write!(line, " (from line forms: {})", p.version.forms.join("; "));
        }
        crate::analysis::evidence::version::VersionSource::Unknown => {
            line.push_str(" (no banner, no dated line form)")
        }
    }
    if let Some(c) = &p.version.conflict {
        let _ = write!(line, " [conflict: {c}]");
    }
    let _ = writeln!(out, "{line}");
    if let Some(n) = &p.network {
        let _ = writeln!(out, "    network {n}");
    }
    if let Some(o) = &p.ofi_provider {
        let _ = writeln!(out, "    OFI provider {o}");
    }
    if let Some((n, at)) = p.ib_devices {
        let _ = writeln!(
            out,
            "    IB devices detected: {n} (`RCCL: Detected {n} IB devices`, line {at})"
        );
    }
    if !p.nics.is_empty() {
        let _ = writeln!(out, "    NICs {}", p.nics.join(" "));
    }
    for (k, v, w) in &p.env {
        let _ = writeln!(out, "    {k}={v} ({w})");
    }
}

/// The lines of an input refused, and those not understood.
fn not_read<W: Write>(out: &mut W, i: &InputSummary) {
    for x in &i.refused {
        let _ = writeln!(out, "  refused line {}: {} — {:?}", x.line, x.why, x.text);
    }
    let u = &i.unrecognised_lines;
    if u.count > 0 {
        let first: Vec<String> = u.lines.iter().take(5).map(|l| l.line.to_string()).collect();
        let _ = writeln!(
            out,
            "  {} line(s) not understood (lines {}{}; all in --format json)",
            u.count,
            first.join(", "),
            if u.count > first.len() { ", …" } else { "" }
        );
    }
}

/// The GDR verdict of each rank of an input, with its cause, lines, NICs and topology.
fn ranks<W: Write>(out: &mut W, r: &EvidenceReport, i: &InputSummary) {
    let ranks: Vec<&RankVerdict> = r.ranks.iter().filter(|x| x.source == i.source).collect();
    if !ranks.is_empty() {
        let _ = writeln!(out, "  GDR per rank:");
    }
    for x in ranks {
        let _ = writeln!(
            out,
            "    {} — GDR {} (NCCL {})",
            who(x),
            x.gdr.as_str(),
            x.version
        );
        if let Some(c) = &x.cause {
            let _ = writeln!(out, "      why: {}", c.text);
        }
        let lines: Vec<String> = x.lines.iter().map(|l| l.to_string()).collect();
        let _ = writeln!(
            out,
            "      shown by: {} (lines {})",
            x.basis,
            lines.join(", ")
        );
        for n in &x.nics {
            let _ = writeln!(out, "      NIC {}", nic_words(n));
        }
        if let Some(t) = &x.topology {
            let _ = writeln!(out, "      topology: {}", t.sentence);
        }
    }
}

/// A perftest run's line and its warnings.
fn perftest<W: Write>(out: &mut W, p: &PerftestVerdict) {
    let mut s = format!(
        "  perftest (line {}) {}{}{} on {} memory{}: {:.2} Gb/s average at {} B, peak {:.2} Gb/s ({} size(s))",
        p.line,
        p.tool,
        p.role
            .as_deref()
            .map(|x| format!(" {x}"))
            .unwrap_or_default(),
        p.host
            .as_deref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default(),
        p.memory,
        p.device
            .as_deref()
            .map(|d| format!(", device {d}"))
            .unwrap_or_default(),
        p.avg_gbps,
        p.sizes.1,
        p.peak_gbps,
        p.sizes.2
    );
    if let Some(g) = &p.gpu {
        let _ = write!(s, "; GPU {g}");
    }
    if let Some(port) = p.port_gbps {
        let _ = write!(
            s,
            "; {:.0} % of the {port:.0} Gb/s port",
            p.avg_gbps / port * 100.0
        );
    }
    let _ = writeln!(out, "{s}");
    for w in &p.warnings {
        let _ = writeln!(out, "      perftest WARNING: {w}");
    }
}

/// The report as pretty JSON (`peerpath.evidence/1`).
pub fn json(r: &EvidenceReport) -> serde_json::Result<String> {
    serde_json::to_string_pretty(r)
}
