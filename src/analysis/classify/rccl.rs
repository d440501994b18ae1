//! RCCL's decisions where they differ from NCCL's (ROCm/rccl `src/graph/paths.cc` and
//! `topo.cc`, the October 2024 tree and ROCm/rocm-systems' `projects/rccl`): xGMI takes NVLink's
//! path slot under the name `XGMI`, P2P is allowed up to SYS except on Intel, Arm and Zhaoxin
//! CPUs, PXN is off by default, and on AMD "Rome"-class CPUs (Zen 2 from model 49, every Zen 3
//! and Zen 4 part) GPUDirect RDMA is allowed through the CPU (PHB) when the GPU is one PCI
//! switch below a CPU, the NIC hangs directly off that CPU and their bus numbers share their
//! high nibble. The words for these rules live here too.

use super::Classifier;
use super::nccl_rules::Decision;
use crate::analysis::nccl;
use crate::analysis::paths::DevIx;
use crate::model::amd::{AMD_GPU_VENDOR, is_amd_gpu};
use crate::model::{Bdf, DeviceKind, Topology};

/// Whether RCCL, not NCCL, is the library the topology's GPUs run: it has AMD GPUs and no
/// NVIDIA GPU.
pub fn rccl_topology(t: &Topology) -> bool {
    let gpus = || {
        t.devices
            .iter()
            .filter(|d| d.kind == DeviceKind::Gpu && !d.is_vf())
    };
    gpus().any(is_amd_gpu) && gpus().all(|d| is_amd_gpu(d) || d.vendor_id == Some(AMD_GPU_VENDOR))
}

