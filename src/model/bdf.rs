//! PCI addresses: `DDDD:BB:DD.F`, as the kernel names devices in `/sys/bus/pci/devices`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A PCI function address (domain, bus, device, function). The domain is 32 bits wide because
/// Intel VMD and some hypervisors create domains above 0xffff (`10000:00:04.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bdf {
    /// PCI segment (domain).
    pub domain: u32,
    /// Bus number.
    pub bus: u8,
    /// Device (slot) number, 0..=31.
    pub device: u8,
    /// Function number, 0..=7.
    pub function: u8,
}

impl Bdf {
    /// The address as `lspci` prints it by default: `bb:dd.f` when the domain is 0, the full
    /// `dddd:bb:dd.f` otherwise.
    pub fn short(&self) -> String {
        if self.domain == 0 {
            format!("{:02x}:{:02x}.{:x}", self.bus, self.device, self.function)
        } else {
            self.to_string()
        }
    }

    /// The adapter address without the function: the functions of one physical adapter
    /// (a dual-port NIC) share it.
    pub fn adapter(&self) -> String {
        format!("{:04x}:{:02x}:{:02x}", self.domain, self.bus, self.device)
    }
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// Why a string is not a PCI address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a PCI address (expected DDDD:BB:DD.F): {0:?}")]
pub struct BdfParseError(pub String);

impl FromStr for Bdf {
    type Err = BdfParseError;
    /// Accepts `DDDD:BB:DD.F` (any domain width up to 8 hex digits) and the short `BB:DD.F`
    /// (domain 0), as `lspci` and nvidia-smi print them (`00000000:17:00.0` too).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || BdfParseError(s.to_string());
        let (head, func) = s.rsplit_once('.').ok_or_else(err)?;
        let mut parts: Vec<&str> = head.split(':').collect();
        if parts.len() == 2 {
            parts.insert(0, "0");
        }
        if parts.len() != 3 || func.is_empty() || func.len() > 1 {
            return Err(err());
        }
        let hex = |t: &str, max_len: usize| -> Result<u32, BdfParseError> {
            if t.is_empty() || t.len() > max_len || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err());
            }
            u32::from_str_radix(t, 16).map_err(|_| err())
        };
        let domain = hex(parts[0], 8)?;
        let bus = hex(parts[1], 2)? as u8;
        let device = hex(parts[2], 2)?;
        let function = hex(func, 1)?;
        if device > 31 || function > 7 {
            return Err(err());
        }
        Ok(Bdf {
            domain,
            bus,
            device: device as u8,
            function: function as u8,
        })
    }
}

impl Serialize for Bdf {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Bdf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A host bridge (PCI root complex) name as sysfs writes it: `pci0000:17` (domain, root bus).
pub fn host_bridge_name(domain: u32, bus: u8) -> String {
    format!("pci{:04x}:{:02x}", domain, bus)
}

/// Parses a sysfs host bridge directory name (`pci0000:17`, `pci10000:00`).
pub fn parse_host_bridge(name: &str) -> Option<(u32, u8)> {
    let rest = name.strip_prefix("pci")?;
    let (d, b) = rest.split_once(':')?;
    if d.is_empty() || d.len() > 8 || b.len() != 2 {
        return None;
    }
    Some((
        u32::from_str_radix(d, 16).ok()?,
        u8::from_str_radix(b, 16).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let b: Bdf = "0000:17:00.1".parse().unwrap();
        assert_eq!(b.to_string(), "0000:17:00.1");
        assert_eq!(b.adapter(), "0000:17:00");
        let b: Bdf = "10000:00:04.0".parse().unwrap();
        assert_eq!(b.domain, 0x10000);
        assert_eq!(b.to_string(), "10000:00:04.0");
        let b: Bdf = "00000000:3B:00.0".parse().unwrap();
        assert_eq!(b.to_string(), "0000:3b:00.0");
        let b: Bdf = "3b:00.0".parse().unwrap();
        assert_eq!(b.bus, 0x3b);
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "0000:17:00",
            "0000:17:20.0",
            "0000:17:00.8",
            "zz:00.0",
            "0000:117:00.0",
            ".0",
        ] {
            assert!(s.parse::<Bdf>().is_err(), "{s}");
        }
    }

    #[test]
    fn host_bridges() {
        assert_eq!(parse_host_bridge("pci0000:17"), Some((0, 0x17)));
        assert_eq!(parse_host_bridge("pci10000:00"), Some((0x10000, 0)));
        assert_eq!(parse_host_bridge("pci_bus"), None);
        assert_eq!(host_bridge_name(0, 0x3a), "pci0000:3a");
    }
}
