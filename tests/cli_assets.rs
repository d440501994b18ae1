//! What the packages carry besides the binary (issue 32), from the binary the tests built: the
//! man pages and completions `peerpath generate-assets DIR` writes (one page per command users
//! run and none for the hidden command, read by `man`; completions bash loads and that
//! complete), and `--version` naming the commit. scripts/check-packages.sh proves the same of
//! the installed packages.

mod common;

use std::path::Path;

/// The commands `peerpath --help` lists, but `help`.
fn commands() -> Vec<String> {
    let out = common::peerpath().arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let list = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands: section");
    list.lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The first line of `peerpath CMD --help`: the page's NAME line must say it.
fn about(cmd: &str) -> String {
    let out = common::peerpath().args([cmd, "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    help.lines().next().unwrap().to_owned()
}

fn generate(dir: &Path) {
    let out = common::peerpath()
        .arg("generate-assets")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "generate-assets: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_man_page_per_command_and_three_completions_without_the_hidden_command() {
    let d = tempfile::tempdir().unwrap();
    generate(d.path());
    let cmds = commands();
    assert!(
        cmds.len() >= 15 && cmds.iter().any(|c| c == "audit"),
        "{cmds:?}"
    );
    let man = d.path().join("man/man1");
    let mut pages: Vec<String> = std::fs::read_dir(&man)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    let mut want: Vec<String> = cmds.iter().map(|c| format!("peerpath-{c}.1")).collect();
    want.push("peerpath.1".into());
    want.sort();
    assert_eq!(pages, want);
    for c in &cmds {
        let page = std::fs::read_to_string(man.join(format!("peerpath-{c}.1"))).unwrap();
        assert!(
            page.contains(&format!(".TH peerpath-{c} 1 ")),
            "{c}: {page}"
        );
        // The NAME line, with roff's escapes of '-' and '\'' undone.
        let name = format!("peerpath-{c} - {}", about(c));
        let plain = page.replace("\\-", "-").replace("\\*(Aq", "'");
        assert!(
            plain.lines().any(|l| l == name),
            "{c}: no NAME line '{name}'"
        );
    }
    for f in ["peerpath.bash", "_peerpath", "peerpath.fish"] {
        let text = std::fs::read_to_string(d.path().join("completions").join(f)).unwrap();
        for c in &cmds {
            assert!(text.contains(c.as_str()), "{f} does not offer {c}");
        }
        assert!(
            !text.contains("generate-assets"),
            "{f} offers the hidden command"
        );
    }
    for p in &pages {
        let page = std::fs::read_to_string(man.join(p)).unwrap();
        assert!(
            !page.contains("generate\\-assets"),
            "{p} names the hidden command"
        );
    }
    // --help does not list it either.
    let help = common::peerpath().arg("--help").output().unwrap().stdout;
    assert!(!String::from_utf8(help).unwrap().contains("generate-assets"));
}

#[test]
fn man_formats_the_audit_page() {
    let d = tempfile::tempdir().unwrap();
    generate(d.path());
    let page = d.path().join("man/man1/peerpath-audit.1");
    let Some(text) = common::tool(
        "man",
        &["-l", page.to_str().unwrap()],
        &[("MANWIDTH", "100"), ("MANPAGER", "cat")],
    ) else {
        return;
    };
    assert!(
        text.lines().any(|l| l
            .trim_start()
            .starts_with("peerpath-audit - Audit the node")),
        "{text}"
    );
    assert!(text.contains("--evidence <FILE>"), "{text}");
}

#[test]
fn bash_loads_the_completion_and_completes_commands_and_options() {
    let d = tempfile::tempdir().unwrap();
    generate(d.path());
    let script = d.path().join("completions/peerpath.bash");
    let prog = r#"
        source "$1"
        fn=$(complete -p peerpath | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
        c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
          COMPREPLY=(); "$fn" peerpath "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
          echo "${COMPREPLY[*]}"; }
        c peerpath au; c peerpath audit --for; c peerpath matrix --format ""
    "#;
    let Some(out) = common::tool(
        "bash",
        &["--norc", "-c", prog, "bash", script.to_str().unwrap()],
        &[],
    ) else {
        return;
    };
    // bash's own order; the set is that of zsh and fish.
    assert_eq!(out, "audit\n--format\ntable json rocm-smi\n");
}

/// What `peerpath au⇥`, `peerpath audit --for⇥` and `peerpath matrix --format ⇥` complete to, in
/// the order asked, as the same answer from every shell.
const EXPECTED_COMPLETIONS: &str = "audit\n--format\njson rocm-smi table\n";

#[test]
fn zsh_loads_the_completion_through_compinit_and_completes() {
    let d = tempfile::tempdir().unwrap();
    generate(d.path());
    // An interactive zsh on a pseudo-terminal (zsh/zpty), `_peerpath` found on $fpath by
    // compinit as an installed completion is, a Tab typed after each line; the candidates are
    // what the completion functions hand to compadd (tests/shells/complete.zsh). Each key is
    // typed after a marker the shell prints when ready for it: no sleeps, no retries.
    let script = common::repo().join("tests/shells/complete.zsh");
    let dir = d.path().join("completions");
    let Some(out) = common::tool(
        "timeout",
        &[
            "60",
            "zsh",
            "-f",
            script.to_str().unwrap(),
            dir.to_str().unwrap(),
            "peerpath au",
            "peerpath audit --for",
            "peerpath matrix --format ",
        ],
        &[],
    ) else {
        return;
    };
    if out.is_empty() && std::env::var_os("CI").is_none() && !has("zsh") {
        eprintln!("note: zsh not installed; skipped");
        return;
    }
    let got: Vec<String> = out
        .split("END\n")
        .filter(|b| !b.is_empty())
        .map(|b| {
            b.lines()
                .filter_map(|l| l.strip_prefix("HIT:"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        got.join("\n") + "\n",
        EXPECTED_COMPLETIONS,
        "zsh said:\n{out}"
    );
}

#[test]
fn fish_loads_the_completion_and_completes() {
    let d = tempfile::tempdir().unwrap();
    generate(d.path());
    let script = d.path().join("completions/peerpath.fish");
    // `source` runs the file as fish does from vendor_completions.d: an error in it (an
    // unescaped quote, a command substitution) is printed on stderr and fails the run.
    let prog = r#"source $argv[1]; or exit 3
        for line in "peerpath au" "peerpath audit --for" "peerpath matrix --format "
            complete -C "$line" | string replace -r '\t.*' '' | sort | string join ' '
        end"#;
    let out = std::process::Command::new("fish")
        .args(["--no-config", "-c", prog, script.to_str().unwrap()])
        .env("LANG", "C")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "fish is required in CI (installed by .ci/run): {e}"
            );
            eprintln!("note: fish not installed ({e}); skipped");
            return;
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.is_empty(), "fish: {err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), EXPECTED_COMPLETIONS);
    // place's `env` value help holds `"$(…)"`, which clap_complete alone leaves unescaped in
    // fish's `-a "…"` (src/cli/completions.rs): it is shown as written and runs nothing.
    let prog = r#"source $argv[1]; or exit 3; complete -C "peerpath place --format e""#;
    let out = std::process::Command::new("fish")
        .args(["--no-config", "-c", prog, script.to_str().unwrap()])
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("env\t`export KEY=value`")
            && text.ends_with("for `eval \"$(peerpath place … --rank R)\"`\n"),
        "{text}"
    );
}

/// Whether `tool` is on PATH.
fn has(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = common::peerpath().arg("--version").output().unwrap();
    let v = String::from_utf8(out.stdout).unwrap();
    let repo = common::repo();
    let top = std::process::Command::new("git")
        .args(["-C", repo.to_str().unwrap(), "rev-parse", "--show-toplevel"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap().trim().to_owned());
    let commit = match top {
        Some(t) if Path::new(&t).canonicalize().unwrap() == repo.canonicalize().unwrap() => {
            let o = std::process::Command::new("git")
                .args(["-C", &t, "log", "-1", "--format=%H %cs"])
                .output()
                .unwrap();
            let line = String::from_utf8(o.stdout).unwrap();
            let (hash, date) = line.trim().split_once(' ').unwrap();
            format!("{} {date}", &hash[..12])
        }
        _ => "unknown commit".into(),
    };
    assert_eq!(
        v,
        format!("peerpath {} ({commit})\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn generate_assets_into_a_file_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("file");
    std::fs::write(&f, "x").unwrap();
    let out = common::peerpath()
        .arg("generate-assets")
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("peerpath: error: cannot create "), "{err}");
}
