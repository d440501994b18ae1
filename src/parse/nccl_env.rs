//! NCCL's interface-list grammar, as `NCCL_IB_HCA` and `NCCL_SOCKET_IFNAME` use it, in each
//! of its three readers (NVIDIA/nccl `src/misc/utils.cc` `parseStringList`/`matchIfList` and
//! the `searchNot`/`searchExact` prefixes of `net_ib.cc`, read at every release tag):
//!
//! | releases | `^` | `=` | entry | empty port (`mlx5_0:`) |
//! |---|---|---|---|---|
//! | 2.3–2.4 | exclude | none: part of the name | `name[:port]`, the rest after the port ignored | port 0 (`atoi("")`) |
//! | 2.5–2.30.4 | exclude, first | exact names, after an optional `^` | `name[:port]`, the rest ignored | port 0 |
//! | 2.30.7+ | exclude, first | exact names | `name[:port[:rail[:plane]]]` | any port |
//!
//! In every release: entries are separated by `,` and empty ones skipped, an entry without a
//! name (`:1`) is skipped, the port is `atoi` (so `:x` is port 0), a name is a **prefix** unless
//! `=` asks for exact names (`mlx5_1` also selects `mlx5_10` … `mlx5_17`), and an empty list
//! matches every device, so `^` alone selects none. IB ports are numbered from 1: port 0 selects
//! nothing. `=^x` is exact with a name starting `^`. Pure: a string in, a matcher out.

/// One of NCCL's readers of the list (the table in the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grammar {
    /// 2.3–2.4: no `=`.
    V2_3,
    /// 2.5–2.30.4: `^` then `=`; an empty port is port 0.
    V2_5,
    /// 2.30.7+: an empty port (or rail, plane) means any.
    V2_30_7,
}

impl Grammar {
    /// Every reader, oldest first.
    pub const ALL: [Grammar; 3] = [Grammar::V2_3, Grammar::V2_5, Grammar::V2_30_7];

    /// The reader of NCCL release 2.`minor`.`patch`.
    pub fn of(minor: u32, patch: u32) -> Grammar {
        match (minor, patch) {
            (..=4, _) => Grammar::V2_3,
            (31.., _) | (30, 7..) => Grammar::V2_30_7,
            _ => Grammar::V2_5,
        }
    }

    /// The releases that read the list this way.
    pub fn releases(self) -> &'static str {
        match self {
            Grammar::V2_3 => "NCCL 2.3–2.4",
            Grammar::V2_5 => "NCCL 2.5–2.30.4",
            Grammar::V2_30_7 => "NCCL 2.30.7+",
        }
    }
}

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfEntry {
    /// The name or prefix.
    pub name: String,
    /// The port (`atoi`, so a non-number is port 0, which no device has); `None`: any.
    pub port: Option<i64>,
}

/// A parsed list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfList {
    /// The value as given.
    pub raw: String,
    /// The reader it was parsed with.
    pub grammar: Grammar,
    /// Leading `^`: the list says what NCCL must not use.
    pub exclude: bool,
    /// `=` after the optional `^`: names match exactly, not as prefixes.
    pub exact: bool,
    /// Entries.
    pub entries: Vec<IfEntry>,
}

/// C `atoi`: leading whitespace, optional sign, digits; anything else stops it (0 when none).
fn atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, d) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let digits: String = d
        .chars()
        .take_while(char::is_ascii_digit)
        .take(18)
        .collect();
    let v: i64 = digits.parse().unwrap_or(0);
    if neg { -v } else { v }
}

/// Parses a list as the newest NCCL does.
pub fn parse(value: &str) -> IfList {
    parse_as(value, Grammar::V2_30_7)
}

/// Parses a list as one of NCCL's readers does.
pub fn parse_as(value: &str, grammar: Grammar) -> IfList {
    let mut rest = value;
    let exclude = rest.starts_with('^');
    if exclude {
        rest = &rest[1..];
    }
    let exact = grammar != Grammar::V2_3 && rest.starts_with('=');
    if exact {
        rest = &rest[1..];
    }
    let entries = rest
        .split(',')
        .filter(|e| !e.is_empty())
        .filter_map(|e| {
            let mut f = e.split(':');
            let name = f.next().unwrap_or("");
            if name.is_empty() {
                return None; // `:1` — NCCL skips an entry without a name
            }
            let port = match (grammar, f.next()) {
                (_, None) => None,
                // 2.30.7 reads each field with strsep: an empty one is -1, any.
                (Grammar::V2_30_7, Some("")) => None,
                // Before, `atoi` of what follows the colon: empty is 0.
                (_, Some(p)) => Some(atoi(p)),
            };
            Some(IfEntry {
                name: name.to_string(),
                port,
            })
        })
        .collect();
    IfList {
        raw: value.to_string(),
        grammar,
        exclude,
        exact,
        entries,
    }
}

