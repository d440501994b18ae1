//! The hostile corpus: synthesized trees (a named layout written by [`super::build_entries`])
//! with attacks applied on top — links out of the root, FIFOs where files should be, loops,
//! chains deeper than any PCIe hierarchy, huge values, control characters in names — written
//! to a directory or a `.tar.gz`, and peerpath JSON documents with the attacks a document can
//! carry. `tests/hostile*.rs` run every command over each case and check that nothing outside
//! the root is read, nothing hangs or aborts, and each refusal names its file
//! (docs/bad-input.md lists what each case yields).

pub use super::writer::Node;
use super::{Spec, WriteOptions, layouts};
use crate::model::bdf::Bdf;
use std::io;
use std::path::{Path, PathBuf};

/// One attack on a synthesized tree. Paths are relative to the root (`sys/…`, `proc/…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attack {
    /// Replace whatever is at `at` by a symbolic link to `target`, verbatim (an absolute host
    /// path, a climb of `..`, a link to itself).
    Link {
        /// Where.
        at: String,
        /// Target as written in the link.
        target: String,
    },
    /// Replace whatever is at `at` by a FIFO (a named pipe nobody writes to).
    Fifo {
        /// Where.
        at: String,
    },
    /// Replace (or create) the file at `at` with `bytes`.
    File {
        /// Where.
        at: String,
        /// Content.
        bytes: Vec<u8>,
    },
    /// Remove `at` and everything under it.
    Remove {
        /// Where.
        at: String,
    },
    /// Rename `from` (and everything under it) to `to`; links pointing at it are not changed
    /// (use [`Attack::Link`] for those).
    Rename {
        /// Old path.
        from: String,
        /// New path.
        to: String,
    },
    /// Under the port `under`, a chain of `depth` PCI bridges (bus numbers from `first_bus`),
    /// each with its `sys/bus/pci/devices` link, and a GPU at the bottom.
    DeepChain {
        /// The port the chain hangs under.
        under: Bdf,
        /// Number of bridges.
        depth: u32,
        /// Bus number of the first bridge (the others count up, wrapping into new domains).
        first_bus: u32,
    },
    /// Point the `sys/bus/pci/devices` link of `bdf` at the directory of `child` (a device
    /// under it): the looping link that aliases two devices.
    LinkToChild {
        /// The device whose bus link is bent.
        bdf: Bdf,
        /// A device below it.
        child: Bdf,
    },
}

/// A named case of the corpus: a layout and the attacks on it.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name (`link-out-cmdline`).
    pub name: &'static str,
    /// What it attacks, in words.
    pub what: &'static str,
    /// Layout the tree starts from ([`layouts::by_name`]).
    pub layout: &'static str,
    /// Attacks applied in order.
    pub attacks: Vec<Attack>,
}

/// The directory of a device in a tree written from `entries`: the target of its bus link.
pub fn device_dir(entries: &[(PathBuf, Node)], bdf: Bdf) -> Option<PathBuf> {
    let link = PathBuf::from(format!("sys/bus/pci/devices/{bdf}"));
    entries.iter().find_map(|(p, e)| match e {
        Node::Link(t) if *p == link => Some(crate::sources::fsroot::join_link(&link, Path::new(t))),
        _ => None,
    })
}

fn remove_under(entries: &mut Vec<(PathBuf, Node)>, at: &Path) {
    entries.retain(|(p, _)| !p.starts_with(at));
}

fn put(entries: &mut Vec<(PathBuf, Node)>, at: &Path, e: Node) {
    remove_under(entries, at);
    // Parents are directories (a parent that was a file or link becomes a directory).
    let mut acc = PathBuf::new();
    if let Some(parent) = at.parent() {
        for c in parent.components() {
            acc.push(c);
            match entries.iter().position(|(p, _)| *p == acc) {
                Some(i) if entries[i].1 == Node::Dir => {}
                Some(i) => entries[i].1 = Node::Dir,
                None => entries.push((acc.clone(), Node::Dir)),
            }
        }
    }
    entries.push((at.to_path_buf(), e));
}

