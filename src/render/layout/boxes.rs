//! The nested box tree of the picture, before placement: one column per NUMA node holding its
//! host bridges, root ports, switches (with their downstream ports nested) and bridges as
//! containers, and GPUs, accelerators, NICs, NVMe and other functions as leaves with their
//! text lines. SR-IOV virtual functions, uncore functions on a root bus and empty ports are
//! folded into counts on their container, as the tree renderer does.
//!
//! Data: the topology's NUMA nodes (cpulists, and the socket of their first CPU from
//! `/proc/cpuinfo`), host bridges and devices (names, addresses, OS devices, links, slots,
//! drivers, sysfs paths); endpoint names (`GPU0`, `NIC3`) and pair labels from the
//! [`Classifier`].

use super::{BoxKind, LaidBox, plural};
use crate::analysis::classify::{Classifier, Endpoint, Label, pair_wanted};
use crate::analysis::paths::{LinkHealth, Paths};
use crate::model::{Bdf, Device, DeviceKind, OsDeviceKind, Topology, linkfmt};
use crate::parse::cpulist;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A node of the box tree before placement.
pub(super) struct Node {
    pub(super) kind: BoxKind,
    pub(super) id: String,
    /// Header lines (containers) or all lines (leaves): (text, bold).
    pub(super) lines: Vec<(String, bool)>,
    pub(super) title: String,
    pub(super) bdf: Option<Bdf>,
    pub(super) endpoint: Option<String>,
    pub(super) children: Vec<Node>,
}

impl Node {
    /// A container whose hover title is its lines.
    fn container(
        kind: BoxKind,
        id: String,
        lines: Vec<(String, bool)>,
        bdf: Option<Bdf>,
        children: Vec<Node>,
    ) -> Node {
        Node {
            kind,
            id,
            title: lines
                .iter()
                .map(|l| l.0.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            lines,
            bdf,
            endpoint: None,
            children,
        }
    }

    /// Whether it is drawn as a leaf (no children, not a container kind).
    pub(super) fn is_leaf(&self) -> bool {
        self.children.is_empty() && !self.kind.is_container()
    }
}

fn id_of(prefix: &str, s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{prefix}-{clean}")
}

fn dev_id(d: &Device) -> String {
    id_of("dev", &d.bdf.to_string())
}

/// `+2 empty ports`.
fn empty_ports(n: usize) -> String {
    format!("+{}", plural(n, "empty port", "empty ports"))
}

/// Short link text: `Gen5 x16`; below what both ends support (the paths model's verdict on
/// the device's upstream link) `Gen5 x8 of x16`, `Gen3 of Gen5 x16`; `Gen1 idle x16` for a
/// GPU's idle speed; `link down` for an empty slot. A port with a device under it shows its
/// link plainly: the device below carries the verdict.
fn link_text(p: &Paths, d: &Device) -> Option<String> {
    let l = d.link.as_ref()?;
    if !l.any() {
        return None;
    }
    let i = p.index(&d.bdf)?;
    let health = match p.empty_port_link(i) {
        Some(h) => h,
        None if matches!(d.kind, DeviceKind::RootPort | DeviceKind::SwitchDownstream) => {
            LinkHealth::NoLink
        }
        None => p.edge(i).health,
    };
    if l.current_width == Some(0) {
        return Some("link down".into());
    }
    let gen_of = |g: Option<f64>| g.map(linkfmt::gen_name).unwrap_or_else(|| "Gen?".into());
    let w = |x: Option<u32>| x.map(|w| format!("x{w}")).unwrap_or_else(|| "x?".into());
    let cur_s = gen_of(l.current_gts.or(l.max_gts));
    let cur_w = w(l.current_width.or(l.max_width));
    Some(match health {
        LinkHealth::Degraded { width, speed } => {
            let s = match speed {
                Some((c, m)) => format!("{} of {}", gen_of(Some(c)), gen_of(Some(m))),
                None => cur_s,
            };
            let wd = match width {
                Some((c, m)) => format!("x{c} of x{m}"),
                None => cur_w,
            };
            format!("{s} {wd}")
        }
        LinkHealth::IdleSpeed { .. } => format!("{cur_s} idle {cur_w}"),
        _ => format!("{cur_s} {cur_w}"),
    })
}

struct Builder<'a> {
    topo: &'a Topology,
    paths: Paths<'a>,
    names: HashMap<Bdf, String>,
}

