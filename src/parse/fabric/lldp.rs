//! `lldpctl -f json` (and `-f json0`) on one host: the switch port each of the host's
//! interfaces is cabled to, as lldpd's JSON writer prints it — `{"lldp": {"interface": …}}`
//! where `interface` is one object keyed by the interface name, an array of such objects when
//! there are several, or (`json0`, newer `json`) an array of objects with a `name` member;
//! `chassis` is keyed by the neighbour's system name (or holds `id`/`name` directly) and
//! `port.id` / `port.descr` name the switch port. The output does not carry the host's own
//! name, so the caller supplies it (the file name, by convention). LLDP carries no link rate.

use super::{Builder, MapError};
use crate::model::fabric::{FabricMap, LinkEnd, NodeKind, Producer};
use serde_json::Value;

/// A value lldpd prints either bare, as `{"value": v}`, or (json0) as `[{"value": v}]`.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.first().and_then(text),
        Value::Object(o) => o.get("value").and_then(text),
        _ => None,
    }
}

fn first(v: &Value) -> &Value {
    match v {
        Value::Array(a) => a.first().unwrap_or(&Value::Null),
        _ => v,
    }
}

/// The neighbour's system name, or its chassis id when it sends no name.
fn chassis_name(c: &Value) -> Option<String> {
    let c = first(c);
    let o = c.as_object()?;
    if let Some(n) = o.get("name").and_then(text) {
        return Some(n);
    }
    if let Some(id) = o.get("id") {
        return first(id).get("value").and_then(text);
    }
    // json: keyed by the system name.
    o.keys().next().cloned()
}

/// The switch port: `port.id` when it is an interface name or local name, else `port.descr`,
/// else the id whatever its type.
fn port_name(p: &Value) -> Option<String> {
    let p = first(p);
    let id = p.get("id").map(first);
    let id_type = id.and_then(|i| i.get("type")).and_then(text);
    let id_value = id.and_then(|i| i.get("value")).and_then(text);
    if matches!(id_type.as_deref(), Some("ifname" | "local" | "ifalias")) {
        return id_value;
    }
    p.get("descr")
        .and_then(text)
        .filter(|d| !d.trim().is_empty())
        .or(id_value)
}

/// Digits of a port name as a number (`swp12` → 12, `Ethernet1/28` → 128); the name itself
/// stays with the link.
fn port_number(name: &str) -> u32 {
    let d: String = name.chars().filter(char::is_ascii_digit).collect();
    d.parse().unwrap_or(0)
}

/// One element of `interface`: `{"name": …, …}` is itself one interface, otherwise each member
/// is an interface keyed by its name.
fn interface_entries(e: &Value) -> Vec<(String, &Value)> {
    match e.get("name").and_then(text) {
        Some(n) => vec![(n, e)],
        None => e
            .as_object()
            .map(|o| o.iter().map(|(k, v)| (k.clone(), v)).collect())
            .unwrap_or_default(),
    }
}

/// Interfaces of the document: (interface name, its object), from any of the three forms.
fn interfaces(ifs: &Value) -> Vec<(String, &Value)> {
    match ifs {
        Value::Array(a) => a.iter().flat_map(interface_entries).collect(),
        _ => interface_entries(ifs),
    }
}

/// Parses one host's `lldpctl -f json` output; `host` is the host's name, `name` the file
/// name for evidence.
pub fn parse(text_in: &str, host: &str, name: &str) -> Result<FabricMap, MapError> {
    parse_side(text_in, host, name, false)
}

/// Parses one switch's `lldpctl -f json` output (lldpd as Cumulus Linux and SONiC run it:
/// each interface is a switch port, each neighbour a host's interface): `switch` is the
/// switch's name. A host that names its port only by MAC cannot be matched to an adapter (the
/// capture reads no MAC address) and is said so in the map's limitations.
pub fn parse_switch(text_in: &str, switch: &str, name: &str) -> Result<FabricMap, MapError> {
    parse_side(text_in, switch, name, true)
}

/// Whether `s` is a MAC address (`aa:bb:cc:dd:ee:ff`).
fn is_mac(s: &str) -> bool {
    let g: Vec<&str> = s.split(':').collect();
    g.len() == 6
        && g.iter()
            .all(|x| x.len() == 2 && x.chars().all(|c| c.is_ascii_hexdigit()))
}

