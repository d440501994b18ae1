//! Where NCCL reads its settings, read the same way (NVIDIA/nccl `initEnvFunc`/`setEnvFile`,
//! `src/misc/param.cc`; docs/settings.md): the job's environment first; then
//! `NCCL_CONF_FILE` when set and not empty (NCCL ≥ 2.23.4; it replaces the user's file) or else
//! `~/.nccl.conf`; then `/etc/nccl.conf`, always. A file never overrides a variable already set
//! (`setenv(…, 0)`), so the first value of a name wins.
//!
//! `/etc/nccl.conf` is the node's: the scan reads it inside the input root (live `/`, a
//! directory root or a snapshot, which `peerpath capture` records). The environment and the
//! user's file are the job's: [`apply_environment`] layers them on when a command hands its
//! environment in (`LoadOptions::nccl_env`); the user's file is read only for the live machine
//! (a snapshot holds no home directory) unless `NCCL_CONF_FILE` names it.

use super::fsroot::{self, FsRoot};
use crate::model::nccl_settings::{
    ConfFile, ConfFileState, NcclSetting, NcclSettings, SettingSource,
};
use crate::parse::nccl_conf;
use std::io;
use std::path::Path;

/// `/etc/nccl.conf`, relative to the input root.
pub const ETC_NCCL_CONF: &str = "etc/nccl.conf";

/// The manifest at the top of a `peerpath capture` tarball (`capture::MANIFEST_NAME`).
pub const CAPTURE_MANIFEST: &str = "peerpath-capture.json";

/// The first fingerprint scheme whose captures record `/etc/nccl.conf` (`peerpath.fingerprint/4`).
const FIRST_SCHEME_WITH_NCCL_CONF: u32 = 4;

/// The largest capture manifest read (peerpath writes a few KiB).
pub const MAX_MANIFEST_BYTES: usize = 1 << 20;

/// Whether a snapshot was written by a peerpath that records `/etc/nccl.conf`: its manifest's
/// fingerprint scheme is /4 or later (`Ok(false)` without a manifest: an older capture or
/// another tarball). A manifest over [`MAX_MANIFEST_BYTES`] or not JSON is not read, never
/// judged from a cut: `Err` says why, and whether the file was recorded is unknown.
fn snapshot_records_nccl_conf(fs: &dyn FsRoot) -> Result<bool, String> {
    let b = match fsroot::read_whole(fs, Path::new(CAPTURE_MANIFEST), MAX_MANIFEST_BYTES) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("{CAPTURE_MANIFEST}: {e}")),
    };
    let v = serde_json::from_slice::<serde_json::Value>(&b)
        .map_err(|e| format!("{CAPTURE_MANIFEST} is not JSON ({e}); not read"))?;
    Ok(v["fingerprint"]["scheme"]
        .as_str()
        .and_then(|s| s.strip_prefix("peerpath.fingerprint/"))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n >= FIRST_SCHEME_WITH_NCCL_CONF))
}

/// Largest configuration file read (NCCL's own are a few lines; Azure's is three).
pub const LIMIT: usize = 1 << 20;

fn state_of(e: &io::Error) -> ConfFileState {
    if e.kind() == io::ErrorKind::NotFound {
        ConfFileState::Absent
    } else {
        ConfFileState::Unreadable(e.to_string())
    }
}

/// The `NAME=value` lines of one file as settings, in file order (only names that start with
/// `NCCL_` once trimmed: a name with a space around it is kept, so the audit can say NCCL
/// ignores it).
fn settings_of(bytes: &[u8], shown: &str) -> Vec<NcclSetting> {
    nccl_conf::parse(bytes)
        .into_iter()
        .filter(|l| l.name.trim().starts_with("NCCL_"))
        .map(|l| NcclSetting {
            name: l.name,
            value: l.value,
            source: SettingSource::File {
                path: shown.to_string(),
                line: l.line,
            },
        })
        .collect()
}

fn one_file(read: io::Result<Vec<u8>>, shown: &str, role: &str) -> (Vec<NcclSetting>, ConfFile) {
    match read {
        Ok(b) => {
            let s = settings_of(&b, shown);
            let f = ConfFile {
                path: shown.to_string(),
                role: role.to_string(),
                state: ConfFileState::Read(s.len()),
            };
            (s, f)
        }
        Err(e) => (
            Vec::new(),
            ConfFile {
                path: shown.to_string(),
                role: role.to_string(),
                state: state_of(&e),
            },
        ),
    }
}

