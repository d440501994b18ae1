//! A name from the input is data at every sink, never code (issue 53, "names become code").
//! The topology is synthesized (`peerpath fixture`, then its JSON with an RDMA and a net device
//! renamed to hostile names: newline, NUL, ESC, C1 U+009B, bidi controls, quotes, `$(`,
//! backticks, `<!--`, `</script`), and each sink is read the way its consumer reads it: the
//! shell output is evaluated by `sh`, gres.conf split into live lines, the health output into
//! status lines, the Prometheus text parsed, the HTML report's script checked for the
//! sequences that end it, terminal text checked for raw controls.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

fn peerpath(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("SLURM_LOCALID")
        .env_remove("LOCAL_RANK")
        .output()
        .unwrap()
}

/// The payload: each `$(…)` or backtick would create `PWNED` in the working directory if a
/// shell ran it.
const RDMA: &str = "mlx5_0\n$(touch PWNED)\n`touch PWNED`'\"\u{0}\u{1b}]0;x\u{7}\u{9b}2J\u{202e}\u{2066}<!--<script></script";
const NET: &str = "ib0\n<!--<script></script>\u{2028}peerpath: ok";

/// A synthesized `layout` as peerpath JSON with `mlx5_0`/`mlx5_3` and `ib0` renamed.
fn hostile_json(dir: &Path, layout: &str, rdma_from: &str, rdma: &str) -> PathBuf {
    let tree = dir.join("tree");
    assert!(
        peerpath(&["fixture", layout, "-o", tree.to_str().unwrap()])
            .status
            .success()
    );
    let o = peerpath(&["scan", "-i", tree.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success());
    let doc = String::from_utf8(o.stdout).unwrap();
    let q = |s: &str| serde_json::to_string(s).unwrap();
    assert_eq!(doc.matches(&q(rdma_from)).count(), 1);
    let doc = doc
        .replace(&q(rdma_from), &q(rdma))
        .replace(&q("ib0"), &q(NET));
    let p = dir.join("hostile.json");
    std::fs::write(&p, doc).unwrap();
    p
}

/// Runs `script` with `sh -c` in `dir`, and says whether the payload ran.
fn sh_in(dir: &Path, script: &str) -> (Output, bool) {
    let o = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("PEERPATH", bin())
        .env_remove("SLURM_LOCALID")
        .output()
        .unwrap();
    (o, dir.join("PWNED").exists())
}

#[test]
fn shell_output_evaluated_runs_no_command_from_a_name() {
    let d = tempfile::tempdir().unwrap();
    let j = hostile_json(d.path(), "hgx-h100", "mlx5_0", RDMA);
    let j = j.to_str().unwrap();
    // The documented use: eval the env lines; the value arrives as data (the shell drops NUL).
    let (o, ran) = sh_in(
        d.path(),
        &format!(
            "eval \"$(\"$PEERPATH\" place -i '{j}' --ranks 8 --format env --rank 0)\"; printf %s \"$NCCL_IB_HCA\""
        ),
    );
    assert!(!ran, "place --format env ran a command from a name");
    let want = format!("={}:1", RDMA.replace('\0', ""));
    assert_eq!(String::from_utf8_lossy(&o.stdout), want, "{o:?}");
    // Every rank's block, evaluated at once.
    let (_, ran) = sh_in(
        d.path(),
        &format!("eval \"$(\"$PEERPATH\" place -i '{j}' --ranks 8 --format env)\""),
    );
    assert!(!ran, "place --format env (all ranks) ran a command");
    // launch --dry-run's lines are KEY=value words and comments: evaluated, they run nothing.
    let (_, ran) = sh_in(
        d.path(),
        &format!(
            "eval \"$(\"$PEERPATH\" launch --dry-run --rank 0 --ranks 8 -i '{j}' -- echo hi)\""
        ),
    );
    assert!(!ran, "launch --dry-run ran a command from a name");
    // The srun script, run as local rank 0 with a harmless command.
    let o = peerpath(&["place", "-i", j, "--ranks", "8", "--format", "slurm"]);
    std::fs::write(d.path().join("s.sh"), &o.stdout).unwrap();
    let (o, ran) = sh_in(
        d.path(),
        "SLURM_LOCALID=0 sh ./s.sh sh -c 'printf %s \"$NCCL_IB_HCA\"'",
    );
    assert!(!ran, "the slurm script ran a command from a name");
    assert_eq!(String::from_utf8_lossy(&o.stdout), want, "{o:?}");
}

#[test]
fn gres_conf_gets_no_live_line_from_a_name() {
    let d = tempfile::tempdir().unwrap();
    let j = hostile_json(d.path(), "hgx-h100", "mlx5_0", RDMA);
    let o = peerpath(&["export", "--format", "gres", "-i", j.to_str().unwrap()]);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    // Slurm reads gres.conf a line at a time, `#` to the end of the line a comment.
    let live: Vec<&str> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(live.len(), 9, "{live:#?}");
    assert_eq!(live[0], "AutoDetect=off");
    assert!(
        live[1..].iter().all(|l| l.starts_with("Name=gpu ")),
        "{live:#?}"
    );
    assert!(text.contains("# mlx5_0\\x0a$(touch PWNED)"), "{text}");
}

#[test]
fn gres_conf_refuses_a_node_name_or_type_that_would_change_the_line() {
    let d = tempfile::tempdir().unwrap();
    let j = hostile_json(d.path(), "hgx-h100", "mlx5_0", "mlx5_0");
    let j = j.to_str().unwrap();
    for flag in ["--node-name", "--gpu-type"] {
        let o = peerpath(&[
            "export",
            "--format",
            "gres",
            "-i",
            j,
            flag,
            "n1\nName=gpu File=/dev/null",
        ]);
        assert_eq!(o.status.code(), Some(2), "{flag}: {o:?}");
        assert!(o.stdout.is_empty());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag) && err.contains("gres.conf"), "{err}");
    }
    let o = peerpath(&[
        "export",
        "--format",
        "gres",
        "-i",
        j,
        "--node-name",
        "gpu[01-08]",
    ]);
    assert!(o.status.success(), "{o:?}");
}

