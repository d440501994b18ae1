//! PCIe checks over the paths between GPUs and NICs: `acs-redirect`, `link-degraded`,
//! `aer-errors`, `bar1-small`, `mps-mrrs`.
//!
//! Every fact comes from a [`crate::model::Device`] the scanner filled from
//! `/sys/bus/pci/devices/<bdf>/{config,current_link_*,max_link_*,aer_dev_*,resource}`
//! (reference §2.1, §2.2, §2.4, §2.9, §2.10). Config-space facts need root: a 64-byte config
//! gives `unknown`, never a pass.

use super::{
    CheckId, Ctx, Evidence, Finding, PairRef, Severity, Subject, config_unknown, pci_path,
};
use crate::analysis::paths::LinkHealth;
use crate::model::aer::AerCounters;
use crate::model::{Bdf, DeviceKind};
use std::collections::{BTreeMap, BTreeSet};

/// What the `config` file gave, as evidence: `64 bytes` or `(absent)`.
fn config_len_value(topo: &crate::model::Topology, b: &Bdf) -> String {
    match topo.device(b).and_then(|d| d.config.as_ref()) {
        Some(c) => format!("{} bytes readable", c.len),
        None => "(absent or unreadable)".into(),
    }
}

/// One `unknown` finding for a check, listing every device whose fact could not be read.
fn unknown_finding(
    topo: &crate::model::Topology,
    id: CheckId,
    what: &str,
    items: &[(Bdf, String)],
    remedy: &str,
) -> Option<Finding> {
    let (_, first) = items.first()?;
    let mut reasons: Vec<&str> = items.iter().map(|(_, r)| r.as_str()).collect();
    reasons.sort();
    reasons.dedup();
    let reason = if reasons.len() == 1 {
        first.clone()
    } else {
        reasons.join("; ")
    };
    let f = Finding::new(
        id,
        Severity::Unknown,
        if items.len() == 1 {
            Subject::Device(items[0].0)
        } else {
            Subject::Node
        },
        format!("{what} unknown on {} device(s): {reason}", items.len()),
        remedy,
    );
    Some(
        f.with_all(
            items
                .iter()
                .map(|(b, _)| Evidence::new(pci_path(b, "config"), config_len_value(topo, b))),
        ),
    )
}

const ROOT_REMEDY: &str = "run `peerpath audit` as root (or in a privileged container) so the full 4096-byte config space is readable";

/// `acs-redirect`: on a platform rdma_topo knows (ConnectX-8 Data Direct, inline ConnectX
/// switch, Grace NUMA; [`super::nextgen::acs_platform`]) every port it configures must match its
/// mask, a required redirect included. On every other root port or switch downstream port
/// between a GPU and its NIC, ACS P2P Request Redirect, Completion Redirect or Egress Control is
/// an error on bare metal (P2P TLPs go up to the root complex: hangs, `IBV_WC_LOC_PROT_ERR`, low
/// bandwidth) and a warning in a VM, where guest bridges are synthetic and the probe decides.
pub fn acs_redirect(ctx: &Ctx) -> Vec<Finding> {
    let topo = ctx.topo;
    // On a recognised platform (Data Direct, inline CX switch, Grace NUMA) rdma_topo's per-port
    // masks decide; the rule below judges every other port on a GPU–NIC path.
    let (mut out, covered) = super::nextgen::acs_platform(ctx);
    let mut ports: BTreeMap<Bdf, Vec<PairRef>> = BTreeMap::new();
    for p in &ctx.pairs {
        for b in ctx.path_devices(&p.gpu, &p.nic).bridges() {
            if covered.contains(b) {
                continue;
            }
            if topo.device(b).is_some_and(|d| {
                matches!(d.kind, DeviceKind::RootPort | DeviceKind::SwitchDownstream)
            }) {
                ports.entry(*b).or_default().push(p.to_ref());
            }
        }
    }
    let mut unknown = Vec::new();
    for (port, pairs) in ports {
        let Some(d) = topo.device(&port) else {
            continue;
        };
        // An ACSCtl the input shows is a fact even where the rest of the extended space is not
        // (a `lspci -vvv -s PORT | grep ACSCtl`); without one, a short config space is unknown.
        let shown = d.config.as_ref().and_then(|c| c.acs);
        if shown.is_none()
            && let Some(r) = config_unknown(d, 4096)
        {
            unknown.push((port, r));
            continue;
        }
        let Some(acs) = shown else {
            continue; // no ACS capability: the port cannot redirect
        };
        if !acs.redirects_p2p() {
            continue;
        }
        let names = acs.enabled_names().join(" ");
        let sev = ctx.config_fault_severity();
        let who: Vec<String> = pairs
            .iter()
            .map(|p| {
                format!(
                    "{}↔{}",
                    p.gpu,
                    p.rdma.clone().unwrap_or_else(|| p.nic.to_string())
                )
            })
            .collect();
        let f = Finding::new(
            CheckId::AcsRedirect,
            sev,
            Subject::Device(port),
            format!(
                "ACS redirects peer-to-peer traffic on {} {port} ({names}) between {}{}",
                d.kind.as_str(),
                who.join(", "),
                if ctx.virtualized { " (VM: guest bridge, advisory)" } else { "" }
            ),
            format!(
                "{}. In a VM, enable ATS on the NIC and ACS Direct Translated P2P on the host instead",
                acs_redirect_remedy(&port)
            ),
        )
        .with(
            pci_path(&port, "config"),
            acs_control_value(&acs),
        )
        .with_pairs(pairs);
        out.push(f);
    }
    out.extend(unknown_finding(
        topo,
        CheckId::AcsRedirect,
        "ACS on ports between GPUs and NICs",
        &unknown,
        ROOT_REMEDY,
    ));
    out
}

