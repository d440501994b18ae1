//! `lspci` text as operators paste it, decoded line by line: device blocks of `lspci`,
//! `-v`/`-vv`/`-vvv`/`-vvvv` (with or without `-nn`, `-D`, `-k`, as root or not), hex dumps of
//! `-x`/`-xxx`/`-xxxx`, and `lspci -t`/`-tv` trees (`-nn`, `-D`), alone or together in one file
//! with other text around them (Markdown fences, shell prompts, `nvidia-bug-report.log`
//! sections). Text in, blocks and tree nodes out; `sources::lspci` turns them into a topology.
//!
//! The formats follow pciutils' `lspci.c`, `ls-caps.c`, `ls-ecaps.c` and `ls-tree.c`:
//! a block starts at a column-0 header `[DDDD:]BB:DD.F CLASS[ [CCCC]]: DESCRIPTION[ [VVVV:DDDD]]
//! [(rev RR)][ (prog-if PP [...])]`; its detail lines are indented (a tab or spaces); a
//! capability's registers are `Key:\tvalue` lines with continuation lines below them; hex dump
//! lines are `OO: xx xx … xx` (16 bytes) at column 0. A tree draws each bus's devices with
//! `+-`/`\-` branches at one column, a single child after `--`, a bridge as `DD.F-[SS-UU]`.
//! Text cut mid-token (issue excerpts) leaves the cut register unknown; it never guesses.

use std::collections::HashMap;

/// A PCI address as the text gives it: the domain only where printed (`-D`, or a non-zero
/// domain, as on Hyper-V).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Addr {
    /// The domain, when printed.
    pub domain: Option<u32>,
    /// Bus.
    pub bus: u8,
    /// Device.
    pub device: u8,
    /// Function.
    pub function: u8,
}

/// One register line of a capability (or of the header part) with its continuation lines,
/// joined by spaces: `("LnkSta", "Speed 2.5GT/s (downgraded), Width x16 TrErr- …")`.
#[derive(Debug, Clone, PartialEq)]
pub struct Register {
    /// The key before the colon.
    pub key: String,
    /// The value and its continuation lines.
    pub value: String,
}

/// A `Capabilities: [OFF] NAME` entry and its registers.
#[derive(Debug, Clone, PartialEq)]
pub struct Capability {
    /// The offset in config space (`[100 v1]` → 0x100).
    pub offset: u16,
    /// The name as printed (`Express (v2) Root Port (Slot+), MSI 00`, `Access Control Services`).
    pub name: String,
    /// Its register lines.
    pub registers: Vec<Register>,
    /// 1-based line of the `Capabilities:` line.
    pub line: usize,
}

impl Capability {
    /// The first register named `key`.
    pub fn register(&self, key: &str) -> Option<&str> {
        self.registers
            .iter()
            .find(|r| r.key == key)
            .map(|r| r.value.as_str())
    }
}

/// One device block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    /// 1-based line of the header.
    pub line: usize,
    /// The address.
    pub addr: Option<Addr>,
    /// Class name as printed (`3D controller`).
    pub class_name: String,
    /// Class and subclass from `-nn` (`[0302]`).
    pub class_code: Option<u16>,
    /// Programming interface (`(prog-if 00 [...])`).
    pub prog_if: Option<u8>,
    /// Vendor and device from `-nn` (`[10de:20b0]`).
    pub ids: Option<(u16, u16)>,
    /// The description without IDs, revision and prog-if (`NVIDIA Corporation GA100 [A100 SXM4 40GB]`).
    pub description: String,
    /// Revision.
    pub revision: Option<u8>,
    /// Registers printed above the first capability (`Control`, `Bus`, `NUMA node`, …).
    pub header: Vec<Register>,
    /// Capabilities in text order.
    pub caps: Vec<Capability>,
    /// `Capabilities: <access denied>`: lspci ran without root.
    pub access_denied: bool,
    /// A register line below a capability was printed (`-vv` or more).
    pub detailed: bool,
    /// A line of only dots (the poster's elision) was inside the block.
    pub elided: bool,
    /// Hex dump bytes from offset 0, in order (`-x`: 64, `-xxx`: 256, `-xxxx`: 4096); empty
    /// when none or when the dump's lines are not contiguous from 0.
    pub hex: Vec<u8>,
    /// `Kernel driver in use:`.
    pub driver: Option<String>,
    /// Lines that ended the block's text mid-register (the text was cut).
    pub truncated: bool,
    /// The text ends inside this block with no final newline, so its last line is cut
    /// mid-word: that line, a register, is not read; a header line is kept with its
    /// description said as cut. The line's number.
    pub cut_at: Option<usize>,
    /// The block is the output of `lspci -vvv -s BDF | grep …` (`line` is the command's): only
    /// the register lines the grep kept, in `header`, attributed to that address.
    pub fragment: bool,
}

