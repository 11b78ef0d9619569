#!/usr/bin/env bash
# netns-cluster.sh - a two-"node" cluster on one Linux machine for multi-node MPI tests.
#
# Each node is a network namespace with its own UTS namespace (hostname), joined to the
# other by a veth pair; Open MPI reaches the second node through scripts/netns-agent.sh
# (its plm_rsh_agent), exactly as it would reach a real node through ssh. See docs/multinode.md.
#
#   netns-cluster.sh up                   # (re)create the cluster; cleans up leftovers first
#   netns-cluster.sh run [mpirun args] PROGRAM [args]
#                                         # mpirun from inside node 1 with the cluster's MCA settings;
#                                         # without -H/--host/--hostfile/-np it adds -H n1:2,n2:2 -np 4
#   netns-cluster.sh linkdown [NODE]      # take NODE's veth end down (default: the second node)
#   netns-cluster.sh linkup [NODE]        # and up again
#   netns-cluster.sh status               # namespaces, addresses, link state, processes inside
#   netns-cluster.sh down                 # kill what runs inside (by pid), remove links, namespaces, state
#   netns-cluster.sh mca                  # print the MCA settings 'run' uses, as --mca options
#
# Environment (set the same values for every call; CI and a developer's cluster must differ in
# STRATA_NETNS_PREFIX):
#   STRATA_NETNS_PREFIX   namespace name prefix                       (strata  -> strata-n1, strata-n2)
#   STRATA_NETNS_NODES    the two node names (= hostnames, -H names)  ("n1 n2")
#   STRATA_NETNS_SUBNET   first three octets of the /24               (10.77.0 -> .1 and .2)
#   STRATA_NETNS_STATE    state directory (session dirs, logs, cache)  (/tmp/$PREFIX-netns)
#   STRATA_NETNS_CACHE_BASE  per-node cache dirs are $BASE/<node>      ($STATE/cache)
#   STRATA_NETNS_KEEPALIVE   "time interval probes" of the ORTE out-of-band TCP keepalive ("1 1 3")
#   STRATA_NETNS_MTU      veth MTU (1500)
#   STRATA_NETNS_MPIRUN   the mpirun to call (mpirun; e.g. scripts/strata-mpirun for strata's job defaults)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PREFIX=${STRATA_NETNS_PREFIX:-strata}
read -r -a NODES <<<"${STRATA_NETNS_NODES:-n1 n2}"
[ "${#NODES[@]}" -eq 2 ] || { echo "netns-cluster: STRATA_NETNS_NODES must name exactly two nodes" >&2; exit 2; }
SUBNET=${STRATA_NETNS_SUBNET:-10.77.0}
STATE=${STRATA_NETNS_STATE:-/tmp/$PREFIX-netns}
CACHE_BASE=${STRATA_NETNS_CACHE_BASE:-$STATE/cache}
MTU=${STRATA_NETNS_MTU:-1500}
read -r -a KEEPALIVE <<<"${STRATA_NETNS_KEEPALIVE:-1 1 3}"
NET="$SUBNET.0/24"
IFACE=veth0                        # the veth end's name inside each namespace
NS=("$PREFIX-${NODES[0]}" "$PREFIX-${NODES[1]}")
IP=("$SUBNET.1" "$SUBNET.2")

log() { echo "[netns-cluster] $*" >&2; }
die() { echo "[netns-cluster] error: $*" >&2; exit 1; }
ns_exists() { [ -e "/var/run/netns/$1" ]; }
node_index() {   # node name, namespace name or address -> 0/1
  local i
  for i in 0 1; do
    case "$1" in "${NODES[$i]}"|"${NS[$i]}"|"${IP[$i]}") echo "$i"; return 0;; esac
  done
  die "unknown node '$1' (nodes: ${NODES[*]})"
}