/// The PCIe links above every GPU and RDMA NIC, as `(child, parent port)`: each device in the
/// chains whose parent is a port (a switch downstream port's parent is its own switch's
/// upstream port, which is not a link).
fn hops(ctx: &Ctx) -> Vec<(Bdf, Bdf)> {
    let mut set = BTreeSet::new();
    for e in ctx.gpus.iter().chain(ctx.nics.iter()) {
        let chain = ctx.paths().ancestors(&e.bdf);
        for w in chain.windows(2) {
            let Some(child) = ctx.topo.device(&w[0]) else {
                continue;
            };
            if child.kind != DeviceKind::SwitchDownstream {
                set.insert((w[0], w[1]));
            }
        }
    }
    set.into_iter().collect()
}

fn fmt_gts(v: f64) -> String {
    format!("{v:.1} GT/s PCIe")
}

/// `link-degraded`: on every hop above a GPU or RDMA NIC, the paths model's verdict on the link
/// ([`crate::analysis::paths::link`]: degraded only below what both ends support): a width or
/// speed below that capability (error), a link that is down (error); a GPU's speed below it is
/// its idle power saving by design (one info finding; the probe measures under load). A hop
/// whose state or either end's capability is unknown is listed as unknown. In a VM these are
/// warnings (emulated ports report arbitrary links).
pub fn link_degraded(ctx: &Ctx) -> Vec<Finding> {
    let topo = ctx.topo;
    let paths = ctx.paths();
    let mut out = Vec::new();
    let mut idle_gpus = Vec::new();
    let mut unknown = Vec::new();
    let mut ports_unknown: BTreeSet<Bdf> = BTreeSet::new();
    let sev = ctx.config_fault_severity();
    for (c, p) in hops(ctx) {
        let (Some(child), Some(parent), Some(ci)) =
            (topo.device(&c), topo.device(&p), paths.index(&c))
        else {
            continue;
        };
        let cl = child.link.unwrap_or_default();
        let pl = parent.link.unwrap_or_default();
        let width_ev = || {
            vec![
                Evidence::new(pci_path(&c, "current_link_width"), opt(cl.current_width)),
                Evidence::new(pci_path(&c, "max_link_width"), opt(cl.max_width)),
                Evidence::new(pci_path(&p, "max_link_width"), opt(pl.max_width)),
            ]
        };
        let speed_ev = || {
            vec![
                Evidence::new(pci_path(&c, "current_link_speed"), optf(cl.current_gts)),
                Evidence::new(pci_path(&c, "max_link_speed"), optf(cl.max_gts)),
                Evidence::new(pci_path(&p, "max_link_speed"), optf(pl.max_gts)),
            ]
        };
        let name = ctx.name(&c);
        match paths.edge(ci).health {
            LinkHealth::Down => out.push(
                Finding::new(
                    CheckId::LinkDegraded,
                    sev,
                    Subject::Device(c),
                    format!("link {p} → {name} is down (negotiated width 0)"),
                    format!("reseat {name} (or the card/riser under port {p}) and check the slot's power and bifurcation setting in the BIOS"),
                )
                .with_all(width_ev())
                .with_pairs(ctx.pairs_of(&c).map(|x| x.to_ref())),
            ),
            LinkHealth::Degraded {
                width: Some((w, m)),
                speed,
            } => {
                let mut ev = width_ev();
                if speed.is_some() {
                    ev.extend(speed_ev());
                }
                out.push(
                    Finding::new(
                        CheckId::LinkDegraded,
                        sev,
                        Subject::Device(c),
                        format!("link {p} → {name} trained to x{w}, both ends capable of x{m}"),
                        format!("reseat {name} (or the card/riser under port {p}), check the slot's bifurcation setting in the BIOS, then replace the riser/cable or card if it stays at x{w}"),
                    )
                    .with_all(ev)
                    .with_pairs(ctx.pairs_of(&c).map(|x| x.to_ref())),
                )
            }
            LinkHealth::Degraded {
                width: None,
                speed: Some((s, m)),
            } => out.push(
                Finding::new(
                    CheckId::LinkDegraded,
                    sev,
                    Subject::Device(c),
                    format!("link {p} → {name} runs at {s} GT/s, both ends capable of {m} GT/s"),
                    format!("check the BIOS PCIe speed setting for port {p}, reseat {name}, and check AER counters on both ends for signal-integrity errors"),
                )
                .with_all(speed_ev())
                .with_pairs(ctx.pairs_of(&c).map(|x| x.to_ref())),
            ),
            LinkHealth::IdleSpeed { speed: (s, m) } => idle_gpus.push((c, s, m)),
            LinkHealth::NoLink if child.is_vf() => {}
            LinkHealth::Unknown | LinkHealth::NoLink => {
                // Which end the input did not show: the device's own state and capability, or
                // (both of those shown) the port's capability; its reason where it gave one.
                let port_side = cl.current_width.is_some() && cl.max_width.is_some();
                let (who, note) = if port_side {
                    ports_unknown.insert(p);
                    (p, parent.config_note.clone())
                } else {
                    (c, child.config_note.clone().or_else(|| parent.config_note.clone()))
                };
                if unknown.iter().any(|(b, _)| *b == who) {
                    continue;
                }
                unknown.push((
                    who,
                    note.unwrap_or_else(|| "negotiated link state or one end's capability (current_link_*/max_link_* of the device and of the port above) not exposed and config space not readable (kernel < 4.13 or not captured)".to_string()),
                ))
            }
            LinkHealth::Full | LinkHealth::Degraded { .. } => {}
        }
    }
    if !idle_gpus.is_empty() {
        let f = Finding::new(
            CheckId::LinkDegraded,
            Severity::Info,
            if idle_gpus.len() == 1 {
                Subject::Device(idle_gpus[0].0)
            } else {
                Subject::Node
            },
            format!(
                "{} GPU link(s) below max speed; idle GPUs downtrain by design (judged under load by `peerpath probe`)",
                idle_gpus.len()
            ),
            "none unless the speed stays low under load: run `peerpath probe`, or re-read current_link_speed while the GPU is busy",
        );
        out.push(f.with_all(idle_gpus.iter().map(|(b, s, m)| {
            Evidence::new(
                pci_path(b, "current_link_speed"),
                format!("{} (max {})", fmt_gts(*s), fmt_gts(*m)),
            )
        })));
    }
    if let Some(mut f) = unknown_finding(
        topo,
        CheckId::LinkDegraded,
        "link width",
        &unknown,
        "audit the live machine (link attributes are world-readable on kernels ≥ 4.13)",
    ) {
        for (e, (b, _)) in f.evidence.iter_mut().zip(&unknown) {
            let attr = if ports_unknown.contains(b) {
                "/max_link_width"
            } else {
                "/current_link_width"
            };
            e.path = e.path.replace("/config", attr);
            e.value = "(absent)".into();
        }
        out.push(f);
    }
    out
}

