//! NVML facts of a live capture: what NVML added to the live scan, serialized (serials
//! redacted unless kept) for `peerpath-nvml.json`. Reading them back is the sources' job
//! ([`crate::sources::nvml_store`]).

use super::archive::{REDACTED, masked, serial_key};
use crate::model::topology::Topology;
use crate::sources::nvml_store::{NVML_SCHEMA, NvmlFacts};

/// Runs NVML enrichment on a copy of a live scan and returns what it added as JSON, or `None`
/// when NVML was not even attempted (no NVIDIA PCI device). Serial-like attributes are
/// redacted unless `keep_serials`.
pub fn nvml_facts(topo: &Topology, keep_serials: bool) -> Option<String> {
    let mut t = topo.clone();
    let before = t.warnings.len();
    let status = crate::sources::nvml::enrich(&mut t);
    if !status.attempted {
        return None;
    }
    let mut warnings = t.warnings.split_off(before.min(t.warnings.len()));
    warnings.extend(status.warning());
    serde_json::to_string_pretty(&facts_of(
        &t,
        status.loaded,
        status.message,
        warnings,
        keep_serials,
    ))
    .ok()
}

/// The facts of an enriched topology (split out of [`nvml_facts`] so it is testable without
/// NVML, over [`crate::sources::nvml::apply`]).
pub fn facts_of(
    t: &Topology,
    loaded: bool,
    message: String,
    warnings: Vec<crate::model::topology::Warning>,
    keep_serials: bool,
) -> NvmlFacts {
    use crate::model::device::OsDeviceKind;
    let gpus = if loaded {
        t.devices
            .iter()
            .filter_map(|d| {
                let mut ods: Vec<_> = d
                    .os_devices
                    .iter()
                    .filter(|o| o.kind == OsDeviceKind::NvidiaGpu)
                    .cloned()
                    .collect();
                if !keep_serials {
                    for o in &mut ods {
                        for (k, v) in &mut o.attrs {
                            if serial_key(k) && !masked(v) {
                                *v = REDACTED.to_string();
                            }
                        }
                    }
                }
                (!ods.is_empty()).then_some((d.bdf, ods))
            })
            .collect()
    } else {
        Vec::new()
    };
    NvmlFacts {
        schema: NVML_SCHEMA.into(),
        loaded,
        message,
        nvlink_visible: t.nvlink_visible,
        nvlinks: if loaded {
            t.nvlinks.clone()
        } else {
            Vec::new()
        },
        gpus,
        warnings,
        fabric: Some(
            t.devices
                .iter()
                .filter_map(|d| Some((d.bdf, d.nvlink_fabric.clone()?)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::topology::SourceInfo;
    use crate::sources::fsroot::{MemNode, MemRoot};
    use crate::sources::nvml_store::{NVML_NAME, apply_stored_nvml};
    use crate::sources::sysfs;

    /// NVML facts survive a capture: enrich a synthesized HGX scan with constructed NVML
    /// observations (NVLinks GPU0–GPU1), store them, fold them into a fresh scan, compare.
    #[test]
    fn nvml_facts_round_trip() {
        use crate::sources::nvml::{self, NvmlGpu, NvmlLink, Remote};
        use crate::synth::{Entry as SEntry, WriteOptions, build_entries, layouts};
        let mut m = MemRoot::new("hgx");
        for (p, e) in build_entries(&layouts::hgx_h100(), &WriteOptions::default()).unwrap() {
            m.insert(
                p,
                match e {
                    SEntry::Dir => MemNode::Dir,
                    SEntry::File(b) => MemNode::File(b),
                    SEntry::Link(t) => MemNode::Symlink(t.into()),
                },
            );
        }
        let src = SourceInfo {
            kind: "snapshot".into(),
            path: "hgx".into(),
            limitations: vec![],
        };
        let scan = || sysfs::scan(&m, src.clone(), &sysfs::ScanOptions::default()).unwrap();
        let (g0, g1) = (layouts::hgx_gpu(0), layouts::hgx_gpu(1));
        let link = |peer| NvmlLink {
            link: 0,
            active: true,
            version: Some(4),
            remote: Remote::Pci(peer),
        };
        let gpus = vec![
            NvmlGpu {
                index: 0,
                uuid: Some("GPU-aaaa-0001".into()),
                bdf: Some(g0),
                links: vec![link(g1); 2],
                p2p: vec![],
            },
            NvmlGpu {
                index: 1,
                uuid: Some("GPU-aaaa-0002".into()),
                bdf: Some(g1),
                links: vec![link(g0); 2],
                p2p: vec![],
            },
        ];
        let mut live = scan();
        let w = nvml::apply(&mut live, &gpus);
        live.warnings.extend(w.clone());
        live.nvlink_visible = true;
        assert!(!live.nvlinks.is_empty());
        for keep in [true, false] {
            let f = facts_of(&live, true, "NVML loaded".into(), w.clone(), keep);
            let json = serde_json::to_string(&f).unwrap();
            let mut back = scan();
            let mut root = MemRoot::new("cap");
            root.insert(NVML_NAME.into(), MemNode::File(json.clone().into_bytes()));
            apply_stored_nvml(&root, &mut back).unwrap();
            assert_eq!(back.nvlinks, live.nvlinks);
            assert!(back.nvlink_visible);
            assert_eq!(json.contains("GPU-aaaa-0001"), keep);
            if keep {
                assert_eq!(
                    serde_json::to_value(&back).unwrap(),
                    serde_json::to_value(&live).unwrap()
                );
            }
        }
        // A damaged facts file is an error, not silently ignored.
        let mut root = MemRoot::new("cap");
        root.insert(NVML_NAME.into(), MemNode::File(b"{not json".to_vec()));
        assert!(apply_stored_nvml(&root, &mut scan()).is_err());
    }

    /// The NVLink fabric registration survives a capture; a facts file written before it was
    /// recorded (no `fabric` key) leaves each NVIDIA GPU unknown, "not captured".
    #[test]
    fn fabric_round_trip_and_old_captures() {
        use crate::model::Fact;
        use crate::sources::nvml_store::FABRIC_NOT_CAPTURED;
        use crate::synth::nvl72;
        let scan = || {
            let m = crate::synth::to_mem_root(
                &nvl72::tray_spec(1, 1),
                &crate::synth::WriteOptions::default(),
            )
            .unwrap();
            let src = SourceInfo {
                kind: "snapshot".into(),
                path: "tray".into(),
                limitations: vec![],
            };
            sysfs::scan(&m, src, &sysfs::ScanOptions::default()).unwrap()
        };
        let mut live = scan();
        crate::sources::nvml::fabric::apply(&mut live, &nvl72::tray_fabric(3));
        live.nvlink_visible = true;
        let f = facts_of(&live, true, "NVML loaded".into(), vec![], false);
        let json = serde_json::to_string(&f).unwrap();
        assert!(json.contains(&nvl72::rack_uuid(3).to_string()), "{json}");
        let mut root = MemRoot::new("cap");
        root.insert(NVML_NAME.into(), MemNode::File(json.clone().into_bytes()));
        let mut back = scan();
        apply_stored_nvml(&root, &mut back).unwrap();
        let fabrics = |t: &Topology| {
            t.devices
                .iter()
                .filter_map(|d| Some((d.bdf, d.nvlink_fabric.clone()?)))
                .collect::<Vec<_>>()
        };
        assert_eq!(fabrics(&back).len(), 4);
        assert_eq!(fabrics(&back), fabrics(&live));
        // The same file as an older peerpath wrote it: no `fabric` key.
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v.as_object_mut().unwrap().remove("fabric");
        let mut root = MemRoot::new("cap");
        root.insert(NVML_NAME.into(), MemNode::File(v.to_string().into_bytes()));
        let mut old = scan();
        apply_stored_nvml(&root, &mut old).unwrap();
        let got = fabrics(&old);
        assert_eq!(got.len(), 4);
        assert!(
            got.iter()
                .all(|(_, f)| *f == Fact::Unknown(FABRIC_NOT_CAPTURED.into()))
        );
    }
}
