//! Classification in words, produced only for the pairs a command prints: the reason for a
//! label with its evidence, NCCL's rules in the order they applied, the hop list (a fold over
//! [`crate::analysis::paths::hops::walk`]) with its bottleneck, and the matrix-wide notes.

use super::nccl_rules::{BaseWhy, Decision};
use super::{Classifier, Hop, Label, NcclView, NicOrder, PairClass, Why};
use crate::analysis::nccl;
use crate::analysis::paths::hops::{self, Step};
use crate::analysis::paths::{AcsRedirect, DevIx, LinkHealth};
use crate::model::linkfmt;
use crate::model::{Bdf, Device, DeviceKind, LinkInfo};

impl Classifier<'_> {
    /// The reason for a label, in words, with its evidence.
    pub fn reason(&self, why: Why, a: &Bdf, b: &Bdf) -> String {
        let t = self.topo();
        // The rules judged the data paths (a NIC's Data Direct DMA function): name theirs.
        let dp = |x: &Bdf| {
            self.paths
                .index(x)
                .map(|i| self.paths.device(self.paths.data_path(i)))
        };
        let da = dp(a).or(t.device(a));
        let db = dp(b).or(t.device(b));
        let hb = |d: Option<&Device>| {
            d.map(|d| d.host_bridge.clone())
                .unwrap_or_else(|| "?".into())
        };
        match why {
            Why::SameDevice => "same device".into(),
            Why::NvLink {
                count,
                fabric: true,
            } => format!(
                "both GPUs are on the NVSwitch fabric; nvidia-smi shows each GPU's {count} NVLinks into it (NV#)"
            ),
            Why::NvLink {
                count,
                fabric: false,
            } => format!("{count} NVLinks directly between the two GPUs (NV#)"),
            Why::Xgmi {
                count,
                direct: true,
            } => format!(
                "xGMI (Infinity Fabric) directly between the two GPUs{}: rocm-smi link type XGMI",
                if count > 0 {
                    format!(" ({count} link{})", if count == 1 { "" } else { "s" })
                } else {
                    String::new()
                }
            ),
            Why::Xgmi { direct: false, .. } => "both GPUs are in one xGMI hive without a direct link reported between them: reached over xGMI through other GPUs of the hive (rocm-smi link type XGMI)".into(),
            Why::SameAdapter => format!(
                "two functions of one adapter ({}): PIX",
                da.map(|d| d.bdf).unwrap_or(*a).adapter()
            ),
            Why::SharedDma { dma } => format!(
                "both NIC functions move their data through one Data Direct DMA function {} (ports of one ConnectX-8): PIX",
                t.devices[dma as usize].bdf
            ),
            Why::CommonBridge { lca, units } => {
                let l = &t.devices[lca as usize];
                let at = match self.paths.switch_name(lca) {
                    Some(s) => format!("switch {s} (port {} {})", l.bdf, l.kind.as_str()),
                    None => format!("{} {}", l.kind.as_str(), l.bdf),
                };
                if units <= 1 {
                    format!("the path meets at {at} and crosses a single PCIe bridge/switch: PIX")
                } else {
                    format!(
                        "the path meets at {at} and crosses {units} PCIe bridges/switches (each switch counted once), without the host bridge: PXB"
                    )
                }
            }
            Why::SameHostBridge => {
                format!("no common switch; both under host bridge {}: PHB", hb(da))
            }
            Why::SameNuma(n) => format!(
                "different host bridges ({} and {}) in NUMA node {n}: NODE",
                hb(da),
                hb(db)
            ),
            Why::SingleNuma => format!(
                "different host bridges ({} and {}); NUMA node not reported, but the machine has a single NUMA node: NODE",
                hb(da),
                hb(db)
            ),
            Why::DifferentNuma(x, y) => format!(
                "different host bridges ({} and {}) in different NUMA nodes ({x} and {y}): SYS",
                hb(da),
                hb(db)
            ),
            Why::NumaUnknown(x, y) => {
                let s =
                    |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_else(|| "unknown".into());
                format!(
                    "different host bridges ({} and {}) and NUMA node {} vs {} on a machine with {} NUMA nodes: NODE or SYS cannot be decided (numa_node reads -1 or was not in the source)",
                    hb(da),
                    hb(db),
                    s(x),
                    s(y),
                    t.numa_nodes.len()
                )
            }
        }
    }

    /// The reason for a label with what ACS on the path does to it: the one wording of a pair's
    /// reason, for [`PairClass::reason`] and for analyses that print only the reason.
    fn reason_with_acs(
        &self,
        label: Label,
        why: Why,
        a: &Bdf,
        b: &Bdf,
        acs: &[AcsRedirect],
    ) -> String {
        let mut reason = self.reason(why, a, b);
        reason.push_str(&self.data_direct_reason(a, b));
        if !acs.is_empty() {
            let ports: Vec<String> = acs
                .iter()
                .map(|r| format!("{} ({})", r.port, r.controls))
                .collect();
            reason.push_str(&format!(
                "; but ACS on {} redirects peer-to-peer requests up to the root complex, so traffic takes the PHB path (label {label}, effective PHB)",
                ports.join(", ")
            ));
        }
        reason
    }

    /// The label of two devices by address with its reason in words (the reason of
    /// [`PairClass`], without the NCCL view or the hops). `None` if either is not in the
    /// topology.
    pub fn label_and_reason(&self, a: &Bdf, b: &Bdf) -> Option<(Label, String)> {
        let (ia, ib) = (self.paths.index(a)?, self.paths.index(b)?);
        let (label, why) = self.label_ix(ia, ib);
        let acs = self.paths.acs_on_path(ia, ib);
        Some((label, self.reason_with_acs(label, why, a, b, &acs)))
    }

    /// One pair with words and hops.
    pub(super) fn classify_ix(&self, a: DevIx, b: DevIx, ep_b: Option<usize>) -> PairClass {
        let (label, why) = self.label_ix(a, b);
        let (ba, bb) = (self.paths.device(a).bdf, self.paths.device(b).bdf);
        let acs = self.paths.acs_on_path(a, b);
        let reason = self.reason_with_acs(label, why, &ba, &bb, &acs);
        let mut nccl = self.nccl_view(a, b, ep_b);
        let (mut hops, faults) = self.hops(a, b, why);
        if !acs.is_empty() {
            nccl.rules.push(
                "NCCL does not read ACS: it still predicts this path, but P2P/GDR traffic is redirected through the root complex (and can fail under an IOMMU)".into(),
            );
            for h in hops.iter_mut() {
                if let Some(r) = acs.iter().find(|r| r.port.to_string() == h.node) {
                    let m = format!("ACS {}: P2P redirected upstream", r.controls);
                    h.note = Some(match h.note.take() {
                        Some(n) => format!("{n}; {m}"),
                        None => m,
                    });
                }
            }
        }
        let mut bottleneck: Option<(usize, f64)> = None;
        for (i, h) in hops.iter().enumerate() {
            if let Some(g) = h.gbytes_per_s
                && bottleneck.is_none_or(|(_, m)| g < m)
            {
                bottleneck = Some((i, g));
            }
        }
        if let Some((i, _)) = bottleneck {
            let degraded = faults.get(i).copied().unwrap_or(false);
            let h = &mut hops[i];
            let mark = if degraded {
                "bottleneck, because the link trained below its capability (reseat/retrain to raise it)"
            } else {
                "bottleneck"
            };
            h.note = Some(match h.note.take() {
                Some(n) => format!("{n}; {mark}"),
                None => mark.to_string(),
            });
        }
        PairClass {
            a: ba,
            b: bb,
            label,
            reason,
            nccl,
            bottleneck_gbytes_per_s: bottleneck.map(|b| b.1),
            bottleneck_hop: bottleneck.map(|b| b.0),
            hops,
        }
    }

    /// The link notes of the hop entered over `child`'s upstream link: unknown, capability
    /// used, or running below capability.
    fn link_note(&self, child: DevIx) -> (Option<LinkInfo>, Option<String>) {
        let e = self.paths.edge(child);
        let Some(l) = e.link else {
            return (
                None,
                (!e.internal).then(|| "link speed/width unknown".into()),
            );
        };
        if e.emulated {
            return (
                Some(l),
                Some(
                    "emulated by the hypervisor: not the physical link, left out of the bottleneck"
                        .into(),
                ),
            );
        }
        let mut note = e
            .capability_used
            .then(|| "current link state unknown; capability used".to_string());
        match e.health {
            LinkHealth::Degraded { .. } => {
                note = Some(format!(
                    "running below what both ends support: {}",
                    e.health.text(&l)
                ))
            }
            LinkHealth::Down => note = Some(format!("link is down: {}", linkfmt::link(&l))),
            LinkHealth::IdleSpeed { .. } => {
                note = Some(format!(
                    "{}: a GPU lowers its link speed when idle",
                    e.health.text(&l)
                ))
            }
            _ => {}
        }
        (Some(l), note)
    }

    fn dev_hop(&self, d: &Device, dev: DevIx, link_from: Option<DevIx>) -> Hop {
        let (link, mut note) = match link_from {
            Some(c) => self.link_note(c),
            None => (None, None),
        };
        if let Some(s) = self.paths.switch_name(dev) {
            let sw = format!("switch {s}");
            note = Some(match note {
                Some(n) => format!("{sw}; {n}"),
                None => sw,
            });
        }
        let dma = crate::model::parts::is_data_direct_dma(d);
        if dma {
            let m = self.dma_hop_note(dev);
            note = Some(match note {
                Some(n) => format!("{m}; {n}"),
                None => m,
            });
        }
        Hop {
            node: d.bdf.to_string(),
            kind: if dma {
                "data-direct-dma".to_string()
            } else {
                d.kind.as_str().to_string()
            },
            link,
            gbytes_per_s: None,
            note,
        }
    }

    /// The worded hop list of a pair: [`hops::walk`] with each step's bandwidth from
    /// [`hops::step_gbytes`], the same fold
    /// [`hops::bottleneck_gbytes`] makes from the chains' running minima.
    /// Beside the hops, whether the link entering each one is a fault by the paths model's
    /// link rule ([`LinkHealth::is_fault`]).
    fn hops(&self, a: DevIx, b: DevIx, why: Why) -> (Vec<Hop>, Vec<bool>) {
        let p = &self.paths;
        let rates = self.rates(a, b);
        let per = rates.nvlink_per_link;
        let mut out = Vec::with_capacity(p.chain(a).len() + p.chain(b).len() + 3);
        let mut faults = Vec::with_capacity(out.capacity());
        hops::walk(p, a, b, why.shape(), |s| {
            let gb = hops::step_gbytes(p, s, &rates);
            faults.push(match s {
                Step::Device {
                    link_from: Some(c), ..
                }
                | Step::HostBridge { link_from: c, .. } => p.edge(c).health.is_fault(),
                _ => false,
            });
            let mut hop = match s {
                Step::Device { dev, link_from } => self.dev_hop(p.device(dev), dev, link_from),
                Step::HostBridge { hb, link_from } => {
                    let (link, note) = self.link_note(link_from);
                    Hop {
                        node: p.host_bridge_name(hb).to_string(),
                        kind: "host-bridge".into(),
                        link,
                        gbytes_per_s: None,
                        note,
                    }
                }
                Step::Smp(x, y) => Hop {
                    node: format!("numa{x}->numa{y}"),
                    kind: "inter-numa".into(),
                    link: None,
                    gbytes_per_s: None,
                    note: Some(match self.inter_cpu {
                        Some((_, bucket)) => {
                            format!("SMP interconnect (NCCL's inter-CPU figure for {bucket})")
                        }
                        None => "SMP interconnect; CPU vendor unknown, bandwidth unknown".into(),
                    }),
                },
                Step::UnknownInterconnect => Hop {
                    node: "numa?".into(),
                    kind: "inter-host-bridge".into(),
                    link: None,
                    gbytes_per_s: None,
                    note: Some("NUMA node unknown: on-CPU link or SMP interconnect".into()),
                },
                Step::OtherHostBridge { hb } => Hop {
                    node: p.host_bridge_name(hb).to_string(),
                    kind: "host-bridge".into(),
                    link: None,
                    gbytes_per_s: None,
                    note: Some("another host bridge".into()),
                },
                Step::NvSwitch { count } => Hop {
                    node: "nvswitch".into(),
                    kind: "nvlink".into(),
                    link: None,
                    gbytes_per_s: None,
                    note: Some(format!(
                        "{count} NVLinks × {per} GB/s into the NVSwitch fabric"
                    )),
                },
                Step::NvPeer { dev, count } => {
                    let mut h = self.dev_hop(p.device(dev), dev, None);
                    h.note = Some(format!("{count} NVLinks × {per} GB/s"));
                    h.kind = format!("{} (nvlink)", h.kind);
                    h
                }
                Step::XgmiPeer { dev, count } => {
                    let mut h = self.dev_hop(p.device(dev), dev, None);
                    let (per, generation) =
                        crate::model::amd::rccl_xgmi_link_gbytes(p.device(dev).device_id);
                    h.note = Some(if count > 0 {
                        format!(
                            "{count} xGMI link(s) × {per} GB/s (RCCL's figure for {generation})"
                        )
                    } else {
                        "xGMI within the hive (no direct link or count reported): bandwidth unknown"
                            .into()
                    });
                    h.kind = format!("{} (xgmi)", h.kind);
                    h
                }
                Step::SameAdapter { dev } => {
                    let mut h = self.dev_hop(p.device(dev), dev, None);
                    h.note = Some("another function of the same adapter".into());
                    h
                }
                Step::Paired { dev, with } => self.paired_hop(dev, with),
            };
            hop.gbytes_per_s = gb;
            out.push(hop);
        });
        (out, faults)
    }

    /// The words for a [`BaseWhy`].
    pub(super) fn base_rule(&self, a: DevIx, b: DevIx, why: BaseWhy) -> String {
        let v = self.opts.nccl_version;
        let s = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_else(|| "-1".into());
        match why {
            BaseWhy::Same => "same device: LOC".into(),
            BaseWhy::NvLink(n, true) => {
                format!(
                    "NVLinks to NVSwitches fold into one NVS node: GPU–NVS–GPU is NVL ({n} links)"
                )
            }
            BaseWhy::NvLink(n, false) => format!("{n} direct NVLinks: NVL"),
            BaseWhy::Xgmi(n, true) if n > 0 => format!(
                "{n} direct xGMI link(s): XGMI (RCCL's name for NCCL's NVL path type)"
            ),
            BaseWhy::Xgmi(_, true) => {
                "direct xGMI link: XGMI (RCCL's name for NCCL's NVL path type)".into()
            }
            BaseWhy::Xgmi(_, false) => "same xGMI hive, no direct link: XGMI over other GPUs (RCCL's NVB rule is commented out; its path search crosses GPUs over xGMI)".into(),
            BaseWhy::Nvb(p) => format!(
                "no direct NVLink, but NVLink through {} (NVB; disabled by NCCL_NVB_DISABLE=1)",
                self.display(&self.paths.device(p).bdf)
            ),
            BaseWhy::SharedDma(d) => format!(
                "both are Data Direct devices on one DMA function {} (ports of one ConnectX-8): PIX",
                self.paths.device(d).bdf
            ),
            BaseWhy::SameAdapter => {
                if self.kind(a) == DeviceKind::Nic && self.kind(b) == DeviceKind::Nic {
                    if v.at_least(24) {
                        "ports of one adapter: NCCL fuses them into one virtual NIC (NCCL_NET_MERGE_LEVEL=PORT)".into()
                    } else {
                        "ports of one adapter share one NIC node (function bits masked)".into()
                    }
                } else {
                    "functions of one adapter: PIX".into()
                }
            }
            BaseWhy::Switches { nodes, raw } => {
                let mut r = if nodes <= 1 {
                    "at most one PCI switch node on the path: PIX".to_string()
                } else {
                    format!("{nodes} PCI switch nodes on the path (switch-to-switch hop): PXB")
                };
                if raw > nodes {
                    r.push_str(&format!(
                        " (ncclTopoFlattenBcmSwitches: {raw} switch nodes become {nodes} once Broadcom PEX levels with the same signature are fused)"
                    ));
                }
                r
            }
            BaseWhy::Cpu(n) => format!(
                "no common switch: the path goes through CPU node {} (NCCL has no NODE; PHB)",
                s(n)
            ),
            BaseWhy::PluginFile(k) => match &self.plugin {
                Some((f, why)) => format!(
                    "the {} instance's NCCL_TOPO_FILE, which aws-ofi-nccl sets itself ({}; {why}), puts both behind its switch {}: PIX ({})",
                    f.instance,
                    f.file,
                    f.groups.get(k).map(|g| g.0).unwrap_or("?"),
                    f.source
                ),
                None => "behind one switch of the plugin's topology file: PIX".into(),
            },
            BaseWhy::TopoFile => format!("as NCCL will read it, {}", self.file_words(a, b)),
            BaseWhy::Cpus(x, y) => {
                let extra = if x.is_none() || y.is_none() {
                    " (numa_node -1 forms its own CPU node)"
                } else {
                    ""
                };
                format!(
                    "different CPU (NUMA) nodes {} and {}: SYS{extra}",
                    s(x),
                    s(y)
                )
            }
        }
    }

    fn nccl_view(&self, a: DevIx, b: DevIx, ep_b: Option<usize>) -> NcclView {
        let v = self.opts.nccl_version;
        let d = self.nccl_decide(a, b, ep_b);
        let path = d.base;
        let mut rules = vec![format!(
            "{} {v}: {}",
            self.library(),
            self.base_rule(a, b, d.why)
        )];
        use DeviceKind::*;
        let scope = match (self.kind(a), self.kind(b)) {
            (Gpu, Gpu) => "gpu-gpu",
            (Gpu, Nic) | (Nic, Gpu) => "gpu-nic",
            (Nic, Nic) => "nic-nic",
            (Gpu, Nvme) | (Nvme, Gpu) => "gpu-nvme",
            _ => "other",
        };
        match (self.kind(a), self.kind(b)) {
            (Gpu, Gpu) if self.rccl => rules.extend(self.rccl_p2p_rules(path, &d)),
            (Gpu, Nic) | (Nic, Gpu) if self.rccl => {
                let (g, n) = if self.kind(a) == Gpu { (a, b) } else { (b, a) };
                rules.extend(self.rccl_gpu_nic_rules(g, n, &d));
            }
            (Gpu, Gpu) => {
                let cut = nccl::p2p_cutoff(v, self.cpu, self.gpu_count);
                rules.extend(p2p_rule_words(path, &d, cut));
                rules.push("NVML P2P read/write status not checked (needs the live driver: nvidia-smi topo -p2p r / w)".into());
            }
            (Gpu, Nic) | (Nic, Gpu) => {
                let (g, n) = if self.kind(a) == Gpu { (a, b) } else { (b, a) };
                rules.extend(self.nextgen_rules(g, n, &d));
                let lr = match &self.settings.gdr_level {
                    Some(x) => format!("{}; the default stays unused", x.setting.described()),
                    None => format!("{}; NCCL_NET_GDR_LEVEL overrides", nccl::gdr_level(v).1),
                };
                let gpu_c2c = self.paths.c2c(g).is_some();
                let level = self.settings.gdr_level_or(self.library_gdr_path(g, n));
                let within = self.settings.gdr_allows(d.path, level, gpu_c2c);
                rules.push(format!(
                    "GDR {} (NIC writes into the GPU): distance {} {} level {level} ({lr})",
                    if d.gdr { "on" } else { "off" },
                    d.path,
                    if within { "within" } else { "beyond" }
                ));
                if let Some(x) = self.settings.transport_off(self.paths.device(n)) {
                    rules.push(format!(
                        "{}: NCCL does not drive this NIC over RDMA (NET/Socket), so no GDR",
                        x.described()
                    ));
                }
                rules.extend(self.c2c_gdr_rules(g, &d));
                if !d.gdr {
                    rules.push(
                        "without GDR NCCL stages receives through host memory on the GPU's CPU"
                            .into(),
                    );
                }
                rules.push(self.peermem_rule());
                rules.push("GDR reads (sends) are allowed by default on SM ≥ 80; pre-Ampere GPUs need an NVLink peer (NCCL_NET_GDR_READ)".into());
                if let Some((k, pn)) = d.pxn {
                    rules.push(format!(
                        "send direction GPU→NIC is PXN via {} (NVLink to this GPU, {pn} to the NIC; assumes the relay may use GDR reads, i.e. SM ≥ 80); GDR for sends judged on that distance; receives stay {} (NCCL_PXN_DISABLE=1 turns this off)",
                        self.endpoints[k].name,
                        d.path
                    ));
                }
            }
            (Nic, Nic) => {
                rules.push("NIC pair: no NCCL transport decision (path type shown)".into())
            }
            (Nvme, _) | (_, Nvme) => rules.push(
                "NVMe: GPUDirect Storage peer path; NCCL does not use it (path type shown)".into(),
            ),
            _ => rules
                .push("not an NCCL GPU/NIC pair: path type shown for the PCIe path only".into()),
        }
        NcclView {
            path: d.path,
            gdr: d.gdr,
            p2p: d.p2p,
            rules,
            version: v.to_string(),
            library: self.library(),
            path_code: d.path.code(v),
            scope: scope.to_string(),
            pxn_via: d.pxn.map(|(k, _)| self.endpoints[k].bdf),
        }
    }

    /// What the machine facts say about the NIC-side GDR support NCCL checks (peermem module
    /// files), with the paths read.
    fn peermem_rule(&self) -> String {
        let m = &self.topo().machine;
        let peers: Vec<String> = m
            .memory_peers
            .iter()
            .map(|(n, v)| match v {
                Some(v) => format!("/sys/kernel/mm/memory_peers/{n}/version = {v}"),
                None => format!("/sys/kernel/mm/memory_peers/{n}"),
            })
            .collect();
        if let Some(v) = &m.nvidia_peermem_version {
            format!(
                "NIC-side GDR support: /sys/module/nvidia_peermem/version = {v} (NCCL_PTR_CUDA)"
            )
        } else if !peers.is_empty() {
            format!("NIC-side GDR support: {} (NCCL_PTR_CUDA)", peers.join(", "))
        } else if m.nv_peer_mem_loaded {
            "NIC-side GDR support: legacy nv_peer_mem module loaded (/sys/module/nv_peer_mem)"
                .into()
        } else if m.modules_visible {
            "NIC-side GDR support: no nvidia_peermem / nv_peer_mem in /sys/module: NCCL can use GDR only through DMA-BUF (not checkable offline); this decision is about distance only".into()
        } else {
            "NIC-side GDR support (nvidia_peermem or DMA-BUF) not visible in this input: this decision is about distance only".into()
        }
    }

    /// [`Classifier::notes`] and how the NICs are numbered, for outputs that print NIC numbers
    /// (the matrix).
    pub fn matrix_notes(&self) -> Vec<String> {
        let t = self.topo();
        let mut notes = self.notes();
        let at = notes.len().saturating_sub(1);
        let mut extra = Vec::new();
        match super::nic_order(t) {
            NicOrder::KernelIndex => {}
            NicOrder::Rebuilt => extra.push(
                "NIC numbers rebuilt from PCI addresses (physical functions, then bonds, then VFs): this input lacks the kernel's RDMA registration order (docs/matrix.md)".to_string(),
            ),
            NicOrder::NoRdma if self.endpoints.iter().any(|e| e.kind == DeviceKind::Nic) => extra.push(
                "no RDMA device in this input: NIC columns are network functions in PCI address order (nvidia-smi lists RDMA devices only)".to_string(),
            ),
            NicOrder::NoRdma => {}
        }
        notes.splice(at..at, extra);
        notes
    }

    /// Facts that limit every label of this topology.
    pub fn notes(&self) -> Vec<String> {
        let t = self.topo();
        let mut notes = Vec::new();
        if let Some(h) = &t.host_scope {
            notes.push(h.line());
        }
        if self.rccl {
            notes.extend(self.rccl_notes());
        } else if !t.nvlink_visible && self.gpu_count > 0 {
            notes.push(nvlink_note(&t.source.kind).to_string());
        }
        let unknown: Vec<&str> = self
            .endpoints
            .iter()
            .filter(|e| e.numa_node.is_none())
            .map(|e| e.name.as_str())
            .collect();
        let single_numa = self.paths.single_numa();
        if !unknown.is_empty() && !single_numa {
            notes.push(format!(
                "NUMA node unknown for {}: NODE/SYS between their host bridges cannot be decided",
                unknown.join(", ")
            ));
        }
        let vf_gpus = t
            .devices
            .iter()
            .filter(|d| d.is_vf() && d.kind == DeviceKind::Gpu)
            .count();
        if vf_gpus > 0 {
            notes.push(format!(
                "{vf_gpus} GPU SR-IOV virtual function(s) left out (their physical functions are listed)"
            ));
        }
        let fused: Vec<&str> = self.paths.bcm_fused().collect();
        if !fused.is_empty() {
            notes.push(format!(
                "NCCL fuses Broadcom PEX switch levels {} into their parents (ncclTopoFlattenBcmSwitches): NCCL may say PIX where nvidia-smi says PXB",
                fused.join(", ")
            ));
        }
        if t.switches.iter().any(|s| s.evidence == "tree") {
            notes.push("some switches were recognised from the tree shape (config space not readable), as NCCL does".to_string());
        }
        notes.extend(self.nextgen_notes());
        if !t.machine.hypervisor.is_empty() {
            notes.push("running in a virtual machine: the guest PCIe tree may be flattened or emulated; labels describe the guest's view, and emulated bridges' link figures are not the physical path (left out of bottlenecks)".to_string());
        }
        notes.push(if self.rccl {
            format!(
                "RCCL view for RCCL {} (RCCL releases are numbered by the NCCL release they track)",
                self.opts.nccl_version
            )
        } else {
            format!("NCCL view for NCCL {}", self.opts.nccl_version)
        });
        notes.extend(input_limit_notes(&t.source));
        notes
    }
}