impl Block {
    /// The first header register named `key`.
    pub fn header(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .find(|r| r.key == key)
            .map(|r| r.value.as_str())
    }
    /// A number `lspci -v` prints among the `Flags:` line's items (`Flags: bus master, fast
    /// devsel, latency 0, IRQ 107, NUMA node 0, IOMMU group 1`: pciutils' `show_verbose` adds
    /// `, NUMA node %d` and `, IOMMU group %s` there at `-v`, and prints them as lines of their
    /// own, `NUMA node: 0`, from `-vv`), or from the line of its own: `name` is `NUMA node` or
    /// `IOMMU group`. An item cut short (the text ends mid-number) is not read.
    pub fn number(&self, name: &str) -> Option<u32> {
        if let Some(v) = self.header(name) {
            return v.parse().ok();
        }
        let flags = self.header("Flags")?;
        flags
            .split(',')
            .filter_map(|item| item.trim().strip_prefix(name))
            // Lines below `Flags` that are not registers (`Memory at …`) are joined to it.
            .find_map(|v| v.strip_prefix(' ')?.split_whitespace().next()?.parse().ok())
    }
    /// The first capability whose name starts with `prefix`.
    pub fn cap(&self, prefix: &str) -> Option<&Capability> {
        self.caps.iter().find(|c| c.name.starts_with(prefix))
    }
}

/// One device of an `lspci -t` tree.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    /// Its address (domain always known from the tree's `[DDDD:BB]` root).
    pub domain: u32,
    /// Bus.
    pub bus: u8,
    /// Device.
    pub device: u8,
    /// Function.
    pub function: u8,
    /// The bridge above it in the tree (`None`: directly on the root bus).
    pub parent: Option<(u32, u8, u8, u8)>,
    /// A bridge's secondary and subordinate bus.
    pub buses: Option<(u8, u8)>,
    /// The name `-tv` printed (empty for a bridge or plain `-t`).
    pub name: String,
    /// 1-based line.
    pub line: usize,
}

/// Everything read from one text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    /// Device blocks, in text order (a device printed twice appears twice).
    pub blocks: Vec<Block>,
    /// Tree nodes whose address the tree resolves.
    pub tree: Vec<TreeNode>,
    /// Tree entries whose bus the text does not give (a fragment without its root).
    pub tree_unresolved: usize,
    /// `ACSCtl:` lines outside any device block (`lspci -vvv | grep ACSCtl`), with their line.
    pub loose_acsctl: Vec<(usize, String)>,
    /// The text's last line when it has no final newline (an excerpt cut mid-line): its number.
    /// Such a line is never read as a value.
    pub cut_line: Option<usize>,
}

impl Doc {
    /// Whether the text holds any `lspci` output peerpath reads.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.tree.is_empty() && self.tree_unresolved == 0
    }
}

fn hex_u8(s: &str) -> Option<u8> {
    (s.len() == 2).then(|| u8::from_str_radix(s, 16).ok())?
}