/// The node's `/etc/nccl.conf`, read inside the input root. `snapshot`: the root is a capture,
/// where a missing file is absent on the machine or was not recorded (captures before
/// fingerprint scheme /4 did not record it), so it is not called absent.
pub fn read_node(fs: &dyn FsRoot, snapshot: bool) -> NcclSettings {
    let (entries, mut file) = one_file(
        super::fsroot::read_whole(fs, Path::new(ETC_NCCL_CONF), LIMIT),
        "/etc/nccl.conf",
        "/etc/nccl.conf (always read, last)",
    );
    if snapshot && file.state == ConfFileState::Absent {
        match snapshot_records_nccl_conf(fs) {
            Ok(true) => {}
            Ok(false) => {
                file.state = ConfFileState::NotLooked(
                    "not in this snapshot: absent on the machine, or captured before peerpath recorded it"
                        .into(),
                )
            }
            Err(why) => {
                file.state = ConfFileState::NotLooked(format!(
                    "not in this snapshot, and whether the capture recorded it is unknown: {why}"
                ))
            }
        }
    }
    NcclSettings {
        entries,
        files: vec![file],
        environment_read: false,
    }
}

/// Reads a file of the machine the command runs on (not inside an input root).
fn read_local(p: &Path) -> io::Result<Vec<u8>> {
    fsroot::input::read_input(p, LIMIT as u64)
}

