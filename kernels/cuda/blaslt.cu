// The cuBLASLt wrapper (see blaslt.h). A plan call becomes one cublasLtMatmul:
// its descriptors (matmul, and A/B/C layouts with batch count and strided-batch
// offsets) and the heuristic's algorithm are built once per problem key and kept
// for the process, so a training step pays only a map lookup and the launch. The
// heuristic sees the real operand alignments (PREF_MIN_ALIGNMENT_*), so an
// offset batch matrix or a 2-byte-aligned half view gets an algorithm that is
// valid for it rather than one that assumes 256 bytes.
#include <cublasLt.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/error.h"
#include "kernels/cuda/blaslt.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/gemm_epilogue.h"

namespace strata::cuda::blaslt {
namespace {

using gemm::Epilogue;
using gemm::GemmCall;
using gemm::GemmPlan;

// cuBLASLt's fused epilogues want a 16-byte aligned bias vector (a less aligned
// one is reported to fail on A100); such a bias goes to the separate kernel.
constexpr int kBiasAlignment = 16;

cudaDataType_t cuda_type(DType dt, const char* op) {
  switch (dt) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      throw Error(std::string(op) + ": the CUDA GEMM takes f32, f16 or bf16 storage, got " + dtype_name(dt));
  }
}

cublasLtEpilogue_t lt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::none:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::bias:
      return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::gelu:
      return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::gelu_bias:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
    case Epilogue::bias_grad:
      return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// Largest power of two (up to 256) dividing the address.
int64_t alignment(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  int64_t al = 256;
  while (al > 1 && (a % static_cast<uintptr_t>(al)) != 0) al /= 2;
  return al;
}

// Descriptors and algorithm of one problem; lives for the process.
struct Entry {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;  // the heuristic returned an algorithm
};

using Key = std::array<int64_t, 20>;

struct Cache {
  std::mutex mu;
  std::map<Key, std::unique_ptr<Entry>> entries;
  size_t fallbacks = 0;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: kernels may run until exit
  return *c;
}

template <typename T>
void set_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, T v) {
  STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, attr, &v, sizeof(v)));
}
template <typename T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, T v) {
  STRATA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)));
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                   int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  STRATA_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    set_layout(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<int32_t>(batch));
    set_layout(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
  }
  return l;
}

// Builds the descriptors of (plan, call) with epilogue `e` and asks the heuristic.
std::unique_ptr<Entry> make_entry(const GemmPlan& p, const GemmCall& call, cudaDataType_t t,
                                  cublasComputeType_t compute, Epilogue e,
                                  const std::array<int64_t, 4>& align, const void* bias) {
  Context& ctx = context();
  auto en = std::make_unique<Entry>();
  STRATA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&en->desc, compute, CUDA_R_32F));
  set_desc(en->desc, CUBLASLT_MATMUL_DESC_TRANSA, p.transa ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(en->desc, CUBLASLT_MATMUL_DESC_TRANSB, p.transb ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(en->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(e));
  if (e != Epilogue::none && e != Epilogue::gelu) {
    set_desc(en->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(t));
    set_desc(en->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);  // its alignment guides the heuristic
  }
  // A = Y stored [rows_a, cols], B = X, C = D [m, n]; strides per the call
  en->a = make_layout(t, p.rows_a(), p.transa ? p.m : p.k, p.lda, call.batch, call.stride_y);
  en->b = make_layout(t, p.rows_b(), p.transb ? p.k : p.n, p.ldb, call.batch, call.stride_x);
  en->c = make_layout(t, p.m, p.n, p.ldc, call.batch, call.stride_c);

  cublasLtMatmulPreference_t pref = nullptr;
  STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto v) {
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof(v)));
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(ctx.blaslt_workspace_bytes));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<uint32_t>(align[0]));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<uint32_t>(align[1]));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<uint32_t>(align[2]));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<uint32_t>(align[2]));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(ctx.blaslt, en->desc, en->a, en->b, en->c, en->c, pref, 1,
                                                    &result, &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  // NOT_SUPPORTED and no result both mean "no algorithm for this epilogue/layout"
  if (s == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    en->algo = result.algo;
    en->found = true;
  } else if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) {
    STRATA_CUBLAS_CHECK(s);
  }
  return en;
}

Entry& entry_for(const GemmPlan& p, const GemmCall& call, DType dt, cublasComputeType_t compute, Epilogue e,
                 const std::array<int64_t, 4>& align, const void* bias, const char* op) {
  Context& ctx = context();
  Key key = {ctx.device,
             static_cast<int64_t>(dt),
             static_cast<int64_t>(compute),
             p.transa,
             p.transb,
             p.m,
             p.n,
             p.k,
             p.lda,
             p.ldb,
             p.ldc,
             call.batch,
             call.stride_x,
             call.stride_y,
             call.stride_c,
             int64_t(e),
             align[0],
             align[1],
             align[2],
             align[3]};
  auto& slot = cache().entries[key];
  if (!slot) slot = make_entry(p, call, cuda_type(dt, op), compute, e, align, bias);
  return *slot;
}

