//! The NCCL topology export, read the way NCCL reads an `NCCL_TOPO_FILE`.
//!
//! NCCL does not use an XML library: `ncclTopoGetXmlFromFile` runs a small hand-written parser
//! (`src/graph/xml.cc`) and `ncclTopoGetSystemFromXml` then reads attributes (`src/graph/topo.cc`).
//! [`NcclReader`] below follows that parser rule by rule; each rule names the function and the
//! lines it comes from in NVIDIA/nccl at commit `5067397c` (master after 2.30.7), and where
//! older releases (2.18–2.26) are stricter, the rule takes the stricter form and says so. It was
//! written from reading NCCL, no NCCL code is copied. Every export — the synthesized layouts,
//! skeletons, the VM pairing, NVLinks, and held-out real nodes (published NCCL dumps and hwloc
//! exports) — must pass it and `xmllint --noout` (well-formed XML), and the reader must accept
//! NCCL's own dumps and reject the inputs NCCL rejects, so that it can fail.

use peerpath::model::{DeviceKind, NvLink, Topology};
use peerpath::render::nccl_xml::{self, NcclXmlOptions};
use peerpath::sources::{self, LoadOptions};
use peerpath::synth::{self, WriteOptions, layouts};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `MAX_STR_LEN` (xml.h:20): names and values are read into 256-byte buffers.
const MAX_STR_LEN: usize = 255;
/// `MAX_ATTR_COUNT` (xml.h:21).
const MAX_ATTR_COUNT: usize = 16;
/// `MAX_SUBS` (xml.h:22) is 640 on master, 128 in 2.21–2.28 and 32 in 2.18–2.20
/// (v2.18.1-1 xml.h:18, where `xmlLoadSub` does not even check it): the strictest is used.
const MAX_SUBS: usize = 32;
/// `NCCL_TOPO_XML_MAX_NODES` (topo.h:211), the `maxNodes` of the topology file's `ncclXml`
/// (`xmlAlloc` in `ncclTopoGetSystem`, topo.cc:1773).
const MAX_NODES: usize = 256;

/// An element as NCCL stores it (`struct ncclXmlNode`, xml.h:29-39).
#[derive(Debug)]
struct Node {
    name: String,
    attrs: Vec<(String, String)>,
    subs: Vec<Node>,
}

impl Node {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    }
}

/// What `xmlGetNode` returns (`NODE_TYPE_*`, xml.h:24-27).
enum Tag {
    None,
    Open(Node),
    Single(Node),
    Close(String),
}

struct NcclReader<'a> {
    b: &'a [u8],
    pos: usize,
    /// `xml->maxIndex`: elements stored so far.
    stored: usize,
    /// Whose handler tables: NCCL's, or RCCL's fork of them.
    dialect: Dialect,
}

/// The reader of NCCL (NVIDIA/nccl) or of RCCL (ROCm/rccl, a fork of NCCL's `xml.cc` and
/// `topo.cc`, read at commit `0cbce2a7`): the same lexer and rules; an AMD build of RCCL
/// (`__HIP_PLATFORM_AMD__`) stores `xgmi` under `gpu` where NCCL stores `nvlink` and `c2c`
/// (rccl src/graph/xml.cc:345-351, `ncclTopoXmlLoadGpu`), and its limits are looser (xml.h:21
/// `MAX_SUBS` 512, topo.h:332 8192 nodes), so NCCL's stricter ones hold for both.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dialect {
    Nccl,
    Rccl,
}

type R<T> = Result<T, String>;

impl<'a> NcclReader<'a> {
    /// `xmlGetChar` (xml.cc:38-44): one byte, or "Unexpected EOF".
    fn get_char(&mut self) -> R<u8> {
        let c = *self.b.get(self.pos).ok_or("XML Parse : Unexpected EOF")?;
        self.pos += 1;
        Ok(c)
    }

    /// `xmlGetValue` (xml.cc:46-85). A value must be quoted (the unquoted form is compiled only
    /// `#if INT_OK`, which NCCL never defines). Master accepts `'` or `"` and closes on the same
    /// quote; 2.18–2.26 close on `"` only (v2.18.1-1 xml.cc:47-50), so only `"` is taken. The
    /// closing quote is stored too and index `MAX_STR_LEN - 1` is an error (xml.cc:75-79).
    /// Returns the value and the byte after the closing quote (`last`).
    fn get_value(&mut self) -> R<(String, u8)> {
        let c = self.get_char()?;
        if c != b'"' {
            return Err("XML Parse : Expected (double) quote.".into());
        }
        let mut v = Vec::new();
        loop {
            let c = self.get_char()?;
            if v.len() == MAX_STR_LEN - 1 {
                return Err(format!("Error : value too long (max {MAX_STR_LEN})"));
            }
            if c == b'"' {
                break;
            }
            v.push(c);
        }
        let last = self.get_char()?;
        Ok((String::from_utf8_lossy(&v).into_owned(), last))
    }

