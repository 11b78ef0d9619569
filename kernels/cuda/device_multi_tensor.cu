// CUDA multi-tensor device ops: sum_of_squares, unscale_found_inf, sgd_step and
// adamw_step each take any number of tensors in ONE launch (multi-tensor apply,
// as apex and PyTorch's _foreach kernels do). The host cuts every tensor into
// chunks of kChunk elements (launch::multi_tensor_chunks); a small descriptor
// array (one record per tensor, one per chunk) goes to the device in a single
// copy, and block b walks chunk b. Per element the math is the shared scalar
// math (math::unscale, math::sgd_update, math::adamw_update); gradients may be
// f32, f16 or bf16 (a per-tensor dtype in the record, uniform within a block).
// Each element is read and written once. sum_of_squares writes one double
// partial per chunk, then a single block adds the partials in a fixed order:
// the result is deterministic, with no atomics.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/device_ops_backends.h"
#include "kernels/launch_shape.h"
#include "kernels/scalar_math.h"

namespace strata::cuda_dev {
namespace {

using cuda::context;
using launch::Chunk;

constexpr int64_t kChunk = 1 << 16;  // elements per block: 256 per thread
constexpr int kThreads = launch::kThreads;

// One tensor of a multi-tensor call: x is the tensor walked (the gradient, or the
// parameter of an optimizer step), dt the dtype of `g`.
struct TensorRef {
  void* x = nullptr;
  const void* g = nullptr;
  float* s1 = nullptr;
  float* s2 = nullptr;
  int64_t n = 0;
  DType dt = DType::f32;
};

__device__ __forceinline__ float load_dt(const void* p, DType dt, int64_t i) {
  switch (dt) {
    case DType::f16:
      return cuda::load(static_cast<const __half*>(p), i);
    case DType::bf16:
      return cuda::load(static_cast<const __nv_bfloat16*>(p), i);
    default:
      return cuda::load(static_cast<const float*>(p), i);
  }
}
__device__ __forceinline__ void store_dt(void* p, DType dt, int64_t i, float v) {
  switch (dt) {
    case DType::f16:
      return cuda::store(static_cast<__half*>(p), i, v);
    case DType::bf16:
      return cuda::store(static_cast<__nv_bfloat16*>(p), i, v);
    default:
      return cuda::store(static_cast<float*>(p), i, v);
  }
}

// The descriptors of one launch in device memory (stream-ordered scratch).
class Descriptors {
 public:
  explicit Descriptors(const std::vector<TensorRef>& refs) {
    std::vector<int64_t> numels;
    for (const auto& r : refs) numels.push_back(r.n);
    std::vector<Chunk> chunks = launch::multi_tensor_chunks(numels, kChunk);
    blocks_ = static_cast<int64_t>(chunks.size());
    if (blocks_ == 0) return;
    size_t ref_bytes = (refs.size() * sizeof(TensorRef) + 15) / 16 * 16;
    size_t total = ref_bytes + chunks.size() * sizeof(Chunk);
    std::vector<unsigned char> host(total);
    std::memcpy(host.data(), refs.data(), refs.size() * sizeof(TensorRef));
    std::memcpy(host.data() + ref_bytes, chunks.data(), chunks.size() * sizeof(Chunk));
    mem_ = std::make_unique<cuda::Scratch>(total);
    // a pageable source is staged before the call returns, so `host` may go
    STRATA_CUDA_CHECK(
        cudaMemcpyAsync(mem_->data(), host.data(), total, cudaMemcpyHostToDevice, context().stream));
    refs_ = mem_->as<TensorRef>();
    chunks_ = reinterpret_cast<const Chunk*>(mem_->as<unsigned char>() + ref_bytes);
  }
  int64_t blocks() const { return blocks_; }
  const TensorRef* refs() const { return refs_; }
  const Chunk* chunks() const { return chunks_; }

