//! One test per line form of the table in shared/reference/evidence/README.md ("Log-line forms,
//! checked against the NVIDIA/nccl source at each release tag"), each line written with the
//! format string of the release that prints it; then the header and tolerance cases.

use super::*;
use crate::parse::text::lines;

const H: &str = "node-1:100:200 [3] NCCL INFO ";

fn one(msg: &str) -> Record {
    let text = format!("{H}{msg}\n");
    let log = parse_text(&text);
    assert!(log.refused.is_empty(), "{msg}: {:?}", log.refused);
    assert_eq!(log.entries.len(), 1, "{msg}: {log:#?}");
    log.entries[0].record.clone()
}

fn parse_text(text: &str) -> NcclLog {
    let l = lines(text);
    let mut f = Vec::new();
    parse(&l, &mut f)
}

fn chan(msg: &str) -> NetChannel {
    match one(msg) {
        Record::NetChannel(c) => c,
        r => panic!("{msg}: {r:?}"),
    }
}

fn gpu_gdr(msg: &str) -> GpuGdr {
    match one(msg) {
        Record::GpuGdr(g) => g,
        r => panic!("{msg}: {r:?}"),
    }
}

#[test]
fn form_net_channel_up_to_2_11_busid_no_connindex() {
    // "Channel %02d : %d[%lx] -> %d[%lx] [receive] via NET/%s/%d%s"
    let c = chan("Channel 00 : 0[1a000] -> 1[1a000] [receive] via NET/IB/0");
    assert_eq!(c.conn_index, None);
    assert_eq!((c.from_rank, c.from_bracket.as_str()), (0, "1a000"));
    assert!(!c.send);
    assert_eq!(
        (c.net.as_deref(), c.dev, c.gdr),
        (Some("IB"), Some(0), Some(false))
    );
    let c = chan("Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA");
    assert_eq!((c.dev, c.gdr), (Some(5), Some(true)));
}

#[test]
fn form_net_channel_2_12_to_2_18_1_connindex_and_pxn() {
    // "Channel %02d/%d : %d[%lx] -> %d[%lx] [send] via NET/%s/%d(%d)%s"
    let c = chan("Channel 02/1 : 3[3b000] -> 11[3b000] [send] via NET/IB/3(5)/GDRDMA");
    assert_eq!(c.conn_index, Some(1));
    assert_eq!(c.from_bracket, "3b000");
    assert_eq!((c.dev, c.proxy, c.gdr), (Some(3), Some(5), Some(true)));
    assert!(c.send);
}

#[test]
fn form_net_channel_2_18_3_and_later_nvmldev_bracket() {
    let c = chan("Channel 03/0 : 5[5] -> 12[4] [send] via NET/IB/3");
    assert_eq!((c.channel, c.conn_index), (Some(3), Some(0)));
    assert_eq!(
        (
            c.from_rank,
            c.from_bracket.as_str(),
            c.to_rank,
            c.to_bracket.as_str()
        ),
        (5, "5", 12, "4")
    );
    assert_eq!(
        c.gdr,
        Some(false),
        "a complete line without /GDRDMA: GDR not used"
    );
}

#[test]
fn form_net_suffixes_gdrdma_pci_shared() {
    let c = chan("Channel 00/1 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA(PCI)/Shared");
    assert_eq!((c.gdr, c.gdr_pci, c.shared), (Some(true), true, true));
    let c = chan("Channel 00/1 : 0[0] -> 8[0] [receive] via NET/IB/0/Shared");
    assert_eq!((c.gdr, c.shared), (Some(false), true));
}

#[test]
fn form_net_names_of_plugins() {
    for (name, dev) in [
        ("IB", 1),
        ("Socket", 3),
        ("IBext", 0),
        ("IBext_v8", 7),
        ("AWS Libfabric", 2),
        ("Mesh", 4),
    ] {
        let c = chan(&format!(
            "Channel 00/0 : 0[0] -> 1[0] [send] via NET/{name}/{dev}"
        ));
        assert_eq!((c.net.as_deref(), c.dev), (Some(name), Some(dev)));
    }
}

#[test]
fn form_per_gpu_gdr_2_5_prefixed_and_strict_less() {
    let g =
        gpu_gdr("NET/IB : GPU Direct RDMA Enabled for GPU 18000 / HCA 0 (distance 2 < 4), read 0");
    assert_eq!(g.form, GpuGdrForm::Net25);
    assert_eq!(
        (g.distance, g.level, g.read),
        (Some(2), Some(4), Some(false))
    );
}

#[test]
fn form_per_gpu_gdr_2_6_to_2_20() {
    // "GPU Direct RDMA Enabled for GPU %lx / HCA %d (distance %d <= %d), read %d"
    let g = gpu_gdr("GPU Direct RDMA Enabled for GPU 86000 / HCA 0 (distance 4 <= 4), read 0");
    assert_eq!(
        (g.form, g.enabled, g.gpu.as_str(), g.hca.as_str()),
        (GpuGdrForm::Classic, true, "86000", "0")
    );
    assert_eq!(
        (g.distance, g.level, g.read),
        (Some(4), Some(4), Some(false))
    );
    let g = gpu_gdr("GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 5 > 4)");
    assert_eq!(
        (g.enabled, g.distance, g.level, g.read),
        (false, Some(5), Some(4), None)
    );
}

#[test]
fn form_per_gpu_gdr_2_21_to_2_23_hca_net_id() {
    let g = gpu_gdr(
        "GPU Direct RDMA Enabled for GPU 19000 / HCA 100000000000003 (distance 4 <= 4), read 1",
    );
    assert_eq!(g.hca, "100000000000003");
}