fn opt(v: Option<u32>) -> String {
    v.map(|v| v.to_string())
        .unwrap_or_else(|| "(absent)".into())
}
fn optf(v: Option<f64>) -> String {
    v.map(fmt_gts).unwrap_or_else(|| "(absent)".into())
}

fn aer_value(a: &AerCounters, total_name: &str) -> String {
    let mut parts: Vec<String> = a.nonzero().map(|(n, v)| format!("{n} {v}")).collect();
    if let Some(t) = a.total {
        parts.push(format!("{total_name} {t}"));
    }
    parts.join(", ")
}

/// `aer-errors`: non-zero AER counters on a GPU, an RDMA NIC or a port above them:
/// correctable → warning, non-fatal or fatal → error; the finding names the counters.
pub fn aer_errors(ctx: &Ctx) -> Vec<Finding> {
    let topo = ctx.topo;
    let mut scope = BTreeSet::new();
    for e in ctx.gpus.iter().chain(ctx.nics.iter()) {
        scope.extend(ctx.paths().ancestors(&e.bdf));
    }
    let mut out = Vec::new();
    let mut any_file = false;
    for b in &scope {
        let Some(d) = topo.device(b) else { continue };
        let files = [
            (
                "aer_dev_correctable",
                &d.aer_correctable,
                "TOTAL_ERR_COR",
                Severity::Warning,
            ),
            (
                "aer_dev_nonfatal",
                &d.aer_nonfatal,
                "TOTAL_ERR_NONFATAL",
                Severity::Error,
            ),
            (
                "aer_dev_fatal",
                &d.aer_fatal,
                "TOTAL_ERR_FATAL",
                Severity::Error,
            ),
        ];
        let mut sev = None;
        let mut ev = Vec::new();
        let mut named = Vec::new();
        for (file, counters, total, s) in files {
            let Some(a) = counters else { continue };
            any_file = true;
            if a.total_or_sum() == 0 {
                continue;
            }
            sev = Some(sev.map_or(s, |x: Severity| x.min(s)));
            ev.push(Evidence::new(pci_path(b, file), aer_value(a, total)));
            let names: Vec<String> = a.nonzero().map(|(n, v)| format!("{n}={v}")).collect();
            named.push(format!(
                "{} {}",
                file.trim_start_matches("aer_dev_"),
                if names.is_empty() {
                    format!("{total}={}", a.total_or_sum())
                } else {
                    names.join(" ")
                }
            ));
        }
        let Some(mut sev) = sev else { continue };
        // From text: an advisory non-fatal bit alone is an uncorrectable error the device
        // handled as advisory (an Unsupported Request from a probe, mostly), not link trouble.
        let advisory = sev == Severity::Warning && advisory_only(d);
        if advisory {
            sev = Severity::Info;
        }
        out.push(
            Finding::new(
                CheckId::AerErrors,
                sev,
                Subject::Device(*b),
                format!(
                    "AER errors on {} {}: {}{}",
                    d.kind.as_str(),
                    ctx.name(b),
                    named.join("; "),
                    if advisory {
                        format!(" — {}; not a link error", aer_bit_meaning("AdvNonFatalErr"))
                    } else {
                        String::new()
                    }
                ),
                if advisory {
                    "none: the bit stays set until cleared; if it comes back under load, read the kernel log for the request the device refused"
                } else {
                    "counters are cumulative since boot: note them, run load (`peerpath probe`) and compare; rising correctable counts (RxErr, BadTLP, BadDLLP, Rollover) point at the slot, riser or card; any non-fatal/fatal error needs the device's link checked and the kernel log read"
                },
            )
            .with_all(ev)
            .with_pairs(ctx.pairs_of(b).map(|x| x.to_ref())),
        );
    }
    let masked = masked_bits(ctx, &scope);
    let n_masked = masked.len();
    out.extend(masked);
    if !any_file && !scope.is_empty() {
        out.push(Finding::new(
            CheckId::AerErrors,
            Severity::Unknown,
            Subject::Node,
            match (topo.source.kind == "lspci", n_masked) {
                (true, 0) => "AER counters unknown: lspci text holds no counters, and no unmasked AER status bit (UESta/CESta) is set on these devices (the kernel clears the bits of errors it handled)".to_string(),
                (true, _) => "AER counters unknown: lspci text holds no counters; the status bits set on these devices are masked (see the info finding), and no unmasked one is set".to_string(),
                _ => "AER counters unknown: no aer_dev_* files (kernel < 4.19, AER not enabled, or not captured)".to_string(),
            },
            "audit the live machine on a kernel ≥ 4.19 with AER enabled (`pcie_ports=native` where firmware-first hides it)",
        ));
    }
    out
}

