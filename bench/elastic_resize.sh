#!/usr/bin/env bash
# How long a resize takes: from a membership change to the first step at the
# new size, split into its parts, for strata-elastic, beside a torchrun elastic
# restart of the same model (bench/torch/elastic_peer.py) on the same machine.
#   bench/elastic_resize.sh [BUILD_DIR]      (default build)
# Cases, each once per REPEATS:
#   strata_grow   strata-elastic, 2 -> 3 ranks: the hostfile gains a slot at step 120;
#                 the job is stopped at its next checkpoint (every 50 steps) and relaunched
#   strata_death  strata-elastic on 2 ranks: one strata-train rank SIGKILLed at step 120;
#                 relaunched on 2 ranks from the last checkpoint (--backoff-s 1)
#   torch_death   torchrun --standalone --max-restarts 5, 2 workers: one SIGKILLed at step 120
#   torch_death_fs  the same, the workers' process group made through a file per restart
#                 (elastic_peer.py --file-store) instead of the agent's TCP store
#   torch_grow    torchrun --nnodes 1:2 (c10d), a second agent with one worker joins at
#                 step 120; said as not working when it does not finish in 100 s
# The model: configs/fashion_mnist_mlp.yaml, global batch 192 (96 per rank on 2,
# 64 on 3), one thread per rank, fp32 on the CPU, 400 steps, a checkpoint every
# 50 (strata: checkpoint.every_steps; the peer: torch.save of model, optimizer and
# schedule). The report (bench/elastic_report.py) reads every event's time.
#   STRATA_BENCH_OUT    where the report and raw results go (default build/bench-results/<date>)
#   STRATA_BENCH_VENV   the venv with torch (default build/bench-torch-venv; made with
#                       torch from PyPI when missing)
#   REPEATS             runs of each case (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$(cd "$BUILD/bin" && pwd)
VENV=${STRATA_BENCH_VENV:-build/bench-torch-venv}
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}
RES=$OUT/raw-elastic
REPEATS=${REPEATS:-1}
mkdir -p "$RES"
OUT=$(cd "$OUT" && pwd)
RES=$(cd "$RES" && pwd)
W=$(mktemp -d /tmp/strata-elastic-bench.XXXXXX)
cleanup() {
  pkill -KILL -f "$W" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
log() { echo "[elastic_resize] $*" >&2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

scripts/apt-install.sh bench python3-yaml dataset-fashion-mnist
if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
  log "making $VENV with torch"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q torch numpy
fi
PY=$(cd "$(dirname "$VENV/bin/python")" && pwd)/python
{ echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "commit=$(git rev-parse --short HEAD)"; echo "cores=$(getconf _NPROCESSORS_ONLN)"
  echo "cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p')"
  echo "mpi=$(mpirun --version | head -1)"; echo "torch=$("$PY" -c 'import torch; print(torch.__version__)')"
} >"$RES/machine.txt"

F=/usr/share/datasets/fashion-mnist
"$BIN/strata-pack" idx --images $F/train-images-idx3-ubyte.gz --labels $F/train-labels-idx1-ubyte.gz \
  --out "$W/data/train" --shard-size 8MiB >/dev/null 2>&1
CFG=configs/fashion_mnist_mlp.yaml
TRAIN=("$BIN/strata-train" --config $CFG data.train_url="$W/data/train" data.test_url= data.cache_dir="$W/cache"
  data.batch_size=96 trainer.threads=1 trainer.max_steps=400 trainer.eval_every_epochs=0
  schedule.warmup_steps=50 logging.every_steps=1 logging.console=plain checkpoint.every_steps=50
  checkpoint.every_epochs=0)
"${TRAIN[@]}" --dry-run 2>/dev/null |
  python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))' >"$W/config.json"

stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }
# the last step a run directory's metrics.jsonl logged (0 before the first)
last_step() { grep -o '"kind":"train".*"step":[0-9]*' "$1/metrics.jsonl" 2>/dev/null | tail -1 | grep -o '[0-9]*$' || echo 0; }
peer_step() { grep -o '"event": "step", "step": [0-9]*' "$1" 2>/dev/null | tail -1 | grep -o '[0-9]*$' || echo 0; }
wait_until() {  # seconds, command...: poll until the command succeeds
  local end=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.05
  done
}
at_step() { [ "$("$1" "$2")" -ge "$3" ]; }

