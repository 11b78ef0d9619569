#!/usr/bin/env python3
"""Derives the small, strict JSON schemas in this folder from the published
definitions (README.md here names each source file, repository and version).

  extract.py --kubernetes swagger.json --mpijob kubeflow.org_mpijobs.yaml \
             --keda keda.sh_scaledobjects.yaml --podmonitor monitoring.coreos.com_podmonitors.yaml \
             [--out DIR]

Each source may be left out; only the files of those given are written.
What it does to every schema, and why:
- keeps only the keywords a validator asserts (type, properties, required, enum,
  pattern, bounds, items, $ref, ...): descriptions, defaults, formats and the
  x-kubernetes-* annotations are most of the bytes and assert nothing;
- adds additionalProperties: false to every object schema that lists its
  properties, unless it says x-kubernetes-preserve-unknown-fields: the API
  server's strict field validation (kubectl apply's default) refuses unknown
  fields, so a typo such as `resoures:` must fail here as it fails there;
- turns x-kubernetes-int-or-string, IntOrString and Quantity into the integer,
  number or string a manifest may write (YAML `cpu: 8` is an integer);
- leaves out `status` (a manifest never sets it) and, for the MPIJob, its copy
  of the pod template: check_manifests.py validates every embedded pod template
  (and every metadata) against the Kubernetes core definitions instead, so one
  definition of a pod is vendored, not two.
CEL rules (x-kubernetes-validations) are dropped: they are not checked.
"""
import argparse
import json
import pathlib
import re
import sys

import yaml

KEEP = {"type", "required", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "minProperties",
        "maxProperties", "uniqueItems", "$ref", "const"}
INT_OR_STRING = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
# resource.Quantity's serialised forms: a decimal number with an optional binary
# suffix (Ki..Ei), decimal suffix (n, u, m, k, M..E) or exponent (e3); "512GB" fails
QUANTITY = {"anyOf": [{"type": "number"}, {
    "type": "string",
    "pattern": r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$"}]}
# The Kubernetes kinds the manifests use; the closure of their $refs is vendored.
KUBERNETES_ROOTS = ["io.k8s.api.batch.v1.Job", "io.k8s.api.core.v1.Secret",
                    "io.k8s.api.core.v1.PodTemplateSpec", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]


def strict(node):
    """A copy of one schema node with only asserting keywords, objects closed."""
    if not isinstance(node, dict):
        return node
    if node.get("x-kubernetes-int-or-string") or node.get("format") == "int-or-string":
        return dict(INT_OR_STRING)
    out = {k: v for k, v in node.items() if k in KEEP}
    if "pattern" in out:
        re.compile(out["pattern"])  # a pattern Python cannot read would fail at check time
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if "properties" in node:
        out["properties"] = {name: strict(s) for name, s in node["properties"].items()}
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node:
            out[key] = [strict(s) for s in node[key]]
    if "not" in node:
        out["not"] = strict(node["not"])
    if "items" in node:
        items = node["items"]
        out["items"] = [strict(s) for s in items] if isinstance(items, list) else strict(items)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = strict(extra)
    elif extra is not None:
        out["additionalProperties"] = extra
    elif "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def kubernetes(swagger_path):
    defs = json.loads(pathlib.Path(swagger_path).read_text(encoding="utf-8"))["definitions"]
    wanted, todo = set(), list(KUBERNETES_ROOTS)
    while todo:  # the closure of the roots' $refs
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        todo += re.findall(r'"#/definitions/([^"]+)"', json.dumps(defs[name]))
    out = {}
    for name in sorted(wanted):
        node = defs[name]
        if name.endswith(".Quantity"):
            out[name] = QUANTITY
            continue
        if node.get("x-kubernetes-group-version-kind") and "status" in node.get("properties", {}):
            node = dict(node, properties={k: v for k, v in node["properties"].items() if k != "status"})
        out[name] = strict(node)
    return {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": out}


def crd(path, version, drop=()):
    """The strict openAPIV3Schema of one version of a CRD, less status and `drop`
    (paths of property names whose schema becomes a plain object)."""
    doc = yaml.safe_load(pathlib.Path(path).read_text(encoding="utf-8"))
    (v,) = [v for v in doc["spec"]["versions"] if v["name"] == version]
    schema = v["schema"]["openAPIV3Schema"]
    schema["properties"].pop("status", None)
    for where in drop:
        node = schema
        for step in where[:-1]:
            node = node[step]
        node[where[-1]] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    out = strict(schema)
    out["$schema"] = "http://json-schema.org/draft-07/schema#"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kubernetes", help="the Kubernetes OpenAPI v2 definitions (swagger.json)")
    ap.add_argument("--mpijob", help="mpi-operator's CRD, kubeflow.org_mpijobs.yaml")
    ap.add_argument("--keda", help="KEDA's CRD, keda.sh_scaledobjects.yaml")
    ap.add_argument("--podmonitor", help="prometheus-operator's CRD, monitoring.coreos.com_podmonitors.yaml")
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent))
    a = ap.parse_args()
    outputs = {}
    if a.kubernetes:
        outputs["kubernetes-1.36.json"] = kubernetes(a.kubernetes)
    if a.mpijob:
        template = ("properties", "spec", "properties", "mpiReplicaSpecs", "additionalProperties",
                    "properties", "template")
        outputs["mpijob-v2beta1.json"] = crd(a.mpijob, "v2beta1", drop=[template])
    if a.keda:
        outputs["scaledobject-v1alpha1.json"] = crd(a.keda, "v1alpha1")
    if a.podmonitor:
        outputs["podmonitor-v1.json"] = crd(a.podmonitor, "v1")
    if not outputs:
        ap.error("give at least one source")
    for name, schema in outputs.items():
        path = pathlib.Path(a.out) / name
        # one key per line, sorted: small diffs when a source moves to a new version
        path.write_text(json.dumps(schema, indent=0, sort_keys=True, separators=(",", ":")) + "\n",
                        encoding="utf-8")
        print(f"{path}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
