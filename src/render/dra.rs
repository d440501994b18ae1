//! Kubernetes Dynamic Resource Allocation: `resource.k8s.io/v1` `ResourceSlice` objects for the
//! node's GPUs and NICs, YAML by default (JSON on request).
//!
//! Data: the GPU and NIC endpoints and the one GPU→NIC matching ([`NodeView`], the rails
//! report [`Rails`]), each device's PCI address, its host bridge (`pciDDDD:BB`, the first
//! component of its sysfs path — what `deviceattribute.GetPCIeRootAttributeByPCIBusID`
//! derives), its `numa_node` (left out when the kernel reports -1, as the attribute's definition
//! requires) and the PCIe switches above it ([`Paths`]).
//!
//! Each device carries the standard attributes `resource.kubernetes.io/pcieRoot`, `pciBusID` and
//! `numaNode`, and, in the driver's own domain (unqualified names, as DRA drivers publish
//! them): `type` (`gpu`/`nic`), `pcieSwitch` (the topmost PCIe switch between the device and its
//! root port: two devices with the same value are within PXB, which `pcieRoot` equality does not
//! promise), `rail` (GPU i's rail is the NIC it is matched to; that NIC carries the same value,
//! so `matchAttribute: <driver>/rail` gives a GPU and its NIC), `railPath` (the GPU–NIC label of
//! that pair), and `rdmaDevice`/`netdev` on NICs; AMD GPUs also carry `gpuDriver` (`gpu.amd.com`,
//! AMD's DRA driver, which allocates them) and `xgmiHive` (the KFD `hive_id`). Schema: kubernetes `ResourceSlice` v1 (at most
//! 128 devices per slice, so larger nodes get several slices of one pool; attribute strings at
//! most 64 characters); `tests/consumer_dra.rs` validates the output with
//! `kubernetes-validate --strict`.

use crate::analysis::paths::Paths;
use crate::analysis::place::NodeView;
use crate::analysis::rails::Rails;
use crate::model::Bdf;
use anyhow::{Result, bail};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt::Write;

/// API group and version of the objects.
pub const API_VERSION: &str = "resource.k8s.io/v1";
/// AMD's DRA driver (ROCm/k8s-gpu-dra-driver), which allocates AMD GPUs.
pub const AMD_GPU_DRIVER: &str = "gpu.amd.com";
/// Default `spec.driver`.
pub const DEFAULT_DRIVER: &str = "peerpath.io";
/// `resource.kubernetes.io/pcieRoot`.
pub const ATTR_PCIE_ROOT: &str = "resource.kubernetes.io/pcieRoot";
/// `resource.kubernetes.io/pciBusID`.
pub const ATTR_PCI_BUS_ID: &str = "resource.kubernetes.io/pciBusID";
/// `resource.kubernetes.io/numaNode`.
pub const ATTR_NUMA_NODE: &str = "resource.kubernetes.io/numaNode";
/// Most devices in one ResourceSlice (`spec.devices`, ResourceSlice v1).
pub const MAX_DEVICES_PER_SLICE: usize = 128;
/// Longest string attribute value (`DeviceAttribute.string`).
pub const MAX_STRING_ATTR: usize = 64;

/// Options of the DRA export.
#[derive(Debug, Clone)]
pub struct DraOptions {
    /// `spec.driver`: a DNS subdomain (lower case).
    pub driver: String,
    /// `spec.nodeName` and the pool name: the Kubernetes node name.
    pub node_name: String,
    /// JSON instead of YAML.
    pub json: bool,
}

/// Whether `s` is a DNS-1123 subdomain (what `driver`, `nodeName` and object names must be).
pub fn dns_subdomain(s: &str) -> bool {
    super::nfd::dns_subdomain_ok(s)
}

/// DNS-label device name: `<kind>-dddd-bb-dd-f`.
pub fn device_name(kind: &str, b: &Bdf) -> String {
    format!("{kind}-{}", b.to_string().replace([':', '.'], "-"))
}

fn string_attr(v: &str) -> Result<Value> {
    if v.len() > MAX_STRING_ATTR {
        bail!("DRA string attribute {v:?} is longer than {MAX_STRING_ATTR} characters");
    }
    Ok(json!({ "string": v }))
}

/// The topmost switch between a device and its root port (its upstream port address).
fn top_switch(p: &Paths, b: &Bdf) -> Option<Bdf> {
    let i = p.index(b)?;
    let s = p.chain(i).iter().rev().find_map(|&d| p.switch_of_port(d))?;
    Some(p.topo().switches[s].upstream)
}

