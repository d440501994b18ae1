//! Bandwidth tables: PCIe per-lane rates by generation (line coding included), NVLink per-link
//! rates, inter-socket links. Sources: shared/reference/classification.md §2.3 (NCCL's
//! `ncclTopoGetPciWidth`/`kvDictPciGen`), PCI-SIG encoding overheads.

/// Usable bandwidth of one PCIe lane in GB/s (10^9 bytes/s), one direction, after line coding
/// (8b/10b for Gen1–2, 128b/130b for Gen3–5, 1b/1b FLIT for Gen6) — before TLP overheads.
pub fn pcie_lane_gbytes(gts: f64) -> f64 {
    if gts <= 5.0 + 1e-6 {
        gts * 8.0 / 10.0 / 8.0
    } else if gts <= 32.0 + 1e-6 {
        gts * 128.0 / 130.0 / 8.0
    } else {
        gts / 8.0 * 242.0 / 256.0
    }
}

/// Link bandwidth in GB/s for a speed and width; `None` if either is unknown.
pub fn pcie_link_gbytes(gts: Option<f64>, width: Option<u32>) -> Option<f64> {
    Some(pcie_lane_gbytes(gts?) * width? as f64)
}

/// NVLink bandwidth per link per direction in GB/s, by NVLink version (1: P100, 2: V100,
/// 3: A100, 4: H100/H200, 5: B200).
pub fn nvlink_link_gbytes(version: Option<u32>) -> f64 {
    match version {
        Some(1) => 20.0,
        Some(2) => 25.0,
        Some(3) => 25.0,
        Some(4) => 25.0,
        Some(5) => 50.0,
        _ => 20.0,
    }
}

/// Inter-socket bandwidth in GB/s that NCCL assumes (`ncclTopoGetSystem` `SYS` link bw):
/// by CPU vendor and family (QPI/UPI, Infinity Fabric, POWER, Arm).
pub fn inter_socket_gbytes(
    cpu_vendor: Option<&str>,
    family: Option<u32>,
    model: Option<u32>,
) -> f64 {
    match cpu_vendor {
        Some("GenuineIntel") => {
            // Skylake (family 6, model >= 0x55) and later: UPI; older: QPI.
            if family == Some(6) && model.is_some_and(|m| m >= 0x55) {
                10.0
            } else {
                6.0
            }
        }
        Some("AuthenticAMD") => 16.0,
        Some(v) if v.contains("POWER") || v.contains("IBM") => 32.0,
        Some(_) => 6.0,
        None => 6.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gen4_x16() {
        let bw = pcie_link_gbytes(Some(16.0), Some(16)).unwrap();
        assert!((bw - 31.5).abs() < 0.1, "{bw}");
        let g1 = pcie_link_gbytes(Some(2.5), Some(1)).unwrap();
        assert!((g1 - 0.25).abs() < 1e-9);
        assert!(pcie_link_gbytes(None, Some(16)).is_none());
    }
}
