#!/usr/bin/env bash
# The natural-language corpus for byte-level language modelling: the King James
# Bible from Debian's bible-kjv-text (text public domain; see docs/models.md,
# "Corpus"). The package stores the text compressed for its `bible` reader, so
# this script prints every verse with it (Genesis 1:1 to Revelation 22:21, one
# verse per line, the "Ge1:1 " references removed), checks the result, and packs
# it with `strata-pack tokens` into byte-level token shards.
#   scripts/corpus.sh [OUT_DIR]   (default build/corpus)
# writes OUT_DIR/kjv.txt and the token datasets OUT_DIR/kjv/train, OUT_DIR/kjv/val.
#   STRATA_PACK      the strata-pack binary (default build/bin/strata-pack)
#   STRATA_SKIP_APT=1  do not install bible-kjv (it must then be installed)
#   VAL_FRACTION     the validation split (default 0.01: the end of Revelation)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build/corpus}
PACK=${STRATA_PACK:-build/bin/strata-pack}
VERSES=31102  # verses in the KJV (Protestant canon, 66 books)

if ! command -v bible >/dev/null || [ ! -f /usr/lib/bible.data ]; then
  [ "${STRATA_SKIP_APT:-0}" = 1 ] && { echo "[corpus] bible-kjv is not installed" >&2; exit 1; }
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends bible-kjv >/dev/null
fi
[ -x "$PACK" ] || { echo "[corpus] $PACK not found (build strata-pack or set STRATA_PACK)" >&2; exit 1; }

mkdir -p "$OUT"
# -f turns pretty-printing off: one "Book<chapter>:<verse> text" line per verse.
bible -f 'Gen1:1-Rev22:21' </dev/null | sed -E 's/^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ //' >"$OUT/kjv.txt.tmp"
lines=$(wc -l <"$OUT/kjv.txt.tmp")
bytes=$(wc -c <"$OUT/kjv.txt.tmp")
if [ "$lines" != "$VERSES" ] || [ "$bytes" -lt 4000000 ]; then
  echo "[corpus] expected $VERSES verses and at least 4 MB, got $lines lines and $bytes bytes" >&2
  exit 1
fi
if LC_ALL=C grep -qE '^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ ' "$OUT/kjv.txt.tmp"; then
  echo "[corpus] a verse reference was left in the text" >&2
  exit 1
fi
mv "$OUT/kjv.txt.tmp" "$OUT/kjv.txt"
rm -rf "$OUT/kjv"
"$PACK" tokens --text "$OUT/kjv.txt" --out "$OUT/kjv" --val-fraction "${VAL_FRACTION:-0.01}" \
  --shard-size 1MiB --quiet  # 8 train shards: ranks and the staging cache get whole shards
echo "[corpus] $OUT/kjv.txt: $lines verses, $bytes bytes; token shards in $OUT/kjv/{train,val}"
