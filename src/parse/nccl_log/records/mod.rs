//! The NCCL messages peerpath reads, one type per message, each with the forms it takes across
//! releases (shared/reference/evidence/README.md, "Log-line forms"). Numbers are kept as NCCL
//! printed them where their meaning depends on the version (the bracket after a rank, the GPU
//! and HCA of a GDR line, the `distance` codes); `analysis::evidence` decides the meaning once
//! the version is known.

use super::topo::{self, TopoLine, TopoNodeLine, TopoPaths};
use serde::Serialize;

mod forms;
use forms::*;
pub use forms::{bare_net_channel, connection_start, is_cut_connection_end};

/// What one message says.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// `NCCL version 2.21.5+cuda12.4`.
    Version(Version),
    /// A channel connection over the network transport.
    NetChannel(NetChannel),
    /// A channel connection within the node (`via P2P/…`, `via direct shared memory`, `via
    /// SHM/…`): NCCL prints it from the sending side's setup, so its first rank is the rank
    /// of the process that printed it.
    PeerChannel(PeerChannel),
    /// `rank %d nranks %d` (2.3) or `Init timings[ - %s]: rank %d nranks %d total …` (2.22+):
    /// the rank of the thread that printed it.
    RankOf {
        /// The rank.
        rank: u32,
        /// `nranks`.
        nranks: Option<u32>,
    },
    /// `NET/IB : Using [0]mlx5_0:1/IB …` or `NET/Socket : Using [0]eth0:10.0.0.1<0>`.
    NicList(NicList),
    /// `Bootstrap : Using …`: the out-of-band interface.
    Bootstrap {
        /// The interfaces as printed.
        text: String,
    },
    /// `NET/IB : No device found.`
    NoDevice {
        /// The transport (`IB`).
        transport: String,
    },
    /// `Failed to open libibverbs.so[.1]` (WARN in NCCL, INFO in RCCL), RCCL 2.30's `Could not
    /// open libibverbs.so`: the IB transport has no verbs library, so no IB device.
    NoVerbs,
    /// RCCL's `RCCL: Detected %d IB devices, primary type: %d (count: %d)` (RCCL 2.30, before
    /// its net plugins load): how many RDMA devices it found — 0 is a fact, not a blank.
    IbDevices {
        /// The number detected.
        count: u32,
    },
    /// `Using network IB` (`Socket`, `IBext_v8`, `AWS Libfabric`, …): the network chosen.
    UsingNetwork {
        /// Its name.
        name: String,
    },
    /// A net plugin line (`P2P plugin IBext_v8`, `NET/Plugin : …`, `Plugin Path : …`).
    Plugin {
        /// The text after the keyword.
        text: String,
    },
    /// `NET/IB : Made virtual device [%d] name=%s speed=%d ndevs=%d[ rail=%d plane=%d]` (2.24+).
    VirtualNic(VirtualNic),
    /// `GPU Direct RDMA Enabled|Disabled for GPU … / HCA … (distance …)` (per GPU and NIC).
    GpuGdr(GpuGdr),
    /// `NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)` (≤ 2.12) or
    /// `NET/%s : GPU Direct RDMA Enabled|Disabled for HCA %d '%s'` (2.13+): per NIC.
    NicGdr(NicGdr),
    /// `CUDA Dev %d[%d], %s NIC distance : %s` (2.4): the network a GPU's process uses and its
    /// distance to the NIC.
    NicDistance(NicDistance),
    /// A net plugin saying it turned GPUDirect RDMA off for its process (aws-ofi-nccl:
    /// `NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR`, `NET/OFI GDR disabled
    /// on GDR-supported instance type %s`).
    PluginGdrOff {
        /// The plugin's words.
        text: String,
    },
    /// `Connected all rings` (≤ 2.23) / `Connected all rings, use ring PXN %d GDR %d` (2.24+).
    RingsConnected {
        /// PXN flag (2.24+).
        #[serde(skip_serializing_if = "Option::is_none")]
        pxn: Option<u32>,
        /// GDR flag (2.24+): 1 only if every rank's ring NET connections use GDR.
        #[serde(skip_serializing_if = "Option::is_none")]
        gdr: Option<u32>,
    },
    /// A `comm 0x… rank …` line (init, shape, destroy).
    Comm(Comm),
    /// `Trees [0] 1/-1/-1->0->-1 [1] …` (`init.cc`: per channel ` [%d] %d/%d/%d->%d->%d`, the
    /// three children, this rank, its parent; RCCL's `init.cc` appends ` comm %p nRanks %02d
    /// busId %lx`, NVIDIA's never does):
    /// the rank of the thread that printed it.
    Trees {
        /// The printing rank (the middle number of every channel's entry).
        rank: u32,
        /// RCCL's `nRanks`.
        #[serde(skip_serializing_if = "Option::is_none")]
        nranks: Option<u32>,
        /// RCCL's `busId` (hex, as printed).
        #[serde(skip_serializing_if = "Option::is_none")]
        bus_id: Option<String>,
    },
    /// aws-ofi-nccl's (and aws-ofi-rccl's) `NET/OFI Selected provider is %s, fabric is %s
    /// (found %d nics)` (`nccl_ofi_net.cpp`; before 2023 `Selected Provider is %s` with the
    /// count alone or none): the libfabric provider the plugin uses and how many NICs it found.
    OfiProvider {
        /// Provider (`efa`, `cxi`, `verbs;ofi_rxm`).
        provider: String,
        /// Fabric name, when printed.
        #[serde(skip_serializing_if = "Option::is_none")]
        fabric: Option<String>,
        /// NICs found, when printed.
        #[serde(skip_serializing_if = "Option::is_none")]
        nics: Option<u32>,
    },
    /// `NCCL_X set by environment to V` (also from nccl.conf).
    Env {
        /// Variable name.
        name: String,
        /// Value as echoed.
        value: String,
    },
    /// `… Got completion … error|status N … vendor err N`: a failed RDMA work request.
    Completion(Completion),
    /// Any other WARN line.
    Warn {
        /// The message.
        text: String,
    },
    /// `=== System : maxWidth|maxBw %2.1f totalWidth|totalBw %2.1f ===`.
    TopoSystem {
        /// `maxWidth` (≤ 2.13) or `maxBw` (2.14+).
        word: String,
        /// The maximum.
        max: f64,
        /// The total.
        total: f64,
    },
    /// A line of NCCL's topology print (`+ PCI[24.0] - GPU/84000 (4)`).
    TopoNode(TopoNodeLine),
    /// A line of NCCL's path print (`NET/5 :GPU/0-84000 (5/24.0/PHB) …`).
    TopoPaths(TopoPaths),
}

