#!/usr/bin/env bash
# The main job: packs Debian's Fashion-MNIST (and, for a GPT config, the KJV
# corpus, scripts/corpus.sh) into HDF5 shards in a local
# object-store directory, then trains the CNN reading through the staging loader
# (shards staged into a node-local cache), prints the test accuracy and draws
# the run's PNG plots into its directory (scripts/strata-plot); the last line
# is "run directory: DIR".
#   STRATA_DEMO_CONFIG   config (default configs/fashion_mnist_cnn.yaml)
#   STRATA_DEMO_NP       ranks under mpirun (default 1)
#   extra arguments      passed to strata-train (e.g. trainer.epochs=2)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mkdir -p runs
echo "[demo] installing what is missing and building (log: runs/setup.log)"
scripts/setup.sh >runs/setup.log 2>&1 || { tail -40 runs/setup.log; echo "[demo] setup failed (runs/setup.log)"; exit 1; }
# What the demo needs beyond building and running strata: its datasets (Fashion-MNIST;
# the KJV corpus for a GPT config). Integrator: the demo's further packages go here.
DEMO_PACKAGES=(dataset-fashion-mnist bible-kjv python3-matplotlib)  # matplotlib: scripts/strata-plot
scripts/apt-install.sh demo "${DEMO_PACKAGES[@]}"

SRC=/usr/share/datasets/fashion-mnist
STORE=runs/data/fashion-mnist
for split in train t10k; do
  name=$([ "$split" = train ] && echo train || echo test)
  if [ ! -f "$STORE/$name/manifest.json" ]; then
    echo "[demo] packing Fashion-MNIST $name split into $STORE/$name"
    build/bin/strata-pack idx --images "$SRC/$split-images-idx3-ubyte.gz" --labels "$SRC/$split-labels-idx1-ubyte.gz" \
      --out "$STORE/$name" --shard-size 8MiB >/dev/null
  fi
done

CONFIG=${STRATA_DEMO_CONFIG:-configs/fashion_mnist_cnn.yaml}
if grep -qE '^\s*name:\s*gpt\b' "$CONFIG"; then
  # language models read the KJV byte-level token shards (docs/models.md, "Corpus")
  if [ ! -f runs/data/kjv-corpus/kjv/train/manifest.json ]; then
    echo "[demo] packing the KJV corpus into runs/data/kjv-corpus/kjv"
    scripts/corpus.sh runs/data/kjv-corpus >/dev/null
  fi
fi
NP=${STRATA_DEMO_NP:-1}
# the run directory: the one given (--run-dir DIR or --run-dir=DIR), else one named here
RUN_DIR= prev=
for a in "$@"; do
  case "$a" in --run-dir=*) RUN_DIR=${a#--run-dir=} ;; esac
  [ "$prev" = --run-dir ] && RUN_DIR=$a
  prev=$a
done
RUN_ARGS=()
if [ -z "$RUN_DIR" ]; then
  RUN_DIR=runs/$(basename "$CONFIG" .yaml)-$(date +%Y%m%d-%H%M%S)
  RUN_ARGS=(--run-dir "$RUN_DIR")
fi
rc=0
if [ "$NP" -gt 1 ]; then
  mpirun --oversubscribe --bind-to none -np "$NP" build/bin/strata-train --config "$CONFIG" "$@" "${RUN_ARGS[@]}" || rc=$?
else
  build/bin/strata-train --config "$CONFIG" "$@" "${RUN_ARGS[@]}" || rc=$?
fi
if [ -s "$RUN_DIR/metrics.jsonl" ]; then
  echo "[demo] plotting the run (scripts/strata-plot)"
  # Debian's python3, the one python3-matplotlib was installed for above; the
  # python3 first on PATH may be pyenv's, without matplotlib
  PLOT_PY=/usr/bin/python3
  [ -x "$PLOT_PY" ] || PLOT_PY=python3
  "$PLOT_PY" scripts/strata-plot "$RUN_DIR" || echo "[demo] no plots (see the message above)"
fi
echo "run directory: $RUN_DIR"
exit $rc
