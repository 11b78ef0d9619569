// conv2d through cuDNN on a device (gpu label): forward, backward data, filter
// and bias against a direct convolution in double on the same rounded inputs
// (f32 tight, f16/bf16 loose), the algorithm cache hit on a repeated shape, and
// TF32 permission as part of the cache key. Without a device: SKIPPED and why.
// The host-side bookkeeping is tested in test_cuda_host.cpp.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cuda/conv_algo_cache.h"
#include "kernels/cuda/runtime.h"

#if STRATA_HAVE_CUDA
#include "device_buffer.h"
#include "kernels/cuda/context.h"
#endif

namespace strata::cuda {
namespace {

#if STRATA_HAVE_CUDA

using gpu_test::DeviceTensor;
using gpu_test::HostTensor;

struct ConvCase {
  Shape x, w;
  int64_t sh, sw, ph, pw;
};

OpAttrs attrs_of(const ConvCase& c) {
  OpAttrs a;
  a.stride[0] = c.sh;
  a.stride[1] = c.sw;
  a.padding[0] = c.ph;
  a.padding[1] = c.pw;
  return a;
}

// Direct convolution in double: y, and for dy the gradients dx, dw, db.
struct Direct {
  std::vector<double> y, dx, dw, db;
};

Direct direct_conv(const ConvCase& c, const Shape& ys, const HostTensor& x, const HostTensor& w,
                   const HostTensor& b, const HostTensor& dy) {
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], O = c.w[0], KH = c.w[2], KW = c.w[3];
  int64_t HO = ys[2], WO = ys[3];
  Direct d;
  d.y.assign(static_cast<size_t>(shape_numel(ys)), 0.0);
  d.dx.assign(x.values.size(), 0.0);
  d.dw.assign(w.values.size(), 0.0);
  d.db.assign(static_cast<size_t>(O), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < HO; ++i)
        for (int64_t j = 0; j < WO; ++j) {
          size_t yi = static_cast<size_t>(((n * O + o) * HO + i) * WO + j);
          double acc = b.values[static_cast<size_t>(o)], g = dy.values[yi];
          d.db[static_cast<size_t>(o)] += g;
          for (int64_t ch = 0; ch < C; ++ch)
            for (int64_t ki = 0; ki < KH; ++ki)
              for (int64_t kj = 0; kj < KW; ++kj) {
                int64_t ii = i * c.sh - c.ph + ki, jj = j * c.sw - c.pw + kj;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                size_t xi = static_cast<size_t>(((n * C + ch) * H + ii) * W + jj);
                size_t wi = static_cast<size_t>(((o * C + ch) * KH + ki) * KW + kj);
                acc += static_cast<double>(x.values[xi]) * w.values[wi];
                d.dx[xi] += g * w.values[wi];
                d.dw[wi] += g * x.values[xi];
              }
          d.y[yi] = acc;
        }
  return d;
}

double tolerance(DType dt) { return dt == DType::f32 ? 2e-5 : dt == DType::f16 ? 4e-3 : 3e-2; }

class CudnnConv : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    auto st = device_status();
    if (st.device_count == 0) GTEST_SKIP() << st.reason;
  }
};

TEST_P(CudnnConv, ForwardAndBackwardMatchDirectConvolution) {
  DType dt = GetParam();
  std::mt19937_64 rng(42);
  for (const ConvCase& c :
       {ConvCase{{2, 3, 9, 8}, {4, 3, 3, 3}, 1, 1, 1, 1}, ConvCase{{2, 4, 11, 10}, {6, 4, 3, 3}, 2, 2, 1, 1},
        ConvCase{{1, 8, 7, 7}, {5, 8, 1, 1}, 2, 2, 0, 0}, ConvCase{{2, 2, 6, 7}, {3, 2, 2, 3}, 2, 1, 0, 1},
        ConvCase{{4, 16, 14, 14}, {32, 16, 3, 3}, 1, 1, 1, 1}}) {
    OpAttrs a = attrs_of(c);
    Shape ys = op_info(Op::conv2d).infer({{c.x, dt}, {c.w, dt}, {{c.w[0]}, dt}}, a)[0].shape;
    HostTensor x(dt, c.x), w(dt, c.w), b(dt, {c.w[0]}), dy(dt, ys);
    x.uniform(rng, -1, 1);
    w.uniform(rng, -0.5f, 0.5f);
    b.uniform(rng, -1, 1);
    dy.uniform(rng, -1, 1);
    Direct want = direct_conv(c, ys, x, w, b, dy);
    DeviceTensor dx_(x), dw_(w), db_(b), ddy(dy);
    HostTensor y(dt, ys), gx(dt, c.x), gw(dt, c.w), gb(dt, {c.w[0]});
    DeviceTensor dy_out(y, false), dgx(gx, false), dgw(gw, false), dgb(gb, false);
    TensorView in[] = {dx_.view(), dw_.view(), db_.view()}, out[] = {dy_out.view()};
    kernel_forward(Op::conv2d, a, in, out);
    TensorView gin[] = {dgx.view(), dgw.view(), dgb.view()};
    kernel_backward(Op::conv2d, a, in, out, ddy.view(), gin);
    dy_out.to_host(y);
    dgx.to_host(gx);
    dgw.to_host(gw);
    dgb.to_host(gb);
    std::string what = std::string(dtype_name(dt)) + " x " + shape_str(c.x) + " w " + shape_str(c.w) +
                       " stride " + std::to_string(c.sh) + "," + std::to_string(c.sw);
    EXPECT_LE(gpu_test::scaled_error(y.values, want.y), tolerance(dt)) << what << ": y";
    EXPECT_LE(gpu_test::scaled_error(gx.values, want.dx), tolerance(dt)) << what << ": dx";
    EXPECT_LE(gpu_test::scaled_error(gw.values, want.dw), tolerance(dt)) << what << ": dw";
    EXPECT_LE(gpu_test::scaled_error(gb.values, want.db), tolerance(dt)) << what << ": db";
  }
}

