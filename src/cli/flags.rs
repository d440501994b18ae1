//! Test of issue 28's rule, "the same flags everywhere", over clap's whole command tree: a long
//! option name means one thing in every command that takes it.
//!
//! For every long name more than one command uses: the same short letter (or none everywhere),
//! the same action (a flag, one value, a repeatable value), the same value name, and help texts
//! that are either identical or all contain the phrase [`SHARED_MEANINGS`] states for that name
//! (with the reason their wording differs). Every short letter, short alias and long alias
//! spells one long name in every command. A difference a command needs is one of
//! [`EXCEPTIONS`], each with its reason; an exception or a shared meaning that no longer
//! matches a difference fails the test too, so both tables stay true.

use crate::Cli;
use clap::CommandFactory;
use std::collections::{BTreeMap, BTreeSet};

/// A property in which one command's option may differ from the other commands' option of the
/// same long name.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Property {
    /// The placeholder in `--output <FILE>`.
    ValueName,
    /// Flag, one value or a repeatable value (clap's `ArgAction`).
    Action,
}

/// Allowed differences: long name, command, property, and why that command needs it.
const EXCEPTIONS: &[(&str, &str, Property, &str)] = &[
    (
        "input",
        "peerpath capture",
        Property::ValueName,
        "capture archives the files of a sysfs tree, so it reads only a sysfs root or a \
         snapshot tarball, not the hwloc/NCCL XML or JSON the other commands read: DIR|TARBALL \
         says so where PATH would invite them",
    ),
    (
        "output",
        "peerpath capture",
        Property::ValueName,
        "capture writes only a gzip-compressed tarball, whatever the name",
    ),
    (
        "output",
        "peerpath fixture",
        Property::ValueName,
        "fixture writes a directory tree or a tarball, chosen by the name",
    ),
    (
        "evidence",
        "peerpath report",
        Property::Action,
        "report folds one probe result into its audit and lists it in the HTML; audit's \
         --evidence repeats and also reads job logs. Making report's repeatable would change \
         what it accepts, which issue 28 does not do",
    ),
];

/// Long names whose help wording differs between commands: a phrase every one of their help
/// texts contains (the meaning they share), and why the wording differs.
const SHARED_MEANINGS: &[(&str, &str, &str)] = &[
    (
        "input",
        "live machine",
        "what to read instead of the live machine; each command says which kinds it reads \
         (capture: only what it can archive; probe: counters are re-read only live)",
    ),
    (
        "output",
        "output",
        "the file the command writes; each names what it writes there",
    ),
    (
        "format",
        "output format",
        "each command has its own list of formats and its own default",
    ),
    (
        "evidence",
        "probe result",
        "a `peerpath probe --format json` document folded into the audit; audit also reads \
         job logs",
    ),
    (
        "profile",
        "expected layout",
        "the audit's expected layout; report points at audit for the list",
    ),
    (
        "nic-gbps",
        "n×speed in gb/s",
        "the NICs bandwidth is judged against; each says what it overrides",
    ),
    (
        "verbose",
        "list the pair labels and findings folded under each change",
        "fleet's changes are those of an outlier group",
    ),
    (
        "ranks",
        "local ranks",
        "launch's default comes from the launcher, place has none",
    ),
    (
        "rank",
        "local rank",
        "place prints only that rank; launch runs as it, defaulting to the launcher's",
    ),
    (
        "fabric-map",
        "the fabric's own map",
        "rails judges each adapter's cable against it; report draws the same judgement",
    ),
    (
        "json",
        "json",
        "print JSON instead of the default output (explain: text; export dra: YAML)",
    ),
];

/// One option of one command, as its user sees it.
struct Use {
    /// The command path, `peerpath capture`.
    command: String,
    /// The long name, without dashes.
    long: String,
    /// The short letter.
    short: Option<char>,
    /// Short aliases, hidden or visible.
    short_aliases: Vec<char>,
    /// Long aliases, hidden or visible.
    aliases: Vec<String>,
    /// `SetTrue`, `Set`, `Append`, …
    action: String,
    /// Value names, empty for a flag.
    value_names: Vec<String>,
    /// Long help, lower case, one space between words, no final period.
    help: String,
}

impl Use {
    fn get(&self, p: Property) -> String {
        match p {
            Property::ValueName => self.value_names.join(" "),
            Property::Action => self.action.clone(),
        }
    }
}

