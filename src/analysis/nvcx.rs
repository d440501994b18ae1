//! NVIDIA ConnectX–GPU complexes, found the way NVIDIA's `rdma_topo` finds them
//! (linux-rdma/rdma-core `kernel-boot/rdma_topo`, `PCITopo`), and the ACS each port of them
//! must have. Read from the [`Paths`] model; nothing here reads the machine.
//!
//! Three platform types, detected in rdma_topo's order:
//! - **Data Direct** (any ConnectX-8 DMA function `15b3:2100`; GB300, some GB200): a Grace root
//!   port, the ConnectX switch (`15b3:197c`) below it with the DMA function on one downstream
//!   port and, one CX switch level deeper, the GPU on the other. Required ACS: the DMA
//!   function's port `xx110x1` (Completion Redirect on, Request Redirect off), the GPU's port in
//!   the shared switch `xx101x1` (Request Redirect on, Completion Redirect off), the root port
//!   `xx111x0` (Source Validation off, so the segment is one IOMMU group); the DMA function and
//!   the GPU must share an IOMMU group.
//! - **NUMA** (a GPU directly on a Grace/Vera root port; GB200 with ConnectX-7): the NICs and
//!   GPUs of a NUMA node form one complex; every IOMMU group among them must be distinct and the
//!   NIC functions must not have ATS.
//! - **Inline** (a GPU one CX switch level below the ConnectX switch that also holds the CX NIC;
//!   HGX B300): bare metal wants ACS off (`xx000x0`) on the NIC's and GPU's ports and on the root
//!   port, NIC and GPU in one IOMMU group; set up for virtual machines (the NIC has ATS, as
//!   rdma_topo decides) the NIC's port gets `1x111x1`, the others the kernel's isolating default,
//!   and NIC and GPU distinct groups.
//!
//! Every other ConnectX switch port and Grace/Vera root port with ACS gets the kernel's isolating
//! default `xx111x1` (`xx101x1` on Vera, which hard-wires Completion Redirect off) on Data Direct
//! and NUMA platforms and in VM mode, else `xx000x0`. Masks read bit 6 (Direct Translated) down
//! to bit 0 (Source Validation); `x` keeps the bit (the kernel's `pci=config_acs=` syntax).

use crate::analysis::paths::{DevIx, Paths};
use crate::model::parts::{self, Part};
use crate::model::rdma_topo::ComplexKind;
use crate::model::{Bdf, DeviceKind};

/// An ACS control requirement: bits that must be set and bits that must be clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcsMask {
    /// Bits that must be 1.
    pub set: u16,
    /// Bits that must be 0.
    pub clear: u16,
}

impl AcsMask {
    /// From a pattern of 7 characters, bit 6 first (`xx110x1`).
    pub fn parse(pattern: &str) -> Option<AcsMask> {
        let b = pattern.as_bytes();
        if b.len() != 7 {
            return None;
        }
        let mut m = AcsMask { set: 0, clear: 0 };
        for (i, c) in b.iter().enumerate() {
            let bit = 1u16 << (6 - i);
            match c {
                b'1' => m.set |= bit,
                b'0' => m.clear |= bit,
                b'x' => {}
                _ => return None,
            }
        }
        Some(m)
    }

    /// The pattern (`xx110x1`).
    pub fn pattern(self) -> String {
        (0..7)
            .map(|i| {
                let bit = 1u16 << (6 - i);
                if self.set & bit != 0 {
                    '1'
                } else if self.clear & bit != 0 {
                    '0'
                } else {
                    'x'
                }
            })
            .collect()
    }

    /// Whether a control register value satisfies the mask.
    pub fn holds(self, control: u16) -> bool {
        control & self.set == self.set && control & self.clear == 0
    }

    /// The control value with the mask applied (rdma_topo's `combine_acs`).
    pub fn apply(self, control: u16) -> u16 {
        (control | self.set) & !self.clear
    }
}

/// The kernel's isolating default for a port (`xx111x1`; Vera root ports `xx101x1`).
fn kernel_isolated(part: Option<Part>) -> AcsMask {
    let p = if part == Some(Part::VeraRootPort) {
        "xx101x1"
    } else {
        "xx111x1"
    };
    AcsMask::parse(p).unwrap_or(AcsMask { set: 0, clear: 0 })
}

