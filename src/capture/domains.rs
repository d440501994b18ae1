//! The NVLink domain of every host of a set of inputs — captures, or directories of them, as
//! `peerpath fleet` takes them ([`super::fleet::expand`]) — for the scheduler exports (Slurm
//! `topology/block`, Kubernetes `accelerator.topograph.run/domain`): each input is scanned
//! (a recorded fingerprint does not carry the fabric), each host named as `fleet` names it
//! (the file name without its extension, or the host name of an input holding several), and
//! the map is [`crate::analysis::nvdomain::domains`]'s.

use crate::analysis::fleet::node_name;
use crate::analysis::nvdomain::{self, DomainMap};
use crate::model::Topology;
use crate::sources::{self, LoadOptions};
use anyhow::Result;
use std::path::PathBuf;

/// What [`read_domains`] read.
#[derive(Debug, Clone, Default)]
pub struct Domains {
    /// Each host read and its NVLink domain, in input order.
    pub map: DomainMap,
    /// Inputs that could not be read (refused entries of a directory, unreadable files), with
    /// why, in input order; never silently dropped.
    pub unreadable: Vec<(String, String)>,
}

/// One input's hosts as (name, topology), or why it could not be read.
type Read = std::result::Result<Vec<(String, Topology)>, String>;

/// Reads one input: every host it holds, named.
fn read_one(p: &std::path::Path, opts: &LoadOptions) -> Read {
    let ts = sources::load_hosts(p, opts).map_err(|e| format!("{e:#}"))?;
    Ok(ts
        .into_iter()
        .map(|t| {
            let name = sources::host_name(&t)
                .map(str::to_string)
                .unwrap_or_else(|| node_name(p));
            (name, t)
        })
        .collect())
}

/// Reads every input (directories expanded as `fleet` expands them) on up to `jobs` threads
/// and maps each host to its NVLink domain; hosts keep the inputs' order.
pub fn read_domains(inputs: &[PathBuf], opts: &LoadOptions, jobs: usize) -> Result<Domains> {
    let files = super::fleet::expand(inputs)?;
    let jobs = jobs.clamp(1, files.len().max(1));
    let mut reads: Vec<Option<Read>> = vec![None; files.len()];
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs)
            .map(|w| {
                let files = &files;
                s.spawn(move || {
                    (w..files.len())
                        .step_by(jobs)
                        .map(|i| {
                            let f = &files[i];
                            let r = match &f.refused {
                                Some(why) => Err(why.clone()),
                                None => read_one(&f.path, opts),
                            };
                            (i, r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for w in workers {
            // A worker that panicked leaves its inputs unread; they are reported below.
            if let Ok(done) = w.join() {
                for (i, r) in done {
                    reads[i] = Some(r);
                }
            }
        }
    });
    let mut hosts: Vec<(String, Topology)> = Vec::new();
    let mut unreadable = Vec::new();
    for (f, r) in files.iter().zip(reads) {
        match r {
            Some(Ok(hs)) => hosts.extend(hs),
            Some(Err(why)) => unreadable.push((f.path.display().to_string(), why)),
            None => unreadable.push((
                f.path.display().to_string(),
                "the reading thread stopped (a panic) before this input".to_string(),
            )),
        }
    }
    Ok(Domains {
        map: nvdomain::domains(hosts.iter().map(|(h, t)| (h.as_str(), t))),
        unreadable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of two synthesized racks (36 tray captures) and one file that is no
    /// capture: two domains of 18 trays named by file, the stray file named unreadable.
    #[test]
    fn a_directory_of_captures_maps_to_racks() {
        let dir = tempfile::tempdir().unwrap();
        crate::synth::nvl72::write_fleet(dir.path(), 2).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a capture\n").unwrap();
        let d = read_domains(&[dir.path().to_path_buf()], &LoadOptions::default(), 4).unwrap();
        let blocks = d.map.blocks();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].1.len(), 18);
        assert_eq!(blocks[0].1[0], "nvl72-r01-t01");
        assert_eq!(blocks[1].1[17], "nvl72-r02-t18");
        assert_eq!(d.unreadable.len(), 1, "{:?}", d.unreadable);
        assert!(d.unreadable[0].0.ends_with("notes.txt"));
    }
}
