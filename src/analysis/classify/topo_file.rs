//! The job's own `NCCL_TOPO_FILE` as NCCL merges it with what it detects, for each GPU–NIC
//! pair of the node (NVIDIA/nccl `src/graph/topo.cc` `ncclTopoGetSystem`, `src/graph/xml.cc`).
//!
//! NCCL loads the file first (`ncclTopoGetXmlFromFile`), then fills in each GPU it drives and
//! each NIC its net plugin reports (`ncclTopoFillGpu`, `ncclTopoFillNet`): the device's `pci`
//! element is looked up by its bus id in the loaded tree (`ncclTopoGetPciNode`); a listed
//! device keeps the file's parent, so `ncclTopoGetXmlFromSys` never climbs sysfs for it and its
//! CPU is the file's `cpu numaid`. A device the file does not list is placed from sysfs: its
//! parents are climbed until one the file lists or its CPU root complex, which joins the
//! file's `cpu` element of the same `numa_node`. A file that does not exist is only logged
//! (NCCL detects the topology itself); a file NCCL cannot parse fails its initialisation.
//!
//! So a pair is judged here on the file's tree when the file lists both devices (the same
//! NCCL path rule, [`Classifier::nccl_base`], over the file's own [`Topology`]); on their CPUs
//! when it lists one (PHB on one NUMA node, SYS across); on the node's own tree when it lists
//! neither and none of their bridges. Where the file lists a bridge above an unlisted device
//! the joined tree is not modelled: that pair is unknown, with the reason. Not modelled
//! either: a `net` element found by name before its bus id (a full NCCL dump reused as the
//! file lists the NIC's own bus id too), and a bus id written in capitals (NCCL compares the
//! text with its lower-case form; the file's addresses are read case-blind here).

use super::{Classifier, NcclPath};
use crate::analysis::paths::DevIx;
use crate::model::{Bdf, DeviceKind, Topology};
use std::collections::HashMap;

/// One GPU–NIC pair as NCCL's tree holds it once the file is loaded.
#[derive(Debug, Clone, PartialEq)]
enum FilePair {
    /// NCCL's path type on the merged tree, and why, in words.
    Decided(NcclPath, String),
    /// How NCCL joins the two is not modelled: why.
    Unknown(String),
}

/// The job's `NCCL_TOPO_FILE` over this node: each GPU–NIC pair whose tree the file decides,
/// or why the file could not be read. Built by [`Classifier::with_topo_file`].
#[derive(Debug, Clone)]
pub struct TopoFile {
    /// The path as the job's setting names it.
    pub path: String,
    /// The pairs the file decides (key: GPU, NIC device index of the node), or why the file
    /// could not be read.
    pairs: Result<HashMap<(DevIx, DevIx), FilePair>, String>,
}

/// What the job's `NCCL_TOPO_FILE` makes of one GPU–NIC pair ([`Classifier::topo_file_pair`]).
#[derive(Debug, Clone, PartialEq)]
pub enum FileJudgement<'c> {
    /// The file could not be read here: NCCL's tree is unknown for every pair.
    Unreadable {
        /// The file, as the setting names it.
        path: &'c str,
        /// Why it could not be read.
        why: &'c str,
    },
    /// The file places the pair in a way this model does not join to the node's tree.
    Unknown {
        /// The file, as the setting names it.
        path: &'c str,
        /// Why, in words.
        why: &'c str,
    },
    /// NCCL's path on the file's tree, beside the node's own.
    Decided {
        /// The file, as the setting names it.
        path: &'c str,
        /// NCCL's path type on the merged tree.
        file: NcclPath,
        /// Where the file puts the two, in words.
        words: &'c str,
        /// NCCL's path type on the node's own tree (what NCCL would see without the file).
        tree: NcclPath,
        /// Whether NCCL would use GPUDirect RDMA on the node's own tree (same settings).
        tree_gdr: bool,
    },
}

impl<'t> Classifier<'t> {
    /// This classifier with the job's `NCCL_TOPO_FILE` as a second input: every GPU–NIC pair
    /// the file decides is given NCCL's path type on the file's tree (module docs), which every
    /// GDR decision, the matching and PXN then read. `file` is the file read as a topology
    /// (`sources::load` of NCCL XML), or why it could not be read: then no pair changes and
    /// [`Classifier::topo_file_pair`] answers unknown for each.
    pub fn with_topo_file(mut self, path: &str, file: Result<&Topology, &str>) -> Self {
        let pairs = match file {
            Ok(f) => Ok(self.file_pairs(f)),
            Err(why) => Err(why.to_string()),
        };
        self.topo_file = Some(TopoFile {
            path: path.to_string(),
            pairs,
        });
        self
    }

