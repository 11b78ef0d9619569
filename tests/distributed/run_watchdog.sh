#!/usr/bin/env bash
# Watchdog test: rank 1 of 3 sleeps 30 s before an allreduce; with
# STRATA_COMM_TIMEOUT=2 the watchdog on rank 0 or 2 must print its message and
# MPI_Abort, so mpirun exits 70 long before rank 1 wakes. Run twice: blocking
# allreduce, then allreduce_async + wait (the handle's watchdog ticket).
set -u
probe=$1
mpiexec=${MPIEXEC:-mpirun}
launcher=${STRATA_SOURCE_DIR:?}/scripts/strata-mpirun
# teardown with Open MPI's 1 s grace (strata-mpirun's default grace of 10 s is
# for a clean stop on SIGTERM; this test is about detection)
export STRATA_STOP_GRACE=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for mode in sync async; do
t0=$(date +%s.%N)
MPIRUN="$mpiexec" STRATA_COMM_TIMEOUT=2 timeout -k 5 120 "$launcher" --oversubscribe -np 3 \
  "$probe" stall 1 30 "$mode" >"$out" 2>&1
rc=$?
t1=$(date +%s.%N)
elapsed=$(echo "$t1 - $t0" | bc)
cat "$out"
echo "run_watchdog ($mode): mpirun rc=$rc after ${elapsed}s"
fail() { echo "run_watchdog: FAIL: $*"; exit 1; }
[ "$rc" -eq 70 ] || fail "expected exit status 70 (MPI_Abort from the watchdog), got $rc"
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "the outer timeout killed mpirun (rc=$rc)"
op=allreduce; [ "$mode" = async ] && op=allreduce_async
grep -Eq "strata collective watchdog: rank [02]: $op f32 sum count=262144 has not completed after [0-9.]+ s \(timeout 2.0 s" "$out" \
  || fail "the watchdog's message is missing"
grep -q 'allreduce completed' "$out" && fail "a rank completed the allreduce; the stall was not detected first"
[ "$(echo "$elapsed < 25" | bc)" = 1 ] || fail "took ${elapsed}s; the watchdog should end the job well before the sleeper wakes (30 s)"
echo "run_watchdog ($mode): PASS"
done
