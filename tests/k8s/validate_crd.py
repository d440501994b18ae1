#!/usr/bin/env python3
"""Validates custom resources against a CustomResourceDefinition's OpenAPI v3 schema.

Usage: validate_crd.py CRD_YAML RESOURCE_YAML...
       validate_crd.py --labels [--levels TOPOLOGY_YAML] OBJECT_YAML...

For each resource document: finds the CRD of its apiVersion group and kind in CRD_YAML (a
multi-document file, as NFD ships nfd-api-crds.yaml; Kueue ships one file per CRD), takes the
schema of that served version, and validates the document with the `jsonschema` package.
Unknown fields are errors, as the API server's strict field validation makes them: every
object schema that lists `properties` and says nothing of additional ones (no
`additionalProperties`, no `x-kubernetes-preserve-unknown-fields`) is closed. `metadata` is
checked for a name and its labels for Kubernetes' label syntax, the ObjectMeta checks the API
server makes on every object.

CEL rules (`x-kubernetes-validations`) are not JSON Schema: the rules this script knows (those
of Kueue's Topology, below) are evaluated by their Python equivalents; transition rules (those
reading `oldSelf`) do not apply when an object is created and are skipped, as the API server
skips them; any other rule is counted and named `not evaluated` on the PASS line.

`--labels`: the objects (any kind: Node objects carrying topology labels) are checked for
metadata only — a name, and each label key and value as the API server's ObjectMeta
validation (apimachinery's IsQualifiedName, IsValidLabelValue) accepts them. With `--levels`,
each object must also carry the label of every level of the Kueue Topology in TOPOLOGY_YAML
(Kueue's scheduler considers only nodes that carry every level's label), except
`kubernetes.io/hostname`, which the kubelet sets on every Node.

Prints `PASS file kind/name` or `FAIL file kind/name: error` per document; exit 1 when any
failed.
"""
import re
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


# apimachinery pkg/util/validation: a qualified name is an optional DNS-1123 subdomain prefix
# (at most 253 characters) and `/`, then a name of at most 63 characters; a label value is
# empty or at most 63 characters of the name's form.
NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def label_errors(labels):
    """What the API server says of a labels map: each key a qualified name, each value a
    label value."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return ["metadata.labels: not a map"]
    errors = []
    for key, value in labels.items():
        key = str(key)
        prefix, _, name = key.rpartition("/")
        if "/" in prefix or (key.count("/") == 1 and not prefix):
            errors.append("label key %r: a prefix and one '/' at most" % key)
        elif prefix and (len(prefix) > 253 or not SUBDOMAIN.match(prefix)):
            errors.append("label key %r: prefix %r is not a DNS-1123 subdomain" % (key, prefix))
        elif len(name) > 63 or not NAME.match(name):
            errors.append("label key %r: name %r is not a qualified name" % (key, name))
        if not isinstance(value, str):
            errors.append("label %r: value %r is not a string" % (key, value))
        elif value and (len(value) > 63 or not NAME.match(value)):
            errors.append("label %r: value %r is not a valid label value" % (key, value))
    return errors


def _unique(v):
    return not any(sum(1 for j in v if j == i) > 1 for i in v)


def _hostname_lowest(v):
    return not any(i.get("nodeLabel") == "kubernetes.io/hostname" for i in v) or (
        bool(v) and v[-1].get("nodeLabel") == "kubernetes.io/hostname"
    )


# CEL rules evaluated here, by their text with whitespace folded (Kueue's Topology levels).
KNOWN_CEL = {
    "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0": _unique,
    "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || "
    "self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'": _hostname_lowest,
}


def cel(schema, value, path, errors, skipped):
    """Walks `value` beside `schema`, evaluating the CEL rules found on the way."""
    if not isinstance(schema, dict) or value is None:
        return
    for v in schema.get("x-kubernetes-validations", []):
        rule = " ".join(v["rule"].split())
        if "oldSelf" in rule:
            continue
        check = KNOWN_CEL.get(rule)
        if check is None:
            skipped.append("%s: %s" % (".".join(path) or "(document)", rule))
        elif not check(value):
            errors.append("%s: %s" % (".".join(path), v.get("message", rule)))
    if isinstance(value, dict):
        for k, sub in value.items():
            child = schema.get("properties", {}).get(k, schema.get("additionalProperties"))
            cel(child, sub, path + [str(k)], errors, skipped)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            cel(schema.get("items"), sub, path + [str(i)], errors, skipped)


def labels_only(paths):
    levels = []
    if paths[:1] == ["--levels"]:
        for doc in yaml.safe_load_all(open(paths[1])):
            if doc and doc.get("kind") == "Topology":
                levels += [lv.get("nodeLabel") for lv in doc["spec"]["levels"]]
        levels = [lv for lv in levels if lv != "kubernetes.io/hostname"]
        paths = paths[2:]
    failed = 0
    for path in paths:
        for doc in yaml.safe_load_all(open(path)):
            if not doc:
                continue
            meta = doc.get("metadata") or {}
            what = "%s/%s" % (doc.get("kind"), meta.get("name"))
            errors = label_errors(meta.get("labels"))
            have = meta.get("labels") or {}
            errors += ["no label %r, a level of the Topology" % lv for lv in levels if lv not in have]
            if not meta.get("name"):
                errors.append("metadata.name is required")
            failed += report(path, what, errors, [])
    sys.exit(1 if failed else 0)


def report(path, what, errors, skipped):
    """Prints the document's verdict; 1 when it failed."""
    if errors:
        for e in errors:
            print("FAIL %s %s: %s" % (path, what, e))
        return 1
    note = ""
    if skipped:
        note = " (%d CEL rule(s) not evaluated: %s)" % (len(skipped), "; ".join(skipped))
    print("PASS %s %s%s" % (path, what, note))
    return 0


def main():
    if sys.argv[1] == "--labels":
        labels_only(sys.argv[2:])
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
            errors = [
                "%s: %s" % (".".join(str(p) for p in e.absolute_path) or "(document)", e.message)
                for e in sorted(
                    jsonschema.Draft4Validator(closed(schema)).iter_errors(doc),
                    key=lambda e: list(e.absolute_path),
                )
            ]
            meta = doc.get("metadata") or {}
            if not meta.get("name"):
                errors.append("metadata.name is required")
            errors += label_errors(meta.get("labels"))
            skipped = []
            cel(schema, doc, [], errors, skipped)
            failed += report(path, what, errors, skipped)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
