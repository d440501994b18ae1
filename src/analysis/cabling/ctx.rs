//! The one context every cabling rule reads: the map's host ports (each adapter cabled to a
//! switch), the hosts they belong to and whether each is a GPU node, each leaf's rail, the
//! scalable units, and — when layouts are given — which layout adapter each port is.
//!
//! Data: the [`FabricMap`] (node descriptions `<host> <adapter>` as the driver sets them, GUIDs,
//! cables) and the [`NodeLayout`]s. Nothing here decides a fault; [`super::rules`] and its
//! siblings do.

use super::layout::{Adapter, NodeLayout};
use super::units::{self, Unit};
use super::{Leaf, NotGpuNode, Rail};
use crate::model::fabric::{FabricMap, LinkEnd, NodeKind, Producer};
use std::collections::{BTreeMap, HashMap, HashSet};

/// How a map port was paired with a layout's adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Node or port GUID a capture recorded.
    Guid,
    /// `<host> <adapter>` description naming the layout's adapter.
    Description,
    /// LLDP: the host interface name.
    Interface,
    /// Neither: the layout's adapter on the rail the port's leaf carries.
    LeafRail,
}

impl How {
    fn word(self) -> &'static str {
        match self {
            How::Guid => "guid",
            How::Description => "description",
            How::Interface => "interface",
            How::LeafRail => "leaf rail",
        }
    }
}

/// A map port paired with a layout's adapter.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    /// Index into the layouts.
    pub layout: usize,
    /// Index into that layout's adapters.
    pub adapter: usize,
    /// How.
    pub how: How,
}

/// One host adapter port cabled to a switch.
#[derive(Debug)]
pub struct Port<'a> {
    /// Index into [`FabricMap::links`].
    pub link: usize,
    /// The adapter's end.
    pub ca: LinkEnd,
    /// The switch's end.
    pub sw: LinkEnd,
    /// The switch port's name where ports are named (LLDP), else `None`: its number is
    /// `sw.port` ([`Ctx::leaf_port`] gives either).
    pub leaf_port_name: Option<&'a str>,
    /// Index into [`Ctx::hosts`].
    pub host: usize,
    /// The adapter as the map names it (`mlx5_3`, `HCA-4`, a netdev for LLDP).
    pub name: &'a str,
    /// The layout's adapter, when paired.
    pub pair: Option<Pair>,
    /// Its layout rail: the paired adapter's (by GUID, description or interface), else the
    /// rail of the adapter of its name in the reference layout (the one every host shares,
    /// else the first capture) — so hosts without a capture vote on their leaves' rails.
    pub key: Option<usize>,
}

/// A host of the map.
#[derive(Debug)]
pub struct Host {
    /// Its name: the layout's (short) name when a capture names it, else the map's.
    pub name: String,
    /// Its ports, indices into [`Ctx::ports`].
    pub ports: Vec<usize>,
    /// Why it is not held to the GPU layout; `None`: a GPU node.
    pub not_gpu: Option<String>,
    /// Its layout: its own capture's, else the one every host shares.
    pub layout: Option<usize>,
}

/// A switch with host adapters cabled to it.
#[derive(Debug)]
pub struct LeafInfo<'a> {
    /// Map node index.
    pub node: usize,
    /// Host ports on it (every host), indices into [`Ctx::ports`].
    pub ports: Vec<usize>,
    /// GPU nodes' adapters by map name.
    pub name_votes: BTreeMap<&'a str, usize>,
    /// GPU nodes' adapters by layout rail ([`Port::key`]).
    pub layout_votes: BTreeMap<usize, usize>,
    /// Whether more than half of its GPU nodes' adapters have a layout rail: the leaf is
    /// measured in layout rails, else in map names.
    pub by_layout: bool,
    /// The map name more than half of its GPU nodes' adapters carry.
    pub name_rail: Option<&'a str>,
    /// The layout rail more than half of its paired adapters are on.
    pub layout_rail: Option<usize>,
}

impl LeafInfo<'_> {
    /// The leaf's rail: the layout's where its adapters are paired, else the map name's.
    pub fn rail(&self) -> Option<Rail> {
        if self.by_layout {
            return self.layout_rail.map(Rail::Index);
        }
        self.name_rail.map(|n| Rail::Name(n.to_string()))
    }

    /// Rails on the leaf with their counts, by the same measure as [`LeafInfo::rail`].
    pub fn rails(&self) -> Vec<(Rail, usize)> {
        if self.by_layout {
            return self
                .layout_votes
                .iter()
                .map(|(&r, &n)| (Rail::Index(r), n))
                .collect();
        }
        self.name_votes
            .iter()
            .map(|(&r, &n)| (Rail::Name(r.to_string()), n))
            .collect()
    }
}

