//! The fabric's own map: the nodes a fabric tool saw and the cables between their ports.
//!
//! Data: what `parse::fabric` reads from a producer's output — `ibnetdiscover` (default topology
//! file and `-p` port list), `iblinkinfo` (default and `-l`), ibdiagnet's `ibdiagnet2.db_csv`
//! (NODES/PORTS/LINKS tables) and `lldpctl -f json` (one file per host). Every link keeps the
//! line of the file it was read from, so a finding can name its evidence.

use serde::Serialize;

/// Which producer wrote a map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Producer {
    /// `ibnetdiscover` (default topology file).
    Ibnetdiscover,
    /// `ibnetdiscover -p` (ports report).
    IbnetdiscoverPorts,
    /// `iblinkinfo` (default or `-l`).
    Iblinkinfo,
    /// ibdiagnet's `ibdiagnet2.db_csv`.
    IbdiagnetCsv,
    /// lldpd's `lldpctl -f json` on one host.
    Lldpctl,
}

impl Producer {
    /// The tool's own name (`ibnetdiscover -p`).
    pub fn tool(self) -> &'static str {
        match self {
            Producer::Ibnetdiscover => "ibnetdiscover",
            Producer::IbnetdiscoverPorts => "ibnetdiscover -p",
            Producer::Iblinkinfo => "iblinkinfo",
            Producer::IbdiagnetCsv => "ibdiagnet2.db_csv",
            Producer::Lldpctl => "lldpctl -f json",
        }
    }
}

/// What a fabric node is, as the producer names it (`Switch`/`SW`, `Ca`/`CA`, `Rt`/`RT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A switch (a leaf, a spine, an Ethernet switch seen over LLDP).
    Switch,
    /// A channel adapter: a host's NIC port (an Ethernet host port for LLDP).
    Ca,
    /// An InfiniBand router.
    Router,
}

/// One node of the map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FabricNode {
    /// Switch, adapter or router.
    pub kind: NodeKind,
    /// Node GUID (InfiniBand), when the producer prints it.
    pub guid: Option<u64>,
    /// Node description as the producer prints it: the driver sets `<host> mlx5_N` on a host
    /// adapter; a switch's description or LLDP system name.
    pub desc: String,
    /// A key unique within the map: the GUID in hex, or the description where there is none.
    pub key: String,
    /// How many ports the node has, where the producer prints it (`ibnetdiscover`'s
    /// `Switch\t65 "S-…"`, db_csv `NODES.NumPorts`); `None`: not printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<u32>,
}

/// One end of a cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LinkEnd {
    /// Index into [`FabricMap::nodes`].
    pub node: usize,
    /// Port number on that node (LLDP: the position of the port name in first-seen order,
    /// the name itself in [`LinkEnd`]'s link's `port_names`).
    pub port: u32,
    /// Port GUID, when printed (adapters).
    pub port_guid: Option<u64>,
}

/// The link's width and speed as the producer prints them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkRate {
    /// Lanes (`4x` → 4), when printed.
    pub lanes: Option<u32>,
    /// Generation (`NDR`, `HDR`, …; `25G` … for Ethernet), when it can be told.
    pub generation: Option<String>,
    /// Data rate in Gb/s (lanes × the generation's lane rate), when both are known.
    pub gbps: Option<f64>,
    /// The producer's own words (`4xNDR`, `4X 106.25 Gbps`), for evidence.
    pub raw: String,
    /// The fastest rate both ends of the cable support, in Gb/s, where the map shows it:
    /// ibdiagnet's `LinkSpeedSup`/`LinkWidthSup` of both ports, or `iblinkinfo`'s own
    /// `( Could be …)` note (and, on a link it prints without one, the rate itself: the tool
    /// prints the note whenever both ends support more). `None`: the map cannot say, so a
    /// slower link may be the hardware's own maximum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_gbps: Option<f64>,
    /// The producer's own words for what the ends support (`Could be 14.0625 Gbps`,
    /// `LinkSpeedSup 0x…/LinkWidthSup …` of both ends), for evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_raw: Option<String>,
}

/// One cable: two ports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FabricLink {
    /// One end.
    pub a: LinkEnd,
    /// The other end.
    pub b: LinkEnd,
    /// Port names where ports are named rather than numbered (LLDP: `swp12`, `eth2`), a then b.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_names: Option<(String, String)>,
    /// Width and speed, when printed.
    pub rate: Option<LinkRate>,
    /// File and 1-based line the link was read from.
    pub evidence: String,
    /// Both ends are ports of one node (a switch port cabled to another port of the same
    /// switch, as `ibnetdiscover` prints a loopback plug or a test cable): not a host link and
    /// not a cable between two switches.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub loopback: bool,
}

/// Whether a port counter counts since the last clear or over the producer's own run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterSpan {
    /// Standing since the counters were last cleared (ibdiagnet's `PM_INFO`).
    SinceClear,
    /// Counted during the producer's run, or between two maps (ibdiagnet's `PM_DELTA`):
    /// climbing now.
    Delta,
}

/// One port's error counters as the fabric's own tool read them (IB PortCounters /
/// PortCountersExtended), by the producer's column names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortCounters {
    /// Index into [`FabricMap::nodes`].
    pub node: usize,
    /// Port number on that node.
    pub port: u32,
    /// What the values count over.
    pub span: CounterSpan,
    /// Counter name as the producer prints it (`SymbolErrorCounter`, `LinkDownedCounter`) and
    /// its value; only counters the producer printed a number for.
    pub values: Vec<(String, u64)>,
    /// File and 1-based line the row was read from.
    pub evidence: String,
}

/// The map one producer printed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FabricMap {
    /// Who wrote it.
    pub producer: Producer,
    /// Nodes, in first-seen order.
    pub nodes: Vec<FabricNode>,
    /// Cables, each once.
    pub links: Vec<FabricLink>,
    /// Port error counters, where the producer reads them (ibdiagnet's `PM_INFO`, `PM_DELTA`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<PortCounters>,
    /// What the producer's output cannot show (e.g. `iblinkinfo` without `-l` prints no
    /// adapter GUID for a switch's peer).
    pub limitations: Vec<String>,
}

/// Data rate per lane in Gb/s of an InfiniBand generation as `ibnetdiscover` names it
/// (`dump_linkspeedext_compat`: SDR…XDR); `None` for a name it does not print.
pub fn ib_lane_gbps(generation: &str) -> Option<f64> {
    Some(match generation {
        "SDR" => 2.5,
        "DDR" => 5.0,
        "QDR" | "FDR10" => 10.0,
        // Mellanox's vendor speed EDR20 (ibutils2 `IB_LINK_SPEED_EDR_20`): 20 Gb/s a lane.
        "EDR20" => 20.0,
        "FDR" => 14.0,
        "EDR" => 25.0,
        "HDR" => 50.0,
        "NDR" => 100.0,
        "XDR" => 200.0,
        _ => return None,
    })
}
