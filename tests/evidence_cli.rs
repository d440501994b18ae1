//! `peerpath evidence` and `audit --evidence LOG` / `audit --job` end to end, and
//! docs/evidence.md regenerated from the real fixtures (`PEERPATH_BLESS=1` rewrites it; without
//! it the test fails when the page and the binary disagree).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_peerpath"));
    c.current_dir(common::repo());
    // The job checks read this process's NCCL_*/CUDA_* variables: start from none.
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") || k.starts_with("CUDA_") {
            c.env_remove(k);
        }
    }
    c
}

fn run(c: &mut Command) -> (i32, String, String) {
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const OCI: &str = "fixtures/evidence/topology/oci-bm-gpu-h100-8.nccl-topo.xml";

fn findings(json: &str, id: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id)
        .cloned()
        .collect()
}

#[test]
fn ib_hca_prefix_on_oci_h100_names_the_eight_hcas() {
    let (code, out, err) = run(bin()
        .args(["audit", "--job", "-i", OCI, "--format", "json"])
        .env("NCCL_IB_HCA", "mlx5_1"));
    assert!(code == 0 || code == 1, "{err}");
    let f = findings(&out, "job-ib-hca");
    let info = f.iter().find(|x| x["severity"] == "info").unwrap();
    assert_eq!(
        info["summary"],
        "NCCL_IB_HCA=mlx5_1 selects 8 HCA(s) (names are prefixes): mlx5_1, mlx5_10, mlx5_12, mlx5_13, mlx5_14, mlx5_15, mlx5_16, mlx5_17"
    );
    assert!(f.iter().any(|x| {
        x["severity"] == "warning"
            && x["summary"]
                .as_str()
                .unwrap()
                .contains("is a prefix and also selects mlx5_10")
    }));
    // GPUs whose dual-port NIC lost both ports are named; 0000:0f:00.0 keeps mlx5_1.
    let lost: Vec<&str> = f
        .iter()
        .filter(|x| x["summary"].as_str().unwrap().contains("excludes"))
        .map(|x| x["subject"].as_str().unwrap())
        .collect();
    assert_eq!(lost, ["0000:2d:00.0", "0000:44:00.0", "0000:5b:00.0"]);
    // `=` makes it exact.
    let (_, out, _) = run(bin()
        .args(["audit", "--job", "-i", OCI, "--format", "json"])
        .env("NCCL_IB_HCA", "=mlx5_1"));
    let f = findings(&out, "job-ib-hca");
    assert!(f.iter().any(|x| {
        x["summary"]
            .as_str()
            .unwrap()
            .ends_with("selects 1 HCA(s) (`=`: exact names): mlx5_1")
    }));
}

#[test]
fn a_name_that_matches_no_hca_is_an_error() {
    let (code, out, _) = run(bin()
        .args(["audit", "--job", "-i", OCI, "--format", "json"])
        .env("NCCL_IB_HCA", "=mlx5_0,mlx5_99"));
    assert_eq!(code, 1);
    let f = findings(&out, "job-ib-hca");
    assert!(f.iter().any(|x| {
        x["severity"] == "error"
            && x["summary"]
                .as_str()
                .unwrap()
                .contains("entry `mlx5_99` matches no HCA")
    }));
    let (code, out, _) = run(bin()
        .args(["audit", "--job", "-i", OCI, "--format", "json"])
        .env("NCCL_IB_HCA", "mlx6"));
    assert_eq!(code, 1);
    assert!(findings(&out, "job-ib-hca").iter().any(|x| {
        x["summary"]
            .as_str()
            .unwrap()
            .contains("selects no HCA of the 16")
    }));
    // With -i the live checks say unknown, never pass.
    for id in [
        "job-rdma-devices",
        "job-memlock",
        "job-shm",
        "job-cpuset",
        "job-peer-memory",
    ] {
        let f = findings(&out, id);
        assert_eq!(f.len(), 1, "{id}");
        assert_eq!(f[0]["severity"], "unknown", "{id}");
    }
}

