//! Subcommands of the `peerpath` binary that are more than a few lines.

pub mod assets;
pub mod audit;
pub mod capture;
pub mod classify;
pub mod completions;
pub mod diff;
pub mod evidence;
pub mod export;
pub mod export_sched;
pub mod fixture;
#[cfg(test)]
mod flags;
pub mod fleet;
pub mod launch;
pub mod place;
pub mod probe;
pub mod probe_storage;
pub mod rails;
pub mod report;

use peerpath::render::terminal;
use std::io::{IsTerminal, Write};

/// Output format of `diff` and `fleet`.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// Lines for people.
    Text,
    /// JSON (`peerpath.diff/1`, `peerpath.fleet/1`).
    Json,
}

/// The job's environment as NCCL reads it: every `NCCL_*` variable of this process and `HOME`
/// (for `~/.nccl.conf`). Every command that judges GPUDirect RDMA hands it to the load
/// (`LoadOptions::nccl_env`), so its verdict reads what NCCL would read; `fleet` and `diff`
/// compare nodes by their own files and do not.
pub fn job_environment() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k.starts_with("NCCL_") || k == "HOME")
        .collect()
}

/// Prints text meant for people: every control character from the input is escaped first
/// ([`terminal::for_terminal`]), whether standard output is a terminal or not.
pub fn print_text(s: &str) {
    print!("{}", terminal::for_terminal(s));
}

/// Text meant for people written as it is rendered (a report too large to hold twice, issue
/// 53): each piece is escaped as [`print_text`] escapes the whole (the escape is per
/// character, so the bytes are the same) and buffered to standard output. After a failed write
/// nothing more is written.
pub struct TextOut<'a> {
    out: std::io::BufWriter<std::io::StdoutLock<'a>>,
    failed: bool,
}

impl std::fmt::Write for TextOut<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.failed {
            return Err(std::fmt::Error);
        }
        if self
            .out
            .write_all(terminal::for_terminal(s).as_bytes())
            .is_err()
        {
            self.failed = true;
            return Err(std::fmt::Error);
        }
        Ok(())
    }
}

/// Runs `render` on a [`TextOut`] to standard output, then flushes it.
pub fn stream_text(render: impl FnOnce(&mut TextOut<'_>)) {
    let mut t = TextOut {
        out: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        failed: false,
    };
    render(&mut t);
    let _ = t.out.flush();
}

/// A JSON document serialized straight to standard output when it is a pipe or file (never
/// held whole as a string), followed by a newline; on a terminal, escaped as
/// [`print_document`] does. An error writing is ignored as [`print_document`] ignores it; an
/// error serializing is returned.
pub fn stream_json<T: serde::Serialize>(v: &T) -> serde_json::Result<()> {
    let out = std::io::stdout();
    if out.is_terminal() {
        print_document(&(serde_json::to_string_pretty(v)? + "\n"), true);
        return Ok(());
    }
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out.lock());
    match serde_json::to_writer_pretty(&mut w, v) {
        Err(e) if !e.is_io() => return Err(e),
        Err(_) => return Ok(()),
        Ok(()) => {}
    }
    let _ = w.write_all(b"\n");
    let _ = w.flush();
    Ok(())
}

/// Prints a machine-readable document (JSON when `json`, else a file format such as gres.conf
/// or DOT): as written when standard output is a pipe or file, escaped when it is a terminal.
pub fn print_document(s: &str, json: bool) {
    let out = std::io::stdout();
    if out.is_terminal() {
        if json {
            print!("{}", terminal::json_for_terminal(s));
        } else {
            print!("{}", terminal::for_terminal(s));
        }
    } else {
        let mut l = out.lock();
        let _ = l.write_all(s.as_bytes());
    }
}

/// Prints a line on standard error (`peerpath: …`), control characters escaped.
pub fn say(s: &str) {
    eprintln!("{}", terminal::for_terminal(s));
}
