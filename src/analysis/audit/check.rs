//! The audit's check ids, spelled in one place: [`CheckId`] names every check, its stable id
//! string (the `id` of a finding in `peerpath.audit/1`), the short tag a picture badge shows, and
//! the anchor of its row in docs/audit.md (`docs/audit.md#check-<id>`). A test parses the
//! checks table of docs/audit.md, so a check without documentation fails it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// Declares [`CheckId`] from one list, so a check's variant, id string and badge tag are
/// written once and `ALL`, `as_str` and `tag` cannot miss a variant.
macro_rules! checks {
    ($( $(#[$doc:meta])* $v:ident = $id:literal, $tag:literal; )*) => {
        /// One audit check. Serialised as its id string (`acs-redirect`), ordered as that
        /// string.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum CheckId {
            $( $(#[$doc])* $v, )*
        }

        impl CheckId {
            /// Every check, in the order of the docs/audit.md checks table.
            pub const ALL: &'static [CheckId] = &[$(CheckId::$v),*];

            /// The stable id string (`acs-redirect`), as in `findings[].id`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(CheckId::$v => $id,)*
                }
            }

            /// The short tag of a badge on the picture (`ACS`, `LINK`, `PEER`; at most 5
            /// characters).
            pub fn tag(self) -> &'static str {
                match self {
                    $(CheckId::$v => $tag,)*
                }
            }
        }
    };
}