#[test]
fn form_per_gpu_gdr_2_24_to_2_25_gpu_is_rank() {
    let g = gpu_gdr("GPU Direct RDMA Disabled for GPU 5 / HCA 3 (distance 7 > 4)");
    assert_eq!(
        (g.gpu.as_str(), g.hca.as_str(), g.distance),
        ("5", "3", Some(7))
    );
}

#[test]
fn form_per_gpu_gdr_2_26_to_2_28_mode() {
    let g =
        gpu_gdr("GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 4 <= 5), read 1 mode Default");
    assert_eq!(
        (g.form, g.mode.as_deref(), g.read),
        (GpuGdrForm::Mode, Some("Default"), Some(true))
    );
}

#[test]
fn form_per_gpu_gdr_2_29_ids_and_pxn() {
    let g = gpu_gdr(
        "GPU Direct RDMA Enabled for GPU/0-19000 (rank 0) - NET/0-3 (distance 4 <= 6, read 1, mode Default)",
    );
    assert_eq!(
        (g.form, g.gpu.as_str(), g.rank, g.hca.as_str()),
        (GpuGdrForm::Ids, "19000", Some(0), "3")
    );
    assert_eq!(
        (g.distance, g.level, g.mode.as_deref()),
        (Some(4), Some(6), Some("Default"))
    );
    let g = gpu_gdr(
        "GPU Direct RDMA Disabled for GPU/0-19000 (rank 0) - NET/0-3 ( using PXN via GPU/0-1b000, distance 9 > 6)",
    );
    assert_eq!(
        (g.enabled, g.pxn_via.as_deref(), g.distance),
        (false, Some("GPU/0-1b000"), Some(9))
    );
}

#[test]
fn form_per_gpu_gdr_2_30_trace_only() {
    // In 2.30 the same text is logged at TRACE: read when a TRACE log is given.
    let log = parse_text(
        "n:1:2 [0] 123.456789 ncclTopoCheckGdr:545 NCCL TRACE GPU Direct RDMA Enabled for GPU/0-19000 (rank 0) - NET/0-3 (distance 4 <= 6, read 1, mode Default)\n",
    );
    assert_eq!(log.entries.len(), 1);
    assert_eq!(log.entries[0].header.as_ref().unwrap().level, Level::Trace);
}

#[test]
fn form_per_nic_gdr_no_module_and_2_13_form() {
    match one("NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)") {
        Record::NicGdr(n) => assert_eq!(
            (n.enabled, n.hca, n.name.as_str(), n.no_module),
            (false, 1, "mlx5_1", true)
        ),
        r => panic!("{r:?}"),
    }
    match one("NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'") {
        Record::NicGdr(n) => assert_eq!(
            (n.enabled, n.hca, n.name.as_str(), n.no_module),
            (false, 0, "mlx5_0", false)
        ),
        r => panic!("{r:?}"),
    }
    match one("NET/IBext_v8 : GPU Direct RDMA Enabled for HCA 2 'mlx5_4'") {
        Record::NicGdr(n) => assert_eq!((n.transport.as_str(), n.enabled), ("IBext_v8", true)),
        r => panic!("{r:?}"),
    }
}

#[test]
fn form_ring_summary() {
    assert_eq!(
        one("Connected all rings"),
        Record::RingsConnected {
            pxn: None,
            gdr: None
        }
    );
    assert_eq!(
        one("Connected all rings, use ring PXN 0 GDR 1"),
        Record::RingsConnected {
            pxn: Some(0),
            gdr: Some(1)
        }
    );
}

#[test]
fn form_comm_lines() {
    let c = |m: &str| match one(m) {
        Record::Comm(c) => c,
        r => panic!("{r:?}"),
    };
    let a = c("comm 0x72a6b00 rank 0 nranks 2 cudaDev 0 busId 81000 - Init COMPLETE");
    assert_eq!(
        (
            a.rank,
            a.nranks,
            a.cuda_dev,
            a.bus_id.as_deref(),
            a.phase.as_deref()
        ),
        (
            Some(0),
            Some(2),
            Some(0),
            Some("81000"),
            Some("Init COMPLETE")
        )
    );
    let b = c(
        "comm 0x8dd01c0 rank 2 nranks 16 cudaDev 2 busId 48000 commId 0x1d2c3b4a - Init COMPLETE",
    );
    assert_eq!(b.comm_id.as_deref(), Some("0x1d2c3b4a"));
    let d = c(
        "ncclCommInitRank comm 0x5594b5eb16a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 19000 commId 0xb458bb774b113b3a - Init START",
    );
    assert_eq!(
        (d.func.as_deref(), d.nvml_dev, d.phase.as_deref()),
        (Some("ncclCommInitRank"), Some(0), Some("Init START"))
    );
    let e = c("comm 0x5594b5eb16a0 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0");
    assert_eq!(
        (e.nranks, e.nnodes, e.local_ranks, e.local_rank),
        (Some(2), Some(2), Some(1), Some(0))
    );
}

#[test]
fn form_before_2_3_info_without_the_nccl_word() {
    // NCCL 2.2 and older (horovod#492): `host:pid:tid [dev] INFO message`.
    let log = parse_text("node07:2451:2473 [0] INFO Using internal Network IB\n");
    assert_eq!(log.entries.len(), 1, "{log:#?}");
    let h = log.entries[0].header.as_ref().unwrap();
    assert_eq!((h.host.as_str(), h.pid), ("node07", 2451));
    // Another program's INFO text is not taken: a header must start the line and name a host.
    for other in [
        "2024-01-01 12:00:00,123 [0] INFO Using internal Network IB\n",
        "log: node07:2451:2473 [0] INFO Using internal Network IB\n",
        ":2451:2473 [0] INFO Using internal Network IB\n",
    ] {
        assert!(parse_text(other).entries.is_empty(), "{other}");
    }
}