/// The NCCL release a banner names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Version {
    /// As printed (`2.21.5+cuda12.4`).
    pub text: String,
    /// Major, minor, patch.
    pub number: (u32, u32, u32),
}

/// `Channel %02d[/%d] : %d[%x|%d] -> %d[%x|%d] [send|receive] via NET/%s/%d[(%d)][/GDRDMA][(PCI)][/Shared]`
/// (2.7+), `Ring %02d : %d[%lx] -> %d[%lx] [send|receive] via NET/…` (2.5–2.6), `Ring %02d :
/// %d -> %d [send|receive] via NET/%s/%d[/GDRDMA]` (2.4) and `Ring %02d : %d -> %d via
/// NET/%s/%d[/GDRDMA][/GDCopy]` (2.3, the receiving side's line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetChannel {
    /// `Ring` (≤ 2.6) rather than `Channel`; also the ≤ 2.2 form, which prints neither word
    /// (its `channel` is `None`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ring: bool,
    /// Channel id; `None` for a line quoted without its `Channel NN : ` (from the ranks on) and
    /// for the ≤ 2.2 form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<u32>,
    /// Connection index (`/%d`, 2.12+); `None` in the ≤ 2.11 form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conn_index: Option<u32>,
    /// Sending rank.
    pub from_rank: u32,
    /// Its bracket as printed: busId in hex (2.5–2.18.1) or nvmlDev (2.18.3+); empty in the
    /// 2.3–2.4 forms, which print none.
    pub from_bracket: String,
    /// Receiving rank.
    pub to_rank: u32,
    /// Its bracket as printed.
    pub to_bracket: String,
    /// True for `[send]` (the local rank is `from_rank`), false for `[receive]` (`to_rank`;
    /// also the 2.3 form, printed by the receiving side without a word).
    pub send: bool,
    /// The network's name (`IB`, `Socket`, `IBext_v8`, `AWS Libfabric`); `None` when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
    /// The NET device index; `None` when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dev: Option<u32>,
    /// The proxy rank of a PXN connection (`NET/IB/3(5)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<u32>,
    /// `/GDRDMA`: `Some(true)` shown, `Some(false)` certainly absent (complete line), `None`
    /// when the line was cut before it could show.
    pub gdr: Option<bool>,
    /// `(PCI)`: GDR forced over PCIe on a C2C system (2.26+).
    pub gdr_pci: bool,
    /// `/Shared`.
    pub shared: bool,
}

