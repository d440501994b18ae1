//! The peerpath JSON source: reads back the document `peerpath scan --format json` prints
//! (schema [`TOPOLOGY_SCHEMA`]), or the JSON of another peerpath command that embeds that
//! document under a `"topology"` member, and rebuilds the graph.

use crate::model::topology::{TOPOLOGY_SCHEMA, Topology};
use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Parses a peerpath JSON document into a topology. The source becomes `json` with the given
/// path; the original source kind and path are kept as the first limitation line.
pub fn read(text: &str, shown: &str) -> Result<Topology> {
    let v: Value = serde_json::from_str(text).context("not valid JSON")?;
    let Some(obj) = v.as_object() else {
        bail!("the JSON document is not an object");
    };
    let schema_of = |o: &serde_json::Map<String, Value>| {
        o.get("schema").and_then(Value::as_str).map(str::to_string)
    };
    let doc = match schema_of(obj) {
        Some(s) if s == TOPOLOGY_SCHEMA => v,
        other => match obj.get("topology") {
            Some(Value::Object(t)) => match schema_of(t) {
                Some(s) if s == TOPOLOGY_SCHEMA => Value::Object(t.clone()),
                Some(s) => bail!(
                    "the embedded \"topology\" has schema {s:?}; this peerpath reads {TOPOLOGY_SCHEMA:?}"
                ),
                None => bail!(
                    "the embedded \"topology\" has no \"schema\" member; expected {TOPOLOGY_SCHEMA:?}"
                ),
            },
            _ => match other {
                Some(s) => bail!(
                    "schema {s:?} is not a peerpath topology ({TOPOLOGY_SCHEMA:?}) and the document has no \"topology\" member"
                ),
                None => bail!(
                    "no \"schema\" member: not a peerpath topology document (expected schema {TOPOLOGY_SCHEMA:?})"
                ),
            },
        },
    };
    let mut topo: Topology =
        serde_json::from_value(doc).context("does not match the peerpath.topology/1 layout")?;
    let note = format!(
        "read back from peerpath JSON: the facts are those of the earlier {} scan of {}",
        topo.source.kind, topo.source.path
    );
    topo.source.kind = "json".into();
    topo.source.path = shown.to_string();
    topo.source.limitations.insert(0, note);
    // A document is data, not a promise: duplicate addresses, parent loops, self-parents and
    // switch loops are repaired with warnings before anything walks the tree.
    super::tree::make_forest(&mut topo.devices, &mut topo.warnings);
    super::tree::check_switches(&mut topo.switches, &mut topo.warnings);
    topo.rebuild();
    Ok(topo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_errors_name_the_schema() {
        let e = read(r#"{"schema":"peerpath.audit/1"}"#, "a.json").unwrap_err();
        assert!(format!("{e:#}").contains("peerpath.audit/1"), "{e:#}");
        let e = read(
            r#"{"schema":"x","topology":{"schema":"peerpath.topology/9"}}"#,
            "a.json",
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("peerpath.topology/9"), "{e:#}");
        assert!(read("[1]", "a.json").is_err());
        assert!(read("{", "a.json").is_err());
        assert!(read(r#"{"a":1}"#, "a.json").is_err());
        let e = read(r#"{"schema":"peerpath.topology/1","devices":3}"#, "a.json").unwrap_err();
        assert!(format!("{e:#}").contains("layout"), "{e:#}");
    }
}
