#!/usr/bin/env bash
# Loading from the object store: strata's staging loader beside the loaders a
# PyTorch user would pick, on the test RGW behind strata-proxy --delay-ms, with
# the same simulated step per batch. One run writes
# build/bench-results/<date>/loaders_vs_peers.{md,json}, loaders_samples_per_s.png,
# loaders_bytes_per_epoch.png and raw/loaders/ (one JSON line per reader epoch),
# outside the tracked tree; the report to keep is copied into
# bench/results/loaders_vs_peers/ by hand (bench/README.md).
#   usage: bench/loaders_vs_peers.sh [--datasets "fmnist synth"] [--readers "strata boto3_objects ..."]
# Readers: strata (strata-bench loader --modes loader), boto3_objects (DataLoader,
# one GET per sample), webdataset_tars (tar shards over HTTP), mosaic_streaming
# (MDS shards, local cache), s3torch_map (s3torchconnector's S3MapDataset over the
# per-sample objects), litdata_stream (litdata.optimize chunks). Each runs EPOCHS
# epochs with the cache at 2x the data and at 50% of it where it has a cache.
# GETs and bytes per epoch are counted by strata-proxy (GET /.strata-proxy/stats).
# Knobs (environment):
#   STRATA_BIN (build/bin)  STRATA_BENCH_VENV (build/bench-loaders-venv; made here when missing)
#   DELAY_MS (50: strata-proxy delays both directions, so ~2x this per request round trip)
#   STEP_MS (5)  BATCH (64)  EPOCHS (3)  SHARD_MB (4: every sharded format)
#   OBJ_SAMPLES (1280: samples per epoch of the per-sample readers, a random subset)
#   OBJ_WRITE (12800: per-sample objects written, the first N samples; the subsets come from them)
#   OBJ_WORKERS (8: DataLoader workers of the per-sample readers)  SHARD_WORKERS (2: of the others)
#   SYNTH_SAMPLES (40000)  SYNTH_SIDE (64: synthetic images are SIDE x SIDE x 3 u8)
#   RGW_PORT (27680)  MON_PORT (26989)  RUN_TIMEOUT (1200 s per reader run)
#   STRATA_BENCH_OUT (build/bench-results/<date>: where the report and raw/loaders/ go)
set -euo pipefail
cd "$(dirname "$0")/.."
DATASETS="fmnist synth"
READERS="strata boto3_objects mosaic_streaming webdataset_tars litdata_stream s3torch_map"
while [ $# -gt 0 ]; do
  case $1 in
    --datasets) DATASETS=$2; shift 2 ;;
    --readers) READERS=$2; shift 2 ;;
    *) echo "loaders_vs_peers.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
BIN=${STRATA_BIN:-build/bin}
VENV=${STRATA_BENCH_VENV:-build/bench-loaders-venv}
DELAY_MS=${DELAY_MS:-50} STEP_MS=${STEP_MS:-5} BATCH=${BATCH:-64} EPOCHS=${EPOCHS:-3} SHARD_MB=${SHARD_MB:-4}
OBJ_SAMPLES=${OBJ_SAMPLES:-1280} OBJ_WRITE=${OBJ_WRITE:-12800} OBJ_WORKERS=${OBJ_WORKERS:-8} SHARD_WORKERS=${SHARD_WORKERS:-2}
SYNTH_SAMPLES=${SYNTH_SAMPLES:-40000} SYNTH_SIDE=${SYNTH_SIDE:-64} RUN_TIMEOUT=${RUN_TIMEOUT:-1200}
export RGW_PORT=${RGW_PORT:-27680} MON_PORT=${MON_PORT:-26989}
export CEPH_DIR=/tmp/strata-lvp-rgw-$RGW_PORT RGW_BUCKETS=lvp
# The OSD keeps objects in RAM: every format of every dataset, plus room.
SYNTH_BYTES=$((SYNTH_SAMPLES * (SYNTH_SIDE * SYNTH_SIDE * 3 + 1)))
export MEMSTORE_BYTES=${MEMSTORE_BYTES:-$((2 << 30))}
[[ " $DATASETS " == *" synth "* ]] && MEMSTORE_BYTES=$((MEMSTORE_BYTES + 5 * SYNTH_BYTES))
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}
RES=$OUT/raw/loaders
W=$(mktemp -d /tmp/strata-lvp.XXXXXX)
SYSPY="/usr/bin/python3 -s"  # Debian's python3-matplotlib for the report
log() { echo "[loaders_vs_peers] $(date -u +%H:%M:%S) $*" >&2; }
for b in strata-bench strata-pack strata-proxy; do
  [[ -x $BIN/$b ]] || { echo "loaders_vs_peers.sh: $BIN/$b is missing (build it first)" >&2; exit 1; }
done