/// Applies one attack to a tree's entries (kept sorted by path).
pub fn apply(entries: &mut Vec<(PathBuf, Node)>, attack: &Attack) -> io::Result<()> {
    match attack {
        Attack::Link { at, target } => put(entries, Path::new(at), Node::Link(target.clone())),
        Attack::Fifo { at } => put(entries, Path::new(at), Node::Fifo),
        Attack::File { at, bytes } => put(entries, Path::new(at), Node::File(bytes.clone())),
        Attack::Remove { at } => remove_under(entries, Path::new(at)),
        Attack::Rename { from, to } => {
            let (from, to) = (Path::new(from), Path::new(to));
            for (p, _) in entries.iter_mut() {
                if let Ok(rest) = p.strip_prefix(from) {
                    *p = if rest.as_os_str().is_empty() {
                        to.to_path_buf()
                    } else {
                        to.join(rest)
                    };
                }
            }
        }
        Attack::DeepChain {
            under,
            depth,
            first_bus,
        } => {
            let mut dir = device_dir(entries, *under).ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no device {under}"))
            })?;
            let bridge =
                |dir: &Path, entries: &mut Vec<(PathBuf, Node)>, class: &str, vendor: &str| {
                    for (f, v) in [
                        ("class", class),
                        ("vendor", vendor),
                        ("device", "0x1234"),
                        ("numa_node", "0"),
                    ] {
                        entries.push((dir.join(f), Node::File(format!("{v}\n").into_bytes())));
                    }
                };
            for i in 0..=*depth {
                let bus = first_bus + i;
                let bdf = Bdf {
                    domain: 0x100 + bus / 256,
                    bus: (bus % 256) as u8,
                    device: 0,
                    function: 0,
                };
                dir = dir.join(bdf.to_string());
                entries.push((dir.clone(), Node::Dir));
                if i == *depth {
                    bridge(&dir, entries, "0x030200", "0x10de");
                } else {
                    bridge(&dir, entries, "0x060400", "0x10b5");
                }
                let link = PathBuf::from(format!("sys/bus/pci/devices/{bdf}"));
                let up = "../".repeat(3);
                entries.push((
                    link,
                    Node::Link(format!(
                        "{up}{}",
                        dir.strip_prefix("sys").unwrap_or(&dir).display()
                    )),
                ));
            }
        }
        Attack::LinkToChild { bdf, child } => {
            let c = device_dir(entries, *child).ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no device {child}"))
            })?;
            let target = format!("../../../{}", c.strip_prefix("sys").unwrap_or(&c).display());
            put(
                entries,
                &PathBuf::from(format!("sys/bus/pci/devices/{bdf}")),
                Node::Link(target),
            );
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.dedup_by(|a, b| a.0 == b.0);
    Ok(())
}

/// The entries of `layout` with `attacks` applied.
pub fn build(layout: &str, attacks: &[Attack]) -> io::Result<Vec<(PathBuf, Node)>> {
    let spec: Spec = layouts::by_name(layout)
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no layout {layout}")))?;
    let mut entries = super::writer::nodes(super::build_entries(&spec, &WriteOptions::default())?);
    for a in attacks {
        apply(&mut entries, a)?;
    }
    Ok(entries)
}

/// Writes entries as a directory tree under `root` (FIFOs included; links verbatim).
pub fn write_dir(entries: &[(PathBuf, Node)], root: &Path) -> io::Result<()> {
    super::writer::write_dir(entries, root)
}

/// Writes entries as a `.tar.gz` under top folder `top` (FIFOs as FIFO entries, which a
/// snapshot reader must skip), through the synthesizer's one tar writer.
pub fn write_tar_gz(
    entries: &[(PathBuf, Node)],
    top: &str,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    super::writer::write_tar_gz(entries, top, out, flate2::Compression::fast())
}

fn bdf(s: &str) -> Bdf {
    s.parse().unwrap_or(Bdf {
        domain: 0,
        bus: 0,
        device: 0,
        function: 0,
    })
}

fn link(at: &str, target: &str) -> Attack {
    Attack::Link {
        at: at.into(),
        target: target.into(),
    }
}

