#!/usr/bin/env bash
# Loader benchmark end to end: start the test RGW, put strata-proxy (--delay-ms
# N each way: ~2N ms per request round trip) in front of it, pack Fashion-MNIST into it, run
# `strata-bench loader` (latency mode and warm-cache mode), stop everything.
#
#   scripts/bench-loader.sh [BUILD_DIR]   (default: build)
# Knobs: DELAY_MS (50), STEP_MS (5), SHARD_SIZE (6MB), EPOCHS (3), RGW_PORT (27480),
# MON_PORT (26789), BENCH_ARGS (extra strata-bench loader options).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
BIN=$BUILD/bin
DELAY_MS=${DELAY_MS:-50}
STEP_MS=${STEP_MS:-5}
SHARD_SIZE=${SHARD_SIZE:-6MB}
EPOCHS=${EPOCHS:-3}
export RGW_PORT=${RGW_PORT:-27480} MON_PORT=${MON_PORT:-26789}
export CEPH_DIR=${CEPH_DIR:-/tmp/strata-bench-rgw-$RGW_PORT} RGW_BUCKETS=bench
DATA=/usr/share/datasets/fashion-mnist
for b in strata-bench strata-pack strata-proxy; do
  [[ -x $BIN/$b ]] || { echo "bench-loader.sh: $BIN/$b is missing (build it first)" >&2; exit 1; }
done

PROXY_PID=
cleanup() {
  [[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
  "$ROOT/scripts/rgw.sh" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$ROOT/scripts/rgw.sh" up >/dev/null
eval "$("$ROOT/scripts/rgw.sh" env)"

PORT_FILE=$(mktemp)
"$BIN/strata-proxy" --listen 127.0.0.1:0 --target "127.0.0.1:$RGW_PORT" --delay-ms "$DELAY_MS" >"$PORT_FILE" 2>/dev/null &
PROXY_PID=$!
for _ in $(seq 100); do grep -q '^listening on' "$PORT_FILE" && break; sleep 0.05; done
PROXY_PORT=$(awk '/^listening on/ {print $3}' "$PORT_FILE")
rm -f "$PORT_FILE"
[[ -n $PROXY_PORT ]] || { echo "bench-loader.sh: strata-proxy did not start" >&2; exit 1; }

"$BIN/strata-pack" idx --images $DATA/train-images-idx3-ubyte.gz --labels $DATA/train-labels-idx1-ubyte.gz \
  --out s3://bench/fmnist --shard-size "$SHARD_SIZE" --quiet

echo "== latency: --delay-ms ${DELAY_MS} (strata-proxy delays both directions: ~$((2 * DELAY_MS)) ms per request round trip), step ${STEP_MS} ms =="
"$BIN/strata-bench" loader --url s3://bench/fmnist --endpoint "http://127.0.0.1:$PROXY_PORT" \
  --step-ms "$STEP_MS" --epochs "$EPOCHS" ${BENCH_ARGS:-}
echo "== warm cache (RGW direct) =="
"$BIN/strata-bench" loader --url s3://bench/fmnist --endpoint "$S3_ENDPOINT" --warm ${BENCH_ARGS:-}