impl Builder<'_> {
    /// Non-VF children.
    fn kids(&self, d: &Device) -> Vec<&Device> {
        self.topo
            .children(&d.bdf)
            .into_iter()
            .filter(|c| !c.is_vf())
            .collect()
    }

    fn leaf(&self, d: &Device) -> Node {
        let kind = match d.kind {
            DeviceKind::Gpu => BoxKind::Gpu,
            DeviceKind::Accelerator => BoxKind::Accelerator,
            DeviceKind::Nic => BoxKind::Nic,
            DeviceKind::Nvme => BoxKind::Nvme,
            _ => BoxKind::Other,
        };
        let endpoint = self.names.get(&d.bdf).cloned();
        let head = match &endpoint {
            Some(n) => n.clone(),
            None => match d.kind {
                DeviceKind::Gpu => "GPU".into(),
                DeviceKind::Accelerator => "ACC".into(),
                DeviceKind::Nic => "NIC".into(),
                DeviceKind::Nvme => "NVMe".into(),
                DeviceKind::RootPort => "RootPort".into(),
                DeviceKind::SwitchDownstream => "Port".into(),
                DeviceKind::SwitchUpstream => "Switch".into(),
                DeviceKind::Bridge => "Bridge".into(),
                DeviceKind::Other => "PCI".into(),
            },
        };
        let mut lines = vec![
            (format!("{head} {}", d.bdf), true),
            (
                d.device_name.clone().unwrap_or_else(|| d.display_name()),
                false,
            ),
        ];
        let os: Vec<&str> = d
            .os_devices
            .iter()
            .filter(|o| !matches!(o.kind, OsDeviceKind::NvidiaGpu | OsDeviceKind::AmdGpu))
            .map(|o| o.name.as_str())
            .collect();
        if !os.is_empty() {
            lines.push((os.join(" "), false));
        }
        let mut last = Vec::new();
        if let Some(l) = link_text(&self.paths, d) {
            last.push(l);
        }
        if let Some(s) = &d.slot {
            last.push(format!("slot {s}"));
        }
        if d.vf_count > 0 {
            last.push(format!("+{} VFs", d.vf_count));
        }
        if !last.is_empty() {
            lines.push((last.join("  "), false));
        }
        let full = d.display_name();
        let mut title = lines
            .iter()
            .enumerate()
            .map(|(i, (t, _))| if i == 1 { full.as_str() } else { t.as_str() })
            .collect::<Vec<_>>()
            .join("\n");
        title.push_str(&format!(
            "\ndriver {}, NUMA node {}\n/{}",
            d.driver.as_deref().unwrap_or("none"),
            d.numa_node
                .map(|n| n.to_string())
                .unwrap_or_else(|| "unknown".into()),
            d.sysfs_path.trim_start_matches('/')
        ));
        Node {
            kind,
            id: dev_id(d),
            lines,
            title,
            bdf: Some(d.bdf),
            endpoint,
            children: Vec::new(),
        }
    }

    /// Children of a container, with empty ports folded into a count.
    fn place_children(&self, kids: Vec<&Device>, notes: &mut Vec<String>) -> Vec<Node> {
        let mut out = Vec::new();
        let mut empty = 0;
        for k in kids {
            if matches!(
                k.kind,
                DeviceKind::RootPort | DeviceKind::SwitchDownstream | DeviceKind::Bridge
            ) && self.kids(k).is_empty()
            {
                empty += 1;
                continue;
            }
            out.push(self.device(k));
        }
        if empty > 0 {
            notes.push(empty_ports(empty));
        }
        out
    }

    fn device(&self, d: &Device) -> Node {
        match d.kind {
            DeviceKind::SwitchUpstream => self.switch(d),
            DeviceKind::RootPort | DeviceKind::SwitchDownstream | DeviceKind::Bridge => {
                let below = self.kids(d);
                if below.is_empty() {
                    return self.leaf(d);
                }
                self.port(d, below)
            }
            _ => self.leaf(d),
        }
    }

    /// A root port, switch downstream port or bridge with the devices `below` it.
    fn port(&self, d: &Device, below: Vec<&Device>) -> Node {
        let mut notes = Vec::new();
        let children = self.place_children(below, &mut notes);
        let (kind, word) = match d.kind {
            DeviceKind::RootPort => (BoxKind::RootPort, "RootPort"),
            DeviceKind::SwitchDownstream => (BoxKind::Port, "Port"),
            _ => (BoxKind::Bridge, "Bridge"),
        };
        let mut head = format!("{word} {}", d.bdf);
        if let Some(l) = link_text(&self.paths, d) {
            head.push_str(&format!(" {l}"));
        }
        if let Some(s) = &d.slot {
            head.push_str(&format!(" slot {s}"));
        }
        let mut lines = vec![(head, false)];
        if !notes.is_empty() {
            lines.push((notes.join(", "), false));
        }
        Node::container(kind, dev_id(d), lines, Some(d.bdf), children)
    }

    /// A switch (its upstream port `d`) with its downstream ports nested.
    fn switch(&self, d: &Device) -> Node {
        let sw = self.topo.switch_of_port(&d.bdf);
        let swid = sw.map(|s| s.id.clone()).unwrap_or_else(|| "switch".into());
        let mut notes = Vec::new();
        let mut children = Vec::new();
        let mut empty = 0;
        let mut others = Vec::new();
        for c in self.kids(d) {
            if c.kind == DeviceKind::SwitchDownstream {
                let below = self.kids(c);
                if below.is_empty() {
                    empty += 1;
                    continue;
                }
                children.push(self.port(c, below));
            } else {
                others.push(c);
            }
        }
        children.extend(self.place_children(others, &mut notes));
        if empty > 0 {
            notes.push(empty_ports(empty));
        }
        let mut head = format!("Switch {swid} {}", d.bdf);
        if let Some(l) = link_text(&self.paths, d) {
            head.push_str(&format!(" {l}"));
        }
        let mut lines = vec![(head, true), (d.display_name(), false)];
        if !notes.is_empty() {
            lines.push((notes.join(", "), false));
        }
        Node::container(BoxKind::Switch, dev_id(d), lines, Some(d.bdf), children)
    }

    /// A host bridge box, or `None` when only folded functions hang under it.
    fn host_bridge(&self, name: &str) -> Option<Node> {
        let mut folded = 0;
        let mut kids = Vec::new();
        for d in self.topo.roots_of(name) {
            if d.is_vf() {
                continue;
            }
            if d.kind == DeviceKind::Other && self.kids(d).is_empty() {
                folded += 1;
                continue;
            }
            kids.push(d);
        }
        let mut notes = Vec::new();
        let children = self.place_children(kids, &mut notes);
        if children.is_empty() {
            return None;
        }
        if folded > 0 {
            notes.push(format!(
                "+{}",
                plural(folded, "uncore function", "uncore functions")
            ));
        }
        let mut lines = vec![(format!("HostBridge {name}"), true)];
        if !notes.is_empty() {
            lines.push((notes.join(", "), false));
        }
        Some(Node::container(
            BoxKind::HostBridge,
            id_of("hb", name),
            lines,
            None,
            children,
        ))
    }
}

