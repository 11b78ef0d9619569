#!/usr/bin/env bash
# strata-train --dry-run: the config is checked (every key, the checks between
# keys that need no data) and printed resolved, and nothing is created: no run
# directory, no cache directory, no data read. A config the run would refuse
# is refused here, naming the key.
#   usage: dry_run.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-cli-dry-run.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
CFG=$SRC/configs/fashion_mnist_mlp.yaml
# the config's relative data.cache_dir (runs/cache) and the default run directory
# (runs/<name>-<time>) would both appear under the working directory
mkdir "$W/cwd"
cd "$W/cwd"

"$BIN/strata-train" --dry-run --config "$CFG" optimizer.lr=0.005 trainer.epochs=3 model.hidden=[64,32] \
  data.train_url=file:///nonexistent/train >"$W/out.yaml" 2>"$W/err" || fail "the dry run failed: $(cat "$W/err")"
# the printed YAML is a config strata reads back to itself, with the overrides in it
"$BIN/strata-train" --print-config --config "$W/out.yaml" >"$W/again.yaml" || fail "the printed config does not load"
cmp -s "$W/out.yaml" "$W/again.yaml" || fail "the printed config does not read back: $(diff "$W/out.yaml" "$W/again.yaml")"
for line in "  lr: 0.005  #" "  epochs: 3  #" "  hidden: [64, 32]  #" "  train_url: file:///nonexistent/train  #" \
            "  warmup_steps: 200  #" "early_stopping:" "checkpoint:"; do
  grep -qF -- "$line" "$W/out.yaml" || fail "'$line' is not in the printed config"
done
echo "resolved YAML: reads back to itself; optimizer.lr 0.005, trainer.epochs 3, model.hidden [64, 32], defaults filled in"
grep -q "no run directory was created" "$W/err" || fail "the dry run does not say what it did: $(cat "$W/err")"
[ -z "$(ls -A "$W/cwd")" ] || fail "the dry run created $(ls -A "$W/cwd")"
"$BIN/strata-train" --dry-run --config "$CFG" --run-dir "$W/run" >/dev/null 2>&1
[ ! -e "$W/run" ] || fail "the dry run created its --run-dir"
sed 's/^/  /' "$W/err"

# --print-config: the same checks, the YAML alone.
"$BIN/strata-train" --print-config --config "$CFG" optimizer.lr=0.005 trainer.epochs=3 model.hidden=[64,32] \
  data.train_url=file:///nonexistent/train >"$W/print.yaml" 2>"$W/print.err"
cmp -s "$W/out.yaml" "$W/print.yaml" || fail "--print-config and --dry-run print different configs"
[ ! -s "$W/print.err" ] || fail "--print-config wrote to stderr: $(cat "$W/print.err")"

# Refused without data, each naming the key, creating nothing.
refused() {  # refused KEY_IN_MESSAGE OVERRIDE...
  local says=$1 rc=0
  shift
  "$BIN/strata-train" --dry-run --config "$CFG" "$@" >"$W/out" 2>"$W/err" || rc=$?
  [ $rc -eq 1 ] || fail "$* : exit $rc, expected 1: $(cat "$W/err")"
  grep -qF "$says" "$W/err" || fail "$* : the error does not name $says: $(cat "$W/err")"
  [ ! -s "$W/out" ] || fail "$* : a config was printed for a refused run"
  [ -z "$(ls -A "$W/cwd")" ] || fail "$* : the refused dry run created $(ls -A "$W/cwd")"
  echo "refused ($*): $(grep -o 'error: .*' "$W/err" | cut -c1-150)"
}
refused schedule.warmup_steps trainer.max_steps=100                  # 200 warm-up steps of 100
refused schedule.total_steps schedule.total_steps=150                # the same, bounded by the schedule
refused early_stopping.monitor early_stopping.monitor=val_perplexity # not a classification metric
refused trainer.epochs trainer.epoch=3                               # unknown key: the nearest one named
refused data.normalize_std data.normalize_std=[0.3,0.3]              # lengths differ from normalize_mean
refused optimizer.decay_groups optimizer.name=sgd optimizer.decay_groups=true
refused model.name model.name=resnet9000
refused data.train_url data.train_url=
echo "PASS: --dry-run checks and prints the config, refuses bad ones by key, creates nothing"
