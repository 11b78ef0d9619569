// The CUDA device ops (strata::cuda_dev, kernels/cuda/device_ops.cu and
// device_multi_tensor.cu) against plain host loops: copies in every direction, fill,
// convert (rounding as kernels/runtime/half.h), strided_copy, axpy, scale, the
// multi-tensor sum_of_squares (tensors spanning several chunks, mixed dtypes),
// unscale_found_inf (clean, inf, NaN), and sgd_step / adamw_step bit for bit
// against math::sgd_update / math::adamw_update. SKIPPED without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "base/error.h"
#include "device_buffer.h"
#include "kernels/cuda/runtime.h"
#include "kernels/device_ops_backends.h"
#include "kernels/runtime/allocator.h"
#include "kernels/runtime/half.h"
#include "kernels/scalar_math.h"

namespace strata {
namespace {

// A device buffer with its view (gpu_test::DeviceMemory, device_buffer.h); freed at scope end.
struct DeviceTensor {
  TensorView v;
  gpu_test::DeviceMemory mem;
  DeviceTensor(DType dt, Shape s) : v{nullptr, dt, std::move(s), Device::cuda}, mem(v.bytes()) {
    v.data = mem.data;
  }
};

template <typename T>
TensorView host_view(std::vector<T>& h, DType dt, Shape s) {
  return TensorView{h.data(), dt, std::move(s), Device::cpu};
}

template <typename T>
std::vector<T> download(const TensorView& d) {
  std::vector<T> h(static_cast<size_t>(d.numel()));
  cuda_dev::copy(d, host_view(h, d.dtype, d.shape));
  return h;
}
template <typename T>
void upload(std::vector<T> h, const TensorView& d) {
  cuda_dev::copy(host_view(h, d.dtype, d.shape), d);
  cuda_dev::synchronize();
}

std::vector<float> randoms(size_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

TEST(CudaDeviceOps, CopyRoundTripsThroughEveryDirection) {
  STRATA_SKIP_WITHOUT_DEVICE();
  auto x = randoms(1000, 1);
  DeviceTensor a(DType::f32, {10, 100}), b(DType::f32, {10, 100});
  upload(x, a.v);                    // h2d
  cuda_dev::copy(a.v, b.v);          // d2d
  auto back = download<float>(b.v);  // d2h
  EXPECT_EQ(back, x);
  std::vector<float> h2(x.size());
  cuda_dev::copy(host_view(x, DType::f32, {10, 100}), host_view(h2, DType::f32, {10, 100}));  // h2h
  EXPECT_EQ(h2, x);
  DeviceTensor wrong(DType::f16, {10, 100});
  EXPECT_THROW(cuda_dev::copy(a.v, wrong.v), Error);
}

TEST(CudaDeviceOps, FillWritesTheConvertedValue) {
  STRATA_SKIP_WITHOUT_DEVICE();
  DeviceTensor f(DType::f32, {777}), h(DType::f16, {777}), i(DType::i64, {5}), z(DType::bf16, {9});
  cuda_dev::fill(f.v, 0.1);
  cuda_dev::fill(h.v, 0.1);
  cuda_dev::fill(i.v, 42);
  cuda_dev::fill(z.v, 0.0);
  for (float v : download<float>(f.v)) ASSERT_EQ(v, 0.1f);
  for (uint16_t v : download<uint16_t>(h.v)) ASSERT_EQ(v, float_to_f16_bits(0.1f));
  for (int64_t v : download<int64_t>(i.v)) ASSERT_EQ(v, 42);
  for (uint16_t v : download<uint16_t>(z.v)) ASSERT_EQ(v, 0);
}

TEST(CudaDeviceOps, ConvertRoundsLikeHalfH) {
  STRATA_SKIP_WITHOUT_DEVICE();
  auto x = randoms(5000, 2, -70000, 70000);  // past f16's range: inf
  x[0] = 1e-7f;                              // f16 subnormal
  x[1] = std::numeric_limits<float>::infinity();
  DeviceTensor f(DType::f32, {5000}), h(DType::f16, {5000}), b(DType::bf16, {5000}), back(DType::f32, {5000});
  DeviceTensor ids(DType::i64, {5000});
  upload(x, f.v);
  cuda_dev::convert(f.v, h.v);
  cuda_dev::convert(f.v, b.v);
  auto hb = download<uint16_t>(h.v), bb = download<uint16_t>(b.v);
  for (size_t k = 0; k < x.size(); ++k) {
    ASSERT_EQ(hb[k], float_to_f16_bits(x[k])) << x[k];
    ASSERT_EQ(bb[k], float_to_bf16_bits(x[k])) << x[k];
  }
  cuda_dev::convert(h.v, back.v);
  auto hf = download<float>(back.v);
  for (size_t k = 0; k < x.size(); ++k) ASSERT_EQ(hf[k], f16_bits_to_float(hb[k]));
  x[1] = 3.75f;
  upload(x, f.v);
  cuda_dev::convert(f.v, ids.v);
  auto iv = download<int64_t>(ids.v);
  for (size_t k = 0; k < x.size(); ++k) ASSERT_EQ(iv[k], static_cast<int64_t>(x[k]));
}

TEST(CudaDeviceOps, StridedCopyGathersATransposedView) {
  STRATA_SKIP_WITHOUT_DEVICE();
  // src is a [6, 8] buffer; gather its transpose [8, 6] (strides 1, 8)
  auto x = randoms(48, 3);
  DeviceTensor src(DType::f32, {6, 8}), dst(DType::f32, {8, 6});
  upload(x, src.v);
  TensorView t = src.v;
  t.shape = {8, 6};
  cuda_dev::strided_copy(t, {1, 8}, dst.v);
  auto y = download<float>(dst.v);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 6; ++c)
      ASSERT_EQ(y[static_cast<size_t>(r * 6 + c)], x[static_cast<size_t>(c * 8 + r)]);
}

TEST(CudaDeviceOps, AxpyAndScaleInFp32) {
  STRATA_SKIP_WITHOUT_DEVICE();
  auto x = randoms(3000, 4), y = randoms(3000, 5);
  std::vector<uint16_t> xh(x.size());
  for (size_t k = 0; k < x.size(); ++k) xh[k] = float_to_bf16_bits(x[k]);
  DeviceTensor dx(DType::bf16, {3000}), dy(DType::f32, {3000});
  upload(xh, dx.v);
  upload(y, dy.v);
  cuda_dev::axpy(0.5, dx.v, dy.v);
  cuda_dev::scale(dy.v, -2.0);
  auto r = download<float>(dy.v);
  for (size_t k = 0; k < x.size(); ++k)
    ASSERT_EQ(r[k], std::fma(0.5f, bf16_bits_to_float(xh[k]), y[k]) * -2.0f) << k;
}

TEST(CudaDeviceOps, SumOfSquaresOverManyTensorsAccumulates) {
  STRATA_SKIP_WITHOUT_DEVICE();
  std::vector<int64_t> sizes = {1, 70000, 0, 200003, 5};  // several chunks of 2^16
  std::vector<std::unique_ptr<DeviceTensor>> ts;
  std::vector<TensorView> views;
  double expect = 1.5;  // out starts at 1.5: the op adds to it
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto x = randoms(static_cast<size_t>(sizes[i]), 10 + static_cast<uint32_t>(i));
    DType dt = i % 2 ? DType::f16 : DType::f32;
    ts.push_back(std::make_unique<DeviceTensor>(dt, Shape{sizes[i]}));
    if (dt == DType::f16) {
      std::vector<uint16_t> h(x.size());
      for (size_t k = 0; k < x.size(); ++k) {
        h[k] = float_to_f16_bits(x[k]);
        double v = f16_bits_to_float(h[k]);
        expect += v * v;
      }
      if (!h.empty()) upload(h, ts.back()->v);
    } else {
      for (float v : x) expect += static_cast<double>(v) * v;
      if (!x.empty()) upload(x, ts.back()->v);
    }
    views.push_back(ts.back()->v);
  }
  views.push_back(TensorView{});  // a parameter without a gradient counts nothing
  DeviceTensor out(DType::f32, {});
  upload(std::vector<float>{1.5f}, out.v);
  cuda_dev::sum_of_squares(views.data(), views.size(), out.v);
  float got = download<float>(out.v)[0];
  EXPECT_NEAR(got, expect, 1e-6 * expect);
  // deterministic: the same call gives the same bits
  upload(std::vector<float>{1.5f}, out.v);
  cuda_dev::sum_of_squares(views.data(), views.size(), out.v);
  EXPECT_EQ(download<float>(out.v)[0], got);
}

TEST(CudaDeviceOps, UnscaleFindsInfAndNanAndScales) {
  STRATA_SKIP_WITHOUT_DEVICE();
  auto g = randoms(100000, 6);
  DeviceTensor a(DType::f32, {100000}), b(DType::bf16, {50}), found(DType::f32, {});
  std::vector<uint16_t> gb(50, float_to_bf16_bits(3.0f));
  for (int trial = 0; trial < 3; ++trial) {
    auto gt = g;
    if (trial == 1) gt[77777] = std::numeric_limits<float>::infinity();
    if (trial == 2) gt[5] = std::numeric_limits<float>::quiet_NaN();
    upload(gt, a.v);
    upload(gb, b.v);
    upload(std::vector<float>{0.0f}, found.v);
    TensorView views[] = {a.v, TensorView{}, b.v};  // a parameter without a gradient is skipped
    cuda_dev::unscale_found_inf(views, 3, 0.25f, found.v);
    EXPECT_EQ(download<float>(found.v)[0], trial == 0 ? 0.0f : 1.0f) << "trial " << trial;
    auto r = download<float>(a.v);
    for (size_t k = 0; k < g.size(); k += 997) ASSERT_EQ(r[k], gt[k] * 0.25f);
    for (uint16_t v : download<uint16_t>(b.v)) ASSERT_EQ(v, float_to_bf16_bits(0.75f));
  }
}

TEST(CudaDeviceOps, SgdStepMatchesScalarMathBitForBit) {
  STRATA_SKIP_WITHOUT_DEVICE();
  size_t n = 100000;
  auto w = randoms(n, 7), g = randoms(n, 8), buf = randoms(n, 9);
  std::vector<uint16_t> gh(n);
  for (size_t k = 0; k < n; ++k) gh[k] = float_to_f16_bits(g[k]);
  DeviceTensor dw(DType::f32, {int64_t(n)}), dg(DType::f16, {int64_t(n)}), db(DType::f32, {int64_t(n)});
  upload(w, dw.v);
  upload(gh, dg.v);
  upload(buf, db.v);
  dev::SgdStep s{0.1f, 0.9f, 0.1f, 1e-4f, true, false};
  cuda_dev::sgd_step(&dw.v, &dg.v, &db.v, 1, s, 0.5f);
  auto rw = download<float>(dw.v), rb = download<float>(db.v);
  for (size_t k = 0; k < n; ++k) {
    float wk = w[k], bk = buf[k];
    math::sgd_update(wk, f16_bits_to_float(gh[k]) * 0.5f, bk, s.lr, s.momentum, s.dampening, s.weight_decay,
                     s.nesterov, s.first_step);
    ASSERT_EQ(rw[k], wk) << k;
    ASSERT_EQ(rb[k], bk) << k;
  }
}

TEST(CudaDeviceOps, AdamWStepMatchesScalarMathBitForBit) {
  STRATA_SKIP_WITHOUT_DEVICE();
  std::vector<size_t> sizes = {3, 131073};
  dev::AdamWStep s{1 - 1e-3f * 0.01f, 0.999f, 0.1f, 0.001f, 1e-8f, 1e-3f / 0.19f, std::sqrt(0.002f)};
  std::vector<std::unique_ptr<DeviceTensor>> keep;
  std::vector<TensorView> W, G, M, V;
  std::vector<std::vector<float>> w, g, m, v;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto n = static_cast<int64_t>(sizes[i]);
    w.push_back(randoms(sizes[i], 20 + i));
    g.push_back(randoms(sizes[i], 30 + i));
    m.push_back(randoms(sizes[i], 40 + i));
    v.push_back(randoms(sizes[i], 50 + i, 0, 1));
    for (auto* vec : {&W, &G, &M, &V}) {
      keep.push_back(std::make_unique<DeviceTensor>(DType::f32, Shape{n}));
      vec->push_back(keep.back()->v);
    }
    upload(w[i], W[i]);
    upload(g[i], G[i]);
    upload(m[i], M[i]);
    upload(v[i], V[i]);
  }
  cuda_dev::adamw_step(W.data(), G.data(), M.data(), V.data(), sizes.size(), s, 1.0f);
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto rw = download<float>(W[i]), rm = download<float>(M[i]), rv = download<float>(V[i]);
    for (size_t k = 0; k < sizes[i]; ++k) {
      float wk = w[i][k], mk = m[i][k], vk = v[i][k];
      math::adamw_update(wk, g[i][k], mk, vk, s.decay, s.beta2, s.one_minus_beta1, s.one_minus_beta2, s.eps,
                         s.step_size, s.bc2_sqrt);
      ASSERT_EQ(rw[k], wk) << i << "," << k;
      ASSERT_EQ(rm[k], mk) << i << "," << k;
      ASSERT_EQ(rv[k], vk) << i << "," << k;
    }
  }
}

}  // namespace
}  // namespace strata
