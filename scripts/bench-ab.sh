#!/usr/bin/env bash
# The same training run through two builds, alternated A B A B, so that a change
# can be shown to cost the CPU nothing: the Fashion-MNIST CNN (or any config) for a
# fixed number of steps, one process, median samples/s of each build and the ratio.
#   usage: scripts/bench-ab.sh BIN_A BIN_B [ROUNDS] [STEPS] [CONFIG]
#   e.g.   scripts/bench-ab.sh /work/base/build/bin build/bin 3 150
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2 ROUNDS=${3:-3} STEPS=${4:-150} CONFIG=${5:-configs/fashion_mnist_cnn.yaml}
W=$(mktemp -d /tmp/strata-ab.XXXXXX)
trap 'rm -rf "$W"' EXIT
D=/usr/share/datasets/fashion-mnist
"$B/strata-pack" idx --images $D/train-images-idx3-ubyte.gz --labels $D/train-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 8MiB 2>/dev/null
ARGS=(--config "$CONFIG" data.train_url="file://$W/data" data.test_url= trainer.max_steps=$STEPS
      checkpoint.every_epochs=0 logging.console=off logging.tensorboard=false trainer.threads=2 schedule.warmup_steps=10)
for r in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    bin=$A; [ $side = B ] && bin=$B
    "$bin/strata-train" "${ARGS[@]}" data.cache_dir="$W/cache-$side" --run-dir "$W/$side-$r" >/dev/null
  done
done
python3 - "$W" "$ROUNDS" "$A" "$B" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, statistics, sys
w, rounds, a, b, load = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
sps = {s: [json.load(open(f"{w}/{s}-{r}/summary.json"))["samples_per_second"] for r in range(1, rounds + 1)]
       for s in "AB"}
ma, mb = statistics.median(sps["A"]), statistics.median(sps["B"])
print(f"same config and steps, {rounds} alternated rounds (1-min load {load} when done)")
print(f"  A {a}: median {ma:8.1f} samples/s  runs {' '.join(f'{x:.1f}' for x in sps['A'])}")
print(f"  B {b}: median {mb:8.1f} samples/s  runs {' '.join(f'{x:.1f}' for x in sps['B'])}")
print(f"  ratio B/A: {mb / ma:.3f}")
PY