#[test]
fn job_variables_against_the_topology() {
    let (code, out, _) = run(bin()
        .args(["audit", "--job", "-i", OCI, "--format", "json"])
        .env("CUDA_VISIBLE_DEVICES", "0,9,1")
        .env("NCCL_NET_GDR_LEVEL", "4")
        .env("NCCL_IB_DISABLE", "1")
        .env(
            "NCCL_TOPO_FILE",
            "fixtures/nccl/azure-ndv4-a100.nccl-topo.xml",
        ));
    assert_eq!(code, 1);
    let cvd = findings(&out, "job-cuda-visible");
    assert!(cvd.iter().any(|x| {
        x["severity"] == "error"
            && x["summary"]
                .as_str()
                .unwrap()
                .contains("index 9 is not a GPU of the 8")
    }));
    let lv = findings(&out, "job-nccl-levels");
    assert!(
        lv[0]["summary"]
            .as_str()
            .unwrap()
            .contains("PHB in 2.6–2.7, PXB in 2.8–2.25, PIX in 2.26–2.30")
    );
    assert_eq!(findings(&out, "job-net")[0]["severity"], "error");
    let tf = findings(&out, "job-topo-file");
    assert_eq!(tf[0]["severity"], "warning", "{tf:#?}");
    let (_, out, _) = run(bin()
        .args(["audit", "--job", "-i", OCI, "--format", "json"])
        .env("NCCL_TOPO_FILE", OCI));
    assert_eq!(findings(&out, "job-topo-file")[0]["severity"], "info");
    let (_, out, _) = run(bin()
        .args(["audit", "--job", "-i", OCI, "--format", "json"])
        .env("NCCL_TOPO_FILE", "/no/such/file.xml"));
    assert_eq!(findings(&out, "job-topo-file")[0]["severity"], "error");
}

#[test]
fn live_job_checks_run_here_and_say_what_they_read() {
    let (code, out, err) = run(bin()
        .args(["audit", "--job", "--format", "json"])
        .env("NCCL_SOCKET_IFNAME", "=lo"));
    assert!(code == 0 || code == 1, "{err}");
    for id in [
        "job-rdma-devices",
        "job-memlock",
        "job-shm",
        "job-cpuset",
        "job-peer-memory",
    ] {
        assert!(!findings(&out, id).is_empty(), "{id}: {out}");
    }
    let s = findings(&out, "job-socket-ifname");
    assert!(
        s[0]["summary"]
            .as_str()
            .unwrap()
            .contains("selects lo (from /sys/class/net)"),
        "{s:#?}"
    );
}

/// The hgx-h100 synthesized node with ACS redirect on the switch port above GPU 3a:00.0 and its
/// NIC mlx5_2 (the golden harness's fault).
fn hgx_acs(dir: &Path) -> PathBuf {
    let p = dir.join("hgx-h100-acs.tar.gz");
    let (code, _, err) = run(bin()
        .args([
            "fixture",
            "hgx-h100",
            "--fault",
            "acs-redirect=0000:39:01.0",
            "-o",
        ])
        .arg(&p));
    assert_eq!(code, 0, "{err}");
    p
}

/// NCCL issue 707's log (GDR on every channel) with its busIds and NIC names rewritten to the
/// hgx-h100 node's, followed by the AKS IPoIB run's all_reduce table (3.15 GB/s): a job with
/// GDR on and bandwidth collapsed, written on host `host`.
fn gdr_on_but_slow(host: &str) -> String {
    let log = std::fs::read_to_string(
        common::repo()
            .join("fixtures/evidence/nccl-issue-707-8xa100-18nic.nccl-tests+nccl-info.EXCERPT.log"),
    )
    .unwrap();
    let mut s = log.replace("10-90-43-152", host);
    for (a, b) in [
        ("87000", "18000"),
        ("8d000", "29000"),
        ("c7000", "3a000"),
        ("ca000", "4b000"),
    ] {
        s = s.replace(a, b);
    }
    for (a, b) in [
        ("mlx5_10:", "mlx5_2:"),
        ("mlx5_11:", "mlx5_3:"),
        ("mlx5_12:", "mlx5_4:"),
        ("mlx5_14:", "mlx5_5:"),
        ("mlx5_15:", "mlx5_6:"),
        ("mlx5_16:", "mlx5_7:"),
        ("mlx5_8:", "mlx5_0:"),
        ("mlx5_9:", "mlx5_1:"),
    ] {
        s = s.replace(a, b);
    }
    let aks = std::fs::read_to_string(
        common::repo()
            .join("fixtures/evidence/aks-rdma-infiniband-nd96asr-v4-a100.tests-expected-output.md"),
    )
    .unwrap();
    let start = aks.find("### 3.1. mpijob").unwrap();
    let table: String = aks[start..]
        .lines()
        .skip_while(|l| !l.starts_with("#    "))
        .take_while(|l| !l.starts_with("```"))
        .map(|l| format!("{l}\n"))
        .collect();
    s.push_str(&table);
    s
}