fn all_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// `[DDDD:]BB:DD.F` at the start of `s`, and the rest after it.
pub fn parse_addr(s: &str) -> Option<(Addr, &str)> {
    let end = s.find(|c: char| c.is_whitespace()).unwrap_or(s.len());
    let tok = &s[..end];
    let (head, func) = tok.rsplit_once('.')?;
    let function = func
        .parse::<u8>()
        .ok()
        .filter(|f| *f < 8 && func.len() == 1)?;
    let mut parts = head.split(':').collect::<Vec<_>>();
    let device = hex_u8(parts.pop()?)?;
    let bus = hex_u8(parts.pop()?)?;
    let domain = match parts.as_slice() {
        [] => None,
        [d] if d.len() >= 4 && d.len() <= 8 && all_hex(d) => u32::from_str_radix(d, 16).ok(),
        _ => return None,
    };
    if device > 31 {
        return None;
    }
    Some((
        Addr {
            domain,
            bus,
            device,
            function,
        },
        &s[end..],
    ))
}

/// Parses a block header line (at column 0). `None` when the line is not one.
fn header_line(line: &str, no: usize) -> Option<Block> {
    let (addr, rest) = parse_addr(line)?;
    let rest = rest.strip_prefix(' ')?;
    let (class_part, mut desc) = rest.split_once(": ")?;
    let mut b = Block {
        line: no,
        addr: Some(addr),
        ..Block::default()
    };
    let class_part = class_part.trim();
    b.class_name = class_part.to_string();
    if let Some((name, code)) = class_part.rsplit_once(" [")
        && let Some(code) = code.strip_suffix(']')
        && code.len() == 4
        && all_hex(code)
    {
        b.class_code = u16::from_str_radix(code, 16).ok();
        b.class_name = name.to_string();
    }
    if b.class_name.is_empty() || b.class_name.len() > 64 {
        return None;
    }
    desc = desc.trim_end();
    if let Some(i) = desc.rfind(" (prog-if ") {
        let p = &desc[i + 10..];
        b.prog_if = p.get(..2).and_then(hex_u8);
        desc = &desc[..i];
    }
    if let Some(i) = desc.rfind(" (rev ")
        && desc.ends_with(')')
    {
        b.revision = desc.get(i + 6..desc.len() - 1).and_then(hex_u8);
        desc = &desc[..i];
    }
    if let Some(i) = desc.rfind(" [")
        && desc.ends_with(']')
    {
        let ids = &desc[i + 2..desc.len() - 1];
        if let Some((v, d)) = ids.split_once(':')
            && v.len() == 4
            && d.len() == 4
            && all_hex(v)
            && all_hex(d)
        {
            b.ids = Some((
                u16::from_str_radix(v, 16).ok()?,
                u16::from_str_radix(d, 16).ok()?,
            ));
            desc = &desc[..i];
        }
    }
    b.description = desc.to_string();
    Some(b)
}

/// A hex dump line `OO: xx xx … xx` (2 or 3 offset digits, 16 bytes): (offset, bytes).
fn hex_line(line: &str) -> Option<(usize, [u8; 16])> {
    let (off, rest) = line.split_once(": ")?;
    if !(off.len() == 2 || off.len() == 3) || !all_hex(off) {
        return None;
    }
    let mut out = [0u8; 16];
    let mut n = 0;
    for t in rest.split_ascii_whitespace() {
        if n == 16 {
            return None;
        }
        out[n] = hex_u8(t)?;
        n += 1;
    }
    if n != 16 {
        return None;
    }
    Some((usize::from_str_radix(off, 16).ok()?, out))
}

/// A register key at the start of a detail line (`LnkSta`, `NUMA node`, `Kernel driver in
/// use`): letters, digits and a few marks before `:` followed by whitespace or the end.
fn register_key(t: &str) -> Option<(&str, &str)> {
    let i = t.find(':')?;
    let key = &t[..i];
    if key.is_empty()
        || key.len() > 40
        || !key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b" #/_-.".contains(&c))
        || !key.as_bytes()[0].is_ascii_alphabetic()
    {
        return None;
    }
    let rest = &t[i + 1..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key, rest.trim()))
}

/// `Capabilities: [OFF] NAME` or `[OFF vN] NAME`.
fn capability_line(v: &str, no: usize) -> Option<Capability> {
    let v = v.strip_prefix('[')?;
    let (inside, name) = v.split_once(']')?;
    let off = inside.split_whitespace().next()?;
    Some(Capability {
        offset: u16::from_str_radix(off, 16).ok()?,
        name: name.trim().to_string(),
        registers: Vec::new(),
        line: no,
    })
}

