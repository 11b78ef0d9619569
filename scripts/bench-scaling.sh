#!/usr/bin/env bash
# Data-parallel scaling on this machine: the Fashion-MNIST CNN trained by
# `mpirun -np 2` with one thread per rank against one process with two threads,
# same global batch, same number of steps; prints both samples/s and the ratio.
#   usage: scripts/bench-scaling.sh [STEPS] [GLOBAL_BATCH]
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
STEPS=${1:-150}
GB=${2:-128}
W=$(mktemp -d /tmp/strata-scaling.XXXXXX)
trap 'rm -rf "$W"' EXIT
D=/usr/share/datasets/fashion-mnist
build/bin/strata-pack idx --images $D/train-images-idx3-ubyte.gz --labels $D/train-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 8MiB 2>/dev/null
ARGS=(--config configs/fashion_mnist_cnn.yaml data.train_url="file://$W/data" data.test_url= trainer.max_steps=$STEPS
      checkpoint.every_epochs=0 logging.console=off logging.tensorboard=false schedule.warmup_steps=10)
build/bin/strata-train "${ARGS[@]}" trainer.threads=2 data.batch_size=$GB data.cache_dir="$W/c1" --run-dir "$W/one" >/dev/null
mpirun --oversubscribe --bind-to none -np 2 build/bin/strata-train "${ARGS[@]}" trainer.threads=1 \
  data.batch_size=$((GB / 2)) data.cache_dir="$W/c2" --run-dir "$W/two" >/dev/null
python3 - "$W/one/summary.json" "$W/two/summary.json" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
one, two = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a, b = one["samples_per_second"], two["samples_per_second"]
print(f"CNN, same global batch, {one['steps']} steps (1-min load {sys.argv[3]} when done)")
print(f"  1 process x 2 threads : {a:9.1f} samples/s")
print(f"  2 ranks x 1 thread    : {b:9.1f} samples/s   ratio {b / a:.3f}")
PY
