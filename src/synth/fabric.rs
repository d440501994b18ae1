//! Synthesized rail-optimised pods as the fabric tools print them: `ibnetdiscover`'s topology
//! file (the grammar of rdma-core's `ibnetdiscover.c`, see `parse::fabric`), with cabling
//! faults placed on purpose, for tests and benchmarks of `rails --fabric-map`.
//!
//! Data: nothing read. A pod of `nodes` hosts named `gpu0001`…, each with `rails` adapters
//! `mlx5_0`… whose node description is `<host> mlx5_<k>` (as the mlx5 driver sets it); rail k
//! of each group of `hosts_per_leaf` hosts is cabled to leaf `leaf-r<k>-su<g>`, every leaf has
//! `spines` uplinks, one to each spine. All links `4xNDR` unless a fault says otherwise.

use crate::analysis::cabling::{Adapter, NodeLayout};
use std::fmt::Write as _;

mod ibdiag;

pub use ibdiag::{SWITCH_DESC, ibdiag_csv, ibdiagnet_ibnetdiscover, ndr_pod_ibdiag};

/// A cabling fault placed in a synthesized pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodFault {
    /// Host `host` (0-based) has its rail `a` and rail `b` cables swapped at the leaves.
    SwapRails {
        /// Host index.
        host: usize,
        /// One rail.
        a: usize,
        /// The other.
        b: usize,
    },
    /// Host `host`'s rail `from` cable lands on rail `onto`'s leaf (beside its rail `onto`
    /// adapter): the rail collapsed onto one leaf.
    Collapse {
        /// Host index.
        host: usize,
        /// The rail whose cable moved.
        from: usize,
        /// The rail whose leaf it reached.
        onto: usize,
    },
    /// Host `host`'s rail `rail` link trained at `rate` (`2xNDR`, `4xHDR`).
    Slow {
        /// Host index.
        host: usize,
        /// Rail.
        rail: usize,
        /// Width and speed as ibnetdiscover prints them.
        rate: &'static str,
    },
    /// Host `host`'s rail `rail` cable is unplugged: the adapter is not in the map.
    Unplugged {
        /// Host index.
        host: usize,
        /// Rail.
        rail: usize,
    },
    /// A port error counter on host `host`'s rail `rail` cable: written by
    /// [`ibdiag_csv`] only (the other formats print no counters).
    Counter {
        /// Host index.
        host: usize,
        /// Rail.
        rail: usize,
        /// Counter column (`SymbolErrorCounter`, `LinkDownedCounter`, …).
        counter: &'static str,
        /// Its value (65535: a saturated 16-bit counter).
        value: u64,
        /// `PM_DELTA` (climbing during the run) rather than `PM_INFO` (since the last clear).
        delta: bool,
        /// On the leaf's port of that cable rather than the adapter's.
        leaf: bool,
    },
}

/// The shape of a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pod {
    /// Hosts.
    pub nodes: usize,
    /// Rails (adapters per host).
    pub rails: usize,
    /// Hosts per leaf (a scalable unit).
    pub hosts_per_leaf: usize,
    /// Spine switches.
    pub spines: usize,
}

impl Pod {
    /// A pod of `nodes` 8-rail hosts, 32 hosts per leaf, 4 spines.
    pub fn new(nodes: usize) -> Self {
        Pod {
            nodes,
            rails: 8,
            hosts_per_leaf: 32,
            spines: 4,
        }
    }

    /// Host name of host `h` (`gpu0001` for 0).
    pub fn host(h: usize) -> String {
        format!("gpu{:04}", h + 1)
    }

    /// Name of the leaf of rail `r` for scalable unit `g`.
    pub fn leaf(r: usize, g: usize) -> String {
        format!("leaf-r{r}-su{g}")
    }

    fn groups(&self) -> usize {
        self.nodes.div_ceil(self.hosts_per_leaf.max(1))
    }
}

fn ca_guid(h: usize, r: usize) -> u64 {
    0xa088_c203_0000_0000 | ((h as u64) << 8) | r as u64
}

