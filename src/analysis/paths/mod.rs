//! The paths model: everything about the routes between PCI functions, computed once per
//! topology and read by every analysis (NCCL's `paths.cc` is the model: build the graph once,
//! compute the paths once, then let small named rules read them).
//!
//! Built from a [`Topology`] alone (sysfs, snapshot, XML or JSON source). Per device it holds
//! the ancestor chain up to its host bridge, the host bridge and NUMA node, the PCIe switch a
//! port belongs to, the bridge "unit" nvidia-smi and NCCL count, the link above it with its
//! bandwidth, whether its ACS setting redirects peer-to-peer traffic, and its NVLinks. Pair
//! questions (common ancestor, bridge units crossed, hop walk, ACS on the path, bottleneck) are
//! answered from these tables without allocation. Nothing here names, words or ranks a path:
//! the labels are [`crate::analysis::classify`]'s rules over this model.

pub mod hops;
pub mod link;

pub use hops::{Step, bottleneck_gbytes};
pub use link::LinkHealth;

use crate::model::{Bdf, Device, DeviceKind, LinkInfo, Topology, bandwidth};
use std::collections::HashMap;

/// A device index into [`Topology::devices`].
pub type DevIx = u32;

/// Marker for "no unit" / "no device" in the per-device tables.
pub const NONE: u32 = u32::MAX;

/// Ancestor chains stop here (sources already drop deeper devices and cut parent loops:
/// [`crate::model::topology::MAX_CHAIN`]).
pub const MAX_DEPTH: usize = crate::model::topology::MAX_CHAIN;

/// The PCIe link entering a device from the port above it, as a path sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Edge {
    /// The link attributes used (the device's own, else the port above it), `None` when
    /// neither is known or when this is not a physical link.
    pub link: Option<LinkInfo>,
    /// NCCL's model bandwidth of that link in GB/s (current state, else the capability).
    pub gbytes_per_s: Option<f64>,
    /// The capability was used because the current state is unknown.
    pub capability_used: bool,
    /// The hop from a switch downstream port to its upstream port, or from a root port into
    /// its root complex: inside a chip, not a link.
    pub internal: bool,
    /// In a virtual machine (hypervisor evidence): the hypervisor emulates the guest's bridges
    /// and the link fields it shows (QEMU's root ports report 2.5 GT/s x1; a passed-through
    /// device's link status may be emulated too), so the figures are not the physical path and
    /// `gbytes_per_s` is `None`; `link` keeps what the guest reads.
    pub emulated: bool,
    /// The link judged by the one rule ([`link::judge`]): the device's own attributes against
    /// those of the port above it. [`LinkHealth::NoLink`] inside a chip and for a virtual
    /// function (whose traffic uses its physical function's link, so `link` is the port's).
    pub health: LinkHealth,
}

/// A port on a path whose ACS control redirects peer-to-peer requests upstream (ReqRedir,
/// CmpltRedir or EgressCtrl in its `config` ACS capability).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcsRedirect {
    /// The port.
    pub port: Bdf,
    /// The enabled controls as `lspci` names them (`ReqRedir+ CmpltRedir+`).
    pub controls: String,
}

/// Where two devices' chains meet: positions in each chain of the lowest common ancestor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meet {
    /// Position of the common ancestor in the first device's chain.
    pub ia: usize,
    /// Position of the common ancestor in the second device's chain.
    pub ib: usize,
}

