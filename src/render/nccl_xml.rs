//! An `NCCL_TOPO_FILE` (NCCL topology XML) for the node's GPUs and NICs.
//!
//! Data: the NUMA node NCCL itself would give each device (its `numa_node`, -1 kept: see
//! [`nccl_numa`]), the topology's NUMA nodes (`cpulist` → `affinity` mask), `/proc/cpuinfo` vendor,
//! family and model (→ `vendor`, `familyid`, `modelid`; `arch` from the vendor), the PCIe
//! switches (one `pci` element per switch, keyed by its upstream port, nested as cascaded),
//! each GPU's and NIC's class/vendor/device/subsystem ids, and link widths and speeds taken the
//! way NCCL takes them: the lower of the device's and its parent port's *max* link attributes.
//! NVLinks (when the source saw them) become `nvlink` children of `gpu`; RDMA devices become
//! `nic`/`net` children. Format: shared/reference/classification.md §3 and ecosystem.md §1.7.
//!
//! For a node of AMD GPUs the file is RCCL's: `<system version="2">` (RCCL's version; NCCL's
//! is 1) and `<gpu gcn>` with one `<xgmi>` per direct xGMI peer.
//!
//! NCCL loads this file before its own detection and merges: attributes already present are
//! kept, missing ones filled. `--skeleton` writes only `cpu`/`pci`, the form NCCL's
//! maintainers advise for VMs (NCCL then finds GPUs, NVLinks and NICs itself).
//!
//! The VM case: a guest's PCIe tree is usually flat (every device on the root bus, so every
//! GPU–NIC pair is PHB). [`NcclXmlOptions::pairs`] declares GPU–NIC pairs that share a PCIe
//! switch on the *host*; each pair is written under its own synthetic switch
//! `ffff:ff:NN.0` (vendor 0x0000), as Azure's published topology files do, so NCCL sees them
//! as PIX. The pairing is an operator's statement about the host, not something the guest
//! can observe; the file says so in a comment.
//!
//! NCCL reads the file with its own small parser (`src/graph/xml.cc`, `xmlGetNode`/`xmlLoadSub`),
//! not a general XML library, so the file keeps to what that parser and XML 1.0 both accept: no
//! XML declaration (NCCL stops at its `?`), no `--` inside comments, one space between
//! attributes, double-quoted values without `"'<>&` (NCCL does not decode entities), and the
//! limits of every NCCL from 2.18 to 2.30 ([`MAX_ELEMENTS`], [`MAX_CHILDREN`],
//! [`MAX_ATTRIBUTES`], [`MAX_VALUE_LEN`]). A topology beyond them is refused with the limit named,
//! never written for NCCL to fail on. `tests/consumer_nccl_xml.rs` reads every export with a
//! reader that follows NCCL's grammar rule by rule, and with `xmllint`.

use crate::analysis::nccl::CpuClass;
use crate::model::{Bdf, Device, DeviceKind, Topology};
use crate::parse::cpulist;
use anyhow::{Context, Result, bail};
use quick_xml::Writer;
use quick_xml::events::{BytesStart, BytesText, Event};
use std::collections::{BTreeMap, BTreeSet};

/// The `<system version>` the library that reads the file demands, exactly (a file of another
/// version is refused, "XML Topology has wrong version"): NCCL's `NCCL_TOPO_XML_VERSION` is 1
/// (NVIDIA/nccl `src/graph/xml.h`); RCCL's is 2 (ROCm/rccl `src/graph/xml.h:47`, and every
/// topology file in its `tools/topo_expl/models`). A node whose GPUs are all AMD is written
/// for RCCL; any other for NCCL.
fn topology_file_version(t: &Topology) -> &'static str {
    let mut gpus = t.of_kind(DeviceKind::Gpu).peekable();
    if gpus.peek().is_some() && gpus.all(crate::model::amd::is_amd_gpu) {
        "2"
    } else {
        "1"
    }
}

