"""Report of bench/loaders_vs_peers.sh: RAW (raw/loaders: one JSON line per reader
epoch, the run's setup and the machine's limits) -> OUT/loaders_vs_peers.{md,json},
loaders_samples_per_s.png and loaders_bytes_per_epoch.png.
Run with Debian's python3 (python3-matplotlib):  python3 -s report.py RAW OUT"""
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

READERS = ["strata", "boto3_objects", "s3torch_map", "webdataset_tars", "mosaic_streaming", "litdata_stream"]
LABEL = {"strata": "strata staging loader", "boto3_objects": "DataLoader + boto3 (per object)",
         "s3torch_map": "s3torchconnector S3MapDataset", "webdataset_tars": "WebDataset (tar over HTTP)",
         "mosaic_streaming": "MosaicML Streaming (MDS)", "litdata_stream": "LitData StreamingDataset"}
PER_OBJECT = {"boto3_objects", "s3torch_map"}
CACHES = ["big", "half", "none"]
CACHE_LABEL = {"big": "2x data", "half": "50% of data", "none": "no cache"}


def load(raw):
    runs = {}
    for path in sorted(glob.glob(os.path.join(raw, "*.run"))):
        ds, reader, cache = os.path.basename(path)[:-4].split("-")
        run = json.load(open(path))
        jl = path[:-4] + ".jsonl"
        run["epochs"] = [json.loads(l) for l in open(jl)] if os.path.exists(jl) else []
        err = path[:-4] + ".error"
        run["error"] = open(err).read().strip() if os.path.exists(err) else ""
        note = path[:-4] + ".note"  # what was seen of a run stopped by hand, written by the person
        run["note"] = open(note).read().strip() if os.path.exists(note) else ""
        run["partial"] = any(x.get("partial") for x in run["epochs"])
        runs[(ds, reader, cache)] = run
    return runs


def samples_in(raw, ds):
    for path in glob.glob(os.path.join(raw, f"{ds}-*.meta")):
        return json.load(open(path))["samples"]
    m = re.search(r"(\d+) samples in", open(os.path.join(raw, f"{ds}-warm.txt")).read())
    return int(m.group(1)) if m else 0


def summary(run, full):
    e = run["epochs"]
    if not e or run["partial"]:
        return None
    s = {"samples_per_s": sum(x["samples"] for x in e) / sum(x["seconds"] for x in e),
         "wait_fraction": sum(x["wait"] for x in e) / sum(x["seconds"] for x in e),
         "epoch1_samples_per_s": e[0]["samples"] / e[0]["seconds"],
         "steady_samples_per_s": (sum(x["samples"] for x in e[1:]) / sum(x["seconds"] for x in e[1:]))
         if len(e) > 1 else None,
         "gets": [x["proxy_gets"] for x in e], "bytes": [x["proxy_bytes"] for x in e],
         "samples": [x["samples"] for x in e]}
    # Per-object readers read a subset per epoch: their per-sample traffic times the epoch's samples.
    s["full_epoch_bytes"] = [b * full / n if n else 0 for b, n in zip(s["bytes"], s["samples"])]
    s["full_epoch_gets"] = [g * full / n if n else 0 for g, n in zip(s["gets"], s["samples"])]
    s["steady_bytes"] = sum(s["full_epoch_bytes"][1:]) / max(1, len(e) - 1)
    disk = [x["cache_disk_bytes"] for x in e if "cache_disk_bytes" in x]
    s["cache_disk_max"] = max(disk) if disk else None
    # A cache that held more than its bound is no 50% cache (WebDataset cleans up every 30 s).
    s["over_bound"] = bool(run["cache_bytes"] and ((s["cache_disk_max"] or 0) > 1.1 * run["cache_bytes"]
                                                   or "cache exceeded" in run["note"]))
    return s


