//! Issue 51 ([texts-real]): job logs as operators publish them, 2024–2026 — each reading a real
//! published log (fixtures/evidence/, tests/data/evidence/, with their sources in the READMEs
//! and manifest there) and checking what the issue found peerpath got wrong.

use peerpath::analysis::evidence::{self, EvidenceReport, Gdr, Input, Options};
use peerpath::render::evidence::{EXIT_NOTHING_READ, exit_code, nothing_read, verdict_line};

mod common;

fn report_of(name: &str, bytes: &[u8]) -> EvidenceReport {
    let i = Input::from_bytes(name, bytes).unwrap();
    evidence::analyze(&[i], None, &Options { nic: None })
}

fn report(rel: &str) -> EvidenceReport {
    let bytes = std::fs::read(common::repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    report_of(rel, &bytes)
}

/// Logs whose processes, ranks and NICs are read but whose GDR no line shows: an RCCL init log
/// (ROCm/rccl PR #2078), a job that failed at bootstrap (sgl-project/sglang#6017), an
/// nccl-tests `# Using devices` header without its table (NVIDIA/nccl-tests#252). Before: each
/// was `NOTHING READ`, exit 3 — as if the reader had found nothing.
#[test]
fn a_log_whose_processes_were_read_is_never_nothing_read() {
    for (rel, procs, ranks) in [
        (
            "fixtures/evidence/rccl-pr-2078-mi300x-ainic-ionic-roce-init-only.EXCERPT.log",
            2,
            2,
        ),
        (
            "fixtures/evidence/sglang-issue-6017-ibext-v8-renamed-hcas-bootstrap-failure.EXCERPT.log",
            4,
            4,
        ),
        (
            "tests/data/evidence/nccl-tests-252-kolyoz1-h100-header.log",
            0,
            4,
        ),
    ] {
        let r = report(rel);
        let n: usize = r.inputs.iter().map(|i| i.processes.len()).sum();
        assert_eq!((n, r.ranks.len()), (procs, ranks), "{rel}");
        assert!(!nothing_read(&r), "{rel}");
        let head = verdict_line(&r);
        assert!(head.starts_with("NOTHING JUDGED ("), "{rel}: {head}");
        assert!(
            head.contains(&format!("{ranks} rank(s)/GPU(s) read")),
            "{rel}: {head}"
        );
        assert_eq!(exit_code(&r), 0, "{rel}: {head}");
        assert!(r.ranks.iter().all(|x| x.gdr == Gdr::Unknown), "{rel}");
    }
    // Prose is still nothing read.
    let r = report(
        "fixtures/evidence/nccl-issue-2409-2x8xh100-8x400g-roce.nccl-tests+perftest-summary.EXCERPT.md",
    );
    assert!(nothing_read(&r));
    assert_eq!(exit_code(&r), EXIT_NOTHING_READ);
    assert!(verdict_line(&r).starts_with("NOTHING READ: "));
}

/// One-host jobs that loaded NCCL's Socket transport (no RDMA device) but show no NET
/// connection: NVIDIA/nccl-tests#217 (one rank, no peer), NVIDIA/nccl#352 and #428 and
/// ROCm/rccl#1728 (2–4 ranks on one host, connection lines not in the copy), NVIDIA/nccl#1358
/// (`nNodes 1`, P2P channels). Before: each rank `off`, cause socket, and the run PROBLEMS
/// (exit 1) — yet nothing crossed the network.
#[test]
fn a_one_host_job_without_net_connections_is_no_problem() {
    let r = report("tests/data/evidence/nccl-tests-217-a6000-2.21.5-socket-lo.log");
    assert_eq!(r.ranks.len(), 1);
    assert_eq!(r.ranks[0].gdr, Gdr::NotApplicable, "{:#?}", r.ranks[0]);
    assert!(r.ranks[0].cause.is_none());
    assert!(r.ranks[0].basis.contains("no peer"), "{}", r.ranks[0].basis);
    assert_eq!(exit_code(&r), 0);
    let head = verdict_line(&r);
    assert!(
        head.starts_with("NO PROBLEM SHOWN: ")
            && head.contains("GDR not applicable on 1 (one host, no network traffic)"),
        "{head}"
    );
    let r = report("tests/data/evidence/nccl-1358-liucc13-single-node-nnodes1.log");
    assert_eq!(r.ranks.len(), 2);
    for x in &r.ranks {
        assert_eq!(x.gdr, Gdr::NotApplicable, "{x:#?}");
        assert!(x.basis.contains("`nNodes 1`"), "{}", x.basis);
    }
    for rel in [
        "tests/data/evidence/nccl-352-ds-ml-01-2.4.8-no-ib-socket-lo.log",
        "tests/data/evidence/nccl-428-t4-2.8.3-no-libibverbs-socket.log",
        "tests/data/evidence/rccl-1728-mi300x-vf-quoted-socket.log",
    ] {
        let r = report(rel);
        assert!(!r.ranks.is_empty(), "{rel}");
        for x in &r.ranks {
            // Its connections are not in the copy: not shown, never off.
            assert_eq!(x.gdr, Gdr::Unknown, "{rel}: {x:#?}");
            assert!(x.basis.contains("on "), "{rel}: {}", x.basis);
        }
        assert_eq!(exit_code(&r), 0, "{rel}: {}", verdict_line(&r));
    }
    // A two-host job over Socket stays off (NVIDIA/nccl#952: NET/Socket connections).
    let r =
        report("fixtures/evidence/nccl-issue-952-ib-cluster-socket-fallback.nccl-info.EXCERPT.log");
    assert!(r.ranks.iter().any(|x| x.gdr == Gdr::Off));
    assert_eq!(exit_code(&r), 1);
}

/// RCCL 2.30's banner and device count, in the forms of a published 2026 log (RCCL 2.30.4 of a
/// TheRock build, 4 GPUs in one process by `ncclCommInitAll`, no RDMA device: host
/// `macpro2019-01`). The lines below are quoted from it; the index we read it from did not name
/// its repository, so it is not a fixture. RCCL prints the banner as one INFO message of five
/// lines (ROCm/rccl `src/init.cc` showVersion: `"RCCL version : " … NCCL_SUFFIX "-"
/// rcclGitHash`, then `HIP version  :`, `ROCm version :`, …). Before: the version was
/// `2.21+ (from line forms)`, the banner and `RCCL: Detected 0 IB devices` were lines not
/// understood, and the rank was `off` (Socket) though every rank ran in one process.
#[test]
fn rccl_banner_and_ib_device_count_are_read() {
    let text = "\
macpro2019-01:253809:253809 [0] NCCL INFO RCCL version : 2.30.4-HEAD:2b22ab0
HIP version  : 7.14.60850-0000000
ROCm version : 7.14.0.7-9999-2b22ab0195
Hostname     : macpro2019-01
Librccl path : /opt/rocm/lib/librccl.so.1
macpro2019-01:253809:253904 [0] NCCL INFO RCCL: Detected 0 IB devices, primary type: 0 (count: 0)
macpro2019-01:253809:253904 [0] NCCL INFO Could not open libibverbs.so
macpro2019-01:253809:253904 [0] NCCL INFO NET/IB : No device found.
macpro2019-01:253809:253904 [0] NCCL INFO NET/IB : Using [RO]; OOB enp3s0:192.168.1.2<0>
macpro2019-01:253809:253904 [0] NCCL INFO Failed to initialize NET plugin IB
macpro2019-01:253809:253904 [0] NCCL INFO NET/Socket : Using [0]enp3s0:192.168.1.2<0>
macpro2019-01:253809:253904 [0] NCCL INFO Initialized NET plugin Socket
macpro2019-01:253809:253904 [0] NCCL INFO Assigned NET plugin Socket to comm
macpro2019-01:253809:253904 [0] NCCL INFO [Rank 0] ncclCommInitAll_impl comm 0x588ff82696e0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId b000 commId 0x1c50a375ab9ec53d - Init START
";
    let r = report_of("rccl-2.30.4.log", text.as_bytes());
    let i = &r.inputs[0];
    assert_eq!(i.unrecognised_lines.count, 0, "{:#?}", i.unrecognised_lines);
    assert_eq!(i.processes.len(), 1);
    let p = &i.processes[0];
    assert_eq!(p.version.text, "2.30.4", "{:?}", p.version);
    assert_eq!(p.ib_devices, Some((0, 6)));
    assert_eq!(p.network.as_deref(), Some("Socket"));
    // One process holds every rank: one host; its connections are not in these lines.
    assert_eq!(r.ranks.len(), 1);
    assert_eq!(r.ranks[0].gdr, Gdr::Unknown, "{:#?}", r.ranks[0]);
    assert!(r.ranks[0].basis.contains("`ncclCommInitAll`"));
    assert_eq!(exit_code(&r), 0);
    let out = peerpath::render::evidence::text(&r);
    assert!(
        out.contains("IB devices detected: 0 (`RCCL: Detected 0 IB devices`, line 6)"),
        "{out}"
    );
}

/// The rank in a `Trees` line (`init.cc`: ` [%d] %d/%d/%d->%d->%d`, children/this rank/parent;
/// RCCL adds ` comm %p nRanks %02d busId %lx`). ray-project/ray#59778's excerpt, with the
/// channel line that also names rank 16 taken out, so that the Trees line is the only one to
/// tie the process to its rank. Before: the process had no rank and no GPU.
#[test]
fn the_rank_in_a_trees_line_is_read() {
    let rel = "fixtures/evidence/ray-issue-59778-k8s17-vllm-ray-tags-trees-rccl-suffix.EXCERPT.log";
    let text = std::fs::read_to_string(common::repo().join(rel)).unwrap();
    let without_channel: String = text
        .lines()
        .filter(|l| !l.contains("Channel 00/0"))
        .map(|l| format!("{l}\n"))
        .collect();
    for t in [text.as_str(), without_channel.as_str()] {
        let r = report_of(rel, t.as_bytes());
        let x = r
            .ranks
            .iter()
            .find(|x| x.host == "k8s17")
            .unwrap_or_else(|| panic!("{:#?}", r.ranks));
        assert_eq!((x.rank, x.nranks, x.pid), (Some(16), Some(32), Some(581)));
        assert_eq!(x.gpu.bdf.as_deref(), Some("0000:17:00.0"), "{x:#?}");
        assert!(x.lines.contains(&2), "{:?}", x.lines);
    }
}

/// Ray's log deduplication (`ray/_private/ray_logging`: a line printed once for several whose
/// words without digits agree, followed by ` [repeated Nx across cluster]`). The first four
/// lines are quoted from a published vLLM-on-Ray log of 2025 (DeepSeek-V2.5 over two
/// Kubernetes pods, NCCL 2.21.5) whose repository the index did not name, so inline, not a
/// fixture. Before: the network read `IB [repeated 14x across cluster]` and the variable's value
/// `0. [repeated 14x across cluster]`, and nothing said that 56 lines of other workers were
/// folded away.
#[test]
fn rays_repeated_suffix_is_taken_off_and_said() {
    let text = "\
(RayWorkerWrapper pid=660) deepseek-v2-5-0:660:660 [6] NCCL INFO NCCL_IB_DISABLE set by environment to 0. [repeated 14x across cluster]
(RayWorkerWrapper pid=660) deepseek-v2-5-0:660:660 [6] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB [RO]; OOB eth0:10.244.2.62<0> [repeated 14x across cluster]
(RayWorkerWrapper pid=660) deepseek-v2-5-0:660:660 [6] NCCL INFO Using network IB [repeated 14x across cluster]
(RayWorkerWrapper pid=660) deepseek-v2-5-0:660:660 [6] NCCL INFO ncclCommInitRank comm 0x339e6bd0 rank 6 nranks 8 cudaDev 6 nvmlDev 6 busId d00000 commId 0xc13f651b1c793497 - Init START [repeated 14x across cluster]
";
    let r = report_of("ray.log", text.as_bytes());
    let p = &r.inputs[0].processes;
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!(p[0].network.as_deref(), Some("IB"));
    assert_eq!(p[0].nics.len(), 8);
    assert!(
        p[0].nics.iter().all(|n| !n.contains("repeated")),
        "{:?}",
        p[0].nics
    );
    assert_eq!(p[0].env[0].1, "0", "{:?}", p[0].env);
    assert!(
        r.notes.iter().any(
            |n| n.contains("4 line(s) end in Ray's `[repeated Nx across cluster]`")
                && n.contains("the 56 line(s) of other workers")
        ),
        "{:#?}",
        r.notes
    );
    // Colored (Ray writes to a terminal) and with the first-time note after it.
    let colored = "(RayTrainWorker pid=3081, ip=10.0.0.2) gpu-2:3081:3120 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/1/GDRDMA\x1b[32m [repeated 3x across cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication for more options.)\x1b[0m\n";
    let r = report_of("ray-colored.log", colored.as_bytes());
    assert_eq!(r.ranks.len(), 1);
    assert_eq!(r.ranks[0].gdr, Gdr::Used, "{:#?}", r.ranks[0]);
    assert_eq!(r.inputs[0].unrecognised_lines.count, 0);
}

/// One Ray worker (`pid=N, ip=A`) behind two spellings of a host its owner redacted by hand —
/// synthesized from the line form of Ray's prefix and NCCL's header (the held-out log
/// has it; no published copy of that form was found): one process, not two.
#[test]
fn one_ray_worker_behind_two_spellings_of_its_host_is_one_process() {
    let text = "\
(RayTrainWorker pid=3081, ip=10.0.0.2) <hostname>:3081:3120 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.2<0>
(RayTrainWorker pid=3081, ip=10.0.0.2) <host>:3081:3120 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
(RayTrainWorker pid=3081, ip=10.0.0.3) <host>:3081:3120 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0
";
    let r = report_of("ray-hosts.log", text.as_bytes());
    let p = &r.inputs[0].processes;
    // 10.0.0.2's pid 3081 is one process; 10.0.0.3's pid 3081 another (another node).
    assert_eq!(p.len(), 2, "{p:#?}");
    let a = r.ranks.iter().find(|x| x.rank == Some(0)).unwrap();
    assert_eq!(a.host, "<hostname>");
    assert_eq!(a.nics[0].name.as_deref(), Some("mlx5_0"), "{a:#?}");
}

/// A copy that wrapped a channel line after its `Channel NN/M :`, or dropped a channel line's
/// header: NVIDIA/nccl#1412's published excerpt with line 19 wrapped and line 22 stripped of
/// its header (synthesized from the real lines). Before: the wrapped end became a phantom
/// process "pid 0" with a rank 12 of its own, and line 19's send was lost from rank 5.
#[test]
fn a_headerless_continuation_line_never_makes_a_process() {
    let rel =
        "fixtures/evidence/nccl-issue-1412-swat1-8xa100-hdr200.nccl-tests+nccl-info.EXCERPT.log";
    let text = std::fs::read_to_string(common::repo().join(rel)).unwrap();
    let whole = report_of(rel, text.as_bytes());
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[18].ends_with("Channel 03/0 : 5[5] -> 12[4] [send] via NET/IB/3"));
    let (start, end) = lines[18].split_at(lines[18].find("5[5] ->").unwrap());
    let mut changed: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    changed[18] = format!("{}\n{end}", start.trim_end());
    changed[21] = lines[21][lines[21].find("5[5] ->").unwrap()..].to_string();
    let changed = changed.join("\n") + "\n";
    let r = report_of(rel, changed.as_bytes());
    let procs = |r: &EvidenceReport| -> Vec<(String, u32)> {
        r.inputs[0]
            .processes
            .iter()
            .map(|p| (p.host.clone(), p.pid))
            .collect()
    };
    assert_eq!(procs(&r), procs(&whole));
    assert!(
        r.ranks
            .iter()
            .all(|x| x.pid != Some(0) && !x.host.is_empty())
    );
    let five = |r: &EvidenceReport| {
        r.ranks
            .iter()
            .find(|x| x.host == "swat1-04" && x.rank == Some(5))
            .map(|x| (x.gdr, x.nics[0].connections))
    };
    // Line 19 joined again; line 22 not tied to rank 5 any more (one connection fewer).
    assert_eq!(five(&whole), Some((Gdr::Off, 2)));
    assert_eq!(five(&r), Some((Gdr::Off, 1)));
    assert!(
        r.notes.iter().any(|n| n.contains(
            "1 NET connection line(s) without `host:pid:tid` among lines that have one (lines 23)"
        )),
        "{:#?}",
        r.notes
    );
    assert_eq!(
        r.inputs[0].unrecognised_lines.count,
        whole.inputs[0].unrecognised_lines.count
    );
}

