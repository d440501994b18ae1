//! Shared test support: fixture extraction and running the peer tools (lspci, lstopo).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Root of the repository.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The hwloc sysfs tarballs committed under fixtures/hwloc.
pub fn hwloc_tarballs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("fixtures/hwloc"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tar.bz2"))
        .collect();
    v.sort();
    v
}

/// Extracts a tarball into a fresh temp dir and returns (guard, root) where root holds `sys/`.
pub fn extract(tarball: &Path) -> (tempfile::TempDir, PathBuf) {
    extract_into(tarball, tempfile::tempdir().unwrap())
}

/// [`extract`] into the given fresh directory.
fn extract_into(tarball: &Path, dir: tempfile::TempDir) -> (tempfile::TempDir, PathBuf) {
    let bytes = std::fs::read(tarball).unwrap();
    let reader: Box<dyn std::io::Read> = if bytes.starts_with(b"BZh") {
        Box::new(bzip2::read::BzDecoder::new(&bytes[..]))
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(&bytes[..]))
    } else {
        Box::new(&bytes[..])
    };
    tar::Archive::new(reader).unpack(dir.path()).unwrap();
    let root = if dir.path().join("sys").is_dir() {
        dir.path().to_path_buf()
    } else {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.join("sys").is_dir())
            .expect("no sys/ in tarball")
    };
    (dir, root)
}

/// Extracts a tarball once per build directory (under `CARGO_TARGET_TMPDIR`) and returns the
/// root holding `sys/`. Safe across parallel tests: extraction goes to a private directory that
/// is renamed into place.
pub fn extracted(tarball: &Path) -> PathBuf {
    let name = tarball.file_name().unwrap().to_string_lossy().into_owned();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
    let dest = base.join(&name);
    let stamp = dest.join(".complete");
    if !stamp.exists() {
        std::fs::create_dir_all(&base).unwrap();
        // Extracted beside its destination: a rename does not cross file systems (TMPDIR may
        // be a tmpfs, as .ci/run makes it).
        let (tmp, _) = extract_into(tarball, tempfile::tempdir_in(&base).unwrap());
        std::fs::write(tmp.path().join(".complete"), b"").unwrap();
        let tmp = tmp.keep();
        if std::fs::rename(&tmp, &dest).is_err() {
            let _ = std::fs::remove_dir_all(&tmp); // another test got there first
        }
    }
    if dest.join("sys").is_dir() {
        dest
    } else {
        std::fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.join("sys").is_dir())
            .expect("no sys/ in tarball")
    }
}

/// Runs a peer tool; `None` (with a note) if it is not installed and we are not in CI.
pub fn tool(cmd: &str, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    let mut c = Command::new(cmd);
    c.args(args).env("LANG", "C").env("LC_ALL", "C");
    for (k, v) in env {
        c.env(k, v);
    }
    match c.output() {
        Ok(o) => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Err(e) => {
            if std::env::var_os("CI").is_some() {
                panic!("{cmd} is required in CI (installed by .ci/run): {e}");
            }
            eprintln!("note: {cmd} not installed ({e}); cross-check skipped");
            None
        }
    }
}

/// The peerpath binary built for this test run.
pub fn peerpath() -> Command {
    Command::new(env!("CARGO_BIN_EXE_peerpath"))
}

/// kubernetes-validate (PyPI; the Kubernetes OpenAPI schemas), or `None` (skipped outside CI;
/// `.ci/run` installs it in target/ci-venv and puts that on PATH).
pub fn validator() -> Option<PathBuf> {
    let p = std::env::var_os("KUBERNETES_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("kubernetes-validate"));
    match Command::new(&p).arg("--version").output() {
        Ok(o) if o.status.success() => Some(p),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "kubernetes-validate missing under CI: .ci/run installs it from PyPI"
            );
            eprintln!(
                "SKIPPED schema check: kubernetes-validate not installed (pip install kubernetes-validate)"
            );
            None
        }
    }
}

/// `kubernetes-validate --strict -k VERSION FILES…`; returns (success, output).
pub fn validate(v: &Path, version: &str, files: &[PathBuf]) -> (bool, String) {
    let o = Command::new(v)
        .args(["--strict", "--no-warn", "-k", version])
        .args(files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success() && !text.contains("ERROR"), text)
}

/// A Python 3 with the `jsonschema` and `yaml` packages (the CI venv's, which kubernetes-validate
/// brings in), or `None` (skipped outside CI).
pub fn python_with_jsonschema() -> Option<PathBuf> {
    let beside = validator().and_then(|v| {
        let found = if v.components().count() > 1 {
            Some(v)
        } else {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("kubernetes-validate"))
                    .find(|c| c.is_file())
            })
        };
        found.and_then(|v| v.parent().map(|d| d.join("python3")))
    });
    for py in beside.into_iter().chain([PathBuf::from("python3")]) {
        let ok = Command::new(&py)
            .args(["-c", "import jsonschema, yaml"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(py);
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "python3 with jsonschema missing under CI: .ci/run installs kubernetes-validate, which brings it"
    );
    eprintln!("SKIPPED schema check: no python3 with the jsonschema and yaml packages");
    None
}

/// A plain tar holding one entry, `../escape.txt`, that climbs out of the root: what a corrupt
/// or hostile snapshot looks like (readers must refuse it, naming the entry).
pub fn escaping_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    h.set_entry_type(tar::EntryType::Regular);
    h.as_gnu_mut().unwrap().name[..13].copy_from_slice(b"../escape.txt");
    h.set_cksum();
    b.append(&h, &b"x"[..]).unwrap();
    b.into_inner().unwrap()
}

