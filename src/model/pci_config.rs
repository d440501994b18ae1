//! What peerpath knows of a device's PCI configuration space (`/sys/bus/pci/devices/<bdf>/config`):
//! the header, the PCI Express capability and the extended capabilities (ACS, AER, SR-IOV,
//! ATS), as `parse::config` decodes them from the bytes. The register layouts follow the PCI
//! Express Base Specification as mirrored in Linux `include/uapi/linux/pci_regs.h`.
//!
//! An unprivileged reader gets only the first 64 bytes; everything above 0x40 is then
//! *unknown* (never "absent" or "disabled").

use serde::{Deserialize, Serialize};

/// PCI Express capability ID (standard list).
pub const CAP_ID_EXP: u8 = 0x10;
/// Extended capability IDs.
pub const ECAP_AER: u16 = 0x0001;
/// Access Control Services.
pub const ECAP_ACS: u16 = 0x000d;
/// Address Translation Services.
pub const ECAP_ATS: u16 = 0x000f;
/// Single Root I/O Virtualization.
pub const ECAP_SRIOV: u16 = 0x0010;
/// Resizable BAR.
pub const ECAP_REBAR: u16 = 0x0015;

/// ACS control/capability bits (`PCI_ACS_*`).
pub mod acs {
    /// Source Validation.
    pub const SV: u16 = 0x01;
    /// Translation Blocking.
    pub const TB: u16 = 0x02;
    /// P2P Request Redirect.
    pub const RR: u16 = 0x04;
    /// P2P Completion Redirect.
    pub const CR: u16 = 0x08;
    /// Upstream Forwarding.
    pub const UF: u16 = 0x10;
    /// P2P Egress Control.
    pub const EC: u16 = 0x20;
    /// Direct Translated P2P.
    pub const DT: u16 = 0x40;

    /// Each control bit with the name `lspci -vvv` prints for it in `ACSCap`/`ACSCtl`.
    pub const NAMES: [(u16, &str); 7] = [
        (SV, "SrcValid"),
        (TB, "TransBlk"),
        (RR, "ReqRedir"),
        (CR, "CmpltRedir"),
        (UF, "UpstreamFwd"),
        (EC, "EgressCtrl"),
        (DT, "DirectTrans"),
    ];

    /// The names of the bits set in an ACS capability or control word, in register order.
    pub fn names(bits: u16) -> Vec<&'static str> {
        NAMES
            .iter()
            .filter(|(bit, _)| bits & bit != 0)
            .map(|&(_, n)| n)
            .collect()
    }
}

/// PCI Express device/port type (Express Capabilities register bits 7:4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortType {
    /// 0: PCI Express endpoint.
    Endpoint,
    /// 1: legacy endpoint.
    LegacyEndpoint,
    /// 4: root port of a root complex.
    RootPort,
    /// 5: upstream port of a switch.
    SwitchUpstream,
    /// 6: downstream port of a switch.
    SwitchDownstream,
    /// 7: PCI Express to PCI/PCI-X bridge.
    PcieToPci,
    /// 8: PCI/PCI-X to PCI Express bridge.
    PciToPcie,
    /// 9: root complex integrated endpoint.
    RcIntegratedEndpoint,
    /// 10: root complex event collector.
    RcEventCollector,
    /// Any other value.
    Other(u8),
}

impl PortType {
    /// The type from its 4-bit encoding (Express Capabilities register bits 7:4).
    pub fn from_bits(v: u8) -> Self {
        match v {
            0 => PortType::Endpoint,
            1 => PortType::LegacyEndpoint,
            4 => PortType::RootPort,
            5 => PortType::SwitchUpstream,
            6 => PortType::SwitchDownstream,
            7 => PortType::PcieToPci,
            8 => PortType::PciToPcie,
            9 => PortType::RcIntegratedEndpoint,
            10 => PortType::RcEventCollector,
            v => PortType::Other(v),
        }
    }
}

/// What the PCI Express capability says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PcieCap {
    /// Offset of the capability in config space.
    pub offset: u16,
    /// Device/port type.
    pub port_type: PortType,
    /// Max Payload Size supported (bytes), DEVCAP bits 2:0.
    pub mps_supported: u32,
    /// Max Payload Size in use (bytes), DEVCTL bits 7:5.
    pub mps: u32,
    /// Max Read Request Size (bytes), DEVCTL bits 14:12.
    pub mrrs: u32,
    /// Relaxed ordering enabled (DEVCTL bit 4).
    pub relaxed_ordering: bool,
    /// No-snoop enabled (DEVCTL bit 11).
    pub no_snoop: bool,
    /// Link capability: max speed in GT/s (LNKCAP bits 3:0), when the encoding is known.
    pub link_cap_gts: Option<f64>,
    /// Link capability: max width (LNKCAP bits 9:4).
    pub link_cap_width: Option<u32>,
    /// Link status: current speed in GT/s (LNKSTA bits 3:0).
    pub link_sta_gts: Option<f64>,
    /// Link status: negotiated width (LNKSTA bits 9:4).
    pub link_sta_width: Option<u32>,
    /// Slot implemented (Express Capabilities bit 8), for root and downstream ports.
    pub slot_implemented: bool,
    /// Physical slot number (SLTCAP bits 31:19) when a slot is implemented.
    pub physical_slot: Option<u32>,
}

