#include <gtest/gtest.h>

#include "base/error.h"
#include "op_harness.h"

namespace strata::testing {
namespace {

OpCase emb(const char* label, Shape ids, int64_t V, int64_t D) {
  return {label, {{ids, true, V}, {{V, D}}}, {}};
}

}  // namespace

STRATA_OP_CASES(embedding) {
  return {emb("flat", {5}, 10, 4), emb("batched", {2, 3}, 7, 6), emb("repeats", {20}, 3, 5),
          emb("scalar-id", {}, 4, 3), emb("large", {8, 64}, 400, 96)};
}

TEST(Embedding, IdOutOfRangeNamesIt) {
  OpCase c = emb("bad", {4}, 6, 2);
  OpInputs in = make_inputs(Op::embedding, c, DType::f32, 1);
  for (int64_t bad : {6, -1}) {
    in.buffers[0].view.as<int64_t>()[3] = bad;
    for (bool reference : {true, false}) {
      try {
        if (reference)
          run_reference(Op::embedding, c.attrs, in, nullptr);
        else
          run_cpu(Op::embedding, c.attrs, in, DType::f32, nullptr);
        FAIL() << "no error for id " << bad;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("id " + std::to_string(bad) + " at position 3"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

}  // namespace strata::testing