/// One NIC of a `Using` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NicEntry {
    /// Index NCCL gives it (the NET device index of channel lines).
    pub index: u32,
    /// Device name (`mlx5_0`) or interface (`eth0`).
    pub name: String,
    /// Port (IB) when printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u32>,
    /// Link layer `IB`/`RoCE`, when printed in full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// `/SHARP` (HPC-X plugin).
    pub sharp: bool,
    /// Socket entries: the address (`10.0.0.1<0>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// A merged NIC (`[0]={[0] mlx5_0:1/IB, [1] mlx5_1:1/IB}`, 2.20+): its members.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<NicEntry>,
}

/// A `NET/<transport> : Using …` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NicList {
    /// `IB`, `Socket`, or a plugin's transport.
    pub transport: String,
    /// The NICs, in index order as printed.
    pub nics: Vec<NicEntry>,
    /// `[RO]`: relaxed ordering enabled (2.12+).
    pub relaxed_ordering: bool,
    /// ` ; OOB` with a space before the semicolon: the ≤ 2.11 form.
    pub old_form: bool,
    /// The out-of-band interface after `OOB`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oob: Option<String>,
}

/// `NET/IB : Made virtual device [%d] name=%s speed=%d ndevs=%d[ rail=%d plane=%d]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VirtualNic {
    /// Its NET index.
    pub index: u32,
    /// Its name (`mlx5_0+mlx5_1`).
    pub name: String,
    /// Speed in Mb/s.
    pub speed_mbps: Option<u64>,
    /// Number of physical devices merged.
    pub ndevs: Option<u32>,
    /// Rail (2.30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rail: Option<i64>,
    /// Plane (2.30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plane: Option<i64>,
}

/// Which of the per-GPU GDR line forms a line has (the version ranges are in the README
/// table; the GPU and HCA fields mean different things in each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuGdrForm {
    /// `NET/%s : GPU Direct RDMA Disabled for GPU %d[%d] / HCA %d (distance %d >= %d)`,
    /// `… Enabled … (distance %d < %d), read %d`, `NET/IB : … for GPU %d[%d] / HCA %d '%s' (no
    /// module or not supported by GPU)` (2.4; GPU is cudaDev[nvmlDev]) and `NET/IB : … for GPU
    /// %d / HCA %s (%s)` (2.3; GPU is the cudaDev, HCA a name).
    Net24,
    /// `NET/IB : GPU Direct RDMA … (distance %d < %d)` (2.5).
    Net25,
    /// `GPU %lx / HCA %d|%lx (distance %d <= %d), read %d` (2.6–2.23; GPU is a busId; HCA an
    /// index, from 2.21 a 64-bit net id) or `GPU %d / HCA %lx …` (2.24–2.25, GPU is a rank).
    Classic,
    /// `…, read %d mode %s` (2.26–2.28; GPU is a rank).
    Mode,
    /// `GPU/%ld-%ld (rank %d) - NET/%ld-%ld (distance …, read %d, mode %s)` (2.29).
    Ids,
}

/// A per-GPU GDR decision (`ncclTopoCheckGdr`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuGdr {
    /// Line form.
    pub form: GpuGdrForm,
    /// Enabled or Disabled.
    pub enabled: bool,
    /// The GPU field as printed (a busId in hex, or a rank in decimal — per form and version),
    /// or in the 2.29 form the GPU's local id (its busId in hex).
    pub gpu: String,
    /// The rank, in the 2.29 form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The HCA field as printed (index in decimal ≤ 2.20, net id in hex 2.21+; the local id in
    /// the 2.29 form).
    pub hca: String,
    /// Distance code; `None` when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<u32>,
    /// The GDR level code it was compared with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// `read %d`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
    /// `mode %s` (2.26+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// ` using PXN via GPU/x-y` (2.29).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pxn_via: Option<String>,
    /// The reason in parentheses of the 2.3–2.4 forms that give no distance (`no module or not
    /// supported by GPU`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `Ring|Channel %02d[/%d] : %d[…] -> %d[…] via P2P/…|SHM/…|direct shared memory` (2.3+;
