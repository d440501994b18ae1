//! `peerpath launch [-i PATH] [--ranks N] [--rank R] [--dry-run] [--no-bind] -- CMD ARGS…`:
//! puts one local rank on its GPU, NIC and cores, then becomes CMD.
//!
//! The placement is the one `peerpath place` computes (`analysis::place::plan`, once per
//! process, the same on every rank); the local rank comes from the launcher
//! (`analysis::launch::local_rank`). The rank's variables are set on CMD's environment, its CPUs
//! bound with `sched_setaffinity(2)` and its memory with `set_mempolicy(2)` (`MPOL_BIND` to the
//! rank's NUMA node), then CMD replaces this process (`execvp`). Binding needs the plan to be
//! of this machine: a snapshot or file whose CPUs are not this machine's is refused.
//!
//! The two binding calls are the only unsafe code outside `probe/` (each block says why it is
//! sound); they pass buffers this function owns, sized as the kernel reads them.
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use crate::InputArgs;
use anyhow::{Context, Result, bail};
use clap::Args;
use peerpath::analysis::launch;
use peerpath::analysis::place::{self, PlaceOptions};
use peerpath::parse::cpulist;
use peerpath::render;
use peerpath::sources::{self, LoadOptions};
use std::os::unix::process::CommandExt;

/// Arguments of `launch`.
#[derive(Args)]
pub struct LaunchArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Local ranks on this node (default: the launcher's local size, else one per GPU).
    #[arg(long, value_name = "N")]
    ranks: Option<usize>,
    /// This process's local rank (default: SLURM_LOCALID, LOCAL_RANK,
    /// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, the first one set).
    #[arg(long, value_name = "R")]
    rank: Option<usize>,
    /// Whole cores per rank (default: an even share of the rank's NUMA node).
    #[arg(long, value_name = "K")]
    cores_per_rank: Option<usize>,
    /// Print the rank's KEY=VALUE lines, the binding and the command; run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Set the variables but bind no CPU or memory.
    #[arg(long)]
    no_bind: bool,
    /// Give each rank its nearest data NVMe drive for GPUDirect Storage (`PEERPATH_GDS_DRIVE`,
    /// `PEERPATH_GDS_DIR`); the default where GDS is configured.
    #[arg(long)]
    storage: bool,
    /// The command and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    cmd: Vec<String>,
}

/// Runs `launch`: returns only on an error or `--dry-run` (otherwise CMD replaces the process).
pub fn run(a: LaunchArgs) -> Result<u8> {
    let topo = crate::load(&a.input)?;
    let env = |k: &str| std::env::var(k).ok();
    let lr = launch::local_rank(a.rank, &env)?;
    let n = match a.ranks {
        Some(n) => n,
        None => match launch::local_size(&lr, &env)? {
            Some(n) => n,
            None => topo.of_kind(peerpath::model::DeviceKind::Gpu).count(),
        },
    };
    let opts = PlaceOptions {
        ranks: n,
        cores_per_rank: a.cores_per_rank,
    };
    let plan = place::plan_for(&topo, &opts, a.storage)?;
    let Some(r) = plan.ranks.get(lr.rank) else {
        bail!(
            "local rank {} (from {}) but the plan has {} rank(s) (--ranks {n})",
            lr.rank,
            lr.source,
            plan.ranks.len()
        );
    };
    let cpus = cpulist::parse_list(r.cpus.as_bytes()).unwrap_or_default();
    let bind = (!a.no_bind && !cpus.is_empty()).then(|| {
        let mut b = format!("CPUs {} (sched_setaffinity)", r.cpus);
        if let Some(m) = r.numa_node {
            b.push_str(&format!(", memory on NUMA {m} (set_mempolicy MPOL_BIND)"));
        }
        b
    });
    if a.dry_run {
        // Raw to a pipe (the values are shell words), escaped on a terminal.
        super::print_document(
            &render::place::launch_plan(&plan, r, &lr.source, bind.as_deref(), &a.cmd),
            false,
        );
        return Ok(0);
    }
    if bind.is_some() {
        if a.input.input.is_some() {
            let live = sources::load(
                None,
                &LoadOptions {
                    skip_names: true,
                    ..Default::default()
                },
            )
            .context("reading this machine's CPUs to check the plan")?;
            if let Err(why) = launch::same_cpus(&topo, &live) {
                bail!(
                    "will not bind CPUs planned on {}: {why}. Plan on this machine (no -i), or pass --no-bind to only set the variables",
                    topo.source.path
                );
            }
        }
        set_affinity(&cpus)?;
        if let Some(node) = r.numa_node
            && let Err(e) = set_membind(node)
        {
            eprintln!("peerpath launch: memory policy not set ({e:#}): memory follows first touch");
        }
    }
    let mut c = std::process::Command::new(&a.cmd[0]);
    c.args(&a.cmd[1..]).envs(&r.env);
    let e = c.exec();
    Err(e).with_context(|| format!("cannot run {:?}", a.cmd[0]))
}