/// Why NVLink labels are missing, by source: live and snapshot inputs lack NVML; an XML input
/// recorded no NVLink state.
pub fn nvlink_note(source_kind: &str) -> &'static str {
    match source_kind {
        "sysfs" | "snapshot" => "NVLink not visible (no NVML): labels are PCIe-only",
        "hwloc-xml" => {
            "NVLink not visible (this hwloc XML records no NVLinks): labels are PCIe-only; GPU pairs shown PIX/PXB/… may be NVLink-connected"
        }
        _ => "NVLink not visible (this input records no NVLink state): labels are PCIe-only",
    }
}

/// What the input could not show, one note per [`crate::model::SourceInfo::limitations`] entry, prefixed
/// `input limit (<kind>):` so every command that prints notes says it where the answer is.
pub fn input_limit_notes(source: &crate::model::SourceInfo) -> Vec<String> {
    source
        .limitations
        .iter()
        .map(|l| format!("input limit ({}): {l}", source.kind))
        .collect()
}

/// The P2P decision of a GPU pair in words, NCCL's and RCCL's alike: on or off against the
/// cut-off (`cut`: the level and why, from `nccl::p2p_cutoff` or `nccl::rccl_p2p_cutoff`), and
/// whether the path was rebuilt through the CPU.
pub(super) fn p2p_rule_words(
    path: nccl::NcclPath,
    d: &Decision,
    (cut, why): (nccl::NcclPath, String),
) -> Vec<String> {
    let mut out = vec![format!(
        "P2P {}: {path} {} cut-off {cut} ({why}; NCCL_P2P_LEVEL overrides)",
        if d.p2p { "on" } else { "off" },
        if d.p2p { "≤" } else { ">" }
    )];
    if d.p2p_rerouted {
        out.push(format!(
            "P2P refused: the path is rebuilt through the CPU ({})",
            d.path
        ));
    }
    out
}
