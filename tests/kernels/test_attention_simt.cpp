// The CUDA attention kernels themselves (attention_{forward,backward}_kernel.cuh),
// compiled for the host and run with one std::thread per CUDA thread: blocks of
// 128 threads, __syncthreads() as a std::barrier, warp shuffles through a per-warp
// exchange, atomicAdd as std::atomic_ref, shared memory pre-filled with NaN bytes,
// and nvcuda::wmma emulated by its documented semantics (a 16x16 tile loaded
// with the given layout and ldm, FP32 accumulate). This checks the kernels' own
// indexing, padding, masking, tile loops and barriers against the reference in
// f32, f16 and bf16 -- everything but the GPU's hardware itself. It needs the
// CUDA headers (half types), so it runs in CUDA builds.
#include <gtest/gtest.h>

#ifdef STRATA_HAVE_CUDA
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "elementwise_error.h"
#include "kernels/backends.h"

namespace sim {
struct Dim {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Dim thread_idx;
inline Dim block_idx, block_dim{128, 1, 1}, grid_dim;
inline std::unique_ptr<std::barrier<>> block_barrier, warp_barrier[4];
inline float warp_buf[4][32];

inline void syncthreads() { block_barrier->arrive_and_wait(); }
inline unsigned lane() { return thread_idx.x % 32; }
inline void syncwarp() { warp_barrier[thread_idx.x / 32]->arrive_and_wait(); }
inline float shfl_xor(float v, int o) {
  unsigned w = thread_idx.x / 32;
  warp_buf[w][lane()] = v;
  syncwarp();
  float r = warp_buf[w][lane() ^ static_cast<unsigned>(o)];
  syncwarp();
  return r;
}
inline float atomic_add(float* p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }

template <typename T>
float widen(T x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else if constexpr (std::is_same_v<T, __half>)
    return __half2float(x);
  else
    return __bfloat162float(x);
}
}  // namespace sim

// WMMA by its documented semantics; lane 0 of each warp does the warp's work.
namespace nvcuda::wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  float x[16][16];
};
template <typename T>
void load_tile(float (&x)[16][16], const T* p, unsigned ldm, bool row_major) {
  if (sim::lane() == 0)
    for (unsigned r = 0; r < 16; ++r)
      for (unsigned c = 0; c < 16; ++c) x[r][c] = sim::widen(row_major ? p[r * ldm + c] : p[c * ldm + r]);
  sim::syncwarp();
}
template <typename Use, typename T, typename L>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm) {
  load_tile(f.x, p, ldm, std::is_same_v<L, row_major>);
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm,
                             layout_t layout) {
  load_tile(f.x, p, ldm, layout == mem_row_major);
}
inline void fill_fragment(fragment<accumulator, 16, 16, 16, float>& f, float v) {
  for (auto& row : f.x)
    for (auto& e : row) e = v;
}
template <typename A, typename B>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const A& a, const B& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
  if (sim::lane() == 0)
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 16; ++n) {
        float s = c.x[r][n];
        for (int k = 0; k < 16; ++k) s += a.x[r][k] * b.x[k][n];
        d.x[r][n] = s;
      }
  sim::syncwarp();
}
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm,
                              layout_t layout) {
  if (sim::lane() == 0)
    for (unsigned r = 0; r < 16; ++r)
      for (unsigned c = 0; c < 16; ++c)
        (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[r][c];
  sim::syncwarp();
}
}  // namespace nvcuda::wmma

// The CUDA keywords and built-ins, as the host sees them here.
#undef __global__
#undef __device__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
#define threadIdx sim::thread_idx
#define blockIdx sim::block_idx
#define blockDim sim::block_dim
#define gridDim sim::grid_dim
#define __syncthreads() sim::syncthreads()
#define __shfl_xor_sync(mask, v, o) sim::shfl_xor(v, o)
#define atomicAdd(p, v) sim::atomic_add(p, v)

#include "kernels/cuda/attention_backward_kernel.cuh"
#include "kernels/cuda/attention_forward_kernel.cuh"
#include "kernels/cuda/attention_launch.cuh"  // by_head_dim: the launchers' choice of configuration

