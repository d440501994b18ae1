#!/usr/bin/env python3
"""Validates custom resources against a CustomResourceDefinition's OpenAPI v3 schema.

Usage: validate_crd.py CRD_YAML RESOURCE_YAML...

For each resource document: finds the CRD of its apiVersion group and kind in CRD_YAML (a
multi-document file, as NFD ships nfd-api-crds.yaml), takes the schema of the served version,
and validates the document with the `jsonschema` package. Unknown fields are errors, as the
API server's strict field validation makes them: every object schema that lists `properties`
and says nothing of additional ones (no `additionalProperties`, no
`x-kubernetes-preserve-unknown-fields`) is closed. `metadata` is checked for a name, the
ObjectMeta the API server requires. Prints `PASS file kind/name` or `FAIL file kind/name:
error` per document; exit 1 when any failed.
"""
import sys

import jsonschema
import yaml


def closed(schema):
    """The schema with unknown fields refused wherever the API server would refuse them."""
    if isinstance(schema, dict):
        out = {k: closed(v) for k, v in schema.items()}
        if (
            out.get("type") == "object"
            and "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


def main():
    crds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
    by_kind = {}
    for c in crds:
        if c.get("kind") != "CustomResourceDefinition":
            continue
        spec = c["spec"]
        for v in spec["versions"]:
            if v.get("served"):
                key = (spec["group"] + "/" + v["name"], spec["names"]["kind"])
                by_kind[key] = v["schema"]["openAPIV3Schema"]
    failed = 0
    for path in sys.argv[2:]:
        for doc in yaml.safe_load_all(open(path)):
            if not doc:
                continue
            what = "%s/%s" % (doc.get("kind"), (doc.get("metadata") or {}).get("name"))
            schema = by_kind.get((doc.get("apiVersion"), doc.get("kind")))
            if schema is None:
                print("FAIL %s %s: no CRD for apiVersion %s kind %s" % (path, what, doc.get("apiVersion"), doc.get("kind")))
                failed += 1
                continue
            errors = sorted(
                jsonschema.Draft4Validator(closed(schema)).iter_errors(doc),
                key=lambda e: list(e.absolute_path),
            )
            if not (doc.get("metadata") or {}).get("name"):
                errors.append("metadata.name is required")
            if errors:
                failed += 1
                for e in errors:
                    where = ".".join(str(p) for p in getattr(e, "absolute_path", []))
                    print("FAIL %s %s: %s: %s" % (path, what, where or "(document)", getattr(e, "message", e)))
            else:
                print("PASS %s %s" % (path, what))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
