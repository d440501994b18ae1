//! Words for today's platforms: a NIC's ConnectX-8 Data Direct DMA function (the path its GPU
//! traffic takes, named hop by hop) and a GPU's NVLink-C2C link to its Grace CPU (NCCL's C2C and
//! P2C paths, its GDR mode and flush rules). Sources: NCCL `src/graph/paths.cc`
//! (`ncclTopoComputePaths`, `ncclTopoCheckGdr`, `ncclTopoNeedFlush`), `src/graph/topo.cc`
//! (`ncclTopoAddC2c`), `src/transport/net_ib/init.cc` (`NCCL_IB_DATA_DIRECT`, `<dev>_dma`);
//! docs/nextgen.md.

use super::nccl_rules::Decision;
use super::{Classifier, Hop, NcclPath};
use crate::analysis::paths::DevIx;
use crate::model::{Bdf, DeviceKind, parts};

impl Classifier<'_> {
    /// How a device is named in these words: `NIC0 (0000:01:00.0, mlx5_0)`.
    fn named(&self, i: DevIx) -> String {
        let d = self.paths.device(i);
        let rdma = d.rdma_names().next();
        match (self.endpoint_index(&d.bdf), rdma) {
            (Some(k), Some(r)) => format!("{} ({}, {r})", self.endpoints[k].name, d.bdf),
            (None, Some(r)) => format!("{} ({r})", d.bdf),
            _ => self.display(&d.bdf),
        }
    }

    /// The sentence a pair's reason gains when an end's traffic goes through a Data Direct DMA
    /// function: which function, how it was paired, and what the RDMA function's own path
    /// would give. Empty otherwise.
    pub(super) fn data_direct_reason(&self, a: &Bdf, b: &Bdf) -> String {
        let p = &self.paths;
        let (Some(ia), Some(ib)) = (p.index(a), p.index(b)) else {
            return String::new();
        };
        if ia == ib || p.nvlink(ia, ib).is_some() {
            return String::new();
        }
        let mut out = String::new();
        for x in [ia, ib] {
            let dp = p.data_path(x);
            if dp == x {
                continue;
            }
            let how = p
                .device(x)
                .data_direct
                .as_ref()
                .map(|dd| dd.evidence.as_str())
                .unwrap_or("");
            out.push_str(&format!(
                "; {} moves GPU data through its Data Direct DMA function {} (paired by {how}), so the label is for that path",
                self.named(x),
                p.device(dp).bdf
            ));
        }
        if !out.is_empty() && ia != ib {
            let (own, _) = self.label_pcie(ia, ib);
            out.push_str(&format!(
                " (the RDMA function's own PCIe path is {own}; what nvidia-smi prints for it on these platforms is not verified)"
            ));
        }
        out
    }

    /// The note of a Data Direct DMA function's hop.
    pub(super) fn dma_hop_note(&self, dma: DevIx) -> String {
        let users: Vec<String> = self
            .paths
            .dma_users(dma)
            .filter(|&u| self.paths.device(u).physfn.is_none())
            .map(|u| self.named(u))
            .collect();
        let d = self.paths.device(dma);
        if users.is_empty() {
            let nets: Vec<&str> = d.rdma_names().collect();
            if nets.is_empty() {
                "ConnectX-8 Data Direct DMA function (15b3:2100, class 0x080100): not paired with an RDMA device".into()
            } else {
                format!(
                    "ConnectX-8 Data Direct DMA function (class 0x{:06x}): NCCL's {} (the NIC's data path; its RDMA function is not in this input)",
                    d.class,
                    nets.join(", ")
                )
            }
        } else {
            format!(
                "ConnectX-8 Data Direct DMA function of {}: the path their GPU traffic takes (NCCL's <dev>_dma)",
                users.join(", ")
            )
        }
    }

    /// The hop of a Data Direct pairing (no PCIe link is crossed).
    pub(super) fn paired_hop(&self, dev: DevIx, with: DevIx) -> Hop {
        let p = &self.paths;
        let d = p.device(dev);
        let dma = parts::is_data_direct_dma(d);
        let (node, note) = if dma {
            (d.bdf, self.dma_hop_note(dev))
        } else {
            let how = d
                .data_direct
                .as_ref()
                .map(|x| x.evidence.clone())
                .unwrap_or_default();
            (
                d.bdf,
                format!(
                    "{}: the RDMA function paired with Data Direct DMA function {} ({how}); its own PCIe path carries control traffic, not GPU data",
                    self.named(dev),
                    p.device(with).bdf
                ),
            )
        };
        Hop {
            node: node.to_string(),
            kind: if dma {
                "data-direct-dma".into()
            } else {
                format!("{} (data-direct pair)", d.kind.as_str())
            },
            link: None,
            gbytes_per_s: None,
            note: Some(note),
        }
    }

    /// NCCL's rules for a GPU–NIC pair that only today's platforms trigger: the Data Direct
    /// device, and the C2C + PHB → P2C upgrade.
    pub(super) fn nextgen_rules(&self, g: DevIx, n: DevIx, d: &Decision) -> Vec<String> {
        let v = self.opts.nccl_version;
        let p = &self.paths;
        let mut out = Vec::new();
        let dn = p.data_path(n);
        let rdma = p
            .device(n)
            .rdma_names()
            .next()
            .unwrap_or("the NIC")
            .to_string();
        if dn != n {
            if v.at_least(27) {
                let (own, _) = self.label_pcie(g, n);
                out.push(format!(
                    "NCCL_IB_DATA_DIRECT=1 (default since 2.27): NCCL exposes only {rdma}_dma, at DMA function {}'s PCI path (mlx5dv_get_data_direct_sysfs_path); NCCL_IB_DATA_DIRECT=2 also exposes {rdma} at its RDMA function's own path ({own} by nvidia-smi's rules), 0 only that one",
                    p.device(dn).bdf
                ));
            } else {
                out.push(format!(
                    "NCCL {v} predates Data Direct (2.27): it uses {rdma} at its RDMA function's own path, not DMA function {}",
                    p.device(dn).bdf
                ));
            }
        } else if p.is_data_direct(n) {
            out.push(
                "a Data Direct device (<dev>_dma): NCCL places it at its DMA function, the path the NIC reads and writes GPU memory through".into(),
            );
        }
        if let Some(c) = p.c2c(g) {
            let bw = match c.gbytes_per_s() {
                Some(x) => format!("C2C[{x:.1}] GB/s"),
                None => "bandwidth unknown".into(),
            };
            match d.c2c_phb {
                Some(true) => out.push(format!(
                    "the GPU reaches its CPU over NVLink-C2C ({bw}; {}) and the NIC hangs off that CPU by PCIe (PHB): C2C + PHB merge into P2C (ncclTopoComputePaths, NCCL ≥ 2.27; only for the GPU's local NICs since 2.29.2)",
                    c.source
                )),
                Some(false) if !v.at_least(27) => out.push(format!(
                    "the GPU reaches its CPU over NVLink-C2C ({bw}), but NCCL {v} has no P2C path type: PHB, GDR off by distance (2.26 merges PHB + C2C only with NCCL_NET_GDR_C2C=1; NVIDIA/nccl#1579 advises NCCL_NET_GDR_LEVEL=SYS there)"
                )),
                Some(false) => out.push(format!(
                    "the GPU reaches its CPU over NVLink-C2C ({bw}), but this NIC is not one of its local NICs (a closer one exists): no P2C upgrade, PXN preferred (2.27–2.29.1 upgraded every NIC)"
                )),
                None => {}
            }
        }
        out
    }

    /// GDR mode and flush on a C2C GPU (`ncclTopoCheckGdr`, `ncclTopoNeedFlush`).
    pub(super) fn c2c_gdr_rules(&self, g: DevIx, d: &Decision) -> Vec<String> {
        let v = self.opts.nccl_version;
        let p = &self.paths;
        let mut out = Vec::new();
        if p.c2c(g).is_none() || !v.at_least(27) {
            return out;
        }
        if d.gdr {
            out.push(if d.path == NcclPath::P2c {
                "GDR mode default: the NIC reaches GPU memory through the CPU and C2C".into()
            } else {
                format!(
                    "GDR mode PCI (ncclTopoCheckGdr: the GPU's CPU link is C2C and the distance {} is not P2C): the NIC reaches GPU memory over the GPU's PCIe side, not C2C",
                    d.path
                )
            });
        }
        if d.path.le(NcclPath::Pxb, v) {
            out.push(
                "receives need a C2C flush (ncclTopoNeedFlush: NIC within PXB of a GPU whose CPU link is C2C; Data Direct: data over PCIe, control over C2C)".into(),
            );
        }
        out
    }

    /// Matrix-wide notes about Data Direct pairings and C2C links.
    pub(super) fn nextgen_notes(&self) -> Vec<String> {
        let t = self.topo();
        let p = &self.paths;
        let mut notes = Vec::new();
        let mapped: Vec<String> = self
            .endpoints
            .iter()
            .filter_map(|e| {
                let i = p.index(&e.bdf)?;
                let dp = p.data_path(i);
                (dp != i).then(|| format!("{}→{}", e.name, p.device(dp).bdf))
            })
            .collect();
        if !mapped.is_empty() {
            notes.push(format!(
                "Data Direct: NIC labels are measured to the DMA function each NIC moves GPU data through ({}); nvidia-smi's own labels for these RDMA functions are not verified",
                mapped.join(", ")
            ));
        }
        let unpaired: Vec<String> = t
            .devices
            .iter()
            .filter(|d| parts::is_data_direct_dma(d) && d.data_direct.is_none())
            .filter(|d| {
                p.index(&d.bdf)
                    .is_some_and(|i| p.dma_users(i).next().is_none())
            })
            .map(|d| d.bdf.to_string())
            .collect();
        if !unpaired.is_empty() {
            notes.push(format!(
                "Data Direct DMA function(s) {} not paired with an RDMA device (VPD needs root, or pass --rdma-topo): their NICs are labelled on their RDMA functions' own paths",
                unpaired.join(", ")
            ));
        }
        let c2c: Vec<&str> = self
            .endpoints
            .iter()
            .filter(|e| {
                e.kind == DeviceKind::Gpu && p.index(&e.bdf).is_some_and(|i| p.c2c(i).is_some())
            })
            .map(|e| e.name.as_str())
            .collect();
        if !c2c.is_empty() {
            notes.push(format!(
                "{} reach their CPU over NVLink-C2C: nvidia-smi shows no C2C cell; NCCL's GPU–NIC paths through that CPU are P2C (NCCL ≥ 2.27)",
                c2c.join(", ")
            ));
        }
        notes
    }
}