#[test]
fn dra_yaml_holds_a_hostile_name_as_one_printable_scalar() {
    let d = tempfile::tempdir().unwrap();
    let name = "m\n- x: \u{1b}\u{9b}\u{2028}\"# y";
    let j = hostile_json(d.path(), "hgx-h100", "mlx5_0", name);
    let o = peerpath(&[
        "export",
        "--format",
        "dra",
        "--node-name",
        "n1",
        "-i",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{o:?}");
    let y = String::from_utf8(o.stdout).unwrap();
    // YAML 1.2 c-printable: no C0 but tab/newline/CR, no DEL or C1 but NEL; U+2028 is a line
    // break to YAML 1.1.
    let bad = y.chars().find(|&c| {
        (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{85}'))
            || matches!(c, '\u{2028}' | '\u{2029}')
    });
    assert_eq!(bad, None, "{y}");
    assert!(
        y.contains(r##"string: "m\n- x: \u001b\u009b\u2028\"# y""##),
        "{y}"
    );
}

#[test]
fn health_output_has_one_status_line_whatever_the_names() {
    let d = tempfile::tempdir().unwrap();
    let j = hostile_json(d.path(), "misplaced-nic", "mlx5_3", "mlx5_3\npeerpath: ok");
    let o = peerpath(&["audit", "--format", "health", "-i", j.to_str().unwrap()]);
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 3, "{text}");
    assert!(lines[0].starts_with("gpu-nic-path "), "{text}");
    for l in &lines[1..] {
        assert!(
            l.starts_with("peerpath: error ") || l.starts_with("peerpath: warning "),
            "a line not written by the health renderer: {l:?}"
        );
    }
    assert!(text.contains("mlx5_3\\x0apeerpath: ok"), "{text}");
}

#[test]
fn prometheus_text_parses_with_the_name_as_one_label_value() {
    let d = tempfile::tempdir().unwrap();
    let j = hostile_json(d.path(), "hgx-h100", "mlx5_0", RDMA);
    let o = peerpath(&["export", "--format", "prom", "-i", j.to_str().unwrap()]);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    // The exposition format: one sample a line, `name{label="value",…} number`, a value's
    // `\\`, `\"` and newline escaped.
    let sample = regex::Regex::new(
        r#"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^"\\\n])*",?)*\})? [0-9.eE+-]+$"#,
    )
    .unwrap();
    for l in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        assert!(sample.is_match(l), "not one sample: {l:?}");
    }
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
    // prometheus-parse keeps the escapes: undo them as Prometheus does.
    let unescape = |v: &str| v.replace("\\n", "\n").replace("\\\"", "\"");
    let nics: Vec<String> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == "peerpath_gpu_nic_path")
        .filter_map(|s| s.labels.get("nic").map(unescape))
        .collect();
    assert!(nics.iter().any(|n| n == RDMA), "{nics:?}");
}

/// The text of every `<script>` element of an HTML page.
fn scripts(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<script>") {
        let body = &rest[i + "<script>".len()..];
        let end = body.find("</script>").unwrap_or(body.len());
        out.push(&body[..end]);
        rest = &body[end..];
    }
    out
}