checks! {
    /// `gdr-peer-module`: is any GPUDirect RDMA mechanism available (peermem, dma-buf).
    GdrPeerModule = "gdr-peer-module", "PEER";
    /// `driver-mismatch`: kernel module, procfs driver and peer module versions agree.
    DriverMismatch = "driver-mismatch", "DRV";
    /// `gpu-excluded`: the NVIDIA driver excludes a GPU.
    GpuExcluded = "gpu-excluded", "GPU";
    /// `gpu-xid`: the kernel log in the input holds NVIDIA Xid lines for a GPU.
    GpuXid = "gpu-xid", "XID";
    /// `acs-redirect`: ACS P2P redirect or egress control on a GPU–NIC path.
    AcsRedirect = "acs-redirect", "ACS";
    /// `iommu-translation`: the IOMMU translates DMA of a GPU or RDMA NIC.
    IommuTranslation = "iommu-translation", "IOMMU";
    /// `iommu-group`: GPUs, NICs and Data Direct DMA functions in the IOMMU groups their
    /// platform needs (rdma_topo's check).
    IommuGroup = "iommu-group", "GROUP";
    /// `link-degraded`: a PCIe hop trained below what both ends can do.
    LinkDegraded = "link-degraded", "LINK";
    /// `aer-errors`: non-zero AER counters.
    AerErrors = "aer-errors", "AER";
    /// `bar1-small`: an NVIDIA GPU's BAR1 below 1 GiB.
    Bar1Small = "bar1-small", "BAR1";
    /// `mps-mrrs`: Max Payload Size differs on a path, or an RDMA NIC's Max Read Request Size
    /// is small.
    MpsMrrs = "mps-mrrs", "MPS";
    /// `nic-port-down`: an RDMA port down, slow, or behind a PCIe link slower than the port.
    NicPortDown = "nic-port-down", "PORT";
    /// `data-direct`: a ConnectX-8 Data Direct DMA function bound, paired with its RDMA
    /// function and next to one GPU.
    DataDirect = "data-direct", "DDIR";
    /// `c2c-link`: a Grace GPU's NVLink-C2C link present with every link up.
    C2cLink = "c2c-link", "C2C";
    /// `virtualized`: a hypervisor is present.
    Virtualized = "virtualized", "VIRTU";
    /// `numa-unknown`: a GPU or RDMA NIC without a NUMA node on a multi-node machine.
    NumaUnknown = "numa-unknown", "NUMA";
    /// `gpu-nic-path`: the GPU → NIC matching and misplaced adapters.
    GpuNicPath = "gpu-nic-path", "GPU";
    /// `nccl-settings`: the NCCL settings the verdicts read, with their sources, and every
    /// value NCCL would not read as written.
    NcclSettings = "nccl-settings", "NCONF";
    /// `nic-sharing`: GPUs sharing a rail NIC, with each NIC's port speed (bandwidth, not
    /// path).
    NicSharing = "nic-sharing", "SHARE";
    /// `input-limits`: what the input could not show (its format's limits, the host shown).
    InputLimits = "input-limits", "INPUT";
    /// `profile-diff`: differences from an expected-layout profile (`--profile`).
    ProfileDiff = "profile-diff", "PROFI";
    /// `evidence-gdr`: the job's own NCCL log shows a GPU without GDR, or GDR not shown
    /// (`--evidence LOG`).
    EvidenceGdr = "evidence-gdr", "LOG";
    /// `evidence-bandwidth`: an nccl-tests run below what the NICs carry, or perftest GPU under
    /// host (`--evidence LOG`).
    EvidenceBandwidth = "evidence-bandwidth", "BW";
    /// `job-ib-hca`: `NCCL_IB_HCA` in NCCL's grammar against the node's HCAs (`--job`).
    JobIbHca = "job-ib-hca", "HCA";
    /// `job-socket-ifname`: `NCCL_SOCKET_IFNAME` against the interfaces (`--job`).
    JobSocketIfname = "job-socket-ifname", "IFACE";
    /// `job-cuda-visible`: `CUDA_VISIBLE_DEVICES` and `CUDA_DEVICE_ORDER` (`--job`).
    JobCudaVisible = "job-cuda-visible", "CVD";
    /// `job-nccl-levels`: `NCCL_NET_GDR_LEVEL`, `NCCL_P2P_LEVEL` (`--job`).
    JobNcclLevels = "job-nccl-levels", "LEVEL";
    /// `job-net`: `NCCL_IB_DISABLE`, `NCCL_NET` (`--job`).
    JobNet = "job-net", "NET";
    /// `job-topo-file`: `NCCL_TOPO_FILE` exists, reads as NCCL XML, has this node's GPUs (`--job`).
    JobTopoFile = "job-topo-file", "TOPO";
    /// `job-rdma-devices`: uverbs devices, libibverbs, ACTIVE ports, RoCE GIDs, live (`--job`).
    JobRdmaDevices = "job-rdma-devices", "RDMA";
    /// `job-memlock`: `RLIMIT_MEMLOCK`, live (`--job`).
    JobMemlock = "job-memlock", "MLOCK";
    /// `job-shm`: `/dev/shm` size, live (`--job`).
    JobShm = "job-shm", "SHM";
    /// `job-cpuset`: the cgroup cpuset against the cores `place` gives each GPU, live (`--job`).
    JobCpuset = "job-cpuset", "CPUS";
    /// `job-peer-memory`: peer memory or dma-buf as the job sees it, live (`--job`).
    JobPeerMemory = "job-peer-memory", "JPEER";
    /// `gds-kernel`: GPUDirect Storage's kernel path (nvidia-fs, or PCI P2PDMA and its
    /// prerequisites), or plainly no GDS on the node.
    GdsKernel = "gds-kernel", "GDS";
    /// `gds-config`: `/etc/cufile.json` (compat mode allowed or forced, RDMA addresses,
    /// `max_direct_io_size_kb`, denylists).
    GdsConfig = "gds-config", "CUFIL";
    /// `gds-path`: ACS redirect and IOMMU translation between GPUs and data NVMe drives.
    GdsPath = "gds-path", "GDSP";
    /// `gds-drive-placement`: a data drive behind another root complex or socket than every
    /// GPU; a volume spanning sockets.
    GdsDrivePlacement = "gds-drive-placement", "DRIVE";
    /// `gds-mounts`: the file systems on data drives or over RDMA, and whether GDS supports
    /// them as mounted.
    GdsMounts = "gds-mounts", "MOUNT";
    /// `amd-driver`: each AMD GPU bound to amdgpu.
    AmdDriver = "amd-driver", "AMDGP";
    /// `amd-peer-memory`: the amdkfd peer-memory client RCCL's GDR check looks for.
    AmdPeerMemory = "amd-peer-memory", "KFDPM";
    /// `amd-pcie-atomics`: KFD found PCIe atomics for each AMD GPU.
    AmdAtomics = "amd-pcie-atomics", "ATOM";
    /// `amd-large-bar`: each AMD GPU's whole VRAM visible through its BAR.
    AmdLargeBar = "amd-large-bar", "LBAR";
    /// `amd-xgmi`: the GPUs of a hive joined by xGMI.
    AmdXgmi = "amd-xgmi", "XGMI";
    /// `amd-apu-gdr-level`: an MI300A APU and its NIC on one NUMA node, beyond RCCL's default
    /// GDR level.
    AmdApuGdrLevel = "amd-apu-gdr-level", "APU";
    /// `amd-partition`: compute/memory partition modes of AMD GPUs.
    AmdPartition = "amd-partition", "PART";
}

