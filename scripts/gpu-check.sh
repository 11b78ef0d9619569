#!/usr/bin/env bash
# The GPU check, run from the unpacked archive (scripts/gpu-bundle.sh makes it,
# gpu-run.sh starts this): it builds nothing. Most informative steps first, so a
# check cut short still says the most: the op suite on cuda, cuBLASLt through
# strata against a direct cuBLASLt call (strata-bench gemm --device cuda, which
# fails when they disagree), the one-rank NCCL communicator (no MPI), the other
# gpu tests, then the training section (scripts/gpu-train-check.sh: the
# Fashion-MNIST CNN on the CPU and on the GPU in fp32, bf16 and fp16, compared; a
# kill -9 and resume on the GPU checked bit for bit; GPT-2 124M in bf16) and the
# GPT-2 124M step's tokens/s and MFU (strata-bench train-step-lm).
# Each step has its own limit, and the limits add up to no more than the budget,
# so one hung step cannot starve the rest. The report (gpu-report.md, and
# $OUT/gpu-report.md when $OUT is set) gains its row as each step ends.
#   gpu-check.sh                 on a GPU machine: any FAIL, TIMEOUT or SKIPPED step fails the check
#   gpu-check.sh --expect-skip   on a machine without a GPU: passes only if every step says SKIPPED
#   gpu-check.sh --plan          prints each step, its limit and their sum; runs nothing
#   STRATA_GPU_CHECK_BUDGET=s    total seconds for all steps (default 450)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
MODE=${1:-check}
BUDGET=${STRATA_GPU_CHECK_BUDGET:-450}
LOGS="$HERE/logs"; mkdir -p "$LOGS"
REPORT="$HERE/gpu-report.md"
[ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && REPORT="$OUT/gpu-report.md"
T0=$(date +%s)

# cuDNN, NCCL and cuBLAS from the PyPI wheels when present, then the toolkit's.
# Only CUDA's own libraries go on LD_LIBRARY_PATH: the bundle's are found through
# the binaries' RPATH, so a Python child (the GEMM bench's PyTorch peer) loads
# its own libstdc++ and not the bundle's older one.
libdirs=""
for mod in nvidia.cudnn nvidia.nccl nvidia.cublas nvidia.cuda_runtime nvidia.cu13; do
  d=$(timeout 20 python3 -c "import importlib,os,sys; m=importlib.import_module('$mod'); print(os.path.join(list(m.__path__)[0],'lib'))" 2>/dev/null) || continue
  [ -d "$d" ] && libdirs="$libdirs${libdirs:+:}$d"
done
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && libdirs="$libdirs${libdirs:+:}$d"; done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

gpu_visible=0
device_line="no GPU visible (nvidia-smi absent or lists none)"
if command -v nvidia-smi >/dev/null && smi=$(timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null) && [ -n "$smi" ]; then
  gpu_visible=1
  device_line="$smi"
fi

# The steps, in order: NAME<TAB>LIMIT_S<TAB>COMMAND (words split on spaces).
# A gpu test's limit: the op suite and the heavier tests by name, the rest 9 s
# (a device context and a handful of kernels took 0-3 s on an H200, the op
# suite 5-7 s, 2026-12-04).
test_limit() {
  case "$1" in
    test_op_table_cuda) echo 30 ;;
    test_blaslt | *nccl*) echo 15 ;;
    test_device_gpt | test_cuda_attention | test_device_step) echo 18 ;;
    *) echo 9 ;;
  esac
}
test_rank() {  # the order among the tests: op suite, cuBLASLt, NCCL, the rest
  case "$1" in test_op_table_cuda) echo 0 ;; test_blaslt) echo 1 ;; *nccl*) echo 3 ;; *) echo 4 ;; esac
}
TRAIN="$HERE/gpu-train-check.sh"
plan() {
  local name bin args
  while IFS=$'\t' read -r name bin args; do
    [ -n "$name" ] || continue
    printf '%s\t%s\t%s\t%s\n' "$(test_rank "$name")" "$name" "$(test_limit "$name")" "$HERE/bin/$bin $args"
  done <"$HERE/tests.list"
  printf '2\tbench_gemm_cuda\t30\t%s\n' "$HERE/bin/strata-bench gemm --device cuda"
  printf '5\t%s\t%s\t%s\n' train_prepare_data 10 "$TRAIN prepare"
  # the CPU reference: 14-17 s on the H200 machine's 16 cores, once 28 s (its
  # CPUs are shared: 2,546 samples/s against 5,500 in the runs before)
  printf '5\t%s\t%s\t%s\n' train_cnn_cpu_fp32 45 "$TRAIN cnn cpu fp32"
  for prec in fp32 bf16 fp16; do printf '5\t%s\t%s\t%s\n' "train_cnn_cuda_$prec" 12 "$TRAIN cnn cuda $prec"; done
  printf '5\t%s\t%s\t%s\n' train_cnn_compare 5 "$TRAIN compare"
  printf '5\t%s\t%s\t%s\n' train_cnn_kill_resume 20 "$TRAIN kill-resume"
  printf '5\t%s\t%s\t%s\n' train_gpt2_124m_bf16 35 "$TRAIN gpt"
  # the GPT workload: GPT-2 small as configured (bf16, context 1024), tokens/s and
  # MFU against the H200's dense bf16 peak
  printf '5\t%s\t%s\t%s\n' bench_train_step_gpt2_124m 40 \
    "$HERE/bin/strata-bench train-step-lm --config $HERE/configs/gpt2_124m.yaml --device cuda --batch 8 --steps 10"
}
STEPS=$(plan | sort -s -t$'\t' -k1,1n | cut -f2-)
PLANNED=$(awk -F'\t' '{s += $2} END {print s}' <<<"$STEPS")
if [ "$MODE" = --plan ]; then
  printf '%s\n' "$STEPS" | cut -f1,2
  echo "sum of the step limits: $PLANNED s; budget: $BUDGET s"
  [ "$PLANNED" -le "$BUDGET" ] || { echo "the step limits add up to more than the budget" >&2; exit 1; }
  exit 0
