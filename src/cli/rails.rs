//! `peerpath rails`: the scale-up boundary and the fabric ports that leave it; with
//! `--fabric-map`, the cabling of those ports as the fabric's own map shows it.

use crate::InputArgs;
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use peerpath::analysis::cabling::{self, NodeLayout};
use peerpath::analysis::classify::{Classifier, ClassifyOptions};
use peerpath::analysis::rails;
use peerpath::model::Topology;
use peerpath::render;
use peerpath::sources::{self, LoadOptions};
use std::path::{Path, PathBuf};

/// Output formats of `rails`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum RailsFormat {
    /// Tables.
    Text,
    /// `peerpath.rails/2` JSON (`peerpath.cabling/2` with `--fabric-map`).
    Json,
}

/// Arguments of `rails`.
#[derive(Args)]
pub struct RailsArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Multiply the plant for this many identical nodes (a rack or pod).
    #[arg(long, value_name = "N", default_value_t = 1)]
    nodes: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: RailsFormat,
    /// The fabric's own map: `ibnetdiscover` (topology file or `-p`), `iblinkinfo`,
    /// `ibdiagnet2.db_csv`, or `lldpctl -f json` (a file, or a directory of one file per host
    /// named `<host>.json`). Checks that each GPU's NIC is cabled to its rail's leaf; `-i` is
    /// the node layout every host shares, or a directory of captures named `<host>.tar.gz`;
    /// with no `-i` on a machine with no GPU, judged from the map alone. Given twice (two
    /// ibdiagnet runs of one fabric, the earlier first), the port error counters that climbed
    /// between them are told apart from those standing since the last clear.
    // Not `--fabric`: that is probe's library choice (one flag name, one meaning).
    #[arg(long, value_name = "FILE|DIR")]
    fabric_map: Vec<PathBuf>,
    /// Which end printed the `lldpctl -f json` files of `--fabric-map`: `host` (each file a host's
    /// interfaces, named `<host>.json`) or `switch` (each a switch's ports, as Cumulus Linux and
    /// SONiC run lldpd, named `<switch>.json`).
    #[arg(long, value_enum, value_name = "SIDE", default_value = "host")]
    lldp_from: LldpFrom,
}

/// Which end printed the `lldpctl` files.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LldpFrom {
    /// The hosts.
    Host,
    /// The switches.
    Switch,
}

/// Runs `rails`; exit code 1 when the node is not rail-optimised, or with `--fabric-map` when the
/// cabling has an error.
pub fn run(a: RailsArgs) -> Result<u8> {
    match a.fabric_map.as_slice() {
        [] => {}
        [map] => return run_fabric(&a, map, None),
        [before, after] => return run_fabric(&a, after, Some(before)),
        _ => {
            bail!("--fabric-map is given once, or twice (an earlier and a later map of one fabric)")
        }
    }
    let topo = crate::load(&a.input)?;
    let r = rails::build_from(
        &Classifier::new(&topo, &ClassifyOptions::default()),
        a.nodes,
    );
    match a.format {
        RailsFormat::Text => super::print_text(&render::rails::render_text(&r)),
        RailsFormat::Json => {
            super::print_document(&(serde_json::to_string_pretty(&r)? + "\n"), true)
        }
    }
    Ok(if r.rail_optimised { 0 } else { 1 })
}

/// The host a capture file speaks for: its file name without the archive extension.
fn host_of(p: &Path) -> String {
    let n = p
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    for ext in [".tar.gz", ".tgz", ".tar.bz2", ".tar", ".xml", ".json"] {
        if let Some(h) = n.strip_suffix(ext) {
            return h.to_string();
        }
    }
    n
}

pub(crate) fn layout_of(t: &Topology, host: Option<String>, source: String) -> NodeLayout {
    let r = rails::build_from(&Classifier::new(t, &ClassifyOptions::default()), 1);
    NodeLayout::from_rails(t, &r, host, source)
}

/// One node input of `-i`: its host (`None`: one input standing for every host), where it was
/// read from, and what it holds.
pub(crate) type Capture = (Option<String>, String, Topology);

