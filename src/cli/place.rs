//! `peerpath place`: plan GPUs, NICs and CPU cores for N local ranks.

use crate::InputArgs;
use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use peerpath::analysis::place::{self, PlaceOptions};
use peerpath::render;

/// Output formats of `place`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PlaceFormat {
    /// Ranks with one-line reasons.
    Text,
    /// `export KEY=value` lines (CUDA_VISIBLE_DEVICES, NCCL_IB_HCA, UCX_NET_DEVICES, …) per
    /// rank; with --rank R only that rank's, for `eval "$(peerpath place … --rank R)"`.
    Env,
    /// `peerpath.placement/1` JSON.
    Json,
    /// A POSIX sh script for `srun` that picks the rank by $SLURM_LOCALID, binds and execs.
    Slurm,
}

/// Arguments of `place`.
#[derive(Args)]
pub struct PlaceArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Number of local ranks (one GPU each).
    #[arg(long, value_name = "N")]
    ranks: Option<usize>,
    /// Same as --ranks.
    #[arg(long, value_name = "N", conflicts_with = "ranks")]
    gpus: Option<usize>,
    /// Whole cores per rank (default: an even share of the rank's NUMA node).
    #[arg(long, value_name = "K")]
    cores_per_rank: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: PlaceFormat,
    /// Only this local rank (text, env, json).
    #[arg(long, value_name = "R")]
    rank: Option<usize>,
    /// Give each rank its nearest data NVMe drive for GPUDirect Storage (`PEERPATH_GDS_DRIVE`,
    /// `PEERPATH_GDS_DIR`); the default where GDS is configured.
    #[arg(long)]
    storage: bool,
}

/// Runs `place`.
pub fn run(a: PlaceArgs) -> Result<u8> {
    let topo = crate::load(&a.input)?;
    let n = match (a.ranks, a.gpus) {
        (Some(n), _) | (None, Some(n)) => n,
        (None, None) => bail!("say how many ranks: --ranks N (or --gpus N)"),
    };
    let p = place::plan_for(
        &topo,
        &PlaceOptions {
            ranks: n,
            cores_per_rank: a.cores_per_rank,
        },
        a.storage,
    )?;
    if let Some(r) = a.rank {
        if r >= p.ranks.len() {
            bail!(
                "--rank {r}: the plan has local ranks 0-{} (--ranks {n})",
                p.ranks.len() - 1
            );
        }
        if a.format == PlaceFormat::Slurm {
            bail!(
                "--rank does not apply to --format slurm (the script picks the rank by $SLURM_LOCALID)"
            );
        }
    }
    let one = |p: &place::Placement| {
        let mut q = p.clone();
        q.ranks.retain(|x| a.rank.is_none_or(|r| x.rank == r));
        q
    };
    let out = match a.format {
        PlaceFormat::Text => render::place::text(&one(&p)),
        PlaceFormat::Env => render::place::env(&p, a.rank),
        PlaceFormat::Json => render::place::json(&one(&p))?,
        PlaceFormat::Slurm => render::place::slurm(&p),
    };
    match a.format {
        PlaceFormat::Text => super::print_text(&out),
        PlaceFormat::Json => super::print_document(&out, true),
        PlaceFormat::Env | PlaceFormat::Slurm => super::print_document(&out, false),
    }
    Ok(0)
}
