//! Lines of a captured job output, as the evidence parsers ([`super::nccl_log`],
//! [`super::nccl_tests`], [`super::perftest`]) see them: CRLF and lone CR endings removed,
//! whether each line ended (a last line without newline, or the line before a gap marker, may
//! have been cut), gap markers recognised, and launcher prefixes (`[1,0]<stdout>:`, `[0] `,
//! `0: `, `[rank0]:`) split off. Pure: text in, slices out.

/// A decimal figure as a job printed it, when it is a finite number: `inf`, `NaN` and values
/// past f64's range (`1e999`, read by Rust as infinity) are refused, never judged.
pub fn finite(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A word that Rust reads as a number but is not a finite one (`1e999`, `inf`, `NaN`).
pub fn non_finite(s: &str) -> bool {
    s.parse::<f64>().is_ok_and(|v| !v.is_finite())
}

/// One physical line of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// 1-based line number in the input.
    pub no: usize,
    /// The text without its line ending.
    pub text: &'a str,
    /// False when the line may have been cut: the input ends without a newline after it, or a
    /// gap marker (`[... text missing here …]`, `[... cut: …]`) follows it.
    pub ended: bool,
}

/// Whether a line marks text left out of a copy (`[... text missing here: …]`, `[... cut: …]`,
/// a bare `...` or `[...]`): what precedes it may be cut, and nothing follows from it.
pub fn is_gap_marker(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("[...") || t == "..." || t == "[…]" || t.starts_with("[…")
}

/// Splits text into lines: `\n`, `\r\n` and a lone `\r` end a line; each line knows whether it
/// ended (see [`Line::ended`]).
pub fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out: Vec<Line> = Vec::new();
    let mut rest = text;
    let mut no = 0;
    while !rest.is_empty() {
        no += 1;
        let (line, ended, next) = match rest.find(['\n', '\r']) {
            Some(i) => {
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                (&rest[..i], true, &rest[i + skip..])
            }
            None => (rest, false, ""),
        };
        out.push(Line {
            no,
            text: line,
            ended,
        });
        rest = next;
    }
    for i in 1..out.len() {
        if is_gap_marker(out[i].text) {
            out[i - 1].ended = false;
        }
    }
    out
}

/// Splits a launcher's tag off the start of a line: Open MPI `--tag-output` (`[1,0]<stdout>:`),
/// Intel MPI / MPICH `-l` (`[0] `), Slurm `srun --label` (`0: `, ` 12: `), torchrun
/// (`[rank0]:`, `[default0]:`), kubectl `--prefix` (`[pod/name/container] `), and pdsh's
/// `host: ` when what follows starts like tool output (`#` or a number), and a Markdown quote
/// (`> `, logs pasted into an issue as a quotation), and Ray's worker prefix (`(Name pid=N, ip=A) `).
/// Tags can repeat
/// (`[pod/a/b] [1,0]<stdout>:`). Returns (tag, rest); the tag is empty when there is none.
pub fn split_launcher(line: &str) -> (&str, &str) {
    let mut rest = line;
    loop {
        let t = rest.trim_start();
        let Some(next) = strip_one_tag(t) else {
            break;
        };
        rest = next;
    }
    let cut = line.len() - rest.len();
    (&line[..cut], rest)
}

/// The worker's pid in the last of Ray's tags in `tag` (`(Name pid=N[, ip=A])`), if any.
pub fn ray_pid(tag: &str) -> Option<u32> {
    ray_worker(tag).map(|(pid, _)| pid)
}

