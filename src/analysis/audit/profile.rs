//! Expected-layout profiles: what a node of a known design should look like (GPU count and
//! NUMA placement, one compute NIC per GPU at PIX/PXB on the same NUMA node, links at full
//! width), built in for DGX H100/H200, DGX A100, HGX B300, GB300 and GB200 trays and a generic
//! rail-optimised node (shared/reference/ecosystem.md §4, OCI's published B300/GB300 files,
//! rdma_topo's complexes; docs/nextgen.md), or read from a TOML file. [`diff`] reports missing,
//! extra and moved devices by role as `profile-diff` findings.

use super::arrangement::{location, target};
use super::{CheckId, Ctx, Evidence, Finding, Severity, Subject, device_place, pci_path};
use crate::analysis::classify::Label;
use crate::analysis::pairing::assign_rails;
use crate::model::{Bdf, Device};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Expected GPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuRule {
    /// Number of GPUs.
    pub count: Option<usize>,
    /// NUMA node of each GPU, GPUs in PCI address order.
    pub numa: Option<Vec<u32>>,
    /// Minimum PCIe generation of each GPU's link capability.
    pub pcie_gen: Option<u32>,
    /// Minimum PCIe width of each GPU's link capability.
    pub pcie_width: Option<u32>,
    /// NVLink-C2C links up per GPU (Grace systems; NCCL's `<c2c count>`, NVML's up links).
    #[serde(default)]
    pub c2c_links: Option<u32>,
}

/// Expected compute NICs (rail k = GPU k in address order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicRule {
    /// Every GPU has a compute NIC of its own.
    #[serde(default = "yes")]
    pub one_per_gpu: bool,
    /// Worst acceptable GPU–NIC path: `PIX`, `PXB`, `PHB`, `NODE` or `SYS`.
    #[serde(default = "pxb")]
    pub max_path: String,
    /// The NIC is on the GPU's NUMA node.
    #[serde(default = "yes")]
    pub same_numa: bool,
    /// Every hop between the GPU and its NIC runs at its full width.
    #[serde(default = "yes")]
    pub full_width: bool,
    /// PCI bus of each rail's compute NIC (`"0x18"`), by rail.
    pub buses: Option<Vec<String>>,
    /// RDMA name of each rail's compute NIC (`mlx5_0`), by rail.
    pub rdma: Option<Vec<String>>,
    /// RDMA NIC functions allowed beyond the compute NICs (storage, in-band).
    pub aux_max: Option<usize>,
}

fn yes() -> bool {
    true
}
fn pxb() -> String {
    "PXB".into()
}

impl Default for NicRule {
    fn default() -> Self {
        NicRule {
            one_per_gpu: true,
            max_path: pxb(),
            same_numa: true,
            full_width: true,
            buses: None,
            rdma: None,
            aux_max: None,
        }
    }
}

/// An expected layout (the TOML file format of `--profile FILE`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Name shown in the report.
    pub name: String,
    /// Where the layout comes from.
    #[serde(default)]
    pub description: String,
    /// GPU expectations.
    #[serde(default)]
    pub gpus: GpuRule,
    /// Compute-NIC expectations.
    #[serde(default)]
    pub nics: NicRule,
}

/// Names of the built-in profiles.
pub const BUILTIN: [&str; 7] = [
    "dgx-h100",
    "dgx-h200",
    "dgx-a100",
    "hgx-b300",
    "gb300",
    "gb200",
    "rail-optimised",
];

/// The label a profile's `nics.max_path` names: `PIX`, `PXB`, `PHB`, `NODE` or `SYS`, in any
/// case (not `SOC`, `X`, `NV<n>` or `?`).
fn max_label(text: &str) -> Option<Label> {
    let up = text.to_ascii_uppercase();
    if !matches!(up.as_str(), "PIX" | "PXB" | "PHB" | "NODE" | "SYS") {
        return None;
    }
    up.parse().ok()
}