/// Whether a line is part of an `lspci -t` drawing: after spaces it starts with a branch or
/// bar character and it holds a device or root token.
fn is_tree_line(line: &str) -> bool {
    let t = line.trim_start_matches(' ');
    (t.starts_with("-+-")
        || t.starts_with("+-")
        || t.starts_with("\\-")
        || t.starts_with('|')
        || t.starts_with("-[")
        || t.starts_with("---"))
        && (t.contains('.') || t.contains("-["))
}

/// The state of a tree being read: for each branch column, the bus its children are on and
/// the bridge above them.
#[derive(Default)]
struct TreeState {
    branch: HashMap<usize, Option<BusCtx>>,
}

#[derive(Clone, Copy)]
struct BusCtx {
    domain: u32,
    bus: u8,
    parent: Option<(u32, u8, u8, u8)>,
}

fn tree_line(st: &mut TreeState, line: &str, no: usize, doc: &mut Doc) {
    let b = line.as_bytes();
    let mut pending: Option<BusCtx> = None;
    let mut seen = false;
    let mut i = 0;
    while i < b.len() {
        // A root bus `[DDDD:BB]` (or `[BB]`) not right after a device token.
        if b[i] == b'[' {
            let close = match line[i..].find(']') {
                Some(c) => i + c,
                None => break,
            };
            let inner = &line[i + 1..close];
            let (d, bus) = match inner.split_once(':') {
                Some((d, bus)) => (u32::from_str_radix(d, 16).ok(), hex_u8(bus)),
                None => (Some(0), hex_u8(inner)),
            };
            if let (Some(domain), Some(bus)) = (d, bus) {
                pending = Some(BusCtx {
                    domain,
                    bus,
                    parent: None,
                });
                seen = true;
            }
            i = close + 1;
            continue;
        }
        let at_token = i + 4 <= b.len()
            && b[i].is_ascii_hexdigit()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2] == b'.'
            && (b'0'..=b'7').contains(&b[i + 3])
            && (i == 0 || b[i - 1] == b'-')
            && (i + 4 == b.len() || b[i + 4] == b'-' || b[i + 4] == b' ');
        if !at_token {
            i += 1;
            continue;
        }
        let ctx = if i >= 2 && (b[i - 2] == b'+' || b[i - 2] == b'\\') {
            let k = i - 2;
            if seen {
                st.branch.insert(k, pending);
            }
            st.branch.get(&k).copied().flatten()
        } else {
            pending
        };
        let device = hex_u8(&line[i..i + 2]).unwrap_or(0);
        let function = b[i + 3] - b'0';
        let mut j = i + 4;
        let mut buses = None;
        if line[j..].starts_with("-[")
            && let Some(c) = line[j..].find(']')
        {
            let inner = &line[j + 2..j + c];
            let (s, u) = inner.split_once('-').unwrap_or((inner, inner));
            if let (Some(s), Some(u)) = (hex_u8(s), hex_u8(u)) {
                buses = Some((s, u));
            }
            j += c + 1;
        }
        seen = true;
        match ctx {
            Some(c) if device < 32 => {
                let me = (c.domain, c.bus, device, function);
                let name = if buses.is_none() {
                    line[j..].trim().to_string()
                } else {
                    String::new()
                };
                doc.tree.push(TreeNode {
                    domain: c.domain,
                    bus: c.bus,
                    device,
                    function,
                    parent: c.parent,
                    buses,
                    name,
                    line: no,
                });
                pending = buses.map(|(s, _)| BusCtx {
                    domain: c.domain,
                    bus: s,
                    parent: Some(me),
                });
            }
            _ => {
                doc.tree_unresolved += 1;
                pending = None;
            }
        }
        if buses.is_none() {
            break; // the rest of the line is the device's name
        }
        i = j;
    }
}