/// The judgment's context.
pub struct Ctx<'a> {
    /// The map.
    pub map: &'a FabricMap,
    /// The layouts (empty: from the map alone).
    pub layouts: &'a [NodeLayout],
    /// Every host adapter port cabled to a switch.
    pub ports: Vec<Port<'a>>,
    /// Hosts, in first-seen order.
    pub hosts: Vec<Host>,
    /// Leaves, by display name.
    pub leaves: Vec<LeafInfo<'a>>,
    /// Map node → index into [`Ctx::leaves`] (`usize::MAX`: not a leaf).
    pub leaf_of: Vec<usize>,
    /// GPU nodes grouped by the leaves they reach.
    pub units: Vec<Unit>,
    /// Each host's unit, index into [`Ctx::units`] (`None`: not a GPU node).
    pub unit_of: Vec<Option<usize>>,
    /// Adapters with the firmware's default description (no host).
    pub unnamed: usize,
    /// SHARP aggregation nodes.
    pub aggregation: usize,
    /// How many adapters most hosts have in the map.
    pub common_adapters: Option<usize>,
    /// Whether rails are judged: GPU nodes have two adapters or more and most leaves carry
    /// one rail (a fabric that is not rail-optimised is not held to rails).
    pub rails_judged: bool,
    /// Display name of a switch whose description another switch shares (description and
    /// GUID), by node; every other node is shown by its description.
    names: HashMap<usize, String>,
}

/// Splits a node description `<host> <adapter>` at its last blank.
pub fn split_desc(desc: &str) -> Option<(&str, &str)> {
    let d = desc.trim();
    let (h, a) = d.rsplit_once(char::is_whitespace)?;
    let h = h.trim_end();
    (!h.is_empty() && !a.is_empty()).then_some((h, a))
}

/// The firmware's own description of an adapter no driver named (`MT4129 ConnectX7
/// Mellanox Technologies`): a device id first, or the vendor's name last.
pub fn firmware_default(desc: &str) -> bool {
    let d = desc.trim();
    let mt = d
        .strip_prefix("MT")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
    mt || d.ends_with("Mellanox Technologies") || d.is_empty()
}

/// A SHARP aggregation node (a switch's own in-network computing port, `Mellanox Technologies
/// Aggregation Node`).
pub fn aggregation_node(desc: &str) -> bool {
    desc.trim().ends_with("Aggregation Node")
}

/// A fabric manager by its name: a name part `ufm`/`cufm` (UFM servers, `B11-P1-CUFM-02`).
fn manager_by_name(host: &str) -> bool {
    host.split(['-', '.', '_'])
        .any(|t| t.eq_ignore_ascii_case("ufm") || t.eq_ignore_ascii_case("cufm"))
}

fn display_names(map: &FabricMap) -> HashMap<usize, String> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for n in map.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
        *count.entry(n.desc.as_str()).or_default() += 1;
    }
    map.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            n.kind == NodeKind::Switch
                && (n.desc.is_empty() || count.get(n.desc.as_str()) > Some(&1))
        })
        .map(|(i, n)| {
            let name = match n.guid {
                Some(g) => format!("{} ({g:#018x})", n.desc),
                None => format!("{} ({})", n.desc, n.key),
            };
            (i, name)
        })
        .collect()
}

/// Layout lookups: by host name and by GUID.
struct Lookup<'l> {
    by_host: HashMap<&'l str, usize>,
    by_guid: HashMap<u64, (usize, usize)>,
    template: Option<usize>,
}

impl<'l> Lookup<'l> {
    fn new(layouts: &'l [NodeLayout]) -> Self {
        let mut by_host = HashMap::new();
        let mut by_guid = HashMap::new();
        for (li, l) in layouts.iter().enumerate() {
            let Some(h) = &l.host else { continue };
            by_host.insert(h.as_str(), li);
            for (ai, a) in l.adapters.iter().enumerate() {
                for g in [a.node_guid, a.port_guid].into_iter().flatten() {
                    by_guid.entry(g).or_insert((li, ai));
                }
            }
        }
        Lookup {
            by_host,
            by_guid,
            template: layouts.iter().position(|l| l.host.is_none()),
        }
    }