/// The devices of the node with their attributes, GPUs then NICs, each in address order.
pub fn devices(p: &Paths, view: &NodeView, r: &Rails) -> Result<Vec<Value>> {
    let t = p.topo();
    let gpu_bdf: BTreeMap<&str, Bdf> = view.gpus.iter().map(|g| (g.name.as_str(), g.bdf)).collect();
    let mut rail_of: BTreeMap<Bdf, usize> = BTreeMap::new();
    let mut path_of: BTreeMap<Bdf, &str> = BTreeMap::new();
    // A NIC with no rail number (within PXB of no GPU) has no rail attribute.
    for port in &r.ports {
        let Some(rail) = port.rail else { continue };
        if let Ok(b) = port.nic_bdf.parse::<Bdf>() {
            rail_of.insert(b, rail);
        }
        for g in &port.gpus {
            if let Some(b) = gpu_bdf.get(g.as_str()) {
                rail_of.insert(*b, rail);
            }
        }
    }
    for gn in &r.gpu_nic {
        if let Some(b) = gpu_bdf.get(gn.gpu.as_str()) {
            path_of.insert(*b, gn.path.as_str());
        }
    }
    let mut out = Vec::new();
    for (kind, eps) in [("gpu", &view.gpus), ("nic", &view.nics)] {
        let mut eps: Vec<_> = eps.iter().collect();
        eps.sort_by_key(|e| e.bdf);
        for e in eps {
            let d = t.device(&e.bdf);
            let mut a = Map::new();
            if let Some(d) = d {
                a.insert(ATTR_PCIE_ROOT.into(), string_attr(&d.host_bridge)?);
                if let Some(n) = d.numa_node {
                    a.insert(ATTR_NUMA_NODE.into(), json!({ "int": n }));
                }
            }
            a.insert(ATTR_PCI_BUS_ID.into(), string_attr(&e.bdf.to_string())?);
            a.insert("type".into(), string_attr(kind)?);
            if let Some(s) = top_switch(p, &e.bdf) {
                a.insert("pcieSwitch".into(), string_attr(&s.to_string())?);
            }
            if let Some(rail) = rail_of.get(&e.bdf) {
                a.insert("rail".into(), json!({ "int": rail }));
            }
            if let Some(path) = path_of.get(&e.bdf).filter(|p| **p != "?" && **p != "-") {
                a.insert("railPath".into(), string_attr(path)?);
            }
            if let Some(rd) = e.rdma.first() {
                a.insert("rdmaDevice".into(), string_attr(rd)?);
            }
            if let Some(nd) = e.net.first() {
                a.insert("netdev".into(), string_attr(nd)?);
            }
            // AMD GPUs are allocated by AMD's DRA driver (`gpu.amd.com`, devices of `type`
            // `amdgpu`): name it, so a claim pairs its GPU with this rail by `pciBusID`, and the
            // xGMI hive, so `matchAttribute` keeps a claim's GPUs in one hive.
            if let Some(d) = d.filter(|d| kind == "gpu" && crate::model::amd::is_amd_gpu(d)) {
                a.insert("gpuDriver".into(), string_attr(AMD_GPU_DRIVER)?);
                if let Some(h) = d.amd.as_ref().and_then(|x| x.hive_id).filter(|&h| h != 0) {
                    a.insert("xgmiHive".into(), string_attr(&format!("{h:#x}"))?);
                }
            }
            out.push(json!({ "name": device_name(kind, &e.bdf), "attributes": a }));
        }
    }
    Ok(out)
}

/// The ResourceSlice objects (one per [`MAX_DEVICES_PER_SLICE`] devices, one pool).
pub fn slices(p: &Paths, view: &NodeView, r: &Rails, o: &DraOptions) -> Result<Vec<Value>> {
    if !dns_subdomain(&o.driver) {
        bail!(
            "--driver {:?} is not a DNS subdomain (lower-case letters, digits, '-' and '.'; a domain you own, e.g. gpu.example.com)",
            o.driver
        );
    }
    if !dns_subdomain(&o.node_name) {
        bail!(
            "--node-name {:?} is not a Kubernetes node name (a DNS subdomain: lower-case letters, digits, '-' and '.')",
            o.node_name
        );
    }
    let devs = devices(p, view, r)?;
    if devs.is_empty() {
        bail!("no GPU or NIC on this node: no ResourceSlice to write");
    }
    let chunks: Vec<&[Value]> = devs.chunks(MAX_DEVICES_PER_SLICE).collect();
    let base = format!("{}-{}", o.node_name, o.driver.replace('.', "-"));
    let mut out = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        let name = if chunks.len() == 1 {
            base.clone()
        } else {
            format!("{base}-{i}")
        };
        if name.len() > 253 {
            bail!("ResourceSlice name {name:?} is longer than 253 characters");
        }
        out.push(json!({
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": { "name": name },
            "spec": {
                "driver": o.driver,
                "nodeName": o.node_name,
                "pool": {
                    "name": o.node_name,
                    "generation": 1,
                    "resourceSliceCount": chunks.len(),
                },
                "devices": c,
            }
        }));
    }
    Ok(out)
}