#[test]
fn form_nic_lists() {
    let l = |m: &str| match one(m) {
        Record::NicList(l) => l,
        r => panic!("{r:?}"),
    };
    let a = l(
        "NET/IB : Using [0]mlx5_8:1/IB [1]mlx5_9:1/IB [7]mlx5_16:1/RoCE ; OOB ib8:192.168.1.8<0>",
    );
    assert!(a.old_form && !a.relaxed_ordering);
    assert_eq!(a.nics.len(), 3);
    assert_eq!(
        (
            a.nics[2].index,
            a.nics[2].name.as_str(),
            a.nics[2].port,
            a.nics[2].link.as_deref()
        ),
        (7, "mlx5_16", Some(1), Some("RoCE"))
    );
    let b =
        l("NET/IB : Using [0]mlx5_0:1/IB/SHARP [4]mlx5_2:1/RoCE [RO]; OOB ib0.0065:10.1.32.3<0>");
    assert!(b.relaxed_ordering && !b.old_form);
    assert!(b.nics[0].sharp);
    assert_eq!(b.oob.as_deref(), Some("ib0.0065:10.1.32.3<0>"));
    let c = l(
        "NET/IB : Using [0]={[0] mlx5_0:1/IB, [1] mlx5_1:1/IB} [1]mlx5_2:1/IB [RO]; OOB eth0:10.0.0.1<0>",
    );
    assert_eq!(c.nics[0].members.len(), 2);
    assert_eq!(c.nics[0].members[1].name, "mlx5_1");
    assert_eq!(c.nics[1].name, "mlx5_2");
    let d = l("NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>");
    assert_eq!(
        (
            d.transport.as_str(),
            d.nics[1].name.as_str(),
            d.nics[1].addr.as_deref()
        ),
        ("Socket", "eth1", Some("10.0.1.1<0>"))
    );
    // NCCL 2.2 and older printed the list without `Using` (horovod#492).
    let f = l("NET/IB: [0] mlx4_0:1/IB");
    assert_eq!(
        (f.nics.len(), f.nics[0].name.as_str(), f.nics[0].port),
        (1, "mlx4_0", Some(1))
    );
    // No IB device passed NCCL's filters: 2.28 still prints the list, empty, after `No device
    // found.` (the lent H200 VM's own log, shared/reference/h200).
    let e = l("NET/IB : Using [RO]; OOB eth0:192.0.2.2<0>");
    assert!(e.nics.is_empty() && e.relaxed_ordering);
    assert_eq!(e.oob.as_deref(), Some("eth0:192.0.2.2<0>"));
    // Text that is not entries is still refused, not read as an empty list.
    let log = parse_text(&format!(
        "{H}NET/IB : Using mlx5_0 [RO]; OOB eth0:10.0.0.1<0>\n"
    ));
    assert_eq!(log.refused.len(), 1, "{log:#?}");
}

#[test]
fn form_virtual_nics() {
    match one("NET/IB : Made virtual device [8] name=mlx5_0+mlx5_1 speed=800000 ndevs=2") {
        Record::VirtualNic(v) => assert_eq!(
            (v.index, v.name.as_str(), v.ndevs, v.rail),
            (8, "mlx5_0+mlx5_1", Some(2), None)
        ),
        r => panic!("{r:?}"),
    }
    match one(
        "NET/IB : Made virtual device [9] name=mlx5_2+mlx5_3 speed=800000 ndevs=2 rail=1 plane=0",
    ) {
        Record::VirtualNic(v) => assert_eq!((v.rail, v.plane), (Some(1), Some(0))),
        r => panic!("{r:?}"),
    }
}

#[test]
fn form_socket_fallback() {
    assert_eq!(
        one("NET/IB : No device found."),
        Record::NoDevice {
            transport: "IB".into()
        }
    );
    assert_eq!(
        one("Using network Socket"),
        Record::UsingNetwork {
            name: "Socket".into()
        }
    );
    assert_eq!(
        one("NCCL_NET_GDR_LEVEL set by environment to PHB"),
        Record::Env {
            name: "NCCL_NET_GDR_LEVEL".into(),
            value: "PHB".into()
        }
    );
    assert_eq!(
        one("NCCL_SHM_DISABLE set by environment to 1."),
        Record::Env {
            name: "NCCL_SHM_DISABLE".into(),
            value: "1".into()
        }
    );
}

#[test]
fn form_topology_system_nodes_and_paths() {
    assert_eq!(
        one("=== System : maxWidth 24.0 totalWidth 240.0 ==="),
        Record::TopoSystem {
            word: "maxWidth".into(),
            max: 24.0,
            total: 240.0
        }
    );
    assert!(matches!(
        one("=== System : maxBw 24.0 totalBw 240.0 ==="),
        Record::TopoSystem { .. }
    ));
    match one("              + PCI[24.0] - GPU/84000 (4)") {
        Record::TopoNode(n) => {
            assert_eq!(n.indent, 14);
            assert_eq!(n.node.to_string(), "GPU/84000");
            assert_eq!(n.link, Some(("PCI".into(), 24.0)));
        }
        r => panic!("{r:?}"),
    }
    match one("GPU/5000 :GPU/0-4000 (2/370.8/NVL) NET/0-1 (5/24.0/PHB) NET/0-3 (5/24.0/PH") {
        Record::TopoPaths(p) => {
            assert_eq!(p.from.to_string(), "GPU/5000");
            assert_eq!(p.paths.len(), 2, "the cut entry is dropped");
            assert_eq!(
                (
                    p.paths[1].to.system,
                    p.paths[1].to.id,
                    p.paths[1].path.as_str()
                ),
                (Some(0), 1, "PHB")
            );
        }
        r => panic!("{r:?}"),
    }
}