/// NCCL/plugin messages quoted with neither `host:pid:tid` nor `NCCL INFO`
/// (lumi-ai-factory/laifs-container-recipes#28: two LUMI containers' aws-ofi-rccl lines on
/// Slingshot `cxi`). Before: nothing recognised, `NOTHING READ`, exit 3.
#[test]
fn plugin_lines_quoted_without_any_header_are_read() {
    let r = report(
        "fixtures/evidence/lumi-laifs-issue-28-aws-ofi-rccl-cxi-no-prefix-summary.EXCERPT.log",
    );
    assert!(!nothing_read(&r));
    let p = &r.inputs[0].processes;
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].headerless);
    assert_eq!(p[0].network.as_deref(), Some("AWS Libfabric"));
    assert_eq!(p[0].ofi_provider.as_deref(), Some("cxi (line 9)"));
    // The container names (prose) are all that is not understood.
    assert_eq!(r.inputs[0].unrecognised_lines.count, 2);
    let head = verdict_line(&r);
    assert!(
        head.starts_with("NOTHING JUDGED (NCCL lines without `host:pid:tid` read;"),
        "{head}"
    );
    assert_eq!(exit_code(&r), 0);
    // The provider line of aws-ofi-nccl ≥ 2023 with its fabric and NIC count.
    let r = report_of(
        "ofi.log",
        b"h:1:2 [0] NCCL INFO NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)\n",
    );
    assert_eq!(
        r.inputs[0].processes[0].ofi_provider.as_deref(),
        Some("cxi, fabric cxi, 4 NIC(s) (line 1)")
    );
}