/// Whether a device's only set, unmasked correctable bit in the text is `AdvNonFatalErr`.
fn advisory_only(d: &crate::model::Device) -> bool {
    let unmasked: Vec<&str> = d
        .aer_status_bits
        .iter()
        .filter(|b| !b.masked && b.register == "CESta")
        .map(|b| b.name.as_str())
        .collect();
    unmasked == ["AdvNonFatalErr"]
        && d.aer_nonfatal
            .as_ref()
            .is_none_or(|a| a.total_or_sum() == 0)
        && d.aer_fatal.as_ref().is_none_or(|a| a.total_or_sum() == 0)
}

/// What an AER status bit says (PCIe Base spec 7.8.4, the bits lspci prints).
fn aer_bit_meaning(name: &str) -> &'static str {
    match name {
        "RxErr" => {
            "Receiver Error: the receiver saw bad symbols or framing, a signal-quality error on the link"
        }
        "BadTLP" => {
            "Bad TLP: a packet failed its LCRC or sequence check and was replayed, a link signal-integrity error"
        }
        "BadDLLP" => "Bad DLLP: a link packet failed its CRC, a link signal-integrity error",
        "Rollover" => {
            "REPLAY_NUM Rollover: the same packet was replayed four times and the link retrained"
        }
        "Timeout" => {
            "Replay Timer Timeout: an acknowledgement did not arrive in time and a packet was replayed"
        }
        "AdvNonFatalErr" => {
            "Advisory Non-Fatal: an uncorrectable error the device handled as advisory (often an Unsupported Request from a probe)"
        }
        "UnsupReq" => {
            "Unsupported Request: the device received a request it does not support (probes of absent functions or registers set it on healthy devices)"
        }
        "CmpltTO" => "Completion Timeout: a request the device sent got no completion",
        "CmpltAbrt" => "Completer Abort",
        "UnxCmplt" => "Unexpected Completion",
        "MalfTLP" => "Malformed TLP",
        "ECRC" => "ECRC error: end-to-end CRC failed",
        "DLP" => "Data Link Protocol error",
        "SDES" => "Surprise Down: the link went down unexpectedly",
        "TLP" => "Poisoned TLP received",
        "FCP" => "Flow Control Protocol error",
        "RxOF" => "Receiver Overflow",
        "ACSViol" => "ACS Violation",
        _ => "see the PCIe Base specification's AER status register",
    }
}