#[test]
fn completion_errors_of_each_form() {
    let c = |m: &str| {
        let log = parse_text(&format!(
            "\nh:1:2 [0] transport/net_ib.cc:1000 NCCL WARN {m}\n"
        ));
        match &log.entries[0].record {
            Record::Completion(c) => (c.status, c.vendor_err, c.peer.clone()),
            r => panic!("{r:?}"),
        }
    };
    assert_eq!(
        c("NET/IB : Got completion with error 4, opcode 0, len 0, vendor err 81"),
        (Some(4), Some(81), None)
    );
    assert_eq!(
        c(
            "NET/IB : Got completion from peer 10.1.32.3<42519> with error 5, opcode 0, len 0, vendor err 249"
        ),
        (Some(5), Some(249), Some("10.1.32.3<42519>".into()))
    );
    assert_eq!(
        c(
            "NET/IB : Got completion from peer 1.2.3.4<1> with status=12 opcode=0 len=0 vendor err 129 (Transport retry counter exceeded)"
        ),
        (Some(12), Some(129), Some("1.2.3.4<1>".into()))
    );
    assert_eq!(
        c(
            "NET/IB: Got completion from peer 1.2.3.4<1> with status=IBV_WC_LOC_PROT_ERR(4) opcode=IBV_WC_RDMA_WRITE(1) vendor_err=81 hca mlx5_0"
        ),
        (Some(4), Some(81), Some("1.2.3.4<1>".into()))
    );
}

#[test]
fn headers_warn_trace_timestamp_and_launchers() {
    let log = parse_text(
        "[2025-01-14 12:34:56] h1:1:2 [0] misc/ibvwrap.cc:12 (wrap_ibv_reg_mr) NCCL WARN Call to ibv_reg_mr failed\n\
         [1,0]<stdout>:h2:3:4 [1] NCCL INFO Using network IB\n\
         [rank3]:h3:5:6 [3] NCCL INFO Using network IB\r\n",
    );
    let hs: Vec<(&str, i64, Level)> = log
        .entries
        .iter()
        .map(|e| {
            let h = e.header.as_ref().unwrap();
            (h.host.as_str(), h.cuda_dev, h.level)
        })
        .collect();
    assert_eq!(
        hs,
        [
            ("h1", 0, Level::Warn),
            ("h2", 1, Level::Info),
            ("h3", 3, Level::Info)
        ]
    );
    assert_eq!(
        log.entries[0].header.as_ref().unwrap().source.as_deref(),
        Some("misc/ibvwrap.cc:12 (wrap_ibv_reg_mr)")
    );
    assert!(log.entries.iter().all(|e| e.complete));
}

#[test]
fn two_lines_run_together_are_split_and_the_first_is_incomplete() {
    let log = parse_text(
        "swat1-04:77:1 [5] NCCL INFO Using network IB\n\
         swat1-04:77:1 [5] NCCL INFO Channel 03/0 : 5[5] -> 12[4] [send] via NET/IB/3swat1-04:77:2 [4] NCCL INFO Channel 03/0 : 13[5] -> 4[4] [receive] via NET/IB/3/GDRDMA\n",
    );
    assert_eq!(log.entries.len(), 3, "{log:#?}");
    let first = &log.entries[1];
    assert!(!first.complete);
    match &first.record {
        // Cut where the device number ends: the number itself may be cut too.
        Record::NetChannel(c) => assert_eq!(
            (c.net.as_deref(), c.dev, c.gdr),
            (Some("IB"), None, None),
            "cut: GDR unknown"
        ),
        r => panic!("{r:?}"),
    }
    let second = &log.entries[2];
    let h = second.header.as_ref().unwrap();
    assert_eq!((h.host.as_str(), h.host_repaired), ("swat1-04", true));
    assert!(second.complete);
}

#[test]
fn cut_lines_say_unknown_not_absent() {
    let log = parse_text(
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/1\n[... text missing here ...]\nh:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDR",
    );
    let gdr: Vec<Option<bool>> = log
        .entries
        .iter()
        .map(|e| match &e.record {
            Record::NetChannel(c) => c.gdr,
            _ => panic!(),
        })
        .collect();
    assert_eq!(gdr, [None, Some(true)]);
    assert_eq!(log.gaps, [2]);
}

#[test]
fn an_nccl_tests_row_head_before_an_nccl_line_is_a_fragment() {
    // nccl-tests printed `size count type redop root` of a row, then NCCL (same pid) wrote a
    // line before the row's numbers: the host token `-1h` is cut back to the known `h`.
    let l = lines(
        "h:7:8 [0] NCCL INFO Using network IB\n     1048576        262144     float     sum      -1h:7:8 [0] NCCL INFO Connected all rings\n",
    );
    let mut f = Vec::new();
    let log = parse(&l, &mut f);
    assert_eq!(log.entries.len(), 2);
    assert!(log.entries[1].header.as_ref().unwrap().host_repaired);
    assert_eq!(f.len(), 1);
    assert!(!f[0].ended);
    assert_eq!(
        f[0].text,
        "     1048576        262144     float     sum      -1"
    );
}