/// `Ring %02d : %d -> %d via P2P/common device` prints no brackets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PeerChannel {
    /// Sending rank: the printing process's own.
    pub from_rank: u32,
    /// Its bracket as printed (cudaDev ≤ 2.4, busId 2.5–2.18.1, nvmlDev 2.18.3+; empty when
    /// none).
    pub from_bracket: String,
    /// Receiving rank.
    pub to_rank: u32,
    /// Its bracket as printed.
    pub to_bracket: String,
    /// The transport as printed after `via ` (`P2P/IPC`, `direct shared memory`).
    pub via: String,
}

/// `CUDA Dev %d[%d], %s NIC distance : %s` (2.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NicDistance {
    /// CUDA device.
    pub cuda_dev: u32,
    /// NVML device.
    pub nvml_dev: u32,
    /// The network (`ncclNetName()`: `IB`, `Socket`, a plugin's name).
    pub net: String,
    /// The distance word (`PIX`, `PHB`, `SYS`, …).
    pub path: String,
}

/// A per-NIC GDR decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NicGdr {
    /// The transport (`IB`).
    pub transport: String,
    /// Enabled or Disabled.
    pub enabled: bool,
    /// HCA index.
    pub hca: u32,
    /// Device name.
    pub name: String,
    /// `(no module)` (≤ 2.12): the peer-memory module is not loaded.
    pub no_module: bool,
}

/// A `comm 0x… rank …` line: init (`- Init START|COMPLETE`), shape (`nNodes …`) or destroy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Comm {
    /// The function name before `comm` (`ncclCommInitRank`, 2.21+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub func: Option<String>,
    /// The communicator pointer.
    pub comm: String,
    /// Rank.
    pub rank: Option<u32>,
    /// `nranks`/`nRanks`.
    pub nranks: Option<u32>,
    /// `nNodes` (2.20+ shape line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nnodes: Option<u32>,
    /// `localRanks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_ranks: Option<u32>,
    /// `localRank`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    /// `cudaDev`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_dev: Option<u32>,
    /// `nvmlDev` (2.18.3+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvml_dev: Option<u32>,
    /// `busId` in hex as printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
    /// `commId` (2.16+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_id: Option<String>,
    /// `Init START`, `Init COMPLETE`, `Destroy COMPLETE`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// A completion with error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// `from peer %s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// `error %d` / `status=%d` / `status=NAME(%d)`: the `ibv_wc_status`.
    pub status: Option<u32>,
    /// `opcode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opcode: Option<u32>,
    /// `vendor err %d` / `vendor_err=%u`.
    pub vendor_err: Option<u32>,
    /// The whole message.
    pub text: String,
}

/// What [`parse_message`] made of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A record.
    Record(Record),
    /// A form peerpath does not read.
    Other,
    /// A known form that could not be read, and why.
    Refused(String),
}

/// The count of RCCL's `RCCL: Detected %d IB devices…` (after `RCCL: Detected `): `None` when
/// the text is not that form, `Some(None)` when its count is not a number.
fn ib_devices_count(r: &str) -> Option<Option<u32>> {
    let (n, rest) = r.split_once(' ')?;
    rest.starts_with("IB devices").then(|| n.parse().ok())
}

/// Reads `2.21.5+cuda12.4` (or `2.7.6`).
pub fn version_record(v: &str) -> Option<Record> {
    let text = v.split_whitespace().next()?.to_string();
    let num = text.split(['+', '-']).next()?;
    let mut it = num.split('.').map(|p| p.parse::<u32>().ok());
    let (Some(Some(a)), Some(Some(b))) = (it.next(), it.next()) else {
        return None;
    };
    let c = it.next().flatten().unwrap_or(0);
    Some(Record::Version(Version {
        text,
        number: (a, b, c),
    }))
}

/// Reads one message (the text after `NCCL INFO `). `complete` says whether it certainly ended.
/// The forms are tried in a fixed order, a group of forms per function.
pub fn parse_message(msg: &str, complete: bool) -> Parsed {
    let t = msg.trim_end();
    let ts = t.trim_start();
    banner_line(ts)
        .or_else(|| rank_line(ts, complete))
        .or_else(|| gdr_and_topology_line(t, ts, complete))
        .or_else(|| ring_summary_line(ts, complete))
        .or_else(|| setting_line(ts))
        .or_else(|| transport_line(ts, complete))
        .unwrap_or(Parsed::Other)
}

