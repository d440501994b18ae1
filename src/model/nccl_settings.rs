//! The NCCL settings a job on this node would run with, each with where its value came from:
//! the job's environment, then the configuration files NCCL reads itself (`NCCL_CONF_FILE` or
//! `~/.nccl.conf`, then `/etc/nccl.conf`), in NCCL's own order of precedence (a file never
//! overrides a variable already set; within a file the first line of a name wins).
//!
//! Read by `sources::nccl_conf` (the files inside the input root or on the live machine, the
//! variables the command was handed); interpreted by `analysis::settings` (which values change
//! a decision). Nothing here is a default: a setting absent from every source is absent.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where one value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SettingSource {
    /// The environment of the command (the job's environment when run inside the job).
    Environment,
    /// A line of a configuration file NCCL reads (`path` as NCCL opens it, 1-based `line`).
    File {
        /// The file as NCCL names it (`/etc/nccl.conf`, `$HOME/.nccl.conf`, `NCCL_CONF_FILE`).
        path: String,
        /// Line number, from 1.
        line: u32,
    },
}

impl fmt::Display for SettingSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingSource::Environment => f.write_str("the environment"),
            SettingSource::File { path, line } => write!(f, "{path} line {line}"),
        }
    }
}

/// One `NAME=value` as NCCL would see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclSetting {
    /// Variable name, exactly as written (NCCL does not trim it).
    pub name: String,
    /// Value, exactly as written.
    pub value: String,
    /// Where it came from.
    pub source: SettingSource,
}

impl NcclSetting {
    /// `NAME=value (from SOURCE)`, the form findings print.
    pub fn described(&self) -> String {
        format!("{}={} (from {})", self.name, self.value, self.source)
    }
}

/// What became of one configuration file NCCL would read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum ConfFileState {
    /// Read; this many `NAME=value` lines.
    Read(usize),
    /// Not there (NCCL skips it silently too).
    Absent,
    /// There but not readable as NCCL would read it (the reason).
    Unreadable(String),
    /// Not looked at, and why (a snapshot holds no user's home directory).
    NotLooked(String),
}

/// One configuration file in NCCL's reading order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfFile {
    /// The path as NCCL opens it.
    pub path: String,
    /// Why NCCL reads it (`NCCL_CONF_FILE`, `~/.nccl.conf`, `/etc/nccl.conf`).
    pub role: String,
    /// What was found.
    pub state: ConfFileState,
}

/// The settings of a node and job, in NCCL's precedence.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NcclSettings {
    /// Every `NCCL_*` value seen, environment first, then each file in reading order; the
    /// first entry of a name is the one NCCL uses ([`NcclSettings::get`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<NcclSetting>,
    /// The configuration files NCCL reads, in its order, and what was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ConfFile>,
    /// Whether a job environment was read (false: the files alone; the command was not handed
    /// the environment, e.g. a library caller).
    #[serde(default)]
    pub environment_read: bool,
}

impl NcclSettings {
    /// The value NCCL uses for a variable: the first entry of that name.
    pub fn get(&self, name: &str) -> Option<&NcclSetting> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The entries NCCL uses: the first of each name, in precedence order.
    pub fn used(&self) -> impl Iterator<Item = &NcclSetting> {
        self.entries
            .iter()
            .filter(|e| self.get(&e.name).is_some_and(|w| std::ptr::eq(w, *e)))
    }

    /// Entries a later source set but an earlier one overrides (a file's value the environment
    /// hides, a second line of a name in one file).
    pub fn shadowed(&self) -> impl Iterator<Item = (&NcclSetting, &NcclSetting)> {
        self.entries.iter().enumerate().filter_map(|(i, e)| {
            self.entries[..i]
                .iter()
                .find(|w| w.name == e.name)
                .map(|w| (e, w))
        })
    }

    /// Puts the job's environment (its `NCCL_*` variables) before every file's values, as NCCL
    /// reads it first, and marks the environment read.
    pub fn layer_environment(&mut self, vars: &[(String, String)]) {
        let mut entries: Vec<NcclSetting> = vars
            .iter()
            .filter(|(k, _)| k.starts_with("NCCL_"))
            .map(|(k, v)| NcclSetting {
                name: k.clone(),
                value: v.clone(),
                source: SettingSource::Environment,
            })
            .collect();
        entries.append(&mut self.entries);
        self.entries = entries;
        self.environment_read = true;
    }

    /// Whether nothing was read from any source.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.files.is_empty() && !self.environment_read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, value: &str, source: SettingSource) -> NcclSetting {
        NcclSetting {
            name: name.into(),
            value: value.into(),
            source,
        }
    }

    #[test]
    fn first_entry_wins_and_later_ones_are_shadowed() {
        let file = |line| SettingSource::File {
            path: "/etc/nccl.conf".into(),
            line,
        };
        let s = NcclSettings {
            entries: vec![
                e("NCCL_NET_GDR_LEVEL", "PHB", SettingSource::Environment),
                e("NCCL_NET_GDR_LEVEL", "SYS", file(3)),
                e("NCCL_CROSS_NIC", "1", file(4)),
            ],
            files: vec![],
            environment_read: true,
        };
        assert_eq!(s.get("NCCL_NET_GDR_LEVEL").unwrap().value, "PHB");
        assert_eq!(
            s.get("NCCL_CROSS_NIC").unwrap().described(),
            "NCCL_CROSS_NIC=1 (from /etc/nccl.conf line 4)"
        );
        let sh: Vec<_> = s.shadowed().collect();
        assert_eq!(sh.len(), 1);
        assert_eq!(sh[0].0.value, "SYS");
        assert_eq!(sh[0].1.source, SettingSource::Environment);
        assert!(s.get("NCCL_P2P_LEVEL").is_none());
    }
}
