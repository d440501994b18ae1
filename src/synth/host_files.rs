//! The files beside the PCI tree that a synthesized node holds: block and storage devices, the
//! KFD topology of AMD GPUs, network devices and the NUMA nodes, written into the [`Tree`] that
//! [`super::writer::build_entries`] fills.

use super::writer::*;
use super::{AmdGpuSpec, Function, Spec};
use crate::model::bdf::Bdf;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A block device directory (`dev`, `partition` for partitions) and its class and
/// `sys/dev/block` links.
pub(super) fn block_dev(t: &mut Tree, dir: &Path, b: &crate::synth::BlockDev, partition: bool) {
    t.file(dir.join("dev"), format!("{}\n", b.dev));
    t.file(dir.join("size"), "7501476528\n");
    if partition {
        t.file(dir.join("partition"), "1\n");
    }
    t.link(PathBuf::from("sys/class/block").join(&b.name), dir);
    t.link(PathBuf::from("sys/dev/block").join(&b.dev), dir);
}

/// GPUDirect Storage files: `etc/cufile.json`, the kernel release, nvme_core's multipath
/// parameter, md RAIDs with their `slaves`, `proc/self/mountinfo`.
pub(super) fn storage_files(t: &mut Tree, s: &crate::synth::StorageNode) {
    if let Some(c) = &s.cufile_json {
        t.file("etc/cufile.json", c.clone());
    }
    if let Some(r) = &s.kernel_release {
        t.file("proc/sys/kernel/osrelease", format!("{r}\n"));
    }
    if let Some(m) = &s.nvme_multipath {
        t.file(
            "sys/module/nvme_core/parameters/multipath",
            format!("{m}\n"),
        );
    }
    for md in &s.md {
        let d = PathBuf::from("sys/devices/virtual/block").join(&md.name);
        let b = crate::synth::BlockDev {
            name: md.name.clone(),
            dev: md.dev.clone(),
            partitions: Vec::new(),
        };
        block_dev(t, &d, &b, false);
        t.dir(&d.join("slaves"));
        for sl in &md.slaves {
            // To the member's own directory, as the kernel links it (not through the class).
            let class = PathBuf::from("sys/class/block").join(sl);
            let target = match t.nodes.get(&class) {
                Some(Entry::Link(rel)) => crate::sources::fsroot::join_link(&class, Path::new(rel)),
                _ => class,
            };
            t.link(d.join("slaves").join(sl), target);
        }
    }
    let esc = |f: &str| {
        f.replace('\\', "\\134")
            .replace(' ', "\\040")
            .replace('\t', "\\011")
    };
    let mut mi = String::new();
    for (i, m) in s.mounts.iter().enumerate() {
        mi.push_str(&format!(
            "{} {} {} / {} {} shared:{} - {} {} {}\n",
            30 + i,
            if i == 0 { 1 } else { 30 },
            m.dev,
            esc(&m.mount_point),
            m.options,
            i + 1,
            m.fs_type,
            esc(&m.source),
            m.super_options
        ));
    }
    if !s.mounts.is_empty() {
        t.file("proc/self/mountinfo", mi);
    }
}