/// The worker of the last of Ray's tags in `tag`: its pid and, for a worker on another node
/// than the driver, its node's address (`(RayTrainWorker pid=2981, ip=10.0.0.2)`). Ray prints
/// the tag from the worker's own (pid, ip), so it names one process whatever the host name in
/// the line after it says.
pub fn ray_worker(tag: &str) -> Option<(u32, Option<&str>)> {
    let inner = tag.trim_end().strip_suffix(')')?;
    let inner = &inner[inner.rfind('(')? + 1..];
    let at = inner.find("pid=")?;
    if at > 0 && !inner[..at].ends_with(' ') {
        return None;
    }
    let digits: String = inner[at + 4..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let rest = &inner[at + 4 + digits.len()..];
    if !(rest.is_empty() || rest.starts_with(',')) {
        return None;
    }
    let ip = rest
        .split(',')
        .find_map(|kv| kv.trim().strip_prefix("ip="))
        .filter(|ip| !ip.is_empty());
    Some((digits.parse().ok()?, ip))
}

/// Ray's log deduplication (`ray/_private/ray_logging`: `LogDeduplicator`): a worker line
/// printed once for several whose words without digits agree (`_canonicalise_log_line` drops
/// every word holding a digit or hex), followed by ` [repeated Nx across cluster]` (colored
/// when Ray writes to a terminal) and, the first time, ` (Ray deduplicates logs by default. …)`.
/// Returns the line without those, and N: the other lines it stands for, from any worker, whose
/// numbers — ranks, NIC indexes, `/GDRDMA` — may differ and are not in the copy.
pub fn ray_dedup(line: &str) -> (&str, Option<u32>) {
    let mut t = strip_ansi_end(line.trim_end());
    if t.ends_with(')')
        && let Some(at) = t.rfind(" (Ray deduplicates logs by default.")
    {
        t = strip_ansi_end(t[..at].trim_end());
    }
    let Some(body) = t.strip_suffix("x across cluster]") else {
        return (line, None);
    };
    let Some(at) = body.rfind(" [repeated ") else {
        return (line, None);
    };
    let Ok(n) = body[at + " [repeated ".len()..].parse::<u32>() else {
        return (line, None);
    };
    (strip_ansi_end(&t[..at]), Some(n))
}

/// `t` without the terminal color codes (`ESC [ … m`) at its end.
fn strip_ansi_end(mut t: &str) -> &str {
    while let Some(at) = t.rfind('\x1b') {
        let code = &t[at..];
        let ok = code.len() >= 3
            && code[1..].starts_with('[')
            && code.ends_with('m')
            && code[2..code.len() - 1]
                .chars()
                .all(|c| c.is_ascii_digit() || c == ';');
        if !ok {
            break;
        }
        t = &t[..at];
    }
    t
}

/// One launcher tag at the start of `t` (already left-trimmed), or `None`.
fn strip_one_tag(t: &str) -> Option<&str> {
    // A Markdown quote (`> `): logs pasted into an issue as a quotation.
    if let Some(r) = t.strip_prefix("> ") {
        return Some(r);
    }
    if t == ">" {
        return Some("");
    }
    // Ray's prefix of a worker's lines: `(RayWorkerWrapper pid=2981, ip=169.254.28.198) `,
    // `(pid=2981) `.
    if t.starts_with('(')
        && let Some(close) = t.find(')')
        && ray_pid(&t[..=close]).is_some()
    {
        let after = &t[close + 1..];
        if after.is_empty() || after.starts_with([' ', '\t']) {
            return Some(after);
        }
    }
    if let Some(inner_end) = t.strip_prefix('[').and_then(|r| r.find(']')) {
        let inner = &t[1..1 + inner_end];
        let after = &t[inner_end + 2..];
        let mpi_pair = inner
            .split_once(',')
            .is_some_and(|(a, b)| is_uint(a) && is_uint(b));
        let rank = is_uint(inner)
            || inner
                .strip_prefix("rank")
                .or_else(|| inner.strip_prefix("default"))
                .is_some_and(is_uint);
        let pod = inner.starts_with("pod/") && inner.matches('/').count() >= 2;
        if mpi_pair {
            for s in ["<stdout>:", "<stderr>:", "<stddiag>:"] {
                if let Some(r) = after.strip_prefix(s) {
                    return Some(r);
                }
            }
            return after.strip_prefix(':').or(Some(after));
        }
        if rank || pod {
            if let Some(r) = after.strip_prefix(':') {
                return Some(r);
            }
            // `[0] ` needs the space: `[0]` glued to text is not a tag.
            return after.starts_with([' ', '\t']).then_some(after);
        }
        return None;
    }
    // `0: ` (srun --label) and `host: ` (pdsh) before tool output.
    let (tok, after) = t.split_once(": ")?;
    if tok.is_empty() || tok.contains(char::is_whitespace) {
        return None;
    }
    if is_uint(tok) {
        return Some(after);
    }
    let first = after.split_whitespace().next().unwrap_or("");
    let looks_like_output = first.starts_with('#') || first.parse::<f64>().is_ok();
    let host_like = tok
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    (host_like && looks_like_output).then_some(after)
}

/// An unsigned decimal integer (no sign, no spaces).
pub fn is_uint(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The shell variable assignments (`NAME=value`) at the start of a command line, and in
/// `env`/`export`/`mpirun -x NAME=value` forms, for names starting with `NCCL_`, `CUDA_` or
/// `UCX_`: what a job set, as its command line shows it. Quotes around values are removed.
pub fn command_env(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for tok in line.split_whitespace() {
        let Some((k, v)) = tok.split_once('=') else {
            continue;
        };
        let k = k.trim_start_matches("--env=").trim_start_matches("-x=");
        if !(k.starts_with("NCCL_") || k.starts_with("CUDA_") || k.starts_with("UCX_"))
            || !k
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            continue;
        }
        let v = v.trim_matches(|c| c == '"' || c == '\'');
        out.push((k.to_string(), v.to_string()));
    }
    out
}

/// The `user@host` of a shell prompt at the start of a line (`[root@node-1 /]# cmd`,
/// `root@gh-3714u06:/ws# cmd`), and the command after the prompt; `None` without a prompt.
pub fn shell_prompt(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start().trim_start_matches('[');
    let at = t.find('@')?;
    let user = &t[..at];
    if user.is_empty() || !user.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let rest = &t[at + 1..];
    let end = rest.find([':', ' ', ']'])?;
    let host = &rest[..end];
    let hash = rest.find(['#', '$'])?;
    if host.is_empty() || hash < end {
        return None;
    }
    Some((host, rest[hash + 1..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_and_cut_lines() {
        let l = lines("a\r\nb\nc\r[... text missing here: x ...]\nd");
        let t: Vec<(&str, bool)> = l.iter().map(|l| (l.text, l.ended)).collect();
        assert_eq!(
            t,
            [
                ("a", true),
                ("b", true),
                ("c", false),
                ("[... text missing here: x ...]", true),
                ("d", false)
            ]
        );
        assert_eq!(l[4].no, 5);
        assert!(lines("").is_empty());
        assert_eq!(lines("x\n").len(), 1);
        assert!(lines("x\n")[0].ended);
    }

    #[test]
    fn launcher_tags() {
        for (line, rest) in [
            ("[1,0]<stdout>:#  Rank  0 Group", "#  Rank  0 Group"),
            (
                "[1,12]<stderr>:host:1:2 [0] NCCL INFO x",
                "host:1:2 [0] NCCL INFO x",
            ),
            ("[0] #  Rank  0", " #  Rank  0"),
            ("  3: # Using devices", "# Using devices"),
            ("[rank0]:host:1:2 [0] NCCL INFO", "host:1:2 [0] NCCL INFO"),
            ("[default3]:x", "x"),
            ("[pod/mpi-worker-0/c] [1,3]<stdout>:   8  2", "   8  2"),
            ("pod01:    8388608  2097152", "   8388608  2097152"),
            // Ray's worker prefix, nested as vLLM prints it.
            (
                "(EngineCore_DP0 pid=2301) (RayWorkerWrapper pid=2981, ip=169.254.28.198) /GDRDMA",
                " /GDRDMA",
            ),
            ("(pid=2981) h:1:2 [0] NCCL INFO x", " h:1:2 [0] NCCL INFO x"),
        ] {
            assert_eq!(split_launcher(line).1, rest, "{line}");
        }
        // Not tags: perftest's own `Device : mlx5_0`, a GID line, `[0x07]`, `[0]x`.
        for line in [
            " Dual-port       : OFF",
            " GID: 00:00:00",
            "[0x07] A100",
            "[0]x",
            "host:1:2 [0] NCCL INFO",
            "(see pid=12x) text",
            "(pid=12)x",
        ] {
            assert_eq!(split_launcher(line), ("", line), "{line}");
        }
        assert_eq!(
            ray_pid("(EngineCore_DP0 pid=2301) (RayWorkerWrapper pid=2981, ip=1.2.3.4) "),
            Some(2981)
        );
    }

    #[test]
    fn command_lines_and_prompts() {
        let env = command_env(
            "NCCL_DEBUG=INFO NCCL_IB_HCA=^mlx5_3,mlx5_4 mpirun -x LD_LIBRARY_PATH -x NCCL_NET_GDR_LEVEL=\"SYS\" ./a",
        );
        assert_eq!(
            env,
            [
                ("NCCL_DEBUG".into(), "INFO".into()),
                ("NCCL_IB_HCA".into(), "^mlx5_3,mlx5_4".into()),
                ("NCCL_NET_GDR_LEVEL".into(), "SYS".into())
            ]
        );
        assert_eq!(
            shell_prompt("[root@rdma-test-pod-1 /]# ib_write_bw -a"),
            Some(("rdma-test-pod-1", "ib_write_bw -a"))
        );
        assert_eq!(
            shell_prompt("root@gh-3714u06:/sgl-workspace# NCCL_DEBUG=INFO torchrun"),
            Some(("gh-3714u06", "NCCL_DEBUG=INFO torchrun"))
        );
        assert_eq!(shell_prompt("user@example.com wrote"), None);
        assert_eq!(shell_prompt("#bytes"), None);
    }

    #[test]
    fn rays_dedup_suffix() {
        assert_eq!(
            ray_dedup("x NCCL INFO Using network IB [repeated 14x across cluster]"),
            ("x NCCL INFO Using network IB", Some(14))
        );
        assert_eq!(
            ray_dedup(
                "a [repeated 2x across cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/x for more options.)"
            ),
            ("a", Some(2))
        );
        assert_eq!(
            ray_dedup("a\x1b[32m [repeated 9x across cluster]\x1b[0m"),
            ("a", Some(9))
        );
        // Not Ray's: kept whole.
        for t in [
            "a [repeated many times across cluster]",
            "a across cluster]",
            "a",
        ] {
            assert_eq!(ray_dedup(t), (t, None));
        }
        assert_eq!(
            ray_worker("(RayTrainWorker pid=12, ip=10.0.0.1) "),
            Some((12, Some("10.0.0.1")))
        );
        assert_eq!(ray_worker("(pid=12) "), Some((12, None)));
    }
}
