// Mixed precision as a policy: a thread-local compute dtype that Linear and Conv2d
// cast their inputs and FP32 master weights to. Parameters, optimizer state and
// normalisation statistics stay FP32 whatever the setting.
#pragma once
#include <string>

#include "kernels/runtime/dtype.h"

namespace strata {

enum class Precision { fp32, fp16, bf16 };

DType precision_dtype(Precision p);                      // fp32 -> f32, fp16 -> f16, bf16 -> bf16
Precision precision_from_name(const std::string& name);  // "fp32", "fp16", "bf16" (also f32/f16, float16 ...)
const char* precision_name(Precision p);

// The dtype matmul/conv inputs are computed in on this thread (f32 by default).
DType compute_dtype();

// Sets the compute dtype for a scope and restores the previous one on exit.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype);
  explicit AutocastGuard(Precision p) : AutocastGuard(precision_dtype(p)) {}
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DType prev_;
};

}  // namespace strata