def limits(raw):
    out = {}
    lb = os.path.join(raw, "loopback.txt")
    if os.path.exists(lb):
        v = [float(x) for x in open(lb).read().split()]
        out["loopback_rgw_get_MBps"] = max(v) / 1e6 if v else None
    for path in glob.glob(os.path.join(raw, "*-warm.txt")):
        t = open(path).read()
        d = re.findall(r"disk O_DIRECT sequential read ([\d.]+) GB/s", t)
        w = re.findall(r"normalise off: ([\d.]+) GB/s of sample bytes read", t)
        if d:
            out["disk_odirect_read_GBps"] = float(d[0])
        if w:
            out.setdefault("warm_cache_GBps", {})[os.path.basename(path).split("-")[0]] = float(w[0])
    return out


def mb(x):
    return f"{x / 1e6:.1f}"


def main():
    raw, out = sys.argv[1], sys.argv[2]
    setup = json.load(open(os.path.join(raw, "setup.json")))
    runs, lim = load(raw), limits(raw)
    datasets = sorted({k[0] for k in runs}, key=lambda d: (d != "fmnist", d))
    rep = {"setup": setup, "limits": lim, "datasets": {}}
    rtt = 2 * setup["delay_ms"]
    md = [f"# Loading from the object store: strata vs peers ({setup['date']})", "",
          f"Machine: {setup['cpu']}, {setup['cores']} cores, {setup['memory_gib']} GiB, kernel {setup['kernel']}; "
          f"load average at the end {setup['load_average']} (shared with other work).",
          f"Store: Ceph RGW (one OSD on MemStore, in RAM) on 127.0.0.1 behind strata-proxy --delay-ms "
          f"{setup['delay_ms']}: about **{rtt} ms added per request round trip**. Every reader: batch "
          f"{setup['batch']}, a {setup['step_ms']} ms sleep per batch (the simulated step), {setup['epochs']} "
          f"epochs; GETs and bytes are counted by strata-proxy per epoch (response bodies of GETs, "
          f"listings included).",
          f"Machine limits for loading: loopback GET from RGW without the proxy "
          f"{lim.get('loopback_rgw_get_MBps') or 0:.0f} MB/s (curl, 256 MiB object); disk O_DIRECT sequential "
          f"read {lim.get('disk_odirect_read_GBps') or 0:.2f} GB/s; strata warm-cache read "
          f"{', '.join(f'{k} {v:.2f} GB/s' for k, v in lim.get('warm_cache_GBps', {}).items()) or 'n/a'}.",
          f"Peers: {', '.join(f'{k} {v}' for k, v in setup['peers'].items())}. Per-object readers: "
          f"{setup['obj_workers']} DataLoader workers, a random {setup['obj_samples']} samples per epoch (their "
          f"full-epoch GETs and bytes are that per sample times the epoch); sharded peers: "
          f"{setup['shard_workers']} workers; shards of {setup['shard_mb']} MiB in every sharded format.", ""]
    for ds in datasets:
        full = samples_in(raw, ds)
        rows, dsrep = [], {}
        md += [f"## {ds} ({full} samples)", "",
               "| reader | cache | stored MB | samples/s (3 ep) | epoch 1 | epochs 2-3 | data-wait | "
               "GETs per epoch (1/2/3) | MB from store per epoch (1/2/3) | cache on disk, MB (max at epoch end) |",
               "|---|---|---|---|---|---|---|---|---|---|"]
        notes = []
        for r in READERS:
            for c in CACHES:
                run = runs.get((ds, r, c))
                if not run:
                    continue
                s = summary(run, full)
                dsrep[f"{r}/{c}"] = {"run": run, "summary": s}
                if not s or run["partial"]:
                    first = run["error"].splitlines()[-1] if run["error"] else "no output"
                    if run["partial"]:
                        e = run["epochs"][-1]
                        first = (f"stopped by the run's timeout in epoch {e['epoch']} after {e['seconds']:.0f} s: "
                                 f"{e['samples']} samples, {e['proxy_gets']} GETs, {mb(e['proxy_bytes'])} MB "
                                 f"from the store in that epoch")
                    first = run["note"] or first
                    md.append(f"| {LABEL[r]} | {CACHE_LABEL[c]} | {mb(run['stored_bytes'])} | did not finish "
                              f"(see below) | | | | | | |")
                    notes.append(f"- {LABEL[r]}, cache {CACHE_LABEL[c]}: {first}")
                    continue
                if run["note"]:
                    notes.append(f"- {LABEL[r]}, cache {CACHE_LABEL[c]}: {run['note']}")
                sub = r in PER_OBJECT
                gets = "/".join(f"{g:.0f}" for g in (s["full_epoch_gets"] if sub else s["gets"]))
                byts = "/".join(mb(b) for b in (s["full_epoch_bytes"] if sub else s["bytes"]))
                if sub:
                    gets += f" (measured {'/'.join(str(g) for g in s['gets'])} for {s['samples'][0]} samples)"
                    byts += " (scaled)"
                steady = f"{s['steady_samples_per_s']:.0f}" if s["steady_samples_per_s"] else ""
                md.append(f"| {LABEL[r]} | {CACHE_LABEL[c]} | {mb(run['stored_bytes'])} | "
                          f"{s['samples_per_s']:.0f} | {s['epoch1_samples_per_s']:.0f} | {steady} | "
                          f"{100 * s['wait_fraction']:.1f}% | {gets} | {byts} | "
                          f"{mb(s['cache_disk_max']) if s['cache_disk_max'] is not None else ''}"
                          f"{' (over its bound)' if s['over_bound'] else ''} |")
        md.append("")
        if notes:
            md += ["Notes:", ""] + notes + [""]
        md += targets(ds, dsrep)
        rep["datasets"][ds] = {"samples": full, "runs": dsrep}
    with open(os.path.join(out, "loaders_vs_peers.json"), "w") as f:
        json.dump(rep, f, indent=1)
    plot(rep, out, setup)
    md += ["![samples/s per loader](loaders_samples_per_s.png)", "",
           "![bytes from the store per epoch](loaders_bytes_per_epoch.png)", ""]
    with open(os.path.join(out, "loaders_vs_peers.md"), "w") as f:
        f.write("\n".join(md))