/// The banner (NCCL's, RCCL's) and RCCL's IB device count.
fn banner_line(ts: &str) -> Option<Parsed> {
    // NCCL's banner, and RCCL's as its INFO line prints it (`RCCL version : 2.30.4-HEAD:2b22ab0`,
    // `init.cc` showVersion: `"RCCL version : " … NCCL_SUFFIX "-" rcclGitHash`).
    if let Some(v) = ts
        .strip_prefix("NCCL version ")
        .or_else(|| ts.strip_prefix("RCCL version "))
    {
        let v = v.trim_start_matches([':', ' ']);
        return Some(
            version_record(v).map_or(Parsed::Refused("not a version".into()), Parsed::Record),
        );
    }
    if let Some(r) = ts.strip_prefix("RCCL: Detected ")
        && let Some(n) = ib_devices_count(r)
    {
        return Some(n.map_or(
            Parsed::Refused("IB device count is not a number".into()),
            |count| Parsed::Record(Record::IbDevices { count }),
        ));
    }
    None
}

/// Connection lines (over the network and within the node) and the lines that name a rank.
fn rank_line(ts: &str, complete: bool) -> Option<Parsed> {
    if (ts.starts_with("Channel ") || ts.starts_with("Ring ")) && ts.contains(" via NET/") {
        return Some(net_channel(ts, complete));
    }
    // NCCL 2.2 and older (no source published; the line quoted in issue 43): `%d -> %d via
    // NET/%s/%d[/GDRDMA]`, neither `Ring %02d : ` nor a direction word. Read as 2.3's line, of
    // which it is the older spelling: printed by the receiving side (2.3's `netRecvSetup`
    // prints `peer -> me`).
    if ts.starts_with(|c: char| c.is_ascii_digit())
        && ts.contains(" -> ")
        && ts.contains(" via NET/")
    {
        return Some(net_connection(true, None, None, ts, complete));
    }
    if (ts.starts_with("Channel ") || ts.starts_with("Ring "))
        && let Some((_, via)) = ts.split_once(" via ")
        && (via.starts_with("P2P/") || via.starts_with("SHM/") || via.starts_with("direct shared"))
    {
        return Some(peer_channel(ts));
    }
    if let Some(r) = ts
        .strip_prefix("Init timings")
        .and_then(|r| r.split_once(": ").map(|x| x.1))
        .or_else(|| ts.strip_prefix("rank ").map(|_| ts))
    {
        return Some(rank_of(r));
    }
    if let Some(r) = ts.strip_prefix("Trees")
        && r.trim_start().starts_with('[')
    {
        return Some(trees(r, complete));
    }
    None
}

/// Lines about the network's reach and GDR: libibverbs, 2.4's NIC distance, the OFI plugin,
/// the topology print, the GDR lines.
fn gdr_and_topology_line(t: &str, ts: &str, complete: bool) -> Option<Parsed> {
    if ts.starts_with("Failed to open libibverbs") || ts.starts_with("Could not open libibverbs") {
        return Some(Parsed::Record(Record::NoVerbs));
    }
    if let Some(r) = ts.strip_prefix("CUDA Dev ")
        && r.contains(" NIC distance")
    {
        return Some(nic_distance(r));
    }
    if let Some(r) = ts
        .strip_prefix("NET/OFI Selected provider is ")
        .or_else(|| ts.strip_prefix("NET/OFI Selected Provider is "))
    {
        return Some(ofi_provider(r));
    }
    if let Some(r) = ts.strip_prefix("NET/OFI ")
        && (r.starts_with("Could not disable CUDA API usage for HMEM, disabling GDR")
            || r.starts_with("GDR disabled on GDR-supported instance type"))
    {
        return Some(Parsed::Record(Record::PluginGdrOff {
            text: r.trim().to_string(),
        }));
    }
    if let Some(p) = topo::parse_line(t) {
        return Some(match p {
            TopoLine::System { word, max, total } => {
                Parsed::Record(Record::TopoSystem { word, max, total })
            }
            TopoLine::Node(n) => Parsed::Record(Record::TopoNode(n)),
            TopoLine::Paths(p) => Parsed::Record(Record::TopoPaths(p)),
            TopoLine::Refused(why) => Parsed::Refused(why),
        });
    }
    if ts.contains("GPU Direct RDMA") {
        return Some(gdr_line(ts, complete));
    }
    None
}

