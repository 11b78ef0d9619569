#!/usr/bin/env bash
# Preemption of a two-rank job, the way a scheduler does it: SIGTERM at a random
# step, (1) to scripts/strata-mpirun, which passes it to every rank at once as
# SIGUSR1, and (2) to mpirun itself, which passes SIGTERM to the ranks one grace
# period (STRATA_STOP_GRACE) later. Either way every rank finishes its step, the
# ranks stop after the same step and write one checkpoint of it, no rank is
# SIGKILLed, and resuming gives weights byte-identical to an uninterrupted job.
# The seconds from the signal to the job's end are printed (not asserted: the
# bound is stated in docs/reliability.md).
#   usage: preempt.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-preempt.XXXXXX)
trap 'pkill -9 -f "^$BIN/strata-train .*--run-dir $W/" 2>/dev/null || true; rm -rf "$W"' EXIT
source "$(dirname "$0")/job_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export STRATA_STOP_GRACE=2
MPIRUN=("$SRC/scripts/strata-mpirun" -np 2)

pack_data
job_args 50 10  # 1,000 steps: long enough to outlast the grace period
"${MPIRUN[@]}" "$BIN/strata-train" "${ARGS[@]}" --run-dir "$W/ref" >"$W/ref.log" 2>&1 ||
  fail "the uninterrupted job failed: $(tail -5 "$W/ref.log")"

preempt() {  # preempt NAME TARGET(wrapper|mpirun) EXPECTED_SIGNAL
  local R="$W/$1" at target pid t0 t1 stop_step
  at=$((15 + RANDOM % 60))
  "${MPIRUN[@]}" "$BIN/strata-train" "${ARGS[@]}" --run-dir "$R" >"$R.log" 2>&1 &
  local job=$!
  wait_step "$R" $job $at
  if [ "$2" = wrapper ]; then pid=$job; else pid=$(pgrep -P $job -x mpirun); fi
  [ -n "$pid" ] || fail "$1: no mpirun under the launcher"
  local signalled_at
  signalled_at=$(logged_step "$R")
  t0=$(date +%s.%N)
  kill -TERM "$pid"
  wait_exit $job 60
  t1=$(date +%s.%N)
  grep -q "stopped by signal $3 at step" "$R/train.log" ||
    fail "$1: no clean stop in train.log (job status $JOB_RC): $(tail -3 "$R/train.log"; tail -5 "$R.log")"
  stop_step=$(grep -o "stopped by signal $3 at step [0-9]*" "$R/train.log" | grep -o '[0-9]*$')
  [ -e "$R/checkpoints/$(printf 'step-%09d.h5' "$stop_step")" ] || fail "$1: no checkpoint of step $stop_step"
  if grep -qi "signal 9\|killed" "$R.log"; then fail "$1: a rank was killed: $(grep -i 'signal 9\|killed' "$R.log")"; fi
  [ $JOB_RC -ne 0 ] || fail "$1: a preempted job exited 0 (a scheduler would take it for finished)"
  local n
  n=$(every_checkpoint_loads "$R")
  "${MPIRUN[@]}" "$BIN/strata-train" "${ARGS[@]}" checkpoint.resume=auto --run-dir "$R" >"$R.resume.log" 2>&1 ||
    fail "$1: the resumed job failed: $(tail -5 "$R.resume.log")"
  local final
  final=$(same_final_weights "$W/ref" "$R") || fail "$1: final state differs from the uninterrupted job's"
  printf '%s: SIGTERM to %s at step %s; rank 0 logged stopping after step %s (signal %s), checkpoint written, job status %s after %.1f s; %s checkpoints load; resumed: %s byte-identical\n' \
    "$1" "$2" "$signalled_at" "$stop_step" "$3" "$JOB_RC" "$(echo "$t1 - $t0" | bc)" "$n" "$final"
  preempted=$((${preempted:-0} + 1))
}

preempt launcher wrapper 10
preempt mpirun mpirun 15
figure kills "two-rank jobs preempted with SIGTERM (to the launcher, to mpirun), one consistent checkpoint, resumed byte-identical" "$preempted"
echo "preempt: ok"
