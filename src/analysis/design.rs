//! Known production node designs, recognised from what the input shows (PCI IDs of the fabric
//! adapters, the CPU, DMI names, the hypervisor, C2C links), each with the GPUDirect RDMA
//! settings its operators document and where they document them. The audit uses a design to
//! word the remedy of a GPU whose best NIC is beyond PXB *by design* (docs/design.md lists
//! every design with its sources; shared/reference/platforms/platforms.md gathered them); a
//! node no design matches is judged by the arrangement rule alone (`audit::placement`).

use super::paths::Paths;
use crate::model::{Device, DeviceKind, MachineInfo, Topology};

/// A setting an operator of a design documents for GPUDirect RDMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Documented {
    /// `NAME=VALUE` as the operator writes it.
    pub setting: &'static str,
    /// Who documents it (`HPE`, `AWS`).
    pub who: &'static str,
    /// What they say, or who else runs it.
    pub note: &'static str,
    /// Where (a URL).
    pub source: &'static str,
}

impl Documented {
    /// The GPUDirect RDMA level the setting names (`NCCL_NET_GDR_LEVEL=PHB` → PHB), read as
    /// NCCL reads a level; `None` for a setting of another variable.
    pub fn gdr_level(&self) -> Option<super::nccl::NcclPath> {
        self.setting
            .strip_prefix("NCCL_NET_GDR_LEVEL=")
            .and_then(|v| super::settings::read_level(v, super::nccl::NcclVersion::NEWEST))
    }
}

/// A recognised design.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    /// Short id (`hpe-slingshot`, `grace-c2c`, `aws-ec2`, `azure-nd`, `gcp`, `oci-bm-gpu`,
    /// `nvidia-dgx`).
    pub id: &'static str,
    /// What it is, in words.
    pub name: String,
    /// What the input showed: (where, raw value).
    pub evidence: Vec<(String, String)>,
    /// The settings its operators document for GDR (empty: none is needed or none was found).
    pub settings: Vec<Documented>,
    /// Where a GPU beyond PXB on this design stands, in words (by design, what operators do).
    pub note: &'static str,
    /// When the input cannot show the real PCIe tree of this design: what hides it and what
    /// NCCL reads instead.
    pub hides_tree: Option<&'static str>,
}

const HPE: Documented = Documented {
    setting: "NCCL_NET_GDR_LEVEL=PHB",
    who: "HPE",
    note: "Slingshot NCCL tuning guide: \"Required to enable RDMA between GPUs\"; NERSC, ALCF, OLCF and CSCS run it",
    source: "https://github.com/HewlettPackard/shs-ccl-docs/blob/main/nccl/nccl_tuning_guide.md",
};
const HPE_CROSS: Documented = Documented {
    setting: "NCCL_CROSS_NIC=1",
    who: "HPE",
    note: "NERSC, ALCF and OLCF set it too",
    source: "https://github.com/HewlettPackard/shs-ccl-docs/blob/main/nccl/nccl_tuning_guide.md",
};
const GRACE: Documented = Documented {
    setting: "NCCL_NET_GDR_C2C=1",
    who: "NVIDIA",
    note: "NCCL ≥ 2.27 sets it by default; 2.26 needs it; before 2.26 a maintainer advises NCCL_NET_GDR_LEVEL=SYS",
    source: "https://github.com/NVIDIA/nccl/issues/1579",
};
const AZURE: Documented = Documented {
    setting: "NCCL_TOPO_FILE=/opt/microsoft/ndv4/topo.xml (ndv5: /opt/microsoft/ndv5/topo.xml), in /etc/nccl.conf",
    who: "Microsoft",
    note: "its HPC images (azhpc-images) write it with NCCL_IB_PCI_RELAXED_ORDERING=1 and NCCL_IGNORE_CPU_AFFINITY=1",
    source: "https://github.com/Azure/azhpc-images",
};
const AWS: Documented = Documented {
    setting: "NCCL_TOPO_FILE (set by the aws-ofi-nccl plugin itself on p4d/p4de/g5)",
    who: "AWS",
    note: "the aws-ofi-nccl plugin hands NCCL its own topology file for these instance types",
    source: "https://github.com/aws/aws-ofi-nccl/tree/master/topology",
};
const GCP: Documented = Documented {
    setting: "NCCL_NET_GDR_LEVEL=PIX",
    who: "Google",
    note: "its GKE and Cluster Toolkit NCCL configurations, with NCCL_CROSS_NIC=0",
    source: "https://github.com/GoogleCloudPlatform/container-engine-accelerators",
};