/// `Connected all rings`, with its PXN and GDR flags.
fn ring_summary_line(ts: &str, complete: bool) -> Option<Parsed> {
    if let Some(r) = ts.strip_prefix("Connected all rings") {
        let r = r.trim_start_matches(',').trim();
        // RCCL: `Connected all rings comm %p nRanks %02d busId %lx` (rccl `init.cc`), no flags.
        if r.is_empty() || r.starts_with("comm 0x") || r.starts_with("comm (nil)") {
            return Some(Parsed::Record(Record::RingsConnected {
                pxn: None,
                gdr: None,
            }));
        }
        let pxn = word_num(r, "PXN");
        let gdr = word_num(r, "GDR");
        return Some(match gdr {
            Some(_) => Parsed::Record(Record::RingsConnected { pxn, gdr }),
            None if !complete => Parsed::Record(Record::RingsConnected { pxn, gdr: None }),
            None => Parsed::Refused("ring summary without a GDR number".into()),
        });
    }
    None
}

/// Completion errors, echoed variables, the network and plugin chosen, bootstrap.
fn setting_line(ts: &str) -> Option<Parsed> {
    if ts.contains("Got completion") {
        return Some(Parsed::Record(Record::Completion(completion(ts))));
    }
    if let Some((name, value)) = ts.split_once(" set by environment to ")
        && name.starts_with("NCCL_")
        && !name.contains(' ')
    {
        let value = value.trim();
        let value = value.strip_suffix('.').unwrap_or(value);
        return Some(Parsed::Record(Record::Env {
            name: name.to_string(),
            value: value.to_string(),
        }));
    }
    // 2.3: "Using internal|external Network %s" (external: a net plugin); 2.6+: "Using network %s".
    if let Some(r) = ts
        .strip_prefix("Using internal Network ")
        .or_else(|| ts.strip_prefix("Using external Network "))
    {
        return Some(Parsed::Record(Record::UsingNetwork {
            name: r.trim().to_string(),
        }));
    }
    if let Some(r) = ts.strip_prefix("Using network ") {
        return Some(Parsed::Record(Record::UsingNetwork {
            name: r.trim().to_string(),
        }));
    }
    // 2.28+ (and RCCL 2.30): `Assigned NET plugin %s to comm` (plugin/net.cc), the network the
    // communicator was given: what `Using network` says.
    if let Some(name) = ts
        .strip_prefix("Assigned NET plugin ")
        .and_then(|r| r.strip_suffix(" to comm"))
    {
        return Some(Parsed::Record(Record::UsingNetwork {
            name: name.trim().to_string(),
        }));
    }
    if let Some(r) = ts
        .strip_prefix("P2P plugin ")
        .or_else(|| ts.strip_prefix("NET/Plugin"))
        .or_else(|| ts.strip_prefix("Plugin Path"))
    {
        return Some(Parsed::Record(Record::Plugin {
            text: r.trim_start_matches([' ', ':']).trim().to_string(),
        }));
    }
    if let Some(r) = ts.strip_prefix("Bootstrap") {
        return Some(Parsed::Record(Record::Bootstrap {
            text: r.trim_start_matches([' ', ':']).trim().to_string(),
        }));
    }
    None
}

/// `NET/<transport> : …` lines (no device, NIC list, virtual device) and comm lines.
fn transport_line(ts: &str, complete: bool) -> Option<Parsed> {
    if let Some((transport, rest)) = net_prefix(ts) {
        let rest = rest.trim();
        if rest.starts_with("No device found") {
            return Some(Parsed::Record(Record::NoDevice { transport }));
        }
        if let Some(list) = rest.strip_prefix("Using") {
            return Some(nic_list(transport, list, complete));
        }
        // NCCL 2.2 and older: `NET/IB: [0] mlx4_0:1/IB`, the list without `Using`.
        if rest.starts_with('[') {
            return Some(nic_list(transport, rest, complete));
        }
        if let Some(v) = rest.strip_prefix("Made virtual device") {
            return Some(virtual_nic(v));
        }
    }
    if ts.starts_with("comm 0x") || ts.contains(" comm 0x") {
        return Some(comm(ts));
    }
    None
}