/// Depth of the deepest leaf below (a leaf is 0).
pub(super) fn depth(n: &Node) -> usize {
    n.children.iter().map(|c| depth(c) + 1).max().unwrap_or(0)
}

/// The NUMA columns: NUMA nodes with drawn host bridges, then "NUMA unknown" (host bridges with
/// no NUMA node, and devices whose host bridge is not listed by a partial source).
pub(super) fn columns(t: &Topology, endpoints: &[Endpoint]) -> Vec<Node> {
    // Two RDMA devices of one function are two NICs in one box: `NIC1/NIC2`.
    let mut names: HashMap<Bdf, String> = HashMap::new();
    for e in endpoints {
        names
            .entry(e.bdf)
            .and_modify(|n| {
                n.push('/');
                n.push_str(&e.name)
            })
            .or_insert_with(|| e.name.clone());
    }
    let b = Builder {
        topo: t,
        paths: Paths::new(t),
        names,
    };
    let mut groups: BTreeMap<Option<u32>, Vec<Node>> = BTreeMap::new();
    let mut empty_hbs: BTreeMap<Option<u32>, usize> = BTreeMap::new();
    for hb in &t.host_bridges {
        match b.host_bridge(&hb.name) {
            Some(n) => groups.entry(hb.numa_node).or_default().push(n),
            None => *empty_hbs.entry(hb.numa_node).or_default() += 1,
        }
    }
    // Devices whose host bridge is not listed (partial sources): their own column.
    let listed: HashSet<&str> = t.host_bridges.iter().map(|h| h.name.as_str()).collect();
    let mut orphan_hbs: Vec<&str> = t
        .devices
        .iter()
        .filter(|d| d.parent.is_none() && !listed.contains(d.host_bridge.as_str()))
        .map(|d| d.host_bridge.as_str())
        .collect();
    orphan_hbs.sort();
    orphan_hbs.dedup();
    for name in orphan_hbs {
        if let Some(n) = b.host_bridge(name) {
            groups.entry(None).or_default().push(n);
        }
    }
    let socket_of = |cpus: &str| -> Option<u32> {
        let first = *cpulist::parse_list(cpus.as_bytes()).ok()?.first()?;
        t.machine
            .cpu_cores
            .iter()
            .find(|(c, _, _)| *c == first)
            .map(|(_, _, p)| *p)
    };
    // Numa-nodes ordered None last.
    let mut order: Vec<Option<u32>> = groups.keys().copied().collect();
    order.sort_by_key(|k| (k.is_none(), *k));
    let mut columns: Vec<Node> = Vec::new();
    for key in &order {
        let hbs = groups.remove(key).unwrap_or_default();
        let mut lines = Vec::new();
        match key {
            Some(id) => {
                let cpus = t
                    .numa_nodes
                    .iter()
                    .find(|n| n.id == *id)
                    .map(|n| n.cpus.clone())
                    .unwrap_or_default();
                let sock = socket_of(&cpus)
                    .map(|s| format!(" · socket {s}"))
                    .unwrap_or_default();
                lines.push((format!("NUMA node {id}{sock}"), true));
                lines.push((
                    format!(
                        "cpus {}",
                        if cpus.is_empty() {
                            "none"
                        } else {
                            cpus.as_str()
                        }
                    ),
                    false,
                ));
            }
            None => {
                lines.push(("NUMA node unknown".to_string(), true));
                lines.push(("host bridges report no NUMA node".to_string(), false));
            }
        }
        if let Some(n) = empty_hbs.get(key) {
            lines.push((
                format!(
                    "+{} with uncore functions only",
                    plural(*n, "host bridge", "host bridges")
                ),
                false,
            ));
        }
        let id = match key {
            Some(id) => format!("numa-{id}"),
            None => "numa-unknown".into(),
        };
        columns.push(Node::container(BoxKind::Numa, id, lines, None, hbs));
    }
    columns
}