/// Most elements NCCL's topology reader takes from a file: `NCCL_TOPO_XML_MAX_NODES` is 256
/// (`src/graph/topo.h`, 2.21 and later) and `xmlLoadSub` refuses to read anything more, even a
/// closing tag or the end of the file, once that many are stored, so 255 can be read.
pub const MAX_ELEMENTS: usize = 255;
/// Most children of one element: `MAX_SUBS` in `src/graph/xml.h` is 32 in NCCL 2.18–2.20 (and
/// not checked there: a 33rd child overwrites memory), 128 in 2.21–2.28, 640 from 2.29.
pub const MAX_CHILDREN: usize = 32;
/// Attributes NCCL keeps per element (`MAX_ATTR_COUNT` in `xml.h`; more are dropped silently).
/// NCCL adds `host_hash` to every `cpu` it reads, so a `cpu` may carry one fewer.
pub const MAX_ATTRIBUTES: usize = 16;
/// Longest attribute value and element name: `MAX_STR_LEN` is 255 and `xmlGetValue` /
/// `xmlGetToken` store the closing quote or delimiter too, failing at index 254.
pub const MAX_VALUE_LEN: usize = 253;

/// Options of the NCCL XML export.
#[derive(Debug, Clone, Default)]
pub struct NcclXmlOptions {
    /// Write only `cpu` and `pci` elements (no `gpu`/`nic`/`net`).
    pub skeleton: bool,
    /// `arch` when the CPU vendor does not tell it (`x86_64`, `arm64`, `ppc64`).
    pub arch: Option<String>,
    /// Declared GPU–NIC pairs to put under synthetic switches (the VM case).
    pub pairs: Vec<(Bdf, Bdf)>,
}

/// The `arch` NCCL expects, from the CPU vendor string: CPUID's on x86; on Arm and POWER the
/// vendor strings the sources record (`CPU implementer 0x41 (arm64)` from `/proc/cpuinfo`, an
/// NCCL file's `<cpu arch="arm64">`), classed as [`CpuClass::from_vendor`] classes them.
pub fn arch_of_vendor(vendor: Option<&str>) -> Option<&'static str> {
    let v = vendor?.trim();
    match v {
        "GenuineIntel" | "AuthenticAMD" | "HygonGenuine" | "CentaurHauls" | "Shanghai" => {
            Some("x86_64")
        }
        _ => match CpuClass::from_vendor(v) {
            CpuClass::Arm => Some("arm64"),
            CpuClass::Power => Some("ppc64"),
            _ => None,
        },
    }
}