fn parse_side(
    text_in: &str,
    own: &str,
    name: &str,
    switch_side: bool,
) -> Result<FabricMap, MapError> {
    let doc: Value = serde_json::from_str(text_in)
        .map_err(|e| MapError::at(e.line(), "", format!("not JSON: {e}")))?;
    if doc.get("lldp").is_none() {
        return Err(MapError::at(
            0,
            "",
            "no \"lldp\" member: not lldpctl -f json output",
        ));
    }
    let mut b = Builder::new(Producer::Lldpctl);
    b.limitation("LLDP carries no link rate: widths and speeds are not judged");
    let lldp = first(&doc["lldp"]);
    let named = lldp.get("interface").map(interfaces).unwrap_or_default();
    let mut by_mac = 0;
    for (ifname, v) in named {
        let (Some(ch), Some(p)) = (v.get("chassis"), v.get("port")) else {
            continue;
        };
        let (Some(peer), Some(peer_port)) = (chassis_name(ch), port_name(p)) else {
            return Err(MapError::at(
                0,
                "",
                format!("interface {ifname}: neighbour without chassis name/id or port"),
            ));
        };
        // (host, host interface, switch, switch port) from whichever side printed it.
        let (host, host_if, sw, sp) = if switch_side {
            if is_mac(&peer_port) {
                by_mac += 1;
            }
            (peer, peer_port, own.to_string(), ifname.clone())
        } else {
            (own.to_string(), ifname.clone(), peer, peer_port)
        };
        let h = b.node(
            &format!("host:{host}/{host_if}"),
            NodeKind::Ca,
            None,
            Some(&format!("{host} {host_if}")),
        );
        let s = b.node(&format!("switch:{sw}"), NodeKind::Switch, None, Some(&sw));
        b.link(
            LinkEnd {
                node: s,
                port: port_number(&sp),
                port_guid: None,
            },
            LinkEnd {
                node: h,
                port: 1,
                port_guid: None,
            },
            Some((sp, host_if)),
            None,
            format!("{name} interface {ifname}"),
        );
    }
    if by_mac > 0 {
        b.limitation(&format!(
            "{name}: {by_mac} neighbour(s) name their port by MAC address only: not matched to an adapter (peerpath reads no MAC address)"
        ));
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_side() {
        let t = r#"{"lldp": {"interface": [
            {"swp7": {"chassis": {"gpu0007": {"id": {"type": "mac", "value": "aa"}}}, "port": {"id": {"type": "ifname", "value": "ens2np0"}}}},
            {"swp8": {"chassis": {"gpu0008": {"id": {"type": "mac", "value": "bb"}}}, "port": {"id": {"type": "mac", "value": "b8:ce:f6:00:00:01"}}}}]}}"#;
        let m = parse_switch(t, "leaf-r2", "leaf-r2.json").unwrap();
        assert_eq!(m.links.len(), 2);
        assert_eq!(m.nodes[0].desc, "gpu0007 ens2np0");
        assert_eq!(m.nodes[0].kind, NodeKind::Ca);
        assert_eq!(m.nodes[1].desc, "leaf-r2");
        assert_eq!(m.nodes[1].kind, NodeKind::Switch);
        assert_eq!(
            m.links[0].port_names,
            Some(("swp7".to_string(), "ens2np0".to_string()))
        );
        assert!(
            m.limitations
                .iter()
                .any(|l| l.contains("1 neighbour(s) name their port by MAC"))
        );
    }

    #[test]
    fn one_object_and_array_forms() {
        let one = r#"{"lldp": {"interface": {"eth2": {"via": "LLDP", "rid": "1",
            "chassis": {"leaf-r2-1": {"id": {"type": "mac", "value": "00:00:00:00:00:02"}}},
            "port": {"id": {"type": "ifname", "value": "swp7"}, "descr": "swp7", "ttl": "120"}}}}}"#;
        let m = parse(one, "gpu001", "gpu001.json").unwrap();
        assert_eq!(m.links.len(), 1);
        assert_eq!(m.nodes[1].desc, "leaf-r2-1");
        assert_eq!(m.nodes[0].desc, "gpu001 eth2");
        assert_eq!(
            m.links[0].port_names,
            Some(("swp7".to_string(), "eth2".to_string()))
        );
        let arr = r#"{"lldp": {"interface": [
            {"eth2": {"chassis": {"leaf-r2-1": {"id": {"type": "mac", "value": "aa"}}}, "port": {"id": {"type": "mac", "value": "bb"}, "descr": "Ethernet7"}}},
            {"eth3": {"chassis": {"leaf-r3-1": {"id": {"type": "mac", "value": "cc"}}}, "port": {"id": {"type": "ifname", "value": "Ethernet7"}}}}]}}"#;
        let m = parse(arr, "gpu001", "f").unwrap();
        assert_eq!(m.links.len(), 2);
        assert_eq!(m.links[0].port_names.as_ref().unwrap().0, "Ethernet7");
        let json0 = r#"{"lldp": [{"interface": [{"name": "eth2", "via": "LLDP",
            "chassis": [{"id": [{"type": "mac", "value": "aa"}], "name": [{"value": "leaf-r2-1"}]}],
            "port": [{"id": [{"type": "ifname", "value": "swp3"}]}]}]}]}"#;
        let m = parse(json0, "gpu001", "f").unwrap();
        assert_eq!(m.nodes[1].desc, "leaf-r2-1");
        assert_eq!(m.links[0].port_names.as_ref().unwrap().0, "swp3");
        assert!(parse("{}", "h", "f").is_err());
        assert!(parse("nope", "h", "f").is_err());
    }
}
