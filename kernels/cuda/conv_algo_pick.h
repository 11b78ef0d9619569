// Which cuDNN convolution algorithm a pass uses, chosen the same way in every
// process so that a run and its resume compute the same bits. Plain C++ (the
// candidates carry cuDNN's enums as ints) so the rule is tested without a GPU.
//
// The candidates are cuDNN's heuristic list (cudnnGetConvolution*Algorithm_v7),
// in cuDNN's order of expected speed: a function of the problem, the device and
// the library version only. The pick is the first that succeeded, is
// deterministic (no atomics: the same inputs give the same bits), obeys the math
// rule (no TF32 for f32 without permission; never TENSOR_OP_MATH_ALLOW_CONVERSION,
// which may round f32 inputs to half) and needs at most a fixed workspace cap.
// The cap is a constant, not a share of the memory free at the time, which
// differs between processes. Timing the candidates (cudnnFind*AlgorithmEx, what
// conv.cu did before) could pick another algorithm in a resumed process than in
// the run it resumes, with other rounding. The cost: the heuristic's first
// choice may be slower than the fastest timed one.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

namespace strata::cuda {

struct ConvCandidate {
  int algo = 0;
  int math = 0;  // cudnnMathType_t
  size_t workspace = 0;
  bool ok = false;  // status CUDNN_STATUS_SUCCESS
  bool deterministic = false;
};

// cuDNN's math types, as ints (cudnn_graph.h: DEFAULT 0, TENSOR_OP 1,
// TENSOR_OP_ALLOW_CONVERSION 2, FMA 3).
inline constexpr int kMathTensorOp = 1, kMathAllowConversion = 2;

struct ConvPickRule {
  bool strict_fp32 = false;  // f32 without TF32: no Tensor Core math
  size_t max_workspace = 0;
};

// The index of the candidate to use, or nullopt when none obeys the rule.
// Deterministic candidates first; a non-deterministic one only when no
// deterministic one qualifies (the caller records that the run then does not
// repeat bit for bit).
inline std::optional<size_t> pick_conv_candidate(const std::vector<ConvCandidate>& c, const ConvPickRule& r) {
  auto usable = [&](const ConvCandidate& x) {
    return x.ok && x.math != kMathAllowConversion && !(r.strict_fp32 && x.math == kMathTensorOp) &&
           x.workspace <= r.max_workspace;
  };
  for (size_t i = 0; i < c.size(); ++i)
    if (usable(c[i]) && c[i].deterministic) return i;
  for (size_t i = 0; i < c.size(); ++i)
    if (usable(c[i])) return i;
  return std::nullopt;
}

}  // namespace strata::cuda
