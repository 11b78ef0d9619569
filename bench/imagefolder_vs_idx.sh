#!/usr/bin/env bash
# The accuracy row of the JPEG/PNG path (issue #32): the same ResNet, epochs and
# seed trained on Fashion-MNIST twice, once from the IDX pack (28 x 28 u8 arrays,
# crop-with-padding and flips in the loader) and once from an ImageFolder of
# JPEG/PNG files written by scripts/make-imagefolder.py at SIZE x SIZE greyscale
# (larger than the model's 28 x 28, so that decoding, resizing and cropping all
# do work: random-resized-crop to 28 and flips for training, the whole image
# resized to 28 for evaluation). Prints both runs' test accuracy and the
# difference; the runs and the report go to build/bench-results/<date>/, outside
# the tracked tree.
#   usage: bench/imagefolder_vs_idx.sh
# Knobs (environment): STRATA_BIN (build/bin)  EPOCHS (3)  CHANNELS ([16,32,64])
#   SIZE (32: side of the written files)  CROP_SCALE ([0.85,1.0])  STRATA_BENCH_OUT
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STRATA_BIN:-build/bin}
EPOCHS=${EPOCHS:-3} CHANNELS=${CHANNELS:-[16,32,64]} SIZE=${SIZE:-32} CROP_SCALE=${CROP_SCALE:-[0.85,1.0]}
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}/imagefolder_vs_idx
log() { echo "[imagefolder_vs_idx] $(date -u +%H:%M:%S) $*" >&2; }
for b in strata-train strata-pack; do
  [[ -x $BIN/$b ]] || { echo "imagefolder_vs_idx.sh: $BIN/$b is missing (build it first)" >&2; exit 1; }
done
scripts/apt-install.sh bench dataset-fashion-mnist python3-numpy python3-pil
rm -rf "$OUT"
mkdir -p "$OUT"
SRC=/usr/share/datasets/fashion-mnist
for split in train test; do
  name=$split; [[ $split == test ]] && name=t10k
  "$BIN/strata-pack" idx --images "$SRC/$name-images-idx3-ubyte.gz" --labels "$SRC/$name-labels-idx1-ubyte.gz" \
    --out "$OUT/data/idx/$split" --quiet
done
log "writing Fashion-MNIST as ${SIZE}x${SIZE} greyscale JPEG/PNG files"
python3 scripts/make-imagefolder.py "$OUT/files" --size "$SIZE" >"$OUT/make-imagefolder.log"
for split in train test; do
  "$BIN/strata-pack" files --root "$OUT/files/$split" --out "$OUT/data/files/$split" --quiet
done
rm -rf "$OUT/files"

# The recipe of configs/resnet_fashion_mnist.yaml with narrower stages and fewer
# epochs (so that both runs fit in about half an hour of two cores); no checkpoints.
COMMON=(--config configs/resnet_fashion_mnist.yaml "model.channels=$CHANNELS" "trainer.epochs=$EPOCHS"
  checkpoint.every_epochs=0 checkpoint.keep_best=false "data.cache_dir=$OUT/cache")
log "training from the IDX pack"
"$BIN/strata-train" "${COMMON[@]}" --run-dir "$OUT/run-idx" \
  "data.train_url=file://$PWD/$OUT/data/idx/train" "data.test_url=file://$PWD/$OUT/data/idx/test" \
  >"$OUT/run-idx.log" 2>&1
log "training from the JPEG/PNG pack"
"$BIN/strata-train" "${COMMON[@]}" --run-dir "$OUT/run-files" \
  "data.train_url=file://$PWD/$OUT/data/files/train" "data.test_url=file://$PWD/$OUT/data/files/test" \
  data.image_size=28 data.image_channels=1 data.augment_crop_padding=0 "data.augment_crop_scale=$CROP_SCALE" \
  "data.augment_crop_ratio=[0.9,1.1111111]" data.eval_resize_ratio=1.0 >"$OUT/run-files.log" 2>&1

/usr/bin/python3 -s - "$OUT" "$EPOCHS" "$CHANNELS" "$SIZE" "$CROP_SCALE" <<'EOF' | tee "$OUT/report.md"
import json, subprocess, sys
out, epochs, channels, size, scale = sys.argv[1:]
rows = []
for run, what in (("run-idx", "IDX, 28 x 28 u8 (crop padding 1, flips)"),
                  ("run-files", f"JPEG/PNG {size} x {size} (random-resized-crop scale {scale} to 28, flips)")):
    s = json.load(open(f"{out}/{run}/summary.json"))
    rows.append((what, s["test_accuracy"], s["test_loss"], s["samples_per_second"], s["data_wait_fraction"]))
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print(f"# IDX against JPEG/PNG: the same ResNet {channels}, {epochs} epochs, seed 42")
print()
print(f"commit {commit}; bench/imagefolder_vs_idx.sh")
print()
print("| input path | test accuracy | test loss | samples/s | data-wait |")
print("|---|---|---|---|---|")
for what, acc, loss, sps, wait in rows:
    print(f"| {what} | {100 * acc:.2f}% | {loss:.4f} | {sps:.0f} | {100 * wait:.1f}% |")
print()
print(f"JPEG/PNG minus IDX: {100 * (rows[1][1] - rows[0][1]):+.2f} points")
EOF