/// A cpumask string as `/sys/devices/system/node/node<N>/cpumap` writes it: 32-bit hex words,
/// most significant first, comma-separated, `words` words long.
pub fn cpumask(cpus: &[u32], words: usize) -> String {
    let mut w = vec![0u32; words.max(1)];
    for &c in cpus {
        let i = (c / 32) as usize;
        if i < w.len() {
            w[i] |= 1 << (c % 32);
        }
    }
    w.iter()
        .rev()
        .map(|x| format!("{x:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// NCCL's spelling of a PCIe link speed (`32.0 GT/s PCIe`).
pub fn speed_str(gts: f64) -> String {
    format!("{gts:.1} GT/s PCIe")
}

/// Min of the device's and its parent port's max link speed and width, as NCCL's sysfs
/// detection takes them (`ncclTopoGetXmlFromSys`, src/graph/xml.cc; NCCL ≥ 2.30.7 asks NVML
/// for a GPU's current link instead, which the scan does not have, so the rule is kept for GPUs
/// too). NCCL reads `max_link_width` and `../max_link_width` and writes `min(device, port)`,
/// where an unreadable file is `strtol("") = 0`: a device directly on a root bus, whose
/// sysfs parent is the host bridge (`pci0000:00`, no link files), gets `link_width="0"`, which
/// NCCL's reader (`ncclTopoAddPci`, topo.cc: `if (width == 0) width = 16`) takes as x16. The
/// speed's unreadable port is `FLT_MAX`, so there the device's own speed stands (a device with
/// no link figures at all gets neither attribute: NCCL fills both itself). A width the
/// input does not give next to a known speed is written 0 the same way (an NCCL dump's own
/// `link_width="0"`, read back as unknown). An NCCL XML input has no root ports (a top-level
/// element may sit under one), so its own figures are kept. docs/exports.md says why.
fn nccl_link(t: &Topology, d: &Device) -> (Option<f64>, Option<u32>) {
    let own = d.link.unwrap_or_default();
    let parent = d
        .parent
        .and_then(|p| t.device(&p))
        .and_then(|p| p.link)
        .unwrap_or_default();
    let on_root_bus = d.parent.is_none() && t.source.kind != "nccl-xml";
    let min_f = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let min_u = |a: Option<u32>, b: Option<u32>| match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let speed = min_f(own.max_gts, parent.max_gts);
    let width = if on_root_bus {
        speed.map(|_| 0)
    } else {
        min_u(own.max_width, parent.max_width).or(speed.map(|_| 0))
    };
    (speed, width)
}

/// The NUMA node NCCL gives the `cpu` element above a device: `ncclTopoGetXmlFromSys` reads the
/// `numa_node` file of the topmost device it records (a switch's upstream port, else the
/// endpoint itself) and writes it as is, so -1 (`None`: a VM, or firmware without proximity
/// information) stays -1 even where the machine has one NUMA node. `numa_node` is that file for
/// every source that read sysfs, and the `cpu numaid` for an NCCL XML input.
fn nccl_numa(d: &Device) -> Option<u32> {
    d.numa_node
}

fn hex16(v: Option<u16>) -> String {
    format!("0x{:04x}", v.unwrap_or(0))
}

/// An element of the tree being written.
#[derive(Debug, Clone)]
enum Node {
    /// A real switch, by index into `Topology::switches`.
    Switch(usize),
    /// A synthetic switch holding a declared pair (index into the pair list).
    Synthetic(usize),
    /// A GPU or NIC.
    Endpoint(Bdf),
}

struct Ctx<'a> {
    t: &'a Topology,
    o: &'a NcclXmlOptions,
    children: BTreeMap<String, Vec<(String, Node)>>,
    gpu_index: BTreeMap<Bdf, usize>,
    net_index: BTreeMap<String, usize>,
}

/// The XML being written, kept to what NCCL's reader takes (see the module doc): every element
/// counted against [`MAX_ELEMENTS`] and its parent's [`MAX_CHILDREN`], every attribute value
/// checked, comments made safe.
struct Out {
    w: Writer<Vec<u8>>,
    elements: usize,
    /// Open elements: name and children so far.
    open: Vec<(String, usize)>,
}

/// Whether a value can be written as is: NCCL does not decode entities, so a value needing one
/// (`"'<>&`) would reach NCCL escaped; control characters and non-ASCII are refused too.
fn value_ok(v: &[u8]) -> bool {
    v.len() <= MAX_VALUE_LEN
        && v.iter()
            .all(|c| (0x20..0x7f).contains(c) && !b"\"'<>&".contains(c))
}

/// Comment text XML and NCCL both accept: no `--` (XML 1.0 forbids it, and NCCL's
/// `xmlSkipComment` ends at the first `-->`), no trailing `-`, printable characters only.
pub fn comment_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = if c.is_control() { '?' } else { c };
        if c == '-' && out.ends_with('-') {
            out.push(' ');
        }
        out.push(c);
    }
    if out.ends_with('-') {
        out.push(' ');
    }
    out
}

impl Out {
    fn new() -> Out {
        Out {
            w: Writer::new_with_indent(Vec::new(), b' ', 2),
            elements: 0,
            open: Vec::new(),
        }
    }

    fn comment(&mut self, text: &str) -> Result<()> {
        let body = format!(" {} ", comment_text(text));
        self.w
            .write_event(Event::Comment(BytesText::from_escaped(body.as_str())))?;
        Ok(())
    }