    /// `xmlGetToken` (xml.cc:87-112): bytes up to and including one of ` `, `>`, `/`, `\n`,
    /// `\r` (the delimiter is stored, so index `MAX_STR_LEN - 1` is an error); `=` starts a value,
    /// which is an error where no value is expected ("Unexpected value with name").
    fn get_token(&mut self, want_value: bool) -> R<(String, Option<String>, u8)> {
        let mut name = Vec::new();
        loop {
            let c = self.get_char()?;
            if c == b'=' {
                let n = String::from_utf8_lossy(&name).into_owned();
                if !want_value {
                    return Err(format!("XML Parse : Unexpected value with name {n}"));
                }
                let (v, last) = self.get_value()?;
                return Ok((n, Some(v), last));
            }
            if name.len() == MAX_STR_LEN - 1 {
                return Err(format!("Error : name too long (max {MAX_STR_LEN})"));
            }
            if matches!(c, b' ' | b'>' | b'/' | b'\n' | b'\r') {
                return Ok((String::from_utf8_lossy(&name).into_owned(), None, c));
            }
            name.push(c);
        }
    }

    /// `xmlSkipComment` (xml.cc:121-140): everything up to the first `-->`, seeded with what
    /// the name token already read after `!--`.
    fn skip_comment(&mut self, start: &[u8], next: u8) -> R<()> {
        let mut end = *b"...";
        let shift = |end: &mut [u8; 3], c: u8| {
            end[0] = end[1];
            end[1] = end[2];
            end[2] = c;
        };
        for &c in start {
            shift(&mut end, c);
        }
        shift(&mut end, next);
        while &end != b"-->" {
            let c = *self
                .b
                .get(self.pos)
                .ok_or("XML Parse error : unterminated comment")?;
            self.pos += 1;
            shift(&mut end, c);
        }
        Ok(())
    }

    /// `xmlGetNode` (xml.cc:142-195).
    fn get_node(&mut self) -> R<Tag> {
        // xml.cc:144-147: only ' ', '\n' and '\r' separate elements (no tab, no text).
        let mut c = b' ';
        while matches!(c, b' ' | b'\n' | b'\r') {
            match self.b.get(self.pos) {
                None => return Ok(Tag::None),
                Some(&x) => {
                    self.pos += 1;
                    c = x;
                }
            }
        }
        if c != b'<' {
            return Err(format!(
                "XML Parse error : expecting '<', got '{}'",
                c as char
            ));
        }
        // xml.cc:153: the element name.
        let (name, _, mut c) = self.get_token(false)?;
        // xml.cc:155-159: a comment, then the next node.
        if let Some(rest) = name.strip_prefix("!--") {
            self.skip_comment(rest.as_bytes(), c)?;
            return self.get_node();
        }
        // xml.cc:161-171: a closing tag must end right after its name.
        if name.is_empty() && c == b'/' {
            let (name, _, c) = self.get_token(false)?;
            if c != b'>' {
                return Err(format!(
                    "XML Parse error : unexpected trailing {} in closing tag {name}",
                    c as char
                ));
            }
            return Ok(Tag::Close(name));
        }
        // xml.cc:175-184: attributes while the last delimiter is a space. NCCL stores an empty
        // key for a doubled space and drops attributes past MAX_ATTR_COUNT with an INFO line;
        // both lose data silently, so both are errors here (our rule, stricter than NCCL).
        let mut attrs = Vec::new();
        while c == b' ' {
            let (k, v, last) = self.get_token(true)?;
            let Some(v) = v else {
                return Err(format!(
                    "<{name}>: attribute without a value ({k:?}) or a doubled space"
                ));
            };
            if k.is_empty() {
                return Err(format!("<{name}>: empty attribute name"));
            }
            attrs.push((k, v));
            c = last;
        }
        if attrs.len() > MAX_ATTR_COUNT {
            return Err(format!(
                "<{name}>: {} attributes, NCCL keeps {MAX_ATTR_COUNT}",
                attrs.len()
            ));
        }
        let node = Node {
            name,
            attrs,
            subs: Vec::new(),
        };
        // xml.cc:185-189: `/` then the rest of the token (must be empty, ending in `>`).
        if c == b'/' {
            let (rest, _, last) = self.get_token(false)?;
            if !rest.is_empty() {
                return Err(format!(
                    "XML Parse : expected >, got '{}'",
                    rest.as_bytes()[0] as char
                ));
            }
            c = last;
            if c != b'>' {
                return Err(format!("XML Parse : expected >, got '{}'", c as char));
            }
            return Ok(Tag::Single(node));
        }
        // xml.cc:190-193.
        if c != b'>' {
            return Err(format!("XML Parse : expected >, got '{}'", c as char));
        }
        Ok(Tag::Open(node))
    }

