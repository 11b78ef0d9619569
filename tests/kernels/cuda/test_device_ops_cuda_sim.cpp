// The CUDA device ops (strata::cuda_dev: kernels/cuda/device_ops.cu,
// device_multi_tensor.cu, device_normalize_u8.cu) on the host SIMT emulator
// (tests/simt; this file is compiled with its cuda_host.h force-included, so
// cuda_dev:: here is the emulated backend), with the expectations of
// test_cuda_device_ops.cpp: copies in every direction, fill, convert (rounding
// as kernels/runtime/half.h; every dtype pair against cpu_dev), strided_copy,
// axpy and scale in FP32, the multi-tensor sum_of_squares (several chunks,
// mixed dtypes), unscale_found_inf (clean, inf, NaN), sgd_step and adamw_step bit
// for bit against the scalar math, and normalize_u8 against cpu_dev. "Device"
// memory is an exact-size heap block pre-filled with NaN bytes whose views end
// at its end, so AddressSanitizer sees a kernel that writes past a view, and
// views start one element in, off 16-byte alignment, where an op accepts any
// address; the element before the view must come back untouched. Sizes are off
// the block (256) and off 4 and 8, and one fill strides its grid.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "base/error.h"
#include "kernels/device_ops_backends.h"
#include "kernels/launch_shape.h"
#include "kernels/runtime/half.h"
#include "kernels/scalar_math.h"

namespace strata {
namespace {

// Device memory on the host: `lead` spare elements, then the view's `n`, and
// nothing after them; every byte starts as 0xFF (NaN in every float type).
template <typename T>
class DeviceBlock {
 public:
  explicit DeviceBlock(size_t n, size_t lead = 0) : mem_(n + lead), lead_(lead) {
    std::memset(mem_.data(), 0xFF, mem_.size() * sizeof(T));
  }
  T* data() { return mem_.data() + lead_; }
  size_t size() const { return mem_.size() - lead_; }
  T& operator[](size_t i) { return data()[i]; }
  TensorView on_device(DType dt, Shape s) { return TensorView{data(), dt, std::move(s), Device::cuda}; }
  TensorView on_host(DType dt, Shape s) { return TensorView{data(), dt, std::move(s), Device::cpu}; }
  std::vector<T> values() const { return {mem_.begin() + static_cast<std::ptrdiff_t>(lead_), mem_.end()}; }
  // The spare elements before the view still hold their 0xFF bytes.
  bool lead_untouched() const {
    const auto* b = reinterpret_cast<const unsigned char*>(mem_.data());
    for (size_t i = 0; i < lead_ * sizeof(T); ++i)
      if (b[i] != 0xFF) return false;
    return true;
  }

