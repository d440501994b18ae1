//! The storage probe (`peerpath probe-storage`, docs/probe.md "Storage probe"): writes a file
//! of a known pattern on each chosen drive (or `--dir`), reads it into each GPU with cuFile
//! (`cuFileRead`) and with `pread` into pinned host memory plus `cuMemcpyHtoD`, verifies every
//! byte in GPU memory after each pass, and tells which path cuFile took.
//!
//! How the path is told: a first cuFile session with compat mode disallowed
//! (`cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, false)`, GDS ≥ 1.14)
//! reads 1 MiB of each file into each GPU: where that read succeeds the direct path works
//! (nvidia-fs when `cuFileDriverGetProperties` reports an nvidia-fs version, else PCI P2PDMA);
//! where the driver will not open or the registration or read fails (`CU_FILE_IO_NOT_SUPPORTED`,
//! as NVIDIA/gds-nvidia-fs#70 shows for a drive across root complexes), cuFile can only use
//! compat mode. The measured session then runs with the node's own configuration; when that
//! forces compat mode (`CUFILE_PARAM_FORCE_COMPAT_MODE`) every read is compat.

use super::Unavailable;
use super::cuda::{self, Cuda};
use super::cufile::{self, CuFile};
use super::host::HostBuffer;
use super::memory::{Buffer, pattern_fill, verify};
use crate::analysis::classify::{Classifier, ClassifyOptions};
use crate::analysis::probe_report::storage::{
    CufileDriver, CufilePath, ReadResult, STORAGE_PROBE_SCHEMA, StorageCell, StorageProbeReport,
    StorageTarget,
};
use crate::analysis::storage::{assign_drives, is_system_mount};
use crate::model::storage::Mount;
use crate::model::{Bdf, Topology};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of a storage probe.
#[derive(Debug, Clone)]
pub struct StorageOptions {
    /// Directories to probe (`--dir`); empty: each GPU's nearest data drive's data mount.
    pub dirs: Vec<PathBuf>,
    /// Bytes of each probe file.
    pub size: usize,
    /// Timed passes per cell and method.
    pub passes: u32,
    /// A libcufile path to try first (`--cufile`).
    pub cufile: Option<PathBuf>,
}

/// A directory to probe and what the scan says holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSpec {
    /// The directory the probe file is created in.
    pub dir: PathBuf,
    /// The mount holding it, when the mount table knows.
    pub mount: Option<Mount>,
}

/// The mount holding `dir`: the longest mount point that is a prefix of it (by components).
pub fn mount_of<'t>(topo: &'t Topology, dir: &Path) -> Option<&'t Mount> {
    topo.machine
        .storage
        .mounts
        .known()?
        .mounts
        .iter()
        .filter(|m| dir.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.len())
}

/// The directories to probe: each `--dir` with its mount, or else the first data mount of each
/// GPU's nearest data drive (each mount once). `Err` says why there is nothing to probe.
pub fn choose_targets(topo: &Topology, dirs: &[PathBuf]) -> Result<Vec<TargetSpec>, String> {
    if !dirs.is_empty() {
        return Ok(dirs
            .iter()
            .map(|d| {
                let abs = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
                TargetSpec {
                    mount: mount_of(topo, &abs).cloned(),
                    dir: abs,
                }
            })
            .collect());
    }
    let nvme = topo.of_kind(crate::model::DeviceKind::Nvme).count();
    if nvme == 0 {
        return Err("this machine has no NVMe drive; give --dir DIR to probe the file system holding DIR (cuFile then runs in compat mode unless it is a GDS file system)".into());
    }
    let Some(table) = topo.machine.storage.mounts.known() else {
        return Err(
            "the mount table is unknown, so no drive's file system can be chosen; give --dir DIR"
                .into(),
        );
    };
    let cl = Classifier::new(topo, &ClassifyOptions::default());
    let gpus: Vec<Bdf> = topo
        .of_kind(crate::model::DeviceKind::Gpu)
        .map(|d| d.bdf)
        .collect();
    let mut out: Vec<TargetSpec> = Vec::new();
    for c in assign_drives(&cl, &gpus).into_iter().flatten() {
        let Some(m) = table
            .mounts
            .iter()
            .find(|m| m.drives.contains(&c.drive) && !is_system_mount(&m.mount_point))
        else {
            continue;
        };
        if !out.iter().any(|t| t.dir == Path::new(&m.mount_point)) {
            out.push(TargetSpec {
                dir: PathBuf::from(&m.mount_point),
                mount: Some(m.clone()),
            });
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{nvme} NVMe drive(s) but none holds a mounted data file system (only / and /boot, or nothing); give --dir DIR"
        ));
    }
    Ok(out)
}

