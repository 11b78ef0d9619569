#!/usr/bin/env bash
# Uploads and downloads of a checkpoint-sized file: strata's uploader and
# downloader against `aws s3 cp` (Debian's awscli) and `rclone copyto`, each
# with its own default multipart settings, on a benchmark RGW reached directly
# and through strata-proxy --delay-ms (a store farther away). One run of
# `strata-bench upload` per endpoint; the report goes to
# $STRATA_BENCH_OUT/uploads_vs_peers.md.
#   SIZE (1G)  REPEAT (3)  DELAY_MS (10: ~2x this per request round trip)
#   RGW_PORT (27880)  MON_PORT (27189)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/bin:$PATH"  # Debian's aws, not a pyenv shim
# rclone refuses to start with AWS_CA_BUNDLE set ("LoadCustomCABundleError ...
# unsupported transport"), and the endpoints here are plain http.
unset AWS_CA_BUNDLE
SIZE=${SIZE:-1G} REPEAT=${REPEAT:-3} DELAY_MS=${DELAY_MS:-10}
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}
mkdir -p "$OUT"
BIN=${BIN:-build/bin}
scripts/apt-install.sh bench awscli rclone
export RGW_PORT=${RGW_PORT:-27880} MON_PORT=${MON_PORT:-27189}
export CEPH_DIR=/tmp/strata-uvp-rgw-$RGW_PORT
# Every upload overwrites one object: the gateway frees the old one's data at
# once, so that REPEAT x 3 tools x 2 endpoints of SIZE fit the OSD's RAM.
export RGW_EXTRA_CONF=$'rgw gc obj min wait = 0\nrgw gc processor period = 5'
export MEMSTORE_BYTES=${MEMSTORE_BYTES:-$((8 << 30))}
W=$(mktemp -d /tmp/strata-uvp.XXXXXX)
PROXY_PID=
cleanup() {
  [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
  scripts/rgw.sh down >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
scripts/rgw.sh up >"$W/rgw.env" 2>"$W/rgw.log" || { cat "$W/rgw.log" >&2; exit 1; }
source "$W/rgw.env"
"$BIN/strata-proxy" --listen 127.0.0.1:0 --target "127.0.0.1:$RGW_PORT" --delay-ms "$DELAY_MS" \
  >"$W/proxy.port" 2>"$W/proxy.err" &
PROXY_PID=$!
for _ in $(seq 100); do grep -q '^listening on' "$W/proxy.port" && break; sleep 0.05; done
PROXY="http://127.0.0.1:$(awk '/^listening on/ {print $3}' "$W/proxy.port")"

REPORT=$OUT/uploads_vs_peers.md
{
  echo "# Uploads and downloads of a $SIZE file: strata against aws s3 cp and rclone"
  echo
  echo "Run $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $(nproc) cores," \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(/usr/bin/aws --version 2>&1 | cut -d' ' -f1)," \
    "$(rclone version 2>/dev/null | head -1); RGW $(radosgw --version | awk '{print $3}') in RAM."
  for ep in "http://127.0.0.1:$RGW_PORT" "$PROXY"; do
    echo
    if [ "$ep" = "$PROXY" ]; then echo "## Through strata-proxy --delay-ms $DELAY_MS"; else echo "## Direct (loopback)"; fi
    echo
    echo '```'
    "$BIN/strata-bench" upload --endpoint "$ep" --size "$SIZE" --repeat "$REPEAT" --url "s3://uvp/run"
    echo '```'
  done
} | tee "$REPORT"
echo "report: $REPORT"
