//! Every published evidence file (fixtures/evidence/, copied from shared/reference/evidence/)
//! read into its verdicts, and the tolerance cases built from those same files: launcher
//! prefixes, interleaved hosts, an nccl-tests row and an NCCL line sharing a line, several runs
//! in one file, lines cut at every byte, missing headers, CRLF.

use peerpath::analysis::evidence::{
    self, BwVerdict, CauseKind, EvidenceReport, Gdr, Input, NicSpec, Options, RankVerdict,
};

mod common;

fn path(name: &str) -> std::path::PathBuf {
    common::repo().join("fixtures/evidence").join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn report_of(name: &str, bytes: &[u8], nic: Option<&str>) -> EvidenceReport {
    let i = Input::from_bytes(name, bytes).unwrap();
    evidence::analyze(
        &[i],
        None,
        &Options {
            nic: nic.map(|n| n.parse::<NicSpec>().unwrap()),
        },
    )
}

fn report(name: &str, nic: Option<&str>) -> EvidenceReport {
    report_of(name, &read(name), nic)
}

fn rank<'a>(r: &'a EvidenceReport, host: &str, k: u32) -> &'a RankVerdict {
    r.ranks
        .iter()
        .find(|x| x.host == host && x.rank == Some(k))
        .unwrap_or_else(|| panic!("no rank {k} on {host}: {:#?}", r.ranks))
}

fn gpu<'a>(r: &'a EvidenceReport, bdf: &str) -> &'a RankVerdict {
    r.ranks
        .iter()
        .find(|x| x.gpu.bdf.as_deref() == Some(bdf))
        .unwrap_or_else(|| panic!("no GPU {bdf}: {:#?}", r.ranks))
}

/// The (host, rank, verdict) triples of a report, for comparing two readings of one log.
fn verdicts(r: &EvidenceReport) -> Vec<(String, Option<u32>, Option<String>, Gdr)> {
    let mut v: Vec<_> = r
        .ranks
        .iter()
        .map(|x| (x.host.clone(), x.rank, x.gpu.bdf.clone(), x.gdr))
        .collect();
    v.sort();
    v
}

const FILES: [&str; 20] = [
    "aks-rdma-infiniband-nd96asr-v4-a100.tests-expected-output.md",
    "deeplearningexamples-issue-383-node-1-4gpu-1hca.nccl-info.EXCERPT.log",
    "mellanox-sriov-roce-doc-t4.ib_write_bw-host-vs-use_cuda.EXCERPT.txt",
    "nccl-issue-1412-swat1-8xa100-hdr200.nccl-tests+nccl-info.EXCERPT.log",
    "nccl-issue-1519-nathan-h100-1-8nic.nccl-topo-print.EXCERPT.log",
    "nccl-issue-1737-gh-3714u06-8xh100-ib.nccl-info.EXCERPT.log",
    "nccl-issue-1737-gh-3714u06-8xh100-ib.nvidia-smi-topo-m.EXCERPT.txt",
    "nccl-issue-2409-2x8xh100-8x400g-roce.nccl-tests+perftest-summary.EXCERPT.md",
    "nccl-issue-707-8xa100-18nic.nccl-tests+nccl-info.EXCERPT.log",
    "nccl-issue-707-8xa100-18nic.nvidia-smi-topo-m.EXCERPT.txt",
    "nccl-issue-899-2node-containers.nccl-info.EXCERPT.log",
    "nccl-issue-952-ib-cluster-socket-fallback.nccl-info.EXCERPT.log",
    "nccl-tests-issue-119-pod01-8xa100-4xhdr200.nccl-tests.EXCERPT.txt",
    "nccl-tests-issue-350-n013.nccl-info.EXCERPT.log",
    "t9k-network-operator-doc-a100-ib.ib_write_bw-host-vs-use_cuda.EXCERPT.txt",
    "aks-rdma-infiniband-nd96asr-v4-a100.tests-expected-output.md",
    "rccl-pr-2078-mi300x-ainic-ionic-roce-init-only.EXCERPT.log",
    "lumi-laifs-issue-28-aws-ofi-rccl-cxi-no-prefix-summary.EXCERPT.log",
    "sglang-issue-6017-ibext-v8-renamed-hcas-bootstrap-failure.EXCERPT.log",
    "ray-issue-59778-k8s17-vllm-ray-tags-trees-rccl-suffix.EXCERPT.log",
];

