#!/usr/bin/env bash
# deploy/slurm/strata-train.sbatch under a real one-node Slurm that this test
# starts (munged, slurmctld, slurmd, its own configuration, ports and state in a
# temporary directory). A two-rank job of the Fashion-MNIST MLP is
#   1. preempted by a job of a higher-priority partition (preempt/partition_prio,
#      PreemptMode=REQUEUE) with the partition's GraceTime 60 s: its ranks alone
#      get SIGTERM, and the script requeues the job once they have stopped;
#   2. preempted again with GraceTime 0: the ranks, srun and the batch shell get
#      SIGTERM (the ranks twice, 10 ms apart), and Slurm requeues the job;
#   3. requeued with `scontrol requeue`, as an administrator would;
# each time its ranks must stop after one step with a checkpoint of it, the job
# must go back into the queue (pending while the preemptor runs), start again
# and resume from that step. It then completes, and its final checkpoint must be
# bit-identical to that of the same job run through the same script without
# interruption (strata-inspect --same-as). The cluster's JobRequeue is 0, so
# that the script's own --requeue is what lets the job back into the queue.
#   usage: slurm_requeue.sh BIN_DIR SOURCE_DIR
#   STRATA_SLURM_LOGS=DIR keeps the daemons' logs, the configuration and the
#   jobs' output there (the temporary directory goes at exit).
set -euo pipefail
BIN=$1
SRC=$2
SCRIPT=$SRC/deploy/slurm/strata-train.sbatch
skip() { echo "slurm_requeue: SKIPPED: $*"; exit 77; }
for t in munged slurmctld slurmd sbatch scontrol squeue srun; do
  command -v $t >/dev/null || skip "$t is not installed (scripts/test.sh installs munge, slurmctld, slurmd and slurm-client)"
