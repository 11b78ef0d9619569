// strata-bench gemm --device cuda: square GEMM throughput on the GPU in fp32,
// fp16 and bf16 (4096^3 and 8192^3 by default) through strata's path -- the op
// table's matmul (kernel_forward -> cuda::matmul_forward -> gemm_plan ->
// cuBLASLt) on device TensorViews -- beside a direct cublasLtMatmul written here
// (own handle and 32 MiB workspace, the same stream, FP32 compute, heuristic's
// first algorithm) and beside torch.matmul when `import torch` works (a small
// Python snippet run in a child process, TF32 off as here). fp32 is strict FP32
// on both sides (no TF32). Timing: cudaEvents around each call after warm-up,
// median of --reps runs; every wait on the GPU is a poll with a deadline, so a
// hung device ends the bench with an error instead of blocking it. The peak
// column is the dense Tensor Core (fp16/bf16) or CUDA-core (fp32) rate at the
// reported maximum clock for sm_80 and sm_90; sustained clocks under load are
// lower. Without a device it prints "SKIPPED: <reason>" and exits 0.
#include "gemm_cuda.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda/runtime.h"

namespace strata::bench {

int gemm_cuda(const GpuGemmOptions& o) {
  auto st = cuda::device_status();
  if (st.device_count == 0) {
    std::printf("SKIPPED: %s\n", st.reason.c_str());
    return 0;
  }
#if STRATA_HAVE_CUDA
  return run_gpu_gemm_bench(o);
#else
  std::printf("SKIPPED: strata was built without the CUDA backend\n");
  return 0;
#endif
}

}  // namespace strata::bench