fn mask(p: &str) -> AcsMask {
    AcsMask::parse(p).unwrap_or(AcsMask { set: 0, clear: 0 })
}

/// One complex: the GPU(s), NIC function(s), and for Data Direct the DMA function, with the
/// ports rdma_topo configures.
#[derive(Debug, Clone, PartialEq)]
pub struct Complex {
    /// The platform type.
    pub kind: ComplexKind,
    /// GPUs.
    pub gpus: Vec<DevIx>,
    /// NIC functions (physical functions).
    pub nics: Vec<DevIx>,
    /// The Data Direct DMA function.
    pub dma: Option<DevIx>,
    /// The root port above the shared ConnectX switch.
    pub root_port: Option<DevIx>,
    /// The shared switch's downstream port towards the DMA function (Data Direct) or the NIC
    /// (inline).
    pub nic_port: Option<DevIx>,
    /// The shared switch's downstream port towards the GPU.
    pub gpu_port: Option<DevIx>,
    /// NUMA node (NUMA complexes).
    pub numa: Option<u32>,
    /// Where the structure differs from what rdma_topo expects, in words.
    pub problems: Vec<String>,
}

/// The platform as rdma_topo would see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    /// rdma_topo's topology type.
    pub kind: ComplexKind,
    /// Its complexes.
    pub complexes: Vec<Complex>,
    /// Inline platforms: set up for virtual machines (the NIC functions have the ATS
    /// capability, rdma_topo's auto-detection), `None` when not decidable.
    pub virt: Option<bool>,
    /// Why `virt` is what it is.
    pub virt_why: String,
}

/// What a port's ACS must be, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct AcsRule {
    /// The port.
    pub port: DevIx,
    /// The requirement.
    pub mask: AcsMask,
    /// Its role in words (`the Data Direct DMA function's port in the shared ConnectX switch`).
    pub role: String,
    /// Whether the mask asks for a redirect (RR or CR set).
    pub requires_redirect: bool,
}

fn part(p: &Paths, i: DevIx) -> Option<Part> {
    parts::part_of(p.device(i))
}

fn is_cx_switch(p: &Paths, i: DevIx) -> bool {
    part(p, i) == Some(Part::CxSwitch)
}

/// The child of `usp` on `x`'s chain (the shared switch's downstream port towards `x`).
fn port_below(p: &Paths, usp: DevIx, x: DevIx) -> Option<DevIx> {
    let c = p.chain(x);
    let k = c.iter().position(|&d| d == usp)?;
    k.checked_sub(1).map(|j| c[j])
}

/// The ConnectX switch upstream port two devices share (the lowest), when their chains meet at
/// a CX switch port.
fn shared_cx_usp(p: &Paths, a: DevIx, b: DevIx) -> Option<DevIx> {
    let lca = p.lca(a, b)?;
    if !is_cx_switch(p, lca) {
        return None;
    }
    match p.device(lca).kind {
        DeviceKind::SwitchUpstream => Some(lca),
        _ => p.device(lca).parent.and_then(|u| p.index(&u)),
    }
}

fn nvidia_gpus(p: &Paths) -> Vec<DevIx> {
    (0..p.topo().devices.len() as DevIx)
        .filter(|&i| {
            let d = p.device(i);
            d.kind == DeviceKind::Gpu && part(p, i) == Some(Part::NvidiaGpu) && !d.is_vf()
        })
        .collect()
}

