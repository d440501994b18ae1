//! `export --format gres` loaded by real Slurm: slurmctld and slurmd (Debian's 22.05) start on
//! this machine with slurmd's hwloc reading a synthesized HGX H100 root (`HWLOC_FSROOT`) and our
//! gres.conf, `/dev/nvidia*` faked in a private mount namespace (`tests/slurm/run.sh`). Checked:
//! `sinfo` shows the 8 GPUs with their socket affinity, `slurmd -G` reads each GPU's `Cores=`
//! as written, a job asking for one GPU gets `CUDA_VISIBLE_DEVICES`, and with socket 0's CPUs
//! taken a GPU-bound job gets a socket-1 GPU (the affinity drives Slurm's choice).
//!
//! Needs root (namespaces, the overlay on /dev) and `slurmctld`, `slurmd`, `unshare`. `.ci/run`
//! installs Slurm; a missing binary fails under CI and is reported as skipped elsewhere.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

fn have(tool: &str) -> bool {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
        .any(|d| Path::new(d).join(tool).is_file())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn slurm_reads_our_gres_conf() {
    let missing: Vec<&str> = ["slurmctld", "slurmd", "sinfo", "srun", "unshare"]
        .into_iter()
        .filter(|t| !have(t))
        .collect();
    if !missing.is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{missing:?} missing under CI: .ci/run installs slurmctld, slurmd and slurm-client"
        );
        eprintln!(
            "SKIPPED: {missing:?} not installed (apt-get install slurmctld slurmd slurm-client)"
        );
        return;
    }
    // The effective uid, from /proc/self/status.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|u| u.split_whitespace().nth(1) == Some("0"));
    if !root {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root");
        eprintln!("SKIPPED: needs root (mount and PID namespaces, an overlay on /dev)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fx");
    let st = Command::new(bin())
        .args(["fixture", "hgx-h100", "-o"])
        .arg(&fx)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let gres = dir.path().join("gres.conf");
    let out = Command::new(bin())
        .args(["export", "--format", "gres", "-o"])
        .arg(&gres)
        .arg("-i")
        .arg(&fx)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm/run.sh");
    let (cport, dport) = (free_port(), free_port());
    let mut child = Command::new("unshare")
        .args([
            "-m",
            "-p",
            "-f",
            "--mount-proc",
            "--propagation",
            "private",
            "bash",
        ])
        .arg(&script)
        .arg(dir.path().join("w"))
        .arg(&fx)
        .arg(&gres)
        .arg(cport.to_string())
        .arg(dport.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: the namespace's PID 1 ends every daemon when it exits or is killed.
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let log = |name: &str| {
        std::fs::read_to_string(dir.path().join("w/log").join(name)).unwrap_or_default()
    };
    let why = format!(
        "{text}\nstderr: {}\nslurmd.log tail: {}\nslurmctld.log tail: {}",
        String::from_utf8_lossy(&o.stderr),
        log("slurmd.log")
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .join("\n"),
        log("slurmctld.log")
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(o.status.success() && text.contains("\ndone"), "{why}");
    // slurmd's hwloc read the fixture: 2 sockets of 56 cores with 2 threads.
    assert!(
        text.contains("CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2"),
        "{why}"
    );
    assert!(text.contains("sinfo: pp 224 gpu:8(S:0-1) idle"), "{why}");
    // Each GPU's Cores= as gres.conf says (Slurm's abstract core ids, one socket each).
    let g: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("G Name=gpu"))
        .collect();
    assert_eq!(g.len(), 8, "{why}");
    for (i, l) in g.iter().enumerate() {
        let cores = if i < 4 { "0-55" } else { "56-111" };
        assert!(
            l.contains(&format!("Index={i} "))
                && l.ends_with(&format!("File=/dev/nvidia{i} Cores={cores}")),
            "{l}"
        );
    }
    assert!(text.contains("job1: CVD=0"), "{why}");
    let job2 = text
        .lines()
        .find_map(|l| l.strip_prefix("job2: CVD="))
        .unwrap_or_else(|| panic!("{why}"));
    let gpu: u32 = job2.trim().parse().unwrap_or_else(|_| panic!("{why}"));
    assert!(
        (4..8).contains(&gpu),
        "socket 0 busy: a socket-1 GPU, got {gpu}\n{why}"
    );
}
