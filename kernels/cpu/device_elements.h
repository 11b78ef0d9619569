// Element access shared by the CPU device ops: read any dtype as float or double
// and write it back, rounding halves to nearest even. The device ops walk raw
// buffers of any dtype; these switch on the dtype once per element, so the hot
// f32 paths in device_ops.cpp and device_optim.cpp bypass them.
#pragma once
#include <cstdint>
#include <string>

#include "base/error.h"
#include "kernels/runtime/half.h"
#include "kernels/runtime/tensor_view.h"

namespace strata::cpu_dev::detail {

// Elements per parallel task for the streaming loops (small tensors stay serial).
inline constexpr int64_t kGrain = 1 << 15;

inline double load(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::f16:
      return f16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::i32:
      return static_cast<const int32_t*>(p)[i];
    case DType::i64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::u8:
      return static_cast<const uint8_t*>(p)[i];
    case DType::u16:
      return static_cast<const uint16_t*>(p)[i];
    case DType::f64:
      return static_cast<const double*>(p)[i];
  }
  return 0;
}

// Floats round through float (so an f64 value stored as f16 rounds once from the
// float, as the bulk converters do); integers truncate toward zero.
inline void store(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::f16:
      static_cast<uint16_t*>(p)[i] = float_to_f16_bits(static_cast<float>(v));
      break;
    case DType::bf16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16_bits(static_cast<float>(v));
      break;
    case DType::i32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::i64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case DType::u8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
    case DType::u16:
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v);
      break;
    case DType::f64:
      static_cast<double*>(p)[i] = v;
      break;
  }
}

// Reads a gradient element (f32, f16 or bf16) as float.
inline float load_float(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f16:
      return f16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

inline void store_float(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::f16:
      static_cast<uint16_t*>(p)[i] = float_to_f16_bits(v);
      break;
    case DType::bf16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16_bits(v);
      break;
    default:
      static_cast<float*>(p)[i] = v;
  }
}

inline bool is_float_like(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

inline void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("device op ") + op + " (cpu): " + what);
}

inline std::string describe(const TensorView& v) {
  return std::string(dtype_name(v.dtype)) + " " + shape_str(v.shape);
}

}  // namespace strata::cpu_dev::detail