/// Whether `tool` is an executable file on `PATH` or in `/usr/sbin`, `/sbin` (where Debian puts
/// the Slurm daemons and `ip`).
pub fn have(tool: &str) -> bool {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
        .any(|d| Path::new(d).join(tool).is_file())
}

/// Whether this process runs as root: the effective uid in `/proc/self/status`.
pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|u| u.split_whitespace().nth(1) == Some("0"))
}

/// Ports the OS says are free now, all distinct (each held until all are chosen).
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// Whether this system's real Slurm can run here: the binaries `tools` and root (mount and PID
/// namespaces, an overlay on /dev). Under CI a missing piece fails; elsewhere the test says
/// SKIPPED and why.
pub fn slurm_available(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have(t)).collect();
    if !missing.is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{missing:?} missing under CI: .ci/run installs slurmctld, slurmd and slurm-client"
        );
        eprintln!(
            "SKIPPED: {missing:?} not installed (apt-get install slurmctld slurmd slurm-client)"
        );
        return false;
    }
    if !is_root() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root");
        eprintln!("SKIPPED: needs root (mount and PID namespaces, an overlay on /dev)");
        return false;
    }
    true
}

/// SYNTHESIZED: `racks` GB200 NVL72 racks of 18 trays (`peerpath::synth::nvl72`, each tray's
/// capture carrying its rack's NVLink domain) cabled as one scalable unit on a 4-rail pod map
/// (`peerpath::synth::fabric`, hosts renamed to the trays): writes `dir/caps/` (once) and
/// `dir/pod.ibnetdiscover`, and returns (the map, the captures' directory).
pub fn nvl72_fleet(dir: &Path, racks: usize) -> (PathBuf, PathBuf) {
    use peerpath::synth::fabric::{Pod, ibnetdiscover};
    use peerpath::synth::nvl72::{tray_name, write_fleet};
    let caps = dir.join("caps");
    if !caps.exists() {
        write_fleet(&caps, racks).unwrap();
    }
    let nodes = racks * 18;
    let pod = Pod {
        nodes,
        rails: 4,
        hosts_per_leaf: nodes,
        spines: 2,
    };
    let mut text = ibnetdiscover(&pod, &[]);
    for h in 0..nodes {
        text = text.replace(&Pod::host(h), &tray_name(h / 18 + 1, h % 18 + 1));
    }
    let map = dir.join("pod.ibnetdiscover");
    std::fs::write(&map, text).unwrap();
    (map, caps)
}

/// Runs `cmd` with stdout and stderr captured, killed once `limit` has passed (a test's
/// namespace whose PID 1 is the child ends every daemon with it); its output either way.
pub fn run_bounded(cmd: &mut Command, limit: std::time::Duration) -> std::process::Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

/// `unshare -m -p -f --mount-proc --propagation private bash SCRIPT`: the script as PID 1 of
/// private mount and PID namespaces (with its own /proc), so every daemon it starts ends with it.
pub fn in_pid_namespace(script: &Path) -> Command {
    let mut c = Command::new("unshare");
    c.args([
        "-m",
        "-p",
        "-f",
        "--mount-proc",
        "--propagation",
        "private",
        "bash",
    ])
    .arg(script);
    c
}

/// A synthesized node written as a tarball (one file write instead of thousands; the sysfs
/// scanner reads both alike) and loaded as `peerpath -i` loads it; the guard keeps the tarball.
pub fn load_spec(spec: &peerpath::synth::Spec) -> (tempfile::TempDir, peerpath::model::Topology) {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("fixture.tar.gz");
    peerpath::synth::write_tarball(spec, &tar, &peerpath::synth::WriteOptions::default()).unwrap();
    let t = peerpath::sources::load(Some(&tar), &Default::default()).unwrap();
    (dir, t)
}

/// `peerpath place`'s plan for `ranks` ranks, cores per rank chosen by the planner.
pub fn place_plan(
    t: &peerpath::model::Topology,
    ranks: usize,
) -> peerpath::analysis::place::Placement {
    use peerpath::analysis::place::{PlaceOptions, plan};
    plan(
        t,
        &PlaceOptions {
            ranks,
            cores_per_rank: None,
        },
    )
    .unwrap()
}

/// Runs `f` on every item, on as many threads as the machine has cores (at most one per
/// item): for tests that loop over many independent cases, each mostly waiting on one
/// single-threaded `peerpath` child or one tree on disk. A panic in any case fails the test
/// (`std::thread::scope` re-raises it) after the cases already started end.
pub fn par_each<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(items.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    f(item);
                }
            });
        }
    });
}