/// The ACS extended capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcsCap {
    /// Offset of the capability.
    pub offset: u16,
    /// ACS Capability register (+0x04): which controls the port implements.
    pub capability: u16,
    /// ACS Control register (+0x06): which controls are enabled.
    pub control: u16,
}

impl AcsCap {
    /// The names of the enabled controls, as `lspci -vvv` prints them in `ACSCtl`.
    pub fn enabled_names(&self) -> Vec<&'static str> {
        acs::names(self.control)
    }
    /// Whether peer-to-peer requests or completions are redirected upstream (RR, CR or EC).
    pub fn redirects_p2p(&self) -> bool {
        self.control & (acs::RR | acs::CR | acs::EC) != 0
    }
}

/// The SR-IOV extended capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SriovCap {
    /// Offset of the capability.
    pub offset: u16,
    /// TotalVFs (+0x0E).
    pub total_vfs: u16,
    /// NumVFs (+0x10).
    pub num_vfs: u16,
    /// First VF Offset (+0x14): VF k's routing ID is the PF's plus this plus k × stride.
    #[serde(default)]
    pub first_vf_offset: u16,
    /// VF Stride (+0x16).
    #[serde(default)]
    pub vf_stride: u16,
}

/// Everything peerpath decodes from one device's config space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigSpace {
    /// Number of bytes the file gave (64 unprivileged, 256 or 4096 as root).
    pub len: usize,
    /// Vendor ID (+0x00).
    pub vendor_id: u16,
    /// Device ID (+0x02).
    pub device_id: u16,
    /// Class code (+0x09..0x0b) as 0xCCSSPP.
    pub class: u32,
    /// Header type (+0x0e, bits 6:0): 0 endpoint, 1 PCI-PCI bridge, 2 CardBus.
    pub header_type: u8,
    /// Multi-function bit (+0x0e bit 7).
    pub multifunction: bool,
    /// Bridge primary/secondary/subordinate bus numbers (type-1 header, +0x18..0x1a).
    pub bridge_buses: Option<(u8, u8, u8)>,
    /// The PCI Express capability; `None` if the device has none or it lies past `len`.
    pub pcie: Option<PcieCap>,
    /// Extended capability IDs found (from 0x100); empty if `len` ≤ 256.
    pub ext_caps: Vec<u16>,
    /// ACS, if present.
    pub acs: Option<AcsCap>,
    /// AER extended capability offset, if present.
    pub aer_offset: Option<u16>,
    /// ATS present and enabled (control bit 15).
    pub ats: Option<bool>,
    /// SR-IOV, if present.
    pub sriov: Option<SriovCap>,
}

impl ConfigSpace {
    /// The config space as its 64-byte header gives it (IDs, class, header type, a bridge's
    /// bus numbers), no capability read yet: the one starting point of the sysfs decoder
    /// (`parse::config`) and the lspci text reader (`sources::lspci::registers`), which fill
    /// in the capabilities they find.
    pub fn from_header(
        len: usize,
        vendor_id: u16,
        device_id: u16,
        class: u32,
        header_type: u8,
        multifunction: bool,
        bridge_buses: Option<(u8, u8, u8)>,
    ) -> Self {
        ConfigSpace {
            len,
            vendor_id,
            device_id,
            class,
            header_type,
            multifunction,
            bridge_buses,
            pcie: None,
            ext_caps: Vec::new(),
            acs: None,
            aer_offset: None,
            ats: None,
            sriov: None,
        }
    }
    /// Whether standard capabilities (above 0x40) could be read.
    pub fn has_capabilities(&self) -> bool {
        self.len >= 256
    }
    /// Whether extended capabilities (0x100 and up) could be read.
    pub fn has_extended(&self) -> bool {
        self.len >= 4096
    }
}

/// Capability ID of the bridge subsystem IDs (SSVID, PCI Bridge spec).
pub const CAP_ID_SSVID: u8 = 0x0d;

/// The identity the kernel shows in sysfs (`vendor`, `device`, `class`, `revision`,
/// `subsystem_vendor`, `subsystem_device`), as the kernel reads it from config space when it
/// sets a device up (`pci_setup_device`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderIds {
    /// Vendor ID (+0x00).
    pub vendor_id: u16,
    /// Device ID (+0x02).
    pub device_id: u16,
    /// Revision ID (+0x08).
    pub revision: u8,
    /// Class code (+0x09..0x0b) as 0xCCSSPP.
    pub class: u32,
    /// Subsystem vendor and device: +0x2c of a type-0 header; a bridge's SSVID capability (0
    /// and 0 where it has none, as the kernel leaves them); `None` where the bytes given do not
    /// hold them (a bridge's capabilities or a CardBus header's +0x40 lie past 64 bytes).
    pub subsystem: Option<(u16, u16)>,
}
