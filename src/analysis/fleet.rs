//! `peerpath fleet`: many nodes grouped by a topology fingerprint, each outlier group explained
//! by its [`diff`](super::diff) against the nearest majority group.
//!
//! The fingerprint ([`fingerprint`]) is computed from the [`Topology`] alone, without a
//! classifier or an audit, so that reading a node costs little more than decompressing and
//! scanning it. It is a canonical hash of the PCI tree (FNV-1a 64): each device hashes its
//! features and the sorted hashes of its children, each host bridge its NUMA node and the sorted
//! hashes of its devices, the node the sorted host bridge hashes and its facts. No PCI address
//! and no kernel name (`mlx5_N`, `ibN`) enters it, so renumbered buses and renamed devices keep
//! it; everything the audit reads does (kinds, IDs, links, NUMA nodes, ACS control, IOMMU group
//! type, whether AER counters are non-zero, MPS/MRRS, BAR sizes, RDMA port state and rate,
//! NVLink counts, AMD GPUs' KFD facts (the CPU link's type and flags: atomics, large BAR;
//! partitions, XCCs, VRAM) and their xGMI links, peer-memory modules, IOMMU units and kernel
//! IOMMU options, hypervisor evidence, GPUDirect Storage's facts (nvidia-fs present,
//! cufile.json's settings, the P2PDMA prerequisites, the file systems on data drives), the
//! node's NCCL settings from its own files (`/etc/nccl.conf`: every `NAME=value` NCCL would
//! use, which change the GPUDirect RDMA verdict; not the job environment of the command), and
//! whether the NVIDIA driver versions agree — not the versions themselves, so a rolling driver
//! upgrade does not split the fleet).
//!
//! Streaming: [`Fleet::add`] keeps each node's name and fingerprint and, per distinct
//! fingerprint, the first node's topology; [`Fleet::finish`] builds the layouts of the group
//! representatives only and diffs each outlier group against the majority groups.

use super::diff::{self, Diff, NodeLayout};
use crate::model::{Bdf, Device, Fact, OsDeviceKind, Topology};
use serde::Serialize;
use std::collections::HashMap;
use std::hash::Hasher;

/// Version tag of the fleet JSON document.
pub const FLEET_SCHEMA: &str = "peerpath.fleet/2";

/// Tag of the fingerprint's definition (what [`fingerprint`] hashes); changes whenever the
/// hashed features change, so a fingerprint recorded by `capture` under another tag is
/// recomputed rather than compared.
pub const FINGERPRINT_SCHEME: &str = "peerpath.fingerprint/4";

fn h_str(h: &mut fnv::FnvHasher, s: &str) {
    h.write(s.as_bytes());
    h.write_u8(0xff);
}

fn h_opt<T: Into<u64>>(h: &mut fnv::FnvHasher, v: Option<T>) {
    match v {
        Some(v) => {
            h.write_u8(1);
            h.write_u64(v.into());
        }
        None => h.write_u8(0),
    }
}

fn h_f64(h: &mut fnv::FnvHasher, v: Option<f64>) {
    h_opt(h, v.map(|g| (g * 100.0).round() as u64));
}

/// Each device's links to its peers, sorted, without the peers' addresses: NVLinks
/// (fabric-bound, count, version) and xGMI links (count, direct, weight, hops, bandwidths).
struct PeerLinks {
    nvlink: HashMap<Bdf, Vec<(bool, u32, u32)>>,
    xgmi: HashMap<Bdf, Vec<[u32; 6]>>,
}

impl PeerLinks {
    fn of(t: &Topology) -> Self {
        let mut nvlink: HashMap<Bdf, Vec<(bool, u32, u32)>> = HashMap::new();
        for l in &t.nvlinks {
            let v = l.version.unwrap_or(0);
            nvlink
                .entry(l.a)
                .or_default()
                .push((l.b.is_none(), l.count, v));
            if let Some(b) = l.b {
                nvlink.entry(b).or_default().push((false, l.count, v));
            }
        }
        let mut xgmi: HashMap<Bdf, Vec<[u32; 6]>> = HashMap::new();
        for l in &t.xgmi {
            let f = [
                l.count.unwrap_or(u32::MAX),
                l.direct.map_or(2, u32::from),
                l.weight.unwrap_or(u32::MAX),
                l.hops.unwrap_or(u32::MAX),
                l.min_bandwidth.unwrap_or(u32::MAX),
                l.max_bandwidth.unwrap_or(u32::MAX),
            ];
            xgmi.entry(l.a).or_default().push(f);
            xgmi.entry(l.b).or_default().push(f);
        }
        nvlink.values_mut().for_each(|v| v.sort_unstable());
        xgmi.values_mut().for_each(|v| v.sort_unstable());
        PeerLinks { nvlink, xgmi }
    }
}

