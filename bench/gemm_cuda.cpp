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

#include "bench_args.h"
#include "kernels/cuda/runtime.h"

namespace strata::bench {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> r;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string tok = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!tok.empty()) r.push_back(tok);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return r;
}

int usage() {
  std::fprintf(stderr,
               "usage: strata-bench gemm --device cuda [--sizes 4096,8192] [--dtypes fp32,fp16,bf16] "
               "[--warmup N] [--reps N] [--no-torch]\n");
  return 2;
}

}  // namespace

int gemm_cuda(const std::vector<std::string>& args) {
  GpuGemmOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    if (a == "--device" && has_value && args[i + 1] == "cuda")
      ++i;
    else if (a == "--sizes" && has_value) {
      o.sizes.clear();
      for (auto& t : split(args[++i])) o.sizes.push_back(std::stoll(t));
    } else if (a == "--dtypes" && has_value)
      o.dtypes = split(args[++i]);
    else if (a == "--warmup" && has_value)
      o.warmup = std::stoi(args[++i]);
    else if (a == "--reps" && has_value)
      o.reps = std::max(1, std::stoi(args[++i]));
    else if (a == "--no-torch")
      o.torch = false;
    else
      return usage();
  }
  for (auto& d : o.dtypes)
    if (d != "fp32" && d != "fp16" && d != "bf16") return usage();
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