/// Info on AER status bits the text shows set but masked (`CESta: RxErr+` with `CEMsk: RxErr+`):
/// what they are, that a masked error sends no message so the kernel never counted or cleared
/// them, and what they suggest about the link. One finding per set of masked bits, naming its
/// devices.
fn masked_bits(ctx: &Ctx, scope: &BTreeSet<crate::model::Bdf>) -> Vec<Finding> {
    let mut groups: std::collections::BTreeMap<Vec<(String, String)>, Vec<&crate::model::Device>> =
        Default::default();
    for b in scope {
        let Some(d) = ctx.topo.device(b) else {
            continue;
        };
        let key: Vec<(String, String)> = d
            .aer_status_bits
            .iter()
            .filter(|x| x.masked)
            .map(|x| (x.register.clone(), x.name.clone()))
            .collect();
        if !key.is_empty() {
            groups.entry(key).or_default().push(d);
        }
    }
    let link = ["RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout"];
    groups
        .into_iter()
        .map(|(bits, devs)| {
            let named = bits
                .iter()
                .map(|(r, n)| format!("{r} {n}+ ({})", aer_bit_meaning(n)))
                .collect::<Vec<_>>()
                .join("; ");
            let on_link = bits.iter().any(|(_, n)| link.contains(&n.as_str()));
            Finding::new(
                CheckId::AerErrors,
                Severity::Info,
                if devs.len() == 1 { Subject::Device(devs[0].bdf) } else { Subject::Node },
                format!(
                    "AER status bits set but masked on {} device(s): {named}. A masked error sends no error message, so the kernel never counted it (no aer_dev_* count, no log line) and never cleared the bit{}",
                    devs.len(),
                    if on_link {
                        "; these are corrected link errors (replays): harmless alone, but a link that keeps setting them has marginal signal quality (slot, riser, retimer or cable)"
                    } else {
                        ""
                    }
                ),
                "none by itself; to see whether they recur, clear the bits (`setpci -s BDF ECAP_AER+0x10.l=ffffffff` for CESta) and read `lspci -vvv` again under load, or unmask them so the kernel counts them",
            )
            .with_all(devs.iter().flat_map(|d| {
                d.aer_status_bits.iter().filter(|x| x.masked).map(|x| {
                    Evidence::new(
                        format!("{} line {}", ctx.topo.source.path, x.line),
                        format!("{} {} {}+ masked in {}", d.bdf, x.register, x.name, x.register.replace("Sta", "Msk")),
                    )
                })
            }))
        })
        .collect()
}

