#!/usr/bin/env bash
# A run directory in the object store (--run-dir s3://BUCKET/PREFIX) on the
# test RGW, reached through strata-proxy --delay-ms with 64 KiB upload parts, so
# that each checkpoint upload takes many delayed requests and a kill can land
# inside one. Every resume is a "fresh node": a new, empty staging directory.
#  1. SIGKILL during a checkpoint upload: the resume takes the checkpoint
#     committed before it, and aborts the upload the kill left open;
#  2. SIGKILL just after a commit (between uploads): the resume takes that one;
#  3. seeded random SIGKILLs inside saves and uploads (KILLS, default 20; the
#     seed and each kill's point logged): every resume takes the newest
#     checkpoint committed when the job was killed, and aborts what it left open.
# Each ends in a run to completion whose final weights equal an uninterrupted
# local run's (strata-inspect --same-as), with no multipart upload left open.
#   usage: run_dir_store.sh BIN_DIR SOURCE_DIR   (ctest fixture rgw: STRATA_TEST_S3_*)
set -euo pipefail
BIN=$1
SRC=$2
KILLS=${KILLS:-20}
SEED=${SEED:-20261204}
W=$(mktemp -d /tmp/strata-run-dir-store.XXXXXX)
PROXY_PID=
JOB=
cleanup() {
  if [ -n "$JOB" ]; then kill -9 "$JOB" 2>/dev/null || true; fi
  if [ -n "$PROXY_PID" ]; then kill "$PROXY_PID" 2>/dev/null || true; fi
  rm -rf "$W"
}
trap cleanup EXIT
source "$(dirname "$0")/job_lib.sh"
: "${STRATA_TEST_S3_ENDPOINT:?run through ctest (fixture rgw)}"
export AWS_ACCESS_KEY_ID=$STRATA_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$STRATA_TEST_S3_SECRET_KEY AWS_REGION=us-east-1
s3() {  # s3 PATH [curl args]: a signed GET from the RGW itself
  local p=$1
  shift
  curl -sS -f --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@" "$STRATA_TEST_S3_ENDPOINT/$p"
}
bucket=run-store-$$
curl -sS -f -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$STRATA_TEST_S3_ENDPOINT/$bucket" >/dev/null
# open_uploads RUN: multipart uploads open under the run's prefix
open_uploads() { s3 "$bucket?prefix=$1%2F&uploads=" | { grep -o '<Upload>' || true; } | wc -l; }
# committed RUN: the steps the store commits, one a line, ascending
committed() {
  s3 "$bucket?list-type=2&prefix=$1%2Fcheckpoints%2F" | { grep -o '<Key>[^<]*\.commit</Key>' || true; } |
    sed 's/.*step-0*\([0-9][0-9]*\)\.h5\.commit.*/\1/' | sort -n
}
resumed_step() { sed -n 's/.*resumed from .*step-0*\([0-9][0-9]*\)\.h5 at step.*/\1/p' "$1" | tail -1 || true; }

kept_log_bytes=0  # metrics.jsonl bytes of killed processes that resumed processes kept
pack_data
job_args 100 2
ARGS+=(checkpoint.every_steps=20 checkpoint.keep_last=3)
"$BIN/strata-train" "${ARGS[@]}" --run-dir "$W/ref" >"$W/ref.log" 2>&1 || fail "the reference run failed: $(tail -3 "$W/ref.log")"
REF=$W/ref/checkpoints/$(newest_checkpoint "$W/ref")

"$BIN/strata-proxy" --listen 127.0.0.1:0 --target "${STRATA_TEST_S3_ENDPOINT#http://}" --delay-ms 5 \
  --log "$W/proxy.log" >"$W/proxy.out" 2>"$W/proxy.err" &
PROXY_PID=$!
for _ in $(seq 50); do grep -q "listening on" "$W/proxy.out" && break; sleep 0.1; done
port=$(sed -n 's/listening on //p' "$W/proxy.out")
[ -n "$port" ] || fail "strata-proxy did not start: $(cat "$W/proxy.err")"
STORE=(data.s3.endpoint="http://127.0.0.1:$port" outputs.part_bytes=64KiB outputs.connections=2 outputs.sync_every_s=0.5
       checkpoint.resume=auto)
