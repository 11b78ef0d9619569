#!/usr/bin/env python3
"""Every manifest in deploy/kubernetes is one the API server would take, and
passes strata only keys strata has (issue 33).

  check_manifests.py REPO_ROOT [FILE.yaml ...]   (default: deploy/kubernetes/**/*.yaml)

Each YAML document (a file may hold several) is validated against the schema of
its apiVersion and kind, vendored in deploy/kubernetes/schemas (strict: an
unknown field fails, as with kubectl's default strict field validation). The
parts a CRD leaves open are validated against the Kubernetes core definitions:
every metadata as ObjectMeta, an MPIJob's pod templates as PodTemplateSpec, so
a typo inside a container fails there too. A kind without a schema fails.

Then what the schemas cannot know:
- the arguments after strata-train: its options (docs/cli.md), and each
  key=value a key of docs/configuration.md (an enum key one of its values);
- data.cache_dir is a mount of the containers the ranks run in, and the pods'
  terminationGracePeriodSeconds exceeds checkpoint.preempt_grace_s;
- requests and limits for cpu, memory and ephemeral-storage in every
  container, and nvidia.com/gpu (requests = limits) where the ranks run;
- every strata_* series a KEDA query names is one docs/monitoring.md lists.

Last, a self-test: copies of the manifests with one deliberate mistake each (a
typo'd field, key or metric, an unknown kind) must each be refused, so that a
check that passed everything would fail here.
Exit status 1 names each problem as FILE[document]: $.json.path: message.
"""
import copy
import json
import pathlib
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs"))
from check_config_keys import config_table  # noqa: E402  (docs/configuration.md's table, read once)

try:
    import jsonschema
    import yaml
except ImportError as e:
    sys.exit(f"check_manifests.py: the Python module {e.name} is missing from {sys.executable}, the interpreter "
             "running this check (Debian's python3-jsonschema and python3-yaml bring them; scripts/test.sh "
             "installs them for /usr/bin/python3, which CMake's STRATA_TEST_PYTHON names)")

K8S = "kubernetes-1.36.json"
# (apiVersion, kind) -> (schema file, definition in it, or None for the whole file)
KINDS = {
    ("batch/v1", "Job"): (K8S, "io.k8s.api.batch.v1.Job"),
    ("v1", "Secret"): (K8S, "io.k8s.api.core.v1.Secret"),
    ("kubeflow.org/v2beta1", "MPIJob"): ("mpijob-v2beta1.json", None),
    ("keda.sh/v1alpha1", "ScaledObject"): ("scaledobject-v1alpha1.json", None),
    ("monitoring.coreos.com/v1", "PodMonitor"): ("podmonitor-v1.json", None),
}
# What a custom resource's schema leaves open, checked against the core definitions
# ("*": any key or index). extract.py leaves the MPIJob's own copy of a pod out.
EMBEDDED = {
    "MPIJob": [(("spec", "mpiReplicaSpecs", "*", "template"), "io.k8s.api.core.v1.PodTemplateSpec")],
}
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# strata-train's options (docs/cli.md): those taking a value, and flags
TRAIN_OPTIONS, TRAIN_FLAGS = {"--config", "--run-dir"}, {"--dry-run", "--print-config"}


