//! NCCL's decisions for a pair (classification.md §2 and §5, read from NCCL's `paths.cc`):
//! the base path type, P2P with its cut-off and CPU rerouting, the C2C + PHB → P2C upgrade on
//! Grace systems, GPUDirect RDMA by distance, and the PXN relay. A NIC with a Data Direct DMA
//! function is where NCCL's `<dev>_dma` device is: at the DMA function. Computed without words;
//! `wording` puts them into sentences.

use super::{Classifier, NcclPath};
use crate::analysis::nccl;
use crate::analysis::paths::DevIx;
use crate::model::{Bdf, DeviceKind};

/// Why NCCL's base path type is what it is (no allocation; worded by `base_rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BaseWhy {
    Same,
    NvLink(u32, bool),
    /// xGMI: direct links (0: not reported or not direct) and whether a direct link was seen.
    Xgmi(u32, bool),
    /// Through the GPU at this device index.
    Nvb(DevIx),
    SameAdapter,
    /// Both ends' traffic goes through this Data Direct DMA function.
    SharedDma(DevIx),
    Switches {
        nodes: u32,
        raw: u32,
    },
    Cpu(Option<u32>),
    Cpus(Option<u32>, Option<u32>),
    /// Both are behind this group's switch of the plugin's topology file (index into its
    /// groups).
    PluginFile(usize),
    /// The job's `NCCL_TOPO_FILE` decides this GPU–NIC pair ([`super::topo_file`]).
    TopoFile,
}

/// NCCL's decisions for one pair, before they are put into words.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Decision {
    pub path: NcclPath,
    pub base: NcclPath,
    pub why: BaseWhy,
    pub gdr: bool,
    pub p2p: bool,
    pub p2p_rerouted: bool,
    /// PXN relay: endpoint index and its path type to the NIC.
    pub pxn: Option<(usize, NcclPath)>,
    /// GPU–NIC: the base path went through the GPU's CPU by PCIe (PHB) while the GPU reaches
    /// that CPU over C2C; `true` when NCCL upgraded it to P2C (the NIC is one of the GPU's
    /// local NICs and the version has P2C).
    pub c2c_phb: Option<bool>,
    /// GPU–NIC under RCCL: its AMD Rome-class relaxation raised the GDR level to PHB.
    pub rome_phb: bool,
}