#[test]
fn banner_and_command_lines() {
    let log = parse_text(
        "NCCL version 2.21.5+cuda12.4\nNCCL_IB_HCA=mlx5 NCCL_NET_GDR_LEVEL=4 ./build/all_reduce_perf -b 8\nroot@gh-1:/ws# NCCL_DEBUG=INFO torchrun x.py\n",
    );
    match &log.entries[0].record {
        Record::Version(v) => assert_eq!(v.number, (2, 21, 5)),
        r => panic!("{r:?}"),
    }
    assert_eq!(log.commands.len(), 2);
    assert_eq!(
        log.commands[0].env[1],
        ("NCCL_NET_GDR_LEVEL".into(), "4".into())
    );
    assert_eq!(log.commands[1].host.as_deref(), Some("gh-1"));
}

#[test]
fn form_net_channel_2_3_ring_receive_side_without_direction() {
    // 2.3 net.cu recvSetup: "Ring %02d : %d -> %d via NET/%s/%d%s%s" (/GDRDMA, /GDCopy)
    let c = chan("Ring 01 : 7 -> 0 via NET/IB/0/GDRDMA/GDCopy");
    assert!(c.ring && !c.send);
    assert_eq!((c.from_rank, c.to_rank), (7, 0));
    assert!(c.from_bracket.is_empty() && c.to_bracket.is_empty());
    assert_eq!((c.dev, c.gdr), (Some(0), Some(true)));
}

#[test]
fn form_net_channel_2_4_ring_bare_ranks() {
    // 2.4 net.cc: "Ring %02d : %d -> %d [receive] via NET/%s/%d%s" (NVIDIA/nccl#229)
    let c = chan("Ring 00 : 7 -> 8 [receive] via NET/AWS Libfabric/0");
    assert!(c.ring && !c.send);
    assert_eq!((c.to_rank, c.to_bracket.as_str()), (8, ""));
    assert_eq!(
        (c.net.as_deref(), c.dev, c.gdr),
        (Some("AWS Libfabric"), Some(0), Some(false))
    );
    // A ring order print is not a connection (NVIDIA/nccl#676).
    assert!(matches!(
        parse_message("Ring 00 : 1 -> 0 -> 1", true),
        Parsed::Other
    ));
}

#[test]
fn form_net_channel_2_5_to_2_6_ring_busid() {
    // 2.5–2.6 net.cc: "Ring %02d : %d[%lx] -> %d[%lx] [send] via NET/%s/%d%s" (NVIDIA/nccl#385)
    let c = chan("Ring 00 : 9[23000] -> 0[1e000] [send] via NET/IB/1/GDRDMA");
    assert!(c.ring && c.send);
    assert_eq!((c.from_rank, c.from_bracket.as_str()), (9, "23000"));
    assert_eq!((c.dev, c.gdr), (Some(1), Some(true)));
}

#[test]
fn form_per_gpu_gdr_2_3_to_2_4_cuda_and_nvml_dev() {
    // 2.4 net.cc: "NET/%s : GPU Direct RDMA Disabled for GPU %d[%d] / HCA %d (distance %d >= %d)"
    let g = gpu_gdr("NET/IB : GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 4 >= 2)");
    assert_eq!(g.form, GpuGdrForm::Net24);
    assert!(!g.enabled);
    assert_eq!((g.gpu.as_str(), g.hca.as_str()), ("2[2]", "0"));
    assert_eq!((g.distance, g.level), (Some(4), Some(2)));
    // "… Enabled for GPU %d[%d] / HCA %d (distance %d < %d), read %d"
    let g =
        gpu_gdr("NET/IB : GPU Direct RDMA Enabled for GPU 0[0] / HCA 0 (distance 1 < 2), read 0");
    assert!(g.enabled && g.read == Some(false));
    // net_ib.cc: "… for GPU %d[%d] / HCA %d '%s' (no module or not supported by GPU)"
    let g = gpu_gdr(
        "NET/IB : GPU Direct RDMA Disabled for GPU 1[1] / HCA 0 'mlx5_0' (no module or not supported by GPU)",
    );
    assert_eq!(g.form, GpuGdrForm::Net24);
    assert_eq!(
        g.reason.as_deref(),
        Some("no module or not supported by GPU")
    );
    // 2.3 net_ib.cu: "NET/IB : GPU Direct RDMA Disabled for GPU %d / HCA %s (%s)"
    let g = gpu_gdr("NET/IB : GPU Direct RDMA Disabled for GPU 0 / HCA mlx5_0 (no module)");
    assert_eq!((g.form, g.hca.as_str()), (GpuGdrForm::Net24, "mlx5_0"));
    assert_eq!(g.reason.as_deref(), Some("no module"));
    // 2.5 (busId) stays its own form.
    let g =
        gpu_gdr("NET/IB : GPU Direct RDMA Enabled for GPU 1a000 / HCA 0 (distance 2 < 3), read 0");
    assert_eq!(g.form, GpuGdrForm::Net25);
}

#[test]
fn form_nic_distance_2_4() {
    // 2.4 net.cc: "CUDA Dev %d[%d], %s NIC distance : %s" (NVIDIA/nccl#226, #229)
    match one("CUDA Dev 1[1], AWS Libfabric NIC distance :  SYS") {
        Record::NicDistance(d) => {
            assert_eq!((d.cuda_dev, d.nvml_dev), (1, 1));
            assert_eq!((d.net.as_str(), d.path.as_str()), ("AWS Libfabric", "SYS"));
        }
        r => panic!("{r:?}"),
    }
    assert!(matches!(
        one("CUDA Dev 0[0], Socket NIC distance :  PHB"),
        Record::NicDistance(NicDistance { ref net, .. }) if net == "Socket"
    ));
}