    /// The handler table of an element (xml.cc:344-405): which children NCCL stores.
    fn handlers(parent: Option<&str>, dialect: Dialect) -> &'static [&'static str] {
        match parent {
            Some("gpu") if dialect == Dialect::Rccl => &["xgmi"], // rccl xml.cc:347
            None => &["system"],                                  // xml.cc:419
            Some("system") => &["cpu"],                           // xml.cc:402
            Some("cpu") => &["pci", "nic"],                       // xml.cc:385
            Some("pci") => &["pci", "gpu", "nic", "pcilink"],     // xml.cc:376-379
            Some("gpu") => &["nvlink", "c2c"],                    // xml.cc:359
            Some("nic") => &["net"],                              // xml.cc:370
            _ => &[],
        }
    }

    /// `xmlLoadSub` (xml.cc:197-247): children of `head` until its closing tag.
    fn load_sub(&mut self, head: Option<&mut Node>, single: bool, depth: usize) -> R<Vec<Node>> {
        if single {
            return Ok(Vec::new());
        }
        if depth > 64 {
            return Err("nested too deep for this test".into());
        }
        let head_name = head.as_ref().map(|h| h.name.clone());
        let handlers = Self::handlers(head_name.as_deref(), self.dialect);
        let mut subs = Vec::new();
        loop {
            // xml.cc:201-204: checked before every read, closing tags and EOF included.
            if self.stored == MAX_NODES {
                return Err(format!(
                    "Error : XML parser is limited to {MAX_NODES} nodes"
                ));
            }
            let (mut node, single) = match self.get_node()? {
                // xml.cc:208-216.
                Tag::None => {
                    return match &head_name {
                        Some(h) => Err(format!("XML Parse : unterminated {h}")),
                        None => Ok(subs),
                    };
                }
                // xml.cc:217-223.
                Tag::Close(name) => match &head_name {
                    Some(h) if *h == name => return Ok(subs),
                    Some(h) => return Err(format!("XML Mismatch : {h} / {name}")),
                    None => return Err(format!("closing tag {name} at the top level")),
                },
                Tag::Open(n) => (n, false),
                Tag::Single(n) => (n, true),
            };
            if handlers.contains(&node.name.as_str()) {
                // xml.cc:225-238: stored and counted.
                if head_name.is_some() && subs.len() == MAX_SUBS {
                    return Err(format!(
                        "Error : XML parser is limited to {MAX_SUBS} subnodes"
                    ));
                }
                self.stored += 1;
                let kids = self.load_sub(Some(&mut node), single, depth + 1)?;
                node.subs = kids;
                subs.push(node);
            } else {
                // xml.cc:242-245: ignored, with its content.
                self.load_sub(Some(&mut node), single, depth + 1)?;
            }
        }
    }
}

/// Reads a file the way `ncclTopoGetXmlFromFile` (xml.cc:409-429) does, then checks what
/// `ncclTopoXmlLoadSystem` and `ncclTopoGetSystemFromXml` need. Returns the `system` element.
fn nccl_read(bytes: &[u8]) -> R<Node> {
    read_as(bytes, Dialect::Nccl)
}

/// [`nccl_read`] by NCCL's or RCCL's handler tables; RCCL's then checks every `xgmi`
/// ([`check_xgmi`]).
fn read_as(bytes: &[u8], dialect: Dialect) -> R<Node> {
    let mut r = NcclReader {
        b: bytes,
        pos: 0,
        stored: 0,
        dialect,
    };
    let mut top = r.load_sub(None, false, 0)?;
    // topo.cc:963-967: no system element is an error.
    if top.is_empty() {
        return Err("ncclTopoGetSystemFromXml: system node not found in XML".into());
    }
    let system = top.remove(0);
    // xml.cc:391-396: version must be NCCL_TOPO_XML_VERSION: 1 for NCCL, 2 for RCCL (rccl
    // src/graph/xml.h:47, xml.cc:381-384).
    let need = match dialect {
        Dialect::Nccl => 1,
        Dialect::Rccl => 2,
    };
    match system.attr("version").map(c_strtol) {
        Some(v) if v == need => {}
        Some(v) => return Err(format!("XML Topology has wrong version {v}, {need} needed")),
        None => return Err("Attribute version of node system not found".into()),
    }
    for cpu in &system.subs {
        check_cpu(cpu)?;
    }
    if dialect == Dialect::Rccl {
        check_xgmi(&system)?;
    }
    Ok(system)
}

/// RCCL's `busIdToInt64` (rccl src/misc/utils.cc:29-45): the hex digits of the string, `.` and
/// `:` skipped, up to the first other character (at most 16 digits), read base 16.
fn bus_id_to_int(s: &str) -> i64 {
    let hex: String = s
        .chars()
        .filter(|c| *c != '.' && *c != ':')
        .take_while(|c| c.is_ascii_hexdigit())
        .take(16)
        .collect();
    i64::from_str_radix(&hex, 16).unwrap_or(0)
}

/// The GPUs RCCL creates from a file: a `pci` element with a `gpu` child, by `busid`
/// (`ncclTopoAddPci`, rccl topo.cc:419-476), with that `gpu` element.
fn rccl_gpus<'n>(n: &'n Node, out: &mut Vec<(i64, &'n Node)>) {
    if n.name == "pci"
        && let (Some(b), Some(g)) = (n.attr("busid"), n.subs.iter().find(|s| s.name == "gpu"))
    {
        out.push((bus_id_to_int(b), g));
    }
    for s in &n.subs {
        rccl_gpus(s, out);
    }
}

/// `ncclTopoAddXGMI` (rccl topo.cc:557-605) and `ncclTopoAddGpu` (topo.cc:390-412) on every
/// GPU: a `gcn` given is not empty; each `xgmi` has an integer
/// `count` (`xmlGetAttrInt`: an error when absent), a `tclass` that `kvDictPciClass` maps to a
/// GPU (a prefix match, rccl xml.h:353-365 — any other class makes the link go to the CPU or an
/// NVSwitch node), and a `target` whose bus id is another GPU of the file (RCCL drops a link to
/// an id it does not find without a word, so that is an error here).
fn check_xgmi(system: &Node) -> R<()> {
    let mut gpus = Vec::new();
    rccl_gpus(system, &mut gpus);
    for (id, g) in &gpus {
        // rccl xml.cc:741-755: an absent `gcn` is filled for RCCL's own GPUs; one given is
        // converted (`906` or `gfx906`), so it must say something.
        if g.attr("gcn").is_some_and(|v| v.trim().is_empty()) {
            return Err("<gpu gcn=\"\">: no architecture".into());
        }
        for l in g.subs.iter().filter(|s| s.name == "xgmi") {
            let count = int_attr(l, "count")?;
            if count < 1 {
                return Err(format!("<xgmi count={count}>: no link"));
            }
            let class = l
                .attr("tclass")
                .ok_or("Attribute tclass of node xgmi not found")?;
            if !(class.starts_with("0x03") || class.starts_with("0x120000")) {
                return Err(format!("<xgmi tclass={class:?}>: not a GPU class"));
            }
            let target = l
                .attr("target")
                .ok_or("Attribute target of node xgmi not found")?;
            let t = bus_id_to_int(target);
            if t == *id || !gpus.iter().any(|(o, _)| *o == t) {
                return Err(format!(
                    "<xgmi target={target:?}>: not another GPU of the file (RCCL drops the link)"
                ));
            }
        }
    }
    Ok(())
}

