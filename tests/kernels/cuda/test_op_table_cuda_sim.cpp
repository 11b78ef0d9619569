// The op suite (tests/kernels/op_suite.h) on the emulated CUDA backend: every op,
// case and storage dtype of the registry through the CUDA backend's own
// launchers and kernels, compiled for the host SIMT emulator (tests/simt), on
// exact-size host buffers, against the f64 reference with the tolerances and NaN
// pre-fills of the cpu and cuda binaries. Library calls are not emulated:
// cuBLASLt's GEMM and cuDNN's convolutions are done on the host there
// (tests/simt/sim), the hand-written epilogue kernels around them are emulated.
#include <gtest/gtest.h>

#include "sim/sim_backend.h"
#include "tests/kernels/op_suite.h"

namespace strata::testing {
namespace {

class OpTableCudaSim : public ::testing::TestWithParam<OpParam> {};

TEST_P(OpTableCudaSim, MatchesReference) { expect_backend_matches_reference(GetParam()); }

INSTANTIATE_TEST_SUITE_P(All, OpTableCudaSim, ::testing::ValuesIn(op_params(true, {BackendKind::cuda_sim})),
                         op_param_name);

}  // namespace
}  // namespace strata::testing

// The case files linked in (shared with test_op_table) also hold tests of the
// cpu kernels alone; this binary runs only its emulated suite unless a filter
// says otherwise (--gtest_filter or GTEST_FILTER).
int main(int argc, char** argv) {
  if (GTEST_FLAG_GET(filter) == "*") GTEST_FLAG_SET(filter, "*/OpTableCudaSim.*");
  ::testing::InitGoogleTest(&argc, argv);
  strata::testing::set_cuda_sim_backend(strata::cuda_sim_backend());
  return RUN_ALL_TESTS();
}