/// NCCL INFO messages (and RCCL's) of known forms that say nothing about GDR, NICs or ranks,
/// skipped knowingly: by the start NCCL's format string gives them, with where it is printed
/// (NVIDIA/nccl `src/`, ROCm/rccl for RCCL's). An NCCL line of none of these forms and of no
/// form [`parse_message`] reads is one peerpath does not know: it is counted as not
/// understood.
const SKIPPED: &[(&str, &str)] = &[
    ("Setting affinity for GPU ", "CPU affinity (init.cc)"),
    ("cudaDriverVersion ", "CUDA driver version (init.cc)"),
    (
        "threadThresholds ",
        "protocol thresholds (enqueue/tuning.cc)",
    ),
    ("Trees", "tree shape (init.cc `Trees%s`)"),
    (
        "Initialized NET plugin ",
        "net plugin initialized (plugin/net.cc, 2.28+)",
    ),
    (
        "Failed to initialize NET plugin ",
        "net plugin not initialized (plugin/net.cc, 2.28+); the network assigned is said by `Assigned NET plugin`",
    ),
    (
        "Failed to initialize any GIN plugin",
        "no GIN plugin (plugin/gin.cc, 2.28+)",
    ),
    ("GIN/Plugin", "GIN plugin loading (plugin/gin.cc, 2.28+)"),
    (
        "Connection to proxy localRank ",
        "proxy connection (proxy.cc, 2.12–2.18)",
    ),
    (
        "NET/IB: Dev ",
        "queue pair of an IB connection (transport/net_ib.cc `NET/IB: Dev %d Port %d qpn %d mtu %d LID|GID …`)",
    ),
    ("Tree ", "tree shape (≤ 2.6)"),
    ("Connected all trees", "tree connected (graph/connect.cc)"),
    ("Connected NVLS", "NVLS connected (transport/nvls.cc)"),
    ("NVLS ", "NVLS setup (transport/nvls.cc)"),
    ("P2P Chunksize set to ", "p2p chunk size (init.cc)"),
    (
        "Using non-device net plugin version ",
        "net plugin API (init.cc)",
    ),
    (
        "DMA-BUF is available on GPU device ",
        "dma-buf support (init.cc)",
    ),
    ("Dmabuf feature ", "RCCL dma-buf setting (rccl init.cc)"),
    ("[Proxy Progress] ", "proxy thread (proxy.cc)"),
    ("[Proxy Service", "proxy thread (proxy.cc)"),
    ("New proxy ", "proxy connection (proxy.cc)"),
    ("Connected to proxy ", "proxy connection (proxy.cc)"),
    ("Launch mode ", "kernel launch mode (≤ 2.x init.cc)"),
    ("Pattern ", "graph search result (graph/search.cc)"),
    ("CC On", "confidential computing (init.cc)"),
    ("CC Off", "confidential computing (init.cc)"),
    ("TUNER/Plugin", "tuner plugin (plugin/tuner.cc)"),
    ("Check P2P Type ", "P2P mode (init.cc)"),
    ("MNNVL ", "multi-node NVLink (init.cc)"),
    ("Topology detection", "topology file (graph/topo.cc)"),
    ("Comm config ", "communicator config (init.cc)"),
    (
        "Enabled NCCL Func/Proto/Algo Matrix",
        "tuning matrix (enqueue.cc)",
    ),
    ("Using NCCL Low-latency algorithm", "≤ 2.2 algorithm note"),
    ("Threads per block", "≤ 2.5 launch shape"),
    ("Min Comp Cap ", "≤ 2.4 compute capability"),
    ("Kernel version", "RCCL kernel version (rccl init.cc)"),
    ("ROCr version", "RCCL ROCr version (rccl init.cc)"),
    ("rocm_smi_lib", "RCCL rocm_smi version (rccl)"),
    ("NET/Socket : ", "Socket transport setup (net_socket.cc)"),
    ("NET/Socket: ", "Socket transport setup (net_socket.cc)"),
    ("NCCL_SOCKET_IFNAME set to ", "≤ 2.4 interface echo"),
    ("NCCL_IB_HCA set to ", "≤ 2.4 HCA echo"),
    ("Allocated ", "buffer allocation"),
    ("Mem Realloc ", "buffer allocation"),
    ("Ib Alloc", "IB buffer allocation"),
    ("Cuda Alloc", "CUDA buffer allocation"),
    ("Cuda Host Alloc", "CUDA host buffer allocation"),
    ("Latency/AlgBw", "tuning table (tuning.cc)"),
    (
        "PXN Disabled as plugin is v",
        "PXN off for an old net plugin (init.cc)",
    ),
    (
        "NET : Using interface ",
        "≤ 2.3 out-of-band interface (net_socket)",
    ),
    ("KV Convert to int", "parameter parsing (misc/param.cc)"),
    ("proxyProgressAsync ", "proxy trace (proxy.cc)"),
    ("ncclPollProxyResponse ", "proxy trace (proxy.cc)"),
    ("resp.opId=", "proxy trace (proxy.cc)"),
    (
        "NET/OFI Using aws-ofi-nccl ",
        "aws-ofi-nccl's version (plugin)",
    ),
    (
        "NET/OFI Using aws-ofi-rccl ",
        "aws-ofi-rccl's version (plugin)",
    ),
    (
        "NET/OFI Initializing ",
        "aws-ofi-nccl's version (plugin, nccl_ofi_net.cpp)",
    ),
    (
        "NET/OFI Using transport protocol ",
        "aws-ofi-nccl's protocol (nccl_ofi_net.cpp)",
    ),
    (
        "NET/OFI Support for ",
        "aws-ofi-nccl's registration support (nccl_ofi_net.cpp)",
    ),
    (
        "NET/OFI No eligible providers were found",
        "aws-ofi-nccl found no provider for one protocol and tries the next (nccl_ofi_rdma.cpp)",
    ),
];

