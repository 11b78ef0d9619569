#!/usr/bin/env bash
# Coverage-guided fuzzing of strata's parsers of untrusted input (tests/fuzz):
# builds everything with clang, libFuzzer coverage, ASan and UBSan into
# build-fuzz/, then runs each target for SECONDS (default 60) from the
# committed corpus. A finding leaves crash-* in build-fuzz/fuzz/ and fails the
# script; add the input to tests/fuzz/corpus/<target>/ once it is fixed.
#   scripts/fuzz.sh [SECONDS] [TARGET...]   targets: config manifest s3_xml idx shard
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(config manifest s3_xml idx shard)
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang (apt install clang)"; exit 1; }
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_COMPILER=clang -DSTRATA_CUDA=OFF -DSTRATA_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
cmake --build build-fuzz --target $(printf 'fuzz_%s ' "${TARGETS[@]}")
cd build-fuzz/fuzz
status=0
for t in "${TARGETS[@]}"; do
  mkdir -p "work-$t"
  echo "[fuzz] $t for ${SECONDS_PER}s"
  # allocator_may_return_null: a damaged shard makes HDF5 itself ask malloc for
  # petabytes (H5C_protect); without ASan malloc returns NULL and HDF5 fails the
  # open, which is what strata must then report (as the replay tests run it)
  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 ./fuzz_$t -max_total_time="$SECONDS_PER" -rss_limit_mb=4096 -print_final_stats=1 \
    "work-$t" "../../tests/fuzz/corpus/$t" 2>"$t.log" || { status=1; echo "[fuzz] $t: FINDING, see build-fuzz/fuzz/$t.log"; }
  grep -E "^stat::(number_of_executed_units|new_units_added)" "$t.log" | tr '\n' ' '; echo
  # the suite's figures (tests/reliability/figures_lib.sh's format), when scripts/test.sh asks
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$t.log")
  if [ -n "${STRATA_RELIABILITY_FIGURES:-}" ] && [ -n "$runs" ] && [ $status -eq 0 ]; then
    printf 'fuzz_runs\tfuzz_%s (libFuzzer)\tcoverage-guided executions in %s s\t%s\n' "$t" "$SECONDS_PER" "$runs" >>"$STRATA_RELIABILITY_FIGURES"
  fi
done
exit $status
