#!/usr/bin/env bash
# Checks that strata works as an installed library: installs the build tree BUILD
# (default: build) into a temporary prefix, builds examples/embed against it with
# find_package(strata) and runs it (it exits non-zero if its loss did not fall).
#   scripts/embed-check.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
[[ -d $build ]] || { echo "embed-check: build dir '$build' not found (configure and build first)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/strata-embed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "== install $build -> $tmp/install"
cmake --install "$build" --prefix "$tmp/install" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
echo "== configure examples/embed"
cmake -S "$root/examples/embed" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/install" -DCMAKE_BUILD_TYPE=Release
echo "== build"
cmake --build "$tmp/build" -j "${STRATA_JOBS:-2}"
echo "== run"
"$tmp/build/embed_example"