/// Detects the platform (rdma_topo's order: Data Direct, NUMA, inline); `None` when none of
/// them applies.
pub fn detect(p: &Paths) -> Option<Platform> {
    let n = p.topo().devices.len() as DevIx;
    let dmas: Vec<DevIx> = (0..n)
        .filter(|&i| parts::is_data_direct_dma(p.device(i)))
        .collect();
    let gpus = nvidia_gpus(p);
    if !dmas.is_empty() {
        let complexes = dmas.iter().map(|&d| dma_complex(p, d, &gpus)).collect();
        return Some(Platform {
            kind: ComplexKind::DataDirect,
            complexes,
            virt: None,
            virt_why: "not applicable on Data Direct platforms".into(),
        });
    }
    let on_grace = gpus.iter().any(|&g| {
        p.device(g)
            .parent
            .and_then(|b| p.index(&b))
            .is_some_and(|r| part(p, r).is_some_and(Part::is_nvidia_root_port))
    });
    let cx_nics: Vec<DevIx> = (0..n)
        .filter(|&i| part(p, i) == Some(Part::CxNic) && !p.device(i).is_vf())
        .collect();
    if on_grace {
        let mut nodes: Vec<u32> = gpus
            .iter()
            .chain(cx_nics.iter())
            .filter_map(|&i| p.numa(i))
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        let complexes = nodes
            .into_iter()
            .map(|node| {
                let gs: Vec<DevIx> = gpus
                    .iter()
                    .copied()
                    .filter(|&g| p.numa(g) == Some(node))
                    .collect();
                let ns: Vec<DevIx> = cx_nics
                    .iter()
                    .copied()
                    .filter(|&x| p.numa(x) == Some(node))
                    .collect();
                let mut problems = Vec::new();
                if gs.is_empty() {
                    problems.push(format!("no GPU on NUMA node {node}"));
                }
                if ns.is_empty() {
                    problems.push(format!("no ConnectX NIC on NUMA node {node}"));
                }
                Complex {
                    kind: ComplexKind::Numa,
                    gpus: gs,
                    nics: ns,
                    dma: None,
                    root_port: None,
                    nic_port: None,
                    gpu_port: None,
                    numa: Some(node),
                    problems,
                }
            })
            .collect();
        return Some(Platform {
            kind: ComplexKind::Numa,
            complexes,
            virt: None,
            virt_why: "not applicable on NUMA-based platforms".into(),
        });
    }
    let any_cx_switch = (0..n).any(|i| is_cx_switch(p, i));
    if !(any_cx_switch && !gpus.is_empty() && !cx_nics.is_empty()) {
        return None;
    }
    let complexes: Vec<Complex> = gpus
        .iter()
        .filter_map(|&g| inline_complex(p, g, &cx_nics))
        .collect();
    if complexes.is_empty() {
        return None;
    }
    let (virt, virt_why) = inline_virt(p, &complexes);
    Some(Platform {
        kind: ComplexKind::Inline,
        complexes,
        virt,
        virt_why,
    })
}

fn dma_complex(p: &Paths, dma: DevIx, gpus: &[DevIx]) -> Complex {
    let nics: Vec<DevIx> = p.dma_users(dma).filter(|&u| !p.device(u).is_vf()).collect();
    let mut problems = Vec::new();
    let dd = p.device(dma).bdf;
    let near: Vec<(DevIx, DevIx)> = gpus
        .iter()
        .filter_map(|&g| shared_cx_usp(p, dma, g).map(|u| (g, u)))
        .collect();
    let (gpu, usp) = match near.as_slice() {
        [(g, u)] => (Some(*g), Some(*u)),
        [] => {
            problems.push(format!(
                "no GPU shares a ConnectX switch with DMA function {dd}"
            ));
            (None, None)
        }
        many => {
            problems.push(format!(
                "{} GPUs share a ConnectX switch with DMA function {dd}; rdma_topo expects one",
                many.len()
            ));
            (Some(many[0].0), Some(many[0].1))
        }
    };
    if nics.is_empty() && p.device(dma).data_direct.is_none() {
        problems.push(format!(
            "DMA function {dd} is not paired with an RDMA function"
        ));
    }
    let nic_port = usp.and_then(|u| port_below(p, u, dma));
    let gpu_port = match (usp, gpu) {
        (Some(u), Some(g)) => port_below(p, u, g),
        _ => None,
    };
    let root_port = usp.and_then(|u| p.device(u).parent.and_then(|b| p.index(&b)));
    if let Some(r) = root_port
        && !part(p, r).is_some_and(Part::is_nvidia_root_port)
    {
        problems.push(format!(
            "the ConnectX switch above DMA function {dd} hangs under {} ({}), not a Grace root port",
            p.device(r).bdf,
            p.device(r).kind.as_str()
        ));
    }
    Complex {
        kind: ComplexKind::DataDirect,
        gpus: gpu.into_iter().collect(),
        nics,
        dma: Some(dma),
        root_port: root_port.filter(|&r| p.device(r).kind == DeviceKind::RootPort),
        nic_port: nic_port.filter(|&d| p.device(d).kind == DeviceKind::SwitchDownstream),
        gpu_port: gpu_port.filter(|&d| p.device(d).kind == DeviceKind::SwitchDownstream),
        numa: p.numa(dma),
        problems,
    }
}