/// The KFD topology of the spec's AMD GPUs ([`crate::synth::AmdGpuSpec`]), as `kfd_topology.c` writes
/// it: one node per NUMA node with CPUs (numbered first), one per AMD GPU in address order,
/// `properties` files of `name value` lines, io_links and memory banks; `sys/class/kfd/kfd`
/// links to `sys/devices/virtual/kfd/kfd`. Nothing is written without an AMD GPU.
pub(super) fn kfd_files(t: &mut Tree, spec: &Spec, dirs: &HashMap<Bdf, PathBuf>) {
    let mut gpus: Vec<&Function> = spec.functions.iter().filter(|f| f.amd.is_some()).collect();
    if gpus.is_empty() {
        return;
    }
    gpus.sort_by_key(|f| f.bdf);
    let root = PathBuf::from("sys/devices/virtual/kfd/kfd");
    t.link("sys/class/kfd/kfd", &root);
    // Every kernel has /sys/kernel/mm (hugepages, transparent_hugepage): a node without a
    // peer-memory client shows an empty one, not none.
    t.dir(Path::new("sys/kernel/mm"));
    let k = Kfd {
        spec,
        nodes: root.join("topology/nodes"),
        cpus: spec
            .numa_nodes
            .iter()
            .filter(|n| !n.cpus.trim().is_empty())
            .collect(),
        gpus,
    };
    for (i, n) in k.cpus.iter().enumerate() {
        kfd_cpu_node(t, &k, i, n);
    }
    for g in &k.gpus {
        let Some(a) = &g.amd else { continue };
        let Some(me) = k.gpu_node(g.bdf) else {
            continue;
        };
        kfd_gpu_node(t, &k, g, a, me);
        if let Some(d) = dirs.get(&g.bdf) {
            if let Some(c) = &a.compute_partition {
                t.file(d.join("current_compute_partition"), format!("{c}\n"));
            }
            if let Some(m) = &a.memory_partition {
                t.file(d.join("current_memory_partition"), format!("{m}\n"));
            }
        }
    }
}

/// The KFD topology being written: its `nodes` directory, the NUMA nodes with CPUs (KFD nodes
/// 0..) and the AMD GPUs in address order (the nodes after them).
struct Kfd<'a> {
    spec: &'a Spec,
    nodes: PathBuf,
    cpus: Vec<&'a crate::synth::NumaSpec>,
    gpus: Vec<&'a Function>,
}

impl Kfd<'_> {
    /// The KFD node of a NUMA node (0 when it has no CPUs or is -1).
    fn cpu_node(&self, numa: i32) -> u32 {
        self.cpus
            .iter()
            .position(|n| n.id as i32 == numa)
            .unwrap_or(0) as u32
    }

    /// The KFD node of an AMD GPU.
    fn gpu_node(&self, b: Bdf) -> Option<u32> {
        self.gpus
            .iter()
            .position(|g| g.bdf == b)
            .map(|k| (self.cpus.len() + k) as u32)
    }
}

const ENABLED: u32 = 1;
const NO_ATOMICS: u32 = (1 << 2) | (1 << 3);
const BI_DIR: u32 = 1 << 31;

/// One KFD io_link: its type (1 HyperTransport/NUMA, 2 PCIe, 11 xGMI), ends, weight, min and
/// max bandwidth, and flags.
struct IoLink {
    ty: u32,
    from: u32,
    to: u32,
    weight: u32,
    bw: (u32, u32),
    flags: u32,
}

/// `io_links/<i>/properties` of a KFD node.
fn io_link(t: &mut Tree, dir: &Path, i: usize, l: IoLink) {
    let IoLink {
        ty,
        from,
        to,
        weight: w,
        bw,
        flags,
    } = l;
    t.file(
        dir.join(format!("io_links/{i}/properties")),
        format!(
            "type {ty}\nversion_major 0\nversion_minor 0\nnode_from {from}\nnode_to {to}\nweight {w}\nmin_latency 0\nmax_latency 0\nmin_bandwidth {}\nmax_bandwidth {}\nrecommended_transfer_size 0\nrecommended_sdma_engine_id_mask 0\nflags {flags}\n",
            bw.0, bw.1
        ),
    );
}

