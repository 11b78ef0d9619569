// The CPU device ops (kernels/device_ops.h through strata::dev) that move and
// convert data, against plain loops written here: fill and convert in every
// dtype, strided copies of permuted and sliced views, host copies, axpy and scale,
// and the refusal of mixed devices. Reductions and optimizer steps:
// device_steps_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "device_buffers.h"
#include "kernels/device_ops.h"
#include "kernels/runtime/half.h"
#include "kernels/runtime/parallel.h"
#include "kernels/scalar_math.h"

using namespace strata;
using namespace strata::testing;

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