/// The named corpus over the `hgx-h100` layout. `OUTSIDE` in a link target stands for a
/// directory outside the root that the test fills with canary files (replace it before
/// writing; see [`with_outside`]).
pub fn corpus() -> Vec<Case> {
    let gpu = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0";
    let nic = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0";
    vec![
        Case {
            name: "link-out-cmdline",
            what: "proc/cmdline links to a host file outside the root",
            layout: "hgx-h100",
            attacks: vec![link("proc/cmdline", "OUTSIDE/environ")],
        },
        Case {
            name: "link-out-information",
            what: "the NVIDIA driver's GPU information file links to a host file",
            layout: "hgx-h100",
            attacks: vec![link(
                "proc/driver/nvidia/gpus/0000:18:00.0/information",
                "OUTSIDE/passwd",
            )],
        },
        Case {
            name: "link-out-bus",
            what: "sys/bus links to a host directory",
            layout: "hgx-h100",
            attacks: vec![link("sys/bus", "OUTSIDE/sysbus")],
        },
        Case {
            name: "climb-out-vendor",
            what: "an attribute link climbs far above the root",
            layout: "hgx-h100",
            attacks: vec![link(
                &format!("{gpu}/vendor"),
                "../../../../../../../../../../../../../../../OUTSIDE/passwd",
            )],
        },
        Case {
            name: "fifo-attribute",
            what: "a FIFO in place of an attribute, config and cpuinfo",
            layout: "hgx-h100",
            attacks: vec![
                Attack::Fifo {
                    at: format!("{gpu}/vendor"),
                },
                Attack::Fifo {
                    at: format!("{nic}/config"),
                },
                Attack::Fifo {
                    at: "proc/cpuinfo".into(),
                },
            ],
        },
        Case {
            name: "huge-cpulist",
            what: "a megabyte local_cpulist of overlapping full ranges",
            layout: "hgx-h100",
            attacks: vec![Attack::File {
                at: format!("{gpu}/local_cpulist"),
                bytes: "0-1048576,".repeat(90_000).into_bytes(),
            }],
        },
        Case {
            name: "deep-chain",
            what: "a 1,000-deep bridge chain",
            layout: "hgx-h100",
            attacks: vec![Attack::DeepChain {
                under: bdf("0000:17:01.0"),
                depth: 1000,
                first_bus: 0x80,
            }],
        },
        Case {
            name: "link-to-child",
            what: "a switch port's bus link points at its own child's directory",
            layout: "hgx-h100",
            attacks: vec![Attack::LinkToChild {
                bdf: bdf("0000:17:00.0"),
                child: bdf("0000:18:00.0"),
            }],
        },
        Case {
            name: "escape-netdev",
            what: "a network interface named with terminal escape sequences",
            layout: "hgx-h100",
            attacks: vec![
                Attack::Rename {
                    from: format!("{nic}/net/ib0"),
                    to: format!("{nic}/net/ib0\u{1b}]0;pwned\u{7}\u{1b}[2J"),
                },
                Attack::Remove {
                    at: "sys/class/net/ib0".into(),
                },
                link(
                    "sys/class/net/ib0\u{1b}]0;pwned\u{7}\u{1b}[2J",
                    &format!(
                        "../../../{}/net/ib0\u{1b}]0;pwned\u{7}\u{1b}[2J",
                        nic.trim_start_matches("sys/")
                    ),
                ),
            ],
        },
    ]
}

/// The attacks of a case with `OUTSIDE` in link targets replaced by `outside`.
pub fn with_outside(attacks: &[Attack], outside: &Path) -> Vec<Attack> {
    let o = outside.display().to_string();
    attacks
        .iter()
        .map(|a| match a {
            Attack::Link { at, target } => Attack::Link {
                at: at.clone(),
                target: target.replace("OUTSIDE", &o),
            },
            other => other.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_builds() {
        for c in corpus() {
            let e = build(c.layout, &with_outside(&c.attacks, Path::new("/nowhere")));
            assert!(e.is_ok(), "{}: {:?}", c.name, e.err());
        }
    }

    #[test]
    fn link_to_child_bends_the_bus_link() {
        let e = build(
            "hgx-h100",
            &[Attack::LinkToChild {
                bdf: bdf("0000:17:00.0"),
                child: bdf("0000:18:00.0"),
            }],
        )
        .unwrap();
        assert!(
            device_dir(&e, bdf("0000:17:00.0"))
                .unwrap()
                .ends_with("0000:17:00.0/0000:18:00.0")
        );
    }
}
