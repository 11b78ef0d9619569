#!/usr/bin/env python3
"""Checks of tests/reliability/elastic.sh on two run directories (sample traces
from STRATA_TRACE_SAMPLE_IDS, summary.json, metrics.jsonl).

  elastic_check.py history RUN            prints the world-size history ("2 3 2"),
                                          and on stderr each start's step and time
  elastic_check.py compare REF RUN TOL    the samples of every step equal REF's;
                                          epoch and test losses within TOL (relative)
"""
import glob
import json
import os
import sys

sys.dont_write_bytecode = True


def history(run):
    with open(os.path.join(run, "summary.json")) as f:
        return json.load(f)["world_size_history"]


def steps(run):
    """step -> (epoch, [ids in global order]) from the latest start that ran the step."""
    recs = {}  # step -> start -> [(micro, rank, epoch, ids)]
    for path in glob.glob(os.path.join(run, "sample_ids", "rank-*.txt")):
        with open(path) as f:
            for line in f:
                w = line.split()
                kv = dict(zip(w[0:12:2], w[1:12:2]))
                ids = w[w.index("ids") + 1:]
                recs.setdefault(int(kv["step"]), {}).setdefault(int(kv["start"]), []).append(
                    (int(kv["micro"]), int(kv["rank"]), int(kv["epoch"]), ids))
    out = {}
    for step, by_start in recs.items():
        rows = sorted(by_start[max(by_start)])
        out[step] = (rows[0][2], [i for r in rows for i in r[3]])
    return out


def losses(run):
    """The run's losses over all ranks: each epoch's train_loss, the test loss.
    (A train row's loss is rank 0's slice of the batch: another rank count
    gives rank 0 other samples, so those rows are not comparable.)"""
    out = {}
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # the line a SIGKILLed rank 0 was writing
            if r.get("kind") == "epoch":
                out[f"epoch {int(r['epoch'])} train_loss"] = r["train_loss"]
            elif r.get("kind") == "test":
                out["test loss"] = r["loss"]
    return out


def compare(ref, run, tol):
    a, b = steps(ref), steps(run)
    assert a, f"no sample trace in {ref}"
    assert sorted(a) == sorted(b), f"steps differ: {len(a)} in the reference, {len(b)} in the elastic run"
    bad = [s for s in sorted(a) if a[s] != b[s]]
    assert not bad, f"{len(bad)} steps consumed other samples than the fixed-size run, first step {bad[0]}"
    per_epoch = {}
    for s in sorted(b):
        per_epoch[b[s][0]] = per_epoch.get(b[s][0], 0) + len(b[s][1])
    la, lb = losses(ref), losses(run)
    assert sorted(la) == sorted(lb) and la, f"losses logged: {sorted(la)} against the elastic run's {sorted(lb)}"
    for k in sorted(la):
        d = abs(la[k] - lb[k]) / max(abs(la[k]), 1e-12)
        print(f"{k}: {lb[k]:.9f} against the fixed-size run's {la[k]:.9f} (relative difference {d:.2g})")
        assert d <= tol, f"{k} differs by {d:.3g} (relative) from the fixed-size run's, beyond {tol}"
    print(f"{len(b)} steps, each with the fixed-size run's samples in its order; samples per epoch: "
          + ", ".join(f"epoch {e + 1}: {n}" for e, n in sorted(per_epoch.items())))


if __name__ == "__main__":
    if sys.argv[1] == "history":
        h = history(sys.argv[2])
        print(" ".join(str(w["world_size"]) for w in h))
        print(", ".join(f'{w["world_size"]} ranks from step {w["step"]} ({w["time"]})' for w in h), file=sys.stderr)
    else:
        compare(sys.argv[2], sys.argv[3], float(sys.argv[4]))
