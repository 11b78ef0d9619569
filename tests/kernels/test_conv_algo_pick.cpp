// The rule that picks a cuDNN convolution algorithm (kernels/cuda/conv_algo_pick.h):
// the same candidates in the same order give the same pick, in every process.
#include <gtest/gtest.h>

#include "kernels/cuda/conv_algo_pick.h"

namespace strata::cuda {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
const ConvPickRule kRule{false, 512 * kMiB};

ConvCandidate cand(int algo, bool deterministic, size_t ws = 0, int math = 0, bool ok = true) {
  return ConvCandidate{algo, math, ws, ok, deterministic};
}

TEST(ConvAlgoPick, TheFirstDeterministicCandidateInHeuristicOrder) {
  // cuDNN's heuristic puts a non-deterministic algorithm (atomics) first
  std::vector<ConvCandidate> c{cand(3, false), cand(1, true), cand(0, true)};
  EXPECT_EQ(pick_conv_candidate(c, kRule), 1u);
}

TEST(ConvAlgoPick, SkipsFailuresConversionsAndOverCapWorkspaces) {
  std::vector<ConvCandidate> c{cand(7, true, 0, 0, false), cand(6, true, 0, kMathAllowConversion),
                               cand(5, true, 513 * kMiB), cand(4, true, 512 * kMiB)};
  EXPECT_EQ(pick_conv_candidate(c, kRule), 3u);
}

TEST(ConvAlgoPick, StrictFp32NeverTakesTensorCoreMath) {
  std::vector<ConvCandidate> c{cand(1, true, 0, kMathTensorOp), cand(2, true, 0, 3)};
  EXPECT_EQ(pick_conv_candidate(c, {true, 512 * kMiB}), 1u);
  EXPECT_EQ(pick_conv_candidate(c, kRule), 0u);  // with TF32 allowed it may
}

TEST(ConvAlgoPick, NonDeterministicOnlyWhenNothingElseQualifies) {
  std::vector<ConvCandidate> c{cand(2, false, 0), cand(3, true, 600 * kMiB)};
  EXPECT_EQ(pick_conv_candidate(c, kRule), 0u);
  EXPECT_EQ(pick_conv_candidate({cand(1, true, 0, 0, false)}, kRule), std::nullopt);
}

}  // namespace
}  // namespace strata::cuda
