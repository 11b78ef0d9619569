#!/usr/bin/env bash
# strata-pack to the test RGW in a multipart upload: one Fashion-MNIST shard of
# about 8 MB sent in 256 KiB parts, 4 at a time, through strata-proxy, which
# fails one part request once (503). The stored shard must have the checksum
# the packer recorded in manifest.json for its local file (strata-inspect
# checks a shard against the manifest beside it), no multipart upload may be
# left open, and the loader must read the shard back (a one-epoch training run
# from the store, which verifies each shard's checksum when it stages it).
# (Two packs of the same input differ in the HDF5 objects' modification times,
# so the stored shard is checked against its own manifest, not another pack.)
#   usage: pack_multipart.sh BIN_DIR SOURCE_DIR   (ctest fixture rgw: STRATA_TEST_S3_*)
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-pack-multipart.XXXXXX)
PROXY_PID=
cleanup() {
  if [ -n "$PROXY_PID" ]; then kill "$PROXY_PID" 2>/dev/null || true; fi
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
: "${STRATA_TEST_S3_ENDPOINT:?run through ctest (fixture rgw)}"
export AWS_ACCESS_KEY_ID=$STRATA_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$STRATA_TEST_S3_SECRET_KEY AWS_REGION=us-east-1
s3() {  # s3 METHOD PATH [curl args]: a signed request to the RGW itself
  local m=$1 p=$2
  shift 2
  curl -sS -f -X "$m" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@" "$STRATA_TEST_S3_ENDPOINT/$p"
}
D=/usr/share/datasets/fashion-mnist
bucket=pack-multipart-$$
s3 PUT "$bucket" >/dev/null
PACK=(idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz --shard-size 8MiB)

"$BIN/strata-proxy" --listen 127.0.0.1:0 --target "${STRATA_TEST_S3_ENDPOINT#http://}" --pass-first 5 \
  --fail-first 1 --log "$W/proxy.log" >"$W/proxy.out" 2>"$W/proxy.err" &
PROXY_PID=$!
for _ in $(seq 50); do grep -q "listening on" "$W/proxy.out" && break; sleep 0.1; done
port=$(sed -n 's/listening on //p' "$W/proxy.out")
[ -n "$port" ] || fail "strata-proxy did not start: $(cat "$W/proxy.err")"
AWS_ENDPOINT_URL=http://127.0.0.1:$port "$BIN/strata-pack" "${PACK[@]}" --out "s3://$bucket/fm" \
  --part-size 256KiB --upload-connections 4 >"$W/pack.log" 2>&1 || fail "strata-pack failed: $(tail -3 "$W/pack.log")"
cat "$W/pack.log"

# Request 1 started the upload; the failed request 6 must have been a part.
failed=$(grep '^6 ' "$W/proxy.log" || true)
[[ $failed == "6 PUT /$bucket/fm/shard-00000.h5?partNumber="* ]] || fail "request 6 was not a part: '$failed'"
mkdir "$W/stored"
s3 GET "$bucket/fm/shard-00000.h5" -o "$W/stored/shard-00000.h5"
s3 GET "$bucket/fm/manifest.json" -o "$W/stored/manifest.json"
"$BIN/strata-inspect" "$W/stored/shard-00000.h5" >"$W/inspect.log" 2>&1 ||
  fail "the stored shard does not agree with its manifest: $(tail -3 "$W/inspect.log")"
grep -i "checksum" "$W/inspect.log" | head -2
parts=$(grep -c "PUT /$bucket/fm/shard-00000.h5?partNumber=" "$W/proxy.log")
size=$(stat -c %s "$W/stored/shard-00000.h5")
expected=$(( (size + 262143) / 262144 ))
[ "$parts" -eq $(( expected + 1 )) ] || fail "$parts part requests for $expected parts and one retry"
echo "shard of $size bytes: $expected parts, $parts part requests (one failed once and was sent again)"

open=$(s3 GET "$bucket?prefix=fm%2F&uploads=")
[[ $open != *"<Upload>"* ]] || fail "a multipart upload was left open: $open"

"$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="s3://$bucket/fm" \
  data.test_url="s3://$bucket/fm" data.s3.endpoint="$STRATA_TEST_S3_ENDPOINT" data.cache_dir="$W/cache" \
  trainer.epochs=1 trainer.threads=1 schedule.warmup_steps=10 logging.console=plain --run-dir "$W/run" >"$W/train.log" 2>&1 ||
  fail "training from the stored shard failed: $(tail -3 "$W/train.log")"
grep -o 'test accuracy [0-9.]*' "$W/train.log" | tail -1
echo "PASS"