/// The features of one device (no address, no kernel names).
fn device_features(d: &Device, links: &PeerLinks, h: &mut fnv::FnvHasher) {
    h_str(h, d.kind.as_str());
    h.write_u32(d.class);
    for v in [
        d.vendor_id,
        d.device_id,
        d.subsystem_vendor_id,
        d.subsystem_device_id,
    ] {
        h_opt(h, v);
    }
    h_opt(h, d.numa_node);
    match &d.link {
        Some(l) => {
            h.write_u8(1);
            h_f64(h, l.current_gts);
            h_opt(h, l.current_width);
            h_f64(h, l.max_gts);
            h_opt(h, l.max_width);
        }
        None => h.write_u8(0),
    }
    h.write_u8(d.is_vf() as u8);
    h.write_u32(d.vf_count);
    h_str(h, d.driver.as_deref().unwrap_or("-"));
    h.write_u8(d.iommu_group.is_some() as u8);
    h_str(h, d.iommu_group_type.as_deref().unwrap_or("-"));
    for c in [&d.aer_correctable, &d.aer_nonfatal, &d.aer_fatal] {
        h_opt(h, c.as_ref().map(|c| (c.total_or_sum() > 0) as u8));
    }
    match &d.config {
        Some(c) => {
            h.write_u8(1);
            h.write_u64(c.len as u64);
            h_opt(h, c.acs.map(|a| a.control));
            h_opt(h, c.ats.map(u8::from));
            if let Some(p) = &c.pcie {
                h.write_u32(p.mps);
                h.write_u32(p.mps_supported);
                h.write_u32(p.mrrs);
                h.write_u8(p.relaxed_ordering as u8);
            }
        }
        None => h.write_u8(0),
    }
    // BAR sizes of endpoints (BAR1 of a GPU); bridge windows depend on firmware padding.
    if !d.kind.is_bridge() {
        for b in &d.bars {
            h.write_u8(b.index);
            h.write_u64(b.size);
        }
    }
    let mut os: Vec<u64> = d
        .os_devices
        .iter()
        .map(|o| {
            let mut g = fnv::FnvHasher::default();
            g.write_u8(o.kind as u8);
            for p in &o.ports {
                g.write_u32(p.port);
                h_opt(&mut g, p.state.as_ref().map(|s| s.0));
                h_opt(&mut g, p.phys_state.as_ref().map(|s| s.0));
                h_f64(&mut g, p.rate_gbps);
                h_str(&mut g, p.link_layer.as_deref().unwrap_or("-"));
            }
            h_str(&mut g, o.operstate.as_deref().unwrap_or("-"));
            h_opt(&mut g, o.speed_mbps);
            if o.kind == OsDeviceKind::NvidiaGpu {
                for (k, v) in &o.attrs {
                    if k == "GPU Excluded" {
                        h_str(&mut g, v);
                    }
                }
            }
            g.finish()
        })
        .collect();
    os.sort_unstable();
    for o in os {
        h.write_u64(o);
    }
    if let Some(nvl) = links.nvlink.get(&d.bdf) {
        for &(fabric, count, version) in nvl {
            h.write_u8(fabric as u8);
            h.write_u32(count);
            h.write_u32(version);
        }
    }
    // AMD GPUs: what the amd-* checks read of KFD (no node numbers, render minors, hive or
    // unique ids: those differ between identical nodes).
    if let Some(a) = &d.amd {
        h.write_u8(1);
        h_opt(h, a.gfx_target_version);
        h_opt(h, a.num_xcc);
        h_str(h, a.compute_partition.as_deref().unwrap_or("-"));
        h_str(h, a.memory_partition.as_deref().unwrap_or("-"));
        h_opt(h, a.vram_bytes);
        h.write_u8(a.hive_id.is_some_and(|id| id != 0) as u8);
        match &a.cpu_link {
            Some(l) => {
                h.write_u32(l.link_type);
                h_opt(h, l.weight);
                h_opt(h, l.flags);
            }
            None => h.write_u8(0),
        }
    }
    if let Some(xg) = links.xgmi.get(&d.bdf) {
        h.write_usize(xg.len());
        for f in xg {
            for v in f {
                h.write_u32(*v);
            }
        }
    }
}

