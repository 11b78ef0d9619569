#!/usr/bin/env bash
# Installs every Debian package strata needs (idempotent) and builds Release into build/.
#   STRATA_CUDA=AUTO|ON|OFF   build the CUDA backend (AUTO: when nvcc is present)
#   STRATA_BUILD_DIR          build directory (default build)
#   STRATA_CMAKE_ARGS         extra CMake arguments
#   STRATA_SKIP_APT=1         do not touch packages
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config git
  libeigen3-dev libopenblas-dev libhdf5-dev hdf5-tools libcurl4-openssl-dev libssl-dev
  libyaml-cpp-dev nlohmann-json3-dev libxxhash-dev libgtest-dev libgmock-dev
  openmpi-bin libopenmpi-dev iproute2 curl uuid-runtime procps
  dataset-fashion-mnist bible-kjv
  ceph-mon ceph-osd radosgw ceph-common
)

missing=()
if [ "${STRATA_SKIP_APT:-0}" != 1 ]; then
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "[setup] installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

BUILD_DIR=${STRATA_BUILD_DIR:-build}
JOBS=$(nproc)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA="${STRATA_CUDA:-AUTO}" \
  ${STRATA_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "[setup] built into $BUILD_DIR/ (binaries in $BUILD_DIR/bin)"
