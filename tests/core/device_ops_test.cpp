// The CPU device ops (kernels/device_ops.h through strata::dev) against plain
// loops written here: fill and convert in every dtype, strided copies of permuted
// and sliced views, axpy and scale, the blocked sum of squares (and that it does
// not depend on the thread count), unscale with its inf/NaN flag, and the
// multi-tensor SGD and AdamW steps bit for bit against math::sgd_update /
// math::adamw_update applied element by element.
#include "kernels/device_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/error.h"
#include "kernels/half.h"
#include "kernels/parallel.h"
#include "kernels/scalar_math.h"

using namespace strata;

namespace {

const DType kAll[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8, DType::f64};
const DType kFloats[] = {DType::f32, DType::f16, DType::bf16, DType::f64};

// A host buffer of n elements of dtype dt.
struct Buf {
  DType dt;
  std::vector<unsigned char> bytes;
  Buf(DType d, int64_t n) : dt(d), bytes(static_cast<size_t>(n) * dtype_size(d) + 1) {}
  TensorView view(Shape s) { return TensorView{bytes.data(), dt, std::move(s)}; }
  TensorView view(int64_t n) { return view(Shape{n}); }
};

// The value v stored in dtype dt, as the tests expect it (independent of the ops).
void put(Buf& b, int64_t i, double v) {
  unsigned char* p = b.bytes.data();
  switch (b.dt) {
    case DType::f32:
      reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::f16:
      reinterpret_cast<uint16_t*>(p)[i] = f16_t(static_cast<float>(v)).bits;
      break;
    case DType::bf16:
      reinterpret_cast<uint16_t*>(p)[i] = bf16_t(static_cast<float>(v)).bits;
      break;
    case DType::i32:
      reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(std::trunc(v));
      break;
    case DType::i64:
      reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(std::trunc(v));
      break;
    case DType::u8:
      reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(std::trunc(v));
      break;
    case DType::f64:
      reinterpret_cast<double*>(p)[i] = v;
      break;
  }
}
double get(const Buf& b, int64_t i) {
  const unsigned char* p = b.bytes.data();
  switch (b.dt) {
    case DType::f32:
      return reinterpret_cast<const float*>(p)[i];
    case DType::f16: {
      f16_t h;
      h.bits = reinterpret_cast<const uint16_t*>(p)[i];
      return static_cast<float>(h);
    }
    case DType::bf16: {
      bf16_t h;
      h.bits = reinterpret_cast<const uint16_t*>(p)[i];
      return static_cast<float>(h);
    }
    case DType::i32:
      return reinterpret_cast<const int32_t*>(p)[i];
    case DType::i64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::u8:
      return reinterpret_cast<const uint8_t*>(p)[i];
    case DType::f64:
      return reinterpret_cast<const double*>(p)[i];
  }
  return 0;
}

// Non-negative values with fractions (u8 takes no negatives), some not exact in halves.
double sample(int64_t i) { return static_cast<double>(i % 200) * 0.37 + 0.125; }

// Two buffers hold the same values bit for bit (NaN compared as NaN).
void expect_same(const Buf& a, const Buf& b, int64_t n, const std::string& what) {
  for (int64_t i = 0; i < n; ++i) {
    double x = get(a, i), y = get(b, i);
    if (std::isnan(x) && std::isnan(y)) continue;
    ASSERT_EQ(x, y) << what << " at " << i;
  }
}

}  // namespace

TEST(DeviceOps, FillEveryDtype) {
  const int64_t n = 70001;  // more than one parallel chunk
  for (DType dt : kAll) {
    for (double v : {3.75, -2.5, 0.0}) {
      if (dt == DType::u8 && v < 0) continue;
      Buf b(dt, n), want(dt, n);
      dev::fill(b.view(n), v);
      for (int64_t i = 0; i < n; ++i) put(want, i, v);
      expect_same(b, want, n, std::string("fill ") + dtype_name(dt));
    }
  }
}

TEST(DeviceOps, ConvertEveryPairOfDtypes) {
  const int64_t n = 100003;  // odd: vector bodies and scalar tails
  for (DType from : kAll) {
    for (DType to : kAll) {
      Buf src(from, n), dst(to, n), want(to, n);
      for (int64_t i = 0; i < n; ++i) put(src, i, sample(i));
      for (int64_t i = 0; i < n; ++i) put(want, i, get(src, i));
      dev::convert(src.view(n), dst.view(n));
      expect_same(dst, want, n, std::string(dtype_name(from)) + " -> " + dtype_name(to));
    }
  }
}

