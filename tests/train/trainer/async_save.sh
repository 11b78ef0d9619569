#!/usr/bin/env bash
# checkpoint.async: a save blocks the step loop only while the state is copied;
# the file is written in the background. Two runs of the Fashion-MNIST MLP with
# dropout (its generators are part of the saved state), 2 epochs, a checkpoint
# every 5 steps and at each epoch's end, all kept: one with synchronous saves,
# one with asynchronous ones. Every checkpoint of the second must hold what the
# first's of the same step holds, to the bit (strata-inspect --same-as); each
# save has its "checkpoint" row in metrics.jsonl (async 1 or 0); summary.json
# counts the saves and the seconds they blocked the loop.
#   usage: async_save.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-async-save.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
D=/usr/share/datasets/fashion-mnist
"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 2MiB --quiet >/dev/null
ARGS=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" data.test_url="file://$W/data"
      data.cache_dir="$W/cache" data.batch_size=100 trainer.epochs=2 trainer.threads=1 model.dropout=0.1
      schedule.warmup_steps=20 checkpoint.every_steps=5 checkpoint.every_epochs=1 checkpoint.keep_last=0
      logging.console=plain)
for mode in false true; do
  "$BIN/strata-train" "${ARGS[@]}" checkpoint.async=$mode --run-dir "$W/async-$mode" >"$W/$mode.log" 2>&1 ||
    fail "the run with checkpoint.async=$mode failed: $(tail -3 "$W/$mode.log")"
done
n=0
for a in "$W"/async-false/checkpoints/step-*.h5; do
  b=$W/async-true/checkpoints/$(basename "$a")
  [ -e "$b" ] || fail "the asynchronous run has no $(basename "$a")"
  "$BIN/strata-inspect" "$b" --same-as "$a" >"$W/same.txt" 2>&1 ||
    fail "$(basename "$a") differs between synchronous and asynchronous saves: $(cat "$W/same.txt")"
  n=$((n + 1))
done
[ "$(ls "$W"/async-true/checkpoints/step-*.h5 | wc -l)" -eq "$n" ] || fail "the runs saved different checkpoints"
[ "$n" -ge 40 ] || fail "only $n checkpoints compared"
python3 - "$W" "$n" <<'PY' || fail "metrics.jsonl or summary.json do not account for every save"
import json, sys
w, n = sys.argv[1], int(sys.argv[2])
for mode, flag in (("false", 0.0), ("true", 1.0)):
    rows = [json.loads(l) for l in open(f"{w}/async-{mode}/metrics.jsonl")]
    saves = [r for r in rows if r["kind"] == "checkpoint"]
    # an epoch's end on a multiple of every_steps saves its step twice, under one name
    assert len({r["step"] for r in saves}) == n and all(r["async"] == flag for r in saves), (mode, len(saves), n)
    s = json.load(open(f"{w}/async-{mode}/summary.json"))
    assert s["checkpoint_saves"] == len(saves), (mode, s["checkpoint_saves"], len(saves))
    blocked = sum(r["blocked_seconds"] for r in saves)
    assert abs(s["checkpoint_blocked_seconds"] - blocked) < 1e-6, (mode, s["checkpoint_blocked_seconds"], blocked)
    print(f"checkpoint.async={mode}: {len(saves)} saves blocked the loop {blocked:.3f} s in all")
PY
echo "PASS: $n checkpoints the same to the bit"
