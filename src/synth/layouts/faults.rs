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

/// Removes the GPUDirect RDMA peer module: no `nvidia_peermem`/`nv_peer_mem` module and no
/// `memory_peers` client.
pub fn without_peer_module(mut spec: Spec) -> Spec {
    spec.node
        .modules
        .retain(|m| m.name != "nvidia_peermem" && m.name != "nv_peer_mem");
    spec.node.memory_peers.clear();
    spec
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

/// Applies a fault given as text (the CLI's `--fault`):
/// `acs-redirect=BDF`, `acs=BDF,HEX`, `link-width=BDF,W`, `aer=BDF,COR,NONFATAL,FATAL`,
/// `iommu-type=BDF,TYPE`, `no-peermem`, `vm`.
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
        "no-peermem" => Ok(without_peer_module(spec)),
        "vm" => Ok(as_vm(spec)),
        _ => Err(SpecError::Other(format!(
            "unknown fault '{kind}' (known: acs-redirect=BDF, acs=BDF,HEX, link-width=BDF,W, aer=BDF,C,N,F, iommu-type=BDF,TYPE, no-peermem, vm)"
        ))),
    }
}