void matmul(Entry& en, const void* a, const void* b, void* c, float beta) {
  Context& ctx = context();
  const float alpha = 1.0f;
  STRATA_CUBLAS_CHECK(cublasLtMatmul(ctx.blaslt, en.desc, &alpha, a, en.a, b, en.b, &beta, c, en.c, c, en.c,
                                     &en.algo, ctx.blaslt_workspace, ctx.blaslt_workspace_bytes, ctx.stream));
}

// One call of the plan (the cache lock held). A strided batch no algorithm
// takes runs as its single products instead.
void run_call(const GemmPlan& p, const GemmCall& call, DType dt, cublasComputeType_t compute,
              const Operands& o, const char* op) {
  const size_t es = dtype_size(dt);
  const Epilogue e = p.epilogue;
  const bool wants_bias = gemm::epilogue_has_bias(e), wants_bgrad = e == Epilogue::bias_grad;
  const void* bias_ptr = wants_bgrad ? o.bias_grad : o.bias;
  const char* a = static_cast<const char*>(o.y) + call.off_y * es;
  const char* b = static_cast<const char*>(o.x) + call.off_x * es;
  char* c = static_cast<char*>(o.c) + call.off_c * es;
  const int64_t bias_align = e == Epilogue::none || e == Epilogue::gelu ? 256 : alignment(bias_ptr);
  const std::array<int64_t, 4> align = {alignment(a), alignment(b), alignment(c), bias_align};
  // a bias off 16 bytes: the plain GEMM, then the epilogue as a kernel (GELU must follow the bias)
  Epilogue fused = bias_align < kBiasAlignment ? Epilogue::none : e;
  Entry* en = &entry_for(p, call, dt, compute, fused, align, bias_ptr, op);
  if (!en->found && fused != Epilogue::none) {  // no algorithm fuses it: plain GEMM + kernel
    fused = Epilogue::none;
    en = &entry_for(p, call, dt, compute, fused, align, bias_ptr, op);
  }
  if (!en->found && call.batch > 1) {
    for (int64_t i = 0; i < call.batch; ++i)
      run_call(p,
               {.off_x = call.off_x + i * call.stride_x,
                .off_y = call.off_y + i * call.stride_y,
                .off_c = call.off_c + i * call.stride_c,
                .beta = call.beta},
               dt, compute, o, op);
    return;
  }
  if (!en->found)
    throw Error(std::string(op) + ": cuBLASLt has no algorithm for " + p.str() + " in " + dtype_name(dt));
  // a cached descriptor still holds the bias pointer of the call that created it
  if (fused != Epilogue::none && fused != Epilogue::gelu)
    set_desc(en->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr);
  matmul(*en, a, b, c, call.beta);
  if (fused != e) {
    ++cache().fallbacks;
    if (wants_bgrad)
      gemm_epilogue::bias_grad(p, o.x, o.bias_grad, dt);
    else
      gemm_epilogue::bias_act(p, call, o.c, wants_bias ? o.bias : nullptr, dt);  // bias and/or GELU
  }
}

}  // namespace

void run(const GemmPlan& p, DType dt, const Operands& o, const char* op) {
  gemm::check_plan(p, op);
  cuda_type(dt, op);  // rejects other dtypes before anything runs
  const Epilogue e = p.epilogue;
  const bool wants_bias = gemm::epilogue_has_bias(e), wants_bgrad = e == Epilogue::bias_grad;
  if ((wants_bias && !o.bias) || (wants_bgrad && !o.bias_grad))
    throw Error(std::string(op) + ": " + p.str() + " needs a bias pointer");
  if (p.m == 0 || p.n == 0) {
    if (wants_bgrad && p.n > 0) gemm_epilogue::bias_grad(p, o.x, o.bias_grad, dt);  // D empty, db not
    return;
  }
  if (p.k == 0) {  // D = beta C (+ bias, GELU); bias gradient over no rows = 0
    for (const GemmCall& call : p.calls) {
      gemm_epilogue::scale(p, call, o.c, dt);
      if (e != Epilogue::none && !wants_bgrad)
        gemm_epilogue::bias_act(p, call, o.c, wants_bias ? o.bias : nullptr, dt);
    }
    if (wants_bgrad) gemm_epilogue::bias_grad(p, o.x, o.bias_grad, dt);
    return;
  }
  const cublasComputeType_t compute =
      dt == DType::f32 && context().allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  std::lock_guard<std::mutex> lock(cache().mu);
  for (const GemmCall& call : p.calls) run_call(p, call, dt, compute, o, op);
}

CacheStats cache_stats() {
  Cache& ch = cache();
  std::lock_guard<std::mutex> lock(ch.mu);
  return {ch.entries.size(), ch.fallbacks};
}

}  // namespace strata::cuda::blaslt