 private:
  std::unique_ptr<cuda::Scratch> mem_;
  const TensorRef* refs_ = nullptr;
  const Chunk* chunks_ = nullptr;
  int64_t blocks_ = 0;
};

// ---- kernels -------------------------------------------------------------------

__global__ void sum_of_squares_partial(const TensorRef* refs, const Chunk* chunks, double* partial) {
  Chunk c = chunks[blockIdx.x];
  TensorRef r = refs[c.tensor];
  double acc = 0;
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    double v = load_dt(r.x, r.dt, i);
    acc += v * v;
  }
  acc = cuda::block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// One block: out += the partials, added in a fixed order.
__global__ void sum_of_squares_final(const double* partial, int64_t n, float* out) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
  acc = cuda::block_sum(acc);
  if (threadIdx.x == 0) out[0] = static_cast<float>(static_cast<double>(out[0]) + acc);
}

__global__ void unscale_kernel(const TensorRef* refs, const Chunk* chunks, float inv_scale,
                               float* found_inf) {
  Chunk c = chunks[blockIdx.x];
  TensorRef r = refs[c.tensor];
  bool bad = false;
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    float g = load_dt(r.x, r.dt, i);
    bad |= !math::unscale(g, inv_scale);
    store_dt(r.x, r.dt, i, g);
  }
  if (bad) *found_inf = 1.0f;  // every writer writes the same value
}

__global__ void sgd_kernel(const TensorRef* refs, const Chunk* chunks, dev::SgdStep s, float grad_scale) {
  Chunk c = chunks[blockIdx.x];
  TensorRef r = refs[c.tensor];
  float* w = static_cast<float*>(r.x);
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    float wi = w[i], g = load_dt(r.g, r.dt, i) * grad_scale;
    float buf = r.s1 ? r.s1[i] : 0.0f;
    math::sgd_update(wi, g, buf, s.lr, s.momentum, s.dampening, s.weight_decay, s.nesterov, s.first_step);
    w[i] = wi;
    if (r.s1) r.s1[i] = buf;
  }
}

__global__ void adamw_kernel(const TensorRef* refs, const Chunk* chunks, dev::AdamWStep s, float grad_scale) {
  Chunk c = chunks[blockIdx.x];
  TensorRef r = refs[c.tensor];
  float* w = static_cast<float*>(r.x);
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    float wi = w[i], g = load_dt(r.g, r.dt, i) * grad_scale, m = r.s1[i], v = r.s2[i];
    math::adamw_update(wi, g, m, v, s.decay, s.beta2, s.one_minus_beta1, s.one_minus_beta2, s.eps,
                       s.step_size, s.bc2_sqrt);
    w[i] = wi;
    r.s1[i] = m;
    r.s2[i] = v;
  }
}

// ---- checks ----------------------------------------------------------------------

[[noreturn]] void bad(const char* op, size_t i, const std::string& what) {
  throw Error(std::string("cuda_dev::") + op + ": tensor " + std::to_string(i) + ": " + what);
}
void check_view(const TensorView& v, const char* op, size_t i, const char* name, bool f32_only) {
  if (!v.defined()) bad(op, i, std::string(name) + " is undefined");
  if (v.device != Device::cuda) bad(op, i, std::string(name) + " is on " + device_name(v.device));
  if (f32_only ? v.dtype != DType::f32 : (v.dtype != DType::f32 && !is_half(v.dtype)))
    bad(op, i, std::string(name) + " has dtype " + dtype_name(v.dtype));
}
void check_same(const TensorView& a, const TensorView& b, const char* op, size_t i, const char* name) {
  if (a.numel() != b.numel())
    bad(op, i, std::string(name) + " " + shape_str(b.shape) + " differs from " + shape_str(a.shape));
}
void check_scalar(const TensorView& v, const char* op, const char* name) {
  if (!v.defined() || v.device != Device::cuda || v.dtype != DType::f32 || v.numel() != 1)
    throw Error(std::string("cuda_dev::") + op + ": " + name + " must be an f32 scalar on cuda");
}

// One-tensor refs of the f32/half tensors xs[0..n) (sum_of_squares, unscale);
// an undefined one (a parameter without a gradient) is skipped, as on the CPU.
std::vector<TensorRef> single_refs(const TensorView* xs, size_t n, const char* op, const char* name) {
  std::vector<TensorRef> refs(n);
  for (size_t i = 0; i < n; ++i) {
    if (!xs[i].defined()) continue;
    check_view(xs[i], op, i, name, false);
    refs[i] = {xs[i].data, nullptr, nullptr, nullptr, xs[i].numel(), xs[i].dtype};
  }
  return refs;
}

}  // namespace