/// `strtol(str, NULL, 0)` as `xmlGetAttrInt` (xml.h) uses it: decimal, `0x` hex or `0` octal.
fn c_strtol(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (16, h)
    } else if s.starts_with('0') && s.len() > 1 {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let v = i64::from_str_radix(&digits[..end], radix).unwrap_or(0);
    if neg { -v } else { v }
}

/// An integer attribute as NCCL needs it: present (`xmlGetAttrInt` → `xmlGetAttrStr` fails on
/// a missing one, "Attribute %s of node %s not found") and, our rule, fully numeric (NCCL's
/// `strtol` would silently read `12abc` as 12).
fn int_attr(n: &Node, k: &str) -> R<i64> {
    let v = n
        .attr(k)
        .ok_or_else(|| format!("Attribute {k} of node {} not found", n.name))?;
    let ok = regex::Regex::new(r"^(-?[0-9]+|0x[0-9a-fA-F]+)$").unwrap();
    if !ok.is_match(v) {
        return Err(format!("<{} {k}={v:?}>: not an integer", n.name));
    }
    Ok(c_strtol(v))
}

/// `ncclTopoAddCpu` (topo.cc:726-772).
fn check_cpu(cpu: &Node) -> R<()> {
    int_attr(cpu, "numaid")?;
    // topo.cc:734-737 → ncclStrToCpuset: comma-separated 32-bit hex words (sysfs cpumap form).
    if let Some(a) = cpu.attr("affinity") {
        let re = regex::Regex::new(r"^[0-9a-fA-F]{1,8}(,[0-9a-fA-F]{1,8})*$").unwrap();
        if !re.is_match(a) {
            return Err(format!("<cpu affinity={a:?}>: not a cpumap"));
        }
    }
    // topo.cc:739-740 (kvDictCpuArch, topo.cc:703-705): required; an unknown string falls back
    // to 0 silently (xml.h kvConvertToInt), so only the dictionary's strings are taken here.
    let arch = cpu
        .attr("arch")
        .ok_or("Attribute arch of node cpu not found")?;
    if !["x86_64", "arm64", "ppc64"].contains(&arch) {
        return Err(format!("<cpu arch={arch:?}>: not in kvDictCpuArch"));
    }
    if arch == "x86_64" {
        // topo.cc:742-747: x86 needs a vendor; Intel (and Zhaoxin) need familyid and modelid.
        let vendor = cpu
            .attr("vendor")
            .ok_or("Attribute vendor of node cpu not found")?;
        if vendor == "GenuineIntel" || vendor == "CentaurHauls" {
            int_attr(cpu, "familyid")?;
            int_attr(cpu, "modelid")?;
        }
    }
    for s in &cpu.subs {
        match s.name.as_str() {
            "pci" => check_pci(s)?,
            "nic" => check_nic(s)?,
            _ => {}
        }
    }
    Ok(())
}

/// `kvDictPciGen` (topo.cc:545-556): the link speeds NCCL knows (anything else falls back to
/// 8 GT/s silently, so it is refused here).
const PCI_GEN: [&str; 11] = [
    "2.5 GT/s",
    "5 GT/s",
    "8 GT/s",
    "16 GT/s",
    "32 GT/s",
    "2.5 GT/s PCIe",
    "5.0 GT/s PCIe",
    "8.0 GT/s PCIe",
    "16.0 GT/s PCIe",
    "32.0 GT/s PCIe",
    "64.0 GT/s PCIe",
];

