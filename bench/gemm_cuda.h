// strata-bench gemm --device cuda: options and the pieces of bench/gemm_cuda*.cpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strata::bench {

struct GpuGemmOptions {
  std::vector<int64_t> sizes = {4096, 8192};
  std::vector<std::string> dtypes = {"fp32", "fp16", "bf16"};
  int warmup = 3, reps = 10;
  bool torch = true;
};

// strata-bench gemm --device cuda with these options (gemm_cuda.cpp); bench/gemm.cpp parses them.
int gemm_cuda(const GpuGemmOptions& o);

// The measurement on the device (gemm_cuda_run.cpp; built with the CUDA backend).
int run_gpu_gemm_bench(const GpuGemmOptions& o);

// torch.matmul's median ms per (dtype, n), from a Python child process; empty
// with `why` set when PyTorch or its CUDA is not there (gemm_cuda_torch.cpp).
std::map<std::pair<std::string, int64_t>, double> torch_matmul_ms(const GpuGemmOptions& o, std::string& why);

}  // namespace strata::bench
