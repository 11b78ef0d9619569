#!/usr/bin/env bash
# An ImageFolder of JPEG and PNG files end to end: scripts/make-imagefolder.py
# writes 2000 train and 500 test Fashion-MNIST images (40 x 40 RGB, a third
# PNGs); strata-pack files packs them (and refuses a truncated JPEG, naming it,
# unless --skip-bad); strata-train decodes them to 32 x 32 (RandomResizedCrop +
# flip for training, resize + centre crop for evaluation) and trains a small CNN
# for 248 steps: the loss must fall. A run killed with SIGKILL mid-run and
# resumed with checkpoint.resume=auto ends bit-identical to an uninterrupted one
# (strata-inspect --same-as). A shard holding the truncated JPEG stops a run
# with an error naming shard, sample and file, or, with data.skip_bad_images,
# is replaced and counted in metrics.jsonl's bad_images.
#   usage: imagefolder_train.sh BIN_DIR SOURCE_DIR   (KEEP=1: leave the work directory)
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-imagefolder.XXXXXX)
JOB=
cleanup() {
  if [ -n "$JOB" ]; then kill -9 "$JOB" 2>/dev/null || true; fi
  if [ -z "${KEEP:-}" ]; then rm -rf "$W"; fi
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

python3 "$SRC/scripts/make-imagefolder.py" "$W/img" --train 2000 --test 500 --size 40 --rgb ||
  fail "make-imagefolder.py failed"

# A truncated JPEG among the training files: refused and named, then left out with --skip-bad.
head -c 300 "$(ls "$W"/img/train/bag/*.jpg | head -1)" >"$W/img/train/bag/zz-cut.jpg"
if "$BIN/strata-pack" files --root "$W/img/train" --out "$W/refused" --quiet >"$W/pack.out" 2>"$W/pack.err"; then
  fail "strata-pack packed a truncated JPEG"
fi
grep -q "bag/zz-cut.jpg: JPEG" "$W/pack.err" || fail "strata-pack's refusal does not name the file: $(cat "$W/pack.err")"
grep -q "^strata-pack: 1 of 2001 files are not images" "$W/pack.err" || fail "strata-pack refused more than the one bad file: $(cat "$W/pack.err")"
[ ! -e "$W/refused/manifest.json" ] || fail "a refused packing published a manifest"
echo "strata-pack refused: $(grep -m1 'zz-cut' "$W/pack.err" | sed 's|.*/img/||')"
"$BIN/strata-pack" files --root "$W/img/train" --out "$W/train" --shard-size 256KiB --skip-bad \
  >"$W/pack.out" 2>"$W/pack.log" || fail "strata-pack --skip-bad failed: $(cat "$W/pack.log")"
grep -q "left out .*zz-cut.jpg" "$W/pack.log" || fail "--skip-bad did not list the file: $(cat "$W/pack.log")"
echo "strata-pack --skip-bad: $(cat "$W/pack.out")"
"$BIN/strata-pack" files --root "$W/img/test" --out "$W/test" --shard-size 256KiB --quiet >/dev/null ||
  fail "packing the test split failed"
# and one packed as it is, to see the loader's error
"$BIN/strata-pack" files --root "$W/img/train" --out "$W/train-bad" --shard-size 256KiB --no-verify --quiet \
  >/dev/null || fail "strata-pack --no-verify failed"

args() {  # args TRAIN_DIR RUN_DIR [more keys]
  local data=$1 run=$2
  shift 2
  ARGS=(--config "$SRC/configs/fashion_mnist_cnn.yaml" data.train_url="file://$data" data.test_url="file://$W/test"
        data.cache_dir="$W/cache" data.image_size=32 data.image_channels=3 data.normalize_mean=[0.3,0.3,0.3]
        data.normalize_std=[0.35,0.35,0.35] data.augment_hflip=true data.augment_crop_scale=[0.35,1.0]
        data.batch_size=32 model.channels=[16,32] model.hidden=[64] trainer.epochs=4 trainer.threads=2
        schedule.warmup_steps=20 logging.every_steps=10 logging.console=plain checkpoint.every_steps=20
        checkpoint.keep_last=50 "$@" --run-dir "$run")
}

# The uninterrupted run; the loss must fall.
args "$W/train" "$W/ref"
"$BIN/strata-train" "${ARGS[@]}" >"$W/ref.log" 2>&1 || fail "training failed: $(tail -5 "$W/ref.log")"
read -r first last < <(python3 - "$W/ref/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
loss = [r["loss"] for r in rows if r.get("kind") == "train" and "loss" in r]
print(loss[0], loss[-1])
PY
)
echo "loss at the first logged step $first, at the last $last; $(grep -o 'test accuracy [0-9.]*' "$W/ref.log")"
python3 -c "import sys; sys.exit(0 if $last < 0.8 * $first else 1)" || fail "the loss did not fall: $first -> $last"
FINAL=$(ls "$W/ref/checkpoints" | grep '^step-.*\.h5$' | sort | tail -1)

# Killed with SIGKILL mid-run, resumed: the same final weights, to the bit.
args "$W/train" "$W/cut"
"$BIN/strata-train" "${ARGS[@]}" >"$W/cut.log" 2>&1 &
JOB=$!
for _ in $(seq 1200); do
  s=$(grep -o 'step [0-9]*' "$W/cut/train.log" 2>/dev/null | tail -1 | cut -d' ' -f2 || true)
  if [ -n "$s" ] && [ "$s" -ge 90 ]; then break; fi
  kill -0 "$JOB" 2>/dev/null || fail "the run ended before step 90"
  sleep 0.02
done
kill -9 "$JOB"
wait "$JOB" 2>/dev/null || true
JOB=
[ ! -e "$W/cut/checkpoints/$FINAL" ] || fail "the kill came after the final checkpoint $FINAL"
at=$(grep -o 'step [0-9]*' "$W/cut/train.log" | tail -1)
args "$W/train" "$W/cut" checkpoint.resume=auto
"$BIN/strata-train" "${ARGS[@]}" >"$W/resume.log" 2>&1 || fail "the resumed run failed: $(tail -5 "$W/resume.log")"
from=$(grep -o 'resumed from [^ ]*' "$W/cut/train.log" | tail -1 | sed 's|.*/||')
[ -n "$from" ] || fail "the second run did not resume"
"$BIN/strata-inspect" "$W/cut/checkpoints/$FINAL" --same-as "$W/ref/checkpoints/$FINAL" >"$W/same.txt" 2>&1 ||
  fail "the resumed run's final state differs: $(cat "$W/same.txt")"
echo "SIGKILL at $at, resumed from $from: $FINAL bit-identical to the uninterrupted run's"

# The truncated JPEG in a shard: an error naming shard, sample and file ...
args "$W/train-bad" "$W/bad" trainer.epochs=1
if "$BIN/strata-train" "${ARGS[@]}" >"$W/bad.log" 2>&1; then fail "a run over a truncated JPEG succeeded"; fi
msg=$(grep -m1 "cannot be decoded" "$W/bad.log" || true)
[[ "$msg" == *"shard shard-"*" sample "*"(file bag/zz-cut.jpg)"* ]] || fail "the error does not name shard, sample and file: $(tail -3 "$W/bad.log")"
echo "error: ${msg#*loader: }"
# ... or, with data.skip_bad_images, a counted stand-in
args "$W/train-bad" "$W/skip" data.skip_bad_images=true
"$BIN/strata-train" "${ARGS[@]}" >"$W/skip.log" 2>&1 || fail "the run skipping bad images failed: $(tail -5 "$W/skip.log")"
bad=$(python3 - "$W/skip/metrics.jsonl" <<'PY'
import json, sys
print(int(sum(r.get("bad_images", 0) for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "data")))
PY
)
# once an epoch, unless it fell in the epoch's dropped remainder
[ "$bad" -ge 1 ] && [ "$bad" -le 4 ] || fail "metrics.jsonl counts $bad bad images over 4 epochs, not 1 to 4"
echo "data.skip_bad_images: $bad bad images counted in metrics.jsonl over 4 epochs"
echo "imagefolder_train: ok"
