#!/usr/bin/env bash
# Installs the named Debian packages that are not installed yet (idempotent):
#   scripts/apt-install.sh TAG PACKAGE...
# TAG prefixes the one line it prints ("[setup] installing: ..."). Uses sudo when
# not root; STRATA_SKIP_APT=1 does nothing. setup.sh installs what building and
# running strata needs; test.sh and demo.sh install their own extras with it.
set -euo pipefail
tag=$1
shift
[ "${STRATA_SKIP_APT:-0}" = 1 ] && exit 0
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "[$tag] installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >/dev/null
