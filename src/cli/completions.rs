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

/// Writes `shell`'s completion script for `cmd` (named `bin`) to `w`.
pub fn generate(shell: Shell, cmd: &Command, bin: &str, w: &mut dyn std::io::Write) {
    if shell != Shell::Fish {
        clap_complete::generate(shell, &mut cmd.clone(), bin, w);
        return;
    }
    let mut helps = Vec::new();
    let mut c = tokenize(cmd.clone(), &mut helps);
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut c, bin, &mut out);
    let mut text = String::from_utf8_lossy(&out).into_owned();
    for (i, help) in helps.iter().enumerate() {
        text = text.replace(
            &format!("'{}'", token(i)),
            &format!("'{}'", fish_value_help(help)),
        );
    }
    // A token left (a later clap_complete writing it elsewhere) would show as the help; the
    // assets test finds it.
    let _ = w.write_all(text.as_bytes());
}

/// The placeholder for the `i`th help: letters and digits only, which no escaping changes.
fn token(i: usize) -> String {
    format!("PEERPATHVALUEHELP{i:06}X")
}

/// `cmd` with every shown possible value's help replaced by its token (the help kept in
/// `helps`), in its subcommands too.
fn tokenize(mut cmd: Command, helps: &mut Vec<String>) -> Command {
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
        cmd = cmd.mut_subcommand(name, |s| tokenize(s, helps));
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