/// A probe file, removed on drop.
struct ProbeFile {
    path: PathBuf,
    seed: u64,
    o_direct: bool,
}

impl Drop for ProbeFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn create_file(dir: &Path, k: usize, size: usize) -> Result<ProbeFile, String> {
    let path = dir.join(format!(
        ".peerpath-probe-storage-{}-{k}",
        std::process::id()
    ));
    let seed = 0x5354_4f52_0000 + k as u64;
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut pf = ProbeFile {
        path: path.clone(),
        seed,
        o_direct: false,
    };
    let mut chunk = vec![0u8; (8 << 20).min(size)];
    let mut off = 0;
    while off < size {
        let n = chunk.len().min(size - off);
        pattern_fill(seed, off, &mut chunk[..n]);
        f.write_all(&chunk[..n])
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        off += n;
    }
    f.sync_all()
        .map_err(|e| format!("fsync {}: {e}", path.display()))?;
    pf.o_direct = open_read(&path, true).is_ok();
    Ok(pf)
}

fn open_read(path: &Path, direct: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

fn gbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs / 1e9
    } else {
        0.0
    }
}

/// Zeroes a device buffer (outside the timed region), so a read that moved nothing cannot
/// verify.
fn clear(buf: &mut dyn Buffer) -> Result<(), String> {
    let z = vec![0u8; (8 << 20).min(buf.len())];
    let mut off = 0;
    while off < buf.len() {
        let n = z.len().min(buf.len() - off);
        buf.write_at(off, &z[..n])?;
        off += n;
    }
    Ok(())
}

/// `cuFileRead` of the whole file into `buf`, looping over short reads.
fn cufile_read(h: &cufile::FileHandle, buf: &dyn Buffer, size: usize) -> Result<(), String> {
    let mut done = 0;
    while done < size {
        // SAFETY: buf is live device memory of the current context, `size` bytes long; the
        // read stays inside it (offset done, length size - done).
        let n = unsafe { h.read(buf.addr() + done as u64, size - done, done as i64) }?;
        if n == 0 {
            return Err(format!("cuFileRead returned 0 at byte {done} of {size}"));
        }
        done += n;
    }
    Ok(())
}

/// `pread` into pinned host memory in pieces, each copied to the device buffer.
fn posix_read(
    f: &File,
    host: &mut HostBuffer,
    buf: &mut dyn Buffer,
    size: usize,
) -> Result<(), String> {
    let fd = f.as_raw_fd();
    let mut done = 0;
    while done < size {
        let want = host.len().min(size - done);
        // SAFETY: the host buffer holds at least `want` bytes; fd is open for reading.
        let n = unsafe {
            libc::pread(
                fd,
                host.as_mut_ptr() as *mut libc::c_void,
                want,
                done as libc::off_t,
            )
        };
        if n <= 0 {
            return Err(format!(
                "pread at byte {done}: {}",
                if n == 0 {
                    "end of file".to_string()
                } else {
                    std::io::Error::last_os_error().to_string()
                }
            ));
        }
        let n = n as usize;
        // SAFETY: the first n bytes of the host buffer were just written by pread.
        let src = unsafe { std::slice::from_raw_parts(host.as_mut_ptr(), n) };
        buf.write_at(done, src)?;
        done += n;
    }
    Ok(())
}

