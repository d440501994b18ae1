//! Fault variants: each takes a spec and changes what the named fault changes on a real machine.

use super::*;

fn find(spec: &mut Spec, bdf: Bdf) -> Result<&mut Function, SpecError> {
    spec.function_mut(bdf).ok_or(SpecError::NoSuchFunction(bdf))
}

/// Enables ACS P2P redirection (control SV|RR|CR|UF = 0x1d, what the kernel sets when an IOMMU
/// asks for isolation) on a root port or switch downstream port.
pub fn with_acs_redirect(mut spec: Spec, bdf: Bdf) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    if !matches!(f.role, Role::RootPort | Role::SwitchDownstream) {
        return Err(SpecError::Invalid(
            bdf,
            "ACS control applies to root ports and switch downstream ports".into(),
        ));
    }
    f.acs_control = Some(acs::SV | acs::RR | acs::CR | acs::UF);
    Ok(spec)
}

/// Sets the ACS control register of a root port or switch downstream port to `control` (the
/// port must have an ACS capability): plants a setting other than the platform's.
pub fn with_acs_control(mut spec: Spec, bdf: Bdf, control: u16) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    if !matches!(f.role, Role::RootPort | Role::SwitchDownstream) || f.acs_control.is_none() {
        return Err(SpecError::Invalid(
            bdf,
            "ACS control applies to root ports and switch downstream ports with an ACS capability"
                .into(),
        ));
    }
    f.acs_control = Some(control);
    Ok(spec)
}

/// Trains the link of `bdf` down to `width` lanes (its capability stays). Both ends of the link
/// change: the port above an endpoint/upstream port, or the device below a root/downstream port.
pub fn with_link_width(mut spec: Spec, bdf: Bdf, width: u32) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    let role = f.role;
    let parent = f.parent;
    let Some(l) = f.link.as_mut() else {
        return Err(SpecError::Invalid(bdf, "function has no PCIe link".into()));
    };
    if width == 0 || width > l.max_width {
        return Err(SpecError::Invalid(
            bdf,
            format!("width x{width} is not within x1..x{}", l.max_width),
        ));
    }
    l.width = width;
    let partners: Vec<Bdf> = if matches!(role, Role::RootPort | Role::SwitchDownstream) {
        spec.children(bdf)
            .filter(|c| c.physfn.is_none())
            .map(|c| c.bdf)
            .collect()
    } else {
        parent
            .into_iter()
            .filter(|p| {
                spec.function(*p)
                    .is_some_and(|pf| matches!(pf.role, Role::RootPort | Role::SwitchDownstream))
            })
            .collect()
    };
    for p in partners {
        if let Some(l) = spec.function_mut(p).and_then(|f| f.link.as_mut()) {
            l.width = width.min(l.max_width);
        }
    }
    Ok(spec)
}

/// Sets the AER counters of `bdf`: `correctable` as `BadTLP`, `nonfatal` as `CmpltTO`, `fatal`
/// as `MalfTLP` (each file's TOTAL line is their sum).
pub fn with_aer(
    mut spec: Spec,
    bdf: Bdf,
    correctable: u64,
    nonfatal: u64,
    fatal: u64,
) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    let mut a = Aer::default();
    a.correctable.insert("BadTLP".into(), correctable);
    a.nonfatal.insert("CmpltTO".into(), nonfatal);
    a.fatal.insert("MalfTLP".into(), fatal);
    f.aer = Some(a);
    Ok(spec)
}

/// Sets the type of the IOMMU group of `bdf` (e.g. `DMA`, translated) for every function in it.
pub fn with_iommu_type(mut spec: Spec, bdf: Bdf, ty: &str) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?;
    let Some(g) = f.iommu_group else {
        return Err(SpecError::Invalid(
            bdf,
            "function has no IOMMU group".into(),
        ));
    };
    for f in spec
        .functions
        .iter_mut()
        .filter(|f| f.iommu_group == Some(g))
    {
        f.iommu_type = Some(ty.to_string());
    }
    Ok(spec)
}