/// The devices a list selects in each of NCCL's readers, when they differ: (reader, the
/// devices it selects). Empty when every release selects the same.
pub fn selection_by_release(
    value: &str,
    devices: &[(String, Option<u32>)],
) -> Vec<(Grammar, Vec<String>)> {
    let sel: Vec<(Grammar, Vec<String>)> = Grammar::ALL
        .iter()
        .map(|&g| {
            let l = parse_as(value, g);
            let mut v: Vec<String> = devices
                .iter()
                .filter(|(n, p)| l.selects(n, *p))
                .map(|(n, _)| n.clone())
                .collect();
            v.dedup();
            (g, v)
        })
        .collect();
    if sel.windows(2).all(|w| w[0].1 == w[1].1) {
        return Vec::new();
    }
    sel
}

impl IfEntry {
    /// Whether this entry matches a device and port (`None`: the caller has no port, as for
    /// network interfaces, which NCCL matches with port -1, i.e. any).
    pub fn matches(&self, name: &str, port: Option<u32>, exact: bool) -> bool {
        let name_ok = if exact {
            name == self.name
        } else {
            name.starts_with(&self.name)
        };
        let port_ok = match (self.port, port) {
            (None, _) | (_, None) | (Some(-1), _) => true,
            (Some(a), Some(b)) => a == i64::from(b),
        };
        name_ok && port_ok
    }
}

impl IfList {
    /// Whether NCCL uses this device/port under the list (`matchIfList(...) ^ searchNot`).
    pub fn selects(&self, name: &str, port: Option<u32>) -> bool {
        let listed = self.entries.is_empty()
            || self
                .entries
                .iter()
                .any(|e| e.matches(name, port, self.exact));
        listed != self.exclude
    }