/// NVIDIA/nccl#601: one process (gpu23:2625) drives three GPUs, and its `Trees` lines name the
/// ranks of two of them. Reading those ranks must not drop the third GPU (a first version of
/// the Trees reader did: the process counted as covered by its ranks).
#[test]
fn a_process_of_several_gpus_keeps_every_gpu_when_trees_name_some() {
    let r = report("tests/data/evidence/nccl-601-gpu24-socket-ethernet.log");
    let mut gpus: Vec<(Option<u32>, Option<i64>)> = r
        .ranks
        .iter()
        .filter(|x| x.host == "gpu23")
        .map(|x| (x.rank, x.gpu.cuda_dev))
        .collect();
    gpus.sort();
    assert_eq!(
        gpus,
        vec![(None, Some(0)), (Some(1), Some(1)), (Some(2), Some(2))]
    );
}

/// Known forms found missing in the shared evidence (issue 51, item 7): NVIDIA/nccl-tests#350's
/// `Connection to proxy localRank %d -> connection %p` (proxy.cc 2.12–2.18) and `NET/IB: Dev %d
/// Port %d qpn %d mtu %d LID %d` (net_ib.cc). Before: 5 lines not understood.
#[test]
fn proxy_and_queue_pair_lines_are_known_forms() {
    let r = report("fixtures/evidence/nccl-tests-issue-350-n013.nccl-info.EXCERPT.log");
    assert_eq!(
        r.inputs[0].unrecognised_lines.count, 0,
        "{:#?}",
        r.inputs[0].unrecognised_lines
    );
}

