#!/usr/bin/env bash
# strata-elastic (issue 33) on one machine, two cases:
#   resize: a two-rank job grows to three ranks (hostfile edited at step 10),
#     then, 20 steps after the growth, loses
#     one (hostfile back to two slots, one rank SIGKILLed, as a pool taking a
#     node) and finishes. Its world-size history must be 2 3 2, every step must
#     have consumed the samples of an uninterrupted two-rank run with the same
#     global batch, in the same order (STRATA_TRACE_SAMPLE_IDS), and its losses
#     (each epoch's train_loss, the test loss) within 1e-3 (relative) of
#     that run's: the rank counts change only the order of float additions,
#     whose rounding training amplifies to 1e-9..1e-5 here; a wrong batch moves
#     them by more than 1e-3.
#   supervisor: strata-elastic SIGKILLed mid-run and started again adopts the
#     running job, which finishes; SIGTERM to strata-elastic (membership from
#     --discovery) stops the job cleanly with no relaunch; a job that keeps dying ends strata-elastic
#     with the --max-restarts error; a global batch no allowed rank count
#     splits and a command without --run-dir are refused.
#   usage: elastic.sh BIN_DIR SOURCE_DIR resize|supervisor   (STRATA_KEEP=1 keeps the temporary directory)
set -euo pipefail
BIN=$1
SRC=$2
CASE=$3
W=$(mktemp -d /tmp/strata-elastic.XXXXXX)
cleanup() {
  if [ -n "${SUP:-}" ]; then kill -9 "$SUP" 2>/dev/null || true; fi
  pkill -9 -f "^$BIN/strata-train .*--run-dir $W/" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
[ -z "${STRATA_KEEP:-}" ] || trap - EXIT
source "$(dirname "$0")/job_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STRATA_STOP_GRACE=2
# a failure shows what strata-elastic said last
fail() {
  echo "FAIL: $*"
  grep -h -e '^strata-elastic' -e 'strata-train: error' "$W"/*.log 2>/dev/null | tail -6 || true
  exit 1
}
# strata-elastic appends its overrides after --run-dir
rank_pids() { pgrep -f "^$BIN/strata-train .*--run-dir $1 " || true; }
CHECK="python3 $(dirname "$0")/elastic_check.py"

pack_data
# 10,000 samples, global batch 60 (30 a rank on two ranks, 20 on three): 166
# steps an epoch. No dropout: its masks are drawn per rank, so another rank
# count would draw others; the losses then differ only by the order of sums.
job_args 30 2
ARGS+=(model.dropout=0 data.shuffle_window=2)
ELASTIC=("$BIN/strata-elastic" --hostfile "$W/hosts" --min-ranks 2 --max-ranks 3 --poll-s 0.3
         --backoff-s 1 --grow-after-s 60 --stop-timeout-s 60 --mpirun-arg=--bind-to --mpirun-arg=none)

# supervise NAME: strata-elastic in the background on $W/NAME (SUP, its pid)
supervise() {
  STRATA_TRACE_SAMPLE_IDS=1 "${ELASTIC[@]}" "${@:2}" -- "$BIN/strata-train" "${ARGS[@]}" --run-dir "$W/$1" \
    >>"$W/$1.log" 2>&1 &
  SUP=$!
}
ranks_running() { rank_pids "$1" | wc -l; }
wait_ranks() {  # wait_ranks RUN N: until N strata-train processes of RUN run
  for _ in $(seq 1200); do
    if [ "$(ranks_running "$1")" -eq "$2" ]; then return 0; fi
    kill -0 "$SUP" 2>/dev/null || fail "strata-elastic ended before $2 ranks ran: $(tail -5 "$1.log")"
    sleep 0.1
  done
  fail "$2 ranks never ran in 120 s: $(tail -5 "$1.log")"
}

if [ "$CASE" = resize ]; then
  STRATA_TRACE_SAMPLE_IDS=1 "$SRC/scripts/strata-mpirun" -np 2 "$BIN/strata-train" "${ARGS[@]}" \
    --run-dir "$W/ref" >"$W/ref.log" 2>&1 || fail "the fixed-size job failed: $(tail -5 "$W/ref.log")"
  echo "localhost slots=2" >"$W/hosts"
  t0=$(date +%s)
  # the trainer's endpoint (rank r on PORT + r) and the supervisor's
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  ARGS+=(logging.prometheus_port=$PORT)
  supervise run --metrics-port 0
  # early in the first epoch, so that the growth and the kill come before or
  # near its end (step 166) and its sums are carried across both relaunches
  # (where exactly depends on the machine's speed: nothing asserts on it)
  wait_step "$W/run" $SUP 10
  echo "localhost slots=3" >"$W/hosts"
  wait_ranks "$W/run" 3
  grew_at=$(logged_step "$W/run")
  wait_step "$W/run" $SUP $((grew_at + 5))
  sup_port=$(grep -o 'metrics on http://0.0.0.0:[0-9]*' "$W/run.log" | grep -o '[0-9]*$')
  curl -sf --max-time 5 "http://127.0.0.1:$sup_port/metrics" >"$W/sup.prom" || fail "no strata-elastic metrics on $sup_port"
  curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$W/train.prom" || fail "no strata-train metrics on $PORT"
  metric() { grep "^$1{" "$2" | awk '{print $NF}'; }
  got="wanted $(metric strata_elastic_ranks_wanted "$W/sup.prom") running $(metric strata_elastic_ranks_running "$W/sup.prom") restarts $(metric strata_elastic_restarts_total "$W/sup.prom"); world size $(metric strata_world_size "$W/train.prom") changes $(metric strata_world_size_changes_total "$W/train.prom")"
  echo "on 3 ranks: $got"
  [ "$got" = "wanted 3 running 3 restarts 0; world size 3 changes 1" ] || fail "metrics on 3 ranks: $got"
  wait_step "$W/run" $SUP $((grew_at + 20))
  echo "localhost slots=2" >"$W/hosts"
  victim=$(rank_pids "$W/run" | tail -1)
  kill -9 "$victim"
  echo "grew to 3 ranks near step $grew_at; SIGKILLed rank pid $victim at step $(logged_step "$W/run")"
  wait_exit $SUP 600
  SUP=
  [ "$JOB_RC" -eq 0 ] || fail "strata-elastic exited $JOB_RC: $(tail -20 "$W/run.log")"
  grep '^strata-elastic:' "$W/run.log"
  hist=$($CHECK history "$W/run" 2>"$W/starts")
  echo "world-size history: $hist: $(cat "$W/starts") ($(($(date +%s) - t0)) s)"
  [ "$hist" = "2 3 2" ] || fail "world-size history $hist, expected 2 3 2"
  $CHECK compare "$W/ref" "$W/run" 1e-3 || fail "the elastic run differs from the fixed-size run"
  echo "elastic resize: ok"
  exit 0
fi

# supervisor: killed and started again with the same arguments
echo "localhost slots=2" >"$W/hosts"
supervise adopt
wait_step "$W/adopt" $SUP 30
kill -9 $SUP
wait $SUP 2>/dev/null || true
mpirun_before=$(grep '^mpirun_pid' "$W/adopt/strata-elastic.state" | cut -d' ' -f2)
echo "SIGKILLed strata-elastic at step $(logged_step "$W/adopt"); mpirun pid $mpirun_before runs on"
supervise adopt
wait_exit $SUP 600
SUP=
[ "$JOB_RC" -eq 0 ] || fail "the second strata-elastic exited $JOB_RC: $(tail -20 "$W/adopt.log")"
grep -q "adopted the running job: mpirun pid $mpirun_before" "$W/adopt.log" ||
  fail "the second strata-elastic did not adopt mpirun $mpirun_before: $(grep '^strata-elastic' "$W/adopt.log")"
grep '^strata-elastic:' "$W/adopt.log"
hist=$($CHECK history "$W/adopt")
[ "$hist" = "2" ] || fail "world-size history $hist, expected 2 (one start, adopted)"
[ "$(newest_checkpoint "$W/adopt")" = step-000000332.h5 ] || fail "the run did not end at step 332"
"${ELASTIC[@]}" -- "$BIN/strata-train" "${ARGS[@]}" --run-dir "$W/adopt" >"$W/again.log" 2>&1 ||
  fail "a third strata-elastic on the finished run exited non-zero: $(cat "$W/again.log")"
grep -q "already finished" "$W/again.log" || fail "the finished run was not recognised: $(cat "$W/again.log")"
echo "killed and restarted: adopted mpirun $mpirun_before, the run finished (history $hist); a third start said: $(grep -o 'the run.*' "$W/again.log")"

# SIGTERM to strata-elastic: one clean stop of the job (SIGUSR1 to mpirun), no relaunch, mpirun's
# status. The membership from a discovery command this time (host:slots lines).
ELASTIC_HOSTFILE=("${ELASTIC[@]}")
ELASTIC=("$BIN/strata-elastic" --discovery "sed 's/ slots=/:/' $W/hosts" "${ELASTIC[@]:3}")
supervise term
wait_step "$W/term" $SUP 20
kill -TERM $SUP
wait_exit $SUP 120
SUP=
grep -q "stopped by signal 10 at step" "$W/term/train.log" ||
  fail "SIGTERM: no clean stop in train.log (exit $JOB_RC): $(tail -3 "$W/term/train.log")"
stop_step=$(grep -o "stopped by signal 10 at step [0-9]*" "$W/term/train.log" | grep -o '[0-9]*$')
[ -e "$W/term/checkpoints/$(printf 'step-%09d.h5' "$stop_step")" ] || fail "SIGTERM: no checkpoint of step $stop_step"
[ "$JOB_RC" -eq 138 ] || fail "SIGTERM: strata-elastic exited $JOB_RC, not mpirun's 138 (128 + SIGUSR1)"
[ "$(grep -c '^strata-elastic: launching' "$W/term.log")" -eq 1 ] || fail "SIGTERM: the job was launched again"
ELASTIC=("${ELASTIC_HOSTFILE[@]}")
grep -q "^strata-elastic: launching 2 ranks on localhost:2 " "$W/term.log" ||
  fail "--discovery: not launched on localhost:2: $(grep '^strata-elastic' "$W/term.log")"
echo "SIGTERM: the job stopped after step $stop_step with its checkpoint, strata-elastic exited $JOB_RC: $(grep '^strata-elastic: the job stopped' "$W/term.log")"

# a job that dies at every start (its dataset does not exist)
rc=0
"$BIN/strata-elastic" --hostfile "$W/hosts" --min-ranks 2 --max-ranks 2 --poll-s 0.1 --max-restarts 1 --backoff-s 0.2 -- "$BIN/strata-train" "${ARGS[@]}" data.train_url=file://$W/none \
  --run-dir "$W/dies" >"$W/dies.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "strata-elastic exited 0 with a job that always dies"
grep -q "error: the job died 2 time(s), more than --max-restarts 1 allows; the last death: mpirun exit" "$W/dies.log" ||
  fail "no --max-restarts error: $(grep '^strata-elastic' "$W/dies.log")"
echo "always dying: exit $rc, $(grep "^strata-elastic: error" "$W/dies.log")"

# a global batch no rank count from --min-ranks to --max-ranks splits
rc=0
"${ELASTIC[@]}" --global-batch 61 -- "$BIN/strata-train" "${ARGS[@]}" --run-dir "$W/g61" >"$W/g61.log" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "global batch G=61 does not split over W=3 ranks.*rank counts up to 3 that do: 1$" "$W/g61.log" ||
  fail "--global-batch 61 on 2 to 3 ranks: exit $rc, $(cat "$W/g61.log")"
echo "global batch 61: exit $rc, $(cat "$W/g61.log")"

rc=0
"${ELASTIC[@]}" -- "$BIN/strata-train" "${ARGS[@]}" >"$W/norun.log" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "no --run-dir" "$W/norun.log" || fail "a command without --run-dir: exit $rc, $(cat "$W/norun.log")"
echo "elastic supervisor: ok"