fi

failures=0
not_skipped=0
row() { echo "$1" >>"$REPORT"; }
{
  echo "# strata gpu-check report"
  echo
  echo "- date: $(date -u +%FT%TZ); host: $(hostname)"
  echo "- device: $device_line"
  echo "- bundle: $HERE ($(ls "$HERE/bin" | wc -l) binaries); $(cat "$HERE/VERSION" 2>/dev/null || echo 'version unknown')"
  echo "- budget: ${BUDGET} s for steps whose limits add up to ${PLANNED} s"
  echo
  echo "| step | status | seconds | key lines |"
  echo "|---|---|---|---|"
} >"$REPORT"

# run_step NAME LIMIT_S CMD...: PASS, SKIPPED, FAIL or TIMEOUT, with its log in logs/NAME.log
run_step() {
  local name=$1 limit=$2; shift 2
  local left=$(( BUDGET - ($(date +%s) - T0) ))
  if [ "$left" -le 2 ]; then
    row "| $name | NOT RUN (budget of ${BUDGET} s spent) | 0 | |"; failures=$((failures + 1)); not_skipped=1
    echo "[gpu-check] $name: NOT RUN, budget spent" >&2
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local log="$LOGS/$name.log" s0 rc status detail
  s0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$log" 2>&1
  rc=$?
  local secs=$(( $(date +%s) - s0 ))
  local passed skipped
  passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "$log" | grep -oE '[0-9]+' | tail -1)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    status="TIMEOUT after ${limit} s"
  elif [ $rc -eq 77 ] || { [ $rc -eq 0 ] && [ -n "$skipped" ] && [ "$skipped" -gt 0 ]; }; then
    status="SKIPPED (${skipped:-?} skipped, ${passed:-0} passed)"  # a gtest binary's tests that need a device
  elif [ $rc -ne 0 ]; then
    status="FAIL (exit $rc)"
  elif [ -n "$passed" ] && [ "$passed" -eq 0 ]; then
    status="FAIL (0 tests ran)"
  elif [ -n "$passed" ]; then
    status="PASS ($passed tests)"
  elif grep -qE '(^|: )SKIPPED' "$log"; then
    status="SKIPPED"  # a bench or training step that found no device or data
  else
    status="PASS"
  fi
  detail=$(grep -m1 -E 'SKIPPED.*:|skipped .*:|no CUDA device|built without CUDA|no GPU visible' "$log" | sed 's/|/\//g' | cut -c1-160)
  case "$status" in
    PASS*) not_skipped=1
           detail=$(grep -E 'ratio|TFLOP|samples/s|tokens/s|PASSED|PASS:|points|identical|packed|killed|MFU' "$log" | tail -6 | sed 's/|/\//g' | tr '\n' ';' | cut -c1-400) ;;
    SKIPPED*) [ $gpu_visible = 1 ] && failures=$((failures + 1)) ;;
    *) failures=$((failures + 1)); not_skipped=1
       detail=$( (grep -E '^\[  FAILED  \]|Failure|FAIL:|error|Error' "$log" | head -4; tail -3 "$log") | sed 's/|/\//g' | tr '\n' ';' | cut -c1-600) ;;
  esac
  row "| $name | $status | $secs | $detail |"
  echo "[gpu-check] $name: $status (${secs} s)"
}

echo "[gpu-check] device: $device_line"
echo "[gpu-check] ${PLANNED} s of step limits in a ${BUDGET} s budget"
while IFS=$'\t' read -r name limit cmd; do
  # shellcheck disable=SC2086
  run_step "$name" "$limit" $cmd
done <<<"$STEPS"

row ""
row "- total: $(( $(date +%s) - T0 )) s of the ${BUDGET} s budget; $failures step(s) failed or skipped with a GPU present"
cat "$REPORT"

if [ "$MODE" = --expect-skip ]; then
  if [ $not_skipped = 1 ]; then echo "[gpu-check] expected every step SKIPPED (no GPU), but some did not skip" >&2; exit 1; fi
  echo "[gpu-check] every step SKIPPED, as expected without a GPU"
  exit 0
fi
if [ $failures -gt 0 ]; then echo "[gpu-check] $failures step(s) failed (or skipped with a GPU present)" >&2; exit 1; fi
echo "[gpu-check] all steps passed"