#[test]
fn form_plugin_gdr_off_and_no_verbs() {
    // aws-ofi-nccl nccl_ofi_ofiutils.cpp: "Could not disable CUDA API usage for HMEM, disabling
    // GDR" and platform-aws.cpp "GDR disabled on GDR-supported instance type %s", after its
    // "NET/OFI " prefix.
    assert!(matches!(
        one("NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR"),
        Record::PluginGdrOff { .. }
    ));
    assert!(matches!(
        one("NET/OFI GDR disabled on GDR-supported instance type p4d.24xlarge"),
        Record::PluginGdrOff { .. }
    ));
    // ibvwrap.cc (WARN in NCCL, INFO in RCCL): "Failed to open libibverbs.so[.1]"
    assert!(matches!(
        one("Failed to open libibverbs.so[.1]"),
        Record::NoVerbs
    ));
}

#[test]
fn headers_cut_before_the_host_or_printed_without_one() {
    // A line cut before its host (autoscriptlabs/nccl-mesh-plugin#56), a host name replaced by
    // hand with a space after it (NVIDIA/nccl-tests#217), no host:pid:tid at all
    // (NVIDIA/nccl-tests#245), a Markdown quote (ROCm/rccl#1728).
    let log = parse_text(
        ":22901:22901 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 0\n\
         NAME :70918:70928 [0] NCCL INFO Using network Socket\n\
         [0] NCCL INFO comm 0x2515e00 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1e0 commId 0x1c71981584deedae - Init START\n\
         > node-0:188802:188813 [0] NCCL INFO Using network Socket\n",
    );
    let hs: Vec<(&str, u32, i64, bool)> = log
        .entries
        .iter()
        .map(|e| {
            let h = e.header.as_ref().unwrap();
            (h.host.as_str(), h.pid, h.cuda_dev, h.headerless)
        })
        .collect();
    assert_eq!(
        hs,
        [
            ("", 22901, 0, false),
            ("NAME", 70918, 0, false),
            ("", 0, 0, true),
            ("node-0", 188802, 0, false)
        ]
    );
}

#[test]
fn rccl_banners_date_the_log() {
    for b in [
        "RCCL version 2.20.5+hip6.2 HEAD:d380693+",
        "RCCL version : 2.21.5-HEAD:9a0e6a1",
    ] {
        let log = parse_text(&format!("{b}\n"));
        match &log.entries[0].record {
            Record::Version(v) => assert_eq!(v.number.0, 2, "{b}"),
            r => panic!("{b}: {r:?}"),
        }
    }
}

#[test]
fn lines_of_other_forms_are_kept_with_their_text() {
    let log = parse_text(&format!(
        "{H}Setting affinity for GPU 1 to 0fffff00,000fffff\n"
    ));
    assert_eq!(log.unread.len(), 1);
    assert_eq!(log.unread[0].line, 1);
    assert!(log.unread[0].text.starts_with("Setting affinity"));
}

#[test]
fn form_peer_channels_name_the_sender_in_every_release() {
    // p2pSendSetup/shmSendSetup print `myInfo->rank` first in every release.
    let peer = |msg: &str| match one(msg) {
        Record::PeerChannel(c) => c,
        r => panic!("{msg}: {r:?}"),
    };
    // 2.3: "Ring %02d : %d -> %d via P2P/common device" (no brackets)
    let c = peer("Ring 00 : 1 -> 2 via P2P/common device");
    assert_eq!(
        (c.from_rank, c.from_bracket.as_str(), c.to_rank),
        (1, "", 2)
    );
    // 2.3–2.4: "Ring %02d : %d[%d] -> %d[%d] via direct shared memory" (cudaDev)
    let c = peer("Ring 01 : 0[0] -> 1[1] via direct shared memory");
    assert_eq!((c.from_rank, c.via.as_str()), (0, "direct shared memory"));
    // 2.7–2.11: "Channel %02d : %d[%lx] -> %d[%lx] via P2P/IPC%s" (busId)
    let c = peer("Channel 15 : 0[6000] -> 6[d0000] via P2P/IPC/read");
    assert_eq!((c.from_rank, c.from_bracket.as_str()), (0, "6000"));
    // 2.19+: "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/CUMEM%s%s" (nvmlDev), SHM/%s/%s
    let c = peer("Channel 04/0 : 0[0] -> 7[7] via P2P/CUMEM");
    assert_eq!(
        (c.from_rank, c.to_rank, c.via.as_str()),
        (0, 7, "P2P/CUMEM")
    );
    let c = peer("Channel 00 : 3[3] -> 2[2] via SHM/direct/direct");
    assert_eq!(c.from_rank, 3);
}

#[test]
fn form_using_network_2_3_internal_or_external() {
    // 2.3: "Using internal Network %s" / "Using external Network %s" (a plugin)
    for (msg, want) in [
        ("Using internal Network Socket", "Socket"),
        ("Using external Network AWS Libfabric", "AWS Libfabric"),
        ("Using network IB", "IB"),
    ] {
        assert_eq!(
            one(msg),
            Record::UsingNetwork { name: want.into() },
            "{msg}"
        );
    }
}