class Checker:
    def __init__(self, root):
        self.root = root
        self.schemas = root / "deploy" / "kubernetes" / "schemas"
        self.k8s = json.loads((self.schemas / K8S).read_text(encoding="utf-8"))["definitions"]
        self.validators = {}
        self.runs = 0  # strata-train invocations seen
        self.keys = config_table(root)  # config key -> (enum choices or None, default)
        monitoring = (root / "docs" / "monitoring.md").read_text(encoding="utf-8")
        self.series = {s for row in re.findall(r"^\| (`strata_.*?) \|", monitoring, re.M)
                       for s in re.findall(r"`(strata_\w+)`", row)}

    def core(self, definition):
        if definition not in self.validators:
            schema = {"$ref": "#/definitions/" + definition, "definitions": self.k8s}
            self.validators[definition] = jsonschema.Draft7Validator(schema)
        return self.validators[definition]

    def validator(self, api_version, kind):
        file, definition = KINDS[(api_version, kind)]
        if definition:
            return self.core(definition)
        if file not in self.validators:
            schema = json.loads((self.schemas / file).read_text(encoding="utf-8"))
            self.validators[file] = jsonschema.Draft7Validator(schema)
        return self.validators[file]

    def check(self, doc):
        """The problems of one document, each (json path, message)."""
        if not isinstance(doc, dict):
            return [((), "a manifest is a mapping, not " + type(doc).__name__)]
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        if (api_version, kind) not in KINDS:
            known = ", ".join(f"{a} {k}" for a, k in KINDS)
            return [((), f"no schema for apiVersion {api_version!r} kind {kind!r} (there are: {known}); "
                         "deploy/kubernetes/schemas/README.md says how to add one")]
        problems = schema_errors(self.validator(api_version, kind), doc, ())
        if KINDS[(api_version, kind)][1] is None:  # a custom resource: its open parts
            if "metadata" in doc:
                problems += schema_errors(self.core(OBJECT_META), doc["metadata"], ("metadata",))
            for pattern, definition in EMBEDDED.get(kind, []):
                for path, value in matches(doc, pattern):
                    problems += schema_errors(self.core(definition), value, path)
        try:
            problems += self.strata_checks(doc)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
            if not problems:  # the schema let through a shape the checks below do not expect
                raise
            problems.append(((), f"strata's checks skipped, the shape above is wrong ({type(e).__name__}: {e})"))
        return problems

    def strata_checks(self, doc):
        problems = []
        kind = doc.get("kind")
        if kind in ("Job", "MPIJob"):
            pods = list(matches(doc, ("spec", "template", "spec")) if kind == "Job" else
                        matches(doc, ("spec", "mpiReplicaSpecs", "*", "template", "spec")))
            all_containers = [pc for pod_path, spec in pods for pc in containers(pod_path, spec)]
            runs = [(path, c) for path, c in all_containers if train_args(c) is not None]
            self.runs += len(runs)
            # where the ranks run: an MPIJob's workers (mpirun starts them there through
            # sshd), or the Job's container that runs strata-train (strata-mpirun, locally)
            ranks = [(path, c) for path, c in all_containers
                     if (path[2] == "Worker" if kind == "MPIJob" else train_args(c) is not None)]
            for path, c in runs:
                problems += self.train_problems(path, train_args(c), pods, ranks)
            for path, c in all_containers:
                problems += resource_problems(path, c, gpu=any(c is r for _, r in ranks))
        if kind == "ScaledObject":
            for path, trigger in matches(doc, ("spec", "triggers", "*")):
                query = trigger.get("metadata", {}).get("query", "") if isinstance(trigger, dict) else ""
                for name in sorted(set(re.findall(r"\bstrata_\w+", query))):
                    if name not in self.series:
                        problems.append((path + ("metadata", "query"),
                                         f"{name} is not a series strata exports (docs/monitoring.md, Series)"))
        return problems

    def train_problems(self, path, args, pods, ranks):
        problems, given, i = [], {}, 0
        while i < len(args):
            a, where = args[i][0], path + args[i][1]
            if a in TRAIN_OPTIONS:
                given[a] = args[i + 1][0] if i + 1 < len(args) else None
                i += 2
                continue
            i += 1
            if a in TRAIN_FLAGS:
                continue
            if a.split("=", 1)[0] in TRAIN_OPTIONS:  # --opt=value, the same as --opt value
                given[a.split("=", 1)[0]] = a.split("=", 1)[1]
                continue
            if a.startswith("-") or "=" not in a:
                problems.append((where, f"strata-train takes no argument {a!r} (docs/cli.md)"))
                continue
            key, value = a.split("=", 1)
            if key not in self.keys:
                problems.append((where, f"{key} is not a strata config key (docs/configuration.md)"))
            elif self.keys[key][0] and value not in self.keys[key][0]:
                problems.append((where, f"{key} takes {' | '.join(self.keys[key][0])}, not {value}"))
            given[key] = value
        if not given.get("--config"):
            problems.append((path, "strata-train without --config FILE"))
        cache = given.get("data.cache_dir")
        if cache and not any(m.get("mountPath") == cache for _, c in ranks for m in c.get("volumeMounts", [])):
            problems.append((path, f"data.cache_dir={cache} is not a volume mounted where the ranks run"))
        grace_key = "checkpoint.preempt_grace_s"
        grace = float(given.get(grace_key, self.keys.get(grace_key, (None, "0"))[1]))
        for pod_path, spec in pods:
            pod_grace = spec.get("terminationGracePeriodSeconds", 30)  # Kubernetes' default
            if not isinstance(pod_grace, int) or pod_grace <= grace:
                problems.append((pod_path + ("terminationGracePeriodSeconds",),
                                 f"{pod_grace} s does not exceed {grace_key} ({grace:g} s): the final "
                                 "checkpoint would be killed before its upload's deadline"))
        return problems


