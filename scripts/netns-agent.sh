#!/bin/sh
# netns-agent.sh - Open MPI's plm_rsh_agent for the cluster of scripts/netns-cluster.sh.
#
# Called like ssh:  netns-agent.sh [ssh options] HOST COMMAND...
# HOST is a node name (n1, n2), its namespace name or its address. The command runs
#   - inside the node's network namespace (ip netns exec),
#   - in a fresh UTS namespace whose hostname is the node name (Open MPI tells nodes apart by
#     hostname; with the machine's shared hostname jobs crash, see docs/multinode.md),
#   - through /bin/sh -c, as sshd runs a remote command (plm_rsh sends one string that may
#     start with "PATH=... ; export PATH ; ..."),
#   - with a clean environment, as over ssh: PATH, HOME, LANG, plus the node's
#       STRATA_NODE=<node>  STRATA_CACHE_DIR=<cache base>/<node>
#     The orted started here passes its environment on to the ranks it starts, so every rank on
#     the node sees these two. Anything else reaches the ranks only through mpirun -x.
# The cluster's layout comes from the STRATA_NETNS_* variables that 'netns-cluster.sh run'
# exports (the defaults match netns-cluster.sh's).
while [ $# -gt 0 ]; do
  case "$1" in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;   # ssh options that take a value
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "netns-agent: usage: $0 HOST COMMAND..." >&2; exit 255; }
host=$1; shift

prefix=${STRATA_NETNS_PREFIX:-strata}
nodes=${STRATA_NETNS_NODES:-n1 n2}
subnet=${STRATA_NETNS_SUBNET:-10.77.0}
state=${STRATA_NETNS_STATE:-/tmp/$prefix-netns}
cache_base=${STRATA_NETNS_CACHE_BASE:-$state/cache}

node=; i=0
for n in $nodes; do
  i=$((i + 1))
  case "$host" in "$n"|"$prefix-$n"|"$subnet.$i") node=$n ;; esac
done
[ -n "$node" ] || { echo "netns-agent: unknown host '$host' (nodes: $nodes)" >&2; exit 255; }
ns=$prefix-$node
[ -e "/var/run/netns/$ns" ] || { echo "netns-agent: namespace $ns does not exist (netns-cluster.sh up)" >&2; exit 255; }

if [ -d "$state" ]; then echo "$(date +%T.%N) $host -> $ns: $*" >>"$state/agent.log" 2>/dev/null; fi
exec env -i PATH="$PATH" HOME="${HOME:-/root}" LANG="${LANG:-C.UTF-8}" \
  STRATA_NODE="$node" STRATA_CACHE_DIR="$cache_base/$node" \
  ip netns exec "$ns" unshare --uts /bin/sh -c "hostname '$node' || exit 255; $*"