/// HPE Cassini (Slingshot 200 Gb/s) adapters: PCI vendor 0x17db.
const CASSINI_VENDOR: u16 = 0x17db;
/// Amazon's PCI vendor; EFA devices are `efa0`–`efa3`.
const AMAZON_VENDOR: u16 = 0x1d0f;
/// Google's gVNIC (`1ae0:0042`).
const GVNIC: (u16, u16) = (0x1ae0, 0x0042);

fn contains(s: &Option<String>, w: &str) -> bool {
    s.as_deref()
        .is_some_and(|x| x.to_ascii_lowercase().contains(&w.to_ascii_lowercase()))
}

/// Recognises the node's design from its facts; `None` when no known design matches. The
/// recognisers run in order and the first that matches names the design.
pub fn recognise(paths: &Paths) -> Option<Design> {
    let f = Facts::new(paths);
    let recognisers: [fn(&Facts) -> Option<Design>; 7] = [
        hpe_slingshot,
        grace_c2c,
        aws_ec2,
        azure_nd,
        gcp,
        oci_bm_gpu,
        nvidia_dgx,
    ];
    recognisers.iter().find_map(|r| r(&f))
}

/// What the recognisers read: the node, its machine facts, and the DMI evidence.
struct Facts<'p, 't> {
    paths: &'p Paths<'t>,
    t: &'t Topology,
    m: &'t MachineInfo,
    /// The DMI vendor and product, as evidence.
    dmi_ev: Vec<(String, String)>,
}

impl<'p, 't> Facts<'p, 't> {
    fn new(paths: &'p Paths<'t>) -> Self {
        let t: &Topology = paths.topo();
        let m = &t.machine;
        let dmi =
            |what: &str, v: &Option<String>| v.as_ref().map(|x| (what.to_string(), x.clone()));
        let dmi_ev: Vec<(String, String)> = [
            dmi("/sys/class/dmi/id/sys_vendor", &m.dmi_sys_vendor),
            dmi("/sys/class/dmi/id/product_name", &m.dmi_product_name),
        ]
        .into_iter()
        .flatten()
        .collect();
        Facts {
            paths,
            t,
            m,
            dmi_ev,
        }
    }

    /// NICs (VFs excluded).
    fn nics(&self) -> impl Iterator<Item = &'t Device> {
        self.t.of_kind(DeviceKind::Nic).filter(|d| !d.is_vf())
    }

    /// GPUs.
    fn gpus(&self) -> impl Iterator<Item = &'t Device> {
        self.t.of_kind(DeviceKind::Gpu)
    }

    /// Whether a GPU reaches its CPU over NVLink-C2C.
    fn c2c(&self, g: &Device) -> bool {
        self.paths
            .index(&g.bdf)
            .and_then(|i| self.paths.c2c(i))
            .is_some()
    }
}

/// A device's PCI ids, as evidence.
fn id_ev(d: &Device) -> (String, String) {
    (
        format!("/sys/bus/pci/devices/{}", d.bdf),
        format!(
            "{:04x}:{:04x}",
            d.vendor_id.unwrap_or(0),
            d.device_id.unwrap_or(0)
        ),
    )
}

