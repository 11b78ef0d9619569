#!/usr/bin/env bash
# data.cache_bytes is one budget for all of a job's datasets (issue 32,
# docs/cache-sizing.md "One budget for the node"). Fashion-MNIST's 10,000 test
# images packed twice, as the train and as the test dataset (two URLs, so two
# cache directories), in 512 KiB shards: each alone fits data.cache_bytes, the
# two together do not. strata-train trains two epochs and evaluates the test
# set after each while a sampler reads, every 5 ms, the bytes in every dataset's shards/
# and .tmp/ under the cache root together: their peak must stay within
# data.cache_bytes. A budget below the datasets' needs stops the run at start
# with one error naming each dataset, its need and what to set.
#   usage: node_budget_train.sh BIN_DIR SOURCE_DIR   (KEEP=1: leave the work directory)
set -euo pipefail
BIN=$1
SRC=$2
D=/usr/share/datasets/fashion-mnist
W=$(mktemp -d /tmp/strata-node-budget.XXXXXX)
SAMPLER=
cleanup() {
  if [ -n "$SAMPLER" ]; then kill "$SAMPLER" 2>/dev/null || true; fi
  if [ -z "${KEEP:-}" ]; then rm -rf "$W"; fi
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

for split in train test; do
  "$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
    --out "$W/$split" --shard-size 512KiB >/dev/null 2>&1 || fail "strata-pack failed"
done
BUDGET=$((9 * 1024 * 1024))
read -r DTRAIN DTEST < <(python3 - "$W" <<'PY'
import json, sys
print(*(sum(s["bytes"] for s in json.load(open(f"{sys.argv[1]}/{d}/manifest.json"))["shards"]) for d in ("train", "test")))
PY
)
echo "train dataset $DTRAIN bytes, test dataset $DTEST bytes, data.cache_bytes $BUDGET"
[ "$DTRAIN" -le "$BUDGET" ] && [ "$DTEST" -le "$BUDGET" ] || fail "each dataset must fit the budget alone"
[ $((DTRAIN + DTEST)) -gt "$BUDGET" ] || fail "the two datasets together must not fit the budget"

ARGS=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/train" data.test_url="file://$W/test"
      data.cache_dir="$W/cache" data.lookahead_bytes=1MiB data.batch_size=128 trainer.epochs=2 trainer.threads=1
      logging.console=plain schedule.warmup_steps=0)

# The budget too small for the two: one error at start, naming both, and no run directory.
if "$BIN/strata-train" "${ARGS[@]}" data.cache_bytes=1MiB --run-dir "$W/small" >"$W/small.log" 2>&1; then
  fail "a 1 MiB budget ran"
fi
echo "1 MiB: $(grep -m1 'error' "$W/small.log")"
for want in "data.cache_bytes 1048576 bytes is the node's cache budget for all of this job's datasets" \
  "data.train_url 'file://$W/train' needs " "data.test_url 'file://$W/test' needs " \
  "set data.cache_bytes to at least "; do
  grep -qF "$want" "$W/small.log" || fail "the error lacks \"$want\": $(cat "$W/small.log")"
done
[ ! -e "$W/small" ] || fail "a refused run made its run directory"

# The run, its cache sampled every 5 ms (data bytes: shards/ and downloads in .tmp/).
python3 - "$W/cache" "$W/peak" <<'PY' &
import os, sys, time
root, out = sys.argv[1], sys.argv[2]
peak = 0
samples = 0
while not os.path.exists(out + ".stop"):
    total = 0
    try:
        for ds in os.scandir(root):
            for sub in ("shards", ".tmp"):
                try:
                    for f in os.scandir(os.path.join(ds.path, sub)):
                        try:
                            total += f.stat().st_size
                        except FileNotFoundError:
                            pass
                except FileNotFoundError:
                    pass
    except FileNotFoundError:
        pass
    peak = max(peak, total)
    samples += 1
    with open(out + ".tmp", "w") as f:
        f.write(f"{peak} {samples}\n")
    os.replace(out + ".tmp", out)
    time.sleep(0.005)
PY
SAMPLER=$!
"$BIN/strata-train" "${ARGS[@]}" data.cache_bytes=$BUDGET --run-dir "$W/run" >"$W/run.log" 2>&1 ||
  fail "training failed: $(tail -5 "$W/run.log")"
touch "$W/peak.stop"
wait "$SAMPLER" || true
SAMPLER=
grep -q "test accuracy" "$W/run.log" || fail "the test set was not evaluated: $(tail -5 "$W/run.log")"
read -r PEAK SAMPLES <"$W/peak"
echo "$(grep -m1 '^data:' "$W/run.log" || true)"
echo "cache root peak $PEAK bytes (shards/ + .tmp/ of both datasets, $SAMPLES samples) against data.cache_bytes $BUDGET"
[ "$PEAK" -gt 0 ] || fail "the sampler saw nothing in the cache"
[ "$PEAK" -le "$BUDGET" ] || fail "the cache root held $PEAK bytes, over data.cache_bytes $BUDGET"
echo "PASS"
