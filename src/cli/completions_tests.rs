//! Completion scripts made from a command tree whose help text is hostile: each shell checks
//! the script's syntax, loads it and completes from it, and nothing in the help runs. Synthesized tree (no published source): the characters that end or open a quoted
//! context in bash, zsh or fish.

use super::generate;
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Arg, Command};
use clap_complete::Shell;
use std::path::Path;
use std::process::Output;

/// Help holding `"`, `'`, `$(…)`, backticks, `$VAR`, `\` and a newline; `$(…)` and the
/// backticks would create `ran-dollar` and `ran-backtick` in `dir` if they ran.
/// It also holds the placeholder the fish generator uses, to show help cannot pass for one.
fn hostile(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "PEERPATHVALUEHELP000000X 'PEERPATHVALUEHELP000001X' say \"hi\" it's $(touch {d}/ran-dollar) `touch {d}/ran-backtick` $HOME \\n back\\slash\nnext line"
    )
}

fn tree(help: &str) -> Command {
    let values = [
        PossibleValue::new("json").help(help.to_owned()),
        PossibleValue::new("table").help(help.to_owned()),
    ];
    Command::new("peerpath").about(help.to_owned()).subcommand(
        Command::new("audit").about(help.to_owned()).arg(
            Arg::new("format")
                .long("format")
                .help(help.to_owned())
                .value_parser(PossibleValuesParser::new(values)),
        ),
    )
}

/// The script `shell` gets for the hostile tree, written in `dir`, and the help it holds.
fn script(shell: Shell, dir: &Path, name: &str) -> (std::path::PathBuf, String) {
    let help = hostile(dir);
    let mut out = Vec::new();
    generate(shell, &tree(&help), "peerpath", &mut out).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    (path, help)
}

/// Runs `cmd` (None where it is not installed, outside CI).
fn run(cmd: &str, args: &[&str]) -> Option<Output> {
    match std::process::Command::new(cmd)
        .args(args)
        .env("LANG", "C")
        .output()
    {
        Ok(o) => Some(o),
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{cmd} is required in CI: {e}"
            );
            eprintln!("note: {cmd} not installed ({e}); skipped");
            None
        }
    }
}

fn ok(o: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.is_empty(), "{what}: {err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn nothing_ran(dir: &Path) {
    for f in ["ran-dollar", "ran-backtick"] {
        assert!(!dir.join(f).exists(), "the help's payload ran: {f}");
    }
}

#[test]
fn fish_script_with_hostile_help_parses_loads_completes_and_runs_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (path, help) = script(Shell::Fish, d.path(), "peerpath.fish");
    let p = path.to_str().unwrap();
    let Some(o) = run("fish", &["--no-config", "--no-execute", p]) else {
        return;
    };
    ok(&o, "fish -n");
    let prog = r#"source $argv[1]; or exit 3
        complete -C "peerpath au"
        complete -C "peerpath audit --format "
        complete -C "peerpath audit --for""#;
    let o = run("fish", &["--no-config", "-c", prog, p]).unwrap();
    let out = ok(&o, "fish");
    nothing_ran(d.path());
    // The help, on one line, as the description of the command, each value and the option.
    let one = help.replace('\n', " ");
    assert_eq!(
        out,
        format!("audit\t{one}\njson\t{one}\ntable\t{one}\n--format\t{one}\n")
    );
}

#[test]
fn bash_script_with_hostile_help_parses_loads_completes_and_runs_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = script(Shell::Bash, d.path(), "peerpath.bash");
    let p = path.to_str().unwrap();
    let Some(o) = run("bash", &["-n", p]) else {
        return;
    };
    ok(&o, "bash -n");
    let prog = r#"source "$1" || exit 3
        fn=$(complete -p peerpath | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
        c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
          COMPREPLY=(); "$fn" peerpath "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
          echo "${COMPREPLY[*]}"; }
        c peerpath au; c peerpath audit --format """#;
    let o = run("bash", &["--norc", "-c", prog, "bash", p]).unwrap();
    let out = ok(&o, "bash");
    nothing_ran(d.path());
    assert_eq!(out, "audit\njson table\n");
}

#[test]
fn zsh_script_with_hostile_help_parses_loads_completes_and_runs_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = script(Shell::Zsh, d.path(), "_peerpath");
    let p = path.to_str().unwrap();
    let Some(o) = run("zsh", &["-n", p]) else {
        return;
    };
    ok(&o, "zsh -n");
    // Loaded as compinit loads it (`compdef` at its end), then its function body printed: the
    // help's payload is in it, as text.
    let prog = r#"autoload -Uz compinit && compinit -u -D && source "$1" && functions _peerpath"#;
    let o = run("zsh", &["-f", "-c", prog, "zsh", p]).unwrap();
    let out = ok(&o, "zsh");
    nothing_ran(d.path());
    assert!(
        out.contains("ran-dollar") && out.contains("ran-backtick"),
        "{out}"
    );
    // Found by compinit on $fpath and completing in an interactive zsh, where zsh's
    // completion functions read the help (tests/shells/complete.zsh).
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shells/complete.zsh");
    let o = run(
        "timeout",
        &[
            "60",
            "zsh",
            "-f",
            harness.to_str().unwrap(),
            d.path().to_str().unwrap(),
            "peerpath au",
            "peerpath audit --format ",
        ],
    )
    .unwrap();
    let out = ok(&o, "zsh completing");
    nothing_ran(d.path());
    assert_eq!(out, "HIT:audit\nEND\nHIT:json\nHIT:table\nEND\n");
}