/// The paths model over one topology (see the module doc).
pub struct Paths<'t> {
    topo: &'t Topology,
    /// Flattened ancestor chains: `chains[chain_at[i]..chain_at[i + 1]]` is device `i`, its
    /// parent, … up to the device under its host bridge.
    chains: Vec<DevIx>,
    chain_at: Vec<usize>,
    /// Per position of `chains`: the lowest known bandwidth of the links above the chain's
    /// devices up to that one ([`Paths::chain_min`]), `None` while none is known.
    chain_min: Vec<Option<f64>>,
    /// Each device's kind (the topology's, held here so a per-pair test reads one byte).
    kind: Vec<DeviceKind>,
    /// Interned host bridge per device (index into `hb_names`).
    hb: Vec<u32>,
    hb_names: Vec<String>,
    /// NUMA node per device: its own, else its nearest bridge's, else its host bridge's.
    numa: Vec<Option<u32>>,
    /// The NUMA node NCCL keys this device's CPU node by: the topmost device's, else its own,
    /// else its host bridge's.
    nccl_numa: Vec<Option<u32>>,
    /// Switch index (into `Topology::switches`) of a switch port.
    port_switch: Vec<Option<u32>>,
    /// Bridge unit per device, as nvidia-smi counts them: the switch index for switch ports,
    /// `switches.len() + i` for a plain bridge or root port, [`NONE`] for endpoints.
    unit: Vec<u32>,
    /// NCCL's PCI switch node per device after Broadcom flattening ([`NONE`]: not a node;
    /// root ports are skipped by its two-level sysfs climb).
    nccl_unit: Vec<u32>,
    /// NCCL's PCI node per device before flattening.
    nccl_unit_raw: Vec<u32>,
    /// Switches fused into their parent by NCCL's Broadcom flattening, per switch index.
    bcm_fused: Vec<bool>,
    /// The link above each device.
    edges: Vec<Edge>,
    /// Ports whose ACS redirects peer-to-peer traffic.
    acs: HashMap<DevIx, String>,
    /// Direct NVLinks: normalised `(lower, higher)` device indices → link count.
    nv_direct: HashMap<(DevIx, DevIx), u32>,
    /// Direct NVLink peers per GPU, by device index, ascending.
    nv_peers: HashMap<DevIx, Vec<(DevIx, u32)>>,
    /// NVLinks into the NVSwitch fabric per device (0: none).
    nv_fabric: Vec<u32>,
    /// Whether a device has a direct NVLink peer (any count) or links into the fabric.
    nv_any: Vec<bool>,
    /// NVLink version per GPU, when known.
    nv_version: HashMap<DevIx, u32>,
    /// Direct xGMI pairs: normalised device indices → link count (0: count not reported).
    xgmi_direct: HashMap<(DevIx, DevIx), u32>,
    /// xGMI hive of each device (the connected set of its xGMI links), `NONE` outside any.
    xgmi_hive: Vec<u32>,
    /// NUMA nodes with CPUs.
    cpu_nodes: usize,
    /// The device whose PCIe path a device's traffic really takes: a NIC function's Data
    /// Direct DMA function, else the device itself.
    data_path: Vec<DevIx>,
}

/// The xGMI tables: direct pairs with their counts (a pair a source did not call indirect), and
/// each device's hive (connected component over every reported xGMI pair, union-find).
fn xgmi_tables(t: &Topology) -> (HashMap<(DevIx, DevIx), u32>, Vec<u32>) {
    let n = t.devices.len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            parent[x as usize] = parent[parent[x as usize] as usize];
            x = parent[x as usize];
        }
        x
    }
    let mut direct = HashMap::new();
    let mut member = vec![false; n];
    for l in &t.xgmi {
        let (Some(a), Some(b)) = (t.device_index(&l.a), t.device_index(&l.b)) else {
            continue;
        };
        if a == b {
            continue;
        }
        member[a] = true;
        member[b] = true;
        let (ra, rb) = (find(&mut parent, a as u32), find(&mut parent, b as u32));
        parent[ra as usize] = rb;
        if l.direct != Some(false) {
            direct.insert(norm(a as DevIx, b as DevIx), l.count.unwrap_or(0));
        }
    }
    let hive = (0..n)
        .map(|i| {
            if member[i] {
                find(&mut parent, i as u32)
            } else {
                NONE
            }
        })
        .collect();
    (direct, hive)
}

fn norm(a: DevIx, b: DevIx) -> (DevIx, DevIx) {
    if a <= b { (a, b) } else { (b, a) }
}

/// The lower of a running lowest bandwidth and the next link's, as a walk keeps it: the first
/// lowest value met stays (the rule of a walk over the hops, [`hops::walk`]), an unknown link changes nothing.
pub fn lower(low: Option<f64>, next: Option<f64>) -> Option<f64> {
    match (low, next) {
        (Some(m), Some(g)) if g < m => Some(g),
        (None, g) => g,
        (m, _) => m,
    }
}

/// Broadcom PEX switch signature NCCL flattens (`ncclTopoFlattenBcmSwitches`): Gen4 `1000:c010`
/// with subsystem `1000:axxx`, Gen5 `1000:c030` with subsystem `1000:1xxx` (base mode).
fn bcm_signature(d: &Device) -> Option<(u16, u16, u16, u16)> {
    let sig = (
        d.vendor_id?,
        d.device_id?,
        d.subsystem_vendor_id?,
        d.subsystem_device_id?,
    );
    let gen4 = sig.0 == 0x1000 && sig.1 == 0xc010 && sig.2 == 0x1000 && sig.3 & 0xf000 == 0xa000;
    let gen5 = sig.0 == 0x1000 && sig.1 == 0xc030 && sig.2 == 0x1000 && sig.3 & 0xf000 == 0x1000;
    (gen4 || gen5).then_some(sig)
}