PROXY_PID=
cleanup() {
  [[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
  scripts/rgw.sh down >/dev/null 2>&1 || true
  rm -rf "$W" /tmp/strata-lvp-cache
}
trap cleanup EXIT

scripts/apt-install.sh bench dataset-fashion-mnist python3-matplotlib curl \
  ceph-mon ceph-osd radosgw ceph-common uuid-runtime
PEERS="torch numpy boto3 webdataset mosaicml-streaming s3torchconnector litdata"
if ! "$VENV/bin/python" -c 'import torch, numpy, boto3, webdataset, streaming, s3torchconnector, litdata' 2>/dev/null; then
  log "making $VENV ($PEERS)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q torch --index-url https://download.pytorch.org/whl/cpu || true
  "$VENV/bin/pip" install -q $PEERS
fi
PY="$VENV/bin/python"
H="$PY bench/loaders/harness.py"
mkdir -p "$RES"
for ds in $DATASETS; do rm -f "$RES/$ds"-*; done  # other datasets' results stay: the report covers all

log "starting RGW on 127.0.0.1:$RGW_PORT (OSD memory $((MEMSTORE_BYTES >> 20)) MiB)"
scripts/rgw.sh up >"$W/rgw.env" 2>"$W/rgw.log" || { cat "$W/rgw.log" >&2; exit 1; }
# shellcheck disable=SC1091
source "$W/rgw.env"
RGW=$S3_ENDPOINT
"$BIN/strata-proxy" --listen 127.0.0.1:0 --target "127.0.0.1:$RGW_PORT" --delay-ms "$DELAY_MS" \
  --stats-file "$RES/proxy-totals.json" >"$W/proxy.port" 2>"$W/proxy.err" &
PROXY_PID=$!
for _ in $(seq 100); do grep -q '^listening on' "$W/proxy.port" && break; sleep 0.05; done
PROXY="http://127.0.0.1:$(awk '/^listening on/ {print $3}' "$W/proxy.port")"
[[ $PROXY != "http://127.0.0.1:" ]] || { echo "loaders_vs_peers.sh: strata-proxy did not start" >&2; exit 1; }

# --- the datasets as IDX files (strata-pack idx and the harness both read IDX) ---
FM=/usr/share/datasets/fashion-mnist
declare -A IMAGES=([fmnist]=$FM/train-images-idx3-ubyte.gz) LABELS=([fmnist]=$FM/train-labels-idx1-ubyte.gz)
if [[ " $DATASETS " == *" synth "* ]]; then
  log "generating the synthetic set: $SYNTH_SAMPLES images ${SYNTH_SIDE}x${SYNTH_SIDE}x3 ($((SYNTH_BYTES >> 20)) MiB)"
  $PY bench/loaders/synthetic.py --out "$W/synth" --samples "$SYNTH_SAMPLES" --side "$SYNTH_SIDE"
  IMAGES[synth]=$W/synth/images.idx LABELS[synth]=$W/synth/labels.idx
fi

# --- the machine's limits for loading, measured here ---
log "measuring loopback (RGW GET, no proxy) and the disk"
head -c $((256 << 20)) /dev/urandom >"$W/blob"
s3curl() { curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "${S3_ACCESS_KEY}:${S3_SECRET_KEY}" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"; }
s3curl -T "$W/blob" "$RGW/lvp/limits/blob" -o /dev/null
rm -f "$W/blob"
for _ in 1 2 3; do s3curl -o /dev/null -w '%{speed_download}\n' "$RGW/lvp/limits/blob"; done >"$RES/loopback.txt"
s3curl -X DELETE "$RGW/lvp/limits/blob" -o /dev/null

packed() {  # dataset -> "s3://lvp/<ds>/strata" packed by strata-pack (once)
  [[ -f $W/$1.packed ]] || "$BIN/strata-pack" idx --images "${IMAGES[$1]}" --labels "${LABELS[$1]}" \
    --out "s3://lvp/$1/strata" --shard-size "${SHARD_MB}MiB" --endpoint "$RGW" --quiet
  touch "$W/$1.packed"
}
du_bytes() { $H du --reader - --endpoint "$RGW" --bucket lvp --prefix "$1" | $PY -c 'import json,sys; print(json.load(sys.stdin)["bytes"])'; }
fmt_of() { case $1 in s3torch_map) echo boto3_objects ;; *) echo "$1" ;; esac; }

for ds in $DATASETS; do
  log "== $ds: writing every format into RGW =="
  packed "$ds"
  for r in $READERS; do
    f=$(fmt_of "$r")
    [[ $r == strata || -f $RES/$ds-$f.meta ]] && continue
    log "$ds: writing the $f format"
    $H write --reader "$f" --endpoint "$RGW" --bucket lvp --prefix "$ds/$f" --images "${IMAGES[$ds]}" \
      --labels "${LABELS[$ds]}" --shard-bytes $((SHARD_MB << 20)) --write-samples "$OBJ_WRITE" 2>"$W/write.err" | sed -n 's/^meta //p' \
      >"$RES/$ds-$f.meta" || { tail -20 "$W/write.err" >&2; rm -f "$RES/$ds-$f.meta"; }
    [[ -s $RES/$ds-$f.meta ]] || { log "$ds: $f could not be written (see $RES/$ds-$f.error)"; tail -20 "$W/write.err" >"$RES/$ds-$f.error"; rm -f "$RES/$ds-$f.meta"; }
  done
  if [[ " $READERS " == *" strata "* ]]; then
    log "$ds: disk and warm-cache read (strata-bench loader --warm, RGW direct)"
    "$BIN/strata-bench" loader --url "s3://lvp/$ds/strata" --endpoint "$RGW" --warm --epochs 2 --disk-mb 512 \
      --cache-dir /tmp/strata-lvp-cache >"$RES/$ds-warm.txt" 2>&1 || true
  fi

  for r in $READERS; do
    f=$(fmt_of "$r")
    prefix=$ds/$f
    [[ $r == strata ]] && prefix=$ds/strata
    [[ $r == strata || -s $RES/$ds-$f.meta ]] || continue
    stored=$(du_bytes "$prefix")
    caches="big half" workers=$SHARD_WORKERS max=0
    case $r in boto3_objects | s3torch_map) caches=none workers=$OBJ_WORKERS max=$OBJ_SAMPLES ;; esac
    for c in $caches; do
      case $c in big) cache=$((2 * stored)) ;; half) cache=$((stored / 2)) ;; none) cache=0 ;; esac
      log "$ds: $r, cache $c ($((cache >> 20)) MiB of $((stored >> 20)) MiB stored)"
      rm -rf /tmp/strata-lvp-cache
      out=$RES/$ds-$r-$c.jsonl
      if [[ $r == strata ]]; then
        # Look-ahead: an eighth of the cache, at most 32 MiB (the half cache must hold it and the pinned shards).
        la=$(((cache >> 20) / 8)); ((la > 32)) && la=32; ((la < SHARD_MB)) && la=$SHARD_MB
        timeout "$RUN_TIMEOUT" "$BIN/strata-bench" loader --url "s3://lvp/$ds/strata" --endpoint "$PROXY" \
          --modes loader --proxy-stats "$PROXY" --cache-mb $((cache >> 20)) --lookahead-mb "$la" \
          --batch "$BATCH" --step-ms "$STEP_MS" --epochs "$EPOCHS" --cache-dir /tmp/strata-lvp-cache \
          >"$W/run.out" 2>"$W/run.err" || true
        sed -n 's/^json //p' "$W/run.out" >"$out"
        cp "$W/run.out" "$RES/$ds-$r-$c.log"
      else
        timeout "$RUN_TIMEOUT" $H read --reader "$r" --endpoint "$PROXY" --proxy-stats "$PROXY" --bucket lvp \
          --prefix "$prefix" --batch "$BATCH" --step-ms "$STEP_MS" --epochs "$EPOCHS" --workers "$workers" \
          --cache-dir /tmp/strata-lvp-cache --cache-bytes "$cache" --max-samples "$max" \
          --meta "$(cat "$RES/$ds-$f.meta")" >"$W/run.out" 2>"$W/run.err" || true
        sed -n 's/^json //p' "$W/run.out" >"$out"
      fi
      echo "{\"stored_bytes\": $stored, \"cache\": \"$c\", \"cache_bytes\": $cache}" >"$RES/$ds-$r-$c.run"
      if [[ $(wc -l <"$out") -lt $EPOCHS ]]; then
        log "$ds: $r ($c) did not finish its epochs; its error is kept"
        tail -30 "$W/run.err" >"$RES/$ds-$r-$c.error"
      fi
      rm -rf /tmp/strata-lvp-cache
    done
  done
