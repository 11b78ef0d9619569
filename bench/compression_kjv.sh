#!/usr/bin/env bash
# Compressed shards on the KJV corpus (strata-pack --compress): the corpus
# (scripts/corpus.sh's text) packed as byte-level token shards uncompressed, as
# zstd and as lz4 frames; `strata-bench codec` on its first shard file (decode
# GB/s on one core, deflate beside); then a short configs/gpt_tiny.yaml run on
# each (same seed, STEPS steps, the cache emptied first), reading bytes from the
# store and tokens/s from its summary.json. Raw output stays in $W; a short
# summary goes to bench/results/compression/kjv.md.
#   bench/compression_kjv.sh [BIN_DIR]   (default build/bin)
#   STEPS (default 150)  W (scratch, default /tmp/strata-bench-compression)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/bin}
STEPS=${STEPS:-150}
W=${W:-/tmp/strata-bench-compression}
RES=bench/results/compression
mkdir -p "$W" "$RES"
[ -f "$W/corpus/kjv.txt" ] || STRATA_PACK="$BIN/strata-pack" scripts/corpus.sh "$W/corpus" >/dev/null
for c in none zstd lz4; do
  rm -rf "${W:?}/$c"
  "$BIN/strata-pack" --compress $c --quiet --out "$W/$c" tokens --text "$W/corpus/kjv.txt" >"$W/pack-$c.log"
done
"$BIN/strata-bench" codec --input "$W/none/train/shard-00000.h5" --repeat 5 | tee "$W/codec.txt"
for c in none zstd lz4; do
  rm -rf "$W/cache" "$W/run-$c"
  "$BIN/strata-train" --config configs/gpt_tiny.yaml "data.train_url=file://$W/$c/train" data.test_url= \
    data.val_url= "data.cache_dir=$W/cache" "trainer.max_steps=$STEPS" trainer.eval_every_steps=0 \
    trainer.eval_every_epochs=0 checkpoint.every_steps=0 checkpoint.every_epochs=0 logging.console=off \
    logging.tensorboard=false trainer.threads=2 --run-dir "$W/run-$c" >"$W/train-$c.log" 2>&1 ||
    { cat "$W/train-$c.log" >&2; exit 1; }
done
python3 - "$W" "$STEPS" "$(cut -d' ' -f1 /proc/loadavg)" >"$RES/kjv.md" <<'PY'
import json, sys
w, steps, load = sys.argv[1], sys.argv[2], sys.argv[3]
print(f"# KJV corpus, uncompressed and compressed shards ({steps} gpt_tiny steps, load average {load} at the end)\n")
print("Command: `bench/compression_kjv.sh` (STEPS=%s). Codec rates: `strata-bench codec --input <the none pack's train/shard-00000.h5> --repeat 5`.\n" % steps)
print("| pack | shards | stored MB (train) | shard files MB | ratio | MB from the store (run) | items/s | data-wait fraction |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for c in ("none", "zstd", "lz4"):
    m = json.load(open(f"{w}/{c}/train/manifest.json"))
    stored = sum(s["bytes"] for s in m["shards"])
    plain = sum(s.get("plain_bytes", s["bytes"]) for s in m["shards"])
    s = json.load(open(f"{w}/run-{c}/summary.json"))
    print(f"| {c} | {len(m['shards'])} | {stored/1e6:.2f} | {plain/1e6:.2f} | {plain/stored:.2f} | "
          f"{s['remote_bytes']/1e6:.2f} | {s['items_per_second']:.0f} {s['item_unit']}s/s | {s['data_wait_fraction']:.4f} |")
print("\nDecode rates (one core, median of 5; GB/s of shard bytes out):\n\n```")
print(open(f"{w}/codec.txt").read().rstrip())
print("```")
PY
cat "$RES/kjv.md"