/// `ncclTopoAddPci` (topo.cc:637-700).
fn check_pci(p: &Node) -> R<()> {
    // topo.cc:642-643: class is required (kvDictPciClass falls back to PCI).
    let class = p
        .attr("class")
        .ok_or("Attribute class of node pci not found")?;
    if !regex::Regex::new(r"^0x[0-9a-f]{6}$")
        .unwrap()
        .is_match(class)
    {
        return Err(format!("<pci class={class:?}>: not 0xCCSSPP"));
    }
    // topo.cc:646-647 → busIdToInt64 (misc/utils.cc:33-48): hex digits, `:` and `.` skipped;
    // our rule: exactly the sysfs form dddd:bb:dd.f so nothing is skipped by accident.
    let busid = p
        .attr("busid")
        .ok_or("Attribute busid of node pci not found")?;
    if !regex::Regex::new(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
        .unwrap()
        .is_match(busid)
    {
        return Err(format!("<pci busid={busid:?}>: not dddd:bb:dd.f"));
    }
    // topo.cc:652-653: link_width (int) and link_speed are required. NCCL fills both from sysfs
    // for devices it finds on the machine, never for a bus id it cannot see (ffff:…), so the
    // file must carry them; when present they must be what NCCL's dictionary knows.
    let synthetic = busid.starts_with("ffff:");
    match (p.attr("link_width"), p.attr("link_speed")) {
        (Some(_), Some(s)) => {
            int_attr(p, "link_width")?;
            if !PCI_GEN.contains(&s) {
                return Err(format!(
                    "<pci busid={busid} link_speed={s:?}>: not in kvDictPciGen"
                ));
            }
        }
        _ if synthetic => {
            return Err(format!(
                "<pci busid={busid}>: a bus id NCCL cannot find needs link_width and link_speed"
            ));
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err(format!(
                "<pci busid={busid}>: link_width and link_speed come together"
            ));
        }
        (None, None) => {}
    }
    for s in &p.subs {
        match s.name.as_str() {
            "pci" => check_pci(s)?,
            "nic" => check_nic(s)?,
            "gpu" => check_gpu(s)?,
            _ => {}
        }
    }
    Ok(())
}

/// `ncclTopoAddNic` / `ncclTopoAddNet` (topo.cc:401-509): a `net` without `dev` is skipped
/// (topo.cc:494-497), so every `net` here must have one; speed and port are integers.
fn check_nic(n: &Node) -> R<()> {
    for net in n.subs.iter().filter(|s| s.name == "net") {
        int_attr(net, "dev")?;
        for k in ["speed", "port", "gdr", "maxconn", "coll"] {
            if net.attr(k).is_some() {
                int_attr(net, k)?;
            }
        }
    }
    Ok(())
}

/// `ncclTopoAddNvLinks` (topo.cc:811-871): each `nvlink` has `count`, `tclass` and a `target`.
fn check_gpu(g: &Node) -> R<()> {
    if g.attr("dev").is_some() {
        int_attr(g, "dev")?;
    }
    for l in g.subs.iter().filter(|s| s.name == "nvlink") {
        int_attr(l, "count")?;
        l.attr("tclass")
            .ok_or("Attribute tclass of node nvlink not found")?;
        l.attr("target")
            .ok_or("Attribute target of node nvlink not found")?;
    }
    Ok(())
}

fn count(n: &Node) -> usize {
    1 + n.subs.iter().map(count).sum::<usize>()
}

fn find<'n>(n: &'n Node, name: &str, out: &mut Vec<&'n Node>) {
    if n.name == name {
        out.push(n);
    }
    for s in &n.subs {
        find(s, name, out);
    }
}

/// `xmllint --noout`: well-formed XML 1.0 (a missing xmllint fails under CI, where `.ci/run`
/// installs libxml2-utils, and is reported as skipped elsewhere).
fn xmllint(label: &str, xml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("topo.xml");
    std::fs::write(&f, xml).unwrap();
    match Command::new("xmllint").arg("--noout").arg(&f).output() {
        Ok(o) => assert!(
            o.status.success() && o.stderr.is_empty(),
            "{label}: xmllint: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "xmllint missing under CI: .ci/run installs libxml2-utils"
            );
            eprintln!(
                "SKIPPED xmllint check: xmllint not installed (apt-get install libxml2-utils)"
            );
        }
    }
}

/// Both consumers; returns NCCL's view.
fn consume(label: &str, xml: &str) -> Node {
    xmllint(label, xml);
    let sys = nccl_read(xml.as_bytes()).unwrap_or_else(|e| panic!("{label}: NCCL: {e}\n{xml}"));
    assert!(count(&sys) < MAX_NODES, "{label}");
    sys
}

fn load_spec(spec: &synth::Spec) -> (tempfile::TempDir, Topology) {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("fixture.tar.gz");
    synth::write_tarball(spec, &tar, &WriteOptions::default()).unwrap();
    let t = sources::load(Some(&tar), &LoadOptions::default()).unwrap();
    (dir, t)
}

fn export(t: &Topology, o: &NcclXmlOptions) -> String {
    nccl_xml::render(t, o).unwrap()
}

#[test]
fn synthesized_layouts_pass_nccls_reader() {
    for spec in [
        layouts::hgx_h100(),
        layouts::dgx_a100(),
        layouts::misplaced_nic(),
        layouts::vm_flat(),
    ] {
        let (_d, t) = load_spec(&spec);
        let sys = consume(spec.name.as_str(), &export(&t, &NcclXmlOptions::default()));
        // NCCL's view has what the topology has: one net per RDMA device, one pci per GPU.
        let mut nets = Vec::new();
        find(&sys, "net", &mut nets);
        let rdma: usize = t
            .of_kind(DeviceKind::Nic)
            .map(|d| d.rdma_names().count())
            .sum();
        assert_eq!(nets.len(), rdma, "{}", spec.name);
        let mut pcis = Vec::new();
        find(&sys, "pci", &mut pcis);
        for g in t.of_kind(DeviceKind::Gpu) {
            let b = g.bdf.to_string();
            assert!(
                pcis.iter().any(|p| p.attr("busid") == Some(b.as_str())),
                "{}: GPU {b} missing",
                spec.name
            );
        }
        let sk = export(
            &t,
            &NcclXmlOptions {
                skeleton: true,
                ..Default::default()
            },
        );
        let sys = consume(&format!("{} skeleton", spec.name), &sk);
        let mut nics = Vec::new();
        find(&sys, "nic", &mut nics);
        assert!(nics.is_empty());
    }
}