TEST_P(CudnnConv, RepeatedShapeHitsTheAlgorithmCache) {
  DType dt = GetParam();
  // a shape no other test uses, so the first call must search
  ConvCase c{{3, 5, 13, 11}, {7, 5, 3, 3}, 2, 2, 1, 1};
  c.x[0] = 3 + static_cast<int64_t>(dt);
  OpAttrs a = attrs_of(c);
  Shape ys = op_info(Op::conv2d).infer({{c.x, dt}, {c.w, dt}, {{c.w[0]}, dt}}, a)[0].shape;
  std::mt19937_64 rng(7);
  HostTensor x(dt, c.x), w(dt, c.w), b(dt, {c.w[0]}), g(dt, ys), y(dt, ys), gx(dt, c.x), gw(dt, c.w),
      gb(dt, {c.w[0]});
  x.uniform(rng, -1, 1);
  w.uniform(rng, -1, 1);
  b.uniform(rng, -1, 1);
  g.uniform(rng, -1, 1);
  DeviceTensor dx(x), dw(w), db(b), dg(g), dy(y, false), dgx(gx, false), dgw(gw, false), dgb(gb, false);
  TensorView in[] = {dx.view(), dw.view(), db.view()}, out[] = {dy.view()};
  TensorView gin[] = {dgx.view(), dgw.view(), dgb.view()};
  ConvAlgoCacheStats s0 = conv_algo_cache_stats();
  kernel_forward(Op::conv2d, a, in, out);
  kernel_backward(Op::conv2d, a, in, out, dg.view(), gin);
  ConvAlgoCacheStats s1 = conv_algo_cache_stats();
  EXPECT_EQ(s1.misses, s0.misses + 3) << "forward, backward data and backward filter each search once";
  EXPECT_EQ(s1.hits, s0.hits);
  kernel_forward(Op::conv2d, a, in, out);
  kernel_backward(Op::conv2d, a, in, out, dg.view(), gin);
  ConvAlgoCacheStats s2 = conv_algo_cache_stats();
  EXPECT_EQ(s2.misses, s1.misses) << "a repeated shape searched again";
  EXPECT_EQ(s2.hits, s1.hits + 3);
  gpu_test::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// precision.allow_tf32 changes which f32 algorithms are allowed, so it is part of
// the key: the same f32 problem searches again under TF32 and still computes a
// convolution (to TF32's 10-bit mantissa).
TEST(CudnnConvTf32, PermissionIsPartOfTheKey) {
  auto st = device_status();
  if (st.device_count == 0) GTEST_SKIP() << st.reason;
  ConvCase c{{2, 6, 10, 9}, {5, 6, 3, 3}, 1, 1, 1, 1};
  OpAttrs a = attrs_of(c);
  DType dt = DType::f32;
  Shape ys = op_info(Op::conv2d).infer({{c.x, dt}, {c.w, dt}, {{c.w[0]}, dt}}, a)[0].shape;
  std::mt19937_64 rng(3);
  HostTensor x(dt, c.x), w(dt, c.w), b(dt, {c.w[0]}), g(dt, ys), y(dt, ys);
  x.uniform(rng, -1, 1);
  w.uniform(rng, -1, 1);
  b.uniform(rng, -1, 1);
  Direct want = direct_conv(c, ys, x, w, b, g);
  DeviceTensor dx(x), dw(w), db(b), dy(y, false);
  TensorView in[] = {dx.view(), dw.view(), db.view()}, out[] = {dy.view()};
  Context& ctx = context();
  bool saved = ctx.allow_tf32;
  for (bool tf32 : {false, true}) {
    ctx.allow_tf32 = tf32;
    ConvAlgoCacheStats s0 = conv_algo_cache_stats();
    kernel_forward(Op::conv2d, a, in, out);
    dy.to_host(y);
    EXPECT_EQ(conv_algo_cache_stats().misses, s0.misses + 1) << "allow_tf32 " << tf32;
    EXPECT_LE(gpu_test::scaled_error(y.values, want.y), tf32 ? 1e-2 : 2e-5) << "allow_tf32 " << tf32;
  }
  ctx.allow_tf32 = saved;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudnnConv, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& p) {
                           return std::string(dtype_name(p.param));
                         });

#else

TEST(CudnnConv, NeedsACudaBuild) {
  GTEST_SKIP() << "built without the CUDA backend (STRATA_CUDA=OFF or no nvcc)";
}

#endif

}  // namespace
}  // namespace strata::cuda
