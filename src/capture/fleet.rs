//! Reading a fleet of inputs for `peerpath fleet`: directories expanded into their entries,
//! each input read on a worker thread — the fingerprint its capture manifest recorded when this
//! build's scheme made it (trusted for a group only once one capture recording it was scanned
//! and matched), else a scan of every host it holds — and the nodes added to an
//! [`analysis::fleet::Fleet`](crate::analysis::fleet::Fleet) in input order.

use crate::analysis::fleet;
use crate::capture;
use crate::model::Topology;
use crate::sources::{self, LoadOptions, fsroot};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// One host read from an input: its host name (an input of several hosts), fingerprint and
/// topology.
type ScannedHost = (Option<String>, u64, Box<Topology>);

/// Loads one input and fingerprints each of its hosts.
fn scan_node(p: &Path, opts: &LoadOptions) -> std::result::Result<Vec<ScannedHost>, String> {
    sources::load_hosts(p, opts)
        .map(|ts| {
            ts.into_iter()
                .map(|t| {
                    let host = sources::host_name(&t).map(str::to_string);
                    (host, fleet::fingerprint(&t), Box::new(t))
                })
                .collect()
        })
        .map_err(|e| format!("{e:#}"))
}

/// What a worker thread made of one input.
enum Read {
    /// The fingerprint its capture manifest recorded (this build's scheme); not scanned.
    Recorded(u64),
    /// Scanned: every host's fingerprint and topology (one for an input of one host).
    Scanned(Vec<ScannedHost>),
    /// Unreadable, and why.
    Failed(String),
    /// Not read: the same file as an earlier input ([`FleetInput::same_as`]).
    Same(usize),
}

/// What an input read once added to the fleet, for the later inputs that are the same file:
/// each host's node name suffix and fingerprint, or why it could not be read.
type Added = std::result::Result<Vec<(Option<String>, u64)>, String>;

/// The fingerprint a `peerpath capture` tarball recorded in its manifest, the archive's first
/// entry, when this build's scheme computed it; `None` for anything else (another scheme or
/// version, no manifest, not a gzip tar, a manifest over 1 MiB). Only the head of the file is
/// decompressed. The file is opened as every input is ([`fsroot::input::open_input_file`]:
/// without blocking, a FIFO, socket or device refused by type), so a named pipe in a fleet
/// directory is reported unreadable by the scan that follows instead of hanging the fleet.
fn recorded_fingerprint(p: &Path) -> Option<u64> {
    use std::io::{BufRead, Read as _};
    let f = fsroot::input::open_input_file(p, fsroot::MAX_SNAPSHOT_BYTES).ok()?;
    let mut r = std::io::BufReader::new(f);
    if !r.fill_buf().ok()?.starts_with(&[0x1f, 0x8b]) {
        return None;
    }
    let mut archive = tar::Archive::new(flate2::bufread::GzDecoder::new(r));
    let mut first = archive.entries().ok()?.next()?.ok()?;
    if first.path().ok()?.as_os_str() != capture::MANIFEST_NAME || first.size() > 1 << 20 {
        return None;
    }
    let mut text = String::new();
    first.read_to_string(&mut text).ok()?;
    let m: capture::Manifest = serde_json::from_str(&text).ok()?;
    let fp = m.fingerprint?;
    if fp.scheme != capture::fingerprint_scheme() {
        return None;
    }
    u64::from_str_radix(&fp.value, 16).ok()
}

/// Reads one input on a worker thread: the recorded fingerprint when allowed and present,
/// else a scan.
fn read_node(p: &Path, opts: &LoadOptions, recorded: bool) -> Read {
    if recorded && let Some(fp) = recorded_fingerprint(p) {
        return Read::Recorded(fp);
    }
    match scan_node(p, opts) {
        Ok(hosts) => Read::Scanned(hosts),
        Err(e) => Read::Failed(e),
    }
}