/// Renders the slices: YAML documents separated by `---`, or JSON (one object, or a
/// `ResourceSliceList` when the pool needs several slices).
pub fn render(p: &Paths, view: &NodeView, r: &Rails, o: &DraOptions) -> Result<String> {
    let s = slices(p, view, r, o)?;
    if o.json {
        let v = if s.len() == 1 {
            s.into_iter().next().unwrap_or_default()
        } else {
            json!({
                "apiVersion": API_VERSION,
                "kind": "ResourceSliceList",
                "metadata": {},
                "items": s,
            })
        };
        return Ok(serde_json::to_string_pretty(&v)? + "\n");
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# DRA ResourceSlice written by peerpath from {} ({})",
        comment(&p.topo().source.path),
        p.topo().source.kind
    );
    for (i, doc) in s.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        yaml(doc, 0, &mut out);
    }
    Ok(out)
}

/// A path in a YAML comment: one line ([`super::escape::one_line`]).
fn comment(s: &str) -> String {
    super::escape::one_line(s).into_owned()
}

/// Whether a mapping key can be written plain: starts with a letter, holds no YAML indicator,
/// and is no YAML 1.1 boolean or null word.
fn plain_key(k: &str) -> bool {
    let b = k.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphabetic()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._/-".contains(c))
        && !matches!(
            k.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        )
}

fn key(k: &str) -> String {
    if plain_key(k) {
        k.to_string()
    } else {
        super::escape::yaml_str(k)
    }
}

/// A scalar in flow form: a string plain when it is a word no YAML version reads as anything
/// but a string ([`plain_key`]), else double-quoted ([`super::escape::yaml_str`]: JSON escapes,
/// a subset of YAML's double-quoted escapes, with every character YAML forbids raw escaped; so read the same by YAML 1.1 and 1.2 parsers: `0000:18:00.0` would be
/// a base-60 number to YAML 1.1 unquoted); numbers and booleans as they are.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) if plain_key(s) => s.clone(),
        Value::String(s) => super::escape::yaml_str(s),
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        v => v.to_string(),
    }
}

fn is_block(v: &Value) -> bool {
    matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
}

/// Block-style YAML of a JSON value (mappings indented by two, sequences at their key's indent,
/// as kubectl writes them).
fn yaml(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                match x {
                    Value::Object(_) if is_block(x) => {
                        let _ = writeln!(out, "{pad}{}:", key(k));
                        yaml(x, indent + 2, out);
                    }
                    Value::Array(_) if is_block(x) => {
                        let _ = writeln!(out, "{pad}{}:", key(k));
                        yaml(x, indent, out);
                    }
                    x => {
                        let _ = writeln!(out, "{pad}{}: {}", key(k), scalar(x));
                    }
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for x in a {
                if is_block(x) {
                    // The item's first line follows "- ", the rest align under it.
                    let mut item = String::new();
                    yaml(x, indent + 2, &mut item);
                    let first = item.get(indent + 2..).unwrap_or("");
                    let _ = write!(out, "{pad}- {first}");
                } else {
                    let _ = writeln!(out, "{pad}- {}", scalar(x));
                }
            }
        }
        x => {
            let _ = writeln!(out, "{pad}{}", scalar(x));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_shapes() {
        let v = json!({
            "a": {"b": "x:y", "c": 3, "d": []},
            "on": true,
            "l": [{"n": "1", "m": {"k": {"string": "v"}}}, "s"],
        });
        let mut s = String::new();
        yaml(&v, 0, &mut s);
        assert_eq!(
            s,
            "a:\n  b: \"x:y\"\n  c: 3\n  d: []\nl:\n- m:\n    k:\n      string: v\n  \"n\": \"1\"\n- s\n\"on\": true\n"
        );
    }
}
