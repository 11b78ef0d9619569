#!/usr/bin/env bash
# run_two_nodes.sh MODE MPI_HELLO - two-"node" tests on scripts/netns-cluster.sh.
#   hello     2 ranks in each of two namespaces: exactly 2 hostnames, 2 ranks on each, each node's
#             ranks in one network namespace and seeing their own STRATA_NODE/STRATA_CACHE_DIR,
#             the int and the 16 MB allreduce right.
#   linkdown  the same 4 ranks loop allreduces for 30 s; 4 s in, the second node's link goes down;
#             mpirun must exit non-zero within 90 s instead of hanging, and n2's orted and
#             ranks must end by themselves within 30 s more.
# Exit 77 (SKIPPED) without root or network namespaces. The cluster is brought down at the end.
# Set STRATA_NETNS_PREFIX (CTest does) so that a developer's cluster is left alone.
set -u
mode=$1
hello=$2
src=${STRATA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cluster="$src/scripts/netns-cluster.sh"
export STRATA_NETNS_PREFIX=${STRATA_NETNS_PREFIX:-strata-test}
out=$(mktemp)
trap '"$cluster" down >/dev/null 2>&1; rm -f "$out"' EXIT
fail() { echo "--- job output ---"; cat "$out"; echo "run_two_nodes $mode: FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || { echo "run_two_nodes: SKIPPED: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null && command -v unshare >/dev/null || { echo "run_two_nodes: SKIPPED: needs ip and unshare"; exit 77; }
if ! ip netns add "$STRATA_NETNS_PREFIX-probe" 2>/dev/null; then
  echo "run_two_nodes: SKIPPED: cannot create network namespaces here"; exit 77
fi
ip netns del "$STRATA_NETNS_PREFIX-probe"

"$cluster" up || fail "cluster up failed"

case "$mode" in
hello)
  timeout -k 5 120 "$cluster" run -H n1:2,n2:2 -np 4 "$hello" >"$out" 2>&1
  rc=$?
  cat "$out"
  [ "$rc" -eq 0 ] || fail "mpirun exited $rc"
  [ "$(grep -c '^RANK ' "$out")" -eq 4 ] || fail "expected 4 RANK lines"
  # RANK r SIZE n HOST h NETNS i LOCAL_RANK l NODE nd CACHE c
  hosts=$(awk '$1=="RANK" {print $6}' "$out" | sort | uniq -c | awk '{print $2 ":" $1}' | paste -sd' ')
  echo "run_two_nodes: ranks per hostname: $hosts"
  [ "$hosts" = "n1:2 n2:2" ] || fail "expected exactly 2 hostnames with 2 ranks each (n1:2 n2:2), got '$hosts'"
  # one network namespace per hostname, and two different ones
  pairs=$(awk '$1=="RANK" {print $6, $8}' "$out" | sort -u)
  [ "$(echo "$pairs" | wc -l)" -eq 2 ] || fail "expected one netns per node, got: $pairs"
  [ "$(echo "$pairs" | awk '{print $2}' | sort -u | wc -l)" -eq 2 ] || fail "both nodes share a netns: $pairs"
  # Open MPI sees two nodes: local ranks 0 and 1 on each
  lr=$(awk '$1=="RANK" {print $6 ":" $10}' "$out" | sort | paste -sd' ')
  [ "$lr" = "n1:0 n1:1 n2:0 n2:1" ] || fail "expected local ranks 0,1 on each node, got '$lr'"
  # the node-local variables: STRATA_NODE is the hostname, STRATA_CACHE_DIR ends in /<node>
  awk '$1=="RANK" && !($12==$6 && $14 ~ ("/" $6 "$")) {bad=1; print "bad node vars:", $0} END {exit bad}' "$out" \
    || fail "STRATA_NODE/STRATA_CACHE_DIR do not match the node"
  grep -q '^CHECK allreduce_int ok' "$out" || fail "int allreduce wrong"
  grep -q '^CHECK allreduce_16MB ok' "$out" || fail "16 MB allreduce wrong"
  echo "run_two_nodes hello: PASS"
  ;;
linkdown)
  t0=$(date +%s.%N)
  timeout -k 5 120 "$cluster" run -H n1:2,n2:2 -np 4 "$hello" --loop 30 >"$out" 2>&1 &
  job=$!
  for _ in $(seq 300); do grep -q '^HEARTBEAT' "$out" && break; sleep 0.1; done  # up to 30 s to start
  grep -q '^HEARTBEAT' "$out" || { kill "$job"; fail "the job did not start"; }
  sleep 3
  kill -0 "$job" 2>/dev/null || fail "the job ended before the link went down"
  "$cluster" linkdown n2 || fail "linkdown failed"
  t1=$(date +%s.%N)
  wait "$job"; rc=$?
  t2=$(date +%s.%N)
  grep -v '^HEARTBEAT' "$out"
  after=$(echo "$t2 - $t1" | bc)
  echo "run_two_nodes: link down $(echo "$t1 - $t0" | bc) s after the start; mpirun exited rc=$rc ${after} s after the link went down"
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "mpirun hung: killed by the 120 s timeout"
  [ "$rc" -ne 0 ] || fail "mpirun exited 0 although a node dropped off the network"
  [ "$(echo "$after <= 90" | bc)" = 1 ] || fail "mpirun took ${after} s (> 90 s) to notice the lost node"
  grep -q '^LOOP done' "$out" && fail "the loop completed although a node dropped off the network"
  # the cut-off node cleans up after itself (its orted's keepalive notices too), link still down
  ns2="$STRATA_NETNS_PREFIX-n2"
  for _ in $(seq 300); do [ -z "$(ip netns pids "$ns2")" ] && break; sleep 0.1; done
  left=$(ip netns pids "$ns2" | tr '\n' ' ')
  echo "run_two_nodes: processes left in n2 (link still down): ${left:-none}"
  [ -z "$left" ] || fail "n2's orted/ranks still alive 30 s after mpirun exited: $left"
  echo "run_two_nodes linkdown: PASS"
  ;;
*) echo "usage: $0 hello|linkdown MPI_HELLO" >&2; exit 2 ;;
esac