/// Moves the card holding `bdf` (every function on its bus and device number, and their VFs)
/// out of its slot into a new root port on a new host bridge of NUMA node `numa`, as when a NIC
/// is re-seated in a slot of the other socket. The port it left stays, with its link down
/// (`current_link_width` 0). The new host bridge takes the bus 9 above the highest bus in use
/// (`d7` on [`hgx_h100`]), its root port is `BB:01.0` with the next free slot number, and the
/// card's functions land on `BB+1:00.f`. Like the kernel, which names `mlx5_N` and `ibN` in
/// probe (PCI address) order, every RDMA device and InfiniBand netdev of that naming is renamed
/// in address order afterwards, so other cards may change name too. A DMAR unit is added for
/// the new host bridge, as the layouts have one per host bridge.
pub fn with_moved_card(mut spec: Spec, bdf: Bdf, numa: u32) -> Result<Spec, SpecError> {
    let f = find(&mut spec, bdf)?.clone();
    let Some(old_port) = f.parent else {
        return Err(SpecError::Invalid(
            bdf,
            "function is on a root bus: no slot to leave".into(),
        ));
    };
    if f.role.is_bridge() || f.physfn.is_some() {
        return Err(SpecError::Invalid(
            bdf,
            "only a card's physical function can be moved".into(),
        ));
    }
    if !spec.numa_nodes.iter().any(|n| n.id == numa) {
        return Err(SpecError::Other(format!("fault move: no NUMA node {numa}")));
    }
    let card: Vec<Bdf> = spec
        .functions
        .iter()
        .filter(|g| {
            g.parent == Some(old_port) && g.bdf.bus == bdf.bus && g.bdf.device == bdf.device
        })
        .map(|g| g.bdf)
        .collect();
    let max_bus = spec
        .functions
        .iter()
        .map(|g| g.bdf.bus)
        .chain(spec.host_bridges.iter().map(|h| h.bus))
        .max()
        .unwrap_or(0);
    let Some(bus) = max_bus.checked_add(9).filter(|b| *b < 0xff) else {
        return Err(SpecError::Other(
            "fault move: no free bus for a new host bridge".into(),
        ));
    };
    let link = f.link.map(|l| Link::full(l.max_speed, l.max_width));
    let old = spec
        .function_mut(old_port)
        .ok_or(SpecError::NoSuchFunction(old_port))?;
    if let Some(l) = old.link.as_mut() {
        l.width = 0;
        l.speed = 2.5;
    }
    // The empty port keeps its bus range: the secondary bus the card was on.
    old.secondary_bus = Some(bdf.bus);
    let slot_number = spec
        .functions
        .iter()
        .filter_map(|g| g.slot.as_ref().map(|s| s.number))
        .max()
        .map_or(1, |n| n + 1);
    let rp = Bdf {
        domain: bdf.domain,
        bus,
        device: 1,
        function: 0,
    };
    let mut root = xeon_root_port(rp, link.unwrap_or(Link::full(32.0, 16)));
    root.slot = Some(Slot {
        name: slot_number.to_string(),
        number: slot_number,
    });
    root.mps_supported = 512;
    spec.functions.push(root);
    add_host_bridge(&mut spec, bdf.domain, bus, numa);
    let new_bus = bus + 1;
    let moved = |b: Bdf| Bdf {
        domain: b.domain,
        bus: new_bus,
        device: 0,
        function: b.function,
    };
    for g in spec.functions.iter_mut() {
        if card.contains(&g.bdf) {
            g.bdf = moved(g.bdf);
            g.parent = Some(rp);
            if let Some(l) = g.link.as_mut() {
                *l = Link::full(l.max_speed, l.max_width);
            }
        } else if let Some(pf) = g.physfn.filter(|p| card.contains(p)) {
            g.physfn = Some(moved(pf));
            g.parent = Some(rp);
            g.bdf.bus = new_bus;
        }
    }
    number_iommu_groups(&mut spec);
    rename_in_probe_order(&mut spec);
    Ok(spec)
}