#[test]
fn vm_pairing_and_nvlinks_pass_nccls_reader() {
    let (_d, t) = load_spec(&layouts::vm_flat());
    let gpu = t.of_kind(DeviceKind::Gpu).next().unwrap().bdf;
    let nic = t
        .of_kind(DeviceKind::Nic)
        .find(|d| d.rdma_names().next().is_some())
        .unwrap()
        .bdf;
    let xml = export(
        &t,
        &NcclXmlOptions {
            pairs: vec![(gpu, nic)],
            ..Default::default()
        },
    );
    let sys = consume("vm-flat --pair", &xml);
    let mut pcis = Vec::new();
    find(&sys, "pci", &mut pcis);
    let syn = pcis
        .iter()
        .find(|p| p.attr("busid") == Some("ffff:ff:01.0"))
        .expect("the synthetic switch");
    assert_eq!(syn.subs.len(), 2, "GPU and NIC under it");

    let (_d2, mut h) = load_spec(&layouts::hgx_h100());
    let g: Vec<_> = h.of_kind(DeviceKind::Gpu).map(|d| d.bdf).collect();
    h.nvlink_visible = true;
    for (i, &a) in g.iter().enumerate() {
        h.nvlinks.push(NvLink {
            a,
            b: None,
            count: 18,
            version: Some(4),
        });
        if i > 0 {
            h.nvlinks.push(NvLink {
                a: g[0],
                b: Some(a),
                count: 2,
                version: Some(4),
            });
        }
    }
    let sys = consume(
        "hgx-h100 with NVLinks",
        &export(&h, &NcclXmlOptions::default()),
    );
    let mut links = Vec::new();
    find(&sys, "nvlink", &mut links);
    assert_eq!(
        links.len(),
        8 + 2 * 7,
        "one fabric link per GPU; GPU0–GPUk under both GPUs"
    );
}

/// Published files of real nodes, read by peerpath and exported again (held out: nothing in
/// the exporter was tuned on them). hwloc exports carry no CPU vendor, so `--arch` is given as
/// a user would.
#[test]
fn held_out_nodes_pass_nccls_reader() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut inputs: Vec<(PathBuf, Option<&str>)> = vec![
        (root.join("real/h200-vm.tar.gz"), None),
        (root.join("real/h200-vm.nccl-2.28.9-topo-dump.xml"), None),
        (root.join("nccl/azure-ndv4-a100.nccl-topo.xml"), None),
        (
            root.join("nccl/hgx-a100-icelake-bcm-5bond.nccl-topo-dump.xml"),
            None,
        ),
        (root.join("hwloc/nvidiaDGX2.xml"), Some("x86_64")),
        (root.join("hwloc/power8gpudistances.xml"), Some("ppc64")),
    ];
    for f in std::fs::read_dir(root.join("realworld")).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|e| e == "xml") {
            // Lassen is a POWER9 node; the others are x86 or say their arch themselves.
            let lassen = p.to_string_lossy().contains("lassen");
            inputs.push((p, Some(if lassen { "ppc64" } else { "x86_64" })));
        }
    }
    let mut gpus_seen = 0;
    for (p, arch) in &inputs {
        let label = p.file_name().unwrap().to_string_lossy().into_owned();
        let t = sources::load(Some(p), &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{label}: {e:#}"));
        let o = NcclXmlOptions {
            arch: if t.machine.cpu_vendor.is_some() {
                None
            } else {
                arch.map(str::to_string)
            },
            ..Default::default()
        };
        let sys = consume(&label, &export(&t, &o));
        let mut pcis = Vec::new();
        find(&sys, "pci", &mut pcis);
        for g in t.of_kind(DeviceKind::Gpu) {
            let b = g.bdf.to_string();
            assert!(
                pcis.iter().any(|p| p.attr("busid") == Some(b.as_str())),
                "{label}: GPU {b} missing"
            );
            gpus_seen += 1;
        }
    }
    assert!(
        gpus_seen >= 30,
        "the held-out nodes hold GPUs ({gpus_seen})"
    );
}

/// The reader takes what NCCL itself writes (`ncclTopoDumpXmlRec`, xml.cc:275-293): the
/// published dumps are read as they are.
#[test]
fn reader_accepts_nccls_own_dumps() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for f in [
        "real/h200-vm.nccl-2.28.9-topo-dump.xml",
        "nccl/hgx-a100-icelake-bcm-5bond.nccl-topo-dump.xml",
        "nccl/azure-ndv4-a100.nccl-topo.xml",
        "realworld/oci-bm-gpu-h100-8.nccl-topo.xml",
        "realworld/nccl-issue-2397-2xa100pcie-cx6dx.nccl-topo.xml",
    ] {
        let b = std::fs::read(root.join(f)).unwrap();
        let sys = nccl_read(&b).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(count(&sys) >= 5, "{f}");
    }
}

