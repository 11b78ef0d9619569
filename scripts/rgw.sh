#!/usr/bin/env bash
# The test object store: a one-node Ceph cluster (1 monitor, 1 OSD on MemStore,
# no mgr) with the RADOS Gateway answering S3 on 127.0.0.1, signature checks on.
#
#   rgw.sh up      build a fresh cluster in $CEPH_DIR, start it, create the S3
#                  user and the buckets in $RGW_BUCKETS, print the env lines
#   rgw.sh down    stop the daemons (by pid file) and remove $CEPH_DIR
#   rgw.sh env     print export lines for the S3_* / AWS_* variables
#   rgw.sh status  say which daemons run and whether S3 answers
#   rgw.sh stop-gateway / start-gateway   stop or start radosgw alone (an
#                  outage of the S3 endpoint; the objects stay)
#
# Knobs: CEPH_DIR (/tmp/strata-rgw), RGW_PORT (7480), MON_PORT (6789),
# RGW_BUCKETS ("a b": buckets to create), S3_ACCESS_KEY / S3_SECRET_KEY (fixed
# test keys), MEMSTORE_BYTES (OSD capacity, in RAM), RGW_DEBUG (20 logs SigV4
# canonical requests to $CEPH_DIR/log/client.rgw.a.log), RGW_DNS_NAME
# (localhost: the domain of virtual-host addressing, http://BUCKET.localhost:PORT),
# RGW_EXTRA_CONF (lines added to the gateway's section, e.g. a benchmark's
# garbage-collection pace).
# Data lives in the OSD's RAM: every "up" starts empty.
set -euo pipefail

CEPH_DIR=${CEPH_DIR:-/tmp/strata-rgw}
RGW_PORT=${RGW_PORT:-7480}
MON_PORT=${MON_PORT:-6789}
RGW_BUCKETS=${RGW_BUCKETS:-}
S3_ACCESS_KEY=${S3_ACCESS_KEY:-STRATATESTACCESSKEY1}
S3_SECRET_KEY=${S3_SECRET_KEY:-strataTestSecretKey0123456789abcdefghijk}
MEMSTORE_BYTES=${MEMSTORE_BYTES:-2147483648}
RGW_DNS_NAME=${RGW_DNS_NAME:-localhost}
RGW_DEBUG=${RGW_DEBUG:-1}
ENDPOINT="http://127.0.0.1:${RGW_PORT}"
CONF="$CEPH_DIR/ceph.conf"

say() { echo "rgw.sh: $*" >&2; }
die() { echo "rgw.sh: ERROR: $*" >&2; exit 1; }

# Signed request with curl: curl 7.88 neither adds x-amz-content-sha256 (RGW
# would then reject the signature) nor sorts query strings, so callers pass
# the header here and write queries sorted.
s3curl() {
  curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "${S3_ACCESS_KEY}:${S3_SECRET_KEY}" \
       -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"
}

http_code() { curl -s -o /dev/null -w '%{http_code}' "$@" 2>/dev/null || true; }

