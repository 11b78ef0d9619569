"""The report of bench/elastic_resize.sh: for every case directory under RAW,
the time from the membership change to the first step at the new size, split
into its parts, and the steps lost (finished before the change, done again
after it).
  elastic_report.py RAW > elastic_resize.md
strata cases: console.txt (strata-elastic's lines, each after its Unix time),
change.txt (the change's time), metrics.jsonl (a train row per step, with its
timestamp). torch cases: events.jsonl (bench/torch/elastic_peer.py's events),
change.txt (the change's time, then the agents' exit status)."""
import json
import pathlib
import statistics
import sys


def read_change(d):
    lines = (d / "change.txt").read_text().split("\n")
    t = float(lines[0].split()[0])
    status = next((int(x.split()[1]) for x in lines if x.startswith("exit ")), 0)
    return t, status


def first_line(console, text, after):
    for t, line in console:
        if t >= after and text in line:
            return t
    raise SystemExit(f"elastic_report: no line with '{text}' after {after}")


def strata_case(d, grow):
    change, _ = read_change(d)
    console = []
    for raw in (d / "console.txt").read_text().splitlines():
        t, _, line = raw.partition(" ")
        try:
            console.append((float(t), line))
        except ValueError:  # a progress bar's redraw (carriage returns) inside a line
            continue
    steps = []
    for x in (d / "metrics.jsonl").read_text().splitlines():
        try:
            r = json.loads(x)
        except ValueError:  # a row torn by a kill (strata before d6bcf85 appended to it)
            continue
        if r.get("kind") == "train":
            steps.append((r["timestamp"], r["step"]))
    if grow:
        noticed = first_line(console, "membership 2 -> 3", change)
        stop_sent = first_line(console, "stopping it to relaunch", noticed)
        stopped = first_line(console, "the job stopped for the membership change", stop_sent)
        launched = first_line(console, "launching 3 ranks", stopped)
        parts = [("notice", noticed - change), ("wait for the next checkpoint", stop_sent - noticed),
                 ("finish the step, checkpoint, exit", stopped - stop_sent), ("relaunch", launched - stopped)]
    else:
        stopped = noticed = first_line(console, "rank died", change)
        launched = first_line(console, "launching 2 ranks", noticed)
        parts = [("notice (mpirun ends the job)", noticed - change), ("backoff, relaunch", launched - noticed)]
    first = next((t, s) for t, s in steps if t >= launched)
    parts.append(("start: MPI, model, data, restore, first step", first[0] - launched))
    last_before = max(s for t, s in steps if t <= stopped)
    return {"total": first[0] - change, "parts": parts, "lost": last_before - (first[1] - 1)}


def torch_case(d, grow):
    change, status = read_change(d)
    events = [json.loads(x) for x in (d / "events.jsonl").read_text().splitlines()]
    after = [e for e in events if e["t"] >= change]
    want_world = 3 if grow else 2
    first = next((e for e in after if e["event"] == "step" and e["world"] == want_world), None)
    if first is None:
        agent = (d / ("agent2.txt" if grow else "agent.txt")).read_text().splitlines()
        why = next((x for x in reversed(agent) if "Error" in x), agent[-1] if agent else "no output")
        return {"failed": f"no step at world size {want_world} (exit {status}): {why.strip()[:200]}"}
    starts = [e for e in after if e["event"] == "start" and e["t"] <= first["t"]]
    joined = [e for e in after if e["event"] == "joined" and e["t"] <= first["t"]][-1]
    resumed = [e for e in after if e["event"] == "resumed" and e["t"] <= first["t"]][-1]
    good = [s for s in starts if s["restart"] == joined["restart"]][-1]
    last_before = max(e["step"] for e in events if e["event"] == "step" and e["t"] <= change)
    parts = [("notice, restart the workers", good["t_process"] - change),
             ("rendezvous, process group", joined["t"] - good["t_process"]),
             ("model, data, restore", resumed["t"] - joined["t"]), ("first step", first["t"] - resumed["t"])]
    return {"total": first["t"] - change, "parts": parts, "lost": last_before - resumed["step"],
            "failed_restarts": len({s["restart"] for s in starts}) - 1}


def main():
    raw = pathlib.Path(sys.argv[1])
    machine = dict(x.split("=", 1) for x in (raw / "machine.txt").read_text().splitlines() if "=" in x)
    cases = {}
    for d in sorted(p for p in raw.iterdir() if p.is_dir()):
        name = d.name.rsplit("_", 1)[0]
        grow = name.endswith("grow")
        cases.setdefault(name, []).append((strata_case if name.startswith("strata") else torch_case)(d, grow))
    print(f"# Resize latency: strata-elastic beside torchrun\n\nRun {machine.get('date')}, strata at "
          f"{machine.get('commit')}, {machine.get('cores')} cores ({machine.get('cpu')}), torch "
          f"{machine.get('torch')}; `bench/elastic_resize.sh`. Fashion-MNIST MLP, global batch 192, "
          "one thread per rank, a checkpoint every 50 steps; the change at step 120. Seconds from the "
          "change to the first step at the new size (median of the runs; parts of the median run).\n")
    print("| case | runs | seconds to the first step | parts | steps lost |")
    print("| --- | --- | --- | --- | --- |")
    totals = {}
    for name, runs in cases.items():
        ok = [r for r in runs if "failed" not in r]
        if not ok:
            print(f"| {name} | {len(runs)} | did not resize | {runs[0]['failed']} | |")
            continue
        ok.sort(key=lambda r: r["total"])
        mid = ok[len(ok) // 2]
        totals[name] = statistics.median(r["total"] for r in ok)
        parts = "; ".join(f"{n} {s:.2f}" for n, s in mid["parts"])
        if mid.get("failed_restarts"):
            parts += f" (after {mid['failed_restarts']} failed restart(s))"
        span = f"{totals[name]:.2f}" + (f" ({ok[0]['total']:.2f}-{ok[-1]['total']:.2f})" if len(ok) > 1 else "")
        print(f"| {name} | {len(ok)} of {len(runs)} | {span} | {parts} | {mid['lost']} |")
    for peer in ("torch_death", "torch_death_fs"):
        if "strata_death" in totals and peer in totals:
            print(f"\nA dead worker, strata_death against {peer}: torchrun took "
                  f"{totals[peer] / totals['strata_death']:.2f}x strata-elastic's time "
                  f"({totals[peer]:.2f} s against {totals['strata_death']:.2f} s).")


if __name__ == "__main__":
    main()