fn leaf_guid(r: usize, g: usize) -> u64 {
    0xfc6a_1c03_0000_0000 | ((g as u64) << 8) | r as u64
}

fn spine_guid(s: usize) -> u64 {
    0xfc6a_1c03_ff00_0000 | s as u64
}

/// Where each host adapter's cable lands: `[host][rail]` → (leaf rail, leaf group, leaf
/// port, rate as ibnetdiscover prints it); `None`: unplugged.
pub(super) type Cables = Vec<Vec<Option<(usize, usize, usize, &'static str)>>>;

fn cables(pod: &Pod, faults: &[PodFault]) -> Cables {
    let mut cable: Cables = (0..pod.nodes)
        .map(|h| {
            (0..pod.rails)
                .map(|r| {
                    Some((
                        r,
                        h / pod.hosts_per_leaf,
                        h % pod.hosts_per_leaf + 1,
                        "4xNDR",
                    ))
                })
                .collect()
        })
        .collect();
    for f in faults {
        match *f {
            PodFault::SwapRails { host, a, b } => {
                let (x, y) = (cable[host][a], cable[host][b]);
                cable[host][a] = y;
                cable[host][b] = x;
            }
            PodFault::Collapse { host, from, onto } => {
                if let Some(c) = cable[host][from].as_mut() {
                    c.0 = onto;
                    // A free port on that leaf, after the hosts and the uplinks.
                    c.2 = pod.hosts_per_leaf * (1 + from)
                        + pod.spines
                        + 1
                        + host % pod.hosts_per_leaf;
                }
            }
            PodFault::Slow { host, rail, rate } => {
                if let Some(c) = cable[host][rail].as_mut() {
                    c.3 = rate;
                }
            }
            PodFault::Unplugged { host, rail } => cable[host][rail] = None,
            PodFault::Counter { .. } => {}
        }
    }
    cable
}

/// Leaf ports: `[leaf rail][group]` → [(port, host, rail, rate)], in port order.
type LeafPorts = Vec<Vec<Vec<(usize, usize, usize, &'static str)>>>;

fn leaf_ports(pod: &Pod, cable: &Cables) -> LeafPorts {
    let mut leaf_ports: LeafPorts = vec![vec![Vec::new(); pod.groups()]; pod.rails];
    for (h, rs) in cable.iter().enumerate() {
        for (r, c) in rs.iter().enumerate() {
            if let Some((lr, g, p, rate)) = *c {
                leaf_ports[lr][g].push((p, h, r, rate));
            }
        }
    }
    for l in leaf_ports.iter_mut().flatten() {
        l.sort();
    }
    leaf_ports
}

/// The pod's `ibnetdiscover` topology file with `faults` applied.
pub fn ibnetdiscover(pod: &Pod, faults: &[PodFault]) -> String {
    let groups = pod.groups();
    let cable = cables(pod, faults);
    let leaf_ports = leaf_ports(pod, &cable);
    let mut out = String::with_capacity(pod.nodes * pod.rails * 400);
    out.push_str("#\n# Topology file: generated on Sat Dec  5 12:00:00 2026\n#\n");
    let _ = writeln!(
        out,
        "# Initiated from node {:016x} port {:016x}",
        ca_guid(0, 0),
        ca_guid(0, 0)
    );
    let ports = pod.hosts_per_leaf * (pod.rails + 1) + pod.spines;
    for (r, of_rail) in leaf_ports.iter().enumerate() {
        for (g, on_leaf) in of_rail.iter().enumerate() {
            let gu = leaf_guid(r, g);
            let _ = write!(
                out,
                "\nvendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0x{gu:x}\nswitchguid=0x{gu:x}({gu:x})\nSwitch\t{ports} \"S-{gu:016x}\"\t\t# \"{}\" enhanced port 0 lid {} lmc 0\n",
                Pod::leaf(r, g),
                1 + r * groups + g
            );
            for &(p, h, hr, rate) in on_leaf {
                let _ = writeln!(
                    out,
                    "[{p}]\t\"H-{:016x}\"[1]({:x}) \t\t# \"{} mlx5_{hr}\" lid {} {rate}",
                    ca_guid(h, hr),
                    ca_guid(h, hr),
                    Pod::host(h),
                    1000 + h * pod.rails + hr
                );
            }
            for s in 0..pod.spines {
                let _ = writeln!(
                    out,
                    "[{}]\t\"S-{:016x}\"[{}]\t\t# \"spine{s}\" lid {} 4xNDR",
                    pod.hosts_per_leaf + 1 + s,
                    spine_guid(s),
                    1 + r * groups + g,
                    900 + s
                );
            }
        }
    }
    for s in 0..pod.spines {
        let gu = spine_guid(s);
        let _ = write!(
            out,
            "\nvendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0x{gu:x}\nswitchguid=0x{gu:x}({gu:x})\nSwitch\t{} \"S-{gu:016x}\"\t\t# \"spine{s}\" enhanced port 0 lid {} lmc 0\n",
            pod.rails * groups,
            900 + s
        );
        for r in 0..pod.rails {
            for g in 0..groups {
                let _ = writeln!(
                    out,
                    "[{}]\t\"S-{:016x}\"[{}]\t\t# \"{}\" lid {} 4xNDR",
                    1 + r * groups + g,
                    leaf_guid(r, g),
                    pod.hosts_per_leaf + 1 + s,
                    Pod::leaf(r, g),
                    1 + r * groups + g
                );
            }
        }
    }
    for (h, rs) in cable.iter().enumerate() {
        for (r, c) in rs.iter().enumerate() {
            let Some((lr, g, p, rate)) = *c else { continue };
            let gu = ca_guid(h, r);
            let _ = write!(
                out,
                "\nvendid=0x2c9\ndevid=0x1021\nsysimgguid=0x{gu:x}\ncaguid=0x{gu:x}\nCa\t1 \"H-{gu:016x}\"\t\t# \"{} mlx5_{r}\"\n[1]({gu:x}) \t\"S-{:016x}\"[{p}]\t\t# lid {} lmc 0 \"{}\" lid {} {rate}\n",
                Pod::host(h),
                leaf_guid(lr, g),
                1000 + h * pod.rails + r,
                Pod::leaf(lr, g),
                1 + lr * groups + g
            );
        }
    }
    out
}

/// The layout every host of a synthesized pod shares: adapter `mlx5_k` on rail k serving
/// `GPUk`, port 1 up.
pub fn layout(pod: &Pod) -> NodeLayout {
    NodeLayout {
        host: None,
        source: "synthesized pod layout".into(),
        adapters: (0..pod.rails)
            .map(|r| Adapter {
                name: format!("mlx5_{r}"),
                port: Some(1),
                rail: Some(r),
                gpus: vec![format!("GPU{r}")],
                node_guid: None,
                port_guid: None,
                netdevs: Vec::new(),
                node_desc: None,
                active: Some(true),
            })
            .collect(),
    }
}

/// `4xNDR` → (`4x`, `NDR`).
fn split_rate(rate: &str) -> (&str, &str) {
    rate.split_at(rate.find('x').map_or(0, |i| i + 1))
}

/// The lane signalling rate `iblinkinfo` prints for a generation.
fn lane_signal(generation: &str) -> &'static str {
    match generation {
        "HDR" => "53.125 Gbps",
        "EDR" => "25.78125 Gbps",
        "XDR" => "212.5 Gbps",
        _ => "106.25 Gbps",
    }
}

/// `get_max_msg`'s two notes as `iblinkinfo` prints them, `%s %s`: every port of the pod
/// supports 4x NDR, so a narrower or slower link is told what it could be.
fn could_be(width: &str, speed: &str) -> String {
    let w = if width == "4x" { "" } else { "Could be 4X" };
    let s = if speed == "NDR" {
        ""
    } else {
        "Could be 106.25 Gbps"
    };
    format!("{w} {s}")
}

/// The same pod as `ibnetdiscover -p` prints it (`dump_ports_report`: both ends of every
/// cable, a line each).
pub fn ibnetdiscover_ports(pod: &Pod, faults: &[PodFault]) -> String {
    let groups = pod.groups();
    let lp = leaf_ports(pod, &cables(pod, faults));
    let mut out = String::new();
    for (r, of_rail) in lp.iter().enumerate() {
        for (g, on_leaf) in of_rail.iter().enumerate() {
            let (lid, gu, name) = (1 + r * groups + g, leaf_guid(r, g), Pod::leaf(r, g));
            for &(p, h, hr, rate) in on_leaf {
                let (w, sp) = split_rate(rate);
                let (cl, cg, cd) = (
                    1000 + h * pod.rails + hr,
                    ca_guid(h, hr),
                    format!("{} mlx5_{hr}", Pod::host(h)),
                );
                let _ = writeln!(
                    out,
                    "SW {lid:5} {p:2} 0x{gu:016x} {w} {sp} - CA {cl:5} {:2} 0x{cg:016x} ( '{name}' - '{cd}' )",
                    1
                );
                let _ = writeln!(
                    out,
                    "CA {cl:5} {:2} 0x{cg:016x} {w} {sp} - SW {lid:5} {p:2} 0x{gu:016x} ( '{cd}' - '{name}' )",
                    1
                );
            }
            for s in 0..pod.spines {
                let _ = writeln!(
                    out,
                    "SW {lid:5} {:2} 0x{gu:016x} 4x NDR - SW {:5} {:2} 0x{:016x} ( '{name}' - 'spine{s}' )",
                    pod.hosts_per_leaf + 1 + s,
                    900 + s,
                    lid,
                    spine_guid(s)
                );
            }
        }
    }
    out
}

/// The same pod as `iblinkinfo` prints it by default (`print_node_header`, `print_port`): a
/// header per switch and adapter, a line per cabled port.
pub fn iblinkinfo(pod: &Pod, faults: &[PodFault]) -> String {
    let groups = pod.groups();
    let cable = cables(pod, faults);
    let lp = leaf_ports(pod, &cable);
    let mut out = String::new();
    let port = |out: &mut String,
                lead: &str,
                lid: usize,
                p: usize,
                rate: &str,
                rlid: usize,
                rp: usize,
                rdesc: &str| {
        let (w, sp) = split_rate(rate);
        let _ = writeln!(
            out,
            "{lead}{lid:6} {p:4}[  ] ==({:>3} {:>18} {:>6}/{:>8})==>  {rlid:6} {rp:4}[  ] \"{rdesc}\" ({})",
            w.to_uppercase(),
            lane_signal(sp),
            "Active",
            "LinkUp",
            could_be(w, sp)
        );
    };
    for (r, of_rail) in lp.iter().enumerate() {
        for (g, on_leaf) in of_rail.iter().enumerate() {
            let (lid, name) = (1 + r * groups + g, Pod::leaf(r, g));
            let _ = writeln!(out, "Switch: 0x{:016x} {name}:", leaf_guid(r, g));
            for &(p, h, hr, rate) in on_leaf {
                let d = format!("{} mlx5_{hr}", Pod::host(h));
                port(
                    &mut out,
                    "      ",
                    lid,
                    p,
                    rate,
                    1000 + h * pod.rails + hr,
                    1,
                    &d,
                );
            }
            for s in 0..pod.spines {
                let d = format!("spine{s}");
                port(
                    &mut out,
                    "      ",
                    lid,
                    pod.hosts_per_leaf + 1 + s,
                    "4xNDR",
                    900 + s,
                    lid,
                    &d,
                );
            }
        }
    }
    for (h, rs) in cable.iter().enumerate() {
        for (r, c) in rs.iter().enumerate() {
            let Some((lr, g, p, rate)) = *c else { continue };
            let _ = writeln!(out, "CA: {} mlx5_{r}:", Pod::host(h));
            let lead = format!("      0x{:016x} ", ca_guid(h, r));
            port(
                &mut out,
                &lead,
                1000 + h * pod.rails + r,
                1,
                rate,
                1 + lr * groups + g,
                p,
                &Pod::leaf(lr, g),
            );
        }
    }
    out
}