/// Every rank of a communicator printing its `rank r nranks N` line on one host is a one-host
/// job (synthesized from NCCL 2.18's comm line form): its ranks with P2P channels and no NET
/// connection are not applicable, though NCCL loaded its Socket transport. Without the
/// one-host rule they were `off` (Socket) and the run PROBLEMS; the same lines with rank 1 on
/// another host stay `off`.
#[test]
fn every_rank_printed_on_one_host_is_a_one_host_job() {
    let log = |host1: &str| {
        format!(
            "h0:10:10 [0] NCCL INFO NET/IB : No device found.\n\
             h0:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
             h0:10:10 [0] NCCL INFO Using network Socket\n\
             h0:10:10 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
             h0:10:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n\
             {host1}:11:11 [1] NCCL INFO Using network Socket\n\
             {host1}:11:11 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n\
             {host1}:11:11 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n"
        )
    };
    let r = report_of("one-host.log", log("h0").as_bytes());
    assert_eq!(r.ranks.len(), 2);
    for x in &r.ranks {
        assert_eq!(x.gdr, Gdr::NotApplicable, "{x:#?}");
        assert!(
            x.basis
                .contains("every rank of the communicator (0 to 1) printed its rank on h0")
        );
    }
    assert_eq!(exit_code(&r), 0);
    let r = report_of("two-hosts.log", log("h1").as_bytes());
    assert!(r.ranks.iter().all(|x| x.gdr == Gdr::Off), "{:#?}", r.ranks);
}

