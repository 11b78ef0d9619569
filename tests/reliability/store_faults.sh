#!/usr/bin/env bash
# Object-store faults during training from the test RGW, with a cache smaller
# than the dataset so that every epoch fetches shards again:
#  1. strata-proxy injecting, in rotation on every 5th request, 503 SlowDown, 500,
#     a connection reset, a stalled response and a truncated body;
#  2. the RGW gateway stopped for 3 s mid-epoch and started again;
#  3. an outage that outlasts the retry budget.
# 1 and 2 must end with weights byte-identical to a clean run's, with the
# retries counted in summary.json; 3 must stop with an error naming the shard,
# after a checkpoint of the last step, and resume to the same weights.
#   usage: store_faults.sh BIN_DIR SOURCE_DIR   (ctest fixture rgw: STRATA_TEST_S3_*, CEPH_DIR ...)
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-store-faults.XXXXXX)
PROXY_PID=
cleanup() {
  [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
  "$SRC/scripts/rgw.sh" status >/dev/null 2>&1 || "$SRC/scripts/rgw.sh" start-gateway >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
source "$(dirname "$0")/job_lib.sh"
: "${STRATA_TEST_S3_ENDPOINT:?run through ctest (fixture rgw)}"
export AWS_ACCESS_KEY_ID=$STRATA_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$STRATA_TEST_S3_SECRET_KEY AWS_REGION=us-east-1
bucket=faults-$$
curl -sS -f -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$STRATA_TEST_S3_ENDPOINT/$bucket" >/dev/null
AWS_ENDPOINT_URL=$STRATA_TEST_S3_ENDPOINT "$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz \
  --labels $D/t10k-labels-idx1-ubyte.gz --out "s3://$bucket/fmnist" --shard-size 256KiB >/dev/null 2>&1 ||
  fail "cannot upload the dataset to RGW"

# 40 shards of 256 KiB through a 2 MiB cache: each epoch fetches them all again.
ARGS=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="s3://$bucket/fmnist" data.test_url="s3://$bucket/fmnist"
      data.cache_bytes=2MiB data.lookahead_bytes=512KiB data.batch_size=100 trainer.epochs=2 trainer.threads=1
      checkpoint.every_steps=10 checkpoint.keep_last=50 logging.every_steps=5 logging.console=plain
      schedule.warmup_steps=20 model.dropout=0.1 data.s3.max_attempts=12 data.s3.stall_timeout_s=1)
train() {  # train NAME ENDPOINT [overrides...]: runs in the background, sets JOB
  local name=$1 ep=$2
  shift 2
  "$BIN/strata-train" "${ARGS[@]}" data.s3.endpoint="$ep" data.cache_dir="$W/cache-$name" "$@" \
    --run-dir "$W/$name" >"$W/$name.log" 2>&1 &
  JOB=$!
}
retries() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['train_loader']['retries'])" "$W/$1/summary.json"; }

train clean "$STRATA_TEST_S3_ENDPOINT"
wait_exit $JOB 600
[ $JOB_RC -eq 0 ] || fail "the clean run failed: $(tail -3 "$W/clean.log")"
echo "clean run: $(grep -o 'test accuracy [0-9.]*' "$W/clean.log"), $(retries clean) retries"

# 1. injected faults
"$BIN/strata-proxy" --listen 127.0.0.1:0 --target "${STRATA_TEST_S3_ENDPOINT#http://}" --fault-every 5 \
  --faults 503,500,reset,stall,truncate --stall-ms 3000 >"$W/proxy.out" 2>"$W/proxy.err" &
PROXY_PID=$!
for _ in $(seq 50); do grep -q "listening on" "$W/proxy.out" && break; sleep 0.1; done
port=$(sed -n 's/listening on //p' "$W/proxy.out")
[ -n "$port" ] || fail "strata-proxy did not start: $(cat "$W/proxy.err")"
train faults "http://127.0.0.1:$port"
wait_exit $JOB 900
kill "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null || true
PROXY_PID=
[ $JOB_RC -eq 0 ] || fail "the run through injected faults failed: $(tail -3 "$W/faults.log")"
final=$(same_final_weights "$W/clean" "$W/faults") || fail "injected faults changed the result"
r=$(retries faults)
[ "$r" -gt 0 ] || fail "summary.json counts no retry through the faults"
echo "injected faults: $(tail -1 "$W/proxy.err" | sed 's/^strata-proxy: //'); run completed, $r retries in summary.json; $final byte-identical to the clean run"

# 2. the gateway down for 3 s mid-epoch
train outage "$STRATA_TEST_S3_ENDPOINT"
wait_step "$W/outage" $JOB 40
"$SRC/scripts/rgw.sh" stop-gateway 2>/dev/null
sleep 3
"$SRC/scripts/rgw.sh" start-gateway 2>/dev/null
wait_exit $JOB 900
[ $JOB_RC -eq 0 ] || fail "the run across the outage failed: $(tail -3 "$W/outage.log")"
final=$(same_final_weights "$W/clean" "$W/outage") || fail "the outage changed the result"
r=$(retries outage)
[ "$r" -gt 0 ] || fail "summary.json counts no retry across the outage"
echo "gateway stopped at step 40 for 3 s: run completed, $r retries in summary.json; $final byte-identical"
tally outages

# 3. an outage past the retry budget (3 tries)
train budget "$STRATA_TEST_S3_ENDPOINT" data.s3.max_attempts=3
wait_step "$W/budget" $JOB 40
"$SRC/scripts/rgw.sh" stop-gateway 2>/dev/null
wait_exit $JOB 300
"$SRC/scripts/rgw.sh" start-gateway 2>/dev/null
[ $JOB_RC -ne 0 ] || fail "the run ended well although the store stayed down"
msg=$(grep -o 'error: .*' "$W/budget.log" | head -1)
echo "$msg" | grep -q "shard-[0-9]*\.h5" || fail "the error does not name the shard: $msg"
saved=$(echo "$msg" | grep -o 'checkpoint of step [0-9]* saved' | grep -o '[0-9]*') || fail "no checkpoint before the stop: $msg"
[ -e "$W/budget/checkpoints/$(printf 'step-%09d.h5' "$saved")" ] || fail "the checkpoint of step $saved is missing"
"$BIN/strata-train" "${ARGS[@]}" data.s3.endpoint="$STRATA_TEST_S3_ENDPOINT" data.cache_dir="$W/cache-budget" \
  data.s3.max_attempts=3 checkpoint.resume=auto --run-dir "$W/budget" >"$W/budget2.log" 2>&1 ||
  fail "resuming after the outage failed: $(tail -3 "$W/budget2.log")"
final=$(same_final_weights "$W/clean" "$W/budget") || fail "the resumed run differs from the clean run"
echo "outage past the budget: ${msg:0:220}"
echo "resumed from step $saved once the gateway was back: $final byte-identical"
tally outages
others=$(grep -o '[0-9]* truncated, [0-9]* stalled), [0-9]* failed (injected), [0-9]* dropped' "$W/proxy.err" | tail -1 |
  grep -o "[0-9]*" | paste -sd+)  # truncated + stalled + injected statuses + dropped connections
figure faults "object-store faults injected by strata-proxy (5xx, resets, stalls, truncated bodies), run byte-identical" "$((others))"
figure faults "RGW stopped mid-epoch (3 s; then past the retry budget, resumed)" "${TALLY[outages]}"
echo "store_faults: ok"
