"""Turns one bench/distributed_vs_torch.sh run's raw results into the report:
distributed_vs_torch.md (tables), distributed_vs_torch.json (every figure) and
distributed_vs_torch.png (allreduce bus bandwidth against size beside plain MPI
and the point-to-point limit; CNN samples/s per layout, strata and PyTorch DDP).
Run with Debian's python3 (-s): matplotlib.
  distributed_report.py RES_DIR OUT_DIR --rounds 3 --layouts "1x1 1x2 2x1 4x1" """
import argparse
import datetime
import json
import os

import distributed_parse as parse

p = argparse.ArgumentParser()
p.add_argument("res")
p.add_argument("out")
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--layouts", default="1x1 1x2 2x1 4x1")
a = p.parse_args()
R, LAYOUTS = a.res, a.layouts.split()

machine = dict(line.rstrip("\n").split("=", 1) for line in open(f"{R}/machine.txt") if "=" in line) \
    if os.path.exists(f"{R}/machine.txt") else {}
res = {"date": machine.get("date") or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "machine": machine, "pingpong": parse.pingpong(R), "allreduce": parse.allreduce(R),
       "overlap": parse.overlap(R), "ddp_bench": parse.ddp(R), "training": parse.training(R, LAYOUTS, a.rounds)}
tr = res["training"]
cores = int(machine.get("cores", os.cpu_count()))


def mb(b):
    return f"{b >> 20} MB" if b >= 1 << 20 else f"{b >> 10} KB"


def la(x):  # the lowest and highest 1-minute load seen around a figure
    return f"{min(x):.1f}-{max(x):.1f}" if x else "-"