/// Times `passes` reads by `read`, verifying the buffer after each.
fn timed(
    passes: u32,
    size: usize,
    seed: u64,
    buf: &mut dyn Buffer,
    mut read: impl FnMut(&mut dyn Buffer) -> Result<(), String>,
) -> Result<ReadResult, String> {
    let mut secs = 0.0;
    for pass in 0..passes {
        clear(buf)?;
        let t = Instant::now();
        read(buf)?;
        secs += t.elapsed().as_secs_f64();
        if let Some(at) = verify(buf, 0, size, seed, 0)? {
            return Err(format!(
                "pass {}: GPU memory differs from the file at byte {at}",
                pass + 1
            ));
        }
    }
    Ok(ReadResult {
        bytes: size as u64,
        passes,
        gbytes_per_s: gbps(size as u64 * u64::from(passes), secs),
        verified: true,
    })
}

/// The direct path cuFile reports: nvidia-fs when it names an nvidia-fs version, else P2PDMA.
fn direct_kind(p: &cufile::DrvProps) -> CufilePath {
    if p.nvfs.major_version > 0 {
        CufilePath::NvidiaFs
    } else {
        CufilePath::P2pdma
    }
}

/// The strict session: which (GPU, file) pairs the direct path serves. Returns the driver's
/// `strict_open` text and one `(path, evidence)` per GPU × file, GPU-major.
fn strict(cf: &CuFile, cuda: &Cuda, files: &[ProbeFile]) -> (String, Vec<(CufilePath, String)>) {
    let n = cuda.count() * files.len();
    if let Err(e) = cf.set_bool(cufile::PARAM_ALLOW_COMPAT_MODE, false) {
        return (
            format!("not tried: {e}"),
            vec![
                (
                    CufilePath::Unknown,
                    format!("cannot disallow compat mode to test the direct path ({e})")
                );
                n
            ],
        );
    }
    if let Err(e) = cf.open() {
        return (
            e.clone(),
            vec![
                (
                    CufilePath::Compat,
                    format!("with compat mode disallowed, {e}: no direct path")
                );
                n
            ],
        );
    }
    let props = cf.properties().ok();
    let mut out = Vec::with_capacity(n);
    for g in 0..cuda.count() {
        for f in files {
            let r = (|| {
                let buf = cuda.alloc(g, 1 << 20)?;
                let file = open_read(&f.path, f.o_direct).map_err(|e| format!("open: {e}"))?;
                let h = cf.register(file.as_raw_fd())?;
                cufile_read(
                    &h,
                    &buf,
                    (1 << 20).min(file.metadata().map(|m| m.len() as usize).unwrap_or(0)),
                )
            })();
            out.push(match (r, &props) {
                (Ok(()), Some(p)) => (
                    direct_kind(p),
                    format!(
                        "a 1 MiB cuFileRead with compat mode disallowed succeeded (nvidia-fs {}.{})",
                        p.nvfs.major_version, p.nvfs.minor_version
                    ),
                ),
                (Ok(()), None) => (CufilePath::Unknown, "a read with compat mode disallowed succeeded, but the driver properties were not readable".into()),
                (Err(e), _) => (CufilePath::Compat, format!("with compat mode disallowed: {e}")),
            });
        }
    }
    let _ = cf.close();
    ("ok".into(), out)
}

