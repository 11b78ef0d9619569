// The op suite shared by every backend's test binary: the parameter space
// (op, case, dtype) x backend walked from the case registry, the per-dtype
// tolerances, and the one check of a backend against the f64 reference. The
// cpu binary (tests/kernels/test_op_table.cpp) and the cuda binary
// (tests/kernels/cuda/test_op_table_cuda.cpp) differ only in the backend they pass, so
// both run the very same cases with the very same tolerances.
#pragma once
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "op_harness.h"

namespace strata::testing {

struct OpParam {
  Op op;
  size_t index;  // into the op's registered cases
  DType dtype;   // storage dtype of the case (f32, f16, bf16)
  BackendKind backend;
};
// gtest prints a failing parameter with this, not as raw bytes.
void PrintTo(const OpParam& p, std::ostream* os);

// Every registered case in f32, plus f16 and bf16 where the case allows
// (with_half), once per backend.
std::vector<OpParam> op_params(bool with_half, const std::vector<BackendKind>& backends);
// "<op>_<case label>_<dtype>", non-alphanumerics as '_' (for reference-only checks).
std::string op_case_name(const ::testing::TestParamInfo<OpParam>& p);
// op_case_name + "_<backend>".
std::string op_param_name(const ::testing::TestParamInfo<OpParam>& p);
OpCase op_case(const OpParam& p);

// The scaled error allowed for a case dtype (outputs; gradients get twice this).
// Stat outputs kept in f32 beside half inputs are judged by the case dtype's.
double tolerance(DType dt);
std::vector<double> random_vector(size_t n, uint64_t seed);

// Runs p's case on the reference and on p.backend and compares every output and
// every gradient (sentinels intact, scaled error within tolerance, gradients finite).
void expect_backend_matches_reference(const OpParam& p);

}  // namespace strata::testing
