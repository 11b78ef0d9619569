#!/usr/bin/env bash
# Builds everything GPU-side and packs it into one archive, .gpu/strata-gpu.tar.xz
# (an ignored folder that a device call carries), to be run on a borrowed GPU
# machine that has the CUDA 13 toolkit, cuDNN and NCCL (as the PyPI wheels
# nvidia-cudnn-cu13 and nvidia-nccl-cu13) and a Python, but none of strata's
# Debian libraries and no package registry. Nothing is built there: the archive's
# gpu-run.sh runs what is in it (scripts/gpu-rehearse.sh prints the one command).
#   strata-gpu/bin/        strata-train, strata-bench, the gpu-labelled test binaries
#   strata-gpu/lib/        the binaries' shared libraries less glibc and CUDA's (ldd
#                          closure), found through the binaries' RPATH ($ORIGIN/../lib),
#                          so nothing of the bundle leaks into a Python child's
#                          LD_LIBRARY_PATH (PyTorch, on the GPU machine, needs a newer
#                          libstdc++ than the bundle's)
#   strata-gpu/tests.list  the gpu tests to run (name and command line)
#   strata-gpu/gpu-check.sh, gpu-train-check.sh, gpu-run.sh
# Portable code (-march=native off: the GPU host's CPU is not this one), this
# machine's libstdc++ shipped beside the binaries, sm_90 (H100/H200), fatbins
# compressed (-Xfatbin=-compress-all: 0.10-0.21 of their size). MPI stays a shared
# library that is never initialised: every binary here runs as a single process
# (single-process communicator; NCCL with one rank, bootstrapped without MPI).
#   STRATA_GPU_BUILD_DIR   build directory (default build-gpu)
#   STRATA_GPU_ARCHS       CUDA architectures (default 90; "80;90" adds Ampere, a bigger archive)
#   STRATA_GPU_ARCHIVE     the archive (default .gpu/strata-gpu.tar.xz)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${STRATA_GPU_BUILD_DIR:-build-gpu}
ARCHIVE=${STRATA_GPU_ARCHIVE:-.gpu/strata-gpu.tar.xz}
OUT=$(realpath -m "$BUILD")/strata-gpu  # the staged bundle; the archive holds it as strata-gpu/
# what a device call carries (tracked tree + untracked + carried paths) is capped
# at 64 MiB; gpu-rehearse.sh checks the whole, this the archive alone
LIMIT_MIB=48
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "[gpu-bundle] nvcc not found: the bundle needs the CUDA toolkit" >&2; exit 1; }
# patchelf: the bundled libraries' RPATH; xz-utils: the archive
scripts/apt-install.sh gpu-bundle patchelf xz-utils

GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
# Shared strata libraries (one copy of the CUDA kernels, not one per test binary),
# Eigen as the CPU GEMM, no OpenBLAS peer in the bench (35 MiB of library a GPU
# check does not use) and no oneDNN (40 MiB; the CPU convolution is then im2col):
# what keeps the bundle under the 64 MiB a device run carries.
cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_NATIVE=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${STRATA_GPU_ARCHS:-90}" -DCMAKE_CUDA_FLAGS=-Xfatbin=-compress-all -DSTRATA_SHARED_LIBS=ON -DSTRATA_GEMM=eigen -DSTRATA_BENCH_OPENBLAS=OFF -DSTRATA_DNNL=OFF \
  -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags" ${STRATA_CMAKE_ARGS:-} >/dev/null

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
SRC_BINS=("$BUILD/bin/strata-train" "$BUILD/bin/strata-bench" "$BUILD/bin/strata-pack" "$BUILD/bin/strata-inspect")
for b in "${TEST_BINS[@]}"; do SRC_BINS+=("$BUILD/tests/$b"); done
cp "${SRC_BINS[@]}" "$OUT/bin/"
cp "$BUILD/gpu-tests.list" "$OUT/tests.list"
cp scripts/gpu-check.sh scripts/gpu-train-check.sh scripts/gpu-run.sh "$OUT/"
mkdir -p "$OUT/configs" && cp configs/*.yaml "$OUT/configs/"
# which code the report describes
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' with uncommitted changes')" >"$OUT/VERSION"

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
    # glibc's own libraries (libresolv among them: this machine's glibc 2.36 copy
    # must not stand in for the GPU machine's)
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libutil.so*|ld-linux*|linux-vdso*) return 0 ;;
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libcudnn*.so*|libnccl.so*|libnvToolsExt*|libnvrtc*) return 0 ;;
  esac
  return 1
}
# (read off the build tree's binaries: the copies find their libraries in lib/,
# which this fills)
for f in "${SRC_BINS[@]}"; do
  ldd "$f" | awk '/=> \//{print $1" "$3}' | while read -r name path; do
    is_system "$name" && continue
    [ -e "$OUT/lib/$name" ] || cp -L "$path" "$OUT/lib/$name"
  done
done

strip --strip-unneeded "$OUT"/bin/* "$OUT"/lib/*.so* 2>/dev/null || true
# each bundled library finds its own dependencies beside it: Debian's carry
# RUNPATHs of their own (Open MPI's), which override the binaries' RPATH for
# what they load, and point at folders the GPU machine does not have
for l in "$OUT"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$l"; done
# every binary finds the bundle's libraries through its RPATH, not this machine's
for f in "$OUT"/bin/*; do
  [ "$(head -c4 "$f" | tail -c3)" = "ELF" ] || continue
  stray=$(env -u LD_LIBRARY_PATH ldd "$f" | awk '/=> \//{print $1" "$3} /not found/{print $1" (not found)"}' |
    while read -r name path; do
      is_system "$name" || case "$(realpath -m "$path")" in "$OUT"/lib/*) ;; *) echo "$name -> $path" ;; esac
    done)
  [ -z "$stray" ] || { echo "[gpu-bundle] $(basename "$f") loads libraries from outside the bundle: $stray" >&2; exit 1; }
done
mkdir -p "$(dirname "$ARCHIVE")"
tar -C "$BUILD" --owner=0 --group=0 -cf - strata-gpu | xz -T0 -6 >"$ARCHIVE.tmp"
mv "$ARCHIVE.tmp" "$ARCHIVE"
staged_mib=$(( $(du -sb "$OUT" | cut -f1) / 1048576 ))
size_mib=$(( $(stat -c %s "$ARCHIVE") / 1048576 ))
echo "[gpu-bundle] $ARCHIVE: $(ls "$OUT/bin" | wc -l) binaries, $(ls "$OUT/lib" | wc -l) libraries, ${staged_mib} MiB packed into ${size_mib} MiB"
if [ "$size_mib" -ge "$LIMIT_MIB" ]; then
  echo "[gpu-bundle] $ARCHIVE is ${size_mib} MiB, over the ${LIMIT_MIB} MiB left for it beside the tree" >&2
  du -sh "$OUT"/bin/* "$OUT"/lib/* | sort -h | tail -8 >&2
  exit 1
fi