def best(dsrep, readers, key, cache=None):
    v = []
    for k, x in dsrep.items():
        r, c = k.split("/")
        if r in readers and x["summary"] and (cache is None or c == cache or c == "none") and \
                not (cache and x["summary"]["over_bound"]):
            v.append((x["summary"][key], r, c))
    return v


def targets(ds, dsrep):
    out = [f"Targets ({ds}):", ""]
    st = best(dsrep, {"strata"}, "samples_per_s")
    naive = best(dsrep, {"boto3_objects"}, "samples_per_s")
    peers = best(dsrep, {"mosaic_streaming", "webdataset_tars", "s3torch_map", "litdata_stream"}, "samples_per_s")
    if st and naive:
        s, n = max(st)[0], max(naive)[0]
        out.append(f"- strata vs the per-object loader: {s:.0f} / {n:.0f} samples/s = **{s / n:.1f}x** "
                   f"(target 5x: {'met' if s >= 5 * n else 'missed'})")
    if st and peers:
        s = min(x[0] for x in st)
        p = max(peers)
        out.append(f"- strata (slower of its cache sizes, {s:.0f} samples/s) vs the best other peer "
                   f"({LABEL[p[1]]}, {p[2]}: {p[0]:.0f}): **{s / p[0]:.2f}x** "
                   f"(target >= 1: {'met' if s >= p[0] else 'missed'})")
    half = best(dsrep, set(READERS), "steady_bytes", cache="half")
    if half:
        sb = [x for x in half if x[1] == "strata"]
        others = [x for x in half if x[1] != "strata"]
        if sb and others:
            o = min(others)
            over = [LABEL[k.split("/")[0]] for k, x in dsrep.items()
                    if k.endswith("/half") and x["summary"] and x["summary"]["over_bound"]]
            unfinished = [LABEL[k.split("/")[0]] for k, x in dsrep.items() if k.endswith("/half") and not x["summary"]]
            out.append(f"- bytes from the store per steady epoch (mean of epochs 2-3) at a 50% cache: strata "
                       f"{mb(sb[0][0])} MB, the fewest among the others {LABEL[o[1]]} {mb(o[0])} MB "
                       f"(target fewest: {'met' if sb[0][0] <= o[0] else 'missed'})"
                       + (f"; left out: {', '.join(over)} (its cache held more than 50% of the data)" if over else "")
                       + (f"; {', '.join(unfinished)} did not finish" if unfinished else ""))
    return out + [""]