TEST(DeviceOps, ConvertKeepsInfAndNaNInHalves) {
  Buf src(DType::f32, 3), h(DType::f16, 3), b(DType::bf16, 3);
  put(src, 0, std::numeric_limits<double>::infinity());
  put(src, 1, std::nan(""));
  put(src, 2, 1e6);  // beyond f16's range
  dev::convert(src.view(3), h.view(3));
  dev::convert(src.view(3), b.view(3));
  EXPECT_TRUE(std::isinf(get(h, 0)));
  EXPECT_TRUE(std::isnan(get(h, 1)));
  EXPECT_TRUE(std::isinf(get(h, 2)));
  EXPECT_TRUE(std::isinf(get(b, 0)));
  EXPECT_TRUE(std::isnan(get(b, 1)));
  EXPECT_FALSE(std::isinf(get(b, 2)));
}

TEST(DeviceOps, StridedCopyOfPermutedAndSlicedViews) {
  // base [4, 5, 6] in f32 and f16; views: permute (2, 0, 1), and [:, 1:4, ::2]
  const Shape base{4, 5, 6};
  for (DType dt : {DType::f32, DType::f16, DType::i64}) {
    Buf b(dt, 120);
    for (int64_t i = 0; i < 120; ++i) put(b, i, static_cast<double>(i));
    struct Case {
      Shape shape;
      std::vector<int64_t> strides;
      int64_t offset;
    };
    for (const Case& c : {Case{{6, 4, 5}, {1, 30, 6}, 0}, Case{{4, 3, 3}, {30, 6, 2}, 6}, Case{{}, {}, 7}}) {
      int64_t n = shape_numel(c.shape);
      Buf out(dt, n), want(dt, n);
      TensorView src{b.bytes.data() + c.offset * static_cast<int64_t>(dtype_size(dt)), dt, c.shape};
      dev::strided_copy(src, c.strides, out.view(c.shape));
      for (int64_t i = 0; i < n; ++i) {
        int64_t rem = i, off = c.offset;
        for (size_t d = c.shape.size(); d-- > 0;) {
          off += (rem % c.shape[d]) * c.strides[d];
          rem /= c.shape[d];
        }
        put(want, i, get(b, off));
      }
      expect_same(out, want, n, std::string("strided_copy ") + dtype_name(dt) + " " + shape_str(c.shape));
    }
  }
}

TEST(DeviceOps, HostCopyAndItsErrors) {
  Buf a(DType::i32, 9), b(DType::i32, 9), c(DType::f32, 9);
  for (int64_t i = 0; i < 9; ++i) put(a, i, static_cast<double>(i * 7));
  dev::copy(a.view(9), b.view(9));
  expect_same(a, b, 9, "copy");
  EXPECT_THROW(dev::copy(a.view(9), c.view(9)), Error);  // dtypes differ
  EXPECT_THROW(dev::copy(a.view(9), b.view(8)), Error);  // counts differ
}

TEST(DeviceOps, AxpyAcrossFloatDtypes) {
  const int64_t n = 40000;
  for (DType yt : kFloats) {
    for (DType xt : kFloats) {
      for (double alpha : {1.0, 0.5, -2.0}) {  // powers of two: a*x is exact, so contraction cannot matter
        Buf x(xt, n), y(yt, n), want(yt, n);
        for (int64_t i = 0; i < n; ++i) {
          put(x, i, sample(i) - 30.0);
          put(y, i, sample(i + 11));
        }
        for (int64_t i = 0; i < n; ++i) {
          double v = yt == DType::f64
                         ? get(y, i) + alpha * get(x, i)
                         : static_cast<double>(static_cast<float>(get(y, i)) +
                                               static_cast<float>(alpha) * static_cast<float>(get(x, i)));
          put(want, i, v);
        }
        dev::axpy(alpha, x.view(n), y.view(n));
        expect_same(y, want, n, std::string("axpy y ") + dtype_name(yt) + " x " + dtype_name(xt));
      }
    }
  }
  Buf i(DType::i32, 4), f(DType::f32, 4);
  EXPECT_THROW(dev::axpy(1.0, i.view(4), f.view(4)), Error);
  EXPECT_THROW(dev::axpy(1.0, f.view(3), f.view(4)), Error);
}

TEST(DeviceOps, ScaleEveryFloatDtype) {
  const int64_t n = 50001;
  for (DType dt : kFloats) {
    Buf x(dt, n), want(dt, n);
    for (int64_t i = 0; i < n; ++i) put(x, i, sample(i) - 20.0);
    for (int64_t i = 0; i < n; ++i)
      put(want, i,
          dt == DType::f64 ? get(x, i) * 0.3 : static_cast<double>(static_cast<float>(get(x, i)) * 0.3f));
    dev::scale(x.view(n), 0.3);
    expect_same(x, want, n, std::string("scale ") + dtype_name(dt));
  }
}