impl Profile {
    /// A built-in profile by name (`dgx-h100`, `dgx-h200`, `dgx-a100`, `rail-optimised` /
    /// `rail-optimized`).
    pub fn builtin(name: &str) -> Option<Profile> {
        let n = name.to_ascii_lowercase();
        Some(match n.as_str() {
            // DGX H100/H200 User Guide "Network Modules"; compute NIC buses from the BasePOD
            // SR-IOV guide (ecosystem.md §4.1): GPU k ↔ its ConnectX-7 behind one switch.
            "dgx-h100" | "dgx-h200" => Profile {
                name: n.clone(),
                description: "NVIDIA DGX H100/H200: 8 GPUs (NUMA 0,0,0,0,1,1,1,1, Gen5 x16), 8 single-port ConnectX-7 compute NICs one per GPU at PIX/PXB (buses 18 40 4f 5e 9a c0 ce dc), 2 dual-port storage/in-band ConnectX-7".into(),
                gpus: GpuRule { count: Some(8), numa: Some(vec![0, 0, 0, 0, 1, 1, 1, 1]), pcie_gen: Some(5), pcie_width: Some(16), c2c_links: None },
                nics: NicRule {
                    buses: Some(["0x18", "0x40", "0x4f", "0x5e", "0x9a", "0xc0", "0xce", "0xdc"].map(String::from).to_vec()),
                    aux_max: Some(4),
                    ..NicRule::default()
                },
            },
            // DGX A100: 8 GPUs and 8 ConnectX-6 compute NICs, two of each per PCIe switch;
            // 2 dual-port storage NICs. Buses and NUMA nodes are not pinned (not verified).
            "dgx-a100" => Profile {
                name: n.clone(),
                description: "NVIDIA DGX A100: 8 GPUs (Gen4 x16), 8 ConnectX-6 compute NICs one per GPU at PIX/PXB on the GPU's NUMA node, 2 dual-port storage ConnectX-6".into(),
                gpus: GpuRule { count: Some(8), numa: None, pcie_gen: Some(4), pcie_width: Some(16), c2c_links: None },
                nics: NicRule { aux_max: Some(4), ..NicRule::default() },
            },
            // OCI's published B300 topology (shared/reference/realworld): 8 B300 on NUMA
            // 0,0,0,0,1,1,1,1 at Gen6 x16, each one ConnectX switch level below the CX-8 it
            // shares a switch with (PXB). Buses are OCI's and not pinned.
            "hgx-b300" => Profile {
                name: n.clone(),
                description: "HGX B300: 8 GPUs (NUMA 0,0,0,0,1,1,1,1, Gen6 x16), each behind the ConnectX-8's internal switch with its own CX-8 at PXB on the same NUMA node (ACS per rdma_topo's inline rules is checked by acs-redirect)".into(),
                gpus: GpuRule { count: Some(8), numa: Some(vec![0, 0, 0, 0, 1, 1, 1, 1]), pcie_gen: Some(6), pcie_width: Some(16), c2c_links: None },
                nics: NicRule::default(),
            },
            // One GB300 compute tray as OCI's published file shows it: 4 GB300 (2 per Grace,
            // Gen6 x16, 5 C2C links up), each NIC's Data Direct DMA function in the GPU's
            // ConnectX switch (PXB).
            "gb300" => Profile {
                name: n.clone(),
                description: "GB300 compute tray: 4 GPUs (NUMA 0,0,1,1, Gen6 x16, 5 NVLink-C2C links up each), one ConnectX-8 per GPU whose Data Direct DMA function is at PXB from it on the same NUMA node (ACS and IOMMU groups per rdma_topo's Data Direct rules are checked by acs-redirect and iommu-group)".into(),
                gpus: GpuRule { count: Some(4), numa: Some(vec![0, 0, 1, 1]), pcie_gen: Some(6), pcie_width: Some(16), c2c_links: Some(5) },
                nics: NicRule::default(),
            },
            // GB200 compute tray (rdma_topo's NUMA-based complex): 4 GPUs on Grace root ports,
            // 2 per Grace; each NIC on another Grace root port of the same NUMA node: nvidia-smi
            // NODE, NCCL P2C. C2C link count and PCIe generation are not pinned (no published
            // figure).
            "gb200" => Profile {
                name: n.clone(),
                description: "GB200 compute tray: 4 GPUs (NUMA 0,0,1,1) reaching Grace over C2C, one compute NIC per GPU on the same NUMA node at NODE or better (NCCL: P2C)".into(),
                gpus: GpuRule { count: Some(4), numa: Some(vec![0, 0, 1, 1]), pcie_gen: None, pcie_width: None, c2c_links: None },
                nics: NicRule { max_path: "NODE".into(), ..NicRule::default() },
            },
            "rail-optimised" | "rail-optimized" => Profile {
                name: "rail-optimised".into(),
                description: "rail-optimised: every GPU has its own NIC at PIX or PXB, on the same NUMA node, links at full width".into(),
                gpus: GpuRule::default(),
                nics: NicRule::default(),
            },
            _ => return None,
        })
    }