done

cat >"$RES/setup.json" <<JSON
{"delay_ms": $DELAY_MS, "step_ms": $STEP_MS, "batch": $BATCH, "epochs": $EPOCHS, "shard_mb": $SHARD_MB,
 "obj_samples": $OBJ_SAMPLES, "obj_write": $OBJ_WRITE, "obj_workers": $OBJ_WORKERS, "shard_workers": $SHARD_WORKERS,
 "synth_samples": $SYNTH_SAMPLES, "synth_side": $SYNTH_SIDE, "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "cpu": "$(lscpu | sed -n 's/^Model name: *//p' | head -1)", "cores": $(nproc),
 "memory_gib": $(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo),
 "load_average": "$(cut -d' ' -f1-3 /proc/loadavg)", "kernel": "$(uname -r)",
 "peers": $("$PY" -c 'import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in "torch boto3 webdataset mosaicml-streaming s3torchconnector litdata".split()}))')}
JSON
$SYSPY bench/loaders/report.py "$RES" "$OUT"
# the raw results travel compressed (raw/ itself is ignored: every GPU call carries the tracked tree)
tar -C "$OUT" -cJf "$OUT/raw-loaders.tar.xz" raw/loaders
log "wrote $OUT/loaders_vs_peers.md, raw-loaders.tar.xz"
