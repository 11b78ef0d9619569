#!/usr/bin/env bash
# strata-inspect on a shard and a checkpoint, its text and --json checked
# against h5py's reading of the same files and the manifest: a shard's
# datasets, sample count and checksum, verified against manifest.json, a
# damaged copy refused; a checkpoint's tensors, counters, loader position and
# config. Errors name the file.
#   usage: inspect.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-cli-inspect.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
D=/usr/share/datasets/fashion-mnist
"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 2MiB --quiet >/dev/null
SHARD=$W/data/shard-00001.h5

# 1. A shard, as text and as JSON, against h5py and the manifest.
"$BIN/strata-inspect" "$SHARD" >"$W/shard.txt" || fail "inspect of a shard exited with $?: $(cat "$W/shard.txt")"
"$BIN/strata-inspect" --json "$SHARD" >"$W/shard.json"
python3 - "$SHARD" "$W/data/manifest.json" "$W/shard.txt" "$W/shard.json" <<'PY' || fail "the shard report is wrong"
import h5py, json, os, sys
shard, manifest, text, report = sys.argv[1], json.load(open(sys.argv[2])), open(sys.argv[3]).read(), json.load(open(sys.argv[4]))
entry = next(s for s in manifest["shards"] if s["name"] == os.path.basename(shard))
with h5py.File(shard) as f:
    want = {n: list(f[n].shape) for n in f.keys()}
    dtypes = {n: f[n].dtype.str for n in f.keys()}
    samples = int(f.attrs["samples"])
got = {d["name"]: d["shape"] for d in report["datasets"]}
assert got == want, f"datasets {got}, h5py says {want}"
assert {d["name"]: d["dtype"] for d in report["datasets"]} == {"image": "u8", "label": "i64"}, (report["datasets"], dtypes)
assert report["samples"] == samples == entry["samples"], (report["samples"], samples, entry)
assert report["checksum"] == entry["checksum"] and report["bytes"] == entry["bytes"] == os.path.getsize(shard)
assert report["verified"] is True and report["mismatches"] == []
for line in (f"samples: {samples}", f"checksum: {entry['checksum']}", "verified: yes",
             f"image                    u8   [{samples}, 28, 28]", f"label                    i64  [{samples}]"):
    assert line in text, f"'{line}' not in the text report:\n{text}"
print(f"shard: {samples} samples, image {want['image']} u8, label {want['label']} i64, {entry['checksum']} verified")
PY

# 2. A copy with one byte of its images changed: the checksum no longer verifies (exit 1).
mkdir "$W/bad" && cp "$W/data/manifest.json" "$SHARD" "$W/bad/"
python3 - "$W/bad/shard-00001.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1]) as f:
    at = f["image"].id.get_offset() + 1000