// ---- launchers -------------------------------------------------------------------

void sum_of_squares(const TensorView* xs, size_t n, const TensorView& out) {
  check_scalar(out, "sum_of_squares", "out");
  Descriptors d(single_refs(xs, n, "sum_of_squares", "x"));
  if (d.blocks() == 0) return;
  cudaStream_t s = context().stream;
  cuda::Scratch partial(static_cast<size_t>(d.blocks()) * sizeof(double));
  STRATA_LAUNCH(static_cast<unsigned>(d.blocks()), kThreads, 0, s, sum_of_squares_partial)
  (d.refs(), d.chunks(), partial.as<double>());
  STRATA_CUDA_LAUNCH_CHECK();
  STRATA_LAUNCH(1, 1024, 0, s, sum_of_squares_final)
  (partial.as<double>(), d.blocks(), static_cast<float*>(out.data));
  STRATA_CUDA_LAUNCH_CHECK();
}

void unscale_found_inf(const TensorView* grads, size_t n, float inv_scale, const TensorView& found_inf) {
  check_scalar(found_inf, "unscale_found_inf", "found_inf");
  Descriptors d(single_refs(grads, n, "unscale_found_inf", "grad"));
  if (d.blocks() == 0) return;
  STRATA_LAUNCH(static_cast<unsigned>(d.blocks()), kThreads, 0, context().stream, unscale_kernel)
  (d.refs(), d.chunks(), inv_scale, static_cast<float*>(found_inf.data));
  STRATA_CUDA_LAUNCH_CHECK();
}

void sgd_step(const TensorView* w, const TensorView* g, const TensorView* buf, size_t n,
              const dev::SgdStep& s, float grad_scale) {
  std::vector<TensorRef> refs(n);
  for (size_t i = 0; i < n; ++i) {
    check_view(w[i], "sgd_step", i, "w", true);
    check_view(g[i], "sgd_step", i, "g", false);
    check_same(w[i], g[i], "sgd_step", i, "g");
    float* b = nullptr;
    if (s.momentum != 0.0f) {
      if (!buf) bad("sgd_step", i, "momentum needs a buffer");
      check_view(buf[i], "sgd_step", i, "buf", true);
      check_same(w[i], buf[i], "sgd_step", i, "buf");
      b = static_cast<float*>(buf[i].data);
    }
    refs[i] = {w[i].data, g[i].data, b, nullptr, w[i].numel(), g[i].dtype};
  }
  Descriptors d(refs);
  if (d.blocks() == 0) return;
  STRATA_LAUNCH(static_cast<unsigned>(d.blocks()), kThreads, 0, context().stream, sgd_kernel)
  (d.refs(), d.chunks(), s, grad_scale);
  STRATA_CUDA_LAUNCH_CHECK();
}

void adamw_step(const TensorView* w, const TensorView* g, const TensorView* m, const TensorView* v, size_t n,
                const dev::AdamWStep& s, float grad_scale) {
  std::vector<TensorRef> refs(n);
  for (size_t i = 0; i < n; ++i) {
    check_view(w[i], "adamw_step", i, "w", true);
    check_view(g[i], "adamw_step", i, "g", false);
    check_view(m[i], "adamw_step", i, "m", true);
    check_view(v[i], "adamw_step", i, "v", true);
    check_same(w[i], g[i], "adamw_step", i, "g");
    check_same(w[i], m[i], "adamw_step", i, "m");
    check_same(w[i], v[i], "adamw_step", i, "v");
    refs[i] = {w[i].data,    g[i].data, static_cast<float*>(m[i].data), static_cast<float*>(v[i].data),
               w[i].numel(), g[i].dtype};
  }
  Descriptors d(refs);
  if (d.blocks() == 0) return;
  STRATA_LAUNCH(static_cast<unsigned>(d.blocks()), kThreads, 0, context().stream, adamw_kernel)
  (d.refs(), d.chunks(), s, grad_scale);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::cuda_dev