 private:
  std::vector<T> mem_;
  size_t lead_;
};

std::vector<float> randoms(size_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}
template <typename T>
void put(DeviceBlock<T>& b, const std::vector<T>& v) {
  ASSERT_EQ(v.size(), b.size());
  std::copy(v.begin(), v.end(), b.data());
}

uint16_t half_bits(float v, DType dt) {
  return dt == DType::f16 ? float_to_f16_bits(v) : float_to_bf16_bits(v);
}
float half_value(uint16_t b, DType dt) {
  return dt == DType::f16 ? f16_bits_to_float(b) : bf16_bits_to_float(b);
}

// Float storage of any of f32, f16, bf16, as 32-bit words or 16-bit halves.
struct FloatBlock {
  DType dt;
  std::unique_ptr<DeviceBlock<float>> f32;
  std::unique_ptr<DeviceBlock<uint16_t>> half;
  FloatBlock(DType d, const std::vector<float>& v, size_t lead) : dt(d) {
    if (dt == DType::f32) {
      f32 = std::make_unique<DeviceBlock<float>>(v.size(), lead);
      put(*f32, v);
    } else {
      half = std::make_unique<DeviceBlock<uint16_t>>(v.size(), lead);
      for (size_t k = 0; k < v.size(); ++k) (*half)[k] = half_bits(v[k], dt);
    }
  }
  TensorView on_device() {
    return f32 ? f32->on_device(dt, {int64_t(f32->size())}) : half->on_device(dt, {int64_t(half->size())});
  }
  float at(size_t k) { return f32 ? (*f32)[k] : half_value((*half)[k], dt); }
  bool lead_untouched() const { return f32 ? f32->lead_untouched() : half->lead_untouched(); }
};

constexpr DType kFloats[] = {DType::f32, DType::f16, DType::bf16};
constexpr size_t kRagged[] = {1, 3, 255, 257, 1001};  // off the block of 256, off 4 and 8

TEST(CudaSimDeviceOps, CopyRoundTripsThroughEveryDirection) {
  for (size_t n : kRagged) {
    auto x = randoms(n, 1);
    DeviceBlock<float> host_src(n), a(n, 1), b(n, 1), host_dst(n, 1), h2(n);
    put(host_src, x);
    Shape s{int64_t(n)};
    cuda_dev::copy(host_src.on_host(DType::f32, s), a.on_device(DType::f32, s));  // h2d
    cuda_dev::copy(a.on_device(DType::f32, s), b.on_device(DType::f32, s));       // d2d
    cuda_dev::copy(b.on_device(DType::f32, s), host_dst.on_host(DType::f32, s));  // d2h
    EXPECT_EQ(host_dst.values(), x) << n;
    cuda_dev::copy(host_src.on_host(DType::f32, s), h2.on_host(DType::f32, s));  // h2h
    EXPECT_EQ(h2.values(), x) << n;
    EXPECT_TRUE(a.lead_untouched() && b.lead_untouched() && host_dst.lead_untouched()) << n;
    DeviceBlock<uint16_t> wrong(n);
    EXPECT_THROW(cuda_dev::copy(a.on_device(DType::f32, s), wrong.on_device(DType::f16, s)), Error);
  }
}

// fill through the kernel in every dtype (and through the memset for +0) equals
// cpu_dev::fill byte for byte.
template <typename T>
void expect_fill_like_cpu(DType dt, double value, size_t n) {
  DeviceBlock<T> on_device(n, 1), on_host(n);
  Shape s{int64_t(n)};
  cuda_dev::fill(on_device.on_device(dt, s), value);
  cpu_dev::fill(on_host.on_host(dt, s), value);
  const std::vector<T> got = on_device.values(), want = on_host.values();
  EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(T)), 0)
      << dtype_name(dt) << " " << value << " n " << n;
  EXPECT_TRUE(on_device.lead_untouched()) << dtype_name(dt);
}

TEST(CudaSimDeviceOps, FillWritesTheConvertedValue) {
  DeviceBlock<float> f(777);
  DeviceBlock<uint16_t> h(777), z(9);
  DeviceBlock<int64_t> i(5);
  cuda_dev::fill(f.on_device(DType::f32, {777}), 0.1);
  cuda_dev::fill(h.on_device(DType::f16, {777}), 0.1);
  cuda_dev::fill(i.on_device(DType::i64, {5}), 42);
  cuda_dev::fill(z.on_device(DType::bf16, {9}), 0.0);
  for (float v : f.values()) ASSERT_EQ(v, 0.1f);
  for (uint16_t v : h.values()) ASSERT_EQ(v, float_to_f16_bits(0.1f));
  for (int64_t v : i.values()) ASSERT_EQ(v, 42);
  for (uint16_t v : z.values()) ASSERT_EQ(v, 0);
  for (size_t n : kRagged)
    for (double value : {0.1, -0.0, 0.0, 200.7}) {
      expect_fill_like_cpu<float>(DType::f32, value, n);
      expect_fill_like_cpu<double>(DType::f64, value, n);
      expect_fill_like_cpu<uint16_t>(DType::f16, value, n);
      expect_fill_like_cpu<uint16_t>(DType::bf16, value, n);
      expect_fill_like_cpu<int32_t>(DType::i32, value, n);
      expect_fill_like_cpu<int64_t>(DType::i64, value, n);
      expect_fill_like_cpu<uint8_t>(DType::u8, value, n);
      expect_fill_like_cpu<uint16_t>(DType::u16, value, n);
    }
}

TEST(CudaSimDeviceOps, FillStridesPastTheGridCap) {
  // more elements than the capped grid has threads (132 SMs' worth): the
  // grid-stride loop's second pass writes the tail
  const size_t n = static_cast<size_t>(launch::grid_cap(132) * launch::kThreads + 7);
  DeviceBlock<float> f(n, 1);
  cuda_dev::fill(f.on_device(DType::f32, {int64_t(n)}), -1.5);
  for (size_t k = 0; k < n; ++k) ASSERT_EQ(f[k], -1.5f) << k;
  EXPECT_TRUE(f.lead_untouched());
}