def plot(rep, out, setup):
    dss = list(rep["datasets"])
    fig, axes = plt.subplots(1, len(dss), figsize=(6.5 * len(dss), 4.5), squeeze=False)
    for ax, ds in zip(axes[0], dss):
        runs = rep["datasets"][ds]["runs"]
        names, x = [], 0
        for r in READERS:
            for c, col in (("big", "tab:blue"), ("half", "tab:orange"), ("none", "tab:gray")):
                s = runs.get(f"{r}/{c}", {}).get("summary")
                if s:
                    ax.bar(x, s["samples_per_s"], color=col, label=CACHE_LABEL[c])
                    names.append((x, r))
                    x += 1
            x += 0.5
        ax.set_yscale("log")
        ax.set_ylabel("samples/s over 3 epochs (log)")
        ticks = {}
        for xx, r in names:
            ticks.setdefault(r, []).append(xx)
        ax.set_xticks([sum(v) / len(v) for v in ticks.values()])
        ax.set_xticklabels([LABEL[r].split(" (")[0] for r in ticks], rotation=25, ha="right", fontsize=8)
        h, lab = ax.get_legend_handles_labels()
        uniq = dict(zip(lab, h))
        ax.legend(uniq.values(), uniq.keys(), fontsize=8, title="cache")
        ax.set_title(f"{ds}: samples/s, {2 * setup['delay_ms']} ms added round trip, step {setup['step_ms']} ms")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "loaders_samples_per_s.png"), dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(len(dss), 2, figsize=(15, 4.6 * len(dss)), squeeze=False)
    for row, ds in zip(axes, dss):
        runs = rep["datasets"][ds]["runs"]
        for ax, c in zip(row, ("big", "half")):
            x = 0
            names = []
            stored = None
            for r in READERS:
                item = runs.get(f"{r}/{c}") or runs.get(f"{r}/none")
                if not item:
                    continue
                s = item["summary"]
                if not s:
                    ax.text(x + 0.27, 0, "did not\nfinish", ha="center", va="bottom", fontsize=7, color="red")
                    names.append((x + 0.27, r))
                    x += 1
                    continue
                if r == "strata":
                    stored = item["run"]["stored_bytes"]
                for e, b in enumerate(s["full_epoch_bytes"]):
                    ax.bar(x + 0.27 * e, b / 1e6, width=0.25, color=f"C{e}", label=f"epoch {e + 1}")
                    ax.text(x + 0.27 * e, b / 1e6, f"{b / 1e6:.0f}", ha="center", va="bottom", fontsize=7)
                names.append((x + 0.27, r + ("*" if s["over_bound"] else "")))
                x += 1
            if stored:
                ax.axhline(stored / 1e6, color="k", ls="--", lw=1, label="strata's stored size")
            ax.set_xticks([n[0] for n in names])
            ax.set_xticklabels([LABEL[n[1].rstrip("*")].split(" (")[0] + ("\n(cache over its bound)" if n[1].endswith("*")
                                else "") for n in names], rotation=25, ha="right", fontsize=8)
            ax.set_ylabel("MB from the store")
            h, lab = ax.get_legend_handles_labels()
            uniq = dict(zip(lab, h))
            ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            ax.set_title(f"{ds}: bytes per epoch, cache {CACHE_LABEL[c]} (per-object: no cache, scaled)",
                         fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "loaders_bytes_per_epoch.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