    /// Counts and checks an element before it is written.
    fn check(&mut self, e: &BytesStart) -> Result<()> {
        let name = e.name().as_ref().to_string();
        self.elements += 1;
        if self.elements > MAX_ELEMENTS {
            bail!(
                "the topology needs more than {MAX_ELEMENTS} XML elements, more than NCCL's topology reader takes (NCCL_TOPO_XML_MAX_NODES = 256): export with the skeleton option"
            );
        }
        if let Some((parent, n)) = self.open.last_mut() {
            *n += 1;
            if *n > MAX_CHILDREN {
                bail!(
                    "<{parent}> would get more than {MAX_CHILDREN} children, more than NCCL 2.18–2.20 take (MAX_SUBS)"
                );
            }
        }
        let mut count = 0;
        for a in e.attributes() {
            let a = a?;
            count += 1;
            if !value_ok(a.value.as_bytes()) {
                bail!(
                    "<{name} {}=\"{}\">: NCCL's reader needs values of at most {MAX_VALUE_LEN} printable ASCII characters without quotes, <, > or &",
                    a.key.as_ref(),
                    a.value
                );
            }
        }
        let max = if name == "cpu" {
            MAX_ATTRIBUTES - 1
        } else {
            MAX_ATTRIBUTES
        };
        if count > max {
            bail!("<{name}> has {count} attributes; NCCL keeps {max}");
        }
        Ok(())
    }

    fn start(&mut self, e: BytesStart) -> Result<()> {
        self.check(&e)?;
        self.open.push((e.name().as_ref().to_string(), 0));
        self.w.write_event(Event::Start(e))?;
        Ok(())
    }

    fn empty(&mut self, e: BytesStart) -> Result<()> {
        self.check(&e)?;
        self.w.write_event(Event::Empty(e))?;
        Ok(())
    }

    fn end(&mut self) -> Result<()> {
        let (name, _) = self.open.pop().context("closing an element never opened")?;
        self.w
            .write_event(Event::End(BytesStart::new(name.as_str()).to_end()))?;
        Ok(())
    }

    fn finish(self) -> Result<String> {
        let mut s = String::from_utf8(self.w.into_inner())?;
        s.push('\n');
        Ok(s)
    }
}

fn key_of(n: &Node, t: &Topology) -> String {
    match n {
        Node::Switch(i) => format!("sw:{}", t.switches[*i].id),
        Node::Synthetic(i) => format!("syn:{i}"),
        Node::Endpoint(b) => format!("ep:{b}"),
    }
}

/// Renders the XML document: the CPU architecture, the endpoints NCCL sees, the element tree
/// under each NUMA node, then the document.
pub fn render(t: &Topology, o: &NcclXmlOptions) -> Result<String> {
    let arch = arch_attribute(t, o)?;
    let (gpus, nics) = nccl_endpoints(t);
    check_pairs(o, &gpus, &nics)?;
    let cx = Ctx {
        t,
        o,
        children: element_tree(t, o, &gpus, &nics),
        gpu_index: gpus.iter().enumerate().map(|(i, d)| (d.bdf, i)).collect(),
        net_index: net_numbers(&nics),
    };
    let mut w = Out::new();
    header_comments(&cx, &mut w)?;
    w.start(BytesStart::new("system").with_attributes([("version", topology_file_version(t))]))?;
    write_cpus(&cx, &mut w, &arch)?;
    w.end()?;
    w.finish()
}

/// NCCL's `arch` attribute: `--arch`, else from the CPU vendor; refused when neither tells.
fn arch_attribute(t: &Topology, o: &NcclXmlOptions) -> Result<String> {
    Ok(
        match (&o.arch, arch_of_vendor(t.machine.cpu_vendor.as_deref())) {
            (Some(a), _) => a.clone(),
            (None, Some(a)) => a.to_string(),
            (None, None) => bail!(
                "cannot tell the CPU architecture NCCL's `arch` attribute needs ({}); pass --arch x86_64|arm64|ppc64",
                match &t.machine.cpu_vendor {
                    Some(v) => format!("CPU vendor \"{v}\" is not one NCCL knows"),
                    None => "the input records no CPU vendor".to_string(),
                }
            ),
        },
    )
}