TEST(CudaSimDeviceOps, ConvertRoundsLikeHalfH) {
  const size_t n = 5001;
  auto x = randoms(n, 2, -70000, 70000);  // past f16's range: inf
  x[0] = 1e-7f;                           // f16 subnormal
  x[1] = std::numeric_limits<float>::infinity();
  DeviceBlock<float> f(n, 1), back(n, 1);
  DeviceBlock<uint16_t> h(n, 1), b(n, 1);
  DeviceBlock<int64_t> ids(n, 1);
  Shape s{int64_t(n)};
  put(f, x);
  cuda_dev::convert(f.on_device(DType::f32, s), h.on_device(DType::f16, s));
  cuda_dev::convert(f.on_device(DType::f32, s), b.on_device(DType::bf16, s));
  for (size_t k = 0; k < n; ++k) {
    ASSERT_EQ(h[k], float_to_f16_bits(x[k])) << x[k];
    ASSERT_EQ(b[k], float_to_bf16_bits(x[k])) << x[k];
  }
  cuda_dev::convert(h.on_device(DType::f16, s), back.on_device(DType::f32, s));
  for (size_t k = 0; k < n; ++k) ASSERT_EQ(back[k], f16_bits_to_float(h[k]));
  x[1] = 3.75f;
  put(f, x);
  cuda_dev::convert(f.on_device(DType::f32, s), ids.on_device(DType::i64, s));
  for (size_t k = 0; k < n; ++k) ASSERT_EQ(ids[k], static_cast<int64_t>(x[k]));
  EXPECT_TRUE(f.lead_untouched() && back.lead_untouched() && h.lead_untouched() && b.lead_untouched() &&
              ids.lead_untouched());
}