/// A connection quoted without its header but behind the Ray tag of a worker whose other lines
/// have one is that worker's (synthesized from Ray's prefix and NCCL 2.18.3+'s channel form).
/// Before: a process "pid 0" of its own.
#[test]
fn a_headerless_connection_behind_a_ray_tag_is_that_workers() {
    let text = "\
(RayTrainWorker pid=3081, ip=10.0.0.2) gpu-2:3081:3120 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.2<0>
(RayTrainWorker pid=3081, ip=10.0.0.2) gpu-2:3081:3120 [0] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0
(RayTrainWorker pid=3081, ip=10.0.0.2) 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA
";
    let r = report_of("ray-bare.log", text.as_bytes());
    let procs: Vec<(String, u32)> = r.inputs[0]
        .processes
        .iter()
        .map(|p| (p.host.clone(), p.pid))
        .collect();
    assert_eq!(procs, vec![("gpu-2".to_string(), 3081)]);
    assert_eq!(r.ranks.len(), 1, "{:#?}", r.ranks);
    assert_eq!(r.ranks[0].gdr, Gdr::Used);
    assert_eq!(r.ranks[0].nics[0].name.as_deref(), Some("mlx5_0"));
}

/// A `[0] NCCL INFO Channel …` line (a copy that dropped `host:pid:tid`, the bracket left) among
/// lines that name their process is set apart too, like a connection quoted from its ranks on
/// (synthesized from NVIDIA/nccl#1412's line 19). Before: a process "pid 0".
#[test]
fn a_bracket_only_connection_line_among_named_lines_is_unattributed() {
    let rel =
        "fixtures/evidence/nccl-issue-1412-swat1-8xa100-hdr200.nccl-tests+nccl-info.EXCERPT.log";
    let text = std::fs::read_to_string(common::repo().join(rel)).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = lines[18].find("[5] NCCL INFO").unwrap();
    lines[18] = lines[18][at..].to_string();
    let r = report_of(rel, (lines.join("\n") + "\n").as_bytes());
    assert!(
        r.inputs[0]
            .processes
            .iter()
            .all(|p| !p.headerless && p.pid != 0)
    );
    assert!(
        r.notes.iter().any(|n| n.contains("(lines 19)")),
        "{:#?}",
        r.notes
    );
}