    /// The entries that match none of the given devices (typos, HCAs absent from the node).
    pub fn unmatched<'a>(&'a self, devices: &[(String, Option<u32>)]) -> Vec<&'a IfEntry> {
        self.entries
            .iter()
            .filter(|e| !devices.iter().any(|(n, p)| e.matches(n, *p, self.exact)))
            .collect()
    }

    /// Entries that, as prefixes, match more names than the one they spell (`mlx5_1` →
    /// `mlx5_10`): (entry, the other names).
    pub fn prefix_surprises(&self, names: &[String]) -> Vec<(String, Vec<String>)> {
        if self.exact {
            return Vec::new();
        }
        self.entries
            .iter()
            .filter_map(|e| {
                let more: Vec<String> = names
                    .iter()
                    .filter(|n| n.starts_with(&e.name) && **n != e.name)
                    .cloned()
                    .collect();
                (!more.is_empty()).then(|| (e.name.clone(), more))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oci() -> Vec<(String, Option<u32>)> {
        // OCI BM.GPU.H100.8 (realworld oci-bm-gpu-h100-8.nccl-topo.xml): mlx5_2 and mlx5_11
        // are not compute HCAs and are absent.
        [0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17]
            .iter()
            .map(|i| (format!("mlx5_{i}"), Some(1)))
            .collect()
    }

    fn selected(l: &IfList, devs: &[(String, Option<u32>)]) -> Vec<String> {
        devs.iter()
            .filter(|(n, p)| l.selects(n, *p))
            .map(|(n, _)| n.clone())
            .collect()
    }

    #[test]
    fn a_name_without_equals_is_a_prefix() {
        let l = parse("mlx5_1");
        assert_eq!(
            selected(&l, &oci()),
            [
                "mlx5_1", "mlx5_10", "mlx5_12", "mlx5_13", "mlx5_14", "mlx5_15", "mlx5_16",
                "mlx5_17"
            ]
        );
        assert_eq!(selected(&parse("=mlx5_1"), &oci()), ["mlx5_1"]);
        let names: Vec<String> = oci().into_iter().map(|d| d.0).collect();
        assert_eq!(parse("mlx5_1").prefix_surprises(&names)[0].1.len(), 7);
        assert!(parse("=mlx5_1").prefix_surprises(&names).is_empty());
    }

    #[test]
    fn exclusion_exact_ports_and_empty_entries() {
        let l = parse("^mlx5_3,mlx5_4");
        assert!(l.exclude && !l.exact);
        assert!(!l.selects("mlx5_3", Some(1)) && l.selects("mlx5_0", Some(1)));
        let l = parse("^=mlx5_1");
        assert!(l.exclude && l.exact);
        assert!(l.selects("mlx5_10", Some(1)) && !l.selects("mlx5_1", Some(1)));
        // `=^x` is exact with a name starting `^`.
        assert!(!parse("=^mlx5_1").exclude);
        let l = parse("mlx5_0:1,,mlx5_2:2");
        assert_eq!(l.entries.len(), 2);
        assert!(l.selects("mlx5_0", Some(1)) && !l.selects("mlx5_0", Some(2)));
        assert!(l.selects("mlx5_2", Some(2)));
        // Ports: atoi, so `:x` is port 0; empty is any.
        assert_eq!(parse("mlx5_0:x").entries[0].port, Some(0));
        assert_eq!(parse("mlx5_0:").entries[0].port, None);
        assert_eq!(parse("mlx5_0:1:0:1").entries[0].port, Some(1));
        // `:1` has no name and is skipped; an empty list matches all, so `^` matches none.
        assert!(parse(":1").entries.is_empty());
        assert!(parse("").selects("mlx5_0", Some(1)));
        assert!(!parse("^").selects("mlx5_0", Some(1)));
        // Interfaces (no port): `ib` selects ib0, ibp12s0.
        assert!(parse("ib").selects("ibp12s0", None));
        assert!(!parse("^docker,lo").selects("lo", None));
    }

    /// The same value in each of NCCL's three readers (utils.cc `parseStringList` at v2.4.8,
    /// v2.5.6 … v2.30.4 and v2.30.7; `net_ib.cc` `searchNot`/`searchExact`).
    #[test]
    fn each_release_reads_the_list_its_own_way() {
        let devs = oci();
        let sel = |v: &str, g: Grammar| selected(&parse_as(v, g), &devs);
        // `=`: exact from 2.5; in 2.3–2.4 a `=` is part of a name no HCA has.
        assert_eq!(sel("=mlx5_1", Grammar::V2_5), ["mlx5_1"]);
        assert_eq!(sel("=mlx5_1", Grammar::V2_30_7), ["mlx5_1"]);
        assert!(sel("=mlx5_1", Grammar::V2_3).is_empty());
        assert!(!parse_as("=mlx5_1", Grammar::V2_3).exact);
        // `^=`: both prefixes combine from 2.5; `^` alone excludes in every release.
        assert_eq!(sel("^=mlx5_1", Grammar::V2_5).len(), devs.len() - 1);
        assert_eq!(sel("^mlx5_1", Grammar::V2_3).len(), devs.len() - 8);
        // An empty port is port 0 (no IB port) before 2.30.7, any port after.
        assert!(sel("mlx5_0:", Grammar::V2_3).is_empty());
        assert!(sel("mlx5_0:", Grammar::V2_5).is_empty());
        assert_eq!(sel("mlx5_0:", Grammar::V2_30_7), ["mlx5_0"]);
        // `:port` selects a port; what follows it is ignored before 2.30.7 and is the rail after.
        assert_eq!(
            parse_as("mlx5_0:1:0", Grammar::V2_5).entries[0].port,
            Some(1)
        );
        assert_eq!(
            parse_as("mlx5_0::1", Grammar::V2_30_7).entries[0].port,
            None
        );
        assert!(sel("=mlx5_0:2", Grammar::V2_5).is_empty());
        // Releases map onto readers.
        assert_eq!(Grammar::of(4, 8), Grammar::V2_3);
        assert_eq!(Grammar::of(5, 6), Grammar::V2_5);
        assert_eq!(Grammar::of(30, 4), Grammar::V2_5);
        assert_eq!(Grammar::of(30, 7), Grammar::V2_30_7);
        assert_eq!(Grammar::of(31, 2), Grammar::V2_30_7);
        // Where the readers disagree, say so; where they agree, nothing.
        let d = selection_by_release("mlx5_0:", &devs);
        assert_eq!(d.len(), 3);
        assert!(d[1].1.is_empty() && d[2].1 == ["mlx5_0"]);
        assert!(selection_by_release("mlx5_1,mlx5_3:1", &devs).is_empty());
    }

    #[test]
    fn unmatched_entries() {
        let l = parse("mlx5_0,mlx5_20");
        let u = l.unmatched(&oci());
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].name, "mlx5_20");
    }
}