// Every dtype pair (same dtype: the copy path) against cpu_dev::convert, byte for
// byte, on values every dtype holds (0 to 250, with fractions for the floats).
TEST(CudaSimDeviceOps, ConvertMatchesTheCpuBetweenEveryPairOfDtypes) {
  const DType all[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                       DType::i32, DType::i64, DType::u8,  DType::u16};
  const size_t n = 259;
  auto v = randoms(n, 3, 0, 250);
  for (DType from : all) {
    // the source, written by cpu_dev from the f32 values
    const size_t sb = dtype_size(from);
    DeviceBlock<float> values(n);
    put(values, v);
    DeviceBlock<unsigned char> src(n * sb, sb);
    Shape s{int64_t(n)};
    TensorView src_host{src.data(), from, s, Device::cpu};
    cpu_dev::convert(values.on_host(DType::f32, s), src_host);
    TensorView src_device = src_host;
    src_device.device = Device::cuda;
    for (DType to : all) {
      const size_t db = dtype_size(to);
      DeviceBlock<unsigned char> got(n * db, db), want(n * db);
      cuda_dev::convert(src_device, TensorView{got.data(), to, s, Device::cuda});
      cpu_dev::convert(src_host, TensorView{want.data(), to, s, Device::cpu});
      EXPECT_EQ(got.values(), want.values()) << dtype_name(from) << " -> " << dtype_name(to);
      EXPECT_TRUE(got.lead_untouched()) << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

TEST(CudaSimDeviceOps, StridedCopyGathersATransposedView) {
  // src is a [6, 8] buffer; gather its transpose [8, 6] (strides 1, 8)
  auto x = randoms(48, 3);
  DeviceBlock<float> src(48), dst(48, 1);
  put(src, x);
  TensorView t = src.on_device(DType::f32, {8, 6});
  cuda_dev::strided_copy(t, {1, 8}, dst.on_device(DType::f32, {8, 6}));
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 6; ++c)
      ASSERT_EQ(dst[static_cast<size_t>(r * 6 + c)], x[static_cast<size_t>(c * 8 + r)]);
  EXPECT_TRUE(dst.lead_untouched());
}

// A 3-D view of a [5, 7, 9] block, permuted and sliced (the last element of the
// block is its last element read), in 1-, 2-, 4- and 8-byte dtypes, against
// cpu_dev::strided_copy.
TEST(CudaSimDeviceOps, StridedCopyMatchesTheCpuInEveryWordSize) {
  const Shape view_shape{9, 5, 6};               // axes 2, 0 and part of 1 of [5, 7, 9]
  const std::vector<int64_t> strides{1, 63, 9};  // elements
  const size_t block = 5 * 7 * 9 - 9;            // the view starts at [0, 1, 0]: 9 elements in
  const size_t n = 9 * 5 * 6;
  for (DType dt : {DType::u8, DType::f16, DType::f32, DType::i64}) {
    const size_t es = dtype_size(dt);
    DeviceBlock<unsigned char> src(block * es, 9 * es), got(n * es, es), want(n * es);
    for (size_t k = 0; k < block * es; ++k) src[k] = static_cast<unsigned char>(k * 37 + 11);
    TensorView sv{src.data(), dt, view_shape, Device::cuda};
    cuda_dev::strided_copy(sv, strides, TensorView{got.data(), dt, view_shape, Device::cuda});
    sv.device = Device::cpu;
    cpu_dev::strided_copy(sv, strides, TensorView{want.data(), dt, view_shape, Device::cpu});
    EXPECT_EQ(got.values(), want.values()) << dtype_name(dt);
    EXPECT_TRUE(got.lead_untouched()) << dtype_name(dt);
  }
}

TEST(CudaSimDeviceOps, AxpyAndScaleInFp32) {
  const size_t n = 3001;
  auto x = randoms(n, 4), y = randoms(n, 5);
  DeviceBlock<uint16_t> dx(n, 1);
  DeviceBlock<float> dy(n, 1);
  for (size_t k = 0; k < n; ++k) dx[k] = float_to_bf16_bits(x[k]);
  put(dy, y);
  cuda_dev::axpy(0.5, dx.on_device(DType::bf16, {int64_t(n)}), dy.on_device(DType::f32, {int64_t(n)}));
  cuda_dev::scale(dy.on_device(DType::f32, {int64_t(n)}), -2.0);
  for (size_t k = 0; k < n; ++k)
    ASSERT_EQ(dy[k], std::fma(0.5f, bf16_bits_to_float(dx[k]), y[k]) * -2.0f) << k;
  EXPECT_TRUE(dx.lead_untouched() && dy.lead_untouched());
}

// Every pair of float dtypes: y = round(fma(a, x, y)), then x = round(x * s).
TEST(CudaSimDeviceOps, AxpyAndScaleRoundOnceInEveryDtype) {
  for (size_t n : kRagged)
    for (DType xt : kFloats)
      for (DType yt : kFloats) {
        FloatBlock x(xt, randoms(n, 6), 1), y(yt, randoms(n, 7), 1);
        std::vector<float> x0(n), y0(n);
        for (size_t k = 0; k < n; ++k) x0[k] = x.at(k), y0[k] = y.at(k);
        cuda_dev::axpy(-0.75, x.on_device(), y.on_device());
        cuda_dev::scale(x.on_device(), 3.0);
        for (size_t k = 0; k < n; ++k) {
          const float ay = std::fma(-0.75f, x0[k], y0[k]), sx = x0[k] * 3.0f;
          ASSERT_EQ(y.at(k), yt == DType::f32 ? ay : half_value(half_bits(ay, yt), yt))
              << dtype_name(xt) << " " << dtype_name(yt) << " " << k;
          ASSERT_EQ(x.at(k), xt == DType::f32 ? sx : half_value(half_bits(sx, xt), xt))
              << dtype_name(xt) << " " << k;
        }
        EXPECT_TRUE(x.lead_untouched() && y.lead_untouched());
      }
}

TEST(CudaSimDeviceOps, SumOfSquaresOverManyTensorsAccumulates) {
  std::vector<size_t> sizes = {1, 70000, 0, 200003, 5};  // several chunks of 2^16
  std::vector<std::unique_ptr<FloatBlock>> ts;
  std::vector<TensorView> views;
  double expect = 1.5;  // out starts at 1.5: the op adds to it
  for (size_t i = 0; i < sizes.size(); ++i) {
    const DType dt = kFloats[i % 3];
    ts.push_back(std::make_unique<FloatBlock>(dt, randoms(sizes[i], 10 + static_cast<uint32_t>(i)), 1));
    for (size_t k = 0; k < sizes[i]; ++k) expect += double(ts.back()->at(k)) * ts.back()->at(k);
    views.push_back(ts.back()->on_device());
  }
  views.push_back(TensorView{});  // a parameter without a gradient counts nothing
  DeviceBlock<float> out(1);
  out[0] = 1.5f;
  cuda_dev::sum_of_squares(views.data(), views.size(), out.on_device(DType::f32, {}));
  const float got = out[0];
  EXPECT_NEAR(got, expect, 1e-6 * expect);
  // deterministic: the same call gives the same bits
  out[0] = 1.5f;
  cuda_dev::sum_of_squares(views.data(), views.size(), out.on_device(DType::f32, {}));
  EXPECT_EQ(out[0], got);
  for (auto& t : ts) EXPECT_TRUE(t->lead_untouched());
}

TEST(CudaSimDeviceOps, UnscaleFindsInfAndNanAndScales) {
  const size_t n = 100001;
  auto g = randoms(n, 6);
  for (int trial = 0; trial < 3; ++trial) {
    auto gt = g;
    if (trial == 1) gt[77777] = std::numeric_limits<float>::infinity();
    if (trial == 2) gt[5] = std::numeric_limits<float>::quiet_NaN();
    FloatBlock a(DType::f32, gt, 1), b(DType::bf16, std::vector<float>(50, 3.0f), 1),
        c(DType::f16, std::vector<float>(301, -5.0f), 1);
    DeviceBlock<float> found(1);
    found[0] = 0.0f;
    TensorView views[] = {a.on_device(), TensorView{}, b.on_device(), c.on_device()};  // undefined: skipped
    cuda_dev::unscale_found_inf(views, 4, 0.25f, found.on_device(DType::f32, {}));
    EXPECT_EQ(found[0], trial == 0 ? 0.0f : 1.0f) << "trial " << trial;
    for (size_t k = 0; k < n; ++k) {
      if (std::isnan(gt[k]))
        ASSERT_TRUE(std::isnan(a.at(k))) << k;
      else
        ASSERT_EQ(a.at(k), gt[k] * 0.25f) << k;
    }
    for (size_t k = 0; k < 50; ++k) ASSERT_EQ(b.at(k), 0.75f);
    for (size_t k = 0; k < 301; ++k) ASSERT_EQ(c.at(k), -1.25f);
    EXPECT_TRUE(a.lead_untouched() && b.lead_untouched() && c.lead_untouched());
  }
}

// Two parameters (one past a chunk of 2^16, one tiny) with f16 and bf16
// gradients; momentum with a buffer (first step or not, nesterov or not) and
// without one.
TEST(CudaSimDeviceOps, SgdStepMatchesScalarMathBitForBit) {
  const std::vector<size_t> sizes = {70001, 3};
  const DType grad_dtypes[] = {DType::f16, DType::bf16};
  const dev::SgdStep steps[] = {{0.1f, 0.9f, 0.1f, 1e-4f, true, false},
                                {0.1f, 0.9f, 0.0f, 0.0f, false, true},
                                {0.05f, 0.0f, 0.0f, 1e-2f, false, false}};
  for (const dev::SgdStep& s : steps) {
    const bool momentum = s.momentum != 0.0f;
    std::vector<std::unique_ptr<FloatBlock>> keep;
    std::vector<TensorView> w, g, buf;
    std::vector<std::vector<float>> w0, g0, b0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      keep.push_back(std::make_unique<FloatBlock>(DType::f32, randoms(sizes[i], 7 + i), 1));
      w.push_back(keep.back()->on_device());
      keep.push_back(std::make_unique<FloatBlock>(grad_dtypes[i], randoms(sizes[i], 8 + i), 1));
      g.push_back(keep.back()->on_device());
      keep.push_back(std::make_unique<FloatBlock>(DType::f32, randoms(sizes[i], 9 + i), 1));
      buf.push_back(keep.back()->on_device());
      w0.emplace_back(static_cast<float*>(w[i].data), static_cast<float*>(w[i].data) + sizes[i]);
      b0.emplace_back(static_cast<float*>(buf[i].data), static_cast<float*>(buf[i].data) + sizes[i]);
      g0.emplace_back(sizes[i]);
      for (size_t k = 0; k < sizes[i]; ++k) g0[i][k] = keep[keep.size() - 2]->at(k);
    }
    cuda_dev::sgd_step(w.data(), g.data(), momentum ? buf.data() : nullptr, sizes.size(), s, 0.5f);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const float* rw = static_cast<const float*>(w[i].data);
      const float* rb = static_cast<const float*>(buf[i].data);
      for (size_t k = 0; k < sizes[i]; ++k) {
        float wk = w0[i][k], bk = b0[i][k];
        math::sgd_update(wk, g0[i][k] * 0.5f, bk, s.lr, s.momentum, s.dampening, s.weight_decay, s.nesterov,
                         s.first_step);
        ASSERT_EQ(rw[k], wk) << i << "," << k;
        ASSERT_EQ(rb[k], momentum ? bk : b0[i][k]) << i << "," << k;  // no momentum: buf untouched
      }
    }
    for (auto& b : keep) EXPECT_TRUE(b->lead_untouched());
  }
}

