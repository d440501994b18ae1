//! The KFD topology in sysfs (`/sys/class/kfd/kfd/topology/nodes/<N>/`): which AMD GPU each
//! GPU node is (by `domain` and `location_id`, as RCCL's `alt_rsmi.cc` and rocm_smi_lib map
//! them), its hive, render node and memory, its io_link to the CPU, and the xGMI io_links
//! (type 11) between GPU nodes; plus the amdgpu partition attributes of each AMD GPU's device
//! directory (`current_compute_partition`, `current_memory_partition`).
//!
//! A node is a GPU node when its `simd_count` is above 0 (CPU nodes have `cpu_cores_count`
//! and no SIMDs); its PCI function is `domain:bus:dev.fn` with bus = `location_id` bits 8–15,
//! device bits 3–7, function bits 0–2; bits 28–31 carry the partition number of a partitioned
//! GPU (each compute partition is its own node on the same function).

use super::fsroot::{FsRoot, read_whole};
use super::warn_cap::SourceWarnings;
use crate::model::amd::{AmdGpu, KFD_LINK_XGMI, KfdLink, XgmiLink, is_amd_gpu};
use crate::model::bdf::Bdf;
use crate::model::device::Device;
use crate::model::topology::Warning;
use crate::parse::kfd::{KfdProperties, properties};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

/// Where the kernel publishes the KFD topology.
pub const NODES: &str = "sys/class/kfd/kfd/topology/nodes";

/// Largest `properties` file read (the kernel prints each into one 4 KiB sysfs page; a larger
/// one is refused, said, and not parsed).
pub const MAX_PROPERTIES_BYTES: usize = 64 << 10;

/// What the KFD topology said, ready to fold into the scan.
#[derive(Debug, Default)]
pub struct KfdScan {
    /// Whether the node directory could be listed (amdgpu loaded, or captured).
    pub visible: bool,
    /// xGMI io_links between GPU nodes, one observation per link file.
    pub xgmi: Vec<XgmiLink>,
    /// What could not be read or matched.
    pub warnings: Vec<Warning>,
}

/// The most compute partitions an AMD GPU has, one KFD node each (MI300X in CPX mode: one per
/// XCD, 8). More nodes naming one PCI function are a topology that aliases them (a copied or
/// forged tree): said once, with the count.
pub const MAX_NODES_PER_FUNCTION: usize = 8;

/// What the scan keeps of a node's `properties`: the facts it folds in. The whole file (a
/// `String` per pair) was kept for every node: 300,000 nodes held ~1 GB.
struct Facts {
    cpu_cores: u64,
    hive_id: Option<u64>,
    gfx_target_version: Option<u32>,
    drm_render_minor: Option<u32>,
    unique_id: Option<u64>,
    num_xcc: Option<u32>,
}

impl Facts {
    fn of(p: &KfdProperties) -> Self {
        Facts {
            cpu_cores: p.get("cpu_cores_count").unwrap_or(0),
            hive_id: p.get("hive_id"),
            gfx_target_version: p.get_u32("gfx_target_version"),
            drm_render_minor: p.get_u32("drm_render_minor"),
            unique_id: p.get("unique_id"),
            num_xcc: p.get_u32("num_xcc"),
        }
    }
}

struct Node {
    id: u32,
    dir: PathBuf,
    props: Facts,
    /// The PCI function of a GPU node.
    gpu: Option<Bdf>,
    links: Vec<KfdLink>,
}

fn warn(out: &mut SourceWarnings, path: &Path, message: impl Into<String>) {
    out.push(path.display(), || message.into());
}

/// Reads and parses one `properties` file; `None` (with a warning unless absent) when it
/// cannot be read or holds no pair.
fn read_props(fs: &dyn FsRoot, path: &Path, w: &mut SourceWarnings) -> Option<KfdProperties> {
    let b = match read_whole(fs, path, MAX_PROPERTIES_BYTES) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            warn(w, path, format!("could not read ({e}); KFD facts unknown"));
            return None;
        }
    };
    match properties(&b) {
        Ok((p, bad)) => {
            for (n, r) in &bad.first {
                w.push(path.display(), || format!("line {n}: {r}; line skipped"));
            }
            if bad.more() > 0 {
                w.push(path.display(), || {
                    format!("{} more line(s) refused; skipped", bad.more())
                });
            }
            Some(p)
        }
        Err(r) if r.is_empty() => None,
        Err(r) => {
            warn(w, path, format!("{r}; KFD facts unknown"));
            None
        }
    }
}

