//! `export --format gres` loaded by real Slurm: slurmctld and slurmd (Debian's 22.05) start on
//! this machine with slurmd's hwloc reading a synthesized HGX H100 (and AMD MI300X) root (`HWLOC_FSROOT`) and our
//! gres.conf, `/dev/nvidia*` faked in a private mount namespace (`tests/slurm/run.sh`). Checked:
//! `sinfo` shows the 8 GPUs with their socket affinity, `slurmd -G` reads each GPU's `Cores=`
//! as written, a job asking for one GPU gets `CUDA_VISIBLE_DEVICES`, and with socket 0's CPUs
//! taken a GPU-bound job gets a socket-1 GPU (the affinity drives Slurm's choice).
//!
//! Needs root (namespaces, the overlay on /dev) and `slurmctld`, `slurmd`, `unshare`. `.ci/run`
//! installs Slurm; a missing binary fails under CI and is reported as skipped elsewhere.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

fn free_port() -> u16 {
    common::free_ports(1)[0]
}

/// Whether this test can run real Slurm here: the daemons and root (namespaces). Under CI a
/// missing piece fails; elsewhere the test reports itself skipped.
fn slurm_available() -> bool {
    common::slurm_available(&["slurmctld", "slurmd", "sinfo", "srun", "unshare"])
}

/// Runs a script of tests/slurm/ as PID 1 of private mount and PID namespaces (every daemon
/// ends with it), killed after `limit`; its stdout, and the tails of the daemons' logs.
fn in_namespace(script: &str, args: &[String], logs: &Path, limit: Duration) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/slurm")
        .join(script);
    let o = common::run_bounded(common::in_pid_namespace(&script).args(args), limit);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let log = |name: &str| {
        std::fs::read_to_string(logs.join(name))
            .unwrap_or_default()
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let why = format!(
        "{text}\nstderr: {}\nslurmd.log tail: {}\nslurmctld.log tail: {}",
        String::from_utf8_lossy(&o.stderr),
        log("slurmd.log"),
        log("slurmctld.log")
    );
    (o.status.success() && text.contains("\ndone"), why)
}

/// Writes `fixture` and its `export --format gres`, then runs real Slurm on them
/// (tests/slurm/run.sh): returns what Slurm printed (and the daemons' log tails) after
/// asserting the run finished.
fn slurm_on(fixture: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fx");
    let st = Command::new(bin())
        .args(["fixture", fixture, "-o"])
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
    let (cport, dport) = (free_port(), free_port());
    let args: Vec<String> = [
        dir.path().join("w"),
        fx.clone(),
        gres.clone(),
        cport.to_string().into(),
        dport.to_string().into(),
    ]
    .iter()
    .map(|p| p.display().to_string())
    .collect();
    let (ok, why) = in_namespace(
        "run.sh",
        &args,
        &dir.path().join("w/log"),
        Duration::from_secs(180),
    );
    assert!(ok, "{why}");
    why
}

/// The value `NAME=` takes on the line of `text` starting with `prefix` (`job2: CVD=4 ROCR=…`).
fn job_var<'a>(text: &'a str, prefix: &str, name: &str) -> Option<&'a str> {
    let line = text.lines().find_map(|l| l.strip_prefix(prefix))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

/// What every gres.conf test checks of Slurm's answer: 8 GPUs, socket 0's cores for GPUs 0–3
/// and socket 1's for 4–7 (Slurm's abstract core ids, `cores_per_socket` each), GPU i on the
/// line `Index=index(i) … File=file(i) Cores=…`; a one-GPU job gets GPU 0 in `var`, and with
/// socket 0's CPUs held a bound job gets a socket-1 GPU.
fn check_gpus(
    text: &str,
    cores_per_socket: u32,
    index: impl Fn(usize) -> usize,
    file: impl Fn(usize) -> String,
    var: &str,
) {
    let why = text;
    let g: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("G Name=gpu"))
        .collect();
    assert_eq!(g.len(), 8, "{why}");
    let n = cores_per_socket;
    for (i, l) in g.iter().enumerate() {
        let cores = if i < 4 {
            format!("0-{}", n - 1)
        } else {
            format!("{n}-{}", 2 * n - 1)
        };
        assert!(
            l.contains(&format!("Index={} ", index(i)))
                && l.ends_with(&format!("File={} Cores={cores}", file(i))),
            "{l}"
        );
    }
    assert_eq!(job_var(text, "job1: ", var), Some("0"), "{why}");
    let gpu: u32 = job_var(text, "job2: ", var)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{why}"));
    assert!(
        (4..8).contains(&gpu),
        "socket 0 busy: a socket-1 GPU, got {gpu}\n{why}"
    );
}