/// A CPU's KFD node `k`: its properties, a link to every other CPU node weighted by the NUMA
/// distance, and its memory bank.
fn kfd_cpu_node(t: &mut Tree, kfd: &Kfd, k: usize, n: &crate::synth::NumaSpec) {
    let (spec, cpus) = (kfd.spec, &kfd.cpus);
    let dir = kfd.nodes.join(k.to_string());
    let cores = crate::parse::cpulist::parse_list(n.cpus.as_bytes())
        .map(|v| v.len())
        .unwrap_or(0);
    t.file(dir.join("gpu_id"), "0\n");
    t.file(dir.join("name"), "\n");
    t.file(
        dir.join("properties"),
            format!(
                "cpu_cores_count {cores}\nsimd_count 0\nmem_banks_count 1\ncaches_count 0\nio_links_count {}\np2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base 0\nmax_waves_per_simd 0\nlds_size_in_kb 0\ngds_size_in_kb 0\nnum_gws 0\nwave_front_size 0\narray_count 0\nsimd_arrays_per_engine 0\ncu_per_simd_array 0\nsimd_per_cu 0\nmax_slots_scratch_cu 0\ngfx_target_version 0\nvendor_id 0\ndevice_id 0\nlocation_id 0\ndomain 0\ndrm_render_minor 0\nhive_id 0\nnum_sdma_engines 0\nnum_sdma_xgmi_engines 0\nnum_sdma_queues_per_engine 0\nnum_cp_queues 0\nmax_engine_clk_ccompute 3700\n",
                cpus.len() - 1
            ),
        );
    let mut i = 0;
    for (j, m) in cpus.iter().enumerate() {
        if j == k {
            continue;
        }
        let col = spec
            .numa_nodes
            .iter()
            .position(|x| x.id == m.id)
            .unwrap_or(0);
        let w = n.distances.get(col).copied().unwrap_or(32);
        io_link(
            t,
            &dir,
            i,
            IoLink {
                ty: 1,
                from: k as u32,
                to: j as u32,
                weight: w,
                bw: (0, 0),
                flags: ENABLED | BI_DIR,
            },
        );
        i += 1;
    }
    t.file(
        dir.join("mem_banks/0/properties"),
        format!(
            "heap_type 0\nsize_in_bytes {}\nflags 0\nwidth 64\nmem_clk_max 4800\n",
            spec.machine.memory_kib_per_node * 1024
        ),
    );
}

/// The GPUs of `g`'s xGMI hive it has a live link to (neither end marks the link down).
fn xgmi_peers<'a>(kfd: &Kfd<'a>, g: &Function, a: &AmdGpuSpec) -> Vec<&'a Function> {
    kfd.gpus
        .iter()
        .copied()
        .filter(|p| {
            p.bdf != g.bdf
                && a.hive_id != 0
                && p.amd.as_ref().is_some_and(|pa| pa.hive_id == a.hive_id)
                && !a.xgmi_down.contains(&p.bdf)
                && !p
                    .amd
                    .as_ref()
                    .is_some_and(|pa| pa.xgmi_down.contains(&g.bdf))
        })
        .collect()
}