/// Layers the job's environment (`NCCL_*` variables as handed in) and its user configuration
/// file over the node's settings, in NCCL's order. `live`: the topology is the machine the
/// command runs on, whose `~/.nccl.conf` (from `HOME`) is the job user's.
pub fn apply_environment(node: &mut NcclSettings, env: &[(String, String)], live: bool) {
    let var = |k: &str| env.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v);
    let mut entries: Vec<NcclSetting> = Vec::new();
    let mut files = Vec::new();
    match var("NCCL_CONF_FILE").filter(|v| !v.is_empty()) {
        Some(p) => {
            let (s, f) = one_file(
                read_local(Path::new(p)),
                p,
                "NCCL_CONF_FILE (NCCL ≥ 2.23.4; replaces ~/.nccl.conf)",
            );
            entries.extend(s);
            files.push(f);
        }
        None => match var("HOME").filter(|h| !h.is_empty() && live) {
            Some(home) => {
                let p = Path::new(home).join(".nccl.conf");
                let shown = p.display().to_string();
                let (s, f) = one_file(read_local(&p), &shown, "~/.nccl.conf");
                entries.extend(s);
                files.push(f);
            }
            None => files.push(ConfFile {
                path: "~/.nccl.conf".into(),
                role: "~/.nccl.conf".into(),
                state: ConfFileState::NotLooked(if live {
                    "HOME is not set".into()
                } else {
                    "the input is not the machine the command runs on, and holds no user's home directory".into()
                }),
            }),
        },
    }
    entries.append(&mut node.entries);
    files.append(&mut node.files);
    *node = NcclSettings {
        entries,
        files,
        environment_read: false,
    };
    node.layer_environment(env);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fsroot::DirRoot;

    #[test]
    fn environment_then_user_file_then_etc() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("etc")).unwrap();
        std::fs::write(
            d.path().join("etc/nccl.conf"),
            "NCCL_NET_GDR_LEVEL=SYS\nNCCL_CROSS_NIC=1\nOTHER=2\n",
        )
        .unwrap();
        let user = d.path().join("mine.conf");
        std::fs::write(&user, "NCCL_CROSS_NIC=0\nNCCL_IB_HCA=mlx5\n").unwrap();
        let mut s = read_node(&DirRoot::new(d.path()), false);
        assert_eq!(s.entries.len(), 2);
        assert_eq!(s.files[0].state, ConfFileState::Read(2));
        let env = vec![
            ("NCCL_NET_GDR_LEVEL".to_string(), "PHB".to_string()),
            ("NCCL_CONF_FILE".to_string(), user.display().to_string()),
            ("PATH".to_string(), "/bin".to_string()),
        ];
        apply_environment(&mut s, &env, false);
        assert!(s.environment_read);
        assert_eq!(s.get("NCCL_NET_GDR_LEVEL").unwrap().value, "PHB");
        assert_eq!(
            s.get("NCCL_NET_GDR_LEVEL").unwrap().source,
            SettingSource::Environment
        );
        // The user's file beats /etc; /etc is still read.
        let cross = s.get("NCCL_CROSS_NIC").unwrap();
        assert_eq!(cross.value, "0");
        assert!(matches!(&cross.source, SettingSource::File { line: 1, .. }));
        assert_eq!(s.files.len(), 2);
        assert_eq!(s.files[1].path, "/etc/nccl.conf");
        assert_eq!(s.shadowed().count(), 2);
    }

    #[test]
    fn absent_files_and_no_home_for_a_snapshot() {
        let d = tempfile::tempdir().unwrap();
        let mut s = read_node(&DirRoot::new(d.path()), false);
        assert_eq!(s.files[0].state, ConfFileState::Absent);
        apply_environment(&mut s, &[("HOME".into(), "/root".into())], false);
        assert!(matches!(s.files[0].state, ConfFileState::NotLooked(_)));
        let mut s = read_node(&DirRoot::new(d.path()), false);
        let missing = d.path().join("nope.conf").display().to_string();
        apply_environment(&mut s, &[("NCCL_CONF_FILE".into(), missing)], true);
        assert_eq!(s.files[0].state, ConfFileState::Absent);
        // NCCL_CONF_FILE is itself a setting NCCL read from the environment.
        assert!(s.get("NCCL_CONF_FILE").is_some());
    }

    /// Issue 53: `/etc/nccl.conf` holding `NCCL_NET_GDR_LEVEL=LOC<NUL>PHB` is `LOC` to NCCL
    /// (`strncpy` stops at the NUL): GDR off, never "a value NCCL ignores".
    #[test]
    fn etc_nccl_conf_value_ends_at_a_nul_as_nccl_reads_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("etc")).unwrap();
        std::fs::write(
            d.path().join("etc/nccl.conf"),
            b"NCCL_NET_GDR_LEVEL=LOC\0PHB\n",
        )
        .unwrap();
        let s = read_node(&DirRoot::new(d.path()), false);
        assert_eq!(
            s.get("NCCL_NET_GDR_LEVEL").map(|e| e.value.as_str()),
            Some("LOC")
        );
    }

    /// Issue 53: the capture manifest is read whole or not at all. A manifest over 1 MiB whose
    /// first MiB is a /4 manifest (and whose rest is not JSON) made a missing `/etc/nccl.conf`
    /// "absent on the machine", judged from the cut; now whether it was recorded is unknown,
    /// in the cap's words.
    #[test]
    fn capture_manifest_over_its_cap_is_not_read_from_a_cut() {
        let state = |manifest: &[u8]| {
            let d = tempfile::tempdir().unwrap();
            std::fs::write(d.path().join(CAPTURE_MANIFEST), manifest).unwrap();
            read_node(&DirRoot::new(d.path()), true).files[0]
                .state
                .clone()
        };
        let m4 = br#"{"fingerprint":{"scheme":"peerpath.fingerprint/4 0.1.0","value":"0"}}"#;
        assert_eq!(state(m4), ConfFileState::Absent);
        let m3 = br#"{"fingerprint":{"scheme":"peerpath.fingerprint/3 0.1.0","value":"0"}}"#;
        assert!(
            matches!(state(m3), ConfFileState::NotLooked(ref w) if w.contains("captured before")),
            "{:?}",
            state(m3)
        );
        let mut big = m4.to_vec();
        big.resize(MAX_MANIFEST_BYTES + 4096, b' ');
        big.extend_from_slice(b"not json");
        match state(&big) {
            ConfFileState::NotLooked(w) => assert!(
                w.contains("unknown") && w.contains("1 MiB") && w.contains(CAPTURE_MANIFEST),
                "{w}"
            ),
            other => panic!("judged from a cut: {other:?}"),
        }
        match state(b"{\"fingerprint\":") {
            ConfFileState::NotLooked(w) => assert!(w.contains("not JSON"), "{w}"),
            other => panic!("{other:?}"),
        }
    }
}
