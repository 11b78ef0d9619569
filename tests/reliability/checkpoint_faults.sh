#!/usr/bin/env bash
# A kill at each stage of a checkpoint's write (base/fault_point.h: the process
# SIGKILLs itself there) leaves the previous checkpoint loadable, nothing named
# like a checkpoint that does not load, and a run that resumes with
# checkpoint.resume=auto to weights byte-identical to an uninterrupted run's.
#   usage: checkpoint_faults.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-checkpoint-faults.XXXXXX)
trap 'rm -rf "$W"' EXIT
source "$(dirname "$0")/job_lib.sh"

pack_data
job_args 100
"$BIN/strata-train" "${ARGS[@]}" --run-dir "$W/ref" >"$W/ref.log" 2>&1 || fail "the reference run failed"

# point, the newest checkpoint a resume must find after a kill there while
# step 30's checkpoint is written (20: the new one never became visible), and the
# temporaries the kill leaves (1 once bytes are being written under the
# temporary name, until the rename); the resume must leave none
for spec in checkpoint.image_built:20:0 checkpoint.partial_write:20:1 atomic.before_fsync:20:1 \
            atomic.before_rename:20:1 atomic.before_dir_fsync:30:0 checkpoint.before_rotation:30:0; do
  IFS=: read -r point want want_temps <<<"$spec"
  R="$W/$point"
  rc=0
  STRATA_FAULT_POINT="$point@step-000000030" "$BIN/strata-train" "${ARGS[@]}" --run-dir "$R" >"$R.log" 2>&1 || rc=$?
  [ $rc -eq 137 ] || fail "$point: the run exited with $rc, not killed at the fault point: $(tail -3 "$R.log")"
  n=$(every_checkpoint_loads "$R")
  newest=$(ls "$R/checkpoints" | grep -v '\.tmp\.' | grep '^step-' | sort | tail -1)
  [ "$newest" = "$(printf 'step-%09d.h5' "$want")" ] || fail "$point: newest checkpoint is $newest, expected step $want"
  temps=$(ls "$R/checkpoints" | grep -c '\.tmp\.' || true)
  [ "$temps" -eq "$want_temps" ] || fail "$point: $temps temporaries after the kill, expected $want_temps"
  "$BIN/strata-train" "${ARGS[@]}" checkpoint.resume=auto --run-dir "$R" >"$R.resume.log" 2>&1 ||
    fail "$point: the resumed run failed: $(tail -3 "$R.resume.log")"
  from=$(grep -o 'resumed from [^ ]*' "$R/train.log" | tail -1 | sed 's|.*/||')
  final=$(same_final_weights "$W/ref" "$R") || fail "$point: final state differs from the uninterrupted run's"
  left=$(ls "$R/checkpoints" | grep -c '\.tmp\.' || true)
  [ "$left" -eq 0 ] || fail "$point: the resumed run left $left temporaries in checkpoints/"
  stages=$((${stages:-0} + 1))
  echo "$point: killed while writing step 30; $n checkpoints, all load, newest $newest; $temps temporary left by the kill, $left after the resume; resumed from $from; $final byte-identical"
done
figure kills "SIGKILL at each stage of a checkpoint write, the previous checkpoint loadable, resumed byte-identical" "$stages"
echo "checkpoint_faults: ok"