/// A GPU's KFD node `me`: id, properties, a link to its CPU node (xGMI for an APU, else PCIe
/// with the large-BAR and atomics flags), an xGMI link per hive peer, and its VRAM bank.
fn kfd_gpu_node(t: &mut Tree, kfd: &Kfd, g: &Function, a: &AmdGpuSpec, me: u32) {
    let dir = kfd.nodes.join(me.to_string());
    let loc =
        (u32::from(g.bdf.bus) << 8) | (u32::from(g.bdf.device) << 3) | u32::from(g.bdf.function);
    let peers = xgmi_peers(kfd, g, a);
    t.file(
        dir.join("gpu_id"),
        format!("{}\n", 10000 + u32::from(g.bdf.bus)),
    );
    t.file(dir.join("name"), "\n");
    t.file(
        dir.join("properties"),
            format!(
                "cpu_cores_count 0\nsimd_count {}\nmem_banks_count 1\ncaches_count 0\nio_links_count {}\np2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base 2147487744\nmax_waves_per_simd 8\nlds_size_in_kb 64\ngds_size_in_kb 0\nnum_gws 64\nwave_front_size 64\narray_count {}\nsimd_arrays_per_engine 1\ncu_per_simd_array 10\nsimd_per_cu 4\nmax_slots_scratch_cu 32\ngfx_target_version {}\nvendor_id {}\ndevice_id {}\nlocation_id {loc}\ndomain {}\ndrm_render_minor {}\nhive_id {}\nnum_sdma_engines 2\nnum_sdma_xgmi_engines 14\nnum_sdma_queues_per_engine 8\nnum_cp_queues 64\nmax_engine_clk_fcompute 2100\nlocal_mem_size 0\nfw_version 177\ncapability 1013424768\ndebug_prop 1495\nsdma_fw_version 19\nunique_id {}\nnum_xcc {}\nmax_engine_clk_ccompute 3700\n",
                a.simd_count,
                1 + peers.len(),
                4 * a.num_xcc.max(1),
                a.gfx_target_version,
                g.vendor,
                g.device,
                g.bdf.domain,
                a.render_minor,
                a.hive_id,
                0x5f00_0000_0000u64 + u64::from(loc),
                a.num_xcc,
            ),
        );
    let cpu = kfd.cpu_node(kfd.spec.numa_of(g));
    let to_cpu = |ty, weight, flags| IoLink {
        ty,
        from: me,
        to: cpu,
        weight,
        bw: (0, 0),
        flags,
    };
    if a.apu {
        io_link(t, &dir, 0, to_cpu(11, 13, ENABLED | BI_DIR));
    } else {
        let mut flags = ENABLED;
        if a.large_bar {
            flags |= BI_DIR;
        }
        if !a.atomics {
            flags |= NO_ATOMICS;
        }
        io_link(t, &dir, 0, to_cpu(2, 20, flags));
    }
    for (i, p) in peers.iter().enumerate() {
        let Some(to) = kfd.gpu_node(p.bdf) else {
            continue;
        };
        io_link(
            t,
            &dir,
            i + 1,
            IoLink {
                ty: 11,
                from: me,
                to,
                weight: a.xgmi.0,
                bw: (a.xgmi.1, a.xgmi.2),
                flags: ENABLED | BI_DIR,
            },
        );
    }
    t.file(
        dir.join("mem_banks/0/properties"),
        format!(
            "heap_type {}\nsize_in_bytes {}\nflags 0\nwidth 8192\nmem_clk_max 1300\n",
            if a.large_bar { 1 } else { 2 },
            a.vram_bytes
        ),
    );
}

pub(super) fn netdev_files(t: &mut Tree, nd: &Path, n: &crate::synth::Netdev) {
    t.file(nd.join("operstate"), format!("{}\n", n.operstate));
    if let Some(s) = n.speed_mbps {
        t.file(nd.join("speed"), format!("{s}\n"));
    }
    t.file(nd.join("mtu"), format!("{}\n", n.mtu));
    t.file(
        nd.join("type"),
        if n.name == "lo" {
            "772\n"
        } else if n.name.starts_with("ib") {
            "32\n"
        } else {
            "1\n"
        },
    );
}

/// The node's own files: CPUs and `proc/cpuinfo`, NUMA nodes, the bus links of both,
/// memory, command line and DMI, IOMMU units, modules and memory peers, the NVIDIA driver's
/// version, and the storage files.
pub(super) fn node_files(t: &mut Tree, spec: &Spec, numa_cpus: &HashMap<u32, Vec<u32>>) {
    let m = &spec.machine;
    let ncpus = m.logical_cpus();
    cpu_files(t, m);
    numa_files(t, spec, numa_cpus);
    for c in 0..ncpus {
        t.link(
            PathBuf::from("sys/bus/cpu/devices").join(format!("cpu{c}")),
            PathBuf::from("sys/devices/system/cpu").join(format!("cpu{c}")),
        );
    }
    proc_and_dmi(t, spec);
    iommu_units(t, spec);
    modules_and_peers(t, spec);
    if let Some(nv) = &spec.node.nvidia {
        nvidia_version(t, m, nv);
    }
    if let Some(s) = &spec.node.storage {
        storage_files(t, s);
    }
}