#[test]
fn every_shared_file_is_a_fixture_and_reads() {
    let mut on_disk: Vec<String> = std::fs::read_dir(common::repo().join("fixtures/evidence"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "README.md" && n != "topology")
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = FILES.iter().map(|s| s.to_string()).collect();
    listed.sort();
    listed.dedup();
    assert_eq!(
        on_disk, listed,
        "fixtures/evidence and this test's list differ"
    );
    for f in FILES {
        let r = report(f, None);
        assert_eq!(r.inputs.len(), 1);
        // No rank number beyond what the file's own lines name.
        let text = String::from_utf8_lossy(&read(f)).into_owned();
        for x in &r.ranks {
            if let Some(k) = x.rank {
                assert!(
                    text.contains(&format!("{k}["))
                        || text.contains(&format!("rank {k} "))
                        || text.contains(&format!("Rank {k:2} ")),
                    "{f}: rank {k} is not in the text"
                );
            }
        }
    }
}

#[test]
fn gdr_silently_off_nccl_1412() {
    let r = report(
        "nccl-issue-1412-swat1-8xa100-hdr200.nccl-tests+nccl-info.EXCERPT.log",
        None,
    );
    for k in [4, 5] {
        let x = rank(&r, "swat1-04", k);
        assert_eq!(x.gdr, Gdr::Off, "{x:#?}");
        assert_eq!(x.cause.as_ref().unwrap().kind, CauseKind::NotShown);
        assert_eq!(x.nics.len(), 1);
        assert_eq!((x.nics[0].index, x.nics[0].gdr), (3, [0, 2, 0]));
    }
    // Ranks without a NET line are unknown, never off.
    for k in [0, 1, 2, 3, 6, 7] {
        assert_eq!(rank(&r, "swat1-04", k).gdr, Gdr::Unknown);
    }
    assert_eq!(
        rank(&r, "swat1-04", 1).gpu.bdf.as_deref(),
        Some("0000:0b:00.0")
    );
    assert_eq!(rank(&r, "swat1-05", 8).gpu.bus, Some(0x07));
    assert_eq!(
        rank(&r, "swat1-05", 11).gpu.bus,
        None,
        "bus cut at `[0x4`: not read"
    );
    let b = &r.bandwidth[0];
    assert_eq!(b.test, "all_gather_perf");
    assert_eq!(b.avg, Some(33.3227));
    assert_eq!(b.hosts, ["swat1-04", "swat1-05"]);
    assert_eq!(b.verdict, BwVerdict::Unknown, "no NIC capacity given");
    let r = report(
        "nccl-issue-1412-swat1-8xa100-hdr200.nccl-tests+nccl-info.EXCERPT.log",
        Some("4x200"),
    );
    assert_eq!(r.bandwidth[0].verdict, BwVerdict::Low);
    let env = &r.inputs[0].processes[0].env;
    assert!(
        env.iter()
            .any(|(k, v, _)| k == "NCCL_IB_HCA" && v == "^mlx5_3,mlx5_4")
    );
}

#[test]
fn no_module_nccl_899() {
    let r = report(
        "nccl-issue-899-2node-containers.nccl-info.EXCERPT.log",
        None,
    );
    let a = rank(&r, "21346d5cefce", 1);
    assert_eq!(a.gdr, Gdr::Off);
    assert_eq!(a.cause.as_ref().unwrap().kind, CauseKind::NoModule);
    assert!(
        a.cause
            .as_ref()
            .unwrap()
            .text
            .contains("'mlx5_1' (no module)")
    );
    assert_eq!(a.gpu.bdf.as_deref(), Some("0000:1a:00.0"));
    assert_eq!(a.nics[0].index, 0);
    // The other container printed no per-NIC line: its cause is not shown, not borrowed.
    let b = rank(&r, "6a5a91752e39", 0);
    assert_eq!(b.gdr, Gdr::Off);
    assert_eq!(b.cause.as_ref().unwrap().kind, CauseKind::NotShown);
    assert!(
        r.inputs[0]
            .processes
            .iter()
            .all(|p| p.version.text == "2.7–2.11")
    );
}

#[test]
fn per_gpu_split_dle_383() {
    let r = report(
        "deeplearningexamples-issue-383-node-1-4gpu-1hca.nccl-info.EXCERPT.log",
        None,
    );
    for b in ["0000:18:00.0", "0000:3b:00.0"] {
        let x = gpu(&r, b);
        assert_eq!(x.gdr, Gdr::Off);
        let c = x.cause.as_ref().unwrap();
        assert_eq!(c.kind, CauseKind::Distance);
        assert!(
            c.text.contains("SYS is beyond the GDR level PHB"),
            "{}",
            c.text
        );
        assert_eq!(x.rank, None, "the log names GPUs, not ranks");
    }
    for b in ["0000:86:00.0", "0000:af:00.0"] {
        assert_eq!(gpu(&r, b).gdr, Gdr::Used);
    }
    let p = r.inputs[0]
        .processes
        .iter()
        .find(|p| p.pid == 32726)
        .unwrap();
    assert_eq!(
        p.version.text, "2.6–2.7",
        "PHB compared as 4: the 2.6–2.7 numbering"
    );
    assert_eq!(r.inputs[0].refused.len(), 0);
}

#[test]
fn socket_fallback_nccl_952() {
    let r = report(
        "nccl-issue-952-ib-cluster-socket-fallback.nccl-info.EXCERPT.log",
        None,
    );
    let x = rank(&r, "<cluster_name>", 15);
    assert_eq!(x.gdr, Gdr::Off);
    assert_eq!(x.cause.as_ref().unwrap().kind, CauseKind::Socket);
    assert_eq!(
        (x.nics[0].index, x.nics[0].net.as_deref()),
        (3, Some("Socket"))
    );
    // Only rank 15 shows a NET connection: every other process is there, unknown.
    assert_eq!(r.ranks.len(), 8);
    assert!(
        r.ranks
            .iter()
            .filter(|x| x.rank != Some(15))
            .all(|x| x.gdr == Gdr::Unknown)
    );
}

#[test]
fn pix_printed_as_phb_nccl_1519() {
    let r = report(
        "nccl-issue-1519-nathan-h100-1-8nic.nccl-topo-print.EXCERPT.log",
        None,
    );
    for b in ["0000:84:00.0", "0000:85:00.0"] {
        let x = gpu(&r, b);
        assert_eq!(x.gdr, Gdr::Off);
        let c = x.cause.as_ref().unwrap();
        assert_eq!(c.kind, CauseKind::PathRerouted);
        assert!(
            c.text.contains("PCI/82000") && c.text.contains("PHB"),
            "{}",
            c.text
        );
    }
    // GPUs on the other switch are not judged from this excerpt.
    assert!(
        r.ranks
            .iter()
            .filter(|x| x.gdr != Gdr::Unknown)
            .all(|x| matches!(x.gpu.bdf.as_deref(), Some("0000:84:00.0" | "0000:85:00.0")))
    );
    let v: Vec<&str> = r.inputs[0]
        .processes
        .iter()
        .map(|p| p.version.text.as_str())
        .collect();
    assert_eq!(v, ["2.5–2.20", "2.21+"]);
}

#[test]
fn gdr_used_nccl_707_and_names_of_nics() {
    let r = report(
        "nccl-issue-707-8xa100-18nic.nccl-tests+nccl-info.EXCERPT.log",
        None,
    );
    assert_eq!(r.ranks.len(), 4);
    assert!(
        r.ranks
            .iter()
            .all(|x| x.gdr == Gdr::Used && x.version == "2.7.6")
    );
    let names: Vec<Option<&str>> = rank(&r, "10-90-43-152", 2)
        .nics
        .iter()
        .map(|n| n.name.as_deref())
        .collect();
    assert_eq!(names, [Some("mlx5_10")]);
    let names: Vec<Option<&str>> = rank(&r, "10-90-43-152", 0)
        .nics
        .iter()
        .map(|n| n.name.as_deref())
        .collect();
    assert_eq!(names, [Some("mlx5_12"), Some("mlx5_14")]);
    assert_eq!(
        rank(&r, "10-90-43-152", 0).gpu.bdf.as_deref(),
        Some("0000:87:00.0")
    );
}

#[test]
fn gdr_used_at_phb_nccl_tests_350() {
    let r = report("nccl-tests-issue-350-n013.nccl-info.EXCERPT.log", None);
    let x = rank(&r, "n013", 0);
    assert_eq!((x.gdr, x.version.as_str()), (Gdr::Used, "2.12–2.18.1"));
    assert_eq!(x.gpu.bdf.as_deref(), Some("0000:81:00.0"));
}

#[test]
fn forced_off_and_completion_errors_nccl_1737() {
    let r = report(
        "nccl-issue-1737-gh-3714u06-8xh100-ib.nccl-info.EXCERPT.log",
        None,
    );
    // No channel line survives: unknown, never off, for the one rank shown and the two other
    // processes (no rank line).
    assert_eq!(r.ranks.len(), 3);
    assert!(r.ranks.iter().all(|x| x.gdr == Gdr::Unknown));
    let x = rank(&r, "gh-3714u06", 0);
    assert_eq!(x.gdr, Gdr::Unknown);
    assert_eq!(x.gpu.bdf.as_deref(), Some("0000:19:00.0"));
    assert_eq!(x.version, "2.21.5");
    assert_eq!(r.errors.len(), 1);
    assert_eq!(
        (
            r.errors[0].status,
            r.errors[0].vendor_err,
            r.errors[0].count
        ),
        (Some(5), Some(249), 2)
    );
    let first = r.inputs[0]
        .processes
        .iter()
        .find(|p| p.pid == 4052)
        .unwrap();
    assert!(
        first
            .env
            .iter()
            .any(|(k, v, w)| k == "NCCL_NET_GDR_LEVEL" && v == "0" && w.contains("command line"))
    );
    let second = r.inputs[0]
        .processes
        .iter()
        .find(|p| p.pid == 4197)
        .unwrap();
    assert!(
        !second.env.iter().any(|(k, _, _)| k == "NCCL_NET_GDR_LEVEL"),
        "the second run is the default"
    );
    assert_eq!(second.network.as_deref(), Some("IBext_v8"));
    assert_eq!(second.nics.len(), 5);
}

#[test]
fn healthy_reference_nccl_tests_119() {
    let r = report(
        "nccl-tests-issue-119-pod01-8xa100-4xhdr200.nccl-tests.EXCERPT.txt",
        Some("4x200"),
    );
    let b = &r.bandwidth[0];
    assert_eq!(b.sizes.map(|s| s.2), Some(6));
    assert_eq!(b.avg, Some(84.8558));
    assert_eq!(b.expected, Some(96.0));
    assert_eq!(b.verdict, BwVerdict::Ok, "{}", b.summary);
    assert!(b.collapse.is_none());
}

#[test]
fn good_and_bad_on_the_same_hardware_aks() {
    let r = report(
        "aks-rdma-infiniband-nd96asr-v4-a100.tests-expected-output.md",
        Some("8x200"),
    );
    let v: Vec<(BwVerdict, Option<f64>)> = r
        .bandwidth
        .iter()
        .map(|b| (b.verdict, b.large.map(|l| l.0)))
        .collect();
    assert_eq!(
        v,
        [
            (BwVerdict::Ok, Some(187.22)),
            (BwVerdict::Broken, Some(3.15))
        ]
    );
    assert_eq!(r.perftest.len(), 2);
    assert_eq!(r.perftest[0].avg_gbps, 197.48);
    assert_eq!(
        r.perftest[0].memory, "unknown",
        "text before the table is elided (`...`)"
    );
    assert_eq!(r.perftest[0].port_gbps, Some(200.0));
}

#[test]
fn perftest_gpu_far_below_host_mellanox() {
    let r = report(
        "mellanox-sriov-roce-doc-t4.ib_write_bw-host-vs-use_cuda.EXCERPT.txt",
        None,
    );
    assert_eq!(r.perftest.len(), 4);
    let c: Vec<_> = r.comparisons.iter().filter(|c| c.flagged).collect();
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].device.as_str(), c[0].gpu_gbps, c[0].host_gbps),
        ("mlx5_4", 10.50, 92.56)
    );
    assert!(c[0].summary.contains("relaxed ordering"));
}

