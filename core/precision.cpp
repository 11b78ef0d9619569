#include "core/precision.h"

#include "base/error.h"

namespace strata {
namespace {
thread_local DType g_compute_dtype = DType::f32;
}

DType precision_dtype(Precision p) {
  switch (p) {
    case Precision::fp32:
      return DType::f32;
    case Precision::fp16:
      return DType::f16;
    case Precision::bf16:
      return DType::bf16;
  }
  return DType::f32;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
  }
  return "?";
}

Precision precision_from_name(const std::string& n) {
  if (n == "fp32" || n == "f32" || n == "float32") return Precision::fp32;
  if (n == "fp16" || n == "f16" || n == "float16") return Precision::fp16;
  if (n == "bf16" || n == "bfloat16") return Precision::bf16;
  throw ConfigError("precision '" + n + "': expected fp32, fp16 or bf16");
}

DType compute_dtype() { return g_compute_dtype; }

AutocastGuard::AutocastGuard(DType dtype) : prev_(g_compute_dtype) {
  if (!is_floating(dtype) || dtype == DType::f64)
    throw Error(std::string("AutocastGuard: compute dtype must be f32, f16 or bf16, got ") +
                dtype_name(dtype));
  g_compute_dtype = dtype;
}
AutocastGuard::~AutocastGuard() { g_compute_dtype = prev_; }

}  // namespace strata