/// GPUDirect Storage's facts the gds-* checks read, without versions or device names.
fn storage_features(s: &crate::model::storage::StorageFacts, h: &mut fnv::FnvHasher) {
    for b in [s.read, s.nvidia_fs.is_some(), s.etc_visible] {
        h.write_u8(b as u8);
    }
    match &s.cufile {
        Some(f) => {
            h.write_u8(1 + f.error.is_some() as u8);
            if let Some(c) = &f.config {
                for b in [c.compat_allowed(), c.compat_forced(), c.p2pdma()] {
                    h.write_u8(b as u8);
                }
                h_opt(h, c.max_direct_io_size_kb);
                h.write_usize(c.rdma_addrs().count());
                h.write_usize(c.denylist.len());
                h.write_usize(c.wrong_type.len());
            }
        }
        None => h.write_u8(0),
    }
    h_opt(h, s.kernel_p2pdma.as_ref().map(|(_, on)| u8::from(*on)));
    h_str(h, s.nvme_multipath.as_deref().unwrap_or("-"));
    h_str(h, s.nvidia_registry_dwords.as_deref().unwrap_or("-"));
    match &s.mounts {
        Fact::Known(t) => {
            let mut m: Vec<u64> = t
                .mounts
                .iter()
                .filter(|m| !m.drives.is_empty())
                .map(|m| {
                    let mut g = fnv::FnvHasher::default();
                    h_str(&mut g, &m.mount_point);
                    h_str(&mut g, &m.fs_type);
                    h_str(&mut g, m.option("data").unwrap_or("-"));
                    h_str(&mut g, m.option("proto").unwrap_or("-"));
                    g.write_usize(m.drives.len());
                    g.finish()
                })
                .collect();
            m.sort_unstable();
            h.write_usize(m.len() + 1);
            for v in m {
                h.write_u64(v);
            }
        }
        Fact::Unknown(_) => h.write_usize(0),
    }
}

/// Node facts the audit reads, without versions: which version strings agree (each mapped to
/// the position of its first appearance), the driver flavour, peer-memory clients, modules,
/// IOMMU units and the kernel's IOMMU options, NUMA nodes and hypervisor evidence.
fn machine_features(t: &Topology, h: &mut fnv::FnvHasher) {
    let m = &t.machine;
    let mut versions: Vec<Option<String>> = vec![
        m.nvidia_driver
            .as_deref()
            .and_then(super::audit::gdr::proc_driver_version),
        m.nvidia_module_version.clone(),
        m.nvidia_peermem_version.clone(),
    ];
    versions.extend(m.memory_peers.iter().map(|(_, v)| v.clone()));
    let mut seen: Vec<&str> = Vec::new();
    for v in &versions {
        match v {
            Some(v) => {
                let p = seen.iter().position(|s| s == v).unwrap_or_else(|| {
                    seen.push(v);
                    seen.len() - 1
                });
                h.write_u8(1 + p as u8);
            }
            None => h.write_u8(0),
        }
    }
    h.write_u8(
        m.nvidia_driver
            .as_deref()
            .is_some_and(|d| d.contains("Open Kernel")) as u8,
    );
    let mut peers: Vec<&str> = m.memory_peers.iter().map(|(n, _)| n.as_str()).collect();
    peers.sort_unstable();
    for p in peers {
        h_str(h, p);
    }
    for b in [
        m.nv_peer_mem_loaded,
        m.ib_core_loaded,
        m.modules_visible,
        m.mm_visible,
        !m.hypervisor.is_empty(),
        t.nvlink_visible,
        t.xgmi_visible,
    ] {
        h.write_u8(b as u8);
    }
    storage_features(&m.storage, h);
    // The node's own NCCL configuration files (not the environment of the command reading
    // the fleet): their effective entries, name and value.
    let mut conf: Vec<(&str, &str)> = m
        .nccl
        .used()
        .filter(|e| e.source != crate::model::nccl_settings::SettingSource::Environment)
        .map(|e| (e.name.as_str(), e.value.as_str()))
        .collect();
    conf.sort_unstable();
    h.write_usize(conf.len());
    for (k, v) in conf {
        h_str(h, k);
        h_str(h, v);
    }
    match &m.iommu_units {
        Fact::Known(v) => h.write_u64(v.len() as u64 + 1),
        Fact::Unknown(_) => h.write_u64(0),
    }
    if let Fact::Known(c) = &m.kernel_cmdline {
        let mut opts: Vec<&str> = c
            .split_whitespace()
            .filter(|o| o.contains("iommu") || o.starts_with("pci="))
            .collect();
        opts.sort_unstable();
        for o in opts {
            h_str(h, o);
        }
    }
    h_opt(h, m.sockets);
    for n in &t.numa_nodes {
        h.write_u8(n.cpus.is_empty() as u8);
        for d in &n.distances {
            h.write_u32(*d);
        }
    }
}

