#!/usr/bin/env bash
# Bad configs through strata-train, as a user makes them: each must give exit
# status 1, exactly one error line, naming the config key (or file) at fault,
# and leave no run directory behind. One row per mistake; the count is printed.
#   usage: bad_config.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-bad-config.XXXXXX)
trap 'rm -rf "$W"' EXIT
source "$(dirname "$0")/job_lib.sh"
pack_data
BASE=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" data.test_url="file://$W/data"
      data.cache_dir="$W/cache" trainer.epochs=1 trainer.threads=1 schedule.warmup_steps=20)

checked=0
expect_refused() {  # expect_refused WHAT_THE_ERROR_MUST_NAME ARG...
  local want=$1 rc=0 errors
  shift
  "$BIN/strata-train" "$@" --run-dir "$W/run" >"$W/out" 2>&1 || rc=$?
  [ $rc -eq 1 ] || fail "[$*] exit status $rc, not 1: $(head -3 "$W/out")"
  errors=$(grep -c 'error' "$W/out" || true)
  [ "$errors" -eq 1 ] || fail "[$*] $errors error lines, not one: $(cat "$W/out")"
  grep -qF -- "$want" "$W/out" || fail "[$*] the error does not name '$want': $(cat "$W/out")"
  [ ! -e "$W/run" ] || fail "[$*] a run directory was created"
  checked=$((checked + 1))
}

# override -> what the one error line must name
while IFS='|' read -r kv want; do
  [ -n "$kv" ] || continue
  expect_refused "$want" "${BASE[@]}" "$kv"
done <<'TABLE'
optimizer.lrr=0.1|did you mean 'optimizer.lr'
optimizer.lr=abc|optimizer.lr
optimizer.lr=-1|optimizer.lr
optimizer.name=adamx|optimizer.name
data.batch_size=0|data.batch_size
model.hidden=[256,abc]|model.hidden[1]
model.name=nosuch|model.name
data.train_url=ftp://host/data|ftp
data.train_url=file:///nonexistent/data|data.train_url
data.test_url=file:///nonexistent/data|data.test_url
data.cache_bytes=12XB|data.cache_bytes
data.normalize_mean=[0.1,0.2]|data.normalize_std
trainer.epochs=0|trainer.epochs
trainer.accumulate=0|trainer.accumulate
precision.dtype=fp8|precision.dtype
schedule.name=cosinus|schedule.name
schedule.warmup_steps=100000|schedule.warmup_steps
checkpoint.keep_last=-1|checkpoint.keep_last
checkpoint.resume=/nonexistent/step-1.h5|/nonexistent/step-1.h5
early_stopping.monitor=val_nosuch|early_stopping.monitor
early_stopping.mode=middle|early_stopping.mode
logging.every_steps=-3|logging.every_steps
seed=abc|seed
TABLE

# whole files
printf 'model:\n  name: mlp\n   hidden: [1]\n' >"$W/indent.yaml"
expect_refused "indent.yaml" --config "$W/indent.yaml"
printf -- '- model\n- data\n' >"$W/list.yaml"
expect_refused "list.yaml" --config "$W/list.yaml"
printf 'optimizer:\n  lr: 0.1\n  lr: 0.2\n' >"$W/twice.yaml"
expect_refused "optimizer.lr" --config "$W/twice.yaml"
expect_refused "$W/missing.yaml" --config "$W/missing.yaml"
expect_refused "$W" --config "$W"

echo "bad_config: $checked bad configs refused with one error naming the key or file, no run directory"
figure bad_inputs "malformed configs and overrides refused before the run directory exists" "$checked"
