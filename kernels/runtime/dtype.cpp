#include "kernels/runtime/dtype.h"

#include "base/error.h"

namespace strata {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
    case DType::f64:
      return "f64";
    case DType::u16:
      return "u16";
  }
  return "?";
}

DType dtype_from_name(const std::string& n) {
  if (n == "f32" || n == "float32" || n == "float") return DType::f32;
  if (n == "f16" || n == "float16" || n == "half") return DType::f16;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "i32" || n == "int32") return DType::i32;
  if (n == "i64" || n == "int64") return DType::i64;
  if (n == "u8" || n == "uint8") return DType::u8;
  if (n == "u16" || n == "uint16") return DType::u16;
  if (n == "f64" || n == "float64" || n == "double") return DType::f64;
  throw Error("unknown dtype '" + n + "' (expected f32, f16, bf16, i32, i64, u8, u16 or f64)");
}

}  // namespace strata