/// The GPUs, and the NICs as NCCL's net plugins see them.
fn nccl_endpoints(t: &Topology) -> (Vec<&Device>, Vec<&Device>) {
    let gpus: Vec<&Device> = t.of_kind(DeviceKind::Gpu).collect();
    // As NCCL's net plugins see them: RDMA NICs when any NIC has RDMA, else every NIC.
    let all_nics: Vec<&Device> = t.of_kind(DeviceKind::Nic).collect();
    let any_rdma = all_nics.iter().any(|d| d.rdma_names().next().is_some());
    let nics: Vec<&Device> = all_nics
        .into_iter()
        .filter(|d| !any_rdma || d.rdma_names().next().is_some())
        .collect();
    (gpus, nics)
}

/// Refuses a declared pair whose GPU or NIC is not one of this topology's.
fn check_pairs(o: &NcclXmlOptions, gpus: &[&Device], nics: &[&Device]) -> Result<()> {
    for (g, n) in &o.pairs {
        if !gpus.iter().any(|d| d.bdf == *g) {
            bail!("declared pair {g}={n}: {g} is not a GPU of this topology");
        }
        if !nics.iter().any(|d| d.bdf == *n) {
            bail!("declared pair {g}={n}: {n} is not a NIC of this topology");
        }
    }
    Ok(())
}

/// Parent key → sorted children: each unpaired endpoint under its switch chain, the top under
/// `cpu:<numa>`, and one synthetic switch per declared pair.
fn element_tree(
    t: &Topology,
    o: &NcclXmlOptions,
    gpus: &[&Device],
    nics: &[&Device],
) -> BTreeMap<String, Vec<(String, Node)>> {
    let paired: BTreeSet<Bdf> = o.pairs.iter().flat_map(|(g, n)| [*g, *n]).collect();
    // parent key → children; "cpu:<numa>" for the top.
    let mut children: BTreeMap<String, Vec<(String, Node)>> = BTreeMap::new();
    let numa_key = |n: Option<u32>| format!("cpu:{}", n.map(|n| n as i64).unwrap_or(-1));
    let sw_idx = |id: &str| t.switches.iter().position(|s| s.id == id);
    let add = |parent: String,
               sort: String,
               n: Node,
               children: &mut BTreeMap<String, Vec<(String, Node)>>| {
        let v = children.entry(parent).or_default();
        let k = key_of(&n, t);
        if !v.iter().any(|(_, m)| key_of(m, t) == k) {
            v.push((sort, n));
        }
    };
    for d in gpus.iter().chain(nics.iter()) {
        if paired.contains(&d.bdf) {
            continue;
        }
        // Walk up the switch chain.
        let mut cur = Node::Endpoint(d.bdf);
        let mut cur_sort = d.bdf.to_string();
        let mut sw = d.switch.as_deref().and_then(sw_idx);
        let mut guard = 0;
        while let Some(si) = sw {
            guard += 1;
            if guard > 64 {
                break;
            }
            let s = &t.switches[si];
            add(format!("sw:{}", s.id), cur_sort.clone(), cur, &mut children);
            cur = Node::Switch(si);
            cur_sort = s.upstream.to_string();
            sw = s.parent_switch.as_deref().and_then(sw_idx);
        }
        let top_dev = match &cur {
            Node::Switch(si) => t.device(&t.switches[*si].upstream),
            _ => Some(*d),
        };
        let numa = top_dev.map_or(d.numa_node, nccl_numa);
        add(numa_key(numa), cur_sort, cur, &mut children);
    }
    for (i, (g, _)) in o.pairs.iter().enumerate() {
        let numa = t.device(g).and_then(nccl_numa);
        add(
            numa_key(numa),
            format!("ffff:ff:{:02x}.0", i + 1),
            Node::Synthetic(i),
            &mut children,
        );
    }
    for v in children.values_mut() {
        v.sort_by(|a, b| a.0.cmp(&b.0));
    }
    children
}

/// The `dev` number of each RDMA name: its place in RDMA-name (natural) order.
fn net_numbers(nics: &[&Device]) -> BTreeMap<String, usize> {
    // NCCL's IB plugin numbers devices in verbs enumeration order; RDMA-name order is assumed.
    let mut rdma_names: Vec<String> = nics
        .iter()
        .flat_map(|d| d.rdma_names().map(str::to_string))
        .collect();
    rdma_names.sort_by_key(|a| natural_key(a));
    rdma_names
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n, i))
        .collect()
}

