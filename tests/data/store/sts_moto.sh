#!/usr/bin/env bash
# Runs a test binary against moto's STS: makes a venv (once) under the build
# dir, pip-installs moto[server] into it, starts moto_server on a free
# 127.0.0.1 port, runs "$@" with STRATA_TEST_STS_ENDPOINT set, stops moto by pid.
#   sts_moto.sh VENV_DIR TEST_BINARY [ARGS...]
# Exit 77 (ctest: skipped) only when pip cannot reach its index.
set -euo pipefail
venv=$1
shift
say() { echo "sts_moto.sh: $*" >&2; }

if [ ! -x "$venv/bin/moto_server" ]; then
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q 'moto[server]' >"$venv.pip.log" 2>&1; then
    probe=$(mktemp -d)
    if ! "$venv/bin/pip" download -q --no-deps -d "$probe" moto >/dev/null 2>&1; then
      rm -rf "$probe"
      say "SKIPPED: pip has no network (cannot download moto); see $venv.pip.log"
      exit 77
    fi
    rm -rf "$probe"
    cat "$venv.pip.log" >&2
    say "pip install 'moto[server]' failed"
    exit 1
  fi
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 300); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  kill -0 "$moto_pid" 2>/dev/null || { cat "$log" >&2; say "moto_server exited"; exit 1; }
  sleep 0.1
done
curl -s -o /dev/null "http://127.0.0.1:$port/" || { cat "$log" >&2; say "moto_server not answering"; exit 1; }
say "moto $("$venv/bin/pip" show moto 2>/dev/null | sed -n 's/^Version: //p') on 127.0.0.1:$port (pid $moto_pid)"
STRATA_TEST_STS_ENDPOINT="http://127.0.0.1:$port" "$@"