    /// Parses a TOML profile and checks its values.
    pub fn from_toml(source: &str, text: &str) -> Result<Profile> {
        let p: Profile =
            toml::from_str(text).with_context(|| format!("{source}: not a valid profile"))?;
        if max_label(&p.nics.max_path).is_none() {
            bail!(
                "{source}: nics.max_path = {:?}; expected PIX, PXB, PHB, NODE or SYS",
                p.nics.max_path
            );
        }
        for b in p.nics.buses.iter().flatten() {
            if parse_bus(b).is_none() {
                bail!("{source}: nics.buses entry {b:?} is not a bus number (\"0x18\")");
            }
        }
        Ok(p)
    }

    /// A built-in name, else a TOML file path.
    pub fn resolve(name_or_path: &str) -> Result<Profile> {
        if let Some(p) = Profile::builtin(name_or_path) {
            return Ok(p);
        }
        let path = std::path::Path::new(name_or_path);
        if !path.exists() {
            bail!(
                "profile {name_or_path:?} is neither a built-in ({}) nor a file",
                BUILTIN.join(", ")
            );
        }
        let text = crate::sources::fsroot::input::read_input_text(
            path,
            crate::sources::fsroot::input::MAX_SIDE_FILE_BYTES,
        )
        .with_context(|| format!("cannot read profile {}", path.display()))?;
        Profile::from_toml(&path.display().to_string(), &text)
    }
}

fn parse_bus(s: &str) -> Option<u8> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u8::from_str_radix(t, 16).ok()
}

fn gen_of(gts: f64) -> u32 {
    match gts {
        g if g >= 63.0 => 6,
        g if g >= 31.0 => 5,
        g if g >= 15.0 => 4,
        g if g >= 7.0 => 3,
        g if g >= 4.0 => 2,
        _ => 1,
    }
}

fn pdiff(sev: Severity, subject: Subject, summary: String, remedy: String) -> Finding {
    Finding::new(CheckId::ProfileDiff, sev, subject, summary, remedy)
}

/// Hops between a GPU and its NIC below their full width: `(device, current, max)`.
fn narrow_hops(ctx: &Ctx, g: &Bdf, n: &Bdf) -> Vec<(Bdf, u32, u32)> {
    let topo = ctx.topo;
    let pd = ctx.path_devices(g, n);
    // A Data Direct NIC's last hop is its DMA function's.
    let n = &topo
        .device(n)
        .and_then(|d| d.data_direct.as_ref())
        .map_or(*n, |dd| dd.dma);
    let mut out = Vec::new();
    for b in std::iter::once(g)
        .chain(pd.bridges())
        .chain(std::iter::once(n))
    {
        let Some(l) = topo.device(b).and_then(|d| d.link) else {
            continue;
        };
        if let (Some(c), Some(m)) = (l.current_width, l.max_width)
            && c < m
        {
            out.push((*b, c, m));
        }
    }
    out
}

/// Compares the node with a profile: the GPUs by role (count, then each GPU's NUMA node,
/// link and C2C), each rail's compute NIC (found, then judged), then the NICs left over.
pub fn diff(ctx: &Ctx, p: &Profile) -> Vec<Finding> {
    let mut out = Vec::new();
    gpu_count(ctx, p, &mut out);
    for (k, g) in ctx.gpus.iter().enumerate() {
        gpu_numa(ctx, p, k, g, &mut out);
        gpu_link(p, k, g, &mut out);
    }
    let max_label = max_label(&p.nics.max_path).unwrap_or(Label::Pxb);
    let rail_pairs = rail_pairs(ctx);
    let mut compute: Vec<Bdf> = Vec::new();
    for (k, g) in ctx.gpus.iter().enumerate() {
        let Some(n) = rail_nic(ctx, p, &rail_pairs, k, g, &mut out) else {
            continue;
        };
        compute.push(n.bdf);
        rail_nic_checks(ctx, p, max_label, k, g, n, &mut out);
    }
    extra_nics(ctx, p, &compute, &mut out);
    out
}

