//! `/etc/cufile.json`, GPUDirect Storage's configuration: JSON with `//` and `/* */` comments
//! (NVIDIA's default file comments out optional keys) and trailing commas, read with a JSONC
//! parser (`jsonc-parser`), never by stripping comments by hand, so a `//` inside a string
//! (`"dir": "//server/logs"`) stays text. Keys as in NVIDIA's GDS configuration guide
//! ("GPUDirect Storage Parameters").

use crate::model::storage::CufileConfig;
use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

/// Parses the file's text. `Err` carries the parser's message (with line and column) when the
/// text is not JSON with comments, or when its top level is not an object.
pub fn parse(text: &str) -> Result<CufileConfig, String> {
    let opts = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let v: Value = jsonc_parser::parse_to_serde_value(text, &opts).map_err(|e| e.to_string())?;
    let Value::Object(top) = v else {
        return Err("the top level is not an object".into());
    };
    let mut c = CufileConfig::default();
    let props = top.get("properties").and_then(Value::as_object);
    c.allow_compat_mode = boolean(&mut c, props, "properties", "allow_compat_mode");
    c.force_compat_mode = boolean(&mut c, props, "properties", "force_compat_mode");
    c.use_pci_p2pdma = boolean(&mut c, props, "properties", "use_pci_p2pdma");
    c.max_direct_io_size_kb = props
        .and_then(|p| p.get("max_direct_io_size_kb"))
        .and_then(|v| {
            let n = v.as_u64();
            if n.is_none() {
                wrong(&mut c, "properties.max_direct_io_size_kb", v);
            }
            n
        });
    c.rdma_dev_addr_list = props
        .and_then(|p| p.get("rdma_dev_addr_list"))
        .map(|v| strings(&mut c, "properties.rdma_dev_addr_list", v));
    if let Some(fs) = top.get("fs").and_then(Value::as_object) {
        for (name, sec) in fs {
            let Some(sec) = sec.as_object() else { continue };
            if let Some(v) = sec.get("rdma_dev_addr_list") {
                let key = format!("fs.{name}.rdma_dev_addr_list");
                let l = strings(&mut c, &key, v);
                c.fs_rdma_dev_addr_lists.push((name.clone(), l));
            }
            if let Some(mt) = sec.get("mount_table").and_then(Value::as_object) {
                for (mount, m) in mt {
                    if let Some(v) = m.get("rdma_dev_addr_list") {
                        let key = format!("fs.{name}.mount_table.{mount}.rdma_dev_addr_list");
                        let l = strings(&mut c, &key, v);
                        c.fs_rdma_dev_addr_lists
                            .push((format!("{name}:{mount}"), l));
                    }
                }
            }
            if let Some(n) = sec.get("posix_gds_min_kb").and_then(Value::as_u64)
                && n > 0
            {
                c.posix_gds_min_kb.push((name.clone(), n));
            }
        }
    }
    if let Some(d) = top.get("denylist").and_then(Value::as_object) {
        for list in ["drivers", "devices", "mounts", "filesystems"] {
            if let Some(v) = d.get(list) {
                let l = strings(&mut c, &format!("denylist.{list}"), v);
                if !l.is_empty() {
                    c.denylist.push((list.to_string(), l));
                }
            }
        }
    }
    Ok(c)
}

/// Characters of a key or value kept in a wrong-type note.
const SHOWN: usize = 120;

fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(SHOWN).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Notes a value of the wrong type: the first [`crate::parse::MAX_LINE_REFUSALS`] kept (key and
/// value shortened to [`SHOWN`] characters), the rest counted. Nothing is copied per value past
/// the cap (a 1 MiB key over 900,000 bad items was copied per item: issue 41).
fn wrong(c: &mut CufileConfig, key: &str, v: &Value) {
    if c.wrong_type.len() < crate::parse::MAX_LINE_REFUSALS {
        let shown = match v {
            Value::Array(_) | Value::Object(_) => {
                shorten(&serde_json::to_string(v).unwrap_or_default())
            }
            other => shorten(&other.to_string()),
        };
        c.wrong_type.push((shorten(key), shown));
    } else {
        c.wrong_type_more += 1;
    }
}

fn boolean(
    c: &mut CufileConfig,
    sec: Option<&Map<String, Value>>,
    sec_name: &str,
    key: &str,
) -> Option<bool> {
    let v = sec?.get(key)?;
    match v {
        Value::Bool(b) => Some(*b),
        other => {
            wrong(c, &format!("{sec_name}.{key}"), other);
            None
        }
    }
}

fn strings(c: &mut CufileConfig, key: &str, v: &Value) -> Vec<String> {
    match v.as_array() {
        Some(a) => a
            .iter()
            .filter_map(|x| match x.as_str() {
                Some(s) => Some(s.to_string()),
                None => {
                    wrong(c, key, x);
                    None
                }
            })
            .collect(),
        None => {
            wrong(c, key, v);
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVIDIA's default `/etc/cufile.json` as GDS installs it (fixtures/gds/README.md names
    /// the source): every optional key commented out, the rest at their defaults.
    const DEFAULT: &str = include_str!("../../fixtures/gds/cufile.default.json");

    #[test]
    fn nvidias_default_file() {
        let c = parse(DEFAULT).unwrap();
        assert_eq!(c.allow_compat_mode, Some(true));
        assert_eq!(c.force_compat_mode, None);
        assert_eq!(c.use_pci_p2pdma, None);
        assert_eq!(c.max_direct_io_size_kb, Some(16384));
        assert_eq!(c.rdma_dev_addr_list, Some(vec![]));
        // Every per-fs list and mount table is commented out in the default.
        assert!(c.fs_rdma_dev_addr_lists.is_empty(), "{c:?}");
        assert!(c.denylist.is_empty() && c.wrong_type.is_empty(), "{c:?}");
        assert!(c.compat_allowed() && !c.compat_forced() && !c.p2pdma());
    }

    #[test]
    fn comments_inside_strings_stay_text() {
        let t = r#"{
            /* block comment with "quotes" and // slashes */
            "logging": { "dir": "//server/share/*not a comment*/" },
            "properties": {
                "allow_compat_mode": false, // trailing comment
                "force_compat_mode": true,
                "use_pci_p2pdma": true,
                "rdma_dev_addr_list": ["172.16.1.10", "172.16.2.10",],
            },
            "fs": { "lustre": { "posix_gds_min_kb": 64,
                    "mount_table": { "/lustre/a": { "rdma_dev_addr_list": ["10.0.0.1"] } } } },
            "denylist": { "devices": ["/dev/nvme3n1"], "drivers": [] }
        }"#;
        let c = parse(t).unwrap();
        assert_eq!(c.allow_compat_mode, Some(false));
        assert!(c.compat_forced() && c.p2pdma());
        assert_eq!(
            c.rdma_addrs().collect::<Vec<_>>(),
            ["172.16.1.10", "172.16.2.10", "10.0.0.1"]
        );
        assert_eq!(c.fs_rdma_dev_addr_lists[0].0, "lustre:/lustre/a");
        assert_eq!(c.posix_gds_min_kb, [("lustre".to_string(), 64)]);
        assert_eq!(
            c.denylist,
            [("devices".to_string(), vec!["/dev/nvme3n1".to_string()])]
        );
    }

    #[test]
    fn refusals_say_where() {
        // A comment opened inside a key is not closed: an error with its position.
        let e = parse("{\n  \"properties\": { \"allow_compat_mode\": tru }\n}").unwrap_err();
        assert!(e.contains("line") || e.contains(':'), "{e}");
        assert!(parse("[1, 2]").is_err());
        assert!(parse("").is_err());
        // Wrong types are reported, not guessed.
        let c =
            parse(r#"{"properties": {"allow_compat_mode": "no", "max_direct_io_size_kb": -1}}"#)
                .unwrap();
        assert_eq!(c.allow_compat_mode, None);
        assert_eq!(c.wrong_type.len(), 2, "{c:?}");
    }

    /// Issue 41: a 1 MiB section name over 100,000 bad list items keeps 20 short notes and a
    /// count, not 100,000 copies of the key.
    #[test]
    fn wrong_types_are_capped_and_shortened() {
        let name = "n".repeat(1 << 20);
        let items = vec!["1"; 100_000].join(",");
        let t = format!(r#"{{"fs": {{"{name}": {{"rdma_dev_addr_list": [{items}]}}}}}}"#);
        let c = parse(&t).unwrap();
        assert_eq!(c.wrong_type.len(), crate::parse::MAX_LINE_REFUSALS);
        assert_eq!(c.wrong_type_more, 100_000 - crate::parse::MAX_LINE_REFUSALS);
        assert!(c.wrong_type.iter().all(|(k, v)| k.len() < 400 && v == "1"));
    }
}