TEST(DeviceOps, SumOfSquaresAccumulatesInDoubleAndIgnoresThreadCount) {
  std::vector<Buf> xs;
  xs.emplace_back(DType::f32, 300001);  // several blocks
  xs.emplace_back(DType::f16, 1000);
  xs.emplace_back(DType::bf16, 77);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<TensorView> views;
  double want = 1.5;
  for (auto& b : xs) {
    int64_t n = static_cast<int64_t>(b.bytes.size() / dtype_size(b.dt));
    for (int64_t i = 0; i < n; ++i) put(b, i, nd(rng));
    for (int64_t i = 0; i < n; ++i) want += get(b, i) * get(b, i);
    views.push_back(b.view(n));
  }
  views.push_back(TensorView{});  // undefined: skipped
  float out[2] = {1.5f, 0};
  const int prev = num_threads();
  set_num_threads(1);
  dev::sum_of_squares(views.data(), views.size(), TensorView{&out[0], DType::f32, {}});
  set_num_threads(2);
  out[1] = 1.5f;
  dev::sum_of_squares(views.data(), views.size(), TensorView{&out[1], DType::f32, {}});
  set_num_threads(prev);
  EXPECT_NEAR(out[0], want, want * 1e-7);
  EXPECT_EQ(out[0], out[1]) << "the result must not depend on the thread count";
  Buf i32(DType::f32, 2);
  EXPECT_THROW(dev::sum_of_squares(views.data(), 1, i32.view(2)), Error);  // not a scalar
}

TEST(DeviceOps, UnscaleFlagsInfAndNaNAndNeverResets) {
  const int64_t n = 100000;
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (int bad = 0; bad < 3; ++bad) {  // none, inf, NaN
      Buf a(dt, n), b(dt, 33), want_a(dt, n), want_b(dt, 33);
      for (int64_t i = 0; i < n; ++i) put(a, i, sample(i) * 64.0);
      for (int64_t i = 0; i < 33; ++i) put(b, i, -sample(i));
      if (bad == 1) put(a, n - 5, std::numeric_limits<double>::infinity());
      if (bad == 2) put(b, 3, std::nan(""));
      for (int64_t i = 0; i < n; ++i) put(want_a, i, static_cast<float>(get(a, i)) * 0.125f);
      for (int64_t i = 0; i < 33; ++i) put(want_b, i, static_cast<float>(get(b, i)) * 0.125f);
      TensorView gs[] = {a.view(n), TensorView{}, b.view(33)};
      float found = 0.0f;
      dev::unscale_found_inf(gs, 3, 0.125f, TensorView{&found, DType::f32, {}});
      EXPECT_EQ(found, bad ? 1.0f : 0.0f) << dtype_name(dt) << " case " << bad;
      expect_same(a, want_a, n, "unscaled a");
      expect_same(b, want_b, 33, "unscaled b");
      found = 1.0f;  // a flag raised earlier stays raised
      dev::unscale_found_inf(gs, 1, 1.0f, TensorView{&found, DType::f32, {}});
      EXPECT_EQ(found, 1.0f);
    }
  }
}

namespace {
// Three parameters of different sizes (one over a parallel chunk), with gradients in gdt.
struct Params {
  std::vector<std::vector<float>> w, m, v;
  std::vector<Buf> g;
  explicit Params(DType gdt, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int64_t n : {int64_t{7}, int64_t{1000}, int64_t{70000}}) {
      w.emplace_back(static_cast<size_t>(n));
      m.emplace_back(static_cast<size_t>(n));
      v.emplace_back(static_cast<size_t>(n));
      g.emplace_back(gdt, n);
      for (int64_t i = 0; i < n; ++i) {
        w.back()[static_cast<size_t>(i)] = nd(rng);
        m.back()[static_cast<size_t>(i)] = 0.1f * nd(rng);
        v.back()[static_cast<size_t>(i)] = std::abs(0.01f * nd(rng));
        put(g.back(), i, nd(rng));
      }
    }
  }
  static TensorView f32(std::vector<float>& x) {
    return TensorView{x.data(), DType::f32, {static_cast<int64_t>(x.size())}};
  }
  std::vector<TensorView> views(std::vector<std::vector<float>>& xs) {
    std::vector<TensorView> out;
    for (auto& x : xs) out.push_back(f32(x));
    return out;
  }
  std::vector<TensorView> grads() {
    std::vector<TensorView> out;
    for (auto& b : g) out.push_back(b.view(static_cast<int64_t>(b.bytes.size() / dtype_size(b.dt))));
    return out;
  }
};