/// A GPU's role in the profile: its index in address order.
fn role(k: usize) -> String {
    format!("GPU {k}")
}

/// GPUs missing or beyond the profile's count.
fn gpu_count(ctx: &Ctx, p: &Profile, out: &mut Vec<Finding>) {
    let Some(c) = p.gpus.count else { return };
    let f = ctx.gpus.len();
    if f < c {
        out.push(pdiff(
            Severity::Error,
            Subject::Node,
            format!("missing GPU(s): profile {} expects {c}, found {f}", p.name),
            "check that every GPU is seated and visible (`lspci -d 10de:`), and that none fell off the bus (dmesg: 'fallen off the bus', Xid 79)".into(),
        ));
    } else if f > c {
        out.push(pdiff(
            Severity::Warning,
            Subject::Node,
            format!("extra GPU(s): profile {} expects {c}, found {f}", p.name),
            "check that the profile matches this node".into(),
        ));
    }
}

/// GPU `k` on another NUMA node than the profile places it.
fn gpu_numa(ctx: &Ctx, p: &Profile, k: usize, g: &Device, out: &mut Vec<Finding>) {
    let Some(want) = p.gpus.numa.as_ref().and_then(|v| v.get(k)) else {
        return;
    };
    let have = ctx.topo.numa_of(g);
    if have != Some(*want) {
        out.push(
            pdiff(
                Severity::Error,
                Subject::Device(g.bdf),
                format!(
                    "moved: {} ({}) is on NUMA node {}, profile {} expects {want}",
                    role(k),
                    g.bdf,
                    have.map(|n| n.to_string())
                        .unwrap_or_else(|| "unknown".into()),
                    p.name
                ),
                format!(
                    "GPU {} is at {}; the profile places it on NUMA node {want}",
                    g.bdf,
                    location(ctx, g)
                ),
            )
            .with(
                pci_path(&g.bdf, "numa_node"),
                have.map(|n| n.to_string()).unwrap_or_else(|| "-1".into()),
            ),
        );
    }
}

/// GPU `k`'s link capability (generation, then C2C links, then width) below the profile's.
fn gpu_link(p: &Profile, k: usize, g: &Device, out: &mut Vec<Finding>) {
    let l = g.link.unwrap_or_default();
    if let (Some(want), Some(m)) = (p.gpus.pcie_gen, l.max_gts)
        && gen_of(m) < want
    {
        out.push(
            pdiff(
                Severity::Error,
                Subject::Device(g.bdf),
                format!(
                    "{} ({}) link capable of Gen{} only; profile {} expects Gen{want}",
                    role(k),
                    g.bdf,
                    gen_of(m),
                    p.name
                ),
                "check the BIOS PCIe generation setting and the riser/slot the GPU is in".into(),
            )
            .with(
                pci_path(&g.bdf, "max_link_speed"),
                format!("{m:.1} GT/s PCIe"),
            ),
        );
    }
    if let Some(want) = p.gpus.c2c_links {
        let up = g.c2c.as_ref().and_then(|c| c.links_up);
        if up.is_some_and(|u| u < want) || g.c2c.is_none() {
            out.push(
                pdiff(
                    Severity::Error,
                    Subject::Device(g.bdf),
                    format!(
                        "{} ({}) has {} NVLink-C2C link(s) up; profile {} expects {want}",
                        role(k),
                        g.bdf,
                        up.map(|u| u.to_string()).unwrap_or_else(|| "no".into()),
                        p.name
                    ),
                    "read `nvidia-smi c2c -s` on the node; a C2C link down needs the tray serviced"
                        .into(),
                )
                .with(
                    format!("GPU {} C2C", g.bdf),
                    g.c2c
                        .as_ref()
                        .map(|c| c.source.clone())
                        .unwrap_or_else(|| "(no C2C link reported)".into()),
                ),
            );
        }
    }
    if let (Some(want), Some(m)) = (p.gpus.pcie_width, l.max_width)
        && m < want
    {
        out.push(
            pdiff(
                Severity::Error,
                Subject::Device(g.bdf),
                format!(
                    "{} ({}) link capable of x{m} only; profile {} expects x{want}",
                    role(k),
                    g.bdf,
                    p.name
                ),
                "move the GPU to a full-width slot or fix the slot's bifurcation setting".into(),
            )
            .with(pci_path(&g.bdf, "max_link_width"), m.to_string()),
        );
    }
}

