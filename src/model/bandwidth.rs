//! Bandwidth tables: PCIe per-lane rates by generation (line coding included), NVLink per-link
//! rates, inter-socket links. Sources: shared/reference/classification.md §2.3 (NCCL's
//! `ncclTopoGetPciWidth`/`kvDictPciGen`), PCI-SIG encoding overheads.

/// Usable bandwidth of one PCIe lane in GB/s (10^9 bytes/s), one direction, after line coding
/// (8b/10b for Gen1–2, 128b/130b for Gen3–5, 1b/1b FLIT for Gen6 and later; see
/// [`super::pcie::GENERATIONS`]) — before TLP overheads. A rate between generations is coded
/// like the next faster generation.
pub fn pcie_lane_gbytes(gts: f64) -> f64 {
    let encoding = super::pcie::GENERATIONS
        .iter()
        .find(|g| gts <= g.gts + 1e-6)
        .map_or(super::pcie::Encoding::Flit, |g| g.encoding);
    encoding.data_gbits(gts) / 8.0
}

/// Link bandwidth in GB/s for a speed and width; `None` if either is unknown.
pub fn pcie_link_gbytes(gts: Option<f64>, width: Option<u32>) -> Option<f64> {
    Some(pcie_lane_gbytes(gts?) * width? as f64)
}

/// NCCL's effective per-lane PCIe bandwidth in GB/s (`kvDictPciGen` / 80, classification.md
/// §2.3): Gen1 0.1875, Gen2 0.375, Gen3 0.75, Gen4 1.5, Gen5 3, Gen6 6. These are NCCL's model
/// figures (about 75 % of the raw rate), so a path bottleneck compares with NCCL's logs.
/// `None` for a rate that is not a PCIe generation.
pub fn nccl_pcie_lane_gbytes(gts: f64) -> Option<f64> {
    let per_lane = match super::pcie::by_rate(gts)?.generation {
        1 => 15.0,
        2 => 30.0,
        3 => 60.0,
        4 => 120.0,
        5 => 240.0,
        6 => 480.0,
        _ => return None,
    };
    Some(per_lane / 80.0)
}

/// NCCL's model bandwidth of a PCIe link in GB/s (width × [`nccl_pcie_lane_gbytes`]);
/// `None` if the speed or width is unknown (NCCL itself would assume Gen3 x16 = 12 GB/s; we
/// say unknown instead).
pub fn nccl_pcie_link_gbytes(gts: Option<f64>, width: Option<u32>) -> Option<f64> {
    Some(nccl_pcie_lane_gbytes(gts?)? * width? as f64)
}

/// NCCL's per-link NVLink bandwidth in GB/s (`ncclTopoNVLinkBw`, classification.md §2.3), by
/// compute capability × 10 (`sm`) when known, else by NVLink version (1 → SM60, 2 → SM70,
/// 3 → SM80, 4 → SM90, 5 → SM100). `nccl_minor` is the NCCL 2.x minor version (the SM90 and
/// SM100 values changed in 2.20 and 2.28). Unknown: 20, as NCCL.
pub fn nccl_nvlink_link_gbytes(sm: Option<u32>, version: Option<u32>, nccl_minor: u32) -> f64 {
    let sm = sm.or(match version {
        Some(1) => Some(60),
        Some(2) => Some(70),
        Some(3) => Some(80),
        Some(4) => Some(90),
        Some(5) => Some(100),
        _ => None,
    });
    match sm {
        Some(60) => 18.0,
        Some(70) | Some(80) => 20.0,
        Some(86) => 12.0,
        Some(90) => {
            if nccl_minor <= 19 {
                20.0
            } else {
                20.6
            }
        }
        Some(s) if s >= 100 => {
            if (25..=27).contains(&nccl_minor) {
                40.0
            } else {
                40.1
            }
        }
        _ => 20.0,
    }
}

/// Raw NVLink bandwidth per link per direction in GB/s, by NVLink version (1: P100,
/// 2: V100, 3: A100, 4: H100/H200, 5: B200). Hardware figure, not NCCL's model value.
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