/// `sys/devices/system/cpu`: the online/possible/present lists, each CPU's topology files and
/// `online`, and `proc/cpuinfo` (arm64 or x86 form).
fn cpu_files(t: &mut Tree, m: &crate::synth::Machine) {
    let ncpus = m.logical_cpus();
    let all = if ncpus == 0 {
        String::new()
    } else {
        format!("0-{}", ncpus - 1)
    };
    let all = if ncpus == 1 { "0".to_string() } else { all };
    let cpu = PathBuf::from("sys/devices/system/cpu");
    for n in ["online", "possible", "present"] {
        t.file(cpu.join(n), format!("{all}\n"));
    }
    t.file(cpu.join("kernel_max"), "8191\n");
    let mut cpuinfo = String::new();
    let flags = {
        let mut f = String::from(
            "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand",
        );
        if m.hypervisor {
            f.push_str(" hypervisor");
        }
        f.push_str(" lahf_lm abm avx2 bmi1 bmi2 erms avx512f avx512dq");
        f
    };
    let cores = m.cores_per_socket.max(1);
    let threads = m.threads_per_core.max(1);
    for c in 0..ncpus {
        let (socket, core, _thread) = m.cpu_position(c);
        let siblings: Vec<u32> = (0..ncpus)
            .filter(|&o| {
                let (s, k, _) = m.cpu_position(o);
                s == socket && k == core
            })
            .collect();
        let package: Vec<u32> = (0..ncpus)
            .filter(|&o| m.cpu_position(o).0 == socket)
            .collect();
        let td = cpu.join(format!("cpu{c}"));
        let topo = td.join("topology");
        let sl = crate::model::cpulist::format_list(&siblings);
        let pl = crate::model::cpulist::format_list(&package);
        t.file(topo.join("physical_package_id"), format!("{socket}\n"));
        t.file(topo.join("die_id"), "0\n");
        t.file(topo.join("core_id"), format!("{core}\n"));
        t.file(topo.join("thread_siblings_list"), format!("{sl}\n"));
        t.file(
            topo.join("thread_siblings"),
            format!("{}\n", cpumask(&siblings, ncpus)),
        );
        t.file(topo.join("core_siblings_list"), format!("{pl}\n"));
        t.file(
            topo.join("core_siblings"),
            format!("{}\n", cpumask(&package, ncpus)),
        );
        if c != 0 {
            t.file(td.join("online"), "1\n");
        }
        if let Some(arm) = m.arm {
            let _ = write!(
                cpuinfo,
                "processor\t: {c}\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti\nCPU implementer\t: 0x{:02x}\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0x{:03x}\nCPU revision\t: 0\n\n",
                arm.implementer, arm.part
            );
            continue;
        }
        let _ = write!(
            cpuinfo,
            "processor\t: {c}\nvendor_id\t: {}\ncpu family\t: {}\nmodel\t\t: {}\nmodel name\t: {}\nstepping\t: 1\nphysical id\t: {socket}\nsiblings\t: {}\ncore id\t\t: {core}\ncpu cores\t: {cores}\napicid\t\t: {c}\nflags\t\t: {flags}\n\n",
            m.cpu_vendor,
            m.cpu_family,
            m.cpu_model_number,
            m.cpu_model,
            cores * threads
        );
    }
    t.file("proc/cpuinfo", cpuinfo);
}

/// `sys/devices/system/node`: the node lists, and each node's CPUs, distances, meminfo and bus
/// link.
fn numa_files(t: &mut Tree, spec: &Spec, numa_cpus: &HashMap<u32, Vec<u32>>) {
    let m = &spec.machine;
    let ncpus = m.logical_cpus();
    let node = PathBuf::from("sys/devices/system/node");
    let ids: Vec<u32> = spec.numa_nodes.iter().map(|n| n.id).collect();
    let idl = crate::model::cpulist::format_list(&ids);
    if !spec.numa_nodes.is_empty() {
        for n in ["online", "possible", "has_memory", "has_normal_memory"] {
            t.file(node.join(n), format!("{idl}\n"));
        }
        let with_cpu: Vec<u32> = spec
            .numa_nodes
            .iter()
            .filter(|n| !numa_cpus[&n.id].is_empty())
            .map(|n| n.id)
            .collect();
        t.file(
            node.join("has_cpu"),
            format!("{}\n", crate::model::cpulist::format_list(&with_cpu)),
        );
    }
    for n in &spec.numa_nodes {
        let nd = node.join(format!("node{}", n.id));
        let cpus = &numa_cpus[&n.id];
        t.file(
            nd.join("cpulist"),
            format!("{}\n", crate::model::cpulist::format_list(cpus)),
        );
        t.file(nd.join("cpumap"), format!("{}\n", cpumask(cpus, ncpus)));
        let d: Vec<String> = n.distances.iter().map(u32::to_string).collect();
        t.file(nd.join("distance"), format!("{}\n", d.join(" ")));
        let kib = m.memory_kib_per_node;
        t.file(
            nd.join("meminfo"),
            format!(
                "Node {id} MemTotal:       {kib} kB\nNode {id} MemFree:        {free} kB\nNode {id} MemUsed:        {used} kB\n",
                id = n.id,
                free = kib / 2,
                used = kib - kib / 2
            ),
        );
        t.link(
            PathBuf::from("sys/bus/node/devices").join(format!("node{}", n.id)),
            &nd,
        );
    }
}

