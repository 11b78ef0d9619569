#!/usr/bin/env bash
# Image decoding and augmentation on the CPU: strata's decode threads' work
# (strata-bench image_augment: TurboJPEG decode at a DCT scale + RandomResizedCrop
# + flip + normalise, through the loader's FieldTransform) against torchvision's
# DataLoader with Pillow and with Pillow-SIMD, and NVIDIA DALI's CPU pipeline,
# on the same ImageNet-sized JPEGs (bench/images/make_photo_jpegs.py: 500 x 375,
# quality 90, from scikit-image's sample photos), at 1 and 2 threads (workers),
# in one run on this machine. Rounds interleave the contestants (the order
# rotates each round) and the report gives each one's median. One run writes
# build/bench-results/<date>/images_vs_peers.{md,json} and raw/images/ (the
# json lines of every run), outside the tracked tree; the report to keep is
# copied into bench/results/images_vs_peers/ by hand (bench/README.md).
#   usage: bench/images_vs_peers.sh [--rounds 3] [--count 2000] [--threads "1 2"]
#                                   [--contestants "strata tv_pillow tv_simd dali dali_fused"]
#                                   [--no-loader]
# Then (unless --no-loader) strata's whole loader on the images: packed by
# strata-pack files, served by python3 -m http.server behind strata-proxy
# --delay-ms DELAY_MS, read by strata-bench loader --image-size 224 (decode +
# crop + flip + normalise in its decode threads) with 1 and 2 decode threads,
# 2 epochs (cold cache, then warm), batches of 64 and a STEP_MS step each.
# Knobs (environment):
#   STRATA_BIN (build/bin)  STRATA_BENCH_OUT (build/bench-results/<UTC date>)
#   STRATA_BENCH_VENV       torch + torchvision + Pillow (default build/bench-torch-venv;
#                           made or completed here: the CPU wheel index, else PyPI)
#   STRATA_BENCH_SIMD_VENV  Pillow-SIMD (default build/bench-pillow-simd-venv; made
#                           here: built from source with CC="cc -mavx2" against Debian's
#                           libjpeg62-turbo; torch and torchvision come from
#                           STRATA_BENCH_VENV through a .pth file, after Pillow-SIMD)
#   STRATA_BENCH_DALI_VENV  nvidia-dali-cuda130 (default build/bench-dali-venv; made here)
#   DELAY_MS (50: ~100 ms per request round trip)  STEP_MS (5)  SHARD_MB (4)
#   IMAGES_DIR              where the JPEGs go (default /tmp/strata-ivp-images; kept, and
#                           reused when it holds --count files)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=3 COUNT=2000 THREADS="1 2" CONTESTANTS="strata tv_pillow tv_simd dali dali_fused" LOADER=1
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --contestants) CONTESTANTS=$2; shift 2 ;;
    --no-loader) LOADER=0; shift ;;
    *) echo "images_vs_peers.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
BIN=${STRATA_BIN:-build/bin}
VENV=${STRATA_BENCH_VENV:-build/bench-torch-venv}
SIMD_VENV=${STRATA_BENCH_SIMD_VENV:-build/bench-pillow-simd-venv}
DALI_VENV=${STRATA_BENCH_DALI_VENV:-build/bench-dali-venv}
IMAGES=${IMAGES_DIR:-/tmp/strata-ivp-images}
DELAY_MS=${DELAY_MS:-50} STEP_MS=${STEP_MS:-5} SHARD_MB=${SHARD_MB:-4}
OUT=${STRATA_BENCH_OUT:-build/bench-results/$(date -u +%Y-%m-%d)}
RES=$OUT/raw/images
SYSPY="/usr/bin/python3 -s"  # Debian's python3-pil and python3-skimage make the images
has() { [[ " $CONTESTANTS " == *" $1 "* ]]; }
log() { echo "[images_vs_peers] $(date -u +%H:%M:%S) $*" >&2; }
[[ -x $BIN/strata-bench ]] || { echo "images_vs_peers.sh: $BIN/strata-bench is missing (build it first)" >&2; exit 1; }