namespace strata::cuda::attn_kernels {
alignas(128) unsigned char smem[attn::kSmemLimitSm90];  // the kernels' extern __shared__
}

namespace strata {
namespace {

using cuda::attn_tile::Params;

// Runs kernel() over the grid, one block at a time, on 128 threads that stay for
// the whole launch (a gate between blocks); shared memory starts as NaN bytes.
template <typename Fn>
void launch(unsigned gx, unsigned gy, Fn kernel) {
  sim::grid_dim = {gx, gy, 1};
  sim::block_barrier = std::make_unique<std::barrier<>>(128);
  for (auto& w : sim::warp_barrier) w = std::make_unique<std::barrier<>>(32);
  std::barrier<> gate(128);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 128; ++t)
    threads.emplace_back([t, gx, gy, &kernel, &gate] {
      sim::thread_idx = {t, 0, 0};
      for (unsigned y = 0; y < gy; ++y)
        for (unsigned x = 0; x < gx; ++x) {
          if (t == 0) {
            sim::block_idx = {x, y, 0};
            std::memset(cuda::attn_kernels::smem, 0xFF, sizeof(cuda::attn_kernels::smem));
          }
          gate.arrive_and_wait();
          kernel();
          gate.arrive_and_wait();
        }
    });
  for (auto& t : threads) t.join();
}

template <typename T>
T narrow(double v) {
  if constexpr (std::is_same_v<T, float>)
    return static_cast<float>(v);
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(static_cast<float>(v));
  else
    return __float2bfloat16_rn(static_cast<float>(v));
}

struct Shape3 {
  int64_t t;
  int d, dv;
};

// One problem through the forward, delta and backward kernels with the tiles the
// launchers pick: full, or compact (devices with 99 KiB of shared memory).
template <typename T, bool kCompact>
void run_case(Shape3 s, double tol) {
  const int64_t t = s.t, heads = t <= 40 ? 2 : 1;  // two heads where it is cheap
  std::mt19937_64 rng(t * 7 + s.d);
  std::uniform_real_distribution<double> u(-1, 1);
  auto draw = [&](size_t n, std::vector<T>& dev, std::vector<double>& ref) {
    dev.resize(n), ref.resize(n);
    for (size_t i = 0; i < n; ++i) ref[i] = sim::widen(dev[i] = narrow<T>(u(rng)));
  };
  size_t nq = heads * t * s.d, nv = heads * t * s.dv;
  std::vector<T> q, k, v, go;
  std::vector<double> rq, rk, rv, rgo;
  draw(nq, q, rq), draw(nq, k, rk), draw(nv, v, rv), draw(nv, go, rgo);

  Shape qs{1, heads, t, s.d}, vs{1, heads, t, s.dv}, ls{1, heads, t};
  std::vector<double> o_ref(nv), lse_ref(heads * t), dq_ref(nq), dk_ref(nq), dv_ref(nv);
  TensorView rin[3] = {{rq.data(), DType::f64, qs}, {rk.data(), DType::f64, qs}, {rv.data(), DType::f64, vs}};
  TensorView rout[2] = {{o_ref.data(), DType::f64, vs}, {lse_ref.data(), DType::f64, ls}};
  TensorView rgin[3] = {
      {dq_ref.data(), DType::f64, qs}, {dk_ref.data(), DType::f64, qs}, {dv_ref.data(), DType::f64, vs}};
  const auto& ref = reference_backend().ops[static_cast<size_t>(Op::attention)];
  ref.forward(OpAttrs{}, rin, rout);
  ref.backward(OpAttrs{}, rin, rout, TensorView{rgo.data(), DType::f64, vs}, rgin);

  std::vector<T> o(nv, narrow<T>(NAN)), dq(nq, narrow<T>(NAN)), dk(nq, narrow<T>(NAN)),
      dv(nv, narrow<T>(NAN));
  std::vector<float> lse(heads * t, NAN), delta(heads * t, NAN), dq_acc(nq, 0.0f);
  Params<T> p{};
  p.q = q.data(), p.k = k.data(), p.v = v.data(), p.o = o.data(), p.dout = go.data();
  p.out = o.data(), p.dq = dq.data(), p.dk = dk.data(), p.dv = dv.data();
  p.lse = lse.data(), p.delta = delta.data(), p.dq_acc = dq_acc.data();
  p.t = t, p.d = s.d, p.dv_dim = s.dv, p.scale = static_cast<float>(1 / std::sqrt(double(s.d)));
  cuda::attn_launch::by_head_dim(s.d, s.dv, [&](auto dmax, auto fixed) {
    constexpr int kDMax = decltype(dmax)::value, kFixed = decltype(fixed)::value;
    constexpr attn::Tile ft = attn::forward_tile(sizeof(T), kDMax, kCompact),
                         bt = attn::backward_tile(sizeof(T), kDMax, kCompact);
    launch(heads, attn::ceil_div(t, ft.br),
           [&] { cuda::attn_kernels::attn_forward_kernel<T, kDMax, kFixed, kCompact>(p); });
    launch(attn::ceil_div(heads * t, 4), 1,
           [&] { cuda::attn_kernels::attn_delta_kernel<T>(p.o, p.dout, p.delta, heads * t, s.dv); });
    launch(heads, attn::ceil_div(t, bt.bc),
           [&] { cuda::attn_kernels::attn_backward_kernel<T, kDMax, kFixed, kCompact>(p); });
  });
  for (size_t i = 0; i < nq; ++i) dq[i] = narrow<T>(dq_acc[i]);  // the narrow pass

  auto wide = [](const auto& x) {
    std::vector<double> r(x.size());
    for (size_t i = 0; i < x.size(); ++i) r[i] = sim::widen(x[i]);
    return r;
  };
  EXPECT_LE(strata::testing::elementwise_error(wide(o), o_ref), tol) << "output";
  EXPECT_LE(strata::testing::elementwise_error(wide(lse), lse_ref), tol) << "lse";
  EXPECT_LE(strata::testing::elementwise_error(wide(dq), dq_ref), 2 * tol) << "dQ";
  EXPECT_LE(strata::testing::elementwise_error(wide(dk), dk_ref), 2 * tol) << "dK";
  EXPECT_LE(strata::testing::elementwise_error(wide(dv), dv_ref), 2 * tol) << "dV";
}

const Shape3 kShapes[] = {{1, 8, 8},      {37, 16, 16}, {6, 3, 5},    {67, 64, 64},
                          {45, 128, 128}, {70, 72, 40}, {130, 64, 64}};

TEST(AttentionSimt, F32KernelsMatchReference) {
  for (Shape3 s : kShapes) {
    SCOPED_TRACE("t " + std::to_string(s.t) + " d " + std::to_string(s.d) + " dv " + std::to_string(s.dv));
    run_case<float, false>(s, 2e-5);
    run_case<float, true>(s, 2e-5);
  }
}
TEST(AttentionSimt, F16KernelsMatchReference) {
  for (Shape3 s : kShapes) {
    SCOPED_TRACE("t " + std::to_string(s.t) + " d " + std::to_string(s.d) + " dv " + std::to_string(s.dv));
    run_case<__half, false>(s, 4e-3);
    run_case<__half, true>(s, 4e-3);
  }
}
TEST(AttentionSimt, Bf16KernelsMatchReference) {
  for (Shape3 s : kShapes) {
    SCOPED_TRACE("t " + std::to_string(s.t) + " d " + std::to_string(s.d) + " dv " + std::to_string(s.dv));
    run_case<__nv_bfloat16, false>(s, 3e-2);
    run_case<__nv_bfloat16, true>(s, 3e-2);
  }
}

}  // namespace
}  // namespace strata

#else
TEST(AttentionSimt, NeedsCudaHeaders) {
  GTEST_SKIP() << "built without CUDA: the kernels' half types are not here";
}
#endif
