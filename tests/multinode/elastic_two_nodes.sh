#!/usr/bin/env bash
# elastic_two_nodes.sh BIN_DIR - strata-elastic over the two "nodes" of
# scripts/netns-cluster.sh (its mpirun reaches node 2 through the cluster's
# agent, as through ssh): a two-rank job, one rank per node, loses node 2 (every
# process in its namespace SIGKILLed, and node 2 dropped from the hostfile) and
# must go on with one rank on node 1 from the last checkpoint, then finish with
# the world-size history 2 1. The seconds from the kill to the first step logged
# by the relaunched job are printed; the 300 s bound only stops a hang.
# Exit 77 (SKIPPED) without root or network namespaces.
set -u
bin=$1
src=${STRATA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cluster="$src/scripts/netns-cluster.sh"
export STRATA_NETNS_PREFIX=${STRATA_NETNS_PREFIX:-strata-elastic-test}
export STRATA_NETNS_CACHE_BASE=${STRATA_NETNS_CACHE_BASE:-/tmp/$STRATA_NETNS_PREFIX-cache}
W=$(mktemp -d /tmp/strata-elastic-two-nodes.XXXXXX)
SUP=
cleanup() {
  if [ -n "$SUP" ]; then kill -9 "$SUP" 2>/dev/null || true; fi
  "$cluster" down >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "elastic_two_nodes: FAIL: $*"; [ -f "$W/run.log" ] && grep '^strata-elastic' "$W/run.log"; exit 1; }

[ "$(id -u)" = 0 ] || { echo "elastic_two_nodes: SKIPPED: needs root (network namespaces)"; exit 77; }
if ! ip netns add "$STRATA_NETNS_PREFIX-probe" 2>/dev/null; then
  echo "elastic_two_nodes: SKIPPED: cannot create network namespaces here"; exit 77
fi
ip netns del "$STRATA_NETNS_PREFIX-probe"

D=/usr/share/datasets/fashion-mnist
"$bin/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 2MiB >/dev/null 2>&1 || fail "packing"
# global batch 60: 30 a rank on two ranks, 60 on one; 166 steps an epoch
ARGS=(--config "$src/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" data.test_url="file://$W/data"
      data.batch_size=30 trainer.epochs=2 trainer.threads=1 schedule.warmup_steps=10 checkpoint.every_steps=10
      data.shuffle_window=2 logging.every_steps=5 logging.console=plain logging.tensorboard=false)
# Under the sanitizer build: the MPI ranks run without the leak check, as in
# train_two_nodes.sh (Open MPI's plugins leak past the point LSan could suppress
# them); node 2's ranks get the setting through -x.
ASAN_FWD=()
if [ -n "${ASAN_OPTIONS:-}" ]; then
  export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
  ASAN_FWD=(--mpirun-arg=-x --mpirun-arg=ASAN_OPTIONS)
fi
# strata-elastic's mpirun: the cluster's, run inside node 1 (it execs mpirun: the pid stays the same)
printf '#!/bin/sh\nexec "%s" run "$@"\n' "$cluster" >"$W/mpirun"
chmod +x "$W/mpirun"
"$cluster" up >/dev/null || fail "cluster up failed"
printf 'n1 slots=1\nn2 slots=1\n' >"$W/hosts"
MPIRUN="$W/mpirun" "$bin/strata-elastic" --hostfile "$W/hosts" --min-ranks 1 --max-ranks 2 --poll-s 0.5 \
  --backoff-s 1 --mpirun-arg=--bind-to --mpirun-arg=none "${ASAN_FWD[@]}" -- "$bin/strata-train" "${ARGS[@]}" --run-dir "$W/run" \
  >"$W/run.log" 2>&1 &
SUP=$!

logged_step() { grep -o 'step [0-9]*' "$W/run/train.log" 2>/dev/null | tail -1 | cut -d' ' -f2 || true; }
for _ in $(seq 3000); do
  s=$(logged_step)
  if [ -n "$s" ] && [ "$s" -ge 30 ]; then break; fi
  kill -0 $SUP 2>/dev/null || fail "strata-elastic ended before step 30: $(tail -5 "$W/run.log")"
  sleep 0.1
done
killed_at=$(logged_step)
t0=$(date +%s.%N)
printf 'n1 slots=1\n' >"$W/hosts"
n=0
for p in $(ip netns pids "$STRATA_NETNS_PREFIX-n2"); do kill -9 "$p" 2>/dev/null && n=$((n + 1)); done
# the relaunch on node 1 says "world size 1 at step S" in train.log; then a step after S
t1=
for _ in $(seq 3000); do
  start=$(grep -o 'world size 1 at step [0-9]*' "$W/run/train.log" 2>/dev/null | tail -1 | grep -o '[0-9]*$' || true)
  s=$(logged_step)
  if [ -n "$start" ] && [ -n "$s" ] && [ "$s" -gt "$start" ]; then t1=$(date +%s.%N); break; fi
  kill -0 $SUP 2>/dev/null || break
  sleep 0.1
done
if [ -z "$t1" ]; then
  kill -0 $SUP 2>/dev/null || fail "strata-elastic ended before the job went on on node 1"
  fail "the job did not go on on node 1 within 300 s of node 2's loss"
fi
for _ in $(seq 6000); do kill -0 $SUP 2>/dev/null || break; sleep 0.1; done
kill -0 $SUP 2>/dev/null && fail "strata-elastic still running 600 s after node 2's loss"
rc=0
wait $SUP || rc=$?
SUP=
[ $rc -eq 0 ] || fail "strata-elastic exited $rc: $(tail -20 "$W/run.log")"
grep '^strata-elastic' "$W/run.log"
hist=$(python3 -c 'import json,sys; print(" ".join(str(h["world_size"]) for h in json.load(open(sys.argv[1]))["world_size_history"]))' "$W/run/summary.json")
[ "$hist" = "2 1" ] || fail "world-size history $hist, expected 2 1"
printf 'elastic_two_nodes: node 2 lost at step %s (%s processes SIGKILLed); the job went on on node 1 from step %s, %.1f s after the kill; finished with the world-size history %s\n' \
  "$killed_at" "$n" "$start" "$(echo "$t1 - $t0" | bc)" "$hist"
echo "elastic_two_nodes: PASS"
