#!/usr/bin/env bash
# Checks strata as an installed package, the way an embedder meets it. Installs the
# build tree BUILD (default: build) into a fresh prefix (removed first) and fails if
#   - an exported target names a library or directory by absolute path (the targets
#     must name imported targets, which strataConfig.cmake finds again);
#   - an exported target's name differs from the build tree's (strata::core, not
#     strata::strata_core);
#   - a private header was installed: backend internals (kernels/cpu, cuda,
#     reference, shape), *_detail.h, or a header that includes a private
#     dependency's header (HDF5, curl, yaml-cpp, nlohmann, OpenSSL, xxhash, Eigen,
#     OpenMP, BLAS, cuDNN, NCCL), which an embedder's compiler would not find;
#   - a test-only binary (strata-proxy, strata-config-docs) was installed;
#   - an installed header does not compile on its own (#include <strata/H>);
# then builds examples/embed (#include <strata/strata.h>) against the prefix with
# find_package(strata) and runs it (it exits non-zero if its loss did not fall).
#   scripts/embed-check.sh [BUILD_DIR]
#   STRATA_EMBED_DIR   scratch directory (default BUILD_DIR/embed-check): prefix/, headers/, build/
#   STRATA_JOBS        parallel compile jobs (default nproc)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" 2>/dev/null && pwd) ||
  { echo "embed-check: build dir '${1:-$root/build}' not found (configure and build first)" >&2; exit 2; }
work=${STRATA_EMBED_DIR:-$build/embed-check}
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
fail() { echo "embed-check: FAILED: $*" >&2; exit 1; }

echo "== install $build -> $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }
grep "strata headers:" "$work/install.log" || true

echo "== exported targets"
targets=("$prefix"/lib*/cmake/strata/strataTargets*.cmake)
[[ -f ${targets[0]} ]] || fail "no strataTargets.cmake under $prefix/lib*/cmake/strata"
# property values only: an absolute path starts a quoted value, a list item or a genex argument
if grep -nE '^\s*(INTERFACE|IMPORTED)_[A-Z_]+\s' "${targets[@]}" | grep -E '[";:]/|-L/'; then
  fail "exported targets name absolute paths (above); link imported targets instead"
fi
names=$(grep -ohE 'add_library\(strata::[A-Za-z0-9_]+' "${targets[@]}" | sed 's/add_library(//' | sort -u)
echo "$names" | tr '\n' ' '
echo
echo "$names" | grep -q '^strata::strata$' || fail "strata::strata is not exported"
if echo "$names" | grep -E '^strata::strata_'; then
  fail "exported names differ from the build tree's aliases (set EXPORT_NAME)"
fi

echo "== installed headers"
inc=$prefix/include/strata
[[ -f $inc/strata.h ]] || fail "no umbrella header $inc/strata.h"
find "$prefix/include" -mindepth 1 -maxdepth 1 | grep -vx "$prefix/include/strata" && fail "$prefix/include holds more than strata/"
headers=$(cd "$inc" && find . -type f | sed 's|^\./||' | sort)
echo "$(echo "$headers" | wc -l) headers under include/strata"
if echo "$headers" | grep -E '^kernels/(cpu|cuda|reference|shape)/|_detail\.h$'; then
  fail "private headers installed (above)"
fi
private_dep='^\s*#\s*include\s*<(hdf5|H5[A-Za-z]*\.h|curl/|yaml-cpp/|nlohmann/|openssl/|xxhash|Eigen/|omp\.h|cblas|cudnn|nccl)'
if (cd "$inc" && grep -rnE "$private_dep" .); then
  fail "installed headers include private dependencies' headers (above)"
fi

echo "== installed programs"
ls "$prefix/bin" | tr '\n' ' '
echo
for t in strata-proxy strata-config-docs; do
  [[ ! -e $prefix/bin/$t ]] || fail "test-only binary $t installed"
done

echo "== every installed header compiles on its own, as <strata/...>"
mkdir -p "$work/headers"
{
  echo 'cmake_minimum_required(VERSION 3.25)'
  echo 'project(strata_header_check LANGUAGES C CXX)'
  echo 'set(CMAKE_CXX_STANDARD 20)'
  echo 'find_package(strata REQUIRED)'
  echo 'add_library(headers OBJECT)'
  echo 'target_link_libraries(headers PRIVATE strata::strata)'
} >"$work/headers/CMakeLists.txt"
n=0
for h in $headers; do
  n=$((n + 1))
  echo "#include <strata/$h>" >"$work/headers/h$n.cpp"
  echo "target_sources(headers PRIVATE h$n.cpp)  # $h" >>"$work/headers/CMakeLists.txt"
done
cmake -S "$work/headers" -B "$work/headers/build" -DCMAKE_PREFIX_PATH="$prefix" >"$work/headers.log" ||
  { cat "$work/headers.log"; exit 1; }
cmake --build "$work/headers/build" -j "${STRATA_JOBS:-$(nproc)}" >>"$work/headers.log" 2>&1 ||
  { grep -B2 -A8 'error' "$work/headers.log" | head -60; fail "an installed header does not compile alone (above)"; }
echo "$n headers compiled alone"

echo "== configure examples/embed against $prefix"
cmake -S "$root/examples/embed" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
echo "== build"
cmake --build "$work/build" -j "${STRATA_JOBS:-$(nproc)}"
echo "== run"
"$work/build/embed_example"