def schema_errors(validator, value, prefix):
    out = []
    for e in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path))):
        message = e.message
        if e.context:  # anyOf/oneOf: why each alternative refused it
            message += " (" + "; ".join(dict.fromkeys(c.message for c in e.context)) + ")"
        out.append((prefix + tuple(e.absolute_path), message))
    return out


def matches(node, pattern, path=()):
    """(path, value) of every place `pattern` (keys, indexes, "*" for any) reaches in node."""
    if not pattern:
        yield path, node
        return
    head, rest = pattern[0], pattern[1:]
    if isinstance(node, dict):
        items = node.items() if head == "*" else [(head, node[head])] if head in node else []
    elif isinstance(node, list) and head == "*":
        items = enumerate(node)
    elif isinstance(node, list) and isinstance(head, int) and head < len(node):
        items = [(head, node[head])]
    else:
        items = []
    for k, v in items:
        yield from matches(v, rest, path + (k,))


def containers(pod_path, spec):
    if not isinstance(spec, dict):
        return []
    return [(pod_path + ("containers", i), c) for i, c in enumerate(spec.get("containers") or [])
            if isinstance(c, dict)]


def train_args(container):
    """The arguments after strata-train in a container's command + args, each with
    its place ("command" or "args", index), or None where it does not run strata-train."""
    command, args = container.get("command") or [], container.get("args") or []
    words = [(str(w), ("command", i)) for i, w in enumerate(command)] + \
            [(str(w), ("args", i)) for i, w in enumerate(args)]
    for i, (w, _) in enumerate(words):
        if w.rsplit("/", 1)[-1] == "strata-train":
            return words[i + 1:]
    return None


def resource_problems(path, container, gpu):
    res = container.get("resources") or {}
    requests, limits = res.get("requests") or {}, res.get("limits") or {}
    needed = ["cpu", "memory", "ephemeral-storage"] + (["nvidia.com/gpu"] if gpu else [])
    problems = [(path + ("resources", part), f"no {name} {part}")
                for part, given in (("requests", requests), ("limits", limits))
                for name in needed if name not in given]
    if gpu and str(requests.get("nvidia.com/gpu")) != str(limits.get("nvidia.com/gpu")):
        problems.append((path + ("resources",), "nvidia.com/gpu requests and limits differ (they must be equal)"))
    return problems


def json_path(path):
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def load(files, root):
    docs = []  # (label, document)
    for f in files:
        for i, doc in enumerate(yaml.safe_load_all(f.read_text(encoding="utf-8"))):
            if doc is not None:
                docs.append((f"{f.relative_to(root) if f.is_relative_to(root) else f}[{i}]", doc))
    return docs