/// The comments at the top: the source, and what the file assumes or declares.
fn header_comments(cx: &Ctx, w: &mut Out) -> Result<()> {
    let (t, o) = (cx.t, cx.o);
    w.comment(&format!(
        "NCCL_TOPO_FILE written by peerpath from {} ({}); link attributes are min(device, parent port) max values, as NCCL reads them.",
        t.source.path, t.source.kind
    ))?;
    if !o.skeleton && !cx.net_index.is_empty() {
        w.comment(
            "net dev numbers assume NCCL's IB plugin enumerates devices in RDMA-name order; export with the skeleton option to let NCCL number them itself.",
        )?;
    }
    if !o.pairs.is_empty() {
        w.comment(
            "Synthetic switches ffff:ff:NN.0 hold GPU-NIC pairs DECLARED by the operator (they share a PCIe switch on the host); the guest cannot observe this.",
        )?;
    }
    Ok(())
}

/// One `cpu` element per NUMA key of the tree, with its affinity, arch and CPUID, and its
/// children.
fn write_cpus(cx: &Ctx, w: &mut Out, arch: &str) -> Result<()> {
    let t = cx.t;
    let max_cpu = t
        .numa_nodes
        .iter()
        .flat_map(|n| cpulist::parse_list(n.cpus.as_bytes()).unwrap_or_default())
        .max()
        .unwrap_or(0);
    let words = (max_cpu as usize / 32) + 1;
    let mut numa_ids: Vec<i64> = cx
        .children
        .keys()
        .filter_map(|k| k.strip_prefix("cpu:"))
        .filter_map(|k| k.parse().ok())
        .collect();
    numa_ids.sort_unstable();
    for id in numa_ids {
        let mut e = BytesStart::new("cpu");
        e.push_attribute(("numaid", id.to_string().as_str()));
        // NCCL fills a missing affinity from /sys/devices/system/node/node<numaid>/cpumap
        // (`ncclTopoGetXmlFromCpu`); for numaid -1 that file never exists, so NCCL's own
        // topology has no affinity there and NCCL pins nothing ("Affinity for GPU 0 is empty,
        // ignoring"). The file leaves it out the same way.
        if id >= 0 {
            let cpus: Vec<u32> = t
                .numa_nodes
                .iter()
                .find(|n| n.id as i64 == id)
                .and_then(|n| cpulist::parse_list(n.cpus.as_bytes()).ok())
                .unwrap_or_default();
            e.push_attribute(("affinity", cpumask(&cpus, words).as_str()));
        }
        e.push_attribute(("arch", arch));
        // NCCL writes (and reads) the CPUID vendor, family and model on x86 only.
        if arch == "x86_64" {
            if let Some(v) = &t.machine.cpu_vendor {
                e.push_attribute(("vendor", v.as_str()));
            }
            if let Some(f) = t.machine.cpu_family {
                e.push_attribute(("familyid", f.to_string().as_str()));
            }
            if let Some(m) = t.machine.cpu_model_number {
                e.push_attribute(("modelid", m.to_string().as_str()));
            }
        }
        w.start(e)?;
        write_children(cx, w, &format!("cpu:{id}"))?;
        w.end()?;
    }
    Ok(())
}

/// Natural order key (`mlx5_2` < `mlx5_10`).
fn natural_key(s: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut num = String::new();
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            num.push(ch);
        } else {
            if !num.is_empty() {
                out.push((std::mem::take(&mut text), num.parse().unwrap_or(u64::MAX)));
                num.clear();
            }
            text.push(ch);
        }
    }
    out.push((text, num.parse().unwrap_or(0)));
    out
}

