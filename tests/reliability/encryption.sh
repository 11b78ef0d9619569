#!/usr/bin/env bash
# Encryption at rest against the test RGW. Fashion-MNIST's test split is packed
# twice, plain and encrypted (--encrypt-key-file); no stored object of the
# encrypted pack may hold a 64-byte run of the first image (which the plain
# pack's first shard must hold, so that the check can fail), the HDF5
# signature or the key. Twenty steps trained from each pack must end in
# byte-identical model and optimizer tensors. A wrong key, no key and a key
# pasted into the config are each refused with their message, and the key is in
# no file of the run directory and in no output (nor, under strace, in any byte
# strata-train writes).
#   usage: encryption.sh BIN_DIR SOURCE_DIR   (ctest fixture rgw: STRATA_TEST_S3_*)
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-encryption.XXXXXX)
trap 'rm -rf "$W"' EXIT
source "$(dirname "$0")/job_lib.sh"
: "${STRATA_TEST_S3_ENDPOINT:?run through ctest (fixture rgw)}"
export AWS_ACCESS_KEY_ID=$STRATA_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$STRATA_TEST_S3_SECRET_KEY
export AWS_ENDPOINT_URL=$STRATA_TEST_S3_ENDPOINT AWS_REGION=us-east-1
unset STRATA_DATA_KEY STRATA_DATA_KEY_FILE
bucket=encryption-$$
s3() { curl -sS -f --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"; }
s3 -X PUT "$AWS_ENDPOINT_URL/$bucket" >/dev/null || fail "cannot create bucket $bucket"

KEY_HEX=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
OTHER_HEX=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$KEY_HEX" >"$W/data.key"
chmod 600 "$W/data.key"

pack() {  # pack PREFIX LOG [options]
  local prefix=$1 log=$2
  shift 2
  "$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
    --out "s3://$bucket/$prefix" --shard-size 2MiB "$@" >"$W/$log" 2>&1 || fail "strata-pack $prefix failed: $(tail -3 "$W/$log")"
}
pack plain pack-plain.log
pack enc pack-enc.log --encrypt-key-file "$W/data.key"
KEY_ID=$(grep -o 'key id sha256:[0-9a-f]*' "$W/pack-enc.log" | head -1 | cut -d' ' -f3)
[ -n "$KEY_ID" ] || fail "strata-pack did not log the key id: $(cat "$W/pack-enc.log")"
echo "packed plain and encrypted (key id $KEY_ID)"

# every stored object of both packs, fetched as the store holds it
for prefix in plain enc; do
  mkdir -p "$W/store/$prefix"
  keys=$(s3 "$AWS_ENDPOINT_URL/$bucket?list-type=2&prefix=$prefix%2F" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g')
  [ -n "$keys" ] || fail "no objects under $prefix/"
  for k in $keys; do s3 -o "$W/store/$k" "$AWS_ENDPOINT_URL/$bucket/$k"; done
done
python3 - "$W/store" "$D/t10k-images-idx3-ubyte.gz" "$KEY_HEX" "$KEY_ID" <<'PY' || fail "the store holds plaintext or the key"
import gzip, json, os, sys
store, images, key_hex, key_id = sys.argv[1:]
pix = gzip.open(images).read()[16:16 + 784]
run = pix[28 * 10:28 * 10 + 64]  # rows 10..12 of the first image
assert len(set(run)) > 8, "the known run is not distinctive"
key_raw = bytes.fromhex(key_hex)
def objects(prefix):
    d = os.path.join(store, prefix)
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))}
plain, enc = objects("plain"), objects("enc")
assert run in plain["shard-00000.h5"], "the plain pack's first shard lacks the known run: the check below proves nothing"
assert set(plain) == set(enc), f"the packs hold different objects: {sorted(plain)} vs {sorted(enc)}"
shards = [n for n in enc if n != "manifest.json"]
for n in shards:
    b = enc[n]
    assert b[:8] == b"STRATAGC", f"{n} is not an encrypted object"
    assert run not in b, f"{n} holds plaintext"
    assert b"\x89HDF" not in b, f"{n} holds an HDF5 signature"
for n, b in enc.items():
    assert key_raw not in b and key_hex.encode() not in b, f"{n} holds the key"
m = json.loads(enc["manifest.json"])
assert m["encryption"]["key_id"] == key_id, m["encryption"]
assert all(s["bytes"] == s["plain_bytes"] + 40 for s in m["shards"])
print(f"store: {len(shards)} encrypted shards, none holds the known 64-byte run, an HDF5 signature or the key "
      f"(the plain pack's first shard holds the run)")
PY

