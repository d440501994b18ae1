//! Topology files a cloud platform's NCCL net plugin hands NCCL itself, and how NCCL then sees
//! the node. aws-ofi-nccl (aws/aws-ofi-nccl `topology/p4d-24xl-topo.xml` and
//! `p4de-24xl-topo.xml`, 2020 and 2022; `src/platform-aws.c` sets `NCCL_TOPO_FILE` to the file
//! of the instance type it detects when the variable is unset) lists, per socket, two fake
//! switches `ffff:ff:0N.0`, each with two A100s and one EFA: "2 GPUs and 1 NIC behind a PCIe
//! switch", which the VM's own tree hides (every device on the host bridge). NCCL takes each
//! listed device's parent from the file (`ncclTopoGetXmlFromSys` does not climb sysfs for a
//! `pci` element that already has one), so a GPU and the EFA of one group are PIX to NCCL.
//! The groups are kept here as data (bus ids and the file's words), not the files.

use crate::model::{Bdf, DeviceKind, Topology};

/// One plugin topology file: where it comes from and its groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginTopo {
    /// The file's name in the plugin's `topology/` folder.
    pub file: &'static str,
    /// The instance type the plugin applies it on (DMI `product_name`).
    pub instance: &'static str,
    /// Where the file is published.
    pub source: &'static str,
    /// Each fake switch (`ffff:ff:01.0`) with the GPUs and NICs the file puts behind it.
    pub groups: &'static [(&'static str, &'static [&'static str])],
}

/// The p4d/p4de groups: both files list the same addresses.
const P4_GROUPS: &[(&str, &[&str])] = &[
    (
        "ffff:ff:01.0",
        &["0000:10:1c.0", "0000:10:1d.0", "0000:10:1b.0"],
    ),
    (
        "ffff:ff:02.0",
        &["0000:20:1c.0", "0000:20:1d.0", "0000:20:1b.0"],
    ),
    (
        "ffff:ff:03.0",
        &["0000:90:1c.0", "0000:90:1d.0", "0000:90:1b.0"],
    ),
    (
        "ffff:ff:04.0",
        &["0000:a0:1c.0", "0000:a0:1d.0", "0000:a0:1b.0"],
    ),
];

/// aws-ofi-nccl's files, by instance type.
pub const AWS_OFI_NCCL: [PluginTopo; 2] = [
    PluginTopo {
        file: "p4d-24xl-topo.xml",
        instance: "p4d.24xlarge",
        source: "https://github.com/aws/aws-ofi-nccl/blob/master/topology/p4d-24xl-topo.xml",
        groups: P4_GROUPS,
    },
    PluginTopo {
        file: "p4de-24xl-topo.xml",
        instance: "p4de.24xlarge",
        source: "https://github.com/aws/aws-ofi-nccl/blob/master/topology/p4de-24xl-topo.xml",
        groups: P4_GROUPS,
    },
];

/// Which plugin file NCCL reads on this node, and why: the instance type the DMI product name
/// gives, else (no product name, as in a trimmed hwloc file) an EC2 node with EFA whose every
/// GPU and EFA address is one the file lists. `None` when the job sets `NCCL_TOPO_FILE` (the
/// plugin leaves it), the product names another type, or the addresses differ.
pub fn applying(t: &Topology) -> Option<(&'static PluginTopo, String)> {
    if t.machine.nccl.get("NCCL_TOPO_FILE").is_some() {
        return None;
    }
    if let Some(p) = t.machine.dmi_product_name.as_deref().map(str::trim) {
        return AWS_OFI_NCCL
            .iter()
            .find(|f| f.instance == p)
            .map(|f| (f, format!("DMI product name {p}")));
    }
    let efa = |d: &&crate::model::Device| {
        d.vendor_id == Some(0x1d0f) && d.device_id.is_some_and(|x| (0xefa0..=0xefa3).contains(&x))
    };
    let ends: Vec<Bdf> = t
        .devices
        .iter()
        .filter(|d| !d.is_vf())
        .filter(|d| d.kind == DeviceKind::Gpu || (d.kind == DeviceKind::Nic && efa(d)))
        .map(|d| d.bdf)
        .collect();
    if !t
        .devices
        .iter()
        .any(|d| d.kind == DeviceKind::Nic && efa(&d))
    {
        return None;
    }
    let f = AWS_OFI_NCCL.first()?;
    let listed = |b: &Bdf| {
        f.groups
            .iter()
            .any(|(_, m)| m.iter().any(|s| s.parse::<Bdf>().ok() == Some(*b)))
    };
    let all = f.groups.iter().map(|(_, m)| m.len()).sum::<usize>();
    (ends.len() == all && ends.iter().all(listed)).then(|| {
        (
            f,
            format!(
                "no instance type in this input; its {} GPU and EFA addresses are the ones aws-ofi-nccl's p4d/p4de files list",
                ends.len()
            ),
        )
    })
}

/// The index of the group (fake switch) the file puts `b` behind, when it lists `b`.
pub fn group_of(f: &PluginTopo, b: &Bdf) -> Option<usize> {
    f.groups
        .iter()
        .position(|(_, m)| m.iter().any(|s| s.parse::<Bdf>().ok() == Some(*b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testkit::TopoBuilder;

    /// A p4d-shaped VM tree (synthesized): per host bridge 10/20/90/a0 two A100s at `1c.0`,
    /// `1d.0` and an EFA at `1b.0`, all on the host bridge; `drop` leaves one GPU out.
    fn p4d(product: Option<&str>, drop: bool) -> Topology {
        let mut b = TopoBuilder::new(&["0-47", "48-95"]).cpu("GenuineIntel", 6, 85);
        for (k, bus) in ["10", "20", "90", "a0"].iter().enumerate() {
            let numa = Some((k / 2) as u32);
            b.dev(
                &format!("0000:{bus}:1b.0"),
                None,
                0x020000,
                (0x1d0f, 0xefa0),
                numa,
            );
            b.dev(
                &format!("0000:{bus}:1c.0"),
                None,
                0x030200,
                (0x10de, 0x20b0),
                numa,
            );
            if !(drop && k == 3) {
                b.dev(
                    &format!("0000:{bus}:1d.0"),
                    None,
                    0x030200,
                    (0x10de, 0x20b0),
                    numa,
                );
            }
        }
        let mut t = b.build();
        t.machine.dmi_product_name = product.map(str::to_string);
        t
    }

    #[test]
    fn the_plugin_file_applies_by_instance_type_or_by_its_addresses() {
        let (f, why) = applying(&p4d(None, false)).unwrap();
        assert_eq!(f.file, "p4d-24xl-topo.xml");
        assert!(why.contains("12 GPU and EFA addresses"), "{why}");
        assert_eq!(
            applying(&p4d(Some("p4de.24xlarge"), false)).unwrap().0.file,
            "p4de-24xl-topo.xml"
        );
        assert!(applying(&p4d(Some("g5.48xlarge"), false)).is_none());
        assert!(applying(&p4d(None, true)).is_none());
        let mut t = p4d(None, false);
        t.machine
            .nccl
            .layer_environment(&[("NCCL_TOPO_FILE".into(), "/opt/mine.xml".into())]);
        assert!(applying(&t).is_none());
        let g = |s: &str| group_of(f, &s.parse().unwrap());
        assert_eq!(g("0000:90:1d.0"), g("0000:90:1b.0"));
        assert_ne!(g("0000:90:1d.0"), g("0000:10:1b.0"));
    }
}
