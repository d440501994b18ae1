//! `peerpath probe --listen` / `--peer` between two network namespaces joined by a veth pair,
//! over libfabric's tcp provider: two processes, two "nodes" (each namespace has only its own
//! interface), real bytes written from one process's memory into the other's and read back,
//! verified byte for byte on the side they landed on. Also: a rail whose peer is missing
//! (nothing listening, or no host at the address) is named with a clear error and exit 3
//! within a bounded time; a listener nobody reaches gives up; a corrupted byte at the
//! listener is caught. The control connection is authenticated with a shared key (the
//! listener from `--key-file`, the peer from `PEERPATH_PROBE_KEY`), and hostile peers are
//! tried: strangers connecting first (closing, garbage, another key) do not stop the
//! listener serving the real peer; a peer trickling one byte a second does not hold it past
//! `--timeout`, nor a listener trickling to the peer hold the peer; a `RAIL` naming another
//! address than the one dialled is refused; without a key both sides refuse unless
//! `--insecure`; `--bind` binds that address only.
//!
//! Needs root (network namespaces), `ip` (iproute2) and libfabric1; `.ci/run` installs both.
//! Under `CI` a missing piece fails; elsewhere the test reports itself skipped.

mod common;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

/// Whether namespaces can be made here: root, `ip`, libfabric. Under CI a missing piece
/// fails; elsewhere the test reports itself skipped.
fn available() -> bool {
    let ci = std::env::var_os("CI").is_some();
    if !common::have("ip") {
        assert!(!ci, "`ip` missing under CI: .ci/run installs iproute2");
        eprintln!("SKIPPED: `ip` not installed (apt-get install iproute2)");
        return false;
    }
    if !common::is_root() {
        assert!(!ci, "CI runs as root");
        eprintln!("SKIPPED: needs root (network namespaces)");
        return false;
    }
    let lib = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
    ]
    .iter()
    .any(|d| Path::new(d).join("libfabric.so.1").exists());
    if !lib {
        assert!(
            !ci,
            "libfabric.so.1 missing under CI: .ci/run installs libfabric1"
        );
        eprintln!("SKIPPED: libfabric.so.1 not installed");
        return false;
    }
    true
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two namespaces `<tag>a` and `<tag>b` joined by a veth pair (10.40.0.1/24 in a, 10.40.0.2/24
/// in b), deleted — with the veth pair in them — when dropped, also when a test fails.
struct Nodes {
    a: String,
    b: String,
    /// The interface in b (the connector's NIC).
    veth_b: String,
    /// Holds the listener's key file (mode 0600), [`KEY`].
    keys: tempfile::TempDir,
}

/// The key both sides share in these tests (the peer reads it from `PEERPATH_PROBE_KEY`).
const KEY: &str = "two-nodes-test-key-0123456789";

impl Nodes {
    fn new(tag: &str) -> Nodes {
        let tag = format!("pp{}{tag}", std::process::id() % 100_000);
        let n = Nodes {
            a: format!("{tag}a"),
            b: format!("{tag}b"),
            veth_b: format!("{tag}vb"),
            keys: tempfile::tempdir().unwrap(),
        };
        {
            use std::os::unix::fs::PermissionsExt;
            let p = n.key_file();
            std::fs::write(&p, format!("{KEY}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let veth_a = format!("{tag}va");
        // Whatever exists of a previous run with the same id goes first.
        let _ = Command::new("ip").args(["netns", "del", &n.a]).output();
        let _ = Command::new("ip").args(["netns", "del", &n.b]).output();
        ip(&["netns", "add", &n.a]);
        ip(&["netns", "add", &n.b]);
        ip(&[
            "link", "add", &veth_a, "netns", &n.a, "type", "veth", "peer", "name", &n.veth_b,
            "netns", &n.b,
        ]);
        for (ns, dev, addr) in [
            (&n.a, &veth_a, "10.40.0.1/24"),
            (&n.b, &n.veth_b, "10.40.0.2/24"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        // libfabric's tcp provider names its domain after an interface only once the interface
        // is running (carrier up); until then it says `tcp`.
        let deadline = Instant::now() + Duration::from_secs(5);
        for (ns, dev) in [(&n.a, &veth_a), (&n.b, &n.veth_b)] {
            loop {
                let out = Command::new("ip")
                    .args(["-n", ns, "link", "show", "dev", dev])
                    .output()
                    .expect("run ip");
                if String::from_utf8_lossy(&out.stdout).contains("LOWER_UP") {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{dev} in {ns} has no carrier after 5 s"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        n
    }

    fn key_file(&self) -> String {
        self.keys.path().join("key").display().to_string()
    }

    /// `peerpath ARGS` in namespace `ns`, [`KEY`] in `PEERPATH_PROBE_KEY`.
    fn cmd(ns: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, bin()]).args(args);
        c.env("PEERPATH_PROBE_KEY", KEY);
        c.env_remove("PEERPATH_PROBE_FAULT");
        c
    }

    /// `bash -c SCRIPT` in namespace `ns` (a stranger's TCP connections via `/dev/tcp`).
    fn sh(ns: &str, script: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, "bash", "-c", script]);
        c
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// A listener process, killed when dropped if still running, and its stderr lines as they come.
struct Listener(Child, std::sync::mpsc::Receiver<String>);

impl Listener {
    /// `peerpath probe --listen PORT` in namespace a, returned once it says it listens.
    fn start(nodes: &Nodes, port: u16, timeout: &str, env: &[(&str, &str)]) -> Listener {
        Listener::start_with(nodes, port, timeout, env, &[])
    }

    /// [`Listener::start`] with more options; the key from `--key-file` (the file holds
    /// [`KEY`]) unless they say `--insecure`.
    fn start_with(
        nodes: &Nodes,
        port: u16,
        timeout: &str,
        env: &[(&str, &str)],
        extra: &[&str],
    ) -> Listener {
        let port = port.to_string();
        let key_file = nodes.key_file();
        let mut args = vec![
            "probe",
            "--listen",
            &port,
            "--fabric",
            "ofi",
            "--provider",
            "tcp",
            "--memory",
            "host",
            "--timeout",
            timeout,
        ];
        if !extra.contains(&"--insecure") {
            args.extend(["--key-file", &key_file]);
        }
        args.extend(extra);
        let mut c = Nodes::cmd(&nodes.a, &args);
        if extra.contains(&"--insecure") {
            c.env_remove("PEERPATH_PROBE_KEY");
        }
        c.envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn listener");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        err.read_line(&mut first).unwrap();
        assert!(first.contains("listening on"), "listener: {first}");
        // The rest of stderr is drained so the listener never blocks on it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).is_ok_and(|n| n > 0) {
                let _ = tx.send(std::mem::take(&mut line));
            }
        });
        Listener(child, rx)
    }

    /// Waits (at most 10 s) for a stderr line containing `text`.
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.1.recv_timeout(left) {
                Ok(l) if l.contains(text) => return,
                Ok(_) => {}
                Err(e) => panic!("listener never said `{text}`: {e}"),
            }
        }
    }

    /// [`Listener::finish`] and everything it said on stderr after its first line.
    fn finish_said(self) -> (Output, String) {
        let out_rx = std::sync::mpsc::channel().1;
        let mut me = self;
        let rx = std::mem::replace(&mut me.1, out_rx);
        let out = me.finish();
        // The drain thread ends at the listener's end of stderr.
        let said: String = rx.iter().collect();
        (out, said)
    }

    fn finish(mut self) -> Output {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "listener did not end in 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        let child = std::mem::replace(&mut self.0, Command::new("true").spawn().unwrap());
        child.wait_with_output().unwrap()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `peerpath probe --peer …` in namespace b, JSON; its exit code, document and wall time.
fn peer(nodes: &Nodes, peers: &[&str], extra: &[&str]) -> (i32, Value, Duration) {
    let (rc, doc, took, _) = peer_env(nodes, peers, extra, &[]);
    (rc, doc, took)
}

/// [`peer`] with environment variables set (an empty value removes one), and its stderr.
fn peer_env(
    nodes: &Nodes,
    peers: &[&str],
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Value, Duration, String) {
    let mut args = vec![
        "probe",
        "--fabric",
        "ofi",
        "--provider",
        "tcp",
        "--memory",
        "host",
        "--format",
        "json",
        "--duration",
        "1",
        "--sizes",
        "65536,1048576",
    ];
    for p in peers {
        args.extend(["--peer", p]);
    }
    args.extend(extra);
    let t0 = Instant::now();
    let mut c = Nodes::cmd(&nodes.b, &args);
    for (k, v) in env {
        if v.is_empty() {
            c.env_remove(k);
        } else {
            c.env(k, v);
        }
    }
    let out = c.output().unwrap();
    let took = t0.elapsed();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), doc, took, err)
}

fn rows(doc: &Value, rail: u64) -> Vec<&Value> {
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["nic"]["rail"].as_u64() == Some(rail))
        .collect()
}

#[test]
fn bytes_cross_the_veth_pair_and_a_missing_peer_is_named() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("x");
    let listener = Listener::start(&nodes, 7040, "10", &[]);
    // Rail 0: the listener. Rail 1: nothing listens on that port. Rail 2: no host at that
    // address (ARP goes unanswered): bounded by --timeout.
    let (rc, doc, took) = peer(
        &nodes,
        &["10.40.0.1:7040", "10.40.0.1:7041", "10.40.0.3:7040"],
        &["--timeout", "2"],
    );
    let served = listener.finish();
    let served_out = String::from_utf8_lossy(&served.stdout);
    assert_eq!(served.status.code(), Some(0), "listener: {served_out}");
    // Two WRITE cells verified at the listener, byte for byte.
    assert!(served_out.contains("2 verified, 0 wrong"), "{served_out}");

    assert_eq!(doc["schema"], "peerpath.probe/2");
    let r0 = rows(&doc, 0);
    assert_eq!(r0.len(), 4, "{doc:#}");
    for r in &r0 {
        assert_eq!(r["nic"]["peer"], "10.40.0.1:7040");
        assert_eq!(r["nic"]["provider"], "tcp");
        // The connector's domain is its own veth: the bytes left through b's only interface.
        assert_eq!(r["nic"]["domain"], nodes.veth_b.as_str(), "{r:#}");
        assert_eq!(r["verified"], true, "{r:#}");
        assert!(r["bytes"].as_u64().unwrap() >= r["message_bytes"].as_u64().unwrap());
        assert!(r["gbytes_per_s"].as_f64().unwrap() > 0.0);
        // veth reports 10000 Mb/s: the bandwidth is judged against 1.25 GB/s.
        let v = r["verdict"].as_str().unwrap();
        assert!(v == "confirmed" || v == "degraded", "{r:#}");
        assert!(
            r["reason"].as_str().unwrap().contains("line rate 1.2 GB/s"),
            "{r:#}"
        );
    }
    let ops: Vec<&str> = r0.iter().map(|r| r["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["write", "write", "read", "read"]);

    let r1 = rows(&doc, 1);
    assert_eq!(r1.len(), 4);
    for r in &r1 {
        assert_eq!(r["verdict"], "not_run");
        let why = r["reason"].as_str().unwrap();
        assert!(
            why.contains("10.40.0.1:7041") && why.contains("connection refused"),
            "{why}"
        );
    }
    let r2 = rows(&doc, 2);
    assert_eq!(r2.len(), 4);
    for r in &r2 {
        assert_eq!(r["verdict"], "not_run");
        assert!(
            r["reason"].as_str().unwrap().contains("10.40.0.3:7040"),
            "{r:#}"
        );
    }
    // A rail not reached: the probe could not run there.
    assert_eq!(rc, 3, "{doc:#}");
    // Bounded: rail 2's wait is --timeout 2 (ARP gives up after ~3 s at most).
    assert!(took < Duration::from_secs(12), "took {took:?}");
}

#[test]
fn a_corrupted_byte_at_the_listener_fails_the_write_cells() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("c");
    // A debug build honours the fault: the listener flips a byte of the last slot written.
    let listener = Listener::start(&nodes, 7042, "10", &[("PEERPATH_PROBE_FAULT", "corrupt")]);
    let (rc, doc, _) = peer(&nodes, &["10.40.0.1:7042"], &[]);
    let served = listener.finish();
    assert_eq!(served.status.code(), Some(1));
    for r in rows(&doc, 0) {
        if r["op"] == "write" {
            assert_eq!(r["verified"], false, "{r:#}");
            assert_eq!(r["verdict"], "transfer_failed");
            assert!(r["reason"].as_str().unwrap().contains("at the peer, slot"));
        } else {
            assert_eq!(r["verified"], true, "{r:#}");
        }
    }
    assert_eq!(rc, 1);
}

#[test]
fn a_listener_nobody_reaches_gives_up() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("l");
    let t0 = Instant::now();
    let out = Nodes::cmd(
        &nodes.a,
        &[
            "probe",
            "--listen",
            "7043",
            "--fabric",
            "ofi",
            "--memory",
            "host",
            "--timeout",
            "1",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no peer connected to port 7043 within 1 s"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_listener_killed_mid_run_fails_its_rail_promptly() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("k");
    let mut listener = Listener::start(&nodes, 7044, "10", &[]);
    let mut probe = Nodes::cmd(
        &nodes.b,
        &[
            "probe",
            "--fabric",
            "ofi",
            "--provider",
            "tcp",
            "--memory",
            "host",
            "--format",
            "json",
            "--duration",
            "6",
            "--sizes",
            "65536",
            "--peer",
            "10.40.0.1:7044",
            "--timeout",
            "2",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    listener.wait_for("fabric connected");
    std::thread::sleep(Duration::from_millis(300));
    listener.0.kill().unwrap();
    let t0 = Instant::now();
    let out = std::mem::replace(&mut probe, Command::new("true").spawn().unwrap())
        .wait_with_output()
        .unwrap();
    // The broken connection ends the cell (error completion, or the 10 s stall bound).
    assert!(t0.elapsed() < Duration::from_secs(12), "{:?}", t0.elapsed());
    let _ = probe.wait();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r0 = rows(&doc, 0);
    assert_eq!(r0.len(), 2, "{doc:#}");
    assert!(
        r0.iter().all(|r| r["verdict"] == "transfer_failed"),
        "{doc:#}"
    );
    assert!(r0.iter().all(|r| r["nic"]["peer"] == "10.40.0.1:7044"));
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_listener_that_refuses_the_session_is_named() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("r");
    // The listener runs another provider: it answers HELLO with ERROR and closes.
    let mut c = Nodes::cmd(
        &nodes.a,
        &[
            "probe",
            "--listen",
            "7045",
            "--fabric",
            "ofi",
            "--provider",
            "udp",
            "--memory",
            "host",
            "--timeout",
            "10",
        ],
    );
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.contains("listening on"), "{first}");
    let listener = Listener(child, std::sync::mpsc::channel().1);
    let (rc, doc, _) = peer(&nodes, &["10.40.0.1:7045"], &[]);
    assert_eq!(rc, 3, "{doc:#}");
    for r in rows(&doc, 0) {
        assert_eq!(r["verdict"], "not_run");
        let why = r["reason"].as_str().unwrap();
        assert!(
            why.contains("peer asks provider tcp, this side runs udp"),
            "{why}"
        );
    }
    assert_eq!(listener.finish().status.code(), Some(1));
}

/// Every row of rail 0 verified (the real peer was served).
fn served(doc: &Value) {
    let r0 = rows(doc, 0);
    assert_eq!(r0.len(), 4, "{doc:#}");
    assert!(r0.iter().all(|r| r["verified"] == true), "{doc:#}");
}

#[test]
fn strangers_connecting_first_do_not_stop_the_real_peer() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("s");
    let listener = Listener::start(&nodes, 7046, "15", &[]);
    // A port scan (connect, close), garbage with terminal escapes (OSC 52 writes the
    // clipboard, ESC[2J clears the screen), and a peer with another key.
    let scan = Nodes::sh(&nodes.b, "exec 3<>/dev/tcp/10.40.0.1/7046; exec 3>&-")
        .status()
        .unwrap();
    assert!(scan.success());
    let garbage = Nodes::sh(
        &nodes.b,
        r"exec 3<>/dev/tcp/10.40.0.1/7046; printf '\033]52;c;cHduZWQ=\a\033[2J HELLO\n' >&3; sleep 0.3",
    )
    .status()
    .unwrap();
    assert!(garbage.success());
    let (rc, doc, _, err) = peer_env(
        &nodes,
        &["10.40.0.1:7046"],
        &[],
        &[("PEERPATH_PROBE_KEY", "another-key-of-enough-bytes")],
    );
    assert_eq!(rc, 3, "{err}\n{doc:#}");
    assert!(err.contains("the handshake failed"), "{err}");
    // The real peer is still served.
    let (rc, doc, _) = peer(&nodes, &["10.40.0.1:7046"], &[]);
    assert_eq!(rc, 0, "{doc:#}");
    served(&doc);
    let (out, log) = listener.finish_said();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 verified, 0 wrong"),
        "{out:?}"
    );
    assert!(log.matches("refused:").count() >= 3, "{log}");
    assert!(log.contains("\\x1b]52;c;cHduZWQ=\\x07"), "{log}");
    assert!(!log.contains('\x1b') && !log.contains('\x07'), "{log:?}");
}

#[test]
fn a_trickling_peer_does_not_hold_the_listener_past_its_timeout() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("t");
    let listener = Listener::start(&nodes, 7047, "2", &[]);
    let t0 = Instant::now();
    // One byte a second, never a whole line.
    let mut trickle = Nodes::sh(
        &nodes.b,
        "exec 3<>/dev/tcp/10.40.0.1/7047; for i in $(seq 20); do printf H >&3 || exit; sleep 1; done",
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let (out, err) = listener.finish_said();
    let took = t0.elapsed();
    let _ = trickle.kill();
    let _ = trickle.wait();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        err.contains("no peer connected to port 7047 within 2 s"),
        "{err}"
    );
    assert!(took < Duration::from_secs(4), "took {took:?}");
}

