//! Serde helpers that write IDs the way `lspci -n` and sysfs show them (`"0x020700"`,
//! `"0x15b3"`) and CPU sets as cpulists (`"0-7,16-23"`), and read them back.

use serde::{Deserialize, Deserializer, Serializer};

fn parse_hex<E: serde::de::Error>(s: &str) -> Result<u32, E> {
    let t = s.strip_prefix("0x").unwrap_or(s);
    u32::from_str_radix(t, 16).map_err(|_| E::custom(format!("not a hex id: {s:?}")))
}

/// Class code as `"0xCCSSPP"`.
pub mod class {
    use super::*;
    /// Serialize.
    pub fn serialize<S: Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("0x{v:06x}"))
    }
    /// Deserialize.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        parse_hex(&String::deserialize(d)?)
    }
}

/// Optional 16-bit ID as `"0xvvvv"` or null.
pub mod opt_id16 {
    use super::*;
    /// Serialize.
    pub fn serialize<S: Serializer>(v: &Option<u16>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(&format_args!("0x{v:04x}")),
            None => s.serialize_none(),
        }
    }
    /// Deserialize.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => {
                let v = parse_hex::<D::Error>(&s)?;
                u16::try_from(v).map(Some).map_err(serde::de::Error::custom)
            }
            None => Ok(None),
        }
    }
}

/// Optional 8-bit ID as `"0xrr"` or null.
pub mod opt_id8 {
    use super::*;
    /// Serialize.
    pub fn serialize<S: Serializer>(v: &Option<u8>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(&format_args!("0x{v:02x}")),
            None => s.serialize_none(),
        }
    }
    /// Deserialize.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => {
                let v = parse_hex::<D::Error>(&s)?;
                u8::try_from(v).map(Some).map_err(serde::de::Error::custom)
            }
            None => Ok(None),
        }
    }
}

/// Optional CPU set as a cpulist string or null.
pub mod opt_cpus {
    use super::*;
    /// Serialize.
    pub fn serialize<S: Serializer>(v: &Option<Vec<u32>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&crate::model::cpulist::format_list(v)),
            None => s.serialize_none(),
        }
    }
    /// Deserialize.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u32>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => crate::model::cpulist::parse_str(&s)
                .map(Some)
                .map_err(|e| serde::de::Error::custom(format!("{:?} {e}", s.trim()))),
            None => Ok(None),
        }
    }
}