/// The topology's fingerprint (see the module doc): equal for nodes that differ only in bus
/// numbers, kernel device names, driver versions, serials or AER counts above zero.
pub fn fingerprint(t: &Topology) -> u64 {
    let n = t.devices.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut tops: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in t.devices.iter().enumerate() {
        match d.parent.and_then(|p| t.device_index(&p)) {
            Some(p) if p != i => children[p].push(i),
            _ => tops.entry(d.host_bridge.as_str()).or_default().push(i),
        }
    }
    let links = PeerLinks::of(t);
    // Children before parents: an explicit post-order walk from every top (a parent loop is
    // cut at the first revisit, and devices never reached are hashed as tops).
    let mut hash: Vec<Option<u64>> = vec![None; n];
    let mut state = vec![0u8; n];
    let node_hash = |i: usize, hash: &[Option<u64>]| {
        let mut h = fnv::FnvHasher::default();
        device_features(&t.devices[i], &links, &mut h);
        let mut kids: Vec<u64> = children[i].iter().filter_map(|&c| hash[c]).collect();
        kids.sort_unstable();
        h.write_usize(kids.len());
        for k in kids {
            h.write_u64(k);
        }
        h.finish()
    };
    let mut roots: Vec<usize> = tops.values().flatten().copied().collect();
    roots.extend(0..n);
    for r in roots {
        if state[r] != 0 {
            continue;
        }
        let mut stack = vec![(r, false)];
        while let Some((i, done)) = stack.pop() {
            if done {
                hash[i] = Some(node_hash(i, &hash));
                continue;
            }
            if state[i] != 0 {
                continue;
            }
            state[i] = 1;
            stack.push((i, true));
            for &c in &children[i] {
                if state[c] == 0 {
                    stack.push((c, false));
                }
            }
        }
    }
    let mut bridges: Vec<u64> = t
        .host_bridges
        .iter()
        .map(|hb| {
            let mut h = fnv::FnvHasher::default();
            h_opt(&mut h, hb.numa_node);
            let mut kids: Vec<u64> = tops
                .get(hb.name.as_str())
                .map(|v| v.iter().filter_map(|&i| hash[i]).collect())
                .unwrap_or_default();
            kids.sort_unstable();
            for k in kids {
                h.write_u64(k);
            }
            h.finish()
        })
        .collect();
    // Devices whose host bridge is not listed.
    let mut orphans: Vec<u64> = tops
        .iter()
        .filter(|(name, _)| !t.host_bridges.iter().any(|hb| hb.name == **name))
        .flat_map(|(_, v)| v.iter().filter_map(|&i| hash[i]))
        .collect();
    bridges.sort_unstable();
    orphans.sort_unstable();
    let mut h = fnv::FnvHasher::default();
    h_str(&mut h, FINGERPRINT_SCHEME);
    for b in bridges.iter().chain(&orphans) {
        h.write_u64(*b);
    }
    machine_features(t, &mut h);
    h.finish()
}

/// One node as the fleet keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeEntry {
    /// Name (the input file name without its extensions).
    pub name: String,
    /// Fingerprint as 16 hex digits.
    pub fingerprint: String,
    #[serde(skip)]
    group: usize,
}

/// The majority group an outlier group was compared with.
#[derive(Debug, Clone, Serialize)]
pub struct Against {
    /// Its fingerprint.
    pub fingerprint: String,
    /// Its representative node.
    pub representative: String,
}

