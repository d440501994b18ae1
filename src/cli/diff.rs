//! `peerpath diff`: compare two nodes (or every host of two multi-host inputs).

use super::Format;
use anyhow::{Context, Result};
use clap::Args;
use peerpath::analysis::diff;
use peerpath::sources::{self, LoadOptions};
use std::path::{Path, PathBuf};

/// Arguments of `peerpath diff`.
#[derive(Args)]
pub struct DiffArgs {
    /// First node: `live` (this machine), a snapshot tarball, a sysfs root, hwloc/NCCL XML or
    /// peerpath JSON.
    a: String,
    /// Second node, same forms.
    b: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// List the pair labels and findings folded under each change.
    #[arg(long, short = 'v')]
    verbose: bool,
    /// PCI ID database for device names (default: $PCI_IDS, then the system's pci.ids).
    #[arg(long, value_name = "FILE")]
    pci_ids: Option<PathBuf>,
    /// Which host of A, when A holds several (NCCL XML fused across hosts): its index or
    /// host_hash. Default: every host of A is compared with its namesake in B.
    #[arg(long, value_name = "NAME|INDEX")]
    host_a: Option<String>,
    /// Which host of B, as `--host-a` for A.
    #[arg(long, value_name = "NAME|INDEX")]
    host_b: Option<String>,
    /// `rdma_topo topology -j` JSON of node A (pairs ConnectX-8 Data Direct functions where
    /// the scan cannot), as `--rdma-topo` of every topology command.
    #[arg(long, value_name = "FILE")]
    rdma_topo_a: Option<PathBuf>,
    /// `rdma_topo topology -j` JSON of node B.
    #[arg(long, value_name = "FILE")]
    rdma_topo_b: Option<PathBuf>,
}

/// How one side of `diff` is read: the shared `--pci-ids`, and its own host and `rdma_topo`.
struct Side<'a> {
    pci_ids: &'a Option<PathBuf>,
    host: &'a Option<String>,
    rdma_topo: &'a Option<PathBuf>,
}

/// Every host of one side of `diff` (the live machine is one host), or the one `--host-a/-b`
/// names.
fn load_named(s: &str, side: Side) -> Result<diff::Hosts> {
    let opts = LoadOptions {
        pci_ids: side.pci_ids.clone(),
        host: side.host.clone(),
        rdma_topo: side.rdma_topo.clone(),
        ..Default::default()
    };
    let all = if s == "live" && !Path::new(s).exists() {
        vec![sources::load(None, &opts)?]
    } else {
        sources::load_hosts(Path::new(s), &opts)?
    };
    Ok(all
        .into_iter()
        .map(|t| (sources::host_name(&t).map(str::to_string), t))
        .collect())
}

/// Runs `peerpath diff`; exit 0 when equal, 1 when they differ. An input of several hosts
/// makes each host its own node ([`diff::diff_hosts`]).
pub fn run_diff(a: &DiffArgs) -> Result<u8> {
    let side = |host, rdma_topo| Side {
        pci_ids: &a.pci_ids,
        host,
        rdma_topo,
    };
    let ha = load_named(&a.a, side(&a.host_a, &a.rdma_topo_a))
        .with_context(|| format!("A ({})", a.a))?;
    let hb = load_named(&a.b, side(&a.host_b, &a.rdma_topo_b))
        .with_context(|| format!("B ({})", a.b))?;
    if ha.len() > 1 || hb.len() > 1 {
        let h = diff::diff_hosts(&a.a, &ha, &a.b, &hb);
        match a.format {
            Format::Text => {
                super::print_text(&peerpath::render::diff::render_hosts_text(&h, a.verbose))
            }
            Format::Json => {
                super::print_document(&(serde_json::to_string_pretty(&h)? + "\n"), true)
            }
        }
        return Ok(if h.equal { 0 } else { 1 });
    }
    let (ta, tb) = (&ha[0].1, &hb[0].1);
    let mut d = diff::diff_topologies(ta, tb);
    d.a = a.a.clone();
    d.b = a.b.clone();
    match a.format {
        Format::Text => super::print_text(&peerpath::render::diff::render_text(&d, a.verbose)),
        Format::Json => super::print_document(&(serde_json::to_string_pretty(&d)? + "\n"), true),
    }
    Ok(if d.equal { 0 } else { 1 })
}
