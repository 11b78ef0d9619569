#!/usr/bin/env bash
# Data-parallel scaling on this machine: the Fashion-MNIST CNN
# (configs/fashion_mnist_cnn.yaml) trained by strata-train in several layouts,
# RANKSxTHREADS, at the same global batch (split evenly over the ranks) for the
# same number of steps; ranks > 1 run through scripts/strata-mpirun. Prints the
# steady-state samples/s of each layout (steps after the first WARMUP, from the
# timestamps of metrics.jsonl) and its ratio to the first layout.
#   usage: scripts/bench-scaling.sh [--layouts "1x2 2x1"] [--warmup 10] [--data DIR]
#                                   [--out FILE.jsonl] [--configs DIR] [STEPS] [GLOBAL_BATCH]
#   --data DIR     Fashion-MNIST packed by strata-pack (default: packed here, once per call)
#   --out FILE     append one JSON line per layout (figures, load averages)
#   --configs DIR  also write each layout's resolved config (strata-train --dry-run),
#                  DIR/RxT.yaml, for a peer that must train the same recipe
#   STRATA_BIN     strata's binaries (default build/bin)
# Layouts whose ranks x threads exceed the cores are marked oversubscribed.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LAYOUTS="1x2 2x1" WARMUP=10 DATA="" OUT="" CONFIGS=""
while [ $# -gt 0 ]; do
  case $1 in
    --layouts) LAYOUTS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --configs) CONFIGS=$2; shift 2 ;;
    -*) echo "bench-scaling.sh: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    *) break ;;
  esac
done
STEPS=${1:-150}
GB=${2:-128}
BIN=${STRATA_BIN:-build/bin}
W=$(mktemp -d /tmp/strata-scaling.XXXXXX)
trap 'rm -rf "$W"' EXIT
if [ -z "$DATA" ]; then
  D=/usr/share/datasets/fashion-mnist
  "$BIN/strata-pack" idx --images $D/train-images-idx3-ubyte.gz --labels $D/train-labels-idx1-ubyte.gz \
    --out "$W/data" --shard-size 8MiB >/dev/null 2>&1
  DATA=$W/data
fi
# Training only: no evaluation, checkpoints or console; a metrics row every WARMUP
# steps (the first row closes the warm-up); warm-up of the lr schedule shortened
# to the measured window.
ARGS=(--config configs/fashion_mnist_cnn.yaml data.train_url="file://$DATA" data.test_url= data.val_url=
      trainer.max_steps="$STEPS" trainer.eval_every_epochs=0 checkpoint.every_epochs=0 checkpoint.every_steps=0
      logging.console=off logging.tensorboard=false logging.every_steps="$WARMUP" schedule.warmup_steps=10)
load() { cut -d' ' -f1 /proc/loadavg; }
first=""
for lt in $LAYOUTS; do
  ranks=${lt%x*} threads=${lt#*x}
  [ $((GB % ranks)) = 0 ] || { echo "bench-scaling.sh: global batch $GB is not divisible by $ranks ranks" >&2; exit 2; }
  L=(trainer.threads="$threads" data.batch_size=$((GB / ranks)) data.cache_dir="$W/cache-$lt")
  if [ -n "$CONFIGS" ]; then
    mkdir -p "$CONFIGS"
    "$BIN/strata-train" --dry-run "${ARGS[@]}" "${L[@]}" >"$CONFIGS/$lt.yaml" 2>"$W/$lt.dry-run.log" ||
      { cat "$W/$lt.dry-run.log" >&2; exit 1; }
  fi
  l0=$(load)
  if [ "$ranks" = 1 ]; then
    "$BIN/strata-train" "${ARGS[@]}" "${L[@]}" --run-dir "$W/run-$lt" >"$W/$lt.log" 2>&1 ||
      { cat "$W/$lt.log" >&2; exit 1; }
  else
    # --bind-to none: on a machine shared with other work a rank pinned to a busy core cannot move
    scripts/strata-mpirun --oversubscribe --bind-to none -np "$ranks" "$BIN/strata-train" "${ARGS[@]}" "${L[@]}" \
      --run-dir "$W/run-$lt" >"$W/$lt.log" 2>&1 || { cat "$W/$lt.log" >&2; exit 1; }
  fi
  l1=$(load)
  line=$(python3 - "$W/run-$lt" "$lt" "$GB" "$l0" "$l1" "$(nproc)" "$W/$lt.log" <<'PY'
import json, re, sys
run, lt, gb, l0, l1, cores = sys.argv[1], sys.argv[2], int(sys.argv[3]), *map(float, sys.argv[4:6]), int(sys.argv[6])
# strata-train's closing line on rank 0 when it synced gradients (whole run, warm-up included)
sync = re.search(r"gradient sync: (\d+) bucket\(s\), (\d+) steps, comm ([0-9.]+) s, waited after backward ([0-9.]+) s",
                 open(sys.argv[7]).read())
rows = [r for r in map(json.loads, open(f"{run}/metrics.jsonl")) if r.get("kind") == "train"]
ranks, threads = map(int, lt.split("x"))
summary = json.load(open(f"{run}/summary.json"))
steady = (rows[-1]["step"] - rows[0]["step"]) * gb / (rows[-1]["timestamp"] - rows[0]["timestamp"])
print(json.dumps({"layout": lt, "ranks": ranks, "threads": threads, "global_batch": gb,
                  "steps": summary["steps"], "timed_steps": rows[-1]["step"] - rows[0]["step"],
                  "samples_per_second": steady, "whole_run_samples_per_second": summary["samples_per_second"],
                  "oversubscribed": ranks * threads > cores, "load_average": [l0, l1],
                  "grad_sync": dict(zip(("buckets", "steps", "comm_seconds", "wait_seconds"),
                                        map(float, sync.groups()))) if sync else None}))
PY
)
  [ -n "$OUT" ] && echo "$line" >>"$OUT"
  first=${first:-$line}
  python3 - "$first" "$line" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
note = ", oversubscribed" if b["oversubscribed"] else ""
print(f"CNN {b['layout']:>4} ({b['ranks']} rank(s) x {b['threads']} thread(s){note}): "
      f"{b['samples_per_second']:8.1f} samples/s steady ({b['timed_steps']} steps, global batch {b['global_batch']}), "
      f"x{b['samples_per_second'] / a['samples_per_second']:.2f} of {a['layout']}; load {b['load_average'][0]:.1f}"
      f" -> {b['load_average'][1]:.1f}")
PY
done