fn pci_start<'a>(
    busid: &str,
    class: u32,
    d: Option<&Device>,
    link: (Option<f64>, Option<u32>),
) -> BytesStart<'a> {
    let mut e = BytesStart::new("pci");
    e.push_attribute(("busid", busid));
    e.push_attribute(("class", format!("0x{class:06x}").as_str()));
    e.push_attribute(("vendor", hex16(d.and_then(|d| d.vendor_id)).as_str()));
    e.push_attribute(("device", hex16(d.and_then(|d| d.device_id)).as_str()));
    e.push_attribute((
        "subsystem_vendor",
        hex16(d.and_then(|d| d.subsystem_vendor_id)).as_str(),
    ));
    e.push_attribute((
        "subsystem_device",
        hex16(d.and_then(|d| d.subsystem_device_id)).as_str(),
    ));
    if let Some(g) = link.0 {
        e.push_attribute(("link_speed", speed_str(g).as_str()));
    }
    if let Some(wd) = link.1 {
        e.push_attribute(("link_width", wd.to_string().as_str()));
    }
    e
}

fn write_children(cx: &Ctx, w: &mut Out, key: &str) -> Result<()> {
    let Some(kids) = cx.children.get(key) else {
        return Ok(());
    };
    for (_, n) in kids {
        match n {
            Node::Switch(si) => {
                let s = &cx.t.switches[*si];
                let up = cx.t.device(&s.upstream);
                let link = up.map(|d| nccl_link(cx.t, d)).unwrap_or((None, None));
                w.start(pci_start(&s.upstream.to_string(), 0x060400, up, link))?;
                write_children(cx, w, &format!("sw:{}", s.id))?;
                w.end()?;
            }
            Node::Synthetic(i) => {
                let (g, nic) = cx.o.pairs[*i];
                let members: Vec<&Device> =
                    [g, nic].iter().filter_map(|b| cx.t.device(b)).collect();
                let speed = members
                    .iter()
                    .filter_map(|d| nccl_link(cx.t, d).0)
                    .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
                let width = members.iter().filter_map(|d| nccl_link(cx.t, d).1).max();
                let busid = format!("ffff:ff:{:02x}.0", i + 1);
                w.start(pci_start(&busid, 0x060400, None, (speed, width)))?;
                for b in [g, nic] {
                    write_endpoint(cx, w, &b)?;
                }
                w.end()?;
            }
            Node::Endpoint(b) => write_endpoint(cx, w, b)?,
        }
    }
    Ok(())
}

/// The `gpu` element `g` with its link elements (`nvlink`, `xgmi`) inside, empty without any.
fn gpu_with_links(w: &mut Out, g: BytesStart, links: Vec<BytesStart>) -> Result<()> {
    if links.is_empty() {
        return w.empty(g);
    }
    w.start(g)?;
    for l in links {
        w.empty(l)?;
    }
    w.end()
}

