#!/usr/bin/env bash
# A token corpus larger than the node cache (issue #32): the KJV corpus packed
# into small shards in the test RGW, read through strata-proxy --delay-ms by
# `strata-bench token_stream` with a simulated training step, once with the cache
# holding the whole corpus and once with it at a third of the corpus (the corpus
# is then 3x the cache and streams in shard windows). Per epoch: tokens/s fed,
# data-wait, bytes from the store against the corpus. One run writes
# build/bench-results/<date>/token_stream.{md,log} outside the tracked tree; the
# report to keep is copied into bench/results/token_stream/ by hand.
#   usage: bench/token_stream.sh
# Knobs (environment): STRATA_BIN (build/bin)  DELAY_MS (50; both directions, so
#   ~2x per request)  STEP_MS (5)  BATCH (16)  CONTEXT (128)  EPOCHS (2)
#   SHARD_KB (256)  FRACTIONS (2,0.333)  STAGING (4)  RGW_PORT (27880)  MON_PORT (27189)
#   STRATA_BENCH_OUT (build/bench-results/<date>)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STRATA_BIN:-build/bin}
DELAY_MS=${DELAY_MS:-50} STEP_MS=${STEP_MS:-5} BATCH=${BATCH:-16} CONTEXT=${CONTEXT:-128} EPOCHS=${EPOCHS:-2}
SHARD_KB=${SHARD_KB:-256} FRACTIONS=${FRACTIONS:-2,0.333} STAGING=${STAGING:-4}
export RGW_PORT=${RGW_PORT:-27880} MON_PORT=${MON_PORT:-27189}
export CEPH_DIR=/tmp/strata-tokstream-rgw-$RGW_PORT RGW_BUCKETS=tokstream
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}
W=$(mktemp -d /tmp/strata-tokstream.XXXXXX)
log() { echo "[token_stream] $(date -u +%H:%M:%S) $*" >&2; }
for b in strata-bench strata-pack strata-proxy; do
  [[ -x $BIN/$b ]] || { echo "token_stream.sh: $BIN/$b is missing (build it first)" >&2; exit 1; }
done

PROXY_PID=
cleanup() {
  if [[ -n $PROXY_PID ]]; then kill "$PROXY_PID" 2>/dev/null || true; fi
  scripts/rgw.sh down >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT

scripts/apt-install.sh bench curl ceph-mon ceph-osd radosgw ceph-common uuid-runtime
log "the KJV corpus (scripts/corpus.sh)"
STRATA_PACK=$BIN/strata-pack scripts/corpus.sh "$W/corpus" >"$W/corpus.log" 2>&1 || { cat "$W/corpus.log" >&2; exit 1; }
CORPUS=$W/corpus/kjv.txt
log "starting RGW on 127.0.0.1:$RGW_PORT"
scripts/rgw.sh up >"$W/rgw.env" 2>"$W/rgw.log" || { cat "$W/rgw.log" >&2; exit 1; }
# shellcheck disable=SC1091
source "$W/rgw.env"
"$BIN/strata-proxy" --listen 127.0.0.1:0 --target "127.0.0.1:$RGW_PORT" --delay-ms "$DELAY_MS" \
  >"$W/proxy.port" 2>"$W/proxy.err" &
PROXY_PID=$!
for _ in $(seq 100); do grep -q '^listening on' "$W/proxy.port" && break; sleep 0.05; done
PROXY="http://127.0.0.1:$(awk '/^listening on/ {print $3}' "$W/proxy.port")"
[[ $PROXY != "http://127.0.0.1:" ]] || { echo "token_stream.sh: strata-proxy did not start" >&2; exit 1; }

log "packing $CORPUS into s3://tokstream/kjv (${SHARD_KB} KiB shards)"
"$BIN/strata-pack" tokens --text "$CORPUS" --val-fraction 0.05 --out s3://tokstream/kjv \
  --shard-size "${SHARD_KB}KiB" --endpoint "$S3_ENDPOINT" --quiet
mkdir -p "$OUT"
log "strata-bench token_stream through strata-proxy (delay ${DELAY_MS} ms each way), step ${STEP_MS} ms"
"$BIN/strata-bench" token_stream --url s3://tokstream/kjv/train --endpoint "$PROXY" \
  --cache-fractions "$FRACTIONS" --batch "$BATCH" --context "$CONTEXT" --epochs "$EPOCHS" \
  --staging "$STAGING" --step-ms "$STEP_MS" | tee "$OUT/token_stream.log"

{
  echo "# Token corpus through a cache smaller than it"
  echo
  echo "$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "bench/token_stream.sh: KJV (byte tokens, ${SHARD_KB} KiB shards) in RGW behind strata-proxy"
  echo "--delay-ms $DELAY_MS; batch $BATCH x $CONTEXT tokens, a ${STEP_MS} ms simulated step, $STAGING staging threads."
  echo
  echo "| cache / corpus | shard window | epoch | tokens/s | data-wait | from the store / corpus | GETs | cache max / cap |"
  echo "|---|---|---|---|---|---|---|---|"
  /usr/bin/python3 -s -c '
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("json "):
        continue
    r = json.loads(line[5:])
    window = "whole" if r["window_shards"] == 0 else "%d shards" % r["window_shards"]
    print("| %.3g | %s | %d | %.0f | %.1f%% | %.2f | %d | %.2f / %.2f MB |" % (
        r["cache_fraction"], window, r["epoch"], r["tokens"] / r["seconds"], 100 * r["wait"] / r["seconds"],
        r["bytes"] / r["corpus_bytes"], r["requests"], r["cache_max"] / 1e6, r["cache_bytes"] / 1e6))
' "$OUT/token_stream.log"
} >"$OUT/token_stream.md"
log "report: $OUT/token_stream.md"
cat "$OUT/token_stream.md"
