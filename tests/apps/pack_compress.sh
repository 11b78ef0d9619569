#!/usr/bin/env bash
# strata-pack --compress: a codec it does not know is an error (exit 2) naming
# the flag and the accepted values; zstd and lz4 store every shard object as
# one frame that the manifest names (object_compression, plain_bytes) and that
# Debian's zstd decodes to a shard strata-inspect verifies against the manifest
# (plain_bytes, plain_checksum); strata-inspect names a
# compressed object for what it is; --compress with --deflate is refused.
#   usage: pack_compress.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
W=$(mktemp -d /tmp/strata-cli-pack-compress.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for i in $(seq 2000); do echo "in the beginning $i was the word and the word was with $((i % 7))"; done >"$W/text.txt"

set +e
"$BIN/strata-pack" --compress bogus --out "$W/bogus" tokens --text "$W/text.txt" >"$W/bogus.out" 2>&1
rc=$?
set -e
[ $rc = 2 ] || fail "--compress bogus exited with $rc, expected 2: $(cat "$W/bogus.out")"
grep -q -- "--compress 'bogus': expected one of none, zstd, lz4" "$W/bogus.out" ||
  fail "--compress bogus did not name the flag and the codecs: $(cat "$W/bogus.out")"
[ ! -e "$W/bogus" ] || fail "--compress bogus wrote $W/bogus"

set +e
"$BIN/strata-pack" --compress zstd --deflate 3 --out "$W/both" tokens --text "$W/text.txt" >"$W/both.out" 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q -- "drop --deflate" "$W/both.out" || fail "--compress with --deflate: rc $rc, $(cat "$W/both.out")"

for codec in none zstd lz4; do
  "$BIN/strata-pack" --compress $codec --shard-size 40KB --quiet --out "$W/$codec" tokens --text "$W/text.txt" \
    --val-fraction 0 >/dev/null
done
python3 - "$W" <<'PY' || fail "the manifests are wrong"
import json, os, sys
w = sys.argv[1]
none = json.load(open(f"{w}/none/train/manifest.json"))
assert "object_compression" not in none and "plain_bytes" not in none["shards"][0], none
assert none["format_version"] == 1, none
for codec in ("zstd", "lz4"):
    m = json.load(open(f"{w}/{codec}/train/manifest.json"))
    assert m["object_compression"] == codec and m["compression"] == "none", m
    # version 2: a build older than compression refuses it by its version
    assert m["format_version"] == 2, m
    assert len(m["shards"]) == len(none["shards"]) > 1
    for s, n in zip(m["shards"], none["shards"]):
        assert s["plain_bytes"] == n["bytes"], (s, n)
        assert s["bytes"] == os.path.getsize(f"{w}/{codec}/train/{s['name']}") < s["plain_bytes"] // 2, s
print("zstd and lz4 manifests: every shard's plain_bytes is the uncompressed pack's, its object under half")
PY

OBJ=$W/zstd/train/shard-00000.h5
set +e
"$BIN/strata-inspect" "$OBJ" >"$W/inspect.out" 2>&1
rc=$?
set -e
[ $rc = 1 ] && grep -q "a zstd-compressed shard object" "$W/inspect.out" ||
  fail "strata-inspect on a zstd object: rc $rc, $(cat "$W/inspect.out")"
# Decoded beside its manifest, the shard verifies against plain_bytes and plain_checksum.
mkdir "$W/decoded"
cp "$W/zstd/train/manifest.json" "$W/decoded/"
zstd -q -d "$OBJ" -o "$W/decoded/shard-00000.h5"
"$BIN/strata-inspect" "$W/decoded/shard-00000.h5" >"$W/plain.txt" ||
  fail "strata-inspect on the decoded object: $(cat "$W/plain.txt")"
grep -q "verified: yes" "$W/plain.txt" || fail "the decoded shard is not verified: $(cat "$W/plain.txt")"
echo "pack_compress: ok"