done
[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start jobs"

# Under the sanitizer build (scripts/test.sh sets ASAN_OPTIONS): the ranks run
# without the leak check, as in tests/multinode/train_two_nodes.sh (Open MPI
# 4.1 dlcloses its plugins before LeakSanitizer reports, so their leaks cannot
# be suppressed; seen here under srun --mpi=pmix too). sbatch and srun pass it on.
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi

W=$(mktemp -d /tmp/strata-slurm.XXXXXX)
chmod 755 "$W"
export SLURM_CONF=$W/etc/slurm.conf
FIRST_JOB=$((1000 + RANDOM % 60000))  # this cluster's first job id (FirstJobId)
stop_cluster() {
  local ids d pid steps
  # the jobs first: their step daemons (slurmstepd) outlive slurmd
  if [ -s "$W/slurmctld.pid" ]; then
    ids=$(squeue -h -o %i 2>/dev/null || true)
    if [ -n "$ids" ]; then scancel $ids 2>/dev/null || true; fi
  fi
  steps="^slurmstepd: \[($(seq -s '|' $FIRST_JOB $((FIRST_JOB + 19))))\."  # this test's jobs only
  for _ in $(seq 90); do
    if ! pgrep -f "$steps" >/dev/null; then break; fi
    sleep 1
  done
  # then the daemons, by pid, waiting for each to exit
  for d in slurmd slurmctld munged; do
    pid=$(cat "$W/$d.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        sleep 0.2
      done
    fi
  done
  # a rank that survived all of that: only this test's (its data lives in $W)
  pkill -9 -f "^$BIN/strata-train .*file://$W/data" 2>/dev/null || true
  if [ -n "${STRATA_SLURM_LOGS:-}" ]; then
    mkdir -p "$STRATA_SLURM_LOGS" && cp -r "$W"/log "$W"/etc "$W"/work/*.out "$STRATA_SLURM_LOGS" 2>/dev/null || true
  fi
}
trap 'stop_cluster; rm -rf "$W"' EXIT
fail() {  # on stderr: it is also called inside $(...)
  {
    echo "FAIL: $*"
    local f
    for f in "$W"/work/*.out "$W"/log/slurmctld.log "$W"/log/slurmd.log; do
      if [ -e "$f" ]; then echo "--- last lines of $f"; tail -25 "$f"; fi
    done
  } >&2
  exit 1
}
# waits up to SECONDS for a shell condition, else fails with MESSAGE
wait_for() {  # wait_for SECONDS MESSAGE CONDITION...
  local t=$1 msg=$2
  shift 2
  for _ in $(seq $((t * 5))); do
    if "$@"; then return 0; fi
    sleep 0.2
  done
  fail "$msg (waited $t s)"
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --- the cluster -----------------------------------------------------------
mkdir -p "$W"/{etc,munge,state,spool,log,tmp,work}
chmod 711 "$W/munge"
head -c 1024 /dev/urandom >"$W/munge/munge.key"
chmod 400 "$W/munge/munge.key"
munged --force --socket="$W/munge/socket" --key-file="$W/munge/munge.key" --pid-file="$W/munged.pid" \
  --seed-file="$W/munge/seed" --log-file="$W/log/munged.log" ||
  skip "munged does not start here: $(tail -3 "$W/log/munged.log" 2>/dev/null)"

NODE=$(hostname -s)
# the node as slurmd sees it (CPUs, sockets, cores, memory), without its name and uptime
HW=$(slurmd -C | head -1 | sed 's/^NodeName=[^ ]* //')
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
[ "$CTLD_PORT" != "$SLURMD_PORT" ] || SLURMD_PORT=$(free_port)
cat >"$SLURM_CONF" <<EOF
ClusterName=stratatest
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
# this test's munged; cred_expire is also how long a requeued job waits before
# it may start again (default 120 s)
AuthInfo=socket=$W/munge/socket,cred_expire=5
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
TmpFS=$W/tmp
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
# job ids of their own: Open MPI names its session directory in /tmp after them
FirstJobId=$FIRST_JOB
# no cgroups: processes tracked by their parentage, tasks not confined
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# srun without --mpi starts no PMI: the script must ask for pmix itself
MpiDefault=none
MailProg=/bin/true
# jobs are not requeueable unless they say so (the script's --requeue)
JobRequeue=0
# seconds between SIGTERM and SIGKILL when a job is ended or requeued
KillWait=60
ReturnToService=2
# schedule every second (default 60 s): a requeued job starts once it may
SchedulerParameters=sched_interval=1,bf_interval=1
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=$NODE NodeAddr=127.0.0.1 $HW State=UNKNOWN
# a preempted job's tasks get SIGTERM and GraceTime seconds before everything is killed
PartitionName=low Nodes=$NODE Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime=60
PartitionName=high Nodes=$NODE MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
EOF
# the PMIx plugin's per-step directories under $W, not /tmp
echo "PMIxCliTmpDirBase=$W/tmp" >"$W/etc/mpi.conf"

slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N "$NODE" || fail "slurmd did not start"
node_idle() { [ "$(sinfo -h -n "$NODE" -p low -o %T 2>/dev/null)" = idle ]; }
wait_for 60 "the node never became idle (slurmd.log below)" node_idle
srun --mpi=list 2>&1 | grep -qw pmix || fail "this Slurm has no pmix MPI plugin: $(srun --mpi=list 2>&1)"
echo "slurm: $(sinfo -V), node $NODE ($HW), slurmctld port $CTLD_PORT, slurmd port $SLURMD_PORT, $(srun --mpi=list 2>&1 | grep -o 'pmix_v[0-9]*' | head -1)"

# --- the job ---------------------------------------------------------------
D=/usr/share/datasets/fashion-mnist
"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 2MiB >/dev/null 2>&1 || fail "strata-pack failed"
# 12 epochs of 100 steps (50 samples a rank), a checkpoint at each epoch's end
# (the config's checkpoint.every_epochs); the script adds resume=auto and every_steps
OVERRIDES=(data.train_url="file://$W/data" data.test_url="file://$W/data" data.batch_size=50
           trainer.epochs=12 trainer.threads=1 logging.every_steps=5 logging.console=plain)
export STRATA_CONFIG=$SRC/configs/fashion_mnist_mlp.yaml STRATA_TRAIN=$BIN/strata-train
unset STRATA_RUN_DIR  # the script's default run directory, runs/<job name>-<job id>
cd "$W/work"          # sbatch's directory: the jobs' working directory, output and runs/
job_field() { scontrol show job -o "$1" | grep -o "$2=[^ ]*" | cut -d= -f2; }
t0=$(date +%s)

ended() { ! squeue -h -j "$1" -o %i 2>/dev/null | grep -q .; }  # ended JOB: no longer in the queue

# the uninterrupted job, through the same script (not sbatch --wait, which
# polls at growing intervals: it returned up to half a minute late here)
REF_JOB=$(sbatch --parsable --job-name=reference "$SCRIPT" "${OVERRIDES[@]}") || fail "sbatch refused the job"
wait_for 300 "the uninterrupted job $REF_JOB never ended" ended "$REF_JOB"
REF=runs/reference-$REF_JOB
[ "$(job_field "$REF_JOB" JobState)" = COMPLETED ] && [ "$(job_field "$REF_JOB" Restarts)" = 0 ] ||
  fail "the uninterrupted job: $(scontrol show job -o "$REF_JOB")"
FINAL=$(ls "$REF/checkpoints" | grep '^step-.*\.h5$' | sort | tail -1)
[ -n "$FINAL" ] || fail "the uninterrupted job left no checkpoint"
echo "uninterrupted job $REF_JOB: completed, final checkpoint $FINAL ($(($(date +%s) - t0)) s)"

JOB=$(sbatch --parsable "$SCRIPT" "${OVERRIDES[@]}") || fail "sbatch refused the job"
R=runs/strata-train-$JOB
OUT=strata-train-$JOB.out
count() { local n; n=$(grep -c "$1" "$2" 2>/dev/null || true); echo "${n:-0}"; }  # count PATTERN FILE
logged() { [ "$(count "$1" "$2")" -ge "$3" ]; }  # logged PATTERN FILE N: N lines or more
logged_step() { grep -o '^epoch [0-9/]* step [0-9]*' "$R/train.log" 2>/dev/null | tail -1 | grep -o '[0-9]*$' || true; }
past_step() { local s; s=$(logged_step); [ -n "$s" ] && [ "$s" -ge "$1" ]; }

job_done() { ended "$JOB"; }

# stop_step N: the step of the N-th clean stop in train.log (rank 0's), once it
# is there; fails when the job starts again, or ends, without it
stopped_or_went_on() {
  logged '^stopped by signal 15 at step' "$R/train.log" "$1" ||
    logged '^strata-train.sbatch: job .*, start' "$OUT" $(($1 + 2)) || job_done
}
stop_step() {
  wait_for 120 "job $JOB did not stop" stopped_or_went_on "$1"
  logged '^stopped by signal 15 at step' "$R/train.log" "$1" ||
    fail "interruption $1: the ranks ended without stopping cleanly (no 'stopped by signal 15' in train.log)"
  grep -o '^stopped by signal 15 at step [0-9]*' "$R/train.log" | sed -n "$1p" | grep -o '[0-9]*$'
}
# wait_requeued N: until Slurm counts N restarts; fails at once when the job ends instead
wait_requeued() {
  local state
  for _ in $(seq 300); do
    [ "$(job_field "$JOB" Restarts)" -lt "$1" ] || return 0
    state=$(job_field "$JOB" JobState)
    case $state in
      PENDING | RUNNING | REQUEUED | COMPLETING | CONFIGURING) sleep 0.2 ;;
      *) fail "job $JOB ended $state (exit $(job_field "$JOB" ExitCode)) instead of going back into the queue" ;;
    esac
  done
  fail "job $JOB was not requeued in 60 s (state $(job_field "$JOB" JobState))"
}
# check_resumed N STEP: start N+1 resumed from the checkpoint of STEP, not afresh
# (a fresh start logs epoch 1's step 5 a second time)
check_resumed() {
  began() { logged '^resumed from' "$R/train.log" "$1" || logged '^epoch 1/[0-9]* step 5 ' "$R/train.log" 2 || job_done; }
  wait_for 120 "start $(($1 + 1)) of the job never began" began "$1"
  local line
  line=$(grep '^resumed from' "$R/train.log" | sed -n "$1p" || true)
  [[ $line == *"$(printf 'step-%09d.h5' "$2") at step $2,"* ]] ||
    fail "start $(($1 + 1)) did not resume from the checkpoint of step $2 (the one it stopped with): ${line:-it started afresh}"
}
# preempt N: a job in the high partition that wants the whole node preempts the
# job; it records the state the job is in while it runs. Prints the step the
# job stopped at, once the job has resumed from it.
preempt() {
  local high s
  high=$(sbatch --parsable -p high --exclusive -n 1 -o "high-%j.out" \
    --wrap "echo while the preemptor ran, job $JOB was \$(squeue -h -j $JOB -o %T)") || fail "sbatch refused the preemptor"
  s=$(stop_step "$1") || exit 1
  wait_requeued "$1"
  wait_for 60 "the preemptor never ran" logged "the preemptor ran" "high-$high.out" 1
  grep -q "was PENDING" "high-$high.out" || fail "the preemptor ran beside the job: $(cat "high-$high.out")"
  check_resumed "$1" "$s"
  echo "preempted by job $high: stopped at step $s with its checkpoint, requeued by $(requeuer "$1"), $(cat "high-$high.out"), resumed from step $s" >&2
  echo "$s"
}
# who requeued the job the N-th time: the script says so in the job's output
requeuer() { if logged "requeueing job $JOB" "$OUT" "$1"; then echo the script; else echo Slurm; fi; }
elapsed() { echo "($(($(date +%s) - t0)) s)"; }

# 1. preemption with a grace time (the partition's GraceTime=60), after the first checkpoint
wait_for 120 "the job wrote no checkpoint" test -e "$R/checkpoints/step-000000100.h5"
S1=$(preempt 1) || exit 1
[ "$(requeuer 1)" = "the script" ] || fail "preemption with a grace time: the job was requeued, but not by the script"
echo "1. with GraceTime=60: ok $(elapsed)"

# 2. preemption without a grace time (the ranks get SIGTERM twice, 10 ms apart),
# once the resumed job has gone on 20 steps
wait_for 120 "the resumed job never reached step $((S1 + 20))" past_step $((S1 + 20))
scontrol update PartitionName=low GraceTime=0 || fail "scontrol update PartitionName=low refused"
S2=$(preempt 2) || exit 1
echo "2. with GraceTime=0: ok $(elapsed)"

# 3. scontrol requeue, as an administrator would, 20 steps after the resume
wait_for 120 "the resumed job never reached step $((S2 + 20))" past_step $((S2 + 20))
scontrol requeue "$JOB" || fail "scontrol requeue $JOB refused"
S3=$(stop_step 3) || exit 1
wait_requeued 3
check_resumed 3 "$S3"
echo "scontrol requeue: stopped at step $S3 with its checkpoint, requeued by $(requeuer 3), resumed from step $S3"
echo "3. scontrol requeue: ok $(elapsed)"

# the end
wait_for 300 "job $JOB never ended" job_done
[ "$(job_field "$JOB" JobState)" = COMPLETED ] || fail "job $JOB ended $(job_field "$JOB" JobState)"
[ "$(job_field "$JOB" Restarts)" = 3 ] || fail "job $JOB restarted $(job_field "$JOB" Restarts) times, not 3"
[ "$(count '^strata-train.sbatch: job .*, start' "$OUT")" = 4 ] || fail "$OUT does not log four starts"
"$BIN/strata-inspect" "$R/checkpoints/$FINAL" --same-as "$REF/checkpoints/$FINAL" >"$W/same.txt" 2>&1 ||
  fail "the requeued job's $FINAL differs from the uninterrupted job's: $(cat "$W/same.txt")"
echo "job $JOB: completed after 3 restarts; $FINAL against the uninterrupted job's: $(cat "$W/same.txt")"
echo "slurm_requeue: ok $(elapsed)"