TEST(CudaSimDeviceOps, AdamWStepMatchesScalarMathBitForBit) {
  const std::vector<size_t> sizes = {3, 131073, 257};
  const DType grad_dtypes[] = {DType::f32, DType::f32, DType::bf16};
  dev::AdamWStep s{1 - 1e-3f * 0.01f, 0.999f, 0.1f, 0.001f, 1e-8f, 1e-3f / 0.19f, std::sqrt(0.002f)};
  std::vector<std::unique_ptr<FloatBlock>> keep;
  std::vector<TensorView> W, G, M, V;
  std::vector<std::vector<float>> w, g, m, v;
  for (size_t i = 0; i < sizes.size(); ++i) {
    w.push_back(randoms(sizes[i], 20 + i));
    g.push_back(randoms(sizes[i], 30 + i));
    m.push_back(randoms(sizes[i], 40 + i));
    v.push_back(randoms(sizes[i], 50 + i, 0, 1));
    keep.push_back(std::make_unique<FloatBlock>(DType::f32, w[i], 1));
    W.push_back(keep.back()->on_device());
    keep.push_back(std::make_unique<FloatBlock>(grad_dtypes[i], g[i], 1));
    G.push_back(keep.back()->on_device());
    for (size_t k = 0; k < sizes[i]; ++k) g[i][k] = keep.back()->at(k);  // as stored
    keep.push_back(std::make_unique<FloatBlock>(DType::f32, m[i], 1));
    M.push_back(keep.back()->on_device());
    keep.push_back(std::make_unique<FloatBlock>(DType::f32, v[i], 1));
    V.push_back(keep.back()->on_device());
  }
  cuda_dev::adamw_step(W.data(), G.data(), M.data(), V.data(), sizes.size(), s, 0.25f);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const float *rw = static_cast<const float*>(W[i].data), *rm = static_cast<const float*>(M[i].data),
                *rv = static_cast<const float*>(V[i].data);
    for (size_t k = 0; k < sizes[i]; ++k) {
      float wk = w[i][k], mk = m[i][k], vk = v[i][k];
      math::adamw_update(wk, g[i][k] * 0.25f, mk, vk, s.decay, s.beta2, s.one_minus_beta1, s.one_minus_beta2,
                         s.eps, s.step_size, s.bc2_sqrt);
      ASSERT_EQ(rw[k], wk) << i << "," << k;
      ASSERT_EQ(rm[k], mk) << i << "," << k;
      ASSERT_EQ(rv[k], vk) << i << "," << k;
    }
  }
  for (auto& b : keep) EXPECT_TRUE(b->lead_untouched());
}