#[test]
fn a_rail_naming_another_address_is_refused() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("f");
    // A debug build honours the fault: the listener names 127.0.0.1 in RAIL — in b's
    // namespace that is b itself, not the node dialled.
    let listener = Listener::start(&nodes, 7048, "5", &[("PEERPATH_PROBE_FAULT", "forge-rail")]);
    let (rc, doc, _) = peer(&nodes, &["10.40.0.1:7048"], &["--timeout", "2"]);
    let r0 = rows(&doc, 0);
    assert_eq!(r0.len(), 4, "{doc:#}");
    for r in &r0 {
        assert_eq!(r["verdict"], "transfer_failed", "{r:#}");
        let why = r["reason"].as_str().unwrap();
        assert!(
            why.contains("names fabric address 127.0.0.1, not the address dialled (10.40.0.1)"),
            "{why}"
        );
    }
    assert_eq!(rc, 1);
    drop(listener);
}

#[test]
fn without_a_key_both_sides_refuse_unless_insecure() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("n");
    let mut c = Nodes::cmd(
        &nodes.a,
        &[
            "probe", "--listen", "7049", "--fabric", "ofi", "--memory", "host",
        ],
    );
    let out = c.env_remove("PEERPATH_PROBE_KEY").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no key for the control connection"), "{err}");
    let mut c = Nodes::cmd(
        &nodes.b,
        &[
            "probe",
            "--peer",
            "10.40.0.1:7049",
            "--fabric",
            "ofi",
            "--memory",
            "host",
        ],
    );
    let out = c.env_remove("PEERPATH_PROBE_KEY").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // A peer with a key refuses an --insecure listener; both --insecure run.
    let listener = Listener::start_with(&nodes, 7049, "10", &[], &["--insecure"]);
    let (rc, doc, _, err) = peer_env(&nodes, &["10.40.0.1:7049"], &[], &[]);
    assert_eq!(rc, 3, "{doc:#}");
    assert!(err.contains("the listener runs without a key"), "{err}");
    let (rc, doc, _, _) = peer_env(
        &nodes,
        &["10.40.0.1:7049"],
        &["--insecure"],
        &[("PEERPATH_PROBE_KEY", "")],
    );
    assert_eq!(rc, 0, "{doc:#}");
    served(&doc);
    assert_eq!(listener.finish().status.code(), Some(0));
}

