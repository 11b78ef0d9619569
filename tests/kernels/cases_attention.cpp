#include "op_cases.h"

namespace strata::testing {
namespace {

OpAttrs scaled(double s) {
  OpAttrs a;
  a.scale = s;
  return a;
}

// q, k, v as [B,T,H,D]: a projection's heads read in place
OpAttrs bthd(double s = 0) {
  OpAttrs a = scaled(s);
  a.bthd = true;
  return a;
}

}  // namespace

STRATA_OP_CASES(attention) {
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
      // [B,T,H,D]: rows of a head H*D apart, heads D apart
      {"bthd", {{{2, 5, 3, 4}}, {{2, 5, 3, 4}}, {{2, 5, 3, 4}}}, bthd()},
      {"bthd-value-dim-scale", {{{1, 6, 2, 3}}, {{1, 6, 2, 3}}, {{1, 6, 2, 5}}}, bthd(0.9)},
      {"bthd-large", {{{2, 48, 2, 32}}, {{2, 48, 2, 32}}, {{2, 48, 2, 32}}}, bthd()},
      {"bthd-large-one-head", {{{1, 96, 1, 48}}, {{1, 96, 1, 48}}, {{1, 96, 1, 48}}}, bthd()},
      {"bthd-d64", {{{1, 67, 2, 64}}, {{1, 67, 2, 64}}, {{1, 67, 2, 64}}}, bthd()},
  };
}

}  // namespace strata::testing
