//! `peerpath probe` end to end: real bytes over libfabric's tcp provider on 127.0.0.1 with
//! host memory (moved, verified, bandwidth > 0), injected faults detected, and the "cannot
//! run" paths (no kernel RDMA, missing libibverbs/libfabric, no CUDA) giving a clear message
//! and exit code 3 without a panic; the JSON is a typed `ProbeReport` that `audit --evidence`
//! reads back, and a `peerpath.probe/1` document (string NIC) is refused with a clear error.

use serde_json::Value;
use std::process::{Command, Output};

fn probe(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_peerpath"));
    c.arg("probe").args(args);
    c.env_remove("PEERPATH_PROBE_FAULT");
    c.env_remove("PEERPATH_PROBE_KEY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run peerpath")
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn no_panic(o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "panic in stderr: {err}");
}

const TCP: &[&str] = &[
    "--fabric",
    "ofi",
    "--provider",
    "tcp",
    "--memory",
    "host",
    "--duration",
    "3",
    "--sizes",
    "65536,1048576",
    "--format",
    "json",
];

#[test]
fn tcp_loopback_moves_and_verifies_real_bytes() {
    let o = probe(TCP, &[]);
    no_panic(&o);
    let v = json(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(v["schema"], peerpath::probe::PROBE_SCHEMA);
    let results = v["results"].as_array().unwrap();
    // 2 ops × 2 sizes, host to host.
    assert_eq!(results.len(), 4);
    let mut ops = std::collections::BTreeSet::new();
    for r in results {
        // The NIC is a typed reference: fabric, provider and the domain libfabric opened.
        assert_eq!(r["nic"]["fabric"], "ofi", "{r}");
        assert_eq!(r["nic"]["provider"], "tcp", "{r}");
        assert!(r["nic"]["domain"].is_string(), "{r}");
        assert_eq!(r["memory"], "host");
        assert_eq!(r["direction"], "host_to_host");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["verdict"], "confirmed", "{r}");
        // The default depth, 16, fits the buffers at both sizes (16 MiB per side).
        assert_eq!(r["ops_in_flight"], 16, "{r}");
        let bytes = r["bytes"].as_u64().unwrap();
        let msg = r["message_bytes"].as_u64().unwrap();
        assert!(bytes >= msg && bytes.is_multiple_of(msg), "{r}");
        let secs = r["seconds"].as_f64().unwrap();
        let gbps = r["gbytes_per_s"].as_f64().unwrap();
        assert!(secs > 0.0 && gbps > 0.0, "{r}");
        // gbytes_per_s is bytes / seconds / 1e9.
        assert!(
            (gbps - bytes as f64 / secs / 1e9).abs() < 1e-6 * gbps.max(1.0),
            "{r}"
        );
        assert!(r["gpu"].is_null());
        ops.insert(r["op"].as_str().unwrap().to_string());
    }
    assert_eq!(ops.into_iter().collect::<Vec<_>>(), ["read", "write"]);
    // The whole run's wall time is reported beside the timed windows it holds (each cell's
    // warm-up, a fifth of its window, is outside `seconds` and inside the wall time).
    let wall = v["wall_seconds"].as_f64().expect("wall_seconds");
    let timed: f64 = results.iter().map(|r| r["seconds"].as_f64().unwrap()).sum();
    assert!(
        wall > 1.1 * timed && timed > 0.0,
        "wall {wall} s, timed {timed} s"
    );
}

