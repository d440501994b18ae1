//! The parsers of the messages' parts, one per form: the NET prefix, rank brackets, channel
//! and connection lines, GDR lines, NIC lists and distances, comm and completion lines; each
//! reads one form as NCCL prints it and is called by [`super::parse_message`].

use super::*;

/// `NET/IB : rest` or `NET/IB: rest` → (`IB`, rest).
pub(super) fn net_prefix(t: &str) -> Option<(String, &str)> {
    let r = t.strip_prefix("NET/")?;
    let (name, rest) = r.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains("  ") {
        return None;
    }
    Some((name.to_string(), rest))
}

/// The number after `word ` in `text` (`GDR 1`).
pub(super) fn word_num(text: &str, word: &str) -> Option<u32> {
    let mut it = text.split([' ', ',', '=']).filter(|s| !s.is_empty());
    while let Some(w) = it.next() {
        if w == word {
            return it.next()?.parse().ok();
        }
    }
    None
}

/// `rank[bracket]` → (rank, bracket); a bare `rank` (2.3–2.4) has an empty bracket.
pub(super) fn rank_bracket(s: &str) -> Option<(u32, String)> {
    let s = s.trim();
    let Some((r, b)) = s.split_once('[') else {
        return Some((s.parse().ok()?, String::new()));
    };
    let b = b.strip_suffix(']')?;
    Some((r.trim().parse().ok()?, b.to_string()))
}

/// `Ring|Channel %02d[/%d] : from -> to via …` within the node.
pub(super) fn peer_channel(t: &str) -> Parsed {
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
pub(super) fn rank_of(t: &str) -> Parsed {
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

/// The text after `Trees` (see [`Record::Trees`]). The printing rank is the number between the
/// two arrows of each entry; an entry cut before its second arrow gives none (NCCL itself cuts
/// the line at 1023 characters). Ranks that differ between entries are refused.
pub(super) fn trees(t: &str, complete: bool) -> Parsed {
    let (entries, suffix) = match t.find(" comm ") {
        Some(i) => (&t[..i], Some(&t[i..])),
        None => (t, None),
    };
    let mut rank = None;
    for entry in entries.split(" [").skip(1) {
        // `0] 1/-1/-1->0->-1`
        let Some((_, shape)) = entry.split_once("] ") else {
            continue;
        };
        let mut arrows = shape.splitn(3, "->");
        let (Some(_), Some(me), Some(_)) = (arrows.next(), arrows.next(), arrows.next()) else {
            continue; // cut before its second arrow
        };
        let Ok(me) = me.trim().parse::<u32>() else {
            return Parsed::Refused("tree rank is not a number".into());
        };
        if rank.is_some_and(|r| r != me) {
            return Parsed::Refused("tree entries name different ranks".into());
        }
        rank = Some(me);
    }
    let Some(rank) = rank else {
        return if complete {
            Parsed::Refused("no tree entry with its rank".into())
        } else {
            Parsed::Other
        };
    };
    let kv = |k: &str| -> Option<String> {
        let mut w = suffix?.split_whitespace();
        w.find(|x| *x == k)?;
        w.next().map(str::to_string)
    };
    // The last word of a line that may have been cut may be cut too.
    let bus_id = kv("busId").filter(|_| complete);
    let nranks = kv("nRanks")
        .filter(|_| complete || kv("busId").is_some())
        .and_then(|n| n.parse().ok());
    Parsed::Record(Record::Trees {
        rank,
        nranks,
        bus_id,
    })
}

pub(super) fn net_channel(t: &str, complete: bool) -> Parsed {
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

/// The text after `NET/OFI Selected provider is ` (see [`Record::OfiProvider`]).
pub(super) fn ofi_provider(r: &str) -> Parsed {
    let (head, nics) = match r.rsplit_once(" (found ") {
        Some((h, n)) => (
            h,
            n.strip_suffix(" nics)").and_then(|n| n.trim().parse().ok()),
        ),
        None => (r, None),
    };
    let (provider, fabric) = match head.split_once(", fabric is ") {
        Some((p, f)) => (p, Some(f.trim().to_string())),
        None => (head, None),
    };
    let provider = provider.trim();
    if provider.is_empty() || provider.contains(' ') {
        return Parsed::Refused("not a provider name".into());
    }
    Parsed::Record(Record::OfiProvider {
        provider: provider.to_string(),
        fabric,
        nics,
    })
}

/// Whether a message is the start of a channel line that stops before its transport (`Channel
/// 00/0 :`, `Channel 00/0 : 0[0] -> 8[0]`): a copy may have wrapped the rest onto the next line.
pub fn connection_start(msg: &str) -> bool {
    let t = msg.trim();
    (t.starts_with("Channel ") || t.starts_with("Ring "))
        && (t.contains(" : ") || t.ends_with(" :"))
        && !t.contains(" via ")
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
pub(super) fn is_rccl_comm_suffix(t: &str, complete: bool) -> bool {
    if t.starts_with(" comm 0x") || t.starts_with(" comm (nil)") {
        return true;
    }
    !complete && t.len() >= 3 && (" comm 0x".starts_with(t) || " comm (nil)".starts_with(t))
}

/// `from -> to [send|receive] via NET/…` (or, 2.3, `from -> to via NET/…`).
pub(super) fn net_connection(
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

pub(super) fn gdr_line(t: &str, complete: bool) -> Parsed {
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
pub(super) fn nic_distance(r: &str) -> Parsed {
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
pub(super) fn distance_part(r: &str) -> (Option<u32>, Option<u32>, Option<bool>, Option<String>) {
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

pub(super) fn nic_gdr(transport: String, r: &str, complete: bool) -> Parsed {
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

pub(super) fn nic_list(transport: String, list: &str, complete: bool) -> Parsed {
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
pub(super) fn nic_entry(index: u32, s: &str) -> NicEntry {
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

pub(super) fn virtual_nic(v: &str) -> Parsed {
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

pub(super) fn comm(t: &str) -> Parsed {
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

pub(super) fn completion(t: &str) -> Completion {
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