    /// The job's topology file, when one was given ([`Classifier::with_topo_file`]).
    pub fn topo_file(&self) -> Option<&TopoFile> {
        self.topo_file.as_ref()
    }

    /// What the job's topology file makes of a GPU–NIC pair; `None` without a file, or when the
    /// file leaves the pair to NCCL's detection (it lists neither device nor their bridges).
    pub fn topo_file_pair(&self, gpu: &Bdf, nic: &Bdf) -> Option<FileJudgement<'_>> {
        let f = self.topo_file.as_ref()?;
        let pairs = match &f.pairs {
            Err(why) => {
                return Some(FileJudgement::Unreadable { path: &f.path, why });
            }
            Ok(p) => p,
        };
        let (g, n) = (self.paths.index(gpu)?, self.paths.index(nic)?);
        match pairs.get(&(g, n))? {
            FilePair::Unknown(why) => Some(FileJudgement::Unknown { path: &f.path, why }),
            FilePair::Decided(file, words) => {
                let tree = self.tree_base(g, n).0;
                Some(FileJudgement::Decided {
                    path: &f.path,
                    file: *file,
                    words,
                    tree,
                    tree_gdr: self.gdr_on_path(g, n, tree),
                })
            }
        }
    }

    /// NCCL's base path type for a pair the job's topology file decides.
    pub(super) fn file_base(&self, a: DevIx, b: DevIx) -> Option<NcclPath> {
        let Ok(pairs) = &self.topo_file.as_ref()?.pairs else {
            return None;
        };
        let key = if self.kind(a) == DeviceKind::Gpu {
            (a, b)
        } else {
            (b, a)
        };
        match pairs.get(&key)? {
            FilePair::Decided(p, _) => Some(*p),
            FilePair::Unknown(_) => None,
        }
    }

    /// The words of [`Classifier::file_base`]'s decision: the file and where it puts the two.
    pub(super) fn file_words(&self, a: DevIx, b: DevIx) -> String {
        let key = if self.kind(a) == DeviceKind::Gpu {
            (a, b)
        } else {
            (b, a)
        };
        let Some(f) = &self.topo_file else {
            return "the job's NCCL_TOPO_FILE".into();
        };
        match f.pairs.as_ref().ok().and_then(|p| p.get(&key)) {
            Some(FilePair::Decided(_, w)) => format!("NCCL_TOPO_FILE={}: {w}", f.path),
            _ => format!("NCCL_TOPO_FILE={}", f.path),
        }
    }

    /// Every GPU–NIC endpoint pair of the node that the file decides.
    fn file_pairs(&self, file: &Topology) -> HashMap<(DevIx, DevIx), FilePair> {
        let fc = Classifier::new(file, &self.opts);
        let of_kind = |k: DeviceKind| {
            let mut v: Vec<DevIx> = self
                .ep_dev
                .iter()
                .copied()
                .filter(|&d| self.kind(d) == k)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let (gpus, nics) = (of_kind(DeviceKind::Gpu), of_kind(DeviceKind::Nic));
        let mut out = HashMap::new();
        for &g in &gpus {
            for &n in &nics {
                if let Some(p) = self.file_pair(&fc, g, n) {
                    out.insert((g, n), p);
                }
            }
        }
        out
    }

    /// One pair on the merged tree (module docs), `None` when the file leaves it to detection.
    fn file_pair(&self, fc: &Classifier, g: DevIx, n: DevIx) -> Option<FilePair> {
        let at = |d: DevIx| fc.paths.index(&self.paths.device(d).bdf);
        let listed_above = |d: DevIx| {
            self.paths.chain(d)[1..]
                .iter()
                .map(|&x| self.paths.device(x).bdf)
                .find(|b| fc.paths.index(b).is_some())
        };
        let (bg, bn) = (self.paths.device(g).bdf, self.paths.device(n).bdf);
        let (fg, fnic) = (at(g), at(n));
        for (d, b, f) in [(g, bg, fg), (n, bn, fnic)] {
            if let (None, Some(x)) = (f, listed_above(d)) {
                return Some(FilePair::Unknown(format!(
                    "the file lists {x}, above {b}, but not {b} itself: how NCCL joins the file's tree and sysfs there is not modelled"
                )));
            }
        }
        match (fg, fnic) {
            (None, None) => None,
            (Some(x), Some(y)) => {
                let (p, why) = fc.nccl_base(x, y);
                let under = fc
                    .paths
                    .lca(x, y)
                    .map(|m| format!(" (under {} in the file)", fc.paths.device(m).bdf))
                    .unwrap_or_default();
                Some(FilePair::Decided(
                    p,
                    format!("the file lists both: {}{under}", fc.base_rule(x, y, why)),
                ))
            }
            (Some(x), None) => Some(one_listed(
                (bg, fc.paths.nccl_numa(x)),
                (bn, self.paths.nccl_numa(n)),
            )),
            (None, Some(y)) => Some(one_listed(
                (bn, fc.paths.nccl_numa(y)),
                (bg, self.paths.nccl_numa(g)),
            )),
        }
    }
}

