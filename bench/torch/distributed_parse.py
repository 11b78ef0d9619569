"""Reading the raw results of bench/distributed_vs_torch.sh for
distributed_report.py: the text tables strata-bench pingpong, allreduce,
allreduce_overlap and ddp print (each file ends with a "load L0 L1" line the
script adds), and the per-round training results of both sides."""
import glob
import json
import os
import re
import statistics

UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
SIZE = r"^\s*(\d+) (B|KB|MB|GB)\s+(\d+)\s+"  # "   64 MB      8 ..." (format_bytes, then iters)
NUM = r"([-0-9.]+)"


def _text(path):
    return open(path).read() if os.path.exists(path) else None


def _load(text):
    m = re.search(r"^load ([0-9.]+) ([0-9.]+)$", text, re.M)
    return [float(m.group(1)), float(m.group(2))] if m else None


def spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "runs": xs}


def pingpong(res):
    t = _text(f"{res}/pingpong.txt")
    if t is None:
        return None
    rows = [{"bytes": int(m.group(1)) * UNITS[m.group(2)], "one_way_us": float(m.group(4)),
             "one_way_gbps": float(m.group(5)), "exchange_gbps": float(m.group(6))}
            for m in re.finditer(SIZE + NUM + r"\s+" + NUM + r" GB/s\s+" + NUM + " GB/s", t, re.M)]
    return {"rows": rows, "load_average": _load(t)}


def allreduce(res):
    t = _text(f"{res}/allreduce.txt")
    if t is None:
        return None
    pat = SIZE + NUM + r"\s+" + NUM + r" GB/s\s+" + NUM + r"\s+" + NUM + r" GB/s\s+" + NUM
    rows = [{"bytes": int(m.group(1)) * UNITS[m.group(2)], "strata_us": float(m.group(4)),
             "strata_busbw_gbps": float(m.group(5)), "mpi_us": float(m.group(6)),
             "mpi_busbw_gbps": float(m.group(7)), "ratio": float(m.group(8))}
            for m in re.finditer(pat, t, re.M)]
    return {"header": t.splitlines()[0], "rows": rows, "load_average": _load(t)}


def overlap(res):
    t = _text(f"{res}/overlap.txt")
    if t is None:
        return None
    m = re.search(r"allreduce alone ([0-9.]+) ms, compute alone ([0-9.]+) ms", t)
    rows = {k: {"overlapped_ms": float(a), "hidden": float(h)}
            for k, a, h in re.findall(r"^(wait|poll|thread)\s+overlapped ([0-9.]+) ms\s+hidden ([-0-9.]+)", t, re.M)}
    return {"header": t.splitlines()[0], "comm_ms": float(m.group(1)) if m else None,
            "compute_ms": float(m.group(2)) if m else None, "modes": rows, "load_average": _load(t)}


def ddp(res):
    t = _text(f"{res}/ddp.txt")
    if t is None:
        return None
    keys = ("step_ms", "backward_ms", "wait_after_ms", "comm_ms", "hidden", "vs_nosync", "vs_plain")
    rows = {}
    for line in t.splitlines():
        c = line.split()
        if len(c) == 8 and c[0] in ("nosync", "bucketed", "bucketed+t", "plain"):
            rows[c[0]] = {k: (None if v == "-" else float(v)) for k, v in zip(keys, c[1:])}
    alone = re.search(r"no compute\): ([0-9.]+) ms", t)
    return {"header": " ".join(t.splitlines()[:2]), "allreduce_alone_ms": float(alone.group(1)) if alone else None,
            "modes": rows, "load_average": _load(t)}


def training(res, layouts, rounds):
    """Per layout: strata's and DDP's samples/s over the rounds, loads, gradient sync."""
    loads = {}
    if os.path.exists(f"{res}/train-loads.txt"):
        for line in open(f"{res}/train-loads.txt"):
            _, lt, _, l0, l1 = line.split()
            loads.setdefault(lt, []).extend([float(l0), float(l1)])
    out = {}
    for lt in layouts:
        s = [json.loads(open(f).readline()) for f in sorted(glob.glob(f"{res}/strata-{lt}-*.jsonl"))]
        d = [json.load(open(f)) for f in sorted(glob.glob(f"{res}/ddp-{lt}-*.json"))]
        if not s and not d:
            continue
        ranks, threads = map(int, lt.split("x"))
        row = {"ranks": ranks, "threads": threads, "oversubscribed": bool(s and s[0]["oversubscribed"])}
        if s:
            row["strata"] = spread([x["samples_per_second"] for x in s])
            row["global_batch"] = s[0]["global_batch"]
            row["timed_steps"] = s[0]["timed_steps"]
            syncs = [x["grad_sync"] for x in s if x.get("grad_sync")]
            if syncs:
                row["strata_grad_sync"] = {
                    "buckets": syncs[0]["buckets"],
                    "hidden": spread([max(0.0, 1 - g["wait_seconds"] / g["comm_seconds"]) for g in syncs]),
                    "comm_ms_per_step": spread([1e3 * g["comm_seconds"] / g["steps"] for g in syncs])}
            loads.setdefault(lt, []).extend(v for x in s for v in x["load_average"])
        if d:
            row["ddp"] = spread([x["samples_per_second"] for x in d])
            row["torch"] = d[0]["torch"]
        if s and d:
            row["ratio"] = row["strata"]["median"] / row["ddp"]["median"]
            row["ratio_per_round"] = [a["samples_per_second"] / b["samples_per_second"] for a, b in zip(s, d)]
        row["load_average"] = [min(loads[lt]), max(loads[lt])] if loads.get(lt) else None
        out[lt] = row
    return out