write_conf() {
  cat > "$CONF" <<CONF
[global]
fsid = $1
mon host = v1:127.0.0.1:${MON_PORT}
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $CEPH_DIR/run
admin socket = $CEPH_DIR/run/\$name.asok
pid file = $CEPH_DIR/run/\$name.pid
log file = $CEPH_DIR/log/\$name.log
mon data = $CEPH_DIR/mon/\$cluster-\$id
osd data = $CEPH_DIR/osd/\$cluster-\$id
osd objectstore = memstore
memstore device bytes = ${MEMSTORE_BYTES}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
# With auth off the OSD may send its start-up CRUSH commands before it knows
# the cluster fsid and then exit; this script places osd.0 itself instead.
osd crush update on start = false
osd class update on start = false
mon allow pool size one = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
mon warn on msgr2 not enabled = false
# RGW creates several pools at first start, one map epoch each: propose fast.
paxos propose interval = 0.1
paxos min wait = 0.01

[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:${RGW_PORT}
rgw data = $CEPH_DIR/rgw
rgw thread pool size = 64
# Virtual-host addressing: a Host of BUCKET.${RGW_DNS_NAME}[:port] names the
# bucket (curl resolves *.localhost to loopback); other hosts stay path style.
rgw dns name = ${RGW_DNS_NAME}
# S3 and RGW refuse multipart parts under 5 MiB (but the last); the tests send
# many-part uploads of 64 KiB parts so that a RAM-backed store holds them.
rgw multipart min part size = 65536
${RGW_EXTRA_CONF:-}
debug rgw = ${RGW_DEBUG}
CONF
}

daemon_pid() { cat "$CEPH_DIR/run/$1.pid" 2>/dev/null || echo 0; }
running() { local p; p=$(daemon_pid "$1"); [ "$p" != 0 ] && kill -0 "$p" 2>/dev/null; }

stop_daemons() {
  local d pid i
  for d in client.rgw.a osd.0 mon.a; do
    running "$d" || continue
    pid=$(daemon_pid "$d")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    say "stopped $d (pid $pid)"
  done
}

# A monitor command, tried up to 20 times 0.5 s apart (each try bounded at 30 s):
# a monitor that had just answered `mon stat` refused the next command once with
# "Error EPERM: problem getting command descriptions from mon" (a local .ci/run of
# 2026-12-03, tests running 2 at a time). Both commands used here are idempotent
# (the same uuid, the same crush position).
mon_command() {
  local i
  for i in $(seq 1 20); do
    timeout 30 ceph -c "$CONF" "$@" >/dev/null 2>>"$CEPH_DIR/log/mon-command.err" && return 0
    sleep 0.5
  done
  die "ceph $* failed 20 times; see $CEPH_DIR/log/mon-command.err and $CEPH_DIR/log/mon.a.log"
}

start_osd() {
  local try i
  for try in 1 2 3; do
    ceph-osd -c "$CONF" -i 0 2>>"$CEPH_DIR/log/osd-start.err" || true
    for i in $(seq 1 80); do
      timeout 10 ceph -c "$CONF" osd dump 2>/dev/null | grep -q '^osd.0 up' && return 0
      running osd.0 || break
      sleep 0.25
    done
    running osd.0 && kill "$(daemon_pid osd.0)" && sleep 2
    say "osd.0 did not come up (attempt $try): $(tail -1 "$CEPH_DIR/log/osd.0.log" 2>/dev/null)"
  done
  die "osd.0 not up; see $CEPH_DIR/log/osd.0.log"
}

cmd_up() {
  for t in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool uuidgen curl; do
    command -v "$t" >/dev/null || die "$t not found (apt-get install ceph-mon ceph-osd radosgw ceph-common uuid-runtime curl)"
  done
  stop_daemons
  rm -rf "$CEPH_DIR"
  mkdir -p "$CEPH_DIR"/{mon/ceph-a,osd/ceph-0,run,log,rgw}
  local fsid i
  fsid=$(uuidgen)
  write_conf "$fsid"
  monmaptool --create --add a "v1:127.0.0.1:${MON_PORT}" --fsid "$fsid" "$CEPH_DIR/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$CEPH_DIR/monmap"
  ceph-mon -c "$CONF" -i a
  # retried as every monitor command here: the monitor's first answer, too, was
  # once that EPERM (a local .ci/run of 2026-12-03 13:35, rgw_up in 0.35 s)
  mon_command mon stat

  local osd_uuid; osd_uuid=$(uuidgen)
  mon_command osd new "$osd_uuid"
  mon_command osd crush add osd.0 1.0 root=default host=localhost
  ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$osd_uuid" 2>>"$CEPH_DIR/log/osd-mkfs.err"
  start_osd

  radosgw -c "$CONF" -n client.rgw.a 2>>"$CEPH_DIR/log/rgw-start.err"
  for i in $(seq 1 240); do [ "$(http_code "$ENDPOINT/")" = 200 ] && break; sleep 0.25; done
  [ "$(http_code "$ENDPOINT/")" = 200 ] || die "radosgw not answering on $ENDPOINT; see $CEPH_DIR/log/client.rgw.a.log"

  radosgw-admin -c "$CONF" user create --uid=strata --display-name="strata tests" \
    --access-key="$S3_ACCESS_KEY" --secret-key="$S3_SECRET_KEY" >/dev/null
  for i in $(seq 1 40); do
    [ "$(s3curl -o /dev/null -w '%{http_code}' "$ENDPOINT/")" = 200 ] && break; sleep 0.25
  done
  [ "$(s3curl -o /dev/null -w '%{http_code}' "$ENDPOINT/")" = 200 ] || die "signed request refused by $ENDPOINT"
  local b code
  for b in $RGW_BUCKETS; do
    code=$(s3curl -X PUT -o /dev/null -w '%{http_code}' "$ENDPOINT/$b")
    [ "$code" = 200 ] || [ "$code" = 409 ] || die "creating bucket $b: HTTP $code"
  done
  say "up: $ENDPOINT (mon $(daemon_pid mon.a), osd $(daemon_pid osd.0), rgw $(daemon_pid client.rgw.a))${RGW_BUCKETS:+, buckets: $RGW_BUCKETS}"
  cmd_env
}

cmd_env() {
  cat <<ENV
export S3_ENDPOINT=$ENDPOINT
export S3_ACCESS_KEY=$S3_ACCESS_KEY
export S3_SECRET_KEY=$S3_SECRET_KEY
export AWS_ENDPOINT_URL=$ENDPOINT
export AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
ENV
}

cmd_status() {
  local d rc=0
  for d in mon.a osd.0 client.rgw.a; do
    if running "$d"; then echo "$d running (pid $(daemon_pid "$d"))"; else echo "$d not running"; rc=1; fi
  done
  echo "S3 at $ENDPOINT: HTTP $(http_code "$ENDPOINT/")"
  return $rc
}

# The gateway alone, for outage tests: the cluster (and the objects) stay.
cmd_stop_gateway() {
  running client.rgw.a || die "radosgw is not running"
  local pid i
  pid=$(daemon_pid client.rgw.a)
  kill "$pid"
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  say "gateway stopped (pid $pid)"
}

cmd_start_gateway() {
  local i
  radosgw -c "$CONF" -n client.rgw.a 2>>"$CEPH_DIR/log/rgw-start.err"
  for i in $(seq 1 240); do [ "$(http_code "$ENDPOINT/")" = 200 ] && break; sleep 0.25; done
  [ "$(http_code "$ENDPOINT/")" = 200 ] || die "radosgw not answering on $ENDPOINT after a restart"
  say "gateway started (pid $(daemon_pid client.rgw.a))"
}

cmd_down() {
  stop_daemons
  rm -rf "$CEPH_DIR"
  say "down ($CEPH_DIR removed)"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  status) cmd_status ;;
  stop-gateway) cmd_stop_gateway ;;
  start-gateway) cmd_start_gateway ;;
  *) echo "usage: $0 up|down|env|status|stop-gateway|start-gateway   (env: CEPH_DIR RGW_PORT MON_PORT RGW_BUCKETS)" >&2; exit 2 ;;
esac