fn inline_complex(p: &Paths, g: DevIx, cx_nics: &[DevIx]) -> Option<Complex> {
    let nic = cx_nics
        .iter()
        .copied()
        .filter_map(|x| shared_cx_usp(p, x, g).map(|u| (x, u)))
        .min_by_key(|&(x, _)| p.device(x).bdf)?;
    let (x, usp) = nic;
    let mut problems = Vec::new();
    let root_port = p
        .chain(usp)
        .iter()
        .copied()
        .find(|&d| p.device(d).kind == DeviceKind::RootPort);
    if root_port.is_none() {
        problems.push(format!(
            "no root port above the ConnectX switch of GPU {}",
            p.device(g).bdf
        ));
    }
    Some(Complex {
        kind: ComplexKind::Inline,
        gpus: vec![g],
        nics: vec![x],
        dma: None,
        root_port,
        nic_port: port_below(p, usp, x)
            .filter(|&d| p.device(d).kind == DeviceKind::SwitchDownstream),
        gpu_port: port_below(p, usp, g)
            .filter(|&d| p.device(d).kind == DeviceKind::SwitchDownstream),
        numa: p.numa(x),
        problems,
    })
}

/// rdma_topo's virt auto-detection: the primary NIC of every complex has the ATS capability
/// (VM mode) or none has (bare metal); mixed or unreadable: undecided.
fn inline_virt(p: &Paths, complexes: &[Complex]) -> (Option<bool>, String) {
    let mut seen = Vec::new();
    for c in complexes {
        let Some(&x) = c.nics.first() else { continue };
        let d = p.device(x);
        match d.config.as_ref().filter(|c| c.has_extended()) {
            Some(cfg) => seen.push((
                d.bdf,
                cfg.ext_caps.contains(&crate::model::pci_config::ECAP_ATS),
            )),
            None => {
                return (
                    None,
                    format!(
                        "NIC {} config space not readable as a whole (ATS capability unknown; needs root)",
                        d.bdf
                    ),
                );
            }
        }
    }
    match seen.first() {
        None => (None, "no NIC in a complex".into()),
        Some(&(_, first)) if seen.iter().all(|&(_, a)| a == first) => (
            Some(first),
            format!(
                "the ConnectX NIC function(s) {} the ATS capability (rdma_topo's auto-detection: ATS means set up for VMs)",
                if first { "have" } else { "lack" }
            ),
        ),
        Some(_) => (
            None,
            "ConnectX NICs differ in ATS capability: VM or bare-metal setup cannot be told (rdma_topo asks for --virt/--no-virt)".into(),
        ),
    }
}

