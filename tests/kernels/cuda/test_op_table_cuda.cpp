// The op suite (tests/kernels/op_suite.h) on the cuda backend: every op, case
// and storage dtype of the registry, run through kernel_forward/kernel_backward
// on device buffers and compared with the f64 reference, with the tolerances
// the cpu binary uses. Without a usable device every test reports SKIPPED with
// the reason, so the suite has the same shape on every machine.
#include <gtest/gtest.h>

#include "kernels/cuda/runtime.h"
#include "tests/kernels/op_suite.h"

namespace strata::testing {
namespace {

class OpTableCuda : public ::testing::TestWithParam<OpParam> {};

TEST_P(OpTableCuda, MatchesReference) {
  auto st = cuda::device_status();
  if (st.device_count == 0) GTEST_SKIP() << st.reason;
  expect_backend_matches_reference(GetParam());
}

INSTANTIATE_TEST_SUITE_P(All, OpTableCuda, ::testing::ValuesIn(op_params(true, {BackendKind::cuda})),
                         op_param_name);

}  // namespace
}  // namespace strata::testing

// The case files linked in (shared with test_op_table) also hold tests of the
// cpu kernels alone; this binary runs only its cuda suite unless a filter says
// otherwise (--gtest_filter or GTEST_FILTER).
int main(int argc, char** argv) {
  if (GTEST_FLAG_GET(filter) == "*") GTEST_FLAG_SET(filter, "*/OpTableCuda.*");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
