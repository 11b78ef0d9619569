#!/usr/bin/env bash
# A full disk is one clear error naming the cause, the path and the bytes, the
# process exits normally (no crash at exit), nothing partial is left that could
# pass for whole, and what was written before stays usable. Three places fill
# up: the run directory (a checkpoint save), the node-local shard cache, and
# strata-pack's output. Each is a small tmpfs, which needs root to mount.
#   usage: disk_full.sh BIN_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/figures_lib.sh"
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-disk-full.XXXXXX)
MOUNTS=()
cleanup() {
  for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT
small_disk() {  # small_disk DIR SIZE
  mkdir -p "$1"
  if ! mount -t tmpfs -o "size=$2" tmpfs "$1" 2>"$W/mount.err"; then
    echo "[  SKIPPED ] cannot mount a tmpfs to fill ($(cat "$W/mount.err")); needs root or CAP_SYS_ADMIN"
    exit 77
  fi
  MOUNTS+=("$1")
}
fail() { echo "FAIL: $*"; exit 1; }
expect_clean_exit() {  # expect_clean_exit RC LOG WHAT
  [ "$1" -eq 1 ] || { cat "$2"; fail "$3: exit status $1, expected 1 (an error, not a crash)"; }
  grep -q "no space left on device" "$2" || { cat "$2"; fail "$3: no 'no space left on device' in the error"; }
}

D=/usr/share/datasets/fashion-mnist
"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 2MiB >/dev/null 2>&1
ARGS=(--config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" data.test_url="file://$W/data"
      trainer.threads=2 trainer.max_steps=30 schedule.warmup_steps=5 logging.console=plain logging.every_steps=10)

# 1. The run directory fills at the second checkpoint (each is 2.9 MB).
small_disk "$W/run-disk" 4M
rc=0
"$BIN/strata-train" "${ARGS[@]}" checkpoint.every_steps=10 data.cache_dir="$W/cache" \
  --run-dir "$W/run-disk/run" >"$W/run.log" 2>&1 || rc=$?
expect_clean_exit $rc "$W/run.log" "checkpoint on a full disk"
grep -q "checkpoint '$W/run-disk/run/checkpoints/step-000000020.h5' not saved" "$W/run.log" ||
  fail "the error does not name the checkpoint: $(tail -1 "$W/run.log")"
grep -q "bytes are free" "$W/run.log" || fail "the error does not give the bytes"
grep -q "^error: .*no space left on device" "$W/run-disk/run/train.log" || fail "the error is not in train.log"
left=$(ls "$W/run-disk/run/checkpoints")
[ "$left" = "step-000000010.h5" ] || fail "checkpoints left: $left (expected the first one only, no temporary)"
"$BIN/strata-export" --checkpoint "$W/run-disk/run" --out "$W/exported.safetensors" >/dev/null 2>&1 ||
  fail "the checkpoint saved before the disk filled does not load"
echo "run directory full: $(grep -o 'no space left on device.*' "$W/run.log" | head -1)"
echo "  the previous checkpoint loads; nothing else in checkpoints/"
tally faults

# 2. The shard cache fills while staging (2 MiB shards, one at a time, into 5 MiB;
#    a persistent cache keeps what it staged, to be checked).
small_disk "$W/cache-disk" 5M
rc=0
"$BIN/strata-train" "${ARGS[@]}" data.cache_dir="$W/cache-disk/cache" data.staging_threads=1 data.cache_lifetime=persistent --run-dir "$W/run-cache" \
  >"$W/cache.log" 2>&1 || rc=$?
expect_clean_exit $rc "$W/cache.log" "staging into a full cache"
grep -q "$W/cache-disk/cache" "$W/cache.log" || fail "the error does not name the cache: $(tail -1 "$W/cache.log")"
grep -q "Input/output error" "$W/cache.log" && fail "the cause is reported as an I/O error"
# every shard left in the cache is whole: the same bytes as in the store
n=0
while IFS= read -r f; do
  cmp -s "$f" "$W/data/$(basename "$f")" || fail "partial shard in the cache: $f"
  n=$((n + 1))
done < <(find "$W/cache-disk/cache" -type f -name 'shard-*.h5')
echo "cache full: $(grep -o 'no space left on device.*' "$W/cache.log" | head -1)"
echo "  $n whole shard(s) in the cache, no partial one"
tally faults

# 3. strata-pack's output fills at the second shard: no manifest, so the
#    dataset cannot be read as if it were whole.
small_disk "$W/pack-disk" 3M
rc=0
"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/pack-disk/data" --shard-size 2MiB >"$W/pack.log" 2>&1 || rc=$?
expect_clean_exit $rc "$W/pack.log" "strata-pack on a full disk"
[ ! -e "$W/pack-disk/data/manifest.json" ] || fail "strata-pack wrote a manifest for a dataset it could not finish"
ls "$W/pack-disk/data" | grep -q '\.tmp\.' && fail "strata-pack left a temporary: $(ls "$W/pack-disk/data")"
echo "pack output full: $(grep -o 'no space left on device.*' "$W/pack.log" | head -1)"
tally faults
figure faults "full disks (run directory, shard cache, strata-pack output): a clear error, nothing partial"
echo "PASS: ${TALLY[faults]} full disks, each a clear error, nothing partial left"
