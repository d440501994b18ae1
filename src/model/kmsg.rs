//! What the kernel's own log says about the IOMMU and the GPUs, where an operator's text holds
//! it: an `nvidia-bug-report.log`'s `dmesg` section and kernel-log scan, a sosreport's
//! `sos_commands/kernel/dmesg`, or a `dmesg.txt` / `journalctl -k` output beside `lspci` text.
//! Filled by [`crate::parse::kmsg`]; every fact keeps its line so a finding can cite it.

use super::bdf::Bdf;
use serde::{Deserialize, Serialize};

/// One line of the log that said a fact: its 1-based line in the input and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// 1-based line in the text read.
    pub line: usize,
    /// The line as printed (trimmed).
    pub text: String,
}

/// The kernel log's facts (`drivers/iommu/iommu.c`, `drivers/iommu/intel/dmar.c` and
/// `iommu.c`, `drivers/iommu/amd/init.c`, the kernel's `Command line:` banner, NVIDIA's
/// `NVRM: Xid` lines).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KernelLog {
    /// The boot log starts at the kernel's first message (`[    0.000000]`): a message the
    /// kernel prints at every boot that is absent was not printed.
    pub from_boot: bool,
    /// `iommu: Default domain type: Translated` (iommu.c `iommu_subsys_init`): the type word
    /// (`Translated`, `Passthrough`, …) and its line.
    pub default_domain: Option<(String, LogLine)>,
    /// The command line the kernel booted with (`Command line: …` / `Kernel command line: …`).
    pub cmdline: Option<LogLine>,
    /// A line saying an IOMMU driver took over DMA remapping: Intel `DMAR: Intel(R)
    /// Virtualization Technology for Directed I/O` or `DMAR: IOMMU enabled`, AMD `AMD-Vi: Found
    /// IOMMU` / `AMD-Vi: … IOMMU … enabled`.
    pub iommu_on: Option<LogLine>,
    /// A line saying the IOMMU's DMA remapping is off (`DMAR: IOMMU disabled`, `AMD-Vi: AMD
    /// IOMMU disabled`).
    pub iommu_off: Option<LogLine>,
    /// `pci 0000:01:00.0: Adding to iommu group 5` (or the older `iommu: Adding device
    /// 0000:01:00.0 to group 5`): the device, its group and the line.
    pub groups: Vec<(Bdf, u32, LogLine)>,
    /// `NVRM: Xid (PCI:0000:03:00): 13, pid=…`: per GPU (function 0 of the printed
    /// domain:bus:device) and code, how many lines and the first.
    pub xids: Vec<Xid>,
}

/// Xid lines of one GPU and one code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Xid {
    /// The GPU (function 0 of the address NVRM prints).
    pub gpu: Bdf,
    /// The Xid number.
    pub code: u32,
    /// Lines with this GPU and code.
    pub count: u32,
    /// The first of them.
    pub first: LogLine,
}

impl KernelLog {
    /// Whether anything was read.
    pub fn is_empty(&self) -> bool {
        *self == KernelLog::default()
    }
}