#[test]
fn perftest_on_different_machines_is_not_flagged_t9k() {
    let r = report(
        "t9k-network-operator-doc-a100-ib.ib_write_bw-host-vs-use_cuda.EXCERPT.txt",
        None,
    );
    assert!(!r.comparisons.is_empty());
    assert!(
        r.comparisons
            .iter()
            .all(|c| !c.flagged && c.summary.contains("different machines"))
    );
    assert!((r.comparisons[0].fraction - 80.96 / 98.38).abs() < 1e-9);
}

#[test]
fn prose_and_matrices_yield_nothing() {
    for f in [
        "nccl-issue-2409-2x8xh100-8x400g-roce.nccl-tests+perftest-summary.EXCERPT.md",
        "nccl-issue-1737-gh-3714u06-8xh100-ib.nvidia-smi-topo-m.EXCERPT.txt",
        "nccl-issue-707-8xa100-18nic.nvidia-smi-topo-m.EXCERPT.txt",
    ] {
        let r = report(f, Some("8x400"));
        assert!(
            r.ranks.is_empty() && r.bandwidth.is_empty() && r.perftest.is_empty(),
            "{f}"
        );
        assert!(r.inputs[0].kinds.is_empty());
        assert!(r.notes.iter().any(|n| n.contains("nothing is read")));
    }
}

