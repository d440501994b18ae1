//! The PCIe generations: signalling rate, the Link Speed code config space uses for it, and
//! the line coding that decides how much of the rate carries data. The one table every reader
//! and writer of link speeds uses (sysfs `*_link_speed`, LNKCAP/LNKSTA codes, hwloc's
//! `pci_link_speed` GB/s, NCCL's per-generation figures). Source: PCI Express Base
//! Specification revisions 1.0a–7.0; Linux `include/uapi/linux/pci_regs.h` (`PCI_EXP_LNKCAP_SLS_*`).

/// How a generation codes bits on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// 8b/10b (Gen1, Gen2): 80 % of the rate carries data.
    B8b10b,
    /// 128b/130b (Gen3–Gen5).
    B128b130b,
    /// 1b/1b FLIT mode (Gen6 and later), counted at 242 data bytes per 256-byte FLIT.
    Flit,
}

impl Encoding {
    /// Data bits per coded bits: (8, 10), (128, 130), (242, 256).
    pub fn ratio(self) -> (f64, f64) {
        match self {
            Encoding::B8b10b => (8.0, 10.0),
            Encoding::B128b130b => (128.0, 130.0),
            Encoding::Flit => (242.0, 256.0),
        }
    }

    /// Data rate in Gb/s of one lane signalling at `gts` GT/s with this coding.
    pub fn data_gbits(self, gts: f64) -> f64 {
        let (data, coded) = self.ratio();
        gts * data / coded
    }
}

/// One PCIe generation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Generation {
    /// Generation number (1 for Gen1). It is also the Link Speed code of LNKCAP/LNKSTA
    /// bits 3:0 (1 = 2.5 GT/s … 7 = 128 GT/s).
    pub generation: u8,
    /// Signalling rate per lane in GT/s.
    pub gts: f64,
    /// Line coding.
    pub encoding: Encoding,
}

/// Every PCIe generation, slowest first.
pub const GENERATIONS: [Generation; 7] = [
    Generation {
        generation: 1,
        gts: 2.5,
        encoding: Encoding::B8b10b,
    },
    Generation {
        generation: 2,
        gts: 5.0,
        encoding: Encoding::B8b10b,
    },
    Generation {
        generation: 3,
        gts: 8.0,
        encoding: Encoding::B128b130b,
    },
    Generation {
        generation: 4,
        gts: 16.0,
        encoding: Encoding::B128b130b,
    },
    Generation {
        generation: 5,
        gts: 32.0,
        encoding: Encoding::B128b130b,
    },
    Generation {
        generation: 6,
        gts: 64.0,
        encoding: Encoding::Flit,
    },
    Generation {
        generation: 7,
        gts: 128.0,
        encoding: Encoding::Flit,
    },
];

/// The generation signalling at `gts` (within 0.01 GT/s), if any.
pub fn by_rate(gts: f64) -> Option<&'static Generation> {
    GENERATIONS.iter().find(|g| (gts - g.gts).abs() < 0.01)
}

/// The generation whose Link Speed code (LNKCAP/LNKSTA bits 3:0) is `code`; `None` for 0
/// and reserved codes.
pub fn by_code(code: u8) -> Option<&'static Generation> {
    GENERATIONS.iter().find(|g| g.generation == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        assert_eq!(by_rate(16.0).map(|g| g.generation), Some(4));
        assert_eq!(by_rate(3.0), None);
        assert_eq!(by_code(5).map(|g| g.gts), Some(32.0));
        assert_eq!(by_code(0), None);
        assert_eq!(by_code(8), None);
        assert_eq!(by_rate(64.0).map(|g| g.encoding), Some(Encoding::Flit));
        for (i, g) in GENERATIONS.iter().enumerate() {
            assert_eq!(g.generation as usize, i + 1);
        }
    }
}