/// The inputs of `-i`: one standing for every host (a single input), or one per capture of a
/// directory, named by the host it records (else its file name).
pub(crate) fn captures(i: &InputArgs) -> Result<Vec<Capture>> {
    match i.input.as_deref() {
        Some(d) if d.is_dir() && !d.join("sys").is_dir() => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(d)
                .with_context(|| format!("cannot list {}", d.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|q| {
                    !q.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect();
            files.sort();
            let opts = LoadOptions {
                pci_ids: i.pci_ids.clone(),
                skip_names: true,
                ..Default::default()
            };
            let mut out = Vec::new();
            for f in files {
                let t = sources::load(Some(&f), &opts)
                    .with_context(|| format!("cannot read the node layout {}", f.display()))?;
                let host = sources::host_name(&t)
                    .map(str::to_string)
                    .unwrap_or_else(|| host_of(&f));
                out.push((Some(host), f.display().to_string(), t));
            }
            if out.is_empty() {
                bail!("{}: no capture in it", d.display());
            }
            Ok(out)
        }
        _ => {
            let t = crate::load(i)?;
            let src = t.source.path.clone();
            Ok(vec![(None, src, t)])
        }
    }
}

/// The node layouts: one for every host (a single input), or one per capture of a directory.
fn layouts(i: &InputArgs) -> Result<Vec<NodeLayout>> {
    Ok(captures(i)?
        .into_iter()
        .map(|(h, src, t)| layout_of(&t, h, src))
        .collect())
}

fn run_fabric(a: &RailsArgs, map_path: &Path, before: Option<&PathBuf>) -> Result<u8> {
    let side = match a.lldp_from {
        LldpFrom::Host => sources::fabric::LldpSide::Host,
        LldpFrom::Switch => sources::fabric::LldpSide::Switch,
    };
    let mut map = sources::fabric::load_map(map_path, side)?;
    let mut note = None;
    if let Some(b) = before {
        let old = sources::fabric::load_map(b, side)?;
        let rises = cabling::counters::between(&old, &map);
        note = Some(format!(
            "port counters compared with {} (the earlier map): {} port(s) climbed between the two",
            b.display(),
            rises.len()
        ));
        map.counters.extend(rises);
    }
    let (layouts, alone) = fabric_layouts(&a.input)?;
    let mut c = cabling::judge(&map, &layouts);
    c.limitations.splice(0..0, alone.into_iter().chain(note));
    match a.format {
        RailsFormat::Text => super::print_text(&render::cabling::render_text(
            &c,
            &map_path.display().to_string(),
        )),
        RailsFormat::Json => {
            super::print_document(&(serde_json::to_string_pretty(&c)? + "\n"), true)
        }
    }
    if c.hosts == 0 && c.findings.is_empty() {
        super::say(&format!(
            "peerpath: no GPU node in {} (no adapter described `<host> <adapter>` by a host that is not a fabric manager): nothing judged",
            map_path.display()
        ));
        return Ok(2);
    }
    Ok(if c.ok { 0 } else { 1 })
}

/// The node layouts the map is judged against; none (judged from the map alone, with the
/// reason) where `-i` or this machine shows no GPU on a rail. `-i` that cannot be read is an
/// error; this machine that cannot be read is the map alone.
pub(crate) fn fabric_layouts(i: &InputArgs) -> Result<(Vec<NodeLayout>, Option<String>)> {
    let given = i.input.is_some();
    let ls = match layouts(i) {
        Ok(ls) => ls,
        Err(e) if !given => {
            return Ok((
                Vec::new(),
                Some(format!(
                    "judged from the map alone: this machine's node layout could not be read ({e:#}); give -i for one"
                )),
            ));
        }
        Err(e) => return Err(e),
    };
    let whose = if given {
        "the node layout of -i"
    } else {
        "this machine"
    };
    Ok(railed(ls, whose))
}

/// The layouts, or none (judged from the map alone, with the reason) where `whose` layouts
/// show no GPU on a rail.
pub(crate) fn railed(ls: Vec<NodeLayout>, whose: &str) -> (Vec<NodeLayout>, Option<String>) {
    if ls
        .iter()
        .all(|l| l.adapters.iter().all(|x| x.rail.is_none()))
    {
        return (
            Vec::new(),
            Some(format!(
                "judged from the map alone: {whose} has no GPU on a rail (see peerpath rails -i)"
            )),
        );
    }
    (ls, None)
}
