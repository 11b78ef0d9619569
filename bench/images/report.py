"""Summarises bench/images_vs_peers.sh's raw results (RES/<contestant>.jsonl,
RES/setup.json) into OUT/images_vs_peers.{md,json}: per contestant and thread
count the median images/s over the rounds (and its range), images/s per thread,
images per CPU second (user + system time of every thread and worker process
in the timed part: the per-core figure that the machine's other load does not
move), strata's ratio to each at the same thread count, and the 2-thread
scaling; then the issue's targets on both per-core measures."""
import glob
import json
import os
import statistics
import sys

NAMES = {"strata": "strata (image_augment)", "tv_pillow": "torchvision DataLoader, Pillow",
         "tv_simd": "torchvision DataLoader, Pillow-SIMD", "dali": "DALI CPU (decoders.image + random_resized_crop)",
         "dali_fused": "DALI CPU (decoders.image_random_crop + resize)"}
ORDER = ["strata", "tv_pillow", "tv_simd", "dali", "dali_fused"]


def main():
    res, out = sys.argv[1], sys.argv[2]
    setup = json.load(open(os.path.join(res, "setup.json")))
    runs, cpu = {}, {}
    for f in glob.glob(os.path.join(res, "*.jsonl")):
        if os.path.basename(f) == "loader.jsonl":
            continue
        for line in open(f):
            if line.strip():
                d = json.loads(line)
                runs.setdefault((d["key"], d["threads"]), []).append(d["images_per_s"])
                cpu.setdefault((d["key"], d["threads"]), []).append(d["images_per_cpu_s"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    errors = sorted(os.path.basename(p) for p in glob.glob(os.path.join(res, "*.error")))
    keys = sorted({k for k, _ in runs}, key=lambda k: ORDER.index(k) if k in ORDER else 99)
    threads = sorted({t for _, t in runs})
    rows = []
    for k in keys:
        for t in threads:
            if (k, t) not in med:
                continue
            m = med[(k, t)]
            s = med.get(("strata", t))
            one = med.get((k, 1))
            rows.append({"contestant": k, "threads": t, "images_per_s": m, "min": min(runs[(k, t)]),
                         "max": max(runs[(k, t)]), "runs": len(runs[(k, t)]), "per_thread": m / t,
                         "strata_ratio": s / m if s else None, "per_cpu_s": cmed[(k, t)],
                         "strata_cpu_ratio": cmed[("strata", t)] / cmed[(k, t)] if s else None,
                         "scaling": m / one if one and t != 1 else None})
    L = ["# Image decode + RandomResizedCrop + flip + normalise: strata against torchvision and DALI", "",
         "Run %s, commit %s, %s, %d cores, %s GiB; load average (1, 5, 15 min) %s before, %s after. "
         "%d ImageNet-sized JPEGs (500 x 375, quality 90, %s MiB), %d rounds, median shown (range in brackets)."
         % (setup["date"], setup["commit"], setup["cpu"], setup["cores"], setup["memory_gib"],
            setup["load_before"], setup["load_after"], setup["count"], setup["images_mib"], setup["rounds"]), "",
         "| contestant | threads | images/s | images/s per thread | strata / this | images per CPU s "
         "| strata / this (CPU) | 2-thread scaling |",
         "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        L.append("| %s | %d | %.0f (%.0f-%.0f) | %.0f | %s | %.0f | %s | %s |" % (
            NAMES.get(r["contestant"], r["contestant"]), r["threads"], r["images_per_s"], r["min"], r["max"],
            r["per_thread"], "%.2fx" % r["strata_ratio"] if r["strata_ratio"] else "", r["per_cpu_s"],
            "%.2fx" % r["strata_cpu_ratio"] if r["strata_cpu_ratio"] else "",
            "%.2fx" % r["scaling"] if r["scaling"] else ""))
    L += ["", "Targets (issue #32): strata's ratio at each thread count, on images/s per thread (wall clock) "
          "and on images per CPU second:", ""]
    targets = [("tv_pillow", 1.5), ("tv_simd", 1.2), ("dali", 1.0)]
    verdicts = []
    for k, goal in targets:
        for t in threads:
            if ("strata", t) in med and (k, t) in med:
                ratio = med[("strata", t)] / med[(k, t)]
                cratio = cmed[("strata", t)] / cmed[(k, t)]
                ok, cok = ratio >= goal, cratio >= goal
                verdicts.append({"peer": k, "threads": t, "ratio": ratio, "cpu_ratio": cratio, "goal": goal,
                                 "met": ok, "cpu_met": cok})
                L.append("- strata >= %.1fx %s at %d thread%s: %.2fx (%s), per CPU second %.2fx (%s)" % (
                    goal, NAMES[k], t, "s" if t > 1 else "", ratio, "met" if ok else "NOT met", cratio,
                    "met" if cok else "NOT met"))
    if ("strata", 1) in med and ("strata", 2) in med:
        sc = med[("strata", 2)] / med[("strata", 1)]
        verdicts.append({"scaling": sc, "goal": 1.8, "met": sc >= 1.8})
        L.append("- strata's images/s at 2 threads >= 1.8x at 1: %.2fx, %s (images per CPU second at 2 threads / at 1: "
                 "%.2fx)" % (sc, "met" if sc >= 1.8 else "NOT met", cmed[("strata", 2)] / cmed[("strata", 1)]))
    loader = os.path.join(res, "loader.jsonl")
    lrows = [json.loads(l) for l in open(loader) if l.strip()] if os.path.exists(loader) else []
    if lrows:
        L += ["", "strata's loader on the same images packed by `strata-pack files`, served over HTTP behind "
              "`strata-proxy --delay-ms %d` (about %d ms per request round trip), `strata-bench loader "
              "--image-size 224`: the decode threads decode, crop, flip and normalise; batches of 64, a %g ms "
              "step each; epoch 1 from a cold cache, epoch 2 from the warm one:" % (
                  lrows[0]["delay_ms"], 2 * lrows[0]["delay_ms"], lrows[0]["step_ms"]), "",
              "| decode threads | epoch | samples/s | data-wait | GETs (proxy) | MB (proxy) |",
              "|---:|---:|---:|---:|---:|---:|"]
        for r in lrows:
            L.append("| %d | %d | %.0f | %.1f%% | %d | %.1f |" % (
                r["decode_threads"], r["epoch"], r["samples"] / r["seconds"], 100 * r["wait"] / r["seconds"],
                r["proxy_gets"], r["proxy_bytes"] / 1e6))
    if errors:
        L += ["", "Runs that failed (their errors in raw/images/): " + ", ".join(errors)]
    L += ["", "Versions: torch %s, torchvision %s, Pillow %s; Pillow-SIMD %s; DALI %s." % (
        setup["torch"].get("torch"), setup["torch"].get("torchvision"), setup["torch"].get("pillow"),
        setup["simd"].get("pillow-simd"), setup["dali"].get("nvidia-dali-cuda130"))]
    open(os.path.join(out, "images_vs_peers.md"), "w").write("\n".join(L) + "\n")
    json.dump({"setup": setup, "rows": rows, "targets": verdicts, "runs": {"%s/%d" % k: v for k, v in runs.items()},
               "runs_per_cpu_s": {"%s/%d" % k: v for k, v in cpu.items()}, "loader": lrows},
              open(os.path.join(out, "images_vs_peers.json"), "w"), indent=1)
    print("\n".join(L))


if __name__ == "__main__":
    main()
