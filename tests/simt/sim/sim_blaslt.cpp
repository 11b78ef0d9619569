// cuBLASLt in the emulated backend (kernels/cuda/blaslt.h): the GEMM is a
// library call, so not emulated; the host computes it here, in the column-major
// terms of the plan (D = op(A) op(B) + beta C per call and batch entry, with
// A = Y, B = X, FP64 accumulation rounded once to the storage type). The
// epilogues then always take the path blaslt.cu takes when cuBLASLt cannot fuse
// them: the hand-written kernels of gemm_epilogue.cu, which run emulated.
#include <string>

#include "base/error.h"
#include "kernels/cuda/blaslt.h"
#include "kernels/cuda/gemm_epilogue.h"
#include "kernels/cuda/half_io.cuh"

namespace strata::cuda::blaslt {
namespace {

template <typename T>
void gemm(const gemm::GemmPlan& p, const gemm::GemmCall& call, const Operands& o) {
  const T* a0 = static_cast<const T*>(o.y) + call.off_y;
  const T* b0 = static_cast<const T*>(o.x) + call.off_x;
  T* c0 = static_cast<T*>(o.c) + call.off_c;
  for (int64_t bi = 0; bi < call.batch; ++bi) {
    const T* a = a0 + bi * call.stride_y;
    const T* b = b0 + bi * call.stride_x;
    T* c = c0 + bi * call.stride_c;
    for (int64_t j = 0; j < p.n; ++j)
      for (int64_t i = 0; i < p.m; ++i) {
        double s = 0;
        for (int64_t l = 0; l < p.k; ++l)
          s += double(to_float(a[gemm::op_element(p.transa, i, l, p.lda)])) *
               double(to_float(b[gemm::op_element(p.transb, l, j, p.ldb)]));
        T& d = c[gemm::col_major(i, j, p.ldc)];
        if (call.beta != 0.0f) s += double(call.beta) * double(to_float(d));
        d = from_float<T>(static_cast<float>(s));
      }
  }
}

}  // namespace

void run(const gemm::GemmPlan& p, DType dt, const Operands& o, const char* op) {
  gemm::check_plan(p, op);
  const gemm::Epilogue e = p.epilogue;
  const bool wants_bias = gemm::epilogue_has_bias(e), wants_bgrad = e == gemm::Epilogue::bias_grad;
  if ((wants_bias && !o.bias) || (wants_bgrad && !o.bias_grad))
    throw Error(std::string(op) + ": " + p.str() + " needs a bias pointer");
  if (p.m == 0 || p.n == 0) {
    if (wants_bgrad && p.n > 0) gemm_epilogue::bias_grad(p, o.x, o.bias_grad, dt);
    return;
  }
  dispatch_float(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (const gemm::GemmCall& call : p.calls) {
      if (p.k == 0)
        gemm_epilogue::scale(p, call, o.c, dt);
      else
        gemm<T>(p, call, o);
      if (e != gemm::Epilogue::none && !wants_bgrad)
        gemm_epilogue::bias_act(p, call, o.c, wants_bias ? o.bias : nullptr, dt);
    }
  });
  if (wants_bgrad) gemm_epilogue::bias_grad(p, o.x, o.bias_grad, dt);
}

CacheStats cache_stats() { return {}; }

}  // namespace strata::cuda::blaslt
