// The CUDA attention kernels themselves (attention_{forward,backward}_kernel.cuh)
// on the host SIMT emulator (tests/simt; this file is compiled with its
// cuda_host.h force-included), called directly with the tiles the launchers
// pick for full (227 KiB) and compact (99 KiB) shared memory, so both variants
// run, on odd shapes (head dims 3/5, 72/40; lengths off every tile) in f32, f16
// and bf16 against the f64 reference. The op suite (test_op_table_cuda_sim)
// reaches them through the launchers with the full tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "elementwise_error.h"
#include "kernels/backends.h"
#include "kernels/cuda/attention_backward_kernel.cuh"
#include "kernels/cuda/attention_forward_kernel.cuh"
#include "kernels/cuda/attention_launch.cuh"  // by_head_dim: the launchers' choice of configuration

namespace {
template <typename T>
float widen(T x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else if constexpr (std::is_same_v<T, __half>)
    return __half2float(x);
  else
    return __bfloat162float(x);
}
}  // namespace

namespace strata {
namespace {

using cuda::attn_tile::Params;

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
    for (size_t i = 0; i < n; ++i) ref[i] = widen(dev[i] = narrow<T>(u(rng)));
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
    const unsigned h = static_cast<unsigned>(heads);
    simt::launch("attn_forward_kernel", __FILE__, dim3(h, static_cast<unsigned>(attn::ceil_div(t, ft.br))),
                 dim3(attn::kThreads), attn::forward_smem(ft, sizeof(T)).total,
                 [&] { cuda::attn_kernels::attn_forward_kernel<T, kDMax, kFixed, kCompact>(p); });
    simt::launch("attn_delta_kernel", __FILE__, dim3(static_cast<unsigned>(attn::ceil_div(heads * t, 4))),
                 dim3(attn::kThreads), 0,
                 [&] { cuda::attn_kernels::attn_delta_kernel<T>(p.o, p.dout, p.delta, heads * t, s.dv); });
    simt::launch("attn_backward_kernel", __FILE__, dim3(h, static_cast<unsigned>(attn::ceil_div(t, bt.bc))),
                 dim3(attn::kThreads), attn::backward_smem(bt, sizeof(T)).total,
                 [&] { cuda::attn_kernels::attn_backward_kernel<T, kDMax, kFixed, kCompact>(p); });
  });
  for (size_t i = 0; i < nq; ++i) dq[i] = narrow<T>(dq_acc[i]);  // the narrow pass

  auto wide = [](const auto& x) {
    std::vector<double> r(x.size());
    for (size_t i = 0; i < x.size(); ++i) r[i] = widen(x[i]);
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

TEST(AttentionCudaSim, F32KernelsMatchReference) {
  for (Shape3 s : kShapes) {
    SCOPED_TRACE("t " + std::to_string(s.t) + " d " + std::to_string(s.d) + " dv " + std::to_string(s.dv));
    run_case<float, false>(s, 2e-5);
    run_case<float, true>(s, 2e-5);
  }
}
TEST(AttentionCudaSim, F16KernelsMatchReference) {
  for (Shape3 s : kShapes) {
    SCOPED_TRACE("t " + std::to_string(s.t) + " d " + std::to_string(s.d) + " dv " + std::to_string(s.dv));
    run_case<__half, false>(s, 4e-3);
    run_case<__half, true>(s, 4e-3);
  }
}
TEST(AttentionCudaSim, Bf16KernelsMatchReference) {
  for (Shape3 s : kShapes) {
    SCOPED_TRACE("t " + std::to_string(s.t) + " d " + std::to_string(s.d) + " dv " + std::to_string(s.dv));
    run_case<__nv_bfloat16, false>(s, 3e-2);
    run_case<__nv_bfloat16, true>(s, 3e-2);
  }
}

}  // namespace
}  // namespace strata