/// Runs the probe. `Err` when it cannot run at all (no drive to probe, no CUDA, no libcufile).
pub fn run(topo: &Topology, opts: &StorageOptions) -> Result<StorageProbeReport, Unavailable> {
    let specs = choose_targets(topo, &opts.dirs).map_err(|e| Unavailable::device(&e))?;
    let cuda = match cuda::open()? {
        Ok(c) if c.count() > 0 => c,
        Ok(_) => return Err(Unavailable::device("the CUDA driver sees no GPU")),
        Err(e) => {
            return Err(Unavailable::device(&format!(
                "the CUDA driver did not initialise: {e}"
            )));
        }
    };
    let cf = CuFile::load(opts.cufile.as_deref())?;
    let mut notes = Vec::new();
    let mut files = Vec::new();
    let mut targets = Vec::new();
    for (k, s) in specs.iter().enumerate() {
        match create_file(&s.dir, k, opts.size) {
            Ok(f) => {
                targets.push(StorageTarget {
                    file: f.path.display().to_string(),
                    mount_point: s.mount.as_ref().map(|m| m.mount_point.clone()),
                    fs_type: s.mount.as_ref().map(|m| m.fs_type.clone()),
                    drives: s
                        .mount
                        .as_ref()
                        .map(|m| m.drives.clone())
                        .unwrap_or_default(),
                    o_direct: f.o_direct,
                });
                if !f.o_direct {
                    notes.push(format!(
                        "{}: O_DIRECT refused, reads are buffered (the page cache may serve them)",
                        f.path.display()
                    ));
                }
                files.push(f);
            }
            Err(e) => notes.push(format!("{}: skipped: {e}", s.dir.display())),
        }
    }
    if files.is_empty() {
        return Err(Unavailable::device(&format!(
            "no probe file could be created: {}",
            notes.join("; ")
        )));
    }
    // The measured session first, with the node's own configuration; then the strict one
    // (compat mode disallowed), which tells the path. In this order no parameter the strict
    // session stages can leak into the measurement.
    let mut driver = CufileDriver {
        library: cf.path.clone(),
        version: cf.version(),
        ..Default::default()
    };
    let opened = cf.open();
    if let Ok(p) = cf.properties() {
        driver.nvfs_version = Some(format!("{}.{}", p.nvfs.major_version, p.nvfs.minor_version));
        driver.nvme_supported = Some(p.nvfs.dstatusflags & (1 << cufile::NVME_SUPPORTED) != 0);
        driver.nvme_p2pdma_supported =
            Some(p.nvfs.dstatusflags & (1 << cufile::NVME_P2P_SUPPORTED) != 0);
        driver.compat_allowed = Some(p.nvfs.dcontrolflags & (1 << cufile::ALLOW_COMPAT_MODE) != 0);
        driver.max_direct_io_size_kb = Some(p.nvfs.max_direct_io_size as u64);
    }
    driver.compat_forced = cf.get_bool(cufile::PARAM_FORCE_COMPAT_MODE);
    driver.use_pci_p2pdma = cf.get_bool(cufile::PARAM_USE_PCIP2PDMA);
    let cl = Classifier::new(topo, &ClassifyOptions::default());
    let mut cells = Vec::new();
    for g in 0..cuda.count() {
        let bus = cuda.pci_bus_id(g).ok();
        let gpu_bdf: Option<Bdf> = bus.as_deref().and_then(|b| {
            b.parse()
                .ok()
                .or_else(|| b.get(b.len().saturating_sub(12)..)?.parse().ok())
        });
        for (k, f) in files.iter().enumerate() {
            let label = gpu_bdf.and_then(|gb| {
                targets[k]
                    .drives
                    .iter()
                    .filter_map(|d| cl.label_of(&gb, d).map(|(l, _)| l))
                    .max_by_key(|l| l.rank())
                    .map(|l| l.to_string())
            });
            let mut cell = StorageCell {
                gpu: g,
                gpu_pci_bus_id: bus.clone(),
                target: k,
                label,
                path: CufilePath::Unknown,
                path_evidence: String::new(),
                cufile: None,
                posix: None,
                errors: Vec::new(),
            };
            measure(&cf, &cuda, g, f, opts, opened.as_ref().err(), &mut cell);
            cells.push(cell);
        }
    }
    if opened.is_ok() {
        let _ = cf.close();
    }
    let (strict_open, paths) = strict(&cf, &cuda, &files);
    driver.strict_open = strict_open;
    for (cell, (path, evidence)) in cells.iter_mut().zip(paths) {
        (cell.path, cell.path_evidence) = if driver.compat_forced == Some(true) {
            (
                CufilePath::Compat,
                format!("force_compat_mode is set ({evidence})"),
            )
        } else {
            (path, evidence)
        };
    }
    drop(files);
    Ok(StorageProbeReport {
        schema: STORAGE_PROBE_SCHEMA.to_string(),
        driver,
        targets,
        cells,
        notes,
    })
}

