#!/usr/bin/env bash
# One shard cache directory shared by several jobs at once (issue 11): two, then
# four strata-train jobs started together on one cache, reading a dataset from
# the test RGW through strata-proxy paced slow enough that a SIGKILL lands in the
# middle of a download. The job whose temporary appears first in the cache's
# .tmp/ is killed while that temporary is still growing. Then:
#  - every shard in shards/ verifies against the manifest's checksum, and no
#    temporary or reservation of the dead job is left once the others are done;
#  - the proxy's request log holds one GET per shard, two for a shard whose
#    download was killed (the dead job's, and one re-fetch);
#  - every surviving job ends well with weights byte-identical to a job alone.
# Then the damaged-cache hole: a shard of the warm cache damaged while another
# job has the cache open (so the next job does not re-verify it at its start) is
# refused at first map, naming the shard. Last, a job alone after all of this
# does not hang on any lock of the killed jobs, replaces the damaged shard with
# one GET, and ends with the same weights. Last, a job stopped (SIGSTOP)
# mid-download does not hold up the next one past the stall timeout.
#   usage: shared_cache.sh BIN_DIR SOURCE_DIR   (ctest fixture rgw: STRATA_TEST_S3_*)
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-shared-cache.XXXXXX)
PROXY_PID=
JOBS=()  # every strata-train this script started, killed if still running at exit
cleanup() {
  for p in "${JOBS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ -n "$PROXY_PID" ]; then kill "$PROXY_PID" 2>/dev/null || true; fi  # may have exited: rm must still run
  rm -rf "$W"
}
trap cleanup EXIT
source "$(dirname "$0")/job_lib.sh"
: "${STRATA_TEST_S3_ENDPOINT:?run through ctest (fixture rgw)}"
export AWS_ACCESS_KEY_ID=$STRATA_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$STRATA_TEST_S3_SECRET_KEY AWS_REGION=us-east-1
bucket=shared-cache-$$
curl -sS -f -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$STRATA_TEST_S3_ENDPOINT/$bucket" >/dev/null
AWS_ENDPOINT_URL=$STRATA_TEST_S3_ENDPOINT "$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz \
  --labels $D/t10k-labels-idx1-ubyte.gz --out "s3://$bucket/fmnist" --shard-size 512KiB >/dev/null 2>&1 ||
  fail "cannot upload the dataset to RGW"

# Each connection paced to 0.5 MB/s: a 512 KiB shard takes about a second.
"$BIN/strata-proxy" --listen 127.0.0.1:0 --target "${STRATA_TEST_S3_ENDPOINT#http://}" --stream-mbps 0.5 \
  --log "$W/requests.log" >"$W/proxy.out" 2>"$W/proxy.err" &
PROXY_PID=$!
for _ in $(seq 50); do grep -q "listening on" "$W/proxy.out" && break; sleep 0.1; done
port=$(sed -n 's/listening on //p' "$W/proxy.out")
[ -n "$port" ] || fail "strata-proxy did not start: $(cat "$W/proxy.err")"

# A persistent cache, so that what the jobs leave in it can be checked after them;
# the whole epoch shuffled, so that every job wants every shard from its first batch.
ARGS=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="s3://$bucket/fmnist"
      data.test_url="s3://$bucket/fmnist" data.s3.endpoint="http://127.0.0.1:$port" data.s3.connections=1
      data.cache_lifetime=persistent data.batch_size=100 trainer.epochs=1 trainer.threads=1
      checkpoint.every_epochs=1 logging.every_steps=5 logging.console=plain schedule.warmup_steps=20)
train() {  # train NAME CACHE [overrides...]: in the background, sets JOB
  local name=$1 cache=$2
  shift 2
  "$BIN/strata-train" "${ARGS[@]}" data.cache_dir="$cache" "$@" --run-dir "$W/$name" >"$W/$name.log" 2>&1 &
  JOB=$!
  JOBS+=("$JOB")
}
dataset_dir() { ls -d "$1"/*/ 2>/dev/null | head -1 || true; }  # the one dataset under a cache root
final_checkpoint() { ls "$W/$1"/checkpoints/step-*.h5 2>/dev/null | tail -1; }
log_lines() { wc -l <"$W/requests.log"; }

# check_cache DIR: every file in shards/ is a shard of the manifest with its
# checksum (computed now by strata-inspect), every shard of the manifest is
# there, and nothing is left in .tmp/ or .reserve/ (no process uses DIR now).
check_cache() {
  local dir=$1 f
  for f in "$dir"/shards/*; do
    "$BIN/strata-inspect" --json "$f" >"$W/inspect.json" 2>&1 || fail "strata-inspect cannot read $f: $(head -3 "$W/inspect.json")"
    python3 - "$W/inspect.json" "$dir/manifest.json" "$f" <<'PY' || fail "cached shard $f does not match the manifest"
import json, os, sys
got = json.load(open(sys.argv[1]))["checksum"]
want = {s["name"]: s["checksum"] for s in json.load(open(sys.argv[2]))["shards"]}
name = os.path.basename(sys.argv[3])
assert name in want, f"{name} is not in the manifest"
assert got == want[name], f"{name}: the file has {got}, the manifest says {want[name]}"
PY
  done
  local want have
  want=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['shards']))" "$dir/manifest.json")
  have=$(ls "$dir/shards" | wc -l)
  [ "$have" -eq "$want" ] || fail "$dir/shards holds $have shards, the manifest $want"
  local left
  left=$(ls -A "$dir/.tmp" "$dir/.reserve" | tr '\n' ' ')
  [ -z "$(ls -A "$dir/.tmp")$(ls -A "$dir/.reserve")" ] ||
    fail "left in $dir after every job ended (a killed download's temporary never recovered?): $left"
  echo "$have"
}

# gets_per_shard FROM: "shard count" lines for the shard GETs in the proxy's
# log after line FROM (the manifest's are counted apart).
gets_per_shard() {
  tail -n +$(($1 + 1)) "$W/requests.log" | grep -o "GET /$bucket/fmnist/[^ ?]*\.h5" | sed 's|.*/||' | sort | uniq -c |
    awk '{print $2, $1}'
}