/// Numbered subdirectories of `dir` (`nodes/0`, `io_links/3`), in number order.
fn numbered(fs: &dyn FsRoot, dir: &Path) -> io::Result<Vec<(u32, PathBuf)>> {
    let mut v: Vec<(u32, PathBuf)> = fs
        .read_dir(dir)?
        .into_iter()
        .filter_map(|e| Some((e.name.parse::<u32>().ok()?, dir.join(&e.name))))
        .collect();
    v.sort_by_key(|(n, _)| *n);
    Ok(v)
}

/// The PCI function a GPU node names (`domain` and `location_id`).
fn node_bdf(p: &KfdProperties) -> Option<Bdf> {
    let loc = p.get("location_id")?;
    let domain = u32::try_from(p.get("domain").unwrap_or(0)).ok()?;
    let bus = ((loc >> 8) & 0xff) as u8;
    let device = ((loc >> 3) & 0x1f) as u8;
    let function = (loc & 0x7) as u8;
    format!("{domain:04x}:{bus:02x}:{device:02x}.{function}")
        .parse()
        .ok()
}

fn link_of(path: &Path, p: &KfdProperties) -> Option<KfdLink> {
    Some(KfdLink {
        path: path.display().to_string(),
        link_type: p.get_u32("type")?,
        node_to: p.get_u32("node_to")?,
        weight: p.get_u32("weight"),
        min_bandwidth: p.get_u32("min_bandwidth"),
        max_bandwidth: p.get_u32("max_bandwidth"),
        flags: p.get_u32("flags"),
    })
}

/// Reads the KFD topology and folds what it says about each AMD GPU into `devices`
/// ([`Device::amd`]); returns the xGMI links and whether the topology was there at all.
pub fn read(fs: &dyn FsRoot, devices: &mut [Device]) -> KfdScan {
    let mut w = SourceWarnings::new("KFD topology", format!("/{NODES}"));
    let mut out = read_into(fs, devices, &mut w);
    out.warnings = w.finish();
    out
}

fn read_into(fs: &dyn FsRoot, devices: &mut [Device], w: &mut SourceWarnings) -> KfdScan {
    let mut out = KfdScan::default();
    let root = Path::new(NODES);
    let list = match numbered(fs, root) {
        Ok(l) => l,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            partitions(fs, devices, w);
            return out;
        }
        Err(e) => {
            warn(
                w,
                root,
                format!("could not list ({e}); xGMI and KFD facts unknown"),
            );
            partitions(fs, devices, w);
            return out;
        }
    };
    out.visible = true;
    let mut nodes: Vec<Node> = Vec::new();
    for (id, dir) in list {
        let Some(props) = read_props(fs, &dir.join("properties"), w) else {
            continue;
        };
        let gpu = (props.get("simd_count").unwrap_or(0) > 0)
            .then(|| node_bdf(&props))
            .flatten();
        let mut links = Vec::new();
        if let Ok(ls) = numbered(fs, &dir.join("io_links")) {
            for (_, ld) in ls {
                let path = ld.join("properties");
                if let Some(p) = read_props(fs, &path, w) {
                    match link_of(&path, &p) {
                        Some(l) => links.push(l),
                        None => warn(w, &path, "io_link without type or node_to; link skipped"),
                    }
                }
            }
        }
        nodes.push(Node {
            id,
            dir,
            props: Facts::of(&props),
            gpu,
            links,
        });
    }
    let by_id: BTreeMap<u32, usize> = nodes.iter().enumerate().map(|(k, n)| (n.id, k)).collect();
    // One map from PCI function to device: a look-up per GPU node, not a pass over the devices
    // (300,000 nodes naming GPUs made that quadratic).
    let by_bdf: HashMap<Bdf, usize> = devices
        .iter()
        .enumerate()
        .map(|(k, d)| (d.bdf, k))
        .collect();
    let is_cpu = |id: u32| {
        by_id
            .get(&id)
            .is_some_and(|&k| nodes[k].gpu.is_none() && nodes[k].props.cpu_cores > 0)
    };
    for n in &nodes {
        let Some(bdf) = n.gpu else { continue };
        let Some(d) = by_bdf.get(&bdf).map(|&k| &mut devices[k]) else {
            warn(
                w,
                &n.dir.join("properties"),
                format!(
                    "GPU node names PCI function {bdf}, which the PCI scan does not have; its facts are not kept"
                ),
            );
            continue;
        };
        let a = d.amd.get_or_insert_with(|| AmdGpu {
            source: n.dir.display().to_string(),
            ..AmdGpu::default()
        });
        a.kfd_nodes.push(n.id);
        if a.kfd_nodes.len() == 1 {
            a.hive_id = n.props.hive_id;
            a.gfx_target_version = n.props.gfx_target_version;
            a.drm_render_minor = n.props.drm_render_minor;
            a.unique_id = n.props.unique_id;
            a.num_xcc = n.props.num_xcc;
            a.cpu_link = n.links.iter().find(|l| is_cpu(l.node_to)).cloned();
            a.vram_bytes = vram(fs, &n.dir, w);
        }
        for l in n.links.iter().filter(|l| l.link_type == KFD_LINK_XGMI) {
            let Some(peer) = by_id.get(&l.node_to).and_then(|&k| nodes[k].gpu) else {
                continue;
            };
            if peer == bdf {
                continue; // two partitions of one GPU
            }
            let mut x = XgmiLink::new(
                bdf,
                peer,
                format!(
                    "{}: type 11 (xGMI) node_to {} weight {} min_bandwidth {} max_bandwidth {}",
                    l.path,
                    l.node_to,
                    opt(l.weight),
                    opt(l.min_bandwidth),
                    opt(l.max_bandwidth)
                ),
            );
            x.weight = l.weight;
            x.hops = Some(1);
            x.min_bandwidth = l.min_bandwidth;
            x.max_bandwidth = l.max_bandwidth;
            x.direct = l.max_bandwidth.map(|m| m > 0);
            x.count = match (l.min_bandwidth, l.max_bandwidth) {
                (Some(lo), Some(hi)) if lo > 0 && hi > 0 => Some(hi / lo),
                _ => None,
            };
            out.xgmi.push(x);
        }
    }
    aliased_functions(devices, root, w);
    partitions(fs, devices, w);
    out
}

