//! AER error counters of a device (`aer_dev_correctable`, `aer_dev_nonfatal`, `aer_dev_fatal`,
//! kernel ≥ 4.19), as `parse::aer` reads them.

use serde::{Deserialize, Serialize};

/// Counters of one AER file, in file order. Only the non-zero counters are kept by name (a
/// healthy node has dozens of zero counters per device; keeping them costs memory at scale and
/// says nothing); `zero_counters` says how many lines read zero.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AerCounters {
    /// `(name, count)` for every non-zero line but the TOTAL line.
    pub counters: Vec<(String, u64)>,
    /// Number of counter lines that read 0.
    #[serde(default)]
    pub zero_counters: u32,
    /// The `TOTAL_ERR_*` line, if present.
    pub total: Option<u64>,
}

impl AerCounters {
    /// Counters that are non-zero.
    pub fn nonzero(&self) -> impl Iterator<Item = &(String, u64)> {
        self.counters.iter().filter(|(_, v)| *v > 0)
    }
    /// The total, or the sum of the counters when the file had no TOTAL line.
    pub fn total_or_sum(&self) -> u64 {
        self.total
            .unwrap_or_else(|| self.counters.iter().map(|(_, v)| *v).sum())
    }
}

/// One AER status bit an `lspci -vvv` text shows set (`CESta: RxErr+`, `UESta: UnsupReq+`),
/// with whether its mask register masks it: a masked error sends no message, so the kernel
/// never counted it and never cleared the bit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AerBit {
    /// `CESta` or `UESta`.
    pub register: String,
    /// The bit's name as lspci prints it (`RxErr`, `BadTLP`, `Timeout`, `UnsupReq`).
    pub name: String,
    /// Set in `CEMsk`/`UEMsk`.
    pub masked: bool,
    /// 1-based line of the AER capability in the text.
    pub line: usize,
}
