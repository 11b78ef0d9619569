"""Turns one bench/train_vs_torch.sh run's raw results into the report:
train_vs_torch.md (tables), train_vs_torch.json (every figure) and
loss_vs_time.png (loss against wall time, strata and PyTorch, the time-to-
accuracy runs). Run with Debian's python3 (-s): matplotlib and yaml.
  report.py RES_DIR OUT_DIR --rounds 3 --models "mlp cnn resnet gpt" --target 0.91"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess

import perf_shares

p = argparse.ArgumentParser()
p.add_argument("res")
p.add_argument("out")
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--models", default="mlp cnn resnet gpt")
p.add_argument("--target", type=float, default=0.91)
a = p.parse_args()
R = a.res
MODELS = a.models.split()


def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "runs": xs}


def num(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def fmt(s):
    return f"{num(s['median'])} ({num(s['min'])}-{num(s['max'])})"


loads = {}
if os.path.exists(f"{R}/loads.txt"):
    for line in open(f"{R}/loads.txt"):
        m, side, r, l0, l1 = line.split()
        loads.setdefault(m, []).extend([float(l0), float(l1)])

gemm = perf_shares.gemm_peak(f"{R}/gemm.txt") if os.path.exists(f"{R}/gemm.txt") else None
# The date of the measurements, not of this report: when the newest raw result was
# written, so a report made again from the same raw results keeps the run's date.
raw_end = max((os.path.getmtime(os.path.join(R, f)) for f in os.listdir(R)), default=None)
when = (datetime.datetime.fromtimestamp(raw_end, datetime.timezone.utc) if raw_end
        else datetime.datetime.now(datetime.timezone.utc))
result = {"date": when.isoformat(timespec="seconds"),
          "machine": {}, "gemm": gemm, "throughput": {}, "profile": {}, "time_to_accuracy": None}
cpu = re.search(r"Model name:\s*(.*)", subprocess.run(["lscpu"], capture_output=True, text=True).stdout)
result["machine"] = {"cpu": cpu.group(1).strip() if cpu else platform.processor(), "cores": os.cpu_count(),
                     "kernel": platform.release(),
                     "torch": open(f"{R}/torch-version.txt").read().strip()
                     if os.path.exists(f"{R}/torch-version.txt") else None}

md = []
for m in MODELS:
    runs = {"strata": [], "eager": [], "compile": []}
    flops = tokens = None
    batch = json.load(open(f"{R}/{m}.config.json"))["data"]["batch_size"] if os.path.exists(f"{R}/{m}.config.json") else None
    for r in range(1, a.rounds + 1):
        f = f"{R}/{m}-strata-{r}.jsonl"
        if os.path.exists(f):
            rows = [x for x in jsonl(f) if x["kind"] == "train"]
            s = json.load(open(f"{R}/{m}-strata-{r}.summary.json"))
            per_sample_items = s["items_per_second"] / s["samples_per_second"]
            tokens = round(per_sample_items) if s["item_unit"] == "token" else None
            flops = s["flops_per_item"] * per_sample_items
            runs["strata"].append(rows)
        for side in ("eager", "compile"):
            f = f"{R}/{m}-{side}-{r}.json"
            if os.path.exists(f):
                j = json.load(open(f))
                runs[side].append(j["samples_per_second"])
    if not runs["strata"]:
        continue
    strata = [(rows[-1]["step"] - rows[0]["step"]) * batch / (rows[-1]["timestamp"] - rows[0]["timestamp"])
              for rows in runs["strata"]]
    row = {"batch": batch, "flops_per_sample": flops, "tokens_per_sample": tokens, "strata": spread(strata),
           "load_average": [min(loads.get(m, [0])), max(loads.get(m, [0]))]}
    for side in ("eager", "compile"):
        if runs[side]:
            row[side] = spread(runs[side])
            row[f"ratio_vs_{side}"] = row["strata"]["median"] / row[side]["median"]
    if gemm and flops:
        for side in ("strata", "eager", "compile"):
            if side in row:
                row[side]["gflops"] = row[side]["median"] * flops / 1e9
                row[side]["mfu"] = row[side]["gflops"] / gemm["peak_gflops"]
    result["throughput"][m] = row

for m in MODELS:
    f = f"{R}/perf-{m}.txt"
    if os.path.exists(f):
        result["profile"][m] = perf_shares.shares(f)

def tta_round(prefix):
    """One time-to-accuracy round from <prefix>launch.txt, <prefix>strata.jsonl, <prefix>eager.json."""
    launch = {}
    for line in open(f"{prefix}launch.txt"):
        k, t, load = line.split()
        launch[k] = (float(t), float(load))
    rows = jsonl(f"{prefix}strata.jsonl")
    vals = [r for r in rows if r["kind"] == "val"]
    hit = next((v for v in vals if v["accuracy"] >= a.target), None)
    rnd = {"strata": {"epochs": [[int(v["epoch"]), v["accuracy"], v["timestamp"] - launch["strata"][0]] for v in vals],
                      "reached_epoch": int(hit["epoch"]) if hit else None,
                      "seconds": hit["timestamp"] - launch["strata"][0] if hit else None,
                      "best": max((v["accuracy"] for v in vals), default=None),
                      "load_average": [launch["strata"][1], launch["strata-end"][1]],
                      "loss": [[r["timestamp"] - launch["strata"][0], r["loss"]] for r in rows if r["kind"] == "train"]}}
    e = json.load(open(f"{prefix}eager.json"))
    t0 = launch["eager"][0]
    ehit = next((v for v in e["evals"] if v[2] >= a.target), None)
    rnd["eager"] = {"epochs": [[v[1], v[2], v[0] - t0] for v in e["evals"]],
                    "reached_epoch": ehit[1] if ehit else None, "seconds": ehit[0] - t0 if ehit else None,
                    "best": max((v[2] for v in e["evals"]), default=None),
                    "load_average": [launch["eager"][1], launch.get("eager-end", (0, float("nan")))[1]],
                    "finished": "eager-end" in launch,
                    "loss": [[x[0] - t0, x[2]] for x in e["losses"]]}
    if rnd["strata"]["seconds"] and rnd["eager"]["seconds"]:
        rnd["ratio"] = rnd["strata"]["seconds"] / rnd["eager"]["seconds"]
    elif rnd["strata"]["seconds"] and rnd["eager"]["epochs"]:  # PyTorch cut short: its time is at least this
        rnd["ratio_at_most"] = rnd["strata"]["seconds"] / rnd["eager"]["epochs"][-1][2]
    return rnd


# rounds tta-1-*, tta-2-*, ...; a results directory from before --tta-rounds has one, tta-*
prefixes = [f"{R}/tta-{n}-" for n in range(1, 100) if os.path.exists(f"{R}/tta-{n}-eager.json")]
if not prefixes and os.path.exists(f"{R}/tta-eager.json"):
    prefixes = [f"{R}/tta-"]
if prefixes:
    rounds = [tta_round(p) for p in prefixes]
    ratios = [r["ratio"] for r in rounds if "ratio" in r]
    tta = {"target": a.target, "rounds": rounds}
    if ratios and len(ratios) == len(rounds):
        tta["ratio"] = statistics.median(ratios)
        tta["ratios"] = ratios
    # the table's and plot's round: the one whose ratio is the median (the first when there is none)
    shown = min(rounds, key=lambda r: abs(r.get("ratio", 0) - tta.get("ratio", 0)))
    tta.update({k: shown[k] for k in ("strata", "eager")})
    if "ratio_at_most" in shown and "ratio" not in tta:
        tta["ratio_at_most"] = shown["ratio_at_most"]
    result["time_to_accuracy"] = tta

os.makedirs(a.out, exist_ok=True)
json.dump(result, open(f"{a.out}/train_vs_torch.json", "w"), indent=1)

# ---- the markdown report
mc = result["machine"]
md += [f"# strata against PyTorch on the CPU ({result['date']})", "",
       f"Machine: {mc['cpu']}, {mc['cores']} cores (shared with other work: load averages beside each row), "
       f"Linux {mc['kernel']}; PyTorch {mc['torch']}; 2 threads each, fp32.", ""]
if gemm:
    if gemm["nominal_gflops"]:
        nominal = f"{gemm['nominal_gflops']:.0f} GFLOP/s (strata-bench's estimate)"
    else:  # strata-bench estimates AVX-512 parts only; AVX2 + FMA: 2 FMA units x 8 lanes x 2 FLOP per cycle
        mhz = re.search(r"BogoMIPS:\s*([0-9.]+)", subprocess.run(["lscpu"], capture_output=True, text=True).stdout)
        ghz = float(mhz.group(1)) / 2000 if mhz else 0
        gemm["nominal_gflops"] = os.cpu_count() * ghz * 32
        nominal = (f"{gemm['nominal_gflops']:.0f} GFLOP/s ({os.cpu_count()} cores x {ghz:.2f} GHz (BogoMIPS / 2) "
                   f"x 2 FMA units x 8 fp32 lanes x 2)")
    md += [f"Machine limit, measured in this run (`strata-bench gemm --threads 2 --sizes 512,1024,2048`): the "
           f"fastest fp32 GEMM {gemm['peak_gflops']:.1f} GFLOP/s ({gemm['peak_source']}); nominal fp32 peak "
           f"{nominal}. MFU below is the model's training FLOP/s over the measured GEMM rate.", ""]
md += ["## Training throughput (samples/s, median (min-max) of the rounds)", "",
       "| model | batch | strata | PyTorch eager | torch.compile | strata/eager | strata/compile "
       "| GFLOP per sample | MFU strata / eager / compile | load avg |",
       "|---|---|---|---|---|---|---|---|---|---|"]
for m, row in result["throughput"].items():
    mfu = " / ".join(f"{row[s]['mfu']:.0%}" if s in row and "mfu" in row[s] else "-"
                     for s in ("strata", "eager", "compile"))
    name = f"{m} (x{ctx} tokens)" if (ctx := row.get("tokens_per_sample")) else m
    md.append(f"| {name} | {row['batch']} | {fmt(row['strata'])} | {fmt(row['eager']) if 'eager' in row else '-'} "
              f"| {fmt(row['compile']) if 'compile' in row else '-'} "
              f"| {row.get('ratio_vs_eager', 0):.2f}x | {row.get('ratio_vs_compile', 0):.2f}x "
              f"| {row['flops_per_sample'] / 1e9:.4f} | {mfu} "
              f"| {row['load_average'][0]:.1f}-{row['load_average'][1]:.1f} |")
if result["profile"]:
    cats = perf_shares.CATEGORIES
    md += ["", "## Where strata's step goes (perf, share of samples by symbol)", "",
           "| model | " + " | ".join(c for c, _ in cats) + " | other |",
           "|---|" + "---|" * (len(cats) + 1)]
    for m, sh in result["profile"].items():
        md.append(f"| {m} | " + " | ".join(f"{sh['shares'].get(c, 0):.0%}" for c, _ in cats)
                  + f" | {sh['shares'].get('other', 0):.0%} |")
    md += ["", "Top symbols per model:", ""]
    for m, sh in result["profile"].items():
        md.append(f"- {m}: " + "; ".join(f"{s} {v:.1%} ({c})" for s, v, c in sh["top"][:6]))
tta = result["time_to_accuracy"]
if tta:
    md += ["", f"## Time to {tta['target']:.0%} test accuracy: Fashion-MNIST CNN, configs/fashion_mnist_cnn.yaml", "",
           "| | epoch reached | wall s from launch | best accuracy | per-epoch accuracy | load avg |",
           "|---|---|---|---|---|---|"]
    several = len(tta["rounds"]) > 1
    for n, rnd in enumerate(tta["rounds"], 1):
        for side in ("strata", "eager"):
            t = rnd[side]
            ep = ", ".join(f"{e}: {acc:.4f}" for e, acc, _ in t["epochs"])
            name = "strata" if side == "strata" else "PyTorch eager"
            md.append(f"| {name}{f' (round {n})' if several else ''} | {t['reached_epoch'] or 'not reached'} "
                      f"| {t['seconds'] or 0:.0f} | {t['best'] or 0:.4f} | {ep} "
                      f"| {t['load_average'][0]:.1f}-{t['load_average'][1]:.1f} |")
    if "ratio" in tta and several:
        md += ["", f"Wall-time ratio strata / PyTorch: {tta['ratio']:.2f}, the median of the rounds' "
               + ", ".join(f"{r:.2f}" for r in tta["ratios"]) + " (the plot shows the median round)."]
    elif "ratio" in tta:
        md += ["", f"Wall-time ratio strata / PyTorch: {tta['ratio']:.2f}."]
    elif "ratio_at_most" in tta:
        md += ["", f"PyTorch's run was cut short before the target: wall-time ratio strata / PyTorch at most "
               f"{tta['ratio_at_most']:.2f} (its last evaluation's time as a lower bound on its time to target)."]
open(f"{a.out}/train_vs_torch.md", "w").write("\n".join(md) + "\n")

if tta:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for side, label in (("strata", "strata"), ("eager", "PyTorch eager")):
        xs, ys = zip(*tta[side]["loss"]) if tta[side]["loss"] else ([], [])
        ax.plot(xs, ys, label=label)
        for e, acc, t in tta[side]["epochs"]:
            ax.axvline(t, color="C0" if side == "strata" else "C1", alpha=0.15)
    ax.set_xlabel("wall time from launch (s)")
    ax.set_ylabel("training loss (mean over 50 steps)")
    ax.set_yscale("log")
    ax.set_title(f"Fashion-MNIST CNN, 2 threads, until {tta['target']:.0%} test accuracy (lines: epochs)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{a.out}/loss_vs_time.png", dpi=110)
print(open(f"{a.out}/train_vs_torch.md").read())