# python3-skimage ships the photos; libjpeg-dev and zlib1g-dev build Pillow-SIMD
scripts/apt-install.sh bench python3-skimage python3-pil libjpeg-dev zlib1g-dev build-essential
if ! "$VENV/bin/python" -c 'import torch, torchvision' 2>/dev/null; then
  log "making $VENV (torch, torchvision)"
  [[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q torch torchvision --index-url https://download.pytorch.org/whl/cpu ||
    "$VENV/bin/pip" install -q torch torchvision
fi
if has tv_simd && ! "$SIMD_VENV/bin/python" -c 'import PIL, torchvision; assert "post" in PIL.__version__' 2>/dev/null; then
  log "making $SIMD_VENV (Pillow-SIMD from source, AVX2)"
  python3 -m venv "$SIMD_VENV"
  CC="cc -mavx2" "$SIMD_VENV/bin/pip" install -q --no-cache-dir --no-binary :all: pillow-simd
  site=$("$SIMD_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/zz-torch-venv.pth"
fi
if has dali || has dali_fused; then
  if ! "$DALI_VENV/bin/python" -c 'import nvidia.dali' 2>/dev/null; then
    log "making $DALI_VENV (nvidia-dali-cuda130)"
    python3 -m venv "$DALI_VENV"
    "$DALI_VENV/bin/pip" install -q nvidia-dali-cuda130 numpy
  fi
fi

if [[ $(find "$IMAGES" -name '*.jpg' 2>/dev/null | wc -l) -ne $COUNT ]]; then
  rm -rf "$IMAGES"
  log "writing $COUNT JPEGs into $IMAGES"
  $SYSPY bench/images/make_photo_jpegs.py --out "$IMAGES" --count "$COUNT"
fi
mkdir -p "$RES"
rm -f "$RES"/*.jsonl "$RES"/*.error "$RES"/loader.jsonl
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

warm() { cat "$IMAGES"/*/*.jpg >/dev/null; }  # the page cache holds every file, for every contestant
run_one() {  # contestant threads round
  local c=$1 t=$2 r=$3 out=$RES/$1.jsonl
  warm
  case $c in
    tv_pillow) "$VENV/bin/python" bench/images/peers.py --contestant torchvision --dir "$IMAGES" --workers "$t" ;;
    tv_simd) "$SIMD_VENV/bin/python" bench/images/peers.py --contestant torchvision --dir "$IMAGES" --workers "$t" ;;
    dali | dali_fused) "$DALI_VENV/bin/python" bench/images/peers.py --contestant "$c" --dir "$IMAGES" --threads "$t" ;;
    strata) "$BIN/strata-bench" image_augment --dir "$IMAGES" --threads "$t" --seed "$r" ;;
  esac >"$RES/run.out" 2>"$RES/run.err" || { log "$c ($t threads) failed"; tail -20 "$RES/run.err" >"$RES/$c-$t.error"; }
  sed -n 's/^json //p' "$RES/run.out" | sed "s/}\$/, \"round\": $r, \"key\": \"$c\"}/" >>"$out"
  log "round $r: $c, $t threads: $(sed -n 's/^json //p' "$RES/run.out" | grep -o '"images_per_s": [0-9.]*')"
}

read -r -a ORDER <<<"$CONTESTANTS"
for r in $(seq 1 "$ROUNDS"); do
  n=${#ORDER[@]}
  for i in $(seq 0 $((n - 1))); do
    c=${ORDER[$(((i + r - 1) % n))]}
    for t in $THREADS; do run_one "$c" "$t" "$r"; done
  done
done

# --- the loader on the packed images behind strata-proxy's latency ---
if ((LOADER)); then
  for b in strata-pack strata-proxy; do
    [[ -x $BIN/$b ]] || { echo "images_vs_peers.sh: $BIN/$b is missing (build it, or --no-loader)" >&2; exit 1; }
  done
  W=$(mktemp -d /tmp/strata-ivp.XXXXXX)
  HTTP_PID='' PROXY_PID=''
  cleanup() {
    [[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null
    [[ -n $HTTP_PID ]] && kill "$HTTP_PID" 2>/dev/null
    rm -rf "$W"
  }
  trap cleanup EXIT
  log "packing the images (strata-pack files, ${SHARD_MB} MiB shards)"
  "$BIN/strata-pack" files --root "$IMAGES" --out "$W/pack" --shard-size "${SHARD_MB}MiB" >"$W/pack.log" 2>&1
  (cd "$W/pack" && exec python3 -u -m http.server 0 --bind 127.0.0.1 >"$W/http.log" 2>&1) &
  HTTP_PID=$!
  for _ in $(seq 100); do grep -q 'port' "$W/http.log" 2>/dev/null && break; sleep 0.05; done
  HTTP_PORT=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$W/http.log" | head -1)
  "$BIN/strata-proxy" --listen 127.0.0.1:0 --target "127.0.0.1:$HTTP_PORT" --delay-ms "$DELAY_MS" \
    >"$W/proxy.port" 2>"$W/proxy.err" &
  PROXY_PID=$!
  for _ in $(seq 100); do grep -q '^listening on' "$W/proxy.port" && break; sleep 0.05; done
  PROXY="http://127.0.0.1:$(awk '/^listening on/ {print $3}' "$W/proxy.port")"
  for t in $THREADS; do
    warm
    rm -rf "$W/cache"
    log "loader behind strata-proxy --delay-ms $DELAY_MS, $t decode threads"
    "$BIN/strata-bench" loader --url "$PROXY" --modes loader --image-size 224 --decode "$t" --epochs 2 \
      --step-ms "$STEP_MS" --proxy-stats "$PROXY" --cache-dir "$W/cache" >"$RES/run.out" 2>"$RES/run.err" ||
      { log "the loader ($t decode threads) failed"; tail -20 "$RES/run.err" >"$RES/loader-$t.error"; }
    sed -n 's/^json //p' "$RES/run.out" | sed "s/}\$/, \"decode_threads\": $t, \"delay_ms\": $DELAY_MS, \"step_ms\": $STEP_MS}/" \
      >>"$RES/loader.jsonl"
  done
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
rm -f "$RES/run.out" "$RES/run.err"

versions() { "$1" -c "import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in '$2'.split()}))" 2>/dev/null || echo '{}'; }
cat >"$RES/setup.json" <<JSON
{"count": $COUNT, "rounds": $ROUNDS, "threads": "$THREADS", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "commit": "$(git rev-parse --short HEAD)", "cpu": "$(lscpu | sed -n 's/^Model name: *//p' | head -1)", "cores": $(nproc),
 "memory_gib": $(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo),
 "load_before": "$LOAD_BEFORE", "load_after": "$LOAD_AFTER", "kernel": "$(uname -r)",
 "images_mib": $(du -sm "$IMAGES" | cut -f1),
 "torch": $(versions "$VENV/bin/python" "torch torchvision pillow"),
 "simd": $(versions "$SIMD_VENV/bin/python" "pillow-simd"),
 "dali": $(versions "$DALI_VENV/bin/python" "nvidia-dali-cuda130")}
JSON
$SYSPY bench/images/report.py "$RES" "$OUT"
log "wrote $OUT/images_vs_peers.md"