// ---- tolerance, built from the real files ----

fn lines_of(name: &str) -> Vec<String> {
    String::from_utf8(read(name))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn launcher_prefixes_change_nothing() {
    let f = "nccl-issue-707-8xa100-18nic.nccl-tests+nccl-info.EXCERPT.log";
    let plain = report(f, None);
    let want = verdicts(&plain);
    for prefix in [
        "[1,0]<stdout>:",
        "[0] ",
        "0: ",
        "[rank0]:",
        "[pod/mpi-launcher/x] [1,0]<stderr>:",
    ] {
        let text: String = lines_of(f)
            .iter()
            .map(|l| format!("{prefix}{l}\n"))
            .collect();
        let r = report_of(f, text.as_bytes(), None);
        assert_eq!(verdicts(&r), want, "prefix {prefix:?}");
        // The nccl-tests devices are still read: every rank keeps its bus.
        let buses =
            |r: &EvidenceReport| -> Vec<Option<u8>> { r.ranks.iter().map(|x| x.gpu.bus).collect() };
        assert_eq!(
            buses(&r),
            buses(&plain),
            "prefix {prefix:?}: the nccl-tests devices are still read"
        );
        assert!(buses(&r).iter().all(Option::is_some), "prefix {prefix:?}");
        assert_eq!(
            r.inputs[0].gaps, plain.inputs[0].gaps,
            "prefix {prefix:?}: gap markers"
        );
    }
}

#[test]
fn interleaved_hosts_and_crlf_change_nothing() {
    let a = "nccl-issue-899-2node-containers.nccl-info.EXCERPT.log";
    let b = "nccl-issue-707-8xa100-18nic.nccl-tests+nccl-info.EXCERPT.log";
    let (la, lb) = (lines_of(a), lines_of(b));
    let mut mixed = String::new();
    for i in 0..la.len().max(lb.len()) {
        for l in [la.get(i), lb.get(i)].into_iter().flatten() {
            mixed.push_str(l);
            mixed.push_str("\r\n");
        }
    }
    let r = report_of("mixed", mixed.as_bytes(), None);
    let mut want = verdicts(&report(a, None));
    want.extend(verdicts(&report(b, None)));
    want.sort();
    assert_eq!(verdicts(&r), want);
}

#[test]
fn an_nccl_line_inside_an_nccl_tests_row() {
    // nccl-tests prints a row's `size count type redop root`, NCCL (same process) writes a
    // line, then the row's numbers follow on the next line.
    let rows = lines_of("nccl-tests-issue-119-pod01-8xa100-4xhdr200.nccl-tests.EXCERPT.txt");
    let row = rows.iter().find(|l| l.contains("131072008")).unwrap();
    let cut = row.find("-1").unwrap() + 2;
    let nccl = "pod01:3621216:3621300 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA";
    let text = format!(
        "pod01:3621216:3621216 [0] NCCL INFO Using network IB\n{}\n{}{nccl}\n{}\n",
        rows[..rows.iter().position(|l| l.contains("127926280")).unwrap()].join("\n"),
        &row[..cut],
        &row[cut..]
    );
    let r = report_of("glued", text.as_bytes(), None);
    let b = &r.bandwidth[0];
    assert_eq!(
        b.large.map(|l| (l.0, l.1)),
        Some((96.45, 131072008)),
        "{b:#?} {:#?}",
        r.inputs[0].refused
    );
    assert_eq!(rank(&r, "pod01", 0).gdr, Gdr::Used);
    assert!(r.inputs[0].refused.is_empty(), "{:#?}", r.inputs[0].refused);
}

#[test]
fn several_runs_and_missing_headers() {
    let f = "aks-rdma-infiniband-nd96asr-v4-a100.tests-expected-output.md";
    let one = lines_of(f).join("\n");
    let twice = format!("{one}\n{one}\n");
    let r = report_of(f, twice.as_bytes(), Some("8x200"));
    assert_eq!(r.bandwidth.len(), 4);
    assert_eq!(r.perftest.len(), 4);
    // Without the table headers the columns are inferred from the row.
    let bare: String = lines_of(f)
        .iter()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = report_of(f, bare.as_bytes(), Some("8x200"));
    let v: Vec<BwVerdict> = r.bandwidth.iter().map(|b| b.verdict).collect();
    assert_eq!(v, [BwVerdict::Ok, BwVerdict::Broken]);
}

#[test]
fn lines_cut_at_every_byte_never_read_as_off_or_invent_ranks() {
    let f = "nccl-issue-707-8xa100-18nic.nccl-tests+nccl-info.EXCERPT.log";
    let full = lines_of(f);
    let ch = full
        .iter()
        .position(|l| l.contains("[send] via NET/IB/2/GDRDMA"))
        .unwrap();
    let line = &full[ch];
    for cut in 0..=line.len() {
        if !line.is_char_boundary(cut) {
            continue;
        }
        // The cut line is followed by a gap marker (as in the excerpts), or is the last line.
        for tail in ["\n[... text missing here ...]\n", ""] {
            let text = format!("{}\n{}{tail}", full[..ch].join("\n"), &line[..cut]);
            let r = report_of(f, text.as_bytes(), None);
            for x in &r.ranks {
                assert_ne!(x.gdr, Gdr::Off, "cut at {cut}: {x:#?}");
                assert!(
                    x.rank.is_none_or(|k| k < 4),
                    "cut at {cut}: invented rank {x:#?}"
                );
            }
        }
    }
    // Cutting a whole file at every line boundary and every 7th byte never panics.
    let bytes = read(f);
    for cut in (0..bytes.len()).step_by(7) {
        let _ = report_of(f, &bytes[..cut], None);
    }
}

#[test]
fn virtual_nic_index_read_right() {
    // 1737's NIC list (5 physical NICs) with 2.24+ channel lines over NET index 5, which NCCL
    // numbers above the physical count for a merged NIC.
    let list = lines_of("nccl-issue-1737-gh-3714u06-8xh100-ib.nccl-info.EXCERPT.log")
        .into_iter()
        .find(|l| l.contains("NET/IB : Using") && l.contains("[RO]"))
        .unwrap();
    let base = "gh-3714u06:4197:4267 [0] NCCL INFO ";
    let chan = |dev: u32| {
        format!("{base}Channel 00/1 : 0[0] -> 1[0] [send] via NET/IBext_v8/{dev}/GDRDMA\n")
    };
    let without = format!("{list}\n{}", chan(5));
    let r = report_of("v", without.as_bytes(), None);
    let n = &rank(&r, "gh-3714u06", 0).nics[0];
    assert_eq!((n.index, n.virtual_nic, n.name.as_deref()), (5, true, None));
    assert!(n.note.as_ref().unwrap().contains("virtual NIC"), "{n:#?}");
    let with = format!(
        "{list}\n{base}NET/IB : Made virtual device [5] name=mlx5_0+mlx5_1 speed=800000 ndevs=2\n{}",
        chan(5)
    );
    let r = report_of("v", with.as_bytes(), None);
    let n = &rank(&r, "gh-3714u06", 0).nics[0];
    assert_eq!(
        (n.index, n.virtual_nic, n.name.as_deref()),
        (5, true, Some("mlx5_0+mlx5_1"))
    );
    let r = report_of("v", format!("{list}\n{}", chan(4)).as_bytes(), None);
    let n = &rank(&r, "gh-3714u06", 0).nics[0];
    assert_eq!((n.virtual_nic, n.name.as_deref()), (false, Some("mlx5_2")));
    assert_eq!(rank(&r, "gh-3714u06", 0).gdr, Gdr::Used);
}

#[test]
fn non_utf8_and_probe_documents_are_handled() {
    let mut b = read("nccl-issue-899-2node-containers.nccl-info.EXCERPT.log");
    b.extend_from_slice(b"\xff\xfe garbage\n");
    let r = report_of("x", &b, None);
    assert_eq!(r.ranks.len(), 2);
    let e =
        Input::from_bytes("p.json", br#"{"schema":"peerpath.probe/1","results":[]}"#).unwrap_err();
    assert!(format!("{e:#}").contains("re-run"), "{e:#}");
}

#[test]
fn a_probe_document_is_read_as_probe_evidence() {
    use peerpath::analysis::probe_report::MemoryKind;
    use peerpath::analysis::probe_report::Op;
    use peerpath::analysis::probe_report::cuda::CudaReport;
    use peerpath::analysis::probe_report::verdict::Verdict;
    use peerpath::analysis::probe_report::{
        CellResult, Direction, GpuRef, NicRef, PROBE_SCHEMA, ProbeReport,
    };
    let cell = CellResult {
        gpu: Some(GpuRef {
            bdf: Some("0000:3a:00.0".parse().unwrap()),
            cuda: Some(2),
        }),
        nic: NicRef::verbs("mlx5_2", 1, Some("0000:3b:00.0".parse().unwrap())),
        memory: MemoryKind::Cuda,
        direction: Direction::GpuToHost,
        op: Op::Write,
        message_bytes: 65536,
        bytes: 0,
        seconds: 0.0,
        gbytes_per_s: 0.0,
        verified: true,
        ops_in_flight: 0,
        verdict: Verdict::BadPath,
        expected_label: None,
        reason: "1.1 GB/s of 48".into(),
        contradicts: true,
        control: false,
        registration: Vec::new(),
    };
    let doc = serde_json::to_string(&ProbeReport {
        schema: PROBE_SCHEMA.into(),
        fabric: "verbs".into(),
        results: vec![cell],
        cuda: CudaReport::unavailable("no driver"),
        counter_changes: Vec::new(),
        notes: Vec::new(),
        interrupted: false,
        wall_seconds: 0.0,
    })
    .unwrap();
    let r = report_of("probe.json", doc.as_bytes(), None);
    assert_eq!(r.inputs[0].kinds, ["peerpath-probe"]);
    assert_eq!(r.probe.len(), 1);
    assert!(
        r.probe[0].starts_with("0000:3a:00.0 ↔ verbs:mlx5_2:1 (0000:3b:00.0): bad_path"),
        "{:?}",
        r.probe
    );
}