n_start=0
start() {  # start RUN [KEY=VALUE...]: a fresh process with a new empty staging directory, in the background
  local run=$1
  shift
  n_start=$((n_start + 1))
  "$BIN/strata-train" "${ARGS[@]}" "${STORE[@]}" "$@" outputs.staging_dir="$W/staging-$n_start" \
    --run-dir "s3://$bucket/$run" >"$W/$run-$n_start.log" 2>&1 &
  JOB=$!
}
# wait_request PATTERN: until the proxy has logged a request matching PATTERN (after line $from)
wait_request() {
  for _ in $(seq 3000); do
    tail -n +"$from" "$W/proxy.log" | grep -q -E "$1" && return 0
    kill -0 "$JOB" 2>/dev/null || fail "the job ended before a request matching '$1'"
    sleep 0.02
  done
  fail "no request matching '$1' in 60 s"
}
# finish RUN [KEY=VALUE...]: runs RUN to completion from the store and checks the weights
finish() {
  s3 "$bucket/$1/metrics.jsonl" -o "$W/$1-metrics-before.jsonl" 2>/dev/null || : >"$W/$1-metrics-before.jsonl"
  start "$@"
  wait_exit "$JOB" 600
  [ "$JOB_RC" -eq 0 ] || fail "$1: the resumed run failed: $(tail -3 "$W/$1-$n_start.log")"
  final=$(s3 "$bucket/$1/checkpoints/latest.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["checkpoint"])')
  s3 "$bucket/$1/checkpoints/$final" -o "$W/$1-final.h5"
  "$BIN/strata-inspect" "$W/$1-final.h5" --same-as "$REF" >"$W/same.txt" 2>&1 ||
    fail "$1: the final weights differ from the uninterrupted run's: $(cat "$W/same.txt")"
  s3 "$bucket/$1/summary.json" -o "$W/$1-summary.json" || fail "$1: no summary.json in the store"
  [ "$(open_uploads "$1")" -eq 0 ] || fail "$1: multipart uploads left open at the end"
  # the run's logs: the resumed process appended to what the killed ones had synced
  s3 "$bucket/$1/metrics.jsonl" -o "$W/$1-metrics.jsonl" || fail "$1: no metrics.jsonl in the store"
  local before_bytes
  before_bytes=$(stat -c %s "$W/$1-metrics-before.jsonl")
  cmp -s -n "$before_bytes" "$W/$1-metrics-before.jsonl" "$W/$1-metrics.jsonl" ||
    fail "$1: the store's metrics.jsonl lost the lines the killed process had synced ($before_bytes bytes)"
  kept_log_bytes=$((kept_log_bytes + before_bytes))
  # each upload's figures: bytes, seconds and MB/s that agree, the final checkpoint's size among them
  python3 - "$W/$1-metrics.jsonl" "$(stat -c %s "$W/$1-final.h5")" <<'PY' || fail "$1: checkpoint_upload rows wrong"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"checkpoint_upload"' in l]
assert rows, "no checkpoint_upload row"
for r in rows:
    assert r["bytes"] > 0 and r["upload_seconds"] > 0, r
    assert abs(r["upload_mb_per_s"] - r["bytes"] / 1e6 / r["upload_seconds"]) < 1e-6 * r["upload_mb_per_s"], r
assert int(sys.argv[2]) in [int(r["bytes"]) for r in rows], ("final checkpoint's size not uploaded", sys.argv[2])
PY
  # the store's rotation: checkpoint.keep_last 3, and the best by the test loss if it is older
  local kept objects
  kept=$(committed "$1" | wc -l)
  objects=$(s3 "$bucket?list-type=2&prefix=$1%2Fcheckpoints%2F" | { grep -o '<Key>[^<]*\.h5</Key>' || true; } | wc -l)
  [ "$kept" -ge 3 ] && [ "$kept" -le 4 ] || fail "$1: the store commits $kept checkpoints; keep_last 3 and the best"
  [ "$objects" -eq "$kept" ] || fail "$1: $objects checkpoint objects for $kept commit records"
}

# 1. during an upload: after the first commit, the third part of the next checkpoint is on its way
from=$(( $(wc -l <"$W/proxy.log") + 1 ))
start during
wait_request "PUT /$bucket/during/checkpoints/latest.json"
from=$(( $(wc -l <"$W/proxy.log") + 1 ))
wait_request "PUT /$bucket/during/checkpoints/step-[0-9]*\.h5\?partNumber=3&"
kill -9 "$JOB"; wait "$JOB" 2>/dev/null || true
uploading=$(tail -n +"$from" "$W/proxy.log" | grep -o "during/checkpoints/step-[0-9]*\.h5?partNumber=3&" | tail -1 |
  sed 's/.*step-0*\([0-9][0-9]*\)\.h5.*/\1/')
before=$(committed during | tail -1)
[ -n "$before" ] || fail "1: nothing committed before the kill"
[ "$(open_uploads during)" -ge 1 ] || fail "1: the kill left no upload open: it did not land inside one"
committed during | grep -qx "$uploading" && fail "1: step $uploading was committed though its upload was killed"
finish during
got=$(resumed_step "$W/during-$n_start.log")
[ "$got" = "$before" ] || fail "1: resumed step '$got' after the kill during the upload of step $uploading; the newest committed was $before"
grep -q "aborted the upload of" "$W/during-$n_start.log" || fail "1: the resume did not abort the open upload"
echo "1. killed while uploading step $uploading: resumed from step $before (committed), upload aborted, same final weights"

# 2. between uploads: latest.json moves only after a commit record is stored
from=$(( $(wc -l <"$W/proxy.log") + 1 ))
start between
wait_request "PUT /$bucket/between/checkpoints/latest.json"
kill -9 "$JOB"; wait "$JOB" 2>/dev/null || true
before=$(committed between | tail -1)
[ -n "$before" ] || fail "2: nothing committed before the kill"
finish between
got=$(resumed_step "$W/between-$n_start.log")
[ "$got" = "$before" ] || fail "2: resumed step '$got'; the newest committed was $before"
echo "2. killed after the commit of step $before: resumed from it, same final weights"

# 3. random kills, each after a seeded number of the requests that save a
#    checkpoint in the store (start, parts, completion, commit record,
#    latest.json, rotation): at random points of saves and uploads
RANDOM=$SEED
partial=0 open_at_kill=0 prev_newest='' prev_opened=0
for k in $(seq "$KILLS"); do
  r=$((1 + RANDOM % 100))
  from=$(( $(wc -l <"$W/proxy.log") + 1 ))
  start random checkpoint.async=true
  for _ in $(seq 1500); do
    [ "$(tail -n +"$from" "$W/proxy.log" | grep -c -E "^[0-9]+ (PUT|POST|DELETE) /$bucket/random/checkpoints/" || true)" -ge "$r" ] && break
    kill -0 "$JOB" 2>/dev/null || break
    sleep 0.02
  done
  kill -9 "$JOB" 2>/dev/null || true
  wait "$JOB" 2>/dev/null || true
  newest=$(committed random | tail -1)
  opened=$(open_uploads random)
  [ "$opened" -gt 0 ] && open_at_kill=$((open_at_kill + 1))
  got=$(resumed_step "$W/random-$n_start.log")
  [ "${got:-}" != "${prev_newest}" ] && partial=$((partial + 1))
  [ "$prev_opened" -gt 0 ] && ! grep -q "aborted the upload of" "$W/random-$n_start.log" &&
    fail "kill $k: the upload the previous kill left open was not aborted"
  echo "kill $k after $r save requests: resumed from step ${got:-none} (newest committed before this start: ${prev_newest:-none}), newest committed now ${newest:-none}, uploads open ${opened}"
  prev_newest=$newest prev_opened=$opened
done
finish random checkpoint.async=true
got=$(resumed_step "$W/random-$n_start.log")
[ "${got:-}" != "$prev_newest" ] && partial=$((partial + 1))
echo "3. seed $SEED: $KILLS kills, $open_at_kill of them inside an upload; $partial resumes from other than the newest committed checkpoint; $(open_uploads random) uploads open at the end; same final weights"
[ "$partial" -eq 0 ] || fail "3: $partial resumes did not take the newest committed checkpoint"
# the saves there were asynchronous, each upload longer than the 20 steps between saves
grep -q "waits for the previous one" "$W/random-$n_start.log" || fail "3: no asynchronous save waited for an upload"
echo "   (checkpoint.async=true: $(grep -c "waits for the previous one" "$W/random-$n_start.log") saves of the last run waited for the previous upload)"

# 4. another number of ranks: killed after a commit, resumed on 2 ranks of half the batch
from=$(( $(wc -l <"$W/proxy.log") + 1 ))
start elastic
wait_request "PUT /$bucket/elastic/checkpoints/latest.json"
kill -9 "$JOB"; wait "$JOB" 2>/dev/null || true
before=$(committed elastic | tail -1)
n_start=$((n_start + 1))
# Under the sanitizer build the MPI ranks run without the leak check, as in
# tests/multinode/train_two_nodes.sh (Open MPI's plugins leak and are dlclosed
# before LeakSanitizer reports); the single-process runs above keep it.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  timeout 600 mpirun --oversubscribe --bind-to none -np 2 \
  "$BIN/strata-train" "${ARGS[@]}" "${STORE[@]}" data.batch_size=50 outputs.staging_dir="$W/staging-$n_start" \
  --run-dir "s3://$bucket/elastic" >"$W/elastic-$n_start.log" 2>&1 || fail "4: the 2-rank resume failed: $(tail -3 "$W/elastic-$n_start.log")"
got=$(resumed_step "$W/elastic-$n_start.log")
[ "$got" = "$before" ] || fail "4: the 2-rank run resumed step '$got'; the newest committed was $before"
s3 "$bucket/elastic/summary.json" | python3 -c 'import json,sys; s = json.load(sys.stdin); assert s["world_size"] == 2 and s["steps"] == 200, s' ||
  fail "4: the store's summary.json is not the 2-rank run's"
echo "4. killed after the commit of step $before on 1 rank: resumed from it on 2 ranks, 200 steps"

# 5. preemption: SIGTERM, the final checkpoint uploaded within checkpoint.preempt_grace_s or exit 75
#    (no periodic saves: the stop's is the run's only checkpoint, saved after the signal)
for grace in 60 0.01; do
  start "preempt-$grace" checkpoint.preempt_grace_s=$grace checkpoint.every_steps=0
  wait_step "$W/staging-$n_start" "$JOB" 25
  kill -TERM "$JOB"
  wait_exit "$JOB" 120
  saved=$(newest_checkpoint "$W/staging-$n_start" | sed 's/step-0*\([0-9][0-9]*\)\.h5/\1/')
  latest=$(committed "preempt-$grace" | tail -1)
  [ -n "$saved" ] || fail "5: SIGTERM saved no checkpoint"
  if [ "$grace" = 60 ]; then
    [ "$JOB_RC" -eq 143 ] || fail "5: exit status $JOB_RC after SIGTERM with time to upload, not 143"
    [ "$latest" = "$saved" ] || fail "5: the store commits step '$latest', the final checkpoint was step $saved"
    [ "$(open_uploads "preempt-$grace")" -eq 0 ] || fail "5: an upload was left open"
    echo "5. SIGTERM, grace 60 s: exit 143, the final checkpoint (step $saved) committed in the store"
  else
    [ "$JOB_RC" -eq 75 ] || fail "5: exit status $JOB_RC after SIGTERM with no time to upload, not 75"
    [ -z "$latest" ] || fail "5: the store commits step $latest though the final upload (step $saved) was cut short"
    grep -q "did not reach" "$W/preempt-$grace-$n_start.log" || fail "5: exit 75 without saying why"
    echo "5. SIGTERM, grace 0.01 s: exit 75, the final checkpoint (step $saved) not committed in the store"
  fi
done
[ "$kept_log_bytes" -gt 0 ] || fail "no killed process had synced metrics.jsonl before its resume: the log check checked nothing"
echo "6. the resumed processes kept the $kept_log_bytes bytes of metrics.jsonl the killed ones had synced; each upload has its checkpoint_upload row"
figure kills "SIGKILLs of a job with an s3:// run directory, resumed from the store on an empty node" $((KILLS + 2))
echo PASS
