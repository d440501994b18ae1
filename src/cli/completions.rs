//! The completion scripts `peerpath generate-assets` writes (bash, zsh, fish), made by
//! clap_complete from the command definition, with the one context clap_complete 4.6 does not
//! escape made safe: fish writes a possible value's help inside `-a "value\t'help'"`, a
//! single-quoted string inside a double-quoted one, and escapes it for the single quotes only,
//! so a `"` in the help ends the outer string and a `$(…)` in it runs when fish loads the
//! script. Each such help is replaced by a plain token before generating and the token by the
//! help escaped for both levels after, so help text is data whatever it holds.

use clap::Command;
use clap::builder::PossibleValuesParser;
use clap_complete::Shell;

/// Writes `shell`'s completion script for `cmd` (named `bin`) to `w`. Fails where
/// clap_complete put a value's help somewhere not escaped here (a later version might).
pub fn generate(
    shell: Shell,
    cmd: &Command,
    bin: &str,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    if shell != Shell::Fish {
        clap_complete::generate(shell, &mut cmd.clone(), bin, w);
        return Ok(());
    }
    let raw = fish(cmd.clone(), bin);
    // A prefix found nowhere in clap's own script, so in no help text either: one left after
    // the helps are put back is a token clap_complete wrote in another context.
    let mut prefix = String::from("PEERPATHVALUEHELP");
    while raw.contains(&prefix) {
        prefix.push('Z');
    }
    let token = |i: usize| format!("{prefix}{i:06}X");
    let mut helps = Vec::new();
    let mut text = fish(tokenize(cmd.clone(), &token, &mut helps), bin);
    for (i, help) in helps.iter().enumerate() {
        text = text.replace(
            &format!("'{}'", token(i)),
            &format!("'{}'", fish_value_help(help)),
        );
    }
    if text.contains(&prefix) {
        return Err(std::io::Error::other(
            "clap_complete wrote a value's help for fish where peerpath does not escape it",
        ));
    }
    w.write_all(text.as_bytes())
}

/// clap_complete's fish script for `cmd`.
fn fish(mut cmd: Command, bin: &str) -> String {
    let mut out = Vec::new();
    clap_complete::generate(Shell::Fish, &mut cmd, bin, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `cmd` with every shown possible value's help replaced by `token(i)` (letters and digits,
/// which no escaping changes; the help kept in `helps[i]`), in its subcommands too.
fn tokenize(mut cmd: Command, token: &dyn Fn(usize) -> String, helps: &mut Vec<String>) -> Command {
    let ids: Vec<clap::Id> = cmd
        .get_arguments()
        .filter(|a| {
            a.get_possible_values()
                .iter()
                .any(|v| v.get_help().is_some())
        })
        .map(|a| a.get_id().clone())
        .collect();
    for id in ids {
        cmd = cmd.mut_arg(id, |a| {
            let values: Vec<_> = a
                .get_possible_values()
                .into_iter()
                .map(|v| match v.get_help() {
                    Some(h) if !v.is_hide_set() => {
                        helps.push(h.to_string());
                        v.clone().help(token(helps.len() - 1))
                    }
                    _ => v,
                })
                .collect();
            a.value_parser(PossibleValuesParser::new(values))
        });
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, |s| tokenize(s, token, helps));
    }
    cmd
}

/// `help` as the text between the single quotes of `-a "value\t'…'"`: one line (fish shows a
/// description on one), escaped for the single quotes fish reads when it completes (`\`, `'`),
/// then for the double quotes it reads when it loads the script (`\`, `"`, `$`).
fn fish_value_help(help: &str) -> String {
    let single = help
        .replace('\n', " ")
        .replace('\\', "\\\\")
        .replace('\'', "\\'");
    single
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('$', "\\$")
}

#[cfg(test)]
#[path = "completions_tests.rs"]
mod tests;