/// Ancestor chains, bounded and loop-safe: the flattened chains and where each device's starts.
fn chains(t: &Topology) -> (Vec<DevIx>, Vec<usize>) {
    let n = t.devices.len();
    let mut chains = Vec::with_capacity(n * 4);
    let mut chain_at = Vec::with_capacity(n + 1);
    for d in &t.devices {
        let start = chains.len();
        chain_at.push(start);
        let Some(i) = t.device_index(&d.bdf) else {
            continue;
        };
        chains.push(i as DevIx);
        let mut cur = d.parent;
        while let Some(p) = cur {
            let Some(pi) = t.device_index(&p) else { break };
            let pi = pi as DevIx;
            if chains[start..].contains(&pi) || chains.len() - start >= MAX_DEPTH {
                break;
            }
            chains.push(pi);
            cur = t.devices[pi as usize].parent;
        }
    }
    chain_at.push(chains.len());
    (chains, chain_at)
}

/// Interned host bridge per device, and the names (the topology's, then any only a device
/// names).
fn host_bridges(t: &Topology) -> (Vec<u32>, Vec<String>) {
    let mut hb_names: Vec<String> = t.host_bridges.iter().map(|h| h.name.clone()).collect();
    let mut hb_index: HashMap<String, u32> = HashMap::new();
    for (i, h) in hb_names.iter().enumerate() {
        hb_index.entry(h.clone()).or_insert(i as u32);
    }
    let mut hb = Vec::with_capacity(t.devices.len());
    for d in &t.devices {
        let ix = match hb_index.get(d.host_bridge.as_str()) {
            Some(&ix) => ix,
            None => {
                let ix = hb_names.len() as u32;
                hb_names.push(d.host_bridge.clone());
                hb_index.insert(d.host_bridge.clone(), ix);
                ix
            }
        };
        hb.push(ix);
    }
    (hb, hb_names)
}

/// The switch of each switch port, and each device's bridge unit as nvidia-smi counts them.
fn switch_units(t: &Topology) -> (Vec<Option<u32>>, Vec<u32>) {
    let (n, nsw) = (t.devices.len(), t.switches.len());
    let mut port_switch: Vec<Option<u32>> = vec![None; n];
    for (si, s) in t.switches.iter().enumerate() {
        for b in std::iter::once(&s.upstream).chain(s.downstream.iter()) {
            if let Some(i) = t.device_index(b) {
                port_switch[i] = Some(si as u32);
            }
        }
    }
    let unit: Vec<u32> = t
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| match port_switch[i] {
            Some(s) => s,
            None if d.kind.is_bridge() => (nsw + i) as u32,
            None => NONE,
        })
        .collect();
    (port_switch, unit)
}

/// NCCL's PCI switch node per device after Broadcom flattening and before it, and which
/// switches were fused. Flattening runs top-down: a child switch with the parent's exact
/// signature is fused into the parent (one level only: the parent is marked afterwards).
fn nccl_units(t: &Topology, port_switch: &[Option<u32>]) -> (Vec<u32>, Vec<u32>, Vec<bool>) {
    let (n, nsw) = (t.devices.len(), t.switches.len());
    let sw_index: HashMap<&str, usize> = t
        .switches
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let parent_of = |s: usize| {
        t.switches[s]
            .parent_switch
            .as_deref()
            .and_then(|p| sw_index.get(p))
            .copied()
    };
    let depth = |mut s: usize| {
        let mut d = 0;
        while let Some(p) = parent_of(s) {
            d += 1;
            if d > MAX_DEPTH {
                break;
            }
            s = p;
        }
        d
    };
    let mut sw_unit: Vec<u32> = (0..nsw as u32).collect();
    let mut bcm_fused = vec![false; nsw];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nsw];
    for c in 0..nsw {
        if let Some(p) = parent_of(c) {
            children[p].push(c);
        }
    }
    let mut order: Vec<usize> = (0..nsw).collect();
    order.sort_by_key(|&s| (depth(s), s));
    let sig_of = |s: usize| t.device(&t.switches[s].upstream).and_then(bcm_signature);
    for &s in &order {
        if bcm_fused[s] {
            continue;
        }
        let Some(sig) = sig_of(s) else { continue };
        for &c in &children[s] {
            if !bcm_fused[c] && sig_of(c) == Some(sig) {
                bcm_fused[c] = true;
                sw_unit[c] = sw_unit[s];
            }
        }
    }
    let pci_node = |i: usize, s: Option<u32>, units: &[u32]| match s {
        Some(s) => units[s as usize],
        None if t.devices[i].kind == DeviceKind::Bridge => (nsw + i) as u32,
        None => NONE,
    };
    let ident: Vec<u32> = (0..nsw as u32).collect();
    let nccl_unit = (0..n)
        .map(|i| pci_node(i, port_switch[i], &sw_unit))
        .collect();
    let nccl_unit_raw = (0..n)
        .map(|i| pci_node(i, port_switch[i], &ident))
        .collect();
    (nccl_unit, nccl_unit_raw, bcm_fused)
}