def num(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def fmt(s):
    return f"{num(s['median'])} ({num(s['min'])}-{num(s['max'])})"


# The scaling baseline: one process on one core; speed-up and efficiency per core used.
base = {side: tr["1x1"][side]["median"] for side in ("strata", "ddp") if "1x1" in tr and side in tr["1x1"]}
for lt, row in tr.items():
    used = min(row["ranks"] * row["threads"], cores)
    for side in ("strata", "ddp"):
        if side in row and side in base:
            row[f"{side}_speedup"] = row[side]["median"] / base[side]
            row[f"{side}_efficiency"] = row[f"{side}_speedup"] / used

md = [f"# strata distributed: allreduce, overlap, data-parallel scaling, against MPI and PyTorch DDP ({res['date']})", "",
      f"Machine: {machine.get('cpu', '?')}, {cores} cores, {machine.get('memory', '?')}, Linux "
      f"{machine.get('kernel', '?')}; {machine.get('mpi', '?')}; PyTorch {machine.get('torch', '?')}. "
      "Shared with other work: the "
      "1-minute load average is beside each figure. Every rank and process is on this one machine: MPI over "
      "shared memory, gloo over loopback TCP.", ""]

pp = res["pingpong"]
if pp and pp["rows"]:
    top = pp["rows"][-1]
    best = max(pp["rows"], key=lambda r: r["exchange_gbps"])
    res["limit"] = {"exchange_gbps_at_largest": top["exchange_gbps"], "largest_bytes": top["bytes"],
                    "exchange_gbps_best": best["exchange_gbps"], "best_bytes": best["bytes"]}
    md += ["## Machine limits", "",
           "`strata-bench pingpong` (plain MPI_Send/MPI_Recv and MPI_Sendrecv between the 2 ranks, load "
           f"{la(pp['load_average'])}): one-way {top['one_way_gbps']:.2f} GB/s and {top['exchange_gbps']:.2f} GB/s "
           f"each way while both send at {mb(top['bytes'])} (best exchange {best['exchange_gbps']:.2f} GB/s at "
           f"{mb(best['bytes'])}). A 2-rank allreduce sends its whole buffer each way, so on a quiet machine its "
           "bus bandwidth cannot pass the exchange rate: that is the limit in the allreduce table. Measured "
           "minutes apart on a shared machine, a row above 100% there says that the load changed in between, "
           "not that the limit was passed."]
    if base:
        md += ["", "Single process, one thread (the scaling baseline below): "
               + ", ".join(f"{'strata' if s == 'strata' else 'PyTorch'} {fmt(tr['1x1'][s])} samples/s"
                           for s in base) + f" (load {la(tr['1x1']['load_average'])})."]
    md += [""]

ar = res["allreduce"]
if ar and ar["rows"]:
    # the transport's rate at the same size (pingpong runs the same 4 KB x 4^k sizes)
    lim = {r["bytes"]: r["exchange_gbps"] for r in pp["rows"]} if pp else {}
    md += ["## Allreduce: strata against plain MPI_Allreduce (2 ranks, f32 sum)", "",
           f"`{ar['header']}`; load {la(ar['load_average'])}. Limit: `pingpong`'s exchange rate at the same size.", "",
           "| size | strata µs | strata busbw GB/s | MPI µs | MPI busbw GB/s | strata/MPI | limit GB/s | strata / limit |",
           "|---|---|---|---|---|---|---|---|"]
    for r in ar["rows"]:
        x = lim.get(r["bytes"])
        md.append(f"| {mb(r['bytes'])} | {r['strata_us']:.1f} | {r['strata_busbw_gbps']:.3f} | {r['mpi_us']:.1f} "
                  f"| {r['mpi_busbw_gbps']:.3f} | {r['ratio']:.3f} | "
                  + (f"{x:.3f} | {r['strata_busbw_gbps'] / x:.0%} |" if x else "- | - |"))
    md += [""]

ov, db = res["overlap"], res["ddp_bench"]
if ov or db:
    md += ["## Overlap of the gradient sync with compute", ""]
if ov:
    md += [f"`strata-bench allreduce_overlap` ({ov['header'].split(': ', 1)[-1]}; allreduce alone "
           f"{ov['comm_ms']} ms, compute alone {ov['compute_ms']} ms; load {la(ov['load_average'])}); hidden = "
           "(t_comm + t_compute - t_overlapped) / min(t_comm, t_compute), 1 = fully hidden:", "",
           "| progress | overlapped ms | hidden |", "|---|---|---|"]
    names = {"wait": "none until wait()", "poll": "test() between compute slices", "thread": "progress thread"}
    md += [f"| {names[k]} | {v['overlapped_ms']} | {v['hidden']:.2f} |" for k, v in ov["modes"].items()] + [""]
if db:
    md += [f"`strata-bench ddp` ({db['header'].split(': ', 1)[-1]}; all gradients' allreduce alone "
           f"{db['allreduce_alone_ms']} ms; load {la(db['load_average'])}):", "",
           "| mode | step ms | backward ms | wait after backward ms | comm ms | hidden | / nosync | / plain |",
           "|---|---|---|---|---|---|---|---|"]
    for k, v in db["modes"].items():
        md.append(f"| {k} | " + " | ".join("-" if v[c] is None else f"{v[c]:g}" for c in
                                            ("step_ms", "backward_ms", "wait_after_ms", "comm_ms", "hidden",
                                             "vs_nosync", "vs_plain")) + " |")
    md += [""]
syncs = {lt: row["strata_grad_sync"] for lt, row in tr.items() if "strata_grad_sync" in row}
if syncs:
    md += ["The CNN's own gradient sync in the training runs below (strata-train's closing line, whole run): "
           + "; ".join(f"{lt}: {g['buckets']:.0f} bucket(s), {fmt(g['comm_ms_per_step'])} ms of communication per "
                       f"step, {g['hidden']['median']:.0%} of it hidden ({g['hidden']['min']:.0%}-"
                       f"{g['hidden']['max']:.0%})" for lt, g in syncs.items()) + ".", ""]

if tr:
    any_row = next(iter(tr.values()))
    md += ["## Fashion-MNIST CNN data-parallel: strata-train against PyTorch DDP (gloo)", "",
           f"Global batch {any_row.get('global_batch', '?')} split over the ranks, configs/fashion_mnist_cnn.yaml's "
           f"recipe (SGD Nesterov, cosine, clipping 5, fp32), steady-state samples/s over {any_row.get('timed_steps', '?')} "
           f"steps after the warm-up, median (min-max) of {a.rounds} alternated rounds. Speed-up against the same "
           "side's 1x1; efficiency = speed-up / cores used.", "",
           "| layout (ranks x threads) | strata | PyTorch DDP | strata/DDP | strata speed-up (eff.) "
           "| DDP speed-up (eff.) | load avg |", "|---|---|---|---|---|---|---|"]
    for lt, row in tr.items():
        note = ", oversubscribed" if row["oversubscribed"] else ""
        ddp_name = "DDP gloo" if row["ranks"] > 1 else "no DDP"
        sp = {s: f"{row[s + '_speedup']:.2f}x ({row[s + '_efficiency']:.0%})" if s + "_speedup" in row else "-"
              for s in ("strata", "ddp")}
        md.append(f"| {lt} ({ddp_name}{note}) | {fmt(row['strata']) if 'strata' in row else '-'} "
                  f"| {fmt(row['ddp']) if 'ddp' in row else '-'} | "
                  + (f"{row['ratio']:.2f}x ({min(row['ratio_per_round']):.2f}-{max(row['ratio_per_round']):.2f})"
                     if "ratio" in row else "-")
                  + f" | {sp['strata']} | {sp['ddp']} | {la(row['load_average'])} |")
    if "2x1" in tr and "1x2" in tr and "strata" in tr["2x1"] and "strata" in tr["1x2"]:
        md += ["", f"Same two cores, data-parallel against threads: strata 2x1 / 1x2 = "
               f"{tr['2x1']['strata']['median'] / tr['1x2']['strata']['median']:.2f}"
               + (f", PyTorch {tr['2x1']['ddp']['median'] / tr['1x2']['ddp']['median']:.2f}"
                  if "ddp" in tr["2x1"] and "ddp" in tr["1x2"] else "") + "."]
    md += [""]
md += ["![allreduce bus bandwidth and CNN samples/s](distributed_vs_torch.png)", ""]

os.makedirs(a.out, exist_ok=True)
json.dump(res, open(f"{a.out}/distributed_vs_torch.json", "w"), indent=1)
open(f"{a.out}/distributed_vs_torch.md", "w").write("\n".join(md) + "\n")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
if ar and ar["rows"]:
    xs = [r["bytes"] for r in ar["rows"]]
    left.plot(xs, [r["strata_busbw_gbps"] for r in ar["rows"]], "o-", label="strata allreduce")
    left.plot(xs, [r["mpi_busbw_gbps"] for r in ar["rows"]], "s--", label="plain MPI_Allreduce")
    if pp and pp["rows"]:
        left.plot([r["bytes"] for r in pp["rows"]], [r["exchange_gbps"] for r in pp["rows"]], ":", color="gray",
                  label="limit: MPI exchange, each way")
    left.set_xscale("log", base=2)
    left.set_xticks(xs, [mb(x) for x in xs], rotation=45)
    left.set_xlabel("message size")
    left.set_ylabel("bus bandwidth (GB/s)")
    left.set_title("allreduce, 2 ranks, f32 (median of reps)")
    left.legend()
if tr:
    lts = list(tr)
    for i, (side, label) in enumerate((("strata", "strata-train"), ("ddp", "PyTorch (DDP gloo when ranks > 1)"))):
        have = [lt for lt in lts if side in tr[lt]]
        med = [tr[lt][side]["median"] for lt in have]
        err = [[m - tr[lt][side]["min"] for lt, m in zip(have, med)], [tr[lt][side]["max"] - m for lt, m in zip(have, med)]]
        right.bar([lts.index(lt) + (i - 0.5) * 0.4 for lt in have], med, 0.4, yerr=err, capsize=3, label=label)
    right.set_xticks(range(len(lts)), [f"{lt}{' (oversub.)' if tr[lt]['oversubscribed'] else ''}" for lt in lts])
    right.set_xlabel("layout: ranks x threads per rank")
    right.set_ylabel("samples/s (median, bars: range)")
    right.set_title(f"Fashion-MNIST CNN, global batch {next(iter(tr.values())).get('global_batch', '?')}, {cores} cores")
    right.legend()
fig.suptitle(f"strata distributed benchmarks, {res['date']} (shared machine, see loads in the report)", fontsize=10)
fig.tight_layout()
fig.savefig(f"{a.out}/distributed_vs_torch.png", dpi=110)
print(open(f"{a.out}/distributed_vs_torch.md").read())