    /// The capture of a map host (an FQDN in the map matches a capture's short name).
    fn own(&self, h: &str) -> Option<usize> {
        self.by_host
            .get(h)
            .or_else(|| h.split_once('.').and_then(|(s, _)| self.by_host.get(s)))
            .copied()
    }
}

impl<'a> Ctx<'a> {
    /// Builds the context: host ports, hosts and their classes, layout pairing, leaves and
    /// their rails, scalable units.
    pub fn build(map: &'a FabricMap, layouts: &'a [NodeLayout]) -> Self {
        let look = Lookup::new(layouts);
        let mut cx = Ctx {
            map,
            layouts,
            ports: Vec::new(),
            hosts: Vec::new(),
            leaves: Vec::new(),
            leaf_of: Vec::new(),
            units: Vec::new(),
            unit_of: Vec::new(),
            unnamed: 0,
            aggregation: 0,
            common_adapters: None,
            rails_judged: false,
            names: display_names(map),
        };
        cx.read_ports(&look);
        cx.key_ports(look.template.or((!layouts.is_empty()).then_some(0)));
        cx.classify_hosts();
        cx.tally_leaves();
        cx.pair_by_leaf_rail();
        let voted = cx.leaves.iter().filter(|l| !l.name_votes.is_empty());
        let (n, mixed) = voted.fold((0, 0), |(n, m), l| {
            (n + 1, m + usize::from(l.rail().is_none()))
        });
        cx.rails_judged = cx.common_adapters.is_some_and(|c| c >= 2) && 2 * mixed < n;
        let sets: Vec<Option<Vec<usize>>> = cx
            .hosts
            .iter()
            .map(|h| {
                h.not_gpu
                    .is_none()
                    .then(|| h.ports.iter().map(|&p| cx.ports[p].sw.node).collect())
            })
            .collect();
        let (grouped, unit_of) = units::group(
            sets,
            |h| cx.hosts[h].name.clone(),
            |n| cx.name(n).to_string(),
        );
        cx.units = grouped;
        cx.unit_of = unit_of;
        cx
    }

    /// Every CA–switch cable becomes a port of its host; default descriptions and SHARP
    /// nodes are counted, not hosts.
    fn read_ports(&mut self, look: &Lookup<'_>) {
        let map = self.map;
        let mut by_name: HashMap<&'a str, usize> = HashMap::new();
        let mut unnamed: HashSet<usize> = HashSet::new();
        let mut sharp: HashSet<usize> = HashSet::new();
        for (ki, link) in map.links.iter().enumerate() {
            let (ca, sw) = match (map.nodes[link.a.node].kind, map.nodes[link.b.node].kind) {
                (NodeKind::Ca, NodeKind::Switch) => (link.a, link.b),
                (NodeKind::Switch, NodeKind::Ca) => (link.b, link.a),
                _ => continue,
            };
            let node = &map.nodes[ca.node];
            let names = link.port_names.as_ref();
            let (ca_if, leaf_port_name) = match names {
                Some((x, y)) if link.a.node == ca.node => (Some(x.as_str()), Some(y.as_str())),
                Some((x, y)) => (Some(y.as_str()), Some(x.as_str())),
                None => (None, None),
            };
            let by_guid = [node.guid, ca.port_guid]
                .into_iter()
                .flatten()
                .find_map(|g| look.by_guid.get(&g).copied());
            if by_guid.is_none() && aggregation_node(&node.desc) {
                sharp.insert(ca.node);
                continue;
            }
            let split = split_desc(&node.desc).filter(|_| !firmware_default(&node.desc));
            let (host_name, adapter, layout) = match (by_guid, split) {
                (Some((li, _)), s) => (
                    layouts_host(self.layouts, li),
                    s.map_or(node.desc.as_str(), |(_, a)| a),
                    Some(li),
                ),
                (None, Some((h, a))) => {
                    let own = look.own(h);
                    let name = own.map_or(h, |li| layouts_host(self.layouts, li));
                    (name, a, own.or(look.template))
                }
                (None, None) => {
                    unnamed.insert(ca.node);
                    continue;
                }
            };
            let pair = match by_guid {
                Some((li, ai)) => Some(Pair {
                    layout: li,
                    adapter: ai,
                    how: How::Guid,
                }),
                None => layout.and_then(|li| {
                    pair_by_name(&self.layouts[li], li, adapter, ca.port, ca_if, map.producer)
                }),
            };
            let hi = match by_name.get(host_name) {
                Some(&hi) => hi,
                None => {
                    by_name.insert(host_name, self.hosts.len());
                    self.hosts.push(Host {
                        name: host_name.to_string(),
                        ports: Vec::new(),
                        not_gpu: None,
                        layout,
                    });
                    self.hosts.len() - 1
                }
            };
            self.hosts[hi].ports.push(self.ports.len());
            self.ports.push(Port {
                link: ki,
                ca,
                sw,
                leaf_port_name,
                host: hi,
                name: adapter,
                pair,
                key: None,
            });
        }
        self.unnamed = unnamed.len();
        self.aggregation = sharp.len();
    }

