#include "op_cases.h"

namespace strata::testing {
namespace {

OpAttrs scaled(double s) {
  OpAttrs a;
  a.scale = s;
  return a;
}

}  // namespace

STRATA_OP_CASES(sdpa) {
  return {
      {"small", {{{1, 1, 4, 3}}, {{1, 1, 4, 3}}, {{1, 1, 4, 3}}}, {}},
      {"heads", {{{2, 3, 5, 4}}, {{2, 3, 5, 4}}, {{2, 3, 5, 4}}}, {}},
      {"one-step", {{{2, 2, 1, 4}}, {{2, 2, 1, 4}}, {{2, 2, 1, 4}}}, {}},
      {"value-dim", {{{1, 2, 6, 3}}, {{1, 2, 6, 3}}, {{1, 2, 6, 5}}}, {}},
      {"scale", {{{2, 1, 7, 4}}, {{2, 1, 7, 4}}, {{2, 1, 7, 4}}}, scaled(0.9)},
      // fast path: heads split over threads
      {"large", {{{2, 2, 48, 32}}, {{2, 2, 48, 32}}, {{2, 2, 48, 32}}}, {}},
      // one head: multithreaded GEMMs instead
      {"large-one-head", {{{1, 1, 96, 48}}, {{1, 1, 96, 48}}, {{1, 1, 96, 48}}}, {}},
      // T a multiple of no tile size (16, 32, 64): partial query and key tiles
      {"ragged", {{{1, 2, 37, 16}}, {{1, 2, 37, 16}}, {{1, 2, 37, 16}}}, {}},
      // the CUDA head-dim fast paths, with T just past one 64-row tile
      {"d64", {{{1, 2, 67, 64}}, {{1, 2, 67, 64}}, {{1, 2, 67, 64}}}, {}},
      {"d128", {{{1, 1, 45, 128}}, {{1, 1, 45, 128}}, {{1, 1, 45, 128}}}, {}},
      // a head dim that is no power of two, and Dv != D
      {"d72-dv40", {{{2, 1, 70, 72}}, {{2, 1, 70, 72}}, {{2, 1, 70, 40}}}, {}},
  };
}

}  // namespace strata::testing