/// Reads every block and tree in `text`. Never fails: text that is not `lspci` output is
/// skipped (callers decide from [`Doc::is_empty`] and what was found whether to accept it).
/// A last line without its newline (lspci ends every line; an excerpt cut mid-line does not)
/// is cut: it is not read as a value ([`Doc::cut_line`], [`Block::cut_at`]).
pub fn parse(text: &str) -> Doc {
    let Some(start) = text
        .strip_suffix(|c: char| c != '\n')
        .map(|_| text.rfind('\n').map_or(0, |i| i + 1))
    else {
        return parse_lines(text);
    };
    let (body, last) = text.split_at(start);
    let no = body.lines().count() + 1;
    let mut doc = parse_lines(body);
    if last.trim().is_empty() {
        return doc;
    }
    doc.cut_line = Some(no);
    let indented = last.starts_with([' ', '\t']);
    let in_block = !body.is_empty() && !body.ends_with("\n\n") && !is_tree_line(last);
    if !indented && let Some(mut b) = header_line(last.trim_end_matches('\r'), no) {
        b.cut_at = Some(no);
        doc.blocks.push(b);
    } else if indented
        && in_block
        && let Some(b) = doc.blocks.last_mut()
    {
        b.cut_at = Some(no);
    } else if last.trim_start().starts_with("ACSCtl:") {
        doc.loose_acsctl.push((
            no,
            last.trim().trim_start_matches("ACSCtl:").trim().to_string(),
        ));
    }
    doc
}

/// The address of a command line that runs `lspci … -s ADDR …` piped into `grep` (a prompt
/// before it is allowed): the registers it prints belong to that address.
fn grep_command(t: &str) -> Option<Addr> {
    let (cmd, _) = t.split_once('|')?;
    let at = cmd.find("lspci")?;
    let mut toks = cmd[at..].split_whitespace();
    while let Some(tok) = toks.next() {
        let a = match tok.strip_prefix("-s") {
            Some("") => toks.next()?,
            Some(rest) => rest,
            None => continue,
        };
        let (addr, rest) = parse_addr(a)?;
        return rest.is_empty().then_some(addr);
    }
    None
}

fn parse_lines(text: &str) -> Doc {
    let mut doc = Doc::default();
    let mut cur: Option<Block> = None;
    let mut tree = TreeState::default();
    let mut hex_next = 0usize;
    let finish = |cur: &mut Option<Block>, doc: &mut Doc| {
        if let Some(b) = cur.take() {
            doc.blocks.push(b);
        }
    };
    let mut grep_of: Option<(Addr, usize)> = None;
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            finish(&mut cur, &mut doc);
            grep_of = None;
            continue;
        }
        let first = line.as_bytes()[0];
        if first != b' ' && first != b'\t' {
            if let Some(b) = header_line(line, no) {
                finish(&mut cur, &mut doc);
                hex_next = 0;
                cur = Some(b);
                continue;
            }
            if let Some(c) = cur.as_mut()
                && let Some((off, bytes)) = hex_line(line)
            {
                if off == hex_next && c.hex.len() == off {
                    c.hex.extend_from_slice(&bytes);
                    hex_next += 16;
                }
                continue;
            }
        }
        if is_tree_line(line) {
            finish(&mut cur, &mut doc);
            tree_line(&mut tree, line, no, &mut doc);
            continue;
        }
        let t = line.trim();
        if t.bytes().all(|c| c == b'.' || c == b' ') {
            if let Some(c) = cur.as_mut() {
                c.elided = true;
            }
            continue;
        }
        if first != b' ' && first != b'\t' {
            finish(&mut cur, &mut doc);
            // `lspci -vvv | grep ACSCtl` printed at column 0 is still the register line.
            if let Some(v) = t.strip_prefix("ACSCtl:") {
                doc.loose_acsctl.push((no, v.trim().to_string()));
            }
            grep_of = grep_command(t).map(|a| (a, no));
            continue;
        }
        if cur.is_none()
            && let Some((addr, at)) = grep_of
            && register_key(t).is_some()
        {
            cur = Some(Block {
                line: at,
                addr: Some(addr),
                fragment: true,
                ..Block::default()
            });
        }
        let Some(c) = cur.as_mut() else {
            if let Some(v) = t.strip_prefix("ACSCtl:") {
                doc.loose_acsctl.push((no, v.trim().to_string()));
            }
            continue;
        };
        if let Some(v) = t.strip_prefix("Capabilities:") {
            let v = v.trim();
            if v.starts_with("<access denied>") {
                c.access_denied = true;
            } else if let Some(cap) = capability_line(v, no) {
                c.caps.push(cap);
            }
            continue;
        }
        match register_key(t) {
            Some((key, value)) => {
                let reg = Register {
                    key: key.to_string(),
                    value: value.to_string(),
                };
                if key == "Kernel driver in use" {
                    c.driver = Some(value.to_string());
                }
                // Registers below a capability's line belong to it; the driver lines after
                // the capabilities belong to the device.
                let device_level = key.starts_with("Kernel ") || c.caps.is_empty();
                if device_level {
                    c.header.push(reg);
                } else if let Some(cap) = c.caps.last_mut() {
                    c.detailed = true;
                    cap.registers.push(reg);
                }
            }
            None => {
                // A continuation line.
                let target = match c.caps.last_mut() {
                    Some(cap) => cap.registers.last_mut(),
                    None => c.header.last_mut(),
                };
                match target {
                    Some(r) => {
                        r.value.push(' ');
                        r.value.push_str(t);
                    }
                    None => c.truncated = true,
                }
            }
        }
    }
    finish(&mut cur, &mut doc);
    doc
}

