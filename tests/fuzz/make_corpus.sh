#!/usr/bin/env bash
# Regenerates the committed seed corpus of the fuzz targets (tests/fuzz/corpus):
# the repo's configs, a tiny IDX dataset (plain and gzip) packed into a shard
# and its manifest, and S3 XML documents as RGW sends them.
#   usage: make_corpus.sh BIN_DIR
set -euo pipefail
BIN=$1
HERE=$(cd "$(dirname "$0")" && pwd)
C=$HERE/corpus
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp "$HERE"/../../configs/*.yaml "$C/config/"
python3 - "$W" <<'PY'
import struct, sys, gzip
w = sys.argv[1]
imgs = bytes((i * 37 + 11) % 256 for i in range(3 * 16))
open(f"{w}/images.idx", "wb").write(struct.pack(">BBBB", 0, 0, 8, 3) + struct.pack(">III", 3, 4, 4) + imgs)
open(f"{w}/labels.idx", "wb").write(struct.pack(">BBBB", 0, 0, 8, 1) + struct.pack(">I", 3) + bytes([1, 7, 3]))
open(f"{w}/floats.idx", "wb").write(struct.pack(">BBBB", 0, 0, 0x0D, 2) + struct.pack(">II", 2, 3) + struct.pack(">6f", *range(6)))
PY
cp "$W/images.idx" "$W/labels.idx" "$W/floats.idx" "$C/idx/"
gzip -9n -c "$W/images.idx" >"$C/idx/images.idx.gz"
"$BIN/strata-pack" idx --images "$W/images.idx" --labels "$W/labels.idx" --out "$W/ds" >/dev/null
cp "$W/ds/manifest.json" "$C/manifest/tiny.json"
# the same, encrypted (a fixed key of the corpus, no secret): the encryption fields
echo 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f >"$W/corpus.key"
"$BIN/strata-pack" idx --images "$W/images.idx" --labels "$W/labels.idx" --out "$W/enc" \
  --encrypt-key-file "$W/corpus.key" >/dev/null
cp "$W/enc/manifest.json" "$C/manifest/encrypted.json"
cp "$W"/ds/shard-*.h5 "$C/shard/"
cat >"$C/s3_xml/error.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>a&amp;b.h5</Key><RequestId>tx000001</RequestId></Error>
XML
cat >"$C/s3_xml/list.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>a</Name><Prefix>ds/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr&#x2F;XYExHnhbYLgveDs2J</NextContinuationToken><Contents><Key>ds/manifest.json</Key><LastModified>2026-12-01T10:00:00.000Z</LastModified><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>612</Size><StorageClass>STANDARD</StorageClass></Contents><Contents><Key>ds/shard-00000.h5</Key><ETag>&quot;a1&quot;</ETag><Size>2099264</Size></Contents></ListBucketResult>
XML
ls -l "$C"/*
