#include "op_cases.h"

namespace strata::testing {

STRATA_OP_CASES(matmul) {
  return {
      {"2d", {{{3, 4}}, {{4, 5}}}, {}},
      {"odd", {{{7, 1}}, {{1, 9}}}, {}},
      {"batched", {{{2, 3, 4}}, {{2, 4, 5}}}, {}},
      {"shared-b", {{{2, 3, 5, 4}}, {{4, 3}}}, {}},
      {"shared-a", {{{5, 4}}, {{3, 4, 2}}}, {}},
      {"batch-broadcast", {{{2, 1, 3, 4}}, {{1, 3, 4, 2}}}, {}},
      // K = 256: still well inside the f16/bf16 output rounding (arithmetic is f32)
      {"large", {{{2, 64, 256}}, {{2, 256, 48}}}, {}},
      // folded to one 192 x 200 x 72 GEMM: row panels across threads
      {"large-shared-b", {{{4, 48, 200}}, {{200, 72}}}, {}},
      // wide: column panels (edges off the 16-column grid)
      {"large-wide", {{{40, 161}}, {{161, 403}}}, {}},
  };
}

STRATA_OP_CASES(linear) {
  return {
      {"2d", {{{3, 4}}, {{5, 4}}, {{5}}}, {}},
      {"1d-x", {{{6}}, {{3, 6}}, {{3}}}, {}},
      {"batched", {{{2, 3, 7}}, {{4, 7}}, {{4}}}, {}},
      {"large", {{{64, 256}}, {{96, 256}}, {{96}}}, {}},
      // K = 0: y is the bias alone (on CUDA no GEMM runs: the epilogue kernels scale and add)
      {"k0", {{{3, 0}}, {{5, 0}}, {{5}}}, {}},
  };
}

}  // namespace strata::testing