/// A group of nodes sharing one fingerprint.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// Fingerprint as 16 hex digits.
    pub fingerprint: String,
    /// Number of nodes.
    pub count: usize,
    /// The first node seen with this fingerprint (the group's addresses in a diff are its).
    pub representative: String,
    /// Whether this is a majority group (see [`Fleet::finish`]).
    pub majority: bool,
    /// For an outlier group: the majority group it differs from least.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<Against>,
    /// For an outlier group: the diff, A = that majority's representative, B = this group's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Diff>,
}

/// An input that could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    /// Input path.
    pub input: String,
    /// Why.
    pub error: String,
}

struct Acc {
    fingerprint: u64,
    count: usize,
    representative: String,
    topology: Topology,
}

/// Accumulates nodes one at a time.
#[derive(Default)]
pub struct Fleet {
    by_fp: HashMap<u64, usize>,
    groups: Vec<Acc>,
    nodes: Vec<NodeEntry>,
    unreadable: Vec<Unreadable>,
    notes: Vec<String>,
    from_manifest: usize,
}

/// The fleet result (`peerpath.fleet/2`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Always [`FLEET_SCHEMA`].
    pub schema: String,
    /// Nodes read.
    pub nodes: usize,
    /// Inputs given (after expanding directories).
    pub inputs: usize,
    /// Whether the run was interrupted (Ctrl-C) before every input was read: the report
    /// covers the nodes read so far.
    pub interrupted: bool,
    /// Groups, largest first; outlier groups carry their diff.
    pub groups: Vec<Group>,
    /// Nodes outside every majority group, in input order.
    pub outliers: Vec<NodeEntry>,
    /// Every node and its fingerprint, in input order.
    pub members: Vec<NodeEntry>,
    /// Inputs that could not be read.
    pub unreadable: Vec<Unreadable>,
    /// Nodes whose fingerprint came from their capture's manifest (the files of each group's
    /// first node were scanned and matched it); the others were scanned.
    pub from_manifest: usize,
    /// Notes on the run (a recorded fingerprint that did not match its files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Fleet {
    /// An empty fleet.
    pub fn new() -> Self {
        Fleet::default()
    }

    /// Adds one node: its fingerprint is computed here; the topology is kept only when it
    /// starts a new group.
    pub fn add(&mut self, name: &str, t: Topology) {
        let fp = fingerprint(&t);
        self.add_fingerprinted(name, fp, t);
    }

    /// Adds one node whose fingerprint was computed already (on a worker thread).
    pub fn add_fingerprinted(&mut self, name: &str, fp: u64, t: Topology) {
        let g = match self.by_fp.get(&fp) {
            Some(&g) => {
                self.groups[g].count += 1;
                g
            }
            None => {
                let g = self.groups.len();
                self.groups.push(Acc {
                    fingerprint: fp,
                    count: 1,
                    representative: name.to_string(),
                    topology: t,
                });
                self.by_fp.insert(fp, g);
                g
            }
        };
        self.nodes.push(NodeEntry {
            name: name.to_string(),
            fingerprint: format!("{fp:016x}"),
            group: g,
        });
    }

    /// Adds a node whose fingerprint is known to belong to an existing group (a fingerprint a
    /// capture recorded, checked on that group's first capture); `false`, and nothing added,
    /// when no group has it yet.
    pub fn add_known(&mut self, name: &str, fp: u64) -> bool {
        let added = self.add_same_file(name, fp);
        if added {
            self.from_manifest += 1;
        }
        added
    }

    /// Adds a node read from the same file as one added already (a hard link in a fleet
    /// directory: one device and inode, read once), into that node's group; `false`, and
    /// nothing added, when no group has the fingerprint.
    pub fn add_same_file(&mut self, name: &str, fp: u64) -> bool {
        let Some(&g) = self.by_fp.get(&fp) else {
            return false;
        };
        self.groups[g].count += 1;
        self.nodes.push(NodeEntry {
            name: name.to_string(),
            fingerprint: format!("{fp:016x}"),
            group: g,
        });
        true
    }

    /// Records a note for the report (a recorded fingerprint that did not match its files).
    pub fn add_note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Records an input that could not be read.
    pub fn add_error(&mut self, input: &str, error: String) {
        self.unreadable.push(Unreadable {
            input: input.to_string(),
            error,
        });
    }

    /// Number of distinct fingerprints so far.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Number of nodes added so far.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Finishes: marks majority groups and diffs every other group against the majority group
    /// it differs from least (fewest changes; the first on a tie).
    ///
    /// A group is a majority group when it is the largest, or when it holds more than
    /// `min_share` of the nodes (default 0.1 in the CLI: a fleet of two hardware generations
    /// has two majorities). `inputs` and `interrupted` are recorded as given.
    pub fn finish(self, min_share: f64, inputs: usize, interrupted: bool) -> Summary {
        let total = self.nodes.len();
        let largest = self.groups.iter().map(|g| g.count).max().unwrap_or(0);
        let majority: Vec<bool> = self
            .groups
            .iter()
            .map(|g| g.count == largest || (total > 0 && g.count as f64 > min_share * total as f64))
            .collect();
        // Layouts (one classifier and one audit each) of the group representatives that a
        // diff needs: every group when there is an outlier group, none otherwise.
        let any_outlier = majority.iter().any(|m| !m);
        let layouts: Vec<Option<NodeLayout>> = self
            .groups
            .iter()
            .map(|g| {
                any_outlier.then(|| {
                    let mut l = NodeLayout::of(&g.topology);
                    l.source = g.representative.clone();
                    l
                })
            })
            .collect();
        let majors: Vec<usize> = (0..self.groups.len()).filter(|&g| majority[g]).collect();
        let mut explained: HashMap<usize, (usize, Diff)> = HashMap::new();
        for (g, lb) in layouts.iter().enumerate() {
            let (false, Some(lb)) = (majority[g], lb) else {
                continue;
            };
            let best = majors
                .iter()
                .filter_map(|&m| Some((m, diff::diff(layouts[m].as_ref()?, lb))))
                .min_by_key(|(_, d)| d.len());
            if let Some(b) = best {
                explained.insert(g, b);
            }
        }
        let mut groups: Vec<Group> = self
            .groups
            .iter()
            .enumerate()
            .map(|(g, a)| {
                let ex = explained.remove(&g);
                Group {
                    fingerprint: format!("{:016x}", a.fingerprint),
                    count: a.count,
                    representative: a.representative.clone(),
                    majority: majority[g],
                    against: ex.as_ref().map(|(m, _)| Against {
                        fingerprint: format!("{:016x}", self.groups[*m].fingerprint),
                        representative: self.groups[*m].representative.clone(),
                    }),
                    diff: ex.map(|(_, d)| d),
                }
            })
            .collect();
        let outliers = self
            .nodes
            .iter()
            .filter(|n| !majority[n.group])
            .cloned()
            .collect();
        groups.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(a.fingerprint.cmp(&b.fingerprint))
        });
        Summary {
            schema: FLEET_SCHEMA.into(),
            nodes: total,
            inputs,
            interrupted,
            groups,
            outliers,
            members: self.nodes,
            unreadable: self.unreadable,
            from_manifest: self.from_manifest,
            notes: self.notes,
        }
    }
}

