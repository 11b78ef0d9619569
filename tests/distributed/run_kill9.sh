#!/usr/bin/env bash
# kill -9 test: 3 ranks loop allreduces; one rank is SIGKILLed; mpirun's own
# teardown must end the job non-zero within 60 s, leaving no rank behind. The
# watchdog is set far out (300 s) so that it cannot be what ends the job.
set -u
probe=$1
mpiexec=${MPIEXEC:-mpirun}
launcher=${STRATA_SOURCE_DIR:?}/scripts/strata-mpirun
# teardown with Open MPI's 1 s grace (strata-mpirun's default grace of 10 s is
# for a clean stop on SIGTERM; this test is about detection)
export STRATA_STOP_GRACE=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { cat "$out"; echo "run_kill9: FAIL: $*"; exit 1; }
MPIRUN="$mpiexec" STRATA_COMM_TIMEOUT=300 "$launcher" --oversubscribe -np 3 \
  "$probe" loop >"$out" 2>&1 &
mpirun_pid=$!
for _ in $(seq 300); do  # up to 30 s for start-up and a first heartbeat
  [ "$(grep -c '^probe rank [0-9]* pid' "$out")" -eq 3 ] && grep -q heartbeat "$out" && break
  sleep 0.1
done
pids=$(sed -n 's/^probe rank [0-9]* pid \([0-9]*\)$/\1/p' "$out")
victim=$(sed -n 's/^probe rank 1 pid \([0-9]*\)$/\1/p' "$out")
[ -n "$victim" ] || { kill -9 "$mpirun_pid"; fail "the job did not start"; }
t0=$(date +%s.%N)
kill -9 "$victim"
rc=
for _ in $(seq 900); do  # poll up to 90 s
  if ! kill -0 "$mpirun_pid" 2>/dev/null; then wait "$mpirun_pid"; rc=$?; break; fi
  sleep 0.1
done
t1=$(date +%s.%N)
elapsed=$(echo "$t1 - $t0" | bc)
if [ -z "$rc" ]; then kill -9 "$mpirun_pid"; for p in $pids; do kill -9 "$p" 2>/dev/null; done; fail "mpirun still running 90 s after the kill"; fi
cat "$out" | grep -v heartbeat
echo "run_kill9: killed rank 1 (pid $victim); mpirun exited rc=$rc after ${elapsed}s"
[ "$rc" -ne 0 ] || fail "mpirun exited 0 after a rank was killed"
[ "$(echo "$elapsed <= 60" | bc)" = 1 ] || fail "teardown took ${elapsed}s (> 60 s)"
# Ranks may take a moment to be reaped after mpirun itself is gone.
alive() { for p in $pids; do st=$(ps -o stat= -p "$p" 2>/dev/null) && [ "${st#Z}" = "$st" ] && echo "$p"; done; }
for _ in $(seq 100); do [ -z "$(alive)" ] && break; sleep 0.1; done
left=$(alive)
[ -z "$left" ] || fail "rank pid(s) $left still alive 10 s after mpirun exited"
echo "run_kill9: PASS"