    /// Each port's layout rail: its pair's, else its name's in the reference layout.
    fn key_ports(&mut self, reference: Option<usize>) {
        for i in 0..self.ports.len() {
            let p = &self.ports[i];
            let key = self.direct_rail(p).or_else(|| {
                let l = &self.layouts[reference?];
                l.adapters.iter().find(|a| a.name == p.name)?.rail
            });
            self.ports[i].key = key;
        }
    }

    /// Which hosts are GPU nodes: not a fabric manager by name, and more than half the
    /// adapters most hosts have. A captured host is a GPU node by its capture.
    fn classify_hosts(&mut self) {
        let counts: Vec<usize> = self.hosts.iter().map(|h| self.adapters_of(h)).collect();
        let mut hist: BTreeMap<usize, usize> = BTreeMap::new();
        for (h, &n) in self.hosts.iter().zip(&counts) {
            if !manager_by_name(&h.name) {
                *hist.entry(n).or_default() += 1;
            }
        }
        let common = hist.iter().max_by_key(|&(n, c)| (*c, *n)).map(|(&n, _)| n);
        self.common_adapters = common;
        for (h, &n) in self.hosts.iter_mut().zip(&counts) {
            let captured = h.layout.is_some_and(|li| self.layouts[li].host.is_some());
            if captured {
                continue;
            }
            if manager_by_name(&h.name) {
                h.not_gpu = Some("a fabric manager (UFM) by its name".into());
            } else if let Some(c) = common
                && 2 * n <= c
            {
                h.not_gpu = Some(format!("{n} adapter(s) where most hosts have {c}"));
            }
        }
    }

    /// Distinct adapters of a host in the map.
    fn adapters_of(&self, h: &Host) -> usize {
        let mut names: Vec<&str> = h.ports.iter().map(|&p| self.ports[p].name).collect();
        names.sort_unstable();
        names.dedup();
        names.len()
    }

    /// Leaves and their rails: the name (and layout rail) more than half of the GPU nodes'
    /// adapters on each carry.
    fn tally_leaves(&mut self) {
        let mut leaves: Vec<LeafInfo<'a>> = Vec::new();
        let mut at: Vec<usize> = vec![usize::MAX; self.map.nodes.len()];
        for (pi, p) in self.ports.iter().enumerate() {
            if at[p.sw.node] == usize::MAX {
                at[p.sw.node] = leaves.len();
                leaves.push(LeafInfo {
                    node: p.sw.node,
                    ports: Vec::new(),
                    name_votes: BTreeMap::new(),
                    layout_votes: BTreeMap::new(),
                    by_layout: false,
                    name_rail: None,
                    layout_rail: None,
                });
            }
            let l = &mut leaves[at[p.sw.node]];
            l.ports.push(pi);
            if self.hosts[p.host].not_gpu.is_some() {
                continue;
            }
            *l.name_votes.entry(p.name).or_default() += 1;
            if let Some(r) = p.key {
                *l.layout_votes.entry(r).or_default() += 1;
            }
        }
        for l in &mut leaves {
            l.name_rail = majority(&l.name_votes).copied();
            l.layout_rail = majority(&l.layout_votes).copied();
            let keyed: usize = l.layout_votes.values().sum();
            let all: usize = l.name_votes.values().sum();
            l.by_layout = 2 * keyed > all;
        }
        leaves.sort_by(|a, b| self.name(a.node).cmp(self.name(b.node)));
        self.leaf_of = vec![usize::MAX; self.map.nodes.len()];
        for (i, l) in leaves.iter().enumerate() {
            self.leaf_of[l.node] = i;
        }
        self.leaves = leaves;
    }