/// Inter-CPU (inter-NUMA-node) bandwidth in GB/s that NCCL assumes for its `SYS` links
/// (`ncclTopoGetInterCpuBw`, classification.md §2.3), by CPU vendor string, CPUID family and
/// model from `/proc/cpuinfo`, and the NCCL 2.x minor version (the Sapphire/Emerald Rapids
/// buckets exist since 2.26). Returns the value and the bucket name; `None` when the vendor
/// is unknown (NCCL would know it from CPUID; we do not guess).
pub fn inter_socket_gbytes(
    cpu_vendor: Option<&str>,
    family: Option<u32>,
    model: Option<u32>,
    nccl_minor: u32,
) -> Option<(f64, &'static str)> {
    match cpu_vendor? {
        "GenuineIntel" => {
            let m = match (family, model) {
                (Some(6), Some(m)) => m,
                // NCCL buckets only family 6 by model; anything else stays Broadwell-class.
                _ => return Some((6.0, "Intel BDW (family/model not 6/≥0x55)")),
            };
            if nccl_minor >= 26 && m >= 0xCF {
                Some((40.0, "Intel ERP (model ≥ 0xCF)"))
            } else if nccl_minor >= 26 && m >= 0x8F {
                Some((22.0, "Intel SRP (model ≥ 0x8F)"))
            } else if m >= 0x55 {
                Some((10.0, "Intel SKL (model ≥ 0x55)"))
            } else {
                Some((6.0, "Intel BDW (model < 0x55)"))
            }
        }
        "AuthenticAMD" => Some((16.0, "AMD")),
        "CentaurHauls" | "  Shanghai  " | "Shanghai" => {
            if family == Some(7) && model == Some(0x5B) {
                Some((9.0, "Zhaoxin Yongfeng"))
            } else {
                Some((6.0, "Zhaoxin"))
            }
        }
        v if v.contains("POWER") || v.contains("IBM") => Some((32.0, "POWER9")),
        v if v.contains("ARM") || v.contains("arm") || v.starts_with("0x") => Some((6.0, "ARM")),
        // NCCL quirk: an unknown x86 vendor keeps the initial 5000 GB/s.
        _ => Some((5000.0, "other x86 vendor (NCCL quirk: initial value kept)")),
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

    #[test]
    fn nccl_tables() {
        assert_eq!(nccl_pcie_link_gbytes(Some(16.0), Some(16)), Some(24.0));
        assert_eq!(nccl_pcie_link_gbytes(Some(32.0), Some(16)), Some(48.0));
        assert_eq!(nccl_pcie_link_gbytes(Some(8.0), Some(16)), Some(12.0));
        assert_eq!(nccl_pcie_link_gbytes(Some(2.5), Some(1)), Some(0.1875));
        assert_eq!(nccl_pcie_link_gbytes(Some(64.0), Some(16)), Some(96.0));
        assert_eq!(nccl_pcie_link_gbytes(Some(8.0), None), None);
        let ice = inter_socket_gbytes(Some("GenuineIntel"), Some(6), Some(106), 30).unwrap();
        assert_eq!(ice.0, 10.0);
        let spr = inter_socket_gbytes(Some("GenuineIntel"), Some(6), Some(143), 30).unwrap();
        assert_eq!(spr.0, 22.0);
        let spr_old = inter_socket_gbytes(Some("GenuineIntel"), Some(6), Some(143), 25).unwrap();
        assert_eq!(spr_old.0, 10.0);
        let emr = inter_socket_gbytes(Some("GenuineIntel"), Some(6), Some(207), 30).unwrap();
        assert_eq!(emr.0, 40.0);
        assert_eq!(
            inter_socket_gbytes(Some("AuthenticAMD"), Some(25), Some(1), 30)
                .unwrap()
                .0,
            16.0
        );
        assert!(inter_socket_gbytes(None, None, None, 30).is_none());
        assert_eq!(nccl_nvlink_link_gbytes(None, Some(4), 30), 20.6);
        assert_eq!(nccl_nvlink_link_gbytes(None, Some(4), 19), 20.0);
        assert_eq!(nccl_nvlink_link_gbytes(Some(80), None, 30), 20.0);
        assert_eq!(nccl_nvlink_link_gbytes(None, None, 30), 20.0);
    }
}
