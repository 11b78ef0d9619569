#!/usr/bin/env bash
# Time the step loop is blocked per checkpoint save, synchronous against
# asynchronous (checkpoint.async), with the run directory in a benchmark RGW
# (--run-dir s3://...), for the Fashion-MNIST CNN and the tiny GPT on the CPU;
# and the step rate of the asynchronous run (uploads in the background) against
# the same run without checkpoints. One run per row, in this order, on the same
# machine; figures from each run's summary.json. Report:
# $STRATA_BENCH_OUT/checkpoint_async.md.
#   STEPS (200)  EVERY (20: a save every EVERY steps)  CONFIGS ("fashion_mnist_cnn gpt_tiny")
#   RUNS ("none sync async": which rows)  RGW_PORT (27980)  MON_PORT (27289)
#   THREADS (unset: the config's trainer.threads; 1 on 2 cores leaves a core to
#   the writer, the uploads and the gateway, as a GPU node's step loop does)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/bin:$PATH"
STEPS=${STEPS:-200} EVERY=${EVERY:-20} CONFIGS=${CONFIGS:-fashion_mnist_cnn gpt_tiny} RUNS=${RUNS:-none sync async}
THREAD_ARGS=()
[ -z "${THREADS:-}" ] || THREAD_ARGS=(trainer.threads="$THREADS")
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}
mkdir -p "$OUT"
BIN=${BIN:-build/bin}
export RGW_PORT=${RGW_PORT:-27980} MON_PORT=${MON_PORT:-27289}
export CEPH_DIR=/tmp/strata-cka-rgw-$RGW_PORT MEMSTORE_BYTES=${MEMSTORE_BYTES:-$((4 << 30))}
export RGW_EXTRA_CONF=$'rgw gc obj min wait = 0\nrgw gc processor period = 5'
W=$(mktemp -d /tmp/strata-cka.XXXXXX)
cleanup() {
  scripts/rgw.sh down >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
[ -f runs/data/fashion-mnist/train/manifest.json ] || scripts/demo.sh >/dev/null  # the demo packs both datasets
[ -f runs/data/kjv-corpus/kjv/train/manifest.json ] || scripts/corpus.sh runs/data/kjv-corpus >/dev/null
# The gateway runs at nice 19: on a pool the store is another machine, and the
# step rate measured here is to show strata's own cost of a background upload.
RGW_BUCKETS=cka nice -n 19 scripts/rgw.sh up >"$W/rgw.env" 2>"$W/rgw.log" || { cat "$W/rgw.log" >&2; exit 1; }
source "$W/rgw.env"

n_row=0
row() {  # row CONFIG NAME [KEY=VALUE...]: one run; prints its figures as a table row
  local config=$1 name=$2
  shift 2
  n_row=$((n_row + 1))  # every row on its own run directory and staging directory
  "$BIN/strata-train" --config "configs/$config.yaml" trainer.max_steps="$STEPS" logging.console=plain \
    schedule.warmup_steps=$((STEPS / 10)) data.s3.endpoint="$S3_ENDPOINT" outputs.staging_dir="$W/staging-$n_row" "${THREAD_ARGS[@]}" "$@" \
    --run-dir "s3://cka/$config-$name-$n_row" >"$W/$config-$name.log" 2>&1 ||
    { tail -5 "$W/$config-$name.log" >&2; exit 1; }
  python3 - "$W/staging-$n_row/summary.json" "$config" "$name" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n = s["checkpoint_saves"]
per = s["checkpoint_blocked_seconds"] / n if n else 0.0
print(f"| {sys.argv[2]} | {sys.argv[3]} | {n} | {per * 1000:.1f} | {s['checkpoint_waited_seconds']:.2f} | "
      f"{s['items_per_second']:.0f} {s['item_unit']}s/s |")
PY
}
{
  echo "# Checkpoint saves blocking the step loop: synchronous against asynchronous"
  echo
  echo "Run $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $(nproc) cores," \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $STEPS steps, a save every $EVERY" \
    "to s3:// on a local RGW (in RAM, at nice 19); trainer.threads ${THREADS:-as configured}; load average at the start $(cut -d' ' -f1 /proc/loadavg)."
  echo
  echo "| config | run | saves | blocked ms per save | waited s (all saves) | step rate |"
  echo "| --- | --- | ---: | ---: | ---: | ---: |"
  for config in $CONFIGS; do
    for run in $RUNS; do
      case $run in
        none) row "$config" none checkpoint.every_steps=0 checkpoint.every_epochs=0 ;;
        *) row "$config" "$run" checkpoint.every_steps="$EVERY" checkpoint.async=$([ "$run" = async ] && echo true || echo false) ;;
      esac
    done
  done
} | tee "$OUT/checkpoint_async.md"
echo "report: $OUT/checkpoint_async.md"
