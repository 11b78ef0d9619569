#!/usr/bin/env bash
# Proves the attention kernels run on Tensor Cores: disassembles the built CUDA
# code (cuobjdump -sass, from PyPI's nvidia-cuda-cuobjdump and -nvdisasm,
# installed into a venv under the build dir on first use) and requires HMMA
# (sm_80) and HMMA or WGMMA (sm_90 and later) instructions in every f16/bf16
# attention kernel, and none in the f32 ones (f32 must not be TF32), for every
# architecture the library holds machine code for (CMAKE_CUDA_ARCHITECTURES:
# sm_80 and sm_90 by default, sm_90 alone in a build on an H200 that says
# native). SKIPPED (exit 77) only when the build has no CUDA backend or the
# packages cannot be installed.
#   test_sass_mma.sh <library or object with the kernels> <venv dir> <have CUDA: 1|0>
set -euo pipefail
lib=$1 venv=$2 have_cuda=$3
skip() { echo "[  SKIPPED ] $*"; exit 77; }
fail() { echo "[  FAILED  ] $*"; exit 1; }

[ "$have_cuda" = 1 ] || skip "this build has no CUDA backend (STRATA_CUDA=OFF or no nvcc)"
[ -f "$lib" ] || fail "no such file: $lib (build strata_kernels first)"
tools() { ls -d "$venv"/lib/python3*/site-packages/nvidia/cu*/bin 2>/dev/null | head -n 1; }
if [ -z "$(tools)" ] || [ ! -x "$(tools)/cuobjdump" ] || [ ! -x "$(tools)/nvdisasm" ]; then
  python3 -m venv "$venv" >/dev/null 2>&1 || skip "python3 -m venv failed: cannot install cuobjdump"
  "$venv/bin/pip" install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >"$venv.pip.log" 2>&1 ||
    skip "pip could not install nvidia-cuda-cuobjdump/nvidia-cuda-nvdisasm (see $venv.pip.log)"
fi
bin=$(tools)
[ -x "$bin/cuobjdump" ] && [ -x "$bin/nvdisasm" ] || skip "the PyPI packages hold no cuobjdump/nvdisasm under $venv"
export PATH="$bin:$PATH"

# the architectures of the ELF images in the library (cuobjdump -lelf names each
# "...sm_90.cubin"); PTX-only entries hold no SASS to check
archs=$(cuobjdump -lelf "$lib" | grep -oE 'sm_[0-9]+[a-z]?' | sort -u)
[ -n "$archs" ] || fail "cuobjdump -lelf lists no machine code in $lib"
status=0
for arch in $archs; do
  want='HMMA'
  [ "${arch//[!0-9]/}" -ge 90 ] && want='HMMA|WGMMA'
  sass=$(cuobjdump -sass -arch "$arch" "$lib") || fail "cuobjdump -sass -arch $arch $lib"
  # one line per attention kernel: <mma instruction count> <mangled name>
  counts=$(awk -v want="$want" '
    /Function :/ { f = $3; if (f ~ /attn_(forward|backward)_kernel/) n[f] = 0 }
    $0 ~ want && (f in n) { n[f]++ }
    END { for (k in n) print n[k], k }' <<<"$sass")
  half=0 full=0
  while read -r n name; do
    [ -n "$name" ] || continue
    name=$(sed -E "s/.*attn_((forward|backward)_kernelI)/\1/" <<<"$name")  # <forward|backward>_kernelI<type>...
    case "$name" in
      *_kernelIf*)  # f32: CUDA cores only
        full=$((full + 1))
        [ "$n" -eq 0 ] || { echo "$arch: $n Tensor Core instructions in f32 kernel $name"; status=1; } ;;
      *)
        half=$((half + 1))
        if [ "$n" -gt 0 ]; then echo "$arch: $n x ($want) in $name"; else
          echo "$arch: no $want instruction in $name"; status=1; fi ;;
    esac
  done <<<"$counts"
  # 2 half dtypes x (forward, backward) x 4 head-dim configurations x (full, compact tiles); f32 16
  [ "$half" -eq 32 ] || { echo "$arch: expected 32 f16/bf16 attention kernels, found $half"; status=1; }
  [ "$full" -eq 16 ] || { echo "$arch: expected 16 f32 attention kernels, found $full"; status=1; }
done
[ "$status" -eq 0 ] && echo "[  PASSED  ] Tensor Core instructions in every f16/bf16 attention kernel ($(echo $archs))"
exit "$status"