/// Words of a CPU or node bitmask holding bit `max`.
fn mask(bits: &[u32]) -> Vec<libc::c_ulong> {
    let w = libc::c_ulong::BITS;
    let max = bits.iter().copied().max().unwrap_or(0);
    let mut m = vec![0 as libc::c_ulong; (max / w + 1) as usize];
    for &b in bits {
        m[(b / w) as usize] |= 1 << (b % w);
    }
    m
}

/// Binds this process (and what it execs) to `cpus`; fails when the kernel refuses or applies
/// a different set (a cgroup cpuset narrower than the plan).
fn set_affinity(cpus: &[u32]) -> Result<()> {
    let m = mask(cpus);
    let bytes = std::mem::size_of_val(m.as_slice());
    // SAFETY: `m` is a live, initialised buffer of `bytes` bytes; the kernel reads at most
    // `bytes` bytes from it (sched_setaffinity(2) with an explicit size) and keeps no pointer.
    let rc = unsafe { libc::sched_setaffinity(0, bytes, m.as_ptr().cast::<libc::cpu_set_t>()) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        bail!(
            "sched_setaffinity to CPUs {}: {e} (outside this process's cgroup cpuset?)",
            peerpath::model::cpulist::format_list(cpus)
        );
    }
    let mut got = vec![0 as libc::c_ulong; m.len().max(1024 / libc::c_ulong::BITS as usize)];
    let got_bytes = std::mem::size_of_val(got.as_slice());
    // SAFETY: `got` is a live buffer of `got_bytes` bytes the kernel may fill (at most that
    // many, sched_getaffinity(2)); it is only read after the call returns.
    let rc = unsafe {
        libc::sched_getaffinity(0, got_bytes, got.as_mut_ptr().cast::<libc::cpu_set_t>())
    };
    if rc == 0 {
        let w = libc::c_ulong::BITS;
        let have: Vec<u32> = (0..got.len() as u32 * w)
            .filter(|&b| got[(b / w) as usize] >> (b % w) & 1 == 1)
            .collect();
        if have != cpus {
            bail!(
                "asked the kernel for CPUs {} but got {} (a cgroup cpuset narrower than the plan?)",
                peerpath::model::cpulist::format_list(cpus),
                peerpath::model::cpulist::format_list(&have)
            );
        }
    }
    Ok(())
}

/// `set_mempolicy(MPOL_BIND, {node})` for this process.
fn set_membind(node: u32) -> Result<()> {
    const MPOL_BIND: libc::c_long = 2;
    let m = mask(&[node]);
    // The kernel reads `maxnode - 1` bits (mm/mempolicy.c get_nodes), as numactl passes them.
    let maxnode = (m.len() as libc::c_ulong) * libc::c_ulong::from(libc::c_ulong::BITS) + 1;
    // SAFETY: set_mempolicy(2) reads `maxnode - 1` bits, exactly the words of the live,
    // initialised buffer `m`; the kernel keeps no pointer to it.
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, MPOL_BIND, m.as_ptr(), maxnode) };
    if rc != 0 {
        bail!(
            "set_mempolicy(MPOL_BIND, node {node}): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}
