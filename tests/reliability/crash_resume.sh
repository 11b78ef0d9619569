#!/usr/bin/env bash
# Crash and resume under MPI: ten trials per run, each a two-rank job killed
# with SIGKILL at a random step (odd trials: one rank, chosen at random; even
# trials: every rank), then resumed with checkpoint.resume=auto. Each trial's
# final weights and optimizer state must be byte-identical to an uninterrupted
# job's, every checkpoint left behind must load, and no kill may hang the job.
#   usage: crash_resume.sh BIN_DIR SOURCE_DIR [TRIALS]
set -euo pipefail
BIN=$1
SRC=$2
TRIALS=${3:-10}
W=$(mktemp -d /tmp/strata-crash-resume.XXXXXX)
trap 'pkill -9 -f "^$BIN/strata-train .*--run-dir $W/" 2>/dev/null || true; rm -rf "$W"' EXIT
source "$(dirname "$0")/job_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# a killed rank's job is torn down at once (the grace is for a clean stop)
export STRATA_STOP_GRACE=1
MPIRUN=("$SRC/scripts/strata-mpirun" -np 2)

pack_data
# three epochs (300 steps) while the kill lands by step 184: the MLP runs a step
# in a few ms, and a kill aimed near the end of a 200-step job could land after
# its last checkpoint (the test then fails: "the kill came after the final
# checkpoint"), which a 116-step margin rules out
job_args 50 3
"${MPIRUN[@]}" "$BIN/strata-train" "${ARGS[@]}" --run-dir "$W/ref" >"$W/ref.log" 2>&1 ||
  fail "the uninterrupted job failed: $(tail -5 "$W/ref.log")"
echo "uninterrupted job: $(same_final_weights "$W/ref" "$W/ref")"

passed=0
for t in $(seq "$TRIALS"); do
  R="$W/t$t"
  kill_at=$((15 + RANDOM % 170))  # after the first checkpoint, before the last step
  "${MPIRUN[@]}" "$BIN/strata-train" "${ARGS[@]}" --run-dir "$R" >"$R.cut.log" 2>&1 &
  job=$!
  wait_step "$R" $job $kill_at
  mapfile -t pids < <(rank_pids "$R")
  [ ${#pids[@]} -eq 2 ] || fail "trial $t: expected 2 ranks, found ${#pids[@]}"
  if [ $((t % 2)) -eq 1 ]; then
    victim=${pids[$((RANDOM % 2))]}
    what="one rank (pid $victim)"
    kill -9 "$victim"
  else
    what="both ranks"
    kill -9 "${pids[@]}"
  fi
  at=$(logged_step "$R")
  wait_exit $job 120
  rc=$JOB_RC
  kill_came_first "$W/ref" "$R" "trial $t"
  [ "$rc" -ne 0 ] || fail "trial $t: the job exited 0 after a rank was killed"
  left=$(rank_pids "$R")
  [ -z "$left" ] || fail "trial $t: ranks left running after the job ended: $left"
  n=$(every_checkpoint_loads "$R")
  "${MPIRUN[@]}" "$BIN/strata-train" "${ARGS[@]}" checkpoint.resume=auto --run-dir "$R" >"$R.resume.log" 2>&1 ||
    fail "trial $t: the resumed job failed: $(tail -5 "$R.resume.log")"
  from=$(grep -o 'resumed from [^ ]*' "$R/train.log" | tail -1 | sed 's|.*/||')
  [ -n "$from" ] || fail "trial $t: the second job did not resume (no 'resumed from' in train.log)"
  final=$(same_final_weights "$W/ref" "$R") || fail "trial $t: final state differs from the uninterrupted job's"
  echo "trial $t: SIGKILL to $what at step ${at:-?} (target $kill_at); job ended with $rc; $n checkpoints left, all load; resumed from $from; $final byte-identical"
  passed=$((passed + 1))
  rm -rf "$R"
done
echo "crash_resume: $passed/$TRIALS trials resumed to byte-identical weights"
figure kills "two-rank jobs killed with SIGKILL (one rank or both) at a random step, resumed with resume=auto to byte-identical weights" "$passed"