/// The NVLink tables of [`Paths`]: direct links, fabric links, versions, peers.
struct NvTables {
    direct: HashMap<(DevIx, DevIx), u32>,
    fabric: Vec<u32>,
    version: HashMap<DevIx, u32>,
    peers: HashMap<DevIx, Vec<(DevIx, u32)>>,
    any: Vec<bool>,
}

impl NvTables {
    /// Reads the topology's NVLinks.
    fn new(t: &Topology) -> Self {
        let n = t.devices.len();
        let mut direct: HashMap<(DevIx, DevIx), u32> = HashMap::new();
        let mut fabric: Vec<u32> = vec![0; n];
        let mut version: HashMap<DevIx, u32> = HashMap::new();
        for l in &t.nvlinks {
            let Some(a) = t.device_index(&l.a) else {
                continue;
            };
            let a = a as DevIx;
            match l.b {
                Some(b) => {
                    let Some(b) = t.device_index(&b) else {
                        continue;
                    };
                    *direct.entry(norm(a, b as DevIx)).or_insert(0) += l.count;
                }
                None => fabric[a as usize] += l.count,
            }
        }
        // The version of a GPU's links: the first link (in the source's order) naming it.
        for l in &t.nvlinks {
            let Some(v) = l.version else { continue };
            for b in std::iter::once(Some(l.a))
                .chain(std::iter::once(l.b))
                .flatten()
            {
                if let Some(i) = t.device_index(&b) {
                    version.entry(i as DevIx).or_insert(v);
                }
            }
        }
        let mut peers: HashMap<DevIx, Vec<(DevIx, u32)>> = HashMap::new();
        for (&(x, y), &c) in &direct {
            peers.entry(x).or_default().push((y, c));
            if x != y {
                peers.entry(y).or_default().push((x, c));
            }
        }
        for v in peers.values_mut() {
            v.sort_unstable();
        }
        let any: Vec<bool> = (0..n)
            .map(|i| peers.contains_key(&(i as DevIx)) || fabric[i] > 0)
            .collect();
        NvTables {
            direct,
            fabric,
            version,
            peers,
            any,
        }
    }
}

/// Ports whose ACS redirects peer-to-peer traffic, with the controls enabled.
fn acs_redirects(t: &Topology) -> HashMap<DevIx, String> {
    t.devices
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let acs = d.config.as_ref().and_then(|c| c.acs)?;
            acs.redirects_p2p()
                .then(|| (i as DevIx, acs.enabled_names().join(" ")))
        })
        .collect()
}

impl<'t> Paths<'t> {
    /// Builds the model in phases: chains, host bridges, switch units, Broadcom flattening,
    /// NVLink and xGMI tables, ACS; then per device its NUMA nodes, the link above it, the
    /// lowest bandwidth up each chain and its data path.
    pub fn new(t: &'t Topology) -> Self {
        let n = t.devices.len();
        let (chains, chain_at) = chains(t);
        let (hb, hb_names) = host_bridges(t);
        let (port_switch, unit) = switch_units(t);
        let (nccl_unit, nccl_unit_raw, bcm_fused) = nccl_units(t, &port_switch);
        let nv = NvTables::new(t);
        let (xgmi_direct, xgmi_hive) = xgmi_tables(t);
        let mut p = Paths {
            topo: t,
            chains,
            chain_at,
            chain_min: Vec::new(),
            kind: t.devices.iter().map(|d| d.kind).collect(),
            hb,
            hb_names,
            numa: Vec::new(),
            nccl_numa: Vec::new(),
            port_switch,
            unit,
            nccl_unit,
            nccl_unit_raw,
            bcm_fused,
            edges: Vec::new(),
            acs: acs_redirects(t),
            nv_direct: nv.direct,
            nv_peers: nv.peers,
            nv_fabric: nv.fabric,
            nv_any: nv.any,
            nv_version: nv.version,
            xgmi_direct,
            xgmi_hive,
            cpu_nodes: t.numa_nodes.iter().filter(|n| !n.cpus.is_empty()).count(),
            data_path: Vec::new(),
        };
        p.numa = (0..n as DevIx).map(|i| p.compute_numa(i)).collect();
        p.nccl_numa = (0..n as DevIx).map(|i| p.compute_nccl_numa(i)).collect();
        p.edges = (0..n as DevIx).map(|i| p.compute_edge(i)).collect();
        p.chain_min = p.compute_chain_min();
        p.data_path = (0..n as DevIx)
            .map(|i| {
                p.device(i)
                    .data_direct
                    .as_ref()
                    .and_then(|dd| p.index(&dd.dma))
                    .unwrap_or(i)
            })
            .collect();
        p
    }

    /// Per position of the chains: the lowest known bandwidth of the links up to it.
    fn compute_chain_min(&self) -> Vec<Option<f64>> {
        let mut v = Vec::with_capacity(self.chains.len());
        for i in 0..self.chain_at.len() - 1 {
            let mut low: Option<f64> = None;
            for k in self.chain_at[i]..self.chain_at[i + 1] {
                low = lower(low, self.edges[self.chains[k] as usize].gbytes_per_s);
                v.push(low);
            }
        }
        v
    }