#[test]
fn form_rank_lines_2_3_and_init_timings_2_22_on() {
    let rank = |msg: &str| match one(msg) {
        Record::RankOf { rank, nranks } => (rank, nranks),
        r => panic!("{msg}: {r:?}"),
    };
    // 2.3: INFO(INIT,"rank %d nranks %d", myrank, nranks)
    assert_eq!(rank("rank 6 nranks 8"), (6, Some(8)));
    // 2.22: "Init timings: rank %d nranks %d total %.2f (…)"
    assert_eq!(
        rank(
            "Init timings: rank 2 nranks 16 total 1.08 (kernels 0.51, bootstrap 0.22, allgathers 0.01, topo 0.28, graphs 0.04, connections 0.02, rest 0.01)"
        ),
        (2, Some(16))
    );
    // 2.23+: "Init timings - %s: rank %d nranks %d total %.2f (…)"
    assert_eq!(
        rank(
            "Init timings - ncclCommInitRankConfig: rank 5 nranks 8 total 0.53 (kernels 0.12, alloc 0.05, bootstrap 0.01, allgathers 0.00, topo 0.20, graphs 0.01, connections 0.10, rest 0.04)"
        ),
        (5, Some(8))
    );
}

#[test]
fn a_header_whose_message_came_after_another_process_line_keeps_it() {
    // ≤ 2.3 printed the header and the message with two fprintf calls (include/debug.h).
    let log = parse_text(
        "learnfair062:40507:40644 [2] NCCL INFO learnfair062:40515:40515 [6] NCCL INFO Using internal Network IB\n\
         learnfair062:40515:40515 [6] NCCL INFO rank 6 nranks 8\n\
         comm 0x7f6df005a260 rank 2 nranks 8\n",
    );
    assert!(log.unread.is_empty(), "{:?}", log.unread);
    assert!(log.entries.iter().any(|e| matches!(&e.record,
        Record::UsingNetwork { name } if name == "IB")));
    let comm = log
        .entries
        .iter()
        .find(|e| matches!(&e.record, Record::Comm(c) if c.rank == Some(2)))
        .expect("the comm line of rank 2");
    let h = comm.header.as_ref().unwrap();
    assert_eq!((h.pid, h.cuda_dev, comm.line), (40507, 2, 3));
    // Further than two lines on, a headerless line is not given to it.
    let log = parse_text(
        "h:1:1 [2] NCCL INFO h:9:9 [6] NCCL INFO rank 6 nranks 8\na\nb\ncomm 0x1 rank 2 nranks 8\n",
    );
    assert!(
        !log.entries
            .iter()
            .any(|e| matches!(&e.record, Record::Comm(_))),
        "{log:#?}"
    );
}