/// The real H200 VM (fixtures/real/, issue 29): the export of its capture carries, for every
/// element NCCL 2.28.9 wrote in its own dump of the same machine, NCCL's values — the `cpu`'s
/// `numaid` is -1 (the GPU's `numa_node` reads -1) with no `affinity` (NCCL's
/// `node-1/cpumap` does not exist, so NCCL pins nothing), and the GPU's `link_width` is 0 (it
/// sits on the root bus: NCCL's `../max_link_width` is unreadable, `min(16, 0)`) — so NCCL
/// takes the same decisions from the file as from its own detection (docs/exports.md).
#[test]
fn real_h200_export_carries_what_nccls_own_dump_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real");
    let t = sources::load(Some(&root.join("h200-vm.tar.gz")), &LoadOptions::default()).unwrap();
    let ours = consume("h200-vm", &export(&t, &NcclXmlOptions::default()));
    let dump = std::fs::read(root.join("h200-vm.nccl-2.28.9-topo-dump.xml")).unwrap();
    let theirs = nccl_read(&dump).unwrap();
    let (mut oc, mut tc) = (Vec::new(), Vec::new());
    find(&ours, "cpu", &mut oc);
    find(&theirs, "cpu", &mut tc);
    assert_eq!((oc.len(), tc.len()), (1, 1));
    for k in [
        "numaid", "affinity", "arch", "vendor", "familyid", "modelid",
    ] {
        assert_eq!(oc[0].attr(k), tc[0].attr(k), "cpu {k}");
    }
    let (mut op, mut tp) = (Vec::new(), Vec::new());
    find(&ours, "pci", &mut op);
    find(&theirs, "pci", &mut tp);
    assert!(!tp.is_empty());
    for p in tp {
        let busid = p.attr("busid").unwrap();
        let o = op
            .iter()
            .find(|o| o.attr("busid") == Some(busid))
            .unwrap_or_else(|| panic!("{busid} missing from the export"));
        for k in [
            "class",
            "vendor",
            "device",
            "subsystem_vendor",
            "subsystem_device",
            "link_speed",
            "link_width",
        ] {
            assert_eq!(o.attr(k), p.attr(k), "{busid} {k}");
        }
    }
}

/// The reader rejects what NCCL rejects (so that it can fail), with NCCL's words.
#[test]
fn reader_rejects_what_nccl_rejects() {
    let ok = "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n    <pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"/>\n  </cpu>\n</system>\n";
    nccl_read(ok.as_bytes()).unwrap();
    let bad = |s: &str| nccl_read(s.as_bytes()).unwrap_err();
    // The issue's failure: the XML declaration.
    assert_eq!(
        bad(&format!("<?xml version=\"1.0\"?>\n{ok}")),
        "XML Parse : expected >, got '?'"
    );
    assert!(bad(&ok.replace("  <cpu", "\t<cpu")).contains("expecting '<', got '\t'"));
    assert!(bad(&ok.replace("version=\"1\"", "version='1'")).contains("quote"));
    assert!(bad(&ok.replace("\"0\" arch", "\"0\"  arch")).contains("doubled space"));
    assert!(bad(&ok.replace("</cpu>", "</pci>")).contains("XML Mismatch : cpu / pci"));
    assert!(bad(&ok.replace("</system>\n", "")).contains("unterminated system"));
    assert!(bad(&ok.replace("version=\"1\"", "version=\"2\"")).contains("wrong version 2"));
    assert!(bad(&ok.replace("x86_64", "aarch64")).contains("kvDictCpuArch"));
    assert!(bad(&ok.replace("16.0 GT/s", "20.0 GT/s")).contains("kvDictPciGen"));
    let long = "a".repeat(254);
    assert!(bad(&ok.replace("AuthenticAMD", &long)).contains("too long"));
    assert!(bad(&ok.replace("<system", "<!--a=b -->\n<system")).contains("Unexpected value"));
    nccl_read(ok.replace("<system", "<!-- a=b -->\n<system").as_bytes()).unwrap();
    // A comment with `--` is fine for NCCL but not for XML: xmllint is the other half.
    nccl_read(
        ok.replace("<system", "<!-- use --skeleton -->\n<system")
            .as_bytes(),
    )
    .unwrap();
    // 33 children of one element.
    let kids: String = (0..33)
        .map(|i| format!("    <pci busid=\"0000:{i:02x}:00.0\" class=\"0x030200\"/>\n"))
        .collect();
    let many = format!(
        "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"ppc64\">\n{kids}  </cpu>\n</system>\n"
    );
    assert!(bad(&many).contains("limited to 32 subnodes"));
    // 256 stored elements (system, cpu, 9 nic, 245 net; no element over 32 children): even
    // the closing tags cannot be read any more.
    let doc = |nets: usize| {
        let mut s = String::from("<system version=\"1\"><cpu numaid=\"0\" arch=\"ppc64\">");
        for chunk in (0..nets).collect::<Vec<_>>().chunks(28) {
            s.push_str("<nic>");
            for i in chunk {
                s.push_str(&format!("<net dev=\"{i}\"/>"));
            }
            s.push_str("</nic>");
        }
        s + "</cpu></system>"
    };
    assert!(bad(&doc(245)).contains("limited to 256 nodes"));
    let fits = doc(244);
    nccl_read(fits.as_bytes()).unwrap();
}

