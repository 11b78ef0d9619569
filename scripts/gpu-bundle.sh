#!/usr/bin/env bash
# Builds everything GPU-side into gpu-bundle/, to be run on a borrowed GPU machine
# that has the CUDA 13 toolkit, cuDNN and NCCL (as the PyPI wheels nvidia-cudnn-cu13
# and nvidia-nccl-cu13) and a Python, but none of strata's Debian libraries and no
# package registry. Nothing is built there: gpu-check.sh runs what is in here.
#   gpu-bundle/bin/       strata-train, strata-bench, the gpu-labelled test binaries
#   gpu-bundle/lib/       the binaries' shared libraries less glibc and CUDA's (ldd closure)
#   gpu-bundle/tests.list the gpu tests to run (name and command line)
#   gpu-bundle/gpu-check.sh
# Portable code (-march=native off: the GPU host's CPU is not this one), this
# machine's libstdc++ shipped beside the binaries, sm_80 and sm_90. MPI stays a shared library that is
# never initialised: every binary here runs as a single process (single-process
# communicator; NCCL with one rank).
#   STRATA_GPU_BUILD_DIR   build directory (default build-gpu)
#   STRATA_GPU_BUNDLE_DIR  output directory (default gpu-bundle)
#   STRATA_GPU_ARCHS       CUDA architectures (default "80;90"; the CI check builds 90 only)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${STRATA_GPU_BUILD_DIR:-build-gpu}
OUT=${STRATA_GPU_BUNDLE_DIR:-gpu-bundle}
LIMIT_MIB=64
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "[gpu-bundle] nvcc not found: the bundle needs the CUDA toolkit" >&2; exit 1; }

GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
# Shared strata libraries (one copy of the CUDA kernels, not one per test binary),
# Eigen as the CPU GEMM, no OpenBLAS peer in the bench (35 MiB of library a GPU
# check does not use) and no oneDNN (40 MiB; the CPU convolution is then im2col):
# what keeps the bundle under the 64 MiB a device run carries.
cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_NATIVE=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${STRATA_GPU_ARCHS:-80;90}" -DSTRATA_SHARED_LIBS=ON -DSTRATA_GEMM=eigen -DSTRATA_BENCH_OPENBLAS=OFF -DSTRATA_DNNL=OFF \
  ${STRATA_CMAKE_ARGS:-} >/dev/null

# the gpu-labelled tests that run as one process (MPI-launched ones need mpirun)
ctest --test-dir "$BUILD" -L gpu --show-only=json-v1 > "$BUILD/gpu-tests.json"
python3 - "$BUILD/gpu-tests.json" "$BUILD/gpu-tests.list" <<'PY'
import json, os, sys
tests = json.load(open(sys.argv[1]))["tests"]
with open(sys.argv[2], "w") as f:
    for t in tests:
        # before the first build ctest knows no path yet: the executable is named as the test
        cmd = t.get("command") or [t["name"]]
        if "mpiexec" in os.path.basename(cmd[0]) or "mpirun" in os.path.basename(cmd[0]):
            continue
        f.write(t["name"] + "\t" + os.path.basename(cmd[0]) + "\t" + " ".join(cmd[1:]) + "\n")
PY
mapfile -t TEST_BINS < <(cut -f2 "$BUILD/gpu-tests.list" | sort -u)
cmake --build "$BUILD" -j "$(nproc)" --target strata-train strata-bench strata-pack strata-inspect "${TEST_BINS[@]}"

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
cp "$BUILD/bin/strata-train" "$BUILD/bin/strata-bench" "$BUILD/bin/strata-pack" "$BUILD/bin/strata-inspect" "$OUT/bin/"
for b in "${TEST_BINS[@]}"; do cp "$BUILD/tests/$b" "$OUT/bin/"; done
cp "$BUILD/gpu-tests.list" "$OUT/tests.list"
cp scripts/gpu-check.sh scripts/gpu-train-check.sh "$OUT/"
mkdir -p "$OUT/configs" && cp configs/*.yaml "$OUT/configs/"

# gpu-train-check.sh's data, packed there by strata-pack: 20000 Fashion-MNIST
# training images (what fits the size limit beside the binaries), the 10000 test
# images, and the KJV text (scripts/corpus.sh's) when this machine has them.
FMNIST=${STRATA_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}
mkdir -p "$OUT/data"
if [ -f "$FMNIST/train-images-idx3-ubyte.gz" ]; then
  python3 - "$FMNIST" "$OUT/data" 20000 <<'PY'
import gzip, shutil, struct, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for kind, item in (("images-idx3", 28 * 28), ("labels-idx1", 1)):
    with gzip.open(f"{src}/train-{kind}-ubyte.gz") as f:
        magic, count = struct.unpack(">II", f.read(8))
        rest = f.read(8 if kind.startswith("images") else 0)  # rows, cols
        body = f.read(n * item)
    with gzip.open(f"{out}/train-{kind}-ubyte.gz", "wb", compresslevel=9) as g:
        g.write(struct.pack(">II", magic, n) + rest + body)
    shutil.copy(f"{src}/t10k-{kind}-ubyte.gz", out)
PY
else
  echo "[gpu-bundle] no Fashion-MNIST in $FMNIST: the training section will say SKIPPED" >&2
fi
kjv=""
for t in runs/data/kjv-corpus/kjv.txt build/corpus/kjv.txt; do [ -f "$t" ] && { kjv=$t; break; }; done
if [ -z "$kjv" ] && STRATA_PACK="$BUILD/bin/strata-pack" scripts/corpus.sh "$BUILD/corpus" >/dev/null; then
  kjv=$BUILD/corpus/kjv.txt
fi
if [ -n "$kjv" ]; then gzip -9c "$kjv" >"$OUT/data/kjv.txt.gz"; else echo "[gpu-bundle] no KJV text: the gpt step will say SKIPPED" >&2; fi

# the ldd closure, less glibc and the CUDA libraries the GPU machine has itself
is_system() {
  case "$1" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|linux-vdso*) return 0 ;;
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libcudnn*.so*|libnccl.so*|libnvToolsExt*|libnvrtc*) return 0 ;;
  esac
  return 1
}
for f in "$OUT"/bin/*; do
  [ -x "$f" ] && [ ! -d "$f" ] || continue
  [ "$(head -c4 "$f" | tail -c3)" = "ELF" ] || continue
  ldd "$f" | awk '/=> \//{print $1" "$3}' | while read -r name path; do
    is_system "$name" && continue
    [ -e "$OUT/lib/$name" ] || cp -L "$path" "$OUT/lib/$name"
  done
done

strip --strip-unneeded "$OUT"/bin/* "$OUT"/lib/*.so* 2>/dev/null || true
size_mib=$(( $(du -sb "$OUT" | cut -f1) / 1048576 ))
echo "[gpu-bundle] $OUT: $(ls "$OUT/bin" | wc -l) binaries, $(ls "$OUT/lib" | wc -l) libraries, ${size_mib} MiB"
if [ "$size_mib" -ge "$LIMIT_MIB" ]; then
  echo "[gpu-bundle] $OUT is ${size_mib} MiB, over the ${LIMIT_MIB} MiB a device run can carry" >&2
  du -sh "$OUT"/bin/* "$OUT"/lib/* | sort -h | tail -8 >&2
  exit 1
fi