#[test]
fn a_connection_quoted_without_its_header_is_read() {
    let log = parse_text(
        "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n9[1a000] -> 2[6b000] [receive] via NET/IB/1\n",
    );
    let chans: Vec<&NetChannel> = log
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::NetChannel(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(chans.len(), 2);
    assert_eq!(
        (chans[0].channel, chans[0].send, chans[0].gdr),
        (None, true, Some(true))
    );
    assert_eq!(
        (chans[1].send, chans[1].gdr, chans[1].dev),
        (false, Some(false), Some(1))
    );
    assert!(
        log.entries
            .iter()
            .all(|e| e.header.as_ref().unwrap().headerless)
    );
    // Prose that merely contains an arrow is not one.
    let log = parse_text("2 -> 3 is slow via NET/IB but why\n");
    assert!(log.entries.is_empty());
}

#[test]
fn form_net_connection_before_2_3_without_ring_or_direction() {
    // ≤ 2.2 (no source published; the line issue 43 quotes): `%d -> %d via NET/%s/%d[/GDRDMA]`
    // after a header without `NCCL`, printed like 2.3's by the receiving side.
    let log = parse_text("node07:2451:2473 [4] INFO 3 -> 12 via NET/IB/0/GDRDMA\n");
    assert!(log.refused.is_empty() && log.unread.is_empty(), "{log:#?}");
    let Record::NetChannel(c) = &log.entries[0].record else {
        panic!("{log:#?}")
    };
    assert!(c.ring && !c.send && c.channel.is_none());
    assert_eq!((c.from_rank, c.to_rank), (3, 12));
    assert_eq!(
        (c.net.as_deref(), c.dev, c.gdr),
        (Some("IB"), Some(0), Some(true))
    );
    let log = parse_text("node07:2451:2473 [4] INFO 3 -> 12 via NET/IB/0\n");
    let Record::NetChannel(c) = &log.entries[0].record else {
        panic!("{log:#?}")
    };
    assert_eq!(c.gdr, Some(false));
}

#[test]
fn form_net_channel_rccl_comm_suffix() {
    // rccl transport/net.cc: "Channel %02d/%d : %d[%lx] -> %d[%lx] [send] via NET/%s/%d%s%s comm
    // %p nRanks %02d" (and `/%d(%d)` with PXN's proxy).
    let c = chan("Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/0 comm 0x2035d540 nRanks 02");
    assert!(c.send);
    assert_eq!((c.dev, c.gdr), (Some(0), Some(false)));
    let c = chan(
        "Channel 00/0 : 1[7000] -> 0[b7000] [receive] via NET/UCX/0/GDRDMA comm 0x22fcfb0 nRanks 02",
    );
    assert_eq!((c.net.as_deref(), c.gdr), (Some("UCX"), Some(true)));
    let c = chan(
        "Channel 02/1 : 3[3b000] -> 11[3b000] [send] via NET/IB/3(5)/GDRDMA/Shared comm (nil) nRanks 16",
    );
    assert_eq!((c.proxy, c.gdr, c.shared), (Some(5), Some(true), true));
    // Cut inside the comm suffix: the GDR suffixes came before it, so their absence is certain.
    let log = parse_text(&format!(
        "{H}Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/0 comm 0x2035"
    ));
    let Record::NetChannel(c) = &log.entries[0].record else {
        panic!("{log:#?}")
    };
    assert!(!log.entries[0].complete);
    assert_eq!(c.gdr, Some(false));
    // rccl init.cc: "Connected all rings comm %p nRanks %02d busId %lx"; the P2P/SHM lines'
    // suffix is not part of the transport.
    assert_eq!(
        one("Connected all rings comm 0x2b6520000c00 nRanks 08 busId 4000"),
        Record::RingsConnected {
            pxn: None,
            gdr: None
        }
    );
    match one("Channel 00/0 : 0[d6000] -> 3[c6000] via P2P/IPC comm 0x9bbf3b0 nRanks 4096") {
        Record::PeerChannel(p) => assert_eq!(p.via, "P2P/IPC"),
        r => panic!("{r:?}"),
    }
}

#[test]
fn a_connection_cut_by_other_output_is_not_complete() {
    // Text after the NET device that is no suffix NCCL prints: another output cut the line,
    // so `/GDRDMA` is unknown — neither absent nor a refusal.
    for line in [
        "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0(RayWorkerWrapper pid=2982, ip=10.0.0.2) INFO 12-05 loading",
        "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0 INFO 12-05 12:00:01 worker.py:12] ready",
    ] {
        let log = parse_text(&format!("{H}{line}\n"));
        assert!(log.refused.is_empty(), "{line}: {:?}", log.refused);
        let Record::NetChannel(c) = &log.entries[0].record else {
            panic!("{log:#?}")
        };
        assert_eq!((c.dev, c.gdr), (Some(0), None), "{line}");
    }
    // The end of a cut line printed on a later line of its own (Ray's prefix naming the same
    // worker): the connection it ends is cut, not complete without /GDRDMA.
    let text = "(RayWorkerWrapper pid=2981, ip=10.0.0.1) h:2981:3113 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0\n\
                (RayWorkerWrapper pid=2982, ip=10.0.0.1) h:2982:3120 [1] NCCL INFO Channel 00/0 : 2[1] -> 3[1] [receive] via NET/IB/1\n\
                (RayWorkerWrapper pid=2981, ip=10.0.0.1) /GDRDMA\n";
    let log = parse_text(text);
    assert_eq!(log.cut_ends, vec![(3, 1)], "{log:#?}");
    let gdr = |i: usize| match &log.entries[i].record {
        Record::NetChannel(c) => (c.gdr, log.entries[i].complete),
        r => panic!("{r:?}"),
    };
    assert_eq!(gdr(0), (None, false));
    assert_eq!(
        gdr(1),
        (Some(false), true),
        "another worker's line stays complete"
    );
    // A suffix alone with no connection before it is not taken.
    assert!(parse_text("/GDRDMA\n").cut_ends.is_empty());
}

#[test]
fn ordinary_info_lines_are_known_forms_skipped_knowingly() {
    // Format strings of NVIDIA/nccl's src/ (init.cc, enqueue, graph/connect.cc, include/checks.h).
    for (msg, known) in [
        ("cudaDriverVersion 12020", true),
        ("Setting affinity for GPU 3 to ffff,ffffffff", true),
        (
            "32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
            true,
        ),
        ("threadThresholds 8/8/64 | 128/8/64 | 512 | 512", true),
        ("Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1", true),
        ("Channel 00/04 :    0   1", true),
        ("Ring 00 :    0   1", true),
        ("transport/net.cc:858 -> 3", true),
        ("P2P Chunksize set to 131072", true),
        ("[Proxy Progress] Device 0 CPU core 19", true),
        (
            "channel.cc:55 Cuda Alloc Size 8 pointer 0x7f4fe7e00000",
            true,
        ),
        (" 0 : NET/0 GPU/1 NET/0", true),
        ("Ring 00 : 1 -> 0 -> 1", true),
        ("Something NCCL will print one day 42", false),
        ("Channel 00 : 1 2 via something", false),
    ] {
        assert_eq!(skipped_form(msg).is_some(), known, "{msg}");
    }
    let log = parse_text(&format!(
        "{H}cudaDriverVersion 12020\n{H}A form not known\n"
    ));
    assert_eq!(log.unread.len(), 2);
    assert!(log.unread[0].form.is_some() && log.unread[1].form.is_none());
}

#[test]
fn trees_lines_name_the_printing_rank() {
    let rec = |m: &str, complete: bool| match parse_message(m, complete) {
        Parsed::Record(r) => Some(r),
        _ => None,
    };
    // NVIDIA's form; the 2.20+ one-node form where every entry is `->0->-1`.
    assert_eq!(
        rec("Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1", true),
        Some(Record::Trees {
            rank: 0,
            nranks: None,
            bus_id: None
        })
    );
    // Cut inside an entry (NCCL cuts the line at 1023 characters; copies cut it anywhere):
    // the entries before it still name the rank; a cut busId is not read.
    assert_eq!(
        rec("Trees [0] 2/-1/-1->1->0 [1] 2/-1/-1->1", false),
        Some(Record::Trees {
            rank: 1,
            nranks: None,
            bus_id: None
        })
    );
    assert_eq!(
        rec(
            "Trees [0] 2/-1/-1->1->0 comm 0x1 nRanks 32 busId 170",
            false
        ),
        Some(Record::Trees {
            rank: 1,
            nranks: Some(32),
            bus_id: None
        })
    );
    // No entry with its rank: a cut line is a known form, not a refusal.
    assert!(matches!(
        parse_message("Trees [0] 2/-1/-1->1", false),
        Parsed::Other
    ));
    assert!(matches!(
        parse_message("Trees [0] 2/-1/-1->1->0 [1] 2/-1/-1->3->0", true),
        Parsed::Refused(_)
    ));
}