#[test]
fn slurm_reads_our_gres_conf() {
    if !slurm_available() {
        return;
    }
    let text = slurm_on("hgx-h100");
    // slurmd's hwloc read the fixture: 2 sockets of 56 cores with 2 threads.
    assert!(
        text.contains("CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2"),
        "{text}"
    );
    assert!(text.contains("sinfo: pp 224 gpu:8(S:0-1) idle"), "{text}");
    check_gpus(&text, 56, |i| i, |i| format!("/dev/nvidia{i}"), "CVD");
}

/// The AMD gres.conf (`File=/dev/dri/renderD<minor>` from KFD, as `AutoDetect=rsmi` declares
/// them) loaded by the same real Slurm: slurmd reads all 8 MI300X with their render nodes and
/// socket cores (2 sockets of 96), a one-GPU job gets `ROCR_VISIBLE_DEVICES`, and with socket
/// 0's CPUs taken a GPU-bound job gets a socket-1 GPU.
#[test]
fn slurm_reads_our_amd_gres_conf() {
    if !slurm_available() {
        return;
    }
    let text = slurm_on("mi300x-8gpu");
    assert!(
        text.contains("CPUs=384 Boards=1 SocketsPerBoard=2 CoresPerSocket=96 ThreadsPerCore=2"),
        "{text}"
    );
    assert!(text.contains("sinfo: pp 384 gpu:8(S:0-1) idle"), "{text}");
    // Slurm numbers a device by its file's digits (renderD128 is Index=128); the job's
    // ROCR_VISIBLE_DEVICES is the GPU's position.
    check_gpus(
        &text,
        96,
        |i| 128 + i,
        |i| format!("/dev/dri/renderD{}", 128 + i),
        "ROCR",
    );
}

/// peerpath as Slurm's `HealthCheckProgram` (deploy/slurm/peerpath-health) under a real
/// slurmctld and slurmd with `HealthCheckInterval=2`: on the clean HGX H100 snapshot the node
/// stays idle while the check runs; switched to the twin with GPU3's NIC on the other socket,
/// the node is DRAIN within one interval (plus the check's own run) and `sinfo -R` names the
/// check and the GPU; switched back, the node returns to idle (only a drain this check set is
/// resumed). About 10 s.
#[test]
fn slurm_health_check_drains_a_misplaced_nic_and_resumes_the_fixed_node() {
    if !slurm_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let snap = |layout: &str| {
        let p = dir.path().join(format!("{layout}.tar.gz"));
        let st = Command::new(bin())
            .args(["fixture", layout, "-o"])
            .arg(&p)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        p.display().to_string()
    };
    let interval = 2.0;
    let (cport, dport) = (free_port(), free_port());
    let args = vec![
        dir.path().join("w").display().to_string(),
        bin().to_string(),
        snap("hgx-h100"),
        snap("misplaced-nic"),
        cport.to_string(),
        dport.to_string(),
        format!("{interval}"),
    ];
    let (ok, why) = in_namespace(
        "health.sh",
        &args,
        &dir.path().join("w/log"),
        Duration::from_secs(90),
    );
    assert!(ok, "{why}");
    let seconds = |tag: &str| -> f64 {
        why.lines()
            .find_map(|l| l.strip_prefix(tag))
            .and_then(|r| r.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no {tag} time: {why}"))
    };
    // Clean: idle, and the check ran meanwhile (else staying idle proves nothing).
    let clean = why.lines().find(|l| l.starts_with("clean: ")).unwrap_or("");
    let ran: u32 = clean
        .split("check ran ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(clean.contains("state idle") && ran >= 1, "{why}");
    // Faulty: DRAIN within one interval, plus at most 1.5 s for the check itself to run.
    let drained = seconds("drained: ");
    assert!(
        drained <= interval + 1.5 && why.contains("s, state drain"),
        "{why}"
    );
    let row = why
        .lines()
        .skip_while(|l| !l.starts_with("sinfo -R:"))
        .find(|l| l.ends_with(" pp"))
        .unwrap_or_else(|| panic!("{why}"));
    assert!(row.starts_with("gpu-nic-path 4b:00.0 "), "{row}\n{why}");
    // Fixed: back to idle within one interval.
    let back = seconds("returned: ");
    assert!(back <= interval + 1.5, "{why}");
    assert!(
        why.lines()
            .any(|l| l.starts_with("returned: ") && l.ends_with("state idle")),
        "{why}"
    );
}