    /// A map name the layout does not know (`HCA-K`), not matched by GUID: the layout's
    /// adapter on its leaf's rail.
    fn pair_by_leaf_rail(&mut self) {
        for hi in 0..self.hosts.len() {
            let Some(li) = self.hosts[hi].layout else {
                continue;
            };
            let taken: HashSet<usize> = self.hosts[hi]
                .ports
                .iter()
                .filter_map(|&p| self.ports[p].pair.map(|x| x.adapter))
                .collect();
            for pi in self.hosts[hi].ports.clone() {
                if self.ports[pi].pair.is_some() {
                    continue;
                }
                let leaf = &self.leaves[self.leaf_of[self.ports[pi].sw.node]];
                let Some(r) = leaf.layout_rail.filter(|_| leaf.by_layout) else {
                    continue;
                };
                let ai = self.layouts[li]
                    .adapters
                    .iter()
                    .enumerate()
                    .position(|(ai, a)| a.rail == Some(r) && !taken.contains(&ai));
                if let Some(ai) = ai {
                    self.ports[pi].pair = Some(Pair {
                        layout: li,
                        adapter: ai,
                        how: How::LeafRail,
                    });
                }
            }
        }
    }

    /// The layout rail a port was paired to by its own identity (GUID, description,
    /// interface), not by its leaf.
    pub fn direct_rail(&self, p: &Port<'_>) -> Option<usize> {
        let x = p.pair.filter(|x| x.how != How::LeafRail)?;
        self.layouts[x.layout].adapters[x.adapter].rail
    }

    /// The layout's adapter of a port, when paired.
    pub fn adapter(&self, p: &Port<'_>) -> Option<&'a Adapter> {
        p.pair.map(|x| &self.layouts[x.layout].adapters[x.adapter])
    }

    /// The GPUs a port's rail serves (from the layout).
    pub fn gpus(&self, p: &Port<'_>) -> Vec<String> {
        self.adapter(p).map(|a| a.gpus.clone()).unwrap_or_default()
    }

    /// A port's adapter name: the layout's where it pairs by GUID or name, else the map's.
    pub fn adapter_name(&self, p: &Port<'_>) -> String {
        match (p.pair, self.adapter(p)) {
            (Some(x), Some(a)) if x.how != How::LeafRail => a.name.clone(),
            (Some(_), Some(a)) if a.name != p.name => {
                format!("{} ({} by its leaf's rail)", p.name, a.name)
            }
            _ => p.name.to_string(),
        }
    }

    /// A port's own rail: its layout rail ([`Port::key`]), else its map name.
    pub fn port_rail(&self, p: &Port<'_>) -> Rail {
        p.key
            .map_or_else(|| Rail::Name(p.name.to_string()), Rail::Index)
    }

    /// The switch port a host port is cabled to: its name (LLDP) or number.
    pub fn leaf_port(&self, p: &Port<'_>) -> String {
        p.leaf_port_name
            .map_or_else(|| p.sw.port.to_string(), str::to_string)
    }

    /// The leaf a port is cabled to.
    pub fn leaf(&self, p: &Port<'_>) -> &LeafInfo<'a> {
        &self.leaves[self.leaf_of[p.sw.node]]
    }

    /// A node's display name.
    pub fn name(&self, node: usize) -> &str {
        self.names
            .get(&node)
            .map_or(self.map.nodes[node].desc.as_str(), String::as_str)
    }

    /// The host of a port.
    pub fn host(&self, p: &Port<'_>) -> &Host {
        &self.hosts[p.host]
    }

    /// The map line a port's cable was read from.
    pub fn evidence(&self, p: &Port<'_>) -> String {
        self.map.links[p.link].evidence.clone()
    }

    /// GPU nodes.
    pub fn gpu_hosts(&self) -> impl Iterator<Item = &Host> {
        self.hosts.iter().filter(|h| h.not_gpu.is_none())
    }

    /// GPU nodes' ports.
    pub fn gpu_ports(&self) -> impl Iterator<Item = &Port<'a>> {
        self.ports
            .iter()
            .filter(|p| self.hosts[p.host].not_gpu.is_none())
    }

    /// GPU nodes' ports paired with a layout adapter.
    pub fn paired(&self) -> impl Iterator<Item = &Port<'a>> {
        self.gpu_ports().filter(|p| p.pair.is_some())
    }

