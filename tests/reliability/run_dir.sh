#!/usr/bin/env bash
# strata-train's run directory: summary.json counts every request of the job;
# a config error stops the run before the
# directory exists; a second run on a directory in use is refused with the
# holder's pid and touches nothing of it; the lock of a run killed with SIGKILL
# is taken over by the next run, which says so; resuming with another model
# names the checkpoint, the tensor and the config key, in train.log too.
#   usage: run_dir.sh BIN_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/figures_lib.sh"
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-run-dir.XXXXXX)
A_PID=
trap '[ -n "$A_PID" ] && kill -9 $A_PID 2>/dev/null; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
D=/usr/share/datasets/fashion-mnist
"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 2MiB >/dev/null 2>&1
ARGS=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" data.test_url="file://$W/data"
      data.batch_size=100 trainer.threads=1 schedule.warmup_steps=20 logging.console=plain logging.every_steps=10
      checkpoint.every_steps=20)

# 0. summary.json counts every request the job made of the store, the
#    manifest's included: here one GET per object of the dataset.
"$BIN/strata-train" "${ARGS[@]}" trainer.max_steps=30 data.cache_dir="$W/cache0" --run-dir "$W/io" >"$W/io.log" 2>&1 ||
  fail "the short run failed: $(tail -3 "$W/io.log")"
python3 - "$W/io/summary.json" "$W/data" <<'PY' || fail "summary.json does not count every request"
import json, os, sys
s = json.load(open(sys.argv[1]))
files = [os.path.join(sys.argv[2], f) for f in os.listdir(sys.argv[2])]
want_requests, want_bytes = len(files), sum(os.path.getsize(f) for f in files)
assert (s["remote_requests"], s["remote_bytes"]) == (want_requests, want_bytes), \
    f"summary says {s['remote_requests']} requests, {s['remote_bytes']} bytes; the store has {want_requests} objects, {want_bytes} bytes"
print(f"summary.json: {want_requests} requests, {want_bytes} bytes = every object of the store once (manifest included)")
PY

# 1. A contradiction only the data can reveal (30 steps, 200 of them warm-up)
#    is found before the run directory is made.
rc=0
"$BIN/strata-train" "${ARGS[@]}" trainer.max_steps=30 schedule.warmup_steps=200 data.cache_dir="$W/cache1" \
  --run-dir "$W/bad" >"$W/bad.log" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "a bad schedule exited with $rc"
grep -q "schedule.warmup_steps" "$W/bad.log" || fail "the error does not name the key: $(cat "$W/bad.log")"
[ ! -e "$W/bad" ] || fail "the run directory was created for a config that cannot run"
echo "config error before the run directory: $(grep -o 'error: .*' "$W/bad.log")"
tally bad_inputs

# 2. A second run on a directory in use is refused.
"$BIN/strata-train" "${ARGS[@]}" trainer.epochs=60 data.cache_dir="$W/cache-a" --run-dir "$W/run" >"$W/a.log" 2>&1 &
A_PID=$!
for _ in $(seq 600); do
  grep -q "step 40 " "$W/run/train.log" 2>/dev/null && break
  kill -0 $A_PID 2>/dev/null || fail "the first run ended early: $(tail -3 "$W/a.log")"
  sleep 0.1
done
grep -q "step 40 " "$W/run/train.log" || fail "the first run never reached step 40"
yaml_before=$(md5sum <"$W/run/resolved.yaml")
rc=0
"$BIN/strata-train" "${ARGS[@]}" trainer.epochs=2 data.cache_dir="$W/cache-b" --run-dir "$W/run" >"$W/b.log" 2>&1 || rc=$?
kill -0 $A_PID 2>/dev/null || fail "the first run ended before the second was refused; make it longer"
[ $rc -eq 1 ] || fail "the second run exited with $rc: $(tail -3 "$W/b.log")"
grep -q "run directory $W/run is in use by another run (pid $A_PID on host " "$W/b.log" ||
  fail "the refusal does not name the holder: $(cat "$W/b.log")"
[ "$(md5sum <"$W/run/resolved.yaml")" = "$yaml_before" ] || fail "the refused run rewrote resolved.yaml"
grep -q "epochs: 2 " "$W/run/train.log" && fail "the refused run wrote to train.log"
echo "second run refused: $(grep -o 'error: .*' "$W/b.log" | cut -c1-160)"
tally bad_inputs

# 3. SIGKILL the holder: the next run takes the lock over at once and says whose it was.
kill -9 $A_PID
wait $A_PID 2>/dev/null || true
A_KILLED=$A_PID
A_PID=
"$BIN/strata-train" "${ARGS[@]}" trainer.epochs=60 data.cache_dir="$W/cache-a" --run-dir "$W/run" \
  checkpoint.resume=auto >"$W/c.log" 2>&1 || fail "the resumed run failed: $(tail -3 "$W/c.log")"
grep -q "took over the lock of a run that ended without releasing it (pid $A_KILLED on host " "$W/run/train.log" ||
  fail "the stale lock's holder is not named in train.log"
grep -q "resumed from" "$W/c.log" || fail "the run after the kill did not resume"
[ "$(cat "$W/run/.lock")" = "" ] || fail "a run that ended normally left its name in .lock"
echo "stale lock recovered: $(grep -o 'took over.*' "$W/run/train.log")"
tally kills

# 4. Resuming with another model names the checkpoint, the tensor and the key.
rc=0
"$BIN/strata-train" "${ARGS[@]}" trainer.epochs=61 model.hidden=[64] data.cache_dir="$W/cache-a" --run-dir "$W/run" \
  checkpoint.resume=auto >"$W/d.log" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "resuming with another model exited with $rc"
for part in "checkpoint '$W/run/checkpoints/step-" "does not fit this model" "parameter '" \
            "model.hidden: [256, 128] -> [64]" "trainer.epochs: 60 -> 61"; do
  grep -qF "$part" "$W/d.log" || fail "'$part' not in: $(cat "$W/d.log")"
done
grep -qF "error: checkpoint '$W/run/checkpoints/step-" "$W/run/train.log" || fail "the error is not in train.log"
echo "other model refused: $(grep -o "error: .*" "$W/d.log")"
tally bad_inputs
figure kills "a run killed with SIGKILL, its run-directory lock taken over by the next run"
figure bad_inputs "a second run on a locked run directory, a config error, a checkpoint of another model"
echo "PASS: run directory owned, refused, recovered; errors named and logged"