/// One cell's two timed reads.
fn measure(
    cf: &CuFile,
    cuda: &Cuda,
    g: usize,
    f: &ProbeFile,
    opts: &StorageOptions,
    open_error: Option<&String>,
    cell: &mut StorageCell,
) {
    let size = opts.size;
    let mut buf = match cuda.alloc(g, size) {
        Ok(b) => b,
        Err(e) => {
            cell.errors.push(e);
            return;
        }
    };
    let file = match open_read(&f.path, f.o_direct) {
        Ok(x) => x,
        Err(e) => {
            cell.errors.push(format!("open {}: {e}", f.path.display()));
            return;
        }
    };
    match open_error {
        Some(e) => cell.errors.push(format!("cuFile: {e}")),
        None => {
            // SAFETY: buf is a live cuMemAlloc allocation of `size` bytes, dropped after the
            // registration guard (declared later, dropped first).
            let reg = unsafe { cf.register_buffer(buf.addr(), size) };
            if let Err(e) = &reg {
                cell.errors.push(format!("{e} (reading unregistered)"));
            }
            match cf.register(file.as_raw_fd()) {
                Ok(h) => match timed(opts.passes, size, f.seed, &mut buf, |b| {
                    cufile_read(&h, b, size)
                }) {
                    Ok(r) => cell.cufile = Some(r),
                    Err(e) => cell.errors.push(e),
                },
                Err(e) => cell.errors.push(e),
            }
            drop(reg);
        }
    }
    match HostBuffer::new((64 << 20).min(size)) {
        Ok(mut host) => {
            match timed(opts.passes, size, f.seed, &mut buf, |b| {
                posix_read(&file, &mut host, b, size)
            }) {
                Ok(r) => cell.posix = Some(r),
                Err(e) => cell.errors.push(e),
            }
        }
        Err(e) => cell.errors.push(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Fact;
    use crate::model::storage::MountTable;

    fn topo_with(mounts: Vec<Mount>) -> Topology {
        let mut t = crate::analysis::testkit::TopoBuilder::new(&["0-3"]);
        t.bridge("0000:00:01.0", None, Some(0));
        t.gpu("0000:01:00.0", Some("0000:00:01.0"), Some(0));
        t.bridge("0000:00:02.0", None, Some(0));
        t.nvme("0000:02:00.0", Some("0000:00:02.0"), Some(0));
        let mut topo = t.build();
        topo.machine.storage.read = true;
        topo.machine.storage.mounts = Fact::Known(MountTable {
            path: "/proc/self/mountinfo".into(),
            mounts,
        });
        topo
    }

    fn mount(mp: &str, drive: Option<&str>) -> Mount {
        Mount {
            mount_point: mp.into(),
            fs_type: "xfs".into(),
            drives: drive.map(|d| d.parse().unwrap()).into_iter().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn targets_from_drives_and_dirs() {
        let t = topo_with(vec![
            mount("/", Some("0000:02:00.0")),
            mount("/data", Some("0000:02:00.0")),
        ]);
        let c = choose_targets(&t, &[]).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].dir, Path::new("/data"));
        // Only the OS on the drive: nothing to probe, said plainly.
        let t = topo_with(vec![mount("/", Some("0000:02:00.0"))]);
        let e = choose_targets(&t, &[]).unwrap_err();
        assert!(e.contains("none holds a mounted data file system"), "{e}");
        // --dir maps to the longest mount point above it.
        let t = topo_with(vec![mount("/", None), mount("/data", Some("0000:02:00.0"))]);
        let c = choose_targets(&t, &[PathBuf::from("/data/sub/dir")]).unwrap();
        assert_eq!(c[0].mount.as_ref().unwrap().mount_point, "/data");
    }

    #[test]
    fn no_nvme_says_so() {
        let mut t = crate::analysis::testkit::TopoBuilder::new(&["0-3"]);
        t.gpu("0000:01:00.0", None, Some(0));
        let e = choose_targets(&t.build(), &[]).unwrap_err();
        assert!(e.starts_with("this machine has no NVMe drive"), "{e}");
    }

    #[test]
    fn probe_file_is_the_pattern_and_goes_away() {
        let dir = tempfile::tempdir().unwrap();
        let path;
        {
            let f = create_file(dir.path(), 3, 3 << 20).unwrap();
            path = f.path.clone();
            let bytes = std::fs::read(&f.path).unwrap();
            assert_eq!(bytes.len(), 3 << 20);
            assert_eq!(
                crate::probe::memory::pattern_mismatch(f.seed, 0, &bytes),
                None
            );
        }
        assert!(!path.exists());
    }
}
