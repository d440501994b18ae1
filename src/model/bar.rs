//! A device's assigned BARs (base address registers), as `parse::resource` reads them from
//! `/sys/bus/pci/devices/<bdf>/resource`.

use serde::{Deserialize, Serialize};

/// One assigned BAR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bar {
    /// BAR index (line number, 0–5).
    pub index: u8,
    /// Size in bytes (end − start + 1).
    pub size: u64,
    /// Memory (not I/O port) BAR.
    pub memory: bool,
    /// Prefetchable.
    pub prefetchable: bool,
    /// 64-bit.
    pub is_64bit: bool,
}