/// Each GPU's rail NIC (one per GPU, none shared while there are enough RDMA NICs).
fn rail_pairs(ctx: &Ctx) -> Vec<(Bdf, Bdf)> {
    // The rail matching reads every GPU–NIC pair: a near view (large node) is completed.
    let full;
    let v = if ctx.view.near.is_some() {
        full = crate::analysis::pairing::NodeView::gpu_nic(ctx.cl);
        &full
    } else {
        &ctx.view
    };
    let rows: Vec<usize> = ctx
        .gpus
        .iter()
        .filter_map(|g| v.gpus.iter().position(|e| e.bdf == g.bdf))
        .collect();
    assign_rails(&v.cand, &rows)
        .into_iter()
        .zip(&rows)
        .filter_map(|(k, &g)| Some((v.gpus[g].bdf, v.nics.get(k?)?.bdf)))
        .filter(|(_, n)| ctx.nics.iter().any(|x| x.bdf == *n))
        .collect()
}

/// Rail `k`'s compute NIC: by bus, by RDMA name, or the GPU's own rail NIC; a finding when
/// the profile's NIC is not there.
fn rail_nic<'a>(
    ctx: &Ctx<'a>,
    p: &Profile,
    rail_pairs: &[(Bdf, Bdf)],
    k: usize,
    g: &Device,
    out: &mut Vec<Finding>,
) -> Option<&'a Device> {
    if let Some(bus) = p.nics.buses.as_ref().and_then(|v| v.get(k)) {
        let want = parse_bus(bus);
        let hit = ctx.nics.iter().find(|n| Some(n.bdf.bus) == want).copied();
        if hit.is_none() {
            out.push(pdiff(
                Severity::Error,
                Subject::Rail(k),
                format!("missing: compute NIC of rail {k} (for {} {}) expected on bus {bus}, none there", role(k), g.bdf),
                format!("install or reseat the rail-{k} adapter {}", target(ctx, g)),
            ));
        }
        hit
    } else if let Some(name) = p.nics.rdma.as_ref().and_then(|v| v.get(k)) {
        let hit = ctx
            .nics
            .iter()
            .find(|n| n.rdma_names().any(|r| r == name))
            .copied();
        if hit.is_none() {
            out.push(pdiff(
                Severity::Error,
                Subject::Rail(k),
                format!(
                    "missing: compute NIC {name} of rail {k} (for {} {}) not found",
                    role(k),
                    g.bdf
                ),
                format!("install or reseat the rail-{k} adapter {}", target(ctx, g)),
            ));
        }
        hit
    } else if p.nics.one_per_gpu {
        let pair = rail_pairs.iter().find(|x| x.0 == g.bdf);
        match pair {
            Some(x) if rail_pairs.iter().filter(|y| y.1 == x.1).count() == 1 => {
                ctx.topo.device(&x.1)
            }
            Some(x) => {
                out.push(pdiff(
                    Severity::Error,
                    Subject::Device(g.bdf),
                    format!(
                        "missing: {} ({}) has no compute NIC of its own (shares {} with another GPU); profile {} wants one per GPU",
                        role(k),
                        g.bdf,
                        ctx.name(&x.1),
                        p.name
                    ),
                    format!("add an RDMA NIC {}", target(ctx, g)),
                ));
                None
            }
            None => {
                out.push(pdiff(
                    Severity::Error,
                    Subject::Device(g.bdf),
                    format!(
                        "missing: {} ({}) has no RDMA NIC; profile {} wants one per GPU",
                        role(k),
                        g.bdf,
                        p.name
                    ),
                    format!("add an RDMA NIC {}", target(ctx, g)),
                ));
                None
            }
        }
    } else {
        None
    }
}