cmd_down() {
  local i p n tries
  # Everything inside the namespaces was started through this cluster (mpirun, orted, ranks).
  # Namespaces share the PID space, so kill by pid from here; repeat because a dying mpirun
  # may still be forking.
  for tries in 1 2 3 4 5; do
    n=0
    for i in 0 1; do
      ns_exists "${NS[$i]}" || continue
      for p in $(ip netns pids "${NS[$i]}" 2>/dev/null); do kill -9 "$p" 2>/dev/null && n=$((n + 1)); done
    done
    [ "$n" -eq 0 ] && break
    sleep 0.2
  done
  # delete the link first: 'ip netns del' returns before a veth inside it is gone
  for i in 0 1; do ns_exists "${NS[$i]}" && ip -n "${NS[$i]}" link del "$IFACE" 2>/dev/null || true; done
  for i in 0 1; do ns_exists "${NS[$i]}" && ip netns del "${NS[$i]}" 2>/dev/null || true; done
  for i in 0 1; do rm -rf "/etc/netns/${NS[$i]}"; done
  rm -rf "$STATE"
  for i in 0 1; do ! ns_exists "${NS[$i]}" || die "namespace ${NS[$i]} still exists"; done
  log "down: ${NS[*]} removed"
}

cmd_up() {
  [ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
  local c i
  for c in ip unshare; do command -v "$c" >/dev/null || die "missing $c"; done
  # idempotent: whatever a crashed run left behind goes first
  cmd_down 2>/dev/null
  mkdir -p "$STATE/tmp"
  for i in 0 1; do ip netns add "${NS[$i]}"; done
  # create both ends straight inside their namespaces: no name is ever taken in the root namespace,
  # so clusters with different prefixes cannot collide
  ip link add "$IFACE" mtu "$MTU" netns "${NS[0]}" type veth peer name "$IFACE" mtu "$MTU" netns "${NS[1]}"
  for i in 0 1; do
    ip -n "${NS[$i]}" link set lo up
    ip netns exec "${NS[$i]}" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true  # IPv4 only
    ip -n "${NS[$i]}" addr add "${IP[$i]}/24" dev "$IFACE"
    ip -n "${NS[$i]}" link set "$IFACE" up
    # each node resolves both node names, like a cluster's DNS; 'ip netns exec' bind-mounts
    # /etc/netns/NS/hosts over /etc/hosts, so the machine's /etc/hosts is never touched
    mkdir -p "/etc/netns/${NS[$i]}"
    printf '127.0.0.1 localhost\n%s %s\n%s %s\n' "${IP[0]}" "${NODES[0]}" "${IP[1]}" "${NODES[1]}" \
      >"/etc/netns/${NS[$i]}/hosts"
    mkdir -p "$CACHE_BASE/${NODES[$i]}"
  done
  for c in $(seq 50); do
    ip -n "${NS[0]}" -o link show "$IFACE" | grep -q LOWER_UP &&
      ip -n "${NS[1]}" -o link show "$IFACE" | grep -q LOWER_UP && break
    sleep 0.1
  done
  # reachability without ping (not installed everywhere): a TCP connect to a closed port of node 2
  # is answered with a reset ("refused") when the link works and times out when it does not
  local probe; probe=$(ip netns exec "${NS[0]}" timeout 3 bash -c "exec 3<>/dev/tcp/${IP[1]}/9" 2>&1 || true)
  if [[ "$probe" != *refused* ]]; then
    die "node ${NODES[1]} (${IP[1]}) is not reachable from ${NODES[0]}"
  fi
  log "up: ${NODES[0]}=${NS[0]} ${IP[0]}, ${NODES[1]}=${NS[1]} ${IP[1]}, state $STATE"
}

need_up() { for i in 0 1; do ns_exists "${NS[$i]}" || die "not up (no namespace ${NS[$i]}): run '$0 up'"; done; }

# The MCA settings of the cluster, one "name value" a line; each is explained in docs/multinode.md.
# 'run' passes them as OMPI_MCA_<name> environment variables, so that a --mca option on the
# command line overrides any of them (mpirun refuses a --mca name given twice). mpirun forwards
# OMPI_MCA_* variables to every orted.
mca_settings() {
  cat <<EOF
plm_rsh_agent $SCRIPT_DIR/netns-agent.sh
pml ob1
btl vader,tcp,self
btl_tcp_if_include $NET
oob_tcp_if_include $NET
oob_tcp_keepalive_time ${KEEPALIVE[0]}
oob_tcp_keepalive_intvl ${KEEPALIVE[1]}
oob_tcp_keepalive_probes ${KEEPALIVE[2]}
hwloc_base_binding_policy none
mpi_yield_when_idle 1
rmaps_base_oversubscribe 1
orte_tmpdir_base $STATE/tmp
EOF
}

cmd_run() {
  need_up
  local a have_hosts=0 have_np=0 opts
  for a in "$@"; do
    case "$a" in -H|--host|-host|--hostfile|-hostfile|--machinefile|-machinefile|--default-hostfile) have_hosts=1;; esac
    case "$a" in -np|-n|--np|-c) have_np=1;; esac
  done
  local name value v
  while read -r name value; do   # a value already in the environment wins, as a --mca option does
    v="OMPI_MCA_$name"; export "$v=${!v:-$value}"
  done < <(mca_settings)
  opts=()
  [ "$have_hosts" = 1 ] || opts+=(-H "${NODES[0]}:2,${NODES[1]}:2")
  [ "$have_hosts" = 1 ] || [ "$have_np" = 1 ] || opts+=(-np 4)
  # The agent reads these to map node names to namespaces and to set each node's STRATA_NODE and
  # STRATA_CACHE_DIR.
  export STRATA_NETNS_PREFIX="$PREFIX" STRATA_NETNS_NODES="${NODES[*]}" STRATA_NETNS_SUBNET="$SUBNET" \
    STRATA_NETNS_STATE="$STATE" STRATA_NETNS_CACHE_BASE="$CACHE_BASE"
  # node 1's ranks are started by mpirun itself, so mpirun carries node 1's variables
  export STRATA_NODE="${NODES[0]}" STRATA_CACHE_DIR="$CACHE_BASE/${NODES[0]}"
  export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
  # mpirun runs inside node 1 with node 1's hostname: Open MPI names nodes by hostname, and two
  # "nodes" sharing the machine's hostname crash the job (docs/multinode.md, pitfalls)
  exec ip netns exec "${NS[0]}" unshare --uts /bin/sh -c 'hostname "$1" && shift && exec "$@"' sh \
    "${NODES[0]}" "${STRATA_NETNS_MPIRUN:-mpirun}" "${opts[@]}" "$@"
}

cmd_link() {   # up|down [node]
  need_up
  local i; i=$(node_index "${2:-${NODES[1]}}")
  ip -n "${NS[$i]}" link set "$IFACE" "$1"
  log "link $1: ${NODES[$i]} (${NS[$i]} $IFACE)"
}

cmd_status() {
  local i st=0
  for i in 0 1; do
    if ns_exists "${NS[$i]}"; then
      echo "${NODES[$i]}: netns ${NS[$i]} $(ip -n "${NS[$i]}" -br addr show "$IFACE" 2>/dev/null | tr -s ' ')"
      echo "${NODES[$i]}: cache ${CACHE_BASE}/${NODES[$i]}  processes: $(ip netns pids "${NS[$i]}" | tr '\n' ' ')"
    else
      echo "${NODES[$i]}: netns ${NS[$i]} absent"; st=1
    fi
  done
  return $st
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  run) shift; cmd_run "$@" ;;
  linkdown) cmd_link down "${2:-}" ;;
  linkup) cmd_link up "${2:-}" ;;
  status) cmd_status ;;
  mca) mca_settings | while read -r name value; do printf -- '--mca %s %s ' "$name" "$value"; done; echo ;;
  *) sed -n '2,27p' "$0" >&2; exit 2 ;;
esac
