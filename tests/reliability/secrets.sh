#!/usr/bin/env bash
# The S3 secret key never leaves the process: strata-pack uploading a dataset to
# the test RGW and strata-train training from it run under strace, which
# records every byte they write to a socket, a file or a terminal; the secret
# must be in none of them, nor anywhere in the run directory, nor in the
# messages of a run whose key is wrong. The capture is checked to be real: the
# access key id must appear in it (SigV4's Authorization header names it).
#   usage: secrets.sh BIN_DIR SOURCE_DIR   (ctest fixture rgw: STRATA_TEST_S3_*)
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-secrets.XXXXXX)
trap 'rm -rf "$W"' EXIT
source "$(dirname "$0")/job_lib.sh"
command -v strace >/dev/null || { echo "SKIPPED: strace is not installed"; exit 77; }
: "${STRATA_TEST_S3_ENDPOINT:?run through ctest (fixture rgw)}"
export AWS_ACCESS_KEY_ID=$STRATA_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$STRATA_TEST_S3_SECRET_KEY
export AWS_ENDPOINT_URL=$STRATA_TEST_S3_ENDPOINT AWS_REGION=us-east-1
SECRET=$AWS_SECRET_ACCESS_KEY
bucket=secrets-$$
curl -sS -f -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$SECRET" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$AWS_ENDPOINT_URL/$bucket" >/dev/null || fail "cannot create bucket $bucket"

# every write of the process and its threads: sockets, files, stdout/stderr
# (LeakSanitizer cannot run under ptrace: the sanitizer build's leak check is off there)
traced() {
  local out=$1; shift
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    strace -f -qq -s 1048576 -e trace=write,writev,pwrite64,send,sendto,sendmsg -o "$out" "$@"
}

traced "$W/pack.trace" "$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz \
  --labels $D/t10k-labels-idx1-ubyte.gz --out "s3://$bucket/fmnist" --shard-size 2MiB >"$W/pack.log" 2>&1 ||
  fail "strata-pack to RGW failed: $(tail -3 "$W/pack.log")"
traced "$W/train.trace" "$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" \
  data.train_url="s3://$bucket/fmnist" data.test_url="s3://$bucket/fmnist" data.cache_dir="$W/cache" \
  trainer.max_steps=20 schedule.warmup_steps=5 checkpoint.every_steps=10 logging.every_steps=5 \
  logging.console=plain --run-dir "$W/run" >"$W/train.log" 2>&1 || fail "training from RGW failed: $(tail -3 "$W/train.log")"

for t in pack train; do
  grep -q "Credential=$AWS_ACCESS_KEY_ID/" "$W/$t.trace" ||
    fail "the $t capture holds no signed request: strace did not see the socket traffic"
  sent=$(grep -c 'send\|write' "$W/$t.trace")
  ! grep -qF "$SECRET" "$W/$t.trace" || fail "the secret key is in strata-$t's writes: $(grep -F "$SECRET" "$W/$t.trace" | head -2 | cut -c1-200)"
  echo "strata-$t: $sent writes and sends captured, signed requests among them, no secret key"
done
! grep -rqF "$SECRET" "$W/run" || fail "the secret key is in the run directory: $(grep -rlF "$SECRET" "$W/run")"
echo "run directory: $(find "$W/run" -type f | wc -l) files (logs, config, summary, metrics, checkpoints, events), no secret key"

# a wrong key: the 403's message says where the keys came from, not the key
rc=0
AWS_SECRET_ACCESS_KEY=wrong-${SECRET:0:10}-not-the-key "$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" \
  data.train_url="s3://$bucket/fmnist" data.cache_dir="$W/cache2" trainer.max_steps=2 --run-dir "$W/run2" >"$W/bad.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a wrong secret key was accepted"
grep -q "403\|denied\|SignatureDoesNotMatch" "$W/bad.log" || fail "a wrong key gave no access error: $(tail -2 "$W/bad.log")"
! grep -qF "not-the-key" "$W/bad.log" || fail "the (wrong) secret key is printed: $(grep -F not-the-key "$W/bad.log")"
echo "wrong key refused: $(grep -o 'error: .*' "$W/bad.log" | cut -c1-160)"
tally bad_inputs
figure bad_inputs "a wrong S3 secret key, refused without printing a key"
echo "secrets: ok"