/// Rail `k`'s compute NIC judged against its GPU: path class, NUMA node, hop widths.
fn rail_nic_checks(
    ctx: &Ctx,
    p: &Profile,
    max_label: Label,
    k: usize,
    g: &Device,
    n: &Device,
    out: &mut Vec<Finding>,
) {
    let topo = ctx.topo;
    let j = ctx.judge(&g.bdf, &n.bdf);
    if j.label > max_label {
        out.push(
            pdiff(
                Severity::Error,
                ctx.named(&n.bdf),
                format!(
                    "moved: rail-{k} NIC {} is {} from {} ({}); profile {} expects at most {}",
                    ctx.name(&n.bdf),
                    j.word(),
                    role(k),
                    g.bdf,
                    p.name,
                    p.nics.max_path
                ),
                format!(
                    "move NIC {} — now at {} — {}",
                    ctx.name(&n.bdf),
                    location(ctx, n),
                    target(ctx, g)
                ),
            )
            .with_all([device_place(ctx.topo, n)]),
        );
    }
    if p.nics.same_numa {
        let (a, b) = (topo.numa_of(g), topo.numa_of(n));
        if a.is_some() && b.is_some() && a != b {
            out.push(
                pdiff(
                    Severity::Error,
                    ctx.named(&n.bdf),
                    format!(
                        "moved: rail-{k} NIC {} is on NUMA node {}, {} ({}) on {}",
                        ctx.name(&n.bdf),
                        b.unwrap_or(0),
                        role(k),
                        g.bdf,
                        a.unwrap_or(0)
                    ),
                    format!("move NIC {} {}", ctx.name(&n.bdf), target(ctx, g)),
                )
                .with(pci_path(&n.bdf, "numa_node"), b.unwrap_or(0).to_string())
                .with(pci_path(&g.bdf, "numa_node"), a.unwrap_or(0).to_string()),
            );
        }
    }
    if p.nics.full_width {
        let hops = narrow_hops(ctx, &g.bdf, &n.bdf);
        if !hops.is_empty() {
            out.push(
                pdiff(
                    Severity::Error,
                    Subject::Device(g.bdf),
                    format!(
                        "rail {k}: {} hop(s) between {} and {} below full width ({})",
                        hops.len(),
                        g.bdf,
                        ctx.name(&n.bdf),
                        hops.iter()
                            .map(|(b, c, m)| format!("{b} x{c}/x{m}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    "see the link-degraded findings for each hop".into(),
                )
                .with_all(hops.iter().map(|(b, c, _)| {
                    Evidence::new(pci_path(b, "current_link_width"), c.to_string())
                })),
            );
        }
    }
}

/// Extra NICs: RDMA NICs that are no rail's compute NIC, beyond the auxiliary allowance.
fn extra_nics(ctx: &Ctx, p: &Profile, compute: &[Bdf], out: &mut Vec<Finding>) {
    let extra: Vec<&Device> = ctx
        .nics
        .iter()
        .filter(|n| !compute.contains(&n.bdf))
        .copied()
        .collect();
    if let Some(max) = p.nics.aux_max
        && extra.len() > max
    {
        out.push(pdiff(
                Severity::Warning,
                Subject::Node,
                format!(
                    "extra RDMA NIC(s): {} beyond the {} compute NIC(s), profile {} allows {max}: {}",
                    extra.len(),
                    compute.len(),
                    p.name,
                    extra.iter().map(|n| ctx.name(&n.bdf)).collect::<Vec<_>>().join(", ")
                ),
                "check that the profile matches this node; an extra adapter is harmless unless it took a GPU rail's slot".into(),
            ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_resolve() {
        for n in BUILTIN {
            assert!(Profile::builtin(n).is_some(), "{n}");
        }
        assert_eq!(
            Profile::builtin("rail-optimized").unwrap().name,
            "rail-optimised"
        );
        assert!(Profile::resolve("no-such-profile-or-file").is_err());
    }

    #[test]
    fn toml_profile() {
        let p = Profile::from_toml(
            "t.toml",
            "name = \"lab\"\n[gpus]\ncount = 2\nnuma = [0, 1]\n[nics]\nmax_path = \"PHB\"\nbuses = [\"0x14\", \"0x34\"]\naux_max = 0\n",
        )
        .unwrap();
        assert_eq!(p.gpus.count, Some(2));
        assert!(p.nics.same_numa && p.nics.one_per_gpu);
        assert_eq!(p.nics.max_path, "PHB");
        assert!(Profile::from_toml("t", "name = \"x\"\n[nics]\nmax_path = \"FAST\"\n").is_err());
        assert!(Profile::from_toml("t", "name = \"x\"\ntypo = 1\n").is_err());
        assert!(Profile::from_toml("t", "name = \"x\"\n[nics]\nbuses = [\"zz\"]\n").is_err());
    }
}