#[test]
fn listen_binds_the_address_it_is_told() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("b");
    let listener = Listener::start_with(&nodes, 7050, "10", &[], &["--bind", "10.40.0.1"]);
    // On a's own loopback nothing listens: --bind 10.40.0.1 binds that address only.
    let mut c = Nodes::cmd(
        &nodes.a,
        &[
            "probe",
            "--peer",
            "127.0.0.1:7050",
            "--fabric",
            "ofi",
            "--memory",
            "host",
            "--format",
            "json",
            "--duration",
            "1",
        ],
    );
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("connection refused"),
        "{out:?}"
    );
    let (rc, doc, _) = peer(&nodes, &["10.40.0.1:7050"], &[]);
    assert_eq!(rc, 0, "{doc:#}");
    served(&doc);
    let out = listener.finish();
    // The fabric endpoint is on the bound address too.
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("over 10.40.0.1:"),
        "{out:?}"
    );
}

/// The peer's side of the trickle: a listener (a stranger's server in namespace a) that
/// accepts and then sends one byte a second, never a whole line, does not hold the peer past
/// its `--timeout`: the rail is named unreachable with the wait that ran out.
#[test]
fn a_trickling_listener_does_not_hold_the_peer_past_its_timeout() {
    if !available() {
        return;
    }
    let nodes = Nodes::new("p");
    let server = "import socket,time\n\
                  s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
                  s.bind(('10.40.0.1', 7051)); s.listen(4); print('up', flush=True)\n\
                  c,_=s.accept()\n\
                  for i in range(30):\n\
                  \x20   c.send(b'C'); time.sleep(1)\n";
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &nodes.a, "python3", "-c", server])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut trickle = c.spawn().expect("python3 (the CI image has it)");
    let mut up = String::new();
    BufReader::new(trickle.stdout.take().unwrap())
        .read_line(&mut up)
        .unwrap();
    assert_eq!(up.trim(), "up");
    let (rc, doc, took, err) = peer_env(&nodes, &["10.40.0.1:7051"], &["--timeout", "2"], &[]);
    let _ = trickle.kill();
    let _ = trickle.wait();
    assert_eq!(rc, 3, "{err}\n{doc:#}");
    let r0 = rows(&doc, 0);
    assert!(!r0.is_empty(), "{doc:#}");
    for r in &r0 {
        let why = r["reason"].as_str().unwrap_or_default();
        assert!(why.contains("no answer in time"), "{r:#}");
    }
    assert!(took < Duration::from_secs(5), "took {took:?}");
}