/// An HPE Slingshot (Cassini) NIC: Cray EX235a / EX255a / EX254n, or another Slingshot node.
fn hpe_slingshot(f: &Facts) -> Option<Design> {
    let m = f.m;
    let c = f.nics().find(|d| d.vendor_id == Some(CASSINI_VENDOR))?;
    let amd = f.gpus().any(|g| g.vendor_id == Some(0x1002));
    let apu = f.gpus().any(crate::model::amd::is_apu);
    let grace = f.gpus().any(|g| f.c2c(g));
    let name = if contains(&m.dmi_product_name, "EX235A") || (amd && !apu) {
        "HPE Cray EX235a-class node (MI250X, Slingshot)"
    } else if contains(&m.dmi_product_name, "EX255A") || apu {
        "HPE Cray EX255a-class node (MI300A, Slingshot)"
    } else if grace {
        "HPE Cray EX254n-class node (GH200, Slingshot)"
    } else {
        "HPE Slingshot GPU node (Cray EX / Apollo class: Perlmutter, Polaris)"
    };
    let mut evidence = vec![id_ev(c)];
    evidence.extend(f.dmi_ev.clone());
    Some(Design {
        id: "hpe-slingshot",
        name: name.into(),
        evidence,
        settings: vec![HPE, HPE_CROSS],
        note: "each Slingshot NIC sits on its GPU's host bridge or NUMA node, with no PCIe switch between them: PHB by design",
        hides_tree: None,
    })
}

/// A GPU that reaches its CPU over NVLink-C2C: a Grace node.
fn grace_c2c(f: &Facts) -> Option<Design> {
    let g = f.gpus().find(|g| f.c2c(g))?;
    let mut evidence = vec![(
        format!("/sys/bus/pci/devices/{}", g.bdf),
        "GPU reaches its CPU over NVLink-C2C".to_string(),
    )];
    evidence.extend(f.dmi_ev.clone());
    Some(Design {
        id: "grace-c2c",
        name: "NVIDIA Grace node (GH200 / GB200 / GB300: GPUs reach the NICs through Grace)".into(),
        evidence,
        settings: vec![GRACE],
        note: "the NIC hangs off Grace's PCIe and the GPU reaches Grace over C2C: NCCL's P2C path by design",
        hides_tree: None,
    })
}

/// An EFA adapter or an EC2 DMI vendor.
fn aws_ec2(f: &Facts) -> Option<Design> {
    let m = f.m;
    let efa = f.nics().find(|d| {
        d.vendor_id == Some(AMAZON_VENDOR)
            && d.device_id.is_some_and(|x| (0xefa0..=0xefa3).contains(&x))
    });
    if efa.is_none() && !contains(&m.dmi_sys_vendor, "Amazon EC2") {
        return None;
    }
    let mut evidence: Vec<_> = efa.map(id_ev).into_iter().collect();
    evidence.extend(f.dmi_ev.clone());
    let product = m.dmi_product_name.clone().unwrap_or_default();
    // The plugin's topology files cover p4d/p4de and g5 (and p5 before 2025); AWS documents
    // no GDR setting for other types (g4dn).
    let plugin_file = product.is_empty()
        || ["p4d", "p4de", "g5.", "p5."]
            .iter()
            .any(|t| product.starts_with(t));
    Some(Design {
        id: "aws-ec2",
        name: if product.is_empty() {
            "AWS EC2 instance with EFA".into()
        } else {
            format!("AWS EC2 {product}")
        },
        evidence,
        settings: if plugin_file { vec![AWS] } else { Vec::new() },
        note: "AWS places its EFA adapters; on p4d/p5/p5en/p6 a PCIe switch holds GPUs and EFAs (PIX), on g4dn and g5 one EFA serves every GPU from one socket",
        hides_tree: (!m.hypervisor.is_empty()).then_some(
            "an EC2 instance's PCIe tree is the hypervisor's view; the aws-ofi-nccl plugin hands NCCL its own topology file for the instance type",
        ),
    })
}

/// A Hyper-V guest with GPUs.
fn azure_nd(f: &Facts) -> Option<Design> {
    let m = f.m;
    let hyperv = m
        .hypervisor
        .iter()
        .any(|(_, v)| v.to_ascii_lowercase().contains("microsoft"))
        || contains(&m.dmi_sys_vendor, "Microsoft Corporation");
    if !hyperv || f.gpus().next().is_none() {
        return None;
    }
    let mut evidence: Vec<_> = m.hypervisor.clone();
    evidence.extend(f.dmi_ev.clone());
    Some(Design {
        id: "azure-nd",
        name: "Azure ND-series VM (Hyper-V guest)".into(),
        evidence,
        settings: vec![AZURE],
        note: "a Hyper-V guest puts each device in its own PCI domain, so every GPU–NIC path looks flat",
        hides_tree: Some(
            "a Hyper-V guest's flat PCI domains; the image's NCCL_TOPO_FILE gives NCCL the real grouping (two GPUs and two HCAs per switch on NDv4, one pair per switch on NDv5)",
        ),
    })
}

