// Test cases for the op table. Each op family registers its cases in
// tests/kernels/cases_<family>.cpp with STRATA_OP_CASES(op) { return {...}; };
// the registry test fails for an op without cases, so a new op cannot go untested.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/op_table.h"

namespace strata::testing {

struct InputSpec {
  Shape shape;
  bool integer = false;  // i64 input (labels, token ids) with values in [0, int_high)
  int64_t int_high = 1;
  double lo = -1.0, hi = 1.0;  // uniform value range of a floating input
  double min_abs = 0.0;        // keep |x| >= min_abs (away from kinks such as relu's 0)
  bool constant = false;       // never perturbed by the gradient check (e.g. running stats)
  bool fp32 = false;           // stored in f32 whatever the case's dtype (FP32 norm parameters
                               // and statistics beside half activations); f64 in the reference run
};

struct OpCase {
  std::string label;
  std::vector<InputSpec> inputs;
  OpAttrs attrs;
  double tol_scale = 1.0;  // multiplies the per-dtype tolerance
  double fd_step = 1e-6;   // central finite-difference step
  bool half = true;        // also run in f16/bf16 storage
  // (last: cases list the members above positionally)
  // > 0: the absolute scale errors are measured against in place of the
  // output's mean |value| (tests/support/elementwise_error.h), for a case whose
  // outputs are small differences of terms of about this size
  double error_scale = 0.0;
};

using CaseFn = std::function<std::vector<OpCase>()>;
std::map<Op, CaseFn>& case_registry();

struct CaseRegistrar {
  CaseRegistrar(Op op, CaseFn fn) { case_registry()[op] = std::move(fn); }
};

}  // namespace strata::testing

#define STRATA_OP_CASES(op)                                                                          \
  static std::vector<::strata::testing::OpCase> strata_cases_##op();                                 \
  static ::strata::testing::CaseRegistrar strata_case_reg_##op(::strata::Op::op, strata_cases_##op); \
  static std::vector<::strata::testing::OpCase> strata_cases_##op()
