//! `peerpath launch` and the shell forms of a placement (`place --format env|slurm`), run the way
//! users run them: the rank taken from each launcher's variable, `--dry-run`'s lines, a real
//! exec whose child reports its environment and CPU affinity, the refusal to bind CPUs planned
//! on another machine, `eval "$(peerpath place … --format env --rank N)"` reaching a child, and
//! the srun script under `sh` with and without numactl.

use peerpath::model::Bdf;
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{self, WriteOptions, layouts};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

fn hgx() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/synth/hgx-h100.tar.gz")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A command with no launcher variable inherited from the test's own environment.
fn clean(c: &mut Command) -> &mut Command {
    for v in [
        "SLURM_LOCALID",
        "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_TASKS_PER_NODE",
        "SLURM_NODEID",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "MPI_LOCALRANKID",
        "MPI_LOCALNRANKS",
    ] {
        c.env_remove(v);
    }
    c
}

#[test]
fn each_launcher_variable_selects_rank_5() {
    for var in [
        "SLURM_LOCALID",
        "LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
    ] {
        let o = clean(&mut Command::new(bin()))
            .args(["launch", "--ranks", "8", "--dry-run", "-i"])
            .arg(hgx())
            .args(["--", "python", "train.py", "--lr", "1e-4"])
            .env(var, "5")
            .output()
            .unwrap();
        let out = stdout(&o);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with(&format!(
                "# peerpath launch: local rank 5 of 8 (from {var}): GPU 0000:ab:00.0 (cuda 5) -> NIC mlx5_5 [PIX] -> NUMA 1"
            )),
            "{out}"
        );
        for want in [
            "CUDA_DEVICE_ORDER=PCI_BUS_ID",
            "CUDA_VISIBLE_DEVICES=5",
            "NCCL_IB_HCA==mlx5_5:1",
            "UCX_NET_DEVICES=mlx5_5:1",
            "NCCL_SOCKET_IFNAME==ib5",
            "# bind: CPUs 70-83,182-195 (sched_setaffinity), memory on NUMA 1 (set_mempolicy MPOL_BIND)",
            "# exec: python train.py --lr 1e-4",
        ] {
            assert!(lines.contains(&want), "{var}: no {want:?} in\n{out}");
        }
    }
    // The launcher's local size when --ranks is not given.
    let o = clean(&mut Command::new(bin()))
        .args(["launch", "--dry-run", "-i"])
        .arg(hgx())
        .args(["--", "true"])
        .env("LOCAL_RANK", "1")
        .env("LOCAL_WORLD_SIZE", "4")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(out.contains("local rank 1 of 4 (from LOCAL_RANK)"), "{out}");
    // --rank overrides the launcher; a rank beyond the plan is an error, not a guess.
    let o = clean(&mut Command::new(bin()))
        .args(["launch", "--dry-run", "--rank", "2", "--ranks", "8", "-i"])
        .arg(hgx())
        .args(["--", "true"])
        .env("SLURM_LOCALID", "5")
        .output()
        .unwrap();
    assert!(stdout(&o).contains("CUDA_VISIBLE_DEVICES=2\n"));
    let o = clean(&mut Command::new(bin()))
        .args(["launch", "--dry-run", "--ranks", "2", "-i"])
        .arg(hgx())
        .args(["--", "true"])
        .env("SLURM_LOCALID", "5")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("local rank 5 (from SLURM_LOCALID)"));
    let o = clean(&mut Command::new(bin()))
        .args(["launch", "--dry-run", "-i"])
        .arg(hgx())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("SLURM_LOCALID, LOCAL_RANK"));
}

#[test]
fn binding_a_snapshot_of_another_machine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let o = clean(&mut Command::new(bin()))
        .args(["launch", "--rank", "0", "-i"])
        .arg(hgx())
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("will not bind CPUs planned on") && e.contains("--no-bind"),
        "{e}"
    );
    assert!(!marker.exists(), "nothing runs after a refusal");
    // --no-bind sets the variables and runs the command.
    let o = clean(&mut Command::new(bin()))
        .args(["launch", "--rank", "3", "--ranks", "8", "--no-bind", "-i"])
        .arg(hgx())
        .args(["--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES $NCCL_IB_HCA"])
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "3 =mlx5_3:1\n");
}