/// The exporter never writes what the reader refuses: a path with `--` in the comment, a value
/// NCCL cannot hold, a node beyond NCCL's limits.
#[test]
fn exporter_refuses_or_sanitises_what_nccl_cannot_read() {
    let (_d, mut t) = load_spec(&layouts::hgx_h100());
    t.source.path = "/tmp/a--b---c-".into();
    let xml = export(&t, &NcclXmlOptions::default());
    consume("path with dashes", &xml);
    assert!(!xml.contains("--b"));
    t.machine.cpu_vendor = Some("Genuine\"Intel".into());
    let x86 = NcclXmlOptions {
        arch: Some("x86_64".into()),
        ..Default::default()
    };
    let e = nccl_xml::render(&t, &x86).unwrap_err();
    assert!(format!("{e:#}").contains("printable ASCII"), "{e:#}");
    // A scaling tree with hundreds of GPUs and NICs is more than NCCL reads.
    let (_d2, big) = load_spec(&layouts::by_name("scaling-1024").unwrap());
    let n = big.of_kind(DeviceKind::Gpu).count() + big.of_kind(DeviceKind::Nic).count();
    assert!(
        n > nccl_xml::MAX_ELEMENTS,
        "the tree is over the limit ({n} endpoints)"
    );
    let o = NcclXmlOptions {
        arch: Some("x86_64".into()),
        ..Default::default()
    };
    let m = format!("{:#}", nccl_xml::render(&big, &o).unwrap_err());
    assert!(
        m.contains("255 XML elements") || m.contains("32 children"),
        "{m}"
    );
}

/// Every `xgmi` link RCCL reads from a file: (GPU bus id, target bus id, count).
fn xgmi_links(system: &Node) -> std::collections::BTreeSet<(i64, i64, i64)> {
    let mut gpus = Vec::new();
    rccl_gpus(system, &mut gpus);
    gpus.iter()
        .flat_map(|(id, g)| {
            g.subs.iter().filter(|s| s.name == "xgmi").map(move |l| {
                (
                    *id,
                    bus_id_to_int(l.attr("target").unwrap_or_default()),
                    int_attr(l, "count").unwrap_or(0),
                )
            })
        })
        .collect()
}

/// RCCL's `<xgmi>` elements in our topology export, read as an AMD build of RCCL reads them:
/// `<system version="2">` (RCCL's `NCCL_TOPO_XML_VERSION`; our export wrote NCCL's 1, which
/// RCCL refuses, until this test read it), every direct xGMI link of the node, both ways, with
/// its count, and nothing else.
#[test]
fn amd_exports_pass_rccls_reader_with_every_xgmi_link() {
    for spec in [layouts::mi300x_8gpu(), layouts::mi300a_4apu()] {
        let (_d, t) = load_spec(&spec);
        let xml = export(&t, &NcclXmlOptions::default());
        xmllint(&spec.name, &xml);
        let sys = read_as(xml.as_bytes(), Dialect::Rccl)
            .unwrap_or_else(|e| panic!("{}: RCCL: {e}\n{xml}", spec.name));
        let want: std::collections::BTreeSet<(i64, i64, i64)> = t
            .xgmi
            .iter()
            .filter(|l| l.direct != Some(false))
            .flat_map(|l| {
                let (a, b) = (
                    bus_id_to_int(&l.a.to_string()),
                    bus_id_to_int(&l.b.to_string()),
                );
                let c = i64::from(l.count.unwrap_or(1));
                [(a, b, c), (b, a, c)]
            })
            .collect();
        assert!(
            !want.is_empty(),
            "{}: the layout has an xGMI hive",
            spec.name
        );
        assert_eq!(xgmi_links(&sys), want, "{}", spec.name);
        // The file is RCCL's: NCCL (version 1) refuses it by its version, as it would.
        let e = nccl_read(xml.as_bytes()).unwrap_err();
        assert!(e.contains("wrong version 2, 1 needed"), "{e}");
    }
}

/// RCCL's own topology files (ROCm/rccl `tools/topo_expl/models`, fixtures/amd/) pass the RCCL
/// reader; read by peerpath and exported again, RCCL reads the same xGMI links from our file
/// as from its own. And the reader can fail: a link without `count`, to a NIC, or of a class
/// that is not a GPU is refused.
#[test]
fn rccls_own_files_round_trip_their_xgmi_links_and_broken_links_are_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/amd");
    let mut with_links = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("rccl-topo-") && name.ends_with(".xml")) {
            continue;
        }
        let own = std::fs::read(&p).unwrap();
        let sys = read_as(&own, Dialect::Rccl).unwrap_or_else(|e| panic!("{name}: {e}"));
        let theirs = xgmi_links(&sys);
        let t = sources::load(Some(&p), &LoadOptions::default()).unwrap();
        let xml = export(&t, &NcclXmlOptions::default());
        let ours = read_as(xml.as_bytes(), Dialect::Rccl)
            .unwrap_or_else(|e| panic!("{name} exported: {e}\n{xml}"));
        assert_eq!(xgmi_links(&ours), theirs, "{name}");
        with_links += usize::from(!theirs.is_empty());
    }
    assert!(
        with_links >= 8,
        "RCCL files with xGMI links read: {with_links}"
    );
    let (_d, t) = load_spec(&layouts::mi300x_8gpu());
    let xml = export(&t, &NcclXmlOptions::default());
    let first = r#"<xgmi target="0000:25:00.0" count="1" tclass="0x120000"/>"#;
    assert!(xml.contains(first), "{xml}");
    for (broken, why) in [
        (
            r#"<xgmi target="0000:25:00.0" tclass="0x120000"/>"#,
            "Attribute count of node xgmi not found",
        ),
        (
            r#"<xgmi target="0000:06:00.0" count="1" tclass="0x120000"/>"#,
            "not another GPU",
        ),
        (
            r#"<xgmi target="0000:25:00.0" count="1" tclass="0x068000"/>"#,
            "not a GPU class",
        ),
    ] {
        let e = read_as(xml.replacen(first, broken, 1).as_bytes(), Dialect::Rccl).unwrap_err();
        assert!(e.contains(why), "{broken}: {e}");
    }
}