# The self-test's mistakes: (a word the problem found must name, the kind it is made
# in, a function making it in a copy of the first manifest of that kind).
def rename(path, old, new):
    def mutate(doc):
        for _, node in matches(doc, path):
            if isinstance(node, dict) and old in node:
                node[new] = node.pop(old)
                return True
        return False
    return mutate


def replace_arg(old_prefix, new):
    def mutate(doc):
        for _, c in matches(doc, ("spec", "mpiReplicaSpecs", "*", "template", "spec", "containers", "*")):
            for i, a in enumerate(c.get("args", [])):
                if str(a).startswith(old_prefix):
                    c["args"][i] = new
                    return True
        return False
    return mutate


def set_query(doc):
    for _, t in matches(doc, ("spec", "triggers", "*")):
        t["metadata"]["query"] = "avg(strata_data_wait_ratios)"
        return True
    return False


MISTAKES = [
    ("resoures", "MPIJob", rename(("spec", "mpiReplicaSpecs", "Worker", "template", "spec", "containers", 0),
                                  "resources", "resoures")),
    ("terminationGracePeriodSecond", "Job",
     rename(("spec", "template", "spec"), "terminationGracePeriodSeconds", "terminationGracePeriodSecond")),
    ("restartPolicyy", "MPIJob",
     rename(("spec", "mpiReplicaSpecs", "Launcher"), "restartPolicy", "restartPolicyy")),
    ("honourLabels", "PodMonitor", rename(("spec", "podMetricsEndpoints", 0), "honorLabels", "honourLabels")),
    ("triger", "ScaledObject", rename(("spec",), "triggers", "trigers")),
    ("checkpoint.resum", "MPIJob", replace_arg("checkpoint.resume=", "checkpoint.resum=auto")),
    ("strata_data_wait_ratios", "ScaledObject", set_query),
    ("stringDat", "Secret", rename((), "stringData", "stringDat")),
]


def self_test(checker, docs):
    failures, made = [], 0
    for needle, kind, mutate in MISTAKES:
        originals = [d for _, d in docs if isinstance(d, dict) and d.get("kind") == kind]
        if not originals:
            continue  # files given on the command line without that kind
        made += 1
        doc = copy.deepcopy(originals[0])
        if not mutate(doc):
            failures.append(f"self-test: could not make the mistake {needle!r} in the {kind}")
        elif not any(needle in m or needle in json_path(p) for p, m in checker.check(doc)):
            failures.append(f"self-test: a {kind} with the mistake {needle!r} was not refused")
    made += 1
    if not checker.check({"apiVersion": "example.com/v1", "kind": "Unknown", "metadata": {"name": "x"}}):
        failures.append("self-test: a kind without a schema was not refused")
    return failures, made


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = [pathlib.Path(f).resolve() for f in sys.argv[2:]] or \
        sorted((root / "deploy" / "kubernetes").rglob("*.yaml"))
    checker = Checker(root)
    if len(checker.keys) < 50 or len(checker.series) < 10:
        print(f"check_manifests: read {len(checker.keys)} config keys and {len(checker.series)} series "
              "from docs/configuration.md and docs/monitoring.md: their tables changed form")
        return 1
    docs = load(files, root)
    bad = []
    for label, doc in docs:
        problems = checker.check(doc)
        what = f"{doc.get('apiVersion')} {doc.get('kind')}" if isinstance(doc, dict) else "?"
        print(f"{'FAIL' if problems else 'ok  '} {label} {what}")
        bad += [f"{label}: {json_path(p)}: {m}" for p, m in problems]
    if checker.runs == 0 and not sys.argv[2:]:
        bad.append("no manifest runs strata-train: the config-key check checked nothing")
    failures, mistakes = self_test(checker, docs)
    bad += failures
    for b in bad:
        print(b)
    print(f"check_manifests: {len(docs)} documents in {len(files)} files, {len(bad)} problems; "
          f"self-test: {mistakes - len(failures)} of {mistakes} deliberate mistakes refused")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