impl Classifier<'_> {
    /// Whether RCCL's rules apply to this topology (its GPUs are AMD).
    pub fn is_rccl(&self) -> bool {
        self.rccl
    }

    /// "NCCL" or "RCCL": the library whose rules the NCCL view follows.
    pub fn library(&self) -> &'static str {
        if self.rccl { "RCCL" } else { "NCCL" }
    }

    /// RCCL's Rome-class relaxation for GPU `g` and NIC `n` (`ncclTopoCheckGdr`): on a Rome-class
    /// CPU, the GPU reaches a CPU over exactly two links (one PCI switch between them), the
    /// NIC's network device reaches the same CPU over two links (NET–NIC–CPU: the NIC directly
    /// on the CPU), and their bus IDs agree in bits 16–19 of NCCL's bus-ID integer (the bus
    /// number's high nibble). Without words.
    pub(super) fn rccl_rome_pair(&self, g: DevIx, n: DevIx) -> bool {
        let p = &self.paths;
        self.rome
            && p.nccl_numa(g) == p.nccl_numa(n)
            && p.nccl_numa(g).is_some()
            && p.nccl_pci_nodes_above(g) == 1
            && p.nccl_pci_nodes_above(n) == 0
            && p.device(g).bdf.bus >> 4 == p.device(n).bdf.bus >> 4
    }

    /// Whether RCCL's Rome-class relaxation would decide GPU `gpu` and NIC `nic` but the input
    /// does not name the CPU (no vendor, family or model: `lspci` text): the pair's topology
    /// meets the rule (the GPU one PCI node below a CPU, the NIC directly on it, bus numbers
    /// sharing their high nibble), so RCCL's level there is PHB on a Rome-class CPU and PXB
    /// on another, and whether it uses GPUDirect RDMA is unknown.
    pub fn rccl_rome_undecided(&self, gpu: &Bdf, nic: &Bdf) -> bool {
        let m = &self.topo().machine;
        let cpu_unknown = m.cpu_vendor.is_none()
            || m.cpu_family.is_none()
            || (m.cpu_family == Some(23) && m.cpu_model_number.is_none());
        let p = &self.paths;
        let (Some(g), Some(n)) = (p.index(gpu), p.index(nic)) else {
            return false;
        };
        self.rccl
            && cpu_unknown
            && p.nccl_numa(g) == p.nccl_numa(n)
            && p.nccl_numa(g).is_some()
            && p.nccl_pci_nodes_above(g) == 1
            && p.nccl_pci_nodes_above(n) == 0
            && p.device(g).bdf.bus >> 4 == p.device(n).bdf.bus >> 4
    }

    /// RCCL's GPU–NIC rules in words: the GDR level and why, the NIC-side support RCCL checks,
    /// GDR reads and PXN.
    pub(super) fn rccl_gpu_nic_rules(&self, g: DevIx, n: DevIx, d: &Decision) -> Vec<String> {
        let v = self.opts.nccl_version;
        let p = &self.paths;
        let level = if let Some(x) = &self.settings.gdr_level {
            format!(
                "RCCL {v}: {} (the default and the Rome-class relaxation stay unused)",
                x.setting.described()
            )
        } else if d.rome_phb {
            format!(
                "RCCL {v}: AMD Rome-class CPU (RCCL's familyid 143 with modelid ≥ 49, or 175): GPU one PCI switch below CPU {cpu}, NIC directly on it, bus numbers {:02x}/{:02x} share their high nibble → level PHB",
                p.device(g).bdf.bus,
                p.device(n).bdf.bus,
                cpu = p
                    .nccl_numa(g)
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "-1".into())
            )
        } else if v.at_least(27) {
            format!(
                "RCCL {v}: default NCCL_NET_GDR_LEVEL P2C (NCCL_NET_GDR_C2C=1), i.e. PIX/PXB on PCIe{}",
                self.rome_hint()
            )
        } else {
            format!(
                "RCCL {v}: default NCCL_NET_GDR_LEVEL PXB{}",
                self.rome_hint()
            )
        };
        let mut out = vec![format!(
            "GDR {} (NIC writes into the GPU): distance {} {} level ({level}; NCCL_NET_GDR_LEVEL overrides)",
            if d.gdr { "on" } else { "off" },
            d.path,
            if d.gdr { "within" } else { "beyond" }
        )];
        if !d.gdr {
            out.push(
                "without GDR RCCL stages receives through host memory on the GPU's CPU".into(),
            );
        }
        out.push(self.rccl_peer_rule());
        out.push("GDR reads (sends) follow NCCL_NET_GDR_READ (default on): RCCL compiles out NCCL's pre-Ampere read restriction".into());
        out.push("PXN is off by default in RCCL (NCCL_PXN_DISABLE=1): sends use this path".into());
        out
    }

    /// Why the Rome-class relaxation did not apply, when the CPU is Rome-class.
    fn rome_hint(&self) -> &'static str {
        if self.rome {
            " (the Rome-class PHB relaxation needs the GPU one switch below the NIC's CPU, the NIC directly on it and the same bus-number high nibble)"
        } else {
            ""
        }
    }

    /// What the machine facts say about the kernel support RCCL checks (`ncclIbGdrSupport`,
    /// ROCm/rccl `src/transport/net_ib.cc`: the amdkfd peer-memory client's `version` file; or
    /// `ib_register_peer_memory_client` in /proc/kallsyms, not read; DMA-BUF only with
    /// `NCCL_DMABUF_ENABLE=1`).
    fn rccl_peer_rule(&self) -> String {
        let m = &self.topo().machine;
        match m.memory_peers.iter().find(|(n, _)| n == "amdkfd") {
            Some((_, Some(v))) => format!(
                "NIC-side GDR support: /sys/kernel/mm/memory_peers/amdkfd/version = {v} (RCCL's ncclIbGdrSupport)"
            ),
            Some((_, None)) => "NIC-side GDR support: /sys/kernel/mm/memory_peers/amdkfd present (RCCL's ncclIbGdrSupport)".into(),
            None if m.mm_visible => "NIC-side GDR support: no amdkfd client in /sys/kernel/mm/memory_peers: RCCL's ncclIbGdrSupport finds GDR only if /proc/kallsyms has ib_register_peer_memory_client (not read here), else only through DMA-BUF (NCCL_DMABUF_ENABLE=1, off by default); this decision is about distance only".into(),
            None => "NIC-side GDR support (amdkfd peer memory or DMA-BUF) not visible in this input: this decision is about distance only".into(),
        }
    }

    /// The P2P rule line of a GPU pair under RCCL.
    pub(super) fn rccl_p2p_rules(
        &self,
        path: crate::analysis::nccl::NcclPath,
        d: &Decision,
    ) -> Vec<String> {
        let cut = nccl::rccl_p2p_cutoff(self.opts.nccl_version, self.cpu);
        let mut out = super::wording::p2p_rule_words(path, d, cut);
        out.push("RCCL assumes P2P between GPUs of one host (hipDeviceCanAccessPeer is not checked here)".into());
        out
    }

    /// The note naming the rule set and, when xGMI was not visible, what that means.
    pub(super) fn rccl_notes(&self) -> Vec<String> {
        let t = self.topo();
        let mut out = Vec::new();
        if !t.xgmi_visible && self.gpu_count > 0 {
            out.push(match t.source.kind.as_str() {
                "sysfs" | "snapshot" => "xGMI not visible (no KFD topology under /sys/class/kfd: amdgpu not loaded, or not captured): labels are PCIe-only; GPU pairs shown PIX/PXB/… may be xGMI-connected",
                "hwloc-xml" => "xGMI not visible (this hwloc XML has no RSMI devices): labels are PCIe-only; GPU pairs shown PIX/PXB/… may be xGMI-connected",
                _ => "xGMI not visible (this input records no xGMI state): labels are PCIe-only",
            }
            .to_string());
        }
        if self.paths.any_xgmi() {
            out.push("XGMI = two AMD GPUs of one xGMI (Infinity Fabric) hive: rocm-smi's link type, RCCL's path type XGMI (`peerpath matrix --format rocm-smi` prints rocm-smi's weight, hops and link-type tables)".into());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::ClassifyOptions;
    use crate::analysis::testkit::TopoBuilder;

    /// A dual EPYC 7402 (Rome) host bridge with an MI50 behind its own two bridges
    /// (`1002:14a0`, `1002:14a1`) on one root port and a ConnectX-6 on another (synthesized).
    fn mi50_rome(plain_bridges: bool) -> Topology {
        let mut b = TopoBuilder::new(&["0-23", "24-47"]).cpu("AuthenticAMD", 23, 49);
        b.bridge("0000:60:01.1", None, Some(0));
        b.nic("0000:61:00.0", Some("0000:60:01.1"), Some(0), &["mlx5_0"]);
        b.bridge("0000:60:03.1", None, Some(0));
        b.switch("0000:60:03.1", "0000:62:00.0", &["0000:63:00.0"], Some(0));
        b.ids("0000:62:00.0", (0x1002, 0x14a0));
        b.ids("0000:63:00.0", (0x1002, 0x14a1));
        b.dev(
            "0000:64:00.0",
            Some("0000:63:00.0"),
            0x038000,
            (0x1002, 0x66a1),
            Some(0),
        );
        let mut t = b.build();
        if plain_bridges {
            // As an input that shows the two functions as PCI bridges without PCIe port
            // types: no switch is formed, each is a plain bridge.
            for d in &mut t.devices {
                if d.vendor_id == Some(0x1002) && d.class == 0x060400 {
                    d.kind = DeviceKind::Bridge;
                }
            }
            t.switches.clear();
        }
        t
    }

    /// RCCL's walk drops the `14a1` downstream port and the root port: the GPU has one PCI
    /// node (GPU→CPU count 2), the NIC none (NET→CPU count 2), bus numbers 64/61 share their
    /// high nibble → PHB, GDR on. Before the count followed the walk, two plain bridges
    /// counted as two nodes and the pair was staged.
    #[test]
    fn mi50_internal_bridges_are_one_nccl_node_and_rome_admits_phb() {
        for plain in [false, true] {
            let t = mi50_rome(plain);
            let c = Classifier::new(&t, &ClassifyOptions::default());
            let ix = |s: &str| t.device_index(&s.parse().unwrap()).unwrap() as DevIx;
            let (g, n) = (ix("0000:64:00.0"), ix("0000:61:00.0"));
            assert_eq!(c.paths().nccl_pci_nodes_above(g), 1, "plain {plain}");
            assert_eq!(c.paths().nccl_pci_nodes_above(n), 0, "plain {plain}");
            assert!(c.rccl_rome_pair(g, n), "plain {plain}");
            let p = c
                .pair(
                    &"0000:64:00.0".parse().unwrap(),
                    &"0000:61:00.0".parse().unwrap(),
                )
                .unwrap();
            assert!(p.nccl.gdr, "plain {plain}: {p:?}");
        }
    }
}