train() {  # train NAME PREFIX [overrides...]: a run in $W/NAME from s3://$bucket/PREFIX
  local name=$1 prefix=$2
  shift 2
  "$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="s3://$bucket/$prefix" \
    data.test_url="s3://$bucket/$prefix" data.cache_dir="$W/cache-$name" trainer.max_steps=20 trainer.threads=1 \
    schedule.warmup_steps=5 checkpoint.every_steps=10 logging.every_steps=5 logging.console=plain "$@" \
    --run-dir "$W/$name" >"$W/$name.log" 2>&1
}
train plain plain || fail "training from the plain pack failed: $(tail -3 "$W/plain.log")"
# under strace (when installed): every byte written to a socket, a file or the terminal is captured, in hex
traced=()
# (LeakSanitizer cannot run under ptrace: the sanitizer build's leak check is off there)
command -v strace >/dev/null && traced=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  strace -f -qq -xx -s 1048576 -e trace=write,writev,pwrite64,send,sendto,sendmsg -o "$W/enc.trace")
"${traced[@]}" env BIN="$BIN" bash -c "$(declare -f train); W='$W' SRC='$SRC' bucket='$bucket' train enc enc data.encryption_key_file='$W/data.key'" ||
  fail "training from the encrypted pack failed: $(tail -3 "$W/enc.log")"
a=$(ls "$W/plain/checkpoints"/step-*.h5 | sort | tail -1)
b=$(ls "$W/enc/checkpoints"/step-*.h5 | sort | tail -1)
[ "$(basename "$a")" = "$(basename "$b")" ] || fail "the runs ended at different steps: $a, $b"
"$BIN/strata-inspect" "$a" --same-as "$b" >"$W/same.txt" || fail "encrypted and plain runs differ: $(cat "$W/same.txt")"
echo "$(basename "$b") from the encrypted pack: $(cat "$W/same.txt")"

# the key in no file of the run directory and in no output
python3 - "$W/enc" "$KEY_HEX" "$W/enc.log" "$W/pack-enc.log" <<'PY' || fail "the key was written"
import os, sys
run, key_hex, *logs = sys.argv[1:]
forms = [bytes.fromhex(key_hex), key_hex.encode(), key_hex[:16].encode()]
files = [os.path.join(d, f) for d, _, fs in os.walk(run) for f in fs] + logs
for p in files:
    b = open(p, "rb").read()
    assert not any(k in b for k in forms), f"{p} holds the key"
print(f"run directory and logs: {len(files)} files, no key")
PY
grep -qF "encryption_key_file: $W/data.key" "$W/enc/resolved.yaml" || fail "resolved.yaml does not name the key file"
if [ -f "$W/enc.trace" ]; then
  python3 - "$W/enc.trace" "$KEY_HEX" "$AWS_ACCESS_KEY_ID" "$D/t10k-images-idx3-ubyte.gz" <<'PY' || fail "the key is in strata-train's writes"
import gzip, re, sys
trace, key_hex, access, images = sys.argv[1:]
raw = re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), open(trace, "rb").read())
assert f"Credential={access}/".encode() in raw, "the capture holds no signed request: strace saw no socket traffic"
run = gzip.open(images).read()[16 + 280:16 + 344]
assert run in raw, "the capture lacks the decrypted shards written to the cache: strace saw no file writes"
for form in (bytes.fromhex(key_hex), key_hex.encode(), key_hex.upper().encode()):
    assert form not in raw, "the key is in a write"
print(f"strata-train under strace: {raw.count(b'write') + raw.count(b'send')} writes and sends (signed requests, "
      f"decrypted shards written to the cache), no key")
PY
else
  echo "strace is not installed: the writes of strata-train were not captured"
fi

# refusals: a wrong key (from STRATA_DATA_KEY), no key, a key pasted into the config
rc=0
STRATA_DATA_KEY=$OTHER_HEX train wrong enc || rc=$?
[ $rc -eq 1 ] || fail "a wrong key: exit status $rc, expected 1: $(tail -2 "$W/wrong.log")"
grep -q "was encrypted with key id $KEY_ID, the key given (environment variable STRATA_DATA_KEY) has id sha256:" \
  "$W/wrong.log" || fail "a wrong key is not said as such: $(tail -2 "$W/wrong.log")"
! grep -qF "${OTHER_HEX:0:16}" "$W/wrong.log" || fail "the wrong key is printed"
[ -z "$(find "$W/cache-wrong" -path '*/shards/*' -type f 2>/dev/null)" ] || fail "a wrong key staged shards"
echo "wrong key refused: $(grep -o 'error: .*' "$W/wrong.log" | head -1 | cut -c1-220)"
tally bad_inputs
rc=0
train nokey enc || rc=$?
[ $rc -eq 1 ] && grep -q "is encrypted (key id $KEY_ID): give its key" "$W/nokey.log" ||
  fail "no key: status $rc, $(tail -2 "$W/nokey.log")"
tally bad_inputs
rc=0
train inline enc data.encryption_key_file="$KEY_HEX" || rc=$?
[ $rc -ne 0 ] && grep -q "'data.encryption_key_file' holds what looks like a key itself" "$W/inline.log" ||
  fail "a key in the config: status $rc, $(tail -2 "$W/inline.log")"
! grep -qF "${KEY_HEX:0:16}" "$W/inline.log" || fail "the key pasted into the config is printed"
[ ! -e "$W/inline" ] || fail "a config holding a key made a run directory"
tally bad_inputs
echo "no key and a key in the config refused, the key not printed"
figure bad_inputs "an encrypted dataset read with a wrong key, without a key, and a key pasted into the config"
echo "encryption: ok"
