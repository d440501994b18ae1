//! Reading the fabric's own map from a file (or, for `lldpctl`, a directory of one file per
//! host), through the one careful input opener (regular files only, bounded size): the
//! producer is detected from the content and the grammar is `parse::fabric`'s.

use crate::model::fabric::{FabricMap, Producer};
use crate::parse::fabric;
use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::Path;

/// Largest map accepted: a 1,024-node pod's `ibnetdiscover` is about 4 MiB.
pub const MAX_MAP_BYTES: u64 = 256 << 20;

fn read_text(p: &Path) -> Result<String> {
    let mut r = crate::sources::fsroot::input::open_input_file(p, MAX_MAP_BYTES)
        .with_context(|| format!("cannot open {}", p.display()))?;
    let mut b = Vec::new();
    r.read_to_end(&mut b)
        .with_context(|| format!("cannot read {}", p.display()))?;
    String::from_utf8(b).with_context(|| format!("{} is not UTF-8 text", p.display()))
}

/// Which end printed an `lldpctl` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LldpSide {
    /// A host: its interfaces and the switch ports they reach (file `<host>.json`).
    #[default]
    Host,
    /// A switch running lldpd (Cumulus Linux, SONiC): its ports and the host interfaces they
    /// reach (file `<switch>.json`).
    Switch,
}

/// The host (or switch) an `lldpctl` file speaks for: its file name without `.json`.
pub fn lldp_host(p: &Path) -> String {
    let n = p
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    n.strip_suffix(".json").unwrap_or(&n).to_string()
}

/// Reads a map: a file of any producer `parse::fabric` reads, or a directory of `lldpctl -f
/// json` files, one per host (or per switch, `side`), each named after its host or switch.
pub fn load_map(p: &Path, side: LldpSide) -> Result<FabricMap> {
    let lldp = |t: &str, f: &Path, fname: &str| match side {
        LldpSide::Host => fabric::parse_lldpctl(t, &lldp_host(f), fname),
        LldpSide::Switch => fabric::parse_lldpctl_switch(t, &lldp_host(f), fname),
    };
    let name = p.display().to_string();
    if p.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(p)
            .with_context(|| format!("cannot list {name}"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|q| {
                q.is_file()
                    && !q
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        files.sort();
        let mut maps = Vec::new();
        for f in &files {
            let t = read_text(f)?;
            let fname = f.display().to_string();
            if fabric::detect(&t) != Some(Producer::Lldpctl) {
                bail!(
                    "{fname}: a directory map holds lldpctl -f json files only, one per host or switch"
                );
            }
            maps.push(lldp(&t, f, &fname).map_err(|e| anyhow::anyhow!("{fname}: {e}"))?);
        }
        return fabric::merge(maps).with_context(|| format!("{name}: no lldpctl file in it"));
    }
    let t = read_text(p)?;
    let Some(producer) = fabric::detect(&t) else {
        if let Some(why) = fabric::ibdiagnet_other(&t) {
            bail!("{name}: {why}");
        }
        bail!(
            "{name}: not a fabric map peerpath reads (ibnetdiscover, ibnetdiscover -p, iblinkinfo, ibdiagnet2.db_csv, lldpctl -f json)"
        );
    };
    let m = if producer == Producer::Lldpctl {
        lldp(&t, p, &name)
    } else {
        fabric::parse(&t, producer, &name)
    };
    m.map_err(|e| anyhow::anyhow!("{name} ({}): {e}", producer.tool()))
}