/// The `+`/`-` flags of a register value, by name (`SrcValid+` → ("SrcValid", true)). A last
/// token cut without its sign is left out.
pub fn flags(value: &str) -> HashMap<&str, bool> {
    value
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter_map(|t| {
            if let Some(n) = t.strip_suffix('+') {
                Some((n, true))
            } else {
                t.strip_suffix('-').map(|n| (n, false))
            }
        })
        .filter(|(n, _)| !n.is_empty())
        .collect()
}

/// A link register value (`LnkCap: Port #0, Speed 16GT/s, Width x16, …`, `LnkSta: Speed 2.5GT/s
/// (downgraded), Width x16`): speed in GT/s and width, each `None` where not printed whole.
pub fn link(value: &str) -> (Option<f64>, Option<u32>) {
    let mut speed = None;
    let mut width = None;
    for part in value.split(',') {
        let p = part.trim();
        if let Some(s) = p.strip_prefix("Speed ") {
            let s = s.split_whitespace().next().unwrap_or("");
            speed = s.strip_suffix("GT/s").and_then(|n| n.parse::<f64>().ok());
        } else if let Some(w) = p.strip_prefix("Width x") {
            let w: String = w.chars().take_while(|c| c.is_ascii_digit()).collect();
            width = w.parse().ok();
        }
    }
    (speed, width)
}