// (B, C, H, W) pixels with per-channel mean/std, and one mean/std for all, into
// f32, f16 and bf16, against cpu_dev::normalize_u8 bit for bit.
TEST(CudaSimDeviceOps, NormalizeU8MatchesTheCpu) {
  const float mean[] = {0.485f, 0.456f, 0.406f}, stdev[] = {0.229f, 0.224f, 0.225f};
  struct Case {
    Shape shape;
    size_t channels;
  };
  const Case cases[] = {{{3, 3, 5, 7}, 3}, {{2, 3, 1, 1}, 3}, {{1001}, 1}, {{2, 1, 9, 29}, 1}};
  for (const Case& c : cases) {
    size_t n = 1;
    for (int64_t d : c.shape) n *= static_cast<size_t>(d);
    DeviceBlock<uint8_t> px(n);
    for (size_t k = 0; k < n; ++k) px[k] = static_cast<uint8_t>(k * 53 + 7);
    for (DType dt : kFloats) {
      const size_t es = dtype_size(dt);
      DeviceBlock<unsigned char> got(n * es, es), want(n * es);
      cuda_dev::normalize_u8(px.on_device(DType::u8, c.shape),
                             TensorView{got.data(), dt, c.shape, Device::cuda}, mean, stdev, c.channels);
      cpu_dev::normalize_u8(px.on_host(DType::u8, c.shape), TensorView{want.data(), dt, c.shape, Device::cpu},
                            mean, stdev, c.channels);
      EXPECT_EQ(got.values(), want.values()) << dtype_name(dt) << " " << shape_str(c.shape);
      EXPECT_TRUE(got.lead_untouched()) << dtype_name(dt);
    }
  }
}

}  // namespace
}  // namespace strata
