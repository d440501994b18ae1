//! Reading the fabric's own map from a file (or, for `lldpctl`, a directory of one file per
//! host), through the one careful input opener (regular files only, bounded size): the
//! producer is detected from the content and the grammar is `parse::fabric`'s.

use crate::model::fabric::{FabricMap, Producer};
use crate::parse::fabric;
use crate::sources::fsroot::input::dir_entry_refusal;
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

/// The `lldpctl` files of a map directory (hidden names skipped), by the rule fleet
/// directories follow ([`dir_entry_refusal`]): a link out of it, a FIFO, socket or device, or
/// a folder in it refuses the map, named (a map read without one of its files would call that
/// host's cables absent); nothing is opened here.
fn lldp_dir_files(p: &Path) -> Result<Vec<std::path::PathBuf>> {
    let name = p.display();
    let dir = std::fs::canonicalize(p).with_context(|| format!("cannot resolve {name}"))?;
    let mut files = Vec::new();
    for e in std::fs::read_dir(p).with_context(|| format!("cannot list {name}"))? {
        let e = e.with_context(|| format!("cannot list {name}"))?;
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let q = e.path();
        if let Some(why) = dir_entry_refusal(&dir, &e) {
            bail!(
                "{}: {why}; a directory map is read whole, never without one of its files",
                q.display()
            );
        }
        if q.is_dir() {
            bail!(
                "{}: a folder; a directory map holds lldpctl -f json files at its top only",
                q.display()
            );
        }
        files.push(q);
    }
    Ok(files)
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
        let mut files = lldp_dir_files(p)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// lldpd's own test output (`fixtures/fabric/published/lldpctl-json-lldpd-tests.json`).
    const LLDP: &str =
        include_str!("../../fixtures/fabric/published/lldpctl-json-lldpd-tests.json");

    fn map_dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("maps")).unwrap();
        std::fs::write(d.path().join("maps/h1.json"), LLDP).unwrap();
        d
    }

    /// Issue 53: a link out of an lldpctl map directory was followed (fleet and `-i DIR`
    /// refuse it); it refuses the map, named.
    #[test]
    fn lldp_directory_link_out_is_refused() {
        let d = map_dir();
        let maps = d.path().join("maps");
        assert!(load_map(&maps, LldpSide::Host).is_ok());
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("h2.json"), LLDP).unwrap();
        std::os::unix::fs::symlink(outside.path().join("h2.json"), maps.join("h2.json")).unwrap();
        let e = format!("{:#}", load_map(&maps, LldpSide::Host).unwrap_err());
        assert!(e.contains("h2.json") && e.contains("a link out of"), "{e}");
        // A link to a file inside the directory is read.
        std::fs::remove_file(maps.join("h2.json")).unwrap();
        std::os::unix::fs::symlink(maps.join("h1.json"), maps.join("h3.json")).unwrap();
        assert!(load_map(&maps, LldpSide::Host).is_ok());
    }

    /// Issue 53: a FIFO in an lldpctl map directory was left out without a word; it is named
    /// (never opened: opening it would wait for a writer).
    #[test]
    fn lldp_directory_fifo_is_named_never_opened() {
        let d = map_dir();
        let maps = d.path().join("maps");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            maps.join("h2.json"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = format!("{:#}", load_map(&maps, LldpSide::Host).unwrap_err());
        assert!(e.contains("h2.json") && e.contains("FIFO"), "{e}");
    }
}