# run_together N: N jobs on one fresh cache; the one that downloads first is
# SIGKILLed mid-download; sets the globals the report and later steps use.
run_together() {
  local n=$1 cache="$W/cache$1" from i victim="" tmpdir f killed_shards
  from=$(log_lines)
  local -a pids=()
  for i in $(seq "$n"); do
    train "n${n}-j$i" "$cache"
    pids+=("$JOB")
  done
  # Kill the writer of the first temporary that has bytes and is still being written.
  for _ in $(seq 1200); do
    tmpdir="$(dataset_dir "$cache").tmp"
    for f in "$tmpdir"/*.h5.tmp.*; do
      [ -s "$f" ] || continue
      victim=$(echo "$f" | awk -F. '{print $(NF-1)}')
      break
    done
    [ -n "$victim" ] && break
    sleep 0.02
  done
  [ -n "$victim" ] || fail "$n jobs: no download ever appeared in $cache"
  printf '%s\n' "${pids[@]}" | grep -qx "$victim" || fail "$n jobs: temporary of pid $victim, none of the jobs"
  # What it is downloading now (temporaries are <shard>.tmp.<host>.<pid>.<n>).
  killed_shards=$(ls "$tmpdir" | grep "\.h5\.tmp\..*\.$victim\.[0-9]*$" | sed 's/\.tmp\..*//' | sort -u || true)
  kill -9 "$victim"
  [ -n "$killed_shards" ] || fail "$n jobs: pid $victim was killed after its download ended, not during it"
  local survivors=0 rc
  for pid in "${pids[@]}"; do
    wait_exit "$pid" 300
    rc=$JOB_RC
    if [ "$pid" = "$victim" ]; then
      [ "$rc" -eq 137 ] || fail "$n jobs: the killed job ended with $rc, not 137"
    else
      [ "$rc" -eq 0 ] || fail "$n jobs: a surviving job (pid $pid) failed with $rc: $(tail -3 "$W"/n"$n"-j*.log)"
      survivors=$((survivors + 1))
    fi
  done
  local dir shards
  dir=$(dataset_dir "$cache")
  shards=$(check_cache "$dir") || fail "$n jobs: $shards"
  # One GET per shard; a shard whose download was killed: at most one more.
  gets_per_shard "$from" >"$W/gets$n"
  [ "$(wc -l <"$W/gets$n")" -eq "$shards" ] || fail "$n jobs: GETs for $(wc -l <"$W/gets$n") shards, the dataset has $shards"
  local s c refetched=0
  while read -r s c; do
    if echo "$killed_shards" | grep -qx "$s"; then
      [ "$c" -le 2 ] || fail "$n jobs: $s was fetched $c times; killed mid-download, it may be fetched twice"
      refetched=$((refetched + c - 1))
    else
      [ "$c" -eq 1 ] || fail "$n jobs: $s was fetched $c times by jobs sharing one cache (once per node is the rule)"
    fi
  done <"$W/gets$n"
  local manifests
  manifests=$(tail -n +$((from + 1)) "$W/requests.log" | grep -c "GET /$bucket/fmnist/manifest.json" || true)
  echo "$n jobs on one cache: SIGKILL to pid $victim mid-download of $(echo $killed_shards | tr ' ' ,);" \
    "$survivors survivors ended 0; $shards shards cached, all verify; nothing left in .tmp/ or .reserve/;" \
    "shard GETs (count x shards): $(awk '{print $2}' "$W/gets$n" | sort -n | uniq -c | awk '{printf "%sx%s ", $2, $1}')" \
    "= 1 per shard + $refetched re-fetch(es) of the killed downloads; manifest GETs: $manifests"
  KILLED_JOBS=$((KILLED_JOBS + 1))
  SURVIVOR_RUNS+=($(for i in $(seq "$n"); do [ "${pids[$((i - 1))]}" = "$victim" ] || echo "n${n}-j$i"; done))
}

