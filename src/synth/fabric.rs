//! Synthesized rail-optimised pods as the fabric tools print them: `ibnetdiscover`'s topology
//! file (the grammar of rdma-core's `ibnetdiscover.c`, see `parse::fabric`), `ibnetdiscover
//! -p`, `iblinkinfo`, and ibdiagnet 2.10's `ibdiagnet2.db_csv` and `ibdiagnet2.ibnetdiscover`
//! ([`ibdiag_csv`], [`ibdiagnet_ibnetdiscover`], the pod of [`ndr_pod_ibdiag`]), with cabling
//! faults and port counters placed on purpose, for tests and benchmarks of `rails --fabric-map`.
//!
//! Data: nothing read. A pod of `nodes` hosts named `gpu0001`…, each with `rails` adapters
//! `mlx5_0`… whose node description is `<host> mlx5_<k>` (as the mlx5 driver sets it); rail k
//! of each group of `hosts_per_leaf` hosts is cabled to leaf `leaf-r<k>-su<g>`, every leaf has
//! `spines` uplinks, one to each spine. All links `4xNDR` unless a fault says otherwise.

use crate::analysis::cabling::NodeLayout;
use std::collections::HashMap;
use std::fmt::Write as _;

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
type Cables = Vec<Vec<Option<(usize, usize, usize, &'static str)>>>;

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
    NodeLayout::one_adapter_per_rail(pod.rails, "synthesized pod layout")
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

// ---------------------------------------------------------------------------------------
// A synthesized pod as ibdiagnet 2.10 writes `ibdiagnet2.db_csv` (SYNTHESIZED: no real file
// is reproduced; the form follows the format facts of `../shared/reference/fabric/README.md`).
//
// * NODES with ibdiagnet's header row; every switch carries one and the same description,
//   `Quantum-2 Mellanox Technologies` (leaves with no node-name map): only GUIDs tell them
//   apart.
// * PORTS with the packed speed fields (byte 1 regular, byte 2 extended, byte 3 Mellanox):
//   an NDR adapter port reads `LinkSpeedActv` 2048, a switch port 2052 (NDR | QDR); every
//   port's `LinkSpeedSup` is SDR…QDR and FDR…NDR (0xf07) and `LinkWidthSup` 1x|4x|2x (19),
//   so a [`PodFault::Slow`] cable is slower than both its ends support.
// * LINKS, each cable once.
// * PM_INFO and PM_DELTA: a row per cabled port, error counters zero except where a
//   [`PodFault::Counter`] puts a value. The PM header is the IB PortCounters order (an older
//   ibdiagnet's `PortXmitWait` is its 20th column); a real 2.10 file has more columns after.

/// What every switch of the synthesized pod is called.
pub const SWITCH_DESC: &str = "Quantum-2 Mellanox Technologies";

const NODES_HEADER: &str = "NodeDesc,NumPorts,NodeType,ClassVersion,BaseVersion,SystemImageGUID,NodeGUID,PortGUID,DeviceID,PartitionCap,revision,VendorID,LocalPortNum";
const PORTS_HEADER: &str = "NodeGuid,PortGuid,PortNum,MKey,GIDPrfx,MSMLID,LID,CapMsk,M_KeyLeasePeriod,DiagCode,LinkWidthActv,LinkWidthSup,LinkWidthEn,LocalPortNum,LinkSpeedEn,LinkSpeedActv,LMC,MKeyProtBits,LinkDownDefState,PortPhyState,PortState,LinkSpeedSup";
const PM_COUNTERS: [&str; 12] = [
    "LinkDownedCounter",
    "LinkErrorRecoveryCounter",
    "SymbolErrorCounter",
    "PortRcvRemotePhysicalErrors",
    "PortRcvErrors",
    "PortXmitDiscards",
    "PortRcvSwitchRelayErrors",
    "ExcessiveBufferOverrunErrors",
    "LocalLinkIntegrityErrors",
    "PortRcvConstraintErrors",
    "PortXmitConstraintErrors",
    "VL15Dropped",
];
const PM_TRAFFIC: &str = "PortXmitData,PortRcvData,PortXmitPkts,PortRcvPkts,PortXmitWait";

/// Every port supports SDR…QDR and FDR…NDR.
const SPEED_SUP: u32 = 0xf07;
/// Every port supports 1x, 4x and 2x.
const WIDTH_SUP: u32 = 1 | 2 | 16;

/// `4x` → the PortInfo width bit.
fn width_bit(w: &str) -> u32 {
    match w {
        "1x" => 1,
        "2x" => 16,
        "8x" => 4,
        "12x" => 8,
        _ => 2,
    }
}

/// `NDR` → the packed speed bit; a switch port also sets QDR beside an extended speed.
fn speed_packed(g: &str, switch: bool) -> u32 {
    let ext = match g {
        "FDR" => 0x100,
        "EDR" => 0x200,
        "HDR" => 0x400,
        "NDR" => 0x800,
        "SDR" => return 1,
        "DDR" => return 2,
        "QDR" => return 4,
        _ => 0x800,
    };
    if switch { ext | 4 } else { ext }
}

/// The pod of issue 50's real db_csv, SYNTHESIZED: 32 hosts × 8 rails on 8 NDR leaves that
/// share one description, no spines; host 3's rail 2 cable trained down to HDR on both ends
/// (both support NDR); host 17's rail 4 and rail 5 cables crossed; five host rails with a
/// saturated 16-bit error counter (65535) since the last clear, one of them (host 26, rail 3)
/// also `LinkDownedCounter` 55, and host 9's rail 1 symbol errors climbing during the run.
pub fn ndr_pod_ibdiag() -> (Pod, Vec<PodFault>) {
    let pod = Pod {
        nodes: 32,
        rails: 8,
        hosts_per_leaf: 32,
        spines: 0,
    };
    let counter = |host, rail, counter, value, delta| PodFault::Counter {
        host,
        rail,
        counter,
        value,
        delta,
        leaf: false,
    };
    let faults = vec![
        PodFault::Slow {
            host: 3,
            rail: 2,
            rate: "4xHDR",
        },
        PodFault::SwapRails {
            host: 17,
            a: 4,
            b: 5,
        },
        counter(5, 0, "SymbolErrorCounter", 65535, false),
        counter(9, 1, "SymbolErrorCounter", 65535, false),
        counter(9, 1, "SymbolErrorCounter", 1200, true),
        counter(20, 6, "PortRcvErrors", 65535, false),
        counter(26, 3, "SymbolErrorCounter", 65535, false),
        counter(26, 3, "LinkDownedCounter", 55, false),
        counter(30, 7, "PortRcvErrors", 65535, false),
    ];
    (pod, faults)
}

/// One port of the pod: node GUID, port, LID, whether a switch, rate words.
struct Port {
    node: u64,
    port: usize,
    lid: usize,
    switch: bool,
    rate: &'static str,
}

fn port_row(out: &mut String, p: &Port) {
    let (w, g) = split_rate(p.rate);
    let _ = writeln!(
        out,
        "0x{:016x},0x{:016x},{},0x0000000000000000,0xfe80000000000000,1,{},0x{:08x},0,0,{},{WIDTH_SUP},{WIDTH_SUP},{},{SPEED_SUP},{},0,0,2,5,4,{SPEED_SUP}",
        p.node,
        p.node,
        p.port,
        p.lid,
        if p.switch {
            0x4200_0048u32
        } else {
            0x2651_e848
        },
        width_bit(w),
        p.port,
        speed_packed(g, p.switch)
    );
}

/// The pod's `ibdiagnet2.db_csv` in ibdiagnet 2.10's form with `faults` applied (SYNTHESIZED).
pub fn ibdiag_csv(pod: &Pod, faults: &[PodFault]) -> String {
    let groups = pod.groups();
    let cable = cables(pod, faults);
    let lp = leaf_ports(pod, &cable);
    let leaf_lid = |r: usize, g: usize| 1 + r * groups + g;
    let host_lid = |h: usize, r: usize| 1000 + h * pod.rails + r;
    let mut out = String::with_capacity(pod.nodes * pod.rails * 600);
    out.push_str("# This database file was automatically generated by IBDIAG\n# SYNTHESIZED by peerpath synth::fabric::ibdiag_csv: not a real fabric\n\nSTART_NODES\n");
    out.push_str(NODES_HEADER);
    out.push('\n');
    let leaf_ports_n = (pod.hosts_per_leaf * (pod.rails + 1) + pod.spines).max(64) + 1;
    for r in 0..pod.rails {
        for g in 0..groups {
            let gu = leaf_guid(r, g);
            let _ = writeln!(
                out,
                "\"{SWITCH_DESC}\",{leaf_ports_n},2,1,1,0x{gu:016x},0x{gu:016x},0x{gu:016x},54002,8,160,713,0"
            );
        }
    }
    for s in 0..pod.spines {
        let gu = spine_guid(s);
        let _ = writeln!(
            out,
            "\"{SWITCH_DESC}\",{},2,1,1,0x{gu:016x},0x{gu:016x},0x{gu:016x},54002,8,160,713,0",
            (pod.rails * groups).max(64) + 1
        );
    }
    for (h, rs) in cable.iter().enumerate() {
        for (r, c) in rs.iter().enumerate() {
            if c.is_some() {
                let gu = ca_guid(h, r);
                let _ = writeln!(
                    out,
                    "\"{} mlx5_{r}\",1,1,1,1,0x{gu:016x},0x{gu:016x},0x{gu:016x},4129,128,0,713,1",
                    Pod::host(h)
                );
            }
        }
    }
    out.push_str("END_NODES\n\n");
    // Both ends of every cable: (leaf port, host port) pairs and uplinks.
    let mut pairs: Vec<(Port, Port)> = Vec::new();
    for (r, of_rail) in lp.iter().enumerate() {
        for (g, on_leaf) in of_rail.iter().enumerate() {
            for &(p, h, hr, rate) in on_leaf {
                pairs.push((
                    Port {
                        node: leaf_guid(r, g),
                        port: p,
                        lid: leaf_lid(r, g),
                        switch: true,
                        rate,
                    },
                    Port {
                        node: ca_guid(h, hr),
                        port: 1,
                        lid: host_lid(h, hr),
                        switch: false,
                        rate,
                    },
                ));
            }
            for s in 0..pod.spines {
                pairs.push((
                    Port {
                        node: leaf_guid(r, g),
                        port: pod.hosts_per_leaf + 1 + s,
                        lid: leaf_lid(r, g),
                        switch: true,
                        rate: "4xNDR",
                    },
                    Port {
                        node: spine_guid(s),
                        port: leaf_lid(r, g),
                        lid: 900 + s,
                        switch: true,
                        rate: "4xNDR",
                    },
                ));
            }
        }
    }
    out.push_str("# the values of the fields LinkSpeedEn/LinkSpeedActv/LinkSpeedSup are not real raw data from the wire but as follow: They are 32 bit fields. Byte1 is regular speeds, Byte2 is extended speeds, Byte3 is mlnx ext speeds, Byte4 is reserved.\nSTART_PORTS\n");
    out.push_str(PORTS_HEADER);
    out.push('\n');
    for (a, b) in &pairs {
        port_row(&mut out, a);
        port_row(&mut out, b);
    }
    out.push_str("END_PORTS\n\nSTART_LINKS\nNodeGuid1,PortNum1,NodeGuid2,PortNum2\n");
    for (a, b) in &pairs {
        let _ = writeln!(
            out,
            "0x{:016x},{},0x{:016x},{}",
            a.node, a.port, b.node, b.port
        );
    }
    out.push_str("END_LINKS\n");
    let placed = counter_values(pod, faults, &cable);
    for (table, delta) in [("PM_INFO", false), ("PM_DELTA", true)] {
        pm_table(&mut out, table, delta, &pairs, &placed);
    }
    out
}

/// The same pod as ibdiagnet writes `ibdiagnet2.ibnetdiscover` (SYNTHESIZED, from the format
/// facts of `../shared/reference/fabric/README.md`): ibnetdiscover's topology file with every
/// switch described as [`SWITCH_DESC`] (as in [`ibdiag_csv`]) and a label after each port
/// number — a switch port's `[p](1/<cage>/<split>)`, an adapter port's
/// `[1](B<bus>D0F0/0/0/1)(<port guid>)`.
pub fn ibdiagnet_ibnetdiscover(pod: &Pod, faults: &[PodFault]) -> String {
    let mut names: HashMap<String, String> = HashMap::new();
    for r in 0..pod.rails {
        for g in 0..pod.groups() {
            names.insert(
                format!("\"{}\"", Pod::leaf(r, g)),
                format!("\"{SWITCH_DESC}\""),
            );
        }
    }
    for s in 0..pod.spines {
        names.insert(format!("\"spine{s}\""), format!("\"{SWITCH_DESC}\""));
    }
    let mut out = String::new();
    for line in ibnetdiscover(pod, faults).lines() {
        let mut l = line.to_string();
        for (from, to) in &names {
            if l.contains(from.as_str()) {
                l = l.replace(from.as_str(), to);
            }
        }
        if let Some(rest) = l.strip_prefix('[')
            && let Some(end) = rest.find(']')
            && let Ok(p) = rest[..end].parse::<usize>()
        {
            let tail = &rest[end + 1..];
            l = match tail.strip_prefix('(') {
                // An adapter's port: its PCI place, then its port GUID.
                Some(g) => format!("[{p}](B{}D0F0/0/0/{p})({g}", 100 + p % 100),
                None => format!(
                    "[{p}](1/{}/{}){tail}",
                    p.div_ceil(2),
                    p.saturating_sub(1) % 2 + 1
                ),
            };
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Counter values placed by faults: (node GUID, port, delta) → [(counter, value)].
type Placed = HashMap<(u64, usize, bool), Vec<(&'static str, u64)>>;

fn counter_values(pod: &Pod, faults: &[PodFault], cable: &Cables) -> Placed {
    let mut placed = Placed::new();
    for f in faults {
        if let PodFault::Counter {
            host,
            rail,
            counter,
            value,
            delta,
            leaf,
        } = *f
        {
            let key = match (leaf, cable.get(host).and_then(|c| c.get(rail)).copied()) {
                (true, Some(Some((lr, g, p, _)))) => (leaf_guid(lr, g), p, delta),
                (false, Some(Some(_))) => (ca_guid(host, rail), 1, delta),
                _ => continue,
            };
            let _ = pod;
            placed.entry(key).or_default().push((counter, value));
        }
    }
    placed
}

fn pm_table(out: &mut String, table: &str, delta: bool, pairs: &[(Port, Port)], placed: &Placed) {
    let _ = writeln!(
        out,
        "\nSTART_{table}\nNodeGUID,PortGUID,PortNumber,{},{PM_TRAFFIC}",
        PM_COUNTERS.join(",")
    );
    for p in pairs.iter().flat_map(|(a, b)| [a, b]) {
        let here = placed.get(&(p.node, p.port, delta));
        let values: Vec<String> = PM_COUNTERS
            .iter()
            .map(|c| {
                here.and_then(|v| v.iter().find(|(n, _)| n == c))
                    .map_or(0, |(_, v)| *v)
                    .to_string()
            })
            .collect();
        let _ = writeln!(
            out,
            "0x{:016x},0x{:016x},{},{},0,0,0,0,0",
            p.node,
            p.node,
            p.port,
            values.join(",")
        );
    }
    let _ = writeln!(out, "END_{table}");
}

#[cfg(test)]
mod ibdiag_tests {
    use super::*;
    use crate::model::fabric::{CounterSpan, NodeKind, Producer};
    use crate::parse::fabric::{detect, parse};

    #[test]
    fn ndr_pod_reads_back() {
        let (pod, faults) = ndr_pod_ibdiag();
        let t = ibdiag_csv(&pod, &faults);
        assert_eq!(detect(&t), Some(Producer::IbdiagnetCsv));
        let m = parse(&t, Producer::IbdiagnetCsv, "synth").unwrap();
        let leaves: Vec<_> = m
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Switch)
            .collect();
        assert_eq!(
            leaves.len(),
            8,
            "8 leaves with one description stay 8 nodes"
        );
        assert!(leaves.iter().all(|n| n.desc == SWITCH_DESC));
        assert_eq!(m.nodes.len(), 8 + 256);
        assert_eq!(m.links.len(), 256);
        let slow: Vec<_> = m
            .links
            .iter()
            .filter(|l| l.rate.as_ref().unwrap().gbps != Some(400.0))
            .collect();
        assert_eq!(slow.len(), 1);
        let r = slow[0].rate.as_ref().unwrap();
        assert_eq!((r.gbps, r.supported_gbps), (Some(200.0), Some(400.0)));
        assert_eq!(m.nodes[slow[0].b.node].desc, "gpu0004 mlx5_2");
        let info = m
            .counters
            .iter()
            .filter(|c| c.span == CounterSpan::SinceClear)
            .filter(|c| c.values.iter().any(|(_, v)| *v == 65535))
            .count();
        assert_eq!(info, 5);
        assert!(
            m.counters
                .iter()
                .any(|c| c.values.contains(&("LinkDownedCounter".to_string(), 55)))
        );
        assert!(
            m.counters
                .iter()
                .any(|c| c.span == CounterSpan::Delta && c.values.iter().any(|(_, v)| *v == 1200))
        );
    }
}