/// A synthesized sysfs root with this machine's CPUs (one NUMA node, as the machine the tests
/// run on has) and two GPU–NIC pairs, or `None` when this machine's CPU layout is one the
/// synthesizer does not write (then only the refusal path is checked).
fn live_like_root(dir: &Path) -> Option<PathBuf> {
    let live = sources::load(
        None,
        &LoadOptions {
            skip_names: true,
            ..Default::default()
        },
    )
    .ok()?;
    let [node] = live.numa_nodes.as_slice() else {
        eprintln!(
            "SKIPPED exec check: this machine has {} NUMA nodes",
            live.numa_nodes.len()
        );
        return None;
    };
    let n = live.machine.cpu_cores.len() as u32;
    let want: Vec<(u32, u32, u32)> = (0..n).map(|c| (c, c, 0)).collect();
    let mut have = live.machine.cpu_cores.clone();
    have.sort_unstable();
    if n < 2 || have != want || node.cpus != format!("0-{}", n - 1) {
        eprintln!(
            "SKIPPED exec check: CPU layout {:?} / node {} is not one socket without SMT",
            have, node.cpus
        );
        return None;
    }
    let mut spec = layouts::vm_flat();
    spec.name = "live-like".into();
    spec.machine.sockets = 1;
    spec.machine.cores_per_socket = n;
    spec.machine.threads_per_core = 1;
    spec.numa_nodes[0].cpus = node.cpus.clone();
    spec.numa_nodes[0].id = node.id;
    for hb in &mut spec.host_bridges {
        hb.numa_node = Some(node.id);
    }
    // A second GPU–NIC pair on two more root ports.
    let bdf = |s: &str| -> Bdf { s.parse().unwrap() };
    let mut extra = Vec::new();
    for f in &spec.functions {
        let moved = |b: Bdf| -> Option<Bdf> {
            match b.to_string().as_str() {
                "0000:00:02.0" => Some(bdf("0000:00:02.2")),
                "0000:00:02.1" => Some(bdf("0000:00:02.3")),
                "0000:01:00.0" => Some(bdf("0000:03:00.0")),
                "0000:02:00.0" => Some(bdf("0000:04:00.0")),
                _ => None,
            }
        };
        if let Some(nb) = moved(f.bdf) {
            let mut g = f.clone();
            g.bdf = nb;
            g.parent = f.parent.and_then(moved);
            for r in &mut g.rdma {
                r.name = "mlx5_1".into();
            }
            for d in &mut g.netdevs {
                d.name = "ib1".into();
            }
            extra.push(g);
        }
    }
    spec.functions.extend(extra);
    let root = dir.join("root");
    synth::write_tree(&spec, &root, &WriteOptions::default()).unwrap();
    Some(root)
}

/// The launched child reports its environment, CPU affinity and memory policy.
#[test]
fn launch_execs_a_bound_child() {
    let dir = tempfile::tempdir().unwrap();
    let Some(root) = live_like_root(dir.path()) else {
        return;
    };
    let probe = "echo CVD=$CUDA_VISIBLE_DEVICES HCA=$NCCL_IB_HCA UCX=$UCX_NET_DEVICES; grep Cpus_allowed_list /proc/self/status; \
        if command -v python3 >/dev/null; then python3 -c 'import ctypes,platform; l=ctypes.CDLL(None,use_errno=True); m=ctypes.c_int(); k=(ctypes.c_ulong*16)(); nr={\"x86_64\":239,\"aarch64\":236}[platform.machine()]; L=ctypes.c_long; r=l.syscall(L(nr),ctypes.byref(m),k,L(1024),L(0),L(0)); print(\"MEMPOLICY\",r,m.value,k[0])'; fi";
    let mut seen_cpus = Vec::new();
    for rank in ["0", "1"] {
        let o = clean(&mut Command::new(bin()))
            .args(["launch", "--ranks", "2", "-i"])
            .arg(&root)
            .args(["--", "sh", "-c", probe])
            .env("SLURM_LOCALID", rank)
            .output()
            .unwrap();
        let out = stdout(&o);
        let (gpu, nic) = if rank == "0" {
            ("0", "mlx5_0")
        } else {
            ("1", "mlx5_1")
        };
        assert!(
            out.contains(&format!("CVD={gpu} HCA=={nic}:1 UCX={nic}:1")),
            "rank {rank}: {out}"
        );
        // Each rank gets one whole core of the two this machine has, never the other's.
        let cpus = out
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string();
        assert!(
            !cpus.contains(',') && !cpus.contains('-'),
            "rank {rank}: {cpus}"
        );
        seen_cpus.push(cpus);
        // MPOL_BIND (2) to node 0 (mask 1), when python3 can ask the kernel.
        if let Some(l) = out.lines().find(|l| l.starts_with("MEMPOLICY")) {
            assert_eq!(l, "MEMPOLICY 0 2 1", "rank {rank}");
        } else {
            eprintln!("SKIPPED memory-policy check: python3 not installed");
        }
    }
    assert_ne!(seen_cpus[0], seen_cpus[1], "ranks share no core");
    // --dry-run names the CPUs the child got.
    let dry = clean(&mut Command::new(bin()))
        .args(["launch", "--ranks", "2", "--rank", "1", "--dry-run", "-i"])
        .arg(&root)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(stdout(&dry).contains(&format!(
        "# bind: CPUs {} (sched_setaffinity), memory on NUMA",
        seen_cpus[1]
    )));
}