impl Classifier<'_> {
    /// NCCL's base path type (before P2P rerouting and PXN) and why, without allocation: on
    /// the job's `NCCL_TOPO_FILE` where it decides the pair, else on the node's tree.
    pub(super) fn nccl_base(&self, a: DevIx, b: DevIx) -> (NcclPath, BaseWhy) {
        if self.topo_file.is_some()
            && a != b
            && let Some(p) = self.file_base(a, b)
        {
            return (p, BaseWhy::TopoFile);
        }
        self.tree_base(a, b)
    }

    /// NCCL's base path type on the node's own tree (what it detects without a topology file).
    pub(super) fn tree_base(&self, a: DevIx, b: DevIx) -> (NcclPath, BaseWhy) {
        let p = &self.paths;
        if a == b {
            return (NcclPath::Loc, BaseWhy::Same);
        }
        if let Some((n, fabric)) = p.nvlink(a, b) {
            return (NcclPath::Nvl, BaseWhy::NvLink(n, fabric));
        }
        if let Some((n, direct)) = p.xgmi(a, b) {
            return (NcclPath::Xgmi, BaseWhy::Xgmi(n, direct));
        }
        if self.kind(a) == DeviceKind::Gpu && self.kind(b) == DeviceKind::Gpu {
            // NVB: NVLink through exactly one intermediate GPU (direct links only).
            for &(q, _) in p.nvlink_peers(a) {
                if q != b && p.nvlink_peers(b).iter().any(|&(r, _)| r == q) {
                    return (NcclPath::Nvb, BaseWhy::Nvb(q));
                }
            }
        }
        // NCCL's NIC is where the net plugin says it is: from 2.27 (NCCL_IB_DATA_DIRECT=1 by
        // default) a Data Direct device is exposed as `<dev>_dma` at its DMA function's path.
        let (a, b) = if self.opts.nccl_version.at_least(27) {
            (p.data_path(a), p.data_path(b))
        } else {
            (a, b)
        };
        if a == b {
            return (NcclPath::Pix, BaseWhy::SharedDma(a));
        }
        let (da, db) = (p.device(a).bdf, p.device(b).bdf);
        if da.domain == db.domain && da.bus == db.bus && da.device == db.device {
            return (NcclPath::Pix, BaseWhy::SameAdapter);
        }
        if let Some(k) = self.plugin_group(da, db) {
            return (NcclPath::Pix, BaseWhy::PluginFile(k));
        }
        if let Some(m) = p.meet(a, b) {
            let (nodes, raw) = p.nccl_switch_nodes(a, b, m);
            let path = if nodes <= 1 {
                NcclPath::Pix
            } else {
                NcclPath::Pxb
            };
            return (path, BaseWhy::Switches { nodes, raw });
        }
        let (na, nb) = (p.nccl_numa(a), p.nccl_numa(b));
        if na == nb {
            (NcclPath::Phb, BaseWhy::Cpu(na))
        } else {
            (NcclPath::Sys, BaseWhy::Cpus(na, nb))
        }
    }

    /// Whether NCCL uses GPUDirect RDMA between GPU `g` and NIC `n` over a path of type
    /// `path`, under the GDR level that applies to the pair and the transport the settings pick.
    pub(super) fn gdr_on_path(&self, g: DevIx, n: DevIx, path: NcclPath) -> bool {
        let level = self.settings.gdr_level_or(self.library_gdr_path(g, n));
        self.gdr_at_level(g, n, path, level)
    }

    /// [`Classifier::gdr_on_path`] at a level already read: the one GDR rule.
    fn gdr_at_level(&self, g: DevIx, n: DevIx, path: NcclPath, level: NcclPath) -> bool {
        let p = &self.paths;
        self.settings.gdr_allows(path, level, p.c2c(g).is_some())
            && self.settings.transport_off(p.device(n)).is_none()
    }

    /// The group of the plugin's topology file that lists both `a` and `b`, when one applies:
    /// NCCL reads that file's switch as their parent ([`super::plugin_topo`]).
    fn plugin_group(&self, a: Bdf, b: Bdf) -> Option<usize> {
        let (f, _) = self.plugin.as_ref()?;
        let ga = super::plugin_topo::group_of(f, &a)?;
        (super::plugin_topo::group_of(f, &b)? == ga).then_some(ga)
    }

    /// The best base path rank from a GPU to any NIC endpoint (NCCL's local NICs of the GPU,
    /// `ncclTopoGetLocal`, judged on path type: bandwidth is not modelled), `None` without NICs.
    pub(super) fn best_nic_rank(&self, gpu: DevIx) -> Option<u32> {
        let v = self.opts.nccl_version;
        self.ep_dev
            .iter()
            .filter(|&&n| self.kind(n) == DeviceKind::Nic)
            .map(|&n| self.nccl_base(gpu, n).0.rank(v))
            .min()
    }

    /// NCCL's GPU→NIC path type before PXN: the base type, upgraded to P2C when the GPU reaches
    /// its CPU over C2C, the NIC hangs off that CPU by PCIe (PHB) and the NIC is one of the
    /// GPU's local NICs (NCCL ≥ 2.27, `ncclTopoComputePaths`; the local-NIC gate is 2.29.2's).
    /// The flag says whether the C2C + PHB case applied and whether it was upgraded.
    pub(super) fn nccl_gpu_nic(
        &self,
        g: DevIx,
        base: NcclPath,
        why: BaseWhy,
    ) -> (NcclPath, Option<bool>) {
        let v = self.opts.nccl_version;
        if base != NcclPath::Phb || !matches!(why, BaseWhy::Cpu(_)) || self.paths.c2c(g).is_none() {
            return (base, None);
        }
        let local = self
            .ep_of
            .get(&g)
            .and_then(|&k| self.best_nic.get(k))
            .and_then(|cell| *cell.get_or_init(|| self.best_nic_rank(g)))
            .or_else(|| self.best_nic_rank(g))
            .is_some_and(|best| base.rank(v) <= best);
        if v.at_least(27) && local {
            (NcclPath::P2c, Some(true))
        } else {
            (base, Some(false))
        }
    }

    /// The GPU endpoints NCCL would pick as local to a NIC: those with its best path type.
    pub(super) fn local_gpus_of(&self, nic: DevIx) -> Vec<usize> {
        let v = self.opts.nccl_version;
        let mut best: Option<u32> = None;
        let mut out = Vec::new();
        for (k, &g) in self.ep_dev.iter().enumerate() {
            if self.kind(g) != DeviceKind::Gpu {
                continue;
            }
            let (b, w) = self.nccl_base(g, nic);
            let r = self.nccl_gpu_nic(g, b, w).0.rank(v);
            match best {
                Some(b) if r > b => {}
                Some(b) if r == b => out.push(k),
                _ => {
                    best = Some(r);
                    out.clear();
                    out.push(k);
                }
            }
        }
        out
    }

    /// NCCL's decisions for a pair (path after P2P rerouting, GDR, P2P, PXN relay), without
    /// words and, when `ep_b` (the endpoint index of `b`) is given, without allocation: the
    /// NIC's local GPUs are read (and found, on their first use) only where PXN is weighed.
    pub(super) fn nccl_decide(&self, a: DevIx, b: DevIx, ep_b: Option<usize>) -> Decision {
        let v = self.opts.nccl_version;
        let p = &self.paths;
        let (base, why) = self.nccl_base(a, b);
        let mut d = Decision {
            path: base,
            base,
            why,
            gdr: false,
            p2p: false,
            p2p_rerouted: false,
            pxn: None,
            c2c_phb: None,
            rome_phb: false,
        };
        use DeviceKind::*;
        match (self.kind(a), self.kind(b)) {
            (Gpu, Gpu) => {
                let cut = match &self.settings.p2p_level {
                    Some(a) => a.value,
                    None if self.rccl => nccl::rccl_p2p_cutoff_level(self.cpu),
                    None => nccl::p2p_cutoff_level(v, self.cpu, self.gpu_count),
                };
                d.p2p = base.le(cut, v);
                if !d.p2p && base.le(NcclPath::Pxb, v) {
                    d.path = if p.nccl_numa(a) == p.nccl_numa(b) {
                        NcclPath::Phb
                    } else {
                        NcclPath::Sys
                    };
                    d.p2p_rerouted = true;
                }
            }
            (Gpu, Nic) | (Nic, Gpu) => {
                let (g, n) = if self.kind(a) == Gpu { (a, b) } else { (b, a) };
                let fallback = self.library_gdr_path(g, n);
                d.rome_phb = self.rccl && fallback == NcclPath::Phb;
                let level = self.settings.gdr_level_or(fallback);
                let (path, c2c_phb) = self.nccl_gpu_nic(g, base, why);
                d.path = path;
                d.c2c_phb = c2c_phb;
                d.gdr = self.gdr_at_level(g, n, path, level);
                // PXN only where the GPU's own path is worse than PXN (its other condition, a
                // relay with more bandwidth, is not modelled); RCCL keeps it off by default
                // (`NCCL_PARAM(PxnDisable, "PXN_DISABLE", 1)`). A relay is an NVLink peer of
                // the GPU: a GPU with no NVLink has none, and its NIC's local GPUs are not read.
                if !self.rccl && v.at_least(12) && !path.le(NcclPath::Pxn, v) && p.may_nvlink(g) {
                    let computed;
                    let locals = match ep_b {
                        Some(k) if n == b => self.locals(k),
                        _ => {
                            computed = self.local_gpus_of(n);
                            &computed
                        }
                    };
                    let relay_max = if v.at_least(28) {
                        NcclPath::P2c
                    } else {
                        NcclPath::Pxb
                    };
                    for &k in locals {
                        let r = self.ep_dev[k];
                        if r == g || p.nvlink(r, g).is_none() {
                            continue;
                        }
                        let (rb, rw) = self.nccl_base(r, n);
                        let (pn, _) = self.nccl_gpu_nic(r, rb, rw);
                        if pn.le(relay_max, v) && pn.le(level, v) {
                            d.pxn = Some((k, pn));
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use crate::analysis::classify::{Classifier, ClassifyOptions, NcclPath, NcclVersion};
    use crate::analysis::testkit::TopoBuilder;
    use crate::model::{Bdf, C2cLink, Topology};

    /// A GB200-like tray: two Grace NUMA nodes; on each a GPU and a NIC on root ports of their
    /// own; the GPUs reach their Grace over C2C (unless `c2c` is false).
    fn grace(c2c: bool) -> Topology {
        let mut b = TopoBuilder::new(&["0-71", "72-143"]);
        for (n, dom) in [(0u32, "0000"), (1, "0010")] {
            b.bridge(&format!("{dom}:00:00.0"), None, Some(n));
            b.gpu(
                &format!("{dom}:01:00.0"),
                Some(&format!("{dom}:00:00.0")),
                Some(n),
            );
            let nd = format!("{:04x}", u32::from_str_radix(dom, 16).unwrap() + 2);
            b.bridge(&format!("{nd}:00:00.0"), None, Some(n));
            b.nic(
                &format!("{nd}:01:00.0"),
                Some(&format!("{nd}:00:00.0")),
                Some(n),
                &[&format!("mlx5_{n}")],
            );
        }
        let mut t = b.build();
        if c2c {
            for d in t.devices.iter_mut().filter(|d| d.class >> 16 == 0x03) {
                d.c2c = Some(C2cLink {
                    links_up: Some(10),
                    links_total: None,
                    link_mbytes_per_s: Some(45000),
                    source: "test".into(),
                });
            }
        }
        t
    }

    fn b(s: &str) -> Bdf {
        s.parse().unwrap()
    }

    fn path(t: &Topology, v: &str, g: &str, n: &str) -> (NcclPath, bool, Vec<String>) {
        let opts = ClassifyOptions {
            nccl_version: v.parse::<NcclVersion>().unwrap(),
        };
        let c = Classifier::new(t, &opts);
        let p = c.pair(&b(g), &b(n)).unwrap();
        let s = c.summary_of(&b(g), &b(n)).unwrap();
        assert_eq!(s.nccl_path, p.nccl.path, "summary and words agree");
        (p.nccl.path, p.nccl.gdr, p.nccl.rules)
    }

    #[test]
    fn c2c_and_phb_merge_into_p2c_from_2_27() {
        let t = grace(true);
        let (p, gdr, rules) = path(&t, "2.30", "0000:01:00.0", "0002:01:00.0");
        assert_eq!(p, NcclPath::P2c);
        assert!(gdr, "{rules:#?}");
        assert!(rules.iter().any(|r| r.contains("C2C + PHB merge into P2C")));
        assert!(rules.iter().any(|r| r.contains("GDR mode default")));
        // The other Grace's NIC stays SYS.
        assert_eq!(
            path(&t, "2.30", "0000:01:00.0", "0012:01:00.0").0,
            NcclPath::Sys
        );
        // 2.27 numbers P2C 7; 2.26 has no P2C: PHB and no GDR (NVIDIA/nccl#1579).
        let (p, _, _) = path(&t, "2.27", "0000:01:00.0", "0002:01:00.0");
        assert_eq!(p, NcclPath::P2c);
        assert_eq!(p.code("2.27".parse().unwrap()), Some(7));
        let (p, gdr, rules) = path(&t, "2.26", "0000:01:00.0", "0002:01:00.0");
        assert_eq!((p, gdr), (NcclPath::Phb, false));
        assert!(rules.iter().any(|r| r.contains("no P2C path type")));
        // Without C2C the same layout is plain PHB.
        let (p, gdr, _) = path(&grace(false), "2.30", "0000:01:00.0", "0002:01:00.0");
        assert_eq!((p, gdr), (NcclPath::Phb, false));
    }

    #[test]
    fn data_direct_nic_is_placed_at_its_dma_function() {
        // GPU and DMA function share a ConnectX switch; the NIC's RDMA function hangs on a
        // root port of its own.
        let mut b = TopoBuilder::new(&["0-71"]);
        b.bridge("0008:00:00.0", None, Some(0));
        b.switch(
            "0008:00:00.0",
            "0008:01:00.0",
            &["0008:02:00.0", "0008:02:01.0"],
            Some(0),
        );
        b.dev(
            "0008:03:00.0",
            Some("0008:02:00.0"),
            0x080100,
            (0x15b3, 0x2100),
            Some(0),
        );
        b.switch("0008:02:01.0", "0008:04:00.0", &["0008:05:00.0"], Some(0));
        b.gpu("0008:06:00.0", Some("0008:05:00.0"), Some(0));
        b.bridge("0000:00:00.0", None, Some(0));
        b.nic("0000:01:00.0", Some("0000:00:00.0"), Some(0), &["mlx5_0"]);
        let mut t = b.build();
        let i = t.device_index(&b_("0000:01:00.0")).unwrap();
        t.devices[i].data_direct = Some(crate::model::DataDirect {
            dma: b_("0008:03:00.0"),
            evidence: "test".into(),
        });
        let (p, gdr, rules) = path(&t, "2.30", "0008:06:00.0", "0000:01:00.0");
        assert_eq!((p, gdr), (NcclPath::Pxb, true), "{rules:#?}");
        assert!(rules.iter().any(|r| r.contains("mlx5_0_dma")));
        // Before 2.27 NCCL knows no Data Direct: the RDMA function's own path (PHB).
        assert_eq!(
            path(&t, "2.26", "0008:06:00.0", "0000:01:00.0").0,
            NcclPath::Phb
        );
        let c = Classifier::new(&t, &ClassifyOptions::default());
        let pc = c.pair(&b_("0008:06:00.0"), &b_("0000:01:00.0")).unwrap();
        assert_eq!(pc.label.to_string(), "PXB");
        let kinds: Vec<&str> = pc.hops.iter().map(|h| h.kind.as_str()).collect();
        assert!(kinds.contains(&"data-direct-dma"), "{kinds:?}");
        assert_eq!(pc.hops.last().unwrap().node, "0000:01:00.0");
        assert!(pc.reason.contains("Data Direct DMA function 0008:03:00.0"));
    }

    fn b_(s: &str) -> Bdf {
        b(s)
    }
}