strata_case() {  # grow|death, repeat
  local kind=$1 k=$2 d="$W/strata_$1_$2" pid
  mkdir -p "$d"
  echo "localhost slots=2" >"$d/hosts"
  "$BIN/strata-elastic" --hostfile "$d/hosts" --min-ranks 1 --max-ranks 3 --backoff-s 1 --poll-s 0.5 \
    --grow-after-s 600 --mpirun-arg=--oversubscribe --mpirun-arg=--bind-to --mpirun-arg=none \
    -- "${TRAIN[@]}" --run-dir "$d/run" 2>&1 | stamp >"$d/console.txt" &
  pid=$!
  wait_until 300 at_step last_step "$d/run" 120 || { log "strata_$kind: no step 120"; exit 1; }
  if [ "$kind" = grow ]; then
    echo "localhost slots=3" >"$d/hosts"
  else
    pkill -KILL -n -f "strata-train --config $CFG.*$d/run"
  fi
  echo "$(date +%s.%N) change" >"$d/change.txt"
  wait "$pid" || { log "strata_$kind: strata-elastic failed"; tail -5 "$d/console.txt" >&2; exit 1; }
  mkdir -p "$RES/strata_${kind}_$k" && cp "$d/console.txt" "$d/change.txt" "$d/run/metrics.jsonl" "$RES/strata_${kind}_$k/"
  log "strata_$kind done"
}

torch_case() {  # grow|death, repeat
  local kind=$1 k=$2 d="$W/torch_$1_$2" a b rc=0 port=$((29500 + RANDOM % 1000))
  mkdir -p "$d"
  local peer=(bench/torch/elastic_peer.py --config "$W/config.json" --global-batch 192 --steps 400
    --ckpt-every 50 --ckpt "$d/peer.pt" --events "$d/events.jsonl" --threads 1)
  [ "$kind" = death_fs ] && peer+=(--file-store)
  if [ "$kind" != grow ]; then
    timeout 100 "$PY" -m torch.distributed.run --standalone --max-restarts 5 --nproc-per-node 2 \
      "${peer[@]}" >"$d/agent.txt" 2>&1 &
    a=$!
    wait_until 300 at_step peer_step "$d/events.jsonl" 120 || { log "torch_$kind: no step 120"; exit 1; }
    pkill -KILL -n -f "elastic_peer.py.*$d/events"
    echo "$(date +%s.%N) change" >"$d/change.txt"
    wait "$a" || rc=$?
  else
    local rdzv=(--nnodes 1:2 --max-restarts 5 --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$port"
      --rdzv-id "grow$k" --rdzv-conf last_call_timeout=1)
    timeout 100 "$PY" -m torch.distributed.run "${rdzv[@]}" --nproc-per-node 2 "${peer[@]}" >"$d/agent.txt" 2>&1 &
    a=$!
    wait_until 300 at_step peer_step "$d/events.jsonl" 120 || { log "torch_grow: no step 120"; exit 1; }
    timeout 100 "$PY" -m torch.distributed.run "${rdzv[@]}" --nproc-per-node 1 "${peer[@]}" >"$d/agent2.txt" 2>&1 &
    b=$!
    echo "$(date +%s.%N) change" >"$d/change.txt"
    wait "$b" || rc=$?
    if [ $rc -ne 0 ]; then kill -- "$a" 2>/dev/null || true; pkill -KILL -f "elastic_peer.py.*$d/events" || true; fi
    wait "$a" || rc=$?
  fi
  echo "exit $rc" >>"$d/change.txt"
  mkdir -p "$RES/torch_${kind}_$k" && cp "$d"/*.txt "$d/events.jsonl" "$RES/torch_${kind}_$k/"
  log "torch_$kind done (exit $rc)"
}

for k in $(seq 1 "$REPEATS"); do
  strata_case grow "$k"
  strata_case death "$k"
  torch_case death "$k"
  torch_case death_fs "$k"
  torch_case grow "$k"
done
python3 bench/elastic_report.py "$RES" >"$OUT/elastic_resize.md"
cat "$OUT/elastic_resize.md"
