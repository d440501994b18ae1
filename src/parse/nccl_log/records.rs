//! The NCCL messages peerpath reads, one type per message, each with the forms it takes across
//! releases (shared/reference/evidence/README.md, "Log-line forms"). Numbers are kept as NCCL
//! printed them where their meaning depends on the version (the bracket after a rank, the GPU
//! and HCA of a GDR line, the `distance` codes); `analysis::evidence` decides the meaning once
//! the version is known.

use super::topo::{self, TopoLine, TopoNodeLine, TopoPaths};
use serde::Serialize;

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
    /// `Failed to open libibverbs.so[.1]` (WARN in NCCL, INFO in RCCL): the IB transport has no
    /// verbs library, so no IB device.
    NoVerbs,
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
pub fn parse_message(msg: &str, complete: bool) -> Parsed {
    let t = msg.trim_end();
    let ts = t.trim_start();
    if let Some(v) = ts.strip_prefix("NCCL version ") {
        return version_record(v).map_or(Parsed::Refused("not a version".into()), Parsed::Record);
    }
    if (ts.starts_with("Channel ") || ts.starts_with("Ring ")) && ts.contains(" via NET/") {
        return net_channel(ts, complete);
    }
    // NCCL 2.2 and older (no source published; the line quoted in issue 43): `%d -> %d via
    // NET/%s/%d[/GDRDMA]`, neither `Ring %02d : ` nor a direction word. Read as 2.3's line, of
    // which it is the older spelling: printed by the receiving side (2.3's `netRecvSetup`
    // prints `peer -> me`).
    if ts.starts_with(|c: char| c.is_ascii_digit())
        && ts.contains(" -> ")
        && ts.contains(" via NET/")
    {
        return net_connection(true, None, None, ts, complete);
    }
    if (ts.starts_with("Channel ") || ts.starts_with("Ring "))
        && let Some((_, via)) = ts.split_once(" via ")
        && (via.starts_with("P2P/") || via.starts_with("SHM/") || via.starts_with("direct shared"))
    {
        return peer_channel(ts);
    }
    if let Some(r) = ts
        .strip_prefix("Init timings")
        .and_then(|r| r.split_once(": ").map(|x| x.1))
        .or_else(|| ts.strip_prefix("rank ").map(|_| ts))
    {
        return rank_of(r);
    }
    if ts.starts_with("Failed to open libibverbs") {
        return Parsed::Record(Record::NoVerbs);
    }
    if let Some(r) = ts.strip_prefix("CUDA Dev ")
        && r.contains(" NIC distance")
    {
        return nic_distance(r);
    }
    if let Some(r) = ts.strip_prefix("NET/OFI ")
        && (r.starts_with("Could not disable CUDA API usage for HMEM, disabling GDR")
            || r.starts_with("GDR disabled on GDR-supported instance type"))
    {
        return Parsed::Record(Record::PluginGdrOff {
            text: r.trim().to_string(),
        });
    }
    if let Some(p) = topo::parse_line(t) {
        return match p {
            TopoLine::System { word, max, total } => {
                Parsed::Record(Record::TopoSystem { word, max, total })
            }
            TopoLine::Node(n) => Parsed::Record(Record::TopoNode(n)),
            TopoLine::Paths(p) => Parsed::Record(Record::TopoPaths(p)),
            TopoLine::Refused(why) => Parsed::Refused(why),
        };
    }
    if ts.contains("GPU Direct RDMA") {
        return gdr_line(ts, complete);
    }
    if let Some(r) = ts.strip_prefix("Connected all rings") {
        let r = r.trim_start_matches(',').trim();
        // RCCL: `Connected all rings comm %p nRanks %02d busId %lx` (rccl `init.cc`), no flags.
        if r.is_empty() || r.starts_with("comm 0x") || r.starts_with("comm (nil)") {
            return Parsed::Record(Record::RingsConnected {
                pxn: None,
                gdr: None,
            });
        }
        let pxn = word_num(r, "PXN");
        let gdr = word_num(r, "GDR");
        return match gdr {
            Some(_) => Parsed::Record(Record::RingsConnected { pxn, gdr }),
            None if !complete => Parsed::Record(Record::RingsConnected { pxn, gdr: None }),
            None => Parsed::Refused("ring summary without a GDR number".into()),
        };
    }
    if ts.contains("Got completion") {
        return Parsed::Record(Record::Completion(completion(ts)));
    }
    if let Some((name, value)) = ts.split_once(" set by environment to ")
        && name.starts_with("NCCL_")
        && !name.contains(' ')
    {
        let value = value.trim();
        let value = value.strip_suffix('.').unwrap_or(value);
        return Parsed::Record(Record::Env {
            name: name.to_string(),
            value: value.to_string(),
        });
    }
    // 2.3: "Using internal|external Network %s" (external: a net plugin); 2.6+: "Using network %s".
    if let Some(r) = ts
        .strip_prefix("Using internal Network ")
        .or_else(|| ts.strip_prefix("Using external Network "))
    {
        return Parsed::Record(Record::UsingNetwork {
            name: r.trim().to_string(),
        });
    }
    if let Some(r) = ts.strip_prefix("Using network ") {
        return Parsed::Record(Record::UsingNetwork {
            name: r.trim().to_string(),
        });
    }
    if let Some(r) = ts
        .strip_prefix("P2P plugin ")
        .or_else(|| ts.strip_prefix("NET/Plugin"))
        .or_else(|| ts.strip_prefix("Plugin Path"))
    {
        return Parsed::Record(Record::Plugin {
            text: r.trim_start_matches([' ', ':']).trim().to_string(),
        });
    }
    if let Some(r) = ts.strip_prefix("Bootstrap") {
        return Parsed::Record(Record::Bootstrap {
            text: r.trim_start_matches([' ', ':']).trim().to_string(),
        });
    }
    if let Some((transport, rest)) = net_prefix(ts) {
        let rest = rest.trim();
        if rest.starts_with("No device found") {
            return Parsed::Record(Record::NoDevice { transport });
        }
        if let Some(list) = rest.strip_prefix("Using") {
            return nic_list(transport, list, complete);
        }
        // NCCL 2.2 and older: `NET/IB: [0] mlx4_0:1/IB`, the list without `Using`.
        if rest.starts_with('[') {
            return nic_list(transport, rest, complete);
        }
        if let Some(v) = rest.strip_prefix("Made virtual device") {
            return virtual_nic(v);
        }
    }
    if ts.starts_with("comm 0x") || ts.contains(" comm 0x") {
        return comm(ts);
    }
    Parsed::Other
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

/// `NET/IB : rest` or `NET/IB: rest` → (`IB`, rest).
fn net_prefix(t: &str) -> Option<(String, &str)> {
    let r = t.strip_prefix("NET/")?;
    let (name, rest) = r.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains("  ") {
        return None;
    }
    Some((name.to_string(), rest))
}

/// The number after `word ` in `text` (`GDR 1`).
fn word_num(text: &str, word: &str) -> Option<u32> {
    let mut it = text.split([' ', ',', '=']).filter(|s| !s.is_empty());
    while let Some(w) = it.next() {
        if w == word {
            return it.next()?.parse().ok();
        }
    }
    None
}

/// `rank[bracket]` → (rank, bracket); a bare `rank` (2.3–2.4) has an empty bracket.
fn rank_bracket(s: &str) -> Option<(u32, String)> {
    let s = s.trim();
    let Some((r, b)) = s.split_once('[') else {
        return Some((s.parse().ok()?, String::new()));
    };
    let b = b.strip_suffix(']')?;
    Some((r.trim().parse().ok()?, b.to_string()))
}

/// `Ring|Channel %02d[/%d] : from -> to via …` within the node.
fn peer_channel(t: &str) -> Parsed {
    let rest = t.split_once(" : ").map(|x| x.1);
    let parts = rest.and_then(|r| {
        let (from, r) = r.split_once(" -> ")?;
        let (to, via) = r.split_once(" via ")?;
        Some((rank_bracket(from)?, rank_bracket(to)?, via))
    });
    match parts {
        Some(((from_rank, from_bracket), (to_rank, to_bracket), via)) => {
            Parsed::Record(Record::PeerChannel(PeerChannel {
                from_rank,
                from_bracket,
                to_rank,
                to_bracket,
                // RCCL adds ` comm %p nRanks %02d` (rccl `transport/p2p.cc`, `shm.cc`).
                via: via
                    .split(" comm 0x")
                    .next()
                    .unwrap_or(via)
                    .trim()
                    .to_string(),
            }))
        }
        None => Parsed::Refused("a P2P/SHM channel line without `a -> b via`".into()),
    }
}

/// `rank %d nranks %d[ …]`.
fn rank_of(t: &str) -> Parsed {
    let mut w = t.split_whitespace();
    match (
        w.next(),
        w.next().map(str::parse::<u32>),
        w.next(),
        w.next(),
    ) {
        (Some("rank"), Some(Ok(rank)), Some("nranks"), n) => Parsed::Record(Record::RankOf {
            rank,
            nranks: n.and_then(|n| n.parse().ok()),
        }),
        _ => Parsed::Other,
    }
}

fn net_channel(t: &str, complete: bool) -> Parsed {
    let refuse = |why: &str| Parsed::Refused(why.to_string());
    let (ring, rest) = match t.strip_prefix("Channel ") {
        Some(r) => (false, r),
        None => match t.strip_prefix("Ring ") {
            Some(r) => (true, r),
            None => return refuse("not a channel line"),
        },
    };
    let Some((ch, rest)) = rest.split_once(" : ") else {
        return refuse("no ` : ` after the channel number");
    };
    let (channel, conn_index) = match ch.trim().split_once('/') {
        Some((c, i)) => (c.parse().ok(), i.parse().ok()),
        None => (ch.trim().parse().ok(), None),
    };
    let Some(channel) = channel else {
        return refuse("channel number is not a number");
    };
    if ch.contains('/') && conn_index.is_none() {
        return refuse("connection index is not a number");
    }
    net_connection(ring, Some(channel), conn_index, rest, complete)
}

/// A channel line's connection quoted from its ranks on, without the header and the `Channel
/// NN : ` (`9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA`, as people quote it in prose).
pub fn bare_net_channel(t: &str, complete: bool) -> Option<Record> {
    let t = t.trim();
    if !t.starts_with(|c: char| c.is_ascii_digit()) || !t.contains(" via NET/") {
        return None;
    }
    match net_connection(false, None, None, t, complete) {
        Parsed::Record(r) => Some(r),
        _ => None,
    }
}

/// Whether a line (launcher tags taken off) is only the end of a connection line that another
/// output cut: its suffixes (`/GDRDMA`, `(PCI)`, `/Shared`, `/GDCopy`), perhaps RCCL's ` comm %p
/// nRanks %02d`, and nothing else — the rest of a line whose start was printed earlier.
pub fn is_cut_connection_end(t: &str) -> bool {
    let mut r = t.trim_start();
    let mut any = false;
    while let Some(rest) = ["/GDRDMA", "(PCI)", "/Shared", "/GDCopy"]
        .iter()
        .find_map(|s| r.strip_prefix(s))
    {
        r = rest;
        any = true;
    }
    any && (r.trim().is_empty() || is_rccl_comm_suffix(r.trim_end(), true))
}

/// Whether `t` (what follows a connection's suffixes) is RCCL's ` comm %p nRanks %02d`
/// (`comm 0x2035d540 nRanks 02`; `%p` of a null pointer is `(nil)`): it has begun when
/// ` comm 0x` or ` comm (nil)` is there, whatever follows (another output may cut it); on a
/// line that may have been cut, a start of it is enough.
fn is_rccl_comm_suffix(t: &str, complete: bool) -> bool {
    if t.starts_with(" comm 0x") || t.starts_with(" comm (nil)") {
        return true;
    }
    !complete && t.len() >= 3 && (" comm 0x".starts_with(t) || " comm (nil)".starts_with(t))
}

/// `from -> to [send|receive] via NET/…` (or, 2.3, `from -> to via NET/…`).
fn net_connection(
    ring: bool,
    channel: Option<u32>,
    conn_index: Option<u32>,
    rest: &str,
    complete: bool,
) -> Parsed {
    let refuse = |why: &str| Parsed::Refused(why.to_string());
    let Some((from, rest)) = rest.split_once(" -> ") else {
        return refuse("no `->` between the ranks");
    };
    // `[send]`/`[receive]` (2.4+), or none at all (2.3: the receiving side's line).
    let (to, send, rest) = match rest.split_once(" [") {
        Some((to, r)) if r.starts_with("send]") => (to, true, r),
        Some((to, r)) if r.starts_with("receive]") => (to, false, r),
        Some(_) => return refuse("neither [send] nor [receive]"),
        None => match rest.split_once(" via ") {
            Some((to, _)) if ring => (to, false, rest),
            _ => return refuse("no [send]/[receive]"),
        },
    };
    let (Some((from_rank, from_bracket)), Some((to_rank, to_bracket))) =
        (rank_bracket(from), rank_bracket(to))
    else {
        return refuse("ranks are not rank[device]");
    };
    let Some((_, via)) = rest.split_once("via NET/") else {
        return refuse("no `via NET/`");
    };
    // name/dev[(proxy)][/GDRDMA][(PCI)][/Shared]
    let (net, tail) = match via.split_once('/') {
        Some((n, tail)) => (Some(n.to_string()), tail),
        None => (None, ""),
    };
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    let dev: Option<u32> = tail[..digits].parse().ok();
    let mut tail = &tail[digits..];
    // A device number at the very end of a line that may be cut could lack digits.
    let dev = if tail.is_empty() && !complete {
        None
    } else {
        dev
    };
    let mut proxy = None;
    // `(%d)`: PXN's proxy rank; `(PCI)` is a suffix; other text in parentheses is not NCCL's
    // (the line was cut by another output) and is left in the tail.
    if let Some((p, r)) = tail.strip_prefix('(').and_then(|r| r.split_once(')'))
        && let Ok(n) = p.parse()
    {
        proxy = Some(n);
        tail = r;
    }
    let (mut gdr, mut gdr_pci, mut shared) = (false, false, false);
    loop {
        if let Some(r) = tail.strip_prefix("/GDRDMA") {
            gdr = true;
            tail = r;
        } else if let Some(r) = tail.strip_prefix("(PCI)") {
            gdr_pci = true;
            tail = r;
        } else if let Some(r) = tail.strip_prefix("/Shared") {
            shared = true;
            tail = r;
        } else if let Some(r) = tail.strip_prefix("/GDCopy") {
            tail = r; // 2.3: GDRCOPY for the host-side flags, not GDR for the data
        } else {
            break;
        }
    }
    // RCCL prints ` comm %p nRanks %02d` after the suffixes (rccl `transport/net.cc` since
    // bd6dbca8, 2021): the suffixes are over where it starts, so what they say is certain even
    // when the line is cut inside it.
    let rccl_comm = is_rccl_comm_suffix(tail, complete);
    let tail = if rccl_comm { "" } else { tail.trim() };
    // Text that is no suffix NCCL prints means another output cut the line (an interleaved
    // process, a launcher's tag): the line did not end as NCCL printed it, and a suffix it lacks
    // is unknown, not absent.
    let mut ended = complete || rccl_comm;
    if !tail.is_empty() {
        ended = false;
        // Cut inside a suffix: `/GDR` is GDRDMA cut short; anything else says nothing.
        if !complete && "/GDRDMA".starts_with(tail) && tail.len() > 1 {
            gdr = true;
        }
    }
    let gdr = if gdr {
        Some(true)
    } else if ended && net.is_some() && dev.is_some() {
        Some(false)
    } else {
        None
    };
    Parsed::Record(Record::NetChannel(NetChannel {
        ring,
        channel,
        conn_index,
        from_rank,
        from_bracket,
        to_rank,
        to_bracket,
        send,
        net,
        dev,
        proxy,
        gdr,
        gdr_pci,
        shared,
    }))
}

fn gdr_line(t: &str, complete: bool) -> Parsed {
    let (net25, t) = match net_prefix(t) {
        Some((transport, rest)) => {
            let rest = rest.trim();
            // Per-NIC forms: `GPU Direct RDMA Disabled for HCA %d '%s'[ (no module)]`.
            if let Some(r) = rest
                .strip_prefix("GPU Direct RDMA ")
                .filter(|r| r.contains(" for HCA ") && !r.contains("for GPU"))
            {
                return nic_gdr(transport, r, complete);
            }
            (true, rest)
        }
        None => (false, t),
    };
    let Some(r) = t.strip_prefix("GPU Direct RDMA ") else {
        return Parsed::Other;
    };
    let (enabled, r) = if let Some(r) = r.strip_prefix("Enabled for ") {
        (true, r)
    } else if let Some(r) = r.strip_prefix("Disabled for ") {
        (false, r)
    } else {
        return Parsed::Other;
    };
    let refuse = |why: &str| Parsed::Refused(why.to_string());
    if let Some(r) = r.strip_prefix("GPU/") {
        // 2.29: GPU/%ld-%ld (rank %d) - NET/%ld-%ld ( [using PXN via GPU/x-y, ]distance …)
        let Some((gpu, r)) = r.split_once(" (rank ") else {
            return refuse("2.29 form without (rank …)");
        };
        let Some((rank, r)) = r.split_once(')') else {
            return refuse("2.29 form: rank not closed");
        };
        let Some(r) = r.trim_start().strip_prefix("- NET/") else {
            return refuse("2.29 form without - NET/");
        };
        let Some((net, r)) = r.split_once(" (") else {
            return refuse("2.29 form: NET id not followed by (");
        };
        let r = r.trim_start();
        let (pxn_via, r) = match r.strip_prefix("using PXN via ") {
            Some(p) => match p.split_once(", ") {
                Some((v, r)) => (Some(v.to_string()), r),
                None => return refuse("2.29 PXN form cut"),
            },
            None => (None, r),
        };
        let local = |id: &str| id.rsplit('-').next().unwrap_or(id).to_string();
        let (distance, level, read, mode) = distance_part(r);
        return Parsed::Record(Record::GpuGdr(GpuGdr {
            form: GpuGdrForm::Ids,
            enabled,
            gpu: local(gpu),
            rank: rank.trim().parse().ok(),
            hca: local(net),
            distance,
            level,
            read,
            mode,
            pxn_via,
            reason: None,
        }));
    }
    let Some(r) = r.strip_prefix("GPU ") else {
        return refuse("no GPU after `for`");
    };
    let Some((gpu, r)) = r.split_once(" / HCA ") else {
        return if complete {
            refuse("no ` / HCA `")
        } else {
            Parsed::Refused("cut before the HCA".into())
        };
    };
    let (hca, r) = r.split_once(' ').unwrap_or((r, ""));
    // A line without its `(distance …)` still says Enabled or Disabled; the distance is unknown.
    let (distance, level, read, mode) = distance_part(r.trim_start_matches('('));
    // 2.3–2.4 name the GPU `cudaDev[nvmlDev]` (2.3: `cudaDev`, with the HCA by name) and give a
    // reason in parentheses when they give no distance; 2.5 prints the busId.
    let gpu = gpu.trim();
    let net24 = net25
        && (gpu.contains('[')
            || !hca.trim().bytes().all(|b| b.is_ascii_digit())
            || gpu.bytes().all(|b| b.is_ascii_digit()) && gpu.len() < 4);
    let reason = (distance.is_none())
        .then(|| {
            let open = r.rfind('(')?;
            let close = open + r[open..].find(')')?;
            Some(r[open + 1..close].trim().to_string())
        })
        .flatten()
        .filter(|x| !x.is_empty());
    let form = if net24 {
        GpuGdrForm::Net24
    } else if net25 {
        GpuGdrForm::Net25
    } else if mode.is_some() {
        GpuGdrForm::Mode
    } else {
        GpuGdrForm::Classic
    };
    Parsed::Record(Record::GpuGdr(GpuGdr {
        form,
        enabled,
        gpu: gpu.to_string(),
        rank: None,
        hca: hca.trim().to_string(),
        distance,
        level,
        read,
        mode,
        pxn_via: None,
        reason,
    }))
}

/// `0[0], Socket NIC distance :  PHB` (after `CUDA Dev `).
fn nic_distance(r: &str) -> Parsed {
    let refuse = |why: &str| Parsed::Refused(why.to_string());
    let Some((dev, rest)) = r.split_once(", ") else {
        return refuse("`CUDA Dev` without `, NET NIC distance`");
    };
    let Some((net, path)) = rest.split_once(" NIC distance") else {
        return refuse("no `NIC distance`");
    };
    let (cuda, nvml) = match dev.split_once('[') {
        Some((c, n)) => (c.trim().parse().ok(), n.trim_end_matches(']').parse().ok()),
        None => (dev.trim().parse().ok(), None),
    };
    let (Some(cuda_dev), Some(nvml_dev)) = (cuda, nvml) else {
        return refuse("`CUDA Dev` is not cudaDev[nvmlDev]");
    };
    Parsed::Record(Record::NicDistance(NicDistance {
        cuda_dev,
        nvml_dev,
        net: net.trim().to_string(),
        path: path.trim_start_matches([' ', ':']).trim().to_string(),
    }))
}

/// `distance 4 <= 4), read 0[ mode Default]` / `distance 4 <= 4, read 1, mode Default)` /
/// `distance 5 > 4)`.
fn distance_part(r: &str) -> (Option<u32>, Option<u32>, Option<bool>, Option<String>) {
    let Some(r) = r.trim_start_matches('(').strip_prefix("distance ") else {
        return (None, None, None, None);
    };
    let toks: Vec<&str> = r.split([' ', ',', ')']).filter(|s| !s.is_empty()).collect();
    let distance = toks.first().and_then(|d| d.parse().ok());
    let level = toks
        .get(1)
        .filter(|op| matches!(**op, "<=" | "<" | ">" | ">="))
        .and_then(|_| toks.get(2))
        .and_then(|l| l.parse().ok());
    let mut read = None;
    let mut mode = None;
    for w in toks.windows(2) {
        match w[0] {
            "read" => read = w[1].parse::<u32>().ok().map(|v| v != 0),
            "mode" => mode = Some(w[1].to_string()),
            _ => {}
        }
    }
    (distance, level, read, mode)
}

fn nic_gdr(transport: String, r: &str, complete: bool) -> Parsed {
    let (enabled, r) = if let Some(r) = r.strip_prefix("Enabled for HCA ") {
        (true, r)
    } else if let Some(r) = r.strip_prefix("Disabled for HCA ") {
        (false, r)
    } else {
        return Parsed::Refused("per-NIC GDR line without Enabled/Disabled for HCA".into());
    };
    let (idx, r) = r.split_once(' ').unwrap_or((r, ""));
    let Ok(hca) = idx.parse() else {
        return Parsed::Refused("HCA index is not a number".into());
    };
    let name = r
        .split('\'')
        .nth(1)
        .filter(|_| r.matches('\'').count() >= 2 || !complete)
        .unwrap_or("")
        .to_string();
    Parsed::Record(Record::NicGdr(NicGdr {
        transport,
        enabled,
        hca,
        name,
        no_module: r.contains("(no module)"),
    }))
}

fn nic_list(transport: String, list: &str, complete: bool) -> Parsed {
    let (body, oob) = match list.split_once("; OOB") {
        Some((b, o)) => (b, Some(o.trim().to_string())),
        None => (list, None),
    };
    let old_form = body.ends_with(' ') && oob.is_some() && !body.contains("[RO]");
    let relaxed_ordering = body.contains("[RO]");
    let body = body.replace("[RO]", "");
    let mut nics = Vec::new();
    let mut rest = body.trim();
    while let Some(r) = rest.strip_prefix('[') {
        let Some((idx, r)) = r.split_once(']') else {
            break;
        };
        let Ok(index) = idx.trim().parse::<u32>() else {
            break;
        };
        if let Some(r) = r.strip_prefix("={") {
            let (inner, r) = r.split_once('}').unwrap_or((r, ""));
            let members = inner
                .split(", ")
                .filter_map(|m| {
                    let m = m.trim().strip_prefix('[')?;
                    let (i, e) = m.split_once(']')?;
                    Some(nic_entry(i.trim().parse().ok()?, e.trim()))
                })
                .collect();
            let mut e = nic_entry(index, "");
            e.members = members;
            nics.push(e);
            rest = r.trim_start();
            continue;
        }
        let end = r.find(" [").unwrap_or(r.len());
        nics.push(nic_entry(index, r[..end].trim()));
        rest = r[end..].trim_start();
    }
    // NCCL prints the list even when no device passed its filters (net_ib's `NET/IB : Using%s
    // %s; OOB …` with an empty device line, after `NET/IB : No device found.`): an empty list
    // with its OOB interface is that statement, anything else without entries is not this form.
    if nics.is_empty() && complete && !(rest.is_empty() && oob.is_some()) {
        return Parsed::Refused("a `Using` list without [index]name entries".into());
    }
    Parsed::Record(Record::NicList(NicList {
        transport,
        nics,
        relaxed_ordering,
        old_form,
        oob,
    }))
}

/// `mlx5_0:1/IB/SHARP` or `eth0:10.0.0.1<0>`.
fn nic_entry(index: u32, s: &str) -> NicEntry {
    let (name, rest) = s.split_once(':').unwrap_or((s, ""));
    let mut e = NicEntry {
        index,
        name: name.to_string(),
        port: None,
        link: None,
        sharp: false,
        addr: None,
        members: Vec::new(),
    };
    let (port, flags) = rest.split_once('/').unwrap_or((rest, ""));
    match port.parse() {
        Ok(p) => e.port = Some(p),
        Err(_) if !port.is_empty() => e.addr = Some(rest.to_string()),
        Err(_) => {}
    }
    for f in flags.split('/') {
        match f {
            "IB" | "RoCE" => e.link = Some(f.to_string()),
            "SHARP" => e.sharp = true,
            _ => {}
        }
    }
    e
}

fn virtual_nic(v: &str) -> Parsed {
    let v = v.trim();
    let Some(r) = v.strip_prefix('[') else {
        return Parsed::Refused("virtual device without [index]".into());
    };
    let Some((idx, r)) = r.split_once(']') else {
        return Parsed::Refused("virtual device index not closed".into());
    };
    let Ok(index) = idx.parse() else {
        return Parsed::Refused("virtual device index is not a number".into());
    };
    let kv = |k: &str| {
        r.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
    };
    Parsed::Record(Record::VirtualNic(VirtualNic {
        index,
        name: kv("name").unwrap_or("").to_string(),
        speed_mbps: kv("speed").and_then(|s| s.parse().ok()),
        ndevs: kv("ndevs").and_then(|s| s.parse().ok()),
        rail: kv("rail").and_then(|s| s.parse().ok()),
        plane: kv("plane").and_then(|s| s.parse().ok()),
    }))
}

fn comm(t: &str) -> Parsed {
    let (func, r) = match t.find("comm 0x") {
        Some(0) => (None, t),
        Some(i) => (Some(t[..i].trim().to_string()), &t[i..]),
        None => return Parsed::Other,
    };
    let (body, phase) = match r.split_once(" - ") {
        Some((b, p)) => (b, Some(p.trim().to_string())),
        None => (r, None),
    };
    let toks: Vec<&str> = body.split_whitespace().collect();
    let mut c = Comm {
        func,
        comm: toks.get(1).copied().unwrap_or("").to_string(),
        phase,
        ..Default::default()
    };
    for w in toks.windows(2) {
        let n = || w[1].parse::<u32>().ok();
        match w[0] {
            "rank" => c.rank = n(),
            "nranks" | "nRanks" => c.nranks = n(),
            "nNodes" => c.nnodes = n(),
            "localRanks" => c.local_ranks = n(),
            "localRank" => c.local_rank = n(),
            "cudaDev" => c.cuda_dev = n(),
            "nvmlDev" => c.nvml_dev = n(),
            "busId" => c.bus_id = Some(w[1].to_string()),
            "commId" => c.comm_id = Some(w[1].to_string()),
            _ => {}
        }
    }
    if c.rank.is_none() {
        return Parsed::Other; // `comm 0x… rank …` lines only (not `comm 0x… … channels`)
    }
    Parsed::Record(Record::Comm(c))
}

fn completion(t: &str) -> Completion {
    let after = |key: &str| -> Option<u32> {
        let i = t.find(key)? + key.len();
        let r = t[i..].trim_start_matches([' ', '=']);
        // `status=IBV_WC_LOC_PROT_ERR(4)` keeps its number in parentheses.
        let r = match r.split_once('(') {
            Some((name, n)) if !name.is_empty() && !name.contains(' ') => n,
            _ => r,
        };
        let d: String = r.chars().take_while(char::is_ascii_digit).collect();
        d.parse().ok()
    };
    let peer = t.split_once("from peer ").map(|(_, r)| {
        r.split([' ', ','])
            .next()
            .unwrap_or("")
            .trim_end_matches(',')
            .to_string()
    });
    Completion {
        peer,
        status: after("with error ").or_else(|| after("status")),
        opcode: after("opcode"),
        vendor_err: after("vendor err ").or_else(|| after("vendor_err")),
        text: t.chars().take(300).collect(),
    }
}