void expect_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                 const char* what) {
  for (size_t t = 0; t < a.size(); ++t)
    for (size_t i = 0; i < a[t].size(); ++i)
      ASSERT_EQ(std::memcmp(&a[t][i], &b[t][i], 4), 0) << what << " tensor " << t << " element " << i;
}
}  // namespace

TEST(DeviceOps, SgdStepMatchesPerElementMathBitForBit) {
  for (DType gdt : {DType::f32, DType::f16, DType::bf16}) {
    for (int variant = 0; variant < 4; ++variant) {
      dev::SgdStep s;
      s.lr = 0.05f;
      s.momentum = variant == 0 ? 0.0f : 0.9f;
      s.dampening = variant == 2 ? 0.1f : 0.0f;
      s.weight_decay = variant >= 1 ? 1e-2f : 0.0f;
      s.nesterov = variant == 3;
      s.first_step = variant == 1;
      const float scale = gdt == DType::f32 && variant < 2 ? 1.0f : 0.25f;
      Params got(gdt, 11), want(gdt, 11);
      auto w = got.views(got.w), buf = got.views(got.m), g = got.grads();
      dev::sgd_step(w.data(), g.data(), s.momentum != 0 ? buf.data() : nullptr, w.size(), s, scale);
      for (size_t t = 0; t < want.w.size(); ++t)
        for (size_t i = 0; i < want.w[t].size(); ++i)
          math::sgd_update(want.w[t][i], static_cast<float>(get(want.g[t], static_cast<int64_t>(i))) * scale,
                           want.m[t][i], s.lr, s.momentum, s.dampening, s.weight_decay, s.nesterov,
                           s.first_step);
      expect_bits(got.w, want.w, "sgd weights");
      expect_bits(got.m, want.m, "sgd momentum");
    }
  }
}

TEST(DeviceOps, AdamWStepMatchesPerElementMathBitForBit) {
  dev::AdamWStep s;
  s.decay = 1.0f - 1e-3f * 0.01f;
  s.beta2 = 0.999f;
  s.one_minus_beta1 = 0.1f;
  s.one_minus_beta2 = 0.001f;
  s.eps = 1e-8f;
  s.step_size = 1e-3f / (1.0f - 0.9f * 0.9f);
  s.bc2_sqrt = std::sqrt(1.0f - 0.999f * 0.999f);
  for (DType gdt : {DType::f32, DType::f16, DType::bf16}) {
    for (float scale : {1.0f, 1.0f / 1024}) {
      Params got(gdt, 3), want(gdt, 3);
      auto w = got.views(got.w), m = got.views(got.m), v = got.views(got.v), g = got.grads();
      dev::adamw_step(w.data(), g.data(), m.data(), v.data(), w.size(), s, scale);
      for (size_t t = 0; t < want.w.size(); ++t)
        for (size_t i = 0; i < want.w[t].size(); ++i)
          math::adamw_update(want.w[t][i],
                             static_cast<float>(get(want.g[t], static_cast<int64_t>(i))) * scale,
                             want.m[t][i], want.v[t][i], s.decay, s.beta2, s.one_minus_beta1,
                             s.one_minus_beta2, s.eps, s.step_size, s.bc2_sqrt);
      expect_bits(got.w, want.w, "adamw weights");
      expect_bits(got.m, want.m, "adamw exp_avg");
      expect_bits(got.v, want.v, "adamw exp_avg_sq");
    }
  }
}

TEST(DeviceOps, OptimizerStepsRejectMismatchedState) {
  std::vector<float> w(4), g(3), m(4);
  TensorView wv{w.data(), DType::f32, {4}}, gv{g.data(), DType::f32, {3}}, mv{m.data(), DType::f32, {4}};
  dev::SgdStep s;
  EXPECT_THROW(dev::sgd_step(&wv, &gv, nullptr, 1, s), Error);  // gradient count differs
  TensorView gi{g.data(), DType::i32, {4}};
  EXPECT_THROW(dev::adamw_step(&wv, &gi, &mv, &mv, 1, dev::AdamWStep{}), Error);  // integer gradient
}

TEST(DeviceOps, MixedDevicesAreRefusedBeforeAnyMemoryIsTouched) {
  // A view marked cuda over host memory is never dereferenced: the router refuses first.
  std::vector<float> a(4), b(4);
  TensorView host{a.data(), DType::f32, {4}}, dev_view{b.data(), DType::f32, {4}, Device::cuda};
  try {
    dev::axpy(1.0, host, dev_view);
    FAIL() << "mixed devices accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("axpy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
  }
  TensorView ws[] = {host}, gs[] = {dev_view};
  EXPECT_THROW(dev::sgd_step(ws, gs, nullptr, 1, dev::SgdStep{}), Error);
}