/// `proc/meminfo`, `proc/cmdline` and the DMI vendor and product.
fn proc_and_dmi(t: &mut Tree, spec: &Spec) {
    let m = &spec.machine;
    let total = m.memory_kib_per_node * (spec.numa_nodes.len().max(1) as u64);
    t.file(
        "proc/meminfo",
        format!(
            "MemTotal:       {total} kB\nMemFree:        {} kB\n",
            total / 2
        ),
    );
    t.file("proc/cmdline", format!("{}\n", spec.node.cmdline));
    let dmi = PathBuf::from("sys/class/dmi/id");
    if let Some(v) = &m.dmi_vendor {
        t.file(dmi.join("sys_vendor"), format!("{v}\n"));
    }
    if let Some(v) = &m.dmi_product {
        t.file(dmi.join("product_name"), format!("{v}\n"));
    }
}

/// `sys/class/iommu` and a virtual device per IOMMU unit.
fn iommu_units(t: &mut Tree, spec: &Spec) {
    t.dir(Path::new("sys/class/iommu"));
    for u in &spec.node.iommu_units {
        let ud = PathBuf::from("sys/devices/virtual/iommu").join(u);
        t.file(ud.join("uevent"), "");
        t.link(PathBuf::from("sys/class/iommu").join(u), &ud);
    }
}

/// `sys/module/<name>` per loaded module and `sys/kernel/mm/memory_peers/<name>` per peer-memory
/// client.
fn modules_and_peers(t: &mut Tree, spec: &Spec) {
    t.dir(Path::new("sys/module"));
    for md in &spec.node.modules {
        let d = PathBuf::from("sys/module").join(&md.name);
        t.file(d.join("initstate"), "live\n");
        if let Some(v) = &md.version {
            t.file(d.join("version"), format!("{v}\n"));
        }
    }
    for p in &spec.node.memory_peers {
        let d = PathBuf::from("sys/kernel/mm/memory_peers").join(&p.name);
        t.dir(&d);
        if let Some(v) = &p.version {
            t.file(d.join("version"), format!("{v}\n"));
        }
        t.file(d.join("num_alloc_mrs"), "0\n");
    }
}

/// `proc/driver/nvidia/version`, in the open or proprietary module's form.
fn nvidia_version(t: &mut Tree, m: &crate::synth::Machine, nv: &crate::synth::NvidiaDriver) {
    let arch = if m.arm.is_some() { "aarch64" } else { "x86_64" };
    let line = if nv.open {
        format!(
            "NVRM version: NVIDIA UNIX Open Kernel Module for {arch}  {}  Release Build  (synth@peerpath)  Thu Jan  1 00:00:00 UTC 2026\n",
            nv.version
        )
    } else {
        format!(
            "NVRM version: NVIDIA UNIX {arch} Kernel Module  {}  Thu Jan  1 00:00:00 UTC 2026\n",
            nv.version
        )
    };
    t.file(
        "proc/driver/nvidia/version",
        format!("{line}GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"),
    );
}