/// A gVNIC or a Google DMI vendor.
fn gcp(f: &Facts) -> Option<Design> {
    let m = f.m;
    let gvnic = f
        .nics()
        .find(|d| (d.vendor_id, d.device_id) == (Some(GVNIC.0), Some(GVNIC.1)));
    if gvnic.is_none() && !contains(&m.dmi_sys_vendor, "Google") {
        return None;
    }
    let mut evidence: Vec<_> = gvnic.map(id_ev).into_iter().collect();
    evidence.extend(f.dmi_ev.clone());
    Some(Design {
        id: "gcp",
        name: "Google Cloud A3-family VM".into(),
        evidence,
        settings: vec![GCP],
        note: "each GPU NIC shares a PCIe bridge with two GPUs (A3) or has its own (A3 Mega/Ultra, A4)",
        hides_tree: (!m.hypervisor.is_empty())
            .then_some("a Compute Engine VM's PCIe tree is the hypervisor's view"),
    })
}

/// An OCI bare-metal GPU shape, by DMI.
fn oci_bm_gpu(f: &Facts) -> Option<Design> {
    let m = f.m;
    if !contains(&m.dmi_product_name, "BM.GPU") && !contains(&m.dmi_sys_vendor, "Oracle") {
        return None;
    }
    Some(Design {
        id: "oci-bm-gpu",
        name: format!(
            "Oracle Cloud {}",
            m.dmi_product_name
                .clone()
                .unwrap_or("bare-metal GPU shape".into())
        ),
        evidence: f.dmi_ev.clone(),
        settings: vec![],
        note: "each GPU shares a Broadcom PCIe switch tree with its NICs: PXB by design",
        hides_tree: None,
    })
}

/// An NVIDIA DGX, by DMI.
fn nvidia_dgx(f: &Facts) -> Option<Design> {
    let m = f.m;
    if !contains(&m.dmi_product_name, "DGX") {
        return None;
    }
    Some(Design {
        id: "nvidia-dgx",
        name: format!("NVIDIA {}", m.dmi_product_name.clone().unwrap_or_default()),
        evidence: f.dmi_ev.clone(),
        settings: vec![],
        note: "each GPU shares a PCIe switch with its compute NIC: PIX/PXB by design",
        hides_tree: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testkit::TopoBuilder;

    #[test]
    fn cassini_makes_a_slingshot_node_and_efa_an_aws_one() {
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.gpu("0000:11:00.0", Some("0000:10:01.0"), Some(0));
        b.bridge("0000:10:02.0", None, Some(0));
        b.nic("0000:12:00.0", Some("0000:10:02.0"), Some(0), &["cxi0"]);
        b.ids("0000:12:00.0", (0x17db, 0x0501));
        let t = b.build();
        let d = recognise(&Paths::new(&t)).expect("Slingshot");
        assert_eq!(d.id, "hpe-slingshot");
        assert!(d.settings[0].setting == "NCCL_NET_GDR_LEVEL=PHB");
        assert_eq!(d.evidence[0].1, "17db:0501");
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.gpu("0000:11:00.0", Some("0000:10:01.0"), Some(0));
        b.bridge("0000:10:02.0", None, Some(0));
        b.nic(
            "0000:12:00.0",
            Some("0000:10:02.0"),
            Some(0),
            &["rdmap18s0"],
        );
        b.ids("0000:12:00.0", (0x1d0f, 0xefa0));
        let t = b.build();
        assert_eq!(recognise(&Paths::new(&t)).unwrap().id, "aws-ec2");
        let mut b = TopoBuilder::new(&["0-7"]);
        b.bridge("0000:10:01.0", None, Some(0));
        b.gpu("0000:11:00.0", Some("0000:10:01.0"), Some(0));
        assert!(recognise(&Paths::new(&b.build())).is_none());
    }
}
