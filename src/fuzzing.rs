//! Fuzz targets: one entry point per parser of untrusted input, shared by the `cargo fuzz`
//! targets under `fuzz/` (coverage-guided, nightly) and by the stable smoke run in the tests and
//! `benches/fuzz.rs` (a seeded mutational loop). A target must never panic, whatever the bytes.

use crate::parse;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A named fuzz target.
pub struct Target {
    /// Name (also the `fuzz/fuzz_targets/<name>.rs` file).
    pub name: &'static str,
    /// The function under test.
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "attr",
        run: attr,
    },
    Target {
        name: "cpulist",
        run: cpulist,
    },
    Target {
        name: "config",
        run: config,
    },
    Target {
        name: "resource",
        run: resource,
    },
    Target {
        name: "aer",
        run: aer,
    },
    Target {
        name: "ib",
        run: ib,
    },
    Target {
        name: "bdf",
        run: bdf,
    },
    Target {
        name: "pci_ids",
        run: pci_ids,
    },
    Target {
        name: "snapshot",
        run: snapshot,
    },
    Target {
        name: "json",
        run: json,
    },
    Target {
        name: "lspci_text",
        run: lspci_text,
    },
    Target {
        name: "hwloc_xml",
        run: hwloc_xml,
    },
    Target {
        name: "nccl_xml",
        run: nccl_xml,
    },
    Target {
        name: "fabric_map",
        run: fabric_map,
    },
    Target {
        name: "cufile",
        run: cufile,
    },
    Target {
        name: "kfd",
        run: kfd,
    },
    Target {
        name: "mountinfo",
        run: mountinfo,
    },
    Target {
        name: "control",
        run: control,
    },
    Target {
        name: "evidence",
        run: evidence,
    },
    Target {
        name: "sosreport",
        run: sosreport,
    },
    Target {
        name: "bug_report",
        run: bug_report,
    },
];

/// The member paths a [`sosreport`] input's segments are filed under (`\n@@` and a letter
/// `a`, `b`, … choose one): every member the support-archive reader reads, in both archives'
/// spellings, and one it does not read.
const SUPPORT_MEMBERS: &[&str] = &[
    "sos_commands/pci/lspci_-nnvv",
    "sos_commands/pci/lspci_-tv",
    "sos_commands/pci/lspci_-xxxx",
    "sos_commands/infiniband/ibstat",
    "sos_commands/infiniband/ibv_devinfo_-v",
    "sos_commands/numa/numactl_--hardware",
    "sos_commands/kernel/lsmod",
    "sos_commands/kernel/dmesg",
    "proc/cmdline",
    "hardware.txt",
    "ib.txt",
    "boot.txt",
    "sos_commands/kernel/sysctl_-a",
];

/// A tar archive of `members`, each under `top` (`sosreport-fuzz/`, or none: the tree as
/// extracted).
fn tar_of(members: &[(&str, &[u8])], top: &str) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (p, body) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        if b.append_data(&mut h, format!("{top}{p}"), *body).is_err() {
            return Vec::new();
        }
    }
    b.into_inner().unwrap_or_default()
}

/// A sosreport or supportconfig (`-i sosreport-….tar.xz`, or the same extracted), read by the
/// support-archive reader ([`crate::sources::archive`]). The bytes are read twice: as an
/// archive as given (tar, gzip, bzip2, xz), and as a member set: segments split at `\n@@`,
/// each after the first naming its member by its first byte (`a` the first of
/// `SUPPORT_MEMBERS`; the first segment is `lspci_-nnvv`), archived under `sosreport-fuzz/`
/// (and supportconfig's under `scc_fuzz/`) and read as an archive, then as an extracted
/// directory. What the archive readings accept is audited.
pub fn sosreport(data: &[u8]) {
    use crate::sources::{archive, fsroot::MemRoot};
    let audit = |r: anyhow::Result<Option<crate::model::Topology>>| {
        if let Ok(Some(t)) = r {
            let _ = crate::analysis::audit::run(&t, &Default::default());
        }
    };
    audit(archive::read(data, "fuzz", None));
    let mut members: Vec<(&str, &[u8])> = Vec::new();
    for (i, seg) in split_at_marker(data, b"\n@@").enumerate() {
        match (i, seg.split_first()) {
            (0, _) => members.push((SUPPORT_MEMBERS[0], seg)),
            (_, Some((k, body))) => members.push((
                SUPPORT_MEMBERS[usize::from(k.wrapping_sub(b'a')) % SUPPORT_MEMBERS.len()],
                body,
            )),
            (_, None) => {}
        }
    }
    let sos: Vec<(&str, &[u8])> = members
        .iter()
        .filter(|(p, _)| p.starts_with("sos_") || p.starts_with("proc/"))
        .copied()
        .collect();
    let scc: Vec<(&str, &[u8])> = members
        .iter()
        .filter(|(p, _)| !p.starts_with("sos_") && !p.starts_with("proc/"))
        .copied()
        .collect();
    audit(archive::read(
        &tar_of(&sos, "sosreport-fuzz/"),
        "fuzz",
        None,
    ));
    // The same text read again is the same audit: the other forms are only read.
    if !scc.is_empty() {
        let _ = archive::read(&tar_of(&scc, "scc_fuzz/"), "fuzz", None);
    }
    if let Ok(root) = MemRoot::from_tar_bytes("fuzz", &tar_of(&sos, "")) {
        let _ = archive::read_dir(&root, "fuzz", None, None);
    }
}

