//! `peerpath fixture LAYOUT -o DIR|FILE.tar.gz [--unprivileged] [--fault …]`: writes a
//! synthesized sysfs tree (see `peerpath::synth`) for tests, demos and bug reports.

use anyhow::{Context, Result, bail};
use clap::Args;
use peerpath::synth::{self, Spec, WriteOptions, layouts};
use std::path::PathBuf;

/// Arguments of `peerpath fixture`.
#[derive(Args)]
pub struct FixtureArgs {
    /// Layout name (see --list), or a spec file (.toml or .json) written by hand.
    #[arg(value_name = "LAYOUT", required_unless_present_any = ["list"])]
    layout: Option<String>,
    /// Output: a directory (the sysfs root is written into it) or a FILE.tar.gz.
    #[arg(short, long, value_name = "DIR|FILE.tar.gz", required_unless_present_any = ["list", "print_spec"])]
    output: Option<PathBuf>,
    /// Write every `config` as the 64 bytes a non-root reader gets.
    #[arg(long)]
    unprivileged: bool,
    /// Fault to inject (repeatable): acs-redirect=BDF, acs=BDF,HEX (exact ACS control),
    /// link-width=BDF,W, aer=BDF,C,N,F, iommu-type=BDF,TYPE, move=BDF,NUMA (the card to a new
    /// root port on that NUMA node; RDMA devices renamed in address order, as the kernel names
    /// them), no-peermem, vm; GPUDirect Storage: no-nvidia-fs, compat-forced; AMD GPUs:
    /// small-bar=BDF, no-atomics=BDF, xgmi-down=BDF,BDF, no-amdkfd-peer.
    #[arg(long, value_name = "FAULT")]
    fault: Vec<String>,
    /// List the layouts and exit.
    #[arg(long)]
    list: bool,
    /// Print the layout's spec as TOML (after faults) instead of writing a tree.
    #[arg(long)]
    print_spec: bool,
}

/// Runs `peerpath fixture`; returns the exit code.
pub fn run(a: FixtureArgs) -> Result<u8> {
    if a.list {
        for (name, what) in layouts::LAYOUTS {
            println!("{name:<16} {what}");
        }
        println!(
            "{:<16} any N: scaling-N (about N functions), many-vfs-N (one PF with N VFs)",
            ""
        );
        println!(
            "{:<16} nvl72-fleet-N: N synthesized NVL72 racks of 18 GB300 tray captures each (with NVML's NVLink fabric registration), written into the -o directory",
            ""
        );
        return Ok(0);
    }
    let Some(name) = a.layout.as_deref() else {
        bail!("no LAYOUT given (see --list)")
    };
    if let Some(n) = name.strip_prefix("nvl72-fleet-") {
        return nvl72_fleet(n, &a);
    }
    let mut spec: Spec = match layouts::by_name(name) {
        Some(s) => s,
        None => {
            let p = PathBuf::from(name);
            if !p.is_file() {
                bail!(
                    "unknown layout '{name}' and no such spec file (see `peerpath fixture --list`)"
                );
            }
            let text = peerpath::sources::fsroot::input::read_input_text(
                &p,
                peerpath::sources::fsroot::input::MAX_SIDE_FILE_BYTES,
            )
            .with_context(|| format!("cannot read spec {}", p.display()))?;
            Spec::from_text(&text).with_context(|| format!("{}", p.display()))?
        }
    };
    for f in &a.fault {
        spec = layouts::apply_fault(spec, f).with_context(|| format!("--fault {f}"))?;
    }
    if a.print_spec {
        print!("{}", toml::to_string(&spec).context("spec as TOML")?);
        return Ok(0);
    }
    let Some(out) = a.output else {
        bail!("no --output given")
    };
    let opts = WriteOptions {
        unprivileged: a.unprivileged,
    };
    let s = out.to_string_lossy();
    if s.ends_with(".tar.gz") || s.ends_with(".tgz") {
        peerpath::output::write_output_with(&out, |w| synth::write_tarball_to(&spec, w, &opts))?;
    } else {
        synth::write_tree(&spec, &out, &opts)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    eprintln!(
        "peerpath: wrote {} ({} PCI functions) to {}",
        spec.name,
        spec.functions.len(),
        out.display()
    );
    Ok(0)
}

/// `peerpath fixture nvl72-fleet-N -o DIR`: N racks of synthesized tray captures
/// ([`synth::nvl72::write_fleet`]).
fn nvl72_fleet(n: &str, a: &FixtureArgs) -> Result<u8> {
    let racks: usize = n
        .parse()
        .ok()
        .filter(|r| (1..=1024).contains(r))
        .with_context(|| format!("nvl72-fleet-{n}: the rack count is a number from 1 to 1024"))?;
    if a.unprivileged || !a.fault.is_empty() || a.print_spec {
        bail!("nvl72-fleet-N takes no --unprivileged, --fault or --print-spec");
    }
    let Some(out) = a.output.as_deref() else {
        bail!("no --output given (a directory for the captures)")
    };
    let written = synth::nvl72::write_fleet(out, racks)
        .with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!(
        "peerpath: wrote {} synthesized NVL72 tray capture(s) ({racks} rack(s) of {}) to {}",
        written.len(),
        synth::nvl72::TRAYS_PER_RACK,
        out.display()
    );
    Ok(0)
}
