#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole
# suite through CTest (unit, integration, mpi; gpu tests say SKIPPED without a
# device), then the unit and integration tests again under AddressSanitizer + UBSan and the
# loader's, cache's and communicator's tests and the emulated CUDA kernels' shared-memory cases (label tsan) under ThreadSanitizer,
# then (with nvcc) rehearses the GPU machine's check (scripts/gpu-rehearse.sh:
# the archive, the size a device call carries, the one command run here under
# the device's rules), then the embedding example against the installed package. Exits non-zero on any failure.
# Every build compiles through ccache (cmake/StrataCcache.cmake), so a run after
# a build of the same sources, in any checkout, mostly looks objects up.
#   STRATA_TEST_SKIP_SANITIZE=1   skip the sanitizer passes (local iterations)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The suite's python3 is Debian's, the one whose packages (python3-h5py,
# python3-yaml) this script installs: a python3 earlier on PATH (pyenv's shim,
# an active venv) may lack them (seen: pyenv's had no h5py on a fresh machine).
export PATH="/usr/bin:$PATH"
JOBS=$(nproc)
TEST_JOBS=$(( JOBS < 4 ? JOBS : 4 ))  # tests at a time; more than 4 at once was never tried
t0=$(date +%s)
stage() { echo "[test] $* ($(( $(date +%s) - t0 )) s since the start)"; }

# What the test suite needs beyond building and running strata (scripts/setup.sh):
# the test object store (Ceph RGW, scripts/rgw.sh, with curl and uuidgen), the
# datasets, h5dump and h5py (shards and checkpoints read back as users would), and
# iproute2 for the network-namespace cluster.
# Installed before setup.sh builds, so that a test's configure-time look-up finds its tool.
# Integrator: the packages a new test needs go here.
# mmdebstrap and zstd: container_image (scripts/image.sh) makes a Debian root file
# system of the installed programs and a tarball of it.
# stunnel4 + openssl: a TLS endpoint in front of RGW; python3-venv: moto's STS in
# a venv; strace: the secrets test records every write. libdnnl-dev: the suite
# builds the CPU conv2d through oneDNN (STRATA_DNNL=AUTO), test_conv_dnnl runs it.
# python3-yaml: bench_peer_schedule_test reads strata's configs. clang,
# libclang-rt-dev (libFuzzer) and ninja-build: scripts/fuzz.sh. clang-format:
# the format check below (Debian's version, so that every machine formats alike).
# python3-pil, python3-numpy: scripts/make-imagefolder.py and the image decoding
# checks against Pillow (tests/data/loader).
# python3-jsonschema: deploy_manifests validates deploy/kubernetes against its schemas.
# munge, slurmctld, slurmd, slurm-client: slurm_requeue runs deploy/slurm's batch
# script under a one-node Slurm (its PMIx plugin, mpi/pmix_v4, is in
# slurm-wlm-basic-plugins, which slurmd depends on).
TEST_PACKAGES=(
  ceph-mon ceph-osd radosgw ceph-common curl uuid-runtime procps
  dataset-fashion-mnist bible-kjv hdf5-tools python3-h5py iproute2 mmdebstrap zstd
  stunnel4 openssl python3-venv strace libdnnl-dev python3-yaml
  clang libclang-rt-dev ninja-build clang-format python3-jsonschema
  munge slurmctld slurmd slurm-client
  python3-pil python3-numpy
)
scripts/apt-install.sh test "${TEST_PACKAGES[@]}"

# Every C++ and CUDA source as .clang-format says, before anything builds: a
# reformatting never hides inside a change, and the failure names each file.
stage "format: clang-format --dry-run -Werror over the tracked sources"
git ls-files -z '*.h' '*.cpp' '*.cu' '*.cuh' | xargs -0 clang-format --dry-run -Werror

scripts/setup.sh

# Tests run TEST_JOBS at a time: most of the suite's time is spent waiting on other
# processes (the object store, MPI ranks, killed and resumed runs), and tests that
# must not overlap say so in CTest (RUN_SERIAL, RESOURCE_LOCK, fixtures). On 2
# cores this took the full suite from 481 to 285 s and the sanitizer pass from
# 755 to 361 s (2026-12-03).
stage "full suite (build/)"
# the reliability and fuzz tests' counts, for the table in docs/reliability.md
FIGURES=$PWD/build/reliability-figures.tsv
rm -f "$FIGURES"
# each pass's results also as JUnit, from which the skips are listed at the end
JUNIT=()
ctest --test-dir build -j "$TEST_JOBS" --output-on-failure --timeout 900 --output-junit "$PWD/build/junit.xml"
JUNIT+=("$PWD/build/junit.xml")

if [ "${STRATA_TEST_SKIP_SANITIZE:-0}" != 1 ]; then
  stage "unit and integration tests under address,undefined sanitizers (build-sanitize/)"
  cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_CUDA=OFF \
    -DSTRATA_SANITIZE=address,undefined >/dev/null
  # only what the unit and integration tests run (their executables, the apps they
  # start): the MPI-only test binaries and the GPU tests are not compiled twice
  mapfile -t SAN_TARGETS < <(for l in unit integration; do scripts/test-targets.sh build-sanitize $l --apps; done | sort -u)
  cmake --build build-sanitize -j "$JOBS" --target "${SAN_TARGETS[@]}"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp" \
    ctest --test-dir build-sanitize -L 'unit|integration' -j "$TEST_JOBS" --output-on-failure --timeout 1800 \
    --output-junit "$PWD/build-sanitize/junit.xml"
  JUNIT+=("$PWD/build-sanitize/junit.xml")

  stage "the loader's, cache's and communicator's tests and the emulated kernels' races under ThreadSanitizer (build-tsan/)"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_CUDA=OFF -DSTRATA_SANITIZE=thread >/dev/null
  mapfile -t TSAN_TARGETS < <(scripts/test-targets.sh build-tsan tsan)
  cmake --build build-tsan -j "$JOBS" --target "${TSAN_TARGETS[@]}" strata-proxy
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build-tsan -L tsan -j "$TEST_JOBS" --output-on-failure --timeout 1800 \
    --output-junit "$PWD/build-tsan/junit.xml"
  JUNIT+=("$PWD/build-tsan/junit.xml")
fi

stage "coverage-guided fuzzing of the parsers (scripts/fuzz.sh, 20 s a target, build-fuzz/)"
# Not the shard target here: on corrupt HDF5 metadata libFuzzer finds HDF5's own
# H5C_protect asking malloc for 16 GB, past its memory limit, inside the
# library rather than in strata; fuzz_shard_replay covers it in the suite.
STRATA_RELIABILITY_FIGURES=$FIGURES scripts/fuzz.sh 20 config manifest s3_xml idx
python3 tests/reliability/write_figures.py "$FIGURES" docs/reliability.md

if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then
  stage "GPU rehearsal: scripts/gpu-rehearse.sh (the archive, its size, the one command under the device's rules)"
  scripts/gpu-rehearse.sh
fi

stage "embedding example against the installed package"
scripts/embed-check.sh

# Every skip, with its reason; one this script's installs should have prevented
# (a missing tool, privilege or index) fails the suite here instead of passing quietly.
stage "the suite's skips (tests/support/skip_report.py, allowed: tests/support/allowed_skips.txt)"
/usr/bin/python3 tests/support/skip_report.py tests/support/allowed_skips.txt "${JUNIT[@]}"

echo "[test] all passed in $(( $(date +%s) - t0 )) s"