    /// The device whose PCIe path device `i`'s traffic really takes: for a NIC function with a
    /// ConnectX-8 Data Direct DMA function, that DMA function (NCCL's `<dev>_dma` NIC: GPU
    /// memory is read and written through it); for every other device, itself.
    pub fn data_path(&self, i: DevIx) -> DevIx {
        self.data_path.get(i as usize).copied().unwrap_or(i)
    }

    /// Whether device `i` reaches GPU memory through a Data Direct DMA function: a NIC function
    /// paired with one, or (NCCL XML) a DMA function that carries the NIC itself.
    pub fn is_data_direct(&self, i: DevIx) -> bool {
        self.device(i).data_direct.is_some()
    }

    /// The NIC functions whose data path is the DMA function `dma`, ascending.
    pub fn dma_users(&self, dma: DevIx) -> impl Iterator<Item = DevIx> + '_ {
        (0..self.data_path.len() as DevIx).filter(move |&i| i != dma && self.data_path(i) == dma)
    }

    /// A GPU's NVLink-C2C link to its CPU, as the source gave it (NVML, NCCL XML `<c2c>`, or
    /// inferred on a Grace host).
    pub fn c2c(&self, i: DevIx) -> Option<&'t crate::model::C2cLink> {
        self.device(i).c2c.as_ref()
    }

    /// Whether any GPU of the topology reaches its CPU over C2C.
    pub fn any_c2c(&self) -> bool {
        self.topo.devices.iter().any(|d| d.c2c.is_some())
    }

    /// The topology this model is over.
    pub fn topo(&self) -> &'t Topology {
        self.topo
    }

    /// Device index of an address.
    pub fn index(&self, bdf: &Bdf) -> Option<DevIx> {
        self.topo.device_index(bdf).map(|i| i as DevIx)
    }

    /// The device at an index.
    pub fn device(&self, i: DevIx) -> &'t Device {
        &self.topo.devices[i as usize]
    }

    /// Device `i`, its parent, … up to the device directly under its host bridge (bounded by
    /// [`MAX_DEPTH`]; a parent loop or a parent missing from the topology ends it).
    pub fn chain(&self, i: DevIx) -> &[DevIx] {
        let i = i as usize;
        &self.chains[self.chain_at[i]..self.chain_at[i + 1]]
    }

    /// [`Paths::chain`] as addresses (`[dev, parent, …, top]`).
    pub fn ancestors(&self, bdf: &Bdf) -> Vec<Bdf> {
        match self.index(bdf) {
            Some(i) => self.chain(i).iter().map(|&d| self.device(d).bdf).collect(),
            None => Vec::new(),
        }
    }

    /// Every device on the way from these devices up to their host bridges (the devices
    /// themselves included), by address.
    pub fn upward_closure<'a>(
        &self,
        devices: impl IntoIterator<Item = &'a Bdf>,
    ) -> std::collections::BTreeSet<Bdf> {
        let mut out = std::collections::BTreeSet::new();
        for b in devices {
            if let Some(i) = self.index(b) {
                out.extend(self.chain(i).iter().map(|&d| self.device(d).bdf));
            }
        }
        out
    }

    /// The topmost device above `i` (directly under its host bridge); `i` itself at the top.
    pub fn top(&self, i: DevIx) -> DevIx {
        *self.chain(i).last().unwrap_or(&i)
    }

    /// Interned host bridge of a device (index into [`Paths::host_bridge_name`]).
    pub fn host_bridge(&self, i: DevIx) -> u32 {
        self.hb[i as usize]
    }

    /// Name of an interned host bridge (`pci0000:17`).
    pub fn host_bridge_name(&self, hb: u32) -> &str {
        self.hb_names
            .get(hb as usize)
            .map(String::as_str)
            .unwrap_or("host-bridge?")
    }

    /// NUMA node of a device: its own `numa_node`, else its nearest bridge's, else its host
    /// bridge's.
    pub fn numa(&self, i: DevIx) -> Option<u32> {
        self.numa[i as usize]
    }

    /// The NUMA node NCCL attaches a device's CPU node to: the topmost device's `numa_node`,
    /// else its own, else its host bridge's (`-1` forms its own CPU node in NCCL).
    pub fn nccl_numa(&self, i: DevIx) -> Option<u32> {
        self.nccl_numa[i as usize]
    }

    /// Number of NUMA nodes that have CPUs.
    pub fn cpu_nodes(&self) -> usize {
        self.cpu_nodes
    }

    /// Whether the machine has exactly one NUMA node, and it has CPUs.
    pub fn single_numa(&self) -> bool {
        self.cpu_nodes == 1 && self.topo.numa_nodes.len() == 1
    }

    /// Switch index (into [`Topology::switches`]) of a switch port.
    pub fn switch_of_port(&self, i: DevIx) -> Option<usize> {
        self.port_switch[i as usize].map(|s| s as usize)
    }

    /// Id of the switch a port belongs to (`sw3`).
    pub fn switch_name(&self, i: DevIx) -> Option<&'t str> {
        self.switch_of_port(i)
            .map(|s| self.topo.switches[s].id.as_str())
    }

    /// Switch ids NCCL's Broadcom flattening fuses into their parents.
    pub fn bcm_fused(&self) -> impl Iterator<Item = &'t str> + '_ {
        self.topo
            .switches
            .iter()
            .zip(&self.bcm_fused)
            .filter(|(_, f)| **f)
            .map(|(s, _)| s.id.as_str())
    }

    /// The link entering device `i` from the port above it.
    pub fn edge(&self, i: DevIx) -> &Edge {
        &self.edges[i as usize]
    }

    /// The lowest known bandwidth (GB/s) of the links above the first `k` devices of
    /// [`Paths::chain`]`(i)` (`k` = the chain's length: every link up to the host bridge), as a
    /// walk up the chain meets them ([`lower`]); `None` for `k` = 0 or when none is known.
    pub fn chain_min(&self, i: DevIx, k: usize) -> Option<f64> {
        let at = self.chain_at[i as usize];
        let k = k.min(self.chain_at[i as usize + 1] - at);
        k.checked_sub(1).and_then(|last| self.chain_min[at + last])
    }

    /// A device's kind.
    pub fn kind(&self, i: DevIx) -> DeviceKind {
        self.kind[i as usize]
    }

    /// The link below a root or switch downstream port with no device under it, judged by
    /// [`link::judge_empty_port`] (an empty slot reads width 0: [`LinkHealth::Down`]); `None`
    /// when `i` is not a port or has a device under it (that device's [`Paths::edge`] judges
    /// the link then).
    pub fn empty_port_link(&self, i: DevIx) -> Option<LinkHealth> {
        let d = self.device(i);
        if !matches!(d.kind, DeviceKind::SwitchDownstream | DeviceKind::RootPort)
            || !self.topo.children(&d.bdf).is_empty()
        {
            return None;
        }
        Some(link::judge_empty_port(d.link.as_ref()))
    }

    /// ACS controls that redirect peer-to-peer traffic on port `i`, when they do.
    pub fn acs_redirect(&self, i: DevIx) -> Option<&str> {
        self.acs.get(&i).map(String::as_str)
    }

    /// Where the chains of `a` and `b` meet below their host bridge; `None` when they share
    /// no device.
    pub fn meet(&self, a: DevIx, b: DevIx) -> Option<Meet> {
        let (ca, cb) = (self.chain(a), self.chain(b));
        let mut k = 0;
        while k < ca.len() && k < cb.len() && ca[ca.len() - 1 - k] == cb[cb.len() - 1 - k] {
            k += 1;
        }
        (k > 0).then(|| Meet {
            ia: ca.len() - k,
            ib: cb.len() - k,
        })
    }

    /// The lowest common ancestor device of `a` and `b` (`a` itself when it is above `b`).
    pub fn lca(&self, a: DevIx, b: DevIx) -> Option<DevIx> {
        self.meet(a, b).map(|m| self.chain(a)[m.ia])
    }

    fn count_units(&self, units: &[u32], a: DevIx, b: DevIx, m: Meet) -> u32 {
        let (ca, cb) = (self.chain(a), self.chain(b));
        let lu = units[ca[m.ia] as usize];
        let mut n = 0;
        let mut last = NONE;
        for &d in ca.iter().take(m.ia + 1).skip(1) {
            let u = units[d as usize];
            if u != NONE && u != last {
                n += 1;
                last = u;
            }
        }
        if m.ia == 0 && lu != NONE {
            n += 1;
        }
        let mut last = NONE;
        for &d in cb.iter().take(m.ib).skip(1) {
            let u = units[d as usize];
            if u != NONE && u != lu && u != last {
                n += 1;
                last = u;
            }
        }
        n
    }

    /// Distinct bridge units nvidia-smi counts on the path meeting at `m`: a switch (upstream
    /// plus downstream ports) counts once, so do a plain bridge and a root port.
    pub fn bridge_units(&self, a: DevIx, b: DevIx, m: Meet) -> u32 {
        self.count_units(&self.unit, a, b, m)
    }

    /// NCCL's PCI nodes between device `i` and its CPU (after Broadcom flattening), as NCCL's
    /// own sysfs walk makes them (`ncclTopoGetXmlFromSys` in NVIDIA/nccl and ROCm/rccl
    /// `src/graph/xml.cc`): from a device's sysfs path it climbs two levels at a time, so the
    /// parent of a device is the function two levels up, and the CPU when either of those two
    /// levels is the host bridge. Below a root port, a switch's upstream port is its one node
    /// (the downstream port and the root port are dropped), and so is the `1002:14a0` upstream
    /// port of an MI50/MI100/MI200's own bridge pair. Each node is counted once; a switch fused
    /// by Broadcom flattening counts with its parent. An NCCL XML input records the walk's
    /// result (each `pci` element a node), so there each switch or bridge on the chain counts.
    /// RCCL's Rome rule reads this count: GPU→CPU path count = nodes + 1.
    pub fn nccl_pci_nodes_above(&self, i: DevIx) -> u32 {
        let chain = self.chain(i);
        let walked = self.topo.source.kind != "nccl-xml";
        let nsw = self.topo.switches.len() as u32;
        let mut n = 0;
        let mut last = NONE;
        let (first, step) = if walked { (2, 2) } else { (1, 1) };
        for &d in chain.iter().skip(first).step_by(step) {
            let u = match (walked, self.port_switch[d as usize]) {
                (_, Some(_)) => self.nccl_unit[d as usize],
                (true, None) => nsw + d,
                (false, None) => self.nccl_unit[d as usize],
            };
            if u != NONE && u != last {
                n += 1;
                last = u;
            }
        }
        n
    }

    /// NCCL's PCI switch nodes on the path meeting at `m`: after Broadcom flattening, and as
    /// found before it.
    pub fn nccl_switch_nodes(&self, a: DevIx, b: DevIx, m: Meet) -> (u32, u32) {
        (
            self.count_units(&self.nccl_unit, a, b, m),
            self.count_units(&self.nccl_unit_raw, a, b, m),
        )
    }

    /// Ports below the common ancestor of `a` and `b` (and that ancestor) whose ACS
    /// redirects peer-to-peer traffic upstream: the path P2P traffic really takes goes up to
    /// the root complex. Empty when the two share no bridge or config space was not readable.
    pub fn acs_on_path(&self, a: DevIx, b: DevIx) -> Vec<AcsRedirect> {
        let Some(m) = self.meet(a, b) else {
            return Vec::new();
        };
        let (ca, cb) = (self.chain(a), self.chain(b));
        ca.iter()
            .take(m.ia + 1)
            .skip(1)
            .chain(cb.iter().take(m.ib).skip(1))
            .filter_map(|&d| {
                self.acs_redirect(d).map(|c| AcsRedirect {
                    port: self.device(d).bdf,
                    controls: c.to_string(),
                })
            })
            .collect()
    }

    /// The devices strictly between `a` and `b` on their PCIe path, each side nearest first,
    /// and their common ancestor: the lowest device above both endpoints (`None` when they
    /// meet only at a host bridge or above).
    pub fn between(&self, a: DevIx, b: DevIx) -> Between<'_> {
        let (ca, cb) = (self.chain(a), self.chain(b));
        let (ua, ub) = (ca.get(1..).unwrap_or(&[]), cb.get(1..).unwrap_or(&[]));
        match ua.iter().position(|x| ub.contains(x)) {
            Some(ia) => {
                let ib = ub.iter().position(|x| *x == ua[ia]).unwrap_or(ub.len());
                Between {
                    a_up: &ua[..ia],
                    b_up: &ub[..ib],
                    lca: Some(ua[ia]),
                }
            }
            None => Between {
                a_up: ua,
                b_up: ub,
                lca: None,
            },
        }
    }

    /// NVLinks between two GPUs: direct links, else both on the NVSwitch fabric (the smaller
    /// of their fabric link counts, flagged `true`).
    pub fn nvlink(&self, a: DevIx, b: DevIx) -> Option<(u32, bool)> {
        if !self.nv_any[a as usize] || !self.nv_any[b as usize] {
            return None;
        }
        let gpu = |i: DevIx| self.kind(i) == DeviceKind::Gpu;
        if !gpu(a) || !gpu(b) {
            return None;
        }
        if let Some(&n) = self.nv_direct.get(&norm(a, b))
            && n > 0
        {
            return Some((n, false));
        }
        let (fa, fb) = (self.nv_fabric[a as usize], self.nv_fabric[b as usize]);
        (fa > 0 && fb > 0).then(|| (fa.min(fb), true))
    }

    /// xGMI between two GPUs: `Some((count, direct))` when both are in one xGMI hive (joined
    /// by xGMI links, directly or through other GPUs of the hive); `count` is the direct links
    /// a source reported (0: none reported or not direct), `direct` whether a direct link was
    /// reported.
    pub fn xgmi(&self, a: DevIx, b: DevIx) -> Option<(u32, bool)> {
        let hive = |i: DevIx| self.xgmi_hive.get(i as usize).copied().unwrap_or(NONE);
        if a == b || hive(a) == NONE || hive(a) != hive(b) {
            return None;
        }
        match self.xgmi_direct.get(&norm(a, b)) {
            Some(&n) => Some((n, true)),
            None => Some((0, false)),
        }
    }

    /// Whether any xGMI link is in the topology.
    pub fn any_xgmi(&self) -> bool {
        !self.xgmi_direct.is_empty() || self.xgmi_hive.iter().any(|&h| h != NONE)
    }

    /// Direct NVLink peers of a GPU with their link counts, ascending by device index.
    pub fn nvlink_peers(&self, i: DevIx) -> &[(DevIx, u32)] {
        self.nv_peers.get(&i).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether [`Paths::nvlink`] can find anything for this device: it has a direct NVLink
    /// peer (reported with any count) or links into the NVSwitch fabric. A device without
    /// either has no NVLink to any other.
    pub fn may_nvlink(&self, i: DevIx) -> bool {
        self.nv_any.get(i as usize).copied().unwrap_or(false)
    }

    /// All NVLinks of a GPU: its direct links to peers plus its links to the NVSwitch fabric.
    pub fn nvlink_links(&self, i: DevIx) -> u32 {
        self.nvlink_peers(i).iter().map(|&(_, n)| n).sum::<u32>()
            + self.nv_fabric.get(i as usize).copied().unwrap_or(0)
    }

    /// NVLink version of a GPU's links, when a source gave it.
    pub fn nvlink_version(&self, i: DevIx) -> Option<u32> {
        self.nv_version.get(&i).copied()
    }

    fn compute_numa(&self, i: DevIx) -> Option<u32> {
        let d = self.device(i);
        self.chain(i)
            .iter()
            .find_map(|&c| self.device(c).numa_node)
            .or_else(|| {
                self.topo
                    .host_bridge(&d.host_bridge)
                    .and_then(|h| h.numa_node)
            })
    }

    fn compute_nccl_numa(&self, i: DevIx) -> Option<u32> {
        let d = self.device(i);
        self.device(self.top(i))
            .numa_node
            .or(d.numa_node)
            .or_else(|| {
                self.topo
                    .host_bridge(&d.host_bridge)
                    .and_then(|h| h.numa_node)
            })
    }

    fn compute_edge(&self, i: DevIx) -> Edge {
        let t = self.topo;
        let c = self.device(i);
        let internal = matches!(c.kind, DeviceKind::SwitchDownstream | DeviceKind::RootPort);
        let mut none = Edge {
            link: None,
            gbytes_per_s: None,
            capability_used: false,
            internal,
            emulated: false,
            health: LinkHealth::NoLink,
        };
        if internal {
            return none;
        }
        let parent_link = c
            .parent
            .and_then(|p| t.device(&p))
            .filter(|p| matches!(p.kind, DeviceKind::SwitchDownstream | DeviceKind::RootPort))
            .and_then(|p| p.link);
        let health = if c.is_vf() {
            LinkHealth::NoLink
        } else {
            link::judge(c.kind, c.link.as_ref(), parent_link.as_ref())
        };
        none.health = health;
        let Some(l) = c
            .link
            .filter(|l| l.any())
            .or(parent_link.filter(|l| l.any()))
        else {
            return none;
        };
        if !t.machine.hypervisor.is_empty() {
            return Edge {
                link: Some(l),
                emulated: true,
                ..none
            };
        }
        let cur = bandwidth::nccl_pcie_link_gbytes(l.current_gts, l.current_width);
        let max = bandwidth::nccl_pcie_link_gbytes(l.max_gts, l.max_width);
        let (gb, cap) = match (cur, max) {
            // A link that is down carries nothing; its capability is no estimate of it.
            _ if health == LinkHealth::Down => (None, false),
            (Some(c), _) => (Some(c), false),
            (None, Some(m)) => (Some(m), true),
            _ => (None, false),
        };
        Edge {
            link: Some(l),
            gbytes_per_s: gb,
            capability_used: cap,
            internal,
            emulated: false,
            health,
        }
    }
}

/// The devices between two endpoints on their PCIe path ([`Paths::between`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Between<'p> {
    /// Ancestors of the first endpoint, nearest first, below the common ancestor.
    pub a_up: &'p [DevIx],
    /// Ancestors of the second endpoint, nearest first, below the common ancestor.
    pub b_up: &'p [DevIx],
    /// The lowest common ancestor device.
    pub lca: Option<DevIx>,
}

impl Between<'_> {
    /// The bridges traversed on both sides, without the endpoints or the common ancestor.
    pub fn bridges(&self) -> impl Iterator<Item = DevIx> + '_ {
        self.a_up.iter().chain(self.b_up.iter()).copied()
    }
}