#[test]
fn gdr_on_but_slow_joined_to_its_snapshot() {
    let t = tempfile::tempdir().unwrap();
    let snap = hgx_acs(t.path());
    let a = t.path().join("node-a.log");
    let b = t.path().join("node-b.log");
    std::fs::write(&a, gdr_on_but_slow("node-a")).unwrap();
    std::fs::write(&b, gdr_on_but_slow("node-b")).unwrap();
    let (code, out, err) = run(bin()
        .arg("evidence")
        .arg(&a)
        .arg(&b)
        .arg("-i")
        .arg(&snap)
        .args(["--format", "json"]));
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["capacity"]["expected_busbw"], 384.0);
    for bw in v["bandwidth"].as_array().unwrap() {
        assert_eq!(bw["verdict"], "broken");
        let ex: Vec<&str> = bw["explanation"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert!(ex.iter().any(|e| e.starts_with("GDR is on")), "{ex:#?}");
        assert!(
            ex.iter()
                .any(|e| e.contains("ACS redirects") && e.contains("0000:39:01.0")),
            "{ex:#?}"
        );
    }
    // Two identical hosts against one snapshot: each verdict says where it was seen.
    let j = v["joined"].as_array().unwrap();
    let g = j.iter().find(|x| x["gpu"] == "0000:3a:00.0").unwrap();
    assert_eq!(g["hosts"], serde_json::json!(["node-a", "node-b"]));
    assert_eq!(g["gdr"], "used");
    assert!(
        g["sentence"]
            .as_str()
            .unwrap()
            .contains("used mlx5_2 (PIX from this GPU) with GDR")
    );
    assert!(g["sentence"].as_str().unwrap().contains("ACS redirects"));
    let r0 = j.iter().find(|x| x["gpu"] == "0000:18:00.0").unwrap();
    assert!(
        r0["sentence"]
            .as_str()
            .unwrap()
            .contains("not the NIC it used")
    );
    // The same log folded into the audit.
    let (code, out, _) = run(bin()
        .args(["audit", "--format", "json", "-i"])
        .arg(&snap)
        .arg("--evidence")
        .arg(&a));
    assert_eq!(code, 1);
    let bw = findings(&out, "evidence-bandwidth");
    assert_eq!(bw[0]["severity"], "error");
    assert!(
        findings(&out, "evidence-gdr")
            .iter()
            .any(|f| f["severity"] == "info" && f["subject"] == "0000:3a:00.0")
    );
}

#[test]
fn no_module_joined_says_load_peermem() {
    let t = tempfile::tempdir().unwrap();
    // hgx-h100 without a peer module (the fixture's `no-peermem` fault).
    let snap = t.path().join("nopeer.tar.gz");
    let (code, _, err) = run(bin()
        .args(["fixture", "hgx-h100", "--fault", "no-peermem", "-o"])
        .arg(&snap));
    assert_eq!(code, 0, "{err}");
    let log = std::fs::read_to_string(
        common::repo()
            .join("fixtures/evidence/nccl-issue-899-2node-containers.nccl-info.EXCERPT.log"),
    )
    .unwrap()
    .replace("1a000", "4b000");
    let p = t.path().join("899.log");
    std::fs::write(&p, log).unwrap();
    let (_, out, _) = run(bin().arg("evidence").arg(&p).arg("-i").arg(&snap));
    assert!(
        out.contains("GPU 0000:4b:00.0 used NET/0 (name not in the log) without GDR"),
        "{out}"
    );
    // The snapshot has the open kernel module only: the fix names dma-buf and nvidia-peermem.
    assert!(
        out.contains("only dma-buf (open kernel module) is available"),
        "{out}"
    );
    assert!(
        out.contains("upgrade NCCL, or load nvidia-peermem"),
        "{out}"
    );
}