/// Says once per PCI function that more KFD nodes name it than a GPU has partitions
/// ([`MAX_NODES_PER_FUNCTION`]), with the count and the first node ids.
fn aliased_functions(devices: &[Device], root: &Path, w: &mut SourceWarnings) {
    for d in devices {
        let Some(a) = d
            .amd
            .as_ref()
            .filter(|a| a.kfd_nodes.len() > MAX_NODES_PER_FUNCTION)
        else {
            continue;
        };
        let first: Vec<String> = a.kfd_nodes.iter().take(4).map(u32::to_string).collect();
        warn(
            w,
            root,
            format!(
                "{} KFD nodes (ids {}, …) name PCI function {}, more than the {MAX_NODES_PER_FUNCTION} compute partitions an AMD GPU has (one node each): the topology aliases nodes onto this function; the partition count shown is what it says, not the GPU's",
                a.kfd_nodes.len(),
                first.join(", "),
                d.bdf
            ),
        );
    }
}

fn opt(v: Option<u32>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}

/// Local memory of a GPU node: `size_in_bytes` of its frame-buffer banks (heap types 1 and 2).
fn vram(fs: &dyn FsRoot, dir: &Path, w: &mut SourceWarnings) -> Option<u64> {
    let banks = numbered(fs, &dir.join("mem_banks")).ok()?;
    let mut total = None;
    for (_, b) in banks {
        let Some(p) = read_props(fs, &b.join("properties"), w) else {
            continue;
        };
        if matches!(p.get("heap_type"), Some(1 | 2))
            && let Some(s) = p.get("size_in_bytes")
        {
            total = Some(total.unwrap_or(0u64).saturating_add(s));
        }
    }
    total
}

