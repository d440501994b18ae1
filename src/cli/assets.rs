//! `peerpath generate-assets DIR` (hidden, and not part of `Cli`): writes the man pages (clap_mangen) and the bash,
//! zsh and fish completions (clap_complete) made from this binary's own command definition,
//! for `scripts/package.sh` to put in the packages.
//!
//! They are made here, by the binary, rather than by a build script or an xtask because the
//! command definition (`Cli` in `main.rs` and the argument structs in `cli/`) lives in the
//! binary crate, which neither can import; pages generated from the binary that is packaged
//! cannot describe other flags than the ones it parses.

use anyhow::{Context, Result};
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches};
use clap_complete::Shell;
use std::path::{Path, PathBuf};

/// The hidden command's name.
pub const NAME: &str = "generate-assets";

/// Arguments of `peerpath generate-assets`.
#[derive(Args)]
pub struct AssetsArgs {
    /// Folder to write into: `man/man1/peerpath*.1` and `completions/` (`peerpath.bash`,
    /// `_peerpath`, `peerpath.fish`); created if absent.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

/// The completion scripts: shell and file name, in the names each shell's loader looks for.
const COMPLETIONS: &[(Shell, &str)] = &[
    (Shell::Bash, "peerpath.bash"),
    (Shell::Zsh, "_peerpath"),
    (Shell::Fish, "peerpath.fish"),
];

/// `cli` with the hidden `generate-assets` command added: what `main` parses, while
/// `Cli::command()`, which the pages and completions describe, never has it.
pub fn beside(cli: clap::Command) -> clap::Command {
    cli.subcommand(
        AssetsArgs::augment_args(clap::Command::new(NAME))
            .hide(true)
            .about("Write the man pages and shell completions (for packagers: scripts/package.sh)"),
    )
}

/// Runs `peerpath generate-assets` on its parsed arguments; returns the exit code.
pub fn run(m: &ArgMatches) -> Result<u8> {
    let a = AssetsArgs::from_arg_matches(m)?;
    let mut cmd = crate::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let man = a.dir.join("man").join("man1");
    let done = pages(&cmd, &man)?;
    let comp = a.dir.join("completions");
    mkdir(&comp)?;
    for (shell, name) in COMPLETIONS {
        let c = cmd.clone();
        write(&comp.join(name), &mut |w| {
            crate::cli::completions::generate(*shell, &c, "peerpath", w)
        })?;
    }
    crate::cli::say(&format!(
        "peerpath: wrote {done} man pages to {} and {} completion scripts to {}",
        man.display(),
        COMPLETIONS.len(),
        comp.display()
    ));
    Ok(0)
}

/// Writes the page of `cmd` and of every visible subcommand below it (`peerpath-audit.1`, …);
/// returns how many.
fn pages(cmd: &clap::Command, dir: &Path) -> Result<usize> {
    mkdir(dir)?;
    let mut n = 0;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        n += pages(sub, dir)?;
    }
    let page = clap_mangen::Man::new(cmd.clone())
        .date(env!("PEERPATH_COMMIT_DATE"))
        .source(concat!("peerpath ", env!("CARGO_PKG_VERSION")));
    write(&dir.join(page.get_filename()), &mut |w| page.render(w))?;
    Ok(n + 1)
}

fn mkdir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

/// One file through the careful writer (`peerpath::output`), quietly: the summary is one line.
fn write(
    path: &Path,
    f: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<()> {
    peerpath::output::write_quietly(path, |w| f(w)).map(|_| ())
}
