//! What a job can see from where it runs, for `audit --job` without `-i`
//! ([`crate::analysis::audit::job::LiveFacts`]): `/dev/infiniband/uverbs*`, whether libibverbs
//! loads (`dlopen`, the library NCCL's IB transport opens), `RLIMIT_MEMLOCK`, the size of
//! `/dev/shm` (`statvfs`), `Cpus_allowed_list` of `/proc/self/status` (cgroup cpuset and
//! affinity), `/sys/class/net`, and the GIDs of Ethernet RDMA ports
//! (`/sys/class/infiniband/<dev>/ports/<p>/gids/<i>`, `gid_attrs/types/<i>`). Reads the live
//! machine only; every value that cannot be read is [`Fact::Unknown`] with the reason.

use crate::analysis::audit::job::LiveFacts;
use crate::model::Fact;
use std::path::Path;

/// Reads every live fact.
pub fn read() -> LiveFacts {
    LiveFacts {
        uverbs: uverbs(Path::new("/dev/infiniband")),
        ibverbs: Fact::Known(ibverbs_loads()),
        memlock: memlock(),
        shm_bytes: fs_size("/dev/shm"),
        cpus_allowed: cpus_allowed(Path::new("/proc/self/status")),
        netdevs: names(Path::new("/sys/class/net")),
        roce_gids: roce_gids(Path::new("/sys/class/infiniband")),
    }
}

/// Sorted entry names of a directory.
fn names(dir: &Path) -> Fact<Vec<String>> {
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            let mut v: Vec<String> = rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            Fact::Known(v)
        }
        Err(e) => Fact::Unknown(format!("{}: {e}", dir.display())),
    }
}

/// `uverbs*` entries of `/dev/infiniband` (an absent directory is a fact: none).
fn uverbs(dir: &Path) -> Fact<Vec<String>> {
    match std::fs::read_dir(dir) {
        Ok(_) => names(dir).map(|v| v.into_iter().filter(|n| n.starts_with("uverbs")).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Fact::Known(Vec::new()),
        Err(e) => Fact::Unknown(format!("{}: {e}", dir.display())),
    }
}

/// Loads libibverbs (and unloads it): `Ok(name)` or the loader's error.
fn ibverbs_loads() -> Result<String, String> {
    let name = super::lib_name(super::fabric::verbs::LIBIBVERBS, "PEERPATH_LIBIBVERBS");
    // SAFETY: loading libibverbs runs its initialisers, which have no preconditions; nothing
    // from it is called and it is unloaded when the handle drops.
    match unsafe { libloading::Library::new(&name) } {
        Ok(_) => Ok(name),
        Err(e) => Err(e.to_string()),
    }
}

/// `RLIMIT_MEMLOCK` soft limit: `None` when unlimited.
fn memlock() -> Fact<Option<u64>> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is a valid out-pointer for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return Fact::Unknown(std::io::Error::last_os_error().to_string());
    }
    Fact::Known((r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur))
}

/// Size of the file system at `path` (`f_blocks × f_frsize`).
fn fs_size(path: &str) -> Fact<u64> {
    let Ok(c) = std::ffi::CString::new(path) else {
        return Fact::Unknown("bad path".into());
    };
    // SAFETY: statvfs is plain old data; all-zero is a valid value to be overwritten.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a NUL-terminated path and s a valid out-pointer for the call.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Fact::Unknown(format!("{path}: {}", std::io::Error::last_os_error()));
    }
    Fact::Known(s.f_blocks as u64 * s.f_frsize as u64)
}

/// `Cpus_allowed_list` of a `status` file.
fn cpus_allowed(status: &Path) -> Fact<Vec<u32>> {
    let text = match std::fs::read_to_string(status) {
        Ok(t) => t,
        Err(e) => return Fact::Unknown(format!("{}: {e}", status.display())),
    };
    let Some(line) = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
    else {
        return Fact::Unknown(format!("{}: no Cpus_allowed_list line", status.display()));
    };
    match crate::parse::cpulist::parse_list(line.trim().as_bytes()) {
        Ok(v) => Fact::Known(v),
        Err(r) => Fact::Unknown(format!("{}: {r}", status.display())),
    }
}

/// GIDs of every Ethernet RDMA port under `root` (`/sys/class/infiniband`).
fn roce_gids(root: &Path) -> Fact<Vec<(String, u32, usize, usize)>> {
    let devs = match names(root) {
        Fact::Known(d) => d,
        Fact::Unknown(r) => {
            return if root.exists() {
                Fact::Unknown(r)
            } else {
                Fact::Known(Vec::new())
            };
        }
    };
    let mut out = Vec::new();
    for d in devs {
        let ports = root.join(&d).join("ports");
        let Fact::Known(ps) = names(&ports) else {
            continue;
        };
        for p in ps {
            let Ok(port) = p.parse::<u32>() else { continue };
            let pdir = ports.join(&p);
            let layer = std::fs::read_to_string(pdir.join("link_layer")).unwrap_or_default();
            if layer.trim() != "Ethernet" {
                continue;
            }
            let Fact::Known(gids) = names(&pdir.join("gids")) else {
                continue;
            };
            let (mut nonzero, mut v2) = (0, 0);
            for g in gids {
                let val = std::fs::read_to_string(pdir.join("gids").join(&g)).unwrap_or_default();
                if val.trim().is_empty() || val.trim().chars().all(|c| c == '0' || c == ':') {
                    continue;
                }
                nonzero += 1;
                let ty = std::fs::read_to_string(pdir.join("gid_attrs/types").join(&g))
                    .unwrap_or_default();
                if ty.contains("RoCE v2") {
                    v2 += 1;
                }
            }
            out.push((d.clone(), port, nonzero, v2));
        }
    }
    Fact::Known(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_tree_and_says_unknown_when_absent() {
        let t = tempfile::tempdir().unwrap();
        let ib = t.path().join("infiniband");
        std::fs::create_dir_all(&ib).unwrap();
        for f in ["uverbs0", "uverbs1", "rdma_cm", "umad0"] {
            std::fs::write(ib.join(f), "").unwrap();
        }
        assert_eq!(
            uverbs(&ib),
            Fact::Known(vec!["uverbs0".into(), "uverbs1".into()])
        );
        assert_eq!(uverbs(&t.path().join("none")), Fact::Known(vec![]));
        let st = t.path().join("status");
        std::fs::write(&st, "Name:\tx\nCpus_allowed_list:\t0-3,8\n").unwrap();
        assert_eq!(cpus_allowed(&st), Fact::Known(vec![0, 1, 2, 3, 8]));
        assert!(cpus_allowed(&t.path().join("nope")).reason().is_some());
        let port = t.path().join("class/mlx5_0/ports/1");
        std::fs::create_dir_all(port.join("gids")).unwrap();
        std::fs::create_dir_all(port.join("gid_attrs/types")).unwrap();
        std::fs::write(port.join("link_layer"), "Ethernet\n").unwrap();
        std::fs::write(
            port.join("gids/0"),
            "fe80:0000:0000:0000:0000:0000:0000:0001\n",
        )
        .unwrap();
        std::fs::write(
            port.join("gids/1"),
            "0000:0000:0000:0000:0000:0000:0000:0000\n",
        )
        .unwrap();
        std::fs::write(port.join("gid_attrs/types/0"), "IB/RoCE v1\n").unwrap();
        assert_eq!(
            roce_gids(&t.path().join("class")),
            Fact::Known(vec![("mlx5_0".into(), 1, 1, 0)])
        );
        // The live values read without panicking.
        let _ = read();
    }
}