#[test]
fn html_report_script_cannot_be_ended_or_commented_by_a_name() {
    let d = tempfile::tempdir().unwrap();
    let j = hostile_json(d.path(), "hgx-h100", "mlx5_0", RDMA);
    let out = d.path().join("r.html");
    let o = peerpath(&[
        "report",
        "-i",
        j.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{o:?}");
    let html = std::fs::read_to_string(&out).unwrap();
    let s = scripts(&html);
    assert!(!s.is_empty());
    for body in s {
        let low = body.to_ascii_lowercase();
        assert!(!low.contains("</script"), "script data holds </script");
        assert!(!low.contains("<!--"), "script data holds <!--");
        assert!(!body.contains('\u{2028}') && !body.contains('\u{2029}'));
    }
    assert!(
        html.contains("\\u003c!--\\u003cscript\\u003e"),
        "the name is still there"
    );
}

#[test]
fn svg_picture_stays_well_formed_xml_with_a_hostile_name() {
    let d = tempfile::tempdir().unwrap();
    let j = hostile_json(d.path(), "hgx-h100", "mlx5_0", RDMA);
    let out = d.path().join("p.svg");
    let o = peerpath(&[
        "report",
        "-i",
        j.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{o:?}");
    let svg = std::fs::read_to_string(&out).unwrap();
    // XML 1.0 `Char`: no C0 control but tab, newline and carriage return.
    let bad = svg
        .chars()
        .find(|&c| (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'));
    assert_eq!(bad, None, "a character XML forbids");
    assert!(!raw_controls(&svg.replace(['\n', '\t', '\r'], "")));
    // And an XML parser reads it to the end (it stopped at the ESC).
    let mut r = quick_xml::Reader::from_str(&svg);
    loop {
        match r.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not well-formed at {}: {e}", r.buffer_position()),
        }
    }
}

/// Whether `s` holds a character a terminal acts on.
fn raw_controls(s: &str) -> bool {
    s.chars().any(|c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

#[test]
fn evidence_text_shows_nic_names_from_a_log_escaped() {
    let d = tempfile::tempdir().unwrap();
    let log = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/evidence/nccl-1052-node2-node4-h800-roce-init.log"),
    )
    .unwrap()
    .replace("mlx5_4", "mlx5_4\u{1b}]0;x\u{7}\u{9b}2J\u{202e}");
    let p = d.path().join("job.log");
    std::fs::write(&p, log).unwrap();
    let o = peerpath(&["evidence", p.to_str().unwrap()]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("mlx5_4\\x1b]0;x\\x07\\u{9b}2J\\u{202e}"),
        "{out}"
    );
    assert!(!raw_controls(&out), "{out:?}");
}

#[test]
fn evidence_json_on_a_terminal_is_escaped_the_json_way() {
    let d = tempfile::tempdir().unwrap();
    let log = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/evidence/nccl-1052-node2-node4-h800-roce-init.log"),
    )
    .unwrap()
    .replace("mlx5_4", "mlx5_4\u{9b}2J\u{202e}");
    let p = d.path().join("job.log");
    std::fs::write(&p, log).unwrap();
    // util-linux `script` gives the command a terminal; its transcript is what the terminal got.
    let typescript = d.path().join("typescript");
    let cmd = format!(
        "'{}' evidence --format json '{}'",
        bin(),
        p.to_str().unwrap()
    );
    let o = Command::new("script")
        .args(["-qec", &cmd, typescript.to_str().unwrap()])
        .output();
    let Ok(o) = o else {
        eprintln!("no `script` here: skipped");
        return;
    };
    assert!(o.status.success(), "{o:?}");
    let seen = String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned();
    // The transcript's own header and footer lines are `Script started…`/`Script done…`.
    assert!(seen.contains("mlx5_4\\u009b2J\\u202e"), "{seen}");
    assert!(
        !seen.contains('\u{9b}') && !seen.contains('\u{202e}'),
        "{seen:?}"
    );
}

#[test]
fn nccl_xml_host_note_on_stderr_is_escaped() {
    let d = tempfile::tempdir().unwrap();
    let xml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/realworld/oci-gb300-2tray-fused.nccl-topo.xml"),
    )
    .unwrap()
    .replace("0xb93bee07ef6f4564", "0xb93\u{1b}]0;x\u{7}\u{202e}");
    let p = d.path().join("fused.xml");
    std::fs::write(&p, xml).unwrap();
    let o = peerpath(&["matrix", "-i", p.to_str().unwrap()]);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("peerpath: note: input holds 2 hosts"), "{err}");
    assert!(err.contains("0xb93\\x1b]0;x\\x07\\u{202e}"), "{err}");
    assert!(!raw_controls(&err), "{err:?}");
}