/// The documentation page the anchors point into.
pub const DOC_PAGE: &str = "docs/audit.md";

impl CheckId {
    /// The anchor of the check's row in docs/audit.md (`check-acs-redirect`).
    pub fn anchor(self) -> String {
        format!("check-{}", self.as_str())
    }

    /// The link to the check's documentation (`docs/audit.md#check-acs-redirect`).
    pub fn doc_link(self) -> String {
        format!("{DOC_PAGE}#{}", self.anchor())
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCheck(pub String);

impl fmt::Display for UnknownCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown audit check id {:?}", self.0)
    }
}

impl std::error::Error for UnknownCheck {}

impl std::str::FromStr for CheckId {
    type Err = UnknownCheck;
    /// Parses an id string (`acs-redirect`); exact spelling only.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CheckId::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCheck(s.to_string()))
    }
}

impl Ord for CheckId {
    /// As the id strings (findings sort by id string, as before the enum).
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for CheckId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for CheckId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CheckId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_parse_back() {
        for &c in CheckId::ALL {
            assert_eq!(c.as_str().parse::<CheckId>(), Ok(c));
            assert!(!c.tag().is_empty() && c.tag().len() <= 5, "{c:?}");
        }
        let mut ids: Vec<&str> = CheckId::ALL.iter().map(|c| c.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), CheckId::ALL.len());
        assert!("acs_redirect".parse::<CheckId>().is_err());
    }

    #[test]
    fn serde_is_the_id_string() {
        for &c in CheckId::ALL {
            let j = serde_json::to_string(&c).unwrap();
            assert_eq!(j, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<CheckId>(&j).unwrap(), c);
        }
        assert!(serde_json::from_str::<CheckId>("\"no-such-check\"").is_err());
    }

    #[test]
    fn orders_as_strings() {
        let mut by_enum = CheckId::ALL.to_vec();
        by_enum.sort();
        let mut by_str = CheckId::ALL.to_vec();
        by_str.sort_by_key(|c| c.as_str());
        assert_eq!(by_enum, by_str);
    }

    /// Every check has a row in the checks table of docs/audit.md, with its anchor, and every
    /// row there names a check: a new check without documentation (or a documented check that
    /// was removed) fails here.
    #[test]
    fn docs_table_matches_the_enum() {
        let doc = include_str!("../../../docs/audit.md");
        let table = doc
            .split("\n## Checks\n")
            .nth(1)
            .expect("docs/audit.md has a `## Checks` section")
            .split("\n## ")
            .next()
            .unwrap();
        let mut documented = Vec::new();
        for line in table.lines().filter(|l| l.starts_with("| <a id=")) {
            let anchor = line
                .split('"')
                .nth(1)
                .unwrap_or_else(|| panic!("row without anchor: {line}"));
            let id = line
                .split('`')
                .nth(1)
                .unwrap_or_else(|| panic!("row without `id`: {line}"));
            let c: CheckId = id
                .parse()
                .unwrap_or_else(|e| panic!("docs/audit.md documents {e}"));
            assert_eq!(anchor, c.anchor(), "{line}");
            // The id round-trips through the JSON form as well.
            let j = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<CheckId>(&j).unwrap(), c);
            documented.push(c);
        }
        let rows = table.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(
            rows, 0,
            "a check row in docs/audit.md lacks its <a id> anchor"
        );
        assert_eq!(
            documented,
            CheckId::ALL.to_vec(),
            "docs/audit.md checks table and CheckId::ALL differ (ids or order)"
        );
    }
}
