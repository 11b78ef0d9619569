// Element types. f64 exists for the double-precision reference kernels; u16 for
// batch fields (a dataset's u16 tokens), which the loader hands over as they are.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace strata {

enum class DType : uint8_t { f32, f16, bf16, i32, i64, u8, f64, u16 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::u8:
      return 1;
    case DType::f64:
      return 8;
    case DType::u16:
      return 2;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}

constexpr bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }

const char* dtype_name(DType t);
// Parses "f32", "float32", "f16", "float16", "bf16", "bfloat16", "i32", "i64", "u8", "u16", "f64".
DType dtype_from_name(const std::string& name);

}  // namespace strata
