#!/usr/bin/env bash
# What the GPU machine's one command runs once it has unpacked the archive
# (scripts/gpu-rehearse.sh prints that command): gpu-check.sh under a hard limit,
# its console in $OUT/console.txt, then its logs, without checkpoints, caches or
# packed data, in $OUT/logs.tgz. gpu-check.sh itself appends $OUT/gpu-report.md
# row by row, so a run killed at its limit still brings back every row it wrote.
# Three plain files in $OUT: the device tool returns at most 8, 16 MiB each.
#   OUT=DIR gpu-run.sh [--expect-skip]
#   STRATA_GPU_CHECK_BUDGET=s   seconds for all of gpu-check's steps (default 450; with the
#                               unpacking and the packing of the logs the command ends inside 8 minutes)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?gpu-run.sh writes its report into \$OUT, which is not set}"
mkdir -p "$OUT"
export STRATA_GPU_CHECK_BUDGET=${STRATA_GPU_CHECK_BUDGET:-450}
# the steps end themselves inside the budget; this limit only catches gpu-check.sh itself hanging
timeout -k 5 $((STRATA_GPU_CHECK_BUDGET + 15)) "$HERE/gpu-check.sh" "$@" 2>&1 | tee "$OUT/console.txt"
rc=${PIPESTATUS[0]}
pack_logs() { tar -C "$HERE" -czf "$OUT/logs.tgz" --exclude=checkpoints --exclude=cache --exclude='*.h5' "$@" logs; }
pack_logs
# over the 16 MiB a returned file may have: the step logs alone
[ "$(stat -c %s "$OUT/logs.tgz")" -lt $((15 * 1048576)) ] || pack_logs --exclude=runs
exit "$rc"