/// The amdgpu partition modes of each AMD GPU (`current_compute_partition`,
/// `current_memory_partition` in its device directory; absent on GPUs that cannot be
/// partitioned).
fn partitions(fs: &dyn FsRoot, devices: &mut [Device], w: &mut SourceWarnings) {
    for d in devices.iter_mut().filter(|d| is_amd_gpu(d)) {
        let dir = PathBuf::from(&d.sysfs_path);
        let mut read = |name: &str| -> Option<String> {
            let p = dir.join(name);
            match fs.read(&p) {
                Ok(b) => match crate::parse::attr::text(&b) {
                    Ok(t) => Some(t.to_string()),
                    Err(r) if r.is_empty() => None,
                    Err(r) => {
                        warn(w, &p, format!("{r}; value treated as unknown"));
                        None
                    }
                },
                Err(_) => None,
            }
        };
        let (c, m) = (
            read("current_compute_partition"),
            read("current_memory_partition"),
        );
        if c.is_none() && m.is_none() {
            continue;
        }
        let a = d.amd.get_or_insert_with(|| AmdGpu {
            source: d.sysfs_path.clone(),
            ..AmdGpu::default()
        });
        a.compute_partition = c;
        a.memory_partition = m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fsroot::DirRoot;
    use std::os::unix::fs::symlink;

    /// Issue 41: 200 io_links linked to one file of 1,000 bad lines give the capped warnings
    /// and a count (they gave 200,000 warnings); a `properties` file over 64 KiB is refused
    /// and said, not cut.
    #[test]
    fn bad_lines_shared_by_many_links_are_counted_not_repeated() {
        let d = tempfile::tempdir().unwrap();
        let node = d.path().join(NODES).join("1");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("properties"), "cpu_cores_count 8\nsimd_count 0\n").unwrap();
        let bad = d.path().join("bad");
        std::fs::write(
            &bad,
            format!("type 2\nnode_to 0\n{}", "x y z\n".repeat(1000)),
        )
        .unwrap();
        for i in 0..200 {
            let l = node.join("io_links").join(i.to_string());
            std::fs::create_dir_all(&l).unwrap();
            symlink("/bad", l.join("properties")).unwrap();
        }
        let big = d.path().join(NODES).join("0");
        std::fs::create_dir_all(&big).unwrap();
        std::fs::write(big.join("properties"), "a 1\n".repeat(20_000)).unwrap();
        let scan = read(&DirRoot::new(d.path()), &mut []);
        assert!(scan.visible);
        let w = &scan.warnings;
        assert_eq!(
            w.len(),
            crate::sources::warn_cap::MAX_WARNINGS_PER_SOURCE + 1
        );
        assert!(
            w.last()
                .unwrap()
                .message
                .contains("more warning(s) of the KFD topology")
        );
        assert!(
            w.iter().any(|w| w.path.ends_with("nodes/0/properties")
                && w.message.contains("larger than the 64 KiB")),
            "{:?}",
            w[0]
        );
    }

    /// Issue 53: 3,000 KFD nodes naming one PCI function (a tree whose node directories all
    /// alias one GPU) are read, folded into that GPU, and the aliasing said once, with the
    /// count; 8 (an MI300X in CPX mode) are partitions, not said.
    #[test]
    fn nodes_aliasing_one_function_are_said_once() {
        for (n, said) in [(3_000, true), (8, false)] {
            let d = tempfile::tempdir().unwrap();
            let props =
                "cpu_cores_count 0\nsimd_count 1216\nlocation_id 1280\ndomain 0\nnum_xcc 8\n";
            for i in 0..n {
                let node = d.path().join(NODES).join(i.to_string());
                std::fs::create_dir_all(&node).unwrap();
                std::fs::write(node.join("properties"), props).unwrap();
            }
            let mut gpu = Device::new(
                "0000:05:00.0".parse().unwrap(),
                "pci0000:00".into(),
                String::new(),
            );
            gpu.class = 0x038000;
            gpu.vendor_id = Some(crate::model::amd::AMD_GPU_VENDOR);
            gpu.kind = crate::model::device::kind_from_class(gpu.class, gpu.vendor_id, None);
            let mut devices = [gpu];
            let scan = read(&DirRoot::new(d.path()), &mut devices);
            let a = devices[0].amd.as_ref().unwrap();
            assert_eq!(a.kfd_nodes.len(), n);
            assert_eq!(a.num_xcc, Some(8));
            let aliased: Vec<_> = scan
                .warnings
                .iter()
                .filter(|w| w.message.contains("aliases nodes onto this function"))
                .collect();
            assert_eq!(aliased.len(), usize::from(said), "{:?}", scan.warnings);
            if said {
                assert!(
                    aliased[0].message.starts_with(
                        "3000 KFD nodes (ids 0, 1, 2, 3, …) name PCI function 0000:05:00.0"
                    ),
                    "{}",
                    aliased[0].message
                );
            }
        }
    }
}
