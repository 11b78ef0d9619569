# Shared by the crash, preemption and checkpoint-fault tests (sourced): a
# Fashion-MNIST MLP job small enough to run many times, and the checks.
#   needs BIN, SRC, W set by the caller
D=/usr/share/datasets/fashion-mnist
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/figures_lib.sh"

pack_data() {
  "$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
    --out "$W/data" --shard-size 2MiB >/dev/null 2>&1 || fail "strata-pack failed"
}

# 10,000 samples, EPOCHS (default 2) of 100 steps at 100 samples a step over two ranks,
# a checkpoint every 10 steps and at each epoch's end, dropout on (its
# generators are part of what a resume must restore). --run-dir goes last.
job_args() {  # job_args PER_RANK_BATCH [EPOCHS]
  ARGS=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" data.test_url="file://$W/data"
        data.cache_dir="$W/cache" data.batch_size="$1" trainer.epochs="${2:-2}" trainer.threads=1
        checkpoint.every_steps=10 checkpoint.every_epochs=1 checkpoint.keep_last=50
        logging.every_steps=5 logging.console=plain schedule.warmup_steps=20 model.dropout=0.1)
}

# The newest step rank 0 has logged in RUN/train.log (empty before the first).
logged_step() { grep -o 'step [0-9]*' "$1/train.log" 2>/dev/null | tail -1 | cut -d' ' -f2 || true; }

# wait_step RUN PID STEP: until RUN has logged STEP or later; fails if PID ends first.
wait_step() {
  local s
  for _ in $(seq 1200); do
    s=$(logged_step "$1")
    if [ -n "$s" ] && [ "$s" -ge "$3" ]; then return 0; fi
    kill -0 "$2" 2>/dev/null || fail "the job ended before step $3 (last logged: ${s:-none})"
    sleep 0.05
  done
  fail "the job never reached step $3 in 60 s (last logged: ${s:-none})"
}

# wait_exit PID SECONDS: sets JOB_RC to the job's status; fails when it is
# still running after SECONDS (run it in this shell, not in $(...)).
wait_exit() {
  for _ in $(seq $(($2 * 10))); do
    if ! kill -0 "$1" 2>/dev/null; then
      JOB_RC=0
      wait "$1" || JOB_RC=$?
      return 0
    fi
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null
  fail "the job was still running $2 s after the fault: it hangs"
}

# The strata-train processes of the run in RUN (not mpirun's own command line).
rank_pids() { pgrep -f "^$BIN/strata-train .*--run-dir $1\$" || true; }

# The name of RUN's newest step-*.h5 checkpoint (empty when it has none).
newest_checkpoint() { ls "$1/checkpoints" 2>/dev/null | grep '^step-.*\.h5$' | sort | tail -1 || true; }

# kill_came_first REF RUN WHAT: fails unless RUN, just killed, lacks REF's final
# checkpoint; a kill after it would leave its resume nothing to do, and the
# comparison of final weights would prove nothing.
kill_came_first() {
  local final
  final=$(newest_checkpoint "$1")
  [ -n "$final" ] || fail "$3: the uninterrupted job left no checkpoint"
  [ ! -e "$2/checkpoints/$final" ] || fail "$3: the kill came after the final checkpoint $final"
}

# same_final_weights REF RUN: the newest checkpoints of both runs hold the same
# step and byte-identical model and optimizer tensors; prints the step.
same_final_weights() {
  python3 - "$1" "$2" <<'PY'
import glob, os, subprocess, sys
try:
    import h5py
except ImportError:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "h5py"]); import h5py
def newest(d):
    c = sorted(glob.glob(os.path.join(d, "checkpoints", "step-*.h5")))
    assert c, f"no checkpoint in {d}"
    return c[-1]
a, b = newest(sys.argv[1]), newest(sys.argv[2])
assert os.path.basename(a) == os.path.basename(b), f"newest checkpoints differ: {a} vs {b}"
with h5py.File(a) as fa, h5py.File(b) as fb:
    for g in ("model", "optimizer"):
        assert sorted(fa[g].keys()) == sorted(fb[g].keys()), f"{g} tensors differ in name"
        for n in fa[g].keys():
            assert fa[g][n][()].tobytes() == fb[g][n][()].tobytes(), f"{g} tensor {n} differs"
print(os.path.basename(a))
PY
}

# every_checkpoint_loads RUN: each step-*.h5 left in RUN opens and exports
# whole (nothing that looks whole and is not); prints how many.
every_checkpoint_loads() {
  local n=0 f
  for f in "$1"/checkpoints/step-*.h5; do
    [ -e "$f" ] || continue
    "$BIN/strata-export" --checkpoint "$f" --out "$W/export.safetensors" >/dev/null 2>&1 || fail "checkpoint $f does not load"
    n=$((n + 1))
  done
  echo $n
}