/// Every named option of `cmd` and its subcommands, depth first.
fn collect(cmd: &clap::Command, path: &str, out: &mut Vec<Use>) {
    for a in cmd.get_arguments() {
        if a.is_positional() {
            continue;
        }
        let Some(long) = a.get_long() else { continue };
        let help = a
            .get_long_help()
            .or(a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        // clap's own --help says so only where the command has a long help to point from.
        let help = help.trim_end_matches(" (see a summary with '-h')");
        let help = help
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        out.push(Use {
            command: path.to_string(),
            long: long.to_string(),
            short: a.get_short(),
            short_aliases: a.get_all_short_aliases().unwrap_or_default(),
            aliases: a
                .get_all_aliases()
                .unwrap_or_default()
                .into_iter()
                .map(str::to_string)
                .collect(),
            action: format!("{:?}", a.get_action()),
            value_names: a
                .get_value_names()
                .unwrap_or_default()
                .iter()
                .map(|v| v.to_string())
                .collect(),
            help: help.trim_end_matches('.').to_string(),
        });
    }
    for s in cmd.get_subcommands() {
        collect(s, &format!("{path} {}", s.get_name()), out);
    }
}

/// Every way the command tree breaks the rule, one line each.
fn problems(cmd: &mut clap::Command) -> Vec<String> {
    cmd.build();
    let mut uses = Vec::new();
    collect(cmd, cmd.get_name(), &mut uses);
    let mut bad = Vec::new();

    // Every spelling, in every command, names one long option.
    let mut spellings: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for u in &uses {
        let shorts = u.short.iter().chain(&u.short_aliases);
        let longs = std::iter::once(&u.long).chain(&u.aliases);
        for s in shorts
            .map(|c| format!("-{c}"))
            .chain(longs.map(|l| format!("--{l}")))
        {
            spellings
                .entry(s)
                .or_default()
                .insert((u.long.clone(), u.command.clone()));
        }
    }
    for (s, names) in &spellings {
        let longs: BTreeSet<&String> = names.iter().map(|(l, _)| l).collect();
        if longs.len() > 1 {
            let each: Vec<String> = names.iter().map(|(l, c)| format!("{c}: --{l}")).collect();
            bad.push(format!("{s} spells different options: {}", each.join(", ")));
        }
    }

    let mut by_long: BTreeMap<&str, Vec<&Use>> = BTreeMap::new();
    for u in &uses {
        by_long.entry(&u.long).or_default().push(u);
    }
    let excepted = |long: &str, command: &str, p: Property| {
        EXCEPTIONS
            .iter()
            .any(|&(l, c, q, _)| l == long && c == command && q == p)
    };
    for (long, us) in by_long.iter().filter(|(_, us)| us.len() > 1) {
        let shorts: BTreeSet<Option<char>> = us.iter().map(|u| u.short).collect();
        if shorts.len() > 1 {
            let each: Vec<String> = us
                .iter()
                .map(|u| format!("{}: {:?}", u.command, u.short))
                .collect();
            bad.push(format!(
                "--{long}: short letters differ: {}",
                each.join(", ")
            ));
        }
        for p in [Property::ValueName, Property::Action] {
            let rule: BTreeSet<String> = us
                .iter()
                .filter(|u| !excepted(long, &u.command, p))
                .map(|u| u.get(p))
                .collect();
            if rule.len() > 1 {
                let each: Vec<String> = us
                    .iter()
                    .filter(|u| !excepted(long, &u.command, p))
                    .map(|u| format!("{}: {:?}", u.command, u.get(p)))
                    .collect();
                bad.push(format!("--{long}: {p:?} differs: {}", each.join(", ")));
            }
            for u in us.iter().filter(|u| excepted(long, &u.command, p)) {
                if rule.contains(&u.get(p)) {
                    bad.push(format!(
                        "--{long} in {}: the {p:?} exception is no longer needed",
                        u.command
                    ));
                }
            }
        }
        let helps: BTreeSet<&str> = us.iter().map(|u| u.help.as_str()).collect();
        match SHARED_MEANINGS.iter().find(|&&(l, _, _)| l == *long) {
            None if helps.len() > 1 => {
                let each: Vec<String> = us
                    .iter()
                    .map(|u| format!("{}: {:?}", u.command, u.help))
                    .collect();
                bad.push(format!(
                    "--{long}: help texts differ and SHARED_MEANINGS has no entry: {}",
                    each.join(", ")
                ));
            }
            None => {}
            Some(_) if helps.len() == 1 => bad.push(format!(
                "--{long}: help texts agree; its SHARED_MEANINGS entry is no longer needed"
            )),
            Some(&(_, phrase, _)) => {
                for u in us.iter().filter(|u| !u.help.contains(phrase)) {
                    bad.push(format!(
                        "--{long} in {}: help {:?} lacks the shared meaning {phrase:?}",
                        u.command, u.help
                    ));
                }
            }
        }
    }
    // A table entry naming an option no command has any more.
    for &(l, c, p, _) in EXCEPTIONS {
        if !uses.iter().any(|u| u.long == l && u.command == c) {
            bad.push(format!("exception ({l}, {c}, {p:?}) names no option"));
        }
    }
    for &(l, _, _) in SHARED_MEANINGS {
        if by_long.get(l).is_none_or(|us| us.len() < 2) {
            bad.push(format!("SHARED_MEANINGS entry {l} names no shared option"));
        }
    }
    bad
}

#[test]
fn one_flag_name_means_one_thing_in_every_command() {
    let bad = problems(&mut Cli::command());
    assert!(
        bad.is_empty(),
        "{} problem(s):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_check_finds_letters_value_names_and_aliases_that_disagree() {
    // Two commands whose --input differ the way capture's did before issue 28, and a third
    // whose --root is what capture's hidden alias spells.
    let mut cmd = clap::Command::new("t")
        .subcommand(
            clap::Command::new("scan").arg(
                clap::Arg::new("input")
                    .short('i')
                    .long("input")
                    .value_name("PATH")
                    .help("Read this instead of the live machine"),
            ),
        )
        .subcommand(
            clap::Command::new("capture").arg(
                clap::Arg::new("root")
                    .short('r')
                    .long("input")
                    .value_name("DIR")
                    .help("Capture this instead of the live machine")
                    .alias("root"),
            ),
        )
        .subcommand(
            clap::Command::new("fixture").arg(
                clap::Arg::new("root")
                    .long("root")
                    .help("Where the tree is written"),
            ),
        );
    let bad = problems(&mut cmd);
    assert!(
        bad.iter().any(|b| b.starts_with("--input: short letters")),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|b| b.starts_with("--input: ValueName")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|b| b.starts_with("--root spells different options")),
        "{bad:?}"
    );
}
