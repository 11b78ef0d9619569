#!/usr/bin/env bash
# Installs the Debian packages building and running strata needs (idempotent) and
# builds Release into build/.
#   STRATA_CUDA=AUTO|ON|OFF   build the CUDA backend (AUTO: when nvcc is present)
#   STRATA_BUILD_DIR          build directory (default build)
#   STRATA_CMAKE_ARGS         extra CMake arguments
#   STRATA_SKIP_APT=1         do not touch packages
set -euo pipefail
cd "$(dirname "$0")/.."

# What building and running strata needs (the test suite's extras: scripts/test.sh;
# the demo's: scripts/demo.sh). libgtest, libgmock and python3: the tests are built
# by default, and their CMake files need python3 at configure time. ccache: every
# build directory compiles through it (cmake/StrataCcache.cmake).
PACKAGES=(
  build-essential cmake pkg-config git
  libeigen3-dev libopenblas-dev libdnnl-dev libhdf5-dev libcurl4-openssl-dev libssl-dev
  libyaml-cpp-dev nlohmann-json3-dev libxxhash-dev libcli11-dev prometheus-cpp-dev
  libturbojpeg0-dev libspng-dev libzstd-dev liblz4-dev
  libgtest-dev libgmock-dev python3
  openmpi-bin libopenmpi-dev
  ccache
)
scripts/apt-install.sh setup "${PACKAGES[@]}"

BUILD_DIR=${STRATA_BUILD_DIR:-build}
JOBS=$(nproc)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA="${STRATA_CUDA:-AUTO}" \
  ${STRATA_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "[setup] built into $BUILD_DIR/ (binaries in $BUILD_DIR/bin)"