/// `bar1-small`: an NVIDIA GPU whose BAR1 (resource line 2, the GPU memory aperture the NIC
/// reads and writes through) is smaller than 1 GiB: `ibv_reg_mr` fails above a few hundred MB.
pub fn bar1_small(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    if ctx.nics.is_empty() {
        return out;
    }
    for g in ctx.nvidia_gpus() {
        let path = pci_path(&g.bdf, "resource");
        match g.bars.iter().find(|b| b.index == 1) {
            None => out.push(
                Finding::new(
                    CheckId::Bar1Small,
                    Severity::Unknown,
                    Subject::Device(g.bdf),
                    if g.bars.is_empty() {
                        "BAR1 size unknown: resource file not read".to_string()
                    } else {
                        "BAR1 size unknown: BAR1 not assigned in the resource file".to_string()
                    },
                    "audit the live machine; if BAR1 is truly unassigned, enable Above 4G Decoding / Resizable BAR in the BIOS",
                )
                .with(path, "(no line 2)"),
            ),
            Some(b) if b.size < (1 << 30) => out.push(
                Finding::new(
                    CheckId::Bar1Small,
                    Severity::Warning,
                    Subject::Device(g.bdf),
                    format!("GPU BAR1 is {} MiB (< 1 GiB): GPUDirect RDMA registrations above a few hundred MB fail", b.size >> 20),
                    "enable Above 4G Decoding and Resizable BAR in the BIOS (data-center GPUs expose BAR1 ≥ GPU memory); otherwise keep registered GPU buffers below BAR1",
                )
                .with(path, format!("BAR1 (line 2): {} bytes", b.size)),
            ),
            Some(_) => {}
        }
    }
    out
}

/// Why an MPS/MRRS is unknown when the Express capability was read without its `DevCtl`
/// sizes.
const NOT_SHOWN: &str =
    "DevCtl's MaxPayload/MaxReadReq not in the input (the text is cut or elided before them)";

