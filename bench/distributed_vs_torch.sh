#!/usr/bin/env bash
# strata's distributed figures in one run, each beside its peer and the machine's
# limit: the allreduce against plain MPI_Allreduce (several sizes, 2 ranks) with
# MPI's point-to-point bandwidth as the transport's limit; the overlap of the
# gradient sync with backward (strata-bench allreduce_overlap, ddp); and the
# Fashion-MNIST CNN trained data-parallel by strata-train
# (scripts/bench-scaling.sh, through scripts/strata-mpirun) beside PyTorch
# DistributedDataParallel over gloo (bench/torch/ddp_peer.py) in the same layouts
# (RANKSxTHREADS), same global batch and recipe, rounds alternating the two.
# Writes build/bench-results/<date>/distributed_vs_torch.{md,json,png} and raw-distributed/
# (outside the tracked tree; the report to keep is copied into
# bench/results/distributed_vs_torch/ by hand: bench/README.md).
#   usage: bench/distributed_vs_torch.sh [--rounds 3] [--layouts "1x1 1x2 2x1 4x1"]
#                                        [--phases "limits allreduce overlap train"]
#                                        [--steps 50] [--warmup 10] [--max 64M]
#   STRATA_BIN          strata's binaries (default build/bin)
#   STRATA_BENCH_OUT    where the report goes (default build/bench-results/<UTC date>)
#   STRATA_BENCH_VENV   the venv with torch (default build/bench-torch-venv; made
#                       here when torch does not import: CPU wheel index, else PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=3 LAYOUTS="1x1 1x2 2x1 4x1" PHASES="limits allreduce overlap train" STEPS=50 WARMUP=10 MAX=64M GB=128
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --layouts) LAYOUTS=$2; shift 2 ;;
    --phases) PHASES=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    *) echo "distributed_vs_torch.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export STRATA_BIN=${STRATA_BIN:-build/bin}
BIN=$STRATA_BIN
VENV=${STRATA_BENCH_VENV:-build/bench-torch-venv}
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}  # a second run on one day: another directory
RES=$OUT/raw-distributed  # raw results of every phase; the report is rebuilt from whatever is there
mkdir -p "$RES"
W=$(mktemp -d /tmp/strata-dvt.XXXXXX)
trap 'rm -rf "$W"' EXIT
SYSPY="/usr/bin/python3 -s"  # Debian's python3-yaml and python3-matplotlib, without user site-packages
has() { [[ " $PHASES " == *" $1 "* ]]; }
log() { echo "[distributed_vs_torch] $*" >&2; }
load() { cut -d' ' -f1 /proc/loadavg; }
# 2 ranks for the communication benchmarks; --oversubscribe lets them start on a
# machine where other work holds the slots, --bind-to none lets a rank leave a busy core
MPI2=(scripts/strata-mpirun --oversubscribe --bind-to none -np 2)

scripts/apt-install.sh bench python3-yaml python3-matplotlib
if has train && ! "$VENV/bin/python" -c 'import torch, numpy' 2>/dev/null; then
  log "making $VENV with CPU torch"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q torch numpy --index-url https://download.pytorch.org/whl/cpu ||
    "$VENV/bin/pip" install -q torch numpy
fi
PY="$VENV/bin/python"

{ echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "cores=$(nproc)"
  echo "cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p')"
  echo "memory=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "kernel=$(uname -r)"; echo "mpi=$(mpirun --version | head -1)"
  echo "torch=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo none)"; } >"$RES/machine.txt"

bench() {  # name, file, args...: one strata-bench run on 2 ranks, its output and the load around it
  local name=$1 file=$2 l0
  shift 2
  l0=$(load)
  "${MPI2[@]}" "$BIN/strata-bench" "$name" "$@" >"$RES/$file" 2>"$W/$file.err" || { cat "$W/$file.err" >&2; exit 1; }
  echo "load $l0 $(load)" >>"$RES/$file"
  log "$name done (load $l0 -> $(load))"
}

if has limits; then  # what the transport allows: plain MPI send/receive between the 2 ranks
  bench pingpong pingpong.txt --min 4K --max "$MAX" --reps 5
fi
if has allreduce; then
  bench allreduce allreduce.txt --min 4K --max "$MAX" --reps 7
fi
if has overlap; then
  bench allreduce_overlap overlap.txt --size 16M --reps 5
  bench ddp ddp.txt --rounds 3 --steps 6
fi

if has train; then
  rm -f "$RES"/strata-*.jsonl "$RES"/ddp-*.json "$RES"/train-loads.txt
  D=/usr/share/datasets/fashion-mnist
  "$BIN/strata-pack" idx --images $D/train-images-idx3-ubyte.gz --labels $D/train-labels-idx1-ubyte.gz \
    --out "$W/data" --shard-size 8MiB >/dev/null 2>&1
  strata() {  # layout round
    scripts/bench-scaling.sh --layouts "$1" --warmup "$WARMUP" --data "$W/data" --configs "$W/cfg" \
      --out "$RES/strata-$1-$2.jsonl" "$STEPS" "$GB" >&2
    $SYSPY -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' \
      "$W/cfg/$1.yaml" >"$RES/$1.config.json"
  }
  torch_ddp() {  # layout round: the same resolved config (per-rank batch), same steps
    local l0
    l0=$(load)
    "$PY" bench/torch/ddp_peer.py --config "$RES/$1.config.json" --world "${1%x*}" --threads "${1#*x}" \
      --warmup "$WARMUP" --steps $((STEPS - WARMUP)) --out "$RES/ddp-$1-$2.json" >"$W/ddp.log" 2>&1 ||
      { cat "$W/ddp.log" >&2; exit 1; }
    echo "ddp $1 $2 $l0 $(load)" >>"$RES/train-loads.txt"
    log "$(tail -1 "$W/ddp.log") (load $l0 -> $(load))"
  }
  for r in $(seq 1 "$ROUNDS"); do
    for lt in $LAYOUTS; do
      # A B in odd rounds, B A in even ones: drift in the machine's load hits both
      # sides alike; round 1 starts with strata, whose dry run writes the config
      if [ $((r % 2)) = 1 ]; then strata "$lt" "$r"; torch_ddp "$lt" "$r"; else torch_ddp "$lt" "$r"; strata "$lt" "$r"; fi
    done
  done
fi

$SYSPY bench/torch/distributed_report.py "$RES" "$OUT" --rounds "$ROUNDS" --layouts "$LAYOUTS"
# the raw results travel compressed (raw-distributed/ itself is ignored: every GPU call carries the tracked tree)
tar -C "$OUT" -cJf "$OUT/raw-distributed.tar.xz" raw-distributed
log "wrote $OUT/distributed_vs_torch.md, distributed_vs_torch.json, distributed_vs_torch.png, raw-distributed.tar.xz"