/// Renames `mlx5_N` RDMA devices and `ibN` netdevs in PCI address order, as the kernel's probe
/// order names them (functions are in address order after `number_iommu_groups`).
fn rename_in_probe_order(spec: &mut Spec) {
    let numbered = |name: &str, prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
    };
    spec.functions.sort_by_key(|f| f.bdf);
    let (mut r, mut n) = (0, 0);
    for f in spec.functions.iter_mut() {
        for d in f.rdma.iter_mut().filter(|d| numbered(&d.name, "mlx5_")) {
            d.name = format!("mlx5_{r}");
            r += 1;
        }
        for d in f.netdevs.iter_mut().filter(|d| numbered(&d.name, "ib")) {
            d.name = format!("ib{n}");
            n += 1;
        }
    }
}

/// Removes the GPUDirect RDMA peer module: no `nvidia_peermem`/`nv_peer_mem` module and no
/// `memory_peers` client.
pub fn without_peer_module(mut spec: Spec) -> Spec {
    spec.node
        .modules
        .retain(|m| m.name != "nvidia_peermem" && m.name != "nv_peer_mem");
    spec.node.memory_peers.clear();
    spec
}

/// Unloads nvidia-fs (GPUDirect Storage's kernel module): cuFile can take only the P2PDMA
/// path or compat mode.
pub fn without_nvidia_fs(mut spec: Spec) -> Spec {
    spec.node.modules.retain(|m| m.name != "nvidia_fs");
    spec
}

/// Forces cuFile's compat mode: `"force_compat_mode": true` after `allow_compat_mode` in
/// `etc/cufile.json` (every read through a host bounce buffer).
pub fn with_compat_forced(mut spec: Spec) -> Result<Spec, SpecError> {
    let c = spec
        .node
        .storage
        .as_mut()
        .and_then(|s| s.cufile_json.as_mut())
        .ok_or_else(|| {
            SpecError::Other("fault compat-forced: the layout has no cufile.json".into())
        })?;
    let key = "\"allow_compat_mode\": true,";
    let Some(i) = c.find(key) else {
        return Err(SpecError::Other(
            "fault compat-forced: no `\"allow_compat_mode\": true,` line in cufile.json".into(),
        ));
    };
    c.insert_str(
        i + key.len(),
        "\n                            \"force_compat_mode\": true,",
    );
    Ok(spec)
}

/// The same devices seen from inside a VM: `hypervisor` flag, DMI QEMU, `numa_node` -1, no
/// IOMMU inside the guest, no ACS capability.
pub fn as_vm(mut spec: Spec) -> Spec {
    spec.machine.hypervisor = true;
    spec.machine.dmi_vendor = Some("QEMU".into());
    spec.machine.dmi_product = Some("Standard PC (Q35 + ICH9, 2009)".into());
    for h in &mut spec.host_bridges {
        h.numa_node = None;
    }
    for f in &mut spec.functions {
        f.numa_node = None;
        f.acs_control = None;
        f.iommu_group = None;
        f.iommu_type = None;
    }
    spec.node.iommu_units.clear();
    spec.node.iommu_default_type = None;
    spec
}

/// Changes what the amdgpu/KFD driver shows of the AMD GPU at `bdf` (and its function).
fn amd_gpu_fault(
    mut spec: Spec,
    bdf: Bdf,
    change: impl FnOnce(&mut crate::synth::AmdGpuSpec, &mut crate::synth::Function),
) -> Result<Spec, SpecError> {
    let f = spec
        .function_mut(bdf)
        .ok_or(SpecError::NoSuchFunction(bdf))?;
    let mut a = f
        .amd
        .take()
        .ok_or_else(|| SpecError::Other(format!("{bdf} is not an AMD GPU of this layout")))?;
    change(&mut a, f);
    f.amd = Some(a);
    Ok(spec)
}

/// Removes the amdkfd peer-memory client (`sys/kernel/mm/memory_peers/amdkfd`): the RDMA stack
/// has no peer-memory API, or amdgpu did not register with it.
pub fn without_amdkfd_peer(mut spec: Spec) -> Spec {
    spec.node.memory_peers.retain(|m| m.name != "amdkfd");
    spec
}