#[test]
fn place_env_rank_reaches_a_child_through_eval() {
    let script = format!(
        "eval \"$({} place -i {} --ranks 8 --format env --rank 3)\" && sh -c 'echo \"$CUDA_VISIBLE_DEVICES|$NCCL_IB_HCA|$UCX_NET_DEVICES\"'",
        bin(),
        hgx().display()
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "3|=mlx5_3:1|mlx5_3:1\n");
    // Only that rank's lines, each an export.
    let o = Command::new(bin())
        .args([
            "place", "--ranks", "8", "--format", "env", "--rank", "3", "-i",
        ])
        .arg(hgx())
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(!out.contains("mlx5_2") && !out.contains("mlx5_4"), "{out}");
    for l in out.lines().filter(|l| !l.starts_with('#')) {
        assert!(l.starts_with("export "), "{l}");
    }
    let o = Command::new(bin())
        .args([
            "place", "--ranks", "2", "--format", "env", "--rank", "2", "-i",
        ])
        .arg(hgx())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// The srun script: saved, run by `sh` with the rank in SLURM_LOCALID, binding with a stand-in
/// numactl, falling back to taskset (real, from util-linux) when numactl is missing.
#[test]
fn slurm_script_runs_under_sh() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(bin())
        .args(["place", "--ranks", "8", "--format", "slurm", "-i"])
        .arg(hgx())
        .output()
        .unwrap();
    let script = dir.path().join("peerpath-place.sh");
    std::fs::write(&script, stdout(&o)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let stub = dir.path().join("bin");
    std::fs::create_dir(&stub).unwrap();
    let numactl = stub.join("numactl");
    std::fs::write(
        &numactl,
        "#!/bin/sh\necho \"numactl $1 $2\"\nshift 2\nexec \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&numactl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        stub.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = Command::new(&script)
        .args(["env"])
        .env("SLURM_LOCALID", "5")
        .env("PATH", &path)
        .output()
        .unwrap();
    let out = stdout(&run);
    assert!(
        out.contains("numactl --physcpubind=70-83,182-195 --membind=1"),
        "{out}"
    );
    for want in [
        "CUDA_VISIBLE_DEVICES=5",
        "NCCL_IB_HCA==mlx5_5:1",
        "UCX_NET_DEVICES=mlx5_5:1",
        "SLURM_LOCALID=5",
    ] {
        assert!(out.lines().any(|l| l == want), "{want}: {out}");
    }
    // Arguments with spaces and quotes reach the program intact.
    let run = Command::new(&script)
        .args(["sh", "-c", "printf '%s|' \"$@\"", "x", "a b", "it's"])
        .env("SLURM_LOCALID", "0")
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(stdout(&run).ends_with("a b|it's|"));
    // No numactl on PATH: taskset binds the CPUs and says memory is not bound. CPUs 0-13 do not
    // exist on a small machine, so taskset's refusal is accepted too — the message is the check.
    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).unwrap();
    for tool in ["sh", "env", "taskset", "true"] {
        if let Ok(p) = which(tool) {
            std::os::unix::fs::symlink(p, bare.join(tool)).unwrap();
        }
    }
    let run = Command::new(&script)
        .args(["true"])
        .env("SLURM_LOCALID", "0")
        .env("PATH", &bare)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&run.stderr);
    if bare.join("taskset").exists() {
        assert!(
            e.contains("CPUs bound with taskset, memory not bound"),
            "{e}"
        );
    } else {
        assert!(e.contains("neither numactl nor taskset"), "{e}");
        assert!(run.status.success());
    }
    // An unplanned local rank fails loudly.
    let bad = Command::new(&script)
        .args(["true"])
        .env("SLURM_LOCALID", "9")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no placement for local rank 9"));
}

fn which(tool: &str) -> Result<PathBuf, ()> {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
        .ok_or(())
}