/// The known form a message not otherwise read takes, if it has one ([`SKIPPED`], NCCL's
/// error trace `%s:%d -> %d` of `NCCLCHECK`, a channel or ring order print `Channel %02d/%02d :
/// 0 1 …`, a `%d coll channels, …` count); `None` for a form peerpath does not know.
pub fn skipped_form(msg: &str) -> Option<&'static str> {
    let t = msg.trim();
    if let Some((_, what)) = SKIPPED.iter().find(|(p, _)| t.starts_with(p)) {
        return Some(what);
    }
    // `%s:%d Cuda Alloc Size %ld pointer %p` and the like (include/alloc.h, net_ib.cc): a
    // buffer allocation, traced at INFO with the caller's file and line.
    if let Some((place, what)) = t.split_once(' ')
        && place
            .rsplit_once(':')
            .is_some_and(|(f, l)| f.contains('.') && l.parse::<u32>().is_ok())
        && ["Cuda Alloc", "Cuda Host Alloc", "Ib Alloc", "Mem Realloc"]
            .iter()
            .any(|p| what.starts_with(p))
    {
        return Some("buffer allocation (include/alloc.h)");
    }
    // `%2d : NET/0 GPU/1 NET/0` (graph/search.cc `ncclTopoPrintGraph`): a searched channel.
    if let Some((n, path)) = t.split_once(" : ")
        && n.trim().parse::<u32>().is_ok()
        && path.split_whitespace().all(|w| {
            w.split_once('/')
                .is_some_and(|(k, _)| k.bytes().all(|b| b.is_ascii_uppercase()))
        })
    {
        return Some("searched channel (graph/search.cc)");
    }
    // `Ring %02d : %d -> %d -> %d` (≤ 2.5 init): a ring's previous, own and next rank.
    if let Some(ranks) = t
        .strip_prefix("Ring ")
        .and_then(|r| r.split_once(" : "))
        .map(|x| x.1)
        && ranks.split(" -> ").count() == 3
        && ranks.split(" -> ").all(|w| w.trim().parse::<i64>().is_ok())
    {
        return Some("ring neighbours (≤ 2.5 init)");
    }
    // `%s:%d -> %d` (include/checks.h): a call returned an error, traced at INFO.
    if let Some((place, res)) = t.split_once(" -> ")
        && res
            .split_whitespace()
            .next()
            .is_some_and(|r| r.parse::<i32>().is_ok())
        && place
            .rsplit_once(':')
            .is_some_and(|(f, l)| f.contains('.') && l.parse::<u32>().is_ok())
    {
        return Some("error trace (include/checks.h)");
    }
    // `Channel %02d/%02d : 0 1 2 …` (graph/connect.cc) and `Ring %02d : 0 1 …` (≤ 2.6): the
    // order of ranks in a ring, no transport.
    if let Some((head, ranks)) = t.split_once(" : ")
        && (head.starts_with("Channel ") || head.starts_with("Ring "))
        && !ranks.contains(" via ")
        && ranks
            .split_whitespace()
            .all(|w| w.bytes().all(|b| b.is_ascii_digit()))
    {
        return Some("ring order (graph/connect.cc)");
    }
    // `%d coll channels, %d collnet channels, …` / `%d coll channels, %d p2p channels, …`.
    if let Some((n, rest)) = t.split_once(' ')
        && n.parse::<u32>().is_ok()
        && rest.starts_with("coll channels")
    {
        return Some("channel counts (init.cc)");
    }
    None
}