/// Every drawn box's id by the PCI function it draws.
pub(super) fn ids_by_bdf(columns: &[Node]) -> HashMap<Bdf, String> {
    fn collect(n: &Node, m: &mut HashMap<Bdf, String>) {
        if let Some(b) = n.bdf {
            m.insert(b, n.id.clone());
        }
        for c in &n.children {
            collect(c, m);
        }
    }
    let mut m = HashMap::new();
    for c in columns {
        collect(c, &mut m);
    }
    m
}

/// Sets each endpoint box's [`LaidBox::pair_labels`]: the class of its pair with every
/// GPU/accelerator, as the matrix holds it (`X` for itself; pairs the matrix does not classify,
/// such as accelerator–NVMe, are left out). Labels only, without words.
pub(super) fn fill_pair_labels(boxes: &mut [LaidBox], c: &Classifier) {
    let eps = c.endpoints();
    let computes: Vec<usize> = (0..eps.len())
        .filter(|&k| eps[k].kind.is_compute())
        .collect();
    for b in boxes.iter_mut() {
        let (Some(_), Some(bdf)) = (&b.endpoint, b.bdf) else {
            continue;
        };
        let Some(e) = c.endpoint_index(&bdf) else {
            continue;
        };
        for &g in &computes {
            let l = if eps[g].bdf == bdf {
                Label::X
            } else if pair_wanted(eps[g].kind, eps[e].kind) {
                let (x, y) = if g < e { (g, e) } else { (e, g) };
                match c.label(x, y) {
                    Some((l, _)) => l,
                    None => continue,
                }
            } else {
                continue;
            };
            b.pair_labels.push((eps[g].name.clone(), l));
        }
    }
}