/// `mps-mrrs`: Max Payload Size differs between devices on a GPU–NIC path (warning), or an
/// RDMA NIC's Max Read Request Size is below 512 bytes (warning). Needs the PCIe capability
/// (root): otherwise one `unknown` finding.
pub fn mps_mrrs(ctx: &Ctx) -> Vec<Finding> {
    let topo = ctx.topo;
    let mut out = Vec::new();
    let mut unknown: BTreeMap<Bdf, String> = BTreeMap::new();
    for p in &ctx.pairs {
        let pd = ctx.path_devices(&p.gpu, &p.nic);
        let mut devs: Vec<Bdf> = vec![p.gpu];
        devs.extend(pd.a_up.iter().copied());
        devs.extend(pd.lca);
        devs.extend(pd.b_up.iter().rev().copied());
        // A Data Direct NIC's payloads come from its DMA function.
        devs.push(
            topo.device(&p.nic)
                .and_then(|d| d.data_direct.as_ref())
                .map_or(p.nic, |dd| dd.dma),
        );
        let mut vals = Vec::new();
        let mut complete = true;
        for b in &devs {
            let Some(d) = topo.device(b) else { continue };
            if let Some(r) = config_unknown(d, 256) {
                unknown.insert(*b, r);
                complete = false;
                continue;
            }
            if let Some(pc) = d.config.as_ref().and_then(|c| c.pcie.as_ref()) {
                // DevCtl encodes 128 B at least: 0 is a register the input did not show
                // (lspci text cut or elided before `MaxPayload`).
                if pc.mps == 0 {
                    unknown.insert(*b, NOT_SHOWN.to_string());
                    complete = false;
                    continue;
                }
                vals.push((*b, pc.mps));
            }
        }
        if !complete {
            continue;
        }
        let mut distinct: Vec<u32> = vals.iter().map(|(_, v)| *v).collect();
        distinct.sort();
        distinct.dedup();
        if distinct.len() > 1 {
            out.push(
                Finding::new(
                    CheckId::MpsMrrs,
                    Severity::Warning,
                    Subject::Device(p.gpu),
                    format!(
                        "Max Payload Size differs along {} ↔ {}: {}",
                        p.gpu,
                        ctx.name(&p.nic),
                        vals.iter().map(|(b, v)| format!("{b}={v}")).collect::<Vec<_>>().join(", ")
                    ),
                    "let the kernel set one MPS along the path (boot with `pci=pcie_bus_safe`, or `pcie_bus_peer2peer` to force 128 B everywhere) or set it in the BIOS",
                )
                .with_all(vals.iter().map(|(b, v)| Evidence::new(pci_path(b, "config"), format!("DevCtl MaxPayload {v} bytes"))))
                .with_pairs([p.to_ref()]),
            );
        }
    }
    for n in &ctx.nics {
        if let Some(r) = config_unknown(n, 256) {
            unknown.insert(n.bdf, r);
            continue;
        }
        let Some(pc) = n.config.as_ref().and_then(|c| c.pcie.as_ref()) else {
            continue;
        };
        if pc.mrrs == 0 {
            unknown.insert(n.bdf, NOT_SHOWN.to_string());
            continue;
        }
        if pc.mrrs < 512 {
            out.push(
                Finding::new(
                    CheckId::MpsMrrs,
                    Severity::Warning,
                    Subject::Device(n.bdf),
                    format!("NIC {} Max Read Request Size is {} bytes (< 512): GPU-memory reads are split into small requests", ctx.name(&n.bdf), pc.mrrs),
                    format!("raise MRRS on {}: `setpci -s {} CAP_EXP+8.w` bits 14:12 (4096 B = 5), or the adapter's firmware/BIOS setting (mlxconfig); it resets on reboot", n.bdf, n.bdf),
                )
                .with(pci_path(&n.bdf, "config"), format!("DevCtl MaxReadReq {} bytes", pc.mrrs)),
            );
        }
    }
    let items: Vec<(Bdf, String)> = unknown.into_iter().collect();
    out.extend(unknown_finding(
        topo,
        CheckId::MpsMrrs,
        "MPS/MRRS",
        &items,
        ROOT_REMEDY,
    ));
    out
}

/// How to stop ACS redirecting peer traffic on `port` (the BIOS, the kernel's
/// `pci=disable_acs_redir`, or `setpci` for a test): the GPU–NIC and GPU–drive checks share it.
pub(super) fn acs_redirect_remedy(port: &Bdf) -> String {
    format!(
        "disable ACS redirect on {port}: in the BIOS (ACS / PCIe P2P setting), or boot with `pci=disable_acs_redir={port}`; for a test, `setpci -s {port} ECAP_ACS+0x6.w=0000` (lost on reboot)"
    )
}

/// The evidence value of a port's ACS control register (from its `config`): offset, raw value
/// and the enabled bits by name.
pub(super) fn acs_control_value(acs: &crate::model::pci_config::AcsCap) -> String {
    if acs.offset == 0 {
        // Read from a text's `ACSCtl:` line, not from config space: no offset to give.
        return format!(
            "ACSCtl = 0x{:04x}: {}",
            acs.control,
            acs.enabled_names().join(" ")
        );
    }
    format!(
        "ACSCtl @0x{:03x} = 0x{:04x}: {}",
        acs.offset + 6,
        acs.control,
        acs.enabled_names().join(" ")
    )
}
