#!/usr/bin/env python3
"""Writes the figures of the last suite run into docs/reliability.md.

Each reliability test appends `KIND<TAB>TEST<TAB>WHAT<TAB>COUNT` lines to the
figures file (tests/reliability/figures_lib.sh); this script sums them by kind
and replaces the block between the two markers in the document with a table:
what each test did, and the totals of kills survived, faults injected and
survived, bad inputs refused and fuzz executions.

    write_figures.py FIGURES_TSV DOC_MD
"""
import datetime
import subprocess
import sys

BEGIN = "<!-- figures of the last run: begin (written by tests/reliability/write_figures.py) -->"
END = "<!-- figures of the last run: end -->"
KINDS = {
    "kills": "processes killed (SIGKILL, SIGTERM, a kill inside a checkpoint write) and resumed to identical results",
    "faults": "faults injected (object store, full disks) and survived with nothing lost",
    "bad_inputs": "malformed inputs (configs, manifests, shards, keys) refused with an error naming them",
    "fuzz_runs": "parser executions on fuzzed input without a finding",
}


def main(figures_path, doc_path):
    rows = []
    with open(figures_path) as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4 or parts[0] not in KINDS or not parts[3].isdigit():
                sys.exit(f"{figures_path}:{n}: expected KIND TEST WHAT COUNT with KIND in {sorted(KINDS)}, got {line!r}")
            rows.append((parts[0], parts[1], parts[2], int(parts[3])))
    if not rows:
        sys.exit(f"{figures_path}: no figures recorded (did the reliability tests run?)")
    doc = open(doc_path).read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{doc_path}: the markers of the figures block are missing")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [BEGIN, "", f"Run of {stamp} at commit {commit or 'unknown'}:", "",
           "| kind | total | what |", "|---|---|---|"]
    for kind, what in KINDS.items():
        out.append(f"| {kind} | {sum(r[3] for r in rows if r[0] == kind)} | {what} |")
    out += ["", "| test | what | count |", "|---|---|---|"]
    out += [f"| `{t}` | {w} | {c} |" for _, t, w, c in sorted(rows, key=lambda r: (r[1], r[2]))]
    out += ["", END]
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    open(doc_path, "w").write(head + "\n".join(out) + tail)
    print(f"write_figures: {len(rows)} figures from {figures_path} into {doc_path}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