/// The ACS every configured port must have (rdma_topo's `compute_acs`): the complexes' ports,
/// then every other ConnectX switch port and Grace/Vera root port whose config has an ACS
/// capability. Empty for an inline platform whose VM/bare-metal mode is undecided.
pub fn expected_acs(p: &Paths, pl: &Platform) -> Vec<AcsRule> {
    let mut out: Vec<AcsRule> = Vec::new();
    let add = |out: &mut Vec<AcsRule>, port: Option<DevIx>, m: AcsMask, role: String| {
        if let Some(port) = port
            && !out.iter().any(|r| r.port == port)
        {
            let rr = crate::model::pci_config::acs::RR | crate::model::pci_config::acs::CR;
            out.push(AcsRule {
                port,
                mask: m,
                role,
                requires_redirect: m.set & rr != 0,
            });
        }
    };
    let virt = match pl.kind {
        ComplexKind::Inline => match pl.virt {
            Some(v) => v,
            None => return Vec::new(),
        },
        _ => false,
    };
    for c in &pl.complexes {
        let gpu = c.gpus.first().map(|&g| p.device(g).bdf.to_string());
        let gpu = gpu.as_deref().unwrap_or("?");
        match c.kind {
            ComplexKind::DataDirect => {
                let dma = c
                    .dma
                    .map(|d| p.device(d).bdf.to_string())
                    .unwrap_or_default();
                add(
                    &mut out,
                    c.nic_port,
                    mask("xx110x1"),
                    format!(
                        "the port of Data Direct DMA function {dma} in the ConnectX switch it shares with GPU {gpu}"
                    ),
                );
                add(
                    &mut out,
                    c.gpu_port,
                    mask("xx101x1"),
                    format!(
                        "the port towards GPU {gpu} in the ConnectX switch it shares with DMA function {dma}"
                    ),
                );
                add(
                    &mut out,
                    c.root_port,
                    mask("xx111x0"),
                    format!("the Grace root port above DMA function {dma} and GPU {gpu}"),
                );
            }
            ComplexKind::Inline => {
                let nic = c
                    .nics
                    .first()
                    .map(|&x| p.device(x).bdf.to_string())
                    .unwrap_or_default();
                let (np, gp, rp) = if virt {
                    (
                        mask("1x111x1"),
                        kernel_isolated(c.gpu_port.and_then(|d| part(p, d))),
                        kernel_isolated(c.root_port.and_then(|d| part(p, d))),
                    )
                } else {
                    (mask("xx000x0"), mask("xx000x0"), mask("xx000x0"))
                };
                add(
                    &mut out,
                    c.nic_port,
                    np,
                    format!(
                        "the port of NIC {nic} in the ConnectX switch it shares with GPU {gpu}"
                    ),
                );
                add(
                    &mut out,
                    c.gpu_port,
                    gp,
                    format!(
                        "the port towards GPU {gpu} in the ConnectX switch it shares with NIC {nic}"
                    ),
                );
                add(
                    &mut out,
                    c.root_port,
                    rp,
                    format!("the root port above NIC {nic} and GPU {gpu}"),
                );
            }
            ComplexKind::Numa => {}
        }
    }
    let isolate = matches!(pl.kind, ComplexKind::DataDirect | ComplexKind::Numa) || virt;
    for i in 0..p.topo().devices.len() as DevIx {
        let pt = part(p, i);
        let d = p.device(i);
        let configurable = (pt == Some(Part::CxSwitch)
            || pt.is_some_and(Part::is_nvidia_root_port))
            && d.config.as_ref().is_some_and(|c| c.acs.is_some());
        if !configurable {
            continue;
        }
        let (m, what) = if isolate {
            (kernel_isolated(pt), "the kernel's isolating default")
        } else {
            (mask("xx000x0"), "ACS off")
        };
        add(
            &mut out,
            Some(i),
            m,
            format!(
                "another {} ({what})",
                if pt == Some(Part::CxSwitch) {
                    "ConnectX switch port"
                } else {
                    "Grace/Vera root port"
                }
            ),
        );
    }
    out
}

/// The rdma_topo type name a complex list was detected as, for messages.
pub fn kind_words(k: ComplexKind) -> &'static str {
    match k {
        ComplexKind::DataDirect => "Data Direct (DMA-based) ConnectX-8 platform",
        ComplexKind::Inline => "inline ConnectX switch platform",
        ComplexKind::Numa => "NUMA-based Grace platform",
    }
}

/// The address of a device index, for messages.
pub fn bdf(p: &Paths, i: DevIx) -> Bdf {
    p.device(i).bdf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_read_like_rdma_topo() {
        let m = AcsMask::parse("xx110x1").unwrap();
        assert_eq!(m.set, 0x19);
        assert_eq!(m.clear, 0x04);
        assert_eq!(m.pattern(), "xx110x1");
        assert!(m.holds(0x19));
        assert!(m.holds(0x1b));
        assert!(!m.holds(0x1d));
        assert_eq!(m.apply(0x1d), 0x19);
        assert_eq!(AcsMask::parse("1x111x1").unwrap().set, 0x5d);
        assert_eq!(AcsMask::parse("xx111x0").unwrap().apply(0x1d), 0x1c);
        assert!(AcsMask::parse("xx11x1").is_none());
        assert!(AcsMask::parse("xx11?x1").is_none());
    }
}