#[test]
fn depth_one_moves_one_message_at_a_time_and_is_recorded() {
    let mut args = TCP.to_vec();
    args.extend(["--depth", "1"]);
    let o = probe(&args, &[]);
    no_panic(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        assert_eq!(r["ops_in_flight"], 1, "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["verdict"], "confirmed", "{r}");
        assert!(r["gbytes_per_s"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn depth_outside_1_to_64_is_a_usage_error() {
    for bad in ["0", "65", "-1", "many"] {
        // `--depth=-1`: given apart, `-1` would read as an unknown flag, not as a depth.
        let arg = format!("--depth={bad}");
        let o = probe(&["--fabric", "ofi", "--memory", "host", &arg], &[]);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(2), "--depth {bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--depth"), "--depth {bad}: {err}");
        assert!(o.stdout.is_empty(), "--depth {bad}: nothing measured");
    }
    let o = probe(
        &["--fabric", "ofi", "--memory", "host", "--depth", "65"],
        &[],
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("1..=64"),
        "the range is named: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn injected_corruption_and_truncation_are_detected() {
    if !cfg!(debug_assertions) {
        return; // the fault hook exists only in debug builds
    }
    for fault in ["corrupt", "truncate"] {
        let o = probe(TCP, &[("PEERPATH_PROBE_FAULT", fault)]);
        no_panic(&o);
        let v = json(&o);
        assert_eq!(o.status.code(), Some(1), "{fault}");
        for r in v["results"].as_array().unwrap() {
            assert_eq!(r["verified"], false, "{fault}: {r}");
            assert_eq!(r["verdict"], "transfer_failed", "{fault}: {r}");
            assert!(
                r["reason"].as_str().unwrap().contains("first wrong byte"),
                "{fault}: {r}"
            );
        }
    }
}

#[test]
fn verbs_without_rdma_says_so_and_exits_3() {
    let o = probe(
        &["--fabric", "verbs", "--memory", "host", "--format", "json"],
        &[],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(3));
    let v = json(&o);
    let msg = v["error"].as_str().unwrap();
    // No kernel RDMA (ENOSYS), no device, or no libibverbs: each is named.
    assert!(
        msg.contains("ENOSYS")
            || msg.contains("no RDMA device")
            || msg.contains("libibverbs1")
            || msg.contains("RDMA"),
        "{msg}"
    );
}

#[test]
fn missing_libraries_name_their_packages() {
    if !cfg!(debug_assertions) {
        return; // library override honoured only in debug builds
    }
    let o = probe(
        &["--fabric", "verbs", "--memory", "host"],
        &[("PEERPATH_LIBIBVERBS", "/nonexistent/libibverbs.so.1")],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("libibverbs.so.1") && err.contains("libibverbs1 (rdma-core)"),
        "{err}"
    );

    let o = probe(
        TCP,
        &[("PEERPATH_LIBFABRIC", "/nonexistent/libfabric.so.1")],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(3));
    let v = json(&o);
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.contains("libfabric.so.1") && msg.contains("libfabric1"),
        "{msg}"
    );
}

#[test]
fn unknown_provider_is_unavailable_not_a_crash() {
    let o = probe(
        &[
            "--fabric",
            "ofi",
            "--provider",
            "no-such-provider",
            "--memory",
            "host",
        ],
        &[],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no-such-provider"));
}

#[test]
fn without_cuda_the_cuda_probes_say_so() {
    // Is libcuda loadable here? (The probe checks the same way.)
    let has_cuda = ["libcuda.so.1", "libcuda.so"]
        .iter()
        .any(|n| unsafe { libloading::Library::new(n) }.is_ok());
    if has_cuda {
        return;
    }
    let o = probe(TCP, &[]);
    let v = json(&o);
    assert_eq!(v["cuda"]["available"], false);
    assert!(
        v["cuda"]["reason"]
            .as_str()
            .unwrap()
            .contains("libcuda.so.1")
    );
    // GPU memory asked for without CUDA: cannot run, and says why.
    let o = probe(
        &["--fabric", "ofi", "--provider", "tcp", "--memory", "cuda"],
        &[],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("libcuda.so.1") && err.contains("NVIDIA driver"),
        "{err}"
    );
}

#[test]
fn the_default_fabric_still_names_the_missing_gpu_runtime() {
    // With the default fabric (verbs) on a machine without kernel RDMA, libibverbs or an RDMA
    // device, the GPU runtime the user asked for is still what the message names first: on
    // this machine `--memory hip` once said only "the kernel has no RDMA support".
    let loads = |names: &[&str]| {
        names
            .iter()
            .any(|n| unsafe { libloading::Library::new(n) }.is_ok())
    };
    for (memory, libs, says) in [
        ("cuda", &["libcuda.so.1", "libcuda.so"][..], "libcuda.so.1"),
        (
            "hip",
            &["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"][..],
            "without ROCm there is no AMD GPU memory to probe",
        ),
    ] {
        if loads(libs) {
            continue;
        }
        let o = probe(&["--memory", memory, "--duration", "1"], &[]);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(3), "--memory {memory}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("--memory {memory}: ")) && err.contains(says),
            "--memory {memory}: {err}"
        );
    }
}

#[test]
fn ctrl_c_stops_the_run_and_releases_everything() {
    let child = Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args([
            "probe",
            "--fabric",
            "ofi",
            "--provider",
            "tcp",
            "--memory",
            "host",
            "--duration",
            "30",
            "--format",
            "json",
        ])
        .env_remove("PEERPATH_PROBE_FAULT")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(15),
        "did not stop promptly after SIGINT"
    );
    no_panic(&o);
    assert_eq!(
        o.status.code(),
        Some(130),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    assert_eq!(v["interrupted"], true);
    assert!(v["results"].as_array().unwrap().iter().any(
        |r| r["verdict"] == "not_run" && r["reason"].as_str().unwrap().contains("interrupted")
    ));
}

#[test]
fn probe_json_reads_back_as_typed_evidence() {
    let o = probe(TCP, &[]);
    no_panic(&o);
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    // Probe JSON → ProbeReport: the refs come back typed, and re-serialise to the same JSON.
    let report = peerpath::analysis::probe_report::ProbeReport::from_json("probe", &text).unwrap();
    assert_eq!(report.results.len(), 4);
    for r in &report.results {
        assert_eq!(
            r.nic.fabric,
            peerpath::analysis::probe_report::FabricKind::Ofi
        );
        assert_eq!(r.nic.provider.as_deref(), Some("tcp"));
        assert!(r.nic.domain.is_some() && r.nic.bdf.is_none() && r.gpu.is_none());
    }
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        serde_json::from_str::<Value>(&text).unwrap()
    );
    // … and the audit folds it in (host-memory cells carry no GPU evidence).
    let dir = tempfile::tempdir().unwrap();
    let ev = dir.path().join("probe.json");
    std::fs::write(&ev, &text).unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/hwloc/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"
    );
    let audit = |ev: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_peerpath"))
            .args(["audit", "--format", "json", "-i", fixture, "--evidence"])
            .arg(ev)
            .output()
            .unwrap()
    };
    let a = audit(&ev);
    assert_ne!(
        a.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert_eq!(json(&a)["schema"], "peerpath.audit/1");
    // An old `peerpath.probe/1` document, NIC as a string: refused, saying why.
    let old = dir.path().join("old.json");
    std::fs::write(
        &old,
        r#"{"schema":"peerpath.probe/1","results":[{"gpu":"0000:83:00.0","nic":"verbs:mlx4_0:1 (0000:81:00.0)","memory":"cuda","verdict":"bad_path"}]}"#,
    )
    .unwrap();
    let a = audit(&old);
    assert_eq!(a.status.code(), Some(2));
    let err = String::from_utf8_lossy(&a.stderr);
    assert!(
        err.contains("peerpath.probe/1 documents") && err.contains("re-run the probe"),
        "{err}"
    );
}

#[test]
fn probe_reads_its_input_as_every_topology_command_does() {
    // A fused two-tray NCCL XML: `--host` picks a tray (one that is not there is refused by
    // name before anything is loaded), `--pci-ids` and `--rdma-topo` are read as elsewhere.
    let fused = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/nccl/oci-gb300-2tray-fused.nccl-topo.xml"
    );
    let o = probe(&["-i", fused, "--host", "7"], &[]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--host 7: no such host"), "{err}");
    assert!(
        err.contains("0xb93bee07ef6f4564"),
        "the hosts are named: {err}"
    );
    let o = probe(
        &["-i", fused, "--rdma-topo", "/nonexistent/rdma_topo.json"],
        &[],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/nonexistent/rdma_topo.json"), "{err}");
    // A chosen host is loaded: the probe then fails for want of RDMA, not of a topology.
    let o = probe(
        &[
            "-i",
            fused,
            "--host",
            "1",
            "--pci-ids",
            "/dev/null",
            "--duration",
            "1",
        ],
        &[],
    );
    no_panic(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("no such host"), "{err}");
    assert_eq!(o.status.code(), Some(3), "{err}");
}

/// A listener whose `ERROR` text holds terminal escapes (OSC 52 writes the clipboard, `ESC[2J`
/// clears the screen): the peer shows it escaped on stderr and in its text output, never raw.
#[test]
fn a_listeners_error_text_reaches_the_terminal_escaped() {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let fake = std::thread::spawn(move || {
        for _ in 0..2 {
            let (mut s, _) = l.accept().unwrap();
            let _ = s.write_all(b"ERROR \x1b]52;c;cHduZWQ=\x07\x1b[2J\xc2\x9b31m pwned\r\n");
        }
    });
    let peer = format!("127.0.0.1:{port}");
    for format in ["json", "text"] {
        let o = probe(
            &[
                "--fabric",
                "ofi",
                "--provider",
                "tcp",
                "--memory",
                "host",
                "--duration",
                "1",
                "--timeout",
                "3",
                "--insecure",
                "--peer",
                &peer,
                "--format",
                format,
            ],
            &[],
        );
        no_panic(&o);
        let err = String::from_utf8_lossy(&o.stderr);
        if err.contains("libfabric.so.1") {
            eprintln!("SKIPPED: libfabric not installed");
            return;
        }
        assert_eq!(o.status.code(), Some(3), "{err}");
        assert!(err.contains("\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J"), "{err}");
        for out in [&o.stdout, &o.stderr] {
            assert!(
                !out.iter().any(|b| [0x1b, 0x07, b'\r'].contains(b)),
                "raw control bytes: {:?}",
                String::from_utf8_lossy(out)
            );
        }
        // C1 controls: escaped on stderr and in text; JSON into a pipe is data, as written.
        assert!(!err.contains('\u{9b}'), "{err}");
        if format == "text" {
            assert!(!String::from_utf8_lossy(&o.stdout).contains('\u{9b}'));
        }
    }
    fake.join().unwrap();
}

/// `--key-file` and `--insecure` set up the control connection across nodes: on a probe of
/// this node alone (no `--listen`, no `--peer`) they are refused as a usage error naming the
/// flags that need them, before anything is measured (they were accepted and ignored, so an
/// operator who meant `--peer` ran a local probe thinking the key was in use).
#[test]
fn key_file_and_insecure_without_listen_or_peer_are_refused() {
    let dir = std::env::temp_dir().join(format!("peerpath-probe-key-{}", std::process::id()));
    let _ = std::fs::write(&dir, "0123456789abcdef0123456789abcdef\n");
    let key = dir.display().to_string();
    for flags in [
        vec!["--key-file", key.as_str()],
        vec!["--insecure"],
        vec!["--insecure", "--key-file", key.as_str()],
    ] {
        let mut args = vec!["--fabric", "ofi", "--memory", "host", "--duration", "1"];
        args.extend(&flags);
        let o = probe(&args, &[]);
        no_panic(&o);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {err}");
        assert!(
            err.contains("--listen") && err.contains("--peer"),
            "{flags:?}: the error names what the flag needs: {err}"
        );
        assert!(o.stdout.is_empty(), "{flags:?}: nothing measured");
    }
    let _ = std::fs::remove_file(&dir);
}