/// Applies a fault given as text (the CLI's `--fault`):
/// `acs-redirect=BDF`, `acs=BDF,HEX`, `link-width=BDF,W`, `aer=BDF,COR,NONFATAL,FATAL`,
/// `iommu-type=BDF,TYPE`, `move=BDF,NUMA`, `no-peermem`, `vm`; GPUDirect Storage:
/// `no-nvidia-fs`, `compat-forced`; AMD GPUs: `small-bar=BDF` (a 256 MiB BAR0, KFD's small-BAR
/// flags), `no-atomics=BDF` (KFD's no-PCIe-atomics flags), `xgmi-down=BDF,BDF` (no xGMI io_link
/// between the two), `no-amdkfd-peer`.
pub fn apply_fault(spec: Spec, fault: &str) -> Result<Spec, SpecError> {
    let (kind, arg) = fault.split_once('=').unwrap_or((fault, ""));
    let args: Vec<&str> = arg.split(',').map(str::trim).collect();
    let bdf = |i: usize| -> Result<Bdf, SpecError> {
        args.get(i)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| SpecError::Other(format!("fault {kind}: missing PCI address")))?
            .parse::<Bdf>()
            .map_err(|e| SpecError::Other(format!("fault {kind}: {e}")))
    };
    let num = |i: usize| -> Result<u64, SpecError> {
        args.get(i).and_then(|s| s.parse().ok()).ok_or_else(|| {
            SpecError::Other(format!("fault {kind}: argument {} must be a number", i + 1))
        })
    };
    match kind {
        "acs-redirect" => with_acs_redirect(spec, bdf(0)?),
        "acs" => {
            let v = args
                .get(1)
                .and_then(|s| {
                    let t = s.trim_start_matches("0x").trim_start_matches("0X");
                    u16::from_str_radix(t, 16).ok()
                })
                .ok_or_else(|| {
                    SpecError::Other("fault acs: argument 2 must be a hex control value".into())
                })?;
            with_acs_control(spec, bdf(0)?, v)
        }
        "link-width" => with_link_width(spec, bdf(0)?, num(1)? as u32),
        "aer" => with_aer(spec, bdf(0)?, num(1)?, num(2)?, num(3)?),
        "iommu-type" => {
            let ty = args
                .get(1)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| SpecError::Other("fault iommu-type: missing TYPE".into()))?;
            with_iommu_type(spec, bdf(0)?, ty)
        }
        "move" => with_moved_card(spec, bdf(0)?, num(1)? as u32),
        "no-peermem" => Ok(without_peer_module(spec)),
        "vm" => Ok(as_vm(spec)),
        "no-nvidia-fs" => Ok(without_nvidia_fs(spec)),
        "compat-forced" => with_compat_forced(spec),
        "small-bar" => amd_gpu_fault(spec, bdf(0)?, |a, f| {
            a.large_bar = false;
            for b in f.bars.iter_mut().filter(|b| b.index == 0) {
                b.size = 256 << 20;
            }
        }),
        "no-atomics"
            if spec
                .function(bdf(0)?)
                .is_some_and(|f| f.amd.as_ref().is_some_and(|a| a.apu)) =>
        {
            Err(SpecError::Other(format!(
                "fault no-atomics: {} is an APU, linked to its CPU over xGMI, where PCIe atomics do not apply",
                bdf(0)?
            )))
        }
        "no-atomics" => amd_gpu_fault(spec, bdf(0)?, |a, _| a.atomics = false),
        "xgmi-down" => {
            let peer = bdf(1)?;
            // The peer must be an AMD GPU too: an address of anything else removed no link.
            let spec = amd_gpu_fault(spec, peer, |_, _| ())?;
            amd_gpu_fault(spec, bdf(0)?, |a, _| a.xgmi_down.push(peer))
        }
        "no-amdkfd-peer" => Ok(without_amdkfd_peer(spec)),
        _ => Err(SpecError::Other(format!(
            "unknown fault '{kind}' (known: acs-redirect=BDF, acs=BDF,HEX, link-width=BDF,W, aer=BDF,C,N,F, iommu-type=BDF,TYPE, move=BDF,NUMA, no-peermem, vm, no-nvidia-fs, compat-forced, small-bar=BDF, no-atomics=BDF, xgmi-down=BDF,BDF, no-amdkfd-peer)"
        ))),
    }
}
