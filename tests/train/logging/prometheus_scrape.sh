#!/usr/bin/env bash
# strata-train with logging.prometheus_port set serves its figures while it
# trains: scraped twice with curl during the run, the endpoint has every
# metric docs/monitoring.md names, labelled job (the run's name), rank and
# host, and strata_steps_total has advanced between the scrapes; a second run
# on the same port is refused before it makes its run directory; the Grafana
# dashboard queries only series the endpoint serves.
#   usage: prometheus_scrape.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
W=$(mktemp -d /tmp/strata-prometheus.XXXXXX)
PID=
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -9 "$PID"; fi
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$W/train.out" ] && tail -5 "$W/train.out"; exit 1; }
D=/usr/share/datasets/fashion-mnist

"$BIN/strata-pack" idx --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz \
  --out "$W/data" --shard-size 2MiB --quiet >/dev/null
# a port nobody listens on now
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" \
  data.test_url="file://$W/data" data.batch_size=50 trainer.epochs=1000 trainer.threads=1 checkpoint.every_epochs=0 logging.every_steps=5 \
  logging.console=plain logging.tensorboard=false logging.prometheus_port=$PORT data.cache_dir="$W/cache" \
  --run-dir "$W/prom-run" >"$W/train.out" 2>&1 &
PID=$!

scrape() { curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics"; }
value() { grep "^$1{" "$2" | head -1 | awk '{print $NF}'; }

# the first scrape once the first logging interval has been exported
for _ in $(seq 1200); do
  kill -0 $PID 2>/dev/null || fail "strata-train ended before it was scraped"
  if scrape >"$W/scrape1" 2>/dev/null && [ "$(value strata_steps_total "$W/scrape1")" != "" ] &&
     awk -v v="$(value strata_steps_total "$W/scrape1")" 'BEGIN{exit !(v > 0)}'; then break; fi
  sleep 0.1
done
s1=$(value strata_steps_total "$W/scrape1")
# a second run on the port in use is refused, naming the key, before it makes a run directory
rc=0
"$BIN/strata-train" --config "$SRC/configs/fashion_mnist_mlp.yaml" data.train_url="file://$W/data" \
  data.test_url="file://$W/data" logging.prometheus_port=$PORT data.cache_dir="$W/cache2" \
  --run-dir "$W/second-run" >"$W/second.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "a second run on port $PORT exited with $rc: $(tail -2 "$W/second.out")"
grep -q "logging.prometheus_port: cannot listen on 127.0.0.1:$PORT" "$W/second.out" ||
  fail "the refusal does not name the key and the address: $(cat "$W/second.out")"
[ ! -e "$W/second-run" ] || fail "the refused run made its run directory"
echo "port in use: $(grep -o 'error: .*' "$W/second.out" | cut -c1-160)"
[ -n "$s1" ] || fail "no strata_steps_total on http://127.0.0.1:$PORT/metrics"
# the second once the counter has moved on (the loop's bound only stops a hung run)
for _ in $(seq 1200); do
  kill -0 $PID 2>/dev/null || fail "strata-train ended before the second scrape"
  scrape >"$W/scrape2" || fail "the second scrape failed"
  s2=$(value strata_steps_total "$W/scrape2")
  awk -v a="$s1" -v b="$s2" 'BEGIN{exit !(b > a)}' && break
  sleep 0.1
done
awk -v a="$s1" -v b="$s2" 'BEGIN{exit !(b > a)}' || fail "strata_steps_total did not advance: $s1 then $s2"
kill -TERM $PID
wait $PID || true
PID=

labels="job=\"prom-run\",rank=\"0\",host=\"$(hostname)\""
for m in strata_step strata_epoch strata_loss strata_learning_rate strata_steps_per_second \
         strata_samples_per_second strata_data_wait_ratio strata_device_memory_in_use_bytes \
         strata_steps_total strata_samples_total strata_loader_cache_hits_total \
         strata_loader_cache_misses_total strata_loader_retries_total strata_loader_evictions_total \
         strata_loader_shards_staged_total strata_store_requests_total strata_store_bytes_total \
         strata_data_wait_seconds_total strata_world_size strata_world_size_changes_total \
         strata_loader_bad_images_total; do
  line=$(grep "^$m{" "$W/scrape2" | head -1) || fail "no $m in the scrape"
  for l in job=\"prom-run\" rank=\"0\" host=\"$(hostname)\"; do
    case "$line" in *"$l"*) ;; *) fail "$m lacks the label $l: $line" ;; esac
  done
  grep -q "^# TYPE $m " "$W/scrape2" || fail "$m has no TYPE line"
done
grep -q "^# TYPE strata_steps_total counter" "$W/scrape2" || fail "strata_steps_total is not a counter"
grep -q "^# TYPE strata_loss gauge" "$W/scrape2" || fail "strata_loss is not a gauge"
# one start, of one rank (tests/reliability/elastic.sh scrapes a resized run)
[ "$(value strata_world_size "$W/scrape2")" = 1 ] && [ "$(value strata_world_size_changes_total "$W/scrape2")" = 0 ] ||
  fail "strata_world_size $(value strata_world_size "$W/scrape2"), changes $(value strata_world_size_changes_total "$W/scrape2"): expected 1 and 0"
misses=$(value strata_loader_cache_misses_total "$W/scrape2")
bytes=$(value strata_store_bytes_total "$W/scrape2")
awk -v m="$misses" -v b="$bytes" 'BEGIN{exit !(m > 0 && b > 0)}' ||
  fail "a cold cache fetched nothing? misses $misses, bytes $bytes"
# the Grafana dashboard asks for series the endpoint has (the GPU probe's aside)
python3 - "$SRC/docs/grafana-dashboard.json" "$W/scrape2" <<'PY' || fail "docs/grafana-dashboard.json names a series the endpoint lacks"
import json, re, sys
dash = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
used = {m for e in exprs for m in re.findall(r"strata_[a-z_]+", e)} - {"strata_gpu_utilization_ratio",
        "strata_gpu_memory_used_bytes", "strata_gpu_memory_total_bytes"}
served = {line.split("{")[0] for line in open(sys.argv[2]) if line.startswith("strata_")}
missing = sorted(used - served)
print(f"grafana dashboard: {len(exprs)} queries over {len(used)} series, all served" if not missing
      else f"missing: {missing}")
sys.exit(1 if missing else 0)
PY
echo "scrape 1: strata_steps_total $s1; scrape 2: strata_steps_total $s2 ($labels)"
grep -E "^strata_(steps_total|loss|learning_rate|store_bytes_total|loader_cache_misses_total)\{" "$W/scrape2"
echo "prometheus_scrape: ok"