/// A node's name from its input path: the file name without `.tar.gz`, `.tar.bz2`, `.tgz`,
/// `.tar`, `.json` or `.xml`.
pub fn node_name(path: &std::path::Path) -> String {
    let n = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    for ext in [
        ".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".json", ".xml",
    ] {
        if let Some(s) = n.strip_suffix(ext)
            && !s.is_empty()
        {
            return s.to_string();
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::nccl_settings::{NcclSetting, SettingSource};

    /// A node whose own `/etc/nccl.conf` changes a GDR level is not its healthy twin; the
    /// environment of the command reading the fleet does not enter.
    #[test]
    fn the_nodes_own_nccl_conf_enters_the_fingerprint_and_the_environment_does_not() {
        let mut b = crate::analysis::testkit::TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.gpu("0000:11:00.0", Some("0000:10:01.0"), Some(0));
        let t = b.build();
        let base = fingerprint(&t);
        let mut conf = t.clone();
        conf.machine.nccl.entries.push(NcclSetting {
            name: "NCCL_NET_GDR_LEVEL".into(),
            value: "PHB".into(),
            source: SettingSource::File {
                path: "/etc/nccl.conf".into(),
                line: 1,
            },
        });
        assert_ne!(fingerprint(&conf), base);
        let mut env = t.clone();
        env.machine
            .nccl
            .layer_environment(&[("NCCL_NET_GDR_LEVEL".into(), "PHB".into())]);
        assert_eq!(fingerprint(&env), base);
    }
}