/// The first `N bytes` after `key` in a register value (`MaxPayload 256 bytes`).
pub fn bytes_after(value: &str, key: &str) -> Option<u32> {
    let i = value.find(key)?;
    let rest = value[i + key.len()..].trim_start();
    let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    if !rest[n.len()..].trim_start().starts_with("bytes") {
        return None;
    }
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grep_of_one_device_belongs_to_that_device() {
        let d = parse(
            "$ sudo lspci -vvv -s 41:00.0 | grep -i -e lnk -e acsctl\n\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L1\n\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16\n$ lspci -vvv | grep ACSCtl\n\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n",
        );
        assert_eq!(d.blocks.len(), 1, "{d:?}");
        let b = &d.blocks[0];
        assert!(b.fragment);
        assert_eq!(
            (b.line, b.addr.unwrap().bus, b.addr.unwrap().device),
            (1, 0x41, 0)
        );
        assert!(b.header("LnkSta").is_some_and(|v| v.contains("2.5GT/s")));
        // A grep without -s stays loose: which port it is cannot be told.
        assert_eq!(d.loose_acsctl.len(), 1);
        assert_eq!(
            grep_command("lspci -s0000:c1:00.0 -vvv | grep LnkSta").map(|a| a.bus),
            Some(0xc1)
        );
        assert!(grep_command("lspci -vvv -s 41:00 | grep LnkSta").is_none());
    }

    #[test]
    fn a_last_line_cut_mid_word_is_never_read_as_a_value() {
        // An index excerpt cut inside `Width x16`: never read as x1.
        let d = parse(
            "18:00.0 3D controller [0302]: NVIDIA Corporation Device 2330 [10de:2330]\n\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16\n\t\tLnkSta:\tSpeed 32GT/s, Width x1",
        );
        let b = &d.blocks[0];
        assert_eq!(b.cut_at, Some(4));
        assert_eq!(d.cut_line, Some(4));
        let cap = b.cap("Express").unwrap();
        assert!(cap.register("LnkSta").is_none(), "{cap:?}");
        assert!(cap.register("LnkCap").is_some());
        // A header line cut: kept, said as cut.
        let d = parse(
            "87:08.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch (rev ca)\n87:10.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Po",
        );
        assert_eq!(d.blocks.len(), 2);
        assert_eq!(d.blocks[1].cut_at, Some(2));
        assert_eq!(d.blocks[0].cut_at, None);
        // With its newline the same text is whole.
        let d = parse(
            "18:00.0 3D controller [0302]: NVIDIA Corporation Device 2330 [10de:2330]\n\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n\t\tLnkSta:\tSpeed 32GT/s, Width x16\n",
        );
        assert_eq!(d.cut_line, None);
        assert!(
            d.blocks[0]
                .cap("Express")
                .unwrap()
                .register("LnkSta")
                .is_some()
        );
    }

    #[test]
    fn numbers_on_the_flags_line_of_lspci_v() {
        // nvidia-bug-report's `lspci -d "10de:*" -v -xxx` (pciutils prints them on Flags at -v).
        let d = parse(
            "02:00.0 VGA compatible controller: NVIDIA Corporation GV102 (rev a1) (prog-if 00 [VGA controller])\n\tFlags: bus master, fast devsel, latency 0, IRQ 107, NUMA node 0, IOMMU group 1\n\tMemory at d3000000 (32-bit, non-prefetchable) [size=16M]\n",
        );
        assert_eq!(d.blocks[0].number("NUMA node"), Some(0));
        assert_eq!(d.blocks[0].number("IOMMU group"), Some(1));
        let d = parse(
            "61:00.0 3D controller: NVIDIA Corporation Device 2331 (rev a1)\n\tIOMMU group: 64\n\tNUMA node: 0\n",
        );
        assert_eq!(d.blocks[0].number("IOMMU group"), Some(64));
        let d = parse(
            "02:00.0 VGA compatible controller: NVIDIA Corporation GV102 (rev a1)\n\tFlags: bus master, fast devsel, latency 0, IRQ 107\n",
        );
        assert_eq!(d.blocks[0].number("IOMMU group"), None);
    }

    #[test]
    fn headers_with_and_without_nn_and_domain() {
        let d = parse(
            "da:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 40GB] [10de:20b0] (rev a1)\n\
             0019:01:00.0 PCI bridge: Mellanox Technologies MT2910 Family [ConnectX-7 PCIe Bridge] (prog-if 00 [Normal decode])\n\
             c941:00:02.0 Ethernet controller: Mellanox Technologies MT27800 Family [ConnectX-5 Virtual Function] (rev 80)\n",
        );
        assert_eq!(d.blocks.len(), 3);
        let a = &d.blocks[0];
        assert_eq!(a.class_code, Some(0x0302));
        assert_eq!(a.ids, Some((0x10de, 0x20b0)));
        assert_eq!(a.revision, Some(0xa1));
        assert_eq!(a.description, "NVIDIA Corporation GA100 [A100 SXM4 40GB]");
        let b = &d.blocks[1];
        assert_eq!(b.addr.unwrap().domain, Some(0x19));
        assert_eq!(b.prog_if, Some(0));
        assert_eq!(b.ids, None);
        assert_eq!(
            b.description,
            "Mellanox Technologies MT2910 Family [ConnectX-7 PCIe Bridge]"
        );
        assert_eq!(d.blocks[2].addr.unwrap().domain, Some(0xc941));
    }

    #[test]
    fn registers_continuations_and_cuts() {
        let t = "40:01.1 PCI bridge: AMD Device 1483\n\
                 \tBus: primary=40, secondary=43, subordinate=53, sec-latency=0\n\
                 \tCapabilities: [58] Express (v2) Root Port (Slot+), MSI 00\n\
                 \t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L1\n\
                 \t\t\tClockPM- Surprise-\n\
                 \t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x1\n\
                 \tCapabilities: [2a0 v1] Access Control Services\n\
                 \t\tACSCtl:\tSrcValid+ TransBlk- Req\n";
        let d = parse(t);
        let b = &d.blocks[0];
        assert_eq!(
            b.header("Bus").unwrap().split(',').next(),
            Some("primary=40")
        );
        let e = b.cap("Express").unwrap();
        assert_eq!(link(e.register("LnkCap").unwrap()), (Some(16.0), Some(16)));
        assert!(e.register("LnkCap").unwrap().contains("ClockPM-"));
        assert_eq!(link(e.register("LnkSta").unwrap()), (Some(2.5), Some(1)));
        let acs = b.cap("Access Control").unwrap();
        assert_eq!(acs.offset, 0x2a0);
        let f = flags(acs.register("ACSCtl").unwrap());
        assert_eq!(f.get("SrcValid"), Some(&true));
        assert!(!f.contains_key("ReqRedir"));
        // A width cut mid-number is unknown.
        assert_eq!(link("Speed 8GT/s, Width x1"), (Some(8.0), Some(1)));
    }

    #[test]
    fn tree_with_branches_single_children_and_fragments() {
        let t = concat!(
            "-+-[0000:00]-+-00.0  Intel Corporation Device 09a2\n",
            " |           \\-1d.0-[02-03]----00.0-[03]----00.0  ASPEED Graphics Family\n",
            " \\-[0000:15]---01.0-[16-19]----00.0-[17-19]--+-00.0-[18]----00.0  NVIDIA Corporation GH100\n",
            "                                             \\-01.0-[19]----00.0  Mellanox MT2910\n",
        );
        let d = parse(t);
        let get = |bus, dev, f| {
            d.tree
                .iter()
                .find(|n| n.bus == bus && n.device == dev && n.function == f)
                .unwrap_or_else(|| panic!("{bus:02x}:{dev:02x}.{f} in {:?}", d.tree))
        };
        assert_eq!(get(0, 0x1d, 0).parent, None);
        assert_eq!(get(3, 0, 0).parent, Some((0, 2, 0, 0)));
        assert_eq!(get(0x18, 0, 0).parent, Some((0, 0x17, 0, 0)));
        assert_eq!(get(0x17, 1, 0).parent, Some((0, 0x16, 0, 0)));
        assert_eq!(get(0x19, 0, 0).parent, Some((0, 0x17, 1, 0)));
        assert_eq!(get(0x19, 0, 0).name, "Mellanox MT2910");
        assert_eq!(get(0x16, 0, 0).buses, Some((0x17, 0x19)));
        assert_eq!(d.tree_unresolved, 0);
        // A fragment starting deep in the drawing cannot be placed.
        let f = parse(" |           |      +-08.0-[5c-5f]----00.0  NVIDIA Corporation GV100GL\n");
        assert!(f.tree.is_empty());
        assert_eq!(f.tree_unresolved, 2);
    }

    #[test]
    fn hex_dump_lines_join_from_offset_zero() {
        let mut t = String::from(
            "04:00.0 VGA compatible controller: NVIDIA Corporation Device 1b06 (rev a1)\n",
        );
        for off in (0..256).step_by(16) {
            t.push_str(&format!(
                "{off:02x}: de 10 06 1b 07 05 10 00 a1 00 00 03 00 00 00 00\n"
            ));
        }
        let d = parse(&t);
        assert_eq!(d.blocks[0].hex.len(), 256);
        assert_eq!(&d.blocks[0].hex[..2], &[0xde, 0x10]);
    }
}