/// One input of a fleet after [`expand`]: a path to read, or an entry of a fleet directory that
/// is not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetInput {
    /// The path as given, or the directory joined with the entry's name.
    pub path: PathBuf,
    /// Why the entry is not read (a link out of the directory, a FIFO or device): reported
    /// as an unreadable input.
    pub refused: Option<String>,
    /// The index of an earlier input that is the same file (one device and inode: a hard
    /// link, or one file named twice): this one is not read again, nor charged to the memory
    /// budget twice; it joins that input's group (issue 53: 40 hard links to one file were
    /// read, and held, 40 times).
    pub same_as: Option<usize>,
}

/// Expands the inputs: directories into their entries (sorted; hidden and `.partial` names
/// skipped; links out of the directory and special files refused, see [`FleetInput`]), files
/// as given (a path named on the command line may be a link: the caller named it).
pub fn expand(inputs: &[PathBuf]) -> Result<Vec<FleetInput>> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() && !p.join("sys").is_dir() {
            let dir = std::fs::canonicalize(p)
                .with_context(|| format!("cannot resolve {}", p.display()))?;
            let mut v: Vec<FleetInput> = std::fs::read_dir(p)
                .with_context(|| format!("cannot list {}", p.display()))?
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    !n.starts_with('.') && !n.ends_with(".partial")
                })
                .map(|e| FleetInput {
                    refused: crate::sources::fsroot::input::dir_entry_refusal(&dir, &e),
                    path: e.path(),
                    same_as: None,
                })
                .collect();
            v.sort_by(|a, b| a.path.cmp(&b.path));
            out.extend(v);
        } else {
            out.push(FleetInput {
                path: p.clone(),
                refused: None,
                same_as: None,
            });
        }
    }
    mark_same_files(&mut out);
    Ok(out)
}

/// Marks each input that is the same file as an earlier one (one device and inode, links
/// inside the directory followed): [`FleetInput::same_as`].
fn mark_same_files(inputs: &mut [FleetInput]) {
    use std::os::unix::fs::MetadataExt;
    let mut first: std::collections::HashMap<(u64, u64), usize> = Default::default();
    for (i, input) in inputs.iter_mut().enumerate() {
        if input.refused.is_some() {
            continue;
        }
        let Ok(m) = std::fs::metadata(&input.path) else {
            continue;
        };
        if !m.is_file() {
            continue;
        }
        match first.entry((m.dev(), m.ino())) {
            std::collections::hash_map::Entry::Occupied(o) => input.same_as = Some(*o.get()),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
        }
    }
}