SURVIVOR_RUNS=()
KILLED_JOBS=0
run_together 2
run_together 4

# The damaged-cache hole. A job ("holder") has cache4 open and is stopped
# there; a shard is damaged; the next job is not the first on the cache, so it
# does not re-verify shards at its start: it must refuse the shard at first map.
train holder "$W/cache4" trainer.epochs=50
holder=$JOB
wait_step "$W/holder" "$holder" 5
kill -STOP "$holder"
dir=$(dataset_dir "$W/cache4")
victim_shard=$(ls "$dir/shards" | head -1)
python3 - "$dir/shards/$victim_shard" <<'PY'
import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(os.path.getsize(sys.argv[1]) // 2)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0xFF]))
PY
train damaged "$W/cache4"
wait_exit "$JOB" 300
[ "$JOB_RC" -ne 0 ] || fail "a job read a damaged cached shard ($victim_shard) and ended well"
msg=$(grep -o "error: .*" "$W/damaged.log" | head -1)
echo "$msg" | grep -q "$victim_shard is damaged" || fail "the error does not say $victim_shard is damaged: $msg"
kill -9 "$holder"
wait "$holder" 2>/dev/null || true
echo "damaged while a job held the cache: the next job stopped: ${msg:0:200}"
tally faults

# A job alone after the kills: takes every lock the dead jobs held, replaces the
# damaged shard (one GET), and ends with the weights every survivor ended with.
from=$(log_lines)
train alone "$W/cache4"
wait_exit "$JOB" 300
[ "$JOB_RC" -eq 0 ] || fail "the job alone after the kills failed: $(tail -3 "$W/alone.log")"
gets=$(gets_per_shard "$from")
[ "$gets" = "$victim_shard 1" ] || fail "the job alone fetched '$gets', expected only the damaged $victim_shard once"
shards=$(check_cache "$dir") || fail "after the job alone: $shards"
ref=$(final_checkpoint alone)
for r in "${SURVIVOR_RUNS[@]}"; do
  out=$("$BIN/strata-inspect" "$(final_checkpoint "$r")" --same-as "$ref" 2>&1) ||
    fail "survivor $r ended with other weights than a job alone: $out"
done
echo "job alone after the kills: ended 0, re-fetched $victim_shard once, $shards shards verify;" \
  "${#SURVIVOR_RUNS[@]} survivors' final checkpoints $(basename "$ref"): $out"

# A job stopped (SIGSTOP, a suspended job) mid-download keeps that download's
# lock. The next job on the cache redoes each such download once it has made
# no progress for data.download_stall_timeout_s (3 s here), says whose download
# it gave up on, and ends with a lone job's weights.
train stopped "$W/cache-stop"
stopped=$JOB
for _ in $(seq 1200); do
  tmpdir="$(dataset_dir "$W/cache-stop").tmp"
  held=$(find "$tmpdir" -name "*.h5.tmp.*.$stopped.*" -size +0 2>/dev/null | head -1 || true)  # no .tmp/ yet
  [ -n "$held" ] && break
  sleep 0.02
done
[ -n "$held" ] || fail "the job to be stopped never started a download"
kill -STOP "$stopped"
train waiter "$W/cache-stop" data.download_stall_timeout_s=3
wait_exit "$JOB" 300
kill -9 "$stopped"
wait "$stopped" 2>/dev/null || true
[ "$JOB_RC" -eq 0 ] || fail "a job on a cache whose downloads a stopped job holds failed: $(tail -3 "$W/waiter.log")"
note=$(grep -o "the download of shard-[0-9]*\.h5 by pid $stopped on host [^ ]* has made no progress for 3 s.*" \
  "$W/waiter.log" | head -1)
[ -n "$note" ] || fail "the take-over of the stopped job's download is not reported: $(grep -i warn "$W/waiter.log" | head -2)"
out=$("$BIN/strata-inspect" "$(final_checkpoint waiter)" --same-as "$ref" 2>&1) ||
  fail "the job that took over a stopped download ended with other weights than a job alone: $out"
echo "job stopped mid-download ($(basename "$held" | sed 's/\.tmp\..*//')): the next job took over" \
  "$(grep -c "has made no progress" "$W/waiter.log") download(s), ended 0 with a lone job's weights: $note"
tally faults

# the kills count once every survivor's weights matched the lone job's
tally kills "$KILLED_JOBS"
figure kills "jobs sharing one cache (2, then 4) with one SIGKILLed mid-download: shards verify, one GET per shard, survivors' weights a lone job's"
figure faults "a cached shard damaged while a job held the cache (refused at first map, fetched again); a job stopped mid-download (its download redone by the next job)"
echo "shared_cache: ok"