fn write_endpoint(cx: &Ctx, w: &mut Out, b: &Bdf) -> Result<()> {
    let Some(d) = cx.t.device(b) else {
        return Ok(());
    };
    let e = pci_start(&b.to_string(), d.class, Some(d), nccl_link(cx.t, d));
    if cx.o.skeleton {
        w.empty(e)?;
        return Ok(());
    }
    match d.kind {
        // RCCL's element for an AMD GPU: `gcn` and one `<xgmi target count tclass>` per direct
        // xGMI peer (ROCm/rccl `src/graph/xml.cc`; read by `ncclTopoAddXGMI`).
        DeviceKind::Gpu if crate::model::amd::is_amd_gpu(d) && cx.t.xgmi_visible => {
            w.start(e)?;
            let mut g = BytesStart::new("gpu");
            if let Some(i) = cx.gpu_index.get(b) {
                g.push_attribute(("dev", i.to_string().as_str()));
            }
            // The architecture from KFD's `gfx_target_version`, else as an RCCL file wrote it
            // (`906`, `gfx942`: RCCL converts either); absent, RCCL fills it for its own GPUs.
            let gcn = d
                .amd
                .as_ref()
                .and_then(|a| a.gfx_target_version)
                .map(|v| format!("gfx{}{:x}{:x}", v / 10000, (v / 100) % 100, v % 100))
                .or_else(|| {
                    d.os_devices
                        .iter()
                        .flat_map(|o| o.attrs.iter())
                        .find(|(k, _)| k == "gcn")
                        .map(|(_, v)| v.clone())
                });
            if let Some(gcn) = gcn {
                g.push_attribute(("gcn", gcn.as_str()));
            }
            let links: Vec<BytesStart> =
                cx.t.xgmi
                    .iter()
                    .filter(|l| l.direct != Some(false) && (l.a == *b || l.b == *b))
                    .map(|l| {
                        let o = if l.a == *b { l.b } else { l.a };
                        let tclass = cx.t.device(&o).map(|d| d.class).unwrap_or(0x120000);
                        BytesStart::new("xgmi").with_attributes([
                            ("target", o.to_string().as_str()),
                            ("count", l.count.unwrap_or(1).to_string().as_str()),
                            ("tclass", format!("0x{tclass:06x}").as_str()),
                        ])
                    })
                    .collect();
            gpu_with_links(w, g, links)?;
            w.end()?;
        }
        DeviceKind::Gpu if cx.t.nvlink_visible => {
            w.start(e)?;
            let mut g = BytesStart::new("gpu");
            if let Some(i) = cx.gpu_index.get(b) {
                g.push_attribute(("dev", i.to_string().as_str()));
            }
            let mut direct: BTreeMap<Bdf, u32> = BTreeMap::new();
            let mut fabric = 0;
            for l in &cx.t.nvlinks {
                let other = if l.a == *b {
                    Some(l.b)
                } else if l.b == Some(*b) {
                    Some(Some(l.a))
                } else {
                    None
                };
                match other {
                    Some(Some(o)) => *direct.entry(o).or_default() += l.count,
                    Some(None) => fabric += l.count,
                    None => {}
                }
            }
            let mut links: Vec<BytesStart> = Vec::new();
            for (o, c) in direct {
                let tclass = cx.t.device(&o).map(|d| d.class).unwrap_or(0x030200);
                links.push(BytesStart::new("nvlink").with_attributes([
                    ("target", o.to_string().as_str()),
                    ("count", c.to_string().as_str()),
                    ("tclass", format!("0x{tclass:06x}").as_str()),
                ]));
            }
            if fabric > 0 {
                // NCCL folds every NVSwitch into one node; this is the bus id it uses for
                // switches it cannot see (VMs).
                links.push(BytesStart::new("nvlink").with_attributes([
                    ("target", "fffffff:ffff:ff"),
                    ("count", fabric.to_string().as_str()),
                    ("tclass", "0x068000"),
                ]));
            }
            gpu_with_links(w, g, links)?;
            w.end()?;
        }
        DeviceKind::Nic if d.rdma_names().next().is_some() => {
            w.start(e)?;
            w.start(BytesStart::new("nic"))?;
            for od in d
                .os_devices
                .iter()
                .filter(|o| o.kind == crate::model::OsDeviceKind::Rdma)
            {
                let port = od.ports.iter().min_by_key(|p| p.port);
                let mut net = BytesStart::new("net");
                net.push_attribute(("name", od.name.as_str()));
                if let Some(i) = cx.net_index.get(&od.name) {
                    net.push_attribute(("dev", i.to_string().as_str()));
                }
                if let Some(p) = port {
                    net.push_attribute(("port", p.port.to_string().as_str()));
                    if let Some(r) = p.rate_gbps {
                        net.push_attribute((
                            "speed",
                            format!("{}", (r * 1000.0).round() as u64).as_str(),
                        ));
                    }
                }
                w.empty(net)?;
            }
            w.end()?;
            w.end()?;
        }
        _ => w.empty(e)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_match_sysfs_cpumap() {
        assert_eq!(cpumask(&[0, 1, 2, 3], 2), "00000000,0000000f");
        assert_eq!(
            cpumask(&(16..32).collect::<Vec<_>>(), 2),
            "00000000,ffff0000"
        );
        assert_eq!(cpumask(&[32], 2), "00000001,00000000");
        assert_eq!(speed_str(16.0), "16.0 GT/s PCIe");
        assert_eq!(arch_of_vendor(Some("GenuineIntel")), Some("x86_64"));
        assert_eq!(arch_of_vendor(None), None);
        assert_eq!(
            arch_of_vendor(Some("CPU implementer 0x41 (arm64)")),
            Some("arm64")
        );
        assert_eq!(arch_of_vendor(Some("QEMU")), None);
    }
}
