//! `peerpath capture`: snapshot a node's sysfs/procfs files into a tarball.

use anyhow::{Context, Result, bail};
use clap::Args;
use peerpath::capture::{self, CaptureOptions};
use peerpath::model::SourceInfo;
use peerpath::sources::fsroot;
use peerpath::sources::fsroot::FsRoot;
use std::path::{Path, PathBuf};

/// Arguments of `peerpath capture`.
#[derive(Args)]
pub struct CaptureArgs {
    /// Output tarball (gzip-compressed tar).
    #[arg(short, long, value_name = "FILE.tar.gz")]
    output: PathBuf,
    /// Keep serial numbers (GPU UUIDs, PCIe Device Serial Numbers); redacted by default.
    #[arg(long)]
    keep_serials: bool,
    /// Capture this sysfs root (a directory holding sys/, or a snapshot tarball) instead of the
    /// live machine.
    // `-r`/`--root` were this flag's names before every command read its input with `-i`;
    // kept, hidden, for scripts.
    #[arg(
        short,
        long,
        alias = "root",
        short_alias = 'r',
        value_name = "DIR|TARBALL"
    )]
    input: Option<PathBuf>,
}

/// Runs `peerpath capture`; returns the exit code.
pub fn run_capture(a: &CaptureArgs) -> Result<u8> {
    let (fs, shown): (Box<dyn fsroot::FsRoot>, String) = match &a.input {
        None => (Box::new(fsroot::DirRoot::new("/")), "/".to_string()),
        Some(p) if p.is_dir() => {
            let fs = fsroot::DirRoot::open(p)?;
            // Looked up inside the root: a `sys` link out of it is not a sys/ folder.
            if !fs.is_dir(Path::new("sys")) {
                bail!("{}: no sys/ folder; not a sysfs root", p.display());
            }
            (Box::new(fs), p.display().to_string())
        }
        Some(p) => {
            let bytes = fsroot::input::read_input(p, fsroot::MAX_SNAPSHOT_BYTES)
                .with_context(|| format!("cannot read {}", p.display()))?;
            let shown = p.display().to_string();
            let m = fsroot::MemRoot::from_tar_bytes(&shown, &bytes)
                .with_context(|| format!("{shown}: not a readable snapshot tarball"))?;
            (Box::new(m), shown)
        }
    };
    let src = SourceInfo {
        kind: if a.input.is_none() {
            "sysfs"
        } else {
            "snapshot"
        }
        .into(),
        path: shown,
        limitations: vec![],
    };
    let mut opts = CaptureOptions {
        keep_serials: a.keep_serials,
        nvml_json: None,
    };
    let mut c = capture::capture(fs.as_ref(), src.clone(), &opts)?;
    if a.input.is_none() {
        // NVML facts exist only on the live machine; the scan was the capture's own.
        opts.nvml_json = capture::nvml_facts(&c.topology, a.keep_serials);
        if opts.nvml_json.is_some() {
            c = capture::capture(fs.as_ref(), src, &opts)?;
        } else {
            c.set_nvml_note("not included: no NVIDIA PCI device, so NVML was not loaded")?;
        }
        // nvidia-smi's NIC numbering: the registration order, from the live kernel only.
        c.set_rdma_order(&peerpath::sources::rdma_order::read_live())?;
    }
    peerpath::output::write_output_with(&a.output, |w| c.write_tar_gz(w))?;
    let m = &c.manifest;
    super::say(&format!(
        "peerpath: captured {} files from {} into {} ({} device(s)); serials {}; NVML: {}",
        m.files,
        m.source,
        a.output.display(),
        c.topology.devices.len(),
        if m.keep_serials {
            "kept".to_string()
        } else {
            format!("redacted ({} place(s))", m.redacted.len())
        },
        m.nvml
    ));
    if !m.left_out.is_empty() {
        super::say(&format!(
            "peerpath: warning: {} path(s) the scanner read are not on the capture whitelist and were left out: {}",
            m.left_out.len(),
            m.left_out.join(", ")
        ));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::{Cli, Command};
    use clap::{CommandFactory, Parser};
    use std::path::Path;

    /// The input `capture` parses from these arguments.
    fn input_of(args: &[&str]) -> Option<std::path::PathBuf> {
        let cli = Cli::try_parse_from([&["peerpath", "capture", "-o", "x.tar.gz"], args].concat())
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        match cli.command {
            Command::Capture(a) => a.input,
            _ => unreachable!(),
        }
    }

    #[test]
    fn input_is_dash_i_as_in_every_command_and_the_old_names_still_work() {
        for args in [
            &["-i", "snap.tar.gz"][..],
            &["--input", "snap.tar.gz"],
            &["--input=snap.tar.gz"],
            &["-r", "snap.tar.gz"],
            &["--root", "snap.tar.gz"],
            &["--root=snap.tar.gz"],
        ] {
            assert_eq!(
                input_of(args).as_deref(),
                Some(Path::new("snap.tar.gz")),
                "{args:?}"
            );
        }
        assert_eq!(input_of(&[]), None);
    }

    #[test]
    fn help_shows_dash_i_and_not_the_old_names() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("capture")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains("-i, --input <DIR|TARBALL>"), "{help}");
        assert!(!help.contains("--root") && !help.contains("-r,"), "{help}");
    }
}