/// A pair of which the file lists one device (`listed`, with the file's CPU) and NCCL finds the
/// other in sysfs (`found`, with its `numa_node`): they meet at their CPUs.
fn one_listed(listed: (Bdf, Option<u32>), found: (Bdf, Option<u32>)) -> FilePair {
    let ((lb, ln), (fb, fnu)) = (listed, found);
    let (Some(x), Some(y)) = (ln, fnu) else {
        return FilePair::Unknown(format!(
            "the file lists {lb} but not {fb}, and the NUMA node of one of them is unknown: which CPU NCCL joins them at is unknown"
        ));
    };
    let p = if x == y { NcclPath::Phb } else { NcclPath::Sys };
    FilePair::Decided(
        p,
        format!(
            "the file lists {lb} (under its CPU NUMA {x}) but not {fb}, which NCCL finds in sysfs on NUMA node {y}: {p}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classify::ClassifyOptions;
    use crate::analysis::testkit::TopoBuilder;
    use crate::model::SourceInfo;

    /// A synthesized two-socket node: GPU `0000:01:00.0` and NIC `0000:02:00.0` on root ports
    /// of NUMA node 0, NIC `0000:82:00.0` on one of NUMA node 1.
    fn node() -> Topology {
        let mut b = TopoBuilder::new(&["0-7", "8-15"]);
        b.bridge("0000:00:01.0", None, Some(0));
        b.gpu("0000:01:00.0", Some("0000:00:01.0"), Some(0));
        b.bridge("0000:00:02.0", None, Some(0));
        b.nic("0000:02:00.0", Some("0000:00:02.0"), Some(0), &["mlx5_0"]);
        b.bridge("0000:80:01.0", None, Some(1));
        b.nic("0000:82:00.0", Some("0000:80:01.0"), Some(1), &["mlx5_1"]);
        b.build()
    }

    /// A synthesized file: it puts the GPU under CPU 1 and lists the root port above NIC
    /// `0000:02:00.0`, not the NIC.
    fn file() -> Topology {
        let text = r#"<system version="1">
  <cpu numaid="1" affinity="0000ff00" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16"/>
  </cpu>
  <cpu numaid="0" affinity="000000ff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:00:02.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16"/>
  </cpu>
</system>"#;
        let doc = crate::sources::xmltree::parse(text).unwrap();
        let src = SourceInfo {
            kind: "nccl-xml".into(),
            path: "test.xml".into(),
            limitations: vec![],
        };
        crate::sources::nccl_xml::read(&doc, src, None).unwrap()
    }

    #[test]
    fn half_listed_pairs_meet_at_the_cpus_and_a_listed_bridge_is_unknown() {
        let (t, f) = (node(), file());
        let b = |s: &str| s.parse::<Bdf>().unwrap();
        let (gpu, near, far) = (b("0000:01:00.0"), b("0000:02:00.0"), b("0000:82:00.0"));
        let bare = Classifier::new(&t, &ClassifyOptions::default());
        assert_eq!(
            bare.summary_of(&gpu, &far).unwrap().nccl_path,
            NcclPath::Sys
        );
        assert_eq!(bare.topo_file_pair(&gpu, &far), None);
        let cl = Classifier::new(&t, &ClassifyOptions::default()).with_topo_file("/t.xml", Ok(&f));
        // The file's CPU 1 for the GPU, sysfs's NUMA node 1 for the NIC: one CPU, PHB.
        match cl.topo_file_pair(&gpu, &far) {
            Some(FileJudgement::Decided {
                file, tree, words, ..
            }) => {
                assert_eq!((file, tree), (NcclPath::Phb, NcclPath::Sys));
                assert!(words.contains("NUMA node 1"), "{words}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(cl.summary_of(&gpu, &far).unwrap().nccl_path, NcclPath::Phb);
        // The file lists the root port above the NIC but not the NIC: not modelled.
        match cl.topo_file_pair(&gpu, &near) {
            Some(FileJudgement::Unknown { why, .. }) => {
                assert!(why.contains("0000:00:02.0, above 0000:02:00.0"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        let bad =
            Classifier::new(&t, &ClassifyOptions::default()).with_topo_file("/t.xml", Err("no"));
        assert!(matches!(
            bad.topo_file_pair(&gpu, &far),
            Some(FileJudgement::Unreadable { why: "no", .. })
        ));
        assert_eq!(bad.summary_of(&gpu, &far).unwrap().nccl_path, NcclPath::Sys);
    }
}
