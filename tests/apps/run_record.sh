#!/usr/bin/env bash
# The run directory says how the run was made: run.json (written when the run
# directory is taken) and summary.json record the command line with its
# overrides, the strata version and git commit, the host and the world size;
# resolved.yaml is what --print-config prints for the same command line. A run
# that trainer.max_steps ends mid-epoch saves its last step, and resuming from
# it continues exactly: the same weights as a run that never stopped.
#   usage: run_record.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-cli-run-record.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
D=/usr/share/datasets/fashion-mnist
"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 2MiB --quiet >/dev/null
# 10000 samples in batches of 100: 100 steps an epoch, so step 25 is mid-epoch.
# schedule.total_steps fixes the schedule whatever trainer.max_steps is.
ARGS=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" data.test_url=
      data.cache_dir="$W/cache" data.batch_size=100 trainer.threads=1 logging.console=off
      checkpoint.every_steps=10 checkpoint.keep_last=0 schedule.total_steps=100 schedule.warmup_steps=5)

"$BIN/strata-train" "${ARGS[@]}" trainer.max_steps=25 --run-dir "$W/a" >"$W/a.log" 2>&1 ||
  fail "the first run failed: $(tail -3 "$W/a.log")"
"$BIN/strata-train" --print-config "${ARGS[@]}" trainer.max_steps=25 >"$W/printed.yaml"
cmp -s "$W/printed.yaml" "$W/a/resolved.yaml" || fail "resolved.yaml differs from --print-config's output"
"$BIN/strata-train" --version >"$W/version"
printf '%s\n' "$BIN/strata-train" "${ARGS[@]}" trainer.max_steps=25 --run-dir "$W/a" >"$W/argv"
python3 - "$W/a" "$W/argv" "$W/version" "$(hostname)" <<'PY' || fail "run.json / summary.json do not record the run"
import json, re, sys
run_dir, argv_file, version_file, host = sys.argv[1:]
argv = open(argv_file).read().split("\n")[:-1]
m = re.fullmatch(r"strata (\S+) \(git (\S+)\)\n", open(version_file).read())
record = json.load(open(f"{run_dir}/run.json"))
want = {"command_line": argv, "overrides": [a for a in argv[1:] if "=" in a and not a.startswith("-")],
        "config_file": argv[2], "strata_version": m[1], "git_commit": m[2], "host": host, "world_size": 1}
for k, v in want.items():
    assert record[k] == v, f"run.json {k}: {record[k]!r}, expected {v!r}"
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["started_at"]), record["started_at"]
summary = json.load(open(f"{run_dir}/summary.json"))
for k, v in record.items():
    assert summary[k] == v, f"summary.json {k}: {summary[k]!r}, run.json has {v!r}"
print(f"run.json and summary.json: {len(argv)} arguments, {len(want['overrides'])} overrides, "
      f"strata {m[1]} git {m[2]}, host {host}, world size 1")
PY

# The last step of the run ended by max_steps is checkpointed (25 is no multiple of 10).
ls "$W/a/checkpoints" | grep -q '^step-0*25\.h5$' || fail "no checkpoint of step 25: $(ls "$W/a/checkpoints")"
# Resumed at its last step with the same max_steps: nothing more is trained.
"$BIN/strata-train" "${ARGS[@]}" trainer.max_steps=25 checkpoint.resume=auto --run-dir "$W/a" >"$W/a2.log" 2>&1 ||
  fail "resuming at max_steps failed: $(tail -3 "$W/a2.log")"
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['steps']==25, s['steps']" "$W/a/summary.json" ||
  fail "resuming at max_steps trained on"
# Resumed with a larger max_steps: the same weights as one run of 40 steps.
"$BIN/strata-train" "${ARGS[@]}" trainer.max_steps=40 checkpoint.resume=auto --run-dir "$W/a" >"$W/a3.log" 2>&1 ||
  fail "the resumed run failed: $(tail -3 "$W/a3.log")"
grep -q "resumed from $W/a/checkpoints/step-0*25.h5 at step 25" "$W/a/train.log" ||
  fail "the run did not resume from step 25: $(grep resumed "$W/a/train.log")"
"$BIN/strata-train" "${ARGS[@]}" trainer.max_steps=40 --run-dir "$W/b" >"$W/b.log" 2>&1 ||
  fail "the uninterrupted run failed: $(tail -3 "$W/b.log")"
python3 - "$W/a" "$W/b" <<'PY' || fail "the resumed run differs from the uninterrupted one"
import glob, h5py, os, sys
def last(d):
    return sorted(glob.glob(os.path.join(d, "checkpoints", "step-*.h5")))[-1]
a, b = last(sys.argv[1]), last(sys.argv[2])
assert os.path.basename(a) == os.path.basename(b), (a, b)
with h5py.File(a) as fa, h5py.File(b) as fb:
    assert fa["trainer/step"][()] == 40
    for group in ("model", "optimizer"):
        assert sorted(fa[group].keys()) == sorted(fb[group].keys())
        for n in fa[group].keys():
            assert fa[group][n][()].tobytes() == fb[group][n][()].tobytes(), f"{group}/{n} differs"
print(f"stopped at step 25 mid-epoch, resumed to 40: {os.path.basename(a)} bit-identical to a run of 40 steps")
PY
echo "PASS: run.json and summary.json record the run; max_steps mid-epoch saves its last step and resumes exactly"
