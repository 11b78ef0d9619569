// Host buffers of any dtype for the device-op tests, with the stored value of
// each element computed here independently of the ops (the expected side).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/runtime/half.h"
#include "kernels/runtime/tensor_view.h"

namespace strata::testing {

inline const DType kAll[] = {DType::f32, DType::f16, DType::bf16, DType::i32,
                             DType::i64, DType::u8,  DType::f64};
inline const DType kFloats[] = {DType::f32, DType::f16, DType::bf16, DType::f64};

// A host buffer of n elements of dtype dt.
struct Buf {
  DType dt;
  std::vector<unsigned char> bytes;
  Buf(DType d, int64_t n) : dt(d), bytes(static_cast<size_t>(n) * dtype_size(d) + 1) {}
  TensorView view(Shape s) { return TensorView{bytes.data(), dt, std::move(s)}; }
  TensorView view(int64_t n) { return view(Shape{n}); }
};

// The value v stored in dtype dt, as the tests expect it (independent of the ops).
inline void put(Buf& b, int64_t i, double v) {
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
    case DType::u16:
      reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(std::trunc(v));
      break;
    case DType::f64:
      reinterpret_cast<double*>(p)[i] = v;
      break;
  }
}
inline double get(const Buf& b, int64_t i) {
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
    case DType::u16:
      return reinterpret_cast<const uint16_t*>(p)[i];
    case DType::f64:
      return reinterpret_cast<const double*>(p)[i];
  }
  return 0;
}

// Non-negative values with fractions (u8 takes no negatives), some not exact in halves.
inline double sample(int64_t i) { return static_cast<double>(i % 200) * 0.37 + 0.125; }

// Two buffers hold the same values bit for bit (NaN compared as NaN).
inline void expect_same(const Buf& a, const Buf& b, int64_t n, const std::string& what) {
  for (int64_t i = 0; i < n; ++i) {
    double x = get(a, i), y = get(b, i);
    if (std::isnan(x) && std::isnan(y)) continue;
    ASSERT_EQ(x, y) << what << " at " << i;
  }
}

}  // namespace strata::testing
