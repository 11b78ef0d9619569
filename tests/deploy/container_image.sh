#!/usr/bin/env bash
# The container image known to work, not just to build: scripts/image.sh builds a
# Debian image (mmdebstrap) holding this build's installed programs and runs, inside
# it as the user strata, strata-train --version, strata-pack and a 20-step training
# run (exit 0, summary.json's steps, a checkpoint, a falling loss). Then the check's
# failure: with one library taken out of the image, as a package left out of
# scripts/image.sh's list would leave it, the check must fail naming the library.
#   container_image.sh BUILD_DIR
# Exit 77 (SKIPPED) without root. The image stays in BUILD_DIR/container-image.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || {
  echo "container_image: SKIPPED: needs root (mmdebstrap's root mode, chroot, mount namespaces)"
  exit 77
}
export STRATA_IMAGE_DIR=$build/container-image
"$src/scripts/image.sh" all "$build"

# libhdf5_serial.so.103 (libhdf5-103-1) out of the image: every program needs it.
rootfs=$STRATA_IMAGE_DIR/rootfs
lib=$rootfs/usr/lib/x86_64-linux-gnu/libhdf5_serial.so.103
aside=$STRATA_IMAGE_DIR/libhdf5_serial.so.103.aside
mv "$lib" "$aside"
trap 'mv "$aside" "$lib"' EXIT
rc=0
out=$("$src/scripts/image.sh" check "$build" 2>&1) || rc=$?
mv "$aside" "$lib"
trap - EXIT
if [ "$rc" = 0 ] || ! grep -q "strata-train: libhdf5_serial.so.103 => not found" <<<"$out"; then
  echo "$out"
  echo "container_image: FAIL: the check did not fail naming libhdf5_serial.so.103 (exit $rc)"
  exit 1
fi
echo "container_image: without libhdf5_serial.so.103 the check failed, as it must:"
grep -A1 "FAILED" <<<"$out" | head -2
echo "container_image: PASS"