    /// How many ports were paired each way.
    pub fn matched_by(&self) -> BTreeMap<String, usize> {
        let mut n: BTreeMap<&str, usize> = BTreeMap::new();
        for p in self.paired() {
            if let Some(x) = p.pair {
                *n.entry(x.how.word()).or_default() += 1;
            }
        }
        n.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    fn unpaired(&self) -> impl Iterator<Item = &Port<'a>> {
        self.gpu_ports()
            .filter(|p| !self.layouts.is_empty() && p.pair.is_none())
    }

    /// Descriptions of GPU nodes' ports no layout pairs (the first `n`).
    pub fn unpaired_descs(&self, n: usize) -> Vec<String> {
        self.unpaired()
            .take(n)
            .map(|p| self.map.nodes[p.ca.node].desc.clone())
            .collect()
    }

    /// How many GPU nodes' ports no layout pairs.
    pub fn unpaired_total(&self) -> usize {
        self.unpaired().count()
    }

    /// Hosts not held to the GPU layout.
    pub fn not_gpu_nodes(&self) -> Vec<NotGpuNode> {
        self.hosts
            .iter()
            .filter_map(|h| {
                h.not_gpu.as_ref().map(|why| NotGpuNode {
                    host: h.name.clone(),
                    adapters: self.adapters_of(h),
                    why: why.clone(),
                })
            })
            .collect()
    }

    /// The leaves as the report gives them.
    pub fn leaf_report(&self) -> Vec<Leaf> {
        self.leaves
            .iter()
            .map(|l| Leaf {
                name: self.name(l.node).to_string(),
                guid: self.map.nodes[l.node].guid.map(|g| format!("{g:#018x}")),
                rail: l.rail(),
                adapters: l.name_votes.values().sum(),
                rails: l.rails(),
            })
            .collect()
    }

    /// What the inputs could not show.
    pub fn limitations(&self) -> Vec<String> {
        let mut v = self.map.limitations.clone();
        if self.layouts.is_empty() {
            v.push("no node layout: rails are the adapter names (`mlx5_N`, `HCA-N`) most hosts of each leaf put on it, no GPU is named; give `-i` (a capture, or a directory of captures named by host) to pair adapters with GPUs".into());
        } else if self.layouts.iter().any(|l| l.host.is_none()) {
            v.push("one node layout stands for every host: an adapter up in the capture but absent from the map can only be judged against that layout".into());
        }
        let unpaired = self.unpaired_total();
        if unpaired > 0 {
            v.push(format!("{unpaired} GPU-node adapter(s) of the map pair with no layout adapter (their name is not the layout's, no capture holds their GUID, and their leaf carries no paired adapter): judged from the map alone, no GPU named"));
        }
        if !self.rails_judged && self.gpu_hosts().next().is_some() {
            v.push(format!(
                "rails not judged: {} (a fabric that is not rail-optimised is not held to rails)",
                match self.common_adapters {
                    Some(c) if c < 2 => format!("most hosts have {c} adapter in the map"),
                    _ => "most leaves carry no single rail".to_string(),
                }
            ));
        }
        if self.gpu_hosts().next().is_none() {
            v.push("no GPU node in the map (no adapter described `<host> <adapter>` by a host that is not a fabric manager): nothing was judged as a GPU rail".into());
        }
        v
    }
}

fn layouts_host(layouts: &[NodeLayout], li: usize) -> &str {
    layouts[li].host.as_deref().unwrap_or_default()
}

/// The layout adapter a map port names: by name and port, by name, by interface (LLDP).
fn pair_by_name(
    l: &NodeLayout,
    li: usize,
    name: &str,
    port: u32,
    ca_if: Option<&str>,
    producer: Producer,
) -> Option<Pair> {
    let named = |x: &Adapter| x.name == name;
    let by_port = l.adapters.iter().position(|x| {
        named(x)
            && x.port
                .is_none_or(|p| p == port || producer == Producer::Lldpctl)
    });
    let (ai, how) = match by_port.or_else(|| l.adapters.iter().position(named)) {
        Some(ai) => (ai, How::Description),
        None => (
            l.adapters.iter().position(|x| {
                x.netdevs
                    .iter()
                    .any(|n| n == name || Some(n.as_str()) == ca_if)
            })?,
            How::Interface,
        ),
    };
    Some(Pair {
        layout: li,
        adapter: ai,
        how,
    })
}

/// The key more than half of the votes carry.
fn majority<K>(votes: &BTreeMap<K, usize>) -> Option<&K> {
    let total: usize = votes.values().sum();
    votes.iter().find(|&(_, &n)| 2 * n > total).map(|(k, _)| k)
}