/// Reads every input into a [`fleet::Fleet`] on `jobs` worker threads, in batches of four
/// inputs per worker: each worker takes every jobs-th input of the batch, the nodes are added
/// in input order, and their topologies dropped unless one starts a group. `recorded` allows
/// fingerprints from capture manifests; `stop` is asked before each batch (a true answer ends
/// the reading, reported as interrupted); `after_batch` hears how many inputs a batch held.
/// Returns the fleet and whether it was interrupted.
pub fn read_fleet(
    files: &[FleetInput],
    opts: &LoadOptions,
    jobs: usize,
    recorded: bool,
    stop: impl Fn() -> bool,
    mut after_batch: impl FnMut(usize, &fleet::Fleet),
) -> (fleet::Fleet, bool) {
    let jobs = jobs.max(1);
    let mut f = fleet::Fleet::new();
    let mut interrupted = false;
    // Recorded fingerprints checked against their files: fingerprint → whether they matched.
    let mut checked: std::collections::HashMap<u64, bool> = std::collections::HashMap::new();
    // What each input that a later one is the same file as added (by input index).
    let firsts: std::collections::HashSet<usize> = files.iter().filter_map(|f| f.same_as).collect();
    let mut added: std::collections::HashMap<usize, Added> = std::collections::HashMap::new();
    let mut start = 0;
    // Batches of 4 inputs per worker: each worker takes every jobs-th input of the batch, the
    // nodes are added in input order, and their topologies dropped unless one starts a group.
    for batch in files.chunks(jobs * 4) {
        if stop() {
            interrupted = true;
            break;
        }
        let mut results: Vec<Option<Read>> = (0..batch.len()).map(|_| None).collect();
        std::thread::scope(|sc| {
            let handles: Vec<_> = (0..jobs.min(batch.len()))
                .map(|w| {
                    let no_names = opts;
                    sc.spawn(move || {
                        (w..batch.len())
                            .step_by(jobs)
                            .map(|i| {
                                let r = match (&batch[i].refused, batch[i].same_as) {
                                    (Some(why), _) => Read::Failed(why.clone()),
                                    (None, Some(first)) => Read::Same(first),
                                    (None, None) => read_node(&batch[i].path, no_names, recorded),
                                };
                                (i, r)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                // A panicking worker leaves its inputs as `None`: reported as unreadable below.
                if let Ok(v) = h.join() {
                    for (i, r) in v {
                        results[i] = Some(r);
                    }
                }
            }
        });
        for (k, (input, r)) in batch.iter().zip(results).enumerate() {
            let index = start + k;
            let p = &input.path;
            let name = fleet::node_name(p);
            let shown = p.display().to_string();
            let r = match r {
                // A recorded fingerprint joins its group once that group's first capture was
                // scanned and matched it; a fingerprint that did not match is never trusted.
                Some(Read::Recorded(fp)) => match checked.get(&fp) {
                    Some(true) if f.add_known(&name, fp) => {
                        if firsts.contains(&index) {
                            added.insert(index, Ok(vec![(None, fp)]));
                        }
                        continue;
                    }
                    Some(false) => Some(read_node(p, opts, false)),
                    _ => {
                        let r = read_node(p, opts, false);
                        if let Read::Scanned(hosts) = &r
                            && let [(_, got, _)] = &hosts[..]
                        {
                            checked.insert(fp, *got == fp);
                            if *got != fp {
                                f.add_note(format!(
                                    "{shown}: the fingerprint its manifest records ({fp:016x}) is not that of its files ({got:016x}); captures recording {fp:016x} are scanned"
                                ));
                            }
                        }
                        Some(r)
                    }
                },
                r => r,
            };
            let outcome = add_read(&mut f, &name, &shown, r, &added, files);
            if firsts.contains(&index) {
                added.insert(index, outcome);
            }
        }
        after_batch(batch.len(), &f);
        start += batch.len();
    }
    (f, interrupted)
}

/// Adds what one input's read gave to the fleet (every host of a multi-host input its own
/// node, named by its host hash; an input that is the same file as an earlier one joins the
/// groups that one joined); returns what was added, for later inputs that are the same file.
fn add_read(
    f: &mut fleet::Fleet,
    name: &str,
    shown: &str,
    r: Option<Read>,
    added: &std::collections::HashMap<usize, Added>,
    files: &[FleetInput],
) -> Added {
    let node = |host: &Option<String>| match host {
        Some(h) => format!("{name}:{h}"),
        None => name.to_string(),
    };
    let error = match r {
        Some(Read::Scanned(hosts)) => {
            let mut out = Vec::new();
            for (host, fp, t) in hosts {
                f.add_fingerprinted(&node(&host), fp, *t);
                out.push((host, fp));
            }
            return Ok(out);
        }
        Some(Read::Same(first)) => {
            let first_shown = files[first].path.display().to_string();
            match added.get(&first) {
                Some(Ok(hosts)) => {
                    for (host, fp) in hosts {
                        f.add_same_file(&node(host), *fp);
                    }
                    return Ok(hosts.clone());
                }
                Some(Err(e)) => format!(
                    "the same file as {first_shown} (a hard link), which could not be read: {e}"
                ),
                None => format!("the same file as {first_shown} (a hard link), which was not read"),
            }
        }
        Some(Read::Failed(e)) => e,
        Some(Read::Recorded(_)) | None => "worker thread failed".into(),
    };
    f.add_error(shown, error.clone());
    Err(error)
}