with open(sys.argv[1], "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0xFF]))
PY
rc=0
"$BIN/strata-inspect" "$W/bad/shard-00001.h5" >"$W/bad.txt" || rc=$?
[ $rc -eq 1 ] || fail "a damaged shard exited with $rc"
grep -q "^verified: NO: checksum xxh3:[0-9a-f]*, the manifest says xxh3:" "$W/bad.txt" ||
  fail "the damaged shard is not reported: $(cat "$W/bad.txt")"
echo "damaged copy: $(grep verified "$W/bad.txt")"
# ... and one without a manifest beside it is read, not verified.
mkdir "$W/lone" && cp "$SHARD" "$W/lone/"
"$BIN/strata-inspect" "$W/lone/shard-00001.h5" >"$W/lone.txt" || fail "a shard without a manifest exited with $?"
grep -q "manifest: none beside the shard; the checksum is not verified" "$W/lone.txt" || fail "$(cat "$W/lone.txt")"

# 3. A checkpoint of a short run, against h5py.
"$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" \
  data.test_url= data.cache_dir="$W/cache" data.batch_size=100 trainer.threads=1 trainer.max_steps=7 \
  schedule.warmup_steps=2 checkpoint.every_steps=7 logging.console=off --run-dir "$W/run" >"$W/train.log" 2>&1 ||
  fail "the training run failed: $(tail -3 "$W/train.log")"
CK=$(ls "$W"/run/checkpoints/step-*.h5 | tail -1)
"$BIN/strata-inspect" "$CK" >"$W/ck.txt" || fail "inspect of a checkpoint exited with $?"
"$BIN/strata-inspect" --json "$CK" >"$W/ck.json"
python3 - "$CK" "$W/ck.txt" "$W/ck.json" <<'PY' || fail "the checkpoint report is wrong"
import h5py, json, sys
path, text, report = sys.argv[1], open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
with h5py.File(path) as f:
    for group in ("model", "optimizer"):
        want = {n: list(f[group][n].shape) for n in f[group].keys()}
        got = {t["name"]: t["shape"] for t in report[group]}
        assert got == want, f"{group}: {got}, h5py says {want}"
        assert all(t["dtype"] == "f32" for t in report[group]), report[group]
        for n, shape in want.items():
            line = f"  {n:<40} f32  [{', '.join(map(str, shape))}]"
            assert line in text, f"'{line}' not in the text report"
    assert report["trainer"]["step"] == f["trainer/step"][()] == 7
    assert report["trainer"]["mid_epoch"] == 1
    assert report["loader"] == {k: int(f["loader"][k][()]) for k in f["loader"].keys()} and report["loader"]
    yaml_text = f["config/resolved_yaml"][()].decode()
    assert report["config"] == yaml_text and "hidden: [256, 128]" in yaml_text
    assert report["model_values"] == sum(f["model"][n].size for n in f["model"].keys())
for line in ("trainer:", "  step                         7", "loader position:", "config (resolved):",
             "  schedule:", "model tensors: 6 tensors"):
    assert line in text, f"'{line}' not in the text report:\n{text}"
print(f"checkpoint: {len(report['model'])} model and {len(report['optimizer'])} optimizer tensors as h5py reads them, "
      f"step {report['trainer']['step']}, loader {report['loader']}, the resolved config")
PY

# 4. --same-as: the same run again is identical to the bit; another learning rate differs, named.
again() {  # again RUN_DIR [OVERRIDES...]
  local dir=$1; shift
  "$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" \
    data.test_url= data.cache_dir="$W/cache" data.batch_size=100 trainer.threads=1 trainer.max_steps=7 \
    schedule.warmup_steps=2 checkpoint.every_steps=7 logging.console=off "$@" --run-dir "$dir" >"$W/train2.log" 2>&1 ||
    fail "the training run failed: $(tail -3 "$W/train2.log")"
  ls "$dir"/checkpoints/step-*.h5 | tail -1
}
CK2=$(again "$W/run2")
"$BIN/strata-inspect" "$CK" --same-as "$CK2" >"$W/same.txt" || fail "a repeated run differs: $(cat "$W/same.txt")"
grep -q "^identical: 24 tensors, " "$W/same.txt" || fail "$(cat "$W/same.txt")"
CK3=$(again "$W/run3" optimizer.lr=0.002)
rc=0
"$BIN/strata-inspect" "$CK" --same-as "$CK3" >"$W/differ.txt" || rc=$?
[ $rc -eq 1 ] && grep -q "^differ: model tensor .*: element [0-9]* is " "$W/differ.txt" ||
  fail "another learning rate: exit $rc, $(cat "$W/differ.txt")"
echo "same-as: $(cat "$W/same.txt"); another lr: $(cat "$W/differ.txt")"

# 5. Errors name the file.
echo "not hdf5" >"$W/text.h5"
for f in "$W/text.h5" "$W/missing.h5"; do
  rc=0
  "$BIN/strata-inspect" "$f" 2>"$W/err" >/dev/null || rc=$?
  [ $rc -eq 1 ] && grep -qF "$f" "$W/err" || fail "inspect of $f: exit $rc, $(cat "$W/err")"
  echo "error: $(cat "$W/err")"
done
echo "PASS: strata-inspect reports shards and checkpoints as h5py reads them; damage and bad files named"