/// NVIDIA/nccl#1453: GDR on (every NET channel `/GDRDMA`) and busbw falling from 29.5 GB/s at
/// 32 MiB to about 5 GB/s from 64 MiB on. Joined to a topology (OCI's NCCL XML), the run is
/// judged against that node's NICs, and the collapse is a finding with both figures.
#[test]
fn a_collapse_at_large_sizes_joined_to_a_topology_is_a_finding_with_both_figures() {
    let log = "tests/data/evidence/nccl-1453-h100clust-table-collapse-at-large-sizes.log";
    let (code, out, err) = run(bin().args(["evidence", log, "-i", OCI, "--format", "json"]));
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let b = &v["bandwidth"][0];
    assert_eq!(b["collapse"]["peak"], serde_json::json!([29.5, 33554432]));
    assert_eq!(b["collapse"]["large"], serde_json::json!([5.33, 536870912]));
    assert_eq!(b["against"], "nics");
    assert_eq!(b["verdict"], "broken", "{b:#}");
    // The NVLinks of the node: 18 per H100 × NCCL's 20.6 GB/s (the `NVL[370.8]` of its
    // topology print), for runs on one node.
    assert_eq!(v["nvlink"]["links"], 18);
    assert_eq!(
        v["nvlink"]["expected_busbw"].as_f64().map(|x| x.round()),
        Some(371.0)
    );
    // The line the table parser could not read (a row cut at its start) is counted and shown.
    assert_eq!(v["inputs"][0]["unrecognised_lines"]["count"], 1);
    assert_eq!(v["inputs"][0]["unrecognised_lines"]["lines"][0]["line"], 1);
    // In the audit: an evidence-bandwidth finding naming both figures.
    let (_, out, err) =
        run(bin().args(["audit", "-i", OCI, "--evidence", log, "--format", "json"]));
    let f = findings(&out, "evidence-bandwidth");
    assert_eq!(f.len(), 1, "{err}{out}");
    let s = f[0]["summary"].as_str().unwrap();
    assert!(
        s.contains("peak 29.5 GB/s at 32 MiB, 5.3 GB/s at 512 MiB"),
        "{s}"
    );
    assert_eq!(f[0]["severity"], "error");
    // Without a topology or NIC speeds the run is not judged, and the collapse is still a finding.
    let (code, out, _) = run(bin().args(["evidence", log]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("collapse at large sizes"), "{out}");
}

/// A job's NCCL_IB_HCA read as its release reads it: an empty port is port 0 (no IB port)
/// before NCCL 2.30.7 and any port after; `=` is no prefix before 2.5.
#[test]
fn ib_hca_read_differently_by_releases_is_said() {
    let (_, out, err) = run(bin()
        .args(["audit", "--job", "-i", OCI, "--format", "json"])
        .env("NCCL_IB_HCA", "=mlx5_0:"));
    let f = findings(&out, "job-ib-hca");
    let w = f
        .iter()
        .find(|x| x["summary"].as_str().unwrap().contains("read differently"))
        .unwrap_or_else(|| panic!("{err}{f:#?}"));
    assert_eq!(
        w["summary"],
        "NCCL_IB_HCA==mlx5_0: is read differently by NCCL releases: NCCL 2.3–2.4 select none; NCCL 2.5–2.30.4 select none; NCCL 2.30.7+ select mlx5_0"
    );
}

#[test]
fn bad_inputs_are_clear_errors() {
    let (code, _, err) = run(bin().args(["evidence", "/no/such/log"]));
    assert_eq!(code, 2);
    assert!(err.contains("cannot read evidence /no/such/log"), "{err}");
    let t = tempfile::tempdir().unwrap();
    let j = t.path().join("a.json");
    std::fs::write(&j, r#"{"schema":"peerpath.audit/1"}"#).unwrap();
    let (code, _, err) = run(bin().arg("evidence").arg(&j));
    assert_eq!(code, 2);
    assert!(err.contains("not a probe report"), "{err}");
    let (code, _, err) =
        run(bin().args(["evidence", "fixtures/evidence/README.md", "--nic-gbps", "8"]));
    assert_eq!(code, 2);
    assert!(err.contains("N×SPEED"), "{err}");
}

/// `audit --evidence LOG` runs the audit once: the logs are joined to the audit's own report and
/// folded into it. That one pass gives the report the audit that folds already-joined evidence
/// in while it runs gives, GDR and bandwidth findings included.
#[test]
fn audit_evidence_in_one_pass_equals_folding_it_during_the_audit() {
    use peerpath::analysis::audit::{self, AuditOptions, CheckId, join::Topo};
    use peerpath::analysis::classify::{Classifier, ClassifyOptions};
    use peerpath::analysis::evidence::{self, Input, Options};
    let t = tempfile::tempdir().unwrap();
    let snap = hgx_acs(t.path());
    let log = t.path().join("gdr-on-but-slow.log");
    std::fs::write(&log, gdr_on_but_slow("node-a")).unwrap();
    let topo = peerpath::sources::load(Some(&snap), &Default::default()).unwrap();
    let cl = Classifier::new(&topo, &ClassifyOptions::default());
    let joined = Topo::with_report(&cl, audit::run_with(&cl, &AuditOptions::default()));
    let ev = evidence::analyze(
        &[Input::load(&log).unwrap()],
        Some(&joined),
        &Options { nic: None },
    );
    let once = audit::add_job_evidence(&topo, joined.into_report(), &ev);
    let folded = audit::run(
        &topo,
        &AuditOptions {
            job_evidence: Some(ev),
            ..Default::default()
        },
    );
    assert_eq!(
        serde_json::to_value(&once).unwrap(),
        serde_json::to_value(&folded).unwrap()
    );
    for id in [CheckId::EvidenceGdr, CheckId::EvidenceBandwidth] {
        assert!(once.findings.iter().any(|f| f.id == id), "{id:?}");
    }
}

#[test]
fn nothing_read_has_its_own_headline_and_exit_code() {
    let t = tempfile::tempdir().unwrap();
    // A prose summary: no NCCL line, table or perftest run.
    let (code, out, _) = run(bin().args([
        "evidence",
        "fixtures/evidence/nccl-issue-2409-2x8xh100-8x400g-roce.nccl-tests+perftest-summary.EXCERPT.md",
    ]));
    assert_eq!(code, 3, "{out}");
    let head = out.lines().next().unwrap();
    assert!(head.starts_with("NOTHING READ: "), "{head}");
    assert!(
        head.contains("not read: 30 line(s) not understood, no NCCL line"),
        "{head}"
    );
    // A log whose only network line is refused (a channel line whose channel number is not a
    // number): its process and NIC list were read, so it is not "nothing read" (issue 51) but
    // nothing judged; the headline names the refused line.
    let log = t.path().join("refused.log");
    std::fs::write(
        &log,
        "h1:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>\n\
         h1:10:11 [0] NCCL INFO Channel x0/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n",
    )
    .unwrap();
    let (code, out, _) = run(bin().arg("evidence").arg(&log));
    assert_eq!(code, 0, "{out}");
    let head = out.lines().next().unwrap();
    assert!(
        head.starts_with("NOTHING JUDGED (1 process(es) and 1 rank(s)/GPU(s) read")
            && head
                .contains("not read: 1 line(s) refused (line 2: channel number is not a number)"),
        "{head}"
    );
    // A read log keeps 0 and says what it refused.
    std::fs::write(
        &log,
        "h1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n\
         h1:10:11 [0] NCCL INFO Channel x1/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n",
    )
    .unwrap();
    let (code, out, _) = run(bin().arg("evidence").arg(&log));
    assert_eq!(code, 0, "{out}");
    let head = out.lines().next().unwrap();
    assert!(
        head.starts_with("NO PROBLEM SHOWN: GDR used on 1")
            && head.contains("; not read: 1 line(s) refused"),
        "{head}"
    );
}

// ---- docs/evidence.md ----

/// (title, what it shows, arguments after `peerpath evidence`).
const EXAMPLES: &[(&str, &str, &[&str])] = &[
    (
        "GDR silently off (NVIDIA/nccl#1412)",
        "Channels `via NET/IB/3` without `/GDRDMA` on complete lines: off; the log does not say why. 33 GB/s average all_gather; judged against 4×200 Gb/s (an assumption for the example: the excerpt does not list all NICs).",
        &[
            "fixtures/evidence/nccl-issue-1412-swat1-8xa100-hdr200.nccl-tests+nccl-info.EXCERPT.log",
            "--nic-gbps",
            "4x200",
        ],
    ),
    (
        "No peer-memory module (NVIDIA/nccl#899)",
        "`GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)` names the cause on one container; the other printed no per-NIC line, so its cause is not borrowed.",
        &["fixtures/evidence/nccl-issue-899-2node-containers.nccl-info.EXCERPT.log"],
    ),
    (
        "Per-GPU split (DeepLearningExamples#383)",
        "The distance codes decoded with the 2.6–2.7 numbering, which the echoed `NCCL_NET_GDR_LEVEL=PHB` compared as level 4 pins down.",
        &[
            "fixtures/evidence/deeplearningexamples-issue-383-node-1-4gpu-1hca.nccl-info.EXCERPT.log",
        ],
    ),
    (
        "No RDMA at all (NVIDIA/nccl#952)",
        "`via NET/Socket/3`.",
        &["fixtures/evidence/nccl-issue-952-ib-cluster-socket-fallback.nccl-info.EXCERPT.log"],
    ),
    (
        "PIX printed as PHB (NVIDIA/nccl#1519)",
        "The topology print puts GPU/84000 and NIC/86000 (NET/5) under one switch; the path print routes them through the CPU.",
        &["fixtures/evidence/nccl-issue-1519-nathan-h100-1-8nic.nccl-topo-print.EXCERPT.log"],
    ),
    (
        "GDR used, then completion errors (NVIDIA/nccl#707)",
        "NCCL 2.7.6: every channel `/GDRDMA`; NICs named from the `NET/IB : Using` list.",
        &["fixtures/evidence/nccl-issue-707-8xa100-18nic.nccl-tests+nccl-info.EXCERPT.log"],
    ),
    (
        "GDR used at PHB (NVIDIA/nccl-tests#350)",
        "Dated 2.12–2.18.1 by its line forms.",
        &["fixtures/evidence/nccl-tests-issue-350-n013.nccl-info.EXCERPT.log"],
    ),
    (
        "Forced off, then a hang (NVIDIA/nccl#1737)",
        "Two runs; the first sets `NCCL_NET_GDR_LEVEL=0` on its command line. No channel line survives: unknown, not off.",
        &["fixtures/evidence/nccl-issue-1737-gh-3714u06-8xh100-ib.nccl-info.EXCERPT.log"],
    ),
    (
        "Healthy reference (NVIDIA/nccl-tests#119)",
        "4×HDR200 per node: 96 GB/s is the target.",
        &[
            "fixtures/evidence/nccl-tests-issue-119-pod01-8xa100-4xhdr200.nccl-tests.EXCERPT.txt",
            "--nic-gbps",
            "4x200",
        ],
    ),
    (
        "Good and bad on the same hardware (Azure/aks-rdma-infiniband)",
        "SR-IOV RDMA: 187 GB/s; IPoIB: 3.15 GB/s.",
        &[
            "fixtures/evidence/aks-rdma-infiniband-nd96asr-v4-a100.tests-expected-output.md",
            "--nic-gbps",
            "8x200",
        ],
    ),
    (
        "perftest GPU far below host (Mellanox SR-IOV guide)",
        "`--use_cuda` 10.5 vs host 92.6 Gb/s, with perftest's relaxed-ordering warning.",
        &["fixtures/evidence/mellanox-sriov-roce-doc-t4.ib_write_bw-host-vs-use_cuda.EXCERPT.txt"],
    ),
    (
        "perftest on different machines (T9k guide)",
        "82 %, but host and GPU runs are on different pods: indicative only.",
        &[
            "fixtures/evidence/t9k-network-operator-doc-a100-ib.ib_write_bw-host-vs-use_cuda.EXCERPT.txt",
        ],
    ),
    (
        "A collapse at large sizes with GDR on, joined to a topology (NVIDIA/nccl#1453)",
        "The all_reduce table of a job whose every NET channel is `/GDRDMA` (the thread's other excerpt, `tests/data/evidence/nccl-1453-h100clust-ibext-v8-gdrdma.log`): busbw falls from 29.5 GB/s at 32 MiB to 5.3 GB/s at 512 MiB. Judged against OCI's H100 node (its published NCCL XML) for the example: broken, and the collapse is named with both figures. Its first line, the tail of a row cut at its start, is counted as not understood.",
        &[
            "tests/data/evidence/nccl-1453-h100clust-table-collapse-at-large-sizes.log",
            "-i",
            OCI,
        ],
    ),
    (
        "A prose summary (NVIDIA/nccl#2409)",
        "Nothing is read from a summary table.",
        &[
            "fixtures/evidence/nccl-issue-2409-2x8xh100-8x400g-roce.nccl-tests+perftest-summary.EXCERPT.md",
        ],
    ),
    (
        "A topology matrix (NVIDIA/nccl#1737, #707)",
        "`nvidia-smi topo -m` text is not evidence of a run.",
        &[
            "fixtures/evidence/nccl-issue-1737-gh-3714u06-8xh100-ib.nvidia-smi-topo-m.EXCERPT.txt",
            "fixtures/evidence/nccl-issue-707-8xa100-18nic.nvidia-smi-topo-m.EXCERPT.txt",
        ],
    ),
];

const INTRO: &str = include_str!("evidence_doc_intro.md");

fn generate() -> String {
    let mut doc = String::from(INTRO);
    for (title, what, args) in EXAMPLES {
        let (_, out, err) = run(bin().arg("evidence").args(*args));
        assert!(err.is_empty(), "{title}: {err}");
        doc.push_str(&format!(
            "\n### {title}\n\n{what}\n\n```console\n$ peerpath evidence {}\n{out}```\n",
            args.join(" ")
        ));
    }
    // Joined to a snapshot: GDR on but slow.
    let t = tempfile::tempdir().unwrap();
    let snap = hgx_acs(t.path());
    let log = t.path().join("gdr-on-but-slow.log");
    std::fs::write(&log, gdr_on_but_slow("node-a")).unwrap();
    let (_, out, _) = run(bin().arg("evidence").arg(&log).arg("-i").arg(&snap));
    let out = out
        .replace(&snap.display().to_string(), "hgx-h100-acs.tar.gz")
        .replace(&log.display().to_string(), "gdr-on-but-slow.log");
    doc.push_str(&format!(
        "\n### GDR on and still slow, joined to its snapshot\n\n`hgx-h100-acs.tar.gz` is `peerpath fixture hgx-h100 --fault acs-redirect=0000:39:01.0`; `gdr-on-but-slow.log` is NVIDIA/nccl#707's log with its busIds and NIC names rewritten to that node's, followed by the AKS IPoIB all_reduce table (tests/evidence_cli.rs builds both).\n\n```console\n$ peerpath evidence gdr-on-but-slow.log -i hgx-h100-acs.tar.gz\n{out}```\n"
    ));
    // The job's environment.
    let (_, out, _) = run(bin()
        .args(["audit", "--job", "-i", OCI])
        .env("NCCL_IB_HCA", "mlx5_1")
        .env("CUDA_VISIBLE_DEVICES", "0,1,2,3"));
    // Each `job-` finding with its `env` evidence lines (other checks cite the environment too).
    let mut in_job = false;
    let job: Vec<&str> = out
        .lines()
        .filter(|l| {
            if l.trim_start().starts_with('[') {
                in_job = l.contains("[job-");
                return in_job;
            }
            in_job && l.trim_start().starts_with("env ")
        })
        .collect();
    doc.push_str(&format!(
        "\n### The job's environment on OCI's H100 node\n\n`{OCI}` is `oracle-quickstart/oci-hpc`'s published topology (mlx5_2 and mlx5_11 are not compute HCAs and are absent). The `job-` findings of:\n\n```console\n$ NCCL_IB_HCA=mlx5_1 CUDA_VISIBLE_DEVICES=0,1,2,3 peerpath audit --job -i {OCI}\n{}\n```\n",
        job.join("\n")
    ));
    doc
}

#[test]
fn docs_evidence_md_shows_each_input_and_its_verdict() {
    let want = generate();
    let p = common::repo().join("docs/evidence.md");
    if std::env::var_os("PEERPATH_BLESS").is_some() {
        std::fs::write(&p, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&p).unwrap_or_default();
    if have != want {
        let first = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "docs/evidence.md is stale (first difference at line {}): regenerate with `PEERPATH_BLESS=1 cargo test --test evidence_cli docs_evidence`\nhave: {:?}\nwant: {:?}",
            first + 1,
            have.lines().nth(first),
            want.lines().nth(first)
        );
    }
}