/// The pieces of `data` between occurrences of `marker`.
fn split_at_marker<'a>(data: &'a [u8], marker: &'a [u8]) -> impl Iterator<Item = &'a [u8]> {
    let mut rest = Some(data);
    std::iter::from_fn(move || {
        let r = rest?;
        match memchr::memmem::find(r, marker) {
            Some(at) => {
                rest = Some(&r[at + marker.len()..]);
                Some(&r[..at])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// An `nvidia-bug-report.log` (or `.log.gz`), read as `-i` reads it: gzip text inflated (at
/// most 1 MiB here), else the bytes as text; the lspci blocks and what the script appended
/// beside them (`nvidia-smi -q`, `dmesg`, `/proc/cmdline`, `/proc/modules`, `numa_node` files,
/// [`crate::sources::lspci`]) read into a topology, audited (Xid and AER lines, the GDR
/// modules) and drawn as a tree.
pub fn bug_report(data: &[u8]) {
    let text = match crate::sources::gunzip_text(data, 1 << 20) {
        Ok(Some(t)) => std::borrow::Cow::Owned(t),
        _ => String::from_utf8_lossy(data),
    };
    if let Some(t) = lspci_topology(&text) {
        let _ = crate::analysis::audit::run(&t, &Default::default());
        let _ = crate::render::tree::render(&t, Default::default());
    }
}

/// The probe's control protocol (`peerpath-probe/2`): lines framed, tags checked, `CHALLENGE`,
/// `HELLO`, `RAIL` and `VERIFY` parsed and checked ([`crate::probe::remote::fuzz_lines`]).
pub fn control(data: &[u8]) {
    crate::probe::remote::fuzz_lines(data);
}

/// `/etc/cufile.json` (JSON with comments), then the facts the GDS audit reads of it; at most
/// [`crate::parse::MAX_LINE_REFUSALS`] wrong-type notes are kept, each shortened.
pub fn cufile(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = parse::cufile::parse(&text) {
        assert!(c.wrong_type.len() <= parse::MAX_LINE_REFUSALS);
        let _ = (c.compat_allowed(), c.compat_forced(), c.p2pdma());
        let _ = c.rdma_addrs().count();
    }
}

/// A KFD topology `properties` file; refused lines are counted, at most
/// [`crate::parse::MAX_LINE_REFUSALS`] kept.
pub fn kfd(data: &[u8]) {
    if let Ok((p, bad)) = parse::kfd::properties(data) {
        assert!(bad.first.len() <= parse::MAX_LINE_REFUSALS && bad.count >= bad.first.len());
        let _ = (p.get("location_id"), p.get_u32("node_to"));
    }
}

/// `/proc/self/mountinfo` and `/proc/mounts`, each line read or counted as refused.
pub fn mountinfo(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for (mounts, bad) in [
        parse::mounts::mountinfo(&text),
        parse::mounts::mounts(&text),
    ] {
        assert!(bad.first.len() <= parse::MAX_LINE_REFUSALS);
        for m in &mounts {
            let _ = m.option("proto");
        }
    }
}

/// Job output for `evidence` (NCCL log lines, nccl-tests tables, perftest runs), read and
/// judged without a topology, then rendered, as `peerpath evidence FILE` runs it; no figure
/// judged may be non-finite.
pub fn evidence(data: &[u8]) {
    use crate::analysis::evidence;
    let Ok(input) = evidence::Input::from_bytes("fuzz", data) else {
        return;
    };
    let report = evidence::analyze(&[input], None, &Default::default());
    for b in &report.bandwidth {
        for v in [
            b.peak.map(|p| p.0),
            b.large.map(|p| p.0),
            b.avg,
            b.judged.as_ref().map(|j| j.0),
        ]
        .into_iter()
        .flatten()
        {
            assert!(v.is_finite(), "bandwidth {v} judged");
        }
    }
    let _ = crate::render::evidence::text(&report);
}

/// An XML document through the XML reader, then the source reader for its root element, then
/// the tree renderer (as `scan -i FILE.xml` runs them).
fn xml_document(data: &[u8], root: &str) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(doc) = crate::sources::xmltree::parse(text) else {
        return;
    };
    let src = crate::model::SourceInfo {
        kind: String::new(),
        path: "fuzz".into(),
        limitations: vec![],
    };
    let topo = match root {
        "topology" => crate::sources::hwloc_xml::read(&doc, src, None),
        _ => crate::sources::nccl_xml::read_host(&doc, src, None, None),
    };
    if let Ok(t) = topo {
        let _ = crate::render::tree::render(&t, Default::default());
    }
}

/// hwloc XML exports (`lstopo foo.xml`, v1 and v2).
pub fn hwloc_xml(data: &[u8]) {
    xml_document(data, "topology");
}

/// NCCL topology XML (`NCCL_TOPO_FILE`, `NCCL_TOPO_DUMP_FILE`).
pub fn nccl_xml(data: &[u8]) {
    xml_document(data, "system");
}

/// The fabric's own map (`rails --fabric-map`): every producer's grammar, and the judgement of
/// whatever a grammar accepts against an 8-rail layout.
pub fn fabric_map(data: &[u8]) {
    use crate::model::fabric::Producer;
    let s = String::from_utf8_lossy(data);
    let _ = parse::fabric::detect(&s);
    for p in [
        Producer::Ibnetdiscover,
        Producer::IbnetdiscoverPorts,
        Producer::Iblinkinfo,
        Producer::IbdiagnetCsv,
    ] {
        if let Ok(m) = parse::fabric::parse(&s, p, "fuzz") {
            let _ = crate::analysis::cabling::judge(
                &m,
                &[crate::synth::fabric::layout(
                    &crate::synth::fabric::Pod::new(4),
                )],
            );
        }
    }
    let _ = parse::fabric::parse_lldpctl(&s, "h", "fuzz");
}

/// Single-value attributes (`vendor`, `numa_node`, `current_link_speed`, …).
pub fn attr(data: &[u8]) {
    let _ = parse::attr::text(data);
    let _ = parse::attr::hex_u32(data);
    let _ = parse::attr::int(data);
    let _ = parse::attr::numa_node(data);
    let _ = parse::attr::link_width(data);
    if let Ok(g) = parse::attr::link_speed_gts(data) {
        let _ = parse::attr::pcie_gen(g);
    }
}

/// cpulists and masks; a parsed list must survive a format/parse round trip.
pub fn cpulist(data: &[u8]) {
    if let Ok(v) = parse::cpulist::parse_list(data) {
        let s = crate::model::cpulist::format_list(&v);
        assert_eq!(parse::cpulist::parse_list(s.as_bytes()), Ok(v));
    }
    let _ = parse::cpulist::parse_mask(data);
}

/// Config space and its capability walks.
pub fn config(data: &[u8]) {
    if let Ok(c) = parse::config::parse(data)
        && let Some(a) = c.acs
    {
        let _ = a.enabled_names();
    }
}

/// `resource` tables.
pub fn resource(data: &[u8]) {
    let _ = parse::resource::parse(data);
}

/// AER counter files.
pub fn aer(data: &[u8]) {
    if let Ok(a) = parse::aer::parse(data) {
        let _ = a.total_or_sum();
    }
}

/// RDMA port `state`/`rate` files.
pub fn ib(data: &[u8]) {
    let _ = parse::ib::numbered_state(data);
    let _ = parse::ib::rate_gbps(data);
}

/// PCI addresses and host bridge names; a parsed address must print back to itself.
pub fn bdf(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(b) = s.parse::<crate::model::Bdf>() {
            assert_eq!(b.to_string().parse::<crate::model::Bdf>().ok(), Some(b));
        }
        let _ = crate::model::bdf::parse_host_bridge(s);
    }
}

/// The lazy pci.ids reader.
pub fn pci_ids(data: &[u8]) {
    let want = std::collections::HashSet::from([0x10de, 0x15b3, 0x8086]);
    let _ = crate::parse::pci_ids::parse_wanted(data, &want);
}

/// Snapshot tarballs: read in memory (no path may escape), then scanned.
pub fn snapshot(data: &[u8]) {
    if let Ok(root) = crate::sources::fsroot::MemRoot::from_tar_bytes("fuzz", data) {
        let src = crate::model::SourceInfo {
            kind: "snapshot".into(),
            path: "fuzz".into(),
            limitations: vec![],
        };
        let _ = crate::sources::sysfs::scan(&root, src, &Default::default());
    }
}

/// Operator text (`lspci -vvv`/`-tv`/`-xxxx`, with ibstat/ibv_devinfo/dmesg beside it): read
/// into a topology, then audited.
pub fn lspci_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(t) = lspci_topology(&text) {
        let _ = crate::analysis::audit::run(&t, &Default::default());
    }
}

/// Operator text read by the lspci reader, as `-i FILE` reads it; `None` when refused.
fn lspci_topology(text: &str) -> Option<crate::model::Topology> {
    let src = crate::model::SourceInfo {
        kind: "lspci".into(),
        path: "fuzz".into(),
        limitations: vec![],
    };
    crate::sources::lspci::read(text, src, None).ok()
}

/// peerpath's own topology JSON.
pub fn json(data: &[u8]) {
    if let Ok(mut t) = serde_json::from_slice::<crate::model::Topology>(data) {
        t.rebuild();
        let _ = crate::render::tree::render(&t, Default::default());
    }
}

/// Result of a mutational run.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Inputs executed.
    pub execs: u64,
    /// Inputs that panicked.
    pub crashes: u64,
    /// The first crashing input, to add to the corpus once fixed.
    pub first_crash: Option<Vec<u8>>,
}

/// Runs `target` over the `corpus` and `execs` seeded mutations of it (bit flips, byte sets,
/// interesting values, truncation, duplication, splicing), catching panics.
pub fn run_mutations(target: fn(&[u8]), corpus: &[Vec<u8>], execs: u64, seed: u64) -> Stats {
    let mut rng = seed.max(1);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut stats = Stats::default();
    let empty = [Vec::new()];
    let corpus = if corpus.is_empty() {
        &empty[..]
    } else {
        corpus
    };
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut buf = Vec::new();
    for i in 0..execs {
        buf.clear();
        buf.extend_from_slice(&corpus[(next() as usize) % corpus.len()]);
        if i >= corpus.len() as u64 {
            for _ in 0..1 + next() % 4 {
                let n = buf.len();
                match next() % 7 {
                    0 if n > 0 => {
                        let k = (next() as usize) % n;
                        buf[k] ^= 1 << (next() % 8);
                    }
                    1 if n > 0 => {
                        let k = (next() as usize) % n;
                        buf[k] =
                            [0, 0xff, 0x7f, 0x80, b'-', b'\n', b',', b':'][(next() % 8) as usize];
                    }
                    2 => buf.truncate((next() as usize) % (n + 1)),
                    3 if n > 0 => {
                        let a = (next() as usize) % n;
                        let b = a + (next() as usize) % (n - a).min(64);
                        let piece = buf[a..b.max(a)].to_vec();
                        let at = (next() as usize) % (buf.len() + 1);
                        buf.splice(at..at, piece);
                    }
                    4 => {
                        let other = &corpus[(next() as usize) % corpus.len()];
                        if !other.is_empty() {
                            let a = (next() as usize) % other.len();
                            buf.extend_from_slice(&other[a..]);
                        }
                    }
                    5 if n >= 4 => {
                        let k = (next() as usize) % (n - 3);
                        let v = [0u32, u32::MAX, 0x100, 0xffc, 0x1000][(next() % 5) as usize];
                        buf[k..k + 4].copy_from_slice(&v.to_le_bytes());
                    }
                    _ => buf.push(next() as u8),
                }
            }
        }
        stats.execs += 1;
        if catch_unwind(AssertUnwindSafe(|| target(&buf))).is_err() {
            stats.crashes += 1;
            if stats.first_crash.is_none() {
                stats.first_crash = Some(buf.clone());
            }
        }
    }
    std::panic::set_hook(prev);
    stats
}
